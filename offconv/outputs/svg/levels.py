"""The flame graph's frames found depth by depth, for profiles of many unique stacks: the
same ``Layout`` as ``layout.layout`` gives for the display names of ``samples``, in
memory bounded by what is drawn plus a few machine words per stack.

``layout.layout`` sorts the named stacks: one tuple of display names per unique stack
beside the profile's own (1,000,000 unique stacks: 270 MB more, for a drawing of a few
thousand frames). Here no stack is named whole. Depth ``d`` sums, for each stack whose
frame at ``d - 1`` was drawn, its weight into (that drawn frame, the display name of its
frame at ``d``); the sums at least ``min_value`` are the frames drawn at ``d``, and only
their stacks go on to ``d + 1``. A stack under a pruned frame is never looked at again,
so the work follows the frames drawn, as the sorted walk's does.

The frames are those of the sorted walk: a frame is drawn when its sum is at least
``min_value`` (and positive); siblings are in name order, after the time of the stacks
that end at their parent (a stack sorts before its extensions); families and kind bits as
``layout._walk`` gives them. Integer weights only (``usable``): the walk's widths are
differences of running sums, which for floats may differ from these sums in the last bit.
"""
from __future__ import annotations

import os
from array import array
from itertools import chain
from operator import getitem, itemgetter
from struct import Struct
from typing import Callable, Optional

from offconv.model.errors import OffconvError
from offconv.model.labels import FAMILY_WAKER
from offconv.model.stacktable import StackTable
from offconv.outputs.svg.layout import ROOT, Box, Layout

# from this many unique stacks the drawing is found depth by depth (graph._draw): below
# it the sorted walk is quicker, and what it copies is small
LEVELS_MIN = 200_000
_NONE = (0, 0)
_SHIFT = 32          # a (parent frame, name) pair as one int: parent << _SHIFT | name id


def usable(samples) -> bool:
    """Whether ``samples`` can be drawn here: LEVELS_MIN unique stacks or more, every weight
    an int (or a bool), and not switched off (``OFFCONV_SVG_LEVELS=0``: the sorted walk,
    the same bytes; benchmarks/scale.py measures both)."""
    return (len(samples) >= LEVELS_MIN and os.environ.get("OFFCONV_SVG_LEVELS") != "0"
            and set(map(type, samples.values())) <= {int, bool})


def name_all(labels, samples) -> Callable:
    """Name every distinct frame of ``samples`` once with ``labels`` (so that its flags
    hold every display name's family and kind bits, as naming every stack does), and
    return ``name_of(root, frame)`` for layout_levels."""
    namer = labels.namer
    if isinstance(samples, StackTable):
        code, frames, table = samples.encoded()
        roots = {frames[memoryview(k).cast(code)[0]] for k in table if k}
    else:
        roots = set(map(itemgetter(0), filter(None, samples)))
        frames = None
    java = {r for r in roots if namer.is_java(r)}
    plain, in_java = namer.lookup(False), namer.lookup(True)
    if not java:
        for f in (frames if frames is not None else set(chain.from_iterable(samples))):
            plain(f)
        return lambda root, frame: plain(frame)
    # a frame's flags go to the name it has where it is named first (Labels._note): in
    # the profile's order, as naming every stack does
    stack = namer.stack
    for s in samples:
        stack(s)
    return lambda root, frame: (in_java if root in java else plain)(frame)


def layout_levels(samples, name_of: Callable, *, reverse: bool = False,
                  min_value: float = 0.0, total: Optional[float] = None,
                  flags: Optional[dict] = None, max_depth: Optional[int] = None) -> Layout:
    """``layout.layout(names of samples, ...)`` without naming the stacks whole.
    ``samples``: stack of frames -> int weight (a dict, or a StackTable, read as it holds
    its stacks). ``name_of(root, frame)``: the display name of ``frame`` in a stack whose
    first frame is ``root`` (its thread decides a Java frame's name). ``flags``: display
    name -> (family, kind bits), as for layout (complete for every name the stacks hold)."""
    table = flags or {}
    limit = max_depth if max_depth is not None else 1 << 62
    pairs, weights, length, frame_at = _access(samples)
    # (a stack's weight is looked up in the table where it is summed: a list of a million
    # weights beside it would be 8 MB more)
    stacks = [s for s, w in pairs if s and w > 0]
    actual = sum(map(weights.__getitem__, stacks))
    if not actual > 0:
        raise OffconvError("nothing to draw: the profile has no stack with a positive weight")
    deep = [(s, weights[s]) for s in stacks if length(s) > limit]
    # (the walk counts rows: stacks that display the same are one; deep ones are few)
    deep_rows = {tuple(name_of(frame_at(s, 0), frame_at(s, i)) for i in range(length(s)))
                 for s, _ in deep}
    timemax = total if total is not None and total > actual else actual
    # the drawn frames, by node number (0 the root): name, depth, start, value, flags,
    # the flags their children start from, children (in name order)
    nodes = _Nodes(actual)
    ids: dict = {}                     # display name -> its id
    by_id: list = []
    at = array("i", bytes(4 * len(stacks)))    # each stack's drawn frame at the last depth
    rows = _Rows(stacks, name_of, length, frame_at)
    live = range(len(stacks))
    d = 0
    while live and d < limit:
        sums: dict = {}
        get = sums.get
        first: dict = {}   # (parent, name id) -> the one row through it, or -1 for several
        first_get = first.get
        nids = array("i")   # each live stack's name id at d, -1 where it ends (4 bytes a
        push = nids.append  # stack: a million are live at first)
        for i in live:
            s = stacks[i]
            n = length(s)
            if n == d:               # ends at its frame: that frame's own time
                push(-1)
                continue
            name = name_of(frame_at(s, 0), frame_at(s, n - 1 - d if reverse else d))
            nid = ids.get(name)
            if nid is None:
                nid = ids[name] = len(by_id)
                by_id.append(name)
            key = at[i] << _SHIFT | nid
            sums[key] = get(key, 0) + weights[s]
            f = first_get(key)
            if f is None:
                first[key] = i
            elif f >= 0 and not rows.same(f, i):
                first[key] = -1
            push(nid)
        if not sums:
            break
        drawn = nodes.depth(sums, first, by_id, d, min_value, table)
        nxt = array("i")
        keep = nxt.append
        for i, nid in zip(live, nids):
            node = drawn.get(at[i] << _SHIFT | nid) if nid >= 0 else None
            if node is not None:
                at[i] = node
                keep(i)
        live = nxt
        d += 1
    return Layout(nodes.boxes(), actual, timemax, max(nodes.depth_of), 1.0,
                  (len(deep_rows), sum(w for _, w in deep), limit))


