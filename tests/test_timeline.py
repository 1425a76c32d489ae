"""--to timeline (issue 41): the thread-state timeline SVG. Goldens of small synthetic traces
(every state, a wake-up arrow, sub-pixel spans the script merges); on real recordings each
lane's time per state is the report's per-thread figure to the µs; in Chromium (svg-check):
no errors, search, click-to-zoom, and the merge keeps what is drawn bounded."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from perf_text import FUTEX_WAKE, event, switch, wake

FIX = Path(__file__).parent / "fixtures"
GOLD = FIX / "golden" / "timeline"
REC = [FIX / "recorded" / "critical" / "uds_lock" / "uds_lock.perf-script.txt.gz",
       FIX / "recorded" / "critical" / "unix_fsync" / "unix_fsync.perf-script.txt.gz",
       FIX / "recorded" / "victim_a_1" / "victim_a_1.perf-script.txt.gz"]
SVG_CHECK = Path(os.environ.get("OFFCONV_SHARED") or Path(__file__).resolve().parents[2] / "shared") \
    / "tools" / "svg-check"

SLEEP = ("__schedule+0x1 ([kernel.kallsyms])", "do_nanosleep+0x1 ([kernel.kallsyms])", "main+0x2 (/bin/w)")
DISK = ("__schedule+0x1 ([kernel.kallsyms])", "io_schedule+0x1 ([kernel.kallsyms])",
        "do_fsync+0x1 ([kernel.kallsyms])", "main+0x3 (/bin/w)")
WORK = ("__schedule+0x1 ([kernel.kallsyms])", "compute+0x9 (/bin/w)")


_ev = event


_switch = switch


def _wake(t, waker, wpid, comm, pid, cpu=0):
    return wake(t, waker, wpid, comm, pid, cpu, FUTEX_WAKE)


def every_state() -> str:
    """w (10): runs 2 ms, sleeps 3 ms (S) until b (20) wakes it, waits 1 ms (woken), runs
    1 ms, is preempted 1 ms, runs 1 ms, waits on its disk (D) 2 ms (woken by jbd2), runs 1 ms."""
    T = 1_000_000_000
    return "".join([
        _switch(T, "swapper/0", 0, "R", "w", 10, frames=()),
        _switch(T + 2000, "w", 10, "S", "b", 20),
        _wake(T + 5000, "b", 20, "w", 10),
        _switch(T + 6000, "b", 20, "S", "w", 10),
        _switch(T + 7000, "w", 10, "R", "b", 20, frames=WORK),
        _switch(T + 8000, "b", 20, "S", "w", 10),
        _switch(T + 9000, "w", 10, "D", "jbd2/vda1-8", 30, frames=DISK),
        _switch(T + 9500, "jbd2/vda1-8", 30, "D", "swapper/0", 0, frames=DISK),
        _wake(T + 11000, "swapper/0", 0, "w", 10),
        _switch(T + 11000, "swapper/0", 0, "R", "w", 10, frames=()),
        _switch(T + 12000, "w", 10, "S", "swapper/0", 0),
    ])


def tiny_spans(n: int = 3000) -> str:
    """w and b hand the CPU to each other every 2 µs, n times, then w sleeps 100 ms: at
    1200 px, thousands of spans under a pixel."""
    T, out = 1_000_000_000, [_switch(1_000_000_000, "swapper/0", 0, "R", "w", 10, frames=())]
    t = T
    for i in range(n):
        a, ap, b, bp = ("w", 10, "b", 20) if i % 2 == 0 else ("b", 20, "w", 10)
        t += 2
        out.append(_switch(t, a, ap, "R", b, bp, frames=WORK))
    out.append(_switch(t + 2, "w" if n % 2 == 0 else "b", 10 if n % 2 == 0 else 20, "S", "swapper/0", 0))
    out.append(_wake(t + 100_000, "swapper/0", 0, "w" if n % 2 == 0 else "b", 10 if n % 2 == 0 else 20))
    out.append(_switch(t + 100_000, "swapper/0", 0, "R", "w" if n % 2 == 0 else "b", 10 if n % 2 == 0 else 20,
                       frames=()))
    return "".join(out)


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p


def embedded(svg: str) -> dict:
    m = re.search(r'<script type="application/json" id="tldata"><!\[CDATA\[(.*?)\]\]></script>', svg, re.S)
    return json.loads(m.group(1))


@pytest.mark.parametrize("name, text", [("every_state", every_state), ("tiny_spans", tiny_spans)])
def test_golden_timelines(name, text, tmp_path, golden):
    src = tmp_path / f"{name}.txt"
    src.write_text(text())
    out = tmp_path / f"{name}.timeline.svg"
    cli(src, "-o", out)
    golden(GOLD / f"{name}.timeline.svg", out.read_bytes())
    cli(src, "-o", tmp_path / "again.timeline.svg")
    assert (tmp_path / "again.timeline.svg").read_bytes() == out.read_bytes()


def test_every_state_is_in_the_data_where_it_happened(tmp_path):
    src = tmp_path / "t.txt"
    src.write_text(every_state())
    d = embedded(cli(src, "--to", "timeline").stdout)
    w = next(l for l in d["lanes"] if l["tid"] == 10)
    states = d["states"]
    spans = [(w["s"][i], w["s"][i + 1], states[w["s"][i + 2] & 7]) for i in range(0, len(w["s"]), 3)]
    assert spans == [(0, 2000, "Running"), (2000, 3000, "Sleeping (S)"), (5000, 1000, "Runnable (woken)"),
                     (6000, 1000, "Running"), (7000, 1000, "Runnable (preempted)"), (8000, 1000, "Running"),
                     (9000, 2000, "Uninterruptible (D)"), (11000, 1000, "Running")]
    assert w["totals"] == {"Running": 5000, "Runnable (woken)": 1000, "Runnable (preempted)": 1000,
                           "Sleeping (S)": 3000, "Uninterruptible (D)": 2000}
    lanes = [l["tid"] for l in d["lanes"]]
    # the wake-up of w by b at 5 ms: an arrow from b's lane to w's
    assert [lanes.index(20), lanes.index(10), 5000] == d["wakes"][:3] or \
        any(d["wakes"][i:i + 3] == [lanes.index(20), lanes.index(10), 5000] for i in range(0, len(d["wakes"]), 3))
    detail = d["details"][w["s"][3 * 1 + 2] >> 3]
    assert "do_nanosleep" in detail and "woken by b (tid 20)" in detail


@pytest.mark.parametrize("path", REC, ids=lambda p: p.parent.name)
def test_each_lane_is_the_reports_thread_to_the_us(path):
    svg = cli(path, "--to", "timeline").stdout
    d = embedded(svg)
    rep = json.loads(cli("report", path, "--json").stdout)
    rows = {r["tid"]: r for r in rep["threads"]}
    assert len(d["lanes"]) > 3
    for lane in d["lanes"]:
        r, t = rows[lane["tid"]], lane["totals"]
        assert t.get("Running", 0) == r["oncpu_us"], lane["name"]
        assert t.get("Runnable (preempted)", 0) == r["runq_preempted_us"], lane["name"]
        assert abs(t.get("Runnable (woken)", 0) - (r["runq_us"] - r["runq_preempted_us"])) <= 1, lane["name"]
        assert t.get("Sleeping (S)", 0) == r["blocked_by_state_us"].get("S", 0), lane["name"]
        assert t.get("Uninterruptible (D)", 0) == r["blocked_by_state_us"].get("D", 0), lane["name"]
    # the verdict's thread is the first lane
    assert d["lanes"][0]["tid"] == rep["verdict"]["cause"]["tid"]


def _svg_check(path: Path, *args) -> dict:
    if not SVG_CHECK.exists():
        if os.environ.get("OFFCONV_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{SVG_CHECK} not found and OFFCONV_REQUIRE_BROWSER=1")
        pytest.skip(f"{SVG_CHECK} not found")
    p = subprocess.run([str(SVG_CHECK), str(path), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["ok"], report["problems"]
    assert report["console_errors"] == [] and report["page_errors"] == []
    return report


@pytest.mark.slow
def test_timeline_in_a_browser_search_and_zoom(tmp_path):
    svg = tmp_path / "t.timeline.svg"
    cli(REC[0], "-o", svg)
    report = _svg_check(svg, "--search", "futex", "--click", "Sleeping", "--screenshot", str(tmp_path / "t.png"))
    assert 0 < report["search"]["matched_percent"] < 100 and report["search"]["highlighted_frames"] > 0
    assert report["click"]["zoomed"] is True


@pytest.mark.slow
def test_sub_pixel_spans_are_merged_in_the_browser(tmp_path):
    src = tmp_path / "t.txt"
    src.write_text(tiny_spans(3000))
    svg = tmp_path / "t.timeline.svg"
    cli(src, "-o", svg)
    d = embedded(svg.read_text())
    assert sum(len(l["s"]) // 3 for l in d["lanes"]) > 3000
    report = _svg_check(svg, "--click", "merged")
    # two lanes at 960 px: at most a drawn span per pixel each, not 3000
    assert report["elements"]["frames"] < 2 * 960, report["elements"]
    assert report["click"]["zoomed"] is True
