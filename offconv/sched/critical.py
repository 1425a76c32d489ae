"""The wake-up critical path: where a thread's blocked time went, hop by hop.

``Lanes`` keeps every thread's intervals in time order (on CPU, run queue, blocked with
its stack and waker), fed by the off-CPU path as it reads. ``Paths(lanes).of(tid)``
then attributes each blocked interval of the thread to what its waker did during it: the
waker's time on CPU, its run-queue waits, and its own blocked intervals, which are followed
to *their* wakers in turn, up to ``MAX_DEPTH`` hops, a thread met twice on one chain ending
it (a cycle). A chain also ends at a root that is no thread's work: a timer, an interrupt,
a device's kernel thread (jbd2, a kworker in I/O, nvme, loop: disk I/O), or no wake-up
seen. Time is conserved: the pieces of an interval sum to its length; what cannot be
attributed (the waker not seen during the wait) is a piece of its own, with the reason.

The work is linear in the intervals it touches (each piece is found by bisection in the
waker's lane). Memory is the intervals of the whole trace, three ints and a reference
each, up to ``MAX_INTERVALS`` (then ``Lanes.full`` is set and the report says that the
path covers the trace up to that point). May import offconv.model and the rest of
offconv.sched."""
from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from typing import NamedTuple, Optional

from offconv.model.records import MARKER, ONCPU_FRAME, PREEMPTED_FRAME, RUNQ_FRAME, Frame, blocked_frame
from offconv.sched.causes import KTHREAD_COMM, Classifier, queued_wakeup, woken_by_timer, woken_in_interrupt

ON, RQ, BLK = 0, 1, 2
MAX_DEPTH = 8
MAX_INTERVALS = 1_000_000
# a queued wake-up's waker (sched_wakeup shows the target CPU's idle task) is taken to be
# the one thread seen on a CPU within this long before it: the IPI follows the waker's
# try_to_wake_up by microseconds, and the waker may block right after it
QUEUED_WINDOW_NS = 100_000
# kernel threads that stand for a device's work: a wait they end is I/O
DEVICE_COMM = re.compile(r"^(jbd2/|nvme|kblockd|loop\d+|scsi_|xfsaild/|md\d*_|dm[-_]|"
                         r"kworker/.*(blk|kblockd|flush|writeback|nvme|xfs|ext4|btrfs))")
KWORKER = re.compile(r"^kworker/")

# the roots a chain can end at (its last hop's ``root``)
ROOT_DISK = "disk I/O"
ROOT_TIMER = "timer"
ROOT_INTERRUPT = "interrupt"
ROOT_KERNEL = "kernel thread"
ROOT_CYCLE = "cycle"
ROOT_DEPTH = "depth limit"
ROOT_NO_WAKEUP = "no wake-up seen"
ROOT_NOT_SEEN = "waker not seen during the wait"
ROOT_QUEUED = "woken from another CPU (the trace does not name the waker)"
UNATTRIBUTED = frozenset((ROOT_NO_WAKEUP, ROOT_NOT_SEEN, ROOT_DEPTH, ROOT_QUEUED))


class _Lane:
    """One thread's intervals in time order: ``starts``/``ends`` (ns), ``kinds`` (ON, RQ,
    BLK) and ``info`` (for BLK: (state, stack, waker Task or None, waker stack); for RQ:
    whether it was preempted; ON: its CPU, -1 if unknown)."""

    __slots__ = ("task", "starts", "ends", "kinds", "info", "sorted")

    def __init__(self, task):
        self.task = task
        self.starts = array("q")
        self.ends = array("q")
        self.kinds = bytearray()
        self.info: list = []
        self.sorted = True

    def add(self, start: int, end: int, kind: int, info) -> None:
        if end <= start:
            return
        if self.ends and start < self.ends[-1]:
            self.sorted = False
        self.starts.append(start)
        self.ends.append(end)
        self.kinds.append(kind)
        self.info.append(info)

    def settle(self) -> None:
        """In time order (an inferred switch-in can come after a later interval)."""
        if self.sorted:
            return
        order = sorted(range(len(self.starts)), key=self.starts.__getitem__)
        self.starts = array("q", (self.starts[i] for i in order))
        self.ends = array("q", (self.ends[i] for i in order))
        self.kinds = bytearray(self.kinds[i] for i in order)
        self.info = [self.info[i] for i in order]
        self.sorted = True


