#!/usr/bin/env python3
"""Throughput and peak memory of the off-CPU (interval) path.

Builds a large sched `perf script` text once, in a cache outside the repository
($OFFCONV_BENCH_DIR, default /tmp/offconv-bench), from shared/bench/inputs/sched.txt.xz:

    python3 shared/bench/replicate_perf_script.py sched.txt 100M --shift-pids -o sched-100M.txt

then times `python -m offconv INPUT --mode offcpu -o /dev/null` and `offconv report INPUT`
and prints seconds, MB/s and the child's peak RSS (getrusage of the child).

    python3 benchmarks/bench_sched.py [--size 100M] [--shared /work/shared]
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_input(shared: Path, cache: Path, size: str) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    base = cache / "sched.txt"
    if not base.exists():
        with lzma.open(shared / "bench" / "inputs" / "sched.txt.xz") as src, open(base, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    big = cache / f"sched-{size}.txt"
    if not big.exists():
        subprocess.run([sys.executable, str(shared / "bench" / "replicate_perf_script.py"),
                        str(base), size, "--shift-pids", "-o", str(big)], check=True)
    return big


def run(args: list) -> tuple[float, int]:
    """Wall seconds and the peak RSS (KiB) of one child run (os.wait4: that child only)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "offconv", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"offconv failed: {err.read().decode(errors='replace')}")
    return dt, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100M")
    ap.add_argument("--shared", default=os.environ.get("OFFCONV_SHARED", "/work/shared"))
    ap.add_argument("--cache", default=os.environ.get("OFFCONV_BENCH_DIR", "/tmp/offconv-bench"))
    a = ap.parse_args()
    path = build_input(Path(a.shared), Path(a.cache), a.size)
    mb = path.stat().st_size / 1e6
    print(f"input: {path} ({mb:.1f} MB)")
    for name, args in (("offcpu folded", [str(path), "--mode", "offcpu", "--to", "folded", "-o", "/dev/null"]),
                       ("report", ["report", str(path), "-o", "/dev/null"])):
        dt, rss = run(args)
        print(f"{name:14s} {dt:7.2f} s  {mb / dt:6.1f} MB/s  peak RSS {rss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
