"""Off-CPU accumulation and the report data: per-thread totals, exact latencies, causes,
top stacks (ns, from Periods), summarised into the plain data the report, JSON and the
other renderers print.

``offcpu.build_profile`` feeds an ``Analysis``; ``summarize(profile, ReportOptions)``
turns it into the report (µs integers). The causes are ``offconv.sched.causes``, the
percentiles and histograms ``offconv.sched.latency``, the verdict ``offconv.analysis.verdict``.
"""
from __future__ import annotations

import pickle
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from types import MappingProxyType
from typing import Optional

from offconv.sched.causes import IDLE_CAUSES, INTERRUPT_WAKER_NAME, KTHREAD_COMM, NO_CAUSE, PEER_CAUSES, QUEUED_WAKER, RUNTIME_COMM, TIMER_WAKER_NAME, UNREAD, Classifier, from_events, runtime_wait, queued_wakeup, unread_stack, woken_by_timer, woken_in_interrupt
from offconv.model.inttable import IntTable
from offconv.sched.latency import Runs, latency_stats, log2_buckets, percentile
from offconv.model.records import Task
from offconv.model.options import ReportOptions
from offconv.model.units import ns_to_us


UNWOKEN_LOCK = ("lock?", "futex, no wakeup seen")   # resolved by Analysis.finish
# a thread's futex waits ended within JOIN_EXIT_NS before it ends: a worker parked for work
# until its process shut down and woke it (a handshake or two) to exit, not a lock -- node's
# idle V8 and libuv threads read "waiting, lock (futex) 100%, p99 3 s" beside a busy main
# thread (held out, fixture node_spin)
WOKEN_TO_EXIT = ("poll/idle", "woken to exit")
MAX_GENERATIONS = 16    # creators followed up from a waker (woken_by_child)
# a wait ended by its child is a wait for that child's exit when the child ended this soon
# after the wake-up (exit_notify wakes the parent, then the task switches out for good:
# 4-40 us in the perf sched record fixtures)
CHILD_EXIT_NS = 10_000_000
CHILD_PENDING = ("child?", "")   # until resolve_child_waits
# a lock wait (futex) ended by a thread it created, which then ended: a join (pthread_join's
# futex on the thread's tid, cleared by the kernel at its exit; Python's join, a lock the
# thread releases as it ends) -- waiting for a thread's whole life, not for a lock's holder.
# A thread pool idle for 3 s read "waiting, lock" from its main thread's join (held out).
THREAD_JOIN = ("child", "thread join")
# futex waits that mostly ended by a timer, decided per thread (finish; and from in-kernel
# sums, sample_report._timed_lock): waits for work with a timeout, not a lock
TIMED_INFERRED = ("poll/idle", "timed wait (inferred)")
JOIN_PENDING = ("lock?", "join")  # pending_child's marker for such a wait
# a join's wake-up is the thread's last act: it ended 30-91 µs later in the recordings of
# pthreads and Python, 2.1 ms later for a JVM thread (HotSpot notifies its joiners, then
# unmaps its stack guard pages and leaves the thread list: jvm_spin, held out); a lock
# released 9 ms before its holder was killed with the rest of the process is no join
JOIN_EXIT_NS = 5_000_000
# threads that ended between two purges of what they leave in last_in, last_cause and the
# input's exits (Analysis._purge): a tid is dropped one to two rounds after it ended
PURGE_EVERY = 4096


# timed waits without a call chain (Analysis._resolve_timed_waits)
TIMED_MIN_NS = 10_000_000
TIMED_MIN_WAITS = 3
TIMED_TOLERANCE = 0.005
TIMED_TOLERANCE_NS = 200_000
TIMED_SHARE = 0.8


def _recause(tt, old: tuple, new: tuple, d: int, unknown: int, waker_comm: str) -> None:
    """Move one wait of ``d`` ns (``unknown`` of them unknown) from cause ``old`` to ``new``
    in a thread's sums."""
    _move(tt.by_cause, old, new, d)
    _move(tt.unknown_by_cause, old, new, unknown)
    _move(tt.wakers, (old, waker_comm), (new, waker_comm), d)
    arr = tt.cause_durations.get(old[0])
    if d and arr is not None and old[0] != new[0]:
        arr.remove(d)
        if not arr:
            del tt.cause_durations[old[0]]
        tt.cause_durations.setdefault(new[0], array("q")).append(d)


def _move(m: dict, old, new, v: int) -> None:
    if not v or old not in m:
        return
    m[old] -= v
    if not m[old]:
        del m[old]
    m[new] = m.get(new, 0) + v


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

    __slots__ = ("live", "chunks", "_order", "_where")

    def __init__(self):
        self.live: dict = {}
        self.chunks: list = [array("q")]
        self._order = array("q")      # the records' positions (chunk << 32 | offset), in the
        self._where = IntTable()      # order they were packed; tid -> its index there

    def _view(self, pos: int) -> PackedThread:
        return PackedThread(self.chunks[pos >> 32], pos & _LO)

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
            old = self._order[old]
            self.chunks[old >> 32][old & _LO] = -1
        self._where[tid] = len(self._order)
        self._order.append(pos)
        del self.live[tid]
        return True

    def take(self, tid) -> Optional[ThreadTotals]:
        """The packed thread ``tid`` unpacked and live again (its tid used again, or its
        counts to add to), or None when none is packed."""
        i = self._where.pop(tid, None) if self._where else None
        if i is None:
            return None
        pos = self._order[i]
        tt = self._view(pos).unpack()
        self.chunks[pos >> 32][pos & _LO] = -1   # (packed() skips it)
        self.live[tid] = tt
        return tt


