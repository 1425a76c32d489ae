"""Issue 9: defects a new user hit (output paths, corrupt input, filters, reports, CLI
habits). Each test failed before its fix."""
from __future__ import annotations

import gzip
import shutil
import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv import cli
from offconv.cli import app
from offconv.model.errors import EXIT_INTERNAL

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
    from offconv.run import pipeline

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


# -- corrupt input --------------------------------------------------------------------------

def _corrupt(tmp_path, name, lineno, old, new):
    lines = PS.read_text().split("\n")
    assert old in lines[lineno - 1]
    lines[lineno - 1] = lines[lineno - 1].replace(old, new, 1)
    p = tmp_path / name
    p.write_text("\n".join(lines))
    return p


def test_corrupt_timestamp_in_first_header_is_an_error(tmp_path):
    p = _corrupt(tmp_path, "t1.txt", 1, "800.691344:", "800.69x344:")
    for args in ([p], ["report", p]):
        err = one_line_error(run(*args))
        assert err[0] == f"offconv: {p}:1: expected a timestamp 'secs.frac:', got '800.69x344:'"
        assert err[1].startswith("  | victim-main 24685 [000]")


def _switch_line(n=2):
    lines = PS.read_text().split("\n")
    hits = [i + 1 for i, ln in enumerate(lines) if "sched_switch" in ln and ln[0] != "\t"]
    return hits[n], lines[hits[n] - 1]


def test_corrupt_timestamp_mid_file_strict_and_lenient(tmp_path):
    lineno, line = _switch_line(5)
    ts = line.split()[3]
    p = _corrupt(tmp_path, "t2.txt", lineno, ts, ts[:2] + "X" + ts[3:])
    err = one_line_error(run(p))
    assert err[0].startswith(f"offconv: {p}:{lineno}: expected a timestamp 'secs.frac:'")
    r = run(p, "--lenient")
    assert r.exit_code == 0
    assert f"offconv: skipped 1 malformed line (first: {p}:{lineno})" in r.stderr
    # the skipped event's callchain is not charged to the event before it
    good = run(PS).stdout
    assert len(r.stdout.splitlines()) <= len(good.splitlines())


def test_file_cut_inside_a_frame_line_is_warned(tmp_path):
    text = PS.read_text()
    cut = text.index("schedule+", 20000) + len("schedule+")
    p = tmp_path / "cut.txt"
    p.write_text(text[:cut])
    n = text[:cut].count("\n") + 1
    r = run(p)
    assert r.exit_code == 0
    assert f"offconv: {p}:{n}: the input ends inside this line" in r.stderr


def test_truncated_perf_data_passes_perf_message(tmp_path):
    if not shutil.which("perf"):
        pytest.skip("no perf")
    p = tmp_path / "trunc.data"
    p.write_bytes(DATA.read_bytes()[:100000])
    err = one_line_error(run(p))
    assert err[0].startswith(f"offconv: {p}: perf script failed: ")
    assert "empty input" not in err[0] and "exit status" not in err[0]


def test_folded_with_one_bad_line_names_it(tmp_path):
    p = tmp_path / "x.folded"
    p.write_text("a;b 1\nthis is bad\na;c 2\na;d 3\n")
    err = one_line_error(run(p))
    assert err[0].startswith(f"offconv: {p}:2: expected a folded stack")


def test_perf_script_is_not_taken_for_folded_nor_folded_for_perf_script():
    from offconv.model import registry as formats
    assert formats.detect("x", PS.read_text().split("\n")[:200]).name == "perf-script"
    assert formats.detect("x", ["a;b 1", "a;c 2"]).name == "folded"


def _perf_script(tmp_path, name, fields):
    if not shutil.which("perf"):
        pytest.skip("no perf")
    out = tmp_path / name
    with open(out, "w") as f:
        subprocess.run(["perf", "script", "-i", str(DATA), "-F", fields], stdout=f,
                       stderr=subprocess.DEVNULL, check=True)
    return out


