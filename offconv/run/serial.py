"""Reader: any input in this process, the path every input can take (the other readers
are faster ways to the same result). A format that sums its own samples (``sum_blocks``:
perf script; ``sum_lines``: plain folded) adds them straight into an aggregate.Sums once
its first records show the samples route; any other input's records are routed by type
(``reading.route_of``) and summed or timed by load()."""
from __future__ import annotations

from contextlib import nullcontext
from itertools import chain

from offconv.model import gcpause
from offconv.model.errors import ParseError
from offconv.model.records import ONCPU
from offconv.inputs.source import numbered_blocks, until_cut, ends_inside
from offconv.run.aggregate import Sums
from offconv.run.reading import SAMPLES, Input, Read, peek, route_of


def read(inp: Input) -> Read:
    """The input read here, by the fastest of the three ways its format allows."""
    fmt, mode = inp.fmt, inp.opts.aggregate.mode
    if fmt.parse_blocks is not None:
        return summed(inp)
    if fmt.sum_lines is not None and mode in ("auto", ONCPU):
        sums = Sums(inp.opts.parse)   # its records are all Samples
        with gcpause.paused():
            fmt.sum_lines(inp.src.lines(), inp.path, inp.opts.parse, inp.stats, sums)
        return Read(SAMPLES, sums, inp.src)
    route, records = route_of(fmt.parse(inp.src.lines(), inp.path, inp.opts.parse, inp.stats),
                              mode)
    return Read(route, records, inp.src)


def summed(inp: Input, part=None) -> Read:
    """(SAMPLES, aggregate.Sums) when the input's first block list decides the samples
    route; else its records as ``route_of`` routes them. ``part``: a reader's hooks
    around the sum (run.perf_data.Part): ``check(route)`` before it, entered around it,
    ``start(first_record, sums)`` as it begins and ``finish(sums, stats)`` once the sum
    is whole."""
    src, fmt, opts, mode = inp.src, inp.fmt, inp.opts, inp.opts.aggregate.mode
    lists, route, first_record = peek(src, fmt, opts, mode)
    if part is not None:
        part.check(route)
    if route != SAMPLES:
        blocks = chain.from_iterable(numbered_blocks(n, p) for n, p in lists)
        records = until_cut(fmt.parse_blocks(blocks, src.path, opts.parse, inp.stats), src)
        return Read(*route_of(records, mode), src)
    sums = Sums(opts.parse)
    with (part if part is not None else nullcontext()), gcpause.paused():
        if part is not None:
            part.start(first_record, sums)
        try:
            fmt.sum_blocks(lists, src.path, opts.parse, inp.stats, sums,
                           streaming=src.binary_format is not None)
        except ParseError as e:   # the last line, cut short: warned of, not an error
            if not ends_inside(e, src):
                raise
        if part is not None:
            part.finish(sums, inp.stats)
    return Read(SAMPLES, sums, src)

