"""Recordings without call chains: ``perf sched record`` (its own event set, no -g) and
``perf record`` without -g. Each event is then one line, with no blank line between
events; the scheduler's other tracepoints (sched_stat_runtime, sched_migrate_task, ...)
come before the first sched_switch; and a wait has no stack to say what it was."""
from __future__ import annotations

import gzip
from pathlib import Path

from offconv.run import pipeline, reading
from offconv.analysis.summary import report_data
from offconv.sched.causes import CHILD_WOKE, KTHREAD_IDLE, NO_CHAIN
from offconv.model.options import Options

VERDICT = Path(__file__).parent / "fixtures" / "recorded" / "verdict"
OVERSUB = VERDICT / "sched_record_oversub" / "sched_record_oversub.perf-script.txt.gz"


def _write(tmp_path, lines: list, name="t.txt") -> str:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _ev(comm, tid, cpu, t, event, payload):
    return f"{comm:>16} {tid:>6} [{cpu:03d}] {t:12.6f}: {event:>28}: {payload}"


def _sw(comm, tid, cpu, t, state, nxt, ntid):
    return _ev(comm, tid, cpu, t, "sched:sched_switch",
               f"prev_comm={comm} prev_pid={tid} prev_prio=120 prev_state={state} ==> "
               f"next_comm={nxt} next_pid={ntid} next_prio=120")


def _wk(comm, tid, cpu, t, target, ttid, new=False):
    ev = "sched:sched_wakeup_new" if new else "sched:sched_waking"
    return _ev(comm, tid, cpu, t, ev, f"comm={target} pid={ttid} prio=120 target_cpu={cpu:03d}")


def _runtime(comm, tid, cpu, t):
    return _ev(comm, tid, cpu, t, "sched:sched_stat_runtime",
               f"comm={comm} pid={tid} runtime=1000 [ns]")


def test_a_perf_sched_record_trace_is_a_scheduler_trace():
    """Its first events are sched_stat_runtime: they are not an on-CPU profile's samples
    (before the fix: 'on-cpu by construction', the sched_switch events dropped)."""
    d = report_data(pipeline.load([str(OVERSUB)], Options()))
    assert d["verdict"]["answer"] == "capacity", d["verdict"]["reason"]
    assert d["totals"]["runq_us"] > 0.5 * d["totals"]["oncpu_us"]  # 6 hogs, 2 CPUs
    first = gzip.open(OVERSUB, "rt").readline()
    assert "sched:sched_stat_runtime:" in first
    # they are named for what they are, not "on-CPU samples"
    warnings = pipeline.load([str(OVERSUB)], Options()).warnings
    assert any("3318 events of the scheduler's other tracepoints" in w for w in warnings)
    assert not any("on-CPU samples" in w for w in warnings)


def test_only_sched_tracepoints_are_read_past(tmp_path):
    """A sample of another event decides at once, as before: an on-CPU profile."""
    lines = [_ev("loop", 10, 0, 1.0 + i / 1000, "cpu-clock:ppp", "ffffffff81000000 f ([kernel.kallsyms])")
             for i in range(3)]
    lines.append(_sw("loop", 10, 0, 1.01, "S", "swapper/0", 0))
    d = report_data(pipeline.load([_write(tmp_path, lines)], Options()))
    assert d["verdict"]["answer"] == "on-cpu"
    assert "no off-CPU time" in d["verdict"]["reason"]


def test_the_look_ahead_for_a_sched_switch_is_bounded(tmp_path, monkeypatch):
    """Only sched_stat_runtime events, more than ROUTE_LOOKAHEAD: samples of them (what
    stackcollapse-perf.pl would count), not a buffer of the whole input."""
    monkeypatch.setattr(reading, "ROUTE_LOOKAHEAD", 5)
    lines = [_runtime("loop", 10, 0, 1.0 + i / 1000) for i in range(20)]
    lines.append(_sw("loop", 10, 0, 1.5, "S", "swapper/0", 0))
    p = pipeline.load([_write(tmp_path, lines)], Options())
    assert p.analysis is None and sum(p.samples.values()) == 20
    monkeypatch.setattr(reading, "ROUTE_LOOKAHEAD", 50)
    p = pipeline.load([_write(tmp_path, lines, "u.txt")], Options())
    assert p.analysis is not None


