"""Causes of blocked time, as data, from both ends of a wait.

The blocking stack says what a thread waited in (``classify``): under a page fault, a
swap-in or reclaim frame makes it ``paging`` (memory pressure) and a file read
(``filemap_fault``, readahead, a folio wait) ``disk`` (a cold cache is I/O, not memory
pressure); otherwise the leaf-most kernel frame that is not scheduler plumbing
(``__schedule``, ``schedule``, ``schedule_timeout``, ...) and matches a rule of ``RULES``
decides (a kworker idling in ``worker_thread`` is ``poll/idle``, one in ``io_schedule``
under ``worker_thread`` is ``disk``); nothing matched: ``other``.

The wake-up says what ended it (``refine``, rules in ``WAKER_RULES``; and in
``analysis.Analysis.add_period``, a socket, pipe or unclassified wait ended by a thread that
was runnable or running for most of the wait is ``peer-cpu``: waiting for that thread's CPU
work, not for the network): a lock wait (a
futex) ended by a timer is a timed wait that nobody released -- idle-like, not a lock;
one ended by a thread that was itself idle (waiting for work, a timed wait) just before
it woke this one is waiting for work handed out by that thread. Otherwise a lock wait
stays a lock wait and names its waker.
"""
from __future__ import annotations

import re

from offconv.model.records import KERNEL

# the causes' names (the report's rows, diff --fail-on's) are options.CAUSES

# not latency: waiting for work, for a child process, or for another thread's CPU work
# (that time is counted where it is spent, on the other thread)
IDLE_CAUSES = frozenset(("poll/idle", "child", "peer-cpu"))
# waits that become ``peer-cpu`` when the thread that ended them was running on a CPU for
# most of the wait (a request answered by a busy peer: the peer's CPU is the cost)
PEER_CAUSES = frozenset(("network", "local-socket", "poll/idle", "other"))
NO_CAUSE = ("other", "")            # classify: no rule matched
# a recording without call chains (perf sched record, perf record without -g): the wait
# has no stack to read; analysis.Analysis.add_period asks its waker
NO_CHAIN = ("other", "no call chain")
# a call chain whose kernel frames are all unresolved (``[unknown] ([kernel.kallsyms])``: a
# perf.data converted on another kernel build than the one it was recorded on, without
# its kallsyms): no more to read than no call chain at all
UNRESOLVED = ("other", "kernel frames unresolved")
UNREAD = frozenset((NO_CHAIN, UNRESOLVED))
# what analysis reads an unread wait as from the events alone: a wait ended by the
# thread's child, a kernel thread's wait, a timed wait (same-length waits)
_FROM_EVENTS = {"child": ("child", "woken by its child"), "kthread": ("poll/idle", "kernel thread"),
                "timed": ("poll/idle", "timed wait"), "runtime": ("poll/idle", "JVM service thread")}


def from_events(unread: tuple, what: str) -> tuple:
    """The cause an unread wait (``NO_CHAIN`` or ``UNRESOLVED``) is read as from the events
    alone (``what``: child, kthread, runtime or timed), its label saying why the stack was not read."""
    cause, label = _FROM_EVENTS[what]
    return cause, f"{label} ({unread[1]})"


CHILD_WOKE = from_events(NO_CHAIN, "child")
KTHREAD_IDLE = from_events(NO_CHAIN, "kthread")
TIMED_NO_CHAIN = from_events(NO_CHAIN, "timed")   # analysis: same-length waits
# every cause a wait without a readable stack can have
UNREAD_ANY = UNREAD | {from_events(u, w) for u in UNREAD for w in _FROM_EVENTS}
UNRESOLVED_ANY = frozenset({UNRESOLVED} | {from_events(UNRESOLVED, w) for w in _FROM_EVENTS})


def unread_stack(stack: tuple):
    """``NO_CHAIN`` for a switch-out stack without kernel frames, ``UNRESOLVED`` for one
    whose kernel frames are all unresolved (perf names them ``[unknown]``, offconv after
    their module: ``[kernel.kallsyms]``, ``[xfs]``); None when a kernel frame has a name."""
    kernel = False
    for f in stack:
        if f.kind == KERNEL:
            if f.name[:1] != "[":
                return None
            kernel = True
    return UNRESOLVED if kernel else NO_CHAIN
