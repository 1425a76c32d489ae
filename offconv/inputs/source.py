"""Input sources: a path, '-' (stdin), gzip, xz or bzip2 (by magic, streamed), or a binary
input format of the registry (perf.data, by magic, converted to text through a pipe,
streamed). Lines come numbered, without '\\n'; a UTF-8 byte order mark at the start is
dropped."""
from __future__ import annotations

import gzip
import codecs
import os
import re
import sys
from typing import Iterable, Iterator, Optional

from offconv.inputs.utf8 import DECODING as _DECODING
from offconv.model.errors import OffconvError, ParseError

GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
# "BZh", the block size '1'-'9', then a block's magic (pi) or the end of an empty stream's (sqrt pi)
BZIP2_MAGIC = re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
# compressions Python 3.11's standard library cannot read: (magic, name)
UNREADABLE = ((b"\x28\xb5\x2f\xfd", "zstd"), (b"\x04\x22\x4d\x18", "lz4"))
MAGIC_BYTES = 10
SNIFF_LINES = 200
BOM = "\ufeff"


class Source:
    """An opened input. ``head`` holds the first lines for format sniffing. The content is
    then read once, either as ``lines()`` -- (lineno, text) -- or as ``blocks()`` --
    (lineno of its first line, text) of the runs of lines between blank lines, the shape
    of perf script events, for parsers that cache whole callchains."""

    def __init__(self, path: str, kind: str = "text", span: Optional[tuple] = None,
                 first_lineno: int = 1, demangle_here: bool = True,
                 kallsyms: Optional[str] = None, lenient: bool = False):
        self.path = path
        self.lenient = lenient     # damaged compressed data: use what was read, and say so
        self._counted = None       # a compressed input's decompressed stream (_Counted)
        self._kallsyms = kallsyms  # a binary input's converter: perf script --kallsyms
        self.notes: list = []      # what its converter warned of (perf_data.convert)
        # a binary input's converter may leave C++/Rust names to offconv (perf script
        # --no-demangle: offconv.inputs.demangle); ``mangled`` says whether it did
        self._demangle_here = demangle_here
        self.span = span  # (start, end) bytes of a plain file: one part of a split input
        self.first_lineno = first_lineno
        self.kind = kind  # "text", "gzip", "xz", "bzip2", or the name of a binary input format
        self.binary_format = None  # the InputFormat converted from (perf.data), if any
        self._finish = None        # its converter's finish(): raises on failure
        self.cut_line: Optional[int] = None  # the last line, when it has no final newline
        self._cut_text: Optional[str] = None  # lines(): the text of that line
        self._read_errors: tuple = (OSError, EOFError)  # a decompressor's, besides
        self.next_lineno: Optional[int] = None  # after block_lists(): the line after the last
        self._stream = self._open()
        self.mangled = bool(getattr(self._stream, "mangled", False))
        # invalid UTF-8 read as U+FFFD: [how many sequences, the first's byte in the text read]
        self.invalid_utf8: list = [0, None]
        self._chunks = _text_chunks(self._stream, invalid=self.invalid_utf8,
                                    start=span[0] if span else 0)
        self._first = self._read_first()
        self.head: list[str] = self._first.split("\n", SNIFF_LINES)[:SNIFF_LINES]
        if self.head and self.head[-1] == "" and self._first.endswith("\n"):
            self.head.pop()
        if self._finish is not None and not self._first:
            self._check_converter()   # no output at all: perf's own error, if it failed

    def _read_first(self) -> str:
        """Decoded text up to at least SNIFF_LINES lines (or the end)."""
        parts = []
        try:
            for chunk in self._chunks:
                parts.append(chunk)
                if sum(p.count("\n") for p in parts) > SNIFF_LINES:
                    break
        except self._read_errors as e:
            self._damaged(e)
            self._chunks = iter(())
        if self._counted is not None and self._counted.error is not None:
            # the damage is in the first chunk: said now, not as the garbage's parse error
            e, self._counted.error = self._counted.error, None
            self._damaged(e)
            self._chunks = iter(())
        first = "".join(parts)
        if first.startswith(BOM) and not self.span_is_child():
            first = first[1:]  # a UTF-8 byte order mark (Windows editors) is no frame's text
        return first

    def _all_chunks(self) -> Iterator[str]:
        try:
            if self._first:
                yield self._first
            yield from self._chunks
        except self._read_errors as e:
            self._damaged(e)
        finally:
            self.close()
        self._check_converter()

    def _damaged(self, e: Exception) -> None:
        """A read error: one line naming the file (a compressed stream: corrupt or cut
        short, after how many of its bytes); with --lenient, a damaged compressed input
        ends there, and a note says how much of it was used."""
        if self._counted is None:
            raise OffconvError(f"{self.path}: read error: {e}") from None
        n = self._counted.count
        truncated = isinstance(e, EOFError)
        what = (f"truncated {self.kind} data (after {n} bytes: the compressed stream ends early)"
                if truncated else f"corrupt {self.kind} data (after {n} bytes)")
        if not self.lenient:
            raise OffconvError(f"{self.path}: {what}; --lenient reads what comes before") from None
        self.notes.append(f"{self.path}: {what}: --lenient used the {n} bytes before the damage")

    def lines(self) -> "Lines":
        """(number, text) of every line, numbered from ``first_lineno``; at the end,
        ``next_lineno`` is the number the line after the last would have."""
        return Lines(self, enumerate(_split(self._all_chunks(), "\n", self._cut, self._ended),
                                     self.first_lineno))

    def _ended(self, pieces: int) -> None:
        self.next_lineno = self.first_lineno + pieces

    def _cut(self, pieces: int, last: str) -> None:
        """The input ended inside a line (a file cut short): remember its number."""
        self.cut_line = pieces + self.first_lineno - 1
        self._cut_text = last

    def blocks(self) -> Iterator[tuple[int, str]]:
        """Runs of non-blank lines, without their final newline, with the number of their
        first line. Lines of only white space count as blank for this split only when they
        are empty; parsers must accept a block that holds anything."""
        for lineno, pieces in self.block_lists():
            yield from numbered_blocks(lineno, pieces)

    def block_lists(self) -> Iterator[tuple[int, list]]:
        """The same blocks a list at a time (about 1 MiB of text each), for a consumer
        that needs a block's line number only now and then: (number of the first line of
        the list's first piece, pieces). A piece is a block as blocks() gives it, except
        that it may be empty or start with newlines (a run of three or more);
        ``numbered_blocks`` turns a list into blocks()'s (lineno, block)."""
        lineno = self.first_lineno
        rest = ""
        for chunk in self._all_chunks():
            text = rest + chunk if rest else chunk
            pieces = text.split("\n\n")
            rest = pieces.pop()
            if pieces:
                yield lineno, pieces
                lineno += text.count("\n") - rest.count("\n")
            if len(rest) > RUN_LIMIT:
                # no blank line for that long: events of one line each (perf script of a
                # recording without call chains); handed on up to the last event line that
                # starts there, so that memory stays bounded (it held the whole input,
                # growing it chunk by chunk, quadratic in its size)
                k = event_line_cut(rest)
                if k > 0:
                    head, rest = rest[:k - 1], rest[k:]
                    yield lineno, [head]
                    lineno += head.count("\n") + 1
        self.next_lineno = lineno + rest.count("\n")
        if rest.endswith("\n"):
            rest = rest[:-1]
        elif rest:  # the input ended inside a line (a file cut short): remember its number
            stripped = rest.lstrip("\n")
            self.cut_line = lineno + (len(rest) - len(stripped)) + stripped.count("\n")
        if rest:
            yield lineno, [rest]

    def span_is_child(self) -> bool:
        """The second part of a split input (read by the child: the parent shows progress)."""
        return self.span is not None and self.span[0] > 0

    def _open(self):
        path = self.path
        if path == "-":
            raw = sys.stdin.buffer
            magic = raw.peek(MAGIC_BYTES)[:MAGIC_BYTES] if hasattr(raw, "peek") else b""
            if sys.stderr.isatty():
                raw = _Progress(raw, None, "stdin")   # from PROGRESS_BYTES read on
        else:
            try:
                raw = open(path, "rb")
            except OSError as e:
                raise OffconvError(f"{path}: cannot open: {e.strerror}") from None
            if os.path.isdir(path):
                raise OffconvError(f"{path}: is a directory")
            magic = raw.read(MAGIC_BYTES)
            raw.seek(0)
            if self.span is not None:
                raw = _Range(raw, *self.span)
            if sys.stderr.isatty() and not self.span_is_child():
                size = os.fstat(raw.fileno()).st_size
                total = (self.span[1] - self.span[0]) if self.span else size
                if size >= PROGRESS_BYTES:
                    raw = _Progress(raw, total, path)
        if magic.startswith(GZIP_MAGIC):
            import zlib
            self.kind = "gzip"
            self._read_errors = (OSError, EOFError, zlib.error)
            self._counted = _Counted(gzip.GzipFile(fileobj=raw))
            return self._counted
        if magic.startswith(XZ_MAGIC):
            import lzma
            self.kind = "xz"
            self._read_errors = (OSError, EOFError, lzma.LZMAError)
            self._counted = _Counted(lzma.LZMAFile(raw))
            return self._counted
        if BZIP2_MAGIC.match(magic):
            import bz2
            self.kind = "bzip2"
            self._read_errors = (OSError, EOFError, ValueError)
            self._counted = _Counted(bz2.BZ2File(raw))
            return self._counted
        for mag, name in UNREADABLE:
            if magic.startswith(mag):
                if path != "-":
                    raw.close()
                shown = "FILE" if path == "-" else path
                raise OffconvError(f"{path}: is {name}-compressed: decompress it first "
                                   f"({name} -dc {shown} | offconv -)")
        from offconv.model.registry import by_magic
        binary = by_magic(magic)
        if binary is not None:
            self.kind = binary.name
            self.binary_format = binary
            if path != "-":
                raw.close()
            stream, self._finish = binary.convert(path, self._demangle_here, self._kallsyms)
            if sys.stderr.isatty() and not self.span_is_child():
                stream = _Progress(stream, None, f"{path}: perf script")
            return stream
        return raw  # binary: _text_chunks reads big blocks and decodes them itself

    def _check_converter(self):
        if self._finish is not None:
            finish, self._finish = self._finish, None
            self.notes = finish() or []

    def close(self):
        if self.path != "-":
            try:
                self._stream.close()
            except Exception:
                pass


