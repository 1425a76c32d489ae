"""Input sources: a path, '-' (stdin), gzip (by magic), or perf.data (by magic, converted
with ``perf script`` through a pipe, streamed). Lines come numbered, without '\\n'."""
from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import tempfile
from itertools import chain, islice
from typing import Iterator, Optional

from .errors import OffconvError

PERF_DATA_MAGIC = b"PERFILE2"
GZIP_MAGIC = b"\x1f\x8b"
SNIFF_LINES = 200


class Source:
    """An opened input. ``head`` holds the first lines for format sniffing; ``lines()``
    yields every line (head included) exactly once, as (lineno, text)."""

    def __init__(self, path: str, kind: str = "text"):
        self.path = path
        self.kind = kind  # "text", "gzip", "perf-data"
        self._proc: Optional[subprocess.Popen] = None
        self._stream = self._open()
        self._lines = _split_lines(self._stream)
        self.head: list[str] = list(islice(self._lines, SNIFF_LINES))

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
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")

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
        return self._proc.stdout

    def lines(self) -> Iterator[tuple[int, str]]:
        try:
            yield from enumerate(chain(self.head, self._lines), 1)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise OffconvError(f"{self.path}: read error: {e}") from None
        finally:
            self.close()
        self._check_perf()

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


def _split_lines(stream, size: int = 1 << 20) -> Iterator[str]:
    """Lines without their newline, read in 1 MiB blocks (much faster than iterating the
    file object line by line and stripping each)."""
    rest = ""
    read = stream.read
    while True:
        block = read(size)
        if not block:
            break
        if rest:
            block = rest + block
        lines = block.split("\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest
