"""The verdict: the decision matrix of DESIGN.md (capacity / waiting / both / on-cpu),
decided (``decide``) apart from its wording (``explain``).

It looks at the *significant* threads (not idle, observed for at least a fraction of the
longest-observed thread's time). A tail is **long** when its share of some significant
thread's wall time (on-CPU + run-queue + blocked) reaches ``*_share_long``, or when its
p99 reaches ``*_p99_long_us`` and its share is material. Blocked time counts only
latency causes: ``poll/idle`` and ``child`` waits are left out unless the user selected
threads (``-p``, ``--filter-tid``, ``--comm``, ``--state``).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Optional

from .causes import IDLE_CAUSES
from .latency import percentile
from .options import ReportOptions
from .units import human_us, ns_to_us


@dataclass(frozen=True)
class Decision:
    answer: str
    runq_long: bool
    blocked_long: bool
    runq_p99_us: int
    blocked_p99_us: int
    runq_top: Optional[object]        # ThreadTotals with the largest run-queue share
    runq_share: float
    blocked_top: Optional[object]     # the thread the blocked sentence is about
    blocked_cause: Optional[tuple]    # its largest latency cause (cause, label)
    blocked_share: float
    considered: tuple                 # ThreadTotals considered
    idle_counted: bool


def _latency_blocked(tt, idle_counted: bool) -> int:
    return sum(ns for (cause, _), ns in tt.by_cause.items()
               if idle_counted or cause not in IDLE_CAUSES)


def significant_threads(an, ropts: ReportOptions) -> list:
    """The threads the verdict looks at: not idle; observed for at least a fraction of
    the longest-observed thread's time and switched out a fraction as often as the
    busiest; and fully recorded -- fewer than half of their off-CPU periods lack the
    wakeup or the switch-in."""
    threads = [t for t in an.threads.values()
               if t.tid != 0 and t.wall_ns > 0 and 2 * (t.no_wakeup + t.inferred) < t.switches]
    if not threads:
        return []
    longest = max(t.wall_ns for t in threads)
    most = max(t.switches for t in threads)
    return sorted((t for t in threads if t.wall_ns >= ropts.significant_wall * longest
                   and t.switches >= ropts.significant_switches * most),
                  key=lambda t: t.tid)


def decide(an, ropts: ReportOptions) -> Decision:
    idle_counted = an.threads_filtered
    sig = significant_threads(an, ropts)
    runq = sorted(chain.from_iterable(t.runq for t in sig))
    blocked = sorted(chain.from_iterable(
        arr for t in sig for cause, arr in t.cause_durations.items()
        if idle_counted or cause not in IDLE_CAUSES))
    runq_p99 = ns_to_us(percentile(runq, 99) or 0)
    blocked_p99 = ns_to_us(percentile(blocked, 99) or 0)
    runq_top = max(sig, key=lambda t: (t.runq_ns / t.wall_ns, -t.tid), default=None)
    runq_share = runq_top.runq_ns / runq_top.wall_ns if runq_top else 0.0
    blk_top, blk_cause, blk_share = _top_blocked(sig, idle_counted, ropts)
    m = ropts.material_share
    runq_long = (runq_p99 >= ropts.runq_p99_long_us and runq_share >= ropts.runq_share_long * m) \
        or runq_share >= ropts.runq_share_long
    blocked_long = (blocked_p99 >= ropts.blocked_p99_long_us
                    and blk_share >= ropts.blocked_share_long * m) \
        or blk_share >= ropts.blocked_share_long
    answer = {(True, True): "both", (False, True): "waiting", (True, False): "capacity",
              (False, False): "on-cpu"}[(runq_long, blocked_long)]
    return Decision(answer, runq_long, blocked_long, runq_p99, blocked_p99, runq_top,
                    runq_share, blk_top, blk_cause, blk_share, tuple(sig), idle_counted)


def _top_blocked(sig: list, idle_counted: bool, ropts: ReportOptions):
    """(thread, its largest latency cause, the largest latency-blocked share of any
    significant thread). The thread named is the busiest on CPU among those whose
    blocked share is material -- the request path -- not a helper that only sleeps."""
    shares = {t.tid: _latency_blocked(t, idle_counted) / t.wall_ns for t in sig}
    if not sig or max(shares.values()) == 0:
        return None, None, 0.0
    material = [t for t in sig
                if shares[t.tid] >= ropts.blocked_share_long * ropts.material_share] or sig
    t = max(material, key=lambda x: (x.oncpu_ns, shares[x.tid], -x.tid))
    causes = {k: ns for k, ns in t.by_cause.items() if idle_counted or k[0] not in IDLE_CAUSES}
    if not causes:
        return None, None, max(shares.values())
    top = max(sorted(causes), key=lambda k: causes[k])
    return t, top, max(shares.values())


# -- wording ------------------------------------------------------------------------------

FIX = {"lock": "fix the lock", "disk": "fix the I/O path", "network": "fix the network path",
       "sleep": "remove the sleep", "paging": "fix the memory pressure",
       "poll/idle": "find what it waits for", "child": "look at the child processes",
       "other": "fix what it waits for"}
CAUSE_TEXT = {"disk": "disk waits", "lock": "lock waits", "network": "network waits",
              "poll/idle": "idle waits", "child": "waits for child processes",
              "sleep": "sleeps", "paging": "page-fault waits", "other": "other blocked waits"}


def _cause_text(cause: str, label: str) -> str:
    name = CAUSE_TEXT[cause]
    return f"{name} ({label})" if label else name


def _blocked_text(d: Decision) -> str:
    t, cause = d.blocked_top, d.blocked_cause
    if t is None:
        return f"blocked p99 {human_us(d.blocked_p99_us)}"
    part = t.by_cause[cause] / t.wall_ns
    arr = sorted(t.cause_durations.get(cause[0], ()))
    cp99 = ns_to_us(percentile(arr, 99) or 0)
    return (f"{_cause_text(*cause)} are {part:.0%} of {t.comm}'s wall time, p99 {human_us(cp99)} "
            f"(blocked p99 {human_us(d.blocked_p99_us)})")


def _runq_text(d: Decision, ropts: ReportOptions) -> str:
    t = d.runq_top
    if t is None:
        return f"run-queue p99 {human_us(d.runq_p99_us)}"
    sig = d.considered
    n = sum(1 for x in sig if x.runq_ns >= ropts.runq_share_long * x.wall_ns)
    many = f" ({n} of {len(sig)} threads above {ropts.runq_share_long:.0%})" if n > 1 else ""
    return (f"run-queue waits are {d.runq_share:.0%} of {t.comm}'s wall time{many}, "
            f"run-queue p99 {human_us(d.runq_p99_us)}")


def explain(d: Decision, ropts: ReportOptions) -> str:
    runq_text, blk_text = _runq_text(d, ropts), _blocked_text(d)
    if d.answer == "both":
        return (f"{blk_text}; and {runq_text}: both the blocking path and CPU capacity "
                "cost time; fix the blocking path first, then add capacity.")
    if d.answer == "waiting":
        fix = FIX.get(d.blocked_cause[0] if d.blocked_cause else "other", "fix what it waits for")
        return (f"{blk_text}; run-queue p99 {human_us(d.runq_p99_us)}: {fix}, adding cores "
                "will not help.")
    if d.answer == "capacity":
        return (f"{runq_text}; blocked p99 {human_us(d.blocked_p99_us)}"
                f"{'' if d.idle_counted else ' (idle waits excluded)'}: the threads are runnable "
                "but wait for a CPU: add cores, run fewer jobs at once or change priorities; "
                "the blocking paths are not the problem.")
    if not d.considered:
        return "no off-CPU intervals were measured: nothing to say about waiting."
    return (f"run-queue p99 {human_us(d.runq_p99_us)} and blocked p99 "
            f"{human_us(d.blocked_p99_us)} are short: the time is spent on CPU; profile "
            "on-CPU (perf record -F 99 -g).")


def verdict(an, ropts: ReportOptions) -> dict:
    """The decision with its reason and numbers, as report data."""
    d = decide(an, ropts)
    return {
        "answer": d.answer, "reason": explain(d, ropts),
        "runq_long": d.runq_long, "blocked_long": d.blocked_long,
        "runq_p99_us": d.runq_p99_us, "blocked_p99_us": d.blocked_p99_us,
        "runq_share_max": round(d.runq_share, 4), "blocked_share_max": round(d.blocked_share, 4),
        "idle_waits_counted": d.idle_counted,
        "threads_considered": [t.tid for t in d.considered],
        "thresholds": {"runq_p99_long_us": ropts.runq_p99_long_us,
                       "runq_share_long": ropts.runq_share_long,
                       "blocked_p99_long_us": ropts.blocked_p99_long_us,
                       "blocked_share_long": ropts.blocked_share_long},
    }
