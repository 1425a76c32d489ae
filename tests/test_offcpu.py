"""Off-CPU aggregation: modes, naming, state split, rounding and filters."""
from __future__ import annotations

import pytest

from offconv.model.errors import OffconvError
from offconv.model.records import KERNEL, USER, Frame, Task
from offconv.run.offcpu import build_profile, parse_state, state_matches
from offconv.model.options import AggregateOptions
from conftest import folded_dict, split_naming
from test_intervals import IDLE0, W, WAKER_STACK, sw, wk

APP = Task("my app", None, 10)
APP2 = Task("worker", 7, 11)
STACK = (Frame("main", "/bin/app", USER), Frame("read", "/lib/libc.so", USER),
         Frame("ksys_read", "[kernel.kallsyms]", KERNEL), Frame("schedule", "[kernel.kallsyms]", KERNEL))


def events():
    """APP: blocked S 100 µs + run queue 5 µs (woken by W); then preempted 20 µs.
    APP2: preempted 80 µs with no stack; blocked D 1.4 µs (rounds to 1) without wakeup."""
    return [
        sw(0, 0, IDLE0, "R", APP),
        sw(10, 0, APP, "S", IDLE0, STACK),
        wk(110, 1, W, APP),
        sw(115, 0, IDLE0, "R", APP),
        sw(200, 0, APP, "R", APP2, STACK),
        sw(220, 0, APP2, "R", APP),       # no stack
        sw(300, 1, IDLE0, "R", APP2),
        sw(301, 1, APP2, "D", IDLE0, STACK),
        sw(302.4, 1, IDLE0, "R", APP2),
    ]


def fold(mode="offcpu", evs=None, **kw):
    naming, kw = split_naming(kw)
    prof = build_profile([("t.txt", iter(evs or events()))], AggregateOptions(mode=mode, **kw))
    return folded_dict(prof, **naming), prof


def test_offcpu_mode_charges_blocked_plus_runq_to_the_switch_out_stack():
    got, prof = fold()
    assert got == {"my_app;main;read;ksys_read;schedule": 125, "worker;main;read;ksys_read;schedule": 1,
                   "worker": 80}
    assert prof.unit == "us" and prof.mode == "offcpu"


def test_auto_mode_resolves_to_offcpu():
    got, prof = fold("auto")
    assert prof.mode == "offcpu" and got["my_app;main;read;ksys_read;schedule"] == 125


def test_blocked_and_runq_modes():
    assert fold("blocked")[0] == {"my_app;main;read;ksys_read;schedule": 100,
                                  "worker;main;read;ksys_read;schedule": 1}
    assert fold("runq")[0] == {"my_app;main;read;ksys_read;schedule": 25, "worker": 80}


def test_wakeup_mode_is_offwaketime_layout():
    got, _ = fold("wakeup")
    assert got == {"my_app;main;read;ksys_read;schedule;--;try_to_wake_up;futex_wake;waker": 100}


def test_state_split_marker_is_the_second_frame():
    got, _ = fold(state_split=True)
    assert got == {"my_app;[blocked S];main;read;ksys_read;schedule": 100,
                   "my_app;[run queue];main;read;ksys_read;schedule": 5,
                   "my_app;[preempted];main;read;ksys_read;schedule": 20,
                   "worker;[blocked D];main;read;ksys_read;schedule": 1,
                   "worker;[preempted]": 80}
    # only mode offcpu splits
    assert "my_app;main;read;ksys_read;schedule" in fold("blocked", state_split=True)[0]


def test_rounding_is_once_per_stack_and_zero_stacks_are_dropped():
    evs = [sw(0, 0, APP2, "D", IDLE0, STACK), sw(0.4, 0, IDLE0, "R", APP2),
           sw(1, 0, APP2, "D", IDLE0, STACK), sw(1.4, 0, IDLE0, "R", APP2)]
    assert fold(evs=evs)[0] == {"worker;main;read;ksys_read;schedule": 1}   # 0.8 µs -> 1
    assert fold(evs=evs[:2])[0] == {}                                          # 0.4 µs -> dropped


