"""perf script --no-demangle, names demangled by offconv after the parse (parsers.demangle):
every output must be what perf's own demangling gives, byte for byte, or the input is
converted again with perf demangling (Retry); and --no-demangle is chosen only where perf's
demangling costs more than the mangled text (perf_data.no_demangle)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.run import pipeline
from offconv.run.aggregate import Sums
from offconv.cli import app
from offconv.model.records import Frame, Task, thread_frame
from offconv.model.options import ParseOptions
from offconv.inputs import demangle
from offconv.inputs.perf_data import reader as perf_data
from offconv.inputs.demangle import Retry
from offconv.inputs.mangled import perf_demangles
from offconv.inputs.perf_script import frames
from offconv.inputs.perf_script.frames import parse_frame

FIXTURES = Path(__file__).parent / "fixtures"
CXXFILT = shutil.which("c++filt")
needs_cxxfilt = pytest.mark.skipif(CXXFILT is None, reason="c++filt (binutils) not installed")


def pairs():
    out = []
    for row in (FIXTURES / "demangle" / "perf-6.1-node-rpds.tsv").read_text().splitlines():
        a, b = row.split("\t")
        out.append((a.replace("\\t", "\t"), b.replace("\\t", "\t")))
    return out


def demangled(lines: list, addrs: bool = False) -> dict:
    """Each frame line's frames as parsed with the noting on, then apply()'d: stack -> 1."""
    sums = Sums(ParseOptions())
    with demangle.collecting():
        stacks = [parse_frame(ln, addrs) for ln in lines]
        for i, st in enumerate(stacks):
            sums.counts[(thread_frame(Task("t", 1, i)),) + st] = 1
        demangle.apply_noted(sums, addrs)
    assert frames.MANGLED is None  # the noting ends with the block
    return sums.counts


@needs_cxxfilt
def test_every_recorded_line_becomes_the_frames_of_perfs_own_line():
    rows = pairs()
    assert len(rows) == 126 and sum(1 for a, _ in rows if " _R" in a) == 18
    got = list(demangled([a for a, _ in rows]))
    want = [(thread_frame(Task("t", 1, i)),) + parse_frame(b, False) for i, (_, b) in enumerate(rows)]
    assert got == want
    assert sum(1 for a, b in zip(got, want) if a[1].name.startswith("_")) == 0


@needs_cxxfilt
def test_frames_change_only_where_perf_demangles():
    lines = {
        "node": "\t          e2b2fc _ZN2v88internal4Heap7CollectEv+0x1c (/usr/bin/node)",
        "kernel": "\tffffffff8a0f7e6a _RNvCs1_4core3foo+0x2ba ([kernel.kallsyms])",
        "module": "\tffffffffc0a01234 _ZN3foo3barEv+0x10 (/lib/modules/6.1/x.ko)",
        "jit": "\t    7f00deadbeef _ZN3foo3barEv (/tmp/perf-4242.map)",
        "plain": "\t           18df qs+0xbf (/tmp/bin/cwork)",
        "plt": "\t   23290 _ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm@plt (/usr/bin/bpftrace)",
        "version": "\t 1234 _ZNSt6locale7classicEv@@GLIBCXX_3.4+0x10 (/usr/lib/libstdc++.so.6)",
        "go": "\t 1234 main.(*Server).Serve+0x10 (/usr/local/bin/goprog)",
        # legacy Rust: libiberty's Rust demangler, without its hash (perf: DMGL_NO_OPTS)
        "rust": "\t 1234 _ZN4core3fmt5write17h0123456789abcdefE+0x10 (/usr/local/bin/rustprog)",
    }
    got = dict(zip(lines, (k[1:] for k in demangled(list(lines.values())))))
    assert got["node"] == (Frame("v8::internal::Heap::Collect", "/usr/bin/node"),)
    for same in ("kernel", "module", "jit", "plain", "go"):
        assert got[same] == parse_frame(lines[same], False), same
    assert got["plt"][0].name == ("std::__cxx11::basic_string<char, std::char_traits<char>, "
                                  "std::allocator<char> >::find@plt")
    assert got["rust"] == (Frame("core::fmt::write", "/usr/local/bin/rustprog"),)
    # bfd_demangle puts a symbol version back after the demangled name
    assert got["version"][0].name == "std::locale::classic@@GLIBCXX_3.4"


@needs_cxxfilt
@pytest.mark.parametrize("line", [
    "\t 1234 camlStdlib__array__map_154+0x10 (/usr/local/bin/ocamlprog)",  # perf: OCaml demangler
    "\t 1234 Ljava/lang/String;hashCode()I+0x10 (/usr/lib/libsomething.so)",  # perf: Java demangler
    "\t 1234 foo()+0x10 (/usr/bin/x)",
])
def test_names_perf_demangles_otherwise_mean_retry(line):
    with pytest.raises(Retry):
        demangled([line])
    # in a kernel frame, or a JIT's perf map, perf demangles nothing: no Retry
    for dso in ("[kernel.kallsyms]", "/tmp/perf-77.map"):
        other = line.rsplit(" (", 1)[0] + f" ({dso})"
        assert list(demangled([other]))[0][1:] == parse_frame(other, False)


def test_which_dsos_perf_demangles():
    assert perf_demangles("/usr/bin/node") and perf_demangles("[vdso]")
    assert perf_demangles("/tmp/jitted-4242-17.so")  # jitdump: an ELF file
    for dso in ("", "[kernel.kallsyms]", "[unknown]", "[nf_tables]", "[JIT] tid 4242",
                "/tmp/perf-4242.map", "/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko.xz"):
        assert not perf_demangles(dso), dso


def test_stacks_that_become_alike_are_added_up_at_the_first_place():
    a, b, c = Frame("_ZN3FooC1Ev", "/x"), Frame("_ZN3FooC2Ev", "/x"), Frame("main", "/x")
    foo = Frame("Foo::Foo", "/x")
    counts = {(c, a): 3, (c,): 1, (c, b): 4, (c, c): 2}
    out = demangle.remap(counts, {a: (foo,), b: (foo,)})
    assert list(out.items()) == [((c, foo), 7), ((c,), 1), ((c, c), 2)]
    # a frame that becomes none ("(anonymous namespace)::f": a "(process name)" to the parser)
    # or several
    out = demangle.remap({(c, a): 1, (a, c): 2}, {a: (), b: (c, c)})
    assert list(out.items()) == [((c,), 3)]
    assert demangle.remap({(a, b): 5}, {b: (c, c)}) == {(a, c, c): 5}


def test_run_fails_as_retry(tmp_path):
    with pytest.raises(Retry):
        demangle.run(["_Z1fv"], None)
    bad = tmp_path / "c++filt"
    bad.write_text("#!/bin/sh\necho one\necho two\n")
    bad.chmod(0o755)
    with pytest.raises(Retry):
        demangle.run(["_Z1fv"], str(bad))


def test_no_demangle_reads_the_header(tmp_path):
    """Tracepoints (sched events: the off-CPU path) and a file not read here mean perf
    demangles; so does a missing c++filt or $OFFCONV_PERF_DEMANGLE."""
    victim = FIXTURES / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data"
    assert not perf_data.no_demangle(str(victim))
    pipe_mode = tmp_path / "pipe.data"
    pipe_mode.write_bytes(perf_data.MAGIC + (16).to_bytes(8, "little") + b"\0" * 200)
    assert not perf_data.no_demangle(str(pipe_mode))
    assert not perf_data.no_demangle(str(tmp_path / "missing.data"))
    assert perf_data._symbols(str(pipe_mode)) == 0 and perf_data._symbols("[vdso]") == 0
    assert perf_data._symbols(os.path.realpath(sys.executable)) > 0
    fifo = tmp_path / "fifo"  # a name in a recording's header is never opened to block
    os.mkfifo(fifo)
    assert perf_data._symbols(str(fifo)) == 0 and perf_data._symbols("/dev/zero") == 0


CXX = r"""
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
namespace shop {
template <typename T> struct Worker {
  T acc = 0;
  __attribute__((noinline)) T spin(long n) { for (long i = 0; i < n; i++) acc += (T)(i %% 7); return acc; }
};
__attribute__((noinline)) long work(int a) { Worker<long> w; return w.spin(20000 + a); }
__attribute__((noinline)) double work(double a) { Worker<double> w; return w.spin(20000 + (long)a); }
namespace { __attribute__((noinline)) long hidden(long x) { Worker<int> w; return w.spin(x); } }
// std::string<char>'s members are libstdc++'s own (extern templates): samples in a big C++ dso
__attribute__((noinline)) long text(long n) {
  std::string t; for (long i = 0; i < n; i++) { t.append("ab"); t.insert(0, "c"); }
  return (long)t.find("zz") + (long)t.size();
}
}
extern "C" __attribute__((noinline)) long %(extra)s(long x) { return shop::hidden(x); }
int main(int argc, char **argv) {
  long loops = atol(argv[1]); double s = 0;
  std::function<long(long)> f = [](long x) { return %(extra)s(x); };
  for (long i = 0; i < loops; i++) s += shop::work((int)i) + shop::work((double)i) + f(20000) + shop::text(300);
  printf("%%f\n", s);
  return 0;
}
"""


def _record(tmp_path, extra: str) -> Path:
    if shutil.which("perf") is None or shutil.which("g++") is None or os.geteuid() != 0:
        pytest.skip("needs perf, g++ and root")
    src = tmp_path / "shop.cpp"
    src.write_text(CXX % {"extra": extra})
    exe = tmp_path / "shop"
    subprocess.run(["g++", "-O0", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    data = tmp_path / "shop.data"
    subprocess.run(["perf", "record", "-q", "-F", "2999", "-g", "-o", str(data), "--", str(exe), "1000"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return data


@pytest.fixture
def conversions(perf_script_runs):
    """The perf script command lines offconv runs (conftest); ``left_to_offconv`` reads them."""
    return perf_script_runs


def left_to_offconv(runs: list) -> list:
    """Whether each perf script run had --no-demangle (the names left to offconv)."""
    return ["--no-demangle" in args for args in runs]


def _convert(data: Path, out: Path, *args: str) -> bytes:
    r = CliRunner().invoke(app, [str(data), "--mode", "oncpu", *args, "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_bytes()


@needs_cxxfilt
@pytest.mark.parametrize("suffix", [".folded", ".svg", ".speedscope.json", ".pb.gz"])
def test_a_recorded_cpp_program_converts_as_with_perfs_demangling(tmp_path, conversions, monkeypatch, suffix):
    # the program spends a few percent in libstdc++'s own string code: a recording whose
    # samples all missed it (perf's own output has no such frame: seen once in CI) says
    # nothing about those names, and is made again (at most 3 times)
    for _ in range(3):
        monkeypatch.delenv("OFFCONV_PERF_DEMANGLE", raising=False)
        conversions.clear()
        data = _record(tmp_path, "entry_point")
        # a short recording with samples in libstdc++: its 6k symbols cost perf more than the
        # mangled text of so few samples would cost offconv
        assert perf_data.no_demangle(str(data))
        ours = _convert(data, tmp_path / f"ours{suffix}")
        assert left_to_offconv(conversions) == [True]  # one conversion, perf leaving the names to offconv
        monkeypatch.setenv("OFFCONV_PERF_DEMANGLE", "1")
        perfs = _convert(data, tmp_path / f"perfs{suffix}")
        assert left_to_offconv(conversions) == [True, False]
        assert ours == perfs
        if suffix != ".folded" or b"std::__cxx11::basic_string<" in perfs:
            break
    if suffix == ".folded":
        text = ours.decode()
        assert "shop::Worker<long>::spin" in text and "shop::Worker<double>::spin" in text
        assert "main::{lambda" in text
        assert "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::" in text
        assert "_ZN" not in text  # a name left mangled would show here
        # the two overloads of shop::work print alike without their parameters: one frame
        assert "shop::work;" in text


@needs_cxxfilt
def test_a_name_it_cannot_do_converts_again_with_perfs_demangling(tmp_path, conversions, monkeypatch):
    data = _record(tmp_path, "camlShop__entry_12")  # perf demangles it as OCaml
    ours = _convert(data, tmp_path / "ours.folded")
    assert left_to_offconv(conversions) == [True, False]  # tried, then perf's
    monkeypatch.setenv("OFFCONV_PERF_DEMANGLE", "1")
    perfs = _convert(data, tmp_path / "perfs.folded")
    assert ours == perfs
    assert "camlShop__entry_12" not in perfs.decode()  # perf did demangle it (as OCaml)


@needs_cxxfilt
def test_the_off_cpu_modes_and_demangle_are_left_to_perf(tmp_path, conversions):
    data = _record(tmp_path, "entry_point")
    # --mode offcpu on samples: not the summed path: converted again, perf demangling
    r = CliRunner().invoke(app, [str(data), "--mode", "offcpu", "--to", "folded",
                                 "-o", str(tmp_path / "o.folded")])
    assert left_to_offconv(conversions)[-2:] == [True, False], (conversions, r.output)
    src, _ = pipeline.open_input(str(data), demangle_here=False)
    assert not src.mangled
    src.close()
