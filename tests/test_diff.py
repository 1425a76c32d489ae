"""offconv diff BEFORE AFTER: the differential profile, the report, --fail-above, the SVG."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app
from offconv.analysis.diff import strip_hex

from conftest import FIXTURES

D = FIXTURES / "diff"
V = FIXTURES / "recorded" / "verdict"
VB = V / "victim_before" / "victim_before.perf-script.txt.gz"
VA = V / "victim_after" / "victim_after.perf-script.txt.gz"
_REPO = Path(__file__).resolve().parents[1]
# shared/ beside the repo (CI), or beside the folder holding this worktree
SHARED = next((p / "shared" for p in (_REPO.parent, _REPO.parent.parent) if (p / "shared").is_dir()),
              _REPO.parent / "shared")
SVG_CHECK = SHARED / "tools" / "svg-check"
FLAMEGRAPH_PL = SHARED / "bench" / "anchors" / "FlameGraph" / "flamegraph.pl"
NS = "{http://www.w3.org/2000/svg}"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def folded_rows(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        stack, b, a = line.rsplit(" ", 2)
        out[stack] = (float(b), float(a))
    return out


def svg_frames(text: str) -> dict:
    """title's name -> (title, fill, g class)"""
    root = ET.fromstring(text.encode())
    out = {}
    for g in root.find(f".//{NS}g[@id='frames']"):
        title = g.find(f"{NS}title").text
        out[title.split(" (", 1)[0]] = (title, g.find(f"{NS}rect").get("fill"), g.get("class"))
    return out


# -- folded and report goldens -------------------------------------------------------

def test_folded_diff_golden(golden):
    r = run("diff", D / "before.folded", D / "after.folded")
    assert r.exit_code == 0, r.stderr
    golden(D / "ab.expected.folded", r.stdout)
    rows = folded_rows(r.stdout)
    assert rows["app;main;execute"] == (5, 12)
    assert rows["app;main;execute;fork"] == (2, 2.5)      # fractional counts kept
    assert rows["app;main;gone"] == (4, 0) and rows["app;main;new_func"] == (0, 3)
    assert list(rows) == sorted(rows)                      # sorted: deterministic artifact


def test_strip_hex_matches_addresses(golden):
    plain = folded_rows(run("diff", D / "before.folded", D / "after.folded").stdout)
    assert plain["app;worker;0x7f1e2215d058"] == (3, 0)
    r = run("diff", "-s", D / "before.folded", D / "after.folded")
    golden(D / "ab.strip-hex.expected.folded", r.stdout)
    rows = folded_rows(r.stdout)
    assert rows["app;worker;0x..."] == (3, 1)
    assert not any("7f1e" in s for s in rows)
    assert strip_hex("[memfd:sealed-91173221a7ea]") == "[memfd:sealed-0x...]"
    assert strip_hex("sha256_block_data_order_avx2") == "sha256_block_data_order_avx2"
    assert strip_hex("deadbeefcafe") == "deadbeefcafe"  # no digit: a word, not an address


def test_normalize_scales_before_to_after_total(tmp_path):
    a = tmp_path / "a.folded"
    b = tmp_path / "b.folded"
    a.write_text("t;x 10\nt;y 30\n")
    b.write_text("t;x 10\nt;y 10\n")
    rows = folded_rows(run("diff", "-n", a, b).stdout)
    assert rows == {"t;x": (5, 10), "t;y": (15, 10)}    # BEFORE total 40 scaled to 20
    a.write_text("t;x 1\nt;y 2\n")
    b.write_text("t;x 2\nt;y 2\n")
    rows = folded_rows(run("diff", "--normalize", a, b).stdout)
    assert rows == {"t;x": (1, 2), "t;y": (2, 2)}       # int(1*4/3), int(2*4/3): difffolded.pl


def test_report_golden_and_json(golden, monkeypatch):
    monkeypatch.chdir(D)  # relative paths in the report: the golden holds no machine's paths
    r = run("diff", "before.folded", "after.folded", "--to", "report", "-q")
    assert r.exit_code == 0
    golden(D / "ab.expected.report", r.stdout)
    j = json.loads(run("diff", "before.folded", "after.folded", "--json", "-q").stdout)
    golden(D / "ab.expected.json", json.dumps(j, indent=2) + "\n")
    assert j["totals"]["total"] == {"before": 24, "after": 23.5, "delta": -0.5, "delta_pct": -2.1}
    assert [g["stack"] for g in j["grew"]] == ["app;main;execute", "app;main;new_func",
                                               "app;worker;0x7f1e22160000", "app;main;execute;fork"]
    assert j["shrank"][0]["stack"] == "app;main;parse" and j["shrank"][0]["delta"] == -5
    assert j["latency"] is None and j["verdict"] is None   # folded input: no sched events


