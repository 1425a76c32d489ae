"""One on-CPU text input over two processes: the file is cut at an event boundary (a
blank line) at 55% of it; this process parses and sums the first part while a forked
child does the same with the second; the child's sums are then added in, in the order the
serial path would have met them (a dict keeps first-seen order), so every output is
byte-identical to the serial path (tests/test_parallel.py checks it on every fixture).

Only plain files (not stdin, gzip or perf.data) of at least ``MIN_BYTES`` whose records
take the samples route are split; the off-CPU path keeps its state across events and stays
serial. Errors keep the serial order: the first part's error is raised before the second's.
"""
from __future__ import annotations

import os
import pickle
import signal
from dataclasses import replace
from typing import Optional

from . import gcpause
from .aggregate import Sums, add_weights
from .source import Source

MIN_BYTES = 16 << 20   # below this, forking costs more than it saves
CUT_SEARCH = 1 << 20   # look this far past the middle for a blank line
# the parent's share of the input: the child also pickles its sums and the parent unpickles
# them, after its own share (0.1 s each way for 20k distinct stacks)
FIRST_SHARE = 0.55


def enabled() -> bool:
    return os.environ.get("OFFCONV_JOBS", "2") != "1" and (os.cpu_count() or 1) > 1


def cut_point(path: str, size: int) -> Optional[int]:
    """The byte offset just after a blank line at FIRST_SHARE of the file, or None when
    there is none. (The number of the line there is known only once the first part is read:
    the child numbers its lines from 1 and the parent shifts what it reports.)"""
    with open(path, "rb") as f:
        middle = int(size * FIRST_SHARE)
        f.seek(middle)
        window = f.read(CUT_SEARCH)
    k = window.find(b"\n\n")
    if k < 0:
        return None
    cut = middle + k + 2
    return cut if cut < size else None


def _second_part(path, fmt, span, first_lineno, popts, want):
    """In the child: the second part's sums, or None when it failed (the parent then
    parses it itself, to raise the same error in the same way)."""
    try:
        return _second_part_here(Source(path, span=span, first_lineno=first_lineno), path, fmt,
                                 popts, want)
    except BaseException:  # noqa: BLE001 - reported by the parent's own parse
        return None


def _second_part_here(src, path, fmt, popts, want):
    stats: dict = {}
    sums = Sums(replace(popts, event_filter=want))
    with gcpause.paused():
        fmt.sum_blocks(src.block_lists(), path, popts, stats, sums)
    return list(sums.counts.items()), sums.before, sums.other, stats, src.cut_line


def load_split(path: str, src: Source, fmt, opts, stats: dict, peek, profile):
    """The samples route of one input over two processes; returns (profile, src for the
    warnings) or None when the input does not qualify (the caller goes serial)."""
    if src.kind != "text" or path == "-" or fmt.sum_blocks is None or not enabled():
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < MIN_BYTES:
        return None
    cut = cut_point(path, size)
    if cut is None:
        return None
    part1 = Source(path, span=(0, cut))
    lists, route, first = peek(part1, fmt, opts, opts.aggregate.mode)
    if route != "samples" or not first.event:
        return None
    popts = opts.parse
    want = popts.event_filter or first.event
    stats1: dict = {}  # merged only when the split goes ahead
    child = _fork(_second_part, path, fmt, (cut, size), 1, popts, want)
    try:
        before_warn = len(profile.warnings) if profile is not None else 0
        sums = Sums(popts)
        with gcpause.paused():
            fmt.sum_blocks(lists, path, popts, stats1, sums)
            profile = sums.finish(profile, path)
            result = child.result()
    finally:
        child.stop()
    second_line = part1.next_lineno  # the number of the first line of the second part
    if result is None:  # the second part failed: parse it here, in order, to raise its error
        part2 = Source(path, span=(cut, size), first_lineno=second_line)
        result = _second_part_here(part2, path, fmt, popts, want)
    else:                # the child numbered its lines from 1
        result = _shifted(result, second_line - 1)
    samples2, before2, other, stats2, cut_line = result
    add_weights(profile, samples2, before2)
    message = f"Filtering for events of type: {want}"
    if other and popts.event_filter is None and message not in profile.warnings[before_warn:]:
        profile.warnings.append(message)
    for part in (stats1, stats2):
        if part.get("skipped_lines"):
            stats.setdefault("first_skipped", part["first_skipped"])
            stats["skipped_lines"] = stats.get("skipped_lines", 0) + part["skipped_lines"]
    part1.cut_line = cut_line
    return profile, part1


def _shifted(result: tuple, lines: int) -> tuple:
    """The child's line numbers (the first line skipped with --lenient, the line cut short)
    moved down by ``lines``."""
    samples, before, other, stats, cut_line = result
    first = stats.get("first_skipped")
    if first is not None:
        where, _, n = first.rpartition(":")
        stats["first_skipped"] = f"{where}:{int(n) + lines}"
    return samples, before, other, stats, (cut_line + lines if cut_line is not None else None)


class _fork:
    """``fn(*args)`` in a forked child (a bare fork and a pipe: a multiprocessing pool
    costs more to set up than the work it would save on a 16 MB input); ``result()`` is
    its return value (pickled back), or None when the child failed."""

    def __init__(self, fn, *args):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self._read = r

    def result(self):
        with os.fdopen(self._read, "rb") as f:
            data = f.read()
        self._read = None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0 or not data:
            return None
        return pickle.loads(data)

    def stop(self):
        """Kill and reap a child whose result was not read (the parent's part failed)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = None
        if self._read is not None:
            os.close(self._read)
            self._read = None
