"""Off-CPU analysis: causes, percentiles, per-thread totals, top stacks and the verdict.

Pure: no printing. ``offcpu.build_profile`` feeds an ``Analysis`` (ns, exact durations);
``summarize(analysis, ReportOptions)`` turns it into the report data (µs) that the
report/json renderers print.

Causes (``classify``), from the kernel frames of the switch-out stack, cached per stack:
a page-fault frame anywhere makes it ``paging`` (folio waits under a fault are paging,
not disk); otherwise the leaf-most kernel frame that is not scheduler plumbing
(``__schedule``, ``schedule``, ``schedule_timeout``, ...) and matches a rule decides (a
kworker idling in ``worker_thread`` is ``poll/idle``, one in ``io_schedule`` under
``worker_thread`` is ``disk``); nothing matched: ``other``.

Verdict (``verdict``), the decision matrix of DESIGN.md. It looks at the *significant*
threads (not idle, observed for at least a quarter of the longest-observed thread's
time). A tail is **long** when its share of some significant thread's wall time
(on-CPU + run-queue + blocked) reaches ``*_share_long``, or when its p99 reaches
``*_p99_long_us`` and its share is at least a quarter of ``*_share_long`` (a long
tail that costs nothing is not the answer). Blocked time counts only latency causes:
``poll/idle`` and ``child`` waits are left out unless the user selected threads
(``-p``, ``--filter-tid``, ``--comm``, ``--state``). capacity = run-queue long,
blocked short; waiting = blocked long, run-queue short; both; on-cpu = both short.
"""
from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from itertools import chain
from typing import Optional

from .model import KERNEL
from .options import ReportOptions

CAUSES = ("disk", "lock", "network", "poll/idle", "child", "sleep", "paging", "other")
IDLE_CAUSES = frozenset(("poll/idle", "child"))

_PAGING = re.compile(r"page_fault|handle_mm_fault|^__do_fault$|^do_fault$|filemap_fault|"
                     r"do_swap_page|handle_userfault|do_anonymous_page")
_INFRA = re.compile(r"^(__schedule|schedule|schedule_timeout|schedule_hrtimeout\w*|"
                    r"schedule_preempt_disabled|preempt_schedule\w*|_?_?cond_resched|"
                    r"freezable_schedule\w*|io_schedule_prepare|__traceiter\w*)$")

# (cause, label, regex) -- first rule matching the leaf-most informative frame wins
_RULES = [
    ("poll/idle", "idle", r"^(do_idle|schedule_idle|cpu_startup_entry|worker_thread|"
     r"smpboot_thread_fn|kthreadd|kthread_worker_fn|rcu_gp_kthread|rcu_gp_fqs_loop|"
     r"rcu_tasks\w*kthread|rcu_\w*_kthread|irq_thread|kcompactd|kswapd|khugepaged|"
     r"kdamond\w*|kauditd_thread|watchdog|oom_reaper|ksm_scan_thread|rescuer_thread|"
     r"kjournald2|kthread)$"),
    ("poll/idle", "epoll", r"ep_poll|epoll_wait"),
    ("poll/idle", "poll", r"^(do_sys_poll|do_poll|poll_schedule_timeout)"),
    ("poll/idle", "select", r"^(do_select|core_sys_select)"),
    ("poll/idle", "pipe", r"^(pipe_read|pipe_wait\w*)$"),
    ("poll/idle", "signal", r"^(do_sigtimedwait|sigsuspend|__x64_sys_pause|__do_sys_pause|"
     r"n_tty_read|inotify_read|eventfd_read)$"),
    ("child", "wait", r"^(do_wait|kernel_wait4?|__do_sys_wait4|__x64_sys_wait4|kernel_waitid)$"),
    ("child", "vfork", r"^(kernel_clone|_do_fork|__do_sys_vfork|__do_sys_clone3?)$"),
    ("disk", "fsync", r"fsync|sync_file|blkdev_issue_flush|jbd2"),
    ("disk", "io", r"io_schedule|^blk_|^bio_|submit_bio|folio_wait|wait_on_page|__lock_page|"
     r"wait_on_buffer|^__?lock_buffer|nvme|^filemap_|^ext4_|^xfs_|^btrfs_"),
    ("network", "socket", r"^(sk_|sock_|tcp_|inet_|udp_|unix_|__skb_|skb_recv|__sys_recv|"
     r"__sys_send|__sys_accept|__sys_connect|netlink)"),
    ("lock", "futex", r"futex"),
    ("lock", "mutex", r"mutex"),
    ("lock", "rwsem", r"rwsem|^down_read|^down_write|^down$|^__down|percpu_down"),
    ("sleep", "nanosleep", r"nanosleep|hrtimer_sleep|^msleep|^usleep|^ssleep"),
]
_COMPILED = [(c, label, re.compile(rx)) for c, label, rx in _RULES]


