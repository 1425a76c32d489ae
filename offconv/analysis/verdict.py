"""The verdict's wording: the sentence, its reason and its advice (``verdict``,
``explain``), for the decision of offconv.analysis.rules (``decide``).
"""
from __future__ import annotations

from typing import Optional

from offconv.analysis.rules import Decision, decide
from offconv.model.options import ReportOptions
from offconv.model.units import human_us, ns_to_us, plural
from offconv.sched.causes import INTERRUPT_WAKER_NAME, NO_CHAIN, QUEUED_WAKER, TIMER_WAKER_NAME, UNRESOLVED

FIX = {"lock": "fix the lock (shorten what the holder does while holding it)",
       "disk": "fix the I/O path (fewer or smaller syncs, async I/O, a faster device)",
       "network": "fix the network path or the slow dependency behind it",
       "local-socket": "look at the process at the socket's other end (it answers slowly)",
       "sleep": "remove or shorten the sleep", "paging": "relieve the memory pressure",
       "poll/idle": "find what it waits for", "child": "look at the child processes",
       "peer-cpu": "profile the thread it waits for on CPU",
       "other": "read the blocked stacks to see what it waits for"}
# a fix more precise than the cause's, by (cause, label)
FIX_BY_LABEL = {("lock", "mmap_lock"): (
    "fix the address-space lock: its page faults and mm calls wait for the process's "
    "mmap_lock, held by another thread's mmap, munmap, mprotect, madvise or brk (fewer or "
    "batched calls: an allocator that trims or a JIT that flips protections; more memory "
    "will not help)")}


def fix_for(cause: tuple | None) -> str:
    """The next step for a (cause, label): FIX_BY_LABEL's, else its cause's."""
    if cause is None:
        return FIX["other"]
    return FIX_BY_LABEL.get(tuple(cause)) or FIX.get(cause[0], FIX["other"])


CAUSE_TEXT = {"peer-cpu": "waits for another thread's CPU work", "disk": "disk waits", "lock": "lock waits", "network": "network waits",
              "local-socket": "local socket waits",
              "poll/idle": "idle waits", "child": "waits for child processes",
              "sleep": "sleeps", "paging": "page-fault waits (memory pressure)",
              "other": "other blocked waits"}


def cause_text(cause: str, label: str) -> str:
    name = CAUSE_TEXT[cause]
    return f"{name} ({label})" if label else name


def _who(t) -> str:
    return f"{t.comm} (tid {t.tid})"


def _blocked_text(d: Decision) -> str:
    t = d.cause_thread
    if t is None:
        return f"blocked time is {d.blocked_share:.0%} of the workload's wall time"
    if d.waker == QUEUED_WAKER:
        woke = ", woken from another CPU (a queued wake-up: the trace does not name the waker)"
    elif d.waker == TIMER_WAKER_NAME:
        woke = ", ended by a timer"
    elif d.waker == INTERRUPT_WAKER_NAME:
        woke = ", woken from an interrupt (a device's completion)"
    else:
        woke = f", woken by {d.waker}" if d.waker and d.waker != t.comm else ""
    unc = ""
    if d.uncertain:
        unc = (f" (uncertain: {t.inferred} of {t.switches} switch-ins of {t.comm} were not "
               "recorded; counted as blocked, its time between switch-outs)")
    p99 = "" if d.cause_p99_us is None else f", p99 {human_us(d.cause_p99_us)}"
    return (f"{_who(t)} spends {d.cause_share:.0%} of its wall time in {cause_text(*d.cause)}"
            f"{p99}{woke}{unc}")


# the share of the workload's run-queue time behind others that must be throttling (the
# task was preempted with nothing else to run) for the verdict to say so
THROTTLED_SHARE = 0.5


def _throttled(d: Decision) -> bool:
    return d.runq_throttled_share >= THROTTLED_SHARE