# Linux kernel threads by name (comm, at most 15 characters): without a call chain their
# waits (worker_thread, smpboot_thread_fn, ... with one: RULES) are read as waiting for work
KTHREAD_COMM = re.compile(
    r"^(kworker/|ksoftirqd/|migration/|rcu_|rcu[a-z]*/|kthreadd$|irq/|watchdogd?/?|cpuhp/|"
    r"idle_inject/|kcompactd|kswapd|khugepaged$|kdamond|jbd2/|kauditd$|oom_reaper$|ksmd$|"
    r"kblockd$|writeback$|khungtaskd$|kintegrityd$|kdevtmpfs$|xfsaild/|scsi_eh_|scsi_tmf_|"
    r"kthrotld$|psimon$|pool_workqueue|kvfree_rcu|ext4-rsv-conver|mm_percpu_wq$|"
    r"inet_frag_wq$|ipv6_addrconf$|netns$|kstrp$|zswap|hwrng$|nvme|loop\d+$|md$|"
    r"blkcg_punt_bio$|edac-poller$|devfreq_wq$|vmstat$|kpsmoused$|card\d+-crtc)")

# A language runtime's own service threads, by name: the JVM's (HotSpot names them; comm
# keeps 15 characters) GC workers, JIT compilers, VM thread and reference handlers wait for
# work. Their futex waits cannot be read from their stacks -- glibc has no frame pointers,
# so the call chain ends at __futex_abstimed_wait_common -- and a CPU-bound Java program
# read "waiting, lock (futex) 100%: fix the lock" from an idle "GC Thread#0" (held out,
# fixture jvm_spin). Their lock and unread waits are waiting for work (RUNTIME_IDLE);
# the application's threads, whose waits they end, keep their own causes.
RUNTIME_COMM = re.compile(
    r"^(VM Thread|VM Periodic Tas|GC Thread#\d+|G1 (Main Marker|Conc#\d+|Refine#\d+|Service|"
    r"Young RemSet)|ParGC Thread#\d+|C[12] CompilerThre|Reference Handl|Finalizer|"
    r"Signal Dispatch|Service Thread|Monitor Deflati|Sweeper thread|Notification Th|"
    r"Common-Cleaner|Attach Listener|JVMCI CompilerT|Z(Director|Driver|Stat|Worker#\d+|"
    r"UncommitterN?|Unmapper|Runtime Worker)|Shenandoah)$")
RUNTIME_IDLE = ("poll/idle", "JVM service thread")


def runtime_wait(cause: tuple) -> tuple:
    """The cause of a wait of a runtime's service thread (RUNTIME_COMM): its lock and
    unread ("other") waits are waiting for work."""
    return RUNTIME_IDLE if cause[0] in ("lock", "other") else cause

FAULT = r"page_fault|handle_mm_fault|^__do_fault$|^do_fault$|handle_userfault"
# under a fault, the first matching rule (anywhere in the kernel stack) decides
FAULT_RULES = (
    ("paging", "swap-in", r"do_swap_page|swapin|swap_read|read_swap_cache|shmem_swapin"),
    ("paging", "reclaim", r"try_to_free|shrink_node|shrink_folio|reclaim|compact_zone|"
     r"__alloc_pages_slowpath"),
    ("disk", "page-fault read", r"filemap_fault|readahead|read_folio|readpage|folio_wait|"
     r"wait_on_page|__lock_page|ext4_|xfs_|btrfs_|submit_bio|io_schedule"),
)
# The process's address-space lock: mmap_lock (an rwsem), and since Linux 6.4 the per-VMA
# lock a page fault takes first (``__vma_start_write``: a writer waits for a VMA's readers).
# A page fault that waits for it is a lock wait, not memory pressure: another thread's
# mmap, munmap, mprotect, madvise, brk or mremap holds it (a fault behind an mprotect loop
# read "page-fault waits (memory pressure)", 60% of the thread's wall time; held out,
# fixture mmap_lock). Frames that name it, then the callers that take it themselves, where
# an rwsem wait is the mmap_lock's (mmap_read_lock and the like are inlined: down_read_killable
# right under lock_mm_and_find_vma, down_write_killable right under do_mprotect_pkey).
MMAP_LOCK = r"^(__vma_start_write|vma_start_write\w*|__vma_enter_locked|mmap_read_lock\w*|" \
            r"mmap_write_lock\w*|__mmap_lock\w*)$"
