"""The report of a stack-only input: samples with weights, no sched events.

Inputs: bcc ``offcputime -f`` and ``offwaketime -f`` folded files, bpftrace stack-keyed
maps (``@[kstack, comm]: usecs``), ``perf record --off-cpu`` (``offcpu-time`` events),
plain folded files and on-CPU samples. ``report_data(profile, ropts, label)`` returns the
same top-level keys as ``summary.summarize`` (``verdict``, ``totals``, ``threads``,
``latency``, ``causes``, ``top_stacks``, ...), with ``source = "stacks"``.

What such an input can measure, and what it cannot:

- **Off-CPU weights** (``Profile.mode`` offcpu / wakeup: bcc, bpftrace, perf --off-cpu)
  are switch-out -> switch-in time: blocked time *plus* the run-queue wait after the
  wakeup, summed per stack by the tool. So blocked and run-queue time cannot be
  separated (``totals.blocked_us`` and ``runq_us`` are null, ``offcpu_us`` is the sum),
  on-CPU time is not measured (null), and no percentile can be computed (the intervals
  were summed in the kernel: ``latency`` is all null). One exception is measured: a
  stack that switched out through a preemption point (``preempt_schedule*``,
  ``_cond_resched``) was runnable the whole time, so its time is run queue
  (``preempted_stacks_us``, a lower bound of the run-queue time where the tool records
  preemptions at all: bpftrace scripts filtering ``prev_state != 0`` and perf's
  ``--off-cpu`` do not, so ``runq_preempted_us`` stays null).
  With ``--kind blocked`` (mode blocked) or ``--kind runq`` the weights are that kind.
- **Causes** come from ``causes.classify`` on the kernel frames of each stack (bcc puts
  them after the ``-`` delimiter; offwaketime's target part is before ``--``). A folded
  file without annotations does not say which frames are kernel frames: then every frame
  is read as one (bcc ``offcputime -K -f`` writes kernel frames only).
- **Threads**: the THREAD frame (comm, pid/tid where the input has them); a plain folded
  line without one is named by its first frame (stackcollapse and bcc put the comm
  there); a bpftrace map keyed by a stack alone names no thread: one row ``(all)``.
- **Wakers** (offwaketime): the waker comm, the THREAD frame after ``--``.
- **Verdict** (``verdict.source = "stacks"``): the run-queue part is inside every number,
  so capacity cannot be decided. The answer is ``waiting`` when latency causes (not
  poll/idle, not child waits) hold most (``LATENCY_MAJORITY``) of the off-CPU time of the
  workload's heaviest thread and at least ``blocked_p99_long_us`` in total (the
  recording's length is unknown, so shares are of off-CPU time, not of wall time);
  otherwise ``on-cpu`` with ``runq_long`` null and the reason saying capacity is
  undecided -- as the sched verdict does for a ``perf record -p`` recording.
- **On-CPU samples** (unit ``samples``): the answer is ``on-cpu`` by construction: an
  on-CPU profile holds no off-CPU time, so no quantity of the off-CPU report is measured
  (all null); the report gives samples per thread and the top stacks, and says to record
  sched events for waits. When most of the weight is in stacks that end in the scheduler
  (switch-out stacks), the weights are probably off-CPU time whose unit the file does not
  say (offcputime without ``-d``, a bpftrace ``@[kstack]`` map): the reason says to give
  ``--unit us``.
"""
from __future__ import annotations

import re

from offconv.sched.causes import _INFRA, IDLE_CAUSES, RUNTIME_COMM, Classifier, runtime_wait
from offconv.model.records import KERNEL, MARKER, OFFCPU, ONCPU, RUNQ, STATE, THREAD, TIME_UNITS, USER, WAKER_DELIMITER, WAKEUP, BLOCKED, CLOCK_EVENTS
from offconv.model.options import ReportOptions
from offconv.model.units import human_us, ns_to_us
from offconv.analysis.rules import TRACER, material_groups
from offconv.analysis.verdict import CAUSE_TEXT, fix_for

LATENCY_MAJORITY = 0.5     # latency causes hold this share of a thread's off-CPU time
SCHED_LEAF_SHARE = 0.5     # on-CPU samples: this much weight in switch-out stacks -> hint
UNKNOWN_COMM = "(all)"
_PREEMPT = re.compile(r"^(preempt_schedule\w*|_?_?cond_resched|retint_kernel|"
                      r"exit_to_user_mode_loop|irqentry_exit\w*)$")
