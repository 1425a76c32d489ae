"""What every reader of run/ shares: an ``Input`` (one opened input and what load() has
gathered so far) comes in, a ``Read`` (its route and what it became) goes out; the route is
decided by the records' types (``route_of``), from the first records (``peek``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Iterator, NamedTuple, Optional

from offconv.model import registry as formats
from offconv.model.errors import OffconvError
from offconv.model.options import Options
from offconv.model.records import OFFCPU_MODES, ONCPU, SWITCH, Profile, Sample, SchedEvent, is_sched_tracepoint
from offconv.inputs.source import Source, numbered_blocks, until_cut

SCHED, SAMPLES = "sched", "samples"


@dataclass
class Input:
    """One input as a reader gets it: its path, opened Source and detected format, the
    options (``opts.aggregate`` already has load()'s defaults), the parse stats to add
    to, the profile of the inputs before it (on the samples route: a reader may add to
    it), the routes taken so far, and the --from format asked for (a reader that opens
    the input again needs it)."""
    path: str
    src: Source
    fmt: Any
    opts: Options
    stats: dict
    profile: Optional[Profile] = None
    routes: set = field(default_factory=set)
    from_format: str = "auto"

    @property
    def first(self) -> bool:
        return self.profile is None


class Read(NamedTuple):
    """A reader's result: ``route`` (SCHED or SAMPLES); ``value``: a Profile (the inputs
    so far with this one added), an aggregate.Sums, a sched_split.Split, or an iterator of
    records; ``src``: the Source whose notes and cut line the profile's warnings take."""
    route: str
    value: Any
    src: Source


def open_input(path: str, from_format: str = "auto", demangle_here: bool = True,
               kallsyms: Optional[str] = None, lenient: bool = False):
    """(Source, InputFormat of its text) for one input. A binary format (perf.data) is
    recognised by its magic and converted to text, which is then detected like any other
    (``demangle_here``: the converter may leave C++/Rust names to offconv; ``kallsyms``:
    the converter's kernel symbols, perf script --kallsyms)."""
    src = Source(path, demangle_here=demangle_here, kallsyms=kallsyms, lenient=lenient)
    if from_format != "auto":
        fmt = formats.input_format(from_format)
        if fmt.magic is not None:
            if src.binary_format is not fmt:
                raise OffconvError(f"{path}: expected {fmt.description} (magic "
                                   f"{fmt.magic.decode()}), got another file")
        elif src.binary_format is None:
            return src, fmt
    if src.binary_format is not None and not src.head:
        raise OffconvError(f"{path}: {src.binary_format.name}: the conversion printed no events")
    return src, formats.detect(path, src.head)


def peek(src: Source, fmt, opts: Options, mode: str) -> tuple:
    """(the input's block lists, the route its first list decides or None, the first
    record with an event type, up to the one that decides it: its type is the default
    --event-filter). The first list is looked at through parse_blocks with stats of its own;
    those records are dropped: the lists are read again from their start. None when the
    format does not sum its own samples (no sum_blocks)."""
    lists = src.block_lists()
    first = next(lists, None)
    if first is None:
        return lists, None, None
    lists = chain([first], lists)
    if fmt.sum_blocks is None:
        return lists, None, None
    deciding: list = []
    route, _ = route_of(until_cut(fmt.parse_blocks(numbered_blocks(*first), src.path, opts.parse,
                                                 {}), src), mode, deciding)
    return lists, (route if deciding else None), (deciding[0] if deciding else None)


# the scheduler's other tracepoints route_of reads past, looking for a sched_switch, before
# it takes an input for samples of them
ROUTE_LOOKAHEAD = 50_000


def route_of(records: Iterator, mode: str, deciding: Optional[list] = None) -> tuple[str, Iterator]:
    """Which path an input's records take: SCHED (intervals, the off-CPU modes) or SAMPLES.
    Looks ahead only until the first sched_switch or the first Sample that is not of
    another scheduler tracepoint (``ROUTE_LOOKAHEAD`` of those at most). ``auto``: SCHED
    when the input has sched_switch events; an off-CPU mode: SCHED, unless the samples
    already measure off-CPU time (bcc offcputime -f); ``oncpu``: SAMPLES (sched events
    are then counted as events, like stackcollapse-perf.pl counts them)."""
    buf = []
    route = SAMPLES if mode in ("auto", ONCPU) else SCHED
    sched_samples = 0
    for r in records:
        buf.append(r)
        if r.__class__ is SchedEvent:
            if r.kind == SWITCH:
                if mode == "auto":
                    route = SCHED
                break
        elif r.__class__ is Sample:
            if mode in OFFCPU_MODES and r.kind != ONCPU:
                route = SAMPLES
            elif mode == "auto" and is_sched_tracepoint(r.event) and sched_samples < ROUTE_LOOKAHEAD:
                # `perf sched record` puts sched_stat_runtime, sched_migrate_task,
                # sched_process_fork, ... before the first sched_switch: a scheduler
                # trace, not an on-CPU profile of those events
                sched_samples += 1
                continue
            break
    else:
        return route, iter(buf)
    if deciding is not None:  # the first event type met (Sums' default event filter)
        deciding.append(next((x for x in buf if getattr(x, "event", "")), r))
    return route, chain(buf, records)
