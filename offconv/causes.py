"""Causes of blocked time, as data: which rule a switch-out stack matches.

A page-fault frame anywhere makes it ``paging``; otherwise the leaf-most kernel frame
that is not scheduler plumbing (``__schedule``, ``schedule``, ``schedule_timeout``, ...)
and matches a rule decides (a kworker idling in ``worker_thread`` is ``poll/idle``, one
in ``io_schedule`` under ``worker_thread`` is ``disk``); nothing matched: ``other``.
"""
from __future__ import annotations

import re

from .model import KERNEL

CAUSES = ("disk", "lock", "network", "poll/idle", "child", "sleep", "paging", "other")
IDLE_CAUSES = frozenset(("poll/idle", "child"))

PAGING = r"page_fault|handle_mm_fault|^__do_fault$|^do_fault$|filemap_fault|" \
         r"do_swap_page|handle_userfault|do_anonymous_page"
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
    ("poll/idle", "pipe", r"^(pipe_read|pipe_wait\w*)$"),
    ("poll/idle", "signal", r"^(do_sigtimedwait|sigsuspend|__x64_sys_pause|__do_sys_pause|"
     r"n_tty_read|inotify_read|eventfd_read)$"),
    ("child", "wait", r"^(do_wait|kernel_wait4?|__do_sys_wait4|__x64_sys_wait4|kernel_waitid)$"),
    ("child", "vfork", r"^(kernel_clone|_do_fork|__do_sys_vfork|__do_sys_clone3?)$"),
    ("disk", "fsync", r"fsync|sync_file|blkdev_issue_flush|jbd2"),
    ("disk", "io", r"io_schedule|^blk_|^bio_|submit_bio|folio_wait|wait_on_page|__lock_page|"
     r"wait_on_buffer|^__?lock_buffer|nvme|^filemap_|^ext4_|^xfs_|^btrfs_"),
    ("network", "socket", r"^(sk_|sock_|tcp_|inet_|udp_|unix_|__skb_|skb_recv|__sys_recv|"
     r"__sys_send|__sys_accept|__sys_connect|netlink)"),
    ("lock", "futex", r"futex"),
    ("lock", "mutex", r"mutex"),
    ("lock", "rwsem", r"rwsem|^down_read|^down_write|^down$|^__down|percpu_down"),
    ("sleep", "nanosleep", r"nanosleep|hrtimer_sleep|^msleep|^usleep|^ssleep"),
)

_PAGING = re.compile(PAGING)
_INFRA = re.compile(INFRA)
_COMPILED = [(c, label, re.compile(rx)) for c, label, rx in RULES]


def classify(stack: tuple) -> tuple[str, str]:
    """(cause, label) of a switch-out stack (root-first tuple of Frames)."""
    kernel = [f.name.split(".", 1)[0] for f in stack if f.kind == KERNEL]
    if not kernel:
        return "other", ""
    for name in kernel:
        if _PAGING.search(name):
            return "paging", "fault"
    for name in reversed(kernel):
        if _INFRA.match(name):
            continue
        for cause, label, rx in _COMPILED:
            if rx.search(name):
                return cause, label
    return "other", ""


class Classifier:
    """classify() with a cache keyed by the stack tuple."""

    def __init__(self):
        self._cache: dict = {}

    def __call__(self, stack: tuple) -> tuple[str, str]:
        got = self._cache.get(stack)
        if got is None:
            got = self._cache[stack] = classify(stack)
        return got