_SCHED_LEAF = re.compile(r"^(__schedule|schedule|schedule_\w+|io_schedule\w*|"
                         r"preempt_schedule\w*|finish_task_switch\w*|__cond_resched)$")
_IDLE_COMM = re.compile(r"^swapper(/\d+)?$")


def _scale_us(unit: str):
    """weight -> µs (float) for a time unit, None for samples."""
    ns = TIME_UNITS.get(unit)
    return None if ns is None else ns / 1000.0


def _us(x: float) -> int:
    return int(x + 0.5)


def _split(stack: tuple):
    """(task or None, comm, target frames, waker comm or None) of one stack."""
    frames = list(stack)
    task = None
    comm = None
    if frames and frames[0].kind == THREAD:
        task = frames[0].task
        comm = task.comm if task is not None else frames[0].name
        frames = frames[1:]
    frames = [f for f in frames if f.kind != STATE]
    waker = None
    if WAKER_DELIMITER in frames:
        i = frames.index(WAKER_DELIMITER)
        rest = frames[i + 1:]
        frames = frames[:i]
        if rest and rest[-1].kind == THREAD:
            waker = rest[-1].task.comm if rest[-1].task is not None else rest[-1].name
    if comm is None:
        if len(frames) > 1 and frames[0].kind == USER and not any(
                f.kind in (KERNEL, MARKER) for f in frames):
            comm = frames[0].name          # plain folded: the first frame is the comm
            frames = frames[1:]
        else:
            comm = UNKNOWN_COMM
    return task, comm, frames, waker


def _kernel_view(frames: list) -> tuple:
    """The frames to classify: the kernel frames; all frames when none is marked."""
    if any(f.kind == KERNEL for f in frames):
        return tuple(f for f in frames if f.kind == KERNEL)
    if any(f.kind == MARKER for f in frames):
        return ()
    return tuple(f._replace(kind=KERNEL) for f in frames if f.kind == USER)


def _preempted(kernel: tuple) -> bool:
    """The switch-out went through a preemption point (leaf-most frames past __schedule)."""
    for f in reversed(kernel):
        name = f.name.split(".", 1)[0].split("+", 1)[0]
        if _PREEMPT.match(name):
            return True
        if not _INFRA.match(name):
            return False
    return False


def _sched_leaf(frames: list) -> bool:
    for f in reversed(frames):
        if f.kind in (USER, KERNEL):
            return bool(_SCHED_LEAF.match(f.name.split(".", 1)[0].split("+", 1)[0]))
    return False


class _Thread:
    __slots__ = ("comm", "pid", "tid", "weight", "by_cause", "preempted", "wakers", "stacks")

    def __init__(self, comm, pid, tid):
        self.comm, self.pid, self.tid = comm, pid, tid
        self.weight = 0.0
        self.by_cause: dict = {}      # (cause, label) -> weight
        self.preempted = 0.0
        self.wakers: dict = {}        # waker comm -> weight
        self.stacks = 0

    def latency(self) -> float:
        return sum(w for c, w in self.by_cause.items() if c[0] not in IDLE_CAUSES)

    def key(self):
        return (-self.weight, self.comm, -1 if self.tid is None else self.tid)


def _collect(profile):
    classify = Classifier()
    threads: dict = {}
    sched_leaf = 0.0
    unmarked = False
    for stack, w in profile.samples.items():
        task, comm, frames, waker = _split(stack)
        key = (comm, None, None) if task is None else (comm, task.pid, task.tid)
        t = threads.get(key)
        if t is None:
            t = threads[key] = _Thread(*key)
        t.weight += w
        t.stacks += 1
        kernel = _kernel_view(frames)
        if kernel and not any(f.kind == KERNEL for f in frames):
            unmarked = True
        if _preempted(kernel):
            t.preempted += w
        cause = classify(kernel) if kernel else ("other", "")
        if comm and RUNTIME_COMM.match(comm):
            cause = runtime_wait(cause)   # a JVM's GC, JIT or VM thread waits for work
        t.by_cause[cause] = t.by_cause.get(cause, 0) + w
        if waker is not None:
            t.wakers[waker] = t.wakers.get(waker, 0) + w
        if _sched_leaf(frames):
            sched_leaf += w
    return sorted(threads.values(), key=_Thread.key), sched_leaf, unmarked