@dataclass
class Analysis:
    """What the off-CPU path saw, in ns: filled by offcpu.build_profile."""

    # tid (or (0, cpu)) -> ThreadTotals, or PackedThread once it ended (Threads)
    threads: Threads = field(default_factory=Threads)
    # kind -> {(thread frame, frames): ns}: the stack (thread frame,) + frames, with the
    # frames tuple shared by the threads that have that stack
    stacks: dict = field(default_factory=dict)
    by_process: dict = field(default_factory=dict)     # process name -> {(thread, frames): ns}
    dropped: dict = field(default_factory=dict)
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None
    span_ns: int = 0                 # the inputs' spans (last - first event), summed
    dropped_threads: dict = field(default_factory=dict)  # reason -> threads it happened to
    threads_filtered: bool = False   # the user selected threads (-p/--filter-tid/--comm/--state)
    per_process: bool = False        # a `perf record -p` recording was detected
    recorder_filtered: bool = False  # scripts/record.sh recorded it filtered to a target
    classify: Classifier = field(default_factory=Classifier)
    last_cause: dict = field(default_factory=dict)   # tid -> cause of its last wait
    last_in: dict = field(default_factory=dict)      # tid -> since when it is runnable or running (ns)
    parents: dict = field(default_factory=dict)      # tid -> the tid that created it
    # the input being read's tid -> creator so far (sched_wakeup_new), for the waits
    # that only their waker explains (woken_by_child)
    live_parents: dict = field(default_factory=dict, repr=False)
    # resolve_child_waits: the waits to be decided by their waker's exit, in input order
    # (a number -> the wait); a join candidate leaves it as soon as its waker is seen
    # running past JOIN_EXIT_NS after the wake-up (_settle_joins)
    pending_child: dict = field(default_factory=dict, repr=False)
    _pending_n: int = 0
    _joins_by_waker: dict = field(default_factory=dict, repr=False)  # waker tid -> [number]
    # tid -> its lock waits ended in the last JOIN_EXIT_NS of its periods, each (wake-up
    # time, ns, unknown ns, cause, waker's name): read when it ends (exited)
    _last_lock: dict = field(default_factory=dict, repr=False)
    _runtime_comm: dict = field(default_factory=dict, repr=False)   # comm -> RUNTIME_COMM's
    # creator tid -> the end times of the threads it created, the last JOIN_EXIT_NS of them
    # (_queued_join: a join whose wake-up was queued, so the trace names no waker)
    _child_exits: dict = field(default_factory=dict, repr=False)
    _pending_of: dict = field(default_factory=dict, repr=False)      # waiter tid -> its waits there
    unread: list = field(default_factory=list, repr=False)   # this input's UNREAD waits
    command: set = field(default_factory=set)        # tids that were perf record's perf-exec
    wakeup_events: int = 0
    sched_wakeup_events: int = 0     # of them sched_wakeup (not sched_waking, not _new)
    sched_waking_events: int = 0     # of them sched_waking
    seen_tids: set = field(default_factory=set)      # the tids `perf record -p` inputs switched out
    # the input being read's stats["threads"] (tid -> ThreadCounts): a thread's are taken
    # over when it ends (``exited``)
    live_counts: dict = field(default_factory=dict, repr=False)
    pinned: set = field(default_factory=set, repr=False)   # tids in pending_child or unread
    # the input being read's exits (tid -> when it ended), for resolve_child_waits
    live_exits: dict = field(default_factory=dict, repr=False)
    _dead: list = field(default_factory=list, repr=False)      # tids ended since the purge
    _dead_old: list = field(default_factory=list, repr=False)  # and before it (_purge)
    _runs: dict = field(default_factory=dict, repr=False)  # kind -> (periods, summary)
    n_periods: int = 0               # add_period calls (summary: what it was made of)

    def thread(self, task) -> ThreadTotals:
        key = task.tid
        live = self.threads.live
        tt = live.get(key)
        if tt is None:
            tt = self.threads.take(key)   # its tid again after it ended (tids are reused)
            if tt is None:
                tt = live[key] = ThreadTotals(task)
        if task.comm != tt.comm:
            tt.comm = task.comm            # latest name wins (threads rename themselves)
        if task.pid is not None:
            tt.pid = task.pid
        return tt

    def add_period(self, p, key: tuple, process: str, blocked: bool = True,
                   runq: bool = True) -> None:
        """One off-CPU period: its blocked part (if any) and its run-queue part (if known)."""
        tt = self.thread(p.task)
        tt.periods += 1
        self.n_periods += 1
        if self._joins_by_waker and p.task.tid in self._joins_by_waker:
            self._settle_joins(p.task.tid, p.start_ns if p.end_ns is None else p.end_ns)
        last_lock = self._last_lock
        if last_lock and tt.tid in last_lock:
            recent = [w for w in last_lock[tt.tid] if p.start_ns - w[0] <= JOIN_EXIT_NS]
            if recent:
                last_lock[tt.tid] = recent
            else:
                del last_lock[tt.tid]
        cause = None
        if p.blocked:
            waker = p.waker
            waker_cause = self.last_cause.get(waker.tid) if waker else None
            cause = self.classify.period(p.stack, p.waker_stack, waker_cause)
            # what a thread it wakes later reads its last wait as (refine's idle waker):
            # what the stacks say, also for a runtime's service thread
            seen = cause
            pending = None
            unread = unread_stack(p.stack) if cause == NO_CAUSE else None
            comm = p.task.comm
            runtime = self._runtime_comm.get(comm)      # a JVM's GC, JIT or VM thread
            if runtime is None:
                runtime = self._runtime_comm[comm] = RUNTIME_COMM.match(comm) is not None
            if runtime and unread is not None:
                cause, unread = from_events(unread, "runtime"), None
            elif runtime:
                cause = runtime_wait(cause)
            elif unread is not None:
                # no call chain (perf sched record, no -g), or its kernel frames unresolved
                # (another kernel's recording): only the waker can tell
                if KTHREAD_COMM.match(p.task.comm):
                    cause = from_events(unread, "kthread")
                else:
                    cause = unread
                    if waker is not None and self.woken_by_child(p):
                        pending = cause   # a child's exit? known once the input is read
            elif cause[0] == "lock" and waker is not None and self.woken_by_child(p):
                pending = JOIN_PENDING    # a join? known once the waker's exit is read
            elif (cause[0] == "lock" and self._child_exits and p.woke_ns is not None
                  and self._queued_join(tt.tid, p.woke_ns, p)):
                cause = THREAD_JOIN       # a thread it created ended as it was woken
            if not runtime:
                cause = self._peer(p, cause)
            if pending is not None:
                self.pinned.add(tt.tid)
                n = self._pending_n = self._pending_n + 1
                self.pending_child[n] = (tt, p.woke_ns, waker.tid, waker.comm,
                                         p.blocked_ns if blocked else 0, p.unknown_ns, cause,
                                         p.state, pending)
                self._pending_of[tt.tid] = self._pending_of.get(tt.tid, 0) + 1
                if pending == JOIN_PENDING:
                    self._joins_by_waker.setdefault(waker.tid, []).append(n)
                cause = CHILD_PENDING
            elif (cause in UNREAD and waker is not None and blocked and p.state == "S"
                  and p.blocked_ns >= TIMED_MIN_NS):  # (_resolve_timed_waits reads no other)
                self.pinned.add(tt.tid)
                self.unread.append((tt, p.blocked_ns, waker.tid, waker.comm, p.unknown_ns, cause))
            if waker is None and cause[0] == "lock":
                cause = UNWOKEN_LOCK
            elif cause == ("poll/idle", "timed wait"):
                tt.timed_lock_ns += p.blocked_ns
            elif cause[0] == "lock":
                tt.woken_lock_ns += p.blocked_ns
                if waker_cause is not None and waker_cause[0] == "sleep":
                    # its waker had just slept: it sleeps holding the lock, or it hands out
                    # work at its sleeps' pace (a condition variable; the events cannot tell)
                    tt.lock_after_sleep_ns += p.blocked_ns
            self.last_cause[p.task.tid] = seen if runtime else cause
            if p.unknown_ns:
                tt.unknown_ns += p.unknown_ns
                tt.unknown_by_cause[cause] = tt.unknown_by_cause.get(cause, 0) + p.unknown_ns
        else:
            self.last_cause[p.task.tid] = ("runq", "")
        if blocked and p.blocked:
            d = p.blocked_ns
            if p.waker is not None:
                tt.woken += 1
                ws = p.waker_stack
                wk = (cause, QUEUED_WAKER if queued_wakeup(p.waker, ws)
                       else TIMER_WAKER_NAME if ws and woken_by_timer(ws)
                       else INTERRUPT_WAKER_NAME if ws and woken_in_interrupt(ws)
                       else p.waker.comm)
                tt.wakers[wk] = tt.wakers.get(wk, 0) + d
                if cause[0] == "lock" and p.woke_ns is not None:
                    last_lock.setdefault(tt.tid, []).append((p.woke_ns, d, p.unknown_ns, cause,
                                                             wk[1]))
            tt.blocked_ns += d
            tt.by_cause[cause] = tt.by_cause.get(cause, 0) + d
            tt.by_state[p.state] = tt.by_state.get(p.state, 0) + d
            arr = tt.cause_durations.get(cause[0])
            if arr is None:
                arr = tt.cause_durations[cause[0]] = array("q")
            arr.append(d)
            self._stack("blocked", key, process, d)
        if p.end_ns is not None:   # runnable from here (then on a CPU): busy, not waiting
            # (after an inferred switch-in from an idle CPU: from when it was seen running)
            self.last_in[p.task.tid] = p.runq_start_ns if p.has_runq else p.end_ns + p.unknown_ns
        if runq and p.has_runq:
            r = p.runq_ns
            tt.runq_ns += r
            if p.preempted:
                tt.runq_preempted_ns += r
                if p.throttled:
                    tt.runq_throttled_ns += r
            if p.on_idle_cpu and not p.preempted:
                tt.runq_idle_ns += r
                tt.runq_idle.append(r)
            else:
                tt.runq_cont.append(r)
            self._stack("runq", key, process, r)

    def _peer(self, p, cause: tuple) -> tuple:
        """A socket, pipe, idle or unread wait ended by a thread that was runnable or
        running for most of it: waiting for that thread's CPU work (causes, docstring).
        Not a wait ended from an interrupt (the task it found running did not end it), nor
        an uninterruptible one (D: the kernel's I/O or locks -- its wake-up comes from the
        device's completion on whichever task ran, which the stacks may not show)."""
        waker = p.waker
        if waker is not None and waker.tid and cause[0] in PEER_CAUSES \
                and p.wake_ns is not None and "D" not in p.state \
                and not woken_in_interrupt(p.waker_stack):
            ran_from = self.last_in.get(waker.tid)
            d = p.wake_ns - p.start_ns
            if ran_from is not None and d > 0 and p.wake_ns - max(ran_from, p.start_ns) >= d / 2:
                return ("peer-cpu", f"waiting for {waker.comm}'s CPU work")
        return cause

    def resolve_child_waits(self, exits: dict) -> None:
        """The waits (no call chain) ended by a task their thread created, or one those
        created: a child's exit when that task ended within CHILD_EXIT_NS of the wake-up
        (a wait4 ended by the exit notification; a join), else what they were without that
        rule. Runs at the end of each input, with its tid -> end times."""
        items, self.pending_child = self.pending_child.values(), {}
        self._joins_by_waker.clear()
        self._pending_of.clear()
        for tt, wake_ns, waker_tid, waker_comm, d, unknown, alt, state, unread in items:
            end = exits.get(waker_tid)
            gap = None if end is None or wake_ns is None else abs(end - wake_ns)
            joined = gap is not None and gap <= CHILD_EXIT_NS
            if unread == JOIN_PENDING:
                new = THREAD_JOIN if gap is not None and gap <= JOIN_EXIT_NS else alt
            else:
                new = from_events(unread, "child") if joined else alt
            _recause(tt, CHILD_PENDING, new, d, unknown, waker_comm)
            if self.last_cause.get(tt.tid) == CHILD_PENDING:
                self.last_cause[tt.tid] = new
            if new in UNREAD and d >= TIMED_MIN_NS and state == "S":
                self.unread.append((tt, d, waker_tid, waker_comm, unknown, new))
        self._resolve_timed_waits()

    def _settle_joins(self, tid, alive_ns) -> None:
        """Thread ``tid`` was running at ``alive_ns``: the join candidates it woke more
        than JOIN_EXIT_NS before are no joins (it ended after alive_ns, if at all), so
        they are their lock waits now, as resolve_child_waits would decide at the end of
        the input. A pool its creator waits on, many times a second, would otherwise hold
        every such wait to the end (each also removed from a durations array then: time
        quadratic in them). Only the decision moves earlier: a lock's cause and a join's
        read the same to the waits these threads end later (causes.refine reads a
        waker's last cause only for poll/idle), and the thread's last cause is set only
        when this was its last wait still pending."""
        pending = self.pending_child
        keep = []
        for n in self._joins_by_waker[tid]:
            tt, wake_ns, _, waker_comm, d, unknown, alt, _, _ = pending[n]
            if wake_ns is not None and alive_ns - wake_ns <= JOIN_EXIT_NS:
                keep.append(n)
                continue
            del pending[n]
            _recause(tt, CHILD_PENDING, alt, d, unknown, waker_comm)
            left = self._pending_of[tt.tid] - 1
            if left:
                self._pending_of[tt.tid] = left
            else:
                del self._pending_of[tt.tid]
                if self.last_cause.get(tt.tid) == CHILD_PENDING:
                    self.last_cause[tt.tid] = alt
        if keep:
            self._joins_by_waker[tid] = keep
        else:
            del self._joins_by_waker[tid]

    def _resolve_timed_waits(self) -> None:
        """Waits with no call chain that are a timer's: a thread's interruptible waits
        (state S: a disk wait is D) of the same length (TIMED_MIN_NS or longer, within
        TIMED_TOLERANCE of their median, TIMED_SHARE of its long waits and at least
        TIMED_MIN_WAITS of them) ended by the idle task alone or by several different tasks
        (when a timer fires, the interrupted task is the waker) are timed waits -- a
        periodic poll, a timeout -- that wait for nothing (with a call chain, causes.refine
        reads the timer from the waker's stack). A lock or network wait varies in length,
        and a lock's is ended by whoever released it."""
        by_thread: dict = {}
        for item in self.unread:
            by_thread.setdefault(item[0].tid, []).append(item)
        self.unread = []
        for items in by_thread.values():
            long = [x for x in items if x[1] >= TIMED_MIN_NS]
            if len(long) < TIMED_MIN_WAITS:
                continue
            ds = sorted(x[1] for x in long)
            med = ds[len(ds) // 2]
            tol = max(med * TIMED_TOLERANCE, TIMED_TOLERANCE_NS)
            regular = [x for x in long if abs(x[1] - med) <= tol]
            if len(regular) < TIMED_SHARE * len(long) or len(regular) < TIMED_MIN_WAITS:
                continue
            wakers = {x[3] for x in regular}
            if not ((len(wakers) == 1 and regular[0][2] == 0) or len(wakers) >= 3):
                continue
            for tt, d, _, comm, unknown, unread in regular:
                timed = from_events(unread, "timed")
                _recause(tt, unread, timed, d, unknown, comm)
                if self.last_cause.get(tt.tid) == unread:
                    self.last_cause[tt.tid] = timed
        self.pinned.clear()   # pending_child and unread are empty: nothing holds a thread

    def exited(self, tid, held=None, at=None) -> None:
        """A thread ended (its switch-out in state X or Z): it has no more periods, so
        its sums are packed (PackedThread) and its interval counts taken over, unless a
        wait of it is still to be decided at the end of the input (``pinned``) or at the
        end of all inputs (a futex wait with no wakeup seen: ``finish``). ``held()``: the
        tids the interval machine still names (``_purge``), when it can tell."""
        if held is not None:
            self._dead.append(tid)
            if len(self._dead) >= PURGE_EVERY:
                self._purge(held())
        self.exit_decides(tid, at)
        tt = self.threads.live.get(tid)
        if (tt is None or tid in self.pinned
                or UNWOKEN_LOCK in tt.by_cause):   # (decided by finish(), at the end)
            return
        c = self.live_counts.pop(tid, None)
        if c is not None:
            tt.switches += c.switches
            tt.inferred += c.inferred
            tt.no_wakeup += c.no_wakeup
        self.threads.pack(tid)
        # (last_in and last_cause stay: the wait its exit ended, its parent's, is read when
        # that parent is switched in, after this)

    def exit_decides(self, tid, at) -> None:
        """What thread ``tid``'s end at ``at`` decides of waits read before it: its own
        last futex waits (woken_to_exit), its creator's join (_child_ended)."""
        self.woken_to_exit(tid, at)
        if at is not None:
            self._child_ended(tid, at)

    def woken_to_exit(self, tid, at) -> None:
        """Thread ``tid`` ended at ``at``: its futex waits ended within JOIN_EXIT_NS before
        are WOKEN_TO_EXIT (exited runs it before packing the thread)."""
        if at is not None:
            self._recast_lock_waits(tid, WOKEN_TO_EXIT,
                                    lambda wake_ns, waker: at - wake_ns <= JOIN_EXIT_NS)
        self._last_lock.pop(tid, None)   # it has no later wait to decide

    def _child_ended(self, tid, at) -> None:
        """Thread ``tid``, which its creator may join, ended at ``at``: the creator's lock
        waits that a queued wake-up ended within JOIN_EXIT_NS of it are joins
        (THREAD_JOIN), and the end is kept for the waits recorded after it
        (_queued_join). pthread_join's futex (cleared by the kernel at the thread's
        exit) and Python's join (a lock the thread releases as it ends) are woken from the
        ending thread's CPU; when the joiner's CPU was idle, that CPU runs the wake-up from
        an IPI (causes.queued_wakeup) and the trace names no waker, so woken_by_child
        cannot see the child: a Python program's main thread joining four GIL-bound
        threads read "waiting: lock (futex) 97%, p99 3.9 s, fix the lock" (held out)."""
        creator = self.live_parents.get(tid)
        if creator is None:
            return
        ends = self._child_exits.get(creator)
        if ends is None:
            self._child_exits[creator] = [at]
        else:
            ends[:] = [e for e in ends if at - e <= JOIN_EXIT_NS]
            ends.append(at)
        self._recast_lock_waits(creator, THREAD_JOIN, lambda wake_ns, waker: (
            waker == QUEUED_WAKER and abs(at - wake_ns) <= JOIN_EXIT_NS))

    def _recast_lock_waits(self, tid, new: tuple, match) -> None:
        """Thread ``tid``'s recent lock waits (_last_lock) for which ``match(wake-up time,
        waker's name)`` holds are of cause ``new`` now, and no longer recent."""
        waits = self._last_lock.get(tid)
        tt = self.threads.live.get(tid)
        if not waits or tt is None:
            return
        keep = []
        for w in waits:
            wake_ns, d, unknown, cause, waker = w
            if match(wake_ns, waker):
                _recause(tt, cause, new, d, unknown, waker)
                if self.last_cause.get(tid) == cause:
                    self.last_cause[tid] = new
            else:
                keep.append(w)
        if keep:
            self._last_lock[tid] = keep
        else:
            del self._last_lock[tid]

    def _queued_join(self, tid, wake_ns, p) -> bool:
        """A lock wait of ``tid`` woken at ``wake_ns`` by a queued wake-up, as a thread it
        created had just ended (_child_ended: the end was read before this wait's switch-in)."""
        ends = self._child_exits.get(tid)
        return bool(ends) and queued_wakeup(p.waker, p.waker_stack) \
            and any(abs(e - wake_ns) <= JOIN_EXIT_NS for e in ends)

    def _purge(self, held: set) -> None:
        """Forget what the threads that ended a round ago left in ``last_in``,
        ``last_cause`` and the input's exits, unless the interval machine still names them
        (a live thread of that tid; the waker of a thread woken and not yet switched in,
        whose period will read them) or a wait waits on their exit (``pending_child``).
        These maps are read only for a period's waker, and a thread that ended wakes no
        one: a build that runs a process per file would otherwise keep them for every one
        of its 100k threads. (A round of PURGE_EVERY exits in between leaves room for a
        wakeup recorded out of order.)"""
        old, self._dead_old, self._dead = self._dead_old, self._dead, []
        if self.pending_child:
            held = held | {item[2] for item in self.pending_child.values()}
        last_in, last_cause, exits = self.last_in, self.last_cause, self.live_exits
        for tid in old:
            if tid in held:
                self._dead.append(tid)   # again at the next purge
                continue
            last_in.pop(tid, None)
            last_cause.pop(tid, None)
            exits.pop(tid, None)
            self._child_exits.pop(tid, None)

    def woken_by_child(self, p) -> bool:
        """Whether a wait was ended by a thread of a process it created, or of one created
        by those (sched_wakeup_new): for a wait with no kernel frame to read (a recording
        without call chains), a shell or make waiting in wait4 for its child, or reading
        its output -- time the child spends, where it is counted. With a kernel stack, the
        stack decides (causes.classify)."""
        waiter, tid = p.task.tid, p.waker.tid
        up = self.live_parents
        for _ in range(MAX_GENERATIONS):
            tid = up.get(tid)
            if tid is None:
                return False
            if tid == waiter:
                return True
        return False

    def finish(self) -> None:
        """Decide what the lock waits with no wakeup seen were: a thread whose futex waits
        that were seen ending mostly ended by a timer is in timed waits (idle-like); else
        they are lock waits. Where sched_waking was recorded, a release by another thread
        would have shown (sched_waking fires in the waker, which runs): such a wait ended
        by its timeout, on an idle CPU whose events were lost (corpus quirk 1)."""
        waking = self.sched_waking_events > 0 and not self.per_process
        for tt in self.threads.live.values():   # (exited() packs no thread with such waits)
            ns = tt.by_cause.pop(UNWOKEN_LOCK, None)
            if ns is None:
                continue
            timed = waking or tt.timed_lock_ns > tt.woken_lock_ns
            new = TIMED_INFERRED if timed else ("lock", "futex")
            tt.by_cause[new] = tt.by_cause.get(new, 0) + ns
            # move the durations with them
            arr = tt.cause_durations.pop("lock?", None)
            if arr is not None:
                dest = tt.cause_durations.setdefault(new[0], array("q"))
                dest.extend(arr)
            for key in [k for k in tt.wakers if k[0] == UNWOKEN_LOCK]:
                tt.wakers[(new, key[1])] = tt.wakers.pop(key)
            if tt.tid in self.last_cause and self.last_cause[tt.tid] == UNWOKEN_LOCK:
                self.last_cause[tt.tid] = new
            for cmap in (tt.unknown_by_cause,):
                v = cmap.pop(UNWOKEN_LOCK, None)
                if v is not None:
                    cmap[new] = cmap.get(new, 0) + v

    def add_oncpu(self, iv) -> None:
        self.thread(iv.task).oncpu_ns += iv.end_ns - iv.start_ns

    def _stack(self, kind: str, key: tuple, process: str, d: int) -> None:
        m = self.stacks.setdefault(kind, {})
        m[key] = m.get(key, 0) + d
        p = self.by_process.setdefault(process, {})
        p[key] = p.get(key, 0) + d

    def add_counts(self, stats: dict) -> None:
        """Merge one input's interval stats (dropped counts, per-thread counters, span).
        With threads selected, the counts are those of the selected threads alone."""
        threads = self.threads
        for tid, c in stats.get("threads", {}).items():
            tt = threads.live.get(tid)
            if tt is None and (c.switches or c.inferred or c.no_wakeup):
                tt = threads.take(tid)     # (a packed thread's record is not changed)
            if tt is not None:
                tt.switches += c.switches
                tt.inferred += c.inferred
                tt.no_wakeup += c.no_wakeup
        self.wakeup_events += stats.get("wakeup_events", 0)
        self.sched_wakeup_events += stats.get("sched_wakeup_events", 0)
        self.sched_waking_events += stats.get("sched_waking_events", 0)
        if stats.get("per_process"):   # (its warning names some of them)
            self.seen_tids.update(t for t in stats.get("threads", {}) if t)
        self.resolve_child_waits(stats.get("exits", {}))
        if stats.get("command") or self.recorder_filtered:
            # (verdict.command_tree; and verdict.scope: a thread the workload created is
            # no switch partner in a recording filtered to it)
            if self.parents:
                self.parents.update(stats.get("parents", {}))
            else:   # the input's own map, not a copy of it (a thread each)
                self.parents = stats.get("parents", {})
        self.command |= stats.get("command", set())
        counts = stats.items()
        for tid, row in stats.get("by_tid", {}).items():
            if not self.threads_filtered or tid in self.threads:
                for k in row:
                    self.dropped_threads[k] = self.dropped_threads.get(k, 0) + 1
        if self.threads_filtered:
            sel: dict = {}
            for tid, row in stats.get("by_tid", {}).items():
                if tid in self.threads:
                    for k, v in row.items():
                        sel[k] = sel.get(k, 0) + v
            counts = sel.items()
        for k, v in counts:
            if k in ("threads", "first_ns", "last_ns", "per_process", "by_tid", "samples",
                     "wakeup_events", "parents", "command", "exits", "sched_wakeup_events",
                     "sched_waking_events"):
                continue
            self.dropped[k] = self.dropped.get(k, 0) + v
        if stats.get("samples"):
            self.dropped["samples"] = self.dropped.get("samples", 0) + stats["samples"]
        if stats.get("per_process"):
            self.per_process = True
        f, l = stats.get("first_ns"), stats.get("last_ns")
        if f is not None and l is not None:
            self.span_ns += l - f
        if f is not None and (self.first_ns is None or f < self.first_ns):
            self.first_ns = f
        if l is not None and (self.last_ns is None or l > self.last_ns):
            self.last_ns = l

    def runs(self, kind: str) -> Runs:
        """The durations of ``kind`` ("blocked", "runq") of every thread as a ``Runs`` (a
        sorted copy, 8 bytes a value: not kept; ``summary`` keeps what is read of it)."""
        # (generators: a packed thread's arrays are made as Runs reads them)
        if kind == "blocked":
            seqs = (arr for tt in self.threads.values() for arr in tt.cause_durations.values())
        else:
            seqs = (arr for tt in self.threads.values() for arr in (tt.runq_cont, tt.runq_idle))
        return Runs(seqs)

    def summary(self, kind: str) -> dict:
        """What the outputs read of every duration of ``kind``: ``buckets`` (log2 µs),
        ``stats`` (latency_stats), ``p99`` (ns, or None), made from one ``runs(kind)``
        that is let go (a parallel build's 1 GB has 1.3 million waits and more run-queue
        periods: 10 MB the two sorted copies held from the end of the input to the end of
        the report); made again when a period was added since."""
        periods = self.n_periods
        got = self._runs.get(kind)
        if got is None or got[0] != periods:
            r = self.runs(kind)
            got = self._runs[kind] = (periods, {"buckets": log2_buckets(r),
                                                "stats": latency_stats(r),
                                                "p99": percentile(r, 99)})
        return got[1]

    def durations(self, kind: str):
        out = array("q")
        for tt in self.threads.values():
            if kind == "blocked":
                for arr in tt.cause_durations.values():
                    out.extend(arr)
            else:
                out.extend(tt.runq_cont)
                out.extend(tt.runq_idle)
        return out


# -- the report data ----------------------------------------------------------------------

def _thread_row(t: ThreadTotals, measured: bool = True) -> dict:
    m = (lambda ns: ns_to_us(ns)) if measured else (lambda ns: None)
    return {"comm": t.comm, "pid": t.pid, "tid": t.tid,
            "blocked_us": ns_to_us(t.blocked_ns), "runq_us": m(t.runq_ns),
            "runq_preempted_us": m(t.runq_preempted_ns),
            "oncpu_us": m(t.oncpu_ns), "offcpu_us": m(t.offcpu_ns),
            "wall_us": m(t.wall_ns), "switches": t.switches,
            "inferred_switch_in": t.inferred, "no_wakeup": t.no_wakeup,
            "blocked_by_state_us": {s: ns_to_us(ns) for s, ns in sorted(t.by_state.items())}}


class ThreadRows(Sequence):
    """The report's ``threads``: a row (``_thread_row``) per thread, made when it is read.
    A parallel build's recording has a thread per process it ran; a list of their rows
    held them all at once (0.8 KB a thread: 80 MB of 100k threads while the report is
    written). ``renderers.json_report`` writes them one at a time."""

    __slots__ = ("_threads", "_measured", "_by")

    def __init__(self, threads, measured: bool, by=None):
        """``threads``: a list of them in order; or, with ``by`` (a mapping of tids to
        threads), their tids in order."""
        self._threads, self._measured, self._by = threads, measured, by

    @classmethod
    def by_offcpu(cls, threads, measured: bool) -> "ThreadRows":
        """The rows of ``threads`` (a mapping of tids to threads), most off-CPU time
        first, then by tid: kept as an array of tids, sorted by an int each (a list of
        100k threads and a tuple each to sort by took 17 MB), when every tid is a plain
        one (an int of 32 bits, its own key)."""
        keys = []
        for tid, t in threads.items():
            if tid.__class__ is not int or not 0 <= tid < 1 << 32 or t.tid != tid:
                return cls(sorted(threads.values(), key=lambda t: (-t.offcpu_ns, t.tid)),
                           measured)
            keys.append(-t.offcpu_ns << 32 | tid)
        keys.sort()
        return cls(array("q", (k & _LO for k in keys)), measured, threads)

    def __len__(self) -> int:
        return len(self._threads)

    def _at(self, x):
        return x if self._by is None else self._by[x]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_thread_row(self._at(t), self._measured) for t in self._threads[i]]
        return _thread_row(self._at(self._threads[i]), self._measured)

    def __iter__(self):
        m, at = self._measured, self._at
        return (_thread_row(at(t), m) for t in self._threads)

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, ThreadRows)) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"ThreadRows({len(self)} threads)"


