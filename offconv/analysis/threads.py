"""Off-CPU accumulation: ``Analysis`` takes the periods of the off-CPU path
(``offconv.run.offcpu.build_profile`` feeds it) and keeps, in ns, each thread's totals
(``totals``), the exact latencies, the causes (``offconv.sched.causes``) and the stacks;
what a thread's end decides is ``lifetimes``, the report made of it ``summary``. May import
offconv.sched and offconv.model."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Optional

from offconv.sched.causes import INTERRUPT_WAKER_NAME, KTHREAD_COMM, NO_CAUSE, PEER_CAUSES, QUEUED_WAKER, RUNTIME_COMM, TIMER_WAKER_NAME, UNREAD, Classifier, from_events, runtime_wait, queued_wakeup, unread_stack, woken_by_timer, woken_in_interrupt
from offconv.analysis.lifetimes import (CHILD_PENDING, JOIN_EXIT_NS, JOIN_PENDING, THREAD_JOIN,
                                        TIMED_MIN_NS, UNWOKEN_LOCK, Lifetimes)
from offconv.analysis.totals import Threads, ThreadTotals
from offconv.sched.latency import EXACT_MAX, Runs, grown, latency_stats, log2_buckets, percentile


@dataclass
class Analysis(Lifetimes):
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
    # --mode wallclock: tid -> the thread's on-CPU time by its samples (their periods), ns;
    # beside its on-CPU time by the sched events, it gives the sampling error
    sampled: dict = field(default_factory=dict)
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
    lanes: Optional[object] = field(default=None, repr=False)   # sched.critical.Lanes, or None
    cpu_busy: dict = field(default_factory=dict)     # cpu -> ns run by tasks other than idle
    thread_cpu: dict = field(default_factory=dict)   # tid -> {cpu: ns on it} (kept threads)

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
            if len(arr) >= EXACT_MAX:   # (bounded: latency.Buckets)
                tt.cause_durations[cause[0]] = grown(arr)
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
                if len(tt.runq_idle) >= EXACT_MAX:
                    tt.runq_idle = grown(tt.runq_idle)
            else:
                tt.runq_cont.append(r)
                if len(tt.runq_cont) >= EXACT_MAX:
                    tt.runq_cont = grown(tt.runq_cont)
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

    def add_oncpu(self, iv) -> None:
        d = iv.end_ns - iv.start_ns
        self.thread(iv.task).oncpu_ns += d
        if iv.cpu >= 0:
            m = self.thread_cpu.setdefault(iv.task.tid, {})
            m[iv.cpu] = m.get(iv.cpu, 0) + d

    def add_sample(self, task, ns: int) -> None:
        self.sampled[task.tid] = self.sampled.get(task.tid, 0) + ns

    def note_cpu(self, iv) -> None:
        """Any thread's span on a CPU (filtered out or not): the CPUs seen and how busy."""
        cpu = iv.cpu
        if cpu >= 0:
            busy = self.cpu_busy
            busy[cpu] = busy.get(cpu, 0) + (iv.end_ns - iv.start_ns if iv.task.tid else 0)

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
            # (rules.command_tree; and rules.scope: a thread the workload created is
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
                     "samples_kept", "wakeup_events", "parents", "command", "exits", "sched_wakeup_events",
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


