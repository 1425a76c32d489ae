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
from itertools import chain, islice
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.model.records import EXIT, SWITCH, WAKE, OnCpu, Period, SchedEvent, Task, ThreadCounts, is_sched_tracepoint

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


def _probe(events: Iterable) -> tuple[bool, Iterator, Optional[tuple]]:
    """(a `perf record -p` recording?, the events, and, when they ended before the probe
    could decide, (how many records it read, its switches into idle))."""
    it = iter(events)
    head = []
    into_idle = 0
    for ev in islice(it, PROBE_EVENTS):
        head.append(ev)
        seen = _probed(ev)
        if seen == _IDLE_TASK:
            return False, chain(head, it), None
        into_idle += seen == _INTO_IDLE
    undecided = (len(head), into_idle) if len(head) < PROBE_EVENTS else None
    return into_idle >= PROBE_IDLE_SWITCHES, chain(head, it), undecided


_IDLE_TASK, _INTO_IDLE = 1, 2


def _probed(ev) -> int:
    """What the -p probe sees in a record: an event of an idle task (never in a -p
    recording), a switch into idle, or neither (0)."""
    if ev.__class__ is not SchedEvent:
        return 0
    if ev.task.tid == 0 or (ev.kind == SWITCH and ev.prev is not None and ev.prev.tid == 0):
        return _IDLE_TASK
    return _INTO_IDLE if ev.kind == SWITCH and ev.next is not None and ev.next.tid == 0 else 0


def probe_marks(records: list) -> tuple:
    """What _probe would see in ``records`` (the first PROBE_EVENTS of a later part): the
    index of the first event of an idle task or None, and the indices of the switches
    into idle before it."""
    into = []
    for i, ev in enumerate(records):
        seen = _probed(ev)
        if seen == _IDLE_TASK:
            return i, into
        if seen == _INTO_IDLE:
            into.append(i)
    return None, into


def probe_on(undecided: tuple, marks: tuple) -> bool:
    """_probe's answer over a first part that ended before it decided (``undecided``:
    records read, switches into idle) and the next part (its ``probe_marks``)."""
    n, into_idle = undecided
    left = PROBE_EVENTS - n
    idle_at, into = marks
    if idle_at is not None and idle_at < left:
        return False
    return into_idle + sum(1 for i in into if i < left) >= PROBE_IDLE_SWITCHES


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
          per_thread: bool = True, on_exit=None) -> None:
    """intervals(), each record handed to ``emit`` as it is made (no generator between
    the machine and its consumer: the off-CPU path's fast way). ``per_thread``: False
    keeps no per-thread stats (``threads``, ``exits``, ``parents``: the analysis's), so
    that a stack output's memory does not grow with the threads the input had; a `perf
    record -p` recording keeps them all the same (its warning names its threads).
    ``on_exit(tid, held, t)``: called when a thread has ended (at ``t``), after its last record was
    handed to ``emit`` (not for a `perf record -p` recording, which has no switch-ins);
    ``held()`` gives the tids the machine's state still names (``_Machine.held``)."""
    machine, events = _machine(events, path, lenient, stats, system_wide, tail, emit, oncpu,
                               per_thread)
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
        _count(self.stats, "sched_other" if other else "samples")

    def step(self, ev: SchedEvent) -> None:
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
            self.emit(OnCpu(prev if prev.pid is not None else (st.task or prev), st.start, t))

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
            self.emit(OnCpu(st.task, tin, t))

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


# -- one input over two processes (offconv.run.sched_split) ---------------------------------
# what the second part leaves to the first part's machine, in file order
OP_OUT, OP_HANDOVER, OP_IN, OP_WAKE, OP_EXIT, OP_SEEN, OP_MISSED, OP_GIVE, OP_SIGHT = range(9)


