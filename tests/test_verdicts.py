"""Verdicts on real recordings of workloads with known answers (issue 8).

Each folder of ``fixtures/recorded/verdict`` holds a system-wide, unfiltered recording
(background threads kept) and its ``expected.json``, written and committed before the
recording was made and before offconv ran on it. The verdict and its top cause must
match; ``must_not_say`` lists answers and causes that must be neither."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from offconv.run import pipeline
from offconv.analysis.summary import report_data
from offconv.model.options import Options

VERDICT = Path(__file__).parent / "fixtures" / "recorded" / "verdict"
CASES = sorted(p.parent.name for p in VERDICT.glob("*/expected.json"))


def _report(name: str) -> dict:
    path = VERDICT / name / f"{name}.perf-script.txt.gz"
    return report_data(pipeline.load([str(path)], Options()))


@pytest.fixture(scope="module")
def reports() -> dict:
    return {}


def test_there_are_enough_workloads():
    assert len(CASES) >= 12


@pytest.mark.parametrize("name", CASES)
def test_verdict_and_top_cause_match_what_was_written_down(name, reports):
    exp = json.loads((VERDICT / name / "expected.json").read_text())
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    if "known_miss" in exp:
        # written down before it ran and missed, for the reason given: held to that miss,
        # so that a change of it is read again (and the expectation kept as written)
        miss = exp["known_miss"]
        assert (v["answer"], v["cause"]["cause"] if v["cause"] else None) == \
            (miss["answer"], miss["top_cause"]), v["reason"]
        return
    assert v["answer"] == exp["answer"], v["reason"]
    cause = v["cause"]["cause"] if v["cause"] else None
    if exp["answer"] in ("waiting", "both"):
        allowed = {exp["top_cause"], *exp.get("cause_alternatives", [])}
        assert cause in allowed, v["reason"]
        # the sentence names a workload thread and the cause
        assert v["cause"]["comm"] in exp["workload_comms"] or v["cause"]["comm"] == "sleep"
        if "min_cause_share" in exp:
            assert v["cause"]["share_of_thread"] >= exp["min_cause_share"], v["reason"]
    for word in exp.get("must_not_say", []):
        assert v["answer"] != word and cause != word, (word, v["reason"])
    # nothing dropped silently: every thread is in the workload or left out with a reason
    placed = {t for w in v["workload"] for t in w["tids"]} | {x["tid"] for x in v["left_out"]}
    tids = {t["tid"] for t in d["threads"] if isinstance(t["tid"], int) and t["tid"] > 0}
    assert tids <= placed
    assert all(x["reason"] for x in v["left_out"])


QUEUED = [n for n in CASES if json.loads((VERDICT / n / "expected.json").read_text()).get("waker_is_queued")]


def test_there_is_a_recording_with_queued_wakeups():
    assert QUEUED


@pytest.mark.parametrize("name", QUEUED)
def test_a_queued_wakeup_does_not_name_the_idle_task_as_the_waker(name, reports):
    """sched_wakeup of a wake-up queued for an idle CPU (ttwu_queue) is emitted there by the
    idle task, with a sched_ttwu_pending stack: the waker is on another CPU, not named."""
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    assert v["cause"]["woken_by"] == "(another CPU)", v["reason"]
    assert "swapper" not in v["reason"]
    assert "woken from another CPU (a queued wake-up" in v["reason"]


def test_a_wait_a_timer_ended_names_the_timer_not_the_task_it_interrupted(reports):
    """A nanosleep ends at its timer's expiry: sched_wakeup's task is whichever the timer
    interrupt found on that CPU (the idle task here; `ls` on a held-out recording of the
    fourteenth round), and its stack shows the timer (hrtimer_wakeup)."""
    d = reports.setdefault("shell_children", _report("shell_children"))
    v = d["verdict"]
    assert v["cause"]["cause"] == "sleep" and v["cause"]["woken_by"] == "(a timer)", v["reason"]
    assert "ended by a timer" in v["reason"] and "swapper" not in v["reason"]


def test_per_process_recording_says_what_it_cannot_measure(reports):
    d = reports.setdefault("p_recording", _report("p_recording"))
    v = d["verdict"]
    assert v["runq_long"] is None and v["runq_share"] is None
    assert "not measured" in v["reason"]
    assert d["totals"]["runq_us"] is None and d["totals"]["oncpu_us"] is None
    assert all(t["runq_us"] is None for t in d["threads"])


def test_background_timed_futex_waits_are_not_lock_waits(reports):
    """memfd:sealed-91 (a daemon on this VM) waits in futex with a 50 ms timeout, woken by
    hrtimer_wakeup: a timed wait, not a lock (it used to make oversub say 'both')."""
    d = reports.setdefault("oversub", _report("oversub"))
    causes = {c["cause"]: c for c in d["causes"]}
    assert "lock" not in causes or causes["lock"]["blocked_us"] < 100_000
    assert d["verdict"]["answer"] == "capacity"


def test_idle_wakeup_latency_is_not_capacity(reports):
    """fsync pinned to CPU 0: its run-queue time is mostly the wake-up of the idle CPU."""
    d = reports.setdefault("fsync_pinned", _report("fsync_pinned"))
    v = d["verdict"]
    assert v["idle_wakeup_us"] > 10_000 and not v["runq_long"]


def test_file_page_faults_are_disk_and_swap_ins_are_paging(reports):
    mm = reports.setdefault("mmap_read", _report("mmap_read"))["verdict"]["cause"]
    sw = reports.setdefault("swapin", _report("swapin"))["verdict"]["cause"]
    assert (mm["cause"], mm["label"]) == ("disk", "page-fault read")
    assert (sw["cause"], sw["label"]) == ("paging", "swap-in")


# -- the rules on their own ------------------------------------------------------------------

def _k(*names):
    from offconv.model.records import KERNEL, Frame
    return tuple(Frame(n, "[kernel.kallsyms]", KERNEL) for n in names)


def test_a_socket_wait_on_a_busy_peer_is_the_peers_cpu_work():
    from offconv.analysis.threads import Analysis
    from offconv.model.records import Frame, Period, Task
    an = Analysis()
    me, peer = Task("client", 1, 1), Task("server", 1, 2)
    sock = _k("tcp_recvmsg", "sk_wait_data", "schedule_timeout", "schedule")
    key = (Frame("x"),)
    # the peer became runnable at 0 ms (woken by the request) and ran until it answered at 3 ms
    an.add_period(Period(peer, "S", -5_000_000, 0, 100_000, sock, me), key, "p")
    an.add_period(Period(me, "S", 1_000_000, 3_000_000, 3_100_000, sock, peer), key, "p")
    assert an.threads[1].by_cause == {("peer-cpu", "waiting for server's CPU work"): 2_000_000}
    # a peer that was itself asleep (a slow dependency) until just before: a network wait
    an.add_period(Period(peer, "S", 3_200_000, 20_000_000, 20_010_000, _k("do_nanosleep", "schedule"), None),
                  key, "p")
    an.add_period(Period(me, "S", 3_300_000, 20_050_000, 20_060_000, sock, peer), key, "p")
    assert an.threads[1].by_cause[("network", "socket")] == 16_750_000


def test_a_socket_wait_on_a_peer_switched_in_unrecorded_from_idle_is_not_its_cpu_work():
    """The peer's switch-in from an idle CPU was lost (corpus quirk 1): its period ends at
    the CPU's last switch (timehist's inference), yet it was seen running only when it
    woke the client; the time between is unknown, not the peer's CPU work."""
    from offconv.analysis.threads import Analysis
    from offconv.model.records import Frame, Period, Task
    an = Analysis()
    me, peer = Task("client", 1, 1), Task("server", 1, 2)
    sock = _k("unix_stream_read_generic", "schedule_timeout", "schedule")
    key = (Frame("x"),)
    # the server sleeps from 0; the client blocks at 1 ms and cpu 1 goes idle; the server,
    # seen running at 4 ms, wakes the client
    an.add_period(Period(peer, "S", 0, None, 1_000_000, _k("do_nanosleep", "schedule"), None,
                         inferred=True, on_idle_cpu=True, unknown_ns=3_000_000), key, "p")
    an.add_period(Period(me, "S", 1_000_000, 4_000_000, 4_010_000, sock, peer), key, "p")
    # (a Unix socket: a local peer's wait, issue 40; not the peer's CPU work either)
    assert an.threads[1].by_cause == {("local-socket", "unix socket"): 3_000_000}