class Lanes:
    """Every thread's intervals (``period`` and ``oncpu`` take the off-CPU path's records)."""

    def __init__(self, max_intervals: int = MAX_INTERVALS):
        self.by_tid: dict = {}
        self.n = 0
        self.max = max_intervals
        self.full = False
        self.full_at: Optional[int] = None   # the time of the first interval not kept
        self.last_ns = 0
        self._info: dict = {}   # one tuple per distinct (state, stack, waker, waker stack)
        self._cpus: dict = {}   # cpu -> (starts, ends, tids): who ran there, in time order
        self._cpus_sorted = True

    def _lane(self, task) -> Optional[_Lane]:
        if self.n >= self.max:
            return None
        lane = self.by_tid.get(task.tid)
        if lane is None:
            lane = self.by_tid[task.tid] = _Lane(task)
        elif task.comm != lane.task.comm:
            lane.task = task
        return lane

    def _stop(self, at: int) -> None:
        if not self.full:
            self.full, self.full_at = True, at

    def oncpu(self, rec) -> None:
        lane = self._lane(rec.task)
        if lane is None:
            return self._stop(rec.start_ns)
        lane.add(rec.start_ns, rec.end_ns, ON, rec.cpu)
        self.n += 1
        tid = rec.task.tid
        if rec.cpu >= 0 and tid and rec.end_ns > rec.start_ns:
            c = self._cpus.get(rec.cpu)
            if c is None:
                c = self._cpus[rec.cpu] = (array("q"), array("q"), [])
            if c[1] and rec.start_ns < c[1][-1]:
                self._cpus_sorted = False
            c[0].append(rec.start_ns)
            c[1].append(rec.end_ns)
            c[2].append(tid)
        if rec.end_ns > self.last_ns:
            self.last_ns = rec.end_ns

    def period(self, p) -> None:
        lane = self._lane(p.task)
        if lane is None:
            return self._stop(p.start_ns)
        if p.blocked:
            end = p.wake_ns if p.wake_ns is not None else p.end_ns
            waker = p.waker if p.wake_ns is not None else None
            if end is not None:
                info = (p.state, p.stack, waker, p.waker_stack)
                info = self._info.setdefault(info, info)
                lane.add(p.start_ns, end, BLK, info)
                self.n += 1
            if p.wake_ns is not None and p.end_ns is not None:
                lane.add(p.wake_ns, p.end_ns, RQ, False)
                self.n += 1
        elif p.end_ns is not None:
            lane.add(p.start_ns, p.end_ns, RQ, p.preempted)
            self.n += 1
        last = p.end_ns if p.end_ns is not None else p.wake_ns
        if last is not None and last > self.last_ns:
            self.last_ns = last

    def sole_runner(self, t: int, not_tid, window: int = QUEUED_WINDOW_NS):
        """The one thread other than ``not_tid`` (and the idle task) that was the last to
        run before ``t`` on a CPU and ran there within ``window`` of ``t``; None if none or
        several (on several CPUs) were."""
        if not self._cpus_sorted:
            for cpu, (starts, ends, tids) in list(self._cpus.items()):
                order = sorted(range(len(starts)), key=starts.__getitem__)
                self._cpus[cpu] = (array("q", (starts[i] for i in order)),
                                   array("q", (ends[i] for i in order)), [tids[i] for i in order])
            self._cpus_sorted = True
        found = None
        for starts, ends, tids in self._cpus.values():
            i = bisect_right(starts, t) - 1      # the CPU's last thread to run before t
            if i >= 0 and ends[i] >= t - window and tids[i] != not_tid and tids[i] != found:
                if found is not None:
                    return None
                found = tids[i]
        return self.by_tid[found].task if found is not None else None

    def lane(self, tid) -> Optional[_Lane]:
        lane = self.by_tid.get(tid)
        if lane is not None:
            lane.settle()
        return lane


# -- the path -------------------------------------------------------------------------

