"""offconv.inputs.perf_data.spawn: what perf script's start uses instead of subprocess, shutil and
tempfile (whose imports delayed that start by 12-13 ms), compared with those modules; and
the start itself, which must not import them again."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from offconv.inputs.perf_data import spawn

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data"


def _files(tmp_path: Path):
    out = open(tmp_path / "out", "w+b")
    err = open(tmp_path / "err", "w+b")
    return out, err


def test_a_child_writes_to_the_files_given_and_reads_an_empty_stdin(tmp_path):
    out, err = _files(tmp_path)
    sh = spawn.which("sh")
    p = spawn.Process([sh, "-c", "echo to-out; echo to-err >&2; cat; echo end"], out.fileno(), err.fileno())
    assert p.wait() == 0 and p.returncode == 0 and p.poll() == 0
    assert (tmp_path / "out").read_bytes() == b"to-out\nend\n"  # cat read /dev/null: EOF
    assert (tmp_path / "err").read_bytes() == b"to-err\n"
    # the child had only 0, 1 and 2 of this process's descriptors, also of those that
    # this process inherited open (as from make's jobserver)
    r, w = os.pipe()
    os.set_inheritable(r, True)
    try:
        p = spawn.Process([sh, "-c", "ls /proc/$$/fd"], out.fileno())
        p.wait()
    finally:
        os.close(r)
        os.close(w)
    out.seek(0)
    assert out.read().split(b"end\n", 1)[1].split() == [b"0", b"1", b"2"]


def test_exit_status_and_signals_read_as_popen_reads_them(tmp_path):
    sh = spawn.which("sh")
    assert spawn.Process([sh, "-c", "exit 3"]).wait() == 3
    assert subprocess.run([sh, "-c", "exit 3"]).returncode == 3
    p = spawn.Process([spawn.which("sleep"), "30"])
    assert p.poll() is None and p.returncode is None
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=0.05)
    p.kill()
    assert p.wait() == -signal.SIGKILL == -9
    p.kill()  # ended: nothing to do, no error
    assert p.poll() == -9


def test_the_signals_python_ignores_are_back_to_their_defaults_in_the_child(tmp_path):
    """As Popen (restore_signals): perf gets SIGPIPE and SIGXFSZ as a shell would give them."""
    out, _ = _files(tmp_path)
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own
    spawn.Process([spawn.which("cat"), "/proc/self/status"], out.fileno()).wait()
    status = dict(line.split(":", 1) for line in (tmp_path / "out").read_text().splitlines())
    ignored = int(status["SigIgn"].strip(), 16)
    assert not ignored >> (signal.SIGPIPE - 1) & 1 and not ignored >> (signal.SIGXFSZ - 1) & 1


def test_a_missing_program_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        spawn.Process([str(tmp_path / "no-such-program")])


def test_which_finds_what_shutil_finds(tmp_path, monkeypatch):
    for name in ("sh", "cat", "perf", "no-such-program-here", "/bin/sh", str(tmp_path)):
        assert spawn.which(name) == shutil.which(name), name
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "tool").chmod(0o644)  # not executable: skipped
    other = tmp_path / "bin"
    other.mkdir()
    (other / "tool").write_text("#!/bin/sh\n")
    (other / "tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{other}")
    assert spawn.which("tool") == shutil.which("tool") == str(other / "tool")


def test_the_unnamed_file_leaves_no_name_and_holds_what_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    f = spawn.unnamed_file()
    f.write(b"abc" * 1000)
    f.flush()
    assert os.pread(f.fileno(), 6, 3) == b"abcabc"
    assert list(tmp_path.iterdir()) == []
    assert os.fstat(f.fileno()).st_mode & 0o777 == 0o600
    f.close()
    # a folder where it cannot be made: tempfile's, elsewhere
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    g = spawn.unnamed_file()
    g.write(b"x")
    g.close()


def test_the_named_file_is_this_users_only(tmp_path):
    fd, path = spawn.named_file(str(tmp_path), ".kallsyms-")
    os.write(fd, b"x")
    os.close(fd)
    assert Path(path).parent == tmp_path and Path(path).name.startswith(".kallsyms-")
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert spawn.named_file(str(tmp_path), ".kallsyms-")[1] != path


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_scripts_start_imports_none_of_the_slow_modules(tmp_path):
    """offconv.launch's start of perf script on a perf.data (the fixture, converted here)
    loads no module that it does not need: each one delays perf's start."""
    code = ("import sys; from offconv import launch; launch.prestart(sys.argv[1:]);"
            "from offconv.inputs.perf_data import reader as perf_data;"
            "p = perf_data._STARTED.popitem()[1][0]; p.wait();"
            "print(p.returncode, ' '.join(sorted(m for m in sys.modules if m in "
            "{'subprocess', 'shutil', 'tempfile', 'signal', 'typing', 're', 'enum', "
            "'pathlib', 'hashlib', 'threading'})))")
    # -S: without site, which imports some of them (re, pathlib) for its own .pth files
    r = subprocess.run([sys.executable, "-S", "-c", code, str(DATA), "-o", str(tmp_path / "x.svg")],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0"], r.stdout  # perf ended well; none of them imported


def test_a_dropped_child_is_no_zombie():
    """As Popen: a Process dropped without a wait is reaped when it is dropped (ended), or
    when the next child starts (still running then)."""
    def state(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return None   # gone: reaped
    p = spawn.Process([spawn.which("true")])
    pid = p.pid
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)   # ended, not reaped
    assert state(pid) == "Z"
    del p
    assert state(pid) is None
    p = spawn.Process([spawn.which("sh"), "-c", "sleep 0.2"])
    pid = p.pid
    del p   # still running: noted (S, R, or D while it execs on a loaded machine)
    assert state(pid) not in (None, "Z")
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    spawn.Process([spawn.which("true")]).wait()   # the next child reaps it
    assert state(pid) is None
