#!/usr/bin/env python3
"""Memory at scale (issue 42, item 3): offconv's peak RSS where the input's size, its unique
stacks or one stack's depth is far beyond a recording's, and whether memory stays flat
while a long stream is read.

    python3 benchmarks/scale.py [--stream-size 10G] [--perfdata-size 1G]
                                [--only million,deep,stream,perfdata]

Rows (inputs built under $OFFCONV_BENCH_DIR, seeded, never in the repository):
- million: a folded file of 1,000,000 unique stacks (5-30 frames from 20,000 names, the
  file of run.py --big) -> SVG.
- deep: one stack 2,000,000 frames deep (a 4 MB folded line) beside a short one -> SVG
  (drawn to --max-depth, 2048).
- stream: sched events piped into `offconv -` by a generator (shared/bench's sched.txt.xz,
  310 MB of perf script text, repeated with its timestamps moved on by its span each copy:
  the same threads go on, so what offconv keeps is bounded by them and their stacks) up to
  --stream-size, for the folded output and for `report --json`. The child's RSS is read
  from /proc every 0.2 s: the table gives it after 10%, 50% and all of the stream, and the
  peak.
- perfdata: a perf.data of sched events with call chains (`perf bench sched pipe` recorded
  system-wide with -g, up to --perfdata-size; made once in the cache) -> `offconv
  perf.data --to folded` and `report --json`; offconv's RSS and its `perf script` child's
  are read from /proc every 0.2 s (after 10%, 50% and all of the run's time, and the peak).
"""
from __future__ import annotations

import argparse
import datetime
import lzma
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CACHE, SHARED_BENCH, offconv_cmd, offconv_how, timed  # noqa: E402
from run import machine, million_folded  # noqa: E402  (run.py --big's file)


def deep_folded() -> Path:
    out = CACHE / "deep.folded"
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        out.write_text(";".join(["main"] + ["a"] * 2_000_000) + " 10\nmain;b 5\n")
    return out


_HEADER = re.compile(rb"^(\S.*? \[\d+\] +)(\d+)\.(\d{6}):", re.M)


