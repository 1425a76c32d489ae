"""Issue 42, item 6: Ctrl-C ends offconv with exit 130 and one line, leaving no output and
no temp file; a closed pipe (offconv x | head) ends quietly."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FIX = Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"


def interrupted(out: Path, chars: int) -> tuple:
    """offconv - -o OUT, fed ``chars`` of the recording through a pipe that stays open (it
    is reading when the interrupt comes), then Ctrl-C: (exit code, stderr)."""
    p = subprocess.Popen([sys.executable, "-m", "offconv", "-", "-o", str(out)], stdin=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdin.write(FIX.read_text()[:chars])
    p.stdin.flush()
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    return p.returncode, err


def test_ctrl_c_is_exit_130_one_line_and_no_output(tmp_path):
    code, err = interrupted(tmp_path / "out.svg", 200_000)
    assert code == 130, err
    assert err == "offconv: interrupted\n", err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_output_survives_ctrl_c(tmp_path):
    out = tmp_path / "out.folded"
    out.write_text("kept 1\n")
    code, _ = interrupted(out, 100_000)
    assert code == 130
    assert out.read_text() == "kept 1\n" and sorted(os.listdir(tmp_path)) == ["out.folded"]


def test_a_closed_pipe_ends_quietly():
    p = subprocess.run(f"{sys.executable} -m offconv {FIX} --mode offcpu 2>&1 >/dev/null | head -c 0; "
                       f"{sys.executable} -m offconv {FIX} --mode offcpu | head -1 >/dev/null",
                       shell=True, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr and "internal error" not in p.stderr, p.stderr


FAKE_PERF = """#!/bin/sh
case "$1" in
  version|--version) echo "perf version 6.1.0"; exit 0;;
esac
echo $$ > "$FAKE_PERF_PID"
head -1 "$FAKE_PERF_LINE"
exec sleep 60
"""


def test_ctrl_c_ends_the_perf_script_child(tmp_path):
    """A perf.data input: its ``perf script`` (here one that prints a line and then reads
    on, as perf does through a large file before it writes) is ended with offconv, not
    left running: a pipe's closing ends only a perf that writes."""
    import shutil
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(FAKE_PERF)
    (bin_dir / "perf").chmod(0o755)
    data = tmp_path / "rec.data"
    shutil.copy(FIX.with_name("e2e_victim_a_small.data"), data)
    pid_file = tmp_path / "perf.pid"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               FAKE_PERF_PID=str(pid_file), FAKE_PERF_LINE=str(FIX))
    out = tmp_path / "out.folded"
    p = subprocess.Popen([sys.executable, "-m", "offconv", str(data), "-o", str(out)],
                         stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    perf = int(pid_file.read_text())
    time.sleep(1.0)                       # offconv reads the line, then waits for more
    assert Path(f"/proc/{perf}").exists()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and err == "offconv: interrupted\n", err
    # perf was offconv's child: killed and reaped, so no process of that pid is left
    assert not Path(f"/proc/{perf}").exists()
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["bin", "perf.pid", "rec.data"]
