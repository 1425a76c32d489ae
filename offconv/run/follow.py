"""A perf.data input over two processes (offconv.inputs.perf_data.reader.Follow): this
process parses perf script's output as perf writes it; when perf has ended and enough is
still unread, the rest is cut at an event boundary and a child forked when the parse
began sums the second part. To an SVG, this process names its stacks while the child
works (and while it waits for perf's output), and the child sends its part's names with
its stacks. Used by run.perf_data's reader; OFFCONV_JOBS=1 switches it off."""
from __future__ import annotations

import os
import time
from itertools import islice
from typing import Optional

from offconv.model import gcpause
from offconv.model.naming import StackNames
from offconv.inputs.source import Source
from offconv.run import parallel
from offconv.run.parallel import ForkedLater, merge_stats, shifted
from offconv.run.split import _second_part, _second_part_here

# FollowSplit's share of what is left when perf ends: the parent also reads through Follow
# and merges; the child, forked before the parse, starts cold. With the child forked at
# perf's end (copy-on-write on both sides) the balance was at 0.44 (timelines of 20 runs,
# Java recording: 9.1 ms per MB left, against 10.3 at 0.58)
FOLLOW_SHARE = 0.5
# and the least left for it to take a part: with no fork at perf's end, the split costs the
# child's pickling and the merge (20-30 ms with 20k stacks), against half the parse (12.5
# ms/MB with the parent alone: 11-15 MB left took it 0.12-0.15 s)
FOLLOW_MIN_BYTES = 8 << 20
# To an SVG, the parent also has to name its stacks (naming.StackNames), which it does
# while the child parses (_name_while): the child then takes more of what is left, so that
# both end together (``FollowSplit._svg_share``), and a split pays from
# ``FOLLOW_MIN_SVG_BYTES`` left. Naming a frame (with the rest of the renderer's per-stack
# work) costs about as much as parsing NAME_BYTES_PER_FRAME bytes of perf script text:
# timelines of the javac + gcc recording, 19k stacks of 29 frames named in 57 ms where the
# parent parsed at 10.3 ms/MB (its average, start included), and 0.06-0.14 s more per
# stack-naming pass in the drawing. CHILD_SLOWER: the child's rate over that average
# (8.7-11 ms/MB measured there: its caches are cold, but it parses no start).
FOLLOW_MIN_SVG_BYTES = 1 << 20
NAME_BYTES_PER_FRAME = 16
CHILD_SLOWER = 1.15


