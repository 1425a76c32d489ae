"""``offconv record``: runs ``scripts/record.sh`` (installed as package data of
``offconv.scripts``, or found next to the package in a source tree) with the given
arguments and returns its exit code. The script does the work and the cleanup; this
module only finds it and stays out of the way of its signal handling."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence


def script_path() -> Optional[Path]:
    """record.sh from the installed package, else from the source tree."""
    try:
        from importlib.resources import files
        p = files("offconv.scripts") / "record.sh"
        if p.is_file():
            return Path(str(p))
    except (ImportError, TypeError, OSError):
        pass
    p = Path(__file__).resolve().parent.parent / "scripts" / "record.sh"
    return p if p.is_file() else None


def main(args: Sequence[str]) -> int:
    """Run record.sh ARGS...; its exit code (128+N when it died of signal N)."""
    script = script_path()
    if script is None:
        print("offconv: record: scripts/record.sh is missing from this installation", file=sys.stderr)
        return 1
    bash = shutil.which("bash")
    if bash is None:
        print("offconv: record: needs bash", file=sys.stderr)
        return 1
    proc = subprocess.Popen([bash, str(script), *args])
    # Ctrl-C reaches the script too (same process group): let it stop the tracer and write
    # OUT; SIGTERM/SIGHUP sent to offconv are passed on.
    old = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        old[sig] = signal.signal(sig, lambda n, _f: proc.send_signal(n))
    try:
        rc = proc.wait()
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
    return 128 - rc if rc < 0 else rc