def _workload(threads) -> "object":
    """An Analysis of threads given as (comm, tid, [(on-CPU µs, kind, µs, stack)...]): each
    slice runs, then waits ``kind`` ("R" preempted, "S"/"D" blocked) for that long, woken
    (a blocked one) by a kworker just before its switch-in."""
    from offconv.analysis.threads import Analysis
    from offconv.model.records import Frame, OnCpu, Period, Task
    an, key, us = Analysis(), (Frame("x"),), 1000
    waker = Task("kworker/0:1", None, 99)
    for comm, tid, slices in threads:
        task, t = Task(comm, None, tid), 0
        for on, kind, off, stack in slices:
            an.add_oncpu(OnCpu(task, t, t + on * us))
            t += on * us
            if kind == "R":
                an.add_period(Period(task, "R", t, None, t + off * us, stack), key, "p")
            else:
                an.add_period(Period(task, kind, t, t + off * us - 10_000, t + off * us, stack,
                                     waker), key, "p")
            t += off * us
    return an


def test_a_program_blocked_for_long_is_not_diluted_by_busy_ones():
    """Four CPU-bound processes and a `dd oflag=dsync` loop on two CPUs (held out: w5 of
    the sixteenth round): dd blocked 40% of its time in disk waits of 4 ms (a p99 under
    --blocked-p99), 8% of the pooled wall time. The blocked side is long (--blocked-share
    is a share of a thread's wall time): both, not 'capacity ... the blocking paths are not
    the problem'."""
    from offconv.model.options import ReportOptions
    from offconv.analysis.rules import decide
    disk = _k("folio_wait_bit", "io_schedule", "schedule")
    spin = _k("asm_sysvec_apic_timer_interrupt", "schedule")
    hogs = [("hog", 10 + i, [(4000, "R", 6000, spin)] * 100) for i in range(4)]
    dd = ("dd", 20, [(3000, "D", 4000, disk), (0, "R", 3000, spin)] * 100)
    d = decide(_workload(hogs + [dd]), ReportOptions())
    assert d.blocked_share < 0.2 and d.blocked_p99_us < 10_000 and d.runq_share > 0.5
    assert d.answer == "both" and d.cause[0] == "disk" and d.cause_thread.comm == "dd"
    d = decide(_workload(hogs + [dd]), ReportOptions(blocked_share_long=0.45))
    assert d.answer == "capacity"


def test_a_busy_stage_beside_a_waiting_one_is_said():
    """`tar c /usr/share | gzip -1` from a cold page cache (held out, 2026-12-05, 10.8 s,
    written down as 'on-cpu: gzip'): tar waited on disk 25% of its wall time, gzip ran 78%
    and waited 21% for tar's data. The answer stays 'waiting' (tar's disk waits are long),
    and the CPU-bound stage is said beside it: the I/O fix saves at most gzip's 21%."""
    from offconv.model.options import ReportOptions
    from offconv.analysis.rules import decide
    from offconv.analysis.verdict import explain
    disk = _k("folio_wait_bit", "io_schedule", "schedule")
    pipe = _k("anon_pipe_read", "schedule")
    tar = ("tar", 20, [(3000, "D", 1000, disk)] * 100)    # on CPU 75%, disk 25%
    gzip = ("gzip", 21, [(8000, "S", 2000, pipe)] * 100)  # on CPU 80%, waiting for data
    d = decide(_workload([tar, gzip]), ReportOptions())
    assert d.answer == "waiting" and d.cause[0] == "disk" and d.cause_thread.comm == "tar"
    assert [t.comm for t in d.scope.core] == ["tar"]
    assert d.busy_thread is not None and d.busy_thread.comm == "gzip"
    text = explain(d, ReportOptions())
    assert "Beside it, gzip (tid 21) is on CPU 80% of its wall time" in text, text
    assert text.index("fix the I/O path") < text.index("Beside it")
    # a stage on CPU 60% of its time is not CPU-bound: nothing said
    gzip = ("gzip", 21, [(6000, "S", 4000, pipe)] * 100)
    d = decide(_workload([tar, gzip]), ReportOptions())
    assert d.answer == "waiting" and d.busy_thread is None
    assert "Beside it" not in explain(d, ReportOptions())
    # and only beside a 'waiting' answer: a busy thread beside short waits is on-cpu's own
    tar = ("tar", 20, [(9000, "D", 1000, disk)] * 100)
    d = decide(_workload([tar, ("gzip", 21, [(8000, "S", 2000, pipe)] * 100)]), ReportOptions())
    assert d.answer == "on-cpu" and d.busy_thread is None


