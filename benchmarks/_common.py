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


def _shared_bench() -> Path:
    """$OFFCONV_SHARED_BENCH, else shared/bench beside the clone or beside any folder above it
    (a worktree under wt/ finds the same shared/ as the main clone)."""
    if os.environ.get("OFFCONV_SHARED_BENCH"):
        return Path(os.environ["OFFCONV_SHARED_BENCH"])
    for d in ROOT.parents:
        if (d / "shared" / "bench").is_dir():
            return d / "shared" / "bench"
    return ROOT.parent / "shared" / "bench"


SHARED_BENCH = _shared_bench()
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


# Runs a command and writes "wall_seconds maxrss_kib status" to the fd given first. The command is forked
# from this small process, not from the benchmark's: Linux carries the peak RSS of the
# memory a process was forked (or vfork'd) from into its ru_maxrss across exec, so every
# command started by a benchmark process that had once grown (building the JIT-like input
# in memory: 323 MiB) reported at least that much.
_LAUNCH = ("import os,sys,time\n"
           "t=time.perf_counter();pid=os.fork()\n"
           "if pid==0:\n"
           "    try: os.execvp(sys.argv[2],sys.argv[2:])\n"
           "    finally: os._exit(127)\n"
           "_,st,ru=os.wait4(pid,0);w=time.perf_counter()-t\n"
           "os.write(int(sys.argv[1]),f'{w} {ru.ru_maxrss} {os.waitstatus_to_exitcode(st)}'.encode())\n")


def env_for(cmd: list[str], **extra: str) -> dict:
    """The environment to run ``cmd`` in (with ``extra``): the checkout's offconv found
    first where this interpreter runs it (offconv_cmd's fallback; its venv has its own)."""
    env = dict(os.environ, **extra)
    if cmd and cmd[0] == sys.executable:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def timed(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one run of cmd, measured by a small launcher
    (_LAUNCH) from its fork to its wait; fails loudly on a non-zero exit."""
    env = env_for(cmd)
    import tempfile
    r, w = os.pipe()
    with tempfile.TemporaryFile() as errf:  # not a pipe: a chatty anchor would fill it and hang
        p = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCH, str(w), *cmd], stdout=stdout,
                             stderr=errf, env=env, pass_fds=(w,))
        os.close(w)
        report = b""
        while True:
            part = os.read(r, 4096)
            if not part:
                break
            report += part
        os.close(r)
        p.wait()
        errf.seek(0)
        err = errf.read()[-4000:].decode(errors="replace")
    try:
        wall, rss, code = report.decode().split()
    except ValueError:
        raise SystemExit(f"benchmark launcher failed: {' '.join(cmd)}\n{err}") from None
    if int(code) != 0:
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(cmd)}\n{err}")
    return float(wall), int(rss)


def best_of(n: int, cmd: list[str]) -> tuple[float, int]:
    runs = [timed(cmd) for _ in range(n)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


_OFFCONV: list = []


def offconv_cmd(*args: str) -> list[str]:
    """The command that runs the checkout's offconv as a user gets it: ``pip install .``
    into a virtual environment of its own (under $OFFCONV_BENCH_DIR, made once, the
    checkout installed again on each benchmark run), so that Python's start is what a
    user's is. An interpreter with an editable install imports that install's finder at
    every start, and this sandbox's adds a .pth that imports certifi: 17 ms of `site`
    against 2 ms in a venv, charged to every measurement. Where the venv cannot be made (no network for click and lark), the checkout
    runs with this interpreter, byte-compiled first as `pip install .` would leave it
    (PYTHONDONTWRITEBYTECODE=1, set in this sandbox and common in containers, would have
    every run compile every module again: 0.1 s) -- ``offconv_how()`` says which."""
    if not _OFFCONV:
        _OFFCONV.append(_install())
    return [_OFFCONV[0][0], "-m", "offconv", *args]


def offconv_how() -> str:
    """How offconv_cmd runs offconv, for the table's heading."""
    offconv_cmd()
    return _OFFCONV[0][1]


def _install() -> tuple[str, str]:
    venv = CACHE / "venv"
    py = venv / "bin" / "python"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, **quiet)
            subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT)], check=True, **quiet)
        else:
            subprocess.run([str(py), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
                            str(ROOT)], check=True, **quiet)
        subprocess.run([str(py), "-c", "import offconv._speedups"], check=True, **quiet)
        return str(py), "offconv installed by `pip install .` in a venv of its own"
    except (OSError, subprocess.CalledProcessError) as e:
        why = (getattr(e, "stderr", None) or str(e)).strip().splitlines()[-1:] or [""]
        print(f"benchmarks: no venv install ({why[0]}): offconv runs from the checkout",
              file=sys.stderr)
        import compileall
        compileall.compile_dir(str(ROOT / "offconv"), quiet=1)  # writes __pycache__ (gitignored)
        return sys.executable, "offconv run from the checkout with this interpreter, byte-compiled"


