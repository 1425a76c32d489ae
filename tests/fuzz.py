"""A mutation fuzzer of the command line (issue 42, item 4).

Each case takes a real input of tests/fixtures/ (perf script text of sched, on-CPU,
off-CPU and wall-clock recordings, folded stacks of three dialects, bcc histograms,
bpftrace text and JSON, gzip/xz inputs, a perf.data), damages it -- bytes flipped, cut
short, lines duplicated, dropped or shuffled, hostile names (``<script>``, ``;``, control
characters, U+202E, a 10 KB name), numbers made huge or negative, JSON nested deep,
compressed and then corrupted -- and runs ``python -m offconv`` on it in a process of
its own, through one of the output formats (folded, svg, speedscope, pprof, timeline,
perfetto, report, json, hist) and modes, with ``-o OUT`` (sometimes an OUT that exists).
A case fails on:

- a traceback on stderr, ``internal error``, or an exit code other than 0 and 2 (70 is
  the internal error);
- no end within the timeout (a hang; the process group is killed);
- exit 2 whose stderr is not ``offconv: ...`` lines (an indented ``  | `` quote allowed);
- exit 2 that leaves a file behind or changes one (OUT written or clobbered, a temp);
  exit 0 that leaves a temp file (``.offconv-*``);
- exit 0 with an OUT that does not parse as what it claims (SVG as XML, JSON, pprof's gzip).

Case N of seed S is made from ``random.Random(f"offconv-fuzz:{S}:{N}")`` alone: the same
seed and case count give the same cases, on any machine, run in any order or number of
jobs. A failing case is shrunk (fewer lines, fewer options, while it fails the same way)
and written to ``--out`` (default tests/fixtures/fuzz-found/) as ``seedS-caseN/``: the
input and ``case.json`` (the command, what failed); tests/test_fuzz.py replays every
case kept there.

    python -m tests.fuzz --seconds 60 --seed 1            # fuzz for a minute
    python -m tests.fuzz --seed 1 --case 57               # replay one case, verbosely
    python -m tests.fuzz --replay tests/fixtures/fuzz-found   # the kept cases
"""
from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures"
FOUND = FIX / "fuzz-found"
KNOWN = b"the output before this run: an error must leave it as it was\n"
TIMEOUT = 20.0
MAX_FAILURES = 30   # a run stops starting cases after this many failures
KEEP_EACH = 3       # cases written per way of failing (its kind, an internal error's type)

# (fixture, lines kept of its text (None: all; a binary seed is kept whole), weight)
SEEDS = (
    ("recorded/e2e_victim_a_small/e2e_victim_a_small.perf-script.txt", 400, 6),
    ("recorded/e2e_victim_a_small/e2e_victim_a_small.perf-script-F.txt", 300, 2),
    ("recorded/wallclock/wallclock.perf-script.txt.gz", 500, 3),
    ("recorded/critical/pipe_consumer/pipe_consumer.perf-script.txt.gz", 500, 2),
    ("recorded/nocallchain/oncpu-no-g.perf-script.txt.gz", 300, 1),
    ("flamegraph-test/perf-java-stacks-02.txt", None, 2),
    ("flamegraph-test/perf-dd-stacks-01.txt", None, 1),
    ("perf-offcpu/offcpu-time.txt", None, 2),
    ("flamegraph-test/results/perf-dd-stacks-01-collapsed-pid.txt", None, 2),
    ("bcc/offwaketime_-fu_5.folded", None, 2),
    ("bcc/offcputime_-K_-f_5.folded", None, 2),
    ("bcc/runqlat_-P.txt", 120, 2),
    ("bcc/runqlen.txt", None, 1),
    ("bcc/cpudist_-TP_5_3.txt", None, 1),
    ("bpftrace/bt_offcpu_kstack_comm_1.txt", 300, 3),
    ("bpftrace/bt_runqlat_bycomm_1.txt", None, 2),
    ("bpftrace_record/hog1.txt", None, 2),
    ("bpftrace/bt_offcpu_kstack_json_1.jsonl", None, 2),
    ("bpftrace/bt_runqlat_bycomm_json_1.jsonl", None, 2),
    ("bpftrace/bt_det_values_json_1.jsonl", None, 1),
    ("heldout/comments.folded.gz", None, 1),
    ("heldout/comments.folded.xz", None, 1),
    ("recorded/e2e_victim_a_small/e2e_victim_a_small.data", None, 1),
)
# (--to, the suffix of -o)
OUTPUTS = (("folded", ".folded"), ("svg", ".svg"), ("speedscope", ".speedscope.json"),
           ("pprof", ".pb.gz"), ("timeline", ".timeline.svg"), ("perfetto", ".perfetto-trace"),
           ("report", ".txt"), ("json", ".json"), ("hist", ".hist"))
