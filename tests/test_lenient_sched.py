"""--lenient over sched events, and a perf script input cut short inside its last line.

A malformed sched payload is an input error naming what a payload looks like and what
stands there (``expected ..., got ...``); with --lenient the event is skipped and counted
like any malformed line (the warning, the report's ``dropped.malformed_lines``), and the
intervals around it are those of the same recording with that event lost. The last line
of an input that ends inside it (a killed perf script) is never an error: the event is
left out and the cut is warned of; a malformed line elsewhere stays an error."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app
from test_parallel import run, split_all  # noqa: F401 (a fixture)
from test_sched_split import split_at  # noqa: F401 (a fixture)

RECORDING = Path(__file__).parent / "fixtures" / "recorded" / "victim_a_1" / \
    "victim_a_1.perf-script.txt.gz"
BAD_SWITCH = "prev_comm=x prev_pid=?? garbage"
BAD_WAKEUP = "comm=victim-main pid=?? oops"
CUT_WARNING = "the input ends inside this line (a file cut short?)"


def events() -> list:
    """The recording's events, each its block of lines with the blank line after it."""
    text = gzip.decompress(RECORDING.read_bytes()).decode()
    return [b + "\n\n" for b in text.rstrip("\n").split("\n\n")]


def middle(evs: list, kind: str) -> int:
    """The index of the workload's ``kind`` event nearest the middle of the recording."""
    for i in range(len(evs) // 2, len(evs)):
        header = evs[i].split("\n", 1)[0]
        if f"sched:{kind}:" in header and "victim-" in header.partition(f"{kind}:")[2]:
            return i
    raise AssertionError(f"no {kind} event of the workload")


def with_payload(evs: list, i: int, payload: str) -> str:
    header, _, rest = evs[i].partition("\n")
    head = header[:header.index(": ", header.index("sched:")) + 2]
    return "".join(evs[:i]) + head + payload + "\n" + rest + "".join(evs[i + 1:])


def lineno(evs: list, i: int) -> int:
    return sum(e.count("\n") for e in evs[:i]) + 1


def cli(*args: str):
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.output


def folded(path: Path, *args: str) -> tuple:
    code, out = cli(str(path), "--to", "folded", *args)
    return code, out


def report(path: Path, *args: str) -> dict:
    r = CliRunner().invoke(app, ["report", str(path), "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def split_output(out: str) -> tuple:
    """(folded lines, offconv: lines) of a CliRunner output (stdout and stderr mixed)."""
    lines = out.splitlines()
    return ([x for x in lines if not x.startswith(("offconv:", "  | "))],
            [x for x in lines if x.startswith(("offconv:", "  | "))])


@pytest.mark.parametrize("kind,payload,expected", [
    ("sched_switch", BAD_SWITCH, "a sched_switch payload 'prev_comm=.. prev_pid=.."),
    ("sched_wakeup", BAD_WAKEUP, "a wakeup payload 'comm=.. pid=.. prio=.."),
])
def test_malformed_payload_is_an_error_with_what_stands_there(tmp_path, kind, payload, expected):
    evs = events()
    i = middle(evs, kind)
    bad = tmp_path / "bad.txt"
    bad.write_text(with_payload(evs, i, payload))
    code, out = cli(str(bad), "-o", str(tmp_path / "x.svg"))
    assert code == 2
    first, detail = out.splitlines()[:2]
    assert first.startswith(f"offconv: {bad}:{lineno(evs, i)}: expected {expected}")
    assert first.endswith(f", got '{payload}'"), first
    assert detail.startswith("  | ") and detail.endswith(payload)
    assert "Traceback" not in out and not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("kind,payload", [("sched_switch", BAD_SWITCH),
                                          ("sched_wakeup", BAD_WAKEUP)])
def test_lenient_skips_a_malformed_payload_as_a_lost_event(tmp_path, kind, payload):
    evs = events()
    i = middle(evs, kind)
    bad, lost = tmp_path / "bad.txt", tmp_path / "lost.txt"
    bad.write_text(with_payload(evs, i, payload))
    lost.write_text("".join(evs[:i] + evs[i + 1:]))   # the same event lost by the recording
    code, out = folded(bad, "--lenient")
    assert code == 0, out
    stacks, messages = split_output(out)
    assert f"offconv: skipped 1 malformed line (first: {bad}:{lineno(evs, i)})" in messages
    code, lost_out = folded(lost)
    assert code == 0 and stacks == split_output(lost_out)[0]
    # the intervals around it are those of the lost event: what the machine already does
    # for a missing switch (an inferred switch-in), nothing invented
    got, want = report(bad, "--lenient"), report(lost)
    assert got["dropped"].pop("malformed_lines") == 1
    assert got["dropped"] == want["dropped"]
    assert got["totals"] == want["totals"] and got["threads"] == want["threads"]
    if kind == "sched_switch":
        whole = report(Path(RECORDING))
        assert want["dropped"] != whole["dropped"]   # losing it is seen: a switch inferred
        assert want["dropped"].get("inferred_switch_in", 0) > whole["dropped"].get(
            "inferred_switch_in", 0)


def test_report_json_lists_the_skipped_lines(tmp_path):
    evs = events()
    i, j = middle(evs, "sched_switch"), middle(evs, "sched_wakeup")
    text = with_payload(evs, i, BAD_SWITCH)
    bad = tmp_path / "bad.txt"
    bad.write_text(text.replace(evs[j], "garbage header line\n" + evs[j]))
    d = report(bad, "--lenient")
    assert d["dropped"]["malformed_lines"] == 2
    assert any(w.startswith("skipped 2 malformed lines (first: ") for w in d["warnings"])
    r = CliRunner().invoke(app, ["report", str(bad), "--lenient"])
    assert r.exit_code == 0 and "malformed_lines" in r.stdout


def test_an_on_cpu_report_lists_the_skipped_lines_too(tmp_path):
    p = tmp_path / "oncpu.txt"
    p.write_text("java 10 [000] 1.000001: cycles:\n\tffffffff81000000 f+0x1 ([kernel.kallsyms])\n\n"
                 "not a header\n\n"
                 "java 10 [000] 1.000002: cycles:\n\tffffffff81000000 f+0x1 ([kernel.kallsyms])\n\n")
    assert report(p, "--lenient")["dropped"] == {"malformed_lines": 1}


def cut_inside_last_header(evs: list, keep: float = 0.6) -> tuple:
    """(text cut inside the header of the last event, the text without that event)."""
    header = evs[-1].split("\n", 1)[0]
    assert "sched:" in header
    return "".join(evs[:-1]) + header[:int(len(header) * keep)], "".join(evs[:-1])


@pytest.mark.parametrize("keep", [0.2, 0.6, 0.95])
@pytest.mark.parametrize("args", [(), ("--mode", "oncpu"), ("--mode", "wakeup")])
def test_a_header_cut_short_at_the_end_is_warned_of_not_an_error(tmp_path, keep, args):
    evs = events()
    text, whole = cut_inside_last_header(evs, keep)
    cut, before = tmp_path / "cut.txt", tmp_path / "before.txt"
    cut.write_text(text)
    before.write_text(whole)
    code, out = folded(cut, *args)
    assert code == 0, out
    stacks, messages = split_output(out)
    assert f"offconv: {cut}:{lineno(evs, len(evs) - 1)}: {CUT_WARNING}" in " ".join(messages)
    assert stacks == split_output(folded(before, *args)[1])[0]


def test_a_line_cut_short_elsewhere_stays_an_error(tmp_path):
    evs = events()
    i = middle(evs, "sched_switch")
    header, _, rest = evs[i].partition("\n")
    mid = tmp_path / "mid.txt"   # a header cut short, the rest of the recording after it
    mid.write_text("".join(evs[:i]) + header[:len(header) // 2] + "\n" + rest
                   + "".join(evs[i + 1:]))
    code, out = folded(mid)
    assert code == 2 and out.startswith(f"offconv: {mid}:{lineno(evs, i)}: expected "), out
    assert ", got " in out.splitlines()[0]
    assert folded(mid, "--lenient")[0] == 0
    last = tmp_path / "last.txt"  # the last line malformed but whole (it ends with a newline)
    last.write_text(cut_inside_last_header(evs)[0] + "\n")
    code, out = folded(last)
    assert code == 2 and f"{last}:{lineno(evs, len(evs) - 1)}: expected " in out


def test_a_cut_header_at_the_end_of_a_split_sched_input(monkeypatch, tmp_path, split_at):
    evs = events()
    cut = tmp_path / "cut.txt"
    cut.write_text(cut_inside_last_header(evs)[0])
    serial = run(monkeypatch, tmp_path, "1", cut, "--to", "folded")
    assert serial[0] == 0 and CUT_WARNING in serial[1] and serial[2]
    for at in (0.3, 0.7):
        split_at.at = at
        split_at.calls.clear()
        assert run(monkeypatch, tmp_path, "2", cut, "--to", "folded") == serial
        assert split_at.calls == [True]


def test_a_cut_header_at_the_end_of_a_split_samples_input(monkeypatch, tmp_path, split_all):
    block = ("java 10 [000] {t}.000001: cycles:\n"
             "\tffffffff81000000 f+0x1 ([kernel.kallsyms])\n\tffffffff81000100 g+0x1 (/x.so)\n\n")
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(block.format(t=i) for i in range(1, 200)) + "java 10 [000] 300.00")
    serial = run(monkeypatch, tmp_path, "1", cut, "--to", "folded")
    assert serial[0] == 0 and CUT_WARNING in serial[1] and serial[2] == b"java;g;f 199\n"
    split_all.clear()
    assert run(monkeypatch, tmp_path, "2", cut, "--to", "folded") == serial
    assert split_all == [True]
