"""Input sources: a path, '-' (stdin), gzip (by magic), or perf.data (by magic, converted
with ``perf script`` through a pipe, streamed). Lines come numbered, without '\\n'."""
from __future__ import annotations

import gzip
import codecs
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator, Optional

from .errors import OffconvError

PERF_DATA_MAGIC = b"PERFILE2"
GZIP_MAGIC = b"\x1f\x8b"
SNIFF_LINES = 200


class Source:
    """An opened input. ``head`` holds the first lines for format sniffing. The content is
    then read once, either as ``lines()`` -- (lineno, text) -- or as ``blocks()`` --
    (lineno of its first line, text) of the runs of lines between blank lines, the shape
    of perf script events, for parsers that cache whole callchains."""

    def __init__(self, path: str, kind: str = "text"):
        self.path = path
        self.kind = kind  # "text", "gzip", "perf-data"
        self._proc: Optional[subprocess.Popen] = None
        self._stream = self._open()
        self._chunks = _text_chunks(self._stream)
        self._first = self._read_first()
        self.head: list[str] = self._first.split("\n", SNIFF_LINES)[:SNIFF_LINES]
        if self.head and self.head[-1] == "" and self._first.endswith("\n"):
            self.head.pop()

    def _read_first(self) -> str:
        """Decoded text up to at least SNIFF_LINES lines (or the end)."""
        parts = []
        try:
            for chunk in self._chunks:
                parts.append(chunk)
                if sum(p.count("\n") for p in parts) > SNIFF_LINES:
                    break
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise OffconvError(f"{self.path}: read error: {e}") from None
        return "".join(parts)

    def _all_chunks(self) -> Iterator[str]:
        try:
            if self._first:
                yield self._first
            yield from self._chunks
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise OffconvError(f"{self.path}: read error: {e}") from None
        finally:
            self.close()
        self._check_perf()

    def lines(self) -> Iterator[tuple[int, str]]:
        return enumerate(_split(self._all_chunks(), "\n"), 1)

    def blocks(self) -> Iterator[tuple[int, str]]:
        """Runs of non-blank lines, without their final newline, with the number of their
        first line. Lines of only white space count as blank for this split only when they
        are empty; parsers must accept a block that holds anything."""
        lineno = 1
        for block in _split(self._all_chunks(), "\n\n"):
            start = lineno
            lineno += block.count("\n") + 2
            if block.startswith("\n"):
                stripped = block.lstrip("\n")
                start += len(block) - len(stripped)
                block = stripped
            if block:
                yield start, block

    def _open(self):
        path = self.path
        if path == "-":
            raw = sys.stdin.buffer
            magic = raw.peek(8)[:8] if hasattr(raw, "peek") else b""
        else:
            try:
                raw = open(path, "rb")
            except OSError as e:
                raise OffconvError(f"{path}: cannot open: {e.strerror}") from None
            if os.path.isdir(path):
                raise OffconvError(f"{path}: is a directory")
            magic = raw.read(8)
            raw.seek(0)
        if magic.startswith(GZIP_MAGIC):
            self.kind = "gzip"
            raw = gzip.GzipFile(fileobj=raw)
        elif magic.startswith(PERF_DATA_MAGIC):
            self.kind = "perf-data"
            raw.close() if path != "-" else None
            raw = self._perf_script(path)
        return raw  # binary: _split_lines reads big blocks and decodes them itself

    def _perf_script(self, path: str):
        if path == "-":
            raise OffconvError("-: perf.data on stdin is not supported: give its path")
        perf = shutil.which("perf")
        if perf is None:
            raise OffconvError(f"{path}: is perf.data, but 'perf' is not on PATH to convert it "
                               "(install linux-perf, or run 'perf script -i FILE > FILE.txt')")
        # stderr to a file, not a pipe: perf can print more warnings than a pipe holds
        self._err = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([perf, "script", "-i", path], stdout=subprocess.PIPE,
                                      stderr=self._err, stdin=subprocess.DEVNULL)
        _widen_pipe(self._proc.stdout)
        return self._proc.stdout

    def _check_perf(self):
        if self._proc is not None:
            rc = self._proc.wait()
            self._err.seek(0)
            err = self._err.read().decode("utf-8", "replace").strip()
            self._err.close()
            self._proc = None
            if rc != 0:
                first = err.splitlines()[-1] if err else f"exit status {rc}"
                raise OffconvError(f"{self.path}: perf script failed: {first}")

    def close(self):
        if self.path != "-":
            try:
                self._stream.close()
            except Exception:
                pass


def _widen_pipe(stream, size: int = 1 << 20) -> None:
    """A 1 MiB pipe instead of 64 KiB: far fewer wakeups between perf script and us."""
    try:
        import fcntl
        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ImportError, ValueError):
        pass


def _text_chunks(stream, size: int = 1 << 20) -> Iterator[str]:
    """The input as decoded text in ~1 MiB chunks: UTF-8 (invalid bytes replaced), CRLF
    turned into LF. Reading big blocks is much faster than a text file's line iteration, and
    on a pipe one read waits for a full block instead of waking for every few kilobytes."""
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    read = stream.read
    held_cr = False
    while True:
        data = read(size)
        text = decode(data, not data)
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


def _split(chunks: Iterator[str], sep: str) -> Iterator[str]:
    """Pieces of the concatenated chunks between separators; a final separator at the end
    of the input gives no empty last piece."""
    rest = ""
    for chunk in chunks:
        pieces = (rest + chunk).split(sep) if rest else chunk.split(sep)
        rest = pieces.pop()
        yield from pieces
    if sep == "\n\n" and rest.endswith("\n"):
        rest = rest[:-1]
    if rest:
        yield rest
