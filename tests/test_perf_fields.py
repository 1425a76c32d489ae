"""perf.data of samples is converted with perf script's default fields less the symbol
offset (``-F -symoff``: perf_data.FIELDS): every output must be what the default fields
give, byte for byte; a recording with tracepoints keeps the default fields (perf 6.1 then
leaves their call chains out); and a perf that refuses the field list is run again with its
defaults, the output unchanged."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offconv.inputs.perf_data import reader as perf_data

ROOT = Path(__file__).resolve().parents[1]
PERF = shutil.which("perf")
needs_perf = pytest.mark.skipif(PERF is None or shutil.which("gcc") is None,
                                reason="perf and gcc are needed")

# inlined frames (perf prints them as "sym+0x24 (inlined)"), a libc and a kernel part
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static inline __attribute__((always_inline)) double leaf(double x)
{ for (int i = 0; i < 100; i++) x = x * 1.0000001 + 0.5; return x; }
static inline __attribute__((always_inline)) double mid(double x) { return leaf(x) + leaf(x * 2); }
__attribute__((noinline)) double outer(double x) { return mid(x) * 0.5; }
int main(void) {
    double s = 0;
    for (long i = 0; i < 1500000; i++) {
        s += outer(i);
        if (i % 1000 == 0) { char *p = malloc(1 << 16); memset(p, 1, 1 << 16); s += p[7]; free(p); }
    }
    printf("%f\n", s);
    return 0;
}
"""


def run(*args, env=None) -> subprocess.CompletedProcess:
    """offconv through its console entry point (launch: perf script is started early)."""
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def sched_data(tmp_path_factory) -> Path:
    """sched tracepoints with call chains, recorded here: a committed perf.data of another
    kernel build has [unknown] kernel frames (perf finds no kallsyms for its build-id)."""
    data = tmp_path_factory.mktemp("sched") / "sched.data"
    subprocess.run([PERF, "record", "-q", "-e", "sched:sched_switch", "-g", "-o", str(data), "--",
                    "sh", "-c", "sleep 0.02; sleep 0.02"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return data


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """(frame-pointer recording, dwarf recording) of PROGRAM."""
    d = tmp_path_factory.mktemp("fields")
    (d / "inl.c").write_text(PROGRAM)
    exe = d / "inl"
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", str(exe), str(d / "inl.c")],
                   check=True)
    out = []
    for name, graph in (("fp", ["-g"]), ("dwarf", ["--call-graph", "dwarf"])):
        data = d / f"{name}.data"
        subprocess.run([PERF, "record", "-q", "-F", "999", *graph, "-o", str(data), "--", str(exe)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(data)
    return out


def default_text(data: Path, tmp_path: Path) -> Path:
    text = tmp_path / (data.stem + ".txt")
    with open(text, "wb") as f:
        subprocess.run([PERF, "script", "-i", str(data)], stdout=f, stderr=subprocess.DEVNULL, check=True)
    return text


@needs_perf
@pytest.mark.parametrize("which", [0, 1], ids=["frame-pointer", "dwarf"])
@pytest.mark.parametrize("args", [(), ("--addrs",), ("--all", "--tid")], ids=["plain", "addrs", "all"])
def test_a_samples_recording_converts_as_with_the_default_fields(recordings, tmp_path, which, args):
    data = recordings[which]
    assert perf_data._samples_header(str(data)) is not None
    text = default_text(data, tmp_path)
    assert b"+0x" in text.read_bytes()
    # dwarf unwinding resolves the inlined frames (an "(inlined)" dso, no address of its own)
    assert (b"(inlined)" in text.read_bytes()) == (which == 1)
    for suffix in (".folded", ".svg"):
        ours, theirs = tmp_path / f"data{suffix}", tmp_path / f"text{suffix}"
        a, b = run(data, *args, "-o", ours), run(text, *args, "-o", theirs)
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
        assert a.stderr.replace(str(data), "X") == b.stderr.replace(str(text), "X")
        assert ours.read_bytes() == theirs.read_bytes()
    folded = (tmp_path / "data.folded").read_text()
    assert "main;outer" in folded and ("outer;mid;leaf" in folded) == (which == 1)


@needs_perf
def test_the_field_list_is_given_for_samples_only(recordings, sched_data, perf_script_runs):
    started = perf_script_runs
    for data in (recordings[0], sched_data):
        stream, finish = perf_data.convert(str(data))
        text = stream.read()
        finish()
        stream.close()
        if data is sched_data:  # sched tracepoints: the default fields, offsets and all
            assert b"sched:sched_switch" in text and b"__schedule+0x" in text
        else:
            assert b"+0x" not in text and b" outer (" in text
    assert [a[-2:] == list(perf_data.FIELDS) or "-symoff" in a for a in started] == [True, False]


@needs_perf
def test_perf_drops_tracepoint_call_chains_with_the_field_list(sched_data):
    """Why a recording with tracepoints keeps the default fields (perf 6.1 here)."""
    default = subprocess.run([PERF, "script", "-i", str(sched_data)], capture_output=True).stdout
    listed = subprocess.run([PERF, "script", "-i", str(sched_data), *perf_data.FIELDS],
                            capture_output=True).stdout
    assert b"__schedule+0x" in default
    assert b"__schedule" not in listed and b"sched_switch" in listed


@needs_perf
def test_a_perf_that_refuses_the_field_list_is_run_again_with_its_defaults(recordings, tmp_path):
    fake = tmp_path / "bin" / "perf"
    fake.parent.mkdir()
    calls = tmp_path / "calls"
    # an old perf (before 4.13): '-F -symoff' is an invalid field list, nothing printed
    fake.write_text("#!/bin/sh\n"
                    f"echo \"$*\" >> {calls}\n"
                    "for a in \"$@\"; do [ \"$a\" = -symoff ] && "
                    "{ echo \"  Error: invalid field '-symoff'\" >&2; exit 129; }; done\n"
                    f"exec {PERF} \"$@\"\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    data = recordings[0]
    old, new = tmp_path / "old.svg", tmp_path / "new.svg"
    r = run(data, "-o", old, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # (perf script may also get --no-demangle after the fields, by what the recording holds)
    assert ["-F -symoff" in line for line in calls.read_text().splitlines()] == [True, False]
    r = run(data, "-o", new)
    assert r.returncode == 0 and old.read_bytes() == new.read_bytes()
    # a file that perf fails on either way: perf's own message, one line, exit 2
    broken = tmp_path / "broken.data"
    broken.write_bytes(data.read_bytes()[:200])
    r = run(broken, "-o", tmp_path / "x.svg", env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "perf script failed" in r.stderr and "-symoff" not in r.stderr
    assert not (tmp_path / "x.svg").exists()
