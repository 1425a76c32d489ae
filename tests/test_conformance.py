"""stackcollapse-perf.pl's own regression suite, byte for byte: 13 inputs x 6 options."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from offconv.cli import app
from offconv.model.options import AggregateOptions, NamingOptions, Options, ParseOptions
from offconv.run import pipeline
from offconv.outputs import folded

SUITE = Path(__file__).parent / "fixtures" / "flamegraph-test"
INPUTS = sorted(p.stem for p in SUITE.glob("*.txt"))
OPTS = ["pid", "tid", "kernel", "jit", "all", "addrs"]
CASES = [(i, o) for i in INPUTS for o in OPTS]


def test_suite_is_complete():
    assert len(INPUTS) == 13
    assert len(CASES) == 78
    assert all((SUITE / "results" / f"{i}-collapsed-{o}.txt").exists() for i, o in CASES)


def collapse(path: Path, opt: str) -> bytes:
    naming = NamingOptions(pid=opt == "pid", tid=opt == "tid",
                           kernel=opt in ("kernel", "all"), jit=opt in ("jit", "all"))
    opts = Options(parse=ParseOptions(addrs=opt == "addrs"), naming=naming,
                   aggregate=AggregateOptions(mode="oncpu"))
    out = io.StringIO()
    folded.render(pipeline.load([str(path)], opts), out, opts)
    return out.getvalue().encode()


@pytest.mark.parametrize("name,opt", CASES, ids=[f"{i}-{o}" for i, o in CASES])
def test_matches_stackcollapse_perf(name, opt):
    expected = (SUITE / "results" / f"{name}-collapsed-{opt}.txt").read_bytes()
    assert collapse(SUITE / f"{name}.txt", opt) == expected


@pytest.mark.parametrize("opt", ["pid", "all"])
def test_cli_matches_too(opt, tmp_path):
    """Through the CLI, into a file: the same bytes."""
    from click.testing import CliRunner
    src = SUITE / "perf-iperf-stacks-pidtid-01.txt"
    out = tmp_path / "x.folded"
    r = CliRunner().invoke(app, [str(src), f"--{opt}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (SUITE / "results" / f"perf-iperf-stacks-pidtid-01-collapsed-{opt}.txt").read_bytes()


def test_gzip_input_same_as_plain(tmp_path):
    import gzip
    src = SUITE / "perf-dd-stacks-01.txt"
    gz = tmp_path / "dd.txt.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert collapse(gz, "pid") == (SUITE / "results" / "perf-dd-stacks-01-collapsed-pid.txt").read_bytes()


def test_example_perf_stacks_gz_collapses():
    """FlameGraph's example-perf-stacks.txt.gz (gzip, read by magic) gives a plausible profile."""
    text = collapse(SUITE / "example-perf-stacks.txt.gz", "pid").decode()
    lines = text.splitlines()
    assert len(lines) > 100
    assert lines == sorted(lines, key=lambda s: s.rpartition(" ")[0])
    assert all(l.rpartition(" ")[2].isdigit() for l in lines)