def classify(stack: tuple) -> tuple[str, str]:
    """(cause, label) of a switch-out stack (root-first tuple of Frames)."""
    kernel = [f.name.split(".", 1)[0] for f in stack if f.kind == KERNEL]
    if not kernel:
        return "other", ""
    for name in kernel:
        if _PAGING.search(name):
            return "paging", "fault"
    for name in reversed(kernel):
        if _INFRA.match(name):
            continue
        for cause, label, rx in _COMPILED:
            if rx.search(name):
                return cause, label
    return "other", ""


class Classifier:
    """classify() with a cache keyed by the stack tuple."""

    def __init__(self):
        self._cache: dict = {}

    def __call__(self, stack: tuple) -> tuple[str, str]:
        got = self._cache.get(stack)
        if got is None:
            got = self._cache[stack] = classify(stack)
        return got


# -- percentiles and histograms ---------------------------------------------------------

def percentile(sorted_values, p: int):
    """Nearest-rank percentile of an ascending sequence (None when empty)."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, -(-p * n // 100))
    return sorted_values[rank - 1]


def latency_stats(values) -> dict:
    """count, p50/p90/p99/max in integer µs (rounded) over ns durations."""
    s = sorted(values)
    out = {"count": len(s)}
    for p in (50, 90, 99):
        v = percentile(s, p)
        out[f"p{p}_us"] = 0 if v is None else ns_to_us(v)
    out["max_us"] = ns_to_us(s[-1]) if s else 0
    return out


def ns_to_us(ns: int) -> int:
    """Round to the nearest µs (half up): the only ns -> µs conversion."""
    return (ns + 500) // 1000


def log2_buckets(values_ns) -> tuple:
    """bpftrace hist() buckets of floor-µs values: (0,1) for [0], (1,2) for [1], then
    [2^k, 2^(k+1)); only from the first to the last non-empty bucket."""
    counts: dict = {}
    for ns in values_ns:
        us = ns // 1000
        lo = 0 if us == 0 else 1 << (us.bit_length() - 1)
        counts[lo] = counts.get(lo, 0) + 1
    if not counts:
        return ()
    los = [0, 1]
    while los[-1] < max(counts):
        los.append(los[-1] * 2)
    first = min(counts)
    return tuple((lo, 1 if lo == 0 else lo * 2, counts.get(lo, 0))
                 for lo in los if lo >= first and lo <= max(counts))


# -- accumulation -------------------------------------------------------------------------

class ThreadTotals:
    """Per-thread sums (ns) and the durations needed for exact percentiles."""

    __slots__ = ("comm", "pid", "tid", "blocked_ns", "runq_ns", "runq_preempted_ns",
                 "oncpu_ns", "switches", "inferred", "no_wakeup", "by_cause", "by_state",
                 "blocked", "runq", "cause_durations")

    def __init__(self, task):
        self.comm, self.pid, self.tid = task.comm, task.pid, task.tid
        self.blocked_ns = self.runq_ns = self.runq_preempted_ns = self.oncpu_ns = 0
        self.switches = self.inferred = self.no_wakeup = 0
        self.by_cause: dict = {}          # (cause, label) -> ns
        self.by_state: dict = {}          # state letter -> blocked ns
        self.blocked = array("q")         # blocked durations
        self.runq = array("q")            # run-queue durations (preempted included)
        self.cause_durations: dict = {}   # cause -> array of blocked durations

    @property
    def offcpu_ns(self) -> int:
        return self.blocked_ns + self.runq_ns

    @property
    def wall_ns(self) -> int:
        return self.blocked_ns + self.runq_ns + self.oncpu_ns


@dataclass
class Analysis:
    """What the off-CPU path saw, in ns: filled by offcpu.build_profile, summarised by
    ``summarize`` for the report/json renderers."""

    threads: dict = field(default_factory=dict)        # tid (or (0, cpu)) -> ThreadTotals
    stacks: dict = field(default_factory=dict)         # kind -> {folded tuple: ns}
    by_process: dict = field(default_factory=dict)     # process name -> {folded tuple: ns}
    dropped: dict = field(default_factory=dict)
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None
    threads_filtered: bool = False   # the user selected threads (-p/--filter-tid/--comm/--state)
    per_process: bool = False        # a `perf record -p` recording was detected
    classify: Classifier = field(default_factory=Classifier)

    def thread(self, task) -> ThreadTotals:
        key = task.tid
        tt = self.threads.get(key)
        if tt is None:
            tt = self.threads[key] = ThreadTotals(task)
        elif task.comm != tt.comm:
            tt.comm = task.comm            # latest name wins (threads rename themselves)
        if task.pid is not None:
            tt.pid = task.pid
        return tt

    def add_blocked(self, iv, folded: tuple, process: str) -> None:
        tt = self.thread(iv.task)
        d = iv.end_ns - iv.start_ns
        cause = self.classify(iv.stack)
        tt.blocked_ns += d
        tt.blocked.append(d)
        tt.by_cause[cause] = tt.by_cause.get(cause, 0) + d
        tt.by_state[iv.state] = tt.by_state.get(iv.state, 0) + d
        arr = tt.cause_durations.get(cause[0])
        if arr is None:
            arr = tt.cause_durations[cause[0]] = array("q")
        arr.append(d)
        self._stack("blocked", folded, process, d)

    def add_runq(self, iv, folded: tuple, process: str) -> None:
        tt = self.thread(iv.task)
        d = iv.end_ns - iv.start_ns
        tt.runq_ns += d
        tt.runq.append(d)
        if iv.state == "R":
            tt.runq_preempted_ns += d
        self._stack("runq", folded, process, d)

    def add_oncpu(self, iv) -> None:
        self.thread(iv.task).oncpu_ns += iv.end_ns - iv.start_ns

    def _stack(self, kind: str, folded: tuple, process: str, d: int) -> None:
        m = self.stacks.setdefault(kind, {})
        m[folded] = m.get(folded, 0) + d
        p = self.by_process.setdefault(process, {})
        p[folded] = p.get(folded, 0) + d

    def add_counts(self, stats: dict) -> None:
        """Merge one input's interval stats (dropped counts, per-thread counters, span)."""
        for tid, (switches, inferred, no_wakeup) in stats.get("threads", {}).items():
            tt = self.threads.get(tid)
            if tt is not None:
                tt.switches += switches
                tt.inferred += inferred
                tt.no_wakeup += no_wakeup
        for k, v in stats.items():
            if k in ("threads", "first_ns", "last_ns", "per_process"):
                continue
            self.dropped[k] = self.dropped.get(k, 0) + v
        if stats.get("per_process"):
            self.per_process = True
        f, l = stats.get("first_ns"), stats.get("last_ns")
        if f is not None and (self.first_ns is None or f < self.first_ns):
            self.first_ns = f
        if l is not None and (self.last_ns is None or l > self.last_ns):
            self.last_ns = l

    def durations(self, kind: str):
        out = array("q")
        for tt in self.threads.values():
            out.extend(tt.blocked if kind == "blocked" else tt.runq)
        return out


