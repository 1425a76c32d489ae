"""The on-CPU input split over two processes (offconv.run.split) gives byte-identical output,
warnings and errors to the serial path, on every fixture: here every input is split
(MIN_BYTES = 0), whatever its size, and each output is compared with OFFCONV_JOBS=1's."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.run import parallel, split
from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
SKIP = {".md", ".cmd", ".svg", ".json", ".py", ".log"}
FILES = sorted(p for p in FIX.rglob("*") if p.is_file() and p.suffix not in SKIP)


def run(monkeypatch, tmp_path, jobs: str, path: Path, *args: str):
    monkeypatch.setenv("OFFCONV_JOBS", jobs)
    out = tmp_path / f"out-{jobs}"
    r = CliRunner().invoke(app, [str(path), *args, "-o", str(out)])
    data = out.read_bytes() if out.exists() else None
    if out.exists():
        out.unlink()
    return r.exit_code, r.output, data


@pytest.fixture
def split_all(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    # split whatever the machine's cores, but not with OFFCONV_JOBS=1: that is the serial
    # path every split is compared with
    monkeypatch.setattr(parallel, "enabled", lambda: os.environ.get("OFFCONV_JOBS") != "1")
    calls = []
    real = split.load_split

    def spy(*a, **kw):
        r = real(*a, **kw)
        calls.append(r is not None)
        return r

    monkeypatch.setattr(split, "load_split", spy)
    return calls


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIX)))
@pytest.mark.parametrize("args", [("--mode", "oncpu", "--to", "folded", "--tid"), ("--to", "svg")],
                         ids=["folded", "svg"])
def test_split_equals_serial(path, args, monkeypatch, tmp_path, split_all):
    serial = run(monkeypatch, tmp_path, "1", path, *args)
    split_all.clear()
    split = run(monkeypatch, tmp_path, "2", path, *args)
    assert split == serial


def test_split_happens_on_perf_script_fixtures(monkeypatch, tmp_path, split_all):
    """The comparison above means something: most perf script fixtures are really split."""
    texts = sorted(FIX.glob("flamegraph-test/*.txt"))
    for p in texts:
        run(monkeypatch, tmp_path, "2", p, "--mode", "oncpu", "--to", "folded")
    assert sum(split_all) > len(texts) // 2


def test_split_happens_on_folded_fixtures(monkeypatch, tmp_path, split_all):
    """Folded inputs (one stack per line, cut at a newline) are split too, in every
    dialect: the child reads its part with the input's first lines, which decide it."""
    folded = sorted(p for d in ("bcc", "diff", "golden") for p in (FIX / d).rglob("*.folded"))
    assert len(folded) >= 5
    for p in folded:
        run(monkeypatch, tmp_path, "2", p, "--to", "folded")
    assert sum(split_all) >= len(folded) - 1


def test_split_folded_takes_the_dialect_of_the_first_lines(monkeypatch, tmp_path, split_all):
    """A bcc offcputime -f file whose second half has no '-' delimiter: it is still read
    as offcputime (user and kernel halves, µs), as the serial path reads it; and a plain
    file whose second half looks like offcputime is still plain."""
    bcc = "".join(f"app;main;f{i};-;sys_read;schedule {i + 10}\n" for i in range(300))
    bcc += "".join(f"app;main;g{i};h {i + 5}\n" for i in range(300))
    plain = "".join(f"app;main;f{i} {i + 1}\n" for i in range(300))
    plain += "".join(f"app;main;-;k{i} {i + 1}\n" for i in range(300))
    for name, text in (("bcc.folded", bcc), ("plain.folded", plain)):
        path = tmp_path / name
        path.write_text(text)
        # --kernel shows the kinds the dialect gives the frames ('_[k]' on kernel ones)
        for args in (("--to", "folded", "--kernel"), ("--to", "svg"), ("--to", "report")):
            serial = run(monkeypatch, tmp_path, "1", path, *args)
            split_all.clear()
            split = run(monkeypatch, tmp_path, "2", path, *args)
            assert split_all == [True] and split == serial and serial[0] == 0, (name, args)


def test_split_folded_keeps_line_numbers(monkeypatch, tmp_path, split_all):
    lines = [f"a;b{i} {i + 1}" for i in range(400)]
    for bad_at in (10, 390):  # in the first part, in the second
        text = lines[:bad_at] + ["a;b;c x1"] + lines[bad_at:]
        path = tmp_path / f"bad{bad_at}.folded"
        path.write_text("\n".join(text) + "\n")
        serial = run(monkeypatch, tmp_path, "1", path, "--to", "folded")
        split = run(monkeypatch, tmp_path, "2", path, "--to", "folded")
        assert serial[0] == 2 and f":{bad_at + 1}:" in serial[1] and split == serial
        lenient = [run(monkeypatch, tmp_path, j, path, "--to", "folded", "--lenient") for j in "12"]
        assert lenient[0] == lenient[1] and f":{bad_at + 1})" in lenient[0][1]
    cut = tmp_path / "cut.folded"
    # no newline at the end, and the last line no folded line: cut short (a last line
    # that parses is whole: no warning, tests/test_heldout_inputs.py)
    cut.write_text("\n".join(lines) + "\na;b;c 7 x")
    results = [run(monkeypatch, tmp_path, j, cut, "--to", "folded", "--lenient") for j in "12"]
    assert results[0] == results[1] and ":401:" in results[0][1]


