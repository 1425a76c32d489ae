"""A thread's sums: ``ThreadTotals`` while it runs, packed into a shared arena once it ended
(``Threads``, ``PackedThread``): what ``Analysis`` keeps per thread, read by the report
through the same properties either way. May import offconv.model."""
from __future__ import annotations

import pickle
from array import array
from itertools import chain
from operator import attrgetter
from types import MappingProxyType
from typing import Optional

from offconv.model.inttable import IntTable
from offconv.model.records import Task


class _Derived:
    """What a thread's sums give (ThreadTotals, and PackedThread once it ended)."""

    __slots__ = ()

    @property
    def blocked(self):
        return array("q", chain.from_iterable(self.cause_durations[c]
                                              for c in sorted(self.cause_durations)))

    @property
    def offcpu_ns(self) -> int:
        return self.blocked_ns + self.runq_ns

    @property
    def runq_contention_ns(self) -> int:
        """Run-queue time spent behind another runnable task (the capacity signal)."""
        return self.runq_ns - self.runq_idle_ns

    @property
    def wall_ns(self) -> int:
        return self.blocked_ns + self.runq_ns + self.oncpu_ns


class ThreadTotals(_Derived):
    """Per-thread sums (ns) and the durations needed for exact percentiles: blocked
    durations are kept once, per cause (``blocked`` concatenates them)."""

    __slots__ = ("comm", "pid", "tid", "blocked_ns", "runq_ns", "runq_preempted_ns",
                 "runq_idle_ns", "runq_throttled_ns", "oncpu_ns", "unknown_ns", "unknown_by_cause", "switches",
                 "inferred", "no_wakeup", "periods", "by_cause", "by_state",
                 "cause_durations", "wakers", "runq_cont", "runq_idle", "timed_lock_ns", "woken_lock_ns", "woken",
                 "lock_after_sleep_ns")

    def __init__(self, task):
        self.comm, self.pid, self.tid = task.comm, task.pid, task.tid
        self.blocked_ns = self.runq_ns = self.runq_preempted_ns = self.oncpu_ns = 0
        self.runq_idle_ns = 0             # run-queue time that ended at a switch from idle
        self.runq_throttled_ns = 0        # preempted run-queue time that began with the CPU idle
        self.unknown_ns = 0               # blocked-or-running, split unknown (Period.unknown_ns)
        self.unknown_by_cause: dict = {}  # cause -> ns of that unknown time
        self.switches = self.inferred = self.no_wakeup = self.periods = 0
        self.wakers: dict = {}            # (cause, waker comm) -> ns
        self.woken = 0                    # blocked periods ended by a wakeup seen
        self.timed_lock_ns = 0            # futex waits ended by a timer
        self.woken_lock_ns = 0            # futex waits ended by another task
        self.lock_after_sleep_ns = 0      # lock waits ended by a task that had just slept
        self.by_cause: dict = {}          # (cause, label) -> ns
        self.by_state: dict = {}          # state letter -> blocked ns
        # run-queue durations (preempted included), kept once: behind another task, or
        # ended by a switch from the idle task
        self.runq_cont = array("q")
        self.runq_idle = array("q")
        self.cause_durations: dict = {}   # cause -> array of blocked durations


# -- threads that ended, packed -------------------------------------------------------------
# A parallel build runs a process for each file: 100k threads in a 1 GB recording, each with
# its totals, a handful of small dicts and arrays (1.3 KB). Once a thread has ended (its
# switch-out with prev_state X or Z), nothing adds to it but its interval counts, so its
# sums are packed into a run of int64 in a shared arena (``Threads.pack``), found again by
# its tid through a table of int64, and read back through a PackedThread made on demand:
# about 0.2 KB a thread, where a ThreadTotals in a dict took 1.3 KB.
_KEYS: list = []       # the packed keys (comm, (cause, label), (cause, waker), state, cause)
_KEY_IDS: dict = {}    # key -> its index in _KEYS (the process's own numbering)
_SCALARS = ("blocked_ns", "runq_ns", "runq_preempted_ns", "runq_idle_ns", "runq_throttled_ns",
            "oncpu_ns", "unknown_ns", "periods", "woken", "timed_lock_ns", "woken_lock_ns",
            "switches", "inferred", "no_wakeup", "lock_after_sleep_ns")