MODES = ("auto", "offcpu", "oncpu", "wallclock", "critical-path", "blocked", "runq", "wakeup")
HOSTILE = ("<script>alert(1)</script>", "a;b", ";", "\x01\x07\x1b[2J", "\u202eevil", "A" * 10_240,
           "&amp;<&>\"'", "]]>", "%s%n", "\x00", "\\", " ", "-", "--", "\ud800", "\U0001f525", "{{}}",
           "[unknown]", "==>", "=")
# the OPTIONS that report and diff take too (the input options)
INPUT_OPTIONS = {"--lenient", "--pid", "--tid", "--all", "--addrs", "--state-split", "--no-state-split",
                 "--include-open", "--include-idle", "-K", "-U", "-d", "--demangle", "-m", "-M", "--state",
                 "--unit", "--kind", "--event-filter", "--comm"}
# those a command line can hold (no NUL, no lone surrogate)
HOSTILE_ARGS = tuple(h for h in HOSTILE if "\x00" not in h and "\ud800" not in h)
NUMBERS = ("0", "-1", "-999999", "99999999999999999999999", "18446744073709551616", "1e308",
           "NaN", "0.0000001", "4294967296")
OPTIONS = (["--lenient"], ["--pid"], ["--tid"], ["--all"], ["--addrs"], ["--state-split"],
           ["--no-state-split"], ["--flamechart"], ["--inverted"], ["--reverse"], ["--include-open"],
           ["--include-idle"], ["-K"], ["-U"], ["-d"], ["--demangle"], ["--hash"], ["-m", "100"],
           ["-M", "1000"], ["--state", "D"], ["--unit", "us"], ["--kind", "runq"],
           ["--event-filter", "sched:sched_switch"], ["--comm", "victim|bash"], ["--minwidth", "0"],
           ["--title", "HOSTILE"], ["--notes", "HOSTILE"], ["--countname", "HOSTILE"],
           ["--subtitle", "HOSTILE"], ["--colors", "java"], ["--width", "10"])


@dataclass
class Case:
    """One run: its input (``data`` written as ``name``), the arguments (``{input}``,
    ``{out}``: the paths), whether OUT exists beforehand, and how it was made."""
    seed: int
    index: int
    base: str
    mutations: list
    data: bytes
    name: str
    args: list
    out_name: str
    precreate: bool

    def command(self) -> str:
        return "offconv " + " ".join(_shell(a) for a in self.args)


@dataclass
class Result:
    case: Case
    code: int | None
    stderr: str
    failures: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def kind(self) -> str | None:
        return self.failures[0].split(":")[0] if self.failures else None


def _shell(a: str) -> str:
    return a if re.fullmatch(r"[\w@%+=:,./{}-]+", a) else repr(a[:60] + ("..." if len(a) > 60 else ""))


# -- making cases ---------------------------------------------------------------------

_seed_cache: dict = {}


def seed_bytes(rel: str, lines: int | None) -> bytes:
    """A seed's bytes: a text's first ``lines`` lines (a compressed text's, decompressed,
    when cut), a binary or compressed seed kept whole otherwise."""
    key = (rel, lines)
    if key not in _seed_cache:
        data = (FIX / rel).read_bytes()
        if lines is not None:
            if rel.endswith(".gz"):
                data = gzip.decompress(data)
            data = b"".join(data.splitlines(keepends=True)[:lines])
        _seed_cache[key] = data
    return _seed_cache[key]


def base_bytes(rel: str) -> bytes:
    """The seed ``rel`` as a case starts from it (diff's BEFORE)."""
    return seed_bytes(rel, next(n for r, n, _ in SEEDS if r == rel))


