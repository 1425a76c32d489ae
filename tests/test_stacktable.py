"""The compact count table (offconv.model.stacktable): a dict of stacks as a dict reads
(a property test against a dict), and every output the same bytes when profiles are held
in it from the first stack on (COMPACT_MIN forced to 1), over one process and over the
two-process split of a large folded file."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from offconv.cli import app
from offconv.inputs import folded as folded_input
from offconv.model import stacktable
from offconv.model.records import KERNEL, USER, Frame
from offconv.model.stacktable import StackTable

FIX = Path(__file__).parent / "fixtures"
frames = st.builds(Frame, st.sampled_from(["a", "b", "c;d", ""]), st.just(""),
                   st.sampled_from([USER, KERNEL]))
stacks = st.lists(frames, max_size=5).map(tuple)
ops = st.lists(st.tuples(st.sampled_from(["set", "add", "del", "setdefault"]), stacks,
                         st.integers(-3, 9)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(ops=ops)
def test_reads_as_a_dict(ops):
    d, t = {}, StackTable()
    for op, k, v in ops:
        # an equal stack made of other Frame objects finds the same entry
        k2 = tuple(Frame(*f) for f in k)
        if op == "set":
            d[k] = v
            t[k] = v
        elif op == "add":
            d[k] = d.get(k, 0) + v
            t[k2] = t.get(k, 0) + v
        elif op == "setdefault":
            assert t.setdefault(k2, v) == d.setdefault(k, v)
        elif k in d:
            del d[k]
            del t[k2]
        else:
            assert k not in t
            with pytest.raises(KeyError):
                del t[k]
    assert list(t.items()) == list(d.items())          # the same order too
    assert list(t) == list(d) and list(t.values()) == list(d.values()) and len(t) == len(d)
    assert all(t[k] == v and k in t for k, v in d.items())
    assert list(pickle.loads(pickle.dumps(t)).items()) == list(d.items())


def test_wide_ids_from_65_536_frames_and_merging_another_table():
    fs = [Frame(f"f{i}") for i in range(70_000)]
    t = StackTable()
    for i in range(0, 40_000, 2):
        t[(fs[i], fs[i + 1])] = i
    assert t.code == "H"
    u = StackTable()
    for i in range(30_000, 70_000, 2):
        u[(fs[i], fs[i + 1])] = 1
    t.merge_from(u)
    assert t.code == "I" and len(t) == 35_000
    assert t[(fs[30_000], fs[30_001])] == 30_001 and t[(fs[69_998], fs[69_999])] == 1
    assert list(t)[0] == (fs[0], fs[1]) and len(u) == 0


def _cli(args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.stderr
    return r.stdout_bytes


INPUTS = [FIX / "flamegraph-test" / "perf-java-stacks-01.txt",
          FIX / "flamegraph-test" / "perf-dd-stacks-01.txt",
          FIX / "svg" / "victim_a_1.offcpu.folded",
          FIX / "svg" / "victim_a_1.wakeup.folded"]
OUTS = [["--to", "folded"], ["--to", "speedscope"], ["--to", "pprof"], ["--to", "json"],
        ["--to", "svg", "--reverse", "--minwidth", "0"]]


@pytest.mark.parametrize("src", INPUTS, ids=lambda p: p.name)
@pytest.mark.parametrize("out", OUTS, ids=" ".join)
def test_every_output_the_same_from_a_table_held_compact(src, out, monkeypatch):
    want = _cli([src, *out])
    monkeypatch.setattr(stacktable, "COMPACT_MIN", 1)
    monkeypatch.setattr(folded_input, "COMPACT_MIN", 1)
    assert _cli([src, *out]) == want


def test_the_split_of_a_large_folded_file_the_same_compact(tmp_path, monkeypatch):
    # 20 MB (the two-process split starts at 16): 60,000 unique stacks repeated
    import random
    rnd = random.Random(7)
    words = [f"fn_{i}" for i in range(3000)]
    lines = [";".join(["main"] + rnd.choices(words, k=rnd.randint(3, 12))) + f" {rnd.randint(1, 9)}\n"
             for _ in range(60_000)]
    src = tmp_path / "big.folded"
    with open(src, "w") as f:
        while f.tell() < 20 << 20:
            f.writelines(lines)
    for out in (["--to", "svg"], ["--to", "folded"]):
        monkeypatch.setattr(stacktable, "COMPACT_MIN", 1 << 62)
        monkeypatch.setattr(folded_input, "COMPACT_MIN", 1 << 62)
        want = _cli([src, *out])
        monkeypatch.setattr(stacktable, "COMPACT_MIN", 1000)
        monkeypatch.setattr(folded_input, "COMPACT_MIN", 1000)
        assert _cli([src, *out]) == want
