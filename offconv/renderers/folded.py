"""Folded stacks (``frame;frame;frame weight``), sorted by stack in byte order as
stackcollapse-perf.pl sorts them, so flamegraph.pl and inferno read them unchanged.
A differential profile prints ``stack before after`` (difffolded.pl's layout)."""
from __future__ import annotations

from typing import TextIO

from ..formats import OutputFormat
from ..model import Profile


def format_count(v) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return str(int(v))
        return f"{v:.6f}".rstrip("0").rstrip(".")
    return str(v)


def render(profile: Profile, out: TextIO, opts=None) -> None:
    # sort by the stack text alone (not the whole line): that is stackcollapse-perf.pl's order
    if profile.before is not None:
        before, after = profile.before, profile.samples
        rows = sorted((";".join(k), k) for k in set(before) | set(after))
        out.writelines(f"{s} {format_count(before.get(k, 0))} {format_count(after.get(k, 0))}\n"
                       for s, k in rows)
    else:
        rows = sorted((";".join(k), v) for k, v in profile.samples.items() if v)
        out.writelines(f"{s} {format_count(v)}\n" for s, v in rows)


FORMAT = OutputFormat(name="folded", suffixes=(".folded", ".collapsed", ".txt"), render=render,
                      description="folded stacks, for flamegraph.pl, inferno, speedscope")
