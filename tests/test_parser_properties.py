"""Issue 42, item 4: each parser, on any text -- arbitrary, made of its format's own
characters, or a real fixture of its format with lines mutated -- gives its records or
raises offconv's own ParseError (offconv.model.errors), never another exception; and
its sniff answers yes, no or maybe. Inputs go through offconv.inputs.source.Source (as
the command line reads them: numbered lines, blocks, block lists), then through every
entry point the format's InputFormat has (parse, parse_blocks, sum_blocks, sum_lines).
The decompressing Source and the perf.data converter are held to the same on any bytes,
with offconv's OffconvError (exit 2) as the only error."""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import shutil
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offconv.inputs import bcc_hist, bpftrace, bpftrace_json, folded
from offconv.inputs import perf_script
from offconv.inputs.source import Source
from offconv.model.errors import OffconvError, ParseError
from offconv.model.formats import MAYBE, NO, YES
from offconv.model.options import ParseOptions
from offconv.run.aggregate import Sums

FIX = Path(__file__).parent / "fixtures"
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# OFFCONV_PROPERTY_SCALE=20: twenty times the examples (a longer search by hand)
SCALE = float(os.environ.get("OFFCONV_PROPERTY_SCALE", "1"))


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


def _lines(rel: str, n: int) -> list:
    return (FIX / rel).read_text(encoding="utf-8", errors="replace").splitlines()[:n]


SEEDS = {
    "perf-script": [_lines("recorded/e2e_victim_a_small/e2e_victim_a_small.perf-script.txt", 120),
                    _lines("recorded/e2e_victim_a_small/e2e_victim_a_small.perf-script-F.txt", 80),
                    _lines("flamegraph-test/perf-java-stacks-02.txt", 80),
                    _lines("perf-offcpu/offcpu-time.txt", 60)],
    "folded": [_lines("flamegraph-test/results/perf-dd-stacks-01-collapsed-pid.txt", 60),
               _lines("bcc/offcputime_-K_-f_5.folded", 40), _lines("bcc/offwaketime_-fu_5.folded", 40)],
    "bcc-hist": [_lines("bcc/runqlat.txt", 40), _lines("bcc/runqlat_-P.txt", 60), _lines("bcc/runqlen.txt", 20)],
    "bpftrace": [_lines("bpftrace/bt_offcpu_kstack_comm_1.txt", 80), _lines("bpftrace/bt_runqlat_bycomm_1.txt", 60),
                 _lines("bpftrace/bt_offcpu_lhist_victim_1.txt", 60)],
    "bpftrace-json": [_lines("bpftrace/bt_offcpu_kstack_json_1.jsonl", 10),
                      _lines("bpftrace/bt_runqlat_bycomm_json_1.jsonl", 10),
                      _lines("bpftrace/bt_det_values_json_1.jsonl", 14)],
}
# characters each format is made of: garbage from them gets further into a parser than
# arbitrary text does
ALPHABETS = {
    "perf-script": "abcdefx0123456789 \t\n[]()/:.+-_=>,<kernel.kallsyms>sched:switch",
    "folded": "abc019 \t\n;-[]_.#",
    "bcc-hist": "usecs: count distribution -> 0123456789|* \n\tpid=Tracing Hit Ctrl-C to end.",
    "bpftrace": "@[](), :.\n\t 0123456789KM|@abckstack_us+x",
    "bpftrace-json": '{}[]":,0123456789-.etrufalsn \n\\typedatahistmapminmaxcount@',
}
HOSTILE = ["<script>alert(1)</script>", ";", "\x01\x1b[31m", "\u202e", "x" * 10_000, "\x00", "\ufffd",
           "-", "--", " ", "\t", "[", "]", "@", "{", "}", '"', "\\", "0", "-1", "99999999999999999999999",
           "1e999", "NaN", "0x", "==>", ":"]

mutation = st.tuples(st.integers(0, 1 << 16), st.sampled_from(["cut", "insert", "dup", "drop", "swap", "hostile", "flip"]),
                     st.integers(0, 1 << 16), st.text(max_size=6), st.sampled_from(HOSTILE))


