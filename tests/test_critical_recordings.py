"""Issue 40's eight recordings, each with its expected answer written here before it was
recorded: the verdict's class, the thread it names and where the wait goes (the wake-up
critical path's root and the thread that holds the time).

Every case is checked twice: on the recording kept in tests/fixtures/recorded/critical/
(always), and on a fresh recording the test makes with perf where the machine allows it
(root, perf, and for the quota case a cgroup v1 cpu controller); the workloads and the
recorder are tests/fixtures/recorded/critical/workloads.py."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from offconv.analysis.summary import report_data
from offconv.model.options import Options, ReportOptions
from offconv.run import pipeline

HERE = Path(__file__).parent / "fixtures" / "recorded" / "critical"

# The expected answers (written 2026-12-07 before any of these was recorded):
#   answer      the verdict's class
#   thread      the comm the verdict's cause is about (None: any of the workload's)
#   cause       that thread's top cause
#   holder      the thread the wait goes to (the critical root's holder), holder_state
#               its state there, root the root it ends in
#   says        words the verdict's sentence must contain; must_not_say: must not
EXPECTED = {
    # a client of a local server over a Unix socket; the server fsyncs every request
    "unix_fsync": dict(answer="waiting", thread="uds-client", cause="local-socket",
                      holder="fsync-server", holder_state="blocked", root="disk I/O",
                      says=["fsync-server", "batched syncs"], must_not_say=["network"]),
    # the client's server hands every request to a thread that waits on a lock; the lock's
    # holder sleeps 20 ms inside it
    "uds_lock": dict(answer="waiting", thread="uds-client", cause="local-socket",
                     holder="lock-sleeper", holder_state="blocked", root="timer",
                     hops=["uds-client", "srv-handler", "lock-sleeper"],
                     says=["lock-sleeper", "srv-handler"], must_not_say=["network"]),
    # a shell (dash under the name cpu-shell) runs three CPU-bound children in turn
    "shell_cpu_children": dict(answer="on-cpu", thread=None, cause=None,
                               # (written "3 processes" first; the recording's perf script
                               # text has no pid field, so offconv cannot tell processes
                               # from threads, and says "tasks")
                               says=["cpu-child (3 tasks)"], must_not_say=["add cores"],
                               shell="cpu-shell", shell_cause="child", shell_holder="cpu-child",
                               shell_holder_state="on-CPU"),
    # a producer writes into a pipe faster than a CPU-bound consumer reads: the consumer
    # is the bottleneck stage
    "pipe_consumer": dict(answer="on-cpu", thread=None, cause=None,
                          says=["pipe-consumer"], must_not_say=["add cores"],
                          producer="pipe-producer", producer_holder="pipe-consumer",
                          producer_holder_state="on-CPU"),
    # three spinners pinned to CPU 0 while CPU 1 is idle
    "pinned_spinners": dict(answer="capacity", thread=None, cause=None,
                            says=["affinity"], must_not_say=["add cores"]),
    # one spinner held to 20% of a CPU by a cgroup v1 cpu quota
    "cpu_quota": dict(answer="capacity", thread=None, cause=None,
                      says=["quota"], must_not_say=["add cores", "affinity"]),
    # four pool threads that do their work inside one mutex
    "pool_lock": dict(answer="waiting", thread="pool-worker", cause="lock",
                      holder="pool-worker", holder_state="on-CPU", root="on-CPU",
                      says=["pool-worker"], must_not_say=["add cores"]),
    # a loop driven by a 10 ms timer that computes ~1 ms per tick
    "timer_loop": dict(answer="waiting", thread="tick-loop", cause="sleep",
                       says=["tick-loop"], must_not_say=["add cores"], top_root="timer"),
}

# A recording filtered to one name (scripts/record.sh --comm filt-hog): filt-hog spins on
# CPU 0 beside bg-ticker (another process, 1 ms of work every 5 ms, on CPU 0 too), which
# the filter shows only where it takes or gives back filt-hog's CPU. Written 2026-12-07
# before it was recorded: bg-ticker is left out of the verdict, said so with how much of it
# was seen, and the run-queue share is filt-hog's alone.
FILTERED = dict(name="filtered_hog", workload=["filt-hog"], left_out="bg-ticker",
                left_out_says=["filter", "switches in"], answer="capacity")


def _workloads():
    spec = importlib.util.spec_from_file_location("critical_workloads", HERE / "workloads.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def report(path: Path) -> dict:
    opts = Options(report=ReportOptions())
    return report_data(pipeline.load([str(path)], opts), opts)


def check(name: str, path: Path, fresh: bool = False) -> None:
    exp = EXPECTED[name]
    r = report(path)
    v = r["verdict"]
    text = v["reason"]
    if fresh and exp["answer"] == "waiting" and v["answer"] == "both":
        # A fresh recording shares the machine with whatever else runs (CI's own jobs):
        # its run-queue share is the machine's, not the workload's. unix_fsync's kept
        # recording has 9.2% beside the 10% line, and one CI run read 10.x%: "both" is
        # then the true answer for that recording. The waiting half must still hold.
        assert v["runq_long"] and v["blocked_long"], text
        assert "run-queue" in text or "run queue" in text, text
    else:
        assert v["answer"] == exp["answer"], text
    if exp["thread"]:
        assert v["cause"]["comm"] == exp["thread"], text
        assert v["cause"]["cause"] == exp["cause"], text
    for word in exp["says"]:
        assert word in text, (word, text)
    for word in exp["must_not_say"]:
        assert word not in text, (word, text)
    if "holder" in exp:
        root = v["critical_root"]
        assert root is not None, text
        assert (root["holder"], root["holder_state"], root["root"]) == \
            (exp["holder"], exp["holder_state"], exp["root"]), root
        if exp["holder"] == exp["thread"]:
            assert root["holder_tid"] != v["cause"]["tid"], root
    if "hops" in exp:
        chains = r["critical_path"][0]["chains"]
        assert any([h["comm"] for h in c["hops"]] == exp["hops"] for c in chains[:3]), chains[:3]
    if "top_root" in exp:
        top = r["critical_path"][0]["chains"][0]
        assert top["hops"][-1]["root"] == exp["top_root"] and top["share"] > 0.5, top
    for who, key in (("shell", "shell"), ("producer", "producer")):
        if who in exp:
            sub = _named(path, exp[who])
            assert sub["root"] is not None, sub
            assert (sub["root"]["holder"], sub["root"]["holder_state"]) == \
                (exp[f"{key}_holder"], exp[f"{key}_holder_state"]), sub["root"]
            if f"{key}_cause" in exp:
                first = sub["chains"][0]["hops"][0]
                assert first["cause"][0] == exp[f"{key}_cause"], first


def _named(path: Path, comm: str) -> dict:
    """The critical path of the busiest thread named ``comm`` (report --critical-path)."""
    opts = Options(report=ReportOptions(critical_path=(comm,)))
    r = report_data(pipeline.load([str(path)], opts), opts)
    paths = [p for p in r["critical_path"] if p["comm"] == comm]
    assert paths, f"no critical path for {comm}"
    return max(paths, key=lambda p: (p["wall_us"], -p["tid"]))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_kept_recording(name):
    check(name, HERE / name / f"{name}.perf-script.txt.gz")


def _why_not(name: str) -> str | None:
    if shutil.which("perf") is None:
        return "perf not installed"
    if os.geteuid() != 0:
        return "recording sched tracepoints system-wide needs root"
    if (os.cpu_count() or 1) < 2:
        return "the pinned and pipeline cases need two CPUs"
    return _workloads().cannot_run(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fresh_recording(name, tmp_path):
    why = _why_not(name)
    if why:
        pytest.skip(why)
    text = _workloads().record(name, tmp_path, seconds=2.0)
    check(name, text, fresh=True)


def check_filtered(path: Path) -> None:
    exp = FILTERED
    r = report(path)
    v = r["verdict"]
    assert [w["comm"] for w in v["workload"]] == exp["workload"], v["workload"]
    out = [x for x in v["left_out"] if x["comm"] == exp["left_out"]]
    assert out, v["left_out"]
    for word in exp["left_out_says"]:
        assert all(word in x["reason"] for x in out), out
    assert v["answer"] == exp["answer"], v["reason"]
    # (added after the recording: the filter hides the other CPUs, and the reason says so)
    assert "whether other CPUs sat idle is not seen" in v["reason"], v["reason"]
    hog = [t for t in r["threads"] if t["comm"] == "filt-hog"]
    assert len(hog) == 1
    # the verdict's run-queue share is filt-hog's own: its waits over its wall time
    runq = hog[0]["runq_us"] - hog[0].get("runq_idle_us", 0)
    wall = hog[0]["oncpu_us"] + hog[0]["blocked_us"] + hog[0]["runq_us"]
    assert abs(v["runq_share"] - runq / wall) < 0.02, (v["runq_share"], hog[0])


def test_kept_filtered_recording():
    check_filtered(HERE / FILTERED["name"] / f"{FILTERED['name']}.perf-script.txt.gz")


@pytest.mark.slow
def test_fresh_filtered_recording(tmp_path):
    why = _why_not(FILTERED["name"])
    if why:
        pytest.skip(why)
    check_filtered(_workloads().record(FILTERED["name"], tmp_path, seconds=2.0))
