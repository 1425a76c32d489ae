"""The two perf script paths -- line by line (parse) and by event block with whole-callchain
caching (parse_blocks, the hot path) -- give identical records on every fixture and on odd
layouts; and the Source's line/block views agree with the file."""
from __future__ import annotations

from pathlib import Path

import pytest

from offconv.model.options import ParseOptions
from offconv.inputs.perf_script import parse, parse_blocks
from offconv.inputs.source import Source

FIX = Path(__file__).parent / "fixtures"
FILES = sorted(FIX.glob("flamegraph-test/*.txt")) + [FIX / "flamegraph-test" / "example-perf-stacks.txt.gz"] \
    + sorted(FIX.glob("recorded/*/*.perf-script*.txt*"))


def both(path: Path, **kw):
    opts = ParseOptions(**kw)
    a = list(parse(Source(str(path)).lines(), str(path), opts))
    b = list(parse_blocks(Source(str(path)).blocks(), str(path), opts))
    return a, b


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_same_records_on_fixtures(path):
    a, b = both(path)
    assert len(a) > 0
    assert a == b


def test_same_records_with_addrs():
    a, b = both(FIX / "flamegraph-test" / "perf-rust-Yamakaky-dcpu.txt", addrs=True)
    assert a == b


ODD = [
    "a 1 [000] 1.0: cycles:\n\tff f (b)\nb 2 [000] 2.0: cycles:\n\tff g (b)\n",      # no blank line between
    "# comment\na 1 [000] 1.0: cycles:\n\tff f (b)\n\n# mid comment\nb 2 [000] 2.0: cycles:\n",
    "a 1 [000] 1.0: cycles:\n\tff f (b)\n   \n\tff g (b)\n",                           # white-space-only line
    "a 1 [000] 1.0: cycles:\r\n\tff f (b)\r\n\r\nb 2 [000] 2.0: cycles:\r\n\tff g (b)\r\n",  # CRLF
    "a 1 [000] 1.0: 1 cycles:  ffff func_a (x)\n\tff main (y)\n\n\n\nb 1 1.0: c:\n",  # frame on header line
    "java 19983 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n7f01 x (y)\n",
    "a 1 [000] 1.0: cycles:",                                                          # no newline at all
]


@pytest.mark.parametrize("text", ODD)
def test_same_records_on_odd_layouts(tmp_path, text):
    p = tmp_path / "odd.txt"
    p.write_bytes(text.encode())
    from offconv.model.errors import ParseError
    try:
        a, b = both(p)
    except ParseError as e:  # then both paths must fail the same way
        with pytest.raises(ParseError) as ei:
            list(parse_blocks(Source(str(p)).blocks(), str(p), ParseOptions()))
        assert ei.value.message == e.message
        return
    assert a == b and len(a) >= 1


def test_line_numbers_in_errors_agree(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("a 1 [000] 1.0: cycles:\n\tff f (b)\n\n\n\nnot a header\n")
    from offconv.model.errors import ParseError
    for fn, view in ((parse, "lines"), (parse_blocks, "blocks")):
        with pytest.raises(ParseError) as ei:
            list(fn(getattr(Source(str(p)), view)(), str(p), ParseOptions()))
        assert ei.value.lineno == 6


@pytest.mark.parametrize("text", ["", "x", "x\n", "x\n\n", "a\r\nb", "\n\na\n\n\nb\n", "é\nü\n"])
def test_source_views_agree_with_the_text(tmp_path, text):
    p = tmp_path / "t.txt"
    p.write_bytes(text.encode())
    norm = text.replace("\r\n", "\n")
    want = norm.split("\n")
    if want and want[-1] == "":
        want.pop()
    assert [l for _, l in Source(str(p)).lines()] == want
    for lineno, block in Source(str(p)).blocks():
        assert want[lineno - 1: lineno - 1 + block.count("\n") + 1] == block.split("\n")


SCHED = sorted(p for p in FIX.glob("recorded/**/*.perf-script*.txt*") if "nocallchain" not in str(p))


@pytest.mark.parametrize("window,heads", [(4, 3), (4096, 1 << 14), (2, 1 << 14)],
                         ids=["tiny", "default", "skipping"])
def test_the_sched_header_cache_changes_no_record(monkeypatch, window, heads):
    """parse_blocks keeps sched event headers without their timestamps (_SCHED_HEADS, cleared
    when full), and parses without them for a while where they miss (_SCHED_WINDOW): every
    record the same as parse's, on every recording, whatever the sizes."""
    from offconv.inputs.perf_script import blocks as perf_script  # parse_blocks' module: its globals are set
    monkeypatch.setattr(perf_script, "_SCHED_WINDOW", window)
    monkeypatch.setattr(perf_script, "_SCHED_HEADS", heads)
    assert len(SCHED) >= 30
    for path in SCHED[::3]:
        a, b = both(path)
        assert a == b, path


def test_a_cached_sched_header_takes_each_events_time(tmp_path):
    sw = ("prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 "
          "next_prio=120")
    text = (f"a 1 [000] 1.000001: sched:sched_switch: {sw}\n\tff f (b)\n\n"
            f"a 1 [000] 2.5: sched:sched_switch: {sw}\n\tff f (b)\n\n"
            # a second "timestamp" that the header regex may read instead: never cached as one
            f"a 7 [000] 3.25: 4.5: sched:sched_switch: {sw}\n\n"
            f"a 7 [000] 3.25: 9.5: sched:sched_switch: {sw}\n\n")
    p = tmp_path / "s.txt"
    p.write_text(text)
    a, b = both(p)
    assert a == b
    assert [e.time_ns for e in b][:2] == [1_000_001_000, 2_500_000_000]
