"""SchedEvent stream -> Period (off-CPU: blocked + run-queue) and OnCpu records, streaming.

The rules are DESIGN.md "Interval semantics"; they reproduce ``perf sched timehist``
(perf 6.1) on the recordings in ``shared/corpus/recorded``:

- switch-out of T (``prev``): T's on-CPU interval ends; T starts *blocked* (any
  sleeping state, letter kept) or *run-queue* wait (``R``/``R+``: preempted).
  ``X``/``Z`` (or a ``sched_process_exit`` seen before) end the thread.
- first ``sched_waking``/``sched_wakeup``/``sched_wakeup_new`` of a blocked T: the
  blocked part ends, the run-queue wait starts; the waker is the header task.
  ``sched_wakeup_new`` of a thread never seen starts its run-queue wait (state "").
- switch-in of T (``next``): the run-queue interval ends (a blocked T with no wakeup
  seen is blocked until here: ``no_wakeup``); T is on-CPU.
- T switched out while still off-CPU: its switch-in was not recorded; the previous
  ``sched_switch`` on that CPU is taken as the switch-in (``inferred_switch_in``),
  as timehist does (clamped so that intervals never run backwards).

An off-CPU period is emitted when it ends, as one ``Period`` (switch-out, wakeup,
switch-in). Periods still open at the end are counted in ``stats["open"]`` (a woken
one is emitted with ``end_ns`` None: its blocked part is known); ``include_open``
clips them at the last timestamp instead. pid 0 (one idle task per CPU) is tracked per CPU and left to
the consumer to filter.

A ``perf record -p PID`` recording holds only events whose current task is in the
process: switch-outs but no switch-ins from outside, no idle task. It is detected on
a bounded prefix (switches into idle, never an event of the idle task); then only
blocked parts ended by a wakeup from inside the process are produced (``end_ns`` None) and
``stats["per_process"]`` is set. Not for ``system_wide`` input (scripts/record.sh's, whose
first line says so): a quiet system-wide recording on this VM can look like one, because
switch-ins from idle go missing there (corpus quirk 1).

Memory is per live thread and per CPU, plus that bounded detection prefix.
"""
from __future__ import annotations

from dataclasses import replace
from itertools import chain, islice
from typing import Iterable, Iterator, Optional

from .errors import ParseError
from .model import (EXIT, SWITCH, WAKE, OnCpu, Period, SchedEvent, Task, ThreadCounts,
                    is_sched_tracepoint)

WAKING_EVENTS = frozenset(("sched:sched_waking", "sched_waking"))

ON, BLK, RQ = 0, 1, 2
DEAD_STATES = frozenset("XZ")
# `perf record -- CMD` forks a child named perf-exec that then execs CMD: that task, and
# every task it creates (sched_wakeup_new: the creator wakes the new task), is the command
RECORDED_COMMAND = "perf-exec"
PROBE_EVENTS = 20000       # at most this many events are buffered to detect a -p recording
PROBE_IDLE_SWITCHES = 20   # switches into idle without any idle event: a -p recording


class _Thread:
    """One live thread: ``phase`` ON / BLK (asleep) / RQ (runnable); ``start`` is the
    switch-out (or, for a new thread, its first wakeup); a woken thread keeps ``wake``,
    ``waker`` and ``waker_stack`` until its switch-in ends the period."""

    __slots__ = ("phase", "start", "state", "stack", "task", "wake", "waker", "waker_stack",
                 "dead", "to_idle")

    def __init__(self, phase: int, start: int, state: str = "", stack: tuple = (),
                 task: Optional[Task] = None):
        self.phase = phase
        self.start = start
        self.state = state
        self.stack = stack
        self.task = task
        self.wake: Optional[int] = None
        self.waker: Optional[Task] = None
        self.waker_stack: tuple = ()
        self.dead = False
        self.to_idle = False   # switched out runnable to the idle task (throttled)

    def period(self, end: Optional[int], inferred: bool = False, idle: bool = False) -> Period:
        wake = self.wake
        if wake is not None and end is not None and end < wake:
            wake = None  # an inferred switch-in before the wakeup: all of it was blocked
        return Period(self.task, self.state, self.start, wake, end, self.stack, self.waker,
                      self.waker_stack, inferred, idle, woke_ns=self.wake,
                      throttled=self.to_idle)