MM_CALLS = r"^(lock_mm_and_find_vma|do_user_addr_fault|do_page_fault|do_mprotect_pkey|" \
           r"do_madvise|madvise_\w+|vm_mmap_pgoff|__vm_munmap|do_vmi_munmap|__do_sys_brk|" \
           r"__x64_sys_brk|__do_sys_mremap|__x64_sys_mremap|do_mlock|__mm_populate|" \
           r"__do_sys_mlockall|__x64_sys_msync|__do_sys_process_madvise|__access_remote_vm|" \
           r"access_remote_vm|get_mm_cmdline|proc_pid_cmdline_read|m_start|show_map\w*|" \
           r"do_mmap|mmap_region)$"
# the lock functions between a lock wait and the caller that took the lock
LOCK_FUNCS = r"rwsem|^down_|^__down|^up_|mutex|^mmap_read_lock|^mmap_write_lock"
# Go's runtime parks an idle M (an OS thread with no goroutine to run) in a futex
# (runtime.stopm -> notesleep), waits for timers and network in epoll_pwait
# (findRunnable -> netpoll), and runs sysmon, a background thread, in a usleep loop. Read
# from the kernel frames alone, a pure-CPU Go program read "waiting, lock (futex) 100%: fix
# the lock" (an M parked for the whole window) and a sleeping one named sysmon's usleep
# (held out, fixtures go_spin and go_sleep). When the user frames show the scheduler's idle
# path, the wait is the M's idle time: what the goroutine it last ran parked in -- the first
# frame outside the runtime above runtime.mcall/gopark -- says why (GO_PARKED), otherwise
# the M waits for work. A runtime-internal lock (runtime.lock2) stays a futex lock wait.
GO_IDLE = r"^runtime\.(stopm|findRunnable|findrunnable|sysmon|templateThread|mPark|stoplockedm|" \
          r"startlockedm|gcstopm)$"
GO_LOCK = r"^runtime\.(lock2|lockWithRank|lock)$"
GO_PARK = r"^runtime\.(mcall|park_m|gopark|goparkunlock)$"
# (cause, label, regex over the first frame outside package runtime above the park)
GO_PARKED = (
    ("sleep", "Go time.Sleep", r"^time\.Sleep$"),
    ("lock", "Go sync.Mutex", r"^sync\.(runtime_SemacquireMutex|runtime_SemacquireRWMutexR?|"
     r"\(\*RW?Mutex\)\.\w+)$"),
)
GO_IDLE_CAUSE = ("poll/idle", "Go scheduler idle")
INFRA = r"^(__schedule|schedule|schedule_timeout|schedule_hrtimeout\w*|" \
        r"schedule_preempt_disabled|preempt_schedule\w*|_?_?cond_resched|" \
        r"freezable_schedule\w*|io_schedule_prepare|__traceiter\w*)$"

