"""scripts/ci-offcpu-check.sh end to end on shipped recordings: victim_after (lock held
25 ms) is the stored baseline, victim_before (lock held 50 ms, the same program otherwise)
the worse run; no new recording was made for this, the pair is the verdict fixtures'."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import FIXTURES

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "ci-offcpu-check.sh"
V = FIXTURES / "recorded" / "verdict"
BASELINE = V / "victim_after" / "victim_after.perf-script.txt.gz"
WORSE = V / "victim_before" / "victim_before.perf-script.txt.gz"

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")


def ci(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO), OFFCONV=f"{sys.executable} -m offconv")
    return subprocess.run(["sh", str(SCRIPT), *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_worse_run_fails_the_build_and_leaves_the_artifacts(tmp_path):
    p = ci(tmp_path, "-b", BASELINE, "-t", WORSE, "-o", "art", "-l", "10",
           "-x", "--comm", "-x", "^victim-main$")
    assert p.returncode == 1, p.stderr
    reason = [l for l in p.stderr.splitlines() if l.startswith("offconv: diff: total off-CPU grew")]
    assert len(reason) == 1 and "above --fail-above 10%" in reason[0]
    assert "grew most: victim-main;__futex_abstimed_wait_common;" in reason[0]
    art = tmp_path / "art"
    d = json.loads((art / "diff.json").read_text())
    assert d["checks"][0]["failed"] and d["checks"][0]["delta_pct"] > 10
    lock = next(c for c in d["causes"] if c["cause"] == "lock")
    assert lock["after"] > lock["before"]
    r = json.loads((art / "report.json").read_text())
    assert r["verdict"]["answer"] == "waiting" and {t["comm"] for t in r["threads"]} == {"victim-main"}
    ET.fromstring((art / "diff.svg").read_bytes())           # a well-formed SVG artifact
    assert "lock" in (art / "diff.txt").read_text() and (art / "report.txt").read_text()


def test_same_run_as_baseline_passes(tmp_path):
    p = ci(tmp_path, "-b", BASELINE, "-t", BASELINE, "-o", "art", "-l", "0", "-f", "total", "-f", "lock")
    assert p.returncode == 0, p.stderr
    assert "no off-CPU regression above 0%" in p.stdout
    assert all(not c["failed"] for c in json.loads((tmp_path / "art" / "diff.json").read_text())["checks"])


def test_missing_baseline_is_a_usage_error(tmp_path):
    p = ci(tmp_path, "-b", tmp_path / "nope.txt", "-t", WORSE)
    assert p.returncode == 2 and "no baseline" in p.stderr