_MAPS = ("by_cause", "unknown_by_cause", "wakers", "by_state")
_NBITS = 12                      # a count of the packed dicts (and of cause_durations' keys)
_NMAX = (1 << _NBITS) - 1        # beyond it, a thread stays unpacked
_VBITS = 47                      # a dict's value (ns) shares its word with its key's id
_VMAX = 1 << _VBITS
_KMAX = 1 << (63 - _VBITS)       # key ids (beyond: the thread stays unpacked)
_LO = (1 << 32) - 1
ARENA_CHUNK = 1 << 20            # int64 in an arena's chunk (8 MB) before it starts another
_EMPTY = MappingProxyType({})
_HEAD = 5                        # tid, pid (-1: none), comm's key id, mask, counts


def _key_id(key) -> int:
    i = _KEY_IDS.get(key)
    if i is None:
        i = _KEY_IDS[key] = len(_KEYS)
        _KEYS.append(key)
    return i


_get_scalars = attrgetter(*_SCALARS)
_get_maps = attrgetter(*_MAPS)


def _record(tt: ThreadTotals) -> Optional[list]:
    """``tt`` as a run of int64 (PackedThread's layout), or None when it does not fit one (a
    dict of more than _NMAX keys, a value out of range)."""
    maps = _get_maps(tt)
    sizes = [len(m) for m in maps]
    sizes.append(len(tt.cause_durations))
    if max(sizes) > _NMAX or len(_KEYS) + sum(sizes) + 1 >= _KMAX:
        return None
    if (tt.runq_cont.__class__ is not array or tt.runq_idle.__class__ is not array
            or any(a.__class__ is not array for a in tt.cause_durations.values())):
        return None   # (latency.Buckets: a thread that waited thousands of times stays live)
    scalars = _get_scalars(tt)
    mask = 0
    for i, v in enumerate(scalars):
        if v:
            mask |= 1 << i
    counts = 0
    for i, n in enumerate(sizes):
        counts |= n << (_NBITS * i)
    out = [tt.tid, -1 if tt.pid is None else tt.pid, _key_id(tt.comm), mask, counts]
    out += [v for v in scalars if v]
    ids = _KEY_IDS
    for m in maps:
        for k, v in m.items():
            if not 0 <= v < _VMAX:
                return None
            i = ids.get(k)
            out.append((_key_id(k) if i is None else i) << _VBITS | v)
    for k, arr in tt.cause_durations.items():
        out.append(_key_id(k) << 32 | len(arr))
        out += arr
    out.append(len(tt.runq_cont) << 32 | len(tt.runq_idle))
    out += tt.runq_cont
    out += tt.runq_idle
    return out


