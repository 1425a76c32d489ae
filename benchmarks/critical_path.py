#!/usr/bin/env python3
"""What the wake-up critical path costs the report (issue 40: at most 1.5x, memory flat):
`offconv report --json` of each sched shape alternated with the same report with
--no-critical-path; medians of wall time and peak RSS, and their ratios.

    python3 benchmarks/critical_path.py [--runs 3] [--only sched,build]

Shapes (benchmarks/_common.py, cached in $OFFCONV_BENCH_DIR): sched (sched.txt.xz grown to
100 MB: a few long-lived threads, pids shifted per copy), build (a parallel build's sched
events grown to 100 MB: thousands of short processes; needs perf and root to record).
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import build_sched_file, input_file, offconv_cmd, offconv_how, timed  # noqa: E402
from run import machine, warm  # noqa: E402


def shapes(only: set) -> list:
    out = []
    if "sched" in only:
        out.append(("100 MB of sched events", input_file("sched", "100M", shift_pids=True)))
    if "build" in only:
        p = build_sched_file("100M")
        if p is not None:
            out.append(("100 MB of a parallel build's sched events", p))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="sched,build")
    a = ap.parse_args()
    rows = []
    for work, p in shapes(set(a.only.split(","))):
        base = offconv_cmd("report", str(p), "--json", "-o", "/dev/null")
        with_cp, without = [], []
        for _ in range(a.runs):
            warm([p])
            with_cp.append(timed(base))
            warm([p])
            without.append(timed(base + ["--no-critical-path"]))
        t1, t0 = statistics.median(r[0] for r in with_cp), statistics.median(r[0] for r in without)
        m1, m0 = max(r[1] for r in with_cp), max(r[1] for r in without)
        rows.append((work, t1, t0, m1, m0))
        print(f"  {work}: {t1:.2f} s / {m1 // 1024} MB with, {t0:.2f} s / {m0 // 1024} MB without",
              file=sys.stderr, flush=True)
    print(f"the critical path's cost in `offconv report --json`, {datetime.date.today().isoformat()}, "
          f"{machine()}; medians of {a.runs} alternated runs, {offconv_how()}\n")
    print("| shape | with | without (--no-critical-path) | time ratio | peak RSS with | without | RSS ratio |")
    print("|---|---|---|---|---|---|---|")
    for work, t1, t0, m1, m0 in rows:
        print(f"| {work} | {t1:.2f} s | {t0:.2f} s | {t1 / t0:.2f} | {m1 // 1024} MB | {m0 // 1024} MB | "
              f"{m1 / m0:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