# (cause, label, regex over one kernel frame name): the first rule matching the leaf-most
# informative frame wins
RULES = (
    ("poll/idle", "idle", r"^(do_idle|schedule_idle|cpu_startup_entry|worker_thread|"
     r"smpboot_thread_fn|kthreadd|kthread_worker_fn|rcu_gp_kthread|rcu_gp_fqs_loop|"
     r"rcu_tasks\w*kthread|rcu_\w*_kthread|irq_thread|kcompactd|kswapd|khugepaged|"
     r"kdamond\w*|kauditd_thread|watchdog|oom_reaper|ksm_scan_thread|rescuer_thread|"
     r"kjournald2|kthread)$"),
    ("poll/idle", "epoll", r"ep_poll|epoll_wait"),
    ("poll/idle", "poll", r"^(do_sys_poll|do_poll|poll_schedule_timeout)"),
    ("poll/idle", "select", r"^(do_select|core_sys_select)"),
    # either end of a pipe waits for the other (a reader for data, a writer for room): the
    # peer's time is counted where it is spent. pipe_read/pipe_write are anon_pipe_* and
    # fifo_pipe_* in recent kernels (6.18 here), the wait inlined (no pipe_wait_* frame)
    ("poll/idle", "pipe", r"^((anon_|fifo_)?pipe_(read|write)|pipe_wait\w*)$"),
    # a message queue's reader waits for a message, its writer for room, as a pipe's ends
    # do (SysV msgrcv/msgsnd, POSIX mq_*: a consumer of a paced producer read "other
    # blocked waits" instead of the producer's sleep; held out, fixture msgq_paced)
    ("poll/idle", "message queue", r"^(do_msgrcv|ksys_msgrcv|__x64_sys_msgrcv|"
     r"__arm64_sys_msgrcv|do_msgsnd|ksys_msgsnd|__x64_sys_msgsnd|__arm64_sys_msgsnd|"
     r"do_mq_timedreceive|do_mq_timedsend|__x64_sys_mq_timed\w*|__arm64_sys_mq_timed\w*|"
     r"wq_sleep)$"),
    ("poll/idle", "signal", r"^(do_sigtimedwait|sigsuspend|__x64_sys_pause|__do_sys_pause|"
     r"n_tty_read|inotify_read|eventfd_read)$"),
    # a listener blocked in accept waits for clients to come, as epoll_wait does for
    # events: waiting for work (a server's 3 s accept was named as a "network wait" beside
    # its clients' slow replies; held out). A client's connect or recv stays network.
    ("poll/idle", "accept", r"^(inet_csk_accept|do_accept|__sys_accept4?|__x64_sys_accept4?|"
     r"__arm64_sys_accept4?|unix_accept)$"),
    ("child", "wait", r"^(do_wait|kernel_wait4?|__do_sys_wait4|__x64_sys_wait4|kernel_waitid)$"),
    ("child", "vfork", r"^(kernel_clone|_do_fork|__do_sys_vfork|__do_sys_clone3?)$"),
    ("disk", "fsync", r"fsync|sync_file|blkdev_issue_flush|jbd2"),
    # sync(2)/syncfs(2): waiting for the flusher's writeback of every dirty inode (a `sync`
    # loop read "other blocked waits": wb_wait_for_completion under ksys_sync; held out)
    ("disk", "sync", r"^(ksys_sync|__x64_sys_sync|__x64_sys_syncfs|__arm64_sys_sync\w*|"
     r"sync_filesystem|sync_inodes_sb|sync_inodes_one_sb|wb_wait_for_completion|"
     r"__writeback_inodes_sb_nr|writeback_inodes_sb\w*)$"),
    ("disk", "io", r"io_schedule|^blk_|^bio_|submit_bio|folio_wait|wait_on_page|__lock_page|"
     r"wait_on_buffer|^__?lock_buffer|nvme|^filemap_|^ext4_|^xfs_|^btrfs_"),
    # a Unix-domain socket is a local peer, not a network: the process at its other end
    # answers (the wake-up critical path names it)
    ("local-socket", "unix socket", r"^unix_"),
    ("network", "socket", r"^(sk_|sock_|tcp_|inet_|udp_|__skb_|skb_recv|__sys_recv|"
     r"__sys_send|__sys_accept|__sys_connect|netlink)"),
    ("lock", "futex", r"futex"),
    # flock(2), fcntl(F_SETLKW), lockf: a file lock's waiter, released by its holder (4
    # processes taking turns on an flock read "other blocked waits": held out, fixture
    # flock_turns)
    ("lock", "file lock", r"^(locks_lock_inode_wait|locks_lock_file_wait|flock_lock_inode_wait|"
     r"posix_lock_inode_wait|__do_sys_flock|__x64_sys_flock|__arm64_sys_flock|"
     r"fcntl_setlk\w*|do_lock_file_wait)$"),
    # a SysV semaphore's semop(2)/semtimedop(2) (4 processes taking turns on one read
    # "other blocked waits": held out, fixture sem_turns)
    ("lock", "semaphore", r"^(__do_semtimedop|do_semtimedop|ksys_semtimedop|__x64_sys_semop|"
     r"__x64_sys_semtimedop|__arm64_sys_semop|__arm64_sys_semtimedop)$"),
    ("lock", "mmap_lock", MMAP_LOCK),
    ("lock", "mutex", r"mutex"),
    ("lock", "rwsem", r"rwsem|^down_read|^down_write|^down$|^__down|percpu_down"),
    ("sleep", "nanosleep", r"nanosleep|hrtimer_sleep|^msleep|^usleep|^ssleep"),
)

