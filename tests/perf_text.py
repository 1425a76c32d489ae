"""perf script text of synthetic sched traces, event by event (tests of the wall-clock
profile and the timeline): the default fields, a frame per line, a blank line after each."""
from __future__ import annotations

SLEEP = ("__schedule+0x1 ([kernel.kallsyms])", "do_nanosleep+0x1 ([kernel.kallsyms])", "main+0x2 (/bin/w)")
TIMER_WAKE = ("try_to_wake_up+0x1 ([kernel.kallsyms])", "hrtimer_wakeup+0x1 ([kernel.kallsyms])")
FUTEX_WAKE = ("try_to_wake_up+0x1 ([kernel.kallsyms])", "futex_wake+0x1 ([kernel.kallsyms])")


def event(comm, tid, cpu, t_us, what, frames=()):
    head = f"{comm} {tid:5d} [{cpu:03d}] {t_us // 1_000_000}.{t_us % 1_000_000:06d}: {what}\n"
    return head + "".join(f"\t{0xffffffff81000000 + i:x} {f}\n" for i, f in enumerate(frames)) + "\n"


def switch(t, prev, pid, state, nxt, npid, cpu=0, frames=SLEEP):
    return event(prev, pid, cpu, t, f"sched:sched_switch: prev_comm={prev} prev_pid={pid} prev_prio=120 "
                                    f"prev_state={state} ==> next_comm={nxt} next_pid={npid} next_prio=120", frames)


def wake(t, waker, wpid, comm, pid, cpu=0, frames=TIMER_WAKE):
    return event(waker, wpid, cpu, t, f"sched:sched_wakeup: comm={comm} pid={pid} prio=120 "
                                      f"target_cpu={cpu:03d}", frames)