class PackedThread(_Derived):
    """A thread that ended, read from its record in an arena's chunk (``_record``): its tid,
    pid, comm's key id, a mask of its non-zero scalars (``_SCALARS``), the counts of its
    dicts (``_NBITS`` each: ``_MAPS``, then ``cause_durations``), those scalars, each dict
    of ``_MAPS`` as a word a key (its id above ``_VBITS``, its value below), each run of
    ``cause_durations`` as a word (key id above 32 bits, length below) and the durations,
    then a word of the lengths of ``runq_cont`` and ``runq_idle`` and theirs. It reads as a
    ThreadTotals does (its dicts as read-only mappings, made when read); what would change
    it takes it out first (``Threads.take``: a ThreadTotals again)."""

    __slots__ = ("_a", "_at")

    def __init__(self, chunk: array, at: int):
        self._a, self._at = chunk, at

    tid = property(lambda self: self._a[self._at])
    comm = property(lambda self: _KEYS[self._a[self._at + 2]])

    @property
    def pid(self):
        pid = self._a[self._at + 1]
        return None if pid < 0 else pid

    def _count(self, i: int) -> int:
        return self._a[self._at + 4] >> (_NBITS * i) & _NMAX

    def _maps_at(self) -> int:
        return self._at + _HEAD + self._a[self._at + 3].bit_count()

    def _cd_at(self) -> int:
        return self._maps_at() + sum(self._count(j) for j in range(len(_MAPS)))

    def _map(self, i: int):
        n = self._count(i)
        if not n:
            return _EMPTY
        a = self._a
        p = self._maps_at() + sum(self._count(j) for j in range(i))
        return MappingProxyType({_KEYS[w >> _VBITS]: w & (_VMAX - 1)
                                 for w in a[p:p + n]})

    def _cause_durations(self) -> dict:
        a = self._a
        p = self._cd_at()
        out = {}
        for _ in range(self._count(len(_MAPS))):
            w = a[p]
            n = w & _LO
            out[_KEYS[w >> 32]] = a[p + 1:p + 1 + n]
            p += 1 + n
        return out

    def _end(self) -> int:
        """Where the record ends in its chunk (the first word after it)."""
        a = self._a
        p = self._cd_at()
        for _ in range(self._count(len(_MAPS))):
            p += 1 + (a[p] & _LO)
        return p + 1 + (a[p] >> 32) + (a[p] & _LO)

    def _durations(self, i: int) -> array:
        a = self._a
        p = self._cd_at()
        for _ in range(self._count(len(_MAPS))):
            p += 1 + (a[p] & _LO)
        n_cont, n_idle = a[p] >> 32, a[p] & _LO
        p += 1
        return a[p:p + n_cont] if i == 0 else a[p + n_cont:p + n_cont + n_idle]

    by_cause = property(lambda self: self._map(0))
    unknown_by_cause = property(lambda self: self._map(1))
    wakers = property(lambda self: self._map(2))
    by_state = property(lambda self: self._map(3))
    cause_durations = property(lambda self: MappingProxyType(self._cause_durations()))
    runq_cont = property(lambda self: self._durations(0))
    runq_idle = property(lambda self: self._durations(1))

    def unpack(self) -> ThreadTotals:
        """The ThreadTotals it was (its dicts and arrays new)."""
        tt = ThreadTotals(Task(self.comm, self.pid, self.tid))
        for f in _SCALARS:
            setattr(tt, f, getattr(self, f))
        for i, name in enumerate(_MAPS):
            setattr(tt, name, dict(self._map(i)))
        tt.cause_durations = self._cause_durations()
        tt.runq_cont, tt.runq_idle = self._durations(0), self._durations(1)
        return tt


def _scalar_property(i: int) -> property:
    """PackedThread's scalar ``_SCALARS[i]`` (one call: the report reads them millions of
    times)."""
    bit, low = 1 << i, (1 << i) - 1

    def get(self) -> int:
        a, at = self._a, self._at
        mask = a[at + 3]
        return a[at + _HEAD + (mask & low).bit_count()] if mask & bit else 0
    return property(get)


for _i, _f in enumerate(_SCALARS):
    setattr(PackedThread, _f, _scalar_property(_i))

