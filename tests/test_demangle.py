"""perf script --no-demangle and the names demangled by offconv (parsers.demangle): the
text the parser sees must be the text perf prints with its own demangling, byte for byte,
or the command runs again with perf demangling (Retry)."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from offconv.parsers import demangle, perf_data
from offconv.parsers.demangle import Demangled, Names, Retry, perf_demangles

FIXTURES = Path(__file__).parent / "fixtures" / "demangle"
CXXFILT = shutil.which("c++filt")
needs_cxxfilt = pytest.mark.skipif(CXXFILT is None, reason="c++filt (binutils) not installed")


def pairs():
    out = []
    for row in (FIXTURES / "perf-6.1-node-rpds.tsv").read_text().splitlines():
        a, b = row.split("\t")
        out.append((a.replace("\\t", "\t"), b.replace("\\t", "\t")))
    return out


def names_for(*lines: str) -> Names:
    n = Names(CXXFILT)
    n.learn("\n".join(lines).encode() + b"\n")
    return n


@needs_cxxfilt
def test_every_recorded_line_becomes_perfs_own():
    rows = pairs()
    assert len(rows) == 126 and sum(1 for a, _ in rows if " _R" in a) == 18
    n = names_for(*(a for a, _ in rows))
    try:
        got = [n.line(a) for a, _ in rows]
    finally:
        n.close()
    assert got == [b for _, b in rows]


@needs_cxxfilt
def test_lines_are_changed_only_where_perf_demangles():
    node = "\t          e2b2fc _ZN2v88internal4Heap7CollectEv+0x1c (/usr/bin/node)"
    kernel = "\tffffffff8a0f7e6a _RNvCs1_4core3foo+0x2ba ([kernel.kallsyms])"
    module = "\tffffffffc0a01234 _ZN3foo3barEv+0x10 (/lib/modules/6.1/x.ko)"
    jit = "\t    7f00deadbeef _ZN3foo3barEv (/tmp/perf-4242.map)"
    plain = "\t           18df qs+0xbf (/tmp/bin/cwork)"
    plt = "\t           23290 _ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm@plt (/usr/bin/bpftrace)"
    n = names_for(node, kernel, module, jit, plain, plt)
    try:
        assert n.line(node) == "\t          e2b2fc v8::internal::Heap::Collect+0x1c (/usr/bin/node)"
        for same in (kernel, module, jit, plain):
            assert n.line(same) == same
        assert n.line(plt) == ("\t           23290 std::__cxx11::basic_string<char, std::char_traits<char>, "
                               "std::allocator<char> >::find@plt (/usr/bin/bpftrace)")
        # a header with the sample's ip, symbol and dso (a recording without -g)
        # (the parser gives it the header's part after the event's name)
        head = "  e2b2fc _ZN2v88internal4Heap7CollectEv+0x1c (/usr/bin/node)"
        assert n.line(head) == "  e2b2fc v8::internal::Heap::Collect+0x1c (/usr/bin/node)"
    finally:
        n.close()


@needs_cxxfilt
@pytest.mark.parametrize("line", [
    "\t 1234 camlStdlib__array__map_154+0x10 (/usr/local/bin/ocamlprog)",   # perf: OCaml demangler
    "\t 1234 main.(*Server).Serve+0x10 (/usr/local/bin/goprog)",            # perf: Java demangler tried
    "\t 1234 _ZNSt6locale7classicEv@@GLIBCXX_3.4+0x10 (/usr/lib/libstdc++.so.6)",  # a version
])
def test_names_perf_demangles_otherwise_mean_retry(line):
    n = names_for(line)
    try:
        with pytest.raises(Retry):
            n.line(line)
        # in a kernel frame, or a JIT's perf map, perf demangles nothing: no Retry
        kernel = line.rsplit(" (", 1)[0] + " ([kernel.kallsyms])"
        assert n.line(kernel) == kernel
    finally:
        n.close()


@needs_cxxfilt
def test_a_name_not_learned_means_retry():
    n = Names(CXXFILT)
    with pytest.raises(Retry):
        n.line("\t 1234 _ZN3foo3barEv+0x10 (/usr/bin/x)")
    n.close()


def test_which_dsos_perf_demangles():
    assert perf_demangles("/usr/bin/node") and perf_demangles("[vdso]")
    assert perf_demangles("/tmp/jitted-4242-17.so")  # jitdump: an ELF file
    for dso in ("[kernel.kallsyms]", "[unknown]", "[nf_tables]", "[JIT] tid 4242",
                "/tmp/perf-4242.map", "/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko.xz"):
        assert not perf_demangles(dso), dso


@needs_cxxfilt
def test_the_stream_gives_whole_lines_and_learns_names_before_the_parser_reads_them():
    rows = pairs()
    raw = ("\n".join(a for a, _ in rows) + "\n").encode()

    class Trickle(io.BytesIO):  # a pipe that gives 100 bytes at a time
        def read(self, size=-1):
            return super().read(100)

    names = Names(CXXFILT)
    stream = Demangled(Trickle(raw), names)
    got = b""
    while True:
        data = stream.read(1 << 20)
        if not data:
            break
        assert data.endswith(b"\n")
        for ln in data.decode().splitlines():  # every name of what was read is known
            names.line(ln)
        got += data
    stream.close()
    assert got == raw


CXX = r"""
#include <cstdio>
#include <cstdlib>
#include <functional>
namespace shop {
template <typename T> struct Worker {
  T acc = 0;
  __attribute__((noinline)) T spin(long n) { for (long i = 0; i < n; i++) acc += (T)(i %% 7); return acc; }
};
__attribute__((noinline)) long work(int a) { Worker<long> w; return w.spin(20000 + a); }
__attribute__((noinline)) double work(double a) { Worker<double> w; return w.spin(20000 + (long)a); }
namespace { __attribute__((noinline)) long hidden(long x) { Worker<int> w; return w.spin(x); } }
}
extern "C" __attribute__((noinline)) long %(extra)s(long x) { return shop::hidden(x); }
int main(int argc, char **argv) {
  long loops = atol(argv[1]); double s = 0;
  std::function<long(long)> f = [](long x) { return %(extra)s(x); };
  for (long i = 0; i < loops; i++) s += shop::work((int)i) + shop::work((double)i) + f(20000);
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


def _folded(data: Path, out: Path, env: dict) -> bytes:
    r = subprocess.run(["python", "-m", "offconv", str(data), "--mode", "oncpu", "--to", "folded",
                        "-o", str(out)], env={**os.environ, **env}, capture_output=True, text=True,
                       cwd=Path(__file__).parents[1])
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@needs_cxxfilt
def test_a_recorded_cpp_program_folds_as_with_perfs_demangling(tmp_path):
    data = _record(tmp_path, "entry_point")
    ours = _folded(data, tmp_path / "ours.folded", {})
    perfs = _folded(data, tmp_path / "perfs.folded", {"OFFCONV_PERF_DEMANGLE": "1"})
    assert ours == perfs
    text = ours.decode()
    assert "shop::Worker<long>::spin" in text and "shop::Worker<double>::spin" in text
    assert "shop::(anonymous namespace)::hidden" in text and "main::{lambda" in text
    assert "_ZN" not in text  # a name left mangled would show here
    # the two overloads of shop::work print alike without their parameters: one frame
    assert "shop::work;" in text


@needs_cxxfilt
def test_the_fast_path_is_taken_and_a_name_it_cannot_do_runs_the_command_again(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from offconv.cli import app
    data = _record(tmp_path, "camlShop__entry_12")  # perf demangles it as OCaml
    started = []
    real = subprocess.Popen

    def spy(args, *a, **kw):
        if "script" in args:
            started.append(list(args))
        return real(args, *a, **kw)
    monkeypatch.setattr(perf_data.subprocess, "Popen", spy)
    monkeypatch.setattr(perf_data, "demangle_here", True)
    monkeypatch.setattr(perf_data, "_CXXFILT", [CXXFILT])
    out = tmp_path / "ours.folded"
    r = CliRunner().invoke(app, [str(data), "--mode", "oncpu", "--to", "folded", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert [("--no-demangle" in a) for a in started] == [True, False]  # tried, then perf's
    perfs = _folded(data, tmp_path / "perfs.folded", {"OFFCONV_PERF_DEMANGLE": "1"})
    assert out.read_bytes() == perfs
    assert "camlShop__entry_12" not in perfs.decode()  # perf did demangle it (as OCaml)
