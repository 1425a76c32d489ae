"""offconv report (text and --json) on stack-only inputs: bcc offcputime/offwaketime -f,
bpftrace stack-keyed maps, perf record --off-cpu, plain folded and on-CPU samples.

Every number is checked against sums computed here from the fixture text, independently
of the parsers."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
PERF_OFFCPU = FIX / "perf-offcpu" / "offcpu-time.txt"
OFFCPUTIME = FIX / "bcc" / "offcputime_-K_-f_5.folded"
OFFWAKETIME = FIX / "bcc" / "offwaketime_-fu_5.folded"
WAKEUPTIME = FIX / "bcc" / "wakeuptime_-f_5.folded"
BT_KSTACK = FIX / "bpftrace" / "bt_offcpu_kstack_1.txt"
BT_KSTACK_COMM = FIX / "bpftrace" / "bt_offcpu_kstack_comm_1.txt"
BT_KSTACK_JSON = FIX / "bpftrace" / "bt_offcpu_kstack_json_1.jsonl"
BT_RUNQLAT = FIX / "bpftrace" / "bt_runqlat_1.txt"
ONCPU = FIX / "flamegraph-test" / "perf-funcab-cmd-01.txt"
ONCPU_GZ = FIX / "flamegraph-test" / "example-perf-stacks.txt.gz"

NULL_LATENCY = {"count": None, "p50_us": None, "p90_us": None, "p99_us": None, "max_us": None}


def run(*args):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "offconv", "report", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def report_json(*args) -> dict:
    r = run("--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def us(ns: int) -> int:
    return (ns + 500) // 1000


# -- independent sums from the fixture text ----------------------------------------------

def perf_offcpu_sums():
    """tid -> (comm, pid, ns) from the perf script header lines (period = ns off CPU)."""
    out: dict = {}
    for line in PERF_OFFCPU.read_text().splitlines():
        m = re.match(r"^(\S.*?)\s+(\d+)/(\d+)\s+\[\d+\]\s+[\d.]+:\s+(\d+)\s+offcpu-time:", line)
        if m:
            comm, pid, tid, period = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            c, p, ns = out.get(tid, (comm, pid, 0))
            out[tid] = (comm, pid, ns + period)
    return out


def folded_lines(path):
    for line in path.read_text().splitlines():
        if line.strip():
            head, _, n = line.rpartition(" ")
            yield head.split(";"), int(n)


def bpftrace_sums(path):
    """comm -> summed value of the `@[stack, comm]: N` entries (text output)."""
    out: dict = {}
    for comm, n in re.findall(r"^, (.*)\]: (\d+)$", path.read_text(), re.M):
        out[comm] = out.get(comm, 0) + int(n)
    return out


# -- perf record --off-cpu ----------------------------------------------------------------

def test_perf_offcpu_totals_threads_and_nulls():
    rep = report_json(PERF_OFFCPU)
    sums = perf_offcpu_sums()
    assert rep["source"] == "stacks" and rep["verdict"]["source"] == "stacks"
    t = rep["totals"]
    assert t["offcpu_us"] == us(sum(ns for _, _, ns in sums.values()))
    # blocked + run queue in one number: neither part, nor on-CPU, is measured
    assert t["blocked_us"] is None and t["runq_us"] is None and t["oncpu_us"] is None
    assert t["runq_preempted_us"] is None
    assert rep["latency"] == {"blocked": NULL_LATENCY, "runq": NULL_LATENCY}
    rows = {r["tid"]: r for r in rep["threads"]}
    assert set(rows) == set(sums)
    for tid, (comm, pid, ns) in sums.items():
        assert (rows[tid]["comm"], rows[tid]["pid"], rows[tid]["offcpu_us"]) == (comm, pid, us(ns))
        assert rows[tid]["runq_us"] is None and rows[tid]["oncpu_us"] is None
    for k, v in t.items():
        assert v is None or isinstance(v, int), k


def test_perf_offcpu_verdict_is_waiting_on_the_lock():
    rep = report_json(PERF_OFFCPU)
    v = rep["verdict"]
    assert v["answer"] == "waiting"
    assert v["runq_long"] is None and v["runq_p99_us"] is None
    assert v["cause"]["cause"] == "lock" and v["cause"]["comm"] == "victim-main"
    futex_ns = sum(int(m) for m in re.findall(
        r"^victim-main .*?(\d+) offcpu-time:\s*\n(?:\t.*\n)*?\t.*futex_do_wait",
        PERF_OFFCPU.read_text(), re.M))
    assert v["cause"]["us"] == us(futex_ns)
    assert "capacity cannot be decided" in v["reason"]
    assert "not measured" in v["reason"] and "assumed" in v["reason"]
    causes = {c["cause"]: c["offcpu_us"] for c in rep["causes"]}
    assert causes["lock"] == us(futex_ns)
    assert all(c["blocked_us"] is None for c in rep["causes"])


def test_perf_offcpu_text_report():
    r = run(PERF_OFFCPU)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Verdict: waiting\n")
    sums = perf_offcpu_sums()
    from offconv.model.units import human_us
    for comm, pid, ns in sums.values():
        assert re.search(rf"^  {re.escape(comm)}\s+{pid}\s+\d+\s+{re.escape(human_us(us(ns)))}",
                         r.stdout, re.M), r.stdout
    assert "Off-CPU time by cause" in r.stdout and "Top stacks" in r.stdout


# -- bcc offcputime -f ------------------------------------------------------------------------

def test_bcc_offcputime_without_unit_is_samples_and_says_give_unit():
    rep = report_json(OFFCPUTIME)
    total = sum(n for _, n in folded_lines(OFFCPUTIME))
    assert rep["totals"]["samples"] == total
    assert all(rep["totals"][k] is None for k in ("blocked_us", "runq_us", "oncpu_us", "offcpu_us"))
    v = rep["verdict"]
    assert v["answer"] == "on-cpu" and v["by_construction"] and v["uncertain"]
    assert "--unit us" in v["reason"]   # its stacks end in schedule(): switch-out stacks


def test_bcc_offcputime_with_unit_us():
    rep = report_json("--unit", "us", OFFCPUTIME)
    per: dict = {}
    for frames, n in folded_lines(OFFCPUTIME):
        per[frames[0]] = per.get(frames[0], 0) + n
    assert rep["totals"]["offcpu_us"] == sum(per.values())
    assert {r["comm"]: r["offcpu_us"] for r in rep["threads"]} == per
    # dd in direct I/O: a disk wait that is all of its time
    v = rep["verdict"]
    assert v["answer"] == "waiting" and v["cause"]["comm"] == "dd" and v["cause"]["cause"] == "disk"
    assert v["cause"]["us"] == per["dd"]
    left = {x["comm"]: x["reason"] for x in v["left_out"]}
    assert left["offcputime"].startswith("idle waits only")    # select() in the tool
    assert any("does not mark kernel frames" in n for n in rep["notes"])
    causes = {c["cause"]: c["offcpu_us"] for c in rep["causes"]}
    assert sum(causes.values()) == sum(per.values())


# -- bcc offwaketime -f -------------------------------------------------------------------------

def test_bcc_offwaketime_threads_and_wakers():
    rep = report_json(OFFWAKETIME)
    per: dict = {}
    wakers: dict = {}
    for frames, n in folded_lines(OFFWAKETIME):
        per[frames[0]] = per.get(frames[0], 0) + n
        if frames[-1]:                      # the waker comm, last (empty: no waker half)
            wakers[frames[-1]] = wakers.get(frames[-1], 0) + n
    assert rep["totals"]["offcpu_us"] == sum(per.values())
    assert {r["comm"]: r["offcpu_us"] for r in rep["threads"]} == per
    top = sorted(wakers.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [(w["comm"], w["us"]) for w in rep["wakers"]] == top
    v = rep["verdict"]
    assert v["answer"] == "waiting" and v["cause"]["comm"] == "cksum"
    assert v["cause"]["cause"] == "disk"
    r = run(OFFWAKETIME)
    assert r.returncode == 0 and "Wakers (the waker's comm" in r.stdout


# -- bpftrace stack maps --------------------------------------------------------------------------

def test_bpftrace_kstack_comm_with_unit_us():
    rep = report_json("--unit", "us", BT_KSTACK_COMM)
    per = bpftrace_sums(BT_KSTACK_COMM)
    assert {r["comm"]: r["offcpu_us"] for r in rep["threads"]} == per
    assert rep["totals"]["offcpu_us"] == sum(per.values())
    assert rep["verdict"]["source"] == "stacks"
    left = {x["comm"]: x["reason"] for x in rep["verdict"]["left_out"]}
    assert left["bpftrace"] == "the recorder itself"


def test_bpftrace_kstack_comm_without_unit_says_give_unit():
    rep = report_json(BT_KSTACK_COMM)
    assert rep["totals"]["samples"] == sum(bpftrace_sums(BT_KSTACK_COMM).values())
    assert "--unit us" in rep["verdict"]["reason"]


def test_bpftrace_kstack_alone_is_one_row():
    rep = report_json(BT_KSTACK)          # @us[kstack]: the unit from the name
    total = sum(int(n) for n in re.findall(r"^\]: (\d+)$", BT_KSTACK.read_text(), re.M))
    assert rep["totals"]["offcpu_us"] == total
    assert [(r["comm"], r["offcpu_us"]) for r in rep["threads"]] == [("(all)", total)]
    assert any("names no thread" in n for n in rep["notes"])


def test_bpftrace_json_stack_map():
    rep = report_json(BT_KSTACK_JSON)
    maps = [json.loads(l) for l in BT_KSTACK_JSON.read_text().splitlines() if l.strip()]
    total = sum(v for m in maps if m.get("type") == "map" for d in m["data"].values()
                for v in d.values())
    assert rep["totals"]["offcpu_us"] == total


def test_kind_blocked_makes_the_weights_blocked_time():
    rep = report_json("--unit", "us", "--kind", "blocked", BT_KSTACK_COMM)
    total = sum(bpftrace_sums(BT_KSTACK_COMM).values())
    assert rep["totals"]["blocked_us"] == total and rep["totals"]["offcpu_us"] is None
    assert sum(c["blocked_us"] for c in rep["causes"]) == total


def test_stacks_and_histograms_of_one_run():
    rep = report_json("--unit", "us", BT_RUNQLAT, BT_KSTACK_COMM)
    assert rep["source"] == "histograms+stacks"
    counts = [int(n) for n in re.findall(r"^\[.*?\)?\]?\s+(\d+) \|", BT_RUNQLAT.read_text(), re.M)]
    assert rep["latency"]["runq"]["count"] == sum(counts)
    assert rep["verdict"]["source"] == "histograms+stacks"
    assert rep["stacks_verdict"]["source"] == "stacks"
    assert rep["totals"]["offcpu_us"] == sum(bpftrace_sums(BT_KSTACK_COMM).values())
    r = run("--unit", "us", BT_RUNQLAT, BT_KSTACK_COMM)
    assert r.returncode == 0 and "From the stacks:" in r.stdout and "Histograms" in r.stdout


# -- on-CPU samples ---------------------------------------------------------------------------------

def test_oncpu_profile_is_on_cpu_by_construction():
    rep = report_json(ONCPU)
    v = rep["verdict"]
    assert v["answer"] == "on-cpu" and v["by_construction"] and not v["uncertain"]
    assert "no off-CPU time in an on-CPU profile" in v["reason"]
    assert "--unit" not in v["reason"]
    n = sum(1 for line in ONCPU.read_text().splitlines() if re.match(r"^\S.*\d+:\s", line))
    assert rep["totals"]["samples"] == n
    assert all(rep["totals"][k] is None for k in ("blocked_us", "runq_us", "oncpu_us", "offcpu_us"))
    assert rep["causes"] == [] and rep["latency"] == {"blocked": NULL_LATENCY, "runq": NULL_LATENCY}
    assert all(s["us"] is None and s["samples"] > 0 for s in rep["top_stacks"])
    r = run(ONCPU)
    assert r.returncode == 0 and "On-CPU profile: " in r.stdout


def test_oncpu_weights_that_are_perf_periods_are_not_called_samples(tmp_path):
    """perf script printed each sample's period (cpu-clock: ns): the sums are periods, as
    stackcollapse-perf.pl's are, and the report says so instead of 'N samples'."""
    head = "{} {} [000] 1.{:06d}:    {} {}: \n\t    4004 {} (/usr/bin/x)\n\n"
    for event, clock in (("cpu-clock:ppp", True), ("cycles:u", False)):
        path = tmp_path / f"{event[:3]}.txt"
        path.write_text(head.format("cc1", 123, 1, 1001001, event, "main+0x4")
                        + head.format("cc1", 123, 2, 1001001, event, "main+0x4")
                        + head.format("sh", 77, 3, 2002002, event, "loop+0x4"))
        rep = report_json(path)
        assert rep["weights"]["event"] == event and rep["weights"]["samples"] == 4004004
        text = run(path).stdout
        name = event.split(":")[0]
        assert f"samples weighted by their {name} period" in text and "4004004 samples" not in text
        assert ("(4 ms on CPU)" in text) == clock
        header = next(line for line in text.splitlines() if line.lstrip().startswith("thread"))
        assert header.split() == ["thread", "pid", "tid", name, "share"]
    unweighted = report_json(ONCPU)["weights"]
    assert unweighted["event"] == "" and f"{unweighted['samples']} samples" in run(ONCPU).stdout


