"""Flame graph geometry (offconv.outputs.svg.layout): merging, order, pruning as
flamegraph.pl prunes, flame charts, families for the palettes."""
from __future__ import annotations

from pathlib import Path

import pytest

from offconv.model.errors import OffconvError
from typing import Optional

from offconv.model.records import INLINE, JIT, KERNEL, MARKER, STATE, Frame, Profile
from offconv.model.options import NamingOptions
from offconv.model.labels import Labels
from offconv.outputs.svg.layout import layout, parse_minwidth, prune_threshold
from offconv.outputs.svg.palette import FAMILY_BLOCKED, FAMILY_RUNQ, FAMILY_WAKER

SVG_FIXTURES = Path(__file__).parent / "fixtures" / "svg"


def parse_folded(text: str):
    """Folded text -> (samples, before or None). Each line splits at its LAST space:
    ``a;b;c 12``; a differential line ``a;b;c 10 12`` gives before 10, after 12."""
    samples, before = {}, None
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        value = float(count) if "." in count else int(count)
        head, _, first = stack.rpartition(" ")
        if head and first.replace(".", "", 1).isdigit():
            before = {} if before is None else before
            key = tuple(head.split(";"))
            before[key] = before.get(key, 0) + (float(first) if "." in first else int(first))
        else:
            key = tuple(stack.split(";"))
        samples[key] = samples.get(key, 0) + value
    return samples, before


def frame_of(name: str) -> Frame:
    """A test fixture's frame text as the frame it stands for (the kinds a real profile
    carries: state-split frames, delimiters, annotated kernel/JIT/inline frames)."""
    if name in ("[run queue]", "[preempted]", "[on-CPU]") or (
            name.startswith("[blocked ") and name.endswith("]")):
        return Frame(name, "", STATE)
    if name in ("-", "--"):
        return Frame(name, "", MARKER)
    for suffix, kind in (("_[k]", KERNEL), ("_[j]", JIT), ("_[i]", INLINE)):
        if name.endswith(suffix):
            return Frame(name, "", kind)
    return Frame(name)


def as_frames(samples: Optional[dict]) -> Optional[dict]:
    if samples is None:
        return None
    return {tuple(frame_of(n) for n in k): v for k, v in samples.items()}


def folded_profile(text: str, unit: str = "samples", mode: str = "oncpu") -> Profile:
    samples, before = parse_folded(text)
    return Profile(unit=unit, samples=as_frames(samples), mode=mode, before=as_frames(before))


def layout_with_kinds(samples: dict, **kw):
    """layout() as the SVG renderer calls it: names and flags from the frames' kinds."""
    labels = Labels(NamingOptions())
    rows = labels.merge(as_frames(samples))
    return layout(rows, flags=labels.flags, **kw)


def load_fixture(name: str) -> str:
    return (SVG_FIXTURES / name).read_text(encoding="utf-8")


def frames(lay):
    """(depth, name, start, end) of every drawn frame, the root named ''."""
    return sorted((b.depth, "" if b.depth == 0 else b.name, b.start, b.start + b.value)
                  for b in lay.boxes)


def fg_frames(name: str):
    """The frames flamegraph.pl keeps for a fixture (see PROVENANCE.md)."""
    rows = []
    for line in load_fixture(name).splitlines():
        depth, func, stime, etime = line.split("\t")
        rows.append((int(depth), func, float(stime), float(etime)))
    return sorted(rows)


@pytest.mark.parametrize("folded, minwidth, expected", [
    ("iperf.folded", "0.1", "iperf.fg-frames.tsv"),
    ("iperf.folded", "30", "iperf.minwidth30.fg-frames.tsv"),
    ("victim_a_1.offcpu.folded", "0.1", "victim_a_1.offcpu.fg-frames.tsv"),
])
def test_draws_the_frames_flamegraph_pl_draws(folded, minwidth, expected):
    samples, _ = parse_folded(load_fixture(folded))
    total = sum(samples.values())
    lay = layout(samples, min_value=prune_threshold(minwidth, 1200, total))
    assert frames(lay) == fg_frames(expected)


def test_pruning_drops_narrow_frames_and_their_children():
    samples = {("a", "b", "c"): 1, ("a", "d"): 999}
    # 1 of 1000 on 1180 px is 1.18 px: kept at minwidth 1, dropped (with c) at 2
    names = {b.name for b in layout(samples, min_value=prune_threshold("1", 1200, 1000)).boxes}
    assert {"b", "c"} <= names
    names = {b.name for b in layout(samples, min_value=prune_threshold("2", 1200, 1000)).boxes}
    assert "b" not in names and "c" not in names and "d" in names


def test_minwidth_percent_is_of_the_total():
    assert prune_threshold("2%", 1200, 500) == pytest.approx(10)
    assert parse_minwidth("0.1") == (0.1, False)
    assert parse_minwidth("5%") == (5.0, True)
    with pytest.raises(OffconvError):
        parse_minwidth("wide")


