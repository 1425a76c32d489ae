"""The two perf script paths -- line by line (parse) and by event block with whole-callchain
caching (parse_blocks, the hot path) -- give identical records on every fixture and on odd
layouts; and the Source's line/block views agree with the file."""
from __future__ import annotations

from pathlib import Path

import pytest

from offconv.options import ParseOptions
from offconv.parsers.perf_script import parse, parse_blocks
from offconv.source import Source

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
    from offconv.errors import ParseError
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
    from offconv.errors import ParseError
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