def _lines_op(rng: random.Random, data: bytes) -> tuple:
    lines = data.split(b"\n")
    n = len(lines)
    i = rng.randrange(n)
    op = rng.choice(("dup", "drop", "shuffle", "swap", "cut-line", "blank", "hostile", "number", "splice"))
    if op == "splice":   # lines of another format among these
        rel, keep, _ = rng.choice([t for t in SEEDS if t[1] is not None or t[0].endswith((".txt", ".folded", ".jsonl"))])
        other = seed_bytes(rel, keep).split(b"\n")
        at = rng.randrange(len(other))
        lines[i:i] = other[at:at + rng.randint(1, 12)]
        return b"\n".join(lines), f"splice@{i}:{rel}@{at}"
    if op == "dup":
        k = rng.randint(1, 20)
        lines[i:i] = lines[i:i + k] * rng.randint(1, 3)
    elif op == "drop":
        del lines[i:i + rng.randint(1, 10)]
    elif op == "shuffle":
        part = lines[i:i + rng.randint(2, 30)]
        rng.shuffle(part)
        lines[i:i + len(part)] = part
    elif op == "swap":
        j = rng.randrange(n)
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "cut-line":
        lines[i] = lines[i][:rng.randint(0, len(lines[i]))]
    elif op == "blank":
        lines.insert(i, b"" if rng.random() < 0.7 else b"   \t")
    elif op == "hostile":
        words = [m.span() for m in re.finditer(rb"[^\s;,\[\]()=:]+", lines[i])]
        bad = rng.choice(HOSTILE).encode("utf-8", "surrogatepass")
        if words:
            a, b = rng.choice(words)
            lines[i] = lines[i][:a] + bad + lines[i][b:]
        else:
            lines[i] = bad + lines[i]
    else:   # a number made huge, negative, fractional...
        nums = [m.span() for m in re.finditer(rb"\d+", lines[i])]
        if nums:
            a, b = rng.choice(nums)
            lines[i] = lines[i][:a] + rng.choice(NUMBERS).encode() + lines[i][b:]
    return b"\n".join(lines), f"{op}@{i}"


def _bytes_op(rng: random.Random, data: bytes) -> tuple:
    op = rng.choice(("flip", "flip", "cut", "insert-bytes", "crlf", "bom", "nest"))
    if not data:
        return data, "empty"
    b = bytearray(data)
    if op == "flip":
        at = [rng.randrange(len(b)) for _ in range(rng.randint(1, 8))]
        for p in at:
            b[p] ^= rng.randint(1, 255)
        return bytes(b), f"flip@{at[0]}x{len(at)}"
    if op == "cut":
        k = rng.randrange(len(b))
        return bytes(b[:k]), f"cut@{k}"
    if op == "insert-bytes":
        k = rng.randrange(len(b) + 1)
        junk = rng.choice((b"\xff\xfe", b"\x00", b"\r", b"\xc3", b"\xed\xa0\x80", b"\x1b[0m"))
        return bytes(b[:k] + junk + b[k:]), f"insert{junk!r}@{k}"
    if op == "crlf":
        return data.replace(b"\n", b"\r\n"), "crlf"
    if op == "bom":
        return b"\xef\xbb\xbf" + data, "bom"
    # JSON nested deeper than a decoder recurses (or text brackets nested)
    k = data.find(b"{", 1)
    k = k if k > 0 else rng.randrange(len(b) + 1)
    depth = rng.choice((50, 5000, 100_000))
    return data[:k] + b"[" * depth + b"]" * depth + b"," + data[k:], f"nest{depth}@{k}"


COMPRESS = {"gz": lambda d: gzip.compress(d, 6, mtime=0), "xz": lzma.compress, "bz2": lambda d: bz2.compress(d, 1)}
_DECOMPRESS = {b"\x1f\x8b": gzip.decompress, b"\xfd7zXZ": lzma.decompress}


def _damage_compressed(rng: random.Random, data: bytes) -> tuple:
    b = bytearray(data)
    if rng.random() < 0.5:
        k = rng.randint(1, max(1, len(b) - 1))
        return bytes(b[:k]), f"cut-compressed@{k}"
    lo = rng.randrange(len(b))
    for p in range(lo, min(len(b), lo + rng.randint(1, 40))):
        b[p] ^= 0x5A
    return bytes(b), f"flip-compressed@{lo}"