def _json(*args):
    r = run("report", "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), r.stderr


def test_no_callchains_padded_headers(tmp_path):
    p = _perf_script(tmp_path, "nog.txt", "comm,tid,cpu,time,event,trace")
    assert p.read_text().startswith("     victim-main 24685 [000]")
    got, err = _json(p)
    want, _ = _json(PS)
    assert got["totals"] == want["totals"]
    assert err.count("no call chains") == 1 and "record with -g" in err


def test_padded_header_with_first_frame_on_the_line(tmp_path):
    p = tmp_path / "cyc.txt"
    p.write_text("            true  4211 10233.104512:          1 cycles:u:  ffffffff8e001a2b [unknown] ([unknown])\n"
                 "            true  4211 10233.104612:          1 cycles:u:  ffffffff8e001a2b [unknown] ([unknown])\n")
    r = run(p, "--tid")
    assert r.exit_code == 0, r.output
    assert r.stdout == "true-?/4211;[unknown] 2\n"


def test_no_cpu_field_keeps_blocked_time_and_says_so(tmp_path):
    p = _perf_script(tmp_path, "nocpu.txt", "comm,pid,tid,time,event,trace,ip,sym,dso")
    got, err = _json(p)
    want, _ = _json(PSF)
    assert "no cpu field" in err
    assert abs(got["totals"]["blocked_us"] - want["totals"]["blocked_us"]) <= 0.01 * want["totals"]["blocked_us"]


def test_no_dso_field_says_causes_cannot_be_read(tmp_path):
    p = _perf_script(tmp_path, "nodso.txt", "comm,tid,cpu,time,event,trace,ip,sym")
    _, err = _json(p)
    assert "no dso field" in err and "'other'" in err


# -- filters that changed other numbers ---------------------------------------------------

def _rows(d):
    return {t["tid"]: t for t in d["threads"]}


def test_filter_pid_keeps_its_threads_numbers():
    whole = _rows(_json(PSF)[0])
    for args in (["-p", "24685"], ["--filter-tid", "24686"]):
        got = _rows(_json(PSF, *args)[0])
        lh = got[24686]
        assert (lh["oncpu_us"], lh["runq_us"], lh["switches"]) == (
            whole[24686]["oncpu_us"], whole[24686]["runq_us"], whole[24686]["switches"])
    assert set(_rows(_json(PSF, "-p", "24685")[0])) == {24685, 24686}


def test_comm_selects_threads_by_final_name_and_counts_are_theirs(tmp_path):
    # lockholder (24686) starts as a thread of victim-main, under its name
    d, err = _json(PS, "--comm", "^victim-main$")
    assert set(_rows(d)) == {24685}
    whole, _ = _json(PS)
    assert sum(d["dropped"].values()) < sum(whole["dropped"].values())
    assert "switch-ins (in" not in err


def test_comm_keeps_the_fork_exec_period_under_the_parent_name(tmp_path):
    p = tmp_path / "fork.txt"
    sw = ("{c} {tid} [000] {t}: sched:sched_switch: prev_comm={c} prev_pid={tid} prev_prio=120 "
          "prev_state={st} ==> next_comm={nc} next_pid={ntid} next_prio=120\n"
          "\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\n")
    p.write_text(
        sw.format(c="sh", tid=100, t="1.000000", st="S", nc="sh", ntid=101)
        + sw.format(c="sh", tid=101, t="1.100000", st="D", nc="swapper/0", ntid=0)     # before exec
        + "swapper 0 [000] 1.300000: sched:sched_wakeup: comm=sh pid=101 prio=120 target_cpu=000\n\n"
        + sw.format(c="swapper/0", tid=0, t="1.300010", st="R", nc="sh", ntid=101)
        + sw.format(c="make", tid=101, t="1.400000", st="S", nc="swapper/0", ntid=0)   # after exec
        + "swapper 0 [000] 1.500000: sched:sched_wakeup: comm=make pid=101 prio=120 target_cpu=000\n\n"
        + sw.format(c="swapper/0", tid=0, t="1.500010", st="R", nc="make", ntid=101))
    d, _ = _json(p, "--comm", "^make$")
    assert [t["tid"] for t in d["threads"]] == [101]
    assert d["threads"][0]["blocked_us"] == 200_000 + 100_000


def test_state_is_offcputime_bitmask():
    from offconv.run.offcpu import parse_state
    assert "I" in parse_state("2") and "D" in parse_state("2")
    assert parse_state("1026") == parse_state("0x402") == frozenset("DIN")
    assert parse_state("0x100") == frozenset("K")
    d2, _ = _json(PS, "--state", "2")
    dI, _ = _json(PS, "--state", "I")
    assert _rows(dI) and set(_rows(dI)) <= set(_rows(d2))
    for v in ("1026", "0x402"):
        assert run("report", PS, "--state", v).exit_code == 0


# -- reports --------------------------------------------------------------------------------

def test_to_report_prints_notes_once():
    r = run(PS, "--to", "report")
    assert r.exit_code == 0
    note = "were missing (the previous sched_switch"
    assert r.output.count(note) == 1          # stdout and stderr together
    assert note in r.stdout


def test_hist_of_on_cpu_input_is_an_error(tmp_path):
    err = one_line_error(run(DD, "--to", "hist"))
    assert "no latencies" in err[0]
    r = run(DD, "-o", tmp_path / "h.hist")
    assert r.exit_code == 2 and not (tmp_path / "h.hist").exists()


def test_merged_inputs_span_is_the_sum_of_their_spans():
    other = FIX / "recorded" / "contention_a_1" / "contention_a_1.perf-script.txt.gz"
    a, _ = _json(PS)
    b, _ = _json(other)
    ab, _ = _json(PS, other)
    assert ab["span_us"] == a["span_us"] + b["span_us"]


def test_counts_plurals_and_zero_rows(tmp_path):
    p = tmp_path / "one.txt"
    sw = ("{c} {tid} [000] {t}: sched:sched_switch: prev_comm={c} prev_pid={tid} prev_prio=120 "
          "prev_state={st} ==> next_comm={nc} next_pid={ntid} next_prio=120\n"
          "\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\n")
    p.write_text(sw.format(c="a", tid=7, t="1.000000", st="R", nc="a", ntid=8)
                 + sw.format(c="a", tid=8, t="1.100000", st="S", nc="swapper/0", ntid=0)
                 + sw.format(c="swapper/0", tid=0, t="1.200000", st="R", nc="a", ntid=8)
                 + sw.format(c="a", tid=8, t="1.200000", st="S", nc="a", ntid=7))
    r = run("report", p)
    assert r.exit_code == 0, r.output
    assert "1 blocked period (in 1 thread) was ended by a switch-in with no wakeup seen" in r.stdout
    assert "threads were" not in r.stdout and "1 blocked periods" not in r.stdout
    d, _ = _json(p)
    assert all(c["blocked_us"] > 0 for c in d["causes"])
    assert all(s["us"] > 0 for s in d["top_stacks"])


def test_no_wakeup_note_counts_periods_and_threads():
    d, err = _json(PS)
    n = d["dropped"]["no_wakeup"]
    assert f"{n} blocked periods (in " in err and "blocked threads were" not in err


def test_stack_without_frames_is_named(tmp_path):
    p = tmp_path / "nog.txt"
    p.write_text("a 8 [000] 1.100000: sched:sched_switch: prev_comm=a prev_pid=8 prev_prio=120 "
                 "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
                 "swapper/0 0 [000] 1.200000: sched:sched_wakeup: comm=a pid=8 prio=120 target_cpu=000\n"
                 "swapper/0 0 [000] 1.300000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 "
                 "prev_prio=120 prev_state=R ==> next_comm=a next_pid=8 next_prio=120\n")
    d, err = _json(p)
    assert [s["stack"] for s in d["top_stacks"]] == ["a;[no call chain]"] * 2
    assert "no call chains" in err
    assert "of trace, 1 thread\n" in run("report", p).stdout


# -- units and the SVG legend ---------------------------------------------------------------

def test_svg_says_microseconds_like_the_report_and_countname_wins(tmp_path):
    svg = run(PS, "--to", "svg").stdout
    assert " µs, " in svg and " us, " not in svg
    custom = run(PS, "--to", "svg", "--countname", "us").stdout
    assert " us, " in custom and " µs, " not in custom


def test_svg_legend_and_state_tooltips():
    svg = run(PS, "--to", "svg").stdout
    assert '<text id="subtitle"' in svg and "blue: blocked" in svg and "orange: waiting for a CPU" in svg
    assert "[run queue] (" in svg and "waiting for a CPU [run-queue latency])</title>" in svg
    assert "; blocked [S]: interruptible sleep" in svg
    plain = run(PS, "--to", "svg", "--no-state-split").stdout
    assert "blue: blocked" not in plain
    mine = run(PS, "--to", "svg", "--subtitle", "mine").stdout
    assert ">mine</text>" in mine and "blue: blocked" not in mine


def test_ci_fails_when_browser_tests_skip():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "export OFFCONV_REQUIRE_BROWSER=1" in ci
    env = dict(os.environ, OFFCONV_REQUIRE_BROWSER="1", OFFCONV_SHARED=str(ROOT / "no-such-shared"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(ROOT / "tests" / "test_svg_browser.py")], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and "OFFCONV_REQUIRE_BROWSER=1" in r.stdout
    assert " skipped" not in r.stdout.splitlines()[-1]


def test_process_whose_stacks_all_round_to_zero_is_left_out(tmp_path):
    p = tmp_path / "tiny.txt"
    sw = ("{c} {tid} [000] {t}: sched:sched_switch: prev_comm={c} prev_pid={tid} prev_prio=120 "
          "prev_state={st} ==> next_comm={nc} next_pid={ntid} next_prio=120\n"
          "\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\n")
    p.write_text(sw.format(c="a", tid=8, t="1.000000", st="R", nc="b", ntid=9)
                 + sw.format(c="b", tid=9, t="1.000000", st="R", nc="a", ntid=8))
    r = run("report", p)
    assert r.exit_code == 0, r.output


# -- CLI habits -----------------------------------------------------------------------------

def _cli(*args, env=None):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "offconv", *args], capture_output=True,
                          text=True, env=e, cwd=ROOT, timeout=60)