def _runq_text(d: Decision) -> str:
    if d.runq_long is None:
        return "run-queue and on-CPU time are not measured in a `perf record -p` recording"
    # the run-queue time that ended at a switch from the idle task: an idle CPU waking
    # up, in all (not queueing behind others: more cores would not shorten it)
    idle = (f"; idle-CPU wake-ups {human_us(d.idle_wakeup_us)} in all (not queueing)"
            if d.idle_wakeup_us >= 1000 else "")
    if d.runq_long and d.runq_thread is not None:
        t = d.runq_thread
        what = ("while a CPU sat idle (throttled: the CPU quota of its cgroup ran out)"
                if _throttled(d) else "behind other tasks")
        return (f"run-queue waits {what} are {d.runq_share:.0%} of the workload's "
                f"wall time, p99 {human_us(d.runq_p99_us)} (most: {_who(t)} "
                f"{human_us(ns_to_us(t.runq_contention_ns))}){idle}")
    return (f"run queue {d.runq_share:.0%}, p99 {human_us(d.runq_p99_us)}{idle}")


# the share of the recording's blocked time with unresolved kernel frames from which the
# verdict says that its answer rests on the wake-ups alone
UNRESOLVED_NOTE_SHARE = 0.2
RESOLVE = "perf script where it was recorded, or --kallsyms with that machine's /proc/kallsyms"


def explain(d: Decision, ropts: ReportOptions) -> str:
    text = (_explain(d, ropts) if d.scope.threads else
            "no workload thread was measured: nothing to say about waiting.")
    said = d.cause == UNRESOLVED and d.answer in ("waiting", "both")   # its fix says it
    if d.unresolved_share >= UNRESOLVED_NOTE_SHARE and not said:
        # which threads are the workload, and what their waits are, rest on wake-ups alone
        text += (f" The kernel frames of {d.unresolved_share:.0%} of the recording's blocked "
                 "time are unresolved: what those waits are was read from their wake-ups "
                 f"alone, and the answer may be wrong ({RESOLVE} to read them).")
    return text


# the share of the named thread's lock time ended by a waker that had just slept from
# which the advice names that sleep (a lock held across a sleep, or a condition variable
# fed at a sleep's pace: a consumer of a producer pacing itself with usleep read "fix the
# lock", 95% of its wall time; held out, fixture cv_paced)
AFTER_SLEEP_SHARE = 0.5


def _after_sleep(d: Decision) -> bool:
    t = d.cause_thread
    if t is None or not d.cause or d.cause[0] != "lock" or not d.waker or d.waker[:1] == "(":
        return False
    lock = t.by_cause.get(d.cause, 0)
    return lock > 0 and t.lock_after_sleep_ns >= AFTER_SLEEP_SHARE * lock


def _fix(d: Decision) -> str:
    """The next step for the decision's cause (fix_for), or its waker's sleep's."""
    if _after_sleep(d):
        return (f"shorten or remove its waker's sleep ({d.waker} wakes it right after "
                "sleeping: it sleeps holding the lock, or hands out work at the pace of its "
                "sleeps through a queue or condition variable; the events cannot tell which)")
    return fix_for(d.cause)


def _busy_text(d: Decision) -> str:
    t = d.busy_thread
    if t is None:
        return ""
    return (f" Beside it, {_who(t)} is on CPU {t.oncpu_ns / t.wall_ns:.0%} of its wall time: "
            "its own CPU time bounds the work too: profile it on-CPU (perf record -F 99 -g).")


def _cpus(cpus: tuple) -> str:
    return ", ".join(map(str, cpus))


