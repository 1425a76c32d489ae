"""No input makes offconv crash: mutated real recordings and random bytes end in exit 0
(recognised, perhaps with warnings) or exit 2 with a one-line 'offconv: ...' error."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
LINES = (FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt").read_text().splitlines()[:400]
FOLDED = (FIX / "flamegraph-test" / "results" / "perf-dd-stacks-01-collapsed-pid.txt").read_text().splitlines()


def check(tmp_path, data: bytes, *args):
    p = tmp_path / "in.txt"
    p.write_bytes(data)
    r = CliRunner().invoke(app, [str(p), *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 2), (r.exit_code, r.stderr)
    if r.exit_code == 2:
        assert r.stderr.startswith("offconv: ") or r.stderr.startswith("Usage:"), r.stderr
        assert "Traceback" not in r.stderr


mutation = st.tuples(st.integers(0, len(LINES) - 1),
                     st.sampled_from(["cut", "garbage", "dup", "drop", "swap"]),
                     st.integers(0, 200), st.text(max_size=12))


def mutate(lines, muts):
    lines = list(lines)
    for i, kind, k, junk in muts:
        i %= max(len(lines), 1)
        if not lines:
            break
        if kind == "cut":
            lines[i] = lines[i][: k % (len(lines[i]) + 1)]
        elif kind == "garbage":
            pos = k % (len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + junk + lines[i][pos:]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "drop":
            del lines[i]
        else:
            j = k % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(muts=st.lists(mutation, min_size=1, max_size=4), mode=st.sampled_from(["offcpu", "oncpu", "wakeup"]))
def test_mutated_sched_recordings_never_crash(tmp_path, muts, mode):
    check(tmp_path, mutate(LINES, muts), "--mode", mode)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(muts=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_sched_recordings_report_and_svg_never_crash(tmp_path, muts):
    data = mutate(LINES, muts)
    check(tmp_path, data, "--to", "report")
    check(tmp_path, data, "--to", "svg")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(muts=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_folded_never_crashes(tmp_path, muts):
    global LINES
    saved, LINES = LINES, FOLDED
    try:
        check(tmp_path, mutate(FOLDED, [(i % len(FOLDED), *rest) for i, *rest in muts]), "--to", "svg")
    finally:
        LINES = saved


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes_never_crash(tmp_path, data):
    check(tmp_path, data)


def check_out(tmp_path, data: bytes, out_name: str, *args, name: str = "in.txt"):
    """check() writing an output file: on an error (exit 2) none is left behind."""
    import tempfile
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))   # (one per example: hypothesis reuses tmp_path)
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / out_name
    if out.exists():
        out.unlink()
    r = CliRunner().invoke(app, [str(src), "-o", str(out), *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 2), (r.exit_code, r.stderr)
    if r.exit_code == 2:
        assert r.stderr.startswith("offconv: ") and "Traceback" not in r.stderr, r.stderr
        assert not out.exists(), out
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in (name, out_name)]
    assert leftovers == [], leftovers


OUTPUTS = ["x.folded", "x.svg", "x.speedscope.json", "x.pb.gz", "x.timeline.svg", "x.perfetto-trace"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(muts=st.lists(mutation, min_size=1, max_size=3), out=st.sampled_from(OUTPUTS),
       mode=st.sampled_from(["offcpu", "wallclock", "critical-path", "blocked"]))
def test_mutated_sched_recordings_through_every_output(tmp_path, muts, out, mode):
    check_out(tmp_path, mutate(LINES, muts), out, "--mode", mode)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["gz", "xz", "bz2"]), cut=st.floats(0.05, 0.95), flips=st.integers(0, 8),
       out=st.sampled_from(OUTPUTS[:3]), lenient=st.booleans())
def test_corrupted_compressed_recordings_never_crash(tmp_path, kind, cut, flips, out, lenient):
    import bz2
    import gzip
    import lzma
    text = "\n".join(LINES).encode() + b"\n"
    data = bytearray({"gz": lambda b: gzip.compress(b, mtime=0), "xz": lzma.compress,
                      "bz2": lambda b: bz2.compress(b, 1)}[kind](text))
    pos = int(len(data) * cut)
    for k in range(flips):
        data[(pos + 7 * k) % len(data)] ^= 0xA5
    if not flips:
        data = data[:pos]
    check_out(tmp_path, bytes(data), out, *(["--lenient"] if lenient else []), name=f"in.{kind}")
