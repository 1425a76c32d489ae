"""The depth-by-depth layout (offconv.outputs.svg.levels), which draws profiles of many
unique stacks without naming each stack whole: the same Layout as the sorted walk
(layout.layout over the named stacks), and so the same SVG bytes, on every recording and
mode the goldens cover and on random profiles (a property test)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from offconv.cli import app
from offconv.model.labels import Labels
from offconv.model.options import NamingOptions
from offconv.model.records import INLINE, JIT, KERNEL, MARKER, STATE, THREAD, USER, Frame, Task
from offconv.model.stacktable import StackTable
from offconv.outputs.svg import levels
from offconv.outputs.svg.layout import layout, prune_threshold

from test_goldens import RECORDINGS, source


def svg(path, args, monkeypatch, levels_min):
    monkeypatch.setattr(levels, "LEVELS_MIN", levels_min)
    r = CliRunner().invoke(app, [str(path), "--to", "svg", *args])
    assert r.exit_code == 0, r.stderr
    return r.stdout


ARGS = [[], ["--mode", "wakeup", "--tid"], ["--mode", "critical-path", "--inverted"],
        ["--reverse", "--minwidth", "0"], ["--max-depth", "6", "--mode", "blocked", "--kernel"]]


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.parametrize("args", ARGS, ids=" ".join)
def test_the_same_svg_as_the_sorted_walk_on_every_recording(name, args, monkeypatch):
    path = source(name)
    plain = svg(path, args, monkeypatch, 1 << 62)
    assert svg(path, args, monkeypatch, 0) == plain


def test_float_weights_small_profiles_and_the_switch_keep_the_sorted_walk(monkeypatch):
    monkeypatch.setattr(levels, "LEVELS_MIN", 2)
    assert levels.usable({("a",): 1, ("b",): True})
    assert not levels.usable({("a",): 1, ("b",): 0.5})
    assert not levels.usable({("a",): 1})
    monkeypatch.setenv("OFFCONV_SVG_LEVELS", "0")
    assert not levels.usable({("a",): 1, ("b",): 2})


# -- random profiles: the same boxes --------------------------------------------------

JAVA = Task("java", 10, 11)
KINDS = [USER, USER, KERNEL, JIT, INLINE]
names = st.sampled_from(["a", "b", "c", "Lpkg/C", "d;e", "[blocked S]", "--", "[run queue]"])


@st.composite
def stacks(draw):
    thread = draw(st.sampled_from([Frame("t1", "", THREAD, Task("t1", 1, 1)),
                                   Frame("t2", "", THREAD, Task("t2", 2, 2)),
                                   # another thread of t1's name: its rows merge with t1's
                                   Frame("t1", "", THREAD, Task("t1", 1, 3)),
                                   Frame("java", "", THREAD, JAVA)]))
    rest = draw(st.lists(st.tuples(names, st.sampled_from(KINDS)), max_size=7))
    frames = [Frame(n, "", STATE if n.startswith("[") else MARKER if n == "--" else k)
              for n, k in rest]
    return (thread, *frames)


@settings(max_examples=300, deadline=None)
@given(samples=st.dictionaries(stacks(), st.integers(0, 50), min_size=1, max_size=40),
       reverse=st.booleans(), minwidth=st.sampled_from(["0", "0.1", "50", "10%"]),
       max_depth=st.one_of(st.none(), st.integers(1, 5)), kernel=st.booleans())
def test_random_profiles_lay_out_as_the_sorted_walk(samples, reverse, minwidth, max_depth, kernel):
    opts = NamingOptions(kernel=kernel)
    total = sum(w for s, w in samples.items() if w > 0)
    if not total:
        return
    min_value = prune_threshold(minwidth, 1200, total)
    plain_labels = Labels(opts)
    rows = plain_labels.merge(samples)
    want = layout(rows, reverse=reverse, min_value=min_value, flags=plain_labels.flags,
                  max_depth=max_depth)
    labels = Labels(opts)
    got = levels.layout_levels(samples, levels.name_all(labels, samples), reverse=reverse,
                               min_value=min_value, flags=labels.flags, max_depth=max_depth)
    assert labels.flags == plain_labels.flags
    assert got == want
    # and read from a StackTable as it holds its stacks (bytes of frame ids)
    table = StackTable(samples)
    labels = Labels(opts)
    got = levels.layout_levels(table, levels.name_all(labels, table), reverse=reverse,
                               min_value=min_value, flags=labels.flags, max_depth=max_depth)
    assert labels.flags == plain_labels.flags
    assert got == want
