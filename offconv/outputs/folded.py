"""Folded stacks (``frame;frame;frame weight``), sorted by stack in byte order as
stackcollapse-perf.pl sorts them, so flamegraph.pl and inferno read them unchanged.
A differential profile prints ``stack before after`` (difffolded.pl's layout).
Display names come from the frames (offconv.model.naming); stacks that print the same merge."""
from __future__ import annotations

from typing import TextIO

from offconv.model.formats import OutputFormat
from offconv.model.records import TIME_UNITS, Profile
from offconv.model.naming import Namer, merge_by
from offconv.model.options import NamingOptions
from offconv.model.units import ns_to_us


def format_count(v) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return str(int(v))
        return f"{v:.6f}".rstrip("0").rstrip(".")
    return str(v)


def _in_us(weights: dict, unit: str) -> dict:
    """Time weights in another unit (a bpftrace map in ns, folded input read with --unit ms)
    as integer µs, the unit of off-CPU folded stacks (DESIGN.md), rounded to the nearest;
    those that round to 0 are then left out, as the off-CPU path's."""
    scale = TIME_UNITS[unit]
    if scale < 1000:   # ns
        return {s: ns_to_us(round(v * scale)) for s, v in weights.items()}
    k = scale // 1000
    return {s: (v * k if v.__class__ is int else round(v * k)) for s, v in weights.items()}


def render(profile: Profile, out: TextIO, opts=None) -> None:
    namer = Namer(getattr(opts, "naming", None) or NamingOptions())
    known = profile.folded_names
    if known is not None and known.opts == namer.opts:  # offconv.run.parallel named some ahead
        after = merge_by(profile.samples, None, known.folded(profile.samples, namer))
        if known.named:  # and summed some by name only
            for name, w in known.named.items():
                after[name] = after.get(name, 0) + w
    elif known is not None and known.named:
        raise RuntimeError("folded names made under other naming options")  # never: one Options
    else:
        after = merge_by(profile.samples, namer.folded)
    if profile.unit in TIME_UNITS and profile.unit != "us":
        after = _in_us(after, profile.unit)
    # sort by the stack text alone (not the whole line): that is stackcollapse-perf.pl's order
    if profile.before is not None:
        before = merge_by(profile.before, namer.folded)
        if profile.unit in TIME_UNITS and profile.unit != "us":
            before = _in_us(before, profile.unit)
        out.writelines(f"{s} {format_count(before.get(s, 0))} {format_count(after.get(s, 0))}\n"
                       for s in sorted(set(before) | set(after)))
    elif all(v.__class__ is int for v in after.values()):  # counts, µs: str() is the format
        out.writelines([f"{s} {after[s]}\n" for s in sorted(after) if after[s]])
    else:
        out.writelines(f"{s} {format_count(after[s])}\n" for s in sorted(after) if after[s])


FORMAT = OutputFormat(name="folded", suffixes=(".folded", ".collapsed", ".txt"), render=render, by_name=True, ahead=("folded",),
                      empty="nothing to fold", empty_ok=True, text_suffixes=True,
                      description="folded stacks, for flamegraph.pl, inferno, speedscope")