class Stream:
    """sched.txt's events again and again, each copy's timestamps moved on by the span."""

    def __init__(self):
        with lzma.open(SHARED_BENCH / "inputs" / "sched.txt.xz") as f:
            text = f.read()
        parts = _HEADER.split(text)   # [before, pre, sec, usec, rest, pre, sec, usec, rest...]
        self.head = parts[0]
        self.events = [(parts[i], int(parts[i + 1]) * 1_000_000 + int(parts[i + 2]), parts[i + 3])
                       for i in range(1, len(parts), 4)]
        first, last = self.events[0][1], self.events[-1][1]
        self.shift = last - first + max(1, (last - first) // len(self.events))
        self.copy_bytes = len(text)

    def copy(self, k: int) -> bytes:
        add = k * self.shift
        return b"".join(b"%s%d.%06d:%s" % (pre, (t + add) // 1_000_000, (t + add) % 1_000_000, rest)
                        for pre, t, rest in self.events)


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def watched(sample) -> tuple:
    """``sample()`` appended to a list every 0.2 s by a thread until the event is set:
    (the list, the event)."""
    samples: list = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            samples.append(sample())
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()
    return samples, done


def stream_run(args: list, stream: Stream, size: int) -> dict:
    p = subprocess.Popen(offconv_cmd(*args), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    fed = [0]
    samples, done = watched(lambda: (fed[0], rss_kib(p.pid)))   # (bytes fed, rss KiB)
    t0 = time.perf_counter()
    k = 0
    try:
        p.stdin.write(stream.head)
        while fed[0] < size:
            data = stream.copy(k)
            p.stdin.write(data)
            fed[0] += len(data)
            k += 1
        p.stdin.close()
    except BrokenPipeError:
        pass
    err = p.stderr.read()
    p.wait()
    wall = time.perf_counter() - t0
    done.set()
    if p.returncode != 0:
        raise SystemExit(f"offconv {' '.join(args)} failed: {err.decode()[-500:]}")

    def at(share: float) -> int:
        want = share * fed[0]
        got = [r for b, r in samples if b >= want and r]
        return got[0] if got else max(r for _, r in samples)

    return dict(bytes=fed[0], wall=wall, at10=at(0.1), at50=at(0.5),
                end=max((r for b, r in samples if b >= 0.95 * fed[0]), default=0),
                peak=max(r for _, r in samples))


def perf_data(size: int) -> Path:
    """A perf.data of sched events with call chains, about ``size`` bytes: ``perf bench
    sched pipe`` (two tasks waking each other 100k times a second) recorded system-wide
    with -g, longer until the file is big enough (made once)."""
    out = CACHE / f"sched-{size // 10**6}M.perf.data"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    probe = CACHE / "probe.perf.data"
    rec = ["perf", "record", "-q", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
           "-e", "sched:sched_wakeup_new", "-g", "-a", "-m", "16M"]
    loops = 200_000
    subprocess.run([*rec, "-o", str(probe), "--", "perf", "bench", "sched", "pipe", "-l",
                    str(loops)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    per_loop = probe.stat().st_size / loops
    probe.unlink()
    subprocess.run([*rec, "-o", str(out), "--", "perf", "bench", "sched", "pipe", "-l",
                    str(int(size / per_loop))], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return out


def _children_rss(pid: int) -> int:
    """The RSS (KiB) of ``pid``'s child processes (perf script under offconv)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                total += sum(rss_kib(int(c)) for c in f.read().split())
    except OSError:
        pass
    return total


def file_run(args: list) -> dict:
    """offconv ARGS with offconv's RSS and its children's read along the run."""
    p = subprocess.Popen(offconv_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.perf_counter()
    # (time, offconv's rss KiB, its children's)
    samples, done = watched(lambda: (time.perf_counter(), rss_kib(p.pid), _children_rss(p.pid)))
    err = p.stderr.read()
    p.wait()
    wall = time.perf_counter() - t0
    done.set()
    if p.returncode != 0:
        raise SystemExit(f"offconv {' '.join(args)} failed: {err.decode()[-500:]}")

    def at(share: float) -> int:
        got = [r for t, r, _ in samples if t - t0 >= share * wall and r]
        return got[0] if got else max(r for _, r, _ in samples)

    return dict(wall=wall, at10=at(0.1), at50=at(0.5), end=at(0.95),
                peak=max(r for _, r, _ in samples), child=max(c for _, _, c in samples))


def size_bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", text.upper().rstrip("B"))
    if not m:
        raise SystemExit(f"--stream-size: expected e.g. 10G, got {text!r}")
    return int(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stream-size", default="10G")
    ap.add_argument("--perfdata-size", default="1G")
    ap.add_argument("--only", default="million,deep,stream,perfdata")
    a = ap.parse_args()
    only = set(a.only.split(","))
    print(f"offconv memory at scale, {datetime.date.today().isoformat()}, {machine()}, "
          f"{offconv_how()}; peak RSS = the child's ru_maxrss, stream RSS read from /proc\n")
    print("| work | wall | peak RSS | notes |")
    print("|---|---|---|---|")
    if "million" in only:
        src = million_folded()
        for how, switch in (("depth by depth (outputs/svg/levels.py)", None),
                            ("the sorted walk (`OFFCONV_SVG_LEVELS=0`)", "0"),
                            ("depth by depth, one process (`OFFCONV_JOBS=1`)", None)):
            env = {"OFFCONV_SVG_LEVELS": switch} if switch else {}
            if "one process" in how:
                env["OFFCONV_JOBS"] = "1"
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                wall, rss = timed(offconv_cmd(str(src), "--to", "svg", "-o", "/dev/null"))
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            print(f"| folded → SVG, 1,000,000 unique stacks ({src.stat().st_size / 1e6:.0f} MB), "
                  f"{how} | {wall:.2f} s | {rss / 1024:.0f} MiB | |", flush=True)
    if "deep" in only:
        src = deep_folded()
        out = CACHE / "deep.svg"
        wall, rss = timed(offconv_cmd(str(src), "--to", "svg", "-o", str(out)))
        print(f"| folded → SVG, one stack 2,000,000 frames deep | {wall:.2f} s | "
              f"{rss / 1024:.0f} MiB | SVG {out.stat().st_size / 1e6:.2f} MB (--max-depth 2048) |",
              flush=True)
    if "stream" in only:
        stream = Stream()
        size = size_bytes(a.stream_size)
        for what, args in (("folded", ["-", "--to", "folded", "-o", "/dev/null"]),
                           ("report --json", ["report", "-", "--json", "-o", "/dev/null"])):
            r = stream_run(args, stream, size)
            print(f"| {r['bytes'] / 1e9:.1f} GB of sched events piped into `offconv "
                  f"{' '.join(args[:-2])}` | {r['wall']:.0f} s ({r['bytes'] / 1e6 / r['wall']:.0f} MB/s) "
                  f"| {r['peak'] / 1024:.0f} MiB | RSS after 10% {r['at10'] / 1024:.0f} MiB, 50% "
                  f"{r['at50'] / 1024:.0f} MiB, at the end {r['end'] / 1024:.0f} MiB |", flush=True)
    if "perfdata" in only:
        src = perf_data(size_bytes(a.perfdata_size))
        for what, args in (("--to folded", [str(src), "--to", "folded", "-o", "/dev/null"]),
                           ("report --json", ["report", str(src), "--json", "-o", "/dev/null"])):
            r = file_run(args)
            print(f"| perf.data of {src.stat().st_size / 1e9:.1f} GB (sched events, -g) → "
                  f"`offconv {what}` | {r['wall']:.0f} s | {r['peak'] / 1024:.0f} MiB | RSS after "
                  f"10% of the time {r['at10'] / 1024:.0f} MiB, 50% {r['at50'] / 1024:.0f} MiB, at "
                  f"the end {r['end'] / 1024:.0f} MiB; perf script's peak {r['child'] / 1024:.0f} "
                  "MiB |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