# -- summary and verdict ------------------------------------------------------------------

def human_us(us: int) -> str:
    """A duration in the unit that reads best: 850 µs, 50.3 ms, 2.26 s."""
    if us < 1000:
        return f"{us} µs"
    if us < 1_000_000:
        return f"{us / 1000:.1f} ms"
    return f"{us / 1_000_000:.2f} s"


def _cause_text(cause: str, label: str) -> str:
    name = {"disk": "disk waits", "lock": "lock waits", "network": "network waits",
            "poll/idle": "idle waits", "child": "waits for child processes",
            "sleep": "sleeps", "paging": "page-fault waits", "other": "other blocked waits"}[cause]
    return f"{name} ({label})" if label else name


def _latency_blocked(tt: ThreadTotals, idle_counted: bool) -> int:
    return sum(ns for (cause, _), ns in tt.by_cause.items()
               if idle_counted or cause not in IDLE_CAUSES)


def significant_threads(an: Analysis) -> list:
    """The threads the verdict looks at: not idle; observed for at least a quarter of the
    longest-observed thread's time and switched out at least a tenth as often as the
    busiest; and fully recorded -- fewer than half of their off-CPU
    periods lack the wakeup or the switch-in. In a filtered recording the switch
    partners of the workload (other processes, seen only when they hand the CPU over)
    have neither: their "blocked" time is just time outside the filter."""
    threads = [t for t in an.threads.values()
               if t.tid != 0 and t.wall_ns > 0 and 2 * (t.no_wakeup + t.inferred) < t.switches]
    if not threads:
        return []
    longest = max(t.wall_ns for t in threads)
    most = max(t.switches for t in threads)
    return sorted((t for t in threads if 4 * t.wall_ns >= longest and 10 * t.switches >= most),
                  key=lambda t: t.tid)