def make_case(seed: int, index: int) -> Case:
    """Case ``index`` of ``seed``: a function of the two alone."""
    rng = random.Random(f"offconv-fuzz:{seed}:{index}")
    rel, lines, _ = rng.choices(SEEDS, weights=[w for *_, w in SEEDS])[0]
    data = seed_bytes(rel, lines)
    muts: list = []
    binary = rel.endswith(".data")
    compressed = next((d for m, d in _DECOMPRESS.items() if data.startswith(m)), None)
    if binary:
        for _ in range(rng.randint(1, 3)):
            b = bytearray(data)
            at = rng.choice((rng.randrange(0, 104), rng.randrange(len(b))))
            b[at] = rng.choice((0, 0xFF, 0x80, b[at] ^ 1))
            data = bytes(b)
            muts.append(f"set@{at}")
        if rng.random() < 0.3:
            k = rng.randrange(len(data))
            data, muts = data[:k], muts + [f"cut@{k}"]
    else:
        if compressed is not None and rng.random() < 0.5:
            data, m = _damage_compressed(rng, data)
            muts.append(m)
        else:
            if compressed is not None:
                data = compressed(data)
                muts.append("decompressed")
            for _ in range(rng.randint(1, 4)):
                data, m = (_lines_op if rng.random() < 0.65 else _bytes_op)(rng, data)
                muts.append(m)
            if compressed is not None or rng.random() < 0.12:
                kind = rng.choice(sorted(COMPRESS))
                data = COMPRESS[kind](data)
                muts.append(kind)
                if rng.random() < 0.6:
                    data, m = _damage_compressed(rng, data)
                    muts.append(m)
            elif rng.random() < 0.02:
                data = b"\x28\xb5\x2f\xfd" + data    # zstd's magic: refused
                muts.append("zstd-magic")
    to, suffix = rng.choice(OUTPUTS)
    name = "input" + (".data" if binary else Path(rel).suffix)
    if rng.random() < 0.12:   # hostile file names (a path a user may well have)
        bad = rng.choice(("in;<b>", "in \u202eevil", "in\x01ctl", "in'\"$(x)", "-in"))
        name = bad + name
        muts.append("hostile-file-name")
    inp = "./{input}" if name.startswith("-") else "{input}"
    shape = rng.random()
    command = "convert"
    if shape < 0.06:
        head = ["-"]                               # standard input
    elif shape < 0.12:
        head = [inp, rng.choice((inp, "{base}"))]  # two inputs, merged (the seed as it was)
    elif shape < 0.2 and not binary:
        command, head = "diff", ["diff", "{base}", inp]   # against the seed as it was
        to, suffix = rng.choice((("folded", ".folded"), ("svg", ".svg"), ("report", ".txt"), ("json", ".json")))
    elif shape < 0.28:
        command, head = "report", ["report", inp] + (["--json"] if rng.random() < 0.5 else [])
        suffix = ".json" if "--json" in head else ".txt"
    else:
        head = [inp]
    out_name = "out" + suffix
    args = [*head, *(["--to", to] if command != "report" else []), "--mode", rng.choice(MODES)]
    if rng.random() < 0.1:   # a format forced on what may be another
        args += ["--from", rng.choice(("perf-script", "folded", "bcc-hist", "bpftrace", "bpftrace-json", "perf-data"))]
    opts = OPTIONS if command == "convert" else [o for o in OPTIONS if o[0] in INPUT_OPTIONS]
    for opt in rng.sample(opts, rng.choice((0, 0, 1, 1, 2, 3))):
        args += [rng.choice(HOSTILE_ARGS) if a == "HOSTILE" else a for a in opt]
    args += ["-o", "{out}"]
    return Case(seed, index, rel, muts, data, name, args, out_name, rng.random() < 0.5)


# -- running them -------------------------------------------------------------------

def offconv_command() -> list:
    return [sys.executable, "-m", "offconv"]


