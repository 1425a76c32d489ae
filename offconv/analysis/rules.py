"""The decision of the verdict (the matrix of DESIGN.md: capacity / waiting / both /
on-cpu), apart from its wording (offconv.analysis.verdict).


Scope (``scope``): the verdict is about a workload. With a thread selection (``-p``,
``--filter-tid``, ``--comm``, ``--state``) it is the selected threads. A recording of
``perf record -- CMD`` shows the command (perf's ``perf-exec`` child) and the tasks it
created (``sched_wakeup_new``): when that tree holds a material share of the busy time it is
the workload, and everything else is left out as not part of the command. Otherwise threads
are grouped by comm, and the workload is the groups whose *busy* time -- on-CPU time plus
latency-relevant waits (blocked in a latency cause, run-queue time behind another task)
-- is at least ``workload_share`` of all busy time. Every thread left out is listed with
why: the idle task, the recorder itself, only idle waits (poll/epoll, timed waits,
waiting for work, waits for children), or a small share. Nothing is dropped silently.

Decision on the pooled time of the workload's core (the comm groups, largest first, that
hold ``core_share`` of its latency-relevant time, so a background group that happens to
be busy does not decide): a tail is **long** when its share of the
workload's wall time, or of one core group's wall time (``*_share_long`` is a share of a
thread's wall time: a group's is not diluted by the others'), reaches ``*_share_long``, or
when its p99 reaches ``*_p99_long_us`` and its share is a material part
(``material_share``) of that. The run-queue signal is
the time behind another runnable task; the wake-up latency of an idle CPU is reported
apart (adding cores does not shorten it). A thread whose switch-ins were not recorded
(switch-in from an idle CPU inferred) has time that was blocked or running in an unknown
split: when counting it as blocked would make the blocked tail long, the answer says so
and is marked uncertain. A ``perf record -p`` recording cannot measure run-queue time:
capacity is undecided and the reason says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

from offconv.sched.causes import IDLE_CAUSES, KTHREAD_COMM, UNREAD, UNREAD_ANY, UNRESOLVED_ANY
from offconv.analysis.lifetimes import MAX_GENERATIONS
from offconv.sched.latency import Runs, percentile
from offconv.model.options import ReportOptions
from offconv.model.units import human_us, ns_to_us, plural

TRACER = re.compile(r"^(perf|perf-exec|bpftrace|offconv)$")
# kernel threads bound to one CPU (the number is the CPU; `kworker/u8:2` is unbound): a
# run-queue wait of theirs says that CPU was busy -- a recorder compiling its program on
# CPU 0 of an idle machine held kworker/0:1 and migration/0 for 55 ms -- not that the
# machine lacks cores, and their work is the kernel's, not a workload's
PERCPU_KTHREAD = re.compile(r"^(kworker/\d+:\d+H?|migration/\d+|ksoftirqd/\d+|cpuhp/\d+|"
                            r"idle_inject/\d+|watchdog/\d+|rcuc/\d+|irq_work/\d+|"
                            r"posixcputmr/\d+)(-.*)?$")


@dataclass
class Scope:
    threads: list                          # ThreadTotals of the workload
    groups: list                           # (comm, [ThreadTotals], busy_ns), largest first
    left_out: list = field(default_factory=list)   # (comm, tid, reason)
    selected: bool = False                 # the user selected the threads
    core: list = field(default_factory=list)       # the threads the decision weighs


@dataclass(frozen=True)
class Decision:
    answer: str
    runq_long: Optional[bool]              # None: not measurable (perf record -p)
    blocked_long: bool
    uncertain: bool
    runq_share: Optional[float]
    blocked_share: float
    runq_p99_us: Optional[int]
    blocked_p99_us: Optional[int]          # None: the waits were summed (no durations)
    idle_wakeup_us: int
    cause: Optional[tuple]                 # (cause, label) with the most latency time
    cause_thread: Optional[object]         # the workload thread with most of that cause
    cause_share: float                     # that cause's share of that thread's wall time
    cause_p99_us: Optional[int]            # None: the waits were summed (no durations)
    waker: Optional[str]                   # who ended most of those waits
    runq_thread: Optional[object]
    scope: Scope
    idle_counted: bool
    runq_throttled_share: float = 0.0      # of the run-queue time behind others: throttled
    unresolved_share: float = 0.0          # of the recording's blocked time: kernel frames unresolved
    busy_thread: Optional[object] = None   # "waiting": a workload thread outside the core on CPU
    # "capacity": the core ran on some CPUs while the others sat idle (affinity):
    # (CPUs it ran on, the idle CPUs, their idle share of the trace)
    pinned: Optional[tuple] = None
    # "capacity" in a recording filtered in the kernel (record.sh -p/--comm/-- CMD): the
    # CPUs the core ran on -- whether the others sat idle is not in the trace
    filtered_cpus: Optional[tuple] = None


def _latency(cause: tuple, idle_counted: bool) -> bool:
    return idle_counted or cause[0] not in IDLE_CAUSES


def _blocked_latency(t, idle_counted: bool) -> int:
    """A thread's blocked time in latency causes."""
    return sum(ns for c, ns in t.by_cause.items() if _latency(c, idle_counted))