class Lines:
    """Source.lines(): iterates as (number, text) -- the iterator is the C one, so a
    parser's loop costs no more than over enumerate. ``last_line_whole(complete)``: a
    parser whose records are single lines calls it after the last; when the input ended
    without a final newline and ``complete(text of the last line)`` is true (the line
    parses), that line was not cut short: no warning is due."""

    __slots__ = ("_source", "_lines")

    def __init__(self, source: "Source", lines: Iterator[tuple[int, str]]):
        self._source, self._lines = source, lines

    def __iter__(self) -> Iterator[tuple[int, str]]:
        return self._lines

    def __next__(self) -> tuple[int, str]:
        return next(self._lines)

    def last_line_whole(self, complete) -> None:
        src = self._source
        if src.cut_line is not None and src._cut_text is not None and complete(src._cut_text):
            src.cut_line = src._cut_text = None


PROGRESS_BYTES = 64 << 20  # inputs this long show their progress on a terminal's stderr


class _Progress:
    """Bytes read of the total and the rate, on stderr (a terminal) twice a second; the
    line is cleared at the end. With no total (a pipe, perf script's output) the bytes read
    so far, once there are PROGRESS_BYTES of them."""

    def __init__(self, raw, total: Optional[int], path: str):
        import time
        self._raw, self._total, self._path = raw, total, path
        self._clock = time.monotonic
        self._t0 = self._next = self._clock() + 0.5
        self._t0 -= 0.5
        self._done = 0
        self._shown = False

    def read(self, size: int) -> bytes:
        data = self._raw.read(size)
        self._done += len(data)
        now = self._clock()
        if not data:
            if self._shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
        elif now >= self._next and (self._total is not None or self._done >= PROGRESS_BYTES):
            self._next = now + 0.5
            self._shown = True
            rate = self._done / 1e6 / max(now - self._t0, 1e-6)
            of = "" if self._total is None else f" of {self._total / 1e6:.0f}"
            sys.stderr.write(f"\roffconv: {self._path}: {self._done / 1e6:.0f}{of} MB read "
                             f"({rate:.0f} MB/s)\033[K")
            sys.stderr.flush()
        return data

    def read1(self, size: int = -1) -> bytes:
        return self.read(size if size > 0 else 1 << 20)

    def fileno(self):
        return self._raw.fileno()

    def close(self):
        self._raw.close()