@pytest.mark.parametrize("path", [PERF_OFFCPU, OFFCPUTIME, OFFWAKETIME, WAKEUPTIME, BT_KSTACK,
                                  BT_KSTACK_COMM, BT_KSTACK_JSON, ONCPU, ONCPU_GZ],
                         ids=lambda p: p.name)
def test_every_stack_input_reports_deterministically(path):
    for args in (["--json"], []):
        a, b = run(*args, path), run(*args, path)
        assert a.returncode == 0, a.stderr
        assert a.stdout == b.stdout and a.stdout
    rep = json.loads(run("--json", path).stdout)
    for key in ("verdict", "totals", "threads", "latency", "causes", "top_stacks", "dropped"):
        assert key in rep
    assert rep["verdict"]["answer"] in ("capacity", "waiting", "both", "on-cpu")

    def ints(d, where=""):
        for k, v in d.items() if isinstance(d, dict) else enumerate(d):
            if isinstance(v, (dict, list)):
                ints(v, f"{where}.{k}")
            elif str(k).endswith("_us"):
                assert v is None or type(v) is int, f"{where}.{k} = {v!r}"
    ints(rep)


def test_empty_input_is_a_one_line_error(tmp_path):
    f = tmp_path / "empty.folded"
    f.write_text("# nothing\n")
    r = run(f)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_oncpu_top_stacks_list_a_printed_stack_once(tmp_path):
    """Samples of two threads of one name in the same code print the same stack: the
    report lists it once with both threads' samples (and per thread with --tid)."""
    text = ""
    for tid, n in ((101, 3), (102, 2)):
        for i in range(n):
            text += (f"cc1 {tid} [000] 1.{tid}{i:03d}: 1 cycles:\n"
                     "\t    4005d6 hot (/usr/bin/cc1)\n\t    400600 main (/usr/bin/cc1)\n\n")
    p = tmp_path / "two-threads.txt"
    p.write_text(text)
    d = report_json(p)
    assert [(s["stack"], s["samples"]) for s in d["top_stacks"]] == [("cc1;main;hot", 5)]
    d = report_json("--tid", p)
    assert [(s["stack"], s["samples"]) for s in d["top_stacks"]] == [("cc1-?/101;main;hot", 3),
                                                                     ("cc1-?/102;main;hot", 2)]
