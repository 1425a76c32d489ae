"""Goldens of every output on the real recordings (issue 7): off-CPU folded, wakeup
folded, report text, report JSON, hist and SVG, per recording. A golden is rewritten only
by ``pytest --bless`` (and read before it is committed); a missing one fails.

The static folded inputs of the SVG tests (``fixtures/svg/victim_a_1.*.folded``) are
goldens too: they must stay what offconv prints for that recording."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
REC = FIX / "recorded"
GOLD = FIX / "golden"
RECORDINGS = ["victim_a_1", "victim_a_unpinned", "victim_p_1", "contention_a_1",
              "e2e_victim_a_small"]
OUTPUTS = {  # golden suffix -> offconv arguments after the input
    "offcpu.folded": [],
    "wakeup.folded": ["--mode", "wakeup"],
    "report.txt": ["--to", "report"],
    "report.json": ["--to", "json"],
    "hist": ["--to", "hist"],
    "svg": ["--to", "svg"],
}


def source(name: str) -> Path:
    return next(p for p in sorted((REC / name).glob(f"{name}.perf-script.txt*")))


def run(path: Path, args: list) -> str:
    r = CliRunner().invoke(app, [str(path), *args])
    assert r.exit_code == 0, r.stderr
    # the golden must not depend on where the repository is checked out
    return r.stdout.replace(str(path), path.name)


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.parametrize("out", list(OUTPUTS))
def test_golden(name, out, golden):
    golden(GOLD / name / f"{name}.{out}", run(source(name), OUTPUTS[out]))


@pytest.mark.parametrize("fixture,args", [
    ("victim_a_1.offcpu.folded", ["--mode", "offcpu", "--state-split"]),
    ("victim_a_1.wakeup.folded", ["--mode", "wakeup"]),
])
def test_svg_fixtures_are_what_offconv_prints(fixture, args, golden):
    golden(FIX / "svg" / fixture, run(source("victim_a_1"), args))