def _top(profile, n: int, label, scale) -> list:
    """The n heaviest stacks as printed: the threads whose stacks print the same (threads
    of one name, without --pid/--tid) are summed first, so a printed stack is listed once."""
    by_label: dict = {}
    for k, w in profile.samples.items():
        name = label(k) + (";[no call chain]" if len(k) == 1 and k[0].kind == THREAD else "")
        by_label[name] = by_label.get(name, 0) + w
    items = sorted(by_label.items(), key=lambda kv: (-kv[1], kv[0]))
    out = []
    for s, w in items:
        if scale is not None and not _us(w * scale):
            continue
        out.append({"kind": profile.mode, "stack": s,
                    "us": None if scale is None else _us(w * scale),
                    **({} if scale is not None else {"samples": _num(w)})})
        if len(out) == n:
            break
    return out


def _num(w):
    return int(w) if float(w).is_integer() else round(w, 3)


def _null_latency() -> dict:
    return {k: {"count": None, "p50_us": None, "p90_us": None, "p99_us": None, "max_us": None}
            for k in ("blocked", "runq")}


def _thresholds(ropts: ReportOptions) -> dict:
    return {"runq_p99_long_us": ropts.runq_p99_long_us,
            "runq_share_long": ropts.runq_share_long,
            "blocked_p99_long_us": ropts.blocked_p99_long_us,
            "blocked_share_long": ropts.blocked_share_long,
            "workload_share": ropts.workload_share,
            "latency_majority": LATENCY_MAJORITY}


def _what(mode: str) -> str:
    return {OFFCPU: "off-CPU time (switch-out to switch-in: blocked plus run queue)",
            WAKEUP: "off-CPU time by target and waker stacks (blocked plus run queue)",
            BLOCKED: "blocked time (--kind blocked)",
            "critical-path": "blocked time along the wake-up chain (--mode critical-path)",
            RUNQ: "run-queue time (--kind runq)"}.get(mode, mode)


def _who(t) -> str:
    if t.tid is not None:
        return f"{t.comm} (tid {t.tid})"
    return t.comm


def _scope(threads: list, ropts: ReportOptions, scale: float):
    left, kept = [], []
    for t in threads:
        if TRACER.match(t.comm):
            left.append((t, "the recorder itself"))
        elif _IDLE_COMM.match(t.comm) or t.tid == 0:
            left.append((t, "the idle task"))
        elif not t.latency() and not t.preempted:
            left.append((t, "idle waits only (poll/epoll, timed waits, waiting for work, "
                            "child processes)"))
        else:
            kept.append(t)
    groups: dict = {}
    for t in kept:
        groups.setdefault(t.comm, []).append(t)
    rows = sorted(((c, ts, sum(t.latency() + t.preempted for t in ts))
                   for c, ts in groups.items()), key=lambda g: (-g[2], g[0]))
    work, small = material_groups(rows, ropts.workload_share)
    for _, ts, share in small:
        left.extend((t, f"small: {share:.1%} of the latency-relevant time") for t in ts)
    return work, left