def test_naming_pid_tid_and_unknown_pid():
    got, _ = fold(tid=True)
    assert set(got) == {"my_app-?/10;main;read;ksys_read;schedule", "worker-7/11;main;read;ksys_read;schedule",
                        "worker-7/11"}
    got, _ = fold(pid=True)
    assert "worker-7;main;read;ksys_read;schedule" in got


def test_kernel_annotation_and_stack_selection():
    assert "my_app;main;read;ksys_read_[k];schedule_[k]" in fold(kernel=True)[0]
    assert "my_app;main;read" in fold(user_stacks_only=True)[0]
    assert "my_app;ksys_read;schedule" in fold(kernel_stacks_only=True)[0]
    assert "my_app;main;read;-;ksys_read;schedule" in fold(delimited=True)[0]
    with pytest.raises(OffconvError):
        fold(user_stacks_only=True, kernel_stacks_only=True)


def test_thread_filters():
    assert set(fold(filter_tids=frozenset({11}))[0]) == {"worker;main;read;ksys_read;schedule", "worker"}
    assert set(fold(comm="^my")[0]) == {"my_app;main;read;ksys_read;schedule"}
    got, prof = fold(filter_pids=frozenset({10}))     # no pid in the input: matches the tid
    assert set(got) == {"my_app;main;read;ksys_read;schedule"}
    assert any("only thread ids" in w for w in prof.warnings)
    assert "worker;main;read;ksys_read;schedule" in fold(filter_pids=frozenset({7}))[0]


def test_idle_excluded_unless_asked():
    assert not any(k.startswith("swapper") for k in fold()[0])
    got, prof = fold(include_idle=True)
    assert any(k.startswith("swapper/0") for k in got)
    assert 0 in prof.analysis.threads


def test_min_max_block_time_filter_the_whole_span_in_offcpu_mode():
    # APP's spans: 105 µs (blocked 100 + runq 5) and 20 µs (preempted); APP2's 80 and 1.4
    assert fold(min_block_us=21)[0] == {"my_app;main;read;ksys_read;schedule": 105, "worker": 80}
    assert fold(max_block_us=20)[0] == {"my_app;main;read;ksys_read;schedule": 20,
                                        "worker;main;read;ksys_read;schedule": 1}
    # blocked mode filters the blocked interval itself
    assert fold("blocked", min_block_us=100)[0] == {"my_app;main;read;ksys_read;schedule": 100}


def test_state_filter():
    assert fold(states=frozenset("R"))[0] == {"my_app;main;read;ksys_read;schedule": 20, "worker": 80}
    assert fold(states=frozenset("D"))[0] == {"worker;main;read;ksys_read;schedule": 1}


def test_parse_state():
    assert parse_state("0") == frozenset("R")
    assert parse_state("2") == frozenset("DI")      # offcputime: prev->__state & 2 (TASK_IDLE too)
    assert parse_state("3") == frozenset("SDI")
    assert parse_state("D") == frozenset("D")
    assert parse_state("S,D") == frozenset("SD")
    assert state_matches("D|K", frozenset("D")) and state_matches("R+", frozenset("R"))
    assert not state_matches("S", frozenset("D"))
    for bad in ("Q", ""):
        with pytest.raises(OffconvError):
            parse_state(bad)


def test_threads_and_histograms():
    _, prof = fold()
    t = prof.analysis.threads[10]
    assert (t.blocked_ns, t.runq_ns, t.runq_preempted_ns) == (100_000, 25_000, 20_000)
    assert t.oncpu_ns == (10 - 0 + 200 - 115) * 1000
    assert t.switches == 2
    names = [h.name for h in prof.histograms]
    assert names == ["blocked_us", "runq_us"]
    assert prof.histograms[0].buckets == ((1, 2, 1), (2, 4, 0), (4, 8, 0), (8, 16, 0), (16, 32, 0),
                                          (32, 64, 0), (64, 128, 1))


