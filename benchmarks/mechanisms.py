#!/usr/bin/env python3
"""What each speed mechanism gains, in one run: on each input shape, offconv as shipped
alternated with offconv with one mechanism switched off (its environment switch), and the
ratio off / on (above 1: the mechanism saves that much). docs/architecture.md's table of
mechanisms is this script's output.

    python3 benchmarks/mechanisms.py [--runs 3] [--only deep,sched,svg,perfdata,java,javac]

Shapes (built by benchmarks/_common.py and run.py, cached in $OFFCONV_BENCH_DIR):
deep (cpu.txt.xz grown to 100 MB, collapsed), sched (sched.txt.xz grown to 100 MB,
off-CPU folded), svg (a folded file of ~68k unique stacks -> SVG), perfdata
(record_cpu.sh's perf.data -> SVG; needs perf and root), java (a Java program's perf.data,
where the parser is slower than perf script), javac (javac and gcc: 30k distinct stacks of
C++ and JIT frames); the last two need java, javac, gcc, perf and root.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CACHE, input_file, java_file, javac_data, offconv_cmd, offconv_how, timed  # noqa: E402
from run import machine, perf_data, warm, wide_folded  # noqa: E402

PERF_DATA = {"perfdata", "java", "javac"}
# (mechanism, the switch that turns it off, the shapes it can act on)
MECHANISMS = [
    ("C loops (offconv/_speedups.c: collapse loops, the kallsyms part's lookup)",
     {"OFFCONV_SPEEDUPS": "0"}, {"deep", "sched", "svg", "perfdata", "java", "javac"}),
    ("two processes (run/split, run/sched_split, run/follow: an input cut in two)",
     {"OFFCONV_JOBS": "1"}, {"deep", "sched", "svg", "perfdata", "java", "javac"}),
    ("perf script --no-demangle, names demangled by one c++filt (inputs/demangle)",
     {"OFFCONV_PERF_DEMANGLE": "1"}, PERF_DATA),
    ("kallsyms snapshot and part (inputs/perf_data/kallsyms)",
     {"OFFCONV_KALLSYMS_SNAPSHOT": "0"}, PERF_DATA),
]


def shapes(only: set) -> list:
    out = []
    if "deep" in only:
        p = input_file("cpu", "100M")
        out.append(("deep", "collapse 100 MB on-CPU text, deep", [str(p), "--mode", "oncpu", "--to", "folded",
                                                                   "-o", "/dev/null"], [p]))
    if "sched" in only:
        p = input_file("sched", "100M", shift_pids=True)
        out.append(("sched", "off-CPU folded, 100 MB of sched events", [str(p), "--mode", "offcpu", "--to",
                                                                        "folded", "-o", "/dev/null"], [p]))
    if "svg" in only:
        p = wide_folded()
        out.append(("svg", "SVG of a folded file, ~68k unique stacks", [str(p), "--to", "svg", "-o", "/dev/null"],
                    [p]))
    if "perfdata" in only:
        p = perf_data()
        if p is not None:
            out.append(("perfdata", "perf.data (20 s, -F 999 -g -a) -> SVG",
                        [str(p), "--mode", "oncpu", "--to", "svg", "-o", "/dev/null"], [p]))
    if "java" in only and java_file("100M") is not None and (CACHE / "java" / "java.data").exists():
        p = CACHE / "java" / "java.data"
        out.append(("java", "perf.data, Java (55 s, -F 999 -g -a) -> SVG",
                    [str(p), "--mode", "oncpu", "--to", "svg", "-o", "/dev/null"], [p]))
    if "javac" in only:
        p = javac_data()
        if p is not None:
            out.append(("javac", "perf.data, javac + gcc (20 s, -F 999 -g -a) -> SVG",
                        [str(p), "--mode", "oncpu", "--to", "svg", "-o", "/dev/null"], [p]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="deep,sched,svg,perfdata,java,javac")
    a = ap.parse_args()
    rows = []
    for key, work, args, inputs in shapes(set(a.only.split(","))):
        for name, switch, acts_on in MECHANISMS:
            if key not in acts_on:
                continue
            on, off = [], []
            base = offconv_cmd(*args)
            for _ in range(a.runs):
                warm(inputs)
                on.append(timed(base)[0])
                warm(inputs)
                off.append(timed(["env", *(f"{k}={v}" for k, v in switch.items()), *base])[0])
            t_on, t_off = statistics.median(on), statistics.median(off)
            rows.append((name, " ".join(f"{k}={v}" for k, v in switch.items()), work, t_on, t_off))
            print(f"  {work}: {name}: {t_on:.2f} s on, {t_off:.2f} s off", file=sys.stderr, flush=True)
    print(f"offconv's speed mechanisms, {datetime.date.today().isoformat()}, {machine()}; medians of "
          f"{a.runs} alternated runs (wall seconds), {offconv_how()}; gain = off / on\n")
    print("| mechanism | switched off by | shape | on | off | gain |")
    print("|---|---|---|---|---|---|")
    for name, switch, work, t_on, t_off in rows:
        print(f"| {name} | `{switch}` | {work} | {t_on:.2f} s | {t_off:.2f} s | {t_off / t_on:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