def test_frames_merge_by_name_along_the_path_and_sort_by_name():
    samples = {("t", "zeta", "x"): 1, ("t", "alpha", "x"): 2, ("t", "alpha"): 3}
    lay = layout(samples)
    depth2 = [(b.name, b.start, b.value) for b in lay.boxes if b.depth == 2]
    assert depth2 == [("alpha", 0, 5), ("zeta", 5, 1)]
    xs = sorted((b.start, b.value) for b in lay.boxes if b.name == "x")
    assert xs == [(3, 2), (5, 1)]  # alpha's self time (3) comes first, then its child


def test_flamechart_keeps_insertion_order_and_merges_adjacent_prefixes_only():
    samples = {("t", "b"): 1, ("t", "a"): 2, ("t", "b", "c"): 3}
    lay = layout(samples, flamechart=True)
    depth2 = [(b.name, b.start, b.value) for b in lay.boxes if b.depth == 2]
    assert depth2 == [("b", 0, 1), ("a", 1, 2), ("b", 3, 3)]
    sorted_lay = layout(samples)
    assert [(b.name, b.value) for b in sorted_lay.boxes if b.depth == 2] == [("a", 2), ("b", 4)]


def test_flamechart_self_time_inside_a_run_keeps_time_order():
    samples = {("t", "f", "g"): 1, ("t", "f"): 2, ("t", "f", "g", "h"): 3}
    lay = layout(samples, flamechart=True)
    g = [(b.start, b.value) for b in lay.boxes if b.name == "g"]
    assert g == [(0, 1), (3, 3)]


def test_reverse_merges_at_the_leaf_end():
    samples = {("t1", "main", "leaf"): 1, ("t2", "other", "leaf"): 2}
    lay = layout(samples, reverse=True)
    assert [(b.name, b.value) for b in lay.boxes if b.depth == 1] == [("leaf", 3)]


def test_total_override_widens_the_reference_only_when_larger():
    samples = {("a",): 10}
    assert layout(samples, total=40).timemax == 40
    assert layout(samples, total=5).timemax == 10


def test_nothing_to_draw_raises():
    with pytest.raises(OffconvError, match="nothing to draw"):
        layout({})
    with pytest.raises(OffconvError, match="nothing to draw"):
        layout({("a",): 0})


def test_state_split_families_cover_the_marker_and_what_is_above_it():
    samples = {("w", "[run queue]", "schedule"): 5, ("w", "[blocked D]", "io_schedule"): 7,
               ("w", "[preempted]"): 1}
    flags = {(b.depth, b.name): b.flags for b in layout_with_kinds(samples).boxes}
    assert flags[(1, "w")] == 0
    assert flags[(2, "[run queue]")] == flags[(3, "schedule")] == FAMILY_RUNQ
    assert flags[(2, "[preempted]")] == FAMILY_RUNQ
    assert flags[(2, "[blocked D]")] == flags[(3, "io_schedule")] == FAMILY_BLOCKED


def test_waker_family_starts_after_the_first_separator():
    samples = {("target", "schedule", "--", "try_to_wake_up", "waker"): 3,
               ("target", "schedule", "--", "wake_up_q", "waker"): 1}
    flags = {b.name: b.flags for b in layout_with_kinds(samples).boxes}
    assert not flags["schedule"] & FAMILY_WAKER and not flags["--"] & FAMILY_WAKER
    assert flags["try_to_wake_up"] & FAMILY_WAKER and flags["waker"] & FAMILY_WAKER


def test_differential_frames_carry_before_and_after():
    samples, before = parse_folded(load_fixture("diff.folded"))
    lay = layout(samples, before)
    by = {b.name: (b.before, b.value) for b in lay.boxes}
    assert by["main"] == (21, 22)
    assert by["execute"] == (7, 14)
    assert by["new_func"] == (0, 3)
    assert "gone" not in by  # nothing left after: no width, not drawn
    assert lay.max_delta == 7


# -- --max-depth: a stack deeper than the limit is drawn to it, and said --------------

def test_max_depth_draws_a_deep_stack_to_the_limit_and_counts_what_was_cut():
    deep = ("main",) + ("f",) * 5000          # one stack 5,001 frames deep
    lay = layout({deep: 30, ("main", "g", "h"): 10}, max_depth=100)
    assert lay.depth_max == 100
    assert lay.cut == (1, 30, 100)
    # the cut stack keeps its whole width at every drawn depth, down to the limit
    at = {b.depth: b for b in lay.boxes if b.name in ("main", "f")}
    assert at[100].value == 30 and at[1].value == 40
    assert max(b.depth for b in lay.boxes if b.name == "f") == 100
    # within the limit nothing changes
    assert lay.boxes[:3] == layout({deep[:100]: 30, ("main", "g", "h"): 10}).boxes[:3]


def test_max_depth_cuts_where_stacks_share_a_deep_prefix():
    # two stacks that part below the limit: their common prefix is one frame per depth
    a = ("main",) + ("f",) * 300 + ("x",)
    b = ("main",) + ("f",) * 300 + ("y",)
    lay = layout({a: 1, b: 2}, max_depth=50)
    assert lay.depth_max == 50 and lay.cut == (2, 3, 50)
    assert sorted(x.depth for x in lay.boxes) == list(range(51))   # root and 50 frames


def test_no_stack_deeper_than_the_limit_cuts_nothing():
    lay = layout({("a", "b", "c"): 1}, max_depth=3)
    assert lay.cut[:2] == (0, 0) and lay.depth_max == 3
