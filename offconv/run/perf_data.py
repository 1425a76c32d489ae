"""Reader: a perf.data input (converted by perf script as it is read: inputs.perf_data).
It is read like any perf script text (serial.summed), with two things of its own around
the sum, each of which can be switched off:

- names left mangled by perf (``perf script --no-demangle``, the converter's choice:
  OFFCONV_PERF_DEMANGLE=1 leaves demangling to perf) are demangled here, once per frame,
  after the sum; where offconv cannot be sure to print what perf would
  (``demangle.Retry``), the file is converted again with perf's own demangling;
- what is still unread when perf ends is split over two processes (run.follow;
  OFFCONV_JOBS=1 switches it off)."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from offconv.inputs import demangle
from offconv.run import follow as follow_split
from offconv.run.reading import SAMPLES, Input, Read, open_input
from offconv.run.serial import summed
from offconv.run.parallel import merge_stats


def read(inp: Input) -> Optional[Read]:
    """The perf.data input ``inp`` summed with its Part; None for any other input."""
    if inp.src.binary_format is None or inp.fmt.parse_blocks is None:
        return None
    if not inp.src.mangled:
        return summed(inp, Part(inp))
    tried: dict = {}  # this conversion's stats, kept only if it is the one used
    try:
        done = summed(replace(inp, stats=tried), Part(inp))
    except demangle.Retry:
        inp.src.close()
        src, fmt = open_input(inp.path, inp.from_format, demangle_here=False,
                              kallsyms=inp.opts.parse.kallsyms)
        again = replace(inp, src=src, fmt=fmt)
        return summed(again, Part(again))
    merge_stats(inp.stats, tried)
    return done


class Part:
    """serial.summed's hooks for a perf.data input: see the module's docstring."""

    def __init__(self, inp: Input):
        self.inp = inp
        self.src = inp.src
        self.split = None
        self._names = None

    def check(self, route: Optional[str]) -> None:
        """Only the summed path demangles (and not after --demangle): else perf is to."""
        if self.src.mangled and (route != SAMPLES or self.inp.opts.parse.demangle):
            raise demangle.Retry("not summed here")

    def __enter__(self):
        if self.src.mangled:  # perf script --no-demangle: the names are demangled once, here
            self._names = demangle.collecting()
            self._names.__enter__()
        return self

    def start(self, first_record, sums) -> None:
        """As the sum begins: the child for the end of perf's output, if the parser lags
        (forked here: it collects mangled names too)."""
        inp = self.inp
        self.split = follow_split.follow_split(self.src, inp.fmt, inp.opts, first_record,
                                               sums, inp.first)

    def finish(self, sums, stats: dict) -> None:
        """Once this process's part is summed: its names demangled (a split's child
        demangles its own), the child's part merged, the names it made handed on."""
        if self.src.mangled:
            demangle.apply_noted(sums, self.inp.opts.parse.addrs)
        if self.split is not None:
            self.split.merge_into(sums, stats, self.src)
            sums.stack_names = self.split.stack_names

    def __exit__(self, *exc):
        try:
            if self._names is not None:
                self._names.__exit__(*exc)
        finally:
            if self.split is not None:
                self.split.stop()
        return False

