"""One on-CPU text input over two processes: the file is cut at an event boundary (a
blank line) at 58% of it; this process parses and sums the first part while a forked
child does the same with the second; the child's sums are then added in, in the order the
serial path would have met them (a dict keeps first-seen order), so every output is
byte-identical to the serial path (tests/test_parallel.py checks it on every fixture).

A format of one record per line (folded stacks, ``sum_lines``) is cut at a newline at 65%
instead, and the child reads its part with the input's first lines, which decide a folded
file's dialect; that child's Frames come back as this process's equal ones (_Unpickler: a
perf script child's do not, which was faster there). For a folded output of the first
input, this process names its own stacks while a perf script child still works
(naming.FoldedNames), and the child sends the folded names of its stacks with their
weights instead of the stacks (``_folded_part``): the folded output needs only those.

Only plain files (not stdin or gzip) of at least ``MIN_BYTES`` whose records take the
samples route are split, and perf.data (``FollowSplit``): perf script's output file is read
as perf writes it, and what is still unread when perf ends, if that is ``FOLLOW_MIN_BYTES``
or more, is split the same way, with a child forked when the parse began (it waits for its
part). To an SVG, from ``FOLLOW_MIN_SVG_BYTES`` left, the child takes more of it (this
process names its own stacks meanwhile) and sends its stacks' display names with them
(``_labelled_part``). The off-CPU path keeps its state across events and stays serial.
Errors keep the serial order: the first part's error is raised before the second's.
"""
from __future__ import annotations

import copyreg
import io
import os
import pickle
import select
import signal
import time
from dataclasses import replace
from itertools import islice
from typing import Optional

from offconv.model import gcpause
from offconv.run.aggregate import Sums, add_weights
from offconv.model.errors import ParseError
from offconv.model.records import Frame
from offconv.model.naming import FoldedNames, Namer, StackNames, merge_by
from offconv.inputs import demangle
from offconv.inputs.source import Source, first_event_line_cut

MIN_BYTES = 16 << 20   # below this, forking costs more than it saves
CUT_SEARCH = 1 << 20   # look this far past the middle for a blank line
# the parent's share of the input: the child also forks, pickles its sums and the parent
# unpickles them after its own share (0.1 s each way for 20k distinct stacks). Alternated
# medians of 9-11 runs against 0.55: deep 1.00 -> 0.94 s, recorded Java 0.88 -> 0.84,
# shallow 1.17 -> 1.11, JIT-like 1.23 -> 1.20; 0.51 and 0.62 were slower. Eleventh round
# (the child names its part's stacks now; the Intel host), alternated medians of 5-7:
# 0.58 -> 0.54: deep 0.61 -> 0.58 s, shallow 0.86 -> 0.81, Java 0.59 -> 0.56, JIT-like 0.82
# -> 0.79; 0.50-0.52 and 0.56-0.57 were slower on two shapes of four
FIRST_SHARE = 0.54
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


def enabled() -> bool:
    return os.environ.get("OFFCONV_JOBS", "2") != "1" and (os.cpu_count() or 1) > 1


def cut_point(path: str, size: int, sep: bytes = b"\n\n", share: float = FIRST_SHARE) -> Optional[int]:
    """The byte offset just after ``sep`` (a blank line: an event boundary; a newline for
    a format of one record per line) at ``share`` of the file, or None when there is none.
    (The number of the line there is known only once the first part is read: the child
    numbers its lines from 1 and the parent shifts what it reports.)"""
    with open(path, "rb") as f:
        return _cut_in(f.fileno(), 0, size, sep, share)


def _cut_in(fd: int, start: int, size: int, sep: bytes, share: float) -> Optional[int]:
    """cut_point within bytes [start, size) of an open file."""
    middle = start + int((size - start) * share)
    buf = os.pread(fd, CUT_SEARCH, middle)
    k = buf.find(sep)
    if k < 0:
        if sep != b"\n\n":
            return None
        # no blank line: perf script of a recording without call chains, one line an
        # event; a cut between two such lines splits no event
        k = first_event_line_cut(buf.decode("latin-1"))  # (ASCII pattern: byte offsets)
        if k is None:
            return None
        cut = middle + k
    else:
        cut = middle + k + len(sep)
    return cut if cut < size else None


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
            from offconv.run.pipeline import ends_inside   # its last line, cut short, is no error
            if not ends_inside(e, src):
                raise
        demangle.apply_noted(sums, popts.addrs)  # perf.data converted with --no-demangle
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