@pytest.mark.parametrize("name", CASES)
def test_no_busy_stage_is_said_where_none_was_seen(name, reports):
    """None of the recorded waiting workloads has a thread outside the considered ones on
    CPU 70% of its wall time or more (listed by a script over every fixture, 2026-12-05):
    busy_beside stays null, the reason without its sentence."""
    d = reports.setdefault(name, _report(name))
    assert d["verdict"]["busy_beside"] is None, d["verdict"]["reason"]
    assert "Beside it," not in d["verdict"]["reason"]


def test_a_program_waiting_for_cpus_is_not_diluted_by_blocked_ones():
    lock = _k("futex_wait", "schedule")
    spin = _k("asm_sysvec_apic_timer_interrupt", "schedule")
    client = ("client", 1, [(5000, "S", 5000, lock)] * 100)     # blocked 50%
    helper = ("helper", 2, [(8500, "R", 1500, spin)] * 100)     # run queue 15%, 1.5 ms each
    d = decide_default(_workload([client, helper]))
    assert d.runq_share < 0.1 and d.runq_p99_us < 10_000 and d.answer == "both"


def decide_default(an):
    from offconv.model.options import ReportOptions
    from offconv.analysis.rules import decide
    return decide(an, ReportOptions())


def test_a_wait_ended_from_an_interrupt_names_no_task(reports):
    """fsync-loop's disk waits end in the block layer's completion, run from an interrupt
    on whichever task was on that CPU (a cpuhog): not a waker to name."""
    v = reports.setdefault("hogs_plus_fsync", _report("hogs_plus_fsync"))["verdict"]
    assert v["cause"]["woken_by"] == "(an interrupt)", v["reason"]
    assert "woken from an interrupt" in v["reason"] and "woken by cpuhog" not in v["reason"]


def test_a_wait_ended_from_an_interrupt_or_uninterruptible_is_no_peers_cpu_work():
    from offconv.analysis.threads import Analysis
    from offconv.model.records import KERNEL, Frame, Period, Task
    sock = _k("tcp_recvmsg", "sk_wait_data", "schedule_timeout", "schedule")
    irq = _k("try_to_wake_up", "sock_def_readable", "net_rx_action", "handle_softirqs",
             "__irq_exit_rcu", "common_interrupt", "asm_common_interrupt")
    unread = (Frame("[unknown]", "[kernel.kallsyms]", KERNEL),)
    key = (Frame("x"),)
    for state, stack, waker_stack, cause in (("S", sock, irq, ("network", "socket")),
                                             ("D", unread, (), ("other", "kernel frames unresolved"))):
        an = Analysis()
        me, hog = Task("client", 1, 1), Task("hog", 3, 3)
        # the hog is runnable or running from 0 to the end: busy through the whole wait
        an.add_period(Period(hog, "R", -5_000_000, None, 0, ()), key, "p")
        an.add_period(Period(me, state, 1_000_000, 3_000_000, 3_100_000, stack, hog, waker_stack),
                      key, "p")
        assert an.threads[1].by_cause == {cause: 2_000_000}, state


def test_a_futex_wait_with_no_wake_up_where_sched_waking_was_recorded_is_a_timeout():
    """A release by another thread would show: sched_waking fires in the waker, which runs.
    A daemon's 50 ms futex timeouts on CPU 1 (whose idle task's events are lost here) are
    timed waits, not a lock the verdict should send the user to fix."""
    from offconv.analysis.threads import Analysis
    from offconv.model.records import Frame, Period, Task
    futex = _k("futex_wait", "futex_do_wait", "schedule")
    for counts, want in (({}, ("lock", "futex")),
                         ({"sched_waking_events": 40}, ("poll/idle", "timed wait (inferred)"))):
        an = Analysis()
        daemon = Task("daemon", 5, 5)
        for k in range(5):
            an.add_period(Period(daemon, "S", k * 50_000_000, None, k * 50_000_000 + 49_900_000,
                                 futex, None), (Frame("x"),), "p")
        an.add_counts(counts)
        an.finish()
        assert set(an.threads[5].by_cause) == {want}, counts


def test_the_recorded_commands_process_tree():
    from offconv.analysis.threads import Analysis
    from offconv.analysis.rules import command_tree
    an = Analysis()
    an.command = {10}
    an.parents = {11: 10, 12: 11, 13: 99}
    assert command_tree(an) == {10, 11, 12}
    assert command_tree(Analysis()) == set()


def _all_left_out(reports) -> list:
    out = []
    for name in CASES:
        if name not in reports:
            reports[name] = _report(name)
        out.append((name, reports[name]["verdict"]["left_out"]))
    return out


def test_left_out_summary_counts_each_reason_once(reports):
    """The '(workload: ...; left out: ...)' line names a reason once, with its count, and
    its parentheses close: the part of a reason before ':' is its category, the rest (a
    thread's switch count, its share) is per-thread detail."""
    from offconv.analysis.verdict import left_out_text
    seen_partner = False
    for name, left in _all_left_out(reports):
        text = left_out_text(left)
        parts = text.split("; ") if text else []
        cats = [p.split(" ", 1)[1] for p in parts]
        assert len(cats) == len(set(cats)), (name, text)
        assert sum(int(p.split(" ", 1)[0]) for p in parts) == len(left), (name, text)
        for p in parts:
            assert p.count("(") == p.count(")"), (name, p)
        seen_partner |= any(":" in x["reason"] for x in left)
    assert seen_partner  # the per-thread detail case (after ':') is among the recordings


def test_a_cpu_quota_is_not_contention_for_cores(reports):
    """A busy loop held to 20% of a CPU by its cgroup's quota, the other CPU idle: its
    run-queue time began each time with a switch to the idle task (nothing else wanted
    the CPU). Capacity, but the fix is the quota, not more cores (before: "run-queue waits
    behind other tasks ...: add cores")."""
    d = reports.setdefault("cpu_quota", _report("cpu_quota"))
    v = d["verdict"]
    assert v["answer"] == "capacity" and v["runq_throttled_share"] > 0.9, v
    assert "quota" in v["reason"] and "more cores will not help" in v["reason"], v["reason"]
    assert "behind other tasks" not in v["reason"] and "add cores" not in v["reason"]
    # contention for cores is still contention: the oversubscribed hogs were never throttled
    o = reports.setdefault("oversub", _report("oversub"))["verdict"]
    assert o["runq_throttled_share"] == 0 and "add cores" in o["reason"]


