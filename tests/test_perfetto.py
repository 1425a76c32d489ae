"""--to perfetto (issue 41): the sched events as a native Perfetto trace, written with
Perfetto's published protos. Perfetto's own tools cannot run here (its trace processor
downloads a binary), so the file is read back with the same protos and every event and
timestamp is compared with the perf script text, read by a regex of this test's own."""
from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

FIX = Path(__file__).parent / "fixtures" / "recorded"
INPUTS = [FIX / "victim_a_1" / "victim_a_1.perf-script.txt.gz",
          FIX / "critical" / "uds_lock" / "uds_lock.perf-script.txt.gz"]

HEAD = re.compile(r"^\s*(.+?)\s+(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(?:\d+\s+)?sched:(sched_\w+):\s*(.*)$")
SWITCH = re.compile(r"prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> "
                    r"next_comm=(.*) next_pid=(\d+) next_prio=\d+")
WAKE = re.compile(r"comm=(.*) pid=(\d+) prio=\d+(?: success=\d+)? target_cpu=(\d+)")
BITS = {"R": 0, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128, "R+": 256}


def expected(path: Path) -> list:
    out = []
    for line in gzip.open(path, "rt", errors="replace"):
        m = HEAD.match(line)
        if not m:
            continue
        comm, tid, cpu, sec, frac, event, payload = m.groups()
        t = int(sec) * 10**9 + int(frac.ljust(9, "0"))
        if event == "sched_switch":
            s = SWITCH.match(payload)
            state = s.group(3)
            bits = BITS[state] if state in BITS else sum(BITS.get(c, 0) for c in set(state.replace("|", "")))
            running = int(tid) if int(tid) >= 0 else int(s.group(2))   # -1: an exiting thread
            out.append((t, int(cpu), running, "switch", s.group(1), int(s.group(2)), bits,
                        s.group(4), int(s.group(5))))
        elif event in ("sched_wakeup", "sched_wakeup_new", "sched_waking"):
            w = WAKE.match(payload)
            out.append((t, int(cpu), int(tid), event, w.group(1), int(w.group(2))))
    return sorted(out)


def exported(data: bytes) -> list:
    trace = pb.Trace()
    trace.ParseFromString(data)
    out = []
    for p in trace.packet:
        if not p.HasField("ftrace_events"):
            continue
        cpu = p.ftrace_events.cpu
        for e in p.ftrace_events.event:
            kind = e.WhichOneof("event")
            if kind == "sched_switch":
                s = e.sched_switch
                out.append((e.timestamp, cpu, e.pid, "switch", s.prev_comm, s.prev_pid, s.prev_state,
                            s.next_comm, s.next_pid))
            else:
                w = getattr(e, kind)
                out.append((e.timestamp, cpu, e.pid, kind, w.comm, w.pid))
    return sorted(out)


def export(path: Path, tmp: Path) -> bytes:
    out = tmp / "t.perfetto-trace"
    p = subprocess.run([sys.executable, "-m", "offconv", str(path), "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out.read_bytes()


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.parent.name)
def test_every_sched_event_round_trips(path, tmp_path):
    want = expected(path)
    got = exported(export(path, tmp_path))
    assert len(want) > 1000
    assert got == want


def test_the_trace_names_threads_and_is_deterministic(tmp_path):
    data = export(INPUTS[0], tmp_path)
    trace = pb.Trace()
    trace.ParseFromString(data)
    names = {t.tid: t.name for p in trace.packet if p.HasField("process_tree") for t in p.process_tree.threads}
    assert names[19944] == "victim-main" and names[19945] == "lockholder"
    assert any(p.system_info.utsname.sysname == "Linux" for p in trace.packet)
    # per CPU, the bundles are in time order
    for p in trace.packet:
        ts = [e.timestamp for e in p.ftrace_events.event]
        assert ts == sorted(ts)
    assert export(INPUTS[0], tmp_path) == data


def test_an_input_without_sched_events_is_one_line(tmp_path):
    f = tmp_path / "x.folded"
    f.write_text("main;work 10\n")
    p = subprocess.run([sys.executable, "-m", "offconv", str(f), "--to", "perfetto", "-o",
                        str(tmp_path / "x.pftrace")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "no sched events" in p.stderr
    assert not (tmp_path / "x.pftrace").exists()
