"""Off-CPU aggregation: SchedEvent streams -> Periods -> Profile (stacks in µs,
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

from offconv.model.states import parse_state, state_matches  # noqa: F401 (parse_state: the CLI's)
from offconv.run.aggregate import PID_FROM_TID
from offconv.run.events import kept as kept_events
from offconv.run.wallclock import Samples
from offconv.analysis.threads import Analysis
from offconv.sched.critical import Lanes, Paths, chain_stack
from offconv.model.errors import OffconvError
from offconv.sched.intervals import drive
from offconv.model.inttable import IntTable
from offconv.model.records import BLOCKED, CRITICAL, DELIMITER, KERNEL, THREAD, OFFCPU, OFFCPU_MODES, ONCPU_FRAME, PREEMPTED_FRAME, RUNQ, RUNQ_FRAME, WALLCLOCK, WAKER_DELIMITER, WAKEUP, Frame, Histogram, OnCpu, Period, Profile, Sample, Task, blocked_frame, thread_frame
from offconv.model.options import AggregateOptions
from offconv.model.units import ns_to_us

def runq_frame(p: Period) -> Frame:
    return PREEMPTED_FRAME if p.preempted else RUNQ_FRAME


class _Builder:
    def __init__(self, opts: AggregateOptions):
        mode = OFFCPU if opts.mode in ("auto", None) else opts.mode
        if mode not in OFFCPU_MODES and mode != WALLCLOCK:
            raise OffconvError(f"mode {mode} is not an off-CPU mode")
        if opts.user_stacks_only and opts.kernel_stacks_only:
            raise OffconvError("-U/--user-stacks-only and -K/--kernel-stacks-only exclude each other")
        self.opts = opts
        self.analyse = opts.analyse
        self.mode = mode
        self.split = (bool(opts.state_split) and mode == OFFCPU) or mode == WALLCLOCK
        self.wall = Samples(self) if mode == WALLCLOCK else None   # --mode wallclock's samples
        self.events: list = []           # --to perfetto: the sched events (run.events)
        self.comm_re = re.compile(opts.comm) if opts.comm else None
        self.ns: dict = {}
        self.keep_cache: dict = {}
        self.frames_cache: dict = {}
        self.threads: dict = {}
        self.pid_from_tid = False
        self.final_comm: dict = {}   # tid -> the thread's last name (--comm matches it)
        self.pid_of: dict = {}       # tid -> its process, where the input shows it (-p)
        self.timeline: Optional[list] = [] if opts.timeline else None
        # (task, start_ns, end_ns, stack) of every part added and every on-CPU span
        self.periods: Optional[list] = [] if opts.timeline else None
        self._start = 0
        self.analysis = Analysis(threads_filtered=bool(
            opts.filter_pids or opts.filter_tids or opts.comm or opts.states))
        # every thread's intervals, the filtered-out ones too (a waker may be one)
        self.lanes = self.analysis.lanes = Lanes() if (opts.analyse and opts.critical) or mode == CRITICAL else None
        # one thread frame per thread name where the output prints the name alone and no
        # filter needs the thread: the sums are then per printed stack (rounded once, as
        # DESIGN.md says), and nothing here grows with the threads the input had
        self.by_name = (opts.by_name and self.timeline is None
                        and not (opts.filter_pids or opts.filter_tids or opts.comm))
        if self.by_name:
            self.keep = self._keep_any
            self.thread = self._thread_by_name
        if (mode == OFFCPU and not self.analyse and self.timeline is None
                and opts.states is None and opts.min_block_us is None
                and opts.max_block_us is None):
            # off-CPU time by stack, nothing else kept: the fast way
            self.feed = self._feed_parts if self.split else self._feed_span

    # -- thread filters -------------------------------------------------------------
    def keep(self, task: Task) -> bool:
        k = self.keep_cache.get(task)
        if k is None:
            k = self.keep_cache[task] = self._keep(task)
        return k

    def _keep_any(self, task: Task) -> bool:
        """keep() without a thread filter: every thread but the idle task's (pid 0)."""
        return task.tid != 0 or self.opts.include_idle

    def _keep(self, task: Task) -> bool:
        o = self.opts
        if task.tid == 0 and not o.include_idle:
            return False
        if o.filter_pids:
            pid = task.pid if task.pid is not None else self.pid_of.get(task.tid)
            if pid is None:
                pid = task.tid            # input without pids: -p matches the tid
                self.pid_from_tid = True
            if pid not in o.filter_pids:
                return False
        if o.filter_tids and task.tid not in o.filter_tids:
            return False
        if self.comm_re is not None and not self.comm_re.search(
                self.final_comm.get(task.tid, task.comm)):
            return False
        return True

    def learn(self, records: list) -> None:
        """Before filtering one input: each thread's final name (``--comm`` selects threads
        by the name they end with, so a fork->exec period under the parent's name stays)
        and its process where any event shows it (``-p`` then keeps all of its records)."""
        self.keep_cache.clear()
        self.final_comm.clear()
        for rec in records:
            t = rec.task
            if t is None:   # a sample without a thread (folded, --mode wallclock): no name
                continue
            self.final_comm[t.tid] = t.comm
            if t.pid is not None:
                self.pid_of[t.tid] = t.pid

    # -- stacks ---------------------------------------------------------------------
    def frames(self, stack: tuple) -> tuple:
        """Frames root first, with -U/-K/-d applied (cached per stack)."""
        got = self.frames_cache.get(stack)
        if got is not None:
            return got
        o = self.opts
        user = tuple(f for f in stack if f.kind != KERNEL)
        kernel = tuple(f for f in stack if f.kind == KERNEL)
        if o.user_stacks_only:
            kernel = ()
        if o.kernel_stacks_only:
            user = ()
        got = user + ((DELIMITER,) if o.delimited and user and kernel else ()) + kernel
        if got == stack:
            got = stack                  # one tuple per stack, not two equal ones
        self.frames_cache[stack] = got
        return got

    def thread(self, task: Task) -> Frame:
        f = self.threads.get(task)
        if f is None:
            f = self.threads[task] = thread_frame(task)
        return f

    def _thread_by_name(self, task: Task) -> Frame:
        """thread() under ``by_name``: the frame of the first thread seen with this name
        stands for every thread of that name (the output prints the name alone)."""
        f = self.threads.get(task.comm)
        if f is None:
            f = self.threads[task.comm] = thread_frame(task)
        return f

    def adopt(self, key: tuple) -> tuple:
        """A key of another builder's sums (offconv.run.sched_split's second part) as this
        builder makes it: under ``by_name``, its thread frames (the thread's; in mode
        wakeup, the waker's too, last) are this builder's of that name."""
        if not self.by_name:
            return key
        threads = self.threads
        key = (threads.setdefault(key[0].name, key[0]),) + key[1:]
        if self.mode == WAKEUP and len(key) == 2 and key[1] and key[1][-1].kind == THREAD:
            waker = key[1][-1]
            key = (key[0], key[1][:-1] + (threads.setdefault(waker.name, waker),))
        return key

    def _add(self, key: tuple, ns: int) -> None:
        """``key``: (thread frame, frames) or (thread frame, state frame, frames), the
        stack ``stack_of(key)`` without a tuple of its own per (thread, stack)."""
        self.ns[key] = self.ns.get(key, 0) + ns
        if self.timeline is not None:
            stack = stack_of(key)
            self.timeline.append((self._start, stack, ns))
            self.periods.append((key[0].task, self._start, self._start + ns, stack))

    # -- the record stream ----------------------------------------------------------
    def feed(self, rec) -> None:
        if rec.__class__ is Sample:
            return self.wall.sample(rec)
        lanes = self.lanes
        if lanes is not None:
            if rec.__class__ is OnCpu:
                lanes.oncpu(rec)
            else:
                lanes.period(rec)
        if self.analyse and rec.__class__ is OnCpu:
            self.analysis.note_cpu(rec)
        if not self.keep(rec.task):
            return
        if rec.__class__ is OnCpu:
            if self.analyse:
                self.analysis.add_oncpu(rec)
            if self.wall is not None:
                self.wall.oncpu(rec)
            if self.periods is not None:
                self.periods.append((rec.task, rec.start_ns, rec.end_ns,
                                     (self.thread(rec.task), ONCPU_FRAME)))
        else:
            self.period(rec)

    def _kept(self, rec) -> Optional[tuple]:
        """(thread frame, frames) of a Period of a kept thread, else None (the fast
        paths' common part: keep(), thread(), frames() inlined)."""
        task = rec.task
        if self.by_name:
            if rec.__class__ is OnCpu or (task.tid == 0 and not self.opts.include_idle):
                return None
            thread = self.threads.get(task.comm)
            if thread is None:
                thread = self.threads[task.comm] = thread_frame(task)
        else:
            k = self.keep_cache.get(task)
            if k is None:
                k = self.keep_cache[task] = self._keep(task)
            if not k or rec.__class__ is OnCpu:
                return None
            thread = self.threads.get(task)
            if thread is None:
                thread = self.threads[task] = thread_frame(task)
        frames = self.frames_cache.get(rec.stack)
        return thread, (frames if frames is not None else self.frames(rec.stack))

    def _feed_span(self, rec) -> None:
        """feed() where each period's whole span goes to its switch-out stack and nothing
        else is kept (mode offcpu, no state split, analysis, timeline, --state or -m/-M):
        the span is the switch-in (or, not seen, the wakeup) minus the switch-out, which
        is what period() adds up from the blocked and run-queue parts."""
        key = self._kept(rec)
        if key is not None:
            end = rec.end_ns
            ns = self.ns
            ns[key] = ns.get(key, 0) + ((end if end is not None else rec.wake_ns) - rec.start_ns)

    def _feed_parts(self, rec) -> None:
        """feed() as _feed_span, with the state split (an SVG's default): the blocked part
        under ``[blocked S]`` and the run-queue part under ``[run queue]``/``[preempted]``,
        as period() adds them (a part of 0 ns too: it rounds away)."""
        kept = self._kept(rec)
        if kept is None:
            return
        thread, frames = kept
        ns = self.ns
        state, start, wake, end = rec.state, rec.start_ns, rec.wake_ns, rec.end_ns
        if state == "" or state == "R" or state == "R+":   # no blocked part
            if end is not None:
                key = (thread, RUNQ_FRAME if state == "" else PREEMPTED_FRAME, frames)
                ns[key] = ns.get(key, 0) + end - start
            return
        key = (thread, blocked_frame(state), frames)
        ns[key] = ns.get(key, 0) + (wake if wake is not None else end) - start
        if end is not None and wake is not None:
            key = (thread, RUNQ_FRAME, frames)
            ns[key] = ns.get(key, 0) + end - wake

    def _in_range(self, ns: int) -> bool:
        us = ns // 1000                  # offcputime compares whole µs
        o = self.opts
        return ((o.min_block_us is None or us >= o.min_block_us)
                and (o.max_block_us is None or us <= o.max_block_us))

    def period(self, p: Period) -> None:
        """One off-CPU period: its blocked part, its run-queue part, or both."""
        if not state_matches(p.state, self.opts.states):
            return
        self._start = p.start_ns
        blocked = p.blocked
        runq = p.has_runq
        b_ns = p.blocked_ns
        r_ns = p.runq_ns if runq else 0
        total = b_ns + r_ns
        thread = self.thread(p.task)
        frames = self.frames(p.stack)
        # (thread, frames) stands for the stack (thread,) + frames: the frames tuple (one per
        # distinct stack, from frames_cache) is shared by every thread that has that stack
        key = (thread, frames)
        in_span = self._in_range(total)
        if in_span and self.analyse:
            pid = p.task.pid
            process = p.task.comm.replace(" ", "_") if pid is None else f"pid {pid}"
            self.analysis.add_period(p, key, process)
        mode = self.mode
        if mode == OFFCPU or mode == WALLCLOCK:
            if not in_span:
                return
            if self.split:
                if blocked:
                    self._add((thread, blocked_frame(p.state), frames), b_ns)
                if runq:
                    self._start = p.runq_start_ns
                    self._add((thread, runq_frame(p), frames), r_ns)
            else:
                self._add(key, total)
        elif mode == BLOCKED and blocked and self._in_range(b_ns):
            self._add(key, b_ns)
        elif mode == RUNQ and runq and self._in_range(r_ns):
            self._start = p.runq_start_ns
            self._add(key, r_ns)
        elif mode == CRITICAL:
            return          # drawn from the lanes at the end (critical_samples)
        elif mode == WAKEUP and blocked and p.waker is not None and self._in_range(b_ns):
            waker = self.frames(p.waker_stack)[::-1]
            self._add((thread, frames + (WAKER_DELIMITER,) + waker + (self.thread(p.waker),)),
                      b_ns)

    # -- the result -------------------------------------------------------------------
    def critical_samples(self) -> None:
        """--mode critical-path: each kept thread's blocked time along its wake-up chains
        (sched.critical), as stacks: its blocked stack, then ``→ WAKER`` and what the waker
        did (on CPU with the stack it woke with, run queue, or blocked with its stack, and
        so on), then the root; in ns."""
        lanes, ns = self.lanes, self.ns
        paths = Paths(lanes, self.analysis.classify)
        for tid in sorted(lanes.by_tid, key=lambda t: (t.__class__ is not int, t)):
            lane = lanes.by_tid[tid]
            if not tid or not self.keep(lane.task):
                continue
            for chain, d in paths.of(tid).items():
                if chain[0].what != "blocked":
                    continue
                key = (self.thread(lane.task), chain_stack(chain, self.frames))
                ns[key] = ns.get(key, 0) + d

    def profile(self) -> Profile:
        samples = {}
        notes = []
        if self.mode == CRITICAL:
            self.critical_samples()
        if self.wall is not None:
            if self.analysis.first_ns is None and self.wall.by_key:
                return self.wall.oncpu_only()
            notes = self.wall.finish(self.ns)
        for key, ns in self.ns.items():
            us = ns_to_us(ns)
            if us:
                samples[stack_of(key)] = us
        an = self.analysis
        an.finish()
        prof = Profile(unit="us", mode=self.mode, samples=samples, analysis=an,
                       dropped=dict(sorted(an.dropped.items())))
        prof.histograms = [
            Histogram("blocked_us", (), "us", an.summary("blocked")["buckets"], BLOCKED),
            Histogram("runq_us", (), "us", an.summary("runq")["buckets"], RUNQ),
        ]
        prof.warnings = notes + self.warnings()
        if self.opts.events:
            prof.events = self.events
        if self.timeline is not None:
            prof.sequence = time_order(self.timeline)
            if self.wall is not None:
                self.wall.spans(self.periods)
            prof.periods = self.periods
        return prof

    def warnings(self) -> list:
        out = []
        an = self.analysis
        if an.per_process:
            tids = sorted(an.seen_tids)[:4] or ["TID"]
            filt = " || ".join(f"prev_pid == {t} || next_pid == {t}" for t in tids)
            out.append("this looks like a `perf record -p PID` recording: it has the threads' "
                       "switch-outs but not their switch-ins, so off-CPU, run-queue and on-CPU "
                       "durations cannot be measured; only blocked time ended by a wakeup from "
                       "inside the process is shown. Record system-wide with a filter instead: "
                       f"perf record -e sched:sched_switch --filter '{filt}' "
                       "-e sched:sched_wakeup -e sched:sched_wakeup_new -g -a -- sleep 10")
        d = an.dropped
        if d.get("samples") and self.mode != WALLCLOCK:
            n = d["samples"]
            out.append(f"ignored {n} non-sched event{'s' if n != 1 else ''} (on-CPU samples) "
                       f"in mode {self.mode}")
        if d.get("sched_other"):
            n = d["sched_other"]
            out.append(f"ignored {n} event{'s' if n != 1 else ''} of the scheduler's other "
                       "tracepoints (sched_stat_runtime, sched_migrate_task, sched_process_fork, "
                       "...: perf sched record's), which the intervals do not need")
        if self.pid_from_tid:
            out.append(PID_FROM_TID)
        for reason, one, many, text in (
                ("inferred_switch_in", "switch-in", "switch-ins",
                 "missing (the previous sched_switch on that CPU was taken, as perf sched "
                 "timehist does; from an idle CPU, not before the thread's wake-up)"),
                ("inferred_from_task", "switch-in", "switch-ins",
                 "missing and the input has no cpu field (the thread's next event as the "
                 "running task was taken)"),
                ("no_switch_in", "off-CPU period", "off-CPU periods",
                 "dropped: no switch-in seen (the blocked part is kept when a wakeup was seen)"),
                ("no_wakeup", "blocked period", "blocked periods",
                 "ended by a switch-in with no wakeup seen (counted blocked until the switch-in)"),
                ("open", "off-CPU period", "off-CPU periods",
                 "still open at the end and dropped (--include-open clips them)"),
                ("out_of_order", "event out of time order", "events out of time order",
                 "skipped (--lenient)")):
            n = d.get(reason)
            if n:
                threads = an.dropped_threads.get(reason, 0)
                of = f" (in {threads} thread{'s' if threads != 1 else ''})" if threads else ""
                if reason == "no_wakeup" and an.wakeup_events and not an.sched_wakeup_events:
                    text += ("; the trace has sched_waking and no sched_wakeup (perf sched "
                             "record), which was seen to miss I/O wake-ups that sched_wakeup "
                             "shows: record sched_wakeup too (offconv record does)")
                out.append(f"{n} {one if n == 1 else many}{of} {'was' if n == 1 else 'were'} {text}")
        return out


