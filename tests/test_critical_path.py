"""The wake-up critical path (offconv.sched.critical, issue 40): each blocked interval of a
thread is attributed to what its waker did meanwhile, followed hop by hop to a root, and
the pieces add up to the interval."""
from __future__ import annotations

from offconv.model.records import KERNEL, Frame, OnCpu, Period, Task
from offconv.sched import critical
from offconv.sched.critical import Lanes, critical_path, root_text

CLIENT = Task("client", 10, 10)
SERVER = Task("server", 20, 20)
JBD2 = Task("jbd2/sda1-8", 300, 300)
HOLDER = Task("holder", 30, 30)


def k(*names):
    return tuple(Frame(n, "[kernel.kallsyms]", KERNEL) for n in names)


RECV = k("entry_SYSCALL_64", "__sys_recvfrom", "unix_stream_read_generic", "schedule")
FSYNC = k("entry_SYSCALL_64", "do_fsync", "jbd2_log_wait_commit", "schedule")
FUTEX = k("entry_SYSCALL_64", "futex_wait", "schedule")
NANOSLEEP = k("entry_SYSCALL_64", "hrtimer_nanosleep", "do_nanosleep", "schedule")
TIMER = k("hrtimer_interrupt", "hrtimer_wakeup", "try_to_wake_up")


def lanes_of(*recs) -> Lanes:
    lanes = Lanes()
    for r in recs:
        (lanes.oncpu if isinstance(r, OnCpu) else lanes.period)(r)
    return lanes


def chains(out: dict) -> dict:
    return {tuple((h.comm, h.what, h.root) for h in c): ns for c, ns in out.items()}


def test_a_wait_on_a_server_that_waits_on_its_disk_ends_at_the_disk():
    lanes = lanes_of(
        OnCpu(CLIENT, 0, 10),
        Period(CLIENT, "S", 10, 110, 112, RECV, SERVER, ()),
        OnCpu(SERVER, 0, 20),
        Period(SERVER, "D", 20, 95, 100, FSYNC, JBD2, ()),
        OnCpu(SERVER, 100, 110),
    )
    out = chains(critical_path(lanes, 10))
    assert out == {
        (("client", "on-CPU", ""),): 10,
        (("client", "run queue", ""),): 2,
        (("client", "blocked", ""), ("server", "on-CPU", "")): 10 + 10,
        (("client", "blocked", ""), ("server", "blocked", "disk I/O")): 75,
        (("client", "blocked", ""), ("server", "run queue", "")): 5,
    }
    # time is conserved: the pieces of the blocked interval sum to its 100 ns
    assert sum(v for c, v in out.items() if c[0][1] == "blocked") == 100


def test_the_chain_follows_a_lock_to_its_holders_sleep():
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 100, 100, RECV, SERVER, ()),
        Period(SERVER, "S", 0, 90, 90, FUTEX, HOLDER, ()),
        OnCpu(SERVER, 90, 100),
        OnCpu(HOLDER, 0, 5),
        Period(HOLDER, "S", 5, 85, 85, NANOSLEEP, Task("swapper/1", 0, 0), TIMER),
        OnCpu(HOLDER, 85, 100),
    )
    out = critical_path(lanes, 10)
    named = chains(out)
    assert named[(("client", "blocked", ""), ("server", "blocked", ""),
                  ("holder", "blocked", "timer"))] == 80
    assert named[(("client", "blocked", ""), ("server", "blocked", ""), ("holder", "on-CPU", ""))] == 10
    assert named[(("client", "blocked", ""), ("server", "on-CPU", ""))] == 10
    longest = next(c for c in out if c[-1].root == critical.ROOT_TIMER)
    assert [h.cause[0] for h in longest[:-1]] == ["local-socket", "lock"]
    assert root_text(longest) == "timer"


def test_a_cycle_and_a_waker_not_seen_are_said_not_followed():
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 100, 100, RECV, SERVER, ()),
        OnCpu(SERVER, 40, 50),
        Period(SERVER, "S", 50, 100, 100, FUTEX, CLIENT, ()),
    )
    out = chains(critical_path(lanes, 10))
    assert out == {
        (("client", "blocked", ""), ("server", "not seen", critical.ROOT_NOT_SEEN)): 40,
        (("client", "blocked", ""), ("server", "on-CPU", "")): 10,
        (("client", "blocked", ""), ("server", "blocked", critical.ROOT_CYCLE)): 50,
    }