def busy_ns(t, idle_counted: bool) -> int:
    lat = _blocked_latency(t, idle_counted)
    unknown = sum(ns for c, ns in t.unknown_by_cause.items() if _latency(c, idle_counted))
    return t.oncpu_ns - t.unknown_ns + lat + t.runq_contention_ns + unknown


def _single_sleep(t) -> bool:
    """A process that only sleeps, once: a pause or the recording window, not a workload
    (a workload that runs sleeps again and again has more than two of them)."""
    sleep = sum(ns for c, ns in t.by_cause.items() if c[0] == "sleep")
    # (no durations at all: the waits were summed in the kernel, their number is unknown)
    if 0 < len(t.cause_durations.get("sleep", ())) <= 2 and sleep >= 0.5 * t.wall_ns:
        return True
    # without call chains a sleep cannot be told from another wait: a process named
    # `sleep` whose waits have no call chain and whose longest wait is most of its life
    # (``perf sched record -- sleep 10``: perf-exec's waits for perf come first), or that
    # waits once or twice (a lost switch-in can make it look running the rest)
    if t.comm != "sleep" or not t.by_cause or not all(c in UNREAD_ANY for c in t.by_cause):
        return False
    waits = [d for k in ("other", "poll/idle") for d in t.cause_durations.get(k, ())]
    return len(waits) <= 2 or max(waits) >= 0.5 * t.wall_ns


def command_tree(an) -> set:
    """The tids of the command ``perf record -- CMD`` ran (its perf-exec task) and of every
    task they created, transitively (empty when the trace does not show it)."""
    if not an.command:
        return set()
    children: dict = {}
    for child, parent in an.parents.items():
        children.setdefault(parent, []).append(child)
    tree, todo = set(), list(an.command)
    while todo:
        tid = todo.pop()
        if tid in tree:
            continue
        tree.add(tid)
        todo.extend(children.get(tid, ()))
    return tree


