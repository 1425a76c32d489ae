"""An output never replaces an input (issue 42, part 1): ``-o`` naming an input by the same
path, another spelling of it, a symlink or a hard link is refused with exit 2 and one line,
before anything is read, and the input keeps every byte."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures"
DD = FIX / "flamegraph-test" / "perf-dd-stacks-01.txt"


def offconv(*args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], stdin=stdin,
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def recording(tmp_path):
    p = tmp_path / "perf.txt"
    p.write_bytes(DD.read_bytes())
    return p


def _unchanged(tmp_path, recording, names):
    assert recording.read_bytes() == DD.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # no temp file left


@pytest.mark.parametrize("cmd", [[], ["report"], ["report", "--json"], ["--to", "svg"]])
def test_same_path_is_refused(tmp_path, recording, cmd):
    r = offconv(*cmd, recording, "-o", recording)
    assert r.returncode == 2
    assert r.stderr == (f"offconv: {recording}: is also an input ({recording}): "
                        "write the output elsewhere\n")
    _unchanged(tmp_path, recording, ["perf.txt"])


def test_another_spelling_a_symlink_and_a_hard_link_are_refused(tmp_path, recording):
    (tmp_path / "sub").mkdir()
    r = offconv("perf.txt", "-o", "sub/../perf.txt", cwd=tmp_path)
    assert r.returncode == 2 and "is also an input (perf.txt)" in r.stderr
    link = tmp_path / "link.txt"
    link.symlink_to(recording)
    r = offconv(recording, "-o", link)
    assert r.returncode == 2 and f"offconv: {link}: is also an input ({recording})" in r.stderr
    assert link.is_symlink()
    hard = tmp_path / "hard.txt"
    os.link(recording, hard)
    r = offconv(recording, "-o", hard)
    assert r.returncode == 2 and f"offconv: {hard}: is also an input ({recording})" in r.stderr
    _unchanged(tmp_path, recording, ["perf.txt", "sub", "link.txt", "hard.txt"])


def test_standard_input_read_from_the_output_is_refused(tmp_path, recording):
    with open(recording, "rb") as f:
        r = offconv("-", "-o", recording, stdin=f)
    assert r.returncode == 2
    assert r.stderr == (f"offconv: {recording}: is also an input (standard input): "
                        "write the output elsewhere\n")
    _unchanged(tmp_path, recording, ["perf.txt"])


def test_diff_output_naming_either_side_is_refused(tmp_path, recording):
    after = tmp_path / "after.txt"
    after.write_bytes(DD.read_bytes())
    for out in (recording, after):
        r = offconv("diff", recording, after, "--to", "folded", "-o", out)
        assert r.returncode == 2 and f"offconv: {out}: is also an input ({out})" in r.stderr
    assert after.read_bytes() == DD.read_bytes()
    _unchanged(tmp_path, recording, ["perf.txt", "after.txt"])


def test_a_new_or_other_output_is_written(tmp_path, recording):
    out = tmp_path / "out.folded"
    assert offconv(recording, "-o", out).returncode == 0 and out.stat().st_size > 0
    # writing it again over itself (an output, not an input) is allowed
    assert offconv(recording, "-o", out).returncode == 0
    # /dev/null (not a regular file: nothing to lose) stays an output, stdin or not
    with open(os.devnull, "rb") as null:
        r = offconv(recording, "--to", "folded", "-o", os.devnull, stdin=null)
    assert r.returncode == 0 and r.stderr == ""
