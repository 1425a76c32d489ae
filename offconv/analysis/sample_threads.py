"""The report of stacks with per-thread sums and latency histograms from one run (offconv
record's bpftrace backend): ``add_histograms(data, profile, ropts)`` adds to a stack-only
report (offconv.analysis.sample_report) the percentiles and verdict the histograms can
decide, made over an ``Analysis`` of the per-thread sums (``thread_analysis``). May import
the analysis modules below it (sample_report, threads, rules, verdict), offconv.sched and
offconv.model."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from offconv.analysis.lifetimes import TIMED_INFERRED
from offconv.analysis.rules import decide
from offconv.analysis.sample_report import _collect
from offconv.analysis.threads import Analysis
from offconv.analysis.totals import ThreadTotals
from offconv.analysis.verdict import CAUSE_TEXT, verdict
from offconv.model.options import ReportOptions
from offconv.model.records import BLOCKED, ONCPU, TIME_UNITS, Task
from offconv.model.units import human_us, ns_to_us
from offconv.sched import histograms
from offconv.sched.causes import IDLE_CAUSES


def add_histograms(data: dict, profile, ropts: ReportOptions) -> None:
    """Stacks and latency histograms from one run (offconv record's bpftrace backend: a
    run-queue and a blocked histogram plus blocked time by stack and comm): the
    histograms give the percentiles (bucket estimates) and the verdict, which they can
    decide (run queue vs blocked); the stacks give the cause and the threads."""
    if not any(histograms.by_kind(profile.histograms).values()):
        return
    h = histograms.report_data(profile, ropts)
    stacks_verdict = data["verdict"]
    if profile.thread_times and profile.mode == BLOCKED:
        v = _thread_verdict(data, profile, ropts, h["verdict"])
        data.update(source="histograms+threads", verdict=v, stacks_verdict=stacks_verdict,
                    latency=h["latency"], shape=h["shape"], histograms=h["histograms"],
                    kind_assumed=h["kind_assumed"])
        return
    v = dict(h["verdict"])
    v["cause"] = stacks_verdict["cause"]
    v.setdefault("uncertain", False)
    for k in ("workload", "threads_considered", "left_out"):
        v.setdefault(k, stacks_verdict[k])
    if stacks_verdict["cause"] is not None and v["answer"] in ("waiting", "both"):
        c = stacks_verdict["cause"]
        v["reason"] += (f"; the stacks: most latency time of {c['comm']} is in "
                        f"{CAUSE_TEXT[c['cause']]}{' (' + c['label'] + ')' if c['label'] else ''} "
                        f"({human_us(c['us'])}): {c['next_step']}")
    v["source"] = "histograms+stacks"
    data.update(source="histograms+stacks", verdict=v, stacks_verdict=stacks_verdict,
                latency=h["latency"], shape=h["shape"], histograms=h["histograms"],
                kind_assumed=h["kind_assumed"])


def thread_analysis(profile):
    """An Analysis of per-thread sums: the ThreadTime records (on-CPU and run-queue time)
    and the blocked stacks keyed by thread (their causes), joined by tid. It holds no single
    waits (the kernel summed them): no percentile, and no thread is a one-off sleep."""
    scale_ns = TIME_UNITS[profile.unit]
    an = Analysis()
    rows: dict = {}

    timer: dict = {}   # tid -> (blocked ns ended by a timer, how many waits or None)
    comms: dict = {}   # tid -> {comm: ns}: a thread's name is the one it had longest (a
    #                    child of a shell queues as `sh`, then runs as what it exec'd)

    def get(task, ns):
        tt = rows.get(task.tid)
        if tt is None:
            tt = rows[task.tid] = ThreadTotals(task)
        elif tt.pid is None and task.pid is not None:
            tt.pid = task.pid
        c = comms.setdefault(task.tid, {})
        c[task.comm] = c.get(task.comm, 0) + ns
        return tt
    threads, _, _ = _collect(profile)
    for t in threads:
        if t.tid is None:
            continue
        tt = get(Task(t.comm, t.pid, t.tid), int(t.weight * scale_ns + 0.5))
        for c, w in t.by_cause.items():
            ns = int(w * scale_ns + 0.5)
            tt.by_cause[c] = tt.by_cause.get(c, 0) + ns
            tt.blocked_ns += ns
    for r in profile.thread_times:
        if r.task.tid is None or r.task.tid == 0:
            continue
        ns = r.value * TIME_UNITS.get(r.unit, 1)
        tt = get(r.task, ns)
        if r.kind == ONCPU:
            tt.oncpu_ns += ns
        elif r.kind == BLOCKED:     # (timer: the blocked time itself is the stacks')
            t_ns, t_n = timer.get(r.task.tid, (0, 0))
            timer[r.task.tid] = (t_ns + ns, None if t_n is None or r.count is None
                                 else t_n + r.count)
        else:
            tt.runq_ns += ns
            if r.idle:
                tt.runq_idle_ns += ns
    for tid, (t_ns, t_n) in timer.items():
        if tid in rows:
            _timed_lock(rows[tid], t_ns, t_n)
    for tid in sorted(rows):
        c = comms[tid]
        rows[tid].comm = max(sorted(c), key=lambda k: c[k])
        an.threads[tid] = rows[tid]
    return an


# a thread that runs this share of its wall time, and whose futex waits are released by
# others for at least RELEASED_SHARE of them, is contending even where most of them time out
TIMED_RUN_SHARE = 0.05


RELEASED_SHARE = 0.25


# ... and whose waits ended by a timer are short on average (where the map counts them): a
# retry's timeout (the GIL's 5 ms), not a worker's wait for work (50 ms, 1 s)
RETRY_MAX_NS = 10_000_000


def _timed_lock(tt, timer_ns: int, timer_n: Optional[int] = None) -> None:
    """A thread's futex (lock) waits that mostly ended by a timer are timed waits -- a
    worker's or a daemon's wait for work with a timeout, idle-like -- as on the perf path
    (causes.WAKER_RULES, per wait there; per thread here: ``timer_ns`` is all of its blocked
    time ended by a timer, of which what its sleeps and idle waits hold is taken to be
    theirs). Except a thread that also runs (TIMED_RUN_SHARE of its wall time) and whose
    lock is released by others for RELEASED_SHARE of its wait: a contended lock whose
    waiter wakes on a timeout to retry (CPython's GIL waits 5 ms, then asks the holder to
    drop it), its timeouts short (RETRY_MAX_NS on average, where ``timer_n`` counts them):
    latency, a lock."""
    lock = sum(ns for c, ns in tt.by_cause.items() if c[0] == "lock")
    if not lock:
        return
    other = sum(ns for c, ns in tt.by_cause.items() if c[0] in ("sleep", "poll/idle"))
    timed = min(lock, max(0, timer_ns - other))
    released = lock - timed
    if timed <= released:
        return
    short = not timer_n or timer_ns / timer_n < RETRY_MAX_NS
    if (tt.wall_ns and tt.oncpu_ns >= TIMED_RUN_SHARE * tt.wall_ns
            and released >= RELEASED_SHARE * lock and short):
        return
    for c in [c for c in tt.by_cause if c[0] == "lock"]:
        tt.by_cause[TIMED_INFERRED] = tt.by_cause.get(TIMED_INFERRED, 0) + tt.by_cause.pop(c)


def _thread_verdict(data: dict, profile, ropts: ReportOptions, hv: dict) -> dict:
    """The sched verdict (offconv.analysis.verdict: shares of each thread's wall time, the workload's
    scope, causes) over the per-thread sums; the p99s are the histograms' bucket estimates
    (over every recorded wait: idle ones too), shown, not decided on. Fills the threads'
    on-CPU and run-queue time and the totals in ``data``."""
    an = thread_analysis(profile)
    d = decide(an, ropts)
    # the run-queue p99 is the histogram's; the blocked histogram holds every wait, idle
    # ones too (a daemon's 1 s timeouts): no blocked p99 is said of the workload
    d = replace(d, runq_p99_us=hv.get("runq_p99_us"), blocked_p99_us=None, cause_p99_us=None)
    v = verdict(an, ropts, d)
    v["reason"] += (" (in-kernel sums per thread; the run-queue p99 is a bucket estimate over "
                    "every recorded wait)")
    v["source"] = "histograms+threads"
    by_tid = {tid: t for tid, t in an.threads.items()}
    # one row a thread (the stacks' rows are per name: a child of a shell blocks as `sh`
    # before its exec, as itself after), with its sums; rows without a tid stay as they are
    old: dict = {}
    for row in data["threads"]:
        old.setdefault(row.get("tid"), []).append(row)
    rows = old.pop(None, [])

    def us(ns):
        return ns_to_us(int(ns))
    for tid, t in by_tid.items():
        mine = old.get(tid, [])
        wk: dict = {}
        for r in mine:
            for k, v2 in r["wakers_us"].items():
                wk[k] = wk.get(k, 0) + v2
        rows.append({
            "comm": t.comm, "pid": t.pid, "tid": tid, "blocked_us": us(t.blocked_ns),
            "runq_us": us(t.runq_ns), "runq_preempted_us": None,
            "preempted_stacks_us": sum(r["preempted_stacks_us"] for r in mine),
            "oncpu_us": us(t.oncpu_ns), "offcpu_us": us(t.offcpu_ns), "switches": None,
            "stacks": sum(r["stacks"] for r in mine),
            "latency_us": us(sum(ns for c, ns in t.by_cause.items() if c[0] not in IDLE_CAUSES)),
            "by_cause_us": {f"{c} ({lb})" if lb else c: us(ns) for (c, lb), ns in
                            sorted(t.by_cause.items(), key=lambda kv: (-kv[1], kv[0])) if us(ns)},
            "wakers_us": dict(sorted(wk.items(), key=lambda kv: (-kv[1], kv[0])))})
    rows.sort(key=lambda r: (-(r["offcpu_us"] or 0), r["comm"], r["tid"] or -1))
    data["threads"] = rows
    ts = list(by_tid.values())
    data["totals"].update(oncpu_us=ns_to_us(sum(t.oncpu_ns for t in ts)),
                          runq_us=ns_to_us(sum(t.runq_ns for t in ts)),
                          blocked_us=ns_to_us(sum(t.blocked_ns for t in ts)),
                          offcpu_us=ns_to_us(sum(t.offcpu_ns for t in ts)))
    return v