def load_split(path: str, src: Source, fmt, opts, stats: dict, peek, profile):
    """The samples route of one input over two processes; returns (profile, src for the
    warnings) or None when the input does not qualify (the caller goes serial)."""
    if src.kind != "text" or path == "-" or not enabled():
        return None
    if fmt.sum_blocks is None and fmt.sum_lines is None:
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size < MIN_BYTES:
        return None
    if fmt.sum_blocks is None:
        return _load_split_lines(path, src, fmt, opts, stats, profile, size)
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
    # the first input, to a folded output: the child sends folded names, not stacks
    naming = opts.naming if profile is None and opts.aggregate.folded else None
    child = _fork(_second_part, path, path, fmt, (cut, size), 1, popts, want, naming,
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
        result = _shifted(result, second_line - 1)
    part2, other, stats2, cut_line = result
    add_weights(profile, part2[0], part2[1])
    if len(part2) == 6:  # the child's part as folded names (_folded_part)
        text, weights = part2[5]
        profile.folded_names.add_named(text.split("\n") if weights else [], weights)
    message = f"Filtering for events of type: {want}"
    if other and popts.event_filter is None and message not in profile.warnings[before_warn:]:
        profile.warnings.append(message)
    _merge_stats(stats, stats1, stats2)
    part1.cut_line = cut_line
    return profile, part1


class FollowSplit:
    """A perf.data input over two processes (offconv.inputs.perf_data.reader.Follow): this
    process parses perf script's output as perf writes it; when perf has ended and more
    than ``FOLLOW_MIN_BYTES`` are still to be read (the parser was the slower side, as on a
    Java recording: 105 MB of text in about a second of perf), the rest is cut at an event boundary at
    ``FOLLOW_SHARE`` of it and a child sums the second part. ``merge_into`` adds the
    child's sums after this process's, as the serial path would have met them.

    The child is forked when the parse starts (``_forked_later``), while this process's
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
        self.child = _forked_later(_second_part, path=path, fmt=fmt, first_lineno=1,
                                   popts=popts, want=want, labels=naming)
        follow.on_done = self._done

    def _done(self, pos: int, size: int) -> Optional[int]:
        cut = None
        if self._naming is not None and self._sums is not None:
            if size - pos >= FOLLOW_MIN_SVG_BYTES:
                cut = _cut_in(self._follow.fd, pos, size, b"\n\n", self._svg_share(pos, size))
        elif size - pos >= FOLLOW_MIN_BYTES:
            cut = _cut_in(self._follow.fd, pos, size, b"\n\n", FOLLOW_SHARE)
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
                result = _shifted(result, second_line - 1)
        finally:
            os.close(self._fd)
        part, other, stats2, cut_line = result
        if len(part) == 6:  # _labelled_part: its stacks' names and weights, no stacks
            *part, (names, weights, flags) = part
            self.stack_names.add_named(names, weights, flags)
        with gcpause.paused():
            sums.merge(part)
        sums.other = sums.other or other
        _merge_stats(stats, stats2)
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
    if not enabled() or not hasattr(follow, "on_done") or fmt.sum_blocks is None or not first.event:
        return None
    if opts.parse.addrs:
        return None
    try:  # perf script's text is 1.5 (no call chains) to 15 times the size of its perf.data
        if os.path.getsize(src.path) < FOLLOW_MIN_BYTES // 64:
            return None
    except OSError:
        return None
    # Without call chains, an event is one line that the parser reads at 115 MB/s (the
    # benchmark's no-call-chain row), three to four times as fast as perf prints it (3.4
    # MB in 0.09 s of perf's per-sample work): nothing is left to split when perf ends,
    # and the child's fork cost the no-call-chain perf.data row 5 ms of 0.18 s (11 runs)
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


def name_step(names: StackNames, counts: dict) -> bool:
    """Name up to NAME_STEP more of the stacks of ``counts`` (in its order: the first
    ones not named yet); whether there were any."""
    k = len(names)
    if len(counts) <= k:
        return False
    names.add(list(islice(counts, k, k + NAME_STEP)))
    return True


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
    return sums.part(), None, None, stats, src.cut_line


def _load_split_lines(path: str, src: Source, fmt, opts, stats: dict, profile, size: int):
    """sum_lines over two processes, cut at a newline: the child's part is read with the
    first part's head lines (a folded file's dialect is decided by its first lines), and
    its sums are merged into the first part's before they become the profile's, as the
    serial path would have summed them."""
    cut = cut_point(path, size, b"\n", LINES_SHARE)
    if cut is None:
        return None
    part1 = Source(path, span=(0, cut))
    popts = opts.parse
    head = src.head
    child = _fork(_second_lines, path, fmt, (cut, size), popts, head)
    stats1: dict = {}
    try:
        sums = Sums(popts)
        with gcpause.paused():
            fmt.sum_lines(part1.lines(), path, popts, stats1, sums)
            # the child's frames become this part's equal ones (_Unpickler)
            result = child.result({f: f for f in (sums.frames or {}).values()})
    finally:
        child.stop()
    second_line = part1.next_lineno
    if result is None:  # the second part failed: parse it here, in order, to raise its error
        part2 = Source(path, span=(cut, size), first_lineno=second_line)
        result = _second_lines_here(part2, path, fmt, popts, head)
    else:
        result = _shifted(result, second_line - 1)
    part, _, _, stats2, cut_line = result
    with gcpause.paused():
        sums.merge(part)
        profile = sums.finish(profile, path)
    _merge_stats(stats, stats1, stats2)
    part1.cut_line = cut_line
    return profile, part1


def _merge_stats(stats: dict, *parts: dict) -> None:
    """The parts' parse stats into ``stats``, in input order: counts add up, the first
    skipped line is the first part's that has one, the recorder's lost share is the
    largest (as one parse would have kept them)."""
    for part in parts:
        for key, value in part.items():
            if key == "first_skipped":
                stats.setdefault(key, value)
            elif key == "lost_samples_pct":
                stats[key] = max(stats.get(key, 0.0), value)
            elif key in ("recorded_by_offconv", "recorded_filtered"):  # the paths of those inputs
                stats[key] = stats.get(key, ()) + value
            else:
                stats[key] = stats.get(key, 0) + value


def _shifted(result: tuple, lines: int) -> tuple:
    """The child's line numbers (the first line skipped with --lenient, the line cut short)
    moved down by ``lines``: in a result whose last two items are its stats and cut line."""
    *rest, stats, cut_line = result
    first = stats.get("first_skipped")
    if first is not None:
        where, _, n = first.rpartition(":")
        stats["first_skipped"] = f"{where}:{int(n) + lines}"
    return (*rest, stats, (cut_line + lines if cut_line is not None else None))


def _reduce_frame(frame: Frame) -> tuple:
    return _frame, tuple(frame)


def _frame(*fields) -> Frame:
    return Frame(*fields)


class _Unpickler(pickle.Unpickler):
    """Loads the child's result with each of its Frames replaced by the equal Frame this
    process already has (``frames``: Frame -> itself), if any: the two parts' stacks then
    share their frames. A lookup of an equal but distinct Frame touches twice the memory:
    the SVG of a million folded stacks (20k distinct frames) spent 6.5 s instead of 3.2 s
    naming them. The child pickles a Frame as a call to ``_frame`` (``_reduce_frame``),
    once per distinct Frame (pickle's memo), and this calls its own method instead."""

    def __init__(self, data: bytes, frames: dict):
        super().__init__(io.BytesIO(data))
        self._frames = frames

    def find_class(self, module, name):
        if module == __name__ and name == "_frame":
            return self._frame
        return super().find_class(module, name)

    def _frame(self, *fields) -> Frame:
        frame = Frame(*fields)
        return self._frames.setdefault(frame, frame)


def _dumps(obj) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, Frame: _reduce_frame}
    pickler.dump(obj)
    return buf.getvalue()