def test_a_runnable_switch_out_to_the_idle_task_is_throttled():
    from offconv.sched.intervals import intervals
    from offconv.model.records import SWITCH, SchedEvent, Task
    a, idle, b = Task("hog", None, 5), Task("swapper/0", None, 0), Task("other", None, 6)

    def sw(t, prev, state, nxt):
        return SchedEvent(SWITCH, t, 0, prev, (), "sched:sched_switch", prev=prev,
                          prev_state=state, next=nxt)
    evs = [sw(1_000, idle, "R", a), sw(2_000, a, "R+", idle), sw(5_000, idle, "R", a),
           sw(6_000, a, "R", b), sw(7_000, b, "S", a), sw(8_000, a, "S", idle)]
    periods = [p for p in intervals(iter(evs), "x", system_wide=True) if hasattr(p, "throttled")]
    assert [(p.start_ns, p.throttled) for p in periods if p.task.tid == 5] == \
        [(2_000, True), (6_000, False)]


HELDOUT_REC = Path(__file__).parent / "fixtures" / "heldout_rec"


@pytest.mark.parametrize("name", ["cap3_perf_p", "cap3_perf_comm"])
def test_switch_partners_of_a_filtered_recording_are_not_the_workload(name, tmp_path):
    # record.sh -p / --comm keep the target's events: a daemon seen only when it took a
    # hog's CPU had "95% of its wall time in lock waits" (gaps between sightings) and made
    # the answer `both`; three CPU hogs on two CPUs are `capacity`
    path = HELDOUT_REC / f"{name}.perf-script.txt.gz"
    v = report_data(pipeline.load([str(path)], Options()))["verdict"]
    assert v["answer"] == "capacity", v["reason"]
    assert {w["comm"] for w in v["workload"]} == {"python3"}
    partners = {l["comm"] for l in v["left_out"] if "no wake-up seen" in l["reason"]}
    assert "memfd:sealed-91" in partners


def test_per_cpu_kernel_threads_are_not_the_workload(reports):
    """kworker/0:1 and migration/0 are bound to CPU 0: their run-queue waits behind a
    recorder compiling its program there (the other CPU idle) said capacity on an idle
    machine (idle_beside_bpftrace). Unbound workers (kworker/u8:2) and other kernel threads
    are weighed as before."""
    from offconv.analysis.rules import PERCPU_KTHREAD
    for comm in ("kworker/0:1", "kworker/1:0H", "kworker/0:2-events", "migration/0",
                 "ksoftirqd/1", "cpuhp/0", "rcuc/3"):
        assert PERCPU_KTHREAD.match(comm), comm
    for comm in ("kworker/u8:2", "kworker/u9:0-flush", "kswapd0", "rcu_preempt", "jbd2/vda1-8",
                 "migration", "my-kworker/0:1"):
        assert not PERCPU_KTHREAD.match(comm), comm
    name = "idle_beside_bpftrace"
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    left = {x["comm"]: x["reason"] for x in v["left_out"]}
    assert left["kworker/0:1"].startswith("a per-CPU kernel thread"), left.get("kworker/0:1")
    assert left["migration/0"].startswith("a per-CPU kernel thread")
    assert v["answer"] == "on-cpu" and not v["runq_long"], v["reason"]


def test_a_join_is_a_wait_for_a_thread_not_a_lock(reports):
    """The main thread of an idle thread pool waited 3 s in join(): a futex wait ended by a
    worker it created, which then ended. That is waiting for the thread's life (a child
    wait), not for a lock's holder; it read "waiting, lock" (pool_join, held out)."""
    from offconv.analysis.lifetimes import THREAD_JOIN
    name = "pool_join"
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    assert v["answer"] == "on-cpu", v["reason"]
    an = pipeline.load([str(VERDICT / name / f"{name}.perf-script.txt.gz")], Options()).analysis
    main = an.threads[3219]
    assert main.by_cause.get(THREAD_JOIN, 0) > 2_900_000_000, main.by_cause
    assert not any(c[0] == "lock" and ns > 1_000_000 for c, ns in main.by_cause.items())
    # the workers' own short lock waits (the GIL at their end) are no join: their wakers
    # (each other, the main thread) did not end right after; as the workers themselves end
    # right after them, they read as woken to exit (118 us), not as a lock
    from offconv.analysis.lifetimes import WOKEN_TO_EXIT
    w = an.threads[3229]
    assert THREAD_JOIN not in w.by_cause and ("lock", "futex") not in w.by_cause
    assert 0 < w.by_cause.get(WOKEN_TO_EXIT, 0) < 1_000_000, w.by_cause


def test_a_listener_in_accept_waits_for_work_not_for_the_network(reports):
    """The server's acceptor waited 3 s in accept() for its 4 clients: waiting for clients,
    as in epoll_wait, not a network wait; the clients' recv of the slow replies is. The
    verdict named the acceptor (p99 3.01 s); it names a client (slow_server_threads)."""
    from offconv.sched.causes import classify
    from offconv.model.records import KERNEL, Frame
    acc = tuple(Frame(n, "", KERNEL) for n in (
        "do_syscall_64", "__x64_sys_accept4", "__sys_accept4", "do_accept", "inet_accept",
        "inet_csk_accept", "schedule_timeout", "schedule"))
    assert classify(acc) == ("poll/idle", "accept")
    name = "slow_server_threads"
    d = reports.setdefault(name, _report(name))
    c = d["verdict"]["cause"]
    assert c["cause"] == "network" and c["p99_us"] < 1_500_000, c


def test_a_thread_the_workload_created_is_no_switch_partner(reports):
    """In a recording filtered to its target, a client thread that makes one slow request
    switches 4 times in 1.5 s: seen rarely, it was left out as a switch partner, though the
    workload created it during the window (sched_wakeup_new); 3 of 4 clients were
    (slow_server_one_request). The creators are kept for filtered recordings, and a thread
    the workload created is the workload."""
    name = "slow_server_one_request"
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    assert not any(x["comm"] == "python" for x in v["left_out"]), v["left_out"]
    (w,) = v["workload"]
    assert w["comm"] == "python" and len(w["tids"]) == 10, w
    assert v["answer"] == "waiting" and v["cause"]["cause"] == "network", v["reason"]