def is_preempted(state: str) -> bool:
    return state in ("R", "R+")


def is_dead(state: str) -> bool:
    return any(c in DEAD_STATES for c in state)


def _key(task: Task, cpu: Optional[int]):
    """Thread identity: the tid, except the idle tasks, which all have tid 0."""
    return (0, cpu) if task.tid == 0 else task.tid


def _sort_key(key) -> tuple:
    if isinstance(key, int):
        return (key, -2)
    return (0, -1 if key[1] is None else key[1])


def _fmt_ns(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def _count(stats: dict, name: str, n: int = 1, tid=None) -> None:
    """One more ``name``; with ``tid``, also in that thread's counts (``stats["by_tid"]``),
    so that a report of selected threads gives their counts alone."""
    stats[name] = stats.get(name, 0) + n
    if tid is not None:
        row = stats.setdefault("by_tid", {}).setdefault(tid, {})
        row[name] = row.get(name, 0) + n


def _thread_counts(stats: dict, tid: int) -> ThreadCounts:
    """stats["threads"][tid]: that thread's switch-outs, inferred switch-ins and
    switch-ins with no wakeup seen."""
    row = stats["threads"].get(tid)
    if row is None:
        row = stats["threads"][tid] = ThreadCounts()
    return row


def _probe(events: Iterable) -> tuple[bool, Iterator]:
    it = iter(events)
    head = []
    into_idle = 0
    for ev in islice(it, PROBE_EVENTS):
        head.append(ev)
        if isinstance(ev, SchedEvent):
            if ev.task.tid == 0 or (ev.kind == SWITCH and ev.prev.tid == 0):
                return False, chain(head, it)
            if ev.kind == SWITCH and ev.next is not None and ev.next.tid == 0:
                into_idle += 1
    return into_idle >= PROBE_IDLE_SWITCHES, chain(head, it)


def intervals(events: Iterable, path: str, lenient: bool = False,
              stats: Optional[dict] = None, include_open: bool = False,
              system_wide: bool = False) -> Iterator:
    """Turn the SchedEvents of one input (file order) into Period and OnCpu records.

    Non-sched records (``Sample``) are skipped and counted in ``stats["samples"]`` (in
    ``stats["sched_other"]`` when they are the scheduler's other tracepoints).
    Counts go into ``stats`` (reasons: ``inferred_switch_in``, ``no_wakeup``,
    ``no_switch_in``, ``open``, ``open_oncpu``, ``missing_switch_out``,
    ``out_of_order``, ``per_process_unmeasured``; ``threads``: tid -> ThreadCounts). Events going
    back in time raise ParseError unless ``lenient`` (then they are skipped)."""
    if stats is None:
        stats = {}
    stats.setdefault("threads", {})
    stats.setdefault("parents", {})
    stats.setdefault("command", set())
    stats.setdefault("exits", {})   # tid -> when it ended (its last switch-out, or exit event)
    per_process, events = (False, events) if system_wide else _probe(events)
    if per_process:
        stats["per_process"] = 1
    machine = _Machine(path, lenient, stats, per_process)
    for ev in events:
        if not isinstance(ev, SchedEvent):
            # the scheduler's other tracepoints (perf sched record's sched_stat_runtime,
            # sched_migrate_task, ...) apart from on-CPU samples
            other = is_sched_tracepoint(getattr(ev, "event", None) or "")
            _count(stats, "sched_other" if other else "samples")
            continue
        yield from machine.step(ev)
    yield from machine.finish(include_open)


class _Machine:
    def __init__(self, path: str, lenient: bool, stats: dict, per_process: bool):
        self.path = path
        self.lenient = lenient
        self.stats = stats
        self.per_process = per_process
        self.threads: dict = {}
        self.cpu_last: dict = {}     # cpu -> time of its previous sched_switch
        self.cpu_idle: dict = {}     # cpu -> its previous sched_switch went to the idle task
        self.wakeups = 0
        self.wakeups_not_waking = 0
        self.last_ns: Optional[int] = None
        self.first_ns: Optional[int] = None

    def step(self, ev: SchedEvent) -> Iterator:
        t = ev.time_ns
        if self.last_ns is not None and t < self.last_ns:
            if not self.lenient:
                raise ParseError(self.path, ev.lineno, "events in time order",
                                 f"{_fmt_ns(t)} after {_fmt_ns(self.last_ns)}")
            _count(self.stats, "out_of_order")
            return
        if self.first_ns is None:
            self.first_ns = t
        self.last_ns = t
        if ev.cpu is None and ev.task.tid and not self.per_process:
            yield from self._seen_running(ev.task, t)
        if ev.kind == SWITCH:
            yield from self._switch(ev, t)
            self.cpu_last[ev.cpu] = t
            self.cpu_idle[ev.cpu] = ev.next is not None and ev.next.tid == 0
        elif ev.kind == WAKE:
            self.wakeups += 1
            if not ev.new and ev.event not in WAKING_EVENTS:
                self.wakeups_not_waking += 1
            yield from self._wakeup(ev, t)
        elif ev.kind == EXIT:
            self._exit(ev)

    # -- switch -----------------------------------------------------------------
    def _switch(self, ev: SchedEvent, t: int) -> Iterator:
        prev, nxt = ev.prev, ev.next
        if nxt is not None and nxt.comm == RECORDED_COMMAND and nxt.tid:
            self.stats["command"].add(nxt.tid)
        if prev is not None:
            yield from self._switch_out(ev, prev, t)
        if nxt is not None and not (prev is not None and _key(prev, ev.cpu) == _key(nxt, ev.cpu)):
            yield from self._switch_in(nxt, _key(nxt, ev.cpu), t,
                                       prev is not None and prev.tid == 0)

    def _switch_out(self, ev: SchedEvent, prev: Task, t: int) -> Iterator:
        key = _key(prev, ev.cpu)
        st = self.threads.get(key)
        if prev.tid:
            _thread_counts(self.stats, prev.tid).switches += 1
        if st is not None and st.phase != ON:
            yield from self._missed_switch_in(st, key, ev.cpu, t)
        elif st is not None:
            yield OnCpu(prev if prev.pid is not None else (st.task or prev), st.start, t)
        dead = st is not None and st.dead
        if dead or is_dead(ev.prev_state):
            self.threads.pop(key, None)
            if prev.tid:
                self.stats["exits"][prev.tid] = t
            return
        phase = RQ if is_preempted(ev.prev_state) else BLK
        th = self.threads[key] = _Thread(phase, t, ev.prev_state, ev.stack, prev)
        if phase == RQ and ev.next is not None and ev.next.tid == 0:
            # runnable, yet the CPU goes idle: nothing else wanted it, so the task was
            # held back -- CFS bandwidth throttling (cgroup cpu.max, a container's limit)
            th.to_idle = True

    def _missed_switch_in(self, st: _Thread, key, cpu, t: int) -> Iterator:
        """T is switched out while off-CPU: its switch-in was not recorded."""
        tin = self.cpu_last.get(cpu) if cpu is not None else None
        if self.per_process or tin is None:
            _count(self.stats, "per_process_unmeasured" if self.per_process else "no_switch_in",
                   tid=st.task.tid)
            if st.wake is not None:
                yield st.period(None)     # its blocked part is known
            return
        _count(self.stats, "inferred_switch_in", tid=st.task.tid)
        if st.task.tid:
            _thread_counts(self.stats, st.task.tid).inferred += 1
        tin = max(tin, st.start)
        idle = self.cpu_idle.get(cpu, False)
        p = st.period(tin, inferred=True, idle=idle)
        if idle and tin == st.start:
            # the CPU went idle at its switch-out and nothing ran there until it was
            # switched out again: it came back from idle at an unknown time
            p = replace(p, unknown_ns=t - tin)
        yield p
        yield OnCpu(st.task, tin, t)

    def _seen_running(self, task: Task, t: int) -> Iterator:
        """No cpu field (perf script -F without cpu): the previous switch on T's CPU is
        unknown, but an event whose header task is T shows T running: an off-CPU T was
        switched in by then (``inferred_from_task``; its run-queue part an upper bound)."""
        st = self.threads.get(task.tid)
        if st is None or st.phase == ON:
            return
        _count(self.stats, "inferred_from_task", tid=task.tid)
        _thread_counts(self.stats, task.tid).inferred += 1
        yield st.period(t, inferred=True)
        on = self.threads[task.tid] = _Thread(ON, t, task=st.task or task)
        on.dead = st.dead

    def _switch_in(self, task: Task, key, t: int, from_idle: bool) -> Iterator:
        st = self.threads.get(key)
        if self.per_process:
            if st is not None and st.phase != ON:
                _count(self.stats, "per_process_unmeasured", tid=task.tid)
                if st.wake is not None:
                    yield st.period(None)
            self.threads.pop(key, None)
            return
        if st is None:
            self.threads[key] = _Thread(ON, t, task=task)
            return
        if st.phase == ON:
            _count(self.stats, "missing_switch_out", tid=task.tid)
        else:
            if st.phase == BLK:
                _count(self.stats, "no_wakeup", tid=task.tid)
                if task.tid:
                    _thread_counts(self.stats, task.tid).no_wakeup += 1
            yield st.period(t, idle=from_idle)
        dead = st.dead
        self.threads[key] = _Thread(ON, t, task=task)
        self.threads[key].dead = dead

    # -- wakeup / exit ----------------------------------------------------------
    def _wakeup(self, ev: SchedEvent, t: int) -> Iterator:
        target = ev.target
        if target is None:
            return
        if ev.new and target.tid and ev.task.tid:
            self.stats["parents"][target.tid] = ev.task.tid   # the creator wakes a new task
        if target.comm == RECORDED_COMMAND and target.tid:
            self.stats["command"].add(target.tid)
        key = _key(target, ev.cpu)
        st = self.threads.get(key)
        if st is None:
            if ev.new and not self.per_process:
                self.threads[key] = _Thread(RQ, t, "", (), target)
            return
        if st.phase != BLK:
            return
        st.wake = t
        st.waker = ev.task
        st.waker_stack = ev.stack
        if self.per_process:
            del self.threads[key]
            yield st.period(None)
            return
        st.phase = RQ

    def _exit(self, ev: SchedEvent) -> None:
        target = ev.target or ev.task
        if target.tid:
            self.stats["exits"][target.tid] = ev.time_ns
        key = _key(target, ev.cpu)
        st = self.threads.get(key)
        if st is None:
            return
        if st.phase == ON:
            st.dead = True       # its last switch-out (prev_state X) ends it
        else:
            del self.threads[key]

    # -- end of input -----------------------------------------------------------
    def finish(self, include_open: bool) -> Iterator:
        end = self.last_ns
        for key in sorted(self.threads, key=_sort_key):
            st = self.threads[key]
            if self.per_process:
                _count(self.stats, "per_process_unmeasured", tid=st.task.tid if st.task else None)
                continue
            if not include_open or end is None:
                _count(self.stats, "open_oncpu" if st.phase == ON else "open",
                       tid=st.task.tid if st.task else None)
                if st.phase != ON and st.wake is not None:
                    yield st.period(None)     # woken, never switched in: blocked part known
                continue
            if st.phase == ON:
                yield OnCpu(st.task, st.start, end)
            else:
                yield st.period(end)
        self.threads.clear()
        self.stats["wakeup_events"] = self.wakeups
        # sched_wakeup events: a trace of sched_waking alone (perf sched record) can miss
        # wake-ups that sched_wakeup shows (measured: a throttled reader's I/O wake-ups)
        self.stats["sched_wakeup_events"] = self.wakeups_not_waking
        self.stats["first_ns"] = self.first_ns
        self.stats["last_ns"] = self.last_ns
