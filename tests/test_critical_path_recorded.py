"""The wake-up critical path on real recordings (issue 40): the chain reaches the thread
that holds the time and the root of its wait, the verdict's advice is about that root,
and the chains of a thread add up to its time in the trace."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from offconv.analysis.summary import report_data
from offconv.model.options import Options, ReportOptions
from offconv.run import pipeline

FIX = Path(__file__).parent / "fixtures" / "recorded"


def report(path: Path, **ropts) -> dict:
    opts = Options(report=ReportOptions(**ropts))
    return report_data(pipeline.load([str(path)], opts), opts)


def test_a_client_of_a_local_server_that_fsyncs_is_sent_to_the_servers_disk():
    """Written down before it was recorded: the client waits on a Unix socket (a local
    peer, not the network), and the root is the server's fsync."""
    d = FIX / "critical" / "unix_fsync"
    exp = json.loads((d / "expected.json").read_text())
    r = report(d / "unix_fsync.perf-script.txt.gz")
    v = r["verdict"]
    assert v["answer"] == exp["answer"]
    assert (v["cause"]["comm"], v["cause"]["cause"]) == (exp["client_comm"], exp["client_first_cause"])
    root = v["critical_root"]
    assert (root["holder"], root["root"], root["first_hop"]) == (exp["root_holder"], exp["root"],
                                                                  exp["server_comm"])
    for word in exp["must_not_say"]:
        assert word not in v["reason"], v["reason"]
    assert "fsync-server" in v["reason"] and "batched syncs" in v["reason"], v["reason"]
    path = r["critical_path"][0]
    top = path["chains"][0]
    assert [h["comm"] for h in top["hops"]] == ["uds-client", "fsync-server"]
    assert top["hops"][0]["cause"] == ["local-socket", "unix socket"]
    assert top["hops"][1]["state"] == "D" and top["hops"][1]["root"] == "disk I/O"
    assert top["share"] > 0.3


def test_a_lock_waiter_is_sent_through_the_lock_to_the_holders_sleep():
    """lock_sleep: lk-holder sleeps 50 ms holding the lock the waiters want. The chain
    names the waiter, the lock, the holder and its sleep."""
    r = report(FIX / "verdict" / "lock_sleep" / "lock_sleep.perf-script.txt.gz")
    v = r["verdict"]
    assert v["critical_root"]["holder"] == "lk-holder"
    assert v["critical_root"]["root"] == "timer"
    assert "lk-holder" in v["reason"]
    via_holder = sum(c["share"] for c in r["critical_path"][0]["chains"]
                     if c["hops"] and c["hops"][0]["cause"] == ["lock", "futex"]
                     and c["hops"][-1]["comm"] == "lk-holder")
    assert via_holder > 0.7


def test_a_client_of_a_sleeping_server_is_sent_to_its_sleep():
    r = report(FIX / "verdict" / "slow_server_threads" / "slow_server_threads.perf-script.txt.gz")
    root = r["verdict"]["critical_root"]
    assert root["root"] == "timer" and root["cause"][0] == "sleep"
    assert root["holder_tid"] != r["verdict"]["cause"]["tid"]
    assert root["share"] > 0.9


def test_critical_path_names_more_threads():
    p = FIX / "verdict" / "lock_sleep" / "lock_sleep.perf-script.txt.gz"
    r = report(p, critical_path=("lk-holder",))
    assert [c["comm"] for c in r["critical_path"]] == ["lk-waiter-1", "lk-holder"]


VERDICT = sorted((FIX / "verdict").glob("*/*.perf-script.txt.gz"))[:12]


@pytest.mark.parametrize("path", VERDICT, ids=lambda p: p.parent.name)
def test_the_chains_of_a_thread_add_up_to_its_time_in_the_trace(path):
    r = report(path)
    rows = {t["tid"]: t for t in r["threads"]}
    for p in r["critical_path"]:
        t = rows[p["tid"]]
        assert abs(sum(c["us"] for c in p["chains"]) - p["wall_us"]) <= len(p["chains"])
        # each chain's µs is rounded on its own: the sum is within a µs per chain
        assert abs(p["wall_us"] - (t["oncpu_us"] + t["blocked_us"] + (t["runq_us"] or 0))) <= len(p["chains"])
        assert abs(sum(c["share"] for c in p["chains"]) - 1) < 0.01


UNIX_FSYNC = FIX / "critical" / "unix_fsync" / "unix_fsync.perf-script.txt.gz"


def _cli(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "offconv", *args], capture_output=True, text=True)


def test_mode_critical_path_draws_the_chain_as_stacks():
    """--mode critical-path: the client's blocked stack, then → fsync-server, what it did
    (its fsync in D, ending at [disk I/O]), weighted by attributed time: the client's
    stacks add up to its blocked time in the report."""
    p = _cli(str(UNIX_FSYNC), "--mode", "critical-path", "--comm", "uds-client")
    assert p.returncode == 0, p.stderr
    lines = [ln.rpartition(" ") for ln in p.stdout.splitlines()]
    total = sum(int(n) for _, _, n in lines)
    disk = sum(int(n) for s, _, n in lines
               if ";→ fsync-server;[blocked D];" in s and s.endswith(";[disk I/O]"))
    assert all(s.startswith("uds-client;[blocked ") for s, _, _ in lines)
    r = report(UNIX_FSYNC)
    client = next(t for t in r["threads"] if t["comm"] == "uds-client")
    assert abs(total - client["blocked_us"]) <= len(lines)
    assert disk / total > 0.4
    # the same input and options: the same bytes
    assert _cli(str(UNIX_FSYNC), "--mode", "critical-path", "--comm", "uds-client").stdout == p.stdout


def test_mode_critical_path_to_svg_speedscope_and_pprof(tmp_path):
    for out in ("cp.svg", "cp.speedscope.json", "cp.pb.gz"):
        p = _cli(str(UNIX_FSYNC), "--mode", "critical-path", "--comm", "uds-client", "-o", str(tmp_path / out))
        assert p.returncode == 0, p.stderr
    svg = (tmp_path / "cp.svg").read_text()
    assert "Wake-up Critical Path" in svg and "→ fsync-server" in svg and "[disk I/O]" in svg
    prof = json.loads((tmp_path / "cp.speedscope.json").read_text())
    names = {f["name"] for f in prof["shared"]["frames"]}
    assert {"→ fsync-server", "[disk I/O]", "[blocked D]"} <= names
    import gzip
    assert b"critical_path" in gzip.decompress((tmp_path / "cp.pb.gz").read_bytes())