def scope(an, ropts: ReportOptions) -> Scope:
    idle_counted = an.threads_filtered
    left, kept = [], []
    # the idle task is never a workload; the others by tid as text (each its own tid: a
    # thread's name never decides, and 100k (text, name) pairs to sort by took 11 MB)
    for t in sorted((t for t in an.threads.values() if not (t.tid == 0 or isinstance(t.tid, tuple))),
                    key=lambda x: str(x.tid)):
        if not an.threads_filtered and TRACER.match(t.comm):
            left.append((t.comm, t.tid, "the recorder itself"))
        elif not an.threads_filtered and PERCPU_KTHREAD.match(t.comm):
            left.append((t.comm, t.tid, "a per-CPU kernel thread: bound to its CPU, its waits "
                                        "say that CPU was busy, not that cores are missing"))
        elif t.wall_ns == 0:
            left.append((t.comm, t.tid, "no time observed (too few events)"))
        elif (an.sched_wakeup_events and not an.per_process and t.woken == 0
              and t.no_wakeup >= 2):
            # (a trace of sched_waking alone -- perf sched record -- misses some wake-ups
            # that sched_wakeup shows: there, a thread never seen woken is no filter's sign)
            left.append((t.comm, t.tid, "never seen woken (outside the recording's filter?): "
                                        f"{_seen(t)}"))
        elif not an.threads_filtered and busy_ns(t, False) == 0:
            left.append((t.comm, t.tid, "idle waits only (poll/epoll, timed waits, waiting "
                                        "for work, child processes)"))
        else:
            kept.append(t)
    if an.recorder_filtered or any(r.startswith("never seen woken") and not KTHREAD_COMM.match(c)
                                   for c, _, r in left):
        # (a kernel thread can be woken unseen -- ksoftirqd raised from an interrupt -- in an
        # unfiltered recording too: only a user thread shows a filter)
        # the recording was filtered in the kernel: threads seen only in passing are the
        # workload's switch partners, not the workload -- but for those a workload thread
        # created during the window (sched_wakeup_new): a client thread making one slow
        # request switches 4 times in 1.5 s, and is the workload (held out)
        kept_ids = {t.tid for t in kept}

        def created(t) -> bool:
            tid = t.tid
            for _ in range(MAX_GENERATIONS):
                tid = an.parents.get(tid)
                if tid is None:
                    return False
                if tid in kept_ids:
                    return True
            return False
        rare = [t for t in kept if t.switches <= 8 and t.wall_ns >= 500_000_000
                and not created(t)]
        for t in rare:
            left.append((t.comm, t.tid, "rarely seen in a filtered recording: a switch partner "
                                        f"({plural(t.switches, 'switch', 'switches')})"))
        # the workload's wake-ups are kept by the filter; a partner's are not (it is seen
        # woken only where a workload thread happened to do it): a thread most of whose
        # waits end with no wake-up seen is a partner, its "blocked" time the gaps between
        # its sightings (held out: `record -p` of a CPU hog said `both`, blaming a daemon's
        # futex waits seen only when it took the hog's CPU)
        unseen = [t for t in kept if t not in rare and t.no_wakeup >= 2 and t.no_wakeup > t.woken
                  and not created(t)]
        for t in unseen:
            left.append((t.comm, t.tid, "a switch partner in a filtered recording (most of its "
                                        "waits end with no wake-up seen): "
                                        f"{t.no_wakeup} of {t.no_wakeup + t.woken} waits, {_seen(t)}"))
        kept = [t for t in kept if t not in rare and t not in unseen]
        # a kernel thread is no user command's, but for a recording of kernel threads only
        # (DAMON's kdamond.0, busy 1 s beside a Java lock's four threads, was named with
        # them: 9 switches, one wait without a wake-up; held out, jvm_lock)
        kthreads = [t for t in kept if KTHREAD_COMM.match(t.comm)]
        if len(kthreads) < len(kept):
            for t in kthreads:
                left.append((t.comm, t.tid, "a kernel thread in a filtered recording: a "
                                            "switch partner"))
            kept = [t for t in kept if not KTHREAD_COMM.match(t.comm)]
    if not an.threads_filtered:
        tree = command_tree(an)
        busy_all = sum(busy_ns(t, False) for t in kept)
        in_tree = [t for t in kept if t.tid in tree and not _single_sleep(t)]
        if in_tree and sum(busy_ns(t, False) for t in in_tree) >= ropts.workload_share * busy_all:
            left.extend((t.comm, t.tid, "not part of the recorded command (the process "
                                        "tree of perf record's command is the workload)")
                        for t in kept if t.tid not in tree)
            kept = [t for t in kept if t.tid in tree]
    groups: dict = {}
    for t in kept:
        groups.setdefault(t.comm, []).append(t)
    if not an.threads_filtered:
        for comm in list(groups):
            ts = groups[comm]
            if len(ts) <= 2 and all(_single_sleep(t) for t in ts):
                del groups[comm]
                left.extend((t.comm, t.tid, "a sleep command (one sleep, e.g. the recording "
                                            "window's `sleep N`)") for t in ts)
        kept = [t for ts in groups.values() for t in ts]
    if an.threads_filtered:
        rows = sorted(((c, ts, sum(busy_ns(t, idle_counted) for t in ts)) for c, ts in groups.items()),
                      key=lambda g: (-g[2], g[0]))
        return Scope(kept, rows, left, selected=True)
    rows = sorted(((c, ts, sum(_claim_ns(t) for t in ts)) for c, ts in groups.items()),
                  key=lambda g: (-g[2], g[0]))
    work, small = material_groups(rows, ropts.workload_share)
    for _, ts, share in small:
        left.extend((t.comm, t.tid, f"small: {share:.1%} of the busy time") for t in ts)
    return Scope([t for _, ts, _ in work for t in ts], work, left)


