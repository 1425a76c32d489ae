"""Shared benchmark helpers: inputs built from ../shared/bench, timing of child processes
with their peak RSS, and anchors found on this machine. Standard library only."""
from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_BENCH = Path(os.environ.get("OFFCONV_SHARED_BENCH", ROOT.parent / "shared" / "bench"))
CACHE = Path(os.environ.get("OFFCONV_BENCH_DIR", "/tmp/offconv-bench"))


def input_file(base: str, size: str | None = None, shift_pids: bool = False) -> Path:
    """``cpu`` or ``sched`` text from shared/bench/inputs, optionally grown to ``size``
    (e.g. 100M) with replicate_perf_script.py; cached in $OFFCONV_BENCH_DIR."""
    CACHE.mkdir(parents=True, exist_ok=True)
    raw = CACHE / f"{base}.txt"
    if not raw.exists():
        with lzma.open(SHARED_BENCH / "inputs" / f"{base}.txt.xz") as src, open(raw, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    if size is None:
        return raw
    out = CACHE / f"{base}-{size}{'-shifted' if shift_pids else ''}.txt"
    if not out.exists():
        cmd = [sys.executable, str(SHARED_BENCH / "replicate_perf_script.py"), str(raw), size, "-o", str(out)]
        if shift_pids:
            cmd.insert(4, "--shift-pids")
        subprocess.run(cmd, check=True)
    return out


def timed(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one run of cmd; fails loudly on a non-zero exit."""
    # the checkout's offconv, whether or not it is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(cmd)}\n{err}")
    return wall, ru.ru_maxrss


def best_of(n: int, cmd: list[str]) -> tuple[float, int]:
    runs = [timed(cmd) for _ in range(n)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def offconv_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "offconv", *args]


def stackcollapse_perf() -> str | None:
    d = os.environ.get("FLAMEGRAPH_DIR")
    if d and (Path(d) / "stackcollapse-perf.pl").exists():
        return str(Path(d) / "stackcollapse-perf.pl")
    return shutil.which("stackcollapse-perf.pl")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def mb(path: Path) -> float:
    return path.stat().st_size / 1e6