def verdict(an: Analysis, ropts: ReportOptions) -> dict:
    """The decision matrix of DESIGN.md: capacity / waiting / both / on-cpu, with the numbers."""
    idle_counted = an.threads_filtered
    sig = significant_threads(an)
    runq = sorted(chain.from_iterable(t.runq for t in sig))
    blocked = sorted(chain.from_iterable(
        arr for t in sig for cause, arr in t.cause_durations.items()
        if idle_counted or cause not in IDLE_CAUSES))
    runq_p99 = ns_to_us(percentile(runq, 99) or 0)
    blocked_p99 = ns_to_us(percentile(blocked, 99) or 0)
    runq_top = max(sig, key=lambda t: (t.runq_ns / t.wall_ns, -t.tid), default=None)
    runq_share = runq_top.runq_ns / runq_top.wall_ns if runq_top else 0.0
    blk_top, blk_cause, blk_share = _top_blocked(sig, idle_counted, ropts)
    runq_long = (runq_p99 >= ropts.runq_p99_long_us and runq_share >= ropts.runq_share_long / 4) \
        or runq_share >= ropts.runq_share_long
    blocked_long = (blocked_p99 >= ropts.blocked_p99_long_us and blk_share >= ropts.blocked_share_long / 4) \
        or blk_share >= ropts.blocked_share_long
    runq_text = _runq_text(runq_top, runq_share, runq_p99, sig, ropts)
    blk_text = _blocked_text(blk_top, blk_cause, blk_share, blocked_p99)
    if runq_long and blocked_long:
        answer = "both"
        reason = (f"{blk_text}; and {runq_text}: both the blocking path and CPU capacity "
                  "cost time; fix the blocking path first, then add capacity.")
    elif blocked_long:
        answer = "waiting"
        fix = _FIX.get(blk_cause[0] if blk_cause else "other", "fix what it waits for")
        reason = f"{blk_text}; run-queue p99 {human_us(runq_p99)}: {fix}, adding cores will not help."
    elif runq_long:
        answer = "capacity"
        reason = (f"{runq_text}; blocked p99 {human_us(blocked_p99)}"
                  f"{'' if idle_counted else ' (idle waits excluded)'}: the threads are runnable "
                  "but wait for a CPU: add cores, run fewer jobs at once or change priorities; "
                  "the blocking paths are not the problem.")
    else:
        answer = "on-cpu"
        reason = (f"run-queue p99 {human_us(runq_p99)} and blocked p99 {human_us(blocked_p99)} "
                  "are short: the time is spent on CPU; profile on-CPU (perf record -F 99 -g).")
        if not sig:
            reason = "no off-CPU intervals were measured: nothing to say about waiting."
    return {
        "answer": answer, "reason": reason,
        "runq_long": runq_long, "blocked_long": blocked_long,
        "runq_p99_us": runq_p99, "blocked_p99_us": blocked_p99,
        "runq_share_max": round(runq_share, 4), "blocked_share_max": round(blk_share, 4),
        "idle_waits_counted": idle_counted,
        "threads_considered": [t.tid for t in sig],
        "thresholds": {"runq_p99_long_us": ropts.runq_p99_long_us,
                       "runq_share_long": ropts.runq_share_long,
                       "blocked_p99_long_us": ropts.blocked_p99_long_us,
                       "blocked_share_long": ropts.blocked_share_long},
    }


_FIX = {"lock": "fix the lock", "disk": "fix the I/O path", "network": "fix the network path",
        "sleep": "remove the sleep", "paging": "fix the memory pressure",
        "poll/idle": "find what it waits for", "child": "look at the child processes",
        "other": "fix what it waits for"}