class _Range:
    """Bytes [start, end) of an open file, read like the file itself."""

    def __init__(self, raw, start: int, end: int):
        raw.seek(start)
        self._raw, self._left = raw, end - start

    def read(self, size: int) -> bytes:
        data = self._raw.read(min(size, self._left)) if self._left > 0 else b""
        self._left -= len(data)
        return data

    def fileno(self):
        return self._raw.fileno()

    def close(self):
        self._raw.close()


# the longest run of lines without a blank line block_lists holds before it cuts it at an
# event line: small, so that a run is handed on with each read (perf.data: as perf script
# writes it; held until 2 MiB, the parse of a recording without call chains started 0.1 s
# late), while the cut, a few rfinds, stays rare next to the parse of a read's lines
RUN_LIMIT = 1 << 16
# the start of an event line of perf script: not a callchain line (those start with a tab,
# or with spaces in old perfs: never cut there), with a timestamp "secs.frac: "
EVENT_LINE = re.compile(r"(?=[^\t\n])[^\n]{0,300}? \d+\.\d+: ")
CUT_TRIES = 64


def event_line_cut(text: str) -> int:
    """The offset of the last line of ``text`` (its last may be cut short: it stays) that
    starts an event and follows another event's line -- a cut there falls between two
    one-line events, never inside a callchain -- or 0 when none of its last ``CUT_TRIES``
    lines does (a callchain; a format without timestamps)."""
    match = EVENT_LINE.match
    k = text.rfind("\n")           # a line ends here; the next one starts at k + 1
    for _ in range(CUT_TRIES):
        if k <= 0:
            return 0
        j = text.rfind("\n", 0, k)  # the line before starts at j + 1 (0 when j is -1)
        if k + 1 < len(text) and match(text, k + 1) and match(text, j + 1):
            return k + 1
        k = j
    return 0