def _seen(t) -> str:
    """How much of a thread the trace shows: its switches and its time in the trace."""
    return f"{plural(t.switches, 'switch', 'switches')} in {human_us(ns_to_us(t.wall_ns))}"


def _claim_ns(t) -> int:
    """What puts a thread in the workload when nothing else says (a system-wide recording
    of `sleep N`): its busy time, but for waits whose cause could not be read (no call
    chain). Without a stack a background thread's timed or idle wait (a daemon's periodic
    50 ms futex timeout, woken from whatever task the timer interrupted) cannot be told from
    latency; the threads that used the CPUs, or waited for them, are the workload. Once in
    it, a thread's unread waits count as latency (they may be)."""
    return busy_ns(t, False) - sum(t.by_cause.get(c, 0) + t.unknown_by_cause.get(c, 0)
                                   for c in UNREAD)


def material_groups(rows: list, share: float) -> tuple[list, list]:
    """(comm, threads, weight) rows -> (the rows holding at least ``share`` of the total
    weight, the others as (comm, threads, their share))."""
    total = sum(r[2] for r in rows)
    work, small = [], []
    for comm, ts, w in rows:
        if total and w >= share * total:
            work.append((comm, ts, w))
        else:
            small.append((comm, ts, w / total if total else 0.0))
    return work, small


def latency_ns(t, idle_counted: bool) -> int:
    """Latency-relevant time: waits in latency causes and run-queue time behind others."""
    return busy_ns(t, idle_counted) - t.oncpu_ns


def core(sc: Scope, idle_counted: bool, share: float) -> list:
    """The workload's core: the comm groups, largest latency-relevant time first, that
    together hold ``share`` of it (all groups when none has any)."""
    rows = sorted(((sum(latency_ns(t, idle_counted) for t in ts), comm, ts)
                   for comm, ts, _ in sc.groups), key=lambda r: (-r[0], r[1]))
    total = sum(r[0] for r in rows)
    if not total:
        return sc.threads
    out, acc = [], 0
    for lat, _, ts in rows:
        if acc >= share * total:
            break
        out.extend(ts)
        acc += lat
    return out