class TailMachine(_Machine):
    """The second part of an input cut in two, in the process that reads it: the threads'
    and CPUs' states at the cut are the first part's, unknown here.

    A thread's state is this part's own from its first switch-out here on (the key is
    ``owned``): the switch-out sets every field of it (a thread marked dead before is
    checked by the first part), or from its creation here (sched_wakeup_new before any
    other event of it here: the first part is checked to have no such thread). Until
    then, every event of that thread goes to ``ops``,
    which the first part's machine replays on its own state after its last event (``join``):
    its switch-in, wakeup, exit, and what its first switch-out here ends (its time on CPU, or
    its off-CPU period if the switch-in was lost). An exit among them leaves the thread to
    the first part for the rest of the input (its later switch-out may end it as dead). A
    CPU's previous switch is known here after its first switch in this part: before, an
    inferred switch-in reads the first part's (``OP_MISSED``), and so does a task seen
    running there (``OP_SIGHT``: whether that CPU had gone idle); a thread of this part's
    seen so goes back to the first part (``OP_GIVE``) until its next switch-out."""

    def __init__(self, path: str, lenient: bool, stats: dict, emit=None, oncpu: bool = True,
                 per_thread: bool = True):
        for key in ("threads", "parents", "exits", "by_tid"):
            stats.setdefault(key, {})
        super().__init__(path, lenient, stats, False, emit, oncpu, per_thread)
        stats.setdefault("command", set())
        self.owned: set = set()
        self.born: set = set()     # owned from a sched_wakeup_new
        self.touched: set = set()  # keys with ops
        self.left: set = set()     # keys with an exit in ops: the first part's to the end
        self.ops: list = []
        self.marks: tuple = (None, [])  # probe_marks of the part's first records

    def _cpu_state(self, cpu) -> Optional[tuple]:
        if cpu is None or cpu not in self.cpu_last:
            return None
        return self.cpu_last[cpu], self.cpu_idle.get(cpu, False)

    def _seen_running(self, task: Task, t: int) -> None:
        if task.tid in self.owned:
            super()._seen_running(task, t)
        else:
            self.ops.append((OP_SEEN, task, t))
            self.touched.add(task.tid)

    def _switch_out(self, ev: SchedEvent, prev: Task, t: int) -> None:
        key = _key(prev, ev.cpu)
        if key in self.owned:
            super()._switch_out(ev, prev, t)
            return
        self.touched.add(key)
        if key in self.left:
            self.ops.append((OP_OUT, ev, prev, t, self._cpu_state(ev.cpu)))
            return
        self.ops.append((OP_HANDOVER, prev, key, ev.cpu, t, self._cpu_state(ev.cpu),
                         is_dead(ev.prev_state)))
        self.owned.add(key)
        self._off(ev, prev, key, t, False)

    def _missed_switch_in(self, st: _Thread, key, cpu, t: int, seen: bool = False) -> None:
        if cpu is not None and cpu not in self.cpu_last:
            self.ops.append((OP_MISSED, st, key, cpu, t))
        else:
            super()._missed_switch_in(st, key, cpu, t, seen)

    def _on_idle(self, cpu) -> bool:
        # a CPU not yet switched in this part: the first part's last switch there decides
        return cpu not in self.cpu_last or self.cpu_idle.get(cpu, False)

    def _seen_after_idle(self, task: Task, cpu, t: int) -> None:
        key = task.tid
        if key in self.owned:
            if cpu in self.cpu_last:
                super()._seen_after_idle(task, cpu, t)
                return
            st = self.threads.get(key)
            if st is None or st.phase == ON:
                return
            # whether it was switched in depends on the first part's state: it goes back
            del self.threads[key]
            self.owned.discard(key)
            self.ops.append((OP_GIVE, key, st))
        self.touched.add(key)
        self.ops.append((OP_SIGHT, task, cpu, t, self._cpu_state(cpu)))

    def _switch_in(self, task: Task, key, t: int, from_idle: bool) -> None:
        if key in self.owned:
            super()._switch_in(task, key, t, from_idle)
        else:
            self.ops.append((OP_IN, task, key, t, from_idle))
            self.touched.add(key)

    def _wakeup(self, ev: SchedEvent, t: int) -> None:
        if ev.target is None:
            raise _missing_payload(self.path, ev)
        key = _key(ev.target, ev.cpu)
        if key not in self.owned and ev.new and key not in self.touched:
            self.owned.add(key)   # a thread created here
            self.born.add(key)
        if key in self.owned:
            super()._wakeup(ev, t)
        else:
            self.ops.append((OP_WAKE, ev, t))
            self.touched.add(key)

    def _exit(self, ev: SchedEvent) -> None:
        key = _key(ev.target or ev.task, ev.cpu)
        if key in self.owned:
            super()._exit(ev)
        else:
            self.ops.append((OP_EXIT, ev))
            self.left.add(key)
            self.touched.add(key)

    def part(self) -> dict:
        """What the first part's machine needs to go on from this part's end."""
        return {"ops": self.ops, "born": self.born, "marks": self.marks, "threads": self.threads,
                "cpu_last": self.cpu_last, "cpu_idle": self.cpu_idle, "stats": self.stats,
                "wakeups": self.wakeups, "wakeups_not_waking": self.wakeups_not_waking,
                "wakings": self.wakings,
                "first_ns": self.first_ns, "last_ns": self.last_ns}