def stack_of(key: tuple) -> tuple:
    """The stack of a key of ``Analysis.stacks``: (thread frame, frames) -> (thread frame,)
    + frames; a key that is a stack already (a tuple of Frames) is itself."""
    if len(key) == 2 and key[1].__class__ is tuple:
        return (key[0],) + key[1]
    return key


def _top(stacks: dict, n: int, label) -> list:
    """The n heaviest stacks as printed, that round to at least 1 µs (keys: (thread frame,
    frames)): the threads whose stacks print the same (threads of one name, without
    --pid/--tid) are summed in ns first, so a printed stack is listed once; a stack of the
    thread frame alone says so (``comm;[no call chain]``) instead of a bare thread name."""
    by_label: dict = {}
    for k, ns in stacks.items():
        s = stack_of(k)
        name = label(s) + (";[no call chain]" if len(s) == 1 else "")
        by_label[name] = by_label.get(name, 0) + ns
    items = sorted(((s, ns) for s, ns in by_label.items() if ns_to_us(ns)),
                   key=lambda kv: (-kv[1], kv[0]))
    return [(s, ns_to_us(ns)) for s, ns in items[:n]]


# the latency of a kind the recording cannot measure (run queue in a `perf record -p`
# recording): null, never 0 (DESIGN.md)
UNMEASURED_LATENCY = {"count": None, "p50_us": None, "p90_us": None, "p99_us": None,
                      "max_us": None}


