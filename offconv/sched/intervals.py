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
- T switched out while still off-CPU, or seen running (an event of its own: a wakeup
  it makes, its exit) on a CPU whose last switch went to the idle task: its switch-in
  was not recorded; the previous ``sched_switch`` on that CPU is taken as the switch-in
  (``inferred_switch_in``), as timehist does (clamped so that intervals never run
  backwards, and, from an idle CPU, not before T's wake-up). From an idle CPU with no
  wake-up seen, the time from there until T was seen running is ``Period.unknown_ns``
  (blocked or running).

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
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.sched.probe import _probe
from offconv.model.records import EXIT, SWITCH, WAKE, OnCpu, Period, Sample, SchedEvent, Task, ThreadCounts, is_sched_tracepoint

WAKING_EVENTS = frozenset(("sched:sched_waking", "sched_waking"))

ON, BLK, RQ = 0, 1, 2
DEAD_STATES = frozenset("XZ")
# `perf record -- CMD` forks a child named perf-exec that then execs CMD: that task, and
# every task it creates (sched_wakeup_new: the creator wakes the new task), is the command
RECORDED_COMMAND = "perf-exec"


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


def _missing_payload(path: str, ev: SchedEvent) -> ParseError:
    """A sched event without the tasks its payload names (perf script -F without
    'trace'): the parser's error, which says what the payload looks like."""
    from offconv.inputs.perf_script.events import missing_payload
    return missing_payload(path, ev)


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


def intervals(events: Iterable, path: str, lenient: bool = False,
              stats: Optional[dict] = None, include_open: bool = False,
              system_wide: bool = False, tail=None, oncpu: bool = True) -> Iterator:
    """Turn the SchedEvents of one input (file order) into Period and OnCpu records.

    Non-sched records (``Sample``) are skipped and counted in ``stats["samples"]`` (in
    ``stats["sched_other"]`` when they are the scheduler's other tracepoints).
    Counts go into ``stats`` (reasons: ``inferred_switch_in``, ``no_wakeup``,
    ``no_switch_in``, ``open``, ``open_oncpu``, ``missing_switch_out``,
    ``out_of_order``, ``per_process_unmeasured``; ``threads``: tid -> ThreadCounts). Events going
    back in time raise ParseError unless ``lenient`` (then they are skipped). ``tail``: the
    second part of the input, worked out by another process (sched_split.Tail): joined
    after this part's last event, before the end. ``oncpu``: False leaves OnCpu records
    out (a stack output needs none)."""
    out: list = []
    machine, events = _machine(events, path, lenient, stats, system_wide, tail, out.append, oncpu)
    step = machine.step
    for ev in events:
        if ev.__class__ is SchedEvent:
            step(ev)
            if out:
                yield from out
                out.clear()
        else:
            machine.other(ev)
    if tail is not None:  # the second part of a split input (offconv.run.sched_split)
        tail.join(machine)
    machine.finish(include_open)
    yield from out


def drive(events: Iterable, path: str, emit, lenient: bool = False,
          stats: Optional[dict] = None, include_open: bool = False,
          system_wide: bool = False, tail=None, oncpu: bool = True,
          per_thread: bool = True, on_exit=None, samples: bool = False) -> None:
    """intervals(), each record handed to ``emit`` as it is made (no generator between
    the machine and its consumer: the off-CPU path's fast way). ``per_thread``: False
    keeps no per-thread stats (``threads``, ``exits``, ``parents``: the analysis's), so
    that a stack output's memory does not grow with the threads the input had; a `perf
    record -p` recording keeps them all the same (its warning names its threads).
    ``on_exit(tid, held, t)``: called when a thread has ended (at ``t``), after its last record was
    handed to ``emit`` (not for a `perf record -p` recording, which has no switch-ins);
    ``held()`` gives the tids the machine's state still names (``_Machine.held``).
    ``samples``: on-CPU samples go to ``emit`` too, in file order (--mode wallclock)."""
    machine, events = _machine(events, path, lenient, stats, system_wide, tail, emit, oncpu,
                               per_thread)
    machine.samples = samples
    if not machine.per_process:
        machine.on_exit = on_exit
    run(machine, events)
    if tail is not None:
        tail.join(machine)
    machine.finish(include_open)


def _machine(events: Iterable, path: str, lenient: bool, stats: Optional[dict],
             system_wide: bool, tail, emit, oncpu: bool, per_thread: bool = True) -> tuple:
    """(the machine of one input, its events), after the `perf record -p` probe."""
    if stats is None:
        stats = {}
    stats.setdefault("threads", {})
    stats.setdefault("parents", {})
    stats.setdefault("command", set())
    stats.setdefault("exits", {})   # tid -> when it ended (its last switch-out, or exit event)
    per_process, undecided = False, None
    if not system_wide:
        per_process, events, undecided = _probe(events)
        if undecided is not None and tail is not None:   # the probe goes on in the tail
            per_process = tail.probe(undecided)
    if per_process:
        stats["per_process"] = 1
    return _Machine(path, lenient, stats, per_process, emit, oncpu,
                    per_thread or per_process), events


def run(machine: "_Machine", events: Iterable) -> None:
    """``machine.step`` over ``events``; other records are counted in its stats."""
    step = machine.step
    for ev in events:
        if ev.__class__ is SchedEvent:
            step(ev)
        else:
            machine.other(ev)


class _Discard(dict):
    """A per-thread stats map that keeps nothing (``_Machine``'s ``per_thread`` False)."""

    def __setitem__(self, key, value) -> None:
        pass


class _Machine:
    def __init__(self, path: str, lenient: bool, stats: dict, per_process: bool,
                 emit=None, oncpu: bool = True, per_thread: bool = True):
        self.emit = emit        # called with each record made
        # called with a thread's tid after its last record (its switch-out as dead): the
        # analysis packs what it keeps of it (analysis.Analysis.exited)
        self.on_exit = None
        self.oncpu = oncpu      # make OnCpu records
        self.per_thread = per_thread   # stats["threads"], ["exits"], ["parents"] kept
        if not per_thread:
            stats["exits"] = _Discard()
            stats["parents"] = _Discard()
        self.path = path
        self.lenient = lenient
        self.stats = stats
        self.per_process = per_process
        self.threads: dict = {}
        self.cpu_last: dict = {}     # cpu -> time of its previous sched_switch
        self.cpu_idle: dict = {}     # cpu -> its previous sched_switch went to the idle task
        self.wakeups = 0
        self.wakeups_not_waking = 0
        self.wakings = 0
        self.last_ns: Optional[int] = None
        self.first_ns: Optional[int] = None
        self.samples = False    # hand on-CPU samples to emit (drive's ``samples``)

    def held(self) -> set:
        """The tids the state names: the live threads, and the wakers of the woken threads
        not yet switched in (a record still to come names them)."""
        out = set()
        for st in self.threads.values():
            if st.task is not None:
                out.add(st.task.tid)
            if st.waker is not None:
                out.add(st.waker.tid)
        return out

    def other(self, rec) -> None:
        """A record other than a SchedEvent: counted (the scheduler's other tracepoints,
        perf sched record's sched_stat_runtime, sched_migrate_task, ..., apart from on-CPU
        samples)."""
        other = is_sched_tracepoint(getattr(rec, "event", None) or "")
        if self.samples and not other and rec.__class__ is Sample:
            _count(self.stats, "samples_kept")
            self.emit(rec)
            return
        _count(self.stats, "sched_other" if other else "samples")

    def step(self, ev: SchedEvent) -> None:
        t = ev.time_ns
        if self.last_ns is not None and t < self.last_ns:
            if not self.lenient:
                restart = t <= self.first_ns or self.last_ns - t > 1_000_000_000
                raise ParseError(self.path, ev.lineno, "events in time order",
                                 f"{_fmt_ns(t)} after {_fmt_ns(self.last_ns)}" + (
                                     " (the time starts again: recordings concatenated? give "
                                     "each as its own input)" if restart else ""))
            _count(self.stats, "out_of_order")
            return
        if self.first_ns is None:
            self.first_ns = t
        self.last_ns = t
        if ev.cpu is None and ev.task.tid and not self.per_process:
            self._seen_running(ev.task, t)
        if ev.kind == SWITCH:
            self._switch(ev, t)
            self.cpu_last[ev.cpu] = t
            self.cpu_idle[ev.cpu] = ev.next is not None and ev.next.tid == 0
            return
        if ev.cpu is not None and ev.task.tid and self._on_idle(ev.cpu):
            # a task runs on a CPU whose last switch went to the idle task: it was switched
            # in from idle unrecorded (corpus quirk 1: CPU 1's idle task's events are lost)
            self._seen_after_idle(ev.task, ev.cpu, t)
        if ev.kind == WAKE:
            self.wakeups += 1
            if ev.event in WAKING_EVENTS:
                self.wakings += 1
            elif not ev.new:
                self.wakeups_not_waking += 1
            self._wakeup(ev, t)
        elif ev.kind == EXIT:
            self._exit(ev)

    # -- switch -----------------------------------------------------------------
    def _switch(self, ev: SchedEvent, t: int) -> None:
        prev, nxt = ev.prev, ev.next
        if nxt is not None and nxt.comm == RECORDED_COMMAND and nxt.tid:
            self.stats["command"].add(nxt.tid)
        if prev is not None:
            self._switch_out(ev, prev, t)
        elif nxt is None:   # perf script -F without 'trace': no tasks to follow
            raise _missing_payload(self.path, ev)
        if nxt is not None and not (prev is not None and _key(prev, ev.cpu) == _key(nxt, ev.cpu)):
            self._switch_in(nxt, _key(nxt, ev.cpu), t,
                                       prev is not None and prev.tid == 0)

    def _switch_out(self, ev: SchedEvent, prev: Task, t: int) -> None:
        key = _key(prev, ev.cpu)
        st = self.threads.get(key)
        self._run_ended(st, prev, key, ev.cpu, t)
        self._off(ev, prev, key, t, st is not None and st.dead)

    def _run_ended(self, st: Optional[_Thread], prev: Task, key, cpu, t: int) -> None:
        """What a switch-out of ``prev`` ends: its time on CPU, or an off-CPU period whose
        switch-in was not recorded."""
        if prev.tid and self.per_thread:
            _thread_counts(self.stats, prev.tid).switches += 1
        if st is not None and st.phase != ON:
            self._missed_switch_in(st, key, cpu, t)
        elif st is not None and self.oncpu:
            # the switch-out's task (its name now: a thread renamed while on CPU), or the
            # switch-in's where only that one knows the pid under the same name
            keep = st.task if (prev.pid is None and st.task is not None and st.task.pid is not None
                               and st.task.comm == prev.comm) else prev
            self.emit(OnCpu(keep, st.start, t,
                            cpu if cpu.__class__ is int else -1))

    def _off(self, ev: SchedEvent, prev: Task, key, t: int, dead: bool) -> None:
        """What a switch-out of ``prev`` starts: an off-CPU period, or its end."""
        if dead or is_dead(ev.prev_state):
            self.threads.pop(key, None)
            if prev.tid:
                self.stats["exits"][prev.tid] = t
                if self.on_exit is not None:
                    self.on_exit(prev.tid, self.held, t)
            return
        phase = RQ if is_preempted(ev.prev_state) else BLK
        th = self.threads[key] = _Thread(phase, t, ev.prev_state, ev.stack, prev)
        if phase == RQ and ev.next is not None and ev.next.tid == 0:
            # runnable, yet the CPU goes idle: nothing else wanted it, so the task was
            # held back -- CFS bandwidth throttling (cgroup cpu.max, a container's limit)
            th.to_idle = True

    def _on_idle(self, cpu) -> bool:
        return self.cpu_idle.get(cpu, False)

    def _seen_after_idle(self, task: Task, cpu, t: int) -> None:
        """An event of ``task`` (it is running: a wakeup it makes, its exit) on ``cpu``,
        whose last switch went to the idle task: an off-CPU ``task`` was switched in
        unrecorded. Its period ends as at its switch-out (``_missed_switch_in``), but now,
        before what it does next is read (the wait it ends may be a peer's: analysis
        ``_peer`` asks since when the waker ran), and its split between blocked and running
        is unknown only until here. It is on CPU from the inferred switch-in."""
        st = self.threads.get(task.tid)
        if st is not None and st.phase != ON and not self.per_process:
            self._missed_switch_in(st, task.tid, cpu, t, seen=True)

    def _missed_switch_in(self, st: _Thread, key, cpu, t: int, seen: bool = False) -> None:
        """T is switched out while off-CPU (``seen``: T is seen running, at ``t``, on a
        CPU that went idle): its switch-in was not recorded."""
        tin = self.cpu_last.get(cpu) if cpu is not None else None
        if self.per_process or tin is None:
            _count(self.stats, "per_process_unmeasured" if self.per_process else "no_switch_in",
                   tid=st.task.tid)
            if st.wake is not None:
                self.emit(st.period(None))     # its blocked part is known
            return
        _count(self.stats, "inferred_switch_in", tid=st.task.tid)
        if st.task.tid and self.per_thread:
            _thread_counts(self.stats, st.task.tid).inferred += 1
        tin = max(tin, st.start)
        idle = self.cpu_idle.get(cpu, False)
        if idle and st.wake is not None and st.wake > tin:
            # the CPU sat idle and the thread asleep until its wake-up: it ran after that
            tin = st.wake
        p = st.period(tin, inferred=True, idle=idle)
        if idle and st.wake is None:
            # the CPU went idle (at its switch-out, or at another task's later) while it was
            # asleep, and nothing else ran there until it is seen running: it was blocked,
            # then woken (unseen) and back from idle, at an unknown time in between
            p = replace(p, unknown_ns=t - tin)
        self.emit(p)
        if seen:   # on CPU from ``tin`` until its switch-out (its OnCpu record then)
            on = self.threads[key] = _Thread(ON, tin, task=st.task)
            on.dead = st.dead
        elif self.oncpu:
            self.emit(OnCpu(st.task, tin, t, cpu if cpu.__class__ is int else -1))

    def _seen_running(self, task: Task, t: int) -> None:
        """No cpu field (perf script -F without cpu): the previous switch on T's CPU is
        unknown, but an event whose header task is T shows T running: an off-CPU T was
        switched in by then (``inferred_from_task``; its run-queue part an upper bound)."""
        st = self.threads.get(task.tid)
        if st is None or st.phase == ON:
            return
        _count(self.stats, "inferred_from_task", tid=task.tid)
        if self.per_thread:
            _thread_counts(self.stats, task.tid).inferred += 1
        self.emit(st.period(t, inferred=True))
        on = self.threads[task.tid] = _Thread(ON, t, task=st.task or task)
        on.dead = st.dead

    def _switch_in(self, task: Task, key, t: int, from_idle: bool) -> None:
        st = self.threads.get(key)
        if self.per_process:
            if st is not None and st.phase != ON:
                _count(self.stats, "per_process_unmeasured", tid=task.tid)
                if st.wake is not None:
                    self.emit(st.period(None))
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
                if task.tid and self.per_thread:
                    _thread_counts(self.stats, task.tid).no_wakeup += 1
            self.emit(st.period(t, idle=from_idle))
        dead = st.dead
        self.threads[key] = _Thread(ON, t, task=task)
        self.threads[key].dead = dead

    # -- wakeup / exit ----------------------------------------------------------
    def _wakeup(self, ev: SchedEvent, t: int) -> None:
        target = ev.target
        if target is None:  # perf script -F without 'trace': no task to wake
            raise _missing_payload(self.path, ev)
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
            self.emit(st.period(None))
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
    def finish(self, include_open: bool) -> None:
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
                    self.emit(st.period(None))     # woken, never switched in: blocked part known
                continue
            if st.phase == ON:
                if self.oncpu:
                    self.emit(OnCpu(st.task, st.start, end))
            else:
                self.emit(st.period(end))
        self.threads.clear()
        self.stats["wakeup_events"] = self.wakeups
        # sched_wakeup events: a trace of sched_waking alone (perf sched record) can miss
        # wake-ups that sched_wakeup shows (measured: a throttled reader's I/O wake-ups)
        self.stats["sched_wakeup_events"] = self.wakeups_not_waking
        # sched_waking events: they fire in the waker, so none is lost with an idle CPU's
        self.stats["sched_waking_events"] = self.wakings
        self.stats["first_ns"] = self.first_ns
        self.stats["last_ns"] = self.last_ns


