"""A dict of int -> int held in two arrays (int32 by default): 10-20 bytes an entry, where
a dict of int objects takes about 110 (its slot, the key's and the value's int objects).
The analysis keeps one entry per thread of the input (the creator of each task; which
packed record is a thread's), and a parallel build's recording has 100k threads.

Open addressing with linear probing; keys are spread by Fibonacci hashing (tids are dense,
and a run of them would otherwise fill a run of slots). Keys that are not ints from 0 to
the type's maximum, and values outside the type, go to a plain dict beside it."""
from __future__ import annotations

from array import array

_FREE, _GONE = -1, -2            # a slot never used; a slot whose key was removed
_PHI = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1
_RANGE = {"i": (-(1 << 31), (1 << 31) - 1), "q": (-(1 << 63), (1 << 63) - 1)}


class IntTable:
    """int -> int, as a dict reads: ``get``, ``[]``, ``in``, ``len``, ``pop``, ``items``
    (in no particular order, the same for the same inserts), ``update``, iteration over
    the keys."""

    __slots__ = ("_keys", "_vals", "_bits", "_n", "_used", "_other", "_code", "_max", "_vmin",
                 "_vmax")

    def __init__(self, items=(), typecode: str = "i"):
        """``typecode``: the arrays' ("i": int32, "q": int64)."""
        self._code = typecode
        self._vmin, self._vmax = _RANGE[typecode]
        self._max = self._vmax        # the largest key the arrays hold
        self._alloc(3)
        self._n = 0                   # keys in the arrays
        self._other: dict = {}        # the rest
        self.update(items)

    def _alloc(self, bits: int) -> None:
        self._bits = bits
        self._keys = array(self._code, [_FREE]) * (1 << bits)
        self._vals = array(self._code, [0]) * (1 << bits)
        self._used = 0                # slots not free (keys and removed keys)

    def _slot(self, key: int) -> int:
        """The slot of ``key``, or the one where it would go."""
        keys, bits = self._keys, self._bits
        mask = (1 << bits) - 1
        i = ((key * _PHI) & _M64) >> (64 - bits)
        gone = -1
        while True:
            k = keys[i]
            if k == key:
                return i
            if k == _FREE:
                return i if gone < 0 else gone
            if k == _GONE and gone < 0:
                gone = i
            i = (i + 1) & mask

    def _find(self, key) -> int:
        if key.__class__ is not int or key < 0 or key > self._max or not self._n:
            return -1
        i = self._slot(key)
        return i if self._keys[i] == key else -1

    def _grow(self) -> None:
        old = [(k, v) for k, v in zip(self._keys, self._vals) if k >= 0]
        bits = 3
        while (1 << bits) < 4 * len(old):
            bits += 1
        self._alloc(bits)
        keys, vals = self._keys, self._vals
        for k, v in old:
            i = self._slot(k)
            keys[i], vals[i] = k, v
        self._used = len(old)

    def get(self, key, default=None):
        i = self._find(key)
        if i >= 0:
            return self._vals[i]
        return self._other.get(key, default) if self._other else default

    def __getitem__(self, key):
        i = self._find(key)
        if i >= 0:
            return self._vals[i]
        return self._other[key]

    def __setitem__(self, key, value) -> None:
        if (key.__class__ is not int or not 0 <= key <= self._max or value.__class__ is not int
                or not self._vmin <= value <= self._vmax):
            if self._find(key) >= 0:
                self.pop(key)
            self._other[key] = value
            return
        if self._other:
            self._other.pop(key, None)
        i = self._slot(key)
        k = self._keys[i]
        if k != key:
            if 2 * (self._used + 1) > len(self._keys):
                self._grow()
                i = self._slot(key)
                k = self._keys[i]
            self._used += k == _FREE
            self._n += 1
            self._keys[i] = key
        self._vals[i] = value

    def pop(self, key, *default):
        i = self._find(key)
        if i >= 0:
            self._keys[i] = _GONE
            self._n -= 1
            return self._vals[i]
        if key in self._other:
            return self._other.pop(key)
        if default:
            return default[0]
        raise KeyError(key)

    def __delitem__(self, key) -> None:
        self.pop(key)

    def __contains__(self, key) -> bool:
        return self._find(key) >= 0 or (bool(self._other) and key in self._other)

    def __len__(self) -> int:
        return self._n + len(self._other)

    def __iter__(self):
        return (k for k, _ in self.items())

    def keys(self):
        return iter(self)

    def items(self):
        for k, v in zip(self._keys, self._vals):
            if k >= 0:
                yield k, v
        yield from self._other.items()

    def update(self, other) -> None:
        for k, v in (other.items() if hasattr(other, "items") else other):
            self[k] = v

    def __eq__(self, other) -> bool:
        return hasattr(other, "items") and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return f"IntTable({dict(self.items())!r})"
