"""offconv/_speedups.c is optional: with OFFCONV_SPEEDUPS=0 every loop it replaces runs in
Python, and every output must be the same bytes either way (DESIGN.md: the C loop is a
speed mechanism behind the plain path's interface, never a second behaviour)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
REC = FIX / "recorded"

# one input of each shape the C loops serve: on-CPU samples with and without call chains
# (perf script's summed path), sched events (the off-CPU path), a perf.data (perf script
# with the kallsyms part), folded text
INPUTS = [
    FIX / "flamegraph-test" / "perf-cycles-instructions-01.txt",
    REC / "nocallchain" / "oncpu-no-g.perf-script.txt.gz",
    REC / "verdict" / "pure_oncpu" / "pure_oncpu.perf-script.txt.gz",
    REC / "contention_a_1" / "contention_a_1.perf-script.txt.gz",
    REC / "verdict" / "lock_sleep" / "lock_sleep.perf-script.txt.gz",
    REC / "e2e_victim_a_small" / "e2e_victim_a_small.data",
    FIX / "diff" / "before.folded",
]
OUTPUTS = ["folded", "svg", "report", "speedscope"]


def _run(path: Path, to: str, speedups: str, tmp: Path) -> bytes:
    out = tmp / f"{path.name}.{speedups}.{to}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OFFCONV_SPEEDUPS=speedups,
               OFFCONV_CACHE_DIR=str(tmp / f"cache{speedups}"))
    r = subprocess.run([sys.executable, "-m", "offconv", str(path), "--to", to, "-o", str(out)],
                       env=env, capture_output=True, text=True, cwd=tmp)
    assert r.returncode in (0, 1), (path, to, speedups, r.stderr)
    return out.read_bytes()


def test_the_c_loops_are_built():
    """(Else both runs below would take the Python path and prove nothing.)"""
    from offconv import _speedups
    assert hasattr(_speedups, "one_line_events")


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name.split(".")[0])
def test_python_and_c_give_the_same_bytes(path, tmp_path):
    assert path.exists(), path
    if path.suffix == ".data" and not shutil.which("perf"):
        pytest.skip("perf is not installed")
    for to in OUTPUTS:
        c = _run(path, to, "1", tmp_path)
        py = _run(path, to, "0", tmp_path)
        assert c, (path, to)
        assert c == py, (path, to)