class Threads:
    """tid -> a thread's sums: ``live``, a dict of ThreadTotals (the threads the input may
    still add to), and the threads that ended, packed (``pack``) in chunks of int64 and
    found by tid through an IntTable of where their records are. Reads as a dict:
    ``get``, ``[]``, ``in``, ``len``, ``values()`` (the live ones in the order they came,
    then the packed ones in the order they ended, each a PackedThread made as it is
    reached)."""

    __slots__ = ("live", "chunks", "_order", "_where", "_garbage")

    def __init__(self):
        self.live: dict = {}
        self.chunks: list = [array("q")]
        self._order = array("q")      # the records' positions (chunk << 32 | offset), in the
        self._where = IntTable()      # order they were packed; tid -> its index there
        self._garbage = 0             # int64 of the records taken out (their tid is -1)

    def _view(self, pos: int) -> PackedThread:
        return PackedThread(self.chunks[pos >> 32], pos & _LO)

    def _drop(self, pos: int) -> None:
        """The record at ``pos`` taken out: marked (packed() skips it), its words counted."""
        a, at = self.chunks[pos >> 32], pos & _LO
        self._garbage += PackedThread(a, at)._end() - at
        a[at] = -1

    def _compact(self) -> None:
        """The arena again without the records taken out (a tid used again and again, as a
        stream of repeated recordings does, would otherwise grow it without end): the
        records kept in the order they were packed, in new chunks."""
        chunks, order, where = [array("q")], array("q"), IntTable()
        for pos in self._order:
            a, at = self.chunks[pos >> 32], pos & _LO
            if a[at] < 0:
                continue
            rec = a[at:PackedThread(a, at)._end()]
            c = chunks[-1]
            if c and len(c) + len(rec) > ARENA_CHUNK:
                c = array("q")
                chunks.append(c)
            where[a[at]] = len(order)
            order.append((len(chunks) - 1) << 32 | len(c))
            c.extend(rec)
        self.chunks, self._order, self._where, self._garbage = chunks, order, where, 0

    # -- the mapping ---------------------------------------------------------------------
    def get(self, tid, default=None):
        tt = self.live.get(tid)
        if tt is not None:
            return tt
        i = self._where.get(tid) if self._where else None
        return default if i is None else self._view(self._order[i])

    def __getitem__(self, tid):
        tt = self.get(tid)
        if tt is None:
            raise KeyError(tid)
        return tt

    def __setitem__(self, tid, tt: ThreadTotals) -> None:
        self.take(tid)
        self.live[tid] = tt

    def __contains__(self, tid) -> bool:
        return tid in self.live or tid in self._where

    def __len__(self) -> int:
        return len(self.live) + len(self._where)

    def __iter__(self):
        return (t.tid if t.__class__ is PackedThread else k
                for k, t in self.items())

    def items(self):
        yield from self.live.items()
        for t in self.packed():
            yield t.tid, t

    def values(self):
        yield from self.live.values()
        yield from self.packed()

    def packed(self):
        """The packed threads, in the order they ended."""
        if not self._where:
            return
        chunks = self.chunks
        for pos in self._order:
            c, at = chunks[pos >> 32], pos & _LO
            if c[at] >= 0:     # (-1: taken out)
                yield PackedThread(c, at)

    # -- pickling (offconv.run.parallel.load_pair: a diff's BEFORE, loaded in a child) --------
    def __getstate__(self):
        # the packed records name their keys by this process's numbering (_KEYS): the keys
        # go with them, and the receiving process numbers them its own way (__setstate__)
        return self.live, self.chunks, self._order, self._where, (_KEYS[:] if self._where else [])

    def __setstate__(self, state) -> None:
        self.live, self.chunks, self._order, self._where, keys = state
        self._garbage = 0   # (what was taken out stays until the next compaction)
        if not keys:
            return
        new = [_key_id(k) for k in keys]
        if len(_KEYS) >= _KMAX:
            raise pickle.UnpicklingError("packed threads: too many keys to renumber here")
        chunks = self.chunks
        for pos in self._order:
            a, at = chunks[pos >> 32], pos & _LO
            if a[at] < 0:     # (taken out)
                continue
            t = PackedThread(a, at)
            a[at + 2] = new[a[at + 2]]
            start = t._maps_at()
            for i in range(start, start + sum(t._count(j) for j in range(len(_MAPS)))):
                w = a[i]
                a[i] = new[w >> _VBITS] << _VBITS | (w & (_VMAX - 1))
            p = t._cd_at()
            for _ in range(t._count(len(_MAPS))):
                w = a[p]
                a[p] = new[w >> 32] << 32 | (w & _LO)
                p += 1 + (w & _LO)

    # -- packing -------------------------------------------------------------------------
    def pack(self, tid) -> bool:
        """Pack the live thread ``tid`` (False, and it stays live, when it does not fit)."""
        tt = self.live[tid]
        rec = _record(tt) if tid.__class__ is int and tid >= 0 and tt.tid == tid else None
        if rec is None:
            return False
        c = self.chunks[-1]
        if c and len(c) + len(rec) > ARENA_CHUNK:
            c = array("q")
            self.chunks.append(c)
        pos = (len(self.chunks) - 1) << 32 | len(c)
        c.extend(rec)
        old = self._where.get(tid)
        if old is not None:     # (its earlier record: taken out)
            self._drop(self._order[old])
        self._where[tid] = len(self._order)
        self._order.append(pos)
        del self.live[tid]
        if self._garbage > ARENA_CHUNK and 2 * self._garbage > sum(map(len, self.chunks)):
            self._compact()
        return True

    def take(self, tid) -> Optional[ThreadTotals]:
        """The packed thread ``tid`` unpacked and live again (its tid used again, or its
        counts to add to), or None when none is packed."""
        i = self._where.pop(tid, None) if self._where else None
        if i is None:
            return None
        pos = self._order[i]
        tt = self._view(pos).unpack()
        self._drop(pos)
        self.live[tid] = tt
        return tt


