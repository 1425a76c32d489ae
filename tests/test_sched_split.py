"""The off-CPU path of one input over two processes (offconv.run.sched_split) gives what the
serial path gives.

Two levels: the interval machine cut at many events of every recorded sched fixture (the
first part's machine joined with an ``tail.TailMachine`` that read the rest, as the
child does, its state pickled across) must give the same records and the same counts
as one machine reading it all; and the CLI, with every input split (MIN_BYTES = 0) at
chosen events, must write byte-identical folded and SVG files, warnings and errors."""
from __future__ import annotations

import gzip
import os
import pickle
from collections import Counter
from itertools import chain
from pathlib import Path

import pytest

from offconv.sched import intervals, tail
from offconv.sched import probe as sched_probe
from offconv.run import parallel, sched_split
from offconv.model.records import EXIT, SWITCH, WAKE, SchedEvent, Task
from offconv.inputs import perf_script
from offconv.inputs.source import Source, numbered_blocks
from test_parallel import run  # (exit code, output, bytes written) with OFFCONV_JOBS

FIX = Path(__file__).parent / "fixtures"
ALL_SCRIPTS = sorted(p for p in FIX.rglob("*perf-script*.txt*")
                     if "stderr" not in p.name and "nocallchain" not in str(p)
                     # (bad inputs: the error goldens' and the fuzzer's found cases)
                     and not {"errors", "fuzz-found"} & set(p.relative_to(FIX).parts))
# the machine level reads each fixture once per cut: those up to 3.5 MB of text (the
# larger ones have the same shapes: a parallel build, fsync, swap-in, in smaller recordings)
CUTS = 12  # cut points per fixture (the machine level), spread over its events


