"""perf.data (perf record's binary file) -> perf script text, through a pipe (streamed).

Recognised by its magic ``PERFILE2`` (tools/perf/util/header.c); the text perf script
prints is then detected and parsed like any other input (normally perf-script)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import OffconvError
from ..format_types import InputFormat

MAGIC = b"PERFILE2"


def convert(path: str):
    """(binary stream of perf script's stdout, finish()). ``finish`` waits for perf and
    raises OffconvError with perf's own first message when it failed."""
    if path == "-":
        raise OffconvError("-: perf.data on stdin is not supported: give its path")
    started = _STARTED.pop(os.path.abspath(path), None)
    if started is not None:
        proc, err = started
    else:
        perf = shutil.which("perf")
        if perf is None:
            raise OffconvError(f"{path}: is perf.data, but 'perf' is not on PATH to convert it "
                               "(install linux-perf, or run 'perf script -i FILE > FILE.txt')")
        proc, err = _start(perf, path)

    def finish() -> None:
        rc = proc.wait()
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
        err.close()
        if rc != 0:
            raise OffconvError(f"{path}: perf script failed: {_first_message(text, rc)}")

    return proc.stdout, finish


def _start(perf: str, path: str):
    # stderr to a file, not a pipe: perf can print more warnings than a pipe holds
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([perf, "script", "-i", path], stdout=subprocess.PIPE,
                            stderr=err, stdin=subprocess.DEVNULL)
    _widen_pipe(proc.stdout)
    return proc, err


_STARTED: dict = {}  # absolute path -> (perf script process, its stderr file), see prestart


def prestart(path: str) -> None:
    """Start the conversion of ``path`` now, before offconv asks for it (offconv.launch);
    convert() takes it over. One that is never taken over is killed at exit."""
    key = os.path.abspath(path)
    perf = shutil.which("perf")
    if perf is None or key in _STARTED:
        return
    _STARTED[key] = _start(perf, path)
    if len(_STARTED) == 1:
        import atexit
        atexit.register(_stop_unused)


def _stop_unused() -> None:
    for proc, err in _STARTED.values():
        proc.kill()
        proc.wait()
        proc.stdout.close()
        err.close()
    _STARTED.clear()


def _first_message(stderr: str, rc: int) -> str:
    """perf's own words: its first non-empty line that is not a banner or a warning about
    build ids (``incompatible file format (rerun with -v to learn more)``)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if not ln.lower().startswith(("warning", "#")):
            return ln
    if lines:
        return lines[0]
    if rc < 0:
        import signal
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"perf was killed by {name} (a truncated or corrupt file?)"
    return f"exit status {rc}"


def _widen_pipe(stream, size: int = 1 << 20) -> None:
    """A 1 MiB pipe instead of 64 KiB: far fewer wakeups between perf script and us."""
    try:
        import fcntl
        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ImportError, ValueError):
        pass


FORMAT = InputFormat(name="perf-data", magic=MAGIC, convert=convert,
                     description="perf.data (converted with perf script)")
