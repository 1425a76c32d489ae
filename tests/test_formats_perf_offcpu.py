"""perf record --off-cpu (the offcpu-time event, period = ns off CPU) and --demangle of
legacy Rust symbols (off by default: folded output stays stackcollapse-perf.pl's)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from offconv.run import pipeline
from offconv.cli import app
from offconv.model.records import OFFCPU
from offconv.model.options import Options, ParseOptions
from offconv.inputs import perf_script
from offconv.inputs.perf_script.frames import rust_demangle

FIX = Path(__file__).parent / "fixtures"
OFF = FIX / "perf-offcpu" / "offcpu-time.txt"
RUST = FIX / "flamegraph-test" / "perf-rust-Yamakaky-dcpu.txt"


def test_offcpu_time_events_are_weighted_by_their_period_in_ns():
    recs = list(perf_script.parse(enumerate(OFF.read_text().split("\n"), 1), str(OFF)))
    assert [(r.weight, r.unit, r.kind) for r in recs][:2] == [(50341207, "ns", OFFCPU),
                                                              (3011482, "ns", OFFCPU)]
    p = pipeline.load([str(OFF)], Options())
    assert (p.unit, p.mode) == ("ns", OFFCPU)
    assert p.total() == 50341207 + 3011482 + 50338004 + 50120930
    from offconv.inputs.source import Source
    blocks = list(perf_script.parse_blocks(Source(str(OFF)).blocks(), str(OFF)))
    assert blocks == recs                             # the hot path agrees
    res = CliRunner().invoke(app, [str(OFF), "--to", "svg"])
    assert ">Off-CPU Time Flame Graph</text>" in res.stdout
    assert "<title>all (154 ms, 100%)</title>" in res.stdout


def test_offcpu_time_mixed_with_cycles_takes_the_event_filter(tmp_path):
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("app 1/1 [000] 1.000000: 250000 cycles: \n"
                     "\tffffffff821facd8 do_work+0x18 (/usr/bin/app)\n\n" + OFF.read_text())
    p = pipeline.load([str(mixed)], Options(parse=ParseOptions(event_filter="offcpu-time")))
    assert (p.unit, p.mode) == ("ns", OFFCPU)


def test_rust_demangle_legacy():
    assert rust_demangle("GcBox$LT$T$GT$::new::_$u7b$$u7b$closure$u7d$$u7d$::h2ed0674a1c3dc9fa") \
        == "GcBox<T>::new::_{{closure}}"
    assert rust_demangle("_$LT$core..result..Result$LT$T$C$$u20$E$GT$$GT$::and_then::"
                         "h47fa4b8545196b9b") == "<core::result::Result<T, E>>::and_then"
    assert rust_demangle("_$LT$$RF$$u27$a$u20$mut$u20$I$u20$as$u20$core..iter..iterator.."
                         "Iterator$GT$::next::h01cfe524df2e1837") == \
        "<&'a mut I as core::iter::iterator::Iterator>::next"
    assert rust_demangle("std::rt::lang_start::h5f9ad0b4d7a3d7a4") == "std::rt::lang_start"
    for plain in ("main", "__libc_start_main", "[unknown]", "java/lang/Thread.run"):
        assert rust_demangle(plain) == plain


def test_demangle_is_off_by_default_and_on_with_the_option():
    plain = CliRunner().invoke(app, [str(RUST)]).stdout
    assert "$LT$" in plain and "::h47fa4b8545196b9b" in plain
    dem = CliRunner().invoke(app, [str(RUST), "--demangle"]).stdout
    assert "$LT$" not in dem and "<core::result::Result<T, E>>::and_then" in dem
    assert sum(int(l.rpartition(" ")[2]) for l in dem.splitlines()) == \
        sum(int(l.rpartition(" ")[2]) for l in plain.splitlines())
    assert len(dem.splitlines()) <= len(plain.splitlines())   # hashes dropped: may merge