def summarize(profile, ropts: ReportOptions, label) -> dict:
    """The report as plain data (the JSON of DESIGN.md plus extras), all ``*_us`` integers.
    ``label(stack) -> str`` names a stack (offconv.model.naming.Namer.folded)."""
    from offconv.analysis.verdict import verdict
    an: Analysis = profile.analysis
    an.finish()
    threads = an.threads
    totals = {k: ns_to_us(sum(getattr(t, k + "_ns") for t in threads.values()))
              for k in ("blocked", "runq", "runq_preempted", "oncpu", "offcpu")}
    totals = {k + "_us": v for k, v in totals.items()}
    measured = not an.per_process   # perf record -p: run queue and on-CPU are not measured
    if not measured:
        totals.update(runq_us=None, runq_preempted_us=None, oncpu_us=None, offcpu_us=None)
    causes: dict = {}
    for t in threads.values():
        for (cause, _), ns in t.by_cause.items():
            causes[cause] = causes.get(cause, 0) + ns
    hists = {h.name: [list(b) for b in h.buckets] for h in profile.histograms}
    return {
        "verdict": verdict(an, ropts),
        "totals": totals,
        "span_us": ns_to_us(an.span_ns),
        "threads": ThreadRows.by_offcpu(threads, measured),
        "latency": {"blocked": an.summary("blocked")["stats"],
                    "runq": an.summary("runq")["stats"] if measured else dict(UNMEASURED_LATENCY)},
        "histograms": {"blocked_us": hists.get("blocked_us", []),
                       "runq_us": hists.get("runq_us", [])},
        "causes": [{"cause": c, "blocked_us": ns_to_us(ns), "idle": c in IDLE_CAUSES}
                   for c, ns in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
                   if ns_to_us(ns)],
        "top_stacks": [{"kind": kind, "stack": s, "us": us}
                       for kind in ("blocked", "runq")
                       for s, us in _top(an.stacks.get(kind, {}), ropts.top, label)],
        "top_by_process": [{"process": p, "offcpu_us": ns_to_us(sum(st.values())),
                            "stacks": [{"stack": s, "us": us} for s, us in _top(st, 3, label)]}
                           for p, st in sorted(((p, st) for p, st in an.by_process.items()
                                                if ns_to_us(max(st.values(), default=0))),
                                               key=lambda kv: (-sum(kv[1].values()), kv[0]))[:ropts.top]],
        "dropped": dict(sorted(an.dropped.items())),
        "per_process_recording": an.per_process,
    }