# -- --fail-above ----------------------------------------------------------------------

def test_diff_a_a_is_all_zero_and_passes_fail_above_0():
    r = run("diff", D / "after.folded", D / "after.folded", "--fail-above", "0", "--json", "-q")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["totals"]["total"]["delta"] == 0 and j["grew"] == [] and j["shrank"] == []
    assert j["checks"] == [{"on": "total", "what": "total weight", "before": 23.5, "after": 23.5,
                            "delta_pct": 0.0, "failed": False}]
    rows = folded_rows(run("diff", D / "after.folded", D / "after.folded").stdout)
    assert all(b == a for b, a in rows.values())


def test_doubled_after_fails_fail_above_5_naming_the_growth(tmp_path):
    doubled = tmp_path / "doubled.folded"
    doubled.write_text("".join(f"{s} {float(c) * 2}\n" for s, c in
                               (l.rsplit(" ", 1) for l in (D / "after.folded").read_text().splitlines())))
    r = run("diff", D / "after.folded", doubled, "--fail-above", "5", "-q")
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(r"offconv: diff: total weight grew \+100\.0% \(23\.5 samples -> 47 samples, "
                        r"\+23\.5 samples\), above --fail-above 5%; grew most: app;main;execute "
                        r"\(\+12 samples\)", lines[0]), lines[0]
    assert run("diff", D / "after.folded", doubled, "--fail-above", "100", "-q").exit_code == 0


def test_bad_input_and_bad_options_exit_2(tmp_path):
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\nthis is not folded\n")
    r = run("diff", D / "before.folded", bad, "--from", "folded")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"offconv: {bad}:2: expected ") and "Traceback" not in r.stderr
    assert run("diff", D / "before.folded", D / "after.folded", "--fail-on", "bogus").exit_code == 2
    assert run("diff", D / "before.folded").exit_code == 2
    r = run("diff", D / "before.folded", D / "after.folded", "--fail-above", "1", "--fail-on", "p99")
    assert r.exit_code == 2 and "needs sched events" in r.stderr
    for what in ("blocked", "lock"):
        r = run("diff", D / "before.folded", D / "after.folded", "--fail-above", "1", "--fail-on", what)
        assert r.exit_code == 2 and r.stderr.startswith(f"offconv: diff: --fail-on {what}: needs sched")


# -- real recordings: the lock held 50 ms (before) vs 25 ms (after) ------------------------

@pytest.fixture(scope="module")
def victim_report():
    r = run("diff", VB, VA, "--json", "-q")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_report_on_real_recordings_shows_the_lock_tower_shrinking(victim_report):
    j = victim_report
    lock = next(c for c in j["causes"] if c["cause"] == "lock")
    assert lock["after"] < lock["before"] and lock["delta"] < 0
    tower = next(s for s in j["shrank"] if s["stack"].startswith("victim-main;") and "futex" in s["stack"])
    # expected.json of the fixtures: victim-main's lock wait 2513 ms -> 2047 ms
    assert 2_400_000 <= tower["before"] <= 2_600_000 and 1_950_000 <= tower["after"] <= 2_150_000
    assert j["before"]["verdict"]["short"] == "waiting (lock)"
    assert j["verdict"].startswith("before: waiting (lock); after: waiting")
    p99 = j["latency"]["blocked"]["p99_us"]
    assert p99["after"] < p99["before"]
    assert set(j["totals"]) == {"total", "blocked", "runq"}


def test_fail_on_lock_catches_the_worse_run():
    # victim_after as the baseline, victim_before (lock held twice as long) as the worse run
    r = run("diff", VA, VB, "--fail-above", "10", "--fail-on", "lock", "--fail-on", "runq", "-q")
    assert r.exit_code == 1
    msg = r.stderr.strip().splitlines()
    assert len(msg) == 1 and msg[0].startswith("offconv: diff: lock wait grew +")
    where = msg[0].split("; grew most: ")[1]
    assert "futex_wait" in where   # the stack that grew most is a lock (futex) wait
    assert run("diff", VB, VA, "--fail-above", "10", "--fail-on", "lock", "-q").exit_code == 0


