"""Off-CPU aggregation: SchedEvent streams -> Intervals -> Profile (folded stacks in µs,
per-thread totals, latency histograms, the analysis for report/json).

Modes (DESIGN.md): ``offcpu`` charges the whole switch-out -> switch-in span (blocked +
run-queue) to the switch-out stack; ``blocked`` and ``runq`` one kind each; ``wakeup``
gives offwaketime's ``target;stack;--;waker stack leaf->root;waker`` weighted by the
blocked time (switch-out -> wakeup). Weights are summed in ns and rounded once to µs;
stacks that round to 0 µs are left out.

Filters: thread filters (``--include-idle``, ``-p``, ``--filter-tid``, ``--comm``) apply
to everything, including the report; ``--state`` and ``-m/-M`` apply to the interval of
the selected kind (in ``offcpu`` mode and for the report: the whole span).
"""
from __future__ import annotations

import re
from typing import Iterable, Optional

from .aggregate import Labeler
from .analysis import Analysis, log2_buckets, ns_to_us
from .errors import OffconvError
from .intervals import intervals
from .model import BLOCKED, KERNEL, ONCPU, RUNQ, Histogram, Interval, Profile, Task
from .options import AggregateOptions

# offcputime's --state bits (the kernel's TASK_REPORT order, as sched_switch prints them)
STATE_BITS = (("S", 1), ("D", 2), ("T", 4), ("t", 8), ("X", 16), ("Z", 32), ("P", 64), ("I", 128))
STATE_LETTERS = "RSDTtXZPIKWN"


def parse_state(text: str) -> frozenset:
    """``--state``: offcputime's bitmask (``0`` = preempted/R, ``2`` = D, ``3`` = S or D)
    or letters (``D``, ``S,D``, ``SD``). Returns the set of prev_state letters to keep."""
    text = text.strip()
    if re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)", text):
        mask = int(text, 0)
        if mask == 0:
            return frozenset("R")
        letters = {c for c, bit in STATE_BITS if mask & bit}
        if not letters or mask >= 256:
            raise OffconvError(f"--state: expected a bitmask of 1..255 or letters, got '{text}'")
        return frozenset(letters)
    letters = set(text.replace(",", "").replace("|", "").replace("+", ""))
    bad = letters - set(STATE_LETTERS)
    if not letters or bad:
        raise OffconvError(f"--state: expected state letters ({STATE_LETTERS}) or a bitmask, "
                           f"got '{text}'")
    return frozenset(letters)


def state_matches(state: str, keep: Optional[frozenset]) -> bool:
    """True when one letter of a prev_state like ``D|K`` or ``R+`` is kept."""
    if keep is None:
        return True
    return any(c in keep for c in state if c not in "|+")


def marker(iv: Interval) -> str:
    """The state-split frame: [run queue], [preempted], [blocked S], ..."""
    if iv.kind == RUNQ:
        return "[preempted]" if iv.state == "R" else "[run queue]"
    return f"[blocked {iv.state}]"