def joins(machine: _Machine, part: dict) -> bool:
    """Whether ``part`` (TailMachine.part) can follow ``machine``'s last event as it is:
    no `perf record -p` recording, no event of the part before that one, no thread it
    took over that the first part had marked dead (the part took it for alive), and none
    it saw created that the first part still has."""
    if machine.per_process:
        return False
    first = part["first_ns"]
    if first is not None and machine.last_ns is not None and first < machine.last_ns:
        return False
    threads = machine.threads
    for op in part["ops"]:
        if op[0] == OP_HANDOVER and not op[6]:
            st = threads.get(op[2])
            if st is not None and st.dead:
                return False
    return not any(key in threads for key in part["born"])


def join(machine: _Machine, part: dict) -> None:
    """The records ``part`` leaves to ``machine`` (its ops replayed in order, each with
    the CPU's previous switch as it was then), and then its states and counts taken over:
    as if ``machine`` had read the part's events itself. Call ``joins`` first."""
    last, idle = dict(machine.cpu_last), dict(machine.cpu_idle)

    def cpu_then(cpu, state) -> None:
        if state is None:   # no switch on that CPU in the part before this op
            state = (last[cpu], idle.get(cpu, False)) if cpu in last else None
        if state is None:
            machine.cpu_last.pop(cpu, None)
            machine.cpu_idle.pop(cpu, None)
        else:
            machine.cpu_last[cpu], machine.cpu_idle[cpu] = state

    for op in part["ops"]:
        kind = op[0]
        if kind == OP_HANDOVER:   # the part goes on with this thread from here
            _, prev, key, cpu, t, state, _ = op
            cpu_then(cpu, state)
            machine._run_ended(machine.threads.pop(key, None), prev, key, cpu, t)
        elif kind == OP_OUT:
            _, ev, prev, t, state = op
            cpu_then(ev.cpu, state)
            machine._switch_out(ev, prev, t)
        elif kind == OP_IN:
            machine._switch_in(*op[1:])
        elif kind == OP_WAKE:
            machine._wakeup(*op[1:])
        elif kind == OP_EXIT:
            machine._exit(op[1])
        elif kind == OP_SEEN:
            machine._seen_running(*op[1:])
        elif kind == OP_GIVE:
            machine.threads[op[1]] = op[2]
        elif kind == OP_SIGHT:
            _, task, cpu, t, state = op
            cpu_then(cpu, state)
            if machine.cpu_idle.get(cpu, False):
                machine._seen_after_idle(task, cpu, t)
        else:
            _, st, key, cpu, t = op
            cpu_then(cpu, None)
            machine._missed_switch_in(st, key, cpu, t)
    machine.threads.update(part["threads"])
    machine.cpu_last.update(last)
    machine.cpu_idle.update(idle)
    machine.cpu_last.update(part["cpu_last"])
    machine.cpu_idle.update(part["cpu_idle"])
    machine.wakeups += part["wakeups"]
    machine.wakeups_not_waking += part["wakeups_not_waking"]
    machine.wakings += part["wakings"]
    if part["last_ns"] is not None:
        machine.first_ns = machine.first_ns if machine.first_ns is not None else part["first_ns"]
        machine.last_ns = part["last_ns"]
    merge_stats(machine.stats, part["stats"])


def merge_stats(stats: dict, later: dict) -> None:
    """Interval stats of a later part of the same input into ``stats``, in place: counts
    add up, per-thread counts too, a thread's end is its latest, sets join."""
    for key, value in later.items():
        if key == "threads":
            for tid, c in value.items():
                row = _thread_counts(stats, tid)
                row.switches += c.switches
                row.inferred += c.inferred
                row.no_wakeup += c.no_wakeup
        elif key == "by_tid":
            rows = stats.setdefault("by_tid", {})
            for tid, counts in value.items():
                row = rows.setdefault(tid, {})
                for name, n in counts.items():
                    row[name] = row.get(name, 0) + n
        elif key == "exits":
            exits = stats.setdefault("exits", {})
            for tid, t in value.items():
                exits[tid] = max(t, exits.get(tid, t))
        elif key == "parents":
            stats.setdefault("parents", {}).update(value)
        elif key == "command":
            stats.setdefault("command", set()).update(value)
        else:
            stats[key] = stats.get(key, 0) + value