def test_inputs_are_merged_each_with_its_own_state():
    evs = events()
    prof = build_profile([("a.txt", iter(evs)), ("b.txt", iter(evs))], AggregateOptions())
    assert folded_dict(prof)["my_app;main;read;ksys_read;schedule"] == 250


def test_mode_oncpu_is_refused():
    with pytest.raises(OffconvError):
        fold("oncpu")


def test_stack_outputs_skip_the_analysis_and_get_the_same_stacks():
    """convert to a stack output does not accumulate per-thread analysis (a fifth of the
    time on sched input); the stacks, warnings and dropped counts are the same."""
    from offconv.run import pipeline
    from offconv.model.options import Options
    from pathlib import Path
    src = Path(__file__).parent / "fixtures" / "recorded" / "victim_a_1" / "victim_a_1.perf-script.txt.gz"
    full = pipeline.load([str(src)], Options(), state_split_default=True)
    light = pipeline.load([str(src)], Options(aggregate=AggregateOptions(analyse=False)),
                          state_split_default=True)
    assert light.samples == full.samples and light.samples
    assert (light.warnings, light.dropped) == (full.warnings, full.dropped)
    assert not light.analysis.threads and full.analysis.threads


def _same_name_threads(n=50, ns_each=1600):
    """n threads named worker (one process), each blocked ``ns_each`` ns at STACK, switched
    out and back in on its own CPU."""
    evs = []
    for i in range(n):
        t = Task("worker", 7, 100 + i)
        evs += [sw(i, i, t, "S", IDLE0, STACK), sw(i + ns_each / 1000, i, IDLE0, "R", t)]
    evs.sort(key=lambda e: e.time_ns)
    return evs


def test_by_name_sums_the_threads_of_a_name_in_ns_and_rounds_once():
    """A folded or SVG output that prints threads by name alone (no --pid/--tid) sums each
    stack over the threads of that name in ns and rounds once (DESIGN.md), and keeps one
    thread frame per name: its sums follow the output's stacks, not the threads the input
    ever had. Per thread, each 1.6 µs rounds to 2."""
    evs = _same_name_threads()
    prof = build_profile([("t.txt", iter(evs))], AggregateOptions(analyse=False, by_name=True))
    assert folded_dict(prof) == {"worker;main;read;ksys_read;schedule": 80}   # 50 x 1.6 µs
    assert len(prof.samples) == 1                      # one key, not one per thread
    assert not prof.analysis.live_counts               # no per-thread stats kept either
    tid, _ = fold(evs=evs, tid=True)
    assert len(tid) == 50 and set(tid.values()) == {2}
    # the report's path keeps every thread
    full = build_profile([("t.txt", iter(evs))], AggregateOptions())
    assert len(full.analysis.threads) == 50 and len(full.analysis.live_counts) == 50


def test_by_name_is_off_where_a_filter_needs_the_threads():
    evs = _same_name_threads(4)
    prof = build_profile([("t.txt", iter(evs))],
                         AggregateOptions(analyse=False, by_name=True, filter_tids=frozenset({100, 101})))
    assert folded_dict(prof) == {"worker;main;read;ksys_read;schedule": 4}   # 2 x 2 µs
    assert len(prof.samples) == 2


def test_by_name_in_wakeup_mode_names_the_waker_by_name_too():
    a, b = Task("worker", 7, 100), Task("worker", 7, 101)
    w1, w2 = Task("waker", 9, 200), Task("waker", 9, 201)
    evs = [sw(0, 0, a, "S", IDLE0, STACK), sw(0, 1, b, "S", IDLE0, STACK),
           wk(1.6, 2, w1, a), wk(1.6, 3, w2, b),
           sw(2, 0, IDLE0, "R", a), sw(2, 1, IDLE0, "R", b)]
    prof = build_profile([("t.txt", iter(evs))],
                         AggregateOptions(mode="wakeup", analyse=False, by_name=True))
    assert folded_dict(prof) == {"worker;main;read;ksys_read;schedule;--;try_to_wake_up;futex_wake;waker": 3}
    assert len(prof.samples) == 1
