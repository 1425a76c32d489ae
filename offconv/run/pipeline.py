"""load(): every input → one Profile. The CLI's library entry point; no click here.

For each input: open it (inputs.source; detect its format, reading.open_input) → the first
reader of ``READERS`` that takes it reads it into a mergeable value (reading.Read: a
Profile, aggregate.Sums, a sched split, or records) → that value is merged, in input
order, into the profile (samples summed per stack) or kept for the off-CPU path
(run.offcpu: intervals → periods → stacks and the per-thread analysis). The readers are
one interface with several implementations: ``serial`` takes any input; the others are
faster ways to the same bytes for some inputs (a big on-CPU file over two processes, a
big sched file over two, a perf.data with its converter's extras) and say None to the
rest. Records are dispatched by their type (model.records), never by a format's name."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator, Optional

from offconv.inputs.utf8 import invalid_utf8_warning
from offconv.model.errors import OffconvError
from offconv.model.records import BLOCKED, Histogram, Profile, ThreadTime
from offconv.run import perf_data, sched_split, serial, split
from offconv.run.aggregate import Sums, aggregate_samples, sample_filters, select_samples
from offconv.run.reading import SAMPLES, Input, Read, open_input  # noqa: F401 (open_input: the CLI's)

# in the order they are asked; the last takes every input
READERS = (split.read, sched_split.read, perf_data.read, serial.read)


def read(inp: Input) -> Read:
    """The first reader's Read that takes ``inp``."""
    for reader in READERS[:-1]:
        done = reader(inp)
        if done is not None:
            return done
    return READERS[-1](inp)


def load(paths: Iterable[str], opts, from_format: str = "auto",
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
    acc = _Merged()
    for path in paths:
        src, fmt = open_input(path, from_format, kallsyms=opts.parse.kallsyms,
                              lenient=opts.parse.lenient)
        if fmt.notes is not None:
            acc.notes.extend(f"{path}: {n}" for n in fmt.notes(src.head))
        inp = Input(path, src, fmt, opts, acc.stats, acc.profile, acc.routes, from_format)
        acc.add(path, read(inp), opts)
    return acc.finish(paths, opts, select)


class _Merged:
    """What load() has gathered from the inputs so far, merged in input order."""

    def __init__(self):
        self.profile: Optional[Profile] = None
        self.sched_inputs: list = []
        self.histograms: list = []
        self.thread_times: list = []
        self.stats: dict = {}
        self.routes: set = set()
        self.notes: list = []
        self.sources: list = []

    def add(self, path: str, done: Read, opts) -> None:
        """One input's Read: summed into the profile, or kept for the off-CPU path."""
        route, value, src = done
        self.sources.append(src)
        self.routes.add(route)
        if len(self.routes) > 1:
            raise OffconvError(f"{path}: cannot merge off-CPU (sched event) inputs with "
                               "on-CPU or folded ones; give --mode")
        if value.__class__ is Profile:
            self.profile = value
        elif value.__class__ is Sums:
            self.profile = value.finish(self.profile, path)
        elif value.__class__ is sched_split.Split:
            self.sched_inputs.append((path, value))
        else:
            records = _collect_histograms(value, self.histograms, self.thread_times)
            if route == SAMPLES:
                self.profile = aggregate_samples(records, opts.parse, self.profile, path)
            else:
                self.sched_inputs.append((path, records))

    def finish(self, paths: list, opts, select: bool) -> Profile:
        """The Profile of every input: the off-CPU path run, histograms merged, warnings."""
        agg, stats = opts.aggregate, self.stats
        profile, sched_inputs = self.profile, self.sched_inputs
        histograms, thread_times, sources, notes = (self.histograms, self.thread_times,
                                                    self.sources, self.notes)
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
        _add_warnings(profile, sources, notes, stats)
        return profile


def _add_warnings(profile: Profile, sources: list, notes: list, stats: dict) -> None:
    """The inputs' warnings into ``profile``: the converters' notes first (perf found no
    kernel symbols: every cause is in doubt), then lines cut short, events the recording
    lost and lines --lenient skipped (those also counted in the dropped figures)."""
    # the converters' warnings first (perf found no kernel symbols: every cause is in doubt)
    profile.warnings[:0] = [n for src in sources for n in getattr(src, "notes", ())] + notes
    bad_text = invalid_utf8_warning(sources, stats)
    if bad_text:
        profile.warnings.append(bad_text)
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


def _collect_histograms(records: Iterator, out: list, times: list) -> Iterator:
    for r in records:
        if r.__class__ is Histogram:
            out.append(r)
        elif r.__class__ is ThreadTime:
            times.append(r)
        else:
            yield r
