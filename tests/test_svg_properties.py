"""Properties of the layout and the writer for random folded inputs (hypothesis)."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from hypothesis import given, settings, strategies as st

from offconv.model.records import Frame, Profile
from offconv.model.options import FlameOptions, Options
from offconv.outputs.svg.graph import render
from offconv.outputs.svg.layout import layout, prune_threshold

NAMES = st.sampled_from(["main", "a", "b", "c", "-", "--", "f_[k]", "[run queue]", "x;y"])
STACKS = st.lists(NAMES, min_size=1, max_size=6).map(tuple)
WEIGHTS = st.one_of(st.integers(min_value=1, max_value=10_000),
                    st.floats(min_value=0.5, max_value=1000, allow_nan=False))
PROFILES = st.dictionaries(STACKS, WEIGHTS, min_size=1, max_size=40)


def children_of(lay):
    """box index -> indices of the boxes one level deeper whose middle is inside its x range
    (the middle: an edge test would be fooled by float rounding at shared edges)."""
    boxes = lay.boxes
    kids = {i: [] for i in range(len(boxes))}
    for i, b in enumerate(boxes):
        for j, c in enumerate(boxes):
            if c.depth == b.depth + 1 and b.start < c.start + c.value / 2 < b.start + b.value:
                kids[i].append(j)
    return kids


@settings(max_examples=150, deadline=None)
@given(PROFILES, st.booleans(), st.booleans(), st.sampled_from(["0", "0.1", "3", "1%"]))
def test_children_never_wider_than_their_parent(samples, flamechart, reverse, minwidth):
    total = sum(samples.values())
    lay = layout(samples, flamechart=flamechart, reverse=reverse,
                 min_value=prune_threshold(minwidth, 1200, total))
    for i, kids in children_of(lay).items():
        parent = lay.boxes[i]
        assert sum(lay.boxes[j].value for j in kids) <= parent.value * (1 + 1e-9) + 1e-9
        for j in kids:
            child = lay.boxes[j]
            assert child.start >= parent.start - 1e-6 * parent.value
            assert child.start + child.value <= (parent.start + parent.value) * (1 + 1e-9)


@settings(max_examples=150, deadline=None)
@given(PROFILES, st.booleans())
def test_every_frame_is_the_sum_of_the_stacks_through_it(samples, reverse):
    lay = layout(samples, reverse=reverse)
    rows = sorted(((s[::-1] if reverse else s), w) for s, w in samples.items())
    paths = {}  # (depth, start) -> the path of names from the root
    for b in sorted(lay.boxes, key=lambda b: (b.depth, b.start)):
        if b.depth == 0:
            paths[(0, 0)] = ()
            assert abs(b.value - sum(samples.values())) < 1e-6
            continue
        parent = max((k for k in paths if k[0] == b.depth - 1 and k[1] <= b.start + 1e-9),
                     key=lambda k: k[1])
        path = paths[(b.depth, b.start)] = paths[parent] + (b.name,)
        expect = sum(w for s, w in rows if s[:len(path)] == path)
        assert abs(b.value - expect) <= 1e-6 * max(1.0, expect)


TEXT = st.text(min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.lists(TEXT, min_size=1, max_size=4).map(tuple),
                       st.integers(min_value=1, max_value=100), min_size=1, max_size=10))
def test_any_frame_names_give_well_formed_xml_with_one_script(samples):
    out = io.StringIO()
    frames = {tuple(Frame(n) for n in k): v for k, v in samples.items()}
    render(Profile(samples=frames), out, Options(flame=FlameOptions(minwidth="0")))
    text = out.getvalue()
    root = ET.fromstring(text.encode("utf-8"))
    assert len(root.findall(".//{http://www.w3.org/2000/svg}script")) == 1
    frames = root.find("{http://www.w3.org/2000/svg}g[@id='frames']")
    assert all(len(g) == 3 for g in frames)
