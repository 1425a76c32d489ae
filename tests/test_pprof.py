"""pprof output: decoded back with the protobuf package (tables, ids, sample types,
values, labels against the profile), deterministic bytes, hostile names, the CLI
suffixes and binary stdout, and `go tool pprof -top`/`-traces` on a real recording
agreeing with offconv's folded output stack by stack."""
from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offconv.model import registry as formats
from offconv.run import pipeline
from offconv.model.errors import OffconvError
from offconv.model.records import STATE, THREAD, Frame, Profile, Task, thread_frame
from offconv.model.options import AggregateOptions, Options
from offconv.outputs.proto import profile_pb2
from offconv.outputs import pprof

ROOT = Path(__file__).parent.parent
FIX = Path(__file__).parent / "fixtures"
VICTIM = FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"
LOCK = FIX / "recorded" / "verdict" / "lock_plus_oversub" / "lock_plus_oversub.perf-script.txt.gz"
ON_CPU = FIX / "flamegraph-test" / "perf-cycles-instructions-01.txt"


def load(path, **agg) -> Profile:
    fmt = formats.output_format("pprof")
    return pipeline.load([str(path)], Options(aggregate=AggregateOptions(**agg)),
                         state_split_default=fmt.state_split)


def encode(p: Profile, opts=None) -> bytes:
    buf = io.BytesIO()
    pprof.render(p, buf, opts or Options())
    return buf.getvalue()


def decode(data: bytes):
    msg = profile_pb2.Profile()
    msg.ParseFromString(gzip.decompress(data))
    return msg


def tables(msg):
    s = msg.string_table
    funcs = {f.id: f for f in msg.function}
    locs = {loc.id: loc for loc in msg.location}
    maps = {m.id: m for m in msg.mapping}
    return s, funcs, locs, maps


def stacks(msg) -> dict:
    """(root-first names, labels) -> values, as a reader of the format sees them."""
    s, funcs, locs, _ = tables(msg)
    out = {}
    for smp in msg.sample:
        names = tuple(s[funcs[locs[i].line[0].function_id].name] for i in reversed(smp.location_id))
        labels = tuple((s[lb.key], s[lb.str] if lb.str else lb.num) for lb in smp.label)
        out[(names, labels)] = list(smp.value)
    return out


# -- decoded with protobuf ------------------------------------------------------------

def test_tables_are_well_formed():
    msg = decode(encode(load(VICTIM)))
    s, funcs, locs, maps = tables(msg)
    assert s[0] == "" and len(set(s)) == len(s)
    for table in (msg.function, msg.location, msg.mapping):
        ids = [x.id for x in table]
        assert ids == list(range(1, len(ids) + 1))
    assert len(msg.sample_type) == 3
    for smp in msg.sample:
        assert len(smp.value) == len(msg.sample_type)
        assert all(i in locs for i in smp.location_id)
    for loc in msg.location:
        assert len(loc.line) == 1 and loc.line[0].function_id in funcs
        assert loc.mapping_id == 0 or loc.mapping_id in maps
    assert {s[m.filename] for m in maps.values()} >= {"[kernel.kallsyms]"}
    # one location per distinct (display name, kind, module)
    keys = [(s[funcs[loc.line[0].function_id].name], loc.mapping_id) for loc in msg.location]
    assert len(keys) >= len(set(keys))


def test_sample_types_values_and_labels_match_the_profile():
    p = load(VICTIM)
    msg = decode(encode(p))
    s = msg.string_table
    assert [(s[t.type], s[t.unit]) for t in msg.sample_type] == [
        ("offcpu", "nanoseconds"), ("blocked", "nanoseconds"), ("runqueue", "nanoseconds")]
    assert s[msg.default_sample_type] == "offcpu"
    assert msg.duration_nanos == p.analysis.last_ns - p.analysis.first_ns
    assert msg.time_nanos == 0       # perf script has no wall-clock time
    totals = [sum(smp.value[i] for smp in msg.sample) for i in range(3)]
    assert totals[0] == totals[1] + totals[2] == p.total() * 1000
    blocked = sum(w for k, w in p.samples.items() if k[1].name.startswith("[blocked "))
    assert totals[1] == blocked * 1000
    states = set()
    for (names, labels), v in stacks(msg).items():
        lab = dict(labels)
        assert names[0] == lab["thread"]                 # the thread is the root frame
        assert not any(n.startswith(("[blocked ", "[run queue]", "[preempted]")) for n in names)
        states.add(lab["state"])
        if lab["state"] in ("runqueue", "preempted"):
            assert v[1] == 0 and v[0] == v[2]
        else:
            assert v[2] == 0 and v[0] == v[1]
        assert isinstance(lab["tid"], int) and "pid" not in lab  # default perf script fields
    assert {"S", "runqueue", "preempted"} <= states