def _stack_verdict(threads: list, mode: str, ropts: ReportOptions, scale: float) -> dict:
    work, left = _scope(threads, ropts, scale)
    ts = [t for _, g, _ in work for t in g]
    base = {"answer": None, "reason": None, "uncertain": False, "runq_long": None, "blocked_long": None,
            "runq_share": None, "blocked_share": None, "runq_p99_us": None,
            "blocked_p99_us": None, "idle_wakeup_us": None, "cause": None,
            "idle_waits_counted": False,
            "workload": [{"comm": c, "tids": sorted(t.tid for t in g if t.tid is not None),
                          "threads": len(g),
                          "busy_us": _us(b * scale)} for c, g, b in work],
            "threads_considered": sorted(t.tid for t in ts if t.tid is not None),
            "left_out": [{"comm": t.comm, "tid": t.tid, "reason": r} for t, r in left],
            "thresholds": _thresholds(ropts), "source": "stacks"}
    assumed = (f"assumed: the weights are {_what(mode)}, summed per stack by the tool; "
               "not measured: the run-queue/blocked split, on-CPU time, the recording's "
               "length (shares are of off-CPU time, not of wall time) and percentiles "
               "(no single intervals)")
    if mode == RUNQ:
        assumed = ("assumed: the weights are run-queue time (--kind runq); not measured: "
                   "blocked and on-CPU time, percentiles (no single intervals)")
    if not ts:
        return {**base, "answer": "on-cpu", "uncertain": True,
                "reason": ("no workload thread has latency waits (only idle waits, the "
                           "idle task or the recorder): nothing here says the threads "
                           "wait for anything but work; capacity cannot be decided from "
                           f"stacks alone ({assumed}).")}
    if mode == RUNQ:
        t = max(ts, key=lambda x: (x.weight, x.comm))
        total = sum(x.weight for x in ts)
        long_ = total * scale >= ropts.runq_p99_long_us
        return {**base, "answer": "capacity" if long_ else "on-cpu", "runq_long": long_,
                "reason": (f"run-queue time {human_us(_us(total * scale))} in the workload "
                           f"(most: {_who(t)} {human_us(_us(t.weight * scale))}); "
                           f"{assumed}.")}
    t = max(ts, key=lambda x: (x.latency(), x.weight, x.comm))
    lat = t.latency()
    share = lat / t.weight if t.weight else 0.0
    lat_causes = {c: w for c, w in t.by_cause.items() if c[0] not in IDLE_CAUSES}
    cause = max(sorted(lat_causes), key=lambda c: lat_causes[c]) if lat_causes else None
    waiting = share >= LATENCY_MAJORITY and lat * scale >= ropts.blocked_p99_long_us
    verdict = {**base, "blocked_long": waiting, "blocked_share": None}
    pre = ""
    if t.preempted:
        pre = (f"; {human_us(_us(t.preempted * scale))} of it in preemption stacks "
               "(run queue, a lower bound)")
    if cause is not None:
        wk = t.wakers
        waker = max(sorted(wk), key=lambda w: wk[w]) if wk else None
        verdict["cause"] = {"cause": cause[0], "label": cause[1], "comm": t.comm,
                            "tid": t.tid, "share_of_thread": None,
                            "share_of_offcpu": round(lat_causes[cause] / t.weight, 4),
                            "us": _us(lat_causes[cause] * scale), "p99_us": None,
                            "woken_by": waker, "next_step": fix_for(cause)}
    ctext = "" if cause is None else (
        f", most in {CAUSE_TEXT[cause[0]]}{' (' + cause[1] + ')' if cause[1] else ''}"
        f" {human_us(_us(lat_causes[cause] * scale))}")
    woke = ""
    if verdict["cause"] and verdict["cause"]["woken_by"]:
        woke = f", woken by {verdict['cause']['woken_by']}"
    head = (f"{_who(t)}: {share:.0%} of its {human_us(_us(t.weight * scale))} off-CPU "
            f"is in latency waits{ctext}{woke}{pre}")
    if waiting:
        fix = fix_for(cause)
        verdict["answer"] = "waiting"
        verdict["reason"] = (f"{head}: {fix}; capacity cannot be decided (run-queue time "
                             f"is inside these numbers) ({assumed}).")
    else:
        why = ("latency waits are not most of its off-CPU time" if share < LATENCY_MAJORITY
               else f"latency waits total less than {human_us(ropts.blocked_p99_long_us)}")
        verdict["answer"] = "on-cpu"
        verdict["uncertain"] = True
        verdict["reason"] = (f"{head}: {why}; capacity cannot be decided from stacks "
                             "(record sched events: offconv record, or perf record -e "
                             f"sched:sched_switch -e sched:sched_wakeup -g -a) ({assumed}).")
    return verdict


def _oncpu_report(profile, ropts: ReportOptions, label, threads, sched_leaf) -> dict:
    total = sum(t.weight for t in threads)
    reason = ("no off-CPU time in an on-CPU profile: the answer is on-cpu by construction; "
              "record sched events for waits (offconv record, or perf record -e "
              "sched:sched_switch -e sched:sched_wakeup -g -a)")
    hint = None
    if total and sched_leaf / total >= SCHED_LEAF_SHARE:
        hint = (f"{sched_leaf / total:.0%} of the weight is in stacks that end in the "
                "scheduler (switch-out stacks): if the weights are off-CPU time (bcc "
                "offcputime -f without -d, a bpftrace sum over kstack), give --unit us "
                "(or ms/ns)")
        reason += f"; but {hint}"
    totals = {k: None for k in ("blocked_us", "runq_us", "runq_preempted_us",
                                "oncpu_us", "offcpu_us")}
    # samples weighted by a clock event's period (ns) sum to on-CPU time, which the text
    # says ("11.9 s on CPU"); other weights (counts, cycles) measure no time: null
    clock = profile.event.split(":", 1)[0] in CLOCK_EVENTS

    def oncpu_us(weight):
        return ns_to_us(int(weight)) if clock else None
    totals["oncpu_us"] = oncpu_us(total)
    return {
        "source": "stacks",
        "verdict": {"answer": "on-cpu", "reason": reason + ".", "uncertain": hint is not None,
                    "by_construction": True, "runq_long": None, "blocked_long": None,
                    "runq_share": None, "blocked_share": None, "runq_p99_us": None,
                    "blocked_p99_us": None, "idle_wakeup_us": None, "cause": None,
                    "idle_waits_counted": False, "workload": [], "threads_considered": [],
                    "left_out": [], "thresholds": _thresholds(ropts), "source": "stacks"},
        # event: the perf event whose period each sample weighs ("" when each counts 1)
        "weights": {"unit": profile.unit, "measures": profile.mode, "samples": _num(total),
                    "event": profile.event},
        "totals": {**totals, "samples": _num(total)},
        "span_us": None,
        "threads": [{"comm": t.comm, "pid": t.pid, "tid": t.tid, **{k: None for k in (
                     "blocked_us", "runq_us", "runq_preempted_us")},
                     "oncpu_us": oncpu_us(t.weight), "offcpu_us": None,
                     "switches": None, "samples": _num(t.weight),
                     "share": round(t.weight / total, 4) if total else 0.0}
                    for t in threads],
        "latency": _null_latency(),
        "causes": [],
        "top_stacks": _top(profile, ropts.top, label, None),
        "wakers": [],
        "dropped": {},
    }