def text_of(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace")


SCRIPTS = [p for p in ALL_SCRIPTS if len(text_of(p)) < 3_500_000]


def events_of(path: Path) -> list:
    src = Source(str(path))
    blocks = chain.from_iterable(numbered_blocks(n, p) for n, p in src.block_lists())
    return list(perf_script.parse_blocks(blocks, str(path), stats={}))


def serial(events, **kw):
    stats: dict = {}
    return Counter(intervals.intervals(events, "t", stats=stats, **kw)), stats


class _Tail:
    """sched_split.Tail without the fork: the second part's machine result, pickled and
    back as the child sends it."""

    def __init__(self, events, lenient=False):
        self.events = events
        self.records = []
        machine = tail.TailMachine("t", lenient, {}, self.records.append)
        machine.marks = sched_probe.probe_marks(events[:sched_probe.PROBE_EVENTS])
        intervals.run(machine, events)
        self.part = pickle.loads(pickle.dumps(machine.part()))
        self.joined = None

    def probe(self, undecided):
        return sched_probe.probe_on(undecided, self.part["marks"])

    def join(self, machine):
        self.joined = tail.joins(machine, self.part)
        if self.joined:
            tail.join(machine, self.part)
        else:
            self.records = []
            intervals.run(machine, self.events)


def split(events, k, lenient=False, **kw):
    tail = _Tail(events[k:], lenient)
    stats: dict = {}
    recs = list(intervals.intervals(events[:k], "t", stats=stats, tail=tail, lenient=lenient, **kw))
    return Counter(recs + tail.records), stats, tail.joined


def cuts(n: int, count: int = CUTS) -> list:
    return sorted({0, 1, n - 1, n} | {n * i // count for i in range(1, count)})


def test_the_fixtures_are_there():
    assert len(SCRIPTS) >= 25, SCRIPTS


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name.split(".")[0])
def test_machine_cut_anywhere_equals_serial(path):
    events = events_of(path)
    assert sum(isinstance(e, SchedEvent) for e in events) > 20
    for kw in ({"system_wide": True}, {"system_wide": True, "include_open": True}, {}):
        want = serial(events, **kw)
        joined = 0
        for k in cuts(len(events)):
            recs, stats, ok = split(events, k, **kw)
            assert (recs, stats) == want, (k, kw)
            joined += bool(ok)
        if kw.get("system_wide"):  # the comparison means something: the parts were joined
            assert joined >= len(cuts(len(events))) - 2, kw


A = Task("app", 10, 10)
B = Task("other", 20, 20)
C = Task("child", 30, 30)
IDLE = Task("swapper/0", None, 0)


def sw(t, cpu, prev, state, nxt, stack=()):
    return SchedEvent(SWITCH, t, cpu, prev, stack, "sched:sched_switch", prev=prev,
                      prev_state=state, next=nxt)


def wk(t, cpu, waker, target, new=False):
    return SchedEvent(WAKE, t, cpu, waker, (), "sched:sched_wakeup_new" if new else
                      "sched:sched_wakeup", target=target, new=new)


def ex(t, cpu, task):
    return SchedEvent(EXIT, t, cpu, task, (), "sched:sched_process_exit", target=task)


# sequences that exercise each thing the second part leaves to the first: an exit seen
# while running (the thread is then dead: the first part keeps it), a lost switch-in on a
# CPU the second part has not switched yet, a new thread, a tid reused, a wakeup while the
# thread is still on CPU, a switch-in with no switch-out before
SEQUENCES = {
    "exit_then_switch": [sw(10, 0, A, "S", B), wk(20, 1, B, A), sw(30, 1, IDLE, "R", A),
                         ex(40, 1, A), sw(50, 1, A, "S", IDLE), sw(60, 0, B, "S", IDLE)],
    "exit_while_on_then_x": [sw(10, 0, IDLE, "R", A), ex(20, 0, A), sw(30, 0, A, "X", B),
                             sw(40, 0, B, "S", IDLE)],
    "lost_switch_in": [sw(10, 0, A, "S", B), wk(20, 1, B, A), sw(30, 1, IDLE, "R", B),
                       sw(40, 1, A, "S", IDLE), sw(50, 0, B, "R", IDLE), sw(60, 0, IDLE, "R", B)],
    "lost_switch_in_idle": [sw(10, 0, A, "S", IDLE), wk(20, 1, B, A), sw(30, 0, A, "S", IDLE),
                            sw(35, 1, B, "S", IDLE)],
    "new_thread": [sw(10, 0, IDLE, "R", A), wk(20, 0, A, C, new=True), sw(30, 0, A, "R+", C),
                   sw(40, 0, C, "X", A), sw(50, 0, A, "S", IDLE)],
    "tid_reused": [sw(10, 0, IDLE, "R", C), sw(20, 0, C, "S", IDLE), wk(30, 0, A, C, new=True),
                   sw(40, 0, IDLE, "R", C), sw(50, 0, C, "S", A)],
    "wakeup_while_on": [sw(10, 0, IDLE, "R", A), wk(15, 1, B, A), sw(20, 0, A, "S", IDLE),
                        wk(25, 1, B, A), sw(30, 0, IDLE, "R", A)],
    "switch_in_twice": [sw(10, 0, IDLE, "R", A), sw(20, 1, IDLE, "R", A), sw(30, 1, A, "D", B),
                        sw(40, 0, B, "R", A)],
    "throttled": [sw(10, 0, A, "R", IDLE), sw(20, 0, IDLE, "R", A), sw(30, 0, A, "S", IDLE)],
    # seen running on a CPU gone idle (its switch-in from idle lost): waking another, on
    # the CPU it blocked on, and on another CPU (not yet switched in a part cut before it)
    "seen_after_idle": [sw(10, 1, A, "S", B), sw(20, 1, B, "S", IDLE), wk(30, 1, A, B),
                        sw(40, 1, A, "S", B), sw(50, 1, B, "S", IDLE)],
    "seen_elsewhere": [sw(10, 1, B, "S", IDLE), sw(20, 0, IDLE, "R", A), sw(30, 0, A, "S", IDLE),
                       wk(40, 1, A, B), sw(50, 1, A, "S", B), sw(60, 1, B, "S", IDLE)],
    "seen_exiting": [sw(10, 1, B, "S", IDLE), sw(20, 0, IDLE, "R", A), sw(30, 0, A, "S", IDLE),
                     ex(40, 1, A), sw(50, 1, A, "X", IDLE), sw(60, 0, IDLE, "R", B),
                     sw(70, 0, B, "S", IDLE)],
    "no_cpu": [SchedEvent(SWITCH, 10, None, A, (), "sched:sched_switch", prev=A, prev_state="S",
                          next=B),
               wk(20, None, B, A),
               SchedEvent(WAKE, 30, None, A, (), "sched:sched_wakeup", target=B),
               SchedEvent(SWITCH, 40, None, B, (), "sched:sched_switch", prev=B, prev_state="S",
                          next=A)],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_machine_cut_at_every_event_equals_serial(name):
    events = SEQUENCES[name] * 3   # a thread's later life too
    events = [SchedEvent(e.kind, e.time_ns + 100 * (i // len(SEQUENCES[name])), e.cpu, e.task,
                         e.stack, e.event, e.prev, e.prev_state, e.next, e.target, e.new)
              for i, e in enumerate(events)]
    for kw in ({"system_wide": True}, {"system_wide": True, "include_open": True}):
        want = serial(events, **kw)
        for k in range(len(events) + 1):
            recs, stats, _ = split(events, k, **kw)
            assert (recs, stats) == want, (k, kw)


def test_an_exit_in_the_second_part_leaves_the_thread_to_the_first():
    events = SEQUENCES["exit_then_switch"]
    second = _Tail(events[3:])   # from A's exit on: A was running at the cut
    # (A's exit shows it running on a CPU not yet switched in the part: OP_SIGHT first)
    ops = [op[0] for op in second.part["ops"] if op[0] != tail.OP_SIGHT]
    assert ops[0] == tail.OP_EXIT and tail.OP_OUT in ops   # the full switch-out


def test_a_thread_marked_dead_in_the_first_part_is_not_joined():
    """The second part takes a thread it first sees switched out in 'S' for alive; where
    the first part had seen its exit while it ran, the part is read again serially."""
    events = [sw(10, 0, IDLE, "R", A), ex(20, 0, A), sw(30, 0, A, "S", B), sw(40, 0, B, "S", A),
              sw(50, 0, A, "S", IDLE)]
    recs, stats, joined = split(events, 2, system_wide=True)
    assert joined is False and (recs, stats) == serial(events, system_wide=True)


def test_events_going_back_across_the_cut_are_not_joined():
    events = [sw(10, 0, IDLE, "R", A), sw(30, 0, A, "S", IDLE), sw(20, 0, IDLE, "R", B),
              sw(40, 0, B, "S", IDLE)]
    recs, stats, joined = split(events, 2, lenient=True, system_wide=True)
    assert joined is False
    assert stats["out_of_order"] == 1


# -- the CLI: forked, on files ----------------------------------------------------------

@pytest.fixture
def split_at(monkeypatch):
    """Every input split (whatever its size and the machine's cores, but not with
    OFFCONV_JOBS=1, the serial path it is compared with), at the event that starts at
    ``split_at.at`` of the file; ``split_at.calls``: whether each input was split and
    joined."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: os.environ.get("OFFCONV_JOBS") != "1")
    state = type("S", (), {"at": 0.5, "calls": []})()
    real_cut = parallel.cut_point
    monkeypatch.setattr(parallel, "cut_point", lambda path, size, share=0.5, **kw:
                        real_cut(path, size, share=state.at, **kw))
    real_join = sched_split.Tail.join

    def probe(self, undecided):
        return sched_probe.probe_on(undecided, self.part["marks"])

    def join(self, machine):
        joined = []
        real_joins = tail.joins

        def spy(m, part):
            joined.append(real_joins(m, part))
            return joined[-1]
        monkeypatch.setattr(tail, "joins", spy)
        try:
            real_join(self, machine)
        finally:
            monkeypatch.setattr(tail, "joins", real_joins)
        state.calls.append(bool(joined and joined[0]))
    monkeypatch.setattr(sched_split.Tail, "join", join)
    return state


CLI_INPUTS = [p for p in SCRIPTS if "verdict" in str(p)][:6] + \
    [FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"]
OUTPUTS = {
    "folded": ("--to", "folded"),
    "blocked": ("--mode", "blocked", "--to", "folded"),
    "runq": ("--mode", "runq", "--to", "folded", "--include-idle"),
    "wakeup": ("--mode", "wakeup", "--to", "folded"),
    "split_state": ("--to", "folded", "--state-split", "-m", "100"),
    "svg": ("--to", "svg"),
}


@pytest.mark.parametrize("path", CLI_INPUTS, ids=lambda p: p.name.split(".")[0])
def test_cli_split_equals_serial(path, monkeypatch, tmp_path, split_at):
    plain = tmp_path / "in.txt"
    plain.write_text(text_of(path))
    for name, args in OUTPUTS.items():
        serial_out = run(monkeypatch, tmp_path, "1", plain, *args)
        assert serial_out[0] == 0 and serial_out[2]
        for at in (0.2, 0.5, 0.9):
            split_at.at = at
            split_at.calls.clear()
            assert run(monkeypatch, tmp_path, "2", plain, *args) == serial_out, (name, at)
            assert split_at.calls == [True], (name, at)


def test_cli_not_split_where_the_analysis_is_needed(monkeypatch, tmp_path, split_at):
    plain = tmp_path / "in.txt"
    plain.write_text(text_of(CLI_INPUTS[0]))
    for args in (("--to", "report"), ("--to", "folded", "--comm", "app"), ("--to", "hist")):
        split_at.calls.clear()
        run(monkeypatch, tmp_path, "2", plain, *args)
        assert split_at.calls == [], args


def _events(n: int, t0: int = 1) -> str:
    """n sched_switch events between two threads on CPU 0, with a callchain each."""
    out = []
    for i in range(n):
        a, b = ((10, 20) if i % 2 == 0 else (20, 10))
        out.append(f"t{a} {a} [000] {t0 + i}.000100: sched:sched_switch: prev_comm=t{a} "
                   f"prev_pid={a} prev_prio=120 prev_state=S ==> next_comm=t{b} next_pid={b} "
                   f"next_prio=120\n\tffffffff81000000 schedule+0x1 ([kernel.kallsyms])\n"
                   f"\tffffffff81000010 do_nanosleep+0x2 ([kernel.kallsyms])\n\n")
    return "".join(out)


def test_cli_split_keeps_line_numbers_of_errors(monkeypatch, tmp_path, split_at):
    good = _events(40)
    bad_event = ("t10 10 [000] 800.0001x: sched:sched_switch: prev_comm=t10 prev_pid=10 "
                 "prev_prio=120 prev_state=S ==> next_comm=t20 next_pid=20 next_prio=120\n\n")
    for where in ("first", "second"):
        text = good + bad_event + _events(40, 100) if where == "first" else \
            good + _events(40, 100) + bad_event + _events(5, 200)
        path = tmp_path / f"bad-{where}.txt"
        path.write_text(text)
        split_at.at = 0.6 if where == "first" else 0.3
        for extra in ((), ("--lenient",)):
            serial_out = run(monkeypatch, tmp_path, "1", path, "--to", "folded", *extra)
            assert run(monkeypatch, tmp_path, "2", path, "--to", "folded", *extra) == serial_out
            if not extra:
                assert serial_out[0] == 2 and "bad-" in serial_out[1], serial_out
    # a file cut short inside its last line: the same warning, the same line
    cut = tmp_path / "cut.txt"
    cut.write_text(good + "t10 10 [000] 900.000100: sched:sched_switch: prev_comm=t10")
    serial_out = run(monkeypatch, tmp_path, "1", cut, "--to", "folded", "--lenient")
    assert run(monkeypatch, tmp_path, "2", cut, "--to", "folded", "--lenient") == serial_out
    assert "cut.txt:161:" in serial_out[1]   # 40 events of 4 lines, then the cut one


def test_cli_events_out_of_order_across_the_cut(monkeypatch, tmp_path, split_at):
    path = tmp_path / "ooo.txt"
    path.write_text(_events(40, 100) + _events(40, 50))
    split_at.at = 0.5
    for extra in ((), ("--lenient",)):
        serial_out = run(monkeypatch, tmp_path, "1", path, "--to", "folded", *extra)
        split_at.calls.clear()
        assert run(monkeypatch, tmp_path, "2", path, "--to", "folded", *extra) == serial_out
    assert serial_out[0] == 0 and "out of time order" in serial_out[1]
    assert split_at.calls == [False]   # read again in the parent


@pytest.mark.parametrize("path", SCRIPTS[::3], ids=lambda p: p.name.split(".")[0])
def test_the_fast_paths_equal_the_parts(path):
    """offcpu._Builder._feed_span (off-CPU time by stack with nothing else kept) adds each
    period's span where period() adds its blocked and run-queue parts, and _feed_parts
    (the same with the state split) those parts: `-m 0` (a no-op filter that takes the
    general path) gives the same stacks and weights."""
    from offconv.run.offcpu import _Builder
    from offconv.model.options import AggregateOptions
    events = events_of(path)
    fast = AggregateOptions(mode="offcpu", analyse=False, folded=True)
    general = AggregateOptions(mode="offcpu", analyse=False, folded=True, min_block_us=0)
    f, g = _Builder(fast), _Builder(general)
    assert f.feed == f._feed_span and g.feed != g._feed_span
    for kw in ({}, {"include_open": True}, {"include_idle": True}, {"state_split": True},
               {"state_split": True, "include_open": True, "include_idle": True}):
        sums = []
        for opts in (fast, general):
            b = _Builder(AggregateOptions(**{**opts.__dict__, **kw}))
            intervals.drive(iter(events), "t", b.feed, include_open=kw.get("include_open", False),
                            oncpu=False)
            sums.append(b.ns)   # in ns, before rounding
        assert sums[0] == sums[1] and sums[0], kw


def _same_name_halves() -> str:
    """Two threads named worker, one in each half of the file, each blocked 1.6 µs (woken
    by a thread named waker, a different one each time), then 0.4 µs in the run queue."""
    out = []
    for sec, (tid, waker) in ((1, (101, 201)), (2, (102, 202))):
        out += [
            f"worker  {tid} [000]     {sec}.000000000: sched:sched_switch: prev_comm=worker prev_pid={tid} "
            "prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
            "\tffffffff81000001 schedule+0x1 ([kernel.kallsyms])\n",
            f"waker  {waker} [001]     {sec}.000001600: sched:sched_wakeup: comm=worker pid={tid} prio=120 "
            "target_cpu=000\n\tffffffff81000002 try_to_wake_up+0x1 ([kernel.kallsyms])\n",
            f"swapper     0 [000]     {sec}.000002000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 "
            f"prev_prio=120 prev_state=R ==> next_comm=worker next_pid={tid} next_prio=120\n"
            "\tffffffff81000001 schedule+0x1 ([kernel.kallsyms])\n"]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("args,line", [
    (("--mode", "blocked", "--to", "folded"), "worker;schedule 3\n"),
    (("--mode", "wakeup", "--to", "folded"), "worker;schedule;--;try_to_wake_up;waker 3\n"),
])
def test_cli_split_sums_a_name_over_both_parts_in_ns(monkeypatch, tmp_path, split_at, args, line):
    """The two parts' threads of one name are one stack, summed in ns and rounded once
    (2 x 1.6 µs = 3 µs, not 2 + 2), whether the part is the child's or not: the child's
    sums are keyed by its own thread frames, taken over by name (_Builder.adopt)."""
    plain = tmp_path / "in.txt"
    plain.write_text(_same_name_halves())
    serial = run(monkeypatch, tmp_path, "1", plain, *args)
    assert serial[0] == 0 and serial[2].decode() == line
    split_at.at = 0.3   # within the first thread's events: the second one is the child's
    assert run(monkeypatch, tmp_path, "2", plain, *args) == serial
    assert split_at.calls == [True]