class _Builder:
    def __init__(self, opts: AggregateOptions):
        mode = "offcpu" if opts.mode in ("auto", None) else opts.mode
        if mode not in ("offcpu", "blocked", "runq", "wakeup"):
            raise OffconvError(f"mode {mode} is not an off-CPU mode")
        if opts.user_stacks_only and opts.kernel_stacks_only:
            raise OffconvError("-U/--user-stacks-only and -K/--kernel-stacks-only exclude each other")
        self.opts = opts
        self.mode = mode
        self.split = bool(opts.state_split) and mode == "offcpu"
        self.labeler = Labeler(opts)
        self.comm_re = re.compile(opts.comm) if opts.comm else None
        self.ns: dict = {}
        self.keep_cache: dict = {}
        self.frames_cache: dict = {}
        self.pending: Optional[Interval] = None
        self.pid_from_tid = False
        self.timeline: Optional[list] = [] if opts.timeline else None
        self._start = 0
        self.analysis = Analysis(threads_filtered=bool(
            opts.filter_pids or opts.filter_tids or opts.comm or opts.states))

    # -- thread filters -------------------------------------------------------------
    def keep(self, task: Task) -> bool:
        k = self.keep_cache.get(task)
        if k is None:
            k = self.keep_cache[task] = self._keep(task)
        return k

    def _keep(self, task: Task) -> bool:
        o = self.opts
        if task.tid == 0 and not o.include_idle:
            return False
        if o.filter_pids:
            pid = task.pid
            if pid is None:
                pid = task.tid            # input without pids: -p matches the tid
                self.pid_from_tid = True
            if pid not in o.filter_pids:
                return False
        if o.filter_tids and task.tid not in o.filter_tids:
            return False
        if self.comm_re is not None and not self.comm_re.search(task.comm):
            return False
        return True

    # -- names ----------------------------------------------------------------------
    def frames(self, stack: tuple) -> tuple:
        """Labelled frames root first, with -U/-K/-d applied (cached per stack)."""
        got = self.frames_cache.get(stack)
        if got is not None:
            return got
        o = self.opts
        user = [f for f in stack if f.kind != KERNEL]
        kernel = [f for f in stack if f.kind == KERNEL]
        if o.user_stacks_only:
            kernel = []
        if o.kernel_stacks_only:
            user = []
        got = self.labeler.stack(tuple(user))
        if o.delimited and user and kernel:
            got += ("-",)
        got += self.labeler.stack(tuple(kernel))
        self.frames_cache[stack] = got
        return got

    def _add(self, key: tuple, ns: int) -> None:
        self.ns[key] = self.ns.get(key, 0) + ns
        if self.timeline is not None:
            self.timeline.append((self._start, key, ns))

    # -- the interval stream --------------------------------------------------------
    def feed(self, iv: Interval) -> None:
        if not self.keep(iv.task):
            return
        if iv.kind == ONCPU:
            self.analysis.add_oncpu(iv)
            return
        p = self.pending
        if p is not None:
            self.pending = None
            if (iv.kind == RUNQ and iv.state == "W" and iv.task.tid == p.task.tid
                    and iv.start_ns == p.end_ns):
                self.span(p, iv)
                return
            self.span(p, None)
        if iv.kind == BLOCKED:
            self.pending = iv
        else:
            self.span(None, iv)

    def flush(self) -> None:
        if self.pending is not None:
            self.span(self.pending, None)
            self.pending = None

    def _in_range(self, ns: int) -> bool:
        us = ns // 1000                  # offcputime compares whole µs
        o = self.opts
        return ((o.min_block_us is None or us >= o.min_block_us)
                and (o.max_block_us is None or us <= o.max_block_us))

    def span(self, b: Optional[Interval], r: Optional[Interval]) -> None:
        """One off-CPU period: its blocked part, its run-queue part, or both."""
        first = b or r
        if not state_matches(first.state, self.opts.states):
            return
        self._start = first.start_ns
        total = (b.duration_ns if b else 0) + (r.duration_ns if r else 0)
        thread = self.labeler.thread(first.task)
        frames = self.frames(first.stack)
        in_span = self._in_range(total)
        if in_span:
            self._analyse(b, r, thread, frames)
        mode = self.mode
        if mode == "offcpu":
            if not in_span:
                return
            if self.split:
                for iv in (b, r):
                    if iv is not None:
                        self._start = iv.start_ns
                        self._add((thread, marker(iv)) + frames, iv.duration_ns)
            else:
                self._add((thread,) + frames, total)
        elif mode == "blocked" and b is not None and self._in_range(b.duration_ns):
            self._add((thread,) + frames, b.duration_ns)
        elif mode == "runq" and r is not None and self._in_range(r.duration_ns):
            self._add((thread,) + frames, r.duration_ns)
        elif mode == "wakeup" and b is not None and b.waker is not None \
                and self._in_range(b.duration_ns):
            waker = self.frames(b.waker_stack)[::-1]
            self._add((thread,) + frames + ("--",) + waker
                      + (self.labeler.thread(b.waker),), b.duration_ns)

    def _analyse(self, b, r, thread: str, frames: tuple) -> None:
        key = (thread,) + frames
        pid = (b or r).task.pid
        process = thread if pid is None else f"pid {pid}"
        if b is not None:
            self.analysis.add_blocked(b, key, process)
        if r is not None:
            self.analysis.add_runq(r, key, process)

    # -- the result -------------------------------------------------------------------
    def profile(self) -> Profile:
        samples = {}
        for key, ns in self.ns.items():
            us = ns_to_us(ns)
            if us:
                samples[key] = us
        an = self.analysis
        prof = Profile(unit="us", samples=samples, mode=self.mode, analysis=an,
                       threads=dict(sorted(an.threads.items(), key=lambda kv: str(kv[0]))),
                       dropped=dict(sorted(an.dropped.items())))
        prof.histograms = [
            Histogram("blocked_us", (), "us", log2_buckets(an.durations("blocked"))),
            Histogram("runq_us", (), "us", log2_buckets(an.durations("runq"))),
        ]
        prof.warnings = self.warnings()
        if self.timeline is not None:
            prof.sequence = time_order(self.timeline)
        return prof

    def warnings(self) -> list:
        out = []
        an = self.analysis
        if an.per_process:
            tids = sorted(t.tid for t in an.threads.values() if t.tid)[:4] or ["TID"]
            filt = " || ".join(f"prev_pid == {t} || next_pid == {t}" for t in tids)
            out.append("this looks like a `perf record -p PID` recording: it has the threads' "
                       "switch-outs but not their switch-ins, so off-CPU, run-queue and on-CPU "
                       "durations cannot be measured; only blocked time ended by a wakeup from "
                       "inside the process is shown. Record system-wide with a filter instead: "
                       f"perf record -e sched:sched_switch --filter '{filt}' "
                       "-e sched:sched_wakeup -e sched:sched_wakeup_new -g -a -- sleep 10")
        d = an.dropped
        if d.get("samples"):
            out.append(f"ignored {d['samples']} non-sched events (on-CPU samples) in mode {self.mode}")
        if self.pid_from_tid:
            out.append("-p/--filter-pid: the input carries only thread ids (perf script default "
                       "fields), so -p matched the tid; use perf script -F with pid to match processes")
        for reason, text in (("inferred_switch_in", "switch-ins were missing (the previous "
                              "sched_switch on that CPU was taken, as perf sched timehist does)"),
                             ("no_wakeup", "blocked threads were switched in with no wakeup seen "
                              "(counted blocked until the switch-in)"),
                             ("open", "off-CPU intervals were still open at the end and were "
                              "dropped (--include-open clips them)"),
                             ("out_of_order", "events out of time order were skipped (--lenient)")):
            if d.get(reason):
                out.append(f"{d[reason]} {text}")
        return out


