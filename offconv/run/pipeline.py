"""source -> detect -> parser -> (intervals) -> aggregate -> Profile.

The library entry point the CLI uses; no click here. Records are dispatched by their
type (offconv.model.records), never by the name of the format that produced them:
``SchedEvent`` streams go through the intervals to the off-CPU path, ``Sample`` streams
are summed per stack, ``Histogram`` records are collected."""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from itertools import chain
from typing import Iterable, Iterator, Optional

from offconv.model import registry as formats, gcpause
from offconv.run.aggregate import Sums, aggregate_samples, sample_filters, select_samples
from offconv.model.errors import OffconvError, ParseError
from offconv.model.records import BLOCKED, OFFCPU_MODES, ONCPU, SWITCH, Histogram, Profile, Sample, SchedEvent, ThreadTime, is_sched_tracepoint
from offconv.model.options import Options
from offconv.inputs.source import Source, numbered_blocks

SCHED, SAMPLES = "sched", "samples"


def open_input(path: str, from_format: str = "auto", demangle_here: bool = True,
               kallsyms: Optional[str] = None):
    """(Source, InputFormat of its text) for one input. A binary format (perf.data) is
    recognised by its magic and converted to text, which is then detected like any other
    (``demangle_here``: the converter may leave C++/Rust names to offconv; ``kallsyms``:
    the converter's kernel symbols, perf script --kallsyms)."""
    src = Source(path, demangle_here=demangle_here, kallsyms=kallsyms)
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


def ends_inside(err: ParseError, src: Source) -> bool:
    """Whether ``err`` is about the line the input ``src`` ends inside (a killed perf
    script's last line, cut short): that line is never an error -- a line cut short
    elsewhere stays one -- the records end before it, and load() warns that the input
    ends inside it."""
    return err.lineno is not None and err.lineno == src.cut_line


def until_cut(records: Iterable, src: Source) -> Iterator:
    """``records`` of the input ``src``, ended quietly where they fail at the line the input
    ends inside (``ends_inside``; its record is lost anyway)."""
    try:
        yield from records
    except ParseError as e:
        if not ends_inside(e, src):
            raise


def _summed_or_routed(src: Source, fmt, opts: Options, stats: dict, mode: str,
                      first: bool = True):
    """(SAMPLES, aggregate.Sums) when the format sums its own samples (sum_blocks) and the
    input's first block list already decides the samples route; else (route, records), as
    _route gives them. ``first``: the first input (a perf.data split may then leave its
    second part's stacks out of the sums, named only for an SVG: parallel.follow_split)."""
    lists, route, first_record = peek(src, fmt, opts, mode)
    if src.mangled and (route != SAMPLES or opts.parse.demangle):
        from offconv.inputs.demangle import Retry  # only the summed path demangles (and not
        raise Retry("not summed here")       # after --demangle): perf is to demangle
    if route == SAMPLES:
        sums = Sums(opts.parse)
        from offconv.run.parallel import follow_split
        split = None
        names = nullcontext()
        if src.mangled:  # perf script --no-demangle: the names are demangled once, here
            from offconv.inputs import demangle
            names = demangle.collecting()
        follow = getattr(src, "_stream", None)
        ahead = None
        try:
            with names, gcpause.paused():
                # perf.data: the end of perf's output, if the parser lags, over two
                # processes (the child is forked here: it collects mangled names too)
                split = follow_split(src, fmt, opts, first_record, sums, first)
                ahead = _names_while_perf_prints(follow, src, opts, sums, first)
                if split is not None and ahead is not None:
                    split.stack_names = ahead
                try:
                    fmt.sum_blocks(lists, src.path, opts.parse, stats, sums,
                                   streaming=src.binary_format is not None)
                except ParseError as e:   # the last line, cut short: warned of, not an error
                    if not ends_inside(e, src):
                        raise
                if src.mangled:  # this part's (a split's child demangles its own)
                    demangle.apply_noted(sums, opts.parse.addrs)
                if split is not None:
                    split.merge_into(sums, stats, src)
                    sums.stack_names = split.stack_names
                elif ahead is not None:
                    sums.stack_names = ahead
        finally:
            if ahead is not None:  # perf has ended: nothing more to wait for
                follow.idle = None
            if split is not None:
                split.stop()
        return SAMPLES, sums
    blocks = chain.from_iterable(numbered_blocks(n, p) for n, p in lists)
    return _route(until_cut(fmt.parse_blocks(blocks, src.path, opts.parse, stats), src), mode)


