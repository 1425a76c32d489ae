"""Contract tests over every output format: deterministic bytes, no state kept between
calls, the profile left untouched, and the suffix table consistent."""
from __future__ import annotations

import copy
import io
from pathlib import Path

import pytest

from offconv.model import registry as formats
from offconv.run import pipeline
from offconv.model.options import Options

FIX = Path(__file__).parent / "fixtures"
VICTIM = FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"
NAMES = [f.name for f in formats.output_formats()]


def profile(fmt=None):
    """The victim recording's profile; with what ``fmt`` asks the load to keep (the sched
    events themselves for perfetto)."""
    opts = Options()
    if fmt is not None and "events" in fmt.ahead:
        from dataclasses import replace
        opts = replace(opts, aggregate=replace(opts.aggregate, events=True))
    return pipeline.load([str(VICTIM)], opts, state_split_default=True)


@pytest.mark.parametrize("name", NAMES)
def test_renderer_is_deterministic_and_stateless(name):
    fmt = formats.output_format(name)
    p = profile(fmt)
    before = copy.deepcopy((p.samples, p.dropped, p.warnings))
    outs = []
    new = io.BytesIO if fmt.binary else io.StringIO   # binary formats get a binary stream
    for _ in range(2):
        buf = new()
        fmt.render(p, buf, Options())
        outs.append(buf.getvalue())
    assert outs[0] and outs[0] == outs[1]
    assert (p.samples, p.dropped, p.warnings) == before
    # a fresh load renders the same bytes (no hash seeds, no timestamps)
    buf = new()
    fmt.render(profile(fmt), buf, Options())
    assert buf.getvalue() == outs[0]


def test_suffixes_are_unique_and_select_their_format():
    seen = {}
    for f in formats.output_formats():
        for suf in f.suffixes:
            assert suf not in seen, f"{suf} claimed by {seen.get(suf)} and {f.name}"
            seen[suf] = f.name
            assert formats.output_for_path(f"x{suf}").name == f.name