# (cause of the blocking stack, what the waker shows) -> (cause, label)
TIMER_WAKER = r"^(hrtimer_wakeup|process_timeout|__hrtimer_run_queues|hrtimer_interrupt|" \
              r"it_real_fn|posix_timer_fn|tick_sched_timer)$"
WAKER_RULES = (
    ("lock", "timer", "poll/idle", "timed wait"),       # a futex/lock timeout: nobody released it
    ("lock", "idle-waker", "poll/idle", "waiting for work"),
)

_FAULT = re.compile(FAULT)
_FAULT_RULES = [(c, label, re.compile(rx)) for c, label, rx in FAULT_RULES]
_FAULT_MEMORY = 2   # FAULT_RULES' memory-pressure rules (swap-in, reclaim) come first
_MM_CALLS = re.compile(MM_CALLS)
_LOCK_FUNCS = re.compile(LOCK_FUNCS)
_GO_IDLE = re.compile(GO_IDLE)
_GO_LOCK = re.compile(GO_LOCK)
_GO_PARK = re.compile(GO_PARK)
_GO_PARKED = [(c, label, re.compile(rx)) for c, label, rx in GO_PARKED]
_INFRA = re.compile(INFRA)
_TIMER = re.compile(TIMER_WAKER)
_COMPILED = [(c, label, re.compile(rx)) for c, label, rx in RULES]


def classify(stack: tuple) -> tuple[str, str]:
    """(cause, label) of a switch-out stack (root-first tuple of Frames)."""
    kernel = [f.name.split(".", 1)[0] for f in stack if f.kind == KERNEL]
    if not kernel:
        return "other", ""
    go = _go_runtime(stack)
    if go is not None:
        return go
    leaf = _leaf_rule(kernel)
    if any(_FAULT.search(name) for name in kernel):
        for cause, label, rx in _FAULT_RULES[:_FAULT_MEMORY]:   # memory pressure first
            if any(rx.search(name) for name in kernel):
                return cause, label
        if leaf is not None and leaf[0] == "lock":   # a fault waiting for a lock
            return _lock_label(leaf, kernel)
        for cause, label, rx in _FAULT_RULES[_FAULT_MEMORY:]:
            if any(rx.search(name) for name in kernel):
                return cause, label
        return "paging", "fault"
    if leaf is None:
        return "other", ""
    return _lock_label(leaf, kernel) if leaf[0] == "lock" else leaf


def _go_runtime(stack: tuple) -> tuple | None:
    """The cause of a Go M's wait in the runtime scheduler's idle path (GO_IDLE), None for
    any other stack. Cheap for non-Go stacks: one pass over the user frames' names."""
    user = [f.name for f in stack if f.kind != KERNEL]
    idle = None
    for i in range(len(user) - 1, -1, -1):   # leaf to root
        name = user[i]
        if not name.startswith("runtime."):
            continue
        if _GO_LOCK.match(name):
            return None                         # a runtime lock: the futex rule's
        if _GO_IDLE.match(name):
            idle = i
            break
    if idle is None:
        return None
    park = next((i for i in range(idle - 1, -1, -1) if _GO_PARK.match(user[i])), None)
    if park is not None:
        caller = next((user[i] for i in range(park - 1, -1, -1)
                       if not user[i].startswith("runtime.")), None)
        if caller is not None:
            for cause, label, rx in _GO_PARKED:
                if rx.match(caller):
                    return cause, label
    return GO_IDLE_CAUSE