def _names_while_perf_prints(follow, src: Source, opts: Options, sums, first: bool):
    """To an SVG of a perf.data (its first input; names not left to perf's demangling
    being redone here), the SVG's names of the stacks summed so far, made while the parser
    waits for perf script's output (perf_data.Follow.idle), in their order, so that the
    drawing names only the stacks that came last (naming.StackNames; on the small
    recording of benchmarks/README.md, 17k stacks: 17 of the 39 ms after perf's end).
    None when not."""
    if (follow is None or not hasattr(follow, "idle") or not first or src.mangled
            or not opts.aggregate.svg or opts.flame.flamechart):
        return None
    from offconv.run.parallel import name_step, names_ahead
    names = names_ahead(opts.naming)
    counts = sums.counts
    follow.idle = lambda: name_step(names, counts)
    return names


def _demangled_here_or_by_perf(src: Source, fmt, opts: Options, stats: dict, mode: str,
                               from_format: str, first: bool = True) -> tuple:
    """_summed_or_routed of a perf.data that perf script converted with --no-demangle
    (offconv demangles its names: parsers.demangle), or, where offconv cannot be sure to
    print what perf would (demangle.Retry), of the same file converted again with perf's
    own demangling. (route, records, the Source they came from.)"""
    from offconv.run.parallel import _merge_stats
    from offconv.inputs.demangle import Retry
    tried: dict = {}  # this conversion's stats, kept only if it is the one used
    try:
        route, records = _summed_or_routed(src, fmt, opts, tried, mode, first)
    except Retry:
        src.close()
        src, fmt = open_input(src.path, from_format, demangle_here=False,
                              kallsyms=opts.parse.kallsyms)
        route, records = _summed_or_routed(src, fmt, opts, stats, mode, first)
        return route, records, src
    _merge_stats(stats, tried)
    return route, records, src


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
    route, _ = _route(until_cut(fmt.parse_blocks(numbered_blocks(*first), src.path, opts.parse,
                                                 {}), src), mode, deciding)
    return lists, (route if deciding else None), (deciding[0] if deciding else None)


# the scheduler's other tracepoints _route reads past, looking for a sched_switch, before
# it takes an input for samples of them
ROUTE_LOOKAHEAD = 50_000


def _route(records: Iterator, mode: str, deciding: Optional[list] = None) -> tuple[str, Iterator]:
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