def decide(an, ropts: ReportOptions) -> Decision:
    an.finish()
    idle_counted = an.threads_filtered
    sc = scope(an, ropts)
    ts = core(sc, idle_counted, ropts.core_share)
    sc.core = ts
    wall = sum(t.wall_ns for t in ts)
    by_cause: dict = {}
    unknown: dict = {}
    for t in ts:
        for c, ns in t.by_cause.items():
            if _latency(c, idle_counted):
                by_cause[c] = by_cause.get(c, 0) + ns
        for c, ns in t.unknown_by_cause.items():
            if _latency(c, idle_counted):
                unknown[c] = unknown.get(c, 0) + ns
    blocked_ns = sum(by_cause.values())
    blocked_share = blocked_ns / wall if wall else 0.0
    blocked = Runs(arr for t in ts for c, arr in t.cause_durations.items()
                   if idle_counted or c not in IDLE_CAUSES)
    blocked_p99 = ns_to_us(percentile(blocked, 99) or 0)
    m = ropts.material_share
    groups: dict = {}
    for t in ts:
        groups.setdefault(t.comm, []).append(t)
    blocked_long = (blocked_share >= ropts.blocked_share_long
                    or _group_share(groups, lambda t: _blocked_latency(t, idle_counted))
                    >= ropts.blocked_share_long
                    or (blocked_p99 >= ropts.blocked_p99_long_us
                        and blocked_share >= ropts.blocked_share_long * m))
    uncertain = False
    if not blocked_long and wall and (blocked_ns + sum(unknown.values())) / wall \
            >= ropts.blocked_share_long:
        blocked_long = uncertain = True
    idle_wakeup = sum(t.runq_idle_ns for t in ts)
    throttled = 0.0
    if an.per_process:
        runq_long = runq_share = runq_p99 = None
        runq_thread = None
    else:
        cont = sum(t.runq_contention_ns for t in ts)
        throttled = sum(t.runq_throttled_ns for t in ts) / cont if cont else 0.0
        runq_share = cont / wall if wall else 0.0
        runq_p99 = ns_to_us(percentile(Runs(t.runq_cont for t in ts), 99) or 0)
        runq_long = (runq_share >= ropts.runq_share_long
                     or _group_share(groups, lambda t: t.runq_contention_ns)
                     >= ropts.runq_share_long
                     or (runq_p99 >= ropts.runq_p99_long_us
                         and runq_share >= ropts.runq_share_long * m))
        runq_thread = max(ts, key=lambda t: (t.runq_contention_ns, -t.tid), default=None)
    weights = {c: by_cause.get(c, 0) + (unknown.get(c, 0) if uncertain else 0)
               for c in set(by_cause) | set(unknown)}
    cause = max(sorted(weights), key=lambda c: weights[c]) if weights and max(weights.values()) else None
    cause_thread, cause_share, cause_p99, waker = None, 0.0, 0, None
    if cause is not None:
        cause_thread = max(ts, key=lambda t: (_of(t, cause, uncertain), -t.tid))
        cause_share, cause_p99, waker = _cause_of(cause_thread, cause, uncertain)
    if runq_long is None:
        answer = "waiting" if blocked_long else "on-cpu"
    else:
        answer = {(True, True): "both", (False, True): "waiting", (True, False): "capacity",
                  (False, False): "on-cpu"}[(runq_long, blocked_long)]
    return Decision(answer, runq_long, blocked_long, uncertain, runq_share, blocked_share,
                    runq_p99, blocked_p99, ns_to_us(idle_wakeup), cause, cause_thread,
                    cause_share, cause_p99, waker, runq_thread, sc, idle_counted, throttled,
                    unresolved_share(an), _busy_beside(sc, ts) if answer == "waiting" else None,
                    pinned := _pinned(an, ts) if answer in ("capacity", "both") else None,
                    tuple(sorted(cpus_used(an, ts))) if (answer == "capacity" and pinned is None
                                                         and an.recorder_filtered) else None)


def _of(t, cause: tuple, uncertain: bool) -> int:
    return t.by_cause.get(cause, 0) + (t.unknown_by_cause.get(cause, 0) if uncertain else 0)


def _cause_of(t, cause: tuple, uncertain: bool) -> tuple:
    """A thread's (share of its wall time, p99 µs, its most frequent waker) for a cause."""
    share = _of(t, cause, uncertain) / t.wall_ns if t.wall_ns else 0.0
    p99 = ns_to_us(percentile(Runs((t.cause_durations.get(cause[0], ()),)), 99) or 0)
    wk = {w: ns for (c, w), ns in t.wakers.items() if c == cause}
    return share, p99, (max(sorted(wk), key=lambda w: wk[w]) if wk else None)


def anchored(d: Decision, t) -> Decision:
    """The decision told about thread ``t`` instead of its cause's thread: ``t``'s own top
    latency cause, with its share, p99 and waker (the answer and the numbers of the
    workload stay). The critical path moves a verdict about a thread others wait on to the
    thread at the head of that chain (offconv.analysis.critical_path)."""
    causes = {c: _of(t, c, d.uncertain) for c in set(t.by_cause) | set(t.unknown_by_cause)
              if _latency(c, d.idle_counted)}
    if not causes or not max(causes.values()):
        return d
    cause = max(sorted(causes), key=lambda c: causes[c])
    share, p99, waker = _cause_of(t, cause, d.uncertain)
    return replace(d, cause=cause, cause_thread=t, cause_share=share, cause_p99_us=p99,
                   waker=waker, busy_thread=None)


