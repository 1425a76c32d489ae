"""One sched-event input over two processes, for a stack output (folded, SVG).

The off-CPU path keeps state across events (every thread's open period, each CPU's last
switch), so the second part cannot be read alone: a forked child reads the second part
(cut at a blank line at ``SHARE`` of the file) with a ``tail.TailMachine``, which
takes each thread over from its first switch-out in that part and sets aside, in file
order, what only the first part's state can decide (that thread's earlier events there;
an inferred switch-in on a CPU not yet switched in that part). It sums the periods of the
threads it took over as the serial path's builder sums them, and sends back those sums,
what it set aside, and its threads' and counts' states at its end. This process reads the
first part, replays what was set aside on its own state (``tail.join``), takes the
child's states over, and adds the child's sums to its own: the folded and SVG outputs (sums
by stack, sorted by name) are then byte-identical to the serial path's
(tests/test_sched_split.py: the machine cut at a dozen events of each fixture up to 3.5 MB and
at every event of hand-built sequences; the CLI's files, warnings and errors).

Where the child cannot be followed as it is (``tail.joins``: a `perf record -p`
recording, events going back in time across the cut, a thread the first part marked
dead), or it failed (a parse error there: raised here with its line number), this process
reads the second part itself, serially.

Not split: outputs that need the per-thread analysis (report, hist), the order of the
periods (--flamechart) or the whole input before the first period (--comm, -p, which
select threads by their last name and their process); inputs other than plain perf
script files; files under ``parallel.MIN_BYTES``.
"""
from __future__ import annotations

import os
from itertools import chain, islice
from dataclasses import replace
from typing import Optional

from offconv.sched import intervals, probe, tail
from offconv.model.records import OFFCPU_MODES, ONCPU
from offconv.inputs.source import Source, numbered_blocks, until_cut
from offconv.inputs.utf8 import invalid_utf8_stats
from offconv.run import parallel
from offconv.run.reading import SCHED, Input, Read, peek, route_of

# this process's share of the file: it also replays the child's leftovers, merges its sums
# and writes the output; the child forks and pickles its result. The build's 100 MB,
# medians of 5 (each with pyenv's shim: 0.06 s more): 0.47 1.79 s, 0.49 1.72, 0.50 1.71,
# 0.51 1.68, 0.53 1.82, 0.56 1.89 (the sched.txt file: 0.83-0.88 s from 0.47 to 0.56); at
# 0.51 both halves end together (timelines of the two processes)
SHARE = 0.51


def read(inp: Input) -> Optional[Read]:
    """The sched input over two processes (its value a Split), or None when it does not
    qualify (the next reader takes it)."""
    if inp.opts.aggregate.mode == ONCPU or inp.routes - {SCHED}:
        return None
    split = prepare(inp.path, inp.src, inp.fmt, inp.opts, inp.stats)
    if split is None:
        return None
    inp.src.close()
    return Read(SCHED, split, split.part1)


def prepare(path: str, src: Source, fmt, opts, stats: dict) -> Optional["Split"]:
    """A Split of the sched input ``path`` (``src`` opened, ``fmt`` detected), or None
    when it does not qualify or its route is not the sched events'."""
    agg = opts.aggregate
    if not parallel.enabled() or src.kind != "text" or path == "-" or src.mangled:
        return None
    if src.binary_format is not None or fmt.parse_blocks is None or fmt.sum_blocks is None:
        return None
    if agg.analyse or agg.timeline or agg.mode == "critical-path" or not (agg.folded or agg.svg) or agg.comm or agg.filter_pids:
        return None
    if agg.mode not in OFFCPU_MODES and agg.mode != "auto":
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < parallel.MIN_BYTES:
        return None
    cut = parallel.cut_point(path, size, share=SHARE)
    if cut is None:
        return None
    part1 = Source(path, span=(0, cut))
    lists, decided, _ = peek(part1, fmt, opts, agg.mode)
    if decided != "sched":
        part1.close()
        return None
    blocks = chain.from_iterable(numbered_blocks(n, p) for n, p in lists)
    _, records = route_of(fmt.parse_blocks(blocks, path, opts.parse, stats), agg.mode)
    mode = "offcpu" if agg.mode == "auto" else agg.mode
    tail = Tail(path, fmt, (cut, size), opts.parse, replace(agg, mode=mode), part1, stats)
    return Split(records, tail, part1)


