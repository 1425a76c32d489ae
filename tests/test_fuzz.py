"""Issue 42, item 4: the mutation fuzzer of tests/fuzz.py in CI, its corpus of found cases
as regression tests, and its judge tested on commands that fail on purpose.

The CI run uses a fixed seed (FUZZ_SEED; OFFCONV_FUZZ_SEED overrides it): the same cases
on every run, so a red CI is a change's doing, never the day's luck, and a failure replays
with the command it prints. New cases are searched for by hand, with other seeds
(docs/testing.md)."""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

import pytest

import fuzz

FUZZ_SEED = 42
# the budget of the CI run: cases start for FUZZ_SECONDS (FUZZ_CASES at most) and those
# started finish, each within fuzz.TIMEOUT: under 60 s in all (no shrinking in CI: the
# failure message has the replay command, which regenerates the case anywhere)
FUZZ_SECONDS = 20.0
FUZZ_CASES = 200


@pytest.mark.parametrize("case_dir", fuzz.found_dirs(), ids=lambda d: d.name)
def test_found_case_now_passes(case_dir, tmp_path):
    """Every case the fuzzer found and kept (tests/fixtures/fuzz-found/, README.md there)
    runs clean now."""
    r = fuzz.run_case(fuzz.load_found(case_dir), str(tmp_path))
    assert not r.failures, (r.failures, r.stderr)


@pytest.mark.slow
def test_fuzz_ci_budget(tmp_path):
    """The fuzzer for FUZZ_SECONDS: no case fails (the seed and the count are printed)."""
    seed = int(os.environ.get("OFFCONV_FUZZ_SEED", FUZZ_SEED))
    t0 = time.monotonic()
    s = fuzz.fuzz(seed, seconds=FUZZ_SECONDS, cases=FUZZ_CASES, jobs=min(2, os.cpu_count() or 1),
                  out=tmp_path / "found", shrink_s=0, log=lambda m: print(m, file=sys.stderr))
    print(f"fuzz: seed {seed}: {s.ran} cases in {s.seconds:.1f} s ({s.rate:.2f}/s), "
          f"{len(s.failed)} failed", file=sys.stderr)
    assert time.monotonic() - t0 < FUZZ_SECONDS + fuzz.TIMEOUT + 5
    assert s.ran >= 10
    assert not s.failed, "\n".join(
        f"case {r.case.index}: {'; '.join(r.failures)[:400]}\n  {r.case.base} {r.case.mutations}\n"
        f"  {r.case.command()[:300]}\n  stderr: {r.stderr[:300]!r}\n"
        f"  replay: python -m tests.fuzz --seed {seed} --case {r.case.index} (writes it to "
        "tests/fixtures/fuzz-found/)" for r in s.failed)


def test_cases_are_a_function_of_seed_and_index():
    a = [fuzz.make_case(7, i) for i in range(40)]
    b = [fuzz.make_case(7, i) for i in reversed(range(40))][::-1]
    assert a == b
    assert fuzz.make_case(8, 3) != fuzz.make_case(7, 3)
    # every output format, a hostile name and a compressed input among the first cases
    made = [fuzz.make_case(1, i) for i in range(300)]
    assert {c.args[c.args.index("--to") + 1] for c in made if "--to" in c.args} == {to for to, _ in fuzz.OUTPUTS}
    heads = {c.args[0] for c in made}
    assert {"report", "diff", "-", "{input}"} <= heads
    assert any(c.args[:2] == ["{input}", "{base}"] for c in made)
    assert any("hostile" in m for c in made for m in c.mutations)
    assert any(c.data[:2] == b"\x1f\x8b" for c in made) and any(c.data[:6] == b"\xfd7zXZ\x00" for c in made)


