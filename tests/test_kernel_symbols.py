"""A recording whose kernel frames perf cannot name: perf.data converted on another kernel
build than the one it was recorded on, without that kernel's kallsyms (perf: "No kallsyms
or vmlinux with build-id ... was found"; every kernel frame is ``[unknown]``). offconv says
so first (perf_data.kernel_symbols_note), reads such waits from their wake-ups alone, as
waits without a call chain (causes.UNRESOLVED), tells the verdict's reader, and passes the
recording machine's kallsyms to perf script (``--kallsyms``, perf script's option)."""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offconv.run import pipeline
from offconv.analysis.summary import report_data
from offconv.sched.causes import NO_CHAIN, UNRESOLVED, unread_stack
from offconv.model.records import Frame, KERNEL, USER
from offconv.model.options import Options, ParseOptions
from offconv.inputs.perf_data import reader as perf_data

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "recorded"
VERDICT = FIX / "verdict"
VICTIM = FIX / "e2e_victim_a_small" / "e2e_victim_a_small.data"
PERF = shutil.which("perf")
needs_root_perf = pytest.mark.skipif(PERF is None or os.geteuid() != 0,
                                     reason="perf and root are needed to record")
# a kernel frame as perf prints it, and as it prints it without the kernel's symbols
KFRAME = re.compile(r"^(\s+[0-9a-f]+ ).*( \(\[kernel\.kallsyms\]\))$", re.M)
MESSAGE = "No kallsyms or vmlinux with build-id 4a5a9b0affb66c437abcd455d2738af879985fa9 was found"


def run(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env)


def test_a_stack_is_unread_without_a_named_kernel_frame():
    user = Frame("main", "/bin/x", USER)
    named = Frame("futex_wait", "[kernel.kallsyms]", KERNEL)
    unknown = Frame("[kernel.kallsyms]", "[kernel.kallsyms]", KERNEL)
    module = Frame("[xfs]", "[xfs]", KERNEL)   # an unresolved frame of a module
    assert unread_stack((user,)) == NO_CHAIN and unread_stack(()) == NO_CHAIN
    assert unread_stack((user, unknown, module)) == UNRESOLVED
    assert unread_stack((user, unknown, named)) is None


def _unresolved_reports() -> dict:
    """Every verdict fixture recorded with call chains, its kernel frames' names taken away
    as perf prints them without the kernel's symbols: name -> (expected, report)."""
    out = {}
    for exp_path in sorted(VERDICT.glob("*/expected.json")):
        name = exp_path.parent.name
        text = gzip.decompress((exp_path.parent / f"{name}.perf-script.txt.gz").read_bytes()).decode()
        if "[kernel.kallsyms]" not in text:
            continue   # perf sched record: no call chains
        out[name] = (json.loads(exp_path.read_text()), text)
    return out


CASES = _unresolved_reports()
# what the events alone cannot tell (each would need the blocked stack): a per-process
# recording of a fixed-hold-time lock (its same-length waits, ended by three threads, read
# as timed waits); lock waiters among CPU hogs (their unread waits do not claim them a place
# in the workload, as a background daemon's timeouts must not); an idle machine's daemons;
# a pipe's reader waiting seconds for the other end (read as latency: capacity and waiting);
# an fsync loop among CPU hogs (as the lock waiters: its disk waits, ended from interrupts
# that land on the hogs, do not claim it a place beside them)
# (the per-process recording's waits all read as timed: no workload thread is left, and the
# report answers none -- it said on-cpu before an empty workload was made no answer)
KNOWN_MISSES = {"p_recording": None, "lock_plus_oversub": "capacity", "idle_g": "waiting",
                "idle_beside_bpftrace": "waiting",   # (an idle machine's daemons, as idle_g)
                # an idle pool's workers: three 1 s timeouts each, too few to be read as
                # timed waits from the events alone
                "pool_join": "waiting",
                "pipe_sort": "both", "hogs_plus_fsync": "capacity",
                # node's libuv thread waits 3 s in epoll_wait: without kernel frames, an
                # unread wait (its futex-waiting siblings read as woken to exit)
                "node_spin": "waiting"}