def time_order(timeline: list) -> list:
    """(start_ns, stack, ns) in emission order -> [(stack, µs)] by start time, adjacent
    equal stacks merged before rounding; zero-µs entries dropped."""
    out: list = []
    last, acc = None, 0
    for _, key, ns in sorted(timeline, key=lambda t: (t[0], t[1])):
        if key == last:
            acc += ns
            continue
        if last is not None and ns_to_us(acc):
            out.append((last, ns_to_us(acc)))
        last, acc = key, ns
    if last is not None and ns_to_us(acc):
        out.append((last, ns_to_us(acc)))
    return out


def build_profile(inputs: Iterable[tuple[str, Iterable]], opts: AggregateOptions,
                  lenient: bool = False) -> Profile:
    """Each (path, SchedEvents) input with its own interval state, merged into one Profile.

    ``profile.samples``: folded stacks (thread frame first; with ``opts.state_split`` in
    mode offcpu a ``[blocked S]``/``[run queue]``/``[preempted]`` frame second) -> µs;
    ``profile.threads``: tid -> analysis.ThreadTotals; ``profile.histograms``: blocked and
    run-queue log2 µs; ``profile.analysis``: analysis.Analysis (``summarize`` it with
    ReportOptions); ``profile.warnings``: sentences for stderr."""
    b = _Builder(opts)
    for path, events in inputs:
        stats: dict = {}
        for iv in intervals(events, path, lenient=lenient, stats=stats,
                            include_open=opts.include_open):
            b.feed(iv)
        b.flush()
        b.analysis.add_counts(stats)
    return b.profile()
