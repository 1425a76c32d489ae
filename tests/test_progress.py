"""Progress on a terminal (issue 42: a 10 GB `perf script` piped into `offconv -` shows
it): stdin and perf script's output say the bytes read so far once there are 64 MB of them,
a file says how much of its size; the line is cleared at the end; nothing is printed when
stderr is not a terminal or the input is small."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time

LINE = b"main;" + b"f" * 4000 + b";leaf 1\n"   # long lines: few to parse per MB


def run_on_a_pty(argv, feed_mb: float, seconds: float):
    """Run argv with stderr on a pseudo-terminal, ``feed_mb`` MB of folded lines written to
    its stdin over about ``seconds``; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunk = LINE * ((1 << 20) // len(LINE))
    n = int(feed_mb * (1 << 20) / len(chunk))

    def feed():
        for _ in range(n):
            p.stdin.write(chunk)
            time.sleep(seconds / n)
        p.stdin.close()

    got = []
    out = []
    threading.Thread(target=feed, daemon=True).start()
    threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True).start()
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:       # the child closed its side
            break
        if not data:
            break
        got.append(data)
    p.wait(timeout=120)
    os.close(master)
    deadline = time.monotonic() + 10
    while not out and time.monotonic() < deadline:
        time.sleep(0.01)
    return p.returncode, out[0], b"".join(got).decode()


def test_stdin_shows_the_bytes_read_on_a_terminal_and_clears_the_line():
    rc, out, term = run_on_a_pty([sys.executable, "-m", "offconv", "-"], feed_mb=96, seconds=2.0)
    assert rc == 0, term
    lines = (1 << 20) // len(LINE) * int(96 * (1 << 20) / ((1 << 20) // len(LINE) * len(LINE)))
    assert out == LINE[:-2] + str(lines).encode() + b"\n"
    shown = [s for s in term.split("\r") if s.startswith("offconv: stdin: ")]
    assert shown, term
    mbs = [int(s.split()[2]) for s in shown]
    assert mbs[0] >= 64 and mbs == sorted(mbs) and mbs[-1] <= 101, mbs   # from 64 MB on, growing
    assert all(s.endswith("MB/s)\x1b[K") and " MB read (" in s for s in shown), shown
    assert term.endswith("\r\x1b[K"), repr(term[-40:])             # cleared at the end


def test_a_small_input_on_a_terminal_shows_nothing():
    rc, out, term = run_on_a_pty([sys.executable, "-m", "offconv", "-"], feed_mb=2, seconds=0.6)
    assert rc == 0 and out.endswith(b";leaf %d\n" % (2 * ((1 << 20) // len(LINE))))
    assert term == ""


def test_no_progress_when_stderr_is_not_a_terminal():
    data = LINE * (70 * (1 << 20) // len(LINE))
    r = subprocess.run([sys.executable, "-m", "offconv", "-"], input=data, capture_output=True,
                       timeout=120)
    assert r.returncode == 0 and r.stderr == b""