def test_pid_label_when_the_input_has_pids():
    msg = decode(encode(load(VICTIM.with_name("e2e_victim_a_small.perf-script-F.txt"))))
    labs = [dict(lb) for _, lb in stacks(msg)]
    # tasks known only from a switch payload (next_pid is a tid) carry no pid
    assert 24685 in {d.get("pid") for d in labs if d["thread"] in ("victim-main", "lockholder")}
    assert all(isinstance(d["pid"], int) for d in labs if "pid" in d)


def test_without_the_split_and_in_other_modes_one_sample_type():
    for agg, name in (({"state_split": False}, "offcpu"), ({"mode": "blocked"}, "blocked"),
                      ({"mode": "runq"}, "runqueue"), ({"mode": "wakeup"}, "wakeup")):
        p = load(VICTIM, **agg)
        msg = decode(encode(p))
        s = msg.string_table
        assert [(s[t.type], s[t.unit]) for t in msg.sample_type] == [(name, "nanoseconds")], agg
        assert sum(smp.value[0] for smp in msg.sample) == p.total() * 1000
        assert all(s[lb.key] != "state" for smp in msg.sample for lb in smp.label)


def test_oncpu_samples_count():
    p = pipeline.load([str(ON_CPU)], Options())
    msg = decode(encode(p))
    s = msg.string_table
    assert [(s[t.type], s[t.unit]) for t in msg.sample_type] == [("samples", "count")]
    assert sum(smp.value[0] for smp in msg.sample) == p.total()


def test_oncpu_periods_of_a_clock_event_are_cpu_nanoseconds():
    """perf printed cpu-clock's period (10101010 ns at -F 99): the weights are CPU time."""
    dd = FIX / "flamegraph-test" / "perf-dd-stacks-01.txt"
    periods = [int(m.group(1)) for m in
               re.finditer(r"^\S.*?\s(\d+) cpu-clock:", dd.read_text(), re.M)]
    assert periods and set(periods) != {1}
    p = pipeline.load([str(dd)], Options())
    msg = decode(encode(p))
    s = msg.string_table
    assert [(s[t.type], s[t.unit]) for t in msg.sample_type] == [("cpu", "nanoseconds")]
    assert sum(smp.value[0] for smp in msg.sample) == sum(periods) == p.total()


def test_hostile_names_round_trip():
    names = ['a"b', "back\\slash", "ctl\x01\x1f\x7f", "</script>", "nl\nx", "\u00e9\U0001F600", ""]
    task = Task("we;ird comm", 7, 8)
    samples = {(thread_frame(task), Frame(n, f"/lib/{n}.so"), Frame("leaf", "", "kernel")): i + 1
               for i, n in enumerate(names)}
    msg = decode(encode(Profile(unit="us", mode="offcpu", samples=samples)))
    got = {names_[1] for names_, _ in stacks(msg)}
    assert got == set(names)
    s = msg.string_table
    assert {s[m.filename] for m in msg.mapping} == {f"/lib/{n}.so" for n in names}
    assert {s[lb.str] for smp in msg.sample for lb in smp.label if s[lb.key] == "thread"} \
        == {"we;ird comm"}


def test_empty_profile_is_an_error():
    with pytest.raises(OffconvError, match="nothing to export"):
        encode(Profile())


def test_bytes_are_deterministic():
    a, b = encode(load(VICTIM)), encode(load(VICTIM))
    assert a == b
    assert a[:2] == b"\x1f\x8b" and a[4:8] == b"\0\0\0\0"   # gzip, mtime 0


# -- CLI ------------------------------------------------------------------------------------