def _top_blocked(sig: list, idle_counted: bool, ropts: ReportOptions):
    """(thread, its largest latency cause, the largest latency-blocked share of any
    significant thread). The thread named is the busiest on CPU among those whose
    blocked share is material -- the request path -- not a helper that only sleeps."""
    shares = {t.tid: _latency_blocked(t, idle_counted) / t.wall_ns for t in sig}
    if not sig or max(shares.values()) == 0:
        return None, None, 0.0
    material = [t for t in sig if shares[t.tid] >= ropts.blocked_share_long / 4] or sig
    t = max(material, key=lambda x: (x.oncpu_ns, shares[x.tid], -x.tid))
    causes = {k: ns for k, ns in t.by_cause.items() if idle_counted or k[0] not in IDLE_CAUSES}
    if not causes:
        return None, None, max(shares.values())
    top = max(sorted(causes), key=lambda k: causes[k])
    return t, top, max(shares.values())


def _blocked_text(t, cause, share, p99) -> str:
    if t is None:
        return f"blocked p99 {human_us(p99)}"
    part = t.by_cause[cause] / t.wall_ns
    arr = sorted(t.cause_durations.get(cause[0], ()))
    cp99 = ns_to_us(percentile(arr, 99) or 0)
    return (f"{_cause_text(*cause)} are {part:.0%} of {t.comm}'s wall time, p99 {human_us(cp99)} "
            f"(blocked p99 {human_us(p99)})")


def _runq_text(t, share, p99, sig, ropts) -> str:
    if t is None:
        return f"run-queue p99 {human_us(p99)}"
    n = sum(1 for x in sig if x.runq_ns >= ropts.runq_share_long * x.wall_ns)
    many = f" ({n} of {len(sig)} threads above {ropts.runq_share_long:.0%})" if n > 1 else ""
    return (f"run-queue waits are {share:.0%} of {t.comm}'s wall time{many}, "
            f"run-queue p99 {human_us(p99)}")


def _thread_row(t: ThreadTotals) -> dict:
    return {"comm": t.comm, "pid": t.pid, "tid": t.tid,
            "blocked_us": ns_to_us(t.blocked_ns), "runq_us": ns_to_us(t.runq_ns),
            "runq_preempted_us": ns_to_us(t.runq_preempted_ns),
            "oncpu_us": ns_to_us(t.oncpu_ns), "offcpu_us": ns_to_us(t.offcpu_ns),
            "wall_us": ns_to_us(t.wall_ns), "switches": t.switches,
            "inferred_switch_in": t.inferred, "no_wakeup": t.no_wakeup,
            "blocked_by_state_us": {s: ns_to_us(ns) for s, ns in sorted(t.by_state.items())}}


def _top(stacks: dict, n: int) -> list:
    items = sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [(";".join(k), ns_to_us(ns)) for k, ns in items]


def summarize(an: Analysis, ropts: ReportOptions) -> dict:
    """The report as plain data (the JSON of DESIGN.md plus extras), all ``*_us`` integers."""
    threads = sorted((t for t in an.threads.values()),
                     key=lambda t: (-t.offcpu_ns, t.tid))
    totals = {k: ns_to_us(sum(getattr(t, k + "_ns") for t in threads))
              for k in ("blocked", "runq", "runq_preempted", "oncpu", "offcpu")}
    totals = {k + "_us": v for k, v in totals.items()}
    causes: dict = {}
    for t in threads:
        for (cause, _), ns in t.by_cause.items():
            causes[cause] = causes.get(cause, 0) + ns
    blocked, runq = an.durations("blocked"), an.durations("runq")
    return {
        "verdict": verdict(an, ropts),
        "totals": totals,
        "span_us": ns_to_us((an.last_ns or 0) - (an.first_ns or 0)),
        "threads": [_thread_row(t) for t in threads],
        "latency": {"blocked": latency_stats(blocked), "runq": latency_stats(runq)},
        "histograms": {"blocked_us": [list(b) for b in log2_buckets(blocked)],
                       "runq_us": [list(b) for b in log2_buckets(runq)]},
        "causes": [{"cause": c, "blocked_us": ns_to_us(ns), "idle": c in IDLE_CAUSES}
                   for c, ns in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))],
        "top_stacks": [{"kind": kind, "stack": s, "us": us}
                       for kind in ("blocked", "runq")
                       for s, us in _top(an.stacks.get(kind, {}), ropts.top)],
        "top_by_process": [{"process": p, "offcpu_us": ns_to_us(sum(st.values())),
                            "stacks": [{"stack": s, "us": us} for s, us in _top(st, 3)]}
                           for p, st in sorted(an.by_process.items(),
                                               key=lambda kv: (-sum(kv[1].values()), kv[0]))[:ropts.top]],
        "dropped": dict(sorted(an.dropped.items())),
        "per_process_recording": an.per_process,
    }
