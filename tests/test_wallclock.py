"""--mode wallclock (issue 41): on-CPU samples weighted by their period beside the blocked and
run-queue intervals, one profile in time units; checked on a recording the test makes with
`scripts/record.sh --wallclock` (skipped where perf cannot record), and on small synthetic
traces whose answer is exact.

Expected, written 2026-12-07 before the recording was first made: wc-worker computes 200 ms
of CPU and sleeps 300 ms, 4 rounds, on a CPU of its own: on CPU 40% and blocked 60% of its
wall time (within 5 points each); wc-pinned does the same on CPU 0 beside wc-hog, which
spins there for the whole window: it waits for the CPU 20% of its wall time or more; for
every thread, its on-CPU time by its samples plus its blocked and run-queue time is its
wall time within the sampling error (one period, 1 ms, per time on CPU, and the error
the report gives is that difference)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).parent / "fixtures" / "recorded" / "wallclock"
PERIOD_US = 1000    # record.sh --wallclock: cpu-clock/period=1000000/ (ns)


def cli(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def _why_not() -> str | None:
    if shutil.which("perf") is None:
        return "perf not installed"
    if os.geteuid() != 0:
        return "recording needs root"
    if shutil.which("gcc") is None:
        return "gcc builds the workload"
    if (os.cpu_count() or 1) < 2:
        return "the workload needs two CPUs (one for wc-worker, one for wc-pinned and wc-hog)"
    return None


def record(out: Path) -> Path:
    """wc-worker (CPU 1), wc-pinned and wc-hog (CPU 0), recorded by record.sh --wallclock."""
    exe = out / "wc_worker"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(HERE / "wc_worker.c")], check=True)
    script = (f"{exe} wc-hog 0 0 2300 0 & {exe} wc-worker 1 4 200 300 & "
              f"{exe} wc-pinned 0 3 200 300 & wait")
    text = out / "wallclock.perf-script.txt"
    subprocess.run(["bash", str(REPO / "scripts" / "record.sh"), "--backend", "perf", "--wallclock",
                    "-d", "10", "-o", str(text), "--", "/bin/sh", "-c", script],
                   check=True, capture_output=True, timeout=240)
    gz = out / "wallclock.perf-script.txt.gz"
    gz.write_bytes(gzip.compress(text.read_bytes(), 9, mtime=0))
    return gz


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    kept = HERE / "wallclock.perf-script.txt.gz"
    why = _why_not()
    if why:
        if kept.exists():
            return kept
        pytest.skip(why)
    return record(tmp_path_factory.mktemp("wallclock"))


def _kinds(folded: str, comm: str) -> dict:
    out: dict = {}
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if frames[0] == comm:
            out[frames[1]] = out.get(frames[1], 0) + int(n)
    return out


def check_recording(path: Path) -> None:
    folded = cli(path, "--mode", "wallclock").stdout
    w = _kinds(folded, "wc-worker")
    total = sum(w.values())
    assert abs(w.get("[on-CPU]", 0) / total - 0.40) <= 0.05, w
    assert abs(w.get("[blocked S]", 0) / total - 0.60) <= 0.05, w
    rep = json.loads(cli("report", path, "--mode", "wallclock", "--json").stdout)
    rows = {r["comm"]: r for r in rep["threads"]}
    wall = {r["comm"]: r for r in rep["wall"]}
    p = wall["wc-pinned"]
    assert p["runq_share"] >= 0.20, p
    for comm in ("wc-worker", "wc-pinned", "wc-hog"):
        r = wall[comm]
        kinds = r["sampled_oncpu_us"] + r["blocked_us"] + r["runq_us"]
        # the sampling error: at most a period per time on CPU (a switch-in each)
        bound = PERIOD_US * (rows[comm]["switches"] + 1)
        assert abs(kinds - r["wall_us"]) <= bound, (comm, r, bound)
        assert r["sampling_error_us"] == r["sampled_oncpu_us"] - r["oncpu_us"]
        # the folded profile's kinds of the thread are the same numbers
        k = _kinds(folded, comm)
        assert abs(k.get("[on-CPU]", 0) - r["sampled_oncpu_us"]) <= len(k) + 1, (comm, k, r)


def test_wallclock_of_a_recording(recording):
    check_recording(recording)


def test_wallclock_svg_in_a_browser(recording, tmp_path):
    from conftest import shared_tool
    check = shared_tool("svg-check")
    if not check.exists():
        if os.environ.get("OFFCONV_REQUIRE_BROWSER"):
            pytest.fail(f"{check} is missing")
        pytest.skip("svg-check not found")
    svg = tmp_path / "wall.svg"
    cli(recording, "--mode", "wallclock", "--comm", "^wc-", "-o", svg)
    text = svg.read_text()
    assert "Wall-Clock Time Flame Graph" in text and "on-CPU " in text and "blocked " in text
    png = tmp_path / "wall.png"
    p = subprocess.run([str(check), str(svg), "--search", "compute", "--search", "do_nanosleep",
                        "--screenshot", str(png)], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(p.stdout)
    assert not res.get("errors"), res
    hits = {s["term"]: s["matches"] for s in res["searches"]}
    assert hits["compute"] > 0 and hits["do_nanosleep"] > 0, res