_FUTEX_WAIT = ("__schedule+0x628", "schedule+0x23", "futex_do_wait+0x46", "__futex_wait+0x8a",
               "futex_wait+0x9a", "do_futex+0xfd", "__x64_sys_futex+0x12d",
               "do_syscall_64+0x71", "entry_SYSCALL_64_after_hwframe+0x76")
_FUTEX_WAKE = ("try_to_wake_up+0x5e3", "wake_up_q+0x33", "futex_wake+0x199", "do_futex+0x183",
               "__x64_sys_futex+0x12d", "do_syscall_64+0x71", "entry_SYSCALL_64_after_hwframe+0x76")
_EXIT = ("__schedule+0x628", "do_task_dead+0x47", "do_exit+0x767")


def _handoff_trace(rounds: int, period_us: int = 2000) -> str:
    """perf script text of a main thread (tid 100) that creates a worker (101) and hands
    it ``rounds`` jobs, one at a time, each a futex wait the worker ends (the shape of
    /tmp/join18's handoff.py, 136k handoffs in 10 s, made small); then the worker ends
    and its last wake-up, right before its exit, is the main thread's join."""
    def ev(tid, t_us, what, stack):
        frames = "".join(f"\tffffffff81000000 {f} ([kernel.kallsyms])\n" for f in stack)
        return f"py {tid:5d} [000] {t_us // 1_000_000:5d}.{t_us % 1_000_000:06d}: {what}\n{frames}\n"

    def switch(t, prev, state, nxt, stack):
        return ev(prev, t, f"sched:sched_switch: prev_comm=py prev_pid={prev} prev_prio=120 "
                           f"prev_state={state} ==> next_comm=py next_pid={nxt} next_prio=120",
                  stack)

    def wake(t, waker, tid, new=False):
        kind = "sched_wakeup_new" if new else "sched_wakeup"
        return ev(waker, t, f"sched:{kind}: comm=py pid={tid} prio=120 target_cpu=000",
                  _FUTEX_WAKE)

    t = 1_000_000_000
    out = [wake(t, 100, 101, new=True)]
    for _ in range(rounds):
        out += [switch(t + 10, 100, "S", 101, _FUTEX_WAIT),  # the main thread waits...
                wake(t + 50, 101, 100),                        # ...the worker ends its wait
                switch(t + 60, 101, "S", 100, _FUTEX_WAIT),   # and waits for the next job
                wake(t + 100, 100, 101)]
        t += period_us
    out += [switch(t + 10, 100, "S", 101, _FUTEX_WAIT), wake(t + 50, 101, 100),
            switch(t + 80, 101, "X", 100, _EXIT)]             # the join: it ends 30 us later
    return "".join(out)