# the core's on-CPU time on a subset of the CPUs, this share of it or more, while every other
# CPU seen was idle this share of the trace or more: an affinity (taskset, cpuset,
# sched_setaffinity) holds the work on those CPUs, and more cores would change nothing
# (four hogs pinned to CPU 0 beside an idle CPU 1 read "add cores"; fixture hogs_pinned)
PINNED_ONCPU = 0.98
PINNED_IDLE = 0.5


def cpus_used(an, ts) -> list:
    """The CPUs that hold PINNED_ONCPU of the threads' time on CPU, most first."""
    on: dict = {}
    for t in ts:
        for cpu, ns in an.thread_cpu.get(t.tid, {}).items():
            on[cpu] = on.get(cpu, 0) + ns
    total = sum(on.values())
    used, acc = [], 0
    for cpu, ns in sorted(on.items(), key=lambda kv: (-kv[1], kv[0])):
        if acc >= total * PINNED_ONCPU:
            break
        used.append(cpu)
        acc += ns
    return used


def _pinned(an, ts) -> Optional[tuple]:
    span = (an.last_ns - an.first_ns) if an.first_ns is not None and an.last_ns is not None else 0
    cpus = set(an.cpu_busy)
    if not span or len(cpus) < 2:
        return None
    used = cpus_used(an, ts)
    if not used:
        return None
    idle = sorted(cpus - set(used))
    if not idle:
        return None
    idle_share = 1 - sum(an.cpu_busy[c] for c in idle) / (span * len(idle))
    if idle_share < PINNED_IDLE:
        return None
    return tuple(sorted(used)), tuple(idle), idle_share


# A "waiting" answer is about the threads whose waits are latency (the core); another
# thread of the workload on CPU for this share of its wall time or more bounds the work as
# much (a pipeline's CPU-bound stage: held out, `tar c /usr/share | gzip -1` from a cold
# page cache read "tar waits on disk 25%: fix the I/O path" while gzip ran 78% of the time
# and waited 21% for tar's data: the I/O fix saves at most that 21%, gzip's CPU the rest)
BUSY_SHARE = 0.7
# a share of a tiny lifetime is no finding: a 184 us shell thread of the recorder's own
# start read "on CPU 100% of its wall time: profile it on-CPU" (issue 40)
BUSY_MIN_NS = 10_000_000
BUSY_MIN_LIFE = 0.05


def _busy_beside(sc: Scope, core_threads: list):
    """The workload thread outside the core with the largest on-CPU share of its wall
    time, if that is BUSY_SHARE or more and its time on CPU is material (BUSY_MIN_NS, and a
    lifetime of BUSY_MIN_LIFE of the longest core thread's); else None."""
    core_tids = {t.tid for t in core_threads}
    life = max((t.wall_ns for t in core_threads), default=0) * BUSY_MIN_LIFE
    busy = [t for t in sc.threads if t.tid not in core_tids and t.wall_ns
            and t.oncpu_ns >= BUSY_SHARE * t.wall_ns and t.oncpu_ns >= BUSY_MIN_NS
            and t.wall_ns >= life]
    return max(busy, key=lambda t: (t.oncpu_ns / t.wall_ns, -t.tid), default=None)


def _group_share(groups: dict, part) -> float:
    """The largest share of a comm group's wall time that ``part`` (of a thread) takes: a
    program of the workload that waits that long is a finding, however much the other
    programs' wall time would dilute it in the pooled share (four CPU-bound processes
    beside a `dd oflag=dsync` loop: dd blocked 37% of its time, 7% of the pool's)."""
    best = 0.0
    for g in groups.values():
        wall = sum(t.wall_ns for t in g)
        if wall:
            best = max(best, sum(part(t) for t in g) / wall)
    return best


def unresolved_share(an) -> float:
    """The share of the recording's blocked time whose kernel frames are all unresolved."""
    blocked = sum(t.blocked_ns for t in an.threads.values())
    unresolved = sum(ns for t in an.threads.values() for c, ns in t.by_cause.items()
                     if c in UNRESOLVED_ANY)
    return unresolved / blocked if blocked else 0.0


# -- wording ------------------------------------------------------------------------------

