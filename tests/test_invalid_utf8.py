"""Invalid UTF-8 in an input (issue 42, item 2): decoded with replacement and counted, one
warning naming the file, how many sequences and the first one's byte offset; the same count
when the input is read in two processes (parallel.MIN_BYTES = 0)."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from perf_text import switch, wake  # noqa: E402

from offconv.cli import app  # noqa: E402
from offconv.run import parallel  # noqa: E402

# three invalid sequences: \xe9 (a Latin-1 é) at byte 8, \xff and \xfe; and a real U+FFFD,
# which is valid UTF-8 and not counted
FOLDED = b"main;caf\xe9;x 5\nmain;ok 3\nmain;b\xff\xfeb 2\nmain;\xef\xbf\xbd 1\n"


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)],
                          capture_output=True, env={**os.environ, **(env or {})})


def test_invalid_bytes_are_replaced_counted_and_said_once(tmp_path):
    src = tmp_path / "bad.folded"
    src.write_bytes(FOLDED)
    r = _run(src, "--to", "folded")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == ("main;b\ufffd\ufffdb 2\nmain;caf\ufffd;x 5\nmain;ok 3\n"
                                 "main;\ufffd 1\n")
    assert r.stderr.decode() == (
        f"offconv: {src}: 3 invalid UTF-8 sequences read as U+FFFD (the first at byte "
        "offset 8): names that contain them are not the bytes recorded\n")


def test_valid_input_has_no_such_warning(tmp_path):
    src = tmp_path / "good.folded"
    src.write_bytes(b"main;caf\xc3\xa9 5\nmain;\xef\xbf\xbd 1\n")
    r = _run(src, "--to", "folded")
    assert r.returncode == 0 and r.stderr == b"", r.stderr


def test_a_compressed_input_names_the_offset_in_its_decompressed_text(tmp_path):
    src = tmp_path / "bad.folded.gz"
    src.write_bytes(gzip.compress(FOLDED))
    r = _run(src, "--to", "folded")
    assert r.returncode == 0, r.stderr
    assert "3 invalid UTF-8 sequences read as U+FFFD (the first at byte offset 8 of the " \
           "decompressed text)" in r.stderr.decode()


def test_a_sequence_cut_by_a_read_is_one_sequence(tmp_path):
    """A 1 MiB read boundary inside a valid 3-byte character is not an error; an invalid
    byte right after the boundary is counted once, at its offset."""
    pad = b"main;" + b"a" * ((1 << 20) - 6)            # the euro sign's 3 bytes straddle
    data = pad + b"\xe2\x82\xac 1\nmain;\xff 2\n"
    src = tmp_path / "cut.folded"
    src.write_bytes(data)
    r = _run(src, "--to", "folded")
    assert r.returncode == 0, r.stderr
    want = len(pad) + 3 + len(b" 1\nmain;")
    assert f"1 invalid UTF-8 sequence read as U+FFFD (the first at byte offset {want:,})" \
        in r.stderr.decode()
    assert "\u20ac 1" in r.stdout.decode()


def _sched_text(n: int, bad_comm: bytes) -> bytes:
    """n sleeps of a thread whose comm has an invalid byte (its name as a kernel keeps
    it: 16 bytes, not UTF-8), woken by the timer."""
    t, parts = 1_000_000_000, [switch(1_000_000_000, "swapper/0", 0, "R", "w", 10, frames=())]
    for _ in range(n):
        t += 100
        parts.append(switch(t, "w", 10, "S", "swapper/0", 0))
        parts.append(wake(t + 1000, "swapper/0", 0, "w", 10))
        parts.append(switch(t + 1010, "swapper/0", 0, "R", "w", 10, frames=()))
        t += 1010
    # (every comm=, prev_comm= and next_comm= of it: 3 an iteration, and the first switch-in)
    return "".join(parts).encode().replace(b"comm=w ", b"comm=" + bad_comm + b" ")


def test_a_sched_recording_with_an_invalid_comm(tmp_path):
    src = tmp_path / "bad.perf-script.txt"
    data = _sched_text(50, b"w\xff")
    assert data.count(b"\xff") == 151
    src.write_bytes(data)
    r = CliRunner().invoke(app, ["report", "--json", str(src)])
    assert r.exit_code == 0, r.output
    j = json.loads(r.stdout)
    warned = [w for w in j["warnings"] if "invalid UTF-8" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{src}: 151 invalid UTF-8 sequences"), warned
    assert any(t["comm"] == "w\ufffd" for t in j["threads"])


@pytest.fixture
def split_all(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: True)


def test_the_count_is_the_same_over_two_processes(tmp_path, split_all, monkeypatch):
    """A folded file and a sched recording cut in two parts (one read by a child): the
    child's sequences are counted too, and the first is the first part's."""
    lines = [b"main;caf\xe9 5\n"] + [b"main;f%d 1\n" % i for i in range(20_000)] + \
        [b"main;z\xff 1\n"] * 3
    folded = tmp_path / "split.folded"
    folded.write_bytes(b"".join(lines))
    sched = tmp_path / "split.perf-script.txt"
    sched.write_bytes(_sched_text(3000, b"w\xff"))
    monkeypatch.setenv("OFFCONV_JOBS", "2")
    r = CliRunner().invoke(app, [str(folded), "--to", "folded"])
    assert r.exit_code == 0, r.output
    assert f"{folded}: 4 invalid UTF-8 sequences read as U+FFFD (the first at byte offset 8)" \
        in r.stderr
    # (a flame graph or folded output: a report reads its input in one process)
    r = CliRunner().invoke(app, [str(sched), "--to", "folded"])
    assert r.exit_code == 0, r.output
    assert f"{sched}: 9,001 invalid UTF-8 sequences read as U+FFFD (the first at byte " \
        "offset 128)" in r.stderr, r.stderr