def _env(tmp: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("OFFCONV_CACHE_DIR", os.path.join(tmp, "cache"))
    env.pop("OFFCONV_TRACEBACK", None)
    return env


def _snapshot(d: str) -> dict:
    out = {}
    for n in sorted(os.listdir(d)):
        p = os.path.join(d, n)
        out[n] = os.readlink(p) if os.path.islink(p) else (open(p, "rb").read() if os.path.isfile(p) else "dir")
    return out


def run_case(case: Case, tmp: str, command: list | None = None, timeout: float = TIMEOUT) -> Result:
    """Run ``case`` in a new folder of ``tmp``, and judge it."""
    d = tempfile.mkdtemp(prefix="case-", dir=tmp)
    try:
        inp = os.path.join(d, case.name)
        with open(inp, "wb") as f:
            f.write(case.data)
        if any("{base}" in a for a in case.args):
            with open(os.path.join(d, "base" + Path(case.name).suffix), "wb") as f:
                f.write(base_bytes(case.base))
        out = os.path.join(d, case.out_name)
        if case.precreate:
            with open(out, "wb") as f:
                f.write(KNOWN)
        argv = [a.replace("{input}", case.name).replace("{out}", case.out_name)
                .replace("{base}", "base" + Path(case.name).suffix) for a in case.args]
        before = _snapshot(d)
        t0 = time.monotonic()
        with open(inp if "-" in case.args else os.devnull, "rb") as stdin:
            p = subprocess.Popen((command or offconv_command()) + argv, cwd=d, env=_env(tmp),
                                 stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        try:
            _, err = p.communicate(timeout=timeout)
            code = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            code = None
        r = Result(case, code, err.decode("utf-8", "replace"), seconds=time.monotonic() - t0)
        r.failures = judge(r, before, _snapshot(d), d, timeout)
        return r
    finally:
        shutil.rmtree(d, ignore_errors=True)


def judge(r: Result, before: dict, after: dict, d: str, timeout: float = TIMEOUT) -> list:
    """What is wrong with a run (empty: nothing)."""
    err, code, case = r.stderr, r.code, r.case
    bad = []
    if code is None:
        return [f"timeout: no end within {timeout:g} s"]
    if "Traceback (most recent call last)" in err:
        bad.append("traceback: " + _last_line(err))
    if code == 70 or "internal error" in err:
        bad.append("internal-error: " + _first_line(err, "internal error"))
    elif code not in (0, 2):
        bad.append(f"exit-{code}: " + _last_line(err))
    if code == 2:
        lines = err.split("\n")
        if not err.startswith("offconv: ") or not err.endswith("\n") \
                or not all(l.startswith(("offconv: ", "  | ", "Try 'offconv")) for l in lines[:-1]):
            bad.append("stderr: not 'offconv: ...' lines: " + err[:200])
        if after != before:
            changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
            bad.append(f"left-behind: exit 2 changed or left {changed}")
    if code == 0:
        temps = [n for n in after if n.startswith(".offconv-")]
        if temps:
            bad.append(f"left-behind: temp files {temps}")
        problem = _output_problem(os.path.join(d, case.out_name), case.args)
        if problem:
            bad.append("invalid-output: " + problem)
    return bad


def _first_line(err: str, having: str) -> str:
    return next((l for l in err.splitlines() if having in l), err.strip()[:200])[:300]


def _last_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def _output_problem(out: str, args: list) -> str | None:
    """Whether OUT parses as what its format claims (None: it does, or is not checked)."""
    to = args[args.index("--to") + 1] if "--to" in args else ("json" if "--json" in args else None)
    try:
        data = open(out, "rb").read()
    except OSError as e:
        return f"no output: {e.strerror}"
    if data == KNOWN:
        return "exit 0 but OUT was not written"
    try:
        if to in ("svg", "timeline"):
            import xml.etree.ElementTree as ET
            ET.fromstring(data)
        elif to in ("speedscope", "json"):
            json.loads(data)
        elif to == "pprof":
            gzip.decompress(data)
    except Exception as e:   # noqa: BLE001 - any parse error is the finding
        return f"{to} output does not parse: {type(e).__name__}: {str(e)[:120]}"
    return None


# -- shrinking and keeping ----------------------------------------------------------

def shrink(r: Result, tmp: str, command: list | None, timeout: float, budget_s: float = 60.0,
           max_runs: int = 40) -> Result:
    """A smaller case that fails the same way (same kind, same first line for an internal
    error), by dropping options and chunks of lines; bounded by ``max_runs`` and
    ``budget_s``. Compressed and binary inputs keep their bytes."""
    want = _signature(r)
    deadline = time.monotonic() + budget_s
    runs = 0
    best = r

    def tries(case: Case) -> Result | None:
        nonlocal runs
        if runs >= max_runs or time.monotonic() > deadline:
            return None
        runs += 1
        t = run_case(case, tmp, command, timeout)
        return t if t.failures and _signature(t) == want else None

    # options, one at a time (the input, --to, --mode and -o stay)
    i = 1
    while i < len(best.case.args):
        a = best.case.args[i]
        if a.startswith("-") and a not in ("--to", "--mode", "-o"):
            n = 2 if a in {o[0] for o in OPTIONS if len(o) == 2} else 1
            t = tries(replace(best.case, args=best.case.args[:i] + best.case.args[i + n:]))
            if t is not None:
                best = t
                continue
        i += 1
    data = best.case.data
    if data[:2] in (b"\x1f\x8b", b"\xfd7") or data.startswith((b"BZh", b"PERFILE2")):
        return best
    lines = data.split(b"\n")
    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and runs < max_runs:
        i, removed = 0, False
        while i < len(lines):
            cand = lines[:i] + lines[i + chunk:]
            t = tries(replace(best.case, data=b"\n".join(cand))) if cand else None
            if t is not None:
                best, lines, removed = t, cand, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return best


def _signature(r: Result) -> tuple:
    kind = r.kind
    if kind == "internal-error":
        m = re.search(r"internal error: (\w+)", r.failures[0])
        return kind, m.group(1) if m else ""
    return (kind,)


def write_found(r: Result, out_dir: Path, shrunk: bool) -> Path:
    """``out_dir/seedS-caseN/``: the input and case.json (what replay() needs, and what
    failed)."""
    c = r.case
    d = Path(out_dir) / f"seed{c.seed}-case{c.index}"
    d.mkdir(parents=True, exist_ok=True)
    stored = "input" + (Path(c.name).suffix or ".txt")
    (d / stored).write_bytes(c.data)
    meta = {k: v for k, v in asdict(c).items() if k != "data"}
    meta.update(stored=stored, failures=r.failures, exit=r.code, stderr=r.stderr[-2000:], shrunk=shrunk,
                replay=f"python -m tests.fuzz --seed {c.seed} --case {c.index}")
    (d / "case.json").write_text(json.dumps(meta, indent=1, ensure_ascii=True) + "\n")
    return d


def load_found(d: Path) -> Case:
    meta = json.loads((Path(d) / "case.json").read_text())
    data = (Path(d) / meta["stored"]).read_bytes()
    return Case(meta["seed"], meta["index"], meta["base"], meta["mutations"], data, meta["name"],
                meta["args"], meta["out_name"], meta["precreate"])


def found_dirs(root: Path = FOUND) -> list:
    return sorted(p.parent for p in Path(root).glob("*/case.json"))


# -- the loop -----------------------------------------------------------------------

@dataclass
class Summary:
    seed: int
    ran: int
    seconds: float
    failed: list        # Results (shrunk when asked)
    written: list       # folders written

    @property
    def rate(self) -> float:
        return self.ran / self.seconds if self.seconds else 0.0


def fuzz(seed: int, seconds: float | None = None, cases: int | None = None, jobs: int = 2,
         out: Path | None = FOUND, command: list | None = None, timeout: float = TIMEOUT,
         shrink_s: float = 60.0, log=print, start: int = 0) -> Summary:
    """Cases start, start+1, ... of ``seed`` until ``cases`` have run or ``seconds`` have
    passed (the cases started by then finish); failures shrunk (for ``shrink_s`` seconds at
    most, in all) and written to ``out`` (None: not written)."""
    assert seconds is not None or cases is not None
    t0 = time.monotonic()
    deadline = t0 + seconds if seconds is not None else None
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="offconv-fuzz-") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending: set = set()
        nxt = start

        def more() -> bool:
            return (cases is None or nxt < start + cases) and (deadline is None or time.monotonic() < deadline)

        while True:
            while len(pending) < max(1, jobs) and more():
                pending.add(pool.submit(run_case, make_case(seed, nxt), tmp, command, timeout))
                nxt += 1
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                r = f.result()
                results[r.case.index] = r
                if r.failures:
                    log(f"FAIL seed {seed} case {r.case.index}: {r.failures[0][:200]}\n"
                        f"     {r.case.base} {r.case.mutations}: {r.case.command()[:200]}")
            if sum(bool(r.failures) for r in results.values()) >= MAX_FAILURES:
                cases = 0   # (a tree broken everywhere: what runs now is enough to see it)
                log(f"stopping: {MAX_FAILURES} failures")
        elapsed = time.monotonic() - t0
        failed, written = [], []
        shrink_deadline = time.monotonic() + shrink_s
        seen: dict = {}
        for i in sorted(results):
            r = results[i]
            if not r.failures:
                continue
            sig = _signature(r)
            seen[sig] = seen.get(sig, 0) + 1
            left = shrink_deadline - time.monotonic()
            # the first case of each way of failing is shrunk, the first KEEP_EACH kept
            s = shrink(r, tmp, command, timeout, budget_s=left) if left > 0 and seen[sig] == 1 else r
            failed.append(s)
            if out is not None and seen[sig] <= KEEP_EACH:
                written.append(write_found(s, out, s is not r))
    return Summary(seed, len(results), elapsed, failed, written)


def replay(dirs, command: list | None = None, timeout: float = TIMEOUT) -> list:
    """Run kept cases: [(folder, Result)]."""
    with tempfile.TemporaryDirectory(prefix="offconv-fuzz-") as tmp:
        return [(d, run_case(load_found(d), tmp, command, timeout)) for d in dirs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, help="run cases until this many seconds have passed")
    ap.add_argument("--cases", type=int, help="run this many cases (with --seconds: whichever ends first)")
    ap.add_argument("--case", type=int, help="run case N of the seed alone, and print it")
    ap.add_argument("--start", type=int, default=0, help="the first case (default 0)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a case may take (a hang)")
    ap.add_argument("--out", type=Path, default=FOUND, help="where failing cases are written")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--replay", type=Path, help="run the cases kept in this folder")
    a = ap.parse_args(argv)
    if a.replay is not None:
        bad = 0
        for d, r in replay(found_dirs(a.replay), timeout=a.timeout):
            print(f"{'FAIL' if r.failures else 'ok  '} {d.name}: exit {r.code} {r.failures[:1]}")
            bad += bool(r.failures)
        return 1 if bad else 0
    if a.case is not None:
        c = make_case(a.seed, a.case)
        with tempfile.TemporaryDirectory(prefix="offconv-fuzz-") as tmp:
            r = run_case(c, tmp, timeout=a.timeout)
            s = shrink(r, tmp, None, a.timeout) if r.failures and not a.no_shrink else r
        print(f"seed {a.seed} case {a.case}: {c.base} {c.mutations}\n  {c.command()}\n"
              f"  input {c.name!r}, {len(c.data)} bytes; OUT {'exists' if c.precreate else 'is new'}\n"
              f"  exit {r.code} in {r.seconds:.2f} s\n  stderr: {r.stderr[:2000]!r}\n"
              f"  {'FAIL: ' + '; '.join(r.failures) if r.failures else 'ok'}")
        if r.failures and a.out:
            print(f"  written to {write_found(s, a.out, s is not r)}"
                  + (f" (shrunk to {len(s.case.data)} bytes: {s.case.command()})" if s is not r else ""))
        return 1 if r.failures else 0
    if a.seconds is None and a.cases is None:
        ap.error("give --seconds, --cases or --case")
    print(f"offconv fuzz: seed {a.seed}, from case {a.start}, "
          f"{a.seconds or '-'} s, {a.cases or '-'} cases, {a.jobs} jobs", flush=True)
    s = fuzz(a.seed, a.seconds, a.cases, a.jobs, a.out, timeout=a.timeout,
             shrink_s=0 if a.no_shrink else 120, log=lambda m: print(m, flush=True), start=a.start)
    print(f"{s.ran} cases in {s.seconds:.1f} s ({s.rate:.2f} cases/s), {len(s.failed)} failed")
    for d in s.written:
        print(f"  kept {d}")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