def _explain(d: Decision, ropts: ReportOptions) -> str:
    runq, blk = _runq_text(d), _blocked_text(d)
    fix = _fix(d)
    if d.cause == NO_CHAIN:
        fix = "record with call chains (-g) to see what it waits for"
    elif d.cause == UNRESOLVED:
        fix = f"resolve the kernel frames to see what it waits for ({RESOLVE})"
    if d.answer == "both":
        return (f"{blk}; and {runq}: both cost time; {fix} first, then add capacity "
                "(cores, fewer jobs at once, priorities).")
    if d.answer == "waiting":
        tail = ("" if d.runq_long is None else ", adding cores will not help")
        return f"{blk}; {runq}: {fix}{tail}.{_busy_text(d)}"
    if d.answer == "capacity" and _throttled(d):
        return (f"{runq}; blocked {d.blocked_share:.0%}: the threads are runnable but held "
                "back by their CPU quota (cgroup cpu.max / cpu.cfs_quota_us, a container's "
                "CPU limit): raise the quota; more cores will not help, nor will the "
                "blocking paths.")
    if d.answer == "capacity" and d.pinned:
        used, idle, share = d.pinned
        return (f"{runq}; blocked {d.blocked_share:.0%}: the threads are runnable but ran "
                f"only on CPU {_cpus(used)} while CPU {_cpus(idle)} sat idle {share:.0%} of the "
                "trace: fix the affinity (taskset, cpuset, sched_setaffinity, a container's "
                "cpuset.cpus); more cores would change nothing, nor would the blocking paths.")
    if d.answer == "capacity":
        unseen = ""
        if d.filtered_cpus:
            unseen = (" (the recording is filtered to these threads: whether other CPUs sat "
                      f"idle is not seen; they ran on CPU {_cpus(d.filtered_cpus)}: if an "
                      "affinity holds them there, widen it first)")
        return (f"{runq}; blocked {d.blocked_share:.0%}: the threads are runnable but wait "
                f"for a CPU: add cores, run fewer jobs at once or change priorities{unseen}; "
                "the blocking paths are not the problem.")
    if d.runq_long is None:
        return (f"blocked {d.blocked_share:.0%} of the workload's wall time, p99 "
                f"{human_us(d.blocked_p99_us)}; {runq}: record system-wide to decide "
                "between capacity and on-CPU.")
    p99 = "" if d.blocked_p99_us is None else f", p99 {human_us(d.blocked_p99_us)}"
    return (f"{runq}; blocked {d.blocked_share:.0%}{p99}: the "
            f"waits are short; the time is spent on CPU (or idle){_oncpu_who(d)}: profile "
            "on-CPU (perf record -F 99 -g).")


ONCPU_NAMED = 3   # the names an on-cpu answer gives, most time on CPU first


def oncpu_top(d: Decision) -> list:
    """Whose CPU time it is: the workload's threads by name, (comm, [threads], on-CPU ns),
    the names with the most of it (1 ms or more, a tenth of the first's or more)."""
    groups: dict = {}
    for t in d.scope.threads:
        if t.wall_ns and t.oncpu_ns:
            groups.setdefault(t.comm, []).append(t)
    ranked = []
    for c, ts in groups.items():
        # a name's busy threads (a tenth of its busiest one's share of life or more): a Go
        # program's two spinning threads, not its idle ones beside them
        top = max(t.oncpu_ns / t.wall_ns for t in ts)
        ts = sorted((t for t in ts if t.oncpu_ns / t.wall_ns * 10 >= top), key=lambda t: t.tid)
        ranked.append((c, ts, sum(t.oncpu_ns for t in ts)))
    ranked.sort(key=lambda g: (-g[2], g[0]))
    ranked = [g for g in ranked[:ONCPU_NAMED] if g[2] >= 1_000_000]
    return [g for g in ranked if g[2] * 10 >= ranked[0][2]]


