"""Reader: one plain on-CPU text file over two processes. The file is cut at an event
boundary (a blank line; a newline for a format of one record per line, ``sum_lines``);
this process sums the first part while a forked child sums the second; the child's sums
are added in after this process's, in the order one process would have met them (a dict
keeps first-seen order), so every output is byte-identical (tests/test_parallel.py).

A folded file's child reads its part with the input's first lines, which decide its
dialect, and its Frames come back as this process's equal ones (parallel's unpickler).
For a folded output of the first input, this process names its own stacks while a perf
script child works (naming.FoldedNames), and the child sends folded names with weights
instead of stacks (``_folded_part``). Errors keep the file's order: the first part's error
is raised before the second's. Taken: plain files (not stdin, not compressed) of at least
``parallel.MIN_BYTES`` whose records take the samples route."""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

from offconv.model import gcpause
from offconv.model.errors import ParseError
from offconv.model.naming import FoldedNames, Namer, merge_by
from offconv.model.stacktable import StackTable
from offconv.inputs import demangle
from offconv.inputs.source import Source, ends_inside
from offconv.inputs.utf8 import invalid_utf8_stats
from offconv.run import parallel
from offconv.run.aggregate import Sums, add_weights
from offconv.run.parallel import Fork, merge_stats, shifted
from offconv.run.reading import SAMPLES, Input, Read, peek

# the parent's share of the input, a little over half: the child also forks and pickles
# its sums, and the parent unpickles them after its own share. Chosen by alternated runs
# on the deep, shallow, Java and JIT-like shapes (values from 0.50 to 0.62 were tried)
FIRST_SHARE = 0.54
def _second_part(name, path, fmt, span, first_lineno, popts, want, naming=None, labels=None):
    """In the child: the sums of bytes ``span`` of the file ``name`` (the input ``path``,
    which messages name, or perf script's output of it), or None when it failed (the parent
    then parses it itself, to raise the same error in the same way)."""
    try:
        return _second_part_here(Source(name, span=span, first_lineno=first_lineno), path, fmt,
                                 popts, want, naming, labels)
    except BaseException:  # noqa: BLE001 - reported by the parent's own parse
        return None


def _second_part_here(src, path, fmt, popts, want, naming=None, labels=None):
    """(Sums.part(), whether another event type was left out, parse stats, the line cut
    short at the end or None). With ``naming`` (the output is folded): its stacks' folded
    names and weights instead of its stacks (``_folded_part``). With ``labels`` (the
    NamingOptions of an SVG): Sums.part() and, after it, the display names of its stacks
    in its order and the flags its labeller noted (``_labelled_part``)."""
    stats: dict = {}
    sums = Sums(replace(popts, event_filter=want))
    with gcpause.paused():
        try:
            fmt.sum_blocks(src.block_lists(), path, popts, stats, sums)
        except ParseError as e:
            if not ends_inside(e, src):
                raise
        demangle.apply_noted(sums, popts.addrs)  # perf.data converted with --no-demangle
        invalid_utf8_stats(src, stats)
        if naming is not None:
            return _folded_part(sums, naming), sums.other, stats, src.cut_line
        if labels is not None:
            return _labelled_part(sums, labels), sums.other, stats, src.cut_line
    return sums.part(), sums.other, stats, src.cut_line


def _labelled_part(sums, naming) -> tuple:
    """Sums.part() with no stacks, and (the display names of its stacks, summed by name,
    their weights, and the flags of the frames named first here) as the SVG's labeller
    makes them: an SVG needs no more. The parent then names none of them, and unpickles
    tuples of strings (each string once: pickle's memo) instead of stacks of Frames to
    hash into its sums (on the javac + gcc recording's tail, naming the child's stacks
    took the drawing 30-60 ms and merging them 20-40 ms)."""
    from offconv.model.labels import Labels
    labels = Labels(naming)
    named = merge_by(sums.counts, labels.stack)
    return [], sums.before, sums.unit, sums.kind, sums.weighted, \
        (list(named), list(named.values()), labels.flags)


def _folded_part(sums, naming) -> tuple:
    """Sums.part() with no stacks, and the folded text of its stacks summed by name:
    (names joined by newlines, their weights). Pickling 17k stacks of 30 frames took the
    child 0.1 s, and rebuilding them the parent 0.04 s; a folded output needs the names only
    (names come from lines: none holds a newline)."""
    named = merge_by(sums.counts, Namer(naming).folded)
    _, before, unit, kind, weighted = sums.part()
    return [], before, unit, kind, weighted, ("\n".join(named), list(named.values()))


def read(inp: Input) -> Optional[Read]:
    """The input over two processes, or None when it does not qualify (the next reader
    takes it)."""
    if inp.opts.aggregate.mode not in ("auto", "oncpu") or inp.routes - {SAMPLES}:
        return None
    done = load_split(inp.path, inp.src, inp.fmt, inp.opts, inp.stats, inp.profile)
    if done is None:
        return None
    inp.src.close()
    profile, part1 = done
    return Read(SAMPLES, profile, part1)