class Hop(NamedTuple):
    """One step of a chain: ``what`` is "blocked", "on-CPU", "run queue" or "not seen";
    ``cause`` (cause, label) of a blocked hop; ``stack`` its blocked stack (frames) or, on
    CPU, the stack it woke the thread before with; ``root`` what ends the chain there, or
    ""; ``inferred``: a blocked hop whose waker the trace does not name (a queued
    wake-up), taken to be the one thread then on another CPU (``Lanes.sole_runner``)."""

    tid: object
    comm: str
    what: str
    state: str = ""
    cause: Optional[tuple] = None
    stack: tuple = ()
    root: str = ""
    inferred: bool = False


class Paths:
    """The critical paths of threads of one ``Lanes`` (``of(tid)``), with what every path
    reads of a blocked interval -- its cause, its root by its waker -- kept per interval
    (Lanes interns the interval's tuple, so its id names it) for all of them."""

    def __init__(self, lanes: Lanes, classify: Optional[Classifier] = None):
        self.lanes = lanes
        self.classify = classify or Classifier()
        self._cause: dict = {}       # id(info) -> (cause, label)
        self._roots: dict = {}       # id(info) -> its root by its waker alone
        self.out: dict = {}          # chain (tuple of Hops) -> ns, of the thread being walked
        self.memo: dict = {}         # tid -> what a caller made of that thread's path
        self.spans: Optional[list] = None   # a list: every piece walked, (tid, start, end)

    def of(self, tid) -> dict:
        """The chains of thread ``tid``'s time: {chain (tuple of Hops, the thread's own hop
        first): ns}: each blocked interval along its wake-ups, and its own on-CPU and
        run-queue time as one-hop chains. They add up to the thread's intervals."""
        self.out = out = {}
        lane = self.lanes.lane(tid)
        if lane is None:
            return out
        task = lane.task
        for s, e, k, info in zip(lane.starts, lane.ends, lane.kinds, lane.info):
            if k == ON:
                self.add((Hop(task.tid, task.comm, "on-CPU"),), e - s)
            elif k == RQ:
                self.add((Hop(task.tid, task.comm, "run queue", state="R+" if info else "R"),), e - s)
            else:
                self.interval((), (task.tid,), task, info, s, e, e)
        return out

    def cause(self, info) -> tuple:
        c = self._cause.get(id(info))
        if c is None:
            c = self._cause[id(info)] = tuple(self.classify.period(info[1], info[3], None))
        return c

    def add(self, chain: tuple, ns: int) -> None:
        if ns > 0:
            self.out[chain] = self.out.get(chain, 0) + ns

    def blocked_hop(self, task, info, root: str = "", inferred: bool = False) -> "Hop":
        return Hop(task.tid, task.comm, "blocked", info[0], self.cause(info), info[1], root, inferred)

    def root_of(self, info, chain_tids: tuple) -> Optional[str]:
        """The root a blocked interval ends at by its waker alone, else None (follow it)."""
        got = self._roots.get(id(info), self)   # (info tuples are interned by Lanes)
        if got is self:
            got = self._roots[id(info)] = self._root_by_waker(info)
        if got is None and info[2].tid in chain_tids:
            return ROOT_CYCLE
        return got

    def _root_by_waker(self, info) -> Optional[str]:
        state, stack, waker, waker_stack = info
        if waker is None:
            return ROOT_NO_WAKEUP
        if queued_wakeup(waker, waker_stack):   # from another CPU: a disk's completion, a
            cause = self.cause(info)[0]          # sleep's timer, or a thread not named
            return ROOT_DISK if cause == "disk" else ROOT_TIMER if cause == "sleep" else ROOT_QUEUED
        if waker.tid == 0 or woken_in_interrupt(waker_stack):
            if woken_by_timer(waker_stack):
                return ROOT_TIMER
            return ROOT_DISK if self.cause(info)[0] == "disk" else ROOT_INTERRUPT
        if woken_by_timer(waker_stack):
            return ROOT_TIMER
        comm = waker.comm
        if DEVICE_COMM.match(comm):
            return ROOT_DISK
        if KTHREAD_COMM.match(comm):
            if KWORKER.match(comm) and (state.startswith("D") or self.cause(info)[0] == "disk"):
                return ROOT_DISK
            return ROOT_KERNEL
        return None

    def interval(self, prefix: tuple, chain_tids: tuple, task, info, a: int, b: int, wake: int) -> None:
        """Attribute [a, b) of a blocked interval of ``task`` (``info``, woken at ``wake``)
        to its waker."""
        root = self.root_of(info, chain_tids)
        waker, waker_stack, inferred = info[2], info[3], False
        if root == ROOT_QUEUED:
            w = self.lanes.sole_runner(wake, task.tid)
            if w is not None:
                waker, waker_stack, inferred = w, (), True
                root = ROOT_CYCLE if w.tid in chain_tids else None
        if root is None and len(prefix) >= MAX_DEPTH - 1:
            root = ROOT_DEPTH
        if root is not None:
            self.add(prefix + (self.blocked_hop(task, info, root, inferred),), b - a)
            return
        here = prefix + (self.blocked_hop(task, info, inferred=inferred),)
        self.waker_during(here, chain_tids + (waker.tid,), waker, waker_stack, a, b)

    def waker_during(self, prefix: tuple, chain_tids: tuple, waker, waker_stack, a: int, b: int) -> None:
        """What ``waker`` did during [a, b): its intervals there, followed where it blocked."""
        lane = self.lanes.lane(waker.tid)
        t = a
        if lane is not None:
            ends, starts, kinds, info = lane.ends, lane.starts, lane.kinds, lane.info
            i = bisect_right(ends, a)
            while i < len(ends) and starts[i] < b:
                s, e = max(starts[i], t), min(ends[i], b)
                if self.spans is not None and e > s:
                    self.spans.append((waker.tid, s, e))
                if s > t:   # a gap in what the trace shows of the waker
                    self.add(prefix + (Hop(waker.tid, lane.task.comm, "not seen", root=ROOT_NOT_SEEN),), s - t)
                if e > s:
                    k = kinds[i]
                    if k == ON:
                        self.add(prefix + (Hop(waker.tid, lane.task.comm, "on-CPU", stack=waker_stack),), e - s)
                    elif k == RQ:
                        self.add(prefix + (Hop(waker.tid, lane.task.comm, "run queue",
                                               state="R+" if info[i] else "R"),), e - s)
                    else:
                        self.interval(prefix, chain_tids, lane.task, info[i], s, e, ends[i])
                    t = e
                i += 1
        if t < b:
            comm = lane.task.comm if lane is not None else waker.comm
            self.add(prefix + (Hop(waker.tid, comm, "not seen", root=ROOT_NOT_SEEN),), b - t)


