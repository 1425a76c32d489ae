"""The command line contract of DESIGN.md: default command, output selection, atomic
writes, one-line errors with exit 2 and no traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
DD = FIX / "flamegraph-test" / "perf-dd-stacks-01.txt"
DD_PID = FIX / "flamegraph-test" / "results" / "perf-dd-stacks-01-collapsed-pid.txt"


def run(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def test_default_command_writes_folded_to_stdout():
    r = run(DD, "--pid")
    assert r.exit_code == 0
    assert r.stdout == DD_PID.read_text()


def test_dash_o_dash_is_stdout_and_stdin_is_dash():
    r = run("-", "--pid", "-o", "-", input=DD.read_text())
    assert r.exit_code == 0 and r.stdout == DD_PID.read_text()


@pytest.mark.parametrize("name", ["out.folded", "out.collapsed", "out.txt"])
def test_suffix_selects_folded(tmp_path, name):
    out = tmp_path / name
    assert run(DD, "--pid", "-o", out).exit_code == 0
    assert out.read_text() == DD_PID.read_text()


def test_to_wins_over_suffix(tmp_path):
    out = tmp_path / "x.svg"
    r = run(DD, "--pid", "--to", "folded", "-o", out)
    assert r.exit_code == 0 and out.read_text() == DD_PID.read_text()


def test_unknown_suffix_is_a_usage_error(tmp_path):
    r = run(DD, "-o", tmp_path / "x.bin")
    assert r.exit_code == 2
    assert "cannot tell the output format" in r.stderr and "--to" in r.stderr


def test_bad_input_never_overwrites_the_output(tmp_path):
    out = tmp_path / "keep.folded"
    out.write_text("precious\n")
    bad = tmp_path / "bad.txt"
    bad.write_text(DD.read_text() + "\nthis line is not perf script\n")
    r = run(bad, "-o", out)
    assert r.exit_code == 2
    assert out.read_text() == "precious\n"
    # and no temporary file is left behind beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "keep.folded"]


def test_error_form_file_line_expected_got(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 [000] 1.0: cycles:\n\tff f (b)\n\nnot a header line\n")
    r = run(bad)
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert lines[0] == (f"offconv: {bad}:4: expected an event header 'comm [pid/]tid [cpu] secs.frac: "
                        "[period] event:', got a line that is neither an event header nor a stack frame")
    assert lines[1] == "  | not a header line"
    assert len(lines) == 2


def test_unrecognised_and_empty_inputs(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01binary stuff\n")
    r = run(junk)
    assert r.exit_code == 2
    assert r.stderr == (f"offconv: {junk}: not a recognised profile (tried: perf-script, folded, "
                        "bcc-hist, bpftrace, bpftrace-json)\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = run(empty)
    assert r.exit_code == 2 and r.stderr == f"offconv: {empty}: empty input\n"
    r = run(tmp_path / "missing.txt")
    assert r.exit_code == 2 and "cannot open" in r.stderr


def test_recognised_input_with_no_events_is_empty_output_and_a_warning(tmp_path):
    only_header = tmp_path / "h.txt"
    only_header.write_text("# ========\n# captured on: x\n# ========\n#\n")
    r = run(only_header)
    assert r.exit_code == 0
    assert r.stdout == ""
    assert "no events" in r.stderr


def test_lenient_skips_and_reports(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 [000] 1.0: cycles:\n\tff f (b)\n\nnot a header line\n")
    r = run(bad, "--lenient")
    assert r.exit_code == 0
    assert r.stdout == "a;f 1\n"
    assert f"skipped 1 malformed line (first: {bad}:4)" in r.stderr


def test_record_passes_its_arguments_to_the_recorder():
    r = run("record", "--bogus-option")
    assert r.exit_code == 2      # record.sh's usage error, passed through


def test_usage_errors_exit_2():
    assert run(DD, "--mode", "bogus").exit_code == 2
    assert run(DD, "-U", "-K").exit_code == 2
    assert run(DD, "-p", "abc").exit_code == 2
    assert run(DD, "--comm", "(").exit_code == 2
    assert run().exit_code == 2


def test_folded_input_round_trips(tmp_path):
    r = run(DD_PID)
    assert r.exit_code == 0 and r.stdout == DD_PID.read_text()


def test_multiple_inputs_are_merged():
    r = run(DD, DD, "--pid")
    want = "".join(f"{s} {int(c) * 2}\n" for s, c in
                   (l.rsplit(" ", 1) for l in DD_PID.read_text().splitlines()))
    assert r.stdout == want


def test_python_dash_m_and_console_script_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("zzz\n\tnot really\n")
    p = subprocess.run([sys.executable, "-m", "offconv", str(bad)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and p.stderr.startswith("offconv: ")
    p = subprocess.run([sys.executable, "-m", "offconv", str(DD), "--pid"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == DD_PID.read_text()


def test_closed_pipe_ends_quietly():
    src = FIX / "flamegraph-test" / "perf-vertx-stacks-01.txt"
    p = subprocess.run(f"{sys.executable} -m offconv {src} | head -1", shell=True,
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "" and p.stdout.count("\n") == 1


def test_report_thresholds_change_the_verdict():
    """The verdict's thresholds are options: raising the run-queue ones turns a capacity
    verdict into on-cpu on the contention recording."""
    import json
    src = FIX / "recorded" / "contention_a_1" / "contention_a_1.perf-script.txt.gz"
    default = json.loads(run("report", src, "--json").stdout)
    assert default["verdict"]["answer"] == "capacity"
    raised = json.loads(run("report", src, "--json", "--runq-share", "0.99",
                            "--runq-p99", "10000000").stdout)
    assert raised["verdict"]["answer"] == "on-cpu"
    assert run("report", src, "--runq-share", "2").exit_code == 2