class _fork:
    """``fn(*args)`` in a forked child (a bare fork and a pipe: a multiprocessing pool
    costs more to set up than the work it would save on a 16 MB input); ``result()`` is
    its return value (pickled back), or None when the child failed."""

    def __init__(self, fn, *args, share_frames: bool = True):
        r, w = os.pipe()
        self._share = share_frames
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                value = fn(*args)
                data = _dumps(value) if share_frames else pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self._read = r

    def ready(self) -> bool:
        """Whether the child's result has started to come (or the child has ended)."""
        return bool(select.select([self._read], [], [], 0)[0])

    def result(self, frames: Optional[dict] = None):
        """The child's return value (its Frames made this process's equal ones, from
        ``frames``, where there are), or None when it failed."""
        with os.fdopen(self._read, "rb") as f:
            data = f.read()
        self._read = None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0 or not data:
            return None
        try:
            if not self._share:
                return pickle.loads(data)
            return _Unpickler(data, {} if frames is None else frames).load()
        except pickle.UnpicklingError:   # (what cannot be taken over here: read it again)
            return None

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


class _forked_later(_fork):
    """``fn(**fixed, **job)`` in a child forked now that waits for its ``job``
    (``start``); ``stop()`` before ``start`` ends it unused (a job never sent reads as
    none). ``result()`` as _fork's (pickled back, its Frames its own)."""

    def __init__(self, fn, **fixed):
        jr, jw = os.pipe()
        super().__init__(_run_job, fn, fixed, jr, jw, share_frames=False)
        os.close(jr)
        self._job = jw

    def start(self, **job) -> None:
        with os.fdopen(self._job, "wb") as f:
            self._job = None
            f.write(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))

    def stop(self):
        if self._job is not None:
            os.close(self._job)
            self._job = None
        super().stop()