def run(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "offconv", *args], capture_output=True,
                          env=env, cwd=ROOT, **kw)


def test_cli_suffixes_and_binary_stdout(tmp_path):
    r = run(str(VICTIM), "--to", "pprof")
    assert r.returncode == 0, r.stderr
    ref = r.stdout
    assert decode(ref).sample
    for name in ("x.pb.gz", "x.pprof"):
        r = run(str(VICTIM), "-o", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / name).read_bytes() == ref


def test_cli_merges_inputs(tmp_path):
    out = tmp_path / "fleet.pb.gz"
    r = run(str(VICTIM), str(LOCK), "-o", str(out))
    assert r.returncode == 0, r.stderr
    one = sum(smp.value[0] for smp in decode(run(str(VICTIM), "--to", "pprof").stdout).sample)
    two = sum(smp.value[0] for smp in decode(run(str(LOCK), "--to", "pprof").stdout).sample)
    # merged: each input with its own interval state, so the totals add up
    assert sum(smp.value[0] for smp in decode(out.read_bytes()).sample) == one + two


# -- go tool pprof ------------------------------------------------------------------------

STATE_FRAME = {"runqueue": "[run queue]", "preempted": "[preempted]"}


def parse_traces(text: str) -> dict:
    """`go tool pprof -traces -unit=ns` -> {root-first folded stack with the state frame: ns}."""
    out: dict = {}
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        labels, frames, value = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            m = re.match(r"^\s*(\w+):\s+(.*)$", line)
            if m and value is None and not re.match(r"^\s*\d+ns\s", line):
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r"^\s*(\d+)ns\s+(.*)$", line)
            if m and value is None:
                value = int(m.group(1))
                frames.append(m.group(2))
            elif value is not None:
                frames.append(line.strip())
        if value is None:
            continue
        frames.reverse()
        state = labels.get("state")
        if state:
            frames.insert(1, STATE_FRAME.get(state, f"[blocked {state}]"))
        key = ";".join(frames)
        out[key] = out.get(key, 0) + value
    return out


@pytest.mark.skipif(shutil.which("go") is None,
                    reason="go is not installed (apt-get install golang-go; .ci/run does)")
@pytest.mark.parametrize("path", [VICTIM, LOCK], ids=lambda p: p.name.split(".")[0])
def test_go_tool_pprof_agrees_with_folded(tmp_path, path):
    out = tmp_path / "x.pb.gz"
    assert run(str(path), "-o", str(out)).returncode == 0
    folded = run(str(path), "--state-split", text=True)
    assert folded.returncode == 0
    want = {}
    for line in folded.stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        want[stack] = int(n) * 1000
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    traces = subprocess.run(["go", "tool", "pprof", "-traces", "-unit=ns", str(out)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert traces.returncode == 0, traces.stderr
    got = parse_traces(traces.stdout)
    # same stacks, same totals, stack by stack
    assert got == want
    top = subprocess.run(["go", "tool", "pprof", "-top", "-unit=ns", str(out)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert top.returncode == 0, top.stderr
    m = re.search(r"Total samples = (\d+)ns", top.stdout)
    assert m and int(m.group(1)) == sum(want.values())
    # -top's flat time per leaf function equals the folded leaves' sums
    leaves: dict = {}
    for stack, ns in want.items():
        parts = stack.split(";")
        if len(parts) > 1 and parts[1] in ("[run queue]", "[preempted]") \
                or len(parts) > 1 and parts[1].startswith("[blocked "):
            del parts[1]                   # in pprof a label, not a frame
        leaves[parts[-1]] = leaves.get(parts[-1], 0) + ns
    top_all = subprocess.run(["go", "tool", "pprof", "-top", "-unit=ns", "-nodecount=100000",
                              "-nodefraction=0", str(out)],
                             capture_output=True, text=True, env=env, timeout=300)
    flat: dict = {}
    for line in top_all.stdout.splitlines():
        m = re.match(r"^\s*(\d+)(?:ns)?\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+(.*)$", line)
        if m and int(m.group(1)):
            flat[m.group(2)] = flat.get(m.group(2), 0) + int(m.group(1))
    assert flat == {k: v for k, v in leaves.items() if v}