def _fake(code: str) -> list:
    """A stand-in for offconv: a Python one-liner run with the case's arguments (its input
    sys.argv[1], OUT sys.argv[-1])."""
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("code, kind", [
    ("import sys; sys.stderr.write('offconv: internal error: KeyError: 1 (please report it)\\n'); sys.exit(70)",
     "internal-error"),
    ("import sys; sys.stderr.write('Traceback (most recent call last):\\nValueError\\n'); sys.exit(1)",
     "traceback"),
    ("import sys; sys.exit(3)", "exit-3"),
    ("import sys; sys.stderr.write('broken\\n'); sys.exit(2)", "stderr"),
    ("import sys; open(sys.argv[-1], 'w').write('x'); sys.stderr.write('offconv: x: bad\\n'); sys.exit(2)",
     "left-behind"),
    ("import sys; open('.offconv-tmp', 'w').write('x')", "left-behind"),
    ("import sys; open(sys.argv[-1], 'w').write('<svg><g></svg>')", "invalid-output"),
    ("import time; time.sleep(30)", "timeout"),
])
def test_the_judge_catches_each_failure(code, kind, tmp_path):
    case = fuzz.make_case(1, 0)
    case = replace(case, args=["{input}", "--to", "svg", "-o", "{out}"], out_name="out.svg", precreate=False)
    r = fuzz.run_case(case, str(tmp_path), command=_fake(code), timeout=2.0)
    assert r.kind == kind, r.failures


def test_a_failing_case_is_reported_shrunk_written_and_replayed(tmp_path):
    """A command that exits 70 on any input holding 'boom': the fuzzer reports the case,
    shrinks its input to the line holding it, writes it, and replay runs it again."""
    code = ("import sys; d = open(sys.argv[1], 'rb').read();"
            "sys.exit(70) if b'boom' in d else open(sys.argv[-1], 'w').write('ok')")
    case = fuzz.make_case(1, 5)
    lines = [b"line %d" % i for i in range(40)]
    lines[23] = b"a boom here"
    case = replace(case, data=b"\n".join(lines), name="input.txt",
                        args=["{input}", "--to", "folded", "--lenient", "-o", "{out}"], out_name="out.folded")
    r = fuzz.run_case(case, str(tmp_path), command=_fake(code))
    assert r.kind == "internal-error"
    s = fuzz.shrink(r, str(tmp_path), _fake(code), 5.0, budget_s=60, max_runs=60)
    assert s.case.data == b"a boom here" and "--lenient" not in s.case.args
    d = fuzz.write_found(s, tmp_path / "found", shrunk=True)
    meta = json.loads((d / "case.json").read_text())
    assert meta["failures"][0].startswith("internal-error") and meta["exit"] == 70
    assert meta["replay"] == "python -m tests.fuzz --seed 1 --case 5"
    assert fuzz.found_dirs(tmp_path / "found") == [d]
    (again, rr), = fuzz.replay([d], command=_fake(code))
    assert rr.kind == "internal-error" and again == d
    (_, fixed), = fuzz.replay([d], command=_fake("import sys; open(sys.argv[-1], 'w').write('ok')"))
    assert not fixed.failures


def test_the_loop_writes_what_fails(tmp_path):
    """fuzz() end to end with a command that fails on every third case it is given."""
    code = ("import os, sys, zlib;"
            "bad = zlib.crc32(b''.join(open(a, 'rb').read() for a in sys.argv[1:-1] if os.path.isfile(a))) % 3 == 0;"
            "sys.stderr.write('offconv: internal error: X\\n' if bad else 'offconv: in: fine\\n');"
            "sys.exit(70 if bad else 2)")
    s = fuzz.fuzz(3, cases=9, jobs=2, out=tmp_path / "found", command=_fake(code), shrink_s=0, log=lambda m: None)
    assert s.ran == 9 and s.failed and all(r.kind == "internal-error" for r in s.failed)
    # one way of failing: its first KEEP_EACH cases are written
    kept = [f"seed3-case{r.case.index}" for r in s.failed][:fuzz.KEEP_EACH]
    assert sorted(d.name for d in s.written) == sorted(kept)