def _run_job(fn, fixed: dict, jr: int, jw: int):
    """In a _forked_later child: ``fn(**fixed, **job)`` once its job has come through the
    pipe ``jr``; None when none comes (the pipe closed first)."""
    os.close(jw)
    with os.fdopen(jr, "rb") as f:
        job = f.read()
    return fn(**fixed, **pickle.loads(job)) if job else None


# -- offconv diff: the two sides at once ------------------------------------------------
# BEFORE bigger than this is loaded by a child while this process loads AFTER
PAIR_MIN_BYTES = 4 << 20


def load_pair(paths: list, load_one) -> list:
    """[load_one(BEFORE), load_one(AFTER)], BEFORE in a forked child while this process
    loads AFTER, where neither is stdin and BEFORE is a file of ``PAIR_MIN_BYTES`` or more (the
    child's Profile is pickled back: 0.1 s for 20k stacks). As the serial order would:
    BEFORE's error is the one raised when both fail, and AFTER is loaded either way; a
    child that failed (an input error) has BEFORE loaded here, to raise that error."""
    before, after = paths
    if not enabled() or "-" in paths or not _pair_worth(before):
        return [load_one(p) for p in paths]
    child = _fork(_load_side, load_one, before)
    try:
        second = load_one(after)
    except KeyboardInterrupt:
        child.stop()
        raise
    except BaseException:
        try:
            first = child.result()
        finally:
            child.stop()
        if first is None:
            load_one(before)  # raises BEFORE's error, which the serial order meets first
        raise
    try:
        first = child.result()
    finally:
        child.stop()
    return [first if first is not None else load_one(before), second]


def _pair_worth(path: str) -> bool:
    try:
        return os.path.isfile(path) and os.path.getsize(path) >= PAIR_MIN_BYTES
    except OSError:
        return False


def _load_side(load_one, path):
    """In the child: BEFORE's Profile, or None when it failed or holds stacks named ahead
    by identity (naming.FoldedNames, StackNames: they do not survive pickling)."""
    import sys
    try:
        sys.stderr = open(os.devnull, "w")  # its progress lines would mix with this one's
        profile = load_one(path)
        if profile.folded_names is not None or profile.stack_names is not None:
            return None
        return profile
    except BaseException:  # noqa: BLE001 - the parent loads it again to raise the error
        return None