def _parent_child_trace(kernel_stack: bool) -> list:
    """sh (tid 100) forks a child (200) and blocks; the child runs 50 ms and, exiting,
    wakes sh."""
    ev = [
        _runtime("sh", 100, 0, 1.000000),
        _wk("sh", 100, 0, 1.000010, "sh", 200, new=True),
        _sw("sh", 100, 0, 1.000020, "S", "sh", 200),
        _wk("sh", 200, 0, 1.050000, "sh", 100),
        _sw("sh", 200, 0, 1.050010, "X", "sh", 100),
        _sw("sh", 100, 0, 1.060000, "S", "swapper/0", 0),
        _wk("swapper", 0, 0, 1.070000, "sh", 100),
        _sw("swapper", 0, 0, 1.070010, "R", "sh", 100),
        _runtime("sh", 100, 0, 1.080000),
    ]
    if not kernel_stack:
        return ev
    out = []
    for line in ev:  # every event with a kernel call chain, as perf record -g gives
        out.append(line)
        out.append("\tffffffff81000000 __schedule ([kernel.kallsyms])")
        out.append("\tffffffff81000100 do_wait ([kernel.kallsyms])")
        out.append("")
    return out


def _causes(path: str) -> dict:
    p = pipeline.load([path], Options())
    return {c: ns for t in p.analysis.threads.values() if t.tid == 100
            for c, ns in t.by_cause.items()}


def test_a_wait_ended_by_the_waiters_child_is_a_child_wait(tmp_path):
    causes = _causes(_write(tmp_path, _parent_child_trace(False)))
    assert causes[CHILD_WOKE] == 49_980_000
    # the later wait, ended by the idle task (no relation), stays unread
    assert causes[NO_CHAIN] == 10_000_000


def test_with_a_kernel_stack_the_stack_decides(tmp_path):
    causes = _causes(_write(tmp_path, _parent_child_trace(True)))
    assert CHILD_WOKE not in causes and NO_CHAIN not in causes
    assert {c[0] for c in causes} == {"child"}


def test_kernel_threads_without_call_chains_wait_for_work(tmp_path):
    lines = [
        _sw("kworker/0:1H-kb", 44, 0, 1.0, "I", "loop", 10),
        _wk("loop", 10, 0, 1.2, "kworker/0:1H-kb", 44),
        _sw("loop", 10, 0, 1.21, "R", "kworker/0:1H-kb", 44),
        _sw("kworker/0:1H-kb", 44, 0, 1.22, "I", "loop", 10),
    ]
    p = pipeline.load([_write(tmp_path, lines)], Options())
    t = next(t for t in p.analysis.threads.values() if t.tid == 44)
    assert t.by_cause == {KTHREAD_IDLE: 200_000_000}


NOCG = Path(__file__).parent / "fixtures" / "recorded" / "nocallchain" / "oncpu-no-g.perf-script.txt.gz"


def test_one_line_events_are_split_over_two_processes(tmp_path, monkeypatch):
    """No blank line to cut at: the split cuts between two one-line events, and gives the
    serial path's bytes; a malformed line in the second part keeps its number."""
    import os

    from click.testing import CliRunner

    from offconv.run import parallel, split
    from offconv.cli import app
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: os.environ.get("OFFCONV_JOBS") != "1")
    calls = []
    real = split.load_split
    monkeypatch.setattr(split, "load_split",
                        lambda *a, **k: calls.append(real(*a, **k)) or calls[-1])
    lines = gzip.open(NOCG, "rt").read().split("\n")
    bad = lines[:2500] + ["sh 1 [000] 1.x5: cpu-clock:ppp:  ffff f (x)"] + lines[2500:]
    for name, text in (("good.txt", lines), ("bad.txt", bad)):
        p = tmp_path / name
        p.write_text("\n".join(text))
        outs = []
        for jobs in ("1", "2"):
            monkeypatch.setenv("OFFCONV_JOBS", jobs)
            for to in ("folded", "svg"):
                o = tmp_path / f"{name}.{jobs}.{to}"
                r = CliRunner().invoke(app, [str(p), "--mode", "oncpu", "--to", to, "--lenient",
                                             "-o", str(o)])
                outs.append((r.exit_code, r.output, o.read_bytes()))
        assert outs[:2] == outs[2:]
        assert outs[0][0] == 0
        if name == "bad.txt":
            assert ":2501)" in outs[0][1], outs[0][1]
    assert sum(c is not None for c in calls) == 4   # every run with two jobs was split


def test_a_wait_ended_by_a_thread_it_created_that_goes_on_is_not_a_child_wait(tmp_path):
    """A main thread waiting on a lock that a worker it created releases: the worker does
    not exit then, so the wait is not a wait for a child (it stays unread: no call chain)."""
    ev = [
        _wk("app", 100, 0, 1.000010, "worker", 200, new=True),
        _sw("app", 100, 0, 1.000020, "S", "worker", 200),
        _sw("worker", 200, 0, 1.030000, "S", "swapper/0", 0),   # the worker blocks a while
        _wk("swapper", 0, 0, 1.040000, "worker", 200),
        _sw("swapper", 0, 0, 1.040010, "R", "worker", 200),
        _wk("worker", 200, 0, 1.050000, "app", 100),            # it releases the lock
        _sw("worker", 200, 0, 1.050010, "S", "app", 100),
        _sw("app", 100, 0, 1.060000, "S", "worker", 200),
        _sw("worker", 200, 0, 1.200000, "X", "swapper/0", 0),   # it ends 150 ms later
    ]
    causes = _causes(_write(tmp_path, ev))
    assert causes == {NO_CHAIN: 49_980_000}


