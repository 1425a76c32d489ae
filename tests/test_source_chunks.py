"""Source's decoding in 1 MiB reads (an ASCII read decoded as such, the rest through the
incremental UTF-8 decoder): the same text as decoding the whole input at once, wherever
the reads cut a character, with invalid bytes replaced and CRLF turned into LF."""
from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from offconv.inputs.source import Source, _text_chunks

PIECES = [b"abc\n", "é".encode(), "€".encode(), b"\xff", b"\r\n", b"\r", b"xxxxx", "日本".encode(),
          b"\n\n", b"\xe2\x82"]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=40), size=st.integers(1, 9))
def test_chunks_decode_like_the_whole(parts, size):
    data = b"".join(parts)
    got = "".join(_text_chunks(io.BytesIO(data), size))
    assert got == data.decode("utf-8", "replace").replace("\r\n", "\n")


def test_block_numbers_across_small_reads(tmp_path, monkeypatch):
    """Line numbers of blocks (and of the cut last line) when every read is a few bytes, so
    that block lists end anywhere: 10 lines a repetition, three or more newlines in a row."""
    import offconv.inputs.source as source
    real = source._text_chunks
    p = tmp_path / "in.txt"
    p.write_bytes(b"a\nb\n\n\n\nc\n\nd \xe2\x82\xac\n\n\n" * 50 + b"e\nf")
    for size in (1 << 20, 7, 3):
        monkeypatch.setattr(source, "_text_chunks", lambda stream, size=size, **kw: real(stream, size, **kw))
        src = Source(str(p))
        blocks = list(src.blocks())
        assert len(blocks) == 151
        assert blocks[:4] == [(1, "a\nb"), (6, "c"), (8, "d \u20ac"), (11, "a\nb")]
        assert blocks[-2:] == [(498, "d \u20ac"), (501, "e\nf")] and src.cut_line == 502


def _one_line_events(n: int) -> list:
    return [f"{'sh':>16} {i:>6} [000] {i:6d}.000001:     1001001 cpu-clock:ppp:  "
            f"ffffffff81000000 f{i % 7} ([kernel.kallsyms])" for i in range(n)]


def test_a_run_without_blank_lines_is_cut_between_events(tmp_path, monkeypatch):
    """perf script of a recording without call chains has no blank line: the run is handed
    on in pieces of at most about RUN_LIMIT (it was held whole, grown chunk by chunk), cut
    only between two one-line events, with every line's number right; a callchain event
    in the middle is never cut."""
    import offconv.inputs.source as source
    real = source._text_chunks
    lines = _one_line_events(400)
    chain = ["java 9 [000] 5.000001: 1 cycles:"] + [f"\tffff{k} g{k} (/a)" for k in range(300)]
    lines[200:200] = chain           # an event with a long callchain (no blank lines around)
    p = tmp_path / "in.txt"
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(source, "RUN_LIMIT", 2000)
    monkeypatch.setattr(source, "_text_chunks", lambda stream, size=1000, **kw: real(stream, size, **kw))
    blocks = list(Source(str(p)).blocks())
    assert len(blocks) > 10
    # (the first read is the 200 lines Source sniffs the format from: a chunk of its own)
    assert blocks[0][1].count("\n") < 200
    assert max(len(b) for _, b in blocks[1:]) < 2000 + 1000 + len("\n".join(chain))
    rebuilt = []
    for lineno, block in blocks:
        assert len(rebuilt) == lineno - 1    # the block's number is its first line's
        rebuilt.extend(block.split("\n"))
    assert rebuilt == lines
    # the callchain stays with its header, in one block
    assert any(b.startswith(chain[0]) and b.count("\n") >= 300 for _, b in blocks)


def test_a_run_of_callchain_lines_is_never_cut(tmp_path, monkeypatch):
    import offconv.inputs.source as source
    lines = ["java 9 [000] 5.000001: 1 cycles:"] + [f"\tffff{k} g{k} (/a)" for k in range(3000)]
    p = tmp_path / "in.txt"
    p.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(source, "RUN_LIMIT", 2000)
    assert list(Source(str(p)).blocks()) == [(1, "\n".join(lines))]
