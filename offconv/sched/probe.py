"""Whether a sched event stream is a `perf record -p PID` recording (only the events of one
process: switches into idle, never an event of the idle task), decided on a bounded prefix
(``_probe``), or across the cut of an input read in two parts (``probe_marks``,
``probe_on``). May import offconv.model."""
from __future__ import annotations

from itertools import chain, islice
from typing import Iterable, Iterator, Optional

from offconv.model.records import SWITCH, SchedEvent


PROBE_EVENTS = 20000       # at most this many events are buffered to detect a -p recording


PROBE_IDLE_SWITCHES = 20   # switches into idle without any idle event: a -p recording


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
