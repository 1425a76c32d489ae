"""The interval state machine on hand-built event sequences: one test per rule of
DESIGN.md "Interval semantics" (times in µs below, ns in the model)."""
from __future__ import annotations

from pathlib import Path

import pytest

from offconv.model.errors import ParseError
from offconv.sched.intervals import intervals
from offconv.sched.probe import PROBE_IDLE_SWITCHES
from types import SimpleNamespace

from offconv.model.records import BLOCKED, EXIT, KERNEL, ONCPU, RUNQ, SWITCH, WAKE, Frame, OnCpu, Period, Sample, SchedEvent, Task, ThreadCounts

A = Task("app", None, 10)
B = Task("other", None, 20)
W = Task("waker", None, 30)
IDLE0 = Task("swapper/0", None, 0)
IDLE1 = Task("swapper/1", None, 0)
FUTEX = (Frame("do_syscall_64", "[kernel.kallsyms]", KERNEL),
         Frame("futex_wait", "[kernel.kallsyms]", KERNEL),
         Frame("schedule", "[kernel.kallsyms]", KERNEL))
WAKER_STACK = (Frame("futex_wake", "[kernel.kallsyms]", KERNEL),
               Frame("try_to_wake_up", "[kernel.kallsyms]", KERNEL))


def sw(t_us, cpu, prev, state, nxt, stack=(), lineno=0, header=None):
    return SchedEvent(SWITCH, round(t_us * 1000), cpu, header or prev, stack, "sched:sched_switch",
                      prev=prev, prev_state=state, next=nxt, lineno=lineno)


def wk(t_us, cpu, waker, target, event="sched:sched_wakeup", stack=WAKER_STACK):
    return SchedEvent(WAKE, round(t_us * 1000), cpu, waker, stack, event, target=target,
                      new=event.endswith("_new"))


def _part(task, kind, state, start, end, stack=(), waker=None, waker_stack=()):
    return SimpleNamespace(task=task, kind=kind, state=state, start_ns=start, end_ns=end,
                           duration_ns=end - start, stack=stack, waker=waker,
                           waker_stack=waker_stack)


def expand(records):
    """Periods and OnCpu records as their parts (blocked, run queue, on-CPU), the shape the
    rules below are written in."""
    out = []
    for r in records:
        if isinstance(r, OnCpu):
            out.append(_part(r.task, ONCPU, "", r.start_ns, r.end_ns))
            continue
        assert isinstance(r, Period)
        if r.blocked:
            out.append(_part(r.task, BLOCKED, r.state, r.start_ns, r.start_ns + r.blocked_ns,
                             r.stack, r.waker, r.waker_stack))
        if r.has_runq:
            out.append(_part(r.task, RUNQ, "R" if r.preempted else "W", r.runq_start_ns,
                             r.end_ns, r.stack))
    return out


def run_raw(events, **kw):
    stats: dict = {}
    return list(intervals(events, "t.txt", stats=stats, **kw)), stats


def run(events, **kw):
    recs, stats = run_raw(events, **kw)
    return expand(recs), stats