def test_split_keeps_line_numbers_of_errors(monkeypatch, tmp_path, split_all):
    events = "".join(f"a 1 [000] {i}.0: 1 cycles:\n\tff f (b)\n\n" for i in range(1, 40))
    bad = tmp_path / "bad.txt"
    bad.write_text(events + "a 1 [000] 800.6x: cycles:\n\tff f (b)\n\n" + events)
    serial = run(monkeypatch, tmp_path, "1", bad, "--mode", "oncpu", "--to", "folded")
    split = run(monkeypatch, tmp_path, "2", bad, "--mode", "oncpu", "--to", "folded")
    assert serial[0] != 0 and split == serial
    lenient = [run(monkeypatch, tmp_path, j, bad, "--mode", "oncpu", "--to", "folded", "--lenient")
               for j in "12"]
    assert lenient[0] == lenient[1] and lenient[0][0] == 0


def test_split_keeps_line_numbers_in_the_second_part(monkeypatch, tmp_path, split_all):
    """The child numbers its lines from 1; the parent shifts them: the first skipped line
    and the line cut short at the end are named as the serial path names them."""
    events = "".join(f"a 1 [000] {i}.0: 1 cycles:\n\tff f (b)\n\n" for i in range(1, 40))
    bad = tmp_path / "bad2.txt"
    bad.write_text(events * 3 + "a 1 [000] 800.6x: cycles:\n\tff f (b)\n\n" + events
                   + "a 1 [000] 900.0: 1 cycles:\n\tff f (b)")
    args = ("--mode", "oncpu", "--to", "folded", "--lenient")
    serial = run(monkeypatch, tmp_path, "1", bad, *args)
    split_all.clear()
    split = run(monkeypatch, tmp_path, "2", bad, *args)
    assert split_all == [True]  # really split, the bad line in the second part
    assert split == serial and serial[0] == 0
    assert f"{bad}:352)" in serial[1] and f"{bad}:473: the input ends" in serial[1], serial[1]


def test_folded_names_made_ahead_equal_the_namers():
    """naming.FoldedNames (the split's parent names its own stacks while the child works):
    by stack identity, the Namer's own folded names; a stack it was not given -- even one
    equal to a given one -- is named by the Namer; other naming options are not used."""
    from offconv.run import pipeline
    from offconv.model.naming import FoldedNames, Namer
    from offconv.model.options import NamingOptions, Options
    prof = pipeline.load([str(FIX / "flamegraph-test" / "perf-java-stacks-01.txt")], Options())
    stacks = list(prof.samples)
    assert len(stacks) > 20
    for opts in (NamingOptions(), NamingOptions(tid=True, kernel=True)):
        known = FoldedNames(opts, stacks[::2])
        twin = {stacks[1][:1] + stacks[1][1:]: 1}  # equal to a stack it has, another object
        assert next(iter(twin)) is not stacks[1]
        assert known.folded(prof.samples, Namer(opts)) == [Namer(opts).folded(s) for s in stacks]
        assert known.folded(twin, Namer(opts)) == [Namer(opts).folded(stacks[1])]
    a = FoldedNames(NamingOptions(tid=True), stacks)
    assert a.opts != NamingOptions()  # the folded renderer then names every stack itself


def test_the_split_names_its_first_part_ahead_for_a_folded_output(monkeypatch, split_all):
    from dataclasses import replace
    from offconv.run import pipeline
    from offconv.model.options import Options
    monkeypatch.setenv("OFFCONV_JOBS", "2")
    path = str(FIX / "flamegraph-test" / "perf-java-stacks-01.txt")
    base = Options()
    folded = replace(base, aggregate=replace(base.aggregate, folded=True))
    assert pipeline.load([path], folded).folded_names is not None and split_all == [True]
    assert pipeline.load([path], base).folded_names is None


def test_the_childs_frames_become_the_parents_equal_ones():
    """parallel._dumps/_Unpickler: a Frame of the child's result equal to one this process
    has comes back as that very object; others come back equal, each once."""
    from offconv.model.records import Frame, Task, thread_frame
    mine = {f: f for f in (Frame("main"), Frame("read", "[kernel.kallsyms]", "kernel"))}
    t = thread_frame(Task("app", 1, 2))
    stacks = [(t, Frame("main"), Frame("read", "[kernel.kallsyms]", "kernel")),
              (t, Frame("main"), Frame("new"))]
    back = parallel._Unpickler(parallel._dumps([(s, 1) for s in stacks]), mine).load()
    assert [s for s, _ in back] == stacks
    (s1, _), (s2, _) = back
    assert s1[1] is next(f for f in mine if f.name == "main") and s2[1] is s1[1]
    assert s1[2] is next(f for f in mine if f.name == "read")
    assert s1[0] is s2[0] and s1[0].task == Task("app", 1, 2)


OTHER_INPUTS = (sorted(p for d in ("bcc", "diff", "golden") for p in (FIX / d).rglob("*.folded"))
                + sorted(FIX.glob("flamegraph-test/*.txt"))[:12])


@pytest.mark.parametrize("path", OTHER_INPUTS, ids=lambda p: str(p.relative_to(FIX)))
@pytest.mark.parametrize("to", ["speedscope", "pprof", "report", "json"])
def test_split_equals_serial_in_the_other_outputs(path, to, monkeypatch, tmp_path, split_all):
    """The outputs that keep the profile's first-seen order (speedscope, pprof) and the
    reports, from folded and perf script inputs."""
    serial = run(monkeypatch, tmp_path, "1", path, "--to", to)
    split_all.clear()
    split = run(monkeypatch, tmp_path, "2", path, "--to", to)
    assert split == serial
