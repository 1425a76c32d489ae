"""--flamechart on interval data keeps time order (issue 4): the off-CPU path keeps the
periods in start-time order and the SVG draws them left to right in that order."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from offconv.run import pipeline
from offconv.cli import app
from offconv.model.naming import Namer
from offconv.model.options import AggregateOptions, NamingOptions, Options

VICTIM = Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"


def load(**kw):
    agg = AggregateOptions(comm="victim|lockholder", state_split=True, **kw)
    return pipeline.load([str(VICTIM)], Options(aggregate=agg))


def test_sequence_only_when_asked():
    assert load().sequence is None
    assert load(timeline=True).sequence


def test_sequence_is_in_time_order_and_adds_up():
    p = load(timeline=True)
    seq = p.sequence
    # adjacent entries differ (equal neighbours were merged)
    assert all(a[0] != b[0] for a, b in zip(seq, seq[1:]))
    # the same time as the aggregated profile, up to per-period rounding to whole µs
    assert abs(sum(w for _, w in seq) - sum(p.samples.values())) <= len(seq)
    # victim.py alternates: the holder sleeps 50 ms holding the lock while main waits on it
    big = [s for s, w in seq if w > 40_000]
    threads = [s[0].name for s in big]
    assert len(big) >= 20
    flips = sum(1 for a, b in zip(threads, threads[1:]) if a != b)
    assert flips >= len(big) // 2, threads


def test_svg_flamechart_draws_left_to_right_in_time_order(tmp_path):
    out = tmp_path / "fc.svg"
    r = CliRunner().invoke(app, [str(VICTIM), "--comm", "victim|lockholder", "--flamechart", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    svg = out.read_text()
    assert "Off-CPU Time Flame Chart" in svg
    # thread-name frames (depth 1) left to right
    p = load(timeline=True)
    first_threads = []
    for s, w in p.sequence:
        if not first_threads or first_threads[-1] != s[0].name:
            first_threads.append(s[0].name)
    # drawn (unpruned) thread frames appear in the time order of their periods: the
    # drawn sequence is a subsequence of the periods' thread sequence
    titles = re.findall(r"<title>(victim-main|lockholder) \(", svg)
    assert len(titles) >= 20
    it = iter(first_threads)
    assert all(any(t == x for x in it) for t in titles)
    # and in the geometry itself (no pruning), every period is its own frame in order
    from offconv.outputs.svg.layout import layout
    namer = Namer(NamingOptions())
    boxes = layout([(namer.stack(s), w) for s, w in p.sequence], flamechart=True).boxes
    assert [b.name for b in sorted((b for b in boxes if b.depth == 1), key=lambda b: b.start)] == first_threads
