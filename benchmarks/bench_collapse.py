#!/usr/bin/env python3
"""perf script (on-CPU) -> folded: offconv against stackcollapse-perf.pl on the same file in
the same run, plus throughput (MB/s) and peak RSS.

    python benchmarks/bench_collapse.py [--size 100M] [--runs 3]

The input is shared/bench/inputs/cpu.txt.xz grown with replicate_perf_script.py (cached in
$OFFCONV_BENCH_DIR, default /tmp/offconv-bench). stackcollapse-perf.pl is used when it is on
PATH or in $FLAMEGRAPH_DIR; otherwise the comparison is skipped with a message and the
reference figure of shared/bench/README.md is printed for orientation only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, input_file, mb, offconv_cmd, stackcollapse_perf, timed  # noqa: E402

REFERENCE = "stackcollapse-perf.pl on the 100 MB text: about 3.1 s (32 MB/s), 19 MiB (shared/bench/README.md)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100M", help="input size for replicate_perf_script.py (default 100M)")
    ap.add_argument("--runs", type=int, default=3, help="best of N runs (default 3)")
    a = ap.parse_args()

    src = input_file("cpu", a.size)
    size = mb(src)
    print(f"input: {src} ({size:.1f} MB)")
    ours, rss = best_of(a.runs, offconv_cmd(str(src), "--mode", "oncpu", "--to", "folded", "-o", "/dev/null"))
    print(f"offconv:              {ours:6.2f} s  {size / ours:6.1f} MB/s  peak RSS {rss / 1024:.0f} MiB")

    perl = stackcollapse_perf()
    if perl is None:
        print("stackcollapse-perf.pl: not found (PATH or $FLAMEGRAPH_DIR): comparison skipped")
        print(f"  reference only, not this run: {REFERENCE}")
    else:
        theirs, prss = best_of(a.runs, ["perl", perl, str(src)])
        print(f"stackcollapse-perf.pl:{theirs:6.2f} s  {size / theirs:6.1f} MB/s  peak RSS {prss / 1024:.0f} MiB")
        print(f"ratio offconv / stackcollapse-perf.pl: {ours / theirs:.2f} (lower is better)")
        with tempfile.TemporaryDirectory() as d:
            o1, o2 = Path(d) / "a", Path(d) / "b"
            with open(o1, "wb") as f:
                timed(offconv_cmd(str(src), "--mode", "oncpu"), stdout=f)
            with open(o2, "wb") as f:
                timed(["perl", perl, str(src)], stdout=f)
            same = o1.read_bytes() == o2.read_bytes()
            print(f"outputs identical: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
