"""perf script text a tester held out (tests/fixtures/heldout_perf, PROVENANCE.md there):
`-F ...,srcline` (source lines under the frames), a sched recording printed without the
`trace` field, and `-F` without `event`. The `.collapsed` files are stackcollapse-perf.pl's
output on the same inputs. Each test failed before its fix."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app
from offconv.model.options import ParseOptions
from offconv.inputs import perf_script
from offconv.inputs.perf_script.blocks import _body_stack
from offconv.inputs.perf_script.frames import is_srcline
from offconv.inputs.source import numbered_blocks

HELD = Path(__file__).parent / "fixtures" / "heldout_perf"
SRCLINE = HELD / "srcline.txt"
NOTRACE = HELD / "notrace.txt"
MIN = HELD / "min_noevent.txt"
NOEVENT_DSO = HELD / "noevent_dso.txt"


def run(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def folded(*args) -> bytes:
    r = run(*args)
    assert r.exit_code == 0, r.output
    return r.stdout_bytes


def one_line_error(r) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert "Traceback" not in r.output
    err = r.stderr.strip().splitlines()
    assert err and err[0].startswith("offconv: "), r.stderr
    assert all(line.startswith("  | ") for line in err[1:]), err
    return err[0]


def without_srclines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not line.startswith("  "))


def stacks(records) -> list:
    return [(r.task, r.event, tuple(f.name for f in r.stack)) for r in records]


# -- 1. perf script -F ...,srcline ---------------------------------------------------------

def test_srcline_matches_stackcollapse_perf():
    """Each frame line is followed by `  write.c:26` (or `  [kernel.kallsyms][addr]`,
    `  yes[5246]`): not frames (they were blank ' ' frames), as the script ignores them."""
    out = folded(SRCLINE)
    assert out == (HELD / "srcline.collapsed").read_bytes()
    assert b"; ;" not in out and b";;" not in out


@pytest.mark.parametrize("opt", ["--pid", "--all", "--addrs"])
def test_srcline_input_collapses_as_without_its_srclines(opt, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text(without_srclines(SRCLINE.read_text()))
    assert folded(SRCLINE, opt) == folded(plain, opt)


def test_srcline_in_every_parser_path():
    """parse (line by line), parse_blocks and sum_blocks's _body_stack: the same records as
    the input without its source lines."""
    text = SRCLINE.read_text()
    plain = without_srclines(text)
    opts = ParseOptions()
    lines = lambda t: enumerate(t.split("\n"), 1)  # noqa: E731
    blocks = lambda t: numbered_blocks(1, t.split("\n\n"))  # noqa: E731
    want = stacks(perf_script.parse(lines(plain), "p", opts))
    assert len(want) == 30
    assert stacks(perf_script.parse(lines(text), "s", opts)) == want
    assert stacks(perf_script.parse_blocks(blocks(text), "s", opts)) == want
    frames: dict = {}
    callers = "\tffffffff8225a101 do_syscall_64 ([kernel.kallsyms])\n" \
              "  [kernel.kallsyms][ffffffff8225a101]\n" \
              "\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)\n" \
              "  write.c:26"
    got = _body_stack(callers, False, frames)
    assert [f.name for f in got] == ["__GI___libc_write", "do_syscall_64"]


@pytest.mark.parametrize("line, expect", [
    ("  write.c:26", True),
    ("  [kernel.kallsyms][ffffffff816d1a12]", True),
    ("  yes[5246]", True),
    ("  memfd:swiftshader_jit (deleted)[b22]", True),
    ("  /home/me/my dir/x.c:12", True),
    ("\tffffffff816d1a12 do_dentry_open ([kernel.kallsyms])", False),
    ("   408ebb some_method_name+0x8b (/full/path/to/a.out)", False),  # older perfs
    ("              fd001 __open64_nocancel", False),
    ("   write.c:26", False),   # perf puts two spaces before a source line
    (" do_dentry_open ([kernel.kallsyms])", False),
    ("   ", False),
    ("", False),
])
def test_is_srcline(line, expect):
    assert is_srcline(line) is expect


# -- 2. a sched recording printed without the trace field ----------------------------------

def test_notrace_oncpu_matches_stackcollapse_perf():
    """`perf script -F comm,tid,cpu,time,event,ip,sym,dso` of sched_switch/sched_wakeup:
    --mode oncpu counts each event under its stack, as the script does (its first event
    type by default, sched:sched_wakeup here)."""
    assert folded(NOTRACE, "--mode", "oncpu") == (HELD / "notrace.collapsed").read_bytes()
    assert folded(NOTRACE, "--mode", "oncpu", "--event-filter", "sched:sched_switch") == \
        (HELD / "notrace-switch.collapsed").read_bytes()


NOTRACE_ERROR = (f"offconv: {NOTRACE}:1: expected a sched_wakeup payload "
                 "'comm=.. pid=.. prio=.. target_cpu=..' (perf script -F without 'trace'? "
                 "add it: -F ...,trace), got 'sched:sched_wakeup:' with nothing after it")


@pytest.mark.parametrize("args", [
    [], ["--mode", "auto"], ["--mode", "offcpu"], ["--mode", "blocked"], ["--mode", "runq"],
    ["--mode", "wakeup"], ["--lenient"], ["--to", "svg"]], ids=str)
def test_notrace_offcpu_error_names_the_trace_field(args, tmp_path):
    out = tmp_path / "x.folded"
    assert one_line_error(run(NOTRACE, *args, "-o", out)) == NOTRACE_ERROR
    assert one_line_error(run("report", NOTRACE)) == NOTRACE_ERROR


def test_notrace_switch_first_error_names_sched_switch(tmp_path):
    """The error is at the first event the off-CPU path needs a payload for."""
    text = NOTRACE.read_text()
    first_switch = text.index("sched:sched_switch")
    start = text.rfind("\n\n", 0, first_switch) + 2
    p = tmp_path / "sw.txt"
    p.write_text(text[start:])
    err = one_line_error(run(p, "--mode", "offcpu"))
    assert err.startswith(f"offconv: {p}:1: expected a sched_switch payload 'prev_comm=.. ")
    assert err.endswith("(perf script -F without 'trace'? add it: -F ...,trace), "
                        "got 'sched:sched_switch:' with nothing after it")


# -- 3. perf script -F without event -------------------------------------------------------

def test_header_without_event_is_read(tmp_path):
    """`perf script -F comm,tid,time,ip,sym`: `sleep  8785 80428.758804: ` is a header (it
    was 'expected a timestamp, got 80428.758804:'), read as the same header with an event;
    detected as perf script too."""
    with_event = tmp_path / "ev.txt"
    with_event.write_text(re.sub(r"^(\S.* \d+\.\d+:) $", r"\1 cpu-clock:ppp: ",
                                 MIN.read_text(), flags=re.M))
    want = folded(with_event)
    assert want.count(b"\n") > 10
    assert folded(MIN, "--from", "perf-script") == want
    assert folded(MIN) == want


def test_header_without_event_matches_stackcollapse_perf():
    """With the dso field (`-F comm,tid,cpu,time,ip,sym,dso`) the script reads every frame:
    byte for byte the same."""
    assert folded(NOEVENT_DSO) == (HELD / "noevent_dso.collapsed").read_bytes()
    assert folded(NOEVENT_DSO, "--pid") == (HELD / "noevent_dso-pid.collapsed").read_bytes()


def test_text_where_the_event_should_be_is_named(tmp_path):
    """A good timestamp followed by something that is not an event: the error says the
    event is what is missing, not the timestamp."""
    p = tmp_path / "p.txt"
    p.write_text("sleep  8785 80428.758804:    2004008 \n\tffffffff816d1a12 do_dentry_open\n\n")
    err = one_line_error(run(p, "--from", "perf-script"))
    assert err == (f"offconv: {p}:1: expected an event name after the timestamp 'secs.frac: "
                   "[period] event:' (perf script -F without 'event'? add it: -F ...,event), "
                   "got '2004008'")
    p.write_text("sleep  8785 80428.75x804: cpu-clock:\n\tffffffff816d1a12 do_dentry_open\n\n")
    assert one_line_error(run(p, "--from", "perf-script")).endswith(
        "expected a timestamp 'secs.frac:', got '80428.75x804:'")
