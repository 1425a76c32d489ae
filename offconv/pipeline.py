"""source -> detect -> parser -> (intervals) -> aggregate -> Profile.

The library entry point the CLI uses; no click here."""
from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import Iterable, Iterator, Optional

from . import formats
from .aggregate import aggregate_samples
from .errors import OffconvError
from .model import SWITCH, Profile, SchedEvent
from .options import Options
from .parsers.folded import FoldedLine
from .source import Source

OFFCPU_MODES = ("offcpu", "blocked", "runq", "wakeup")


def open_input(path: str, from_format: str = "auto"):
    """(Source, InputFormat) for one input; perf.data is recognised by its magic and read
    through ``perf script``, whose text is then detected like any other."""
    src = Source(path)
    if from_format == "perf-data" and src.kind != "perf-data":
        raise OffconvError(f"{path}: expected perf.data (magic PERFILE2), got another file")
    if from_format in ("auto", "perf-data"):
        if src.kind == "perf-data" and not src.head:
            raise OffconvError(f"{path}: perf script printed no events")
        return src, formats.detect(path, src.head)
    return src, formats.input_format(from_format)


def _records(src: Source, fmt, opts: Options, stats: dict) -> Iterator:
    if fmt.parse_blocks is not None:
        return fmt.parse_blocks(src.blocks(), src.path, opts.parse, stats)
    return fmt.parse(src.lines(), src.path, opts.parse, stats)


def _resolve_mode(records: Iterator, mode: str) -> tuple[str, Iterator]:
    """auto: offcpu when the input has sched_switch events, else oncpu. Looks ahead only
    until the first sched_switch or the first non-sched sample."""
    if mode != "auto":
        return mode, records
    buf = []
    resolved = "oncpu"
    for r in records:
        buf.append(r)
        if isinstance(r, SchedEvent):
            if r.kind == SWITCH:
                resolved = "offcpu"
                break
        else:
            break
    return resolved, chain(buf, records)


def load(paths: Iterable[str], opts: Options, from_format: str = "auto",
         state_split_default: bool = False) -> Profile:
    """Parse and aggregate every input into one Profile (each input with its own state)."""
    agg = opts.aggregate
    if agg.state_split is None:
        agg = replace(agg, state_split=state_split_default)
    profile: Optional[Profile] = None
    offcpu_inputs = []
    stats: dict = {}
    mode_seen = None
    for path in paths:
        src, fmt = open_input(path, from_format)
        records = _records(src, fmt, opts, stats)
        if fmt.name == "folded":
            profile = _add_folded(profile, records)
            mode_seen = mode_seen or "folded"
            continue
        mode, records = _resolve_mode(records, agg.mode)
        if mode_seen and mode_seen != mode and mode_seen != "folded":
            raise OffconvError(f"{path}: mode {mode} differs from the other inputs' ({mode_seen}); "
                               "give --mode")
        mode_seen = mode
        if mode == "oncpu":
            profile = aggregate_samples(records, agg, opts.parse, profile)
        else:
            offcpu_inputs.append((path, (r for r in records if isinstance(r, SchedEvent))))
    if offcpu_inputs:
        from . import offcpu  # the off-CPU path
        if profile is not None:
            raise OffconvError("cannot merge off-CPU inputs with on-CPU or folded ones")
        profile = offcpu.build_profile(offcpu_inputs, replace(agg, mode=mode_seen),
                                       lenient=opts.parse.lenient)
    if profile is None:
        profile = Profile()
    if stats.get("skipped_lines"):
        profile.warnings.append(f"skipped {stats['skipped_lines']} malformed lines "
                                f"(first: {stats['first_skipped']})")
    return profile


def _add_folded(profile: Optional[Profile], lines: Iterable[FoldedLine]) -> Profile:
    profile = profile or Profile(unit="samples", mode="folded")
    samples = profile.samples
    before = profile.before
    for ln in lines:
        if ln.before is not None:
            if before is None:
                before = profile.before = {}
            before[ln.stack] = before.get(ln.stack, 0) + ln.before
        samples[ln.stack] = samples.get(ln.stack, 0) + ln.count
    return profile
