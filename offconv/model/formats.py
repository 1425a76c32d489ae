"""The registry's record types (a leaf module: parsers and renderers import these, and
``offconv.model.registry`` imports the parsers and renderers to list them -- no cycle)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

# Sniff answers (a three-way sniff, as inferno's is_applicable)
YES = "yes"
NO = "no"
MAYBE = "maybe"


@dataclass(frozen=True)
class InputFormat:
    """An input format. Text formats have ``sniff(head_lines) -> YES|NO|MAYBE`` and
    ``parse(lines, path, opts, stats) -> Iterator[record]`` (records of offconv.model.records);
    ``parse_blocks`` is the same from Source.blocks() where that is faster;
    ``sum_blocks(block_lists, path, opts, stats, sums)`` (Source.block_lists(), an
    aggregate.Sums) sums the samples of an input already known to take the samples route
    without a record per event, with the same result as parse_blocks into
    Sums.add_records; ``sum_lines(lines, path, opts, stats, sums, head=None)`` the same from
    Source.lines(), for a format whose records always take the samples route (``head``:
    the input's first lines, when ``lines`` are a later part of it). A binary
    format has ``magic`` (its first bytes) and ``convert(path) -> (binary stream, finish)``
    producing the text of another format (perf.data -> perf script text), which is then
    detected like any input."""

    name: str                                   # --from name
    description: str = ""
    sniff: Optional[Callable] = None
    parse: Optional[Callable] = None
    parse_blocks: Optional[Callable] = None
    sum_blocks: Optional[Callable] = None
    sum_lines: Optional[Callable] = None
    magic: Optional[bytes] = None
    convert: Optional[Callable] = None
    notes: Optional[Callable] = None            # notes(head) -> [sentences]: fields it lacks


@dataclass(frozen=True)
class OutputFormat:
    """An output format: ``render(profile, out, opts)`` writes to a text stream, or to a
    binary one when ``binary``. ``suffixes`` select it from ``-o`` (lower case, longest
    wins). ``state_split`` is its default for the state-split frames (DESIGN.md);
    ``timeline`` asks the off-CPU path to keep periods in time order. The rest tells the
    command line what the output reads and how it meets an input without stacks, so that
    no command branches on a format's name."""

    name: str                      # --to name
    suffixes: tuple
    render: Callable
    description: str = ""
    binary: bool = False
    state_split: bool = False
    timeline: bool = False         # needs Profile.sequence/periods (AggregateOptions.timeline)
    analysis: bool = False         # reads the per-thread analysis (report, JSON, histograms),
    #                                not the stacks alone: nothing to draw is no error
    by_name: bool = False          # prints a thread by its name alone (without --pid/--tid):
    #                                the off-CPU path may sum stacks by name (AggregateOptions.by_name)
    ahead: tuple = ()              # AggregateOptions flags it turns on (folded, svg: stacks named ahead)
    empty: str = "nothing to export"   # what an output of no stacks would be
    empty_ok: bool = False         # no stacks: a warning and an empty output, not exit 2
    own_warnings: bool = False     # on stdout it shows the input's warnings itself
    text_suffixes: bool = False    # its suffixes are a text file's (.txt): report -o may use them
