"""Source's decoding in 1 MiB reads (an ASCII read decoded as such, the rest through the
incremental UTF-8 decoder): the same text as decoding the whole input at once, wherever
the reads cut a character, with invalid bytes replaced and CRLF turned into LF."""
from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from offconv.source import Source, _text_chunks

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
    import offconv.source as source
    real = source._text_chunks
    p = tmp_path / "in.txt"
    p.write_bytes(b"a\nb\n\n\n\nc\n\nd \xe2\x82\xac\n\n\n" * 50 + b"e\nf")
    for size in (1 << 20, 7, 3):
        monkeypatch.setattr(source, "_text_chunks", lambda stream, size=size: real(stream, size))
        src = Source(str(p))
        blocks = list(src.blocks())
        assert len(blocks) == 151
        assert blocks[:4] == [(1, "a\nb"), (6, "c"), (8, "d \u20ac"), (11, "a\nb")]
        assert blocks[-2:] == [(498, "d \u20ac"), (501, "e\nf")] and src.cut_line == 502