def of(ivs, task, kind=None):
    return [(iv.kind, iv.state, iv.start_ns // 1000, iv.end_ns // 1000) for iv in ivs
            if iv.task.tid == task.tid and (kind is None or iv.kind == kind)]


def test_preempted_switch_out_is_run_queue_wait():
    ivs, stats = run([sw(0, 0, IDLE0, "R", A), sw(10, 0, A, "R+", B, FUTEX), sw(15, 0, B, "S", A)])
    assert of(ivs, A) == [("oncpu", "", 0, 10), ("runq", "R", 10, 15)]
    assert [iv.stack for iv in ivs if iv.kind == RUNQ and iv.task == A] == [FUTEX]


def test_blocked_then_wakeup_then_switch_in():
    ivs, _ = run([sw(10, 0, A, "S", B, FUTEX), wk(30, 1, W, A), sw(35, 0, B, "R", A)])
    got = [iv for iv in ivs if iv.task == A]
    assert [(iv.kind, iv.state, iv.start_ns, iv.end_ns) for iv in got] == [
        (BLOCKED, "S", 10_000, 30_000), (RUNQ, "W", 30_000, 35_000)]
    assert got[0].waker == W and got[0].waker_stack == WAKER_STACK and got[0].stack == FUTEX
    assert got[1].stack == FUTEX   # run-queue time keeps the switch-out stack


def test_first_wakeup_event_wins():
    ivs, _ = run([sw(10, 0, A, "S", B), wk(20, 1, W, A, "sched:sched_waking"),
                  wk(22, 1, W, A, "sched:sched_wakeup"), sw(25, 0, B, "S", A)])
    assert of(ivs, A) == [("blocked", "S", 10, 20), ("runq", "W", 20, 25)]


def test_switch_in_without_wakeup_counts_blocked_and_no_wakeup():
    ivs, stats = run([sw(10, 0, A, "D", B), sw(40, 0, B, "S", A)])
    assert of(ivs, A) == [("blocked", "D", 10, 40)]
    assert stats["no_wakeup"] == 1
    assert stats["threads"][A.tid] == ThreadCounts(switches=1, inferred=0, no_wakeup=1)


def test_missing_switch_in_is_inferred_from_the_previous_switch_on_that_cpu():
    ivs, stats = run([
        sw(10, 0, A, "S", B),            # A blocks on cpu 0
        wk(20, 1, W, A),                 # woken
        sw(25, 1, W, "S", B),            # another cpu: irrelevant
        sw(30, 0, B, "S", IDLE0),        # the last switch on cpu 0 before A's next switch-out
        sw(50, 0, A, "S", B),            # A switched out again: its switch-in was missed
    ])
    assert of(ivs, A) == [("blocked", "S", 10, 20), ("runq", "W", 20, 30), ("oncpu", "", 30, 50)]
    assert stats["inferred_switch_in"] == 1
    assert stats["threads"][A.tid].inferred == 1
    assert of(ivs, A) and stats.get("open") == 2   # A's new wait and B's are open at the end


def test_inferred_switch_in_before_the_wakeup_is_all_blocked():
    X = Task("x", None, 40)
    ivs, _ = run([sw(5, 0, B, "S", X), sw(10, 1, A, "S", W), wk(20, 1, W, A),
                  sw(30, 0, A, "S", IDLE0)])
    # the previous switch on cpu 0 (5) is before A's switch-out: clamped to it, no negative time
    assert of(ivs, A) == [("blocked", "S", 10, 10), ("oncpu", "", 10, 30)]


def test_inferred_switch_in_from_an_idle_cpu_is_not_before_the_wakeup():
    """CPU 0 went idle at 5 and A was asleep until 20: it cannot have run before its
    wake-up (timehist takes 5, or A's switch-out, and counts its sleep as run time)."""
    ivs, _ = run([sw(5, 0, B, "S", IDLE0), sw(10, 1, A, "S", W), wk(20, 1, W, A),
                  sw(30, 0, A, "S", IDLE0)])
    assert of(ivs, A) == [("blocked", "S", 10, 20), ("runq", "W", 20, 20), ("oncpu", "", 20, 30)]


def test_a_task_seen_running_on_a_cpu_gone_idle_was_switched_in_unrecorded():
    """CPU 1's idle task's events are lost on the recording VM (corpus quirk 1): a server
    woken there by its timer shows up waking its client. Its switch-in is inferred then,
    before the client's wait is read (the analysis asks since when its waker ran), from
    the CPU's last switch (to idle, when the client blocked), and the time from there to
    that wakeup is unknown: blocked or running."""
    recs, stats = run_raw([
        sw(10, 1, A, "S", B),       # the server blocks (its sleep), the client runs
        sw(20, 1, B, "S", IDLE1),   # the client blocks (recv): cpu 1 goes idle
        wk(60, 1, A, B),            # the server, running, wakes the client
        sw(62, 1, A, "S", B),       # the server blocks again; the client runs
    ])
    periods = [r for r in recs if isinstance(r, Period)]
    assert [(r.task.tid, r.start_ns // 1000, r.end_ns // 1000) for r in periods] == [
        (A.tid, 10, 20), (B.tid, 20, 62)]            # the server's first: seen at 60
    assert periods[0].inferred and periods[0].on_idle_cpu
    assert periods[0].unknown_ns == 40_000            # 20 (idle) to 60 (seen running)
    assert periods[1].unknown_ns == 0 and periods[1].wake_ns == 60_000
    # on-CPU as timehist counts it: from the CPU's last switch to the switch-out
    assert [(r.start_ns // 1000, r.end_ns // 1000) for r in recs
            if isinstance(r, OnCpu) and r.task.tid == A.tid] == [(20, 62)]
    assert stats["inferred_switch_in"] == 1 and stats["threads"][A.tid].inferred == 1


def test_a_task_seen_on_a_cpu_that_did_not_go_idle_is_left_to_its_switch_out():
    recs, _ = run_raw([sw(10, 1, A, "S", B), wk(30, 1, A, W), sw(40, 1, A, "S", B)])
    p = [r for r in recs if isinstance(r, Period) and r.task.tid == A.tid]
    assert [(r.end_ns // 1000, r.unknown_ns) for r in p] == [(10, 0)]   # timehist's, no unknown


def test_exit_ends_the_thread_and_placeholder_header_is_ignored():
    ph = Task(":-1", -1, -1)
    ivs, stats = run([sw(0, 0, IDLE0, "R", A),
                      SchedEvent(EXIT, 5000, 0, A, (), "sched:sched_process_exit", target=A),
                      sw(8, 0, A, "X", IDLE0, header=ph), sw(20, 0, IDLE0, "R", B)],
                     include_open=True)
    assert of(ivs, A) == [("oncpu", "", 0, 8)]   # no off-CPU interval opened for a dead thread


def test_dead_state_switch_out_opens_nothing():
    ivs, stats = run([sw(0, 0, IDLE0, "R", A), sw(4, 0, A, "Z", IDLE0)])
    assert of(ivs, A) == [("oncpu", "", 0, 4)]
    assert "open" not in stats


def test_open_intervals_are_dropped_or_clipped():
    events = [sw(10, 0, A, "S", B), sw(20, 1, W, "R", IDLE1), wk(30, 1, W, B)]
    ivs, stats = run(events)
    assert of(ivs, A) == [] and stats["open"] >= 1
    ivs, stats = run(events, include_open=True)
    assert of(ivs, A) == [("blocked", "S", 10, 30)]
    assert "open" not in stats


def test_open_run_queue_after_wakeup_keeps_the_finished_blocked_part():
    ivs, stats = run([sw(10, 0, A, "S", B), wk(30, 1, W, A)])
    assert of(ivs, A) == [("blocked", "S", 10, 30)]
    assert stats["open"] >= 1


def test_first_event_switch_in_charges_nothing_before():
    ivs, _ = run([sw(10, 0, B, "S", A), sw(25, 0, A, "R", B)])
    assert of(ivs, A) == [("oncpu", "", 10, 25)]


def test_wakeup_new_starts_run_queue_wait():
    ivs, _ = run([wk(5, 0, W, A, "sched:sched_wakeup_new"), sw(9, 0, W, "S", A)])
    assert of(ivs, A) == [("runq", "W", 5, 9)]


def test_idle_tasks_are_tracked_per_cpu():
    ivs, _ = run([sw(10, 0, IDLE0, "R", A), sw(12, 1, IDLE1, "R", B),
                  sw(20, 1, B, "S", IDLE1), sw(30, 0, A, "S", IDLE0)])
    idle = sorted((iv.start_ns // 1000, iv.end_ns // 1000) for iv in ivs
                  if iv.task.tid == 0 and iv.kind == RUNQ)
    assert idle == [(10, 30), (12, 20)]


def test_out_of_order_is_an_error_with_file_and_line():
    events = [sw(10, 0, A, "S", B, lineno=3), sw(5, 0, B, "S", A, lineno=9)]
    with pytest.raises(ParseError) as e:
        run(events)
    # back to before the first event: two recordings one after the other
    assert e.value.lines()[0] == (
        "offconv: t.txt:9: expected events in time order, got 0.000005000 after 0.000010000 "
        "(the time starts again: recordings concatenated? give each as its own input)")
    ivs, stats = run(events, lenient=True)
    assert stats["out_of_order"] == 1


def test_a_small_step_back_is_an_error_without_the_concatenation_hint():
    events = [sw(10, 0, A, "S", B, lineno=3), sw(30, 0, B, "S", A, lineno=5),
              sw(20, 0, A, "S", B, lineno=9)]
    with pytest.raises(ParseError) as e:
        run(events)
    assert e.value.lines()[0] == \
        "offconv: t.txt:9: expected events in time order, got 0.000020000 after 0.000030000"


def test_concatenated_recordings_are_said_at_the_line_where_the_time_starts_again(tmp_path):
    import subprocess
    import sys
    rec = (Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small"
           / "e2e_victim_a_small.perf-script.txt").read_text()
    src = tmp_path / "two.txt"
    src.write_text(rec + rec)
    out = tmp_path / "out.folded"
    r = subprocess.run([sys.executable, "-m", "offconv", str(src), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    first = rec.splitlines()[0].split()[3].rstrip(":")
    line = rec.count("\n") + 1
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.splitlines()[0].startswith(
        f"offconv: {src}:{line}: expected events in time order, got {first}000 after ")
    assert r.stderr.splitlines()[0].endswith(
        "(the time starts again: recordings concatenated? give each as its own input)")


def test_samples_are_skipped_and_counted():
    s = Sample((), 1, task=A, time_ns=1000, cpu=0, event="cpu-clock")
    ivs, stats = run([s, sw(10, 0, A, "S", B)])
    assert stats["samples"] == 1


def test_per_process_recording_is_detected_and_only_wakeup_ended_waits_kept():
    events = []
    t = 0
    for i in range(PROBE_IDLE_SWITCHES + 2):
        t += 100
        events.append(sw(t, 0, A, "S", IDLE0, FUTEX))     # switch-outs, never a switch-in
        events.append(wk(t + 40, 0, B, A))                 # woken by a sibling thread
        t += 100
        events.append(sw(t, 0, B, "R", IDLE0))
    ivs, stats = run(events)
    assert stats["per_process"] == 1
    assert {iv.kind for iv in ivs} == {BLOCKED}
    assert all(iv.duration_ns == 40_000 and iv.waker == B for iv in ivs)
    assert len(ivs) == PROBE_IDLE_SWITCHES + 2
    assert "inferred_switch_in" not in stats


def test_system_wide_recording_is_not_per_process():
    events = [sw(10, 0, IDLE0, "R", A)] + [sw(20 + i, 0, A if i % 2 == 0 else IDLE0, "S" if i % 2 == 0 else "R",
                                              IDLE0 if i % 2 == 0 else A)
                                           for i in range(2 * PROBE_IDLE_SWITCHES)]
    ivs, stats = run(events)
    assert "per_process" not in stats
    assert any(iv.kind == ONCPU for iv in ivs)


def test_intervals_stream_lazily():
    def gen():
        yield sw(10, 0, A, "S", B)
        yield sw(20, 0, B, "S", A)
        raise AssertionError("read past what was needed")
    it = intervals(gen(), "t.txt", stats={})
    # the -p probe buffers a bounded prefix, then intervals flow
    with pytest.raises(AssertionError):
        list(it)


def test_one_period_carries_both_parts_and_who_woke_it():
    recs, _ = run_raw([sw(10, 0, A, "S", B, FUTEX), wk(30, 1, W, A), sw(35, 0, B, "R", A)])
    (p,) = [r for r in recs if isinstance(r, Period) and r.task == A]
    assert (p.start_ns, p.wake_ns, p.end_ns) == (10_000, 30_000, 35_000)
    assert (p.blocked_ns, p.runq_ns, p.state, p.waker) == (20_000, 5_000, "S", W)
    assert not p.on_idle_cpu and not p.inferred


def test_switch_in_from_the_idle_task_is_marked():
    recs, _ = run_raw([sw(10, 0, A, "S", IDLE0), wk(30, 1, W, A), sw(32, 0, IDLE0, "R", A)])
    (p,) = [r for r in recs if isinstance(r, Period) and r.task == A]
    assert p.on_idle_cpu and p.runq_ns == 2_000


def test_woken_but_never_switched_in_has_an_unknown_run_queue_part():
    recs, _ = run_raw([sw(10, 0, A, "S", B), wk(30, 1, W, A)])
    (p,) = [r for r in recs if isinstance(r, Period) and r.task == A]
    assert p.blocked_ns == 20_000 and p.runq_ns is None and not p.has_runq