class Split:
    """The first part's records (iterate it) and the second part's ``tail``."""

    def __init__(self, records, tail: "Tail", part1: Source):
        self._records = records
        self.tail = tail
        self.part1 = part1

    def __iter__(self):
        return iter(self._records)


class Tail:
    """The second part of a split input: a child at work on it from creation."""

    def __init__(self, path: str, fmt, span: tuple, popts, agg, part1: Source, stats: dict):
        self.path, self.fmt, self.span, self.popts = path, fmt, span, popts
        self.part1 = part1
        self.parse_stats = stats   # the input's parse stats (pipeline.load's)
        self.sums: dict = {}       # the child's builder sums, once joined
        self.child = parallel.Fork(_second_part, path, fmt, span, popts, agg)
        self._result = None
        self._waited = False

    def result(self):
        """The child's result (None if it failed), waited for once."""
        if not self._waited:
            try:
                self._result = self.child.result()
            finally:
                self.child.stop()
            self._waited = True
        return self._result

    def probe(self, undecided: tuple) -> bool:
        """Whether the input is a `perf record -p` recording, where the first part ended
        before probe._probe could decide: it goes on over this part's first records
        (the child's marks, or this process's own parse of them if the child failed)."""
        result = self.result()
        if result is not None:
            marks = result[1]["marks"]
        else:
            # (the first part was read to its end: its line numbers are known)
            src, records = self._records(self.part1.next_lineno, {})
            marks = probe.probe_marks(list(islice(records, probe.PROBE_EVENTS)))
            src.close()
        return probe.probe_on(undecided, marks)

    def join(self, machine) -> None:
        """After the first part's last event (intervals.drive): the child's part joined
        to ``machine`` or, where it cannot be, read here."""
        result = self.result()
        second_line = self.part1.next_lineno
        if result is not None:
            sums, part, stats, cut_line = parallel.shifted(result, second_line - 1)
            if tail.joins(machine, part):
                tail.join(machine, part)
                self.sums = sums
                parallel.merge_stats(self.parse_stats, stats)
                self.part1.cut_line = cut_line
                return
        # serially, here: the same records, errors and line numbers as one process's
        src, records = self._records(second_line, self.parse_stats)
        intervals.run(machine, records)
        invalid_utf8_stats(src, self.parse_stats)
        self.part1.cut_line = src.cut_line

    def _records(self, first_lineno: int, stats: dict) -> tuple:
        """(the second part's Source, its records), read here."""
        src = Source(self.path, span=self.span, first_lineno=first_lineno)
        return src, until_cut(self.fmt.parse_blocks(src.blocks(), self.path, self.popts, stats),
                              src)

    def merge_into(self, builder) -> None:
        """The child's sums into ``builder``'s (offcpu._Builder.ns)."""
        ns = builder.ns
        adopt = builder.adopt
        for key, value in self.sums.items():
            key = adopt(key)   # by_name: this builder's thread frames of those names
            ns[key] = ns.get(key, 0) + value
        self.sums = {}

    def stop(self) -> None:
        self.child.stop()


def _second_part(path, fmt, span, popts, agg):
    """In the child: (its builder's sums, TailMachine.part(), parse stats, the line cut
    short at the end or None), or None when it failed (the parent reads the part itself,
    to raise the same error with its line number)."""
    from offconv.run.offcpu import _Builder   # (the off-CPU path's, imported when used)
    try:
        src = Source(path, span=span)
        stats: dict = {}
        events = until_cut(fmt.parse_blocks(src.blocks(), path, popts, stats), src)
        head = list(islice(events, probe.PROBE_EVENTS))
        events = chain(head, events)
        builder = _Builder(agg)   # (a split output needs no OnCpu record: see prepare)
        machine = tail.TailMachine(path, popts.lenient, {}, builder.feed, oncpu=False,
                                        per_thread=False)
        machine.marks = probe.probe_marks(head)
        del head
        intervals.run(machine, events)
        invalid_utf8_stats(src, stats)
        return builder.ns, machine.part(), stats, src.cut_line
    except BaseException:  # noqa: BLE001 - reported by the parent's own parse
        return None