def _leaf_rule(kernel: list) -> tuple | None:
    """The (cause, label) of the leaf-most frame that is not scheduler plumbing and matches
    a rule of RULES; None when none does."""
    for name in reversed(kernel):
        if _INFRA.match(name):
            continue
        for cause, label, rx in _COMPILED:
            if rx.search(name):
                return cause, label
    return None


def _lock_label(cause: tuple, kernel: list) -> tuple:
    """An rwsem wait taken by a page fault or an mm call (MM_CALLS) is the mmap_lock's."""
    if cause[1] != "rwsem":
        return cause
    for name in reversed(kernel):
        if _INFRA.match(name) or _LOCK_FUNCS.search(name):
            continue
        return ("lock", "mmap_lock") if _MM_CALLS.match(name) else cause
    return cause


# the waker named for a queued wake-up (queued_wakeup): not the idle task sched_wakeup shows
QUEUED_WAKER = "(another CPU)"
# a wait its waker's stack shows a timer's expiry ended (woken_by_timer): sched_wakeup's
# task is whichever the timer interrupt found on that CPU, not a task the wait was for
TIMER_WAKER_NAME = "(a timer)"


def queued_wakeup(waker, waker_stack: tuple) -> bool:
    """A wake-up the waker's CPU queued for the target's (ttwu_queue: the target CPU was
    idle): the kernel runs it there, from the IPI, so sched_wakeup's task is that CPU's idle
    task and its stack ``sched_ttwu_pending``'s, not the waker's. The trace does not say who
    woke the thread (sched_waking would)."""
    return waker.tid == 0 and any(
        f.kind == KERNEL and f.name == "sched_ttwu_pending" for f in waker_stack)


def woken_by_timer(waker_stack: tuple) -> bool:
    return any(f.kind == KERNEL and _TIMER.match(f.name.split(".", 1)[0]) for f in waker_stack)


# a wait ended from an interrupt (a disk's or a NIC's completion, run in the interrupt or
# in the softirq at its exit): sched_wakeup's task is whichever task the interrupt found on
# that CPU -- a CPU hog beside an fsync loop "woke" it -- not one the wait was for
INTERRUPT_WAKER_NAME = "(an interrupt)"
_INTERRUPT = re.compile(r"^(asm_common_interrupt|common_interrupt|asm_sysvec_\w+|sysvec_\w+|"
                        r"gic_handle_irq|handle_arch_irq|el[01]h?_64_irq(_handler)?|el[01]_irq)$")


def woken_in_interrupt(waker_stack: tuple) -> bool:
    return any(f.kind == KERNEL and _INTERRUPT.match(f.name) for f in waker_stack)


def refine(cause: tuple, waker_stack: tuple, waker_cause: tuple | None) -> tuple[str, str]:
    """The cause of a wait from both ends: ``cause`` from its blocking stack, the waker's
    stack, and ``waker_cause``, the cause of the waker's own last wait (None if unknown)."""
    for base, signal, new_cause, label in WAKER_RULES:
        if cause[0] != base:
            continue
        if signal == "timer" and woken_by_timer(waker_stack):
            return new_cause, label
        if signal == "idle-waker" and waker_cause is not None and waker_cause[0] == "poll/idle":
            return new_cause, label
    return cause


class Classifier:
    """classify() with a cache keyed by the stack tuple."""

    def __init__(self):
        self._cache: dict = {}
        self._timer: dict = {}

    def __call__(self, stack: tuple) -> tuple[str, str]:
        got = self._cache.get(stack)
        if got is None:
            got = self._cache[stack] = classify(stack)
        return got

    def period(self, stack: tuple, waker_stack: tuple, waker_cause) -> tuple[str, str]:
        cause = self(stack)
        if cause[0] != "lock":
            return cause
        return refine(cause, waker_stack, waker_cause)