def program(name: str) -> str | None:
    """The executable `name`, from this interpreter's scripts folder first (where pip puts a
    wheel's binaries, such as inferno's `flamegraph`), then PATH. A version manager's shim on
    PATH (pyenv's is a bash script that runs four more) costs about 50 ms per call, which a
    timing would charge to the anchor."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


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


def shallow_file(size: str = "100M") -> Path | None:
    """The "shallow with varied addresses" shape: an interpreter loop (Python without
    -X perf: libpython frames, a different leaf address in nearly every sample) plus a
    gcc/g++ compile loop, recorded once per machine (root + perf), grown to ``size`` by
    replicate_perf_script.py. None when it cannot be recorded here."""
    d = CACHE / "shallow"
    txt = d / "shallow.txt"
    if not txt.exists():
        if shutil.which("perf") is None or os.geteuid() != 0:
            return None
        d.mkdir(parents=True, exist_ok=True)
        _record_shallow(d, d / "shallow.data", 8, python_seconds=9)
        with open(txt, "wb") as f:
            subprocess.run(["perf", "script", "-i", str(d / "shallow.data")], check=True, stdout=f,
                           stderr=subprocess.DEVNULL)
    out = CACHE / f"shallow-{size}.txt"
    if not out.exists():
        subprocess.run([sys.executable, str(SHARED_BENCH / "replicate_perf_script.py"), str(txt), size,
                        "-o", str(out)], check=True)
    return out


def _record_shallow(d: Path, data: Path, seconds: int, python_seconds: int | None = None) -> None:
    """perf record -F 999 -g -a of the shallow workload for ``seconds``: a Python loop
    (json, re, a generator's sum; for ``python_seconds``, default ``seconds``) and
    gccloop.sh compiling in a loop, both in ``d``."""
    (d / "loop.py").write_text(
        f"import time, json, re\nend = time.time() + {python_seconds or seconds}\n"
        "d = {'a': [1, 2, 3], 'b': 'x' * 50}\n"
        "while time.time() < end:\n    s = json.dumps(d); json.loads(s); "
        "re.sub(r'x+', 'y', s); sum(i * i for i in range(200))\n")
    loop = SHARED_BENCH / "workloads" / "gccloop.sh"
    subprocess.run(["perf", "record", "-F", "999", "-g", "-a", "-o", str(data), "--",
                    "sh", "-c", f"python3 {d / 'loop.py'} & sh {loop} {seconds} {d} & sleep {seconds}; wait"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def long_shallow_file(seconds: int = 215) -> Path | None:
    """The shallow shape recorded whole, not grown by copying: shallow_file's workload (the
    Python loop and the gcc/g++ loop) for ``seconds`` (about 90 MB of perf script text at
    -F 999 -g -a on 2 CPUs). Nothing in it repeats but what the programs repeat: 19% of
    its leaf lines and 18% of its callchains are distinct, where a copied file's come back
    from the second copy on. Recorded once per machine (root + perf); None otherwise."""
    d = CACHE / "shallow-long"
    txt = d / "long.txt"
    if txt.exists():
        return txt
    if shutil.which("perf") is None or os.geteuid() != 0:
        return None
    d.mkdir(parents=True, exist_ok=True)
    print(f"recording {seconds} s of the shallow workload ...", file=sys.stderr, flush=True)
    _record_shallow(d, d / "long.data", seconds)
    with open(str(txt) + ".tmp", "wb") as f:
        subprocess.run(["perf", "script", "-i", str(d / "long.data")], check=True, stdout=f,
                       stderr=subprocess.DEVNULL)
    os.replace(str(txt) + ".tmp", txt)
    (d / "long.data").unlink()
    return txt


def new_leaves_file(size: str = "100M") -> Path | None:
    """shallow_file(size) with every sample's leaf line made new: its address a counter
    (perf's padding kept), its offset moved by the counter mod 61. replicate_perf_script.py
    repeats the recording copy after copy, so in shallow_file a leaf line (9k distinct in
    18k events) comes back in every copy and a cache of them hits from the second copy on;
    here none repeats, as in a long recording of an interpreter whose every sample lands
    on another instruction. The callers and headers are the shallow file's."""
    src = shallow_file(size)
    if src is None:
        return None
    out = CACHE / f"new-leaves-{size}.txt"
    if out.exists():
        return out
    import re
    leaf = re.compile(r"^(\t *)([0-9a-fA-F]+) (.*?)(?:\+0x([0-9a-fA-F]+))?( \(.*\))$")
    n = 0
    with open(src) as f, open(str(out) + ".tmp", "w") as o:
        first = False  # the next line is an event's first callchain line
        for line in f:
            if first and line.startswith("\t"):
                m = leaf.match(line.rstrip("\n"))
                if m:
                    n += 1
                    pad, addr, sym, off, dso = m.groups()
                    new = f"{0x400000 + n:x}"
                    pad = pad + " " * max(0, len(addr) - len(new))
                    sym += f"+0x{int(off, 16) + n % 61:x}" if off else ""
                    line = f"{pad}{new} {sym}{dso}\n"
            first = bool(line.strip()) and not line.startswith(("\t", " ", "#"))
            o.write(line)
    os.replace(str(out) + ".tmp", out)
    return out


def build_sched_file(size: str = "100M", seconds: int = 14) -> Path | None:
    """The sched shape of a parallel build, recorded once per machine with
    scripts/record.sh -a (sched_switch, sched_wakeup, sched_wakeup_new, -g): ``make -j3``
    over 300 small C files in a loop, ``find /usr/share | xargs grep`` and ``seq | sort -R |
    sort -n`` loops, grown to ``size`` with --shift-pids. Thousands of short-lived
    processes: twice the events per byte of sched.txt.xz, and most headers and callchains
    new (a cache of header text without its timestamp would hit 30% of its events, 91% of
    sched.txt's). None without gcc, make, perf and root."""
    d = CACHE / "build-sched"
    txt = d / "build-sched.txt"
    if not txt.exists():
        if any(shutil.which(p) is None for p in ("perf", "gcc", "make")) or os.geteuid() != 0:
            return None
        (d / "src").mkdir(parents=True, exist_ok=True)
        for i in range(1, 301):
            (d / "src" / f"f{i}.c").write_text(
                f"int f{i}(int x){{int s=0;for(int k=0;k<x;k++)s+=k*{i}^(s>>3);return s;}}\n")
        (d / "Makefile").write_text("all: $(patsubst src/%.c,obj/%.o,$(wildcard src/*.c))\n"
                                    "obj/%.o: src/%.c\n\t@mkdir -p obj && gcc -O1 -c $< -o $@\n")
        loop = f"end=$(( $(date +%s) + {seconds + 2} )); while [ \"$(date +%s)\" -lt $end ]; do"
        work = subprocess.Popen(["sh", "-c",
                                 f"cd {d}; ({loop} rm -rf obj; make -s -j3 >/dev/null 2>&1; done) & "
                                 f"({loop} find /usr/share -type f -name '*.txt' 2>/dev/null | head -2000 "
                                 f"| xargs grep -l zzz_none >/dev/null 2>&1; done) & "
                                 f"({loop} seq 1 300000 | sort -R | sort -n >/dev/null; done) & wait"])
        try:
            time.sleep(1)
            rec = subprocess.run(["bash", str(ROOT / "scripts" / "record.sh"), "-a", "-d", str(seconds),
                                  "-o", str(txt)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        finally:
            work.wait()
        if rec.returncode != 0:   # e.g. no tracefs mounted: the row stays empty, with the reason
            print(f"build sched shape not recorded: {rec.stderr.strip()}", file=sys.stderr)
            txt.unlink(missing_ok=True)
            return None
    out = CACHE / f"build-sched-{size}.txt"
    if not out.exists():
        subprocess.run([sys.executable, str(SHARED_BENCH / "replicate_perf_script.py"), str(txt), size,
                        "--shift-pids", "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out


def _java_workload(n: int = 1500) -> str:
    """A Java program of ``n`` small static methods that call one another along paths the
    data picks (so the JIT compiles hundreds of them, inlined in varied ways), plus some
    library work (StringBuilder, regex, HashMap, sort); runs for argv[0] seconds."""
    out = ["import java.util.*;", "import java.util.regex.*;", "public class Work {", "  static long sink;"]
    for i in range(n):
        a, b = (i * 7 + 3) % n, (i * 13 + 5) % n
        out.append(f"  static long m{i}(long x, int d) {{ if (d == 0) return x * {i + 1} + sink; "
                   f"long y = x ^ {i * 2654435761 % 1000003}L; if ((y & 3) == 0) return m{a}(y >> 1, d - 1) + 1; "
                   f"if ((y & 3) == 1) return m{b}(y + {i}, d - 1); StringBuilder s = new StringBuilder(); "
                   f"s.append(y).append('{chr(97 + i % 26)}'); return s.length() + m{(a + b) % n}(y * 3, d - 1); }}")
    out.append('  static final Pattern P = Pattern.compile("[0-9]+[a-z]");')
    out.append("""  public static void main(String[] a) {
    long end = System.nanoTime() + Long.parseLong(a[0]) * 1_000_000_000L;
    Random r = new Random(1); Map<String, Integer> m = new HashMap<>(); long t = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 2000; i++) t += dispatch(r.nextInt(64), r.nextLong(), 6 + r.nextInt(10));
      String s = Long.toString(t) + "k";
      if (P.matcher(s).find()) m.merge(s.substring(0, Math.min(3, s.length())), 1, Integer::sum);
      List<Integer> l = new ArrayList<>(); for (int i = 0; i < 300; i++) l.add(r.nextInt());
      Collections.sort(l); t += l.get(0);
    }
    System.out.println(t + " " + m.size());
  }""")
    out.append("  static long dispatch(int k, long x, int d) { switch (k) {")
    out += [f"    case {j}: return m{j * n // 64}(x, d);" for j in range(64)]
    out += ["    default: return 0; } }", "}"]
    return "\n".join(out) + "\n"


def java_file(size: str = "100M", seconds: int = 55) -> Path | None:
    """The Java/JIT shape, recorded here: a JDK's JIT-compiled methods (named from the
    /tmp/perf-PID.map that -XX:+DumpPerfMapAtExit writes), the JVM's compiler threads, GC;
    ``perf record -F 999 -g -a`` for ``seconds``, cut or grown to ``size`` at an event
    boundary by replicate_perf_script.py. None without java, javac, perf and root."""
    d = CACHE / "java"
    txt = d / "java.txt"
    if not txt.exists():
        if not all(map(shutil.which, ("java", "javac", "perf"))) or os.geteuid() != 0:
            return None
        d.mkdir(parents=True, exist_ok=True)
        (d / "Work.java").write_text(_java_workload())
        subprocess.run(["javac", "Work.java"], cwd=d, check=True)
        subprocess.run(["perf", "record", "-F", "999", "-g", "-a", "-o", str(d / "java.data"), "--",
                        "java", "-XX:+PreserveFramePointer", "-XX:+UnlockDiagnosticVMOptions",
                        "-XX:+DumpPerfMapAtExit", "-cp", str(d), "Work", str(seconds)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(str(txt) + ".tmp", "wb") as f:  # the perf map is read here, while it exists
            subprocess.run(["perf", "script", "-i", str(d / "java.data")], check=True, stdout=f,
                           stderr=subprocess.DEVNULL)
        os.replace(str(txt) + ".tmp", txt)
    out = CACHE / f"java-{size}.txt"
    if not out.exists():
        subprocess.run([sys.executable, str(SHARED_BENCH / "replicate_perf_script.py"), str(txt), size,
                        "-o", str(out)], check=True)
    return out


# A C file for the javac recording's compile loop: many small functions, so cc1 has work
_C_WORK = "".join(f"static int f{i}(int x) {{ for (int k = 0; k < {i % 7 + 2}; k++) x = x * {i} + k; "
                  f"return x ^ {i}; }}\n" for i in range(400)) + \
    "int work(int x) { return " + " + ".join(f"f{i}(x)" for i in range(400)) + "; }\n"


def javac_data(seconds: int = 20) -> Path | None:
    """A perf.data of javac compiling java_file's 1,500-method Work.java in a loop (the
    JIT with a perf map, the interpreter, the C1/C2 compiler threads) plus a gcc -O2 loop,
    ``perf record -F 999 -g -a`` for ``seconds``: 30k distinct stacks of about 23 frames,
    where the SVG, not the parse, is the tail after perf. Recorded once. None without java, javac, gcc, perf and root."""
    d = CACHE / "javac"
    data = d / "javac.data"
    if data.exists():
        return data
    if java_file("100M") is None or shutil.which("gcc") is None:
        return None
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(CACHE / "java" / "Work.java", d / "Work.java")
    (d / "work.c").write_text(_C_WORK)
    loop = (f"end=$((SECONDS+{seconds}))\n"
            "( while [ $SECONDS -lt $end ]; do javac -J-XX:+PreserveFramePointer "
            "-J-XX:+UnlockDiagnosticVMOptions -J-XX:+DumpPerfMapAtExit -d out Work.java; done ) &\n"
            "( while [ $SECONDS -lt $end ]; do gcc -O2 -c work.c -o work.o; done ) &\nwait\n")
    return _record_load(d, loop, data)


def _record_load(d: Path, loop: str, data: Path, callchains: bool = True) -> Path:
    """``loop`` (a bash script) run in ``d`` under ``perf record -F 999 -g -a`` (without
    -g: ``callchains`` False) into ``data``, which appears only once it is complete."""
    (d / "load.sh").write_text(loop)
    subprocess.run(["perf", "record", "-F", "999", *(["-g"] if callchains else []), "-a",
                    "-o", str(data) + ".tmp", "--", "bash", "load.sh"], cwd=d, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.replace(str(data) + ".tmp", data)
    return data


def nocallchain_data(seconds: int = 12) -> Path | None:
    """small_data's workload recorded without -g (``perf record -F 999 -a``): one line an
    event, no blank line between events (about 3 MB, 3.6 MB of text). Recorded once; None
    without gcc, sort, perf and root."""
    small = small_data()
    if small is None:
        return None
    d = CACHE / "nocallchain"
    data = d / "nocallchain.data"
    if data.exists():
        return data
    d.mkdir(parents=True, exist_ok=True)
    for name in ("src", "words.txt"):
        if not (d / name).exists():
            os.symlink(small.parent / name, d / name)
    loop = (small.parent / "load.sh").read_text().replace("SECONDS+15", f"SECONDS+{seconds}")
    return _record_load(d, loop, data, callchains=False)


def nocallchain_text(size: str = "100M") -> Path | None:
    """nocallchain_data's perf script text (``-F -symoff``), replicated to ``size``."""
    data = nocallchain_data()
    if data is None:
        return None
    base = CACHE / "nocallchain" / "nocallchain.txt"
    if not base.exists():
        with open(str(base) + ".tmp", "w") as f:
            subprocess.run(["perf", "script", "-F", "-symoff", "-i", str(data)], stdout=f,
                           stderr=subprocess.DEVNULL, check=True)
        os.replace(str(base) + ".tmp", base)
    out = CACHE / f"nocallchain-{size}.txt"
    if not out.exists():
        want = int(size[:-1]) * {"M": 10 ** 6, "G": 10 ** 9}[size[-1]]
        text = base.read_bytes()
        with open(str(out) + ".tmp", "wb") as f:
            for _ in range(max(1, want // len(text))):
                f.write(text)
        os.replace(str(out) + ".tmp", out)
    return out


def small_data(seconds: int = 15) -> Path | None:
    """A small perf.data (about 5 MB, 30k samples, 9 MB of text): a CPython loop, 60 small C
    files compiled two at a time with gcc -O1 (many short processes) and sort of a 20 MB
    file, ``perf record -F 999 -g -a`` for ``seconds``. perf script takes about 0.45 s of
    it, so offconv's fixed costs (Python's start before perf's, the SVG after perf's end)
    weigh most here. Recorded once; None
    without gcc, sort, perf and root."""
    d = CACHE / "small"
    data = d / "small.data"
    if data.exists():
        return data
    if shutil.which("perf") is None or shutil.which("gcc") is None or os.geteuid() != 0:
        return None
    (d / "src").mkdir(parents=True, exist_ok=True)
    for i in range(1, 61):
        (d / "src" / f"f{i}.c").write_text(
            f"int g{i}(int x){{int s=0;for(int k=0;k<x;k++)s+=k*{i}^(s>>3);return s;}} "
            f"int h{i}(const char*p){{int n=0;while(*p)n+=*p++*{i};return n;}}\n")
    import random
    rnd = random.Random(8)
    with open(d / "words.txt", "w") as f:
        for _ in range(1_500_000):
            f.write("".join(rnd.choice("abcdefghijklmnop") for _ in range(12)) + "\n")
    py = ("d={}\nfor i in range(300000):\n    k=str(i%5000)+'x'\n"
          "    d[k]=d.get(k,'')[:20]+k\n")
    loop = (f"end=$((SECONDS+{seconds}))\n"
            f"( while [ $SECONDS -lt $end ]; do {sys.executable} -c \"{py}\"; done ) &\n"
            "( cd src; while [ $SECONDS -lt $end ]; do ls *.c | xargs -P 2 -n 1 gcc -O1 -c -o /dev/null; "
            "done ) &\n"
            "( while [ $SECONDS -lt $end ]; do sort words.txt > /dev/null; done ) &\nwait\n")
    return _record_load(d, loop, data)


def jit_file(size: str = "100M") -> Path:
    """The Java/JIT-like shape, synthetic: cpu.txt's user frames renamed, copy by copy, to
    JIT-style method names in a /tmp/perf-PID.map (one name per return address and copy),
    so the input holds hundreds of thousands of distinct symbols, as a JIT's does."""
    out = CACHE / f"jit-{size}.txt"
    if out.exists():
        return out
    import re
    src = input_file("cpu").read_text(errors="replace")
    target = int(size.rstrip("MG")) * (10**6 if size.endswith("M") else 10**9)
    frame = re.compile(r"^(\t\s*)([0-9a-f]+) (\S.*?) \((/[^()]*)\)$", re.M)
    written = 0
    k = 0
    with open(str(out) + ".tmp", "w") as f:
        while written < target:
            def ren(m, k=k):
                a = m.group(2)
                return (f"{m.group(1)}{a} Lcom/example/gen{k}/C{a[-4:]};::m{int(a, 16) % 977}+0x{len(a):x} "
                        f"(/tmp/perf-{4000 + k}.map)")
            text = frame.sub(ren, src)
            if written + len(text) > target:  # stop at the event boundary before the target
                text = text[:text.rfind("\n\n", 0, target - written) + 2]
            f.write(text)
            written += len(text)
            k += 1
            if written >= target - len(src) // 1000:
                break
    os.replace(str(out) + ".tmp", out)
    return out
