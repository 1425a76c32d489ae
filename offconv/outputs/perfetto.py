"""--to perfetto: the sched events as a native Perfetto trace (ui.perfetto.dev opens it and
draws its own thread states, wake-ups and critical path), written with Perfetto's published
trace protos (the PyPI package ``perfetto``: perfetto_trace_pb2; ``pip install
'offconv[perfetto]'``).

The trace: a SystemInfo packet (Linux, kernel 6.1: how prev_state's bits are read), a
ProcessTree packet naming every thread seen (its last name; a thread's process is its own
tid where the input has no pid), then per CPU FtraceEventBundle packets of up to
BUNDLE events in time order: sched_switch (prev_state as the kernel's TASK_* bits),
sched_wakeup, sched_wakeup_new and sched_waking, each event's ``pid`` the task running on
that CPU (a wake-up's ``target_cpu`` is the CPU its event was recorded on: perf script's
text does not keep the field apart).
Deterministic: the same input gives the same bytes."""
from __future__ import annotations

from typing import BinaryIO

from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat
from offconv.model.records import SWITCH, WAKE, Profile

BUNDLE = 1000
SEQUENCE_ID = 1
# prev_state letters -> the kernel's task state bits (include/linux/sched.h, 6.x: TASK_REPORT_IDLE
# 0x80, TASK_REPORT_MAX 0x100 is "R+", a preemption)
STATE_BITS = {"R": 0, "S": 0x1, "D": 0x2, "T": 0x4, "t": 0x8, "X": 0x10, "Z": 0x20, "P": 0x40,
              "I": 0x80, "R+": 0x100}


def state_bits(state: str) -> int:
    """``D|K``, ``R+``, ``S``... as bits (letters it does not know count as 0)."""
    if state in STATE_BITS:
        return STATE_BITS[state]
    bits = 0
    for part in state.replace("+", "").split("|"):
        for c in part:
            bits |= STATE_BITS.get(c, 0)
    return bits


def _pb():
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError:
        raise OffconvError("--to perfetto needs Perfetto's trace protos: pip install "
                           "'offconv[perfetto]' (the PyPI package perfetto)") from None
    return perfetto_trace_pb2


def build(profile: Profile):
    """The Trace message of ``profile.events``."""
    pb = _pb()
    events = profile.events
    if not events:
        raise OffconvError("nothing to export: no sched events (sched_switch, sched_wakeup) "
                           "in the input")
    trace = pb.Trace()
    info = trace.packet.add()
    info.trusted_packet_sequence_id = SEQUENCE_ID
    info.system_info.utsname.sysname = "Linux"
    info.system_info.utsname.release = "6.1.0"
    names: dict = {}
    for ev in events:
        for tid, comm in ((ev[3], ev[4]), (ev[5], ev[6]), (ev[8], ev[9]), (ev[10], ev[11])):
            if tid is not None and tid.__class__ is int and tid > 0 and comm:
                names[tid] = comm
    tree = trace.packet.add()
    tree.trusted_packet_sequence_id = SEQUENCE_ID
    for tid in sorted(names):
        tree.process_tree.threads.add(tid=tid, tgid=tid, name=names[tid])
    by_cpu: dict = {}
    for ev in sorted(events, key=lambda e: (e[0], -1 if e[1] is None else e[1])):
        by_cpu.setdefault(ev[1] if ev[1] is not None else 0, []).append(ev)
    for cpu in sorted(by_cpu):
        evs = by_cpu[cpu]
        for i in range(0, len(evs), BUNDLE):
            pk = trace.packet.add()
            pk.trusted_packet_sequence_id = SEQUENCE_ID
            bundle = pk.ftrace_events
            bundle.cpu = cpu
            for (t, _cpu, kind, htid, _hcomm, ptid, pcomm, pstate, ntid, ncomm, ttid, tcomm,
                 new, name) in evs[i:i + BUNDLE]:
                e = bundle.event.add()
                e.timestamp = t
                # (perf's header says -1 for an exiting thread's last switch-out: the task
                # running is its prev)
                e.pid = (htid if htid.__class__ is int and htid >= 0 else
                         ptid or 0 if kind == SWITCH else 0)
                if kind == SWITCH:
                    s = e.sched_switch
                    s.prev_comm, s.prev_pid, s.prev_prio = pcomm, ptid or 0, 120
                    s.prev_state = state_bits(pstate)
                    s.next_comm, s.next_pid, s.next_prio = ncomm, ntid or 0, 120
                elif kind == WAKE:
                    w = (e.sched_wakeup_new if new else
                         e.sched_waking if name.endswith("sched_waking") else e.sched_wakeup)
                    w.comm, w.pid, w.prio, w.success, w.target_cpu = tcomm, ttid or 0, 120, 1, cpu
    return trace


def render(profile: Profile, out: BinaryIO, opts=None) -> None:
    out.write(build(profile).SerializeToString(deterministic=True))


FORMAT = OutputFormat(name="perfetto", suffixes=(".perfetto-trace", ".pftrace"), render=render,
                      binary=True, ahead=("events",),
                      description="a Perfetto trace (ui.perfetto.dev) of the sched events")
