"""A profile's count table for many unique stacks: stack (a tuple of Frames) -> weight, as
a dict reads, with each stack held as the bytes of its frames' ids (2 bytes a frame while
there are fewer than 65,536 distinct frames, then 4) instead of a tuple of references.

A tuple of 20 frames takes 216 bytes; its ids, 72 (a bytes object of 40). With a million
unique stacks (a folded file of 165 MB) that is the difference between a 300 MB and a
150 MB profile. Reading a stack back makes its tuple (``_dec``), so a renderer that walks
the table pays a little time per stack, and ``outputs/svg/levels.py`` reads the ids
themselves (``encoded``). Used from ``COMPACT_MIN`` unique stacks on (``compact``); below
that a dict is quicker and what it costs is small. Insertion order is a dict's.
"""
from __future__ import annotations

from array import array
from collections.abc import ItemsView, MutableMapping

COMPACT_MIN = 250_000
_WIDE_FROM = 1 << 16


class StackTable(MutableMapping):
    """stack -> weight; ``frames[i]`` is the Frame of id ``i``, ``code`` the array type
    code of the ids ("H" or "I")."""

    __slots__ = ("_d", "frames", "_ids", "_by_obj", "_kept", "code")

    def __init__(self, items=()):
        self._d: dict = {}           # bytes of ids -> weight
        self.frames: list = []       # id -> Frame
        self._ids: dict = {}         # Frame -> id
        self._by_obj: dict = {}      # id() of a Frame object met -> its id (the object is kept)
        self._kept: list = []
        self.code = "H"
        for k, w in (items.items() if hasattr(items, "items") else items):
            self[k] = w

    @classmethod
    def adopt(cls, counts: dict) -> "StackTable":
        """The table of a dict's stacks and weights, in its order; the dict is emptied."""
        t = cls()
        d, enc = t._d, t._enc
        for stack, w in counts.items():
            d[enc(stack)] = w
        counts.clear()
        return t

    # -- ids --------------------------------------------------------------------------
    def _new(self, frame) -> int:
        i = self._ids.get(frame)
        if i is None:
            i = self._ids[frame] = len(self.frames)
            self.frames.append(frame)
            if len(self.frames) > _WIDE_FROM and self.code == "H":
                self._widen()
        elif self.frames[i] is not frame:
            self._kept.append(frame)   # an equal Frame, another object: its id() stays its
        self._by_obj[id(frame)] = i
        return i

    def _widen(self) -> None:
        self._d = {array("I", memoryview(k).cast("H")).tobytes(): w for k, w in self._d.items()}
        self.code = "I"

    def _enc(self, stack) -> bytes:
        """The key of ``stack``, its frames given ids where they have none."""
        by_obj = self._by_obj
        try:
            return array(self.code, map(by_obj.__getitem__, map(id, stack))).tobytes()
        except KeyError:
            for f in stack:
                if id(f) not in by_obj:
                    self._new(f)
            return array(self.code, map(by_obj.__getitem__, map(id, stack))).tobytes()

    def _key(self, stack):
        """The key of ``stack`` if all its frames have ids, else None (it is not here)."""
        ids = self._ids
        try:
            return array(self.code, map(ids.__getitem__, stack)).tobytes()
        except (KeyError, TypeError):
            return None

    def _dec(self, key: bytes) -> tuple:
        return tuple(map(self.frames.__getitem__, memoryview(key).cast(self.code)))

    # -- the mapping ------------------------------------------------------------------
    def __getitem__(self, stack):
        k = self._key(stack)
        if k is None:
            raise KeyError(stack)
        return self._d[k]

    def get(self, stack, default=None):
        k = self._key(stack)
        return default if k is None else self._d.get(k, default)

    def __setitem__(self, stack, weight) -> None:
        self._d[self._enc(stack)] = weight

    def setdefault(self, stack, default=None):
        return self._d.setdefault(self._enc(stack), default)

    def __delitem__(self, stack) -> None:
        k = self._key(stack)
        if k is None:
            raise KeyError(stack)
        del self._d[k]

    def __contains__(self, stack) -> bool:
        k = self._key(stack)
        return k is not None and k in self._d

    def __iter__(self):
        return map(self._dec, self._d)

    def __len__(self) -> int:
        return len(self._d)

    def items(self):
        return _Items(self)

    def values(self):
        return self._d.values()

    def encoded(self) -> tuple:
        """(type code, frames, bytes of ids -> weight): the table as it is held."""
        return self.code, self.frames, self._d

    def merge_from(self, other: "StackTable") -> None:
        """Add ``other``'s weights (another process's part), emptying it."""
        trans = [self._new(f) for f in other.frames]
        code, d = self.code, self._d
        get = d.get
        keys, weights = list(other._d), list(other._d.values())
        other._d = {}
        ocode = other.code
        for i, w in enumerate(weights):   # each of other's keys freed once it is added
            k, keys[i] = keys[i], None
            key = array(code, map(trans.__getitem__, memoryview(k).cast(ocode))).tobytes()
            d[key] = get(key, 0) + w

    def __reduce__(self):
        return _rebuild, (self.frames, self.code, self._d)

    def __repr__(self) -> str:
        return f"StackTable({len(self)} stacks, {len(self.frames)} frames)"


class _Items(ItemsView):
    """items() of a StackTable: iterated in one pass over its keys and weights."""

    def __iter__(self):
        t = self._mapping
        return zip(map(t._dec, t._d), t._d.values())


def _rebuild(frames: list, code: str, d: dict) -> StackTable:
    t = StackTable()
    t.code = code
    for f in frames:
        t._new(f)
    t._d = d
    return t


def compact(counts):
    """``counts`` as a StackTable once it holds COMPACT_MIN stacks (a dict until then)."""
    if counts.__class__ is dict and len(counts) >= COMPACT_MIN:
        return StackTable.adopt(counts)
    return counts