def stack_of(key: tuple) -> tuple:
    """The stack a key of ``_Builder.ns`` stands for: (thread, frames) -> (thread,) +
    frames; (thread, state, frames) -> (thread, state) + frames."""
    if len(key) == 2:
        return (key[0],) + key[1]
    return (key[0], key[1]) + key[2]


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
                  lenient: bool = False, recorded: frozenset = frozenset(),
                  filtered: frozenset = frozenset()) -> Profile:
    """Each (path, SchedEvents) input with its own interval state, merged into one Profile.

    ``profile.samples``: stacks of frames (a THREAD frame first; with ``opts.state_split``
    in mode offcpu a STATE frame ``[blocked S]``/``[run queue]``/``[preempted]`` second)
    -> µs; ``profile.histograms``: blocked and run-queue log2 µs; ``profile.analysis``:
    analysis.Analysis (``analysis.summarize`` it); ``profile.warnings``: sentences for
    stderr. ``recorded``: the inputs scripts/record.sh made (its first line says so), which
    are never taken for `perf record -p` recordings."""
    b = _Builder(opts)
    select = bool(opts.comm or opts.filter_pids)  # needs what the whole input shows
    # the time on CPU: for the analysis, the timeline, and the names and processes of the
    # threads a selection learns; a stack output of all threads needs none
    oncpu = opts.analyse or opts.timeline or select or opts.mode == WALLCLOCK
    inputs = list(inputs)
    # scripts/record.sh's recordings filtered to a target (``filtered``: their paths)
    b.analysis.recorder_filtered = any(path in filtered for path, _ in inputs)
    tails = [t for t in (getattr(events, "tail", None) for _, events in inputs) if t is not None]
    try:
        for path, events in inputs:
            # (parents: a creator a task, in int64 -- IntTable -- where a build has 100k)
            stats: dict = {"parents": IntTable(), "exits": {}}
            b.analysis.live_parents = stats["parents"]   # filled as the events are read
            b.analysis.live_exits = stats["exits"]
            stats["threads"] = b.analysis.live_counts = {}
            tail = getattr(events, "tail", None)  # its second part in another process
            if opts.events:
                events = kept_events(events, b.events)
            recs: list = []
            drive(events, path, recs.append if select else b.feed, lenient=lenient,
                  stats=stats, include_open=opts.include_open, system_wide=path in recorded,
                  tail=tail, oncpu=oncpu, per_thread=opts.analyse,
                  # records held back for a selection are fed after the input: no packing
                  on_exit=b.analysis.exited if opts.analyse and not select else None,
                  samples=b.mode == WALLCLOCK)
            if select:
                b.learn(recs)
                for rec in recs:
                    b.feed(rec)
            if tail is not None:
                tail.merge_into(b)
            b.analysis.add_counts(stats)
    finally:
        for t in tails:
            t.stop()
    return b.profile()
