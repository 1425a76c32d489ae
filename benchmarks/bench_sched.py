#!/usr/bin/env python3
"""Throughput and peak memory of the off-CPU (interval) path.

The input is shared/bench/inputs/sched.txt.xz grown with
``replicate_perf_script.py sched.txt SIZE --shift-pids`` (every copy gets new pids, so the
thread table keeps growing: memory must stay bounded by live threads), cached in
$OFFCONV_BENCH_DIR (default /tmp/offconv-bench). Times ``offconv INPUT --mode offcpu``
(folded) and ``offconv report`` and prints seconds, MB/s and the child's peak RSS.

    python3 benchmarks/bench_sched.py [--size 100M|1G] [--runs 1]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, input_file, mb, offconv_cmd  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100M")
    ap.add_argument("--runs", type=int, default=1, help="best of N runs (default 1)")
    a = ap.parse_args()
    path = input_file("sched", a.size, shift_pids=True)
    size = mb(path)
    print(f"input: {path} ({size:.1f} MB)")
    for name, args in (("offcpu folded", [str(path), "--mode", "offcpu", "--to", "folded", "-o", "/dev/null"]),
                       ("report", ["report", str(path), "-o", "/dev/null"])):
        dt, rss = best_of(a.runs, offconv_cmd(*args))
        print(f"{name:14s} {dt:7.2f} s  {size / dt:6.1f} MB/s  peak RSS {rss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
