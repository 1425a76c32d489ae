"""Flame graph geometry, in profile units: which frames are drawn, where, how wide.

Frames merge by name along the path. By default sibling frames are sorted by name
(flamegraph.pl sorts its input lines); in flame chart mode the profile's insertion
order is kept and only adjacent identical prefixes merge. Frames narrower than the
pruning threshold are not drawn, nor their children: flamegraph.pl's rule
(``($etime-$stime) < $minwidth_time``, FG:flamegraph.pl, ANCHORS.md 1.1) with
``minwidth_time = minwidth_px / widthpertime``, or ``N%`` of the total.

The walk never visits a pruned frame's children: stacks are kept in one sorted list
with cumulative weights, a frame is a range of that list, and its children are found
by binary search on the next element, so the cost follows the frames drawn rather than
the number of stack elements.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import partial
from itertools import accumulate
from operator import itemgetter
from typing import NamedTuple, Optional

from offconv.model.errors import OffconvError
from offconv.model.labels import FAMILY_WAKER

XPAD = 10  # flamegraph.pl's left and right padding, pixels
ROOT = "all"
_NONE = (0, 0)


class Box(NamedTuple):
    """One drawn frame. ``depth`` 0 is the root ("all"), 1 the thread-name frame.
    ``start`` and ``value`` are in profile units (``value`` is the after column of a
    differential); ``before`` is the before column through this frame (differentials
    only); ``flags`` are palette families (run queue, blocked, waker). ``delta`` is the
    frame's *own* change (differentials only): after - before of the stack that ends at
    this frame, 0 for a frame with no self time -- what flamegraph.pl colours by."""

    name: str
    depth: int
    start: float
    value: float
    before: Optional[float]
    flags: int
    delta: Optional[float] = None


@dataclass(frozen=True)
class Layout:
    boxes: list          # [Box], boxes[0] is the root
    total: float         # sum of the weights
    timemax: float       # the 100% width: max(total, --total)
    depth_max: int       # deepest drawn frame
    max_delta: float     # largest |after - before| of an input stack (>= 1), flamegraph.pl's maxdelta
    cut: tuple = (0, 0.0, 0)  # (stacks deeper than max_depth, their weight, max_depth)


def parse_minwidth(minwidth) -> tuple[float, bool]:
    """``"0.1"`` -> (0.1, False) pixels; ``"2%"`` -> (2.0, True) percent of the total."""
    text = str(minwidth).strip()
    percent = text.endswith("%")
    try:
        value = float(text[:-1] if percent else text)
    except ValueError:
        raise OffconvError(f"--minwidth: expected pixels or N%, got {text!r}") from None
    if value < 0 or value != value:
        raise OffconvError(f"--minwidth: expected a non-negative number, got {text!r}")
    return value, percent


def prune_threshold(minwidth, width_px: int, timemax: float) -> float:
    """The smallest value a frame needs to be drawn (flamegraph.pl's minwidth_time)."""
    value, percent = parse_minwidth(minwidth)
    if percent:
        return timemax * value / 100
    widthpertime = (width_px - 2 * XPAD) / timemax
    return value / widthpertime


def _rows(samples: dict, before: Optional[dict], reverse: bool, flamechart: bool):
    """(stacks, weights, before weights or None) in drawing order."""
    if before is None:
        pairs_in = samples.items() if isinstance(samples, dict) else samples
        items = [(s, w) for s, w in pairs_in if s and w > 0]
        pairs = None
    else:
        keys = list(samples) + [k for k in before if k not in samples]
        items = [(k, max(samples.get(k, 0), 0)) for k in keys if k]
        pairs = {k: max(before.get(k, 0), 0) for k, _ in items}
    if reverse:
        items = [(s[::-1], w) for s, w in items]
        if pairs is not None:
            pairs = {k[::-1]: v for k, v in pairs.items()}
    if not flamechart:
        items.sort(key=itemgetter(0))
    stacks = [s for s, _ in items]
    weights = [w for _, w in items]
    befores = None if pairs is None else [pairs[s] for s in stacks]
    return stacks, weights, befores


def layout(samples, before: Optional[dict] = None, *, reverse: bool = False,
           flamechart: bool = False, min_value: float = 0.0,
           total: Optional[float] = None, flags: Optional[dict] = None,
           max_depth: Optional[int] = None) -> Layout:
    """Merge the stacks into frames and prune those narrower than ``min_value``.
    ``samples`` is a dict stack -> weight, or (flame charts of interval data) a list of
    (stack, weight) in time order, where a stack may come back.
    ``total`` (flamegraph.pl's --total) widens the 100% reference when larger than the
    sum of the weights. ``flags`` maps a display name to its (family, kind bits)
    (``frame_flags`` of the frames it names): a family colours the tower above a frame
    at depth 1 ('--' anywhere), kind bits only the frame. Raises OffconvError when
    nothing is left to draw. ``max_depth``: frames drawn below the root at most (a deeper
    stack is drawn to there, and counted in ``Layout.cut``), so that one stack millions of
    frames deep costs what is drawn, not what it holds."""
    stacks, weights, befores = _rows(samples, before, reverse, flamechart)
    limit = max_depth if max_depth is not None else 1 << 62
    deep = [w for s, w in zip(stacks, weights) if len(s) > limit]
    cum = list(accumulate(weights, initial=0))
    actual = cum[-1]
    if not actual > 0:
        raise OffconvError("nothing to draw: the profile has no stack with a positive weight")
    cumb = None if befores is None else list(accumulate(befores, initial=0))
    timemax = total if total is not None and total > actual else actual
    # flamegraph.pl (FG:flamegraph.pl flow()): a differential line's delta (col2 - col1)
    # is added to the frame the line ends at (``$i == $len_b``) and 0 to the frames above
    # it, so a frame's colour is its own (self) change, not its subtree's; maxdelta is the
    # largest |delta| of any input line (pruned ones too), at least 1.
    selfd = None if befores is None else {s: w - b for s, w, b in zip(stacks, weights, befores)}
    root = (ROOT, 0, 0, actual, None if cumb is None else cumb[-1], 0,
            None if selfd is None else selfd.get((), 0))
    raw = [root]
    _walk(stacks, cum, cumb, min_value, flamechart, raw, flags or {}, selfd, limit)
    boxes = list(map(partial(tuple.__new__, Box), raw))
    depth_max = max(b[1] for b in raw)
    max_delta = 1.0
    if selfd:
        max_delta = max(1.0, max(abs(d) for d in selfd.values()))
    return Layout(boxes, actual, timemax, depth_max, max_delta, (len(deep), sum(deep), limit))


def _walk(stacks, cum, cumb, min_value, flamechart, out, table, selfd=None,
          limit: int = 1 << 62) -> None:
    """Append the drawn frames below the root to ``out`` as Box-shaped tuples, to depth
    ``limit`` at most."""
    todo = [(0, len(stacks), 0, 0, 0)]  # (lo, hi, index in stack, start, parent flags)
    pop, emit = todo.pop, out.append
    while todo:
        lo, hi, d, start, pflags = pop()
        depth = d + 1
        kids: list = []
        push = kids.append
        i = lo
        while i < hi:
            stack = stacks[i]
            if len(stack) == d:  # ends at the parent: its self time
                start += cum[i + 1] - cum[i]
                i += 1
                continue
            name = stack[d]
            j = i + 1
            if j < hi and len(stacks[j]) > d and stacks[j][d] == name:
                if flamechart:
                    j += 1
                    while j < hi and len(stacks[j]) > d and stacks[j][d] == name:
                        j += 1
                else:
                    j = bisect_right(stacks, name, j + 1, hi, key=itemgetter(d))
            value = cum[j] - cum[i]
            if value >= min_value and value > 0:
                family, bits = table.get(name, _NONE)
                flags = pflags | family if d == 1 else pflags
                b = None if cumb is None else cumb[j] - cumb[i]
                sd = None if selfd is None else selfd.get(stack[:depth], 0)
                emit((name, depth, start, value, b, flags | bits, sd))
                cflags = flags | FAMILY_WAKER if family == FAMILY_WAKER else flags
                if depth >= limit:
                    pass
                elif j - i == 1:
                    _tail(stack, depth, start, value, b, cflags, emit, table, selfd, limit)
                else:
                    push((i, j, depth, start, cflags))
            start += value
            i = j
        if kids:
            kids.reverse()
            todo.extend(kids)  # popped left to right: frames come out in pre-order


def _tail(stack, depth, start, value, before, flags, emit, table, selfd=None,
          limit: int = 1 << 62) -> None:
    """A frame with a single stack below it: the rest of that stack (to depth ``limit``),
    all as wide."""
    last = len(stack) - 1
    for k in range(depth, min(len(stack), limit)):
        name = stack[k]
        family, bits = table.get(name, _NONE)
        if k == 1:
            flags |= family
        sd = None if selfd is None else (selfd[stack] if k == min(last, limit - 1) else 0)
        emit((name, k + 1, start, value, before, flags | bits, sd))
        if family == FAMILY_WAKER:
            flags |= FAMILY_WAKER
