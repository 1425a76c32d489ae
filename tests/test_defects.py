"""Issue 9: defects a new user hit (output paths, corrupt input, filters, reports, CLI
habits). Each test failed before its fix."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv import cli
from offconv.cli import app
from offconv.errors import EXIT_INTERNAL

FIX = Path(__file__).parent / "fixtures"
E2E = FIX / "recorded" / "e2e_victim_a_small"
PS = E2E / "e2e_victim_a_small.perf-script.txt"
PSF = E2E / "e2e_victim_a_small.perf-script-F.txt"
DATA = E2E / "e2e_victim_a_small.data"
DD = FIX / "flamegraph-test" / "perf-dd-stacks-01.txt"
ROOT = Path(__file__).resolve().parents[1]


def run(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def one_line_error(r, code=2):
    assert r.exit_code == code, (r.exit_code, r.output)
    assert "Traceback" not in r.output
    err = r.stderr.strip().splitlines()
    assert err and err[0].startswith("offconv: "), r.stderr
    return err


# -- output paths -------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["-o", "nodir/sub/out.svg"], ["-o", "nodir/sub/out.folded"]])
def test_output_in_missing_directory_is_one_line_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    r = run(PS, *args)
    err = one_line_error(r)
    assert err == [f"offconv: {args[1]}: cannot write: No such file or directory"]


def test_report_output_in_missing_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_line_error(run("report", PS, "-o", "nodir/r.txt"))
    assert err[-1] == "offconv: nodir/r.txt: cannot write: No such file or directory"


def test_output_is_a_directory(tmp_path):
    (tmp_path / "adir").mkdir()
    err = one_line_error(run(PS, "-o", tmp_path / "adir", "--to", "svg"))
    assert err == [f"offconv: {tmp_path / 'adir'}: cannot write: Is a directory"]


def test_output_not_writable(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        if os.access(d, os.W_OK):
            pytest.skip("running as root: a read-only folder is writable")
        err = one_line_error(run(PS, "-o", d / "x.svg"))
        assert err == [f"offconv: {d / 'x.svg'}: cannot write: Permission denied"]
    finally:
        d.chmod(0o700)


def test_output_on_read_only_filesystem():
    if not os.path.isdir("/sys/kernel"):
        pytest.skip("no /sys")
    err = one_line_error(run(PS, "-o", "/sys/x.svg"))
    assert len(err) == 1 and err[0].startswith("offconv: /sys/x.svg: cannot write: ")


def test_internal_error_has_its_own_code_and_one_line(monkeypatch):
    from offconv import pipeline

    def boom(*a, **k):
        raise KeyError("surprise")
    monkeypatch.setattr(pipeline, "load", boom)
    r = run(PS)
    assert r.exit_code == EXIT_INTERNAL == 70
    assert r.stderr.strip().splitlines() == [
        "offconv: internal error: KeyError: 'surprise' (please report it with the command line)"]


def test_report_dash_o_json_writes_json(tmp_path):
    out = tmp_path / "r.json"
    r = run("report", PS, "-o", out)
    assert r.exit_code == 0, r.output
    assert "totals" in json.loads(out.read_text())


def test_report_dash_o_svg_is_refused(tmp_path):
    err = one_line_error(run("report", PS, "-o", tmp_path / "r.svg"))
    assert "report writes text or JSON" in err[0]
    assert not (tmp_path / "r.svg").exists()