def mutate(lines: list, muts) -> str:
    lines = list(lines)
    for i, kind, k, junk, hostile in muts:
        if not lines:
            break
        i %= len(lines)
        line = lines[i]
        pos = k % (len(line) + 1)
        if kind == "cut":
            lines[i] = line[:pos]
        elif kind == "insert":
            lines[i] = line[:pos] + junk + line[pos:]
        elif kind == "dup":
            lines.insert(i, line)
        elif kind == "drop":
            del lines[i]
        elif kind == "swap":
            j = k % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "hostile":
            lines[i] = line[:pos] + hostile + line[pos + len(junk):]
        else:   # one character replaced by a neighbour of its code point
            if line:
                c = line[pos % len(line)]
                lines[i] = line[:pos % len(line)] + chr((ord(c) ^ (1 + k % 7)) or 1) + line[pos % len(line) + 1:]
    return "\n".join(lines) + ("\n" if muts[0][2] % 3 else "")


def text_for(name: str):
    """Any text, text of the format's characters, or a fixture of the format mutated."""
    seeds = SEEDS[name]
    return st.one_of(st.text(max_size=400), st.text(alphabet=ALPHABETS[name], max_size=600),
                     st.tuples(st.sampled_from(range(len(seeds))), st.lists(mutation, min_size=1, max_size=5))
                     .map(lambda t: mutate(seeds[t[0]], t[1])))


options = st.builds(ParseOptions, addrs=st.booleans(), lenient=st.booleans(), demangle=st.booleans(),
                    unit=st.sampled_from([None, "us", "ns", "samples"]), kind=st.sampled_from([None, "blocked", "runq"]))


def _written(data: bytes, suffix: str = ".txt") -> str:
    fd, path = tempfile.mkstemp(prefix="offconv-prop-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _each_entry_point(fmt, data: bytes, opts: ParseOptions) -> None:
    """Every entry point of ``fmt`` on ``data`` (a fresh Source each: a Source is read once),
    consumed to the end. A ParseError is the parser's own answer; anything else fails."""
    path = _written(data)
    try:
        src = Source(path, lenient=opts.lenient)
        assert fmt.sniff(src.head) in (YES, NO, MAYBE)
        runs = [lambda s: list(fmt.parse(s.lines(), path, opts, {}))]
        if fmt.parse_blocks is not None:
            runs.append(lambda s: list(fmt.parse_blocks(s.blocks(), path, opts, {})))
        if fmt.sum_blocks is not None:
            runs.append(lambda s: fmt.sum_blocks(s.block_lists(), path, opts, {}, Sums(opts)))
        if fmt.sum_lines is not None:
            runs.append(lambda s: fmt.sum_lines(s.lines(), path, opts, {}, Sums(opts)))
        for i, run in enumerate(runs):
            try:
                run(src if i == 0 else Source(path, lenient=opts.lenient))
            except ParseError:
                pass
    finally:
        os.unlink(path)


def _check(fmt, text: str, opts: ParseOptions) -> None:
    _each_entry_point(fmt, text.encode("utf-8", "surrogatepass"), opts)


@settings(max_examples=examples(150), **SETTINGS)
@given(text=text_for("perf-script"), opts=options)
def test_perf_script_parser(text, opts):
    _check(perf_script.FORMAT, text, opts)


@settings(max_examples=examples(150), **SETTINGS)
@given(text=text_for("folded"), opts=options)
def test_folded_parser(text, opts):
    _check(folded.FORMAT, text, opts)


@settings(max_examples=examples(150), **SETTINGS)
@given(text=text_for("bcc-hist"), opts=options)
def test_bcc_hist_parser(text, opts):
    _check(bcc_hist.FORMAT, text, opts)


@settings(max_examples=examples(100), **SETTINGS)
@given(text=text_for("bpftrace"), opts=options)
def test_bpftrace_parser(text, opts):
    _check(bpftrace.FORMAT, text, opts)


# JSON values a bpftrace map could hold but does not: the parser reads structure it did
# not write
json_value = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                    st.text(max_size=8)),
                          lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                  st.dictionaries(st.sampled_from(["min", "max", "count", "@x", "k", "\n  f\n"]),
                                                                  inner, max_size=4)),
                          max_leaves=12)
