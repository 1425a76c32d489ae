"""The sched events themselves, kept as they pass (--to perfetto: AggregateOptions.events).
May import offconv.model."""
from __future__ import annotations

from typing import Iterable

from offconv.model.records import SchedEvent


def kept(events: Iterable, out: list) -> Iterable:
    """``events``, each sched event also kept in ``out`` as a tuple: (time ns, cpu, kind,
    header tid, header comm, prev tid, prev comm, prev state, next tid, next comm, target
    tid, target comm, new, the event's name)."""
    for ev in events:
        if ev.__class__ is SchedEvent:
            p, n, t = ev.prev, ev.next, ev.target
            out.append((ev.time_ns, ev.cpu, ev.kind, ev.task.tid, ev.task.comm,
                        p.tid if p else None, p.comm if p else "", ev.prev_state,
                        n.tid if n else None, n.comm if n else "",
                        t.tid if t else None, t.comm if t else "", ev.new, ev.event))
        yield ev