def critical_path(lanes: Lanes, tid, classify: Optional[Classifier] = None) -> dict:
    """``Paths(lanes, classify).of(tid)``: one thread's chains."""
    return Paths(lanes, classify).of(tid)


def root_text(chain: tuple) -> str:
    """What the chain ends in, for people: its last hop's root, or what its last thread did."""
    last = chain[-1]
    if last.root and last.root != ROOT_NOT_SEEN:
        return last.root
    if last.what == "on-CPU":
        return f"{last.comm} on CPU"
    if last.what == "run queue":
        return f"{last.comm} waiting for a CPU"
    return last.root or last.what


def chain_stack(chain: tuple, frames) -> tuple:
    """A chain as the frames of a stack (--mode critical-path), root first: the thread's
    blocked state and stack, then ``→ WAKER`` and what the waker did (``[on-CPU]`` and the
    stack it woke with, ``[run queue]``/``[preempted]``, or its blocked state and stack),
    and so on, then ``[root]``. ``frames``: a stack's frames as drawn (-U/-K/-d)."""
    out = []
    for i, h in enumerate(chain):
        if i:
            out.append(Frame(f"→ {h.comm}", "", MARKER))
        if h.what == "blocked":
            out.append(blocked_frame(h.state))
            out.extend(frames(h.stack))
        elif h.what == "on-CPU":
            out.append(ONCPU_FRAME)
            out.extend(frames(h.stack))
        elif h.what == "run queue":
            out.append(PREEMPTED_FRAME if h.state == "R+" else RUNQ_FRAME)
        if h.root:
            out.append(Frame(f"[{h.root}]", "", MARKER))
    return tuple(out)