def test_join_candidates_are_not_held_to_the_end(tmp_path, monkeypatch):
    """A pool that wakes the thread that created it many times a second: each wake-up is
    a join candidate until its waker is seen running past JOIN_EXIT_NS after it, not
    until the end of the input (held there, 136k handoffs in 10 s kept every one, and
    their resolution removed each from a durations array: quadratic). The answer is the
    same: every handoff a lock wait, the last wait, ended as the worker ends, a join."""
    from offconv.analysis.lifetimes import JOIN_EXIT_NS, THREAD_JOIN
    from offconv.analysis.threads import Analysis
    path = tmp_path / "handoff.perf-script.txt"
    # handoffs further apart than JOIN_EXIT_NS: only the last wait can be the join
    path.write_text(_handoff_trace(3000, period_us=JOIN_EXIT_NS // 1000 + 1000))
    most = [0]
    real = Analysis.add_period

    def add_period(self, *a, **kw):
        most[0] = max(most[0], len(self.pending_child))
        return real(self, *a, **kw)

    monkeypatch.setattr(Analysis, "add_period", add_period)
    an = pipeline.load([str(path)], Options()).analysis
    main = an.threads[100]
    assert main.by_cause.get(THREAD_JOIN) == 40_000, main.by_cause  # switched out to woken
    assert main.by_cause.get(("lock", "futex")) == 3000 * 40_000, main.by_cause
    assert sorted(main.cause_durations) == ["child", "lock"], main.cause_durations
    assert most[0] <= 3, most[0]


def test_a_file_lock_or_semaphore_wait_is_a_lock_wait(reports):
    """flock(2), fcntl(F_SETLKW) and SysV semop(2) waiters wait for the lock's holder: 4
    processes taking turns on one flock, or on one semaphore, read "other blocked waits"
    (flock_turns, sem_turns, held out)."""
    from offconv.sched.causes import classify
    from offconv.model.records import KERNEL, Frame

    def stack(*names):  # root first, as the parser gives it
        return tuple(Frame(n, "", KERNEL) for n in reversed(names))
    flock = stack("__schedule", "schedule", "locks_lock_inode_wait", "__do_sys_flock",
                  "do_syscall_64", "entry_SYSCALL_64_after_hwframe")
    fcntl = stack("__schedule", "schedule", "locks_lock_inode_wait", "do_lock_file_wait",
                  "fcntl_setlk", "do_fcntl", "__x64_sys_fcntl", "do_syscall_64")
    assert classify(flock) == classify(fcntl) == ("lock", "file lock")
    sem = stack("__schedule", "schedule", "schedule_hrtimeout_range_clock", "do_semtimedop",
                "__do_semtimedop", "__semtimedop", "do_syscall_64")
    assert classify(sem) == ("lock", "semaphore")
    for name, label in (("flock_turns", "file lock"), ("sem_turns", "semaphore")):
        d = reports.setdefault(name, _report(name))
        v = d["verdict"]
        assert v["answer"] == "waiting" and v["cause"]["label"] == label, v["reason"]


def test_a_message_queue_reader_waits_for_work(reports):
    """A consumer blocked in msgrcv waits for its producer, as a pipe's reader does: the
    producer's paced sleep is the workload's wait. It read "other blocked waits" (100% of
    the consumer's wall time; msgq_paced, held out)."""
    from offconv.sched.causes import classify
    from offconv.model.records import KERNEL, Frame
    rcv = tuple(Frame(n, "", KERNEL) for n in reversed((
        "__schedule", "schedule", "do_msgrcv", "__x64_sys_msgrcv", "do_syscall_64")))
    assert classify(rcv) == ("poll/idle", "message queue")
    name = "msgq_paced"
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    assert v["answer"] == "waiting" and v["cause"]["cause"] == "sleep", v["reason"]
    an = pipeline.load([str(VERDICT / name / f"{name}.perf-script.txt.gz")], Options()).analysis
    consumer = an.threads[3983]   # (the producer, 3976, is the one named: its sleep)
    assert max(consumer.by_cause, key=consumer.by_cause.get) == ("poll/idle", "message queue")
    assert consumer.by_cause[("poll/idle", "message queue")] > 4_500_000_000, consumer.by_cause


def test_a_page_fault_waiting_for_the_mmap_lock_is_a_lock_wait(reports):
    """A page fault that waits for the process's mmap_lock (another thread's mprotect holds
    it) is a lock wait, not memory pressure: mm-toucher read "page-fault waits (memory
    pressure)", 37% of its wall time, and the advice was "relieve the memory pressure"
    (mmap_lock, held out). A fault that reads a file or swaps in stays disk or paging."""
    from offconv.sched.causes import classify
    from offconv.model.records import KERNEL, Frame

    def stack(*names):  # leaf first, as perf prints it; the parser gives root first
        return tuple(Frame(n, "", KERNEL) for n in reversed(names))
    sched = ("__schedule", "schedule")
    fault = stack(*sched, "schedule_preempt_disabled", "rwsem_down_read_slowpath",
                  "down_read_killable", "lock_mm_and_find_vma", "exc_page_fault",
                  "asm_exc_page_fault")
    # before lock_mm_and_find_vma (Linux 6.5) the fault took mmap_lock itself
    old_fault = stack(*sched, "rwsem_down_read_slowpath", "down_read", "do_user_addr_fault",
                      "exc_page_fault", "asm_exc_page_fault")
    mprotect = stack(*sched, "schedule_preempt_disabled", "rwsem_down_write_slowpath",
                     "down_write_killable", "do_mprotect_pkey", "__x64_sys_mprotect")
    vma = stack(*sched, "__vma_start_write", "__split_vma", "vma_modify", "mprotect_fixup",
                "do_mprotect_pkey", "__x64_sys_mprotect")
    for s in (fault, old_fault, mprotect, vma):
        assert classify(s) == ("lock", "mmap_lock"), s
    # another rwsem under a fault (a file's invalidate_lock, held by a truncate) is a lock,
    # not the mmap_lock; a rename's rwsem is no mm call's
    inval = stack(*sched, "rwsem_down_read_slowpath", "down_read",
                  "filemap_invalidate_lock_shared", "filemap_fault", "__do_fault",
                  "handle_mm_fault", "do_user_addr_fault", "exc_page_fault")
    assert classify(inval) == ("lock", "rwsem")
    rename = stack(*sched, "rwsem_down_write_slowpath", "down_write_nested", "lock_rename",
                   "do_renameat2", "__x64_sys_renameat2")
    assert classify(rename) == ("lock", "rwsem")
    read = stack(*sched, "io_schedule", "folio_wait_bit_common", "filemap_fault", "__do_fault",
                 "handle_mm_fault", "do_user_addr_fault", "exc_page_fault")
    assert classify(read) == ("disk", "page-fault read")
    swap = stack(*sched, "io_schedule", "folio_wait_bit_common", "do_swap_page",
                 "handle_mm_fault", "do_user_addr_fault", "exc_page_fault")
    assert classify(swap) == ("paging", "swap-in")

    name = "mmap_lock"
    d = reports.setdefault(name, _report(name))
    v = d["verdict"]
    assert v["answer"] == "waiting", v["reason"]
    assert (v["cause"]["comm"], v["cause"]["cause"], v["cause"]["label"]) == \
        ("mm-toucher", "lock", "mmap_lock"), v["reason"]
    assert "memory" not in v["reason"].split("more memory will not help")[0], v["reason"]
    an = pipeline.load([str(VERDICT / name / f"{name}.perf-script.txt.gz")], Options()).analysis
    toucher = next(t for t in an.threads.values() if t.comm == "mm-toucher")
    assert not [c for c in toucher.by_cause if c[0] == "paging"], toucher.by_cause
    assert toucher.by_cause[("lock", "mmap_lock")] > 0.9 * toucher.blocked_ns


def test_a_go_runtime_m_idle_in_the_scheduler_is_not_a_lock_wait(reports):
    """Go parks an idle M in a futex (runtime.stopm -> notesleep) and runs sysmon in a
    usleep loop: a pure-CPU Go program read "waiting, lock (futex) 100%: fix the lock" and a
    sleeping one named sysmon's usleep (go_spin, go_sleep, go_mutex, go_chan: held out). The
    goroutine the M last ran says why it idles: time.Sleep is a sleep, a sync.Mutex a lock,
    anything else (a channel, a WaitGroup) waiting for work; a runtime lock stays a lock."""
    from offconv.sched.causes import classify
    from offconv.model.records import KERNEL, USER, Frame

    futex = ("__schedule", "schedule", "futex_do_wait", "__futex_wait", "futex_wait",
             "do_futex", "__x64_sys_futex", "do_syscall_64", "entry_SYSCALL_64_after_hwframe")

    def stack(user, kernel=futex):  # both leaf first, as perf prints them
        return tuple([Frame(n, "", USER) for n in reversed(user)] +
                     [Frame(n, "", KERNEL) for n in reversed(kernel)])
    idle_m = ("runtime.futex.abi0", "runtime.notesleep", "runtime.stopm", "runtime.findRunnable",
              "runtime.schedule", "runtime.park_m", "runtime.mcall")
    assert classify(stack(idle_m + ("time.Sleep", "main.main.func1", "runtime.goexit.abi0"))) \
        == ("sleep", "Go time.Sleep")
    mutex = ("runtime.semacquire1", "sync.runtime_SemacquireMutex", "sync.(*Mutex).lockSlow",
             "sync.(*Mutex).Lock", "main.main.func1")
    assert classify(stack(idle_m + ("runtime.gopark", "runtime.goparkunlock") + mutex)) \
        == ("lock", "Go sync.Mutex")
    chan = ("runtime.gopark", "runtime.chanrecv", "runtime.chanrecv2", "main.main.func1")
    assert classify(stack(idle_m + chan)) == ("poll/idle", "Go scheduler idle")
    nanosleep = ("__schedule", "schedule", "do_nanosleep", "hrtimer_nanosleep",
                 "__x64_sys_nanosleep", "do_syscall_64")
    sysmon = ("runtime.usleep.abi0", "runtime.sysmon", "runtime.mstart1", "runtime.mstart0")
    assert classify(stack(sysmon, nanosleep)) == ("poll/idle", "Go scheduler idle")
    # the runtime's own lock (sched.lock) under findRunnable is a lock wait, as is a cgo or
    # C futex in a Go binary outside the scheduler's idle path
    runtime_lock = ("runtime.futex.abi0", "runtime.futexsleep", "runtime.lock2",
                    "runtime.lockWithRank", "runtime.lock", "runtime.findRunnable",
                    "runtime.schedule")
    assert classify(stack(runtime_lock)) == ("lock", "futex")
    assert classify(stack(("__lll_lock_wait", "pthread_mutex_lock", "worker"))) == ("lock", "futex")

    for name, thread_cause in (("go_spin", None), ("go_sleep", ("sleep", "Go time.Sleep")),
                               ("go_mutex", ("lock", "Go sync.Mutex")), ("go_chan", None)):
        d = reports.setdefault(name, _report(name))
        v = d["verdict"]
        if thread_cause is None:
            assert v["answer"] == "on-cpu", v["reason"]
            continue
        assert (v["cause"]["cause"], v["cause"]["label"]) == thread_cause, v["reason"]
        # the thread named is an M that ran goroutines, not sysmon (never on CPU for long)
        an = pipeline.load([str(VERDICT / name / f"{name}.perf-script.txt.gz")], Options()).analysis
        named = an.threads[v["cause"]["tid"]]
        assert named.oncpu_ns > 100_000_000, (named.tid, named.oncpu_ns)


def test_a_jvm_service_thread_idles_and_a_jvm_join_is_a_join(reports):
    """The JVM's GC, JIT and VM threads wait for work in futexes whose call chains end in
    glibc: a CPU-bound Java program read "GC Thread#0 spends 100% of its wall time in lock
    waits (futex): fix the lock", and a monitor's contention named the same idle GC thread
    (jvm_spin, jvm_lock, held out). A Java thread ends 2.1 ms after it wakes its joiner."""
    from offconv.analysis.lifetimes import JOIN_EXIT_NS, THREAD_JOIN
    from offconv.sched.causes import RUNTIME_COMM, RUNTIME_IDLE
    for comm in ("GC Thread#0", "G1 Conc#0", "G1 Main Marker", "C2 CompilerThre",
                 "VM Thread", "VM Periodic Tas", "Reference Handl", "Common-Cleaner"):
        assert RUNTIME_COMM.match(comm), comm
    for comm in ("java", "spinner-0", "GC Thread", "Thread-0", "main"):
        assert not RUNTIME_COMM.match(comm), comm
    assert 2_100_000 < JOIN_EXIT_NS < 9_000_000   # and a lock released 9 ms before is none
    spin = reports.setdefault("jvm_spin", _report("jvm_spin"))["verdict"]
    assert spin["answer"] == "on-cpu", spin["reason"]
    an = pipeline.load([str(VERDICT / "jvm_spin" / "jvm_spin.perf-script.txt.gz")], Options()).analysis
    gc = next(t for t in an.threads.values() if t.comm == "GC Thread#0")
    # (all but what it waited for before HotSpot named it: 13 us, as "java")
    assert gc.by_cause[RUNTIME_IDLE] > 0.999 * gc.blocked_ns, gc.by_cause
    main = an.threads[25010]   # the Java main thread in Thread.join
    assert main.by_cause.get(THREAD_JOIN, 0) > 2_900_000_000, main.by_cause
    lock = reports.setdefault("jvm_lock", _report("jvm_lock"))["verdict"]
    assert lock["answer"] == "waiting" and lock["cause"]["comm"].startswith("locker-"), lock["reason"]


@pytest.mark.parametrize("name", ["jvm_lock", "mmap_lock", "go_sleep", "victim_before"])
def test_a_kernel_thread_in_a_filtered_recording_is_a_switch_partner(name, reports):
    """A recording filtered to a command (record.sh -- CMD, perf record -p) sees kernel
    threads only where they switch with the workload's: DAMON's kdamond.0, busy 1 s beside
    a Java lock's threads, was listed as the workload with them (jvm_lock, held out), as
    were kworker, kcompactd and khugepaged threads in ten other recordings."""
    from offconv.sched.causes import KTHREAD_COMM
    v = reports.setdefault(name, _report(name))["verdict"]
    comms = [w["comm"] for w in v["workload"]]
    assert comms and not [c for c in comms if KTHREAD_COMM.match(c)], comms
    assert any(x["reason"].startswith("a kernel thread in a filtered recording")
               for x in v["left_out"]), v["left_out"]


def test_a_lock_wait_ended_right_after_its_wakers_sleep_names_that_sleep(reports):
    """A consumer waiting on a condition variable fed by a usleep-paced producer read "fix
    the lock", 95% of its wall time (cv_paced, held out): the events cannot tell it from a
    lock held across a sleep, so the advice names the waker's sleep, right in both cases.
    A lock whose waiters wake each other (lock_sleep) keeps "fix the lock"; processes that
    take turns on a semaphore, each holding it across a usleep (sem_turns), name the sleep."""
    v = reports.setdefault("cv_paced", _report("cv_paced"))["verdict"]
    assert v["cause"]["comm"] == "cv-consumer" and v["cause"]["woken_by"] == "cv-producer"
    assert v["cause"]["next_step"].startswith("shorten or remove its waker's sleep (cv-producer "), \
        v["cause"]
    assert "shorten or remove its waker's sleep" in v["reason"]
    v = reports.setdefault("lock_sleep", _report("lock_sleep"))["verdict"]
    assert v["cause"]["next_step"].startswith("fix the lock"), v["cause"]
    v = reports.setdefault("sem_turns", _report("sem_turns"))["verdict"]
    assert v["cause"]["next_step"].startswith("shorten or remove its waker's sleep"), v["cause"]


def test_a_futex_wait_its_thread_ends_right_after_is_no_lock(reports):
    """node's idle V8 and libuv threads wait in futexes until the process shuts down and
    wakes them to exit: "node spends 100% of its wall time in lock waits (futex), p99 3 s"
    beside a busy main thread (node_spin, held out). A futex wait ended within
    JOIN_EXIT_NS before its thread ends is waiting for work. lock_spin's main thread, whose
    2 s join was woken from another CPU (a queued wake-up: no waker named), read the same;
    it is a join now: the thread it created ended as the wake-up came (_child_ended)."""
    from offconv.analysis.lifetimes import THREAD_JOIN, WOKEN_TO_EXIT
    v = reports.setdefault("node_spin", _report("node_spin"))["verdict"]
    assert v["answer"] == "on-cpu", v["reason"]
    an = pipeline.load([str(VERDICT / "node_spin" / "node_spin.perf-script.txt.gz")], Options()).analysis
    idle = [t for t in an.threads.values() if t.comm == "node" and t.oncpu_ns < 50_000_000]
    assert len(idle) >= 5
    for t in idle:   # (one waits in epoll_wait: idle already)
        assert sum(ns for c, ns in t.by_cause.items() if c[0] == "poll/idle") > 0.9 * t.blocked_ns
    assert sum(t.by_cause.get(WOKEN_TO_EXIT, 0) > 2_900_000_000 for t in idle) >= 4
    an = pipeline.load([str(VERDICT / "lock_spin" / "lock_spin.perf-script.txt.gz")], Options()).analysis
    main = an.threads[16598]
    assert main.by_cause.get(THREAD_JOIN, 0) > 1_900_000_000, main.by_cause
    workers = [t for t in an.threads.values() if t.comm == "lock-spin" and t.tid != 16598]
    assert all(t.by_cause.get(("lock", "futex"), 0) > 0.5 * t.blocked_ns for t in workers)


def test_a_join_woken_from_an_idle_cpu_is_a_join_not_a_lock():
    """pthread_join and Python's join are woken as the joined thread ends; from an idle
    CPU the wake-up is queued (the trace names no waker: causes.queued_wakeup), and a
    Python program's main thread joining four GIL-bound threads read "waiting: lock
    (futex) 97%, p99 3.9 s: fix the lock" (held out, 2026-12-05). A thread it created
    ending within JOIN_EXIT_NS of the wake-up makes the wait a join, whichever of the two
    the trace gives first; one ending 20 ms later leaves it a lock wait."""
    from offconv.analysis.lifetimes import THREAD_JOIN
    from offconv.analysis.threads import Analysis
    from offconv.model.records import Frame, Period, Task
    lock = _k("futex_wait", "schedule")
    queued = _k("sched_ttwu_pending", "__flush_smp_call_function_queue")
    idle = Task("swapper/1", 0, 0)
    key = (Frame("x"),)

    def run(exit_first: bool, gap_ns: int):
        an = Analysis()
        an.live_parents = {2: 1}
        main = Task("main", 1, 1)
        wait = Period(main, "S", 0, 2_000_000_000, 2_000_010_000, lock, idle, waker_stack=queued,
                      woke_ns=2_000_000_000)
        if exit_first:
            an.exited(2, at=2_000_000_000 + gap_ns)
            an.add_period(wait, key, "p")
        else:
            an.add_period(wait, key, "p")
            an.exited(2, at=2_000_000_000 + gap_ns)
        return an.threads[1].by_cause

    for exit_first in (True, False):
        assert run(exit_first, 60_000) == {THREAD_JOIN: 2_000_000_000}, exit_first
        assert run(exit_first, -60_000) == {THREAD_JOIN: 2_000_000_000}, exit_first
        assert run(exit_first, 20_000_000) == {("lock", "futex"): 2_000_000_000}, exit_first


def test_busy_threads_pinned_beside_an_idle_cpu_are_told_the_affinity(reports):
    """hogs_pinned: four hogs on CPU 0 (taskset -c 0), CPU 1 idle: the run-queue time is the
    affinity's, not a lack of cores (issue 40); six unpinned hogs (oversub) keep "add cores"."""
    v = reports.setdefault("hogs_pinned", _report("hogs_pinned"))["verdict"]
    assert v["answer"] == "capacity"
    assert "fix the affinity" in v["reason"] and "add cores" not in v["reason"], v["reason"]
    assert "only on CPU 0 while CPU 1 sat idle" in v["reason"], v["reason"]
    v = reports.setdefault("oversub", _report("oversub"))["verdict"]
    assert "add cores" in v["reason"] and "affinity" not in v["reason"], v["reason"]


def test_a_tiny_thread_on_cpu_all_its_life_is_not_said_beside_a_wait():
    """A 184 µs shell thread of the recorder's start, on CPU all of it, was said "on CPU 100%
    of its wall time: profile it on-CPU" beside a waiting workload (issue 40): a share of a
    tiny lifetime is no finding. The same thread living 400 ms is."""
    from offconv.model.options import ReportOptions
    from offconv.analysis.rules import decide
    disk = _k("folio_wait_bit", "io_schedule", "schedule")
    tar = ("tar", 20, [(3000, "D", 1000, disk)] * 100)       # 400 ms, disk 25%
    for on_us, said in ((184, False), (400_000, True)):
        sh = ("sh", 22, [(on_us, "R", 1, ())])
        d = decide(_workload([tar, sh]), ReportOptions())
        assert d.answer == "waiting"
        assert (d.busy_thread is not None and d.busy_thread.comm == "sh") == said, on_us


def test_an_on_cpu_answer_names_whose_cpu_time_it_is(reports):
    """"The time is spent on CPU" said whose (issue 40): the workload's threads with the most
    time on CPU (a tenth of the first's or more), each with its share of its wall time."""
    v = reports.setdefault("pure_oncpu", _report("pure_oncpu"))["verdict"]
    assert v["answer"] == "on-cpu"
    assert "most of it: oncpu-loop (tid " in v["reason"] and "(100% of its wall time)" in v["reason"], v["reason"]
    v = reports.setdefault("go_spin", _report("go_spin"))["verdict"]
    named = v["reason"].partition("most of it: ")[2]
    # the two spinning threads of one name as one (the idle ones beside them left out)
    assert "gospin (2 tasks)" in named and "(99% of their wall time)" in named, v["reason"]
    assert "(0% of" not in named, v["reason"]