json_line = st.builds(lambda t, d: json.dumps({"type": t, "data": d}),
                      st.sampled_from(["hist", "map", "stats", "printf", "attached_probes"]),
                      st.dictionaries(st.sampled_from(["@us", "@runq_us", "@x", "@"]), json_value, max_size=3))


@settings(max_examples=examples(150), **SETTINGS)
@given(text=st.one_of(text_for("bpftrace-json"), st.lists(json_line, min_size=1, max_size=4).map("\n".join)),
       opts=options)
def test_bpftrace_json_parser(text, opts):
    _check(bpftrace_json.FORMAT, text, opts)


def test_bpftrace_json_nested_too_deeply():
    """A JSON line nested deeper than Python's JSON decoder recurses (found by reading
    bpftrace_json: RecursionError escaped as exit 70)."""
    deep = '{"type": "map", "data": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    for text in (deep, '{"type": "attached_probes", "data": {"probes": 1}}\n' + deep):
        _check(bpftrace_json.FORMAT, text, ParseOptions())


COMPRESS = {".gz": lambda b: gzip.compress(b, mtime=0), ".xz": lzma.compress, ".bz2": bz2.compress}
PERF_TEXT = "\n".join(SEEDS["perf-script"][0]).encode() + b"\n"


@settings(max_examples=examples(100), **SETTINGS)
@given(data=st.one_of(st.binary(max_size=300),
                      st.tuples(st.sampled_from(sorted(COMPRESS)), st.floats(0, 1), st.lists(st.integers(0, 1 << 20), max_size=6),
                                st.booleans())
                      .map(lambda t: _damaged(*t))),
       lenient=st.booleans())
def test_source_reads_any_bytes(data, lenient):
    """The decoding and decompressing layer under every parser: any bytes, or a compressed
    text cut short or with bytes flipped, give lines and blocks or an OffconvError."""
    path = _written(data)
    try:
        for read in (lambda s: list(s.lines()), lambda s: list(s.blocks()), lambda s: list(s.block_lists())):
            try:
                read(Source(path, lenient=lenient))
            except OffconvError:
                pass
    finally:
        os.unlink(path)


def _damaged(kind: str, cut: float, flips: list, truncate: bool) -> bytes:
    data = bytearray(COMPRESS[kind](PERF_TEXT))
    for f in flips:
        data[f % len(data)] ^= 1 + f % 255
    return bytes(data[:int(len(data) * cut)] if truncate else data)


PERF_DATA = (FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data").read_bytes()


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@settings(max_examples=examples(12), **SETTINGS)
@given(where=st.lists(st.tuples(st.integers(0, 1 << 10), st.sampled_from([0, 0xFF, 0x80, 0x01])), min_size=1, max_size=4),
       huge=st.sampled_from([None, 8, 16, 24, 32, 40, 48]), cut=st.sampled_from([None, 8, 64, 104, 1000, 150_000]))
def test_perf_data_header_any_bytes(where, huge, cut):
    """perf.data with its header damaged (bytes set, an offset of 2^64 - 1, cut short):
    offconv's own header reading (what to give perf script, the recording's kernel) and
    the conversion end in records or an OffconvError (perf's own message)."""
    data = bytearray(PERF_DATA)
    for at, byte in where:
        data[at] = byte
    if huge is not None:
        struct.pack_into("<Q", data, huge, (1 << 64) - 1)
    if cut is not None:
        data = data[:cut]
    path = _written(bytes(data), ".data")
    try:   # Source converts it with perf script; the text then parses as perf script
        list(perf_script.FORMAT.parse_blocks(Source(path).blocks(), path, ParseOptions(), {}))
    except OffconvError:
        pass
    finally:
        os.unlink(path)