def test_the_depth_is_bounded():
    tasks = [Task(f"t{i}", 100 + i, 100 + i) for i in range(20)]
    recs = [Period(tasks[i], "S", 0, 100, 100, FUTEX, tasks[i + 1], ()) for i in range(19)]
    out = critical_path(lanes_of(*recs), 100)
    (chain, ns), = out.items()
    assert ns == 100 and len(chain) == critical.MAX_DEPTH and chain[-1].root == critical.ROOT_DEPTH


def test_a_full_table_stops_and_says_when():
    lanes = Lanes(max_intervals=2)
    for r in (OnCpu(CLIENT, 0, 10), OnCpu(CLIENT, 20, 30), OnCpu(CLIENT, 40, 50)):
        lanes.oncpu(r)
    assert lanes.full and lanes.full_at == 40
    assert sum(critical_path(lanes, 10).values()) == 20


def test_a_unix_socket_is_a_local_peer_and_tcp_is_the_network():
    from offconv.sched.causes import Classifier
    c = Classifier()
    assert c(RECV) == ("local-socket", "unix socket")
    tcp = k("entry_SYSCALL_64", "__sys_recvfrom", "tcp_recvmsg", "sk_wait_data", "schedule")
    assert c(tcp)[0] == "network"


def test_an_interval_with_no_wakeup_seen_is_unattributed_with_the_reason():
    lanes = lanes_of(Period(CLIENT, "S", 0, None, 70, FUTEX, None, ()))
    (chain, ns), = critical_path(lanes, 10).items()
    assert ns == 70 and len(chain) == 1 and chain[0].root == critical.ROOT_NO_WAKEUP
    assert chain[0].root in critical.UNATTRIBUTED


# a queued wake-up: sched_wakeup runs on the target CPU, from the IPI, in its idle task
IDLE = Task("swapper/0", 0, 0)
QUEUED = k("flush_smp_call_function_queue", "sched_ttwu_pending", "ttwu_do_activate")


def test_a_queued_wake_up_is_given_to_the_one_thread_then_on_another_cpu():
    """The waker of a queued wake-up is not in the trace; the one thread that ran on any
    CPU within QUEUED_WINDOW_NS before it (the server, on CPU 1, switched out 20 ns before
    the IPI's wake-up) is taken as the waker, and the hop says so."""
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 100, 100, RECV, IDLE, QUEUED),
        OnCpu(SERVER, 0, 30, 1),
        Period(SERVER, "D", 30, 70, 70, FSYNC, JBD2, ()),
        OnCpu(SERVER, 70, 80, 1),
    )
    out = critical_path(lanes, 10)
    assert chains(out) == {
        (("client", "blocked", ""), ("server", "on-CPU", "")): 40,
        (("client", "blocked", ""), ("server", "blocked", "disk I/O")): 40,
        (("client", "blocked", ""), ("server", "not seen", critical.ROOT_NOT_SEEN)): 20,
    }
    assert all(c[0].inferred for c in out)


def test_a_queued_wake_up_with_two_threads_on_other_cpus_is_not_guessed():
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 100, 100, RECV, IDLE, QUEUED),
        OnCpu(SERVER, 0, 95, 1),
        OnCpu(HOLDER, 0, 99, 2),
    )
    out = critical_path(lanes, 10)
    assert chains(out) == {(("client", "blocked", critical.ROOT_QUEUED),): 100}
    assert not any(h.inferred for c in out for h in c)
    # the window: a thread that last ran longer ago than it is not a candidate
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 1_000_000, 1_000_000, RECV, IDLE, QUEUED),
        OnCpu(SERVER, 0, 999_990, 1),
        OnCpu(HOLDER, 0, 1_000_000 - critical.QUEUED_WINDOW_NS - 1, 2),
    )
    assert chains(critical_path(lanes, 10))[(("client", "blocked", ""), ("server", "on-CPU", ""))] == 999_990


def test_a_queued_wake_up_of_a_sleep_is_its_timer():
    lanes = lanes_of(
        Period(CLIENT, "S", 0, 100, 100, NANOSLEEP, IDLE, QUEUED),
        OnCpu(SERVER, 0, 100, 1),   # running elsewhere: not the sleep's waker
    )
    assert chains(critical_path(lanes, 10)) == {(("client", "blocked", critical.ROOT_TIMER),): 100}