def report_data(profile, opts=None) -> dict:
    """The report of a profile (``summarize`` with the options' ReportOptions and naming),
    computed once per profile and options and kept on it."""
    from offconv.model.errors import OffconvError
    from offconv.model.naming import Namer
    from offconv.model.options import NamingOptions
    if profile.analysis is None and not profile.histograms and not profile.samples:
        raise OffconvError("report: the input has no stacks, sched_switch events or histograms; record them with "
                           "perf record -e sched:sched_switch -e sched:sched_wakeup -g -a")
    ropts = getattr(opts, "report", None) or ReportOptions()
    naming = getattr(opts, "naming", None) or NamingOptions()
    cached = profile.summary
    if cached is not None and cached[0] == (ropts, naming):
        return cached[1]
    if profile.analysis is None and (profile.samples or profile.thread_times):
        # stacks (and per-thread sums), no sched events
        from offconv.analysis import sample_report
        from offconv.sched.histograms import histogram_rows
        data = sample_report.report_data(profile, ropts, Namer(naming).folded)
        data["histogram_details"] = histogram_rows(profile.histograms)
        sample_report.add_histograms(data, profile, ropts)
        data["dropped"] = dict(sorted({**data["dropped"], **profile.dropped}.items()))
    elif profile.analysis is None:  # histograms only (bpftrace, bcc): offconv.sched.histograms
        from offconv.sched import histograms
        data = histograms.report_data(profile, ropts)
        if profile.dropped:   # (what the parse skipped: pipeline.load's counts)
            data["dropped"] = dict(sorted({**data.get("dropped", {}), **profile.dropped}.items()))
    else:
        data = summarize(profile, ropts, Namer(naming).folded)
        from offconv.sched.histograms import histogram_rows, shape_of_summary
        an = profile.analysis
        data["shape"] = {k: shape_of_summary(an.summary(k)) for k in ("blocked", "runq")}
        if an.per_process:  # no run-queue waits are measured: no shape to read
            data["shape"]["runq"] = {"modes": [], "tail_ratio": None, "first_bucket_only": False,
                                     "text": "not measured (a `perf record -p` recording)"}
        data["histogram_details"] = histogram_rows(profile.histograms)
    data["mode"] = profile.mode
    data["warnings"] = list(profile.warnings)
    profile.summary = ((ropts, naming), data)
    return data
