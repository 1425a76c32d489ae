"""Issue 42, item 2: a corrupt or truncated gzip/xz/bzip2 input is one line, exit 2, naming
the file and how many of its bytes came before the damage (never "internal error"); with
--lenient what was read before the damage is used, and said; no output is left behind."""
from __future__ import annotations

import bz2
import gzip
import lzma
import re
import subprocess
import sys
from pathlib import Path

import pytest

TEXT = (Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small"
        / "e2e_victim_a_small.perf-script.txt").read_bytes()
KINDS = {"gzip": lambda b: gzip.compress(b, 6, mtime=0), "xz": lzma.compress,
         "bzip2": lambda b: bz2.compress(b, 1)}   # (100k blocks: a cut leaves whole ones before it)


def damaged(kind: str, how: str) -> bytes:
    data = bytearray(KINDS[kind](TEXT))
    if how == "truncated":
        return bytes(data[:len(data) // 2])
    for i in range(len(data) // 2, len(data) // 2 + 40):
        data[i] ^= 0x5A
    return bytes(data)


def run(*args):
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("how", ["corrupt", "truncated"])
def test_damaged_compressed_input_is_one_line(kind, how, tmp_path):
    src = tmp_path / f"in.{kind}"
    src.write_bytes(damaged(kind, how))
    out = tmp_path / "out.svg"
    p = run(src, "-o", out)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "internal error" not in p.stderr, p.stderr
    want = (rf"offconv: {re.escape(str(src))}: {how} {kind} data \(after \d+ bytes"
            + (r": the compressed stream ends early\)" if how == "truncated" else r"\)")
            + r"; --lenient reads what comes before\n")
    assert re.fullmatch(want, p.stderr), p.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_lenient_uses_what_came_before_the_damage(kind, tmp_path):
    src = tmp_path / f"in.{kind}"
    src.write_bytes(damaged(kind, "truncated"))
    out = tmp_path / "out.folded"
    p = run(src, "--lenient", "-o", out)
    assert p.returncode == 0, p.stderr
    m = re.search(rf"truncated {kind} data \(after (\d+) bytes: the compressed stream ends early\): "
                  r"--lenient used the (\d+) bytes before the damage", p.stderr)
    assert m and m.group(1) == m.group(2), p.stderr
    assert 0 < int(m.group(1)) < len(TEXT)
    assert out.read_text().count("\n") > 5