def test_the_cases_cover_every_answer():
    assert len(CASES) >= 15
    assert {exp["answer"] for exp, _ in CASES.values()} >= {"waiting", "capacity", "on-cpu", "both"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unresolved_kernel_frames_are_read_from_wake_ups_and_said(name, tmp_path):
    exp, text = CASES[name]
    stripped = KFRAME.sub(r"\1[unknown]\2", text)
    assert "[unknown] ([kernel.kallsyms])" in stripped and not KFRAME.search(
        stripped.replace("[unknown] ([kernel.kallsyms])", ""))
    path = tmp_path / f"{name}.txt"
    path.write_text(stripped)
    v = report_data(pipeline.load([str(path)], Options()))["verdict"]
    reason = v["reason"]
    if name.startswith("go_"):
        # a Go program's user frames (the runtime scheduler's, with frame pointers) still
        # say what its threads wait for: the answer is read from them, not the kernel's
        assert v["answer"] == exp["answer"], reason
        assert v["cause"] is None or v["cause"]["label"].startswith("Go ") or \
            v["cause"]["label"] == UNRESOLVED[1], v["cause"]
        return
    assert v["blocked_unresolved_share"] > 0.5
    # never a stack-based cause the stacks cannot show
    assert v["cause"] is None or v["cause"]["label"] == UNRESOLVED[1], v["cause"]
    if v["answer"] in ("waiting", "both") and v["cause"] is not None:
        assert "resolve the kernel frames" in reason and "--kallsyms" in reason
    else:   # the answer rests on wake-ups alone: the sentence says so
        assert "of the recording's blocked time are unresolved" in reason and "may be wrong" in reason
    assert v["answer"] == KNOWN_MISSES.get(name, exp["answer"]), reason


def test_a_resolved_recording_says_nothing_of_it():
    d = report_data(pipeline.load([str(VERDICT / "lock_sleep" / "lock_sleep.perf-script.txt.gz")], Options()))
    v = d["verdict"]
    assert v["blocked_unresolved_share"] == 0 and "unresolved" not in v["reason"]
    assert v["cause"]["cause"] == "lock"


@pytest.fixture(scope="module")
def sched_data(tmp_path_factory) -> Path:
    """sched_switch with call chains, recorded here (kernel frames that this kernel names):
    a process that sleeps 20 times."""
    data = tmp_path_factory.mktemp("ksyms") / "sched.data"
    subprocess.run([PERF, "record", "-q", "-a", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
                    "-g", "-o", str(data), "--", sys.executable, "-c",
                    "import time\nfor _ in range(20): time.sleep(0.005)"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return data


@needs_root_perf
def test_kallsyms_is_given_to_perf_script(sched_data, tmp_path):
    """--kallsyms FILE: perf names kernel frames from FILE (here /proc/kallsyms with every
    text symbol renamed Z..., the relocation symbols _text and _stext kept), through the
    perf script that offconv.launch starts before the command line is parsed."""
    renamed = tmp_path / "kallsyms"
    with open("/proc/kallsyms") as src, open(renamed, "w") as dst:
        for line in src:
            addr, kind, name, *rest = line.split()
            if kind in "tT" and name not in ("_text", "_stext"):
                name = "Z" + name
            dst.write(" ".join([addr, kind, name, *rest]) + "\n")
    plain, ours = tmp_path / "plain.folded", tmp_path / "ours.folded"
    a = run(sched_data, "-o", plain)
    b = run(sched_data, "--kallsyms", renamed, "-o", ours)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert ";__schedule " in plain.read_text() and ";Z" not in plain.read_text()
    assert ";Z__schedule " in ours.read_text() and ";__schedule " not in ours.read_text()
    # the same through pipeline.load (no launch): the option reaches the converter
    p = pipeline.load([str(sched_data)], Options(parse=ParseOptions(kallsyms=str(renamed))))
    names = {f.name for stack in p.samples for f in stack}
    assert "Z__schedule" in names and "__schedule" not in names
    bad = run(sched_data, "--kallsyms", tmp_path / "missing", "-o", tmp_path / "x.folded")
    assert bad.returncode == 2 and "--kallsyms" in bad.stderr and "Traceback" not in bad.stderr


@needs_root_perf
def test_perf_finding_no_kernel_symbols_is_said_first(sched_data, tmp_path):
    """A perf that finds no kallsyms for the recording's kernel build-id (as on another
    kernel): its kernel frames are [unknown] (an empty --kallsyms does that to real perf)
    and it says why on stderr; offconv gives that warning first, with the remedies, and
    reads the waits from their wake-ups."""
    empty = tmp_path / "empty"
    empty.write_text("")
    fake = tmp_path / "bin" / "perf"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    f"if [ \"$1\" = script ]; then echo '{MESSAGE}' >&2; "
                    f"exec {PERF} \"$@\" --kallsyms={empty}; fi\n"
                    f"exec {PERF} \"$@\"\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    r = run("report", "--json", sched_data, env=env)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    first = d["warnings"][0]
    assert first.startswith(f"{sched_data}: perf found no kernel symbols for this recording")
    assert "--kallsyms FILE" in first and "convert it where it was recorded" in first
    assert r.stderr.splitlines()[0] == f"offconv: {first}"
    assert d["verdict"]["blocked_unresolved_share"] > 0.5   # system-wide: what the background blocks in varies
    # the real perf names them: no warning, and the sleeps are sleeps (nanosleep's frames);
    # unresolved, no cause that needs a kernel frame
    ok = json.loads(run("report", "--json", sched_data).stdout)
    assert not any("kernel symbols" in w for w in ok["warnings"])
    assert ok["verdict"]["blocked_unresolved_share"] == 0
    assert "sleep" in {c["cause"] for c in ok["causes"]}
    assert {c["cause"] for c in d["causes"]} <= {"other", "child", "poll/idle", "peer-cpu"}


def test_the_note_names_both_kernels(monkeypatch):
    monkeypatch.setattr(perf_data, "_os_release", lambda perf, path: "6.1.0-old")
    monkeypatch.setattr("platform.release", lambda: "6.18.0-new")
    note = perf_data.kernel_symbols_note("r.data", f"some\n{MESSAGE}\n", "perf", None)
    assert "recorded on kernel 6.1.0-old, this machine runs 6.18.0-new" in note
    assert perf_data.kernel_symbols_note("r.data", "Warning: nothing else\n", "perf", None) is None
    monkeypatch.setattr(perf_data, "_os_release", lambda perf, path: None)
    note = perf_data.kernel_symbols_note("r.data", MESSAGE, "perf", "k.txt")
    assert "(k.txt did not match it)" in note and "build-id 4a5a9b0affb6" in note


def _kernel_build_id(data: Path) -> str:
    out = subprocess.run([PERF, "buildid-list", "-i", str(data)], capture_output=True, text=True).stdout
    return next((ln.split()[0] for ln in out.splitlines() if "[kernel.kallsyms]" in ln), "")


@pytest.mark.skipif(PERF is None, reason="perf is needed")
def test_the_committed_recording_on_another_kernel():
    """The committed perf.data was recorded on kernel 6.18.44-fc-v669: where another kernel
    runs and perf's build-id cache does not hold that one's symbols, offconv says so."""
    here = subprocess.run([PERF, "buildid-list", "-k"], capture_output=True, text=True).stdout.strip()
    r = run("report", "--json", VICTIM)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    warned = [w for w in d["warnings"] if "perf found no kernel symbols" in w]
    unresolved = d["verdict"]["blocked_unresolved_share"]
    if here == _kernel_build_id(VICTIM) or not unresolved:
        assert not warned and unresolved == 0   # this kernel, or its symbols cached here
        pytest.skip("the recording's kernel symbols are found here")
    assert warned and "recorded on kernel 6.18.44-fc-v669" in warned[0]
    assert unresolved > 0.9 and "kernel frames" in d["verdict"]["reason"]