class FollowSplit:
    """A perf.data input over two processes (offconv.inputs.perf_data.reader.Follow): this
    process parses perf script's output as perf writes it; when perf has ended and more
    than ``FOLLOW_MIN_BYTES`` are still to be read (the parser was the slower side, as on a
    Java recording: 105 MB of text in about a second of perf), the rest is cut at an event boundary at
    ``FOLLOW_SHARE`` of it and a child sums the second part. ``merge_into`` adds the
    child's sums after this process's, as the serial path would have met them.

    The child is forked when the parse starts (``ForkedLater``), while this process's
    heap is small, and waits for its part: forked at perf's end, from a heap of 100 MB, it
    made both processes copy every page either wrote to (copy-on-write faults), 30-100 ms
    on the Java recording's tail. It then starts with cold caches, which cost it 12% (1.3
    ms/MB) on that recording's text.

    To an SVG, what is left is split from FOLLOW_MIN_SVG_BYTES on, and this process's
    share is smaller (``_svg_share``): while the child parses, it names its own stacks
    with the SVG's labeller (``_name_while``, naming.StackNames), and the child names its
    own part's, sending the names with its stacks (``_labelled_part``). The drawing then
    names only the stacks neither got to."""

    def __init__(self, follow, fmt, path: str, popts, want: str, naming=None, sums=None):
        self._follow = follow
        self._fmt = fmt
        self._path = path
        self._popts = popts
        self._want = want
        self._naming = naming  # the output is an SVG: name stacks while the child works
        self._sums = sums      # this process's (its stacks so far, for _svg_cut)
        self._cpu = time.process_time()
        self.stack_names = None
        self.span = None
        self._fd = None
        self.child = ForkedLater(_second_part, path=path, fmt=fmt, first_lineno=1,
                                   popts=popts, want=want, labels=naming)
        follow.on_done = self._done

    def _done(self, pos: int, size: int) -> Optional[int]:
        cut = None
        if self._naming is not None and self._sums is not None:
            if size - pos >= FOLLOW_MIN_SVG_BYTES:
                cut = parallel.cut_in(self._follow.fd, pos, size, b"\n\n", self._svg_share(pos, size))
        elif size - pos >= FOLLOW_MIN_BYTES:
            cut = parallel.cut_in(self._follow.fd, pos, size, b"\n\n", FOLLOW_SHARE)
        if cut is None:  # not worth a second process: the child goes
            self.stop()
            self.child = None
            return None
        self._fd = os.dup(self._follow.fd)  # the parent's own, should it parse the rest itself
        self.span = (cut, size)
        # the file by this process's descriptor: Follow's own may have changed since the fork
        self.child.start(name=f"/proc/{os.getpid()}/fd/{self._fd}", span=self.span)
        return cut

    def _svg_share(self, pos: int, size: int) -> float:
        """This process's share of the ``size - pos`` bytes left, when it also names its
        stacks while the child parses: parse(share) + name = parse(1 - share) in the
        child, at this process's parse rate so far (CPU time per byte read), at most
        FOLLOW_SHARE, at least 0 (the child takes it all; the cut is then the first event
        boundary after ``pos``)."""
        per_byte = (time.process_time() - self._cpu) / max(pos, 1)
        left = (size - pos) * per_byte
        naming = sum(map(len, self._sums.counts)) * NAME_BYTES_PER_FRAME * per_byte
        share = (left * CHILD_SLOWER - naming) / (left * (1 + CHILD_SLOWER))
        return min(FOLLOW_SHARE, max(0.0, share))

    def _name(self) -> str:
        return f"/proc/self/fd/{self._fd}"

    def merge_into(self, sums, stats: dict, src: Source) -> None:
        """After this process's part: the child's sums, stats and line numbers."""
        if self.span is None:
            return
        try:
            if self._naming is not None:
                self.stack_names = _name_while(self.child, sums.counts, self._naming,
                                               self.stack_names)
            result = self.child.result()
        finally:
            self.child.stop()
        try:
            second_line = src.next_lineno
            if result is None:  # the second part failed: parse it here, in order, to raise its error
                part2 = Source(self._name(), span=self.span, first_lineno=second_line)
                result = _second_part_here(part2, self._path, self._fmt, self._popts, self._want)
            else:
                result = shifted(result, second_line - 1)
        finally:
            os.close(self._fd)
        part, other, stats2, cut_line = result
        if len(part) == 6:  # _labelled_part: its stacks' names and weights, no stacks
            *part, (names, weights, flags) = part
            self.stack_names.add_named(names, weights, flags)
        with gcpause.paused():
            sums.merge(part)
        sums.other = sums.other or other
        merge_stats(stats, stats2)
        if cut_line is not None:
            src.cut_line = cut_line

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()


def follow_split(src: Source, fmt, opts, first, sums=None,
                 first_input: bool = True) -> Optional[FollowSplit]:
    """A FollowSplit for an input read through perf_data.Follow on the samples route. To an
    SVG, the first input's child sends its stacks' names, not its stacks (the profile then
    holds them as StackNames.named: only the first input's sums become the profile's)."""
    follow = getattr(src, "_stream", None)
    if not parallel.enabled() or not hasattr(follow, "on_done") or fmt.sum_blocks is None or not first.event:
        return None
    if opts.parse.addrs:
        return None
    try:  # perf script's text is 1.5 (no call chains) to 15 times the size of its perf.data
        if os.path.getsize(src.path) < FOLLOW_MIN_BYTES // 64:
            return None
    except OSError:
        return None
    # Without call chains, an event is one line that the parser reads several times as fast
    # as perf prints it: nothing is left to split when perf ends, and a child's fork would
    # only cost time
    from offconv.inputs.perf_data.reader import without_callchains
    if without_callchains(src.path):
        return None
    naming = opts.naming if opts.aggregate.svg and not opts.flame.flamechart and first_input \
        else None
    return FollowSplit(follow, fmt, src.path, opts.parse, opts.parse.event_filter or first.event,
                       naming, sums)


NAME_STEP = 2048  # stacks named between two looks at the child


def _name_while(child, counts: dict, naming, names: Optional[StackNames] = None) -> StackNames:
    """The display names of the first stacks of ``counts``, made until the child's result
    starts to come (the SVG names the rest): time this process would otherwise spend
    waiting. ``names``: those of its first stacks made already (while perf printed)."""
    if names is None:
        names = names_ahead(naming)
    stacks = list(islice(counts, len(names), None))
    for i in range(0, len(stacks), NAME_STEP):
        if child.ready():
            break
        names.add(stacks[i:i + NAME_STEP])
    return names


def names_ahead(naming) -> StackNames:
    """An SVG's names of a profile's first stacks, to be made ahead of the drawing with the
    SVG's own labeller (it takes them over)."""
    from offconv.model.labels import Labels
    return StackNames(naming, Labels(naming))