def test_output_is_deterministic(tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"d{i}.svg"
        assert run("diff", VB, VA, "-o", out, "-q").exit_code == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# -- the differential SVG ------------------------------------------------------------------

def test_svg_colours_each_frame_by_its_own_delta(tmp_path):
    out = tmp_path / "d.svg"
    assert run("diff", D / "before.folded", D / "after.folded", "-o", out, "-q").exit_code == 0
    f = svg_frames(out.read_text())
    assert f["main"][1] == "rgb(255,255,255)"   # no self time: no own change, as flamegraph.pl
    assert f["execute"][1] == "rgb(255,0,0)"    # self +7 = the largest line delta
    assert f["parse"][1] == "rgb(60,60,255)"    # self -5: 210 * (7 - 5) / 7
    # subtree: before 5 + 2, after 12 + 2.5 (shown rounded, as flamegraph.pl rounds counts)
    assert "before 7 samples, after 14 samples, delta +8 samples (+107.1%); self +7 samples" in f["execute"][0]
    assert f["new_func"][2] == "new" and f["new_func"][0].endswith("; new)")
    assert "gone" not in f                      # widths from AFTER: nothing to draw
    neg = tmp_path / "n.svg"
    assert run("diff", D / "before.folded", D / "after.folded", "--negate", "-o", neg, "-q").exit_code == 0
    n = svg_frames(neg.read_text())             # BEFORE's widths, red still = grew
    assert n["gone"][2] == "gone" and "before 4 samples, after 0 samples" in n["gone"][0]
    assert n["execute"][1] == "rgb(255,0,0)" and n["parse"][1] == "rgb(60,60,255)"
    assert "new_func" not in n


@pytest.mark.skipif(not FLAMEGRAPH_PL.exists() or shutil.which("perl") is None,
                    reason="flamegraph.pl (shared/bench/anchors) or perl not found")
def test_svg_fills_match_flamegraph_pl(tmp_path):
    folded = run("diff", D / "before.folded", D / "after.folded").stdout
    (tmp_path / "d.folded").write_text(folded)
    fg = subprocess.run(["perl", str(FLAMEGRAPH_PL), str(tmp_path / "d.folded")],
                        capture_output=True, text=True, check=True).stdout
    fg_fills = dict(re.findall(r"<title>([^ <]+) \([^<]*</title><rect [^>]*fill=\"([^\"]+)\"", fg))
    out = tmp_path / "d.svg"
    run("diff", D / "before.folded", D / "after.folded", "-o", out, "-q")
    ours = {k: v[1] for k, v in svg_frames(out.read_text()).items()}
    fg_fills.pop("all", None)
    assert fg_fills and all(ours[k] == v for k, v in fg_fills.items()), (fg_fills, ours)
    # and with integer counts each tooltip starts as flamegraph.pl's: "name (N samples, P%; +D%"
    # (with fractional ones flamegraph.pl computes P from the rounded count; offconv does not)
    three = FIXTURES / "svg" / "diff.folded"
    fg = subprocess.run(["perl", str(FLAMEGRAPH_PL), str(three)], capture_output=True, text=True,
                        check=True).stdout
    fg_titles = {t.split(" (", 1)[0]: t[:-1] for t in re.findall(r"<title>([^<]*)</title>", fg)}
    out2 = tmp_path / "three.svg"
    assert run(three, "-o", out2).exit_code == 0
    frames = svg_frames(out2.read_text())
    assert set(frames) == set(fg_titles)
    for name, (title, _, _) in frames.items():
        assert title.startswith(fg_titles[name]), (title, fg_titles[name])


def test_three_column_input_still_draws_a_differential(tmp_path):
    folded = tmp_path / "d.folded"
    folded.write_text(run("diff", D / "before.folded", D / "after.folded").stdout)
    out = tmp_path / "d.svg"
    assert run(folded, "-o", out).exit_code == 0
    assert svg_frames(out.read_text())["execute"][1] == "rgb(255,0,0)"


@pytest.mark.skipif(not SVG_CHECK.exists(), reason=f"{SVG_CHECK} not found")
def test_differential_svg_of_real_recordings_passes_svg_check(tmp_path):
    out = tmp_path / "victim-diff.svg"
    assert run("diff", VB, VA, "-o", out, "-q").exit_code == 0
    p = subprocess.run([str(SVG_CHECK), str(out), "--search", "futex", "--click", "victim"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_latency_from_histograms_when_a_side_has_no_sched_events():
    from offconv.analysis.diff import compare, report
    from offconv.model.records import Frame, Histogram, Profile
    def side(scale):
        p = Profile(unit="us", mode="offcpu", samples={(Frame("t", kind="thread"), Frame("x")): 10 * scale})
        # bpftrace hist() of run-queue latency in µs: 90 waits in [4, 8), 10 in [64, 128)
        p.histograms.append(Histogram("runq_us", (), "us", ((4, 8, 90), (64 * scale, 128 * scale, 10)), "runq"))
        return p
    j = report(compare(side(1), side(2)))
    assert j["latency"]["runq"]["p50_us"] == {"before": 8, "after": 8, "delta": 0, "delta_pct": 0.0}
    assert j["latency"]["runq"]["p99_us"] == {"before": 128, "after": 256, "delta": 128, "delta_pct": 100.0}
    assert j["latency"]["blocked"]["p99_us"]["delta"] is None  # no blocked histogram: unknown, not 0


# -- the two sides loaded at once (pair.load_pair) -------------------------------

@pytest.fixture
def pair_all(monkeypatch):
    """Every diff loads BEFORE in a child (whatever its size and the machine's cores),
    but not with OFFCONV_JOBS=1: the serial order it is compared with. ``calls``: what
    each child sent back (a Profile, or None: loaded again here)."""
    from offconv.run import pair, parallel
    monkeypatch.setattr(pair, "PAIR_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: __import__("os").environ.get("OFFCONV_JOBS") != "1")
    calls = []
    real = parallel.Fork.result

    def result(self, *a):
        r = real(self, *a)
        calls.append(type(r).__name__)
        return r
    monkeypatch.setattr(parallel.Fork, "result", result)
    return calls


VERDICT = Path(__file__).parent / "fixtures" / "recorded" / "verdict"
HOGS = VERDICT / "hogs_plus_fsync" / "hogs_plus_fsync.perf-script.txt.gz"
LOOPBACK = VERDICT / "loopback_unpinned" / "loopback_unpinned.perf-script.txt.gz"


def _diff(monkeypatch, tmp_path, jobs, *args):
    monkeypatch.setenv("OFFCONV_JOBS", jobs)
    out = tmp_path / f"out-{jobs}"
    r = CliRunner().invoke(app, ["diff", *map(str, args), "-o", str(out)])
    data = out.read_bytes() if out.exists() else None
    if out.exists():
        out.unlink()
    return r.exit_code, r.output, data


@pytest.mark.parametrize("to", ["folded", "svg", "json", "report"])
def test_both_sides_at_once_equal_the_serial_order(to, monkeypatch, tmp_path, pair_all):
    # (and two different workloads, whose threads that ended are packed with different keys)
    for before, after, extra in ((VB, VA, ()), (D / "before.folded", D / "after.folded", ()),
                                 (VB, VA, ("--fail-above", "1", "--fail-on", "blocked")),
                                 (HOGS, LOOPBACK, ())):
        serial = _diff(monkeypatch, tmp_path, "1", before, after, "--to", to, *extra)
        pair_all.clear()
        both = _diff(monkeypatch, tmp_path, "2", before, after, "--to", to, *extra)
        assert both == serial and serial[2], (before.name, to, extra)
        assert pair_all == ["Profile"], pair_all   # BEFORE came from the child


def test_both_sides_at_once_keep_the_serial_errors(monkeypatch, tmp_path, pair_all):
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\na;b;c x\n")
    for before, after in ((bad, D / "after.folded"), (D / "before.folded", bad), (bad, bad),
                          (tmp_path / "missing.txt", D / "after.folded")):
        serial = _diff(monkeypatch, tmp_path, "1", before, after, "--to", "folded")
        both = _diff(monkeypatch, tmp_path, "2", before, after, "--to", "folded")
        assert both == serial and serial[0] == 2, (before.name, after.name, serial)
