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
from perf_text import TIMER_WAKE, event, switch, wake

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
    by_tid = cli(path, "--mode", "wallclock", "--tid").stdout
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
        # the folded profile's kinds of the thread (by tid: --tid, whatever its name was
        # then) are the same numbers, but for each line's own rounding to the µs
        k, lines = _kinds_of_tid(by_tid, r["tid"])
        assert abs(k.get("[on-CPU]", 0) - r["sampled_oncpu_us"]) <= lines, (comm, k, r)
        blocked = sum(v for kind, v in k.items() if kind.startswith("[blocked "))
        assert abs(blocked - r["blocked_us"]) <= lines, (comm, k, r)


def _kinds_of_tid(folded: str, tid: int) -> tuple:
    out, n = {}, 0
    for line in folded.splitlines():
        stack, _, w = line.rpartition(" ")
        frames = stack.split(";")
        if frames[0].endswith(f"/{tid}"):
            out[frames[1]] = out.get(frames[1], 0) + int(w)
            n += 1
    return out, n


def test_wallclock_of_a_recording(recording):
    check_recording(recording)


def test_wallclock_svg_in_a_browser(recording, tmp_path):
    """The SVG opens in Chromium without errors; a search for the computing frame and one
    for the sleeping frame each highlight frames; a click zooms."""
    check = Path(os.environ.get("OFFCONV_SHARED") or REPO.parent / "shared") / "tools" / "svg-check"
    if not check.exists():
        if os.environ.get("OFFCONV_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{check} not found and OFFCONV_REQUIRE_BROWSER=1")
        pytest.skip(f"{check} not found")
    svg = tmp_path / "wall.svg"
    cli(recording, "--mode", "wallclock", "--comm", "^wc-", "-o", svg)
    text = svg.read_text()
    assert "Wall-Clock Time Flame Graph" in text and "on-CPU " in text and "run queue " in text
    for regex in ("^compute$", "do_nanosleep"):
        p = subprocess.run([str(check), str(svg), "--search", regex, "--click", "wc-worker",
                            "--screenshot", str(tmp_path / "wall.png")],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode in (0, 1), p.stderr[-2000:]
        report = json.loads(p.stdout)
        assert p.returncode == 0 and report["ok"], report["problems"]
        assert report["console_errors"] == [] and report["page_errors"] == []
        assert 0 < report["search"]["matched_percent"] < 100, (regex, report["search"])
        assert report["search"]["highlighted_frames"] > 0
        assert report["click"]["zoomed"] is True


# -- synthetic traces with exact answers ---------------------------------------------------

_ev = event


def _sample(comm, tid, cpu, t_us, frames, period="1000000", event="cpu-clock/period=1000000/"):
    return _ev(comm, tid, cpu, t_us, f"{period} {event}:", frames)


COMPUTE = ("compute+0x8 (/bin/w)", "main+0x1 (/bin/w)")
SLEEP = ("__schedule+0x1 ([kernel.kallsyms])", "do_nanosleep+0x1 ([kernel.kallsyms])",
         "main+0x2 (/bin/w)")
PREEMPT = ("__schedule+0x1 ([kernel.kallsyms])", "compute+0x9 (/bin/w)", "main+0x1 (/bin/w)")


_switch = switch


def _wake(t, waker, wpid, comm, pid, cpu=0):
    return wake(t, waker, wpid, comm, pid, cpu, TIMER_WAKE)


def trace(period="1000000", event="cpu-clock/period=1000000/") -> str:
    """w (tid 10) computes 3 ms (3 samples), sleeps 5 ms, is woken and waits 1 ms for the CPU
    behind hog (tid 20), computes 2 ms (2 samples), is preempted and waits 2 ms, runs 1 ms."""
    T = 1_000_000_000
    s = lambda t: _sample("w", 10, 0, t, COMPUTE, period, event)            # noqa: E731
    h = lambda t: _sample("hog", 20, 0, t, ("spin+0x1 (/bin/hog)",), period, event)  # noqa: E731
    return "".join([
        _switch(T, "swapper/0", 0, "R", "w", 10, frames=()),
        s(T + 1000), s(T + 2000), s(T + 3000),
        _switch(T + 3000, "w", 10, "S", "hog", 20),
        h(T + 4000), h(T + 5000), h(T + 6000), h(T + 7000), h(T + 8000),
        _wake(T + 8000, "hog", 20, "w", 10),
        h(T + 9000),
        _switch(T + 9000, "hog", 20, "R", "w", 10, frames=PREEMPT),
        s(T + 10000), s(T + 11000),
        _switch(T + 11000, "w", 10, "R", "hog", 20, frames=PREEMPT),
        h(T + 12000), h(T + 13000),
        _switch(T + 13000, "hog", 20, "R", "w", 10, frames=PREEMPT),
        s(T + 14000),
        _switch(T + 14000, "w", 10, "S", "swapper/0", 0),
    ])


def test_wallclock_weighs_samples_by_period_beside_the_intervals(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text(trace())
    got = dict(l.rsplit(" ", 1) for l in cli(p, "--mode", "wallclock").stdout.splitlines())
    w = {k: int(v) for k, v in got.items() if k.startswith("w;")}
    assert w == {"w;[on-CPU];main;compute": 6000,
                 "w;[blocked S];main;do_nanosleep;__schedule": 5000,
                 "w;[run queue];main;do_nanosleep;__schedule": 1000,
                 "w;[preempted];main;compute;__schedule": 2000}
    # w's wall time in the trace: 14 ms, its three kinds' sum exactly (the samples are exact)
    assert sum(w.values()) == 14000
    rep = json.loads(cli("report", p, "--mode", "wallclock", "--json").stdout)
    row = next(r for r in rep["wall"] if r["comm"] == "w")
    assert (row["wall_us"], row["oncpu_us"], row["blocked_us"], row["runq_us"]) == (14000, 6000, 5000, 3000)
    assert (row["sampled_oncpu_us"], row["sampling_error_us"]) == (6000, 0)
    # the same input and options: the same bytes
    assert cli(p, "--mode", "wallclock").stdout == cli(p, "--mode", "wallclock").stdout


def test_samples_without_a_period_in_ns_are_scaled_and_said(tmp_path):
    """cycles samples (counts): each taken as the sampled threads' on-CPU time over their
    samples, with a note."""
    p = tmp_path / "t.txt"
    p.write_text(trace(period="5000", event="cycles"))
    r = cli(p, "--mode", "wallclock")
    got = {k: int(v) for k, v in (l.rsplit(" ", 1) for l in r.stdout.splitlines())}
    # w: 6 samples, hog: 7 samples (a 5000-cycle count each); on CPU 6 + 8 ms by the sched
    # events: 14 ms / 65000 counts per sample unit
    assert got["w;[on-CPU];main;compute"] + got["hog;[on-CPU];spin"] in (13999, 14000, 14001)
    assert "carry no period in ns" in r.stderr


def test_wallclock_without_samples_or_without_sched_events_says_so(tmp_path):
    only_sched = tmp_path / "s.txt"
    only_sched.write_text("".join(part + "\n\n" for part in trace().split("\n\n")
                                  if part and "cpu-clock" not in part))
    r = cli(only_sched, "--mode", "wallclock")
    assert "no on-CPU samples" in r.stderr
    assert "[on-CPU]" not in r.stdout and "[blocked S]" in r.stdout
    only_samples = tmp_path / "c.txt"
    only_samples.write_text("".join(part + "\n\n" for part in trace().split("\n\n") if "cpu-clock" in part))
    r = cli(only_samples, "--mode", "wallclock")
    assert "no sched events" in r.stderr
    got = {k: int(v) for k, v in (l.rsplit(" ", 1) for l in r.stdout.splitlines())}
    assert got == {"w;main;compute": 6000, "hog;spin": 8000}


def test_wallclock_to_pprof_has_the_three_kinds_as_sample_types(tmp_path):
    """pprof: wall (every kind), cpu, blocked and runqueue, in ns; go tool pprof reads each,
    and each type's total is its kind's: on CPU w's 6 ms and hog's 8 ms, blocked w's sleep
    (5 ms), run queue w's 3 ms and hog's 2 ms, wall all of it."""
    if shutil.which("go") is None:
        pytest.skip("go is needed (.ci/run installs golang-go)")
    p = tmp_path / "t.txt"
    p.write_text(trace())
    out = tmp_path / "w.pb.gz"
    cli(p, "--mode", "wallclock", "-o", out)
    totals = {}
    for kind in ("wall", "cpu", "blocked", "runqueue"):
        r = subprocess.run(["go", "tool", "pprof", "-top", "-unit=us", f"-sample_index={kind}", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        line = next(l for l in r.stdout.splitlines() if "Total samples" in l or "total" in l and "of" in l)
        totals[kind] = line
    assert "= 14000us" in totals["cpu"] and "= 5000us" in totals["blocked"], totals
    assert "= 5000us" in totals["runqueue"] and "= 24000us" in totals["wall"], totals


def test_wallclock_to_speedscope_is_evented_with_the_samples(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text(trace())
    out = tmp_path / "w.speedscope.json"
    cli(p, "--mode", "wallclock", "-o", out)
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    ev = next(x for x in doc["profiles"] if x["type"] == "evented" and x["name"].startswith("w "))
    opened = [(e["at"], names[e["frame"]]) for e in ev["events"] if e["type"] == "O"]
    # the first on-CPU ms is a sample of compute, opened at its start (trace time 0)
    assert (0, "[on-CPU]") in opened and (0, "compute") in opened
    assert any(n == "[blocked S]" for _, n in opened) and any(n == "[preempted]" for _, n in opened)


def test_record_wallclock_needs_perf():
    p = subprocess.run(["bash", str(REPO / "scripts" / "record.sh"), "--backend", "bpftrace", "--wallclock",
                        "-a", "-d", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--wallclock needs the perf backend" in p.stderr, p.stderr


def test_wallclock_flamechart_is_in_time_order(tmp_path):
    """--flamechart: w's periods left to right as they happened: 3 ms on CPU, 5 ms asleep,
    1 ms in the run queue, 2 ms on CPU, 2 ms preempted, 1 ms on CPU."""
    import re
    p = tmp_path / "t.txt"
    p.write_text(trace())
    svg = tmp_path / "fc.svg"
    cli(p, "--mode", "wallclock", "--flamechart", "--comm", "^w$", "-o", svg)
    kinds = re.findall(r"<title>(\[[^(<]+\]) \(([\d.]+) ms", svg.read_text())
    assert kinds == [("[on-CPU]", "3"), ("[blocked S]", "5"), ("[run queue]", "1"), ("[on-CPU]", "2"),
                     ("[preempted]", "2"), ("[on-CPU]", "1")], kinds