def _oncpu_who(d: Decision) -> str:
    top = oncpu_top(d)
    if not top:
        return ""
    parts = []
    for comm, ts, ns in top:
        wall = sum(t.wall_ns for t in ts)
        if len(ts) == 1:
            parts.append(f"{_who(ts[0])} {human_us(ns_to_us(ns))} ({ns / wall:.0%} of its wall time)")
        else:
            pids = {t.pid for t in ts}   # (perf script's default fields have no pid)
            what = ("tasks" if None in pids else "processes" if len(pids) == len(ts) else "threads")
            parts.append(f"{comm} ({len(ts)} {what}) {human_us(ns_to_us(ns))} ({ns / wall:.0%} of "
                         "their wall time)")
    return "; most of it: " + ", ".join(parts)


def verdict(an, ropts: ReportOptions, d: Optional[Decision] = None) -> dict:
    """The decision (``decide``'s, or the one given) with its reason, scope and numbers, as
    report data."""
    if d is None:
        d = decide(an, ropts)
    sc = d.scope
    return {
        # nothing measured is no answer (null), not "on-cpu": a CI step reading it must not
        # take an empty or wrongly filtered trace for a healthy one
        "answer": d.answer if sc.threads else None, "reason": explain(d, ropts),
        "uncertain": d.uncertain,
        "runq_long": d.runq_long, "blocked_long": d.blocked_long,
        "runq_share": None if d.runq_share is None else round(d.runq_share, 4),
        "runq_throttled_share": round(d.runq_throttled_share, 4),
        "blocked_unresolved_share": round(d.unresolved_share, 4),
        "blocked_share": round(d.blocked_share, 4),
        "runq_p99_us": d.runq_p99_us, "blocked_p99_us": d.blocked_p99_us,
        "idle_wakeup_us": d.idle_wakeup_us,
        "cause": None if d.cause is None else {
            "cause": d.cause[0], "label": d.cause[1],
            "comm": d.cause_thread.comm, "tid": d.cause_thread.tid,
            "share_of_thread": round(d.cause_share, 4), "p99_us": d.cause_p99_us,
            "woken_by": d.waker, "next_step": _fix(d)},
        "oncpu_top": [{"comm": c, "tids": [t.tid for t in ts], "oncpu_us": ns_to_us(ns),
                       "share": round(ns / sum(t.wall_ns for t in ts), 4)}
                      for c, ts, ns in (oncpu_top(d) if d.answer == "on-cpu" else ())],
        "busy_beside": None if d.busy_thread is None else {
            "comm": d.busy_thread.comm, "tid": d.busy_thread.tid,
            "oncpu_share": round(d.busy_thread.oncpu_ns / d.busy_thread.wall_ns, 4)},
        "idle_waits_counted": d.idle_counted,
        "workload": [{"comm": c, "tids": sorted(t.tid for t in ts), "busy_us": ns_to_us(b)}
                     for c, ts, b in sc.groups],
        "threads_considered": sorted(t.tid for t in sc.core),
        "left_out": [{"comm": c, "tid": tid, "reason": r} for c, tid, r in sc.left_out],
        "thresholds": {"runq_p99_long_us": ropts.runq_p99_long_us,
                       "runq_share_long": ropts.runq_share_long,
                       "blocked_p99_long_us": ropts.blocked_p99_long_us,
                       "blocked_share_long": ropts.blocked_share_long,
                       "workload_share": ropts.workload_share},
    }


def scope_text(v: dict) -> str:
    """One line: the workload and what was left out, by reason."""
    work = ", ".join(f"{w['comm']} ({plural(len(w['tids']), 'thread')})" for w in v["workload"][:6])
    more = len(v["workload"]) - 6
    if more > 0:
        work += f" and {more} more"
    left = left_out_text(v["left_out"])
    return f"workload: {work or 'none'}" + (f"; left out: {left}" if left else "")


def left_out_text(left_out: list) -> str:
    """The threads left out of the verdict, counted by reason: a reason's text before its
    first ':' names it (the rest is that thread's detail)."""
    reasons: dict = {}
    for x in left_out:
        key = x["reason"].split(":")[0]
        reasons[key] = reasons.get(key, 0) + 1
    return "; ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