def report_data(profile, ropts: ReportOptions, label) -> dict:
    """The report of a stack-only profile (see the module docstring)."""
    threads, sched_leaf, unmarked = _collect(profile)
    scale = _scale_us(profile.unit)
    if scale is None or profile.mode == ONCPU:
        return _oncpu_report(profile, ropts, label, threads, sched_leaf)
    mode = profile.mode
    total = sum(t.weight for t in threads)
    split = mode == BLOCKED or mode == RUNQ

    def us(w):
        return _us(w * scale)

    def row(t):
        off = us(t.weight)
        return {"comm": t.comm, "pid": t.pid, "tid": t.tid,
                "blocked_us": off if mode == BLOCKED else None,
                "runq_us": off if mode == RUNQ else None,
                "runq_preempted_us": None, "preempted_stacks_us": us(t.preempted),
                "oncpu_us": None, "offcpu_us": None if split else off,
                "switches": None, "stacks": t.stacks,
                "latency_us": us(t.latency()) if mode != RUNQ else None,
                "by_cause_us": {f"{c} ({l})" if l else c: us(w) for (c, l), w in
                                sorted(t.by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
                                if us(w)} if mode != RUNQ else {},
                "wakers_us": {w: us(v) for w, v in sorted(t.wakers.items(),
                                                          key=lambda kv: (-kv[1], kv[0]))}}
    preempted = sum(t.preempted for t in threads)
    totals = {"blocked_us": us(total) if mode == BLOCKED else None,
              "runq_us": us(total) if mode == RUNQ else None,
              "runq_preempted_us": None,
              "oncpu_us": None, "offcpu_us": None if split else us(total),
              "preempted_stacks_us": us(preempted)}
    causes: dict = {}
    for t in threads:
        for (c, _), w in t.by_cause.items():
            causes[c] = causes.get(c, 0) + w
    wakers: dict = {}
    for t in threads:
        for w, v in t.wakers.items():
            wakers[w] = wakers.get(w, 0) + v
    notes = []
    if unmarked:
        notes.append("the input does not mark kernel frames: causes are read from every "
                     "frame (bcc offcputime -K -f writes kernel frames only)")
    if any(t.comm == UNKNOWN_COMM for t in threads):
        notes.append("the input names no thread (a map keyed by a stack alone): one row "
                     f"{UNKNOWN_COMM}; key the map by comm too (@[kstack, comm])")
    return {
        "source": "stacks",
        "verdict": _stack_verdict(threads, mode, ropts, scale),
        "weights": {"unit": profile.unit, "measures": mode, "what": _what(mode)},
        "totals": totals,
        "span_us": None,
        "threads": [row(t) for t in threads],
        "latency": _null_latency(),
        "causes": [] if mode == RUNQ else [
            {"cause": c, "blocked_us": us(w) if mode == BLOCKED else None,
             "offcpu_us": us(w), "idle": c in IDLE_CAUSES}
            for c, w in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])) if us(w)],
        "top_stacks": _top(profile, ropts.top, label, scale),
        "wakers": [{"comm": w, "us": us(v)} for w, v in
                   sorted(wakers.items(), key=lambda kv: (-kv[1], kv[0]))][:ropts.top],
        "dropped": {},
        "notes": notes,
    }