def first_event_line_cut(text: str) -> Optional[int]:
    """event_line_cut from the start: the offset of the first line of ``text`` (read from
    anywhere: its first line may be cut, its last too) that starts an event and follows
    another event's line, or None."""
    match = EVENT_LINE.match
    p = text.find("\n")        # the first complete line starts at p + 1
    for _ in range(CUT_TRIES):
        if p < 0:
            return None
        q = text.find("\n", p + 1)
        if q < 0:
            return None
        if match(text, p + 1) and match(text, q + 1) and text.find("\n", q + 1) > 0:
            return q + 1
        p = q
    return None


def numbered_blocks(lineno: int, pieces: list) -> Iterator[tuple[int, str]]:
    """One list of Source.block_lists() -> (number of the block's first line, block), empty
    pieces left out."""
    for block in pieces:
        start = lineno
        lineno += block.count("\n") + 2
        if block.startswith("\n"):
            stripped = block.lstrip("\n")
            start += len(block) - len(stripped)
            block = stripped
        if block:
            yield start, block


class _Counted:
    """A decompressed stream that counts the bytes it gave, read in PIECE-sized parts so
    that damage costs only the part it is in: the bytes before it are given first, the
    error on the next read (--lenient keeps them; the error says where it was met)."""

    PIECE = 64 << 10

    def __init__(self, stream):
        self.stream = stream
        self.count = 0
        self.error: Optional[BaseException] = None

    def read(self, n: int = -1) -> bytes:
        if self.error is not None:
            e, self.error = self.error, None
            raise e
        out, got = [], 0
        while n < 0 or got < n:
            try:
                # read1: one decompression step, so that what it gave before the damage is
                # kept (read() of a GzipFile loses a piece's good part when its end is bad)
                piece = self.stream.read1(self.PIECE if n < 0 else min(self.PIECE, n - got))
            except Exception as e:   # (the decompressor's own: zlib.error, LZMAError, OSError...)
                if not out:
                    raise
                self.error = e
                break
            if not piece:
                break
            out.append(piece)
            got += len(piece)
        data = b"".join(out)
        self.count += len(data)
        return data

    def close(self) -> None:
        self.stream.close()