def load_split(path: str, src: Source, fmt, opts, stats: dict, profile):
    """The samples route of one input over two processes; returns (profile, src for the
    warnings) or None when the input does not qualify (the caller goes serial)."""
    if src.kind != "text" or path == "-" or not parallel.enabled():
        return None
    if fmt.sum_blocks is None and fmt.sum_lines is None:
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < parallel.MIN_BYTES:
        return None
    if fmt.sum_blocks is None:
        return _load_split_lines(path, src, fmt, opts, stats, profile, size)
    cut = parallel.cut_point(path, size, share=FIRST_SHARE)
    if cut is None:
        return None
    part1 = Source(path, span=(0, cut))
    lists, route, first = peek(part1, fmt, opts, opts.aggregate.mode)
    if route != "samples" or not first.event:
        return None
    popts = opts.parse
    want = popts.event_filter or first.event
    stats1: dict = {}  # merged only when the split goes ahead
    # the first input, to a folded output: the child sends folded names, not stacks
    naming = opts.naming if profile is None and opts.aggregate.folded else None
    child = Fork(_second_part, path, path, fmt, (cut, size), 1, popts, want, naming,
                  share_frames=False)
    try:
        before_warn = len(profile.warnings) if profile is not None else 0
        sums = Sums(popts)
        with gcpause.paused():
            fmt.sum_blocks(lists, path, popts, stats1, sums)
            fresh = profile is None
            profile = sums.finish(profile, path)
            if fresh and opts.aggregate.folded:  # the child is still at work: name ours now
                profile.folded_names = FoldedNames(opts.naming, list(sums.counts))
            result = child.result()
    finally:
        child.stop()
    second_line = part1.next_lineno  # the number of the first line of the second part
    if result is None:  # the second part failed: parse it here, in order, to raise its error
        part2 = Source(path, span=(cut, size), first_lineno=second_line)
        result = _second_part_here(part2, path, fmt, popts, want)
    else:                # the child numbered its lines from 1
        result = shifted(result, second_line - 1)
    part2, other, stats2, cut_line = result
    add_weights(profile, part2[0], part2[1])
    if len(part2) == 6:  # the child's part as folded names (_folded_part)
        text, weights = part2[5]
        profile.folded_names.add_named(text.split("\n") if weights else [], weights)
    message = f"Filtering for events of type: {want}"
    if other and popts.event_filter is None and message not in profile.warnings[before_warn:]:
        profile.warnings.append(message)
    merge_stats(stats, stats1, stats2)
    part1.cut_line = cut_line
    return profile, part1


# a format of one record per line (folded): the parent takes more than half, as it also
# merges the child's sums and renders. Alternated medians of 11 runs, SVG of 68k folded
# stacks: 0.52 -> 0.58 1.14 -> 0.98 s, 0.58 -> 0.65 1.02 -> 0.94 s, 0.65 -> 0.72 the same;
# at 0.65 the child's sums are there when the parent's part is done
LINES_SHARE = 0.65


def _second_lines(path, fmt, span, popts, head):
    """In the child: the second part's sums of a line format, or None when it failed."""
    try:
        return _second_lines_here(Source(path, span=span), path, fmt, popts, head)
    except BaseException:  # noqa: BLE001 - reported by the parent's own parse
        return None


def _second_lines_here(src, path, fmt, popts, head):
    stats: dict = {}
    sums = Sums(popts)
    with gcpause.paused():
        fmt.sum_lines(src.lines(), path, popts, stats, sums, head)
    invalid_utf8_stats(src, stats)
    return sums.part(), None, None, stats, src.cut_line


def _second_lines_into(sums, path, fmt, popts, head, span, part1, stats, stats1, profile):
    """The second part of a line format summed in this process after the first (as the
    serial path reads it), its lines numbered on from the first part's."""
    part2 = Source(path, span=span, first_lineno=part1.next_lineno)
    stats2: dict = {}
    with gcpause.paused():
        fmt.sum_lines(part2.lines(), path, popts, stats2, sums, head)
        profile = sums.finish(profile, path)
    invalid_utf8_stats(part2, stats2)
    merge_stats(stats, stats1, stats2)
    part1.cut_line = part2.cut_line
    return profile, part1


def _load_split_lines(path: str, src: Source, fmt, opts, stats: dict, profile, size: int):
    """sum_lines over two processes, cut at a newline: the child's part is read with the
    first part's head lines (a folded file's dialect is decided by its first lines), and
    its sums are merged into the first part's before they become the profile's, as the
    serial path would have summed them."""
    cut = parallel.cut_point(path, size, b"\n", LINES_SHARE)
    if cut is None:
        return None
    part1 = Source(path, span=(0, cut))
    popts = opts.parse
    head = src.head
    child = Fork(_second_lines, path, fmt, (cut, size), popts, head)
    stats1: dict = {}
    try:
        sums = Sums(popts)
        with gcpause.paused():
            fmt.sum_lines(part1.lines(), path, popts, stats1, sums)
            if isinstance(sums.counts, StackTable):
                # many unique stacks: the child's table, unpickled beside this one while
                # they merge, would take as much memory again (1M stacks: 198 -> 270 MB);
                # the second part is summed here instead, into the same table
                child.stop()
                return _second_lines_into(sums, path, fmt, popts, head, (cut, size), part1,
                                          stats, stats1, profile)
            # the child's frames become this part's equal ones (_Unpickler)
            result = child.result({f: f for f in (sums.frames or {}).values()})
    finally:
        child.stop()
    second_line = part1.next_lineno
    if result is None:  # the second part failed: parse it here, in order, to raise its error
        part2 = Source(path, span=(cut, size), first_lineno=second_line)
        result = _second_lines_here(part2, path, fmt, popts, head)
    else:
        result = shifted(result, second_line - 1)
    part, _, _, stats2, cut_line = result
    with gcpause.paused():
        sums.merge(part)
        profile = sums.finish(profile, path)
    merge_stats(stats, stats1, stats2)
    part1.cut_line = cut_line
    return profile, part1
