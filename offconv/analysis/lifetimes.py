"""What a thread's end decides about the waits before it (``Lifetimes``, the half of
``Analysis`` that runs as threads end and at ``finish``): a wait ended by a child that then
exits is a wait for the child, a futex wait ended by a thread it created is a join, a
worker woken only to exit was idle, futex waits that mostly end by a timer are timed
waits. May import offconv.sched and offconv.model."""
from __future__ import annotations

from array import array

from offconv.sched.causes import QUEUED_WAKER, UNREAD, from_events, queued_wakeup
from offconv.sched.latency import grown, merged


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
        dest = tt.cause_durations.setdefault(new[0], array("q"))
        dest.append(d)
        tt.cause_durations[new[0]] = grown(dest)


def _move(m: dict, old, new, v: int) -> None:
    if not v or old not in m:
        return
    m[old] -= v
    if not m[old]:
        del m[old]
    m[new] = m.get(new, 0) + v



class Lifetimes:
    """Methods of ``Analysis`` (threads.py), which holds the state they read."""

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
                tt.cause_durations[new[0]] = merged(
                    tt.cause_durations.get(new[0], array("q")), arr)
            for key in [k for k in tt.wakers if k[0] == UNWOKEN_LOCK]:
                tt.wakers[(new, key[1])] = tt.wakers.pop(key)
            if tt.tid in self.last_cause and self.last_cause[tt.tid] == UNWOKEN_LOCK:
                self.last_cause[tt.tid] = new
            for cmap in (tt.unknown_by_cause,):
                v = cmap.pop(UNWOKEN_LOCK, None)
                if v is not None:
                    cmap[new] = cmap.get(new, 0) + v