def load(paths: Iterable[str], opts: Options, from_format: str = "auto",
         state_split_default: bool = False) -> Profile:
    """Parse and aggregate every input into one Profile (each input with its own state)."""
    agg = opts.aggregate
    if agg.state_split is None:
        agg = replace(agg, state_split=state_split_default)
    paths = list(paths)
    select = sample_filters(agg)
    if select and (agg.folded or agg.svg):
        # samples are selected once summed (select_samples): none is named ahead of that
        agg = replace(agg, folded=False, svg=False)
        opts = replace(opts, aggregate=agg)
    profile: Optional[Profile] = None
    sched_inputs: list = []
    histograms: list = []
    thread_times: list = []
    stats: dict = {}
    routes: set = set()
    notes: list = []
    sources: list = []
    for path in paths:
        src, fmt = open_input(path, from_format, kallsyms=opts.parse.kallsyms)
        sources.append(src)
        if fmt.notes is not None:
            notes.extend(f"{path}: {n}" for n in fmt.notes(src.head))
        if agg.mode in ("auto", ONCPU) and len(routes | {SAMPLES}) == 1:
            from offconv.run.parallel import load_split
            split = load_split(path, src, fmt, replace(opts, aggregate=agg), stats, peek, profile)
            if split is not None:
                src.close()
                profile, sources[-1] = split
                routes.add(SAMPLES)
                continue
        if agg.mode != ONCPU and len(routes | {SCHED}) == 1:
            from offconv.run import sched_split
            split = sched_split.prepare(path, src, fmt, replace(opts, aggregate=agg), stats,
                                        peek, _route)
            if split is not None:  # the off-CPU path over two processes
                src.close()
                sources[-1] = split.part1
                routes.add(SCHED)
                sched_inputs.append((path, split))
                continue
        if fmt.parse_blocks is not None and src.mangled:
            route, records, src = _demangled_here_or_by_perf(src, fmt, opts, stats, agg.mode,
                                                             from_format, profile is None)
            sources[-1] = src
        elif fmt.parse_blocks is not None:
            route, records = _summed_or_routed(src, fmt, opts, stats, agg.mode, profile is None)
        elif fmt.sum_lines is not None and agg.mode in ("auto", ONCPU):
            route, records = SAMPLES, Sums(opts.parse)   # its records are all Samples
            with gcpause.paused():
                fmt.sum_lines(src.lines(), path, opts.parse, stats, records)
        else:
            route, records = _route(fmt.parse(src.lines(), path, opts.parse, stats), agg.mode)
        routes.add(route)
        if len(routes) > 1:
            raise OffconvError(f"{path}: cannot merge off-CPU (sched event) inputs with "
                               "on-CPU or folded ones; give --mode")
        if records.__class__ is Sums:
            profile = records.finish(profile, path)
            continue
        records = _collect_histograms(records, histograms, thread_times)
        if route == SAMPLES:
            profile = aggregate_samples(records, opts.parse, profile, path)
        else:
            sched_inputs.append((path, records))
    if sched_inputs:
        from offconv.run import offcpu  # the off-CPU path
        mode = "offcpu" if agg.mode == "auto" else agg.mode
        profile = offcpu.build_profile(sched_inputs, replace(agg, mode=mode),
                                       lenient=opts.parse.lenient,
                                       recorded=frozenset(stats.get("recorded_by_offconv", ())),
                                       filtered=frozenset(stats.get("recorded_filtered", ())))
    if profile is None:
        profile = Profile()
    if select and not sched_inputs:
        select_samples(profile, agg, tuple(paths))
    from offconv.sched.histograms import merge
    profile.histograms[:] = merge(profile.histograms + histograms)
    profile.thread_times.extend(thread_times)
    if thread_times and not profile.samples and profile.analysis is None:
        # threads that never blocked (CPU hogs): their blocked stacks are none, in µs
        profile.mode, profile.unit = BLOCKED, "us"
    # the converters' warnings first (perf found no kernel symbols: every cause is in doubt)
    profile.warnings[:0] = [n for src in sources for n in getattr(src, "notes", ())] + notes
    for src in sources:
        if src.cut_line is not None:
            profile.warnings.append(f"{src.path}:{src.cut_line}: the input ends inside this "
                                    "line (a file cut short?): its last event may be incomplete")
    lost = {k: stats[k] for k in ("lost_samples", "lost_chunks") if stats.get(k)}
    if lost:
        what = []
        if lost.get("lost_samples"):
            what.append(f"{lost['lost_samples']} events (PERF_RECORD_LOST)")
        if lost.get("lost_chunks"):
            pct = stats.get("lost_samples_pct")
            what.append(f"{lost['lost_chunks']} chunks" + (f" ({pct:g}% of samples)" if pct else ""))
        profile.warnings.insert(0, f"the recording lost {' and '.join(what)}: the trace has "
                                   "gaps; totals undercount and switch-ins may be inferred; "
                                   "record a shorter window or with a bigger buffer (-m)")
        if profile.analysis is not None:
            profile.analysis.dropped.update(lost)
            profile.dropped.update(lost)
    if stats.get("skipped_lines"):   # --lenient's: told, and counted in the report's dropped
        n = stats["skipped_lines"]
        profile.warnings.append(f"skipped {n} malformed line{'s' if n != 1 else ''} "
                                f"(first: {stats['first_skipped']})")
        if profile.analysis is not None:
            profile.analysis.dropped["malformed_lines"] = n
        profile.dropped["malformed_lines"] = n
    return profile


def _collect_histograms(records: Iterator, out: list, times: list) -> Iterator:
    for r in records:
        if r.__class__ is Histogram:
            out.append(r)
        elif r.__class__ is ThreadTime:
            times.append(r)
        else:
            yield r