def test_plain_offconv_prints_top_level_help_and_exits_2():
    r = _cli()
    assert r.returncode == 2
    assert "Commands:" in r.stderr and "report" in r.stderr and "offconv perf.txt -o flame.svg" in r.stderr
    assert "Missing argument" not in r.stderr
    h = _cli("--help")
    assert h.returncode == 0 and "Commands:" in h.stdout and "70 internal error" in h.stdout


def test_top_level_help_offers_only_commands_that_exist():
    # it said "Not available yet: 'offconv record'" after record had shipped
    h = _cli("--help").stdout
    listed = re.findall(r"^  (\w+) ", h.split("Commands:")[1], re.M)
    assert set(listed) == {"convert", "diff", "record", "report"}
    assert "not available" not in h.lower()
    for cmd in set(re.findall(r"\boffconv ([a-z]+) ", h)) - {"perf"}:
        assert cmd in listed, cmd
    r = _cli("record", "--help")
    assert r.returncode == 0 and "-a " in r.stdout and "sched_switch" in r.stdout


def test_unknown_option_is_one_line_and_a_hint():
    r = _cli(str(PS), "--bogus")
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["offconv: No such option '--bogus'.",
                                     "Try 'offconv --help' for help."]
    r = _cli("report", "--bogus")
    assert r.stderr.splitlines()[-1] == "Try 'offconv report --help' for help."
    assert len(r.stderr.splitlines()) == 2


def test_shell_completion_lists_commands():
    r = _cli(env={"_OFFCONV_COMPLETE": "bash_complete", "COMP_WORDS": "offconv rep", "COMP_CWORD": "1"})
    assert r.returncode == 0 and "plain,report" in r.stdout.split()


def test_pid_column_says_why_it_is_empty():
    text = run("report", PS).stdout
    assert "(pid -: the input carries thread ids only" in text
    assert "(pid -:" not in run("report", PSF).stdout
    rows = _rows(_json(PSF)[0])
    assert rows[24686]["pid"] == 24685