def _text_chunks(stream, size: int = 1 << 20, invalid: Optional[list] = None,
                 start: int = 0) -> Iterator[str]:
    """The input as decoded text in ~1 MiB chunks: UTF-8 (invalid bytes replaced by U+FFFD,
    and counted in ``invalid``: [sequences, the first's offset, from ``start``]), CRLF
    turned into LF. Reading big blocks is much faster than a text file's line iteration, and
    on a pipe one read waits for a full block instead of waking for every few kilobytes."""
    decoder = codecs.getincrementaldecoder("utf-8")("offconv-replace")
    decode = decoder.decode
    read = stream.read
    held_cr = False
    pending = False  # the decoder holds the start of a character cut by the last read
    at = start       # the offset of the next read's first byte
    while True:
        data = read(size)
        if not pending and data.isascii():  # the usual chunk: no decoder state to keep
            text = data.decode("ascii")
        else:
            # (the decoder's errors are at offsets into its held bytes and then ``data``)
            _DECODING[0], _DECODING[1] = invalid, at - len(decoder.getstate()[0])
            try:
                text = decode(data, not data)
            finally:
                _DECODING[0] = None
            pending = bool(decoder.getstate()[0])
        at += len(data)
        if held_cr:
            text = "\r" + text
            held_cr = False
        if "\r" in text:
            if data and text.endswith("\r"):
                text, held_cr = text[:-1], True
            text = text.replace("\r\n", "\n")
        if text:
            yield text
        if not data:
            return


def _split(chunks: Iterator[str], sep: str, cut=None, ended=None) -> Iterator[str]:
    """Pieces of the concatenated chunks between separators; a final separator at the end
    of the input gives no empty last piece. ``cut(pieces, last)`` is called before the
    last piece when the input does not end with a newline (a file cut short);
    ``ended(pieces)`` after the last, with their number."""
    rest = ""
    count = 0
    for chunk in chunks:
        pieces = (rest + chunk).split(sep) if rest else chunk.split(sep)
        rest = pieces.pop()
        count += len(pieces)
        yield from pieces
    if sep == "\n\n" and rest.endswith("\n"):
        rest = rest[:-1]
    elif rest and cut is not None:
        cut(count + 1, rest)
    if rest:
        yield rest
        count += 1
    if ended is not None:
        ended(count)


def ends_inside(err: ParseError, src: Source) -> bool:
    """Whether ``err`` is about the line the input ``src`` ends inside (a killed perf
    script's last line, cut short): that line is never an error -- a line cut short
    elsewhere stays one -- the records end before it, and load() warns that the input
    ends inside it."""
    return err.lineno is not None and err.lineno == src.cut_line


def until_cut(records: Iterable, src: Source) -> Iterator:
    """``records`` of the input ``src``, ended quietly where they fail at the line the input
    ends inside (``ends_inside``; its record is lost anyway)."""
    try:
        yield from records
    except ParseError as e:
        if not ends_inside(e, src):
            raise
