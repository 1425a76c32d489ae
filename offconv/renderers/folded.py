"""Folded stacks (``frame;frame;frame weight``), sorted by stack in byte order as
stackcollapse-perf.pl sorts them, so flamegraph.pl and inferno read them unchanged.
A differential profile prints ``stack before after`` (difffolded.pl's layout).
Display names come from the frames (offconv.naming); stacks that print the same merge."""
from __future__ import annotations

from typing import TextIO

from ..format_types import OutputFormat
from ..model import Profile
from ..naming import Namer, merge_by
from ..options import NamingOptions


def format_count(v) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return str(int(v))
        return f"{v:.6f}".rstrip("0").rstrip(".")
    return str(v)


def render(profile: Profile, out: TextIO, opts=None) -> None:
    namer = Namer(getattr(opts, "naming", None) or NamingOptions())
    known = profile.folded_names
    if known is not None and known.opts == namer.opts:  # offconv.parallel named some ahead
        after = merge_by(profile.samples, None, known.folded(profile.samples, namer))
        if known.named:  # and summed some by name only
            for name, w in known.named.items():
                after[name] = after.get(name, 0) + w
    elif known is not None and known.named:
        raise RuntimeError("folded names made under other naming options")  # never: one Options
    else:
        after = merge_by(profile.samples, namer.folded)
    # sort by the stack text alone (not the whole line): that is stackcollapse-perf.pl's order
    if profile.before is not None:
        before = merge_by(profile.before, namer.folded)
        out.writelines(f"{s} {format_count(before.get(s, 0))} {format_count(after.get(s, 0))}\n"
                       for s in sorted(set(before) | set(after)))
    elif all(v.__class__ is int for v in after.values()):  # counts, µs: str() is the format
        out.writelines([f"{s} {after[s]}\n" for s in sorted(after) if after[s]])
    else:
        out.writelines(f"{s} {format_count(after[s])}\n" for s in sorted(after) if after[s])


FORMAT = OutputFormat(name="folded", suffixes=(".folded", ".collapsed", ".txt"), render=render,
                      description="folded stacks, for flamegraph.pl, inferno, speedscope")