def _waits(durations_ms, waker=("swapper", 0), state="S") -> list:
    """Thread 300 ('daemon') on CPU 1 blocks (in ``state``) for each duration in turn,
    woken each time by ``waker`` (on CPU 0), and runs 1 ms between waits."""
    ev, t = [], 1.0
    for d in durations_ms:
        ev.append(_sw("daemon", 300, 1, t, state, "swapper/1", 0))
        t += d / 1000
        ev.append(_wk(waker[0], waker[1], 0, t, "daemon", 300))
        ev.append(_sw("swapper", 0, 1, t + 0.000010, "R", "daemon", 300))
        t += 0.001
    return ev


def _daemon_causes(tmp_path, ev) -> dict:
    p = pipeline.load([_write(tmp_path, ev)], Options())
    return next(t for t in p.analysis.threads.values() if t.tid == 300).by_cause


def test_same_length_waits_ended_by_the_idle_task_are_timed_waits(tmp_path):
    """A daemon's 50 ms poll: without a call chain, its waits are read as timed waits
    (idle), as with one causes.refine reads the timer from the waker's stack."""
    from offconv.sched.causes import TIMED_NO_CHAIN
    causes = _daemon_causes(tmp_path, _waits([50, 50.05, 49.98, 50.02, 50]))
    assert set(causes) == {TIMED_NO_CHAIN}
    # ended by whatever task a timer interrupted on a busy machine: several wakers
    wakers = iter([("cc1", 901), ("sort", 902), ("python3", 903), ("cc1", 901), ("sort", 902)])
    mixed = [(_wk(*next(wakers), 0, float(line.split()[3][:-1]), "daemon", 300)
              if "sched_waking" in line else line)
             for line in _waits([50, 50.05, 49.98, 50.02, 50])]
    (tmp_path / "busy").mkdir()
    assert set(_daemon_causes(tmp_path / "busy", mixed)) == {TIMED_NO_CHAIN}


def test_same_length_waits_ended_by_one_thread_are_not_timed(tmp_path):
    """A lock held 50 ms at a time: the same lengths, ended by the holder each time."""
    causes = _daemon_causes(tmp_path, _waits([50, 50.05, 49.98, 50.02, 50], ("holder", 400)))
    assert set(causes) == {NO_CHAIN}


def test_waits_of_varied_length_are_not_timed(tmp_path):
    """Disk or network waits vary in length, even when the idle task ends them."""
    causes = _daemon_causes(tmp_path, _waits([20, 35, 50, 65, 80]))
    assert set(causes) == {NO_CHAIN}


def test_same_length_uninterruptible_waits_are_not_timed(tmp_path):
    """A disk throttled to an exact rate: D-state waits of the same length, ended from the
    idle CPU's interrupt. A timer's sleep is interruptible (S); these are the disk's."""
    causes = _daemon_causes(tmp_path, _waits([50, 50.05, 49.98, 50.02, 50], state="D"))
    assert set(causes) == {NO_CHAIN}


def test_perf_sched_record_totals_agree_with_timehist():
    """The one-line sched events of perf sched record (sched_waking for wake-ups) give the
    per-thread totals perf sched timehist gives, within 1% or 1 ms (as on the -g ones)."""
    from test_timehist_agreement import close, timehist_file_sums
    checked = 0
    for name, prefix in (("sched_record_oversub", "cpuhog"), ("sched_record_lock_sleep", "lk-")):
        d = VERDICT / name
        th = timehist_file_sums(d / f"{name}.timehist.txt.gz")
        p = pipeline.load([str(d / f"{name}.perf-script.txt.gz")], Options())
        for t in p.analysis.threads.values():
            if t.comm.startswith(prefix):
                wait, delay, run = th[t.tid]
                assert close(t.offcpu_ns, wait), (name, t.comm, t.offcpu_ns, wait)
                assert close(t.runq_ns - t.runq_preempted_ns, delay), (name, t.comm)
                assert close(t.oncpu_ns, run), (name, t.comm, t.oncpu_ns, run)
                checked += 1
    assert checked == 9


def test_missed_wakeups_of_a_sched_waking_trace_say_what_to_record():
    path = VERDICT / "sched_record_window_cold_read" / "sched_record_window_cold_read.perf-script.txt.gz"
    warnings = pipeline.load([str(path)], Options()).warnings
    assert any("no wakeup seen" in w and "record sched_wakeup too" in w for w in warnings)
    # a trace with sched_wakeup does not get the hint
    other = VERDICT / "oversub" / "oversub.perf-script.txt.gz"
    assert not any("record sched_wakeup too" in w for w in pipeline.load([str(other)], Options()).warnings)