def _access(samples) -> tuple:
    """(stack, weight) pairs of ``samples``, stack -> weight, a stack's length and its frame
    at an index: a StackTable's stacks as it holds them (bytes of frame ids), not tuples."""
    if not isinstance(samples, StackTable):
        return samples.items(), samples, len, getitem
    code, frames, table = samples.encoded()
    width = array(code).itemsize
    unpack = Struct("=" + code).unpack_from
    return (table.items(), table, lambda key: len(key) // width,
            lambda key, i: frames[unpack(key, i * width)[0]])


class _Rows:
    """Whether two stacks are one row of the sorted walk: the same display names."""

    def __init__(self, stacks: list, name_of: Callable, length: Callable, frame_at: Callable):
        self.stacks, self.name_of = stacks, name_of
        self.length, self.frame_at = length, frame_at
        self.rep: dict = {}   # a stack -> its first-met equal stack, where that is another

    def same(self, a: int, b: int) -> bool:
        rep = self.rep
        ka = rep.get(a, a)
        if ka == rep.get(b, b):
            return True
        sa, sb = self.stacks[a], self.stacks[b]
        n = self.length(sa)
        if n != self.length(sb):
            return False
        name_of, at = self.name_of, self.frame_at
        ra, rb = at(sa, 0), at(sb, 0)
        if any(name_of(ra, at(sa, i)) != name_of(rb, at(sb, i)) for i in range(n)):
            return False
        rep[b] = ka
        return True


class _Nodes:
    """The drawn frames, as parallel lists by node number (0 the root)."""

    def __init__(self, total: int):
        self.name = [ROOT]
        self.depth_of = [0]
        self.start = [0]
        self.value = [total]
        self.flags = [0]
        self.child_flags = [0]
        self.kids: list = [[]]
        self.single = [False]   # one row only below it: the walk draws its tower at once

    def depth(self, sums: dict, first: dict, by_id: list, d: int, min_value: float,
              table: dict) -> dict:
        """Add the frames drawn at depth ``d + 1`` from ``sums`` ((parent node, name id)
        -> weight of the stacks through it); returns (parent, name id) -> node for them.
        Under each parent the children are placed in name order after the parent's own
        time, each as wide as its sum, pruned ones too (as the sorted walk places them)."""
        mask = (1 << _SHIFT) - 1
        groups: dict = {}
        for key, value in sums.items():
            groups.setdefault(key >> _SHIFT, []).append((by_id[key & mask], value, key))
        drawn: dict = {}
        name, depth_of, start, val = self.name, self.depth_of, self.start, self.value
        for parent in sorted(groups):
            kids = groups[parent]
            kids.sort()
            x = start[parent] + val[parent] - sum(v for _, v, _ in kids)
            pflags = self.child_flags[parent]
            mine = self.kids[parent]
            for nm, value, key in kids:
                if value >= min_value and value > 0:
                    family, bits = table.get(nm, _NONE)
                    fl = pflags | family if d == 1 else pflags
                    node = drawn[key] = len(name)
                    name.append(nm)
                    depth_of.append(d + 1)
                    start.append(x)
                    val.append(value)
                    self.flags.append(fl | bits)
                    self.child_flags.append(fl | FAMILY_WAKER if family == FAMILY_WAKER else fl)
                    self.kids.append([])
                    self.single.append(first[key] >= 0)
                    mine.append(node)
                x += value
        return drawn

    def boxes(self) -> list:
        """The frames as Boxes in the sorted walk's order: a frame's children together,
        in name order, each followed at once by its tower when one row only is below it;
        then the others' children, depth first."""
        name, depth_of, start, val, flags, kids, single = (
            self.name, self.depth_of, self.start, self.value, self.flags, self.kids,
            self.single)

        def box(n: int) -> Box:
            return Box(name[n], depth_of[n], start[n], val[n], None, flags[n], None)

        out = [box(0)]
        emit = out.append
        todo = [0]
        while todo:
            later = []
            for c in kids[todo.pop()]:
                emit(box(c))
                if single[c]:
                    below = kids[c]
                    while below:
                        (c,) = below
                        emit(box(c))
                        below = kids[c]
                elif kids[c]:
                    later.append(c)
            later.reverse()
            todo.extend(later)
        return out
