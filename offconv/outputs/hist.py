"""Histograms in bpftrace's text layout (``hist()``/``lhist()``, ANCHORS.md 6.1), as
bpftrace 0.17 printed them in shared/corpus/recorded/bpftrace/*.txt:

    @blocked_us: 
    [2, 4)               157 |@@@@@@@@@                                           |
    [4, 8)               178 |@@@@@@@@@@                                          |

One block per ``profile.histograms`` entry (off-CPU profiles carry ``blocked_us`` and
``runq_us``), each ending with a blank line. Bars are 52 wide, scaled to the largest
count and truncated (integer arithmetic, ``count * 52 // max``), as bpftrace does.
Histograms with the same name and keys are merged bucket-wise (offconv.sched.histograms).
"""
from __future__ import annotations

from typing import TextIO

from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat

BAR = 52
_SUFFIXES = ((1 << 60, "E"), (1 << 50, "P"), (1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"),
             (1 << 10, "K"))


def number(v: int) -> str:
    """bpftrace's bound labels: 1K, 2M, ... for multiples of powers of 1024."""
    for unit, suffix in _SUFFIXES:
        if v >= unit and v % unit == 0:
            return f"{v // unit}{suffix}"
    return str(v)


def label(lo, hi, linear: bool = False, suffix: bool = True) -> str:
    """A row label as bpftrace prints it: ``[0]``/``[1]`` are log2 single values
    (``lhist()`` prints ``[0, 1)``); K/M/... only when the layout uses them."""
    num = number if suffix else str
    if lo is None:
        return f"(..., {num(hi)})"
    if hi is None:
        return f"[{num(lo)}, ...)"
    if hi == lo + 1 and not linear:
        return f"[{num(lo)}]"
    return f"[{num(lo)}, {num(hi)})"


def render_histogram(h, out: TextIO) -> None:
    from offconv.sched.histograms import is_linear
    keys = f"[{', '.join(str(k) for k in h.keys)}]" if h.keys else ""
    out.write(f"@{h.name}{keys}: \n")
    top = max((c for _, _, c in h.buckets), default=0)
    linear = is_linear(h.buckets)
    widths = {hi - lo for lo, hi, _ in h.buckets if lo is not None and hi is not None}
    # lhist() prints K/M suffixes only when its step is a multiple of 1024
    suffix = not linear or all(w % 1024 == 0 for w in widths)
    for lo, hi, count in h.buckets:
        bar = "@" * (count * BAR // top) if top else ""
        out.write(f"{label(lo, hi, linear, suffix):<16}{count:>8} |{bar:<{BAR}}|\n")
    out.write("\n")


def render(profile, out: TextIO, opts=None) -> None:
    from offconv.sched.histograms import merge
    if not profile.histograms:
        raise OffconvError("hist: no latencies in this profile (on-CPU samples or folded "
                           "stacks have none): record sched events (perf record -e "
                           "sched:sched_switch -e sched:sched_wakeup -g -a)")
    for h in merge(profile.histograms):
        render_histogram(h, out)


FORMAT = OutputFormat(name="hist", suffixes=(".hist",), render=render, analysis=True, by_name=True,
                      description="bpftrace-style log2 histograms of blocked and run-queue latency")
