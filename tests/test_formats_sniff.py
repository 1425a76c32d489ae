"""Detection never confuses formats: every fixture of every format against every sniffer.
The format a fixture is in says yes (or wins ``formats.detect``); no other says yes."""
from __future__ import annotations

from pathlib import Path

import pytest

from offconv.model import registry as formats
from offconv.model.formats import YES
from offconv.inputs.source import Source

FIX = Path(__file__).parent / "fixtures"


def expected_format(path: Path):
    """The format of a fixture file by its folder and name (None: not a profile input)."""
    rel = path.relative_to(FIX).as_posix()
    name = path.name
    if rel.startswith("flamegraph-test/results/"):
        return "folded"
    if rel.startswith("flamegraph-test/") and (name.endswith(".txt") or name.endswith(".txt.gz")):
        return "perf-script"
    if rel.startswith("recorded/") and ".perf-script" in name:
        return "perf-script"
    if rel.startswith(("svg/", "bcc/")) and name.endswith(".folded"):
        return "folded"
    if rel.startswith("bcc/") and name.endswith(".txt"):
        return "bcc-hist"
    if rel.startswith("bpftrace/") and name.endswith(".txt"):
        return "bpftrace"
    if rel.startswith("bpftrace/") and name.endswith(".jsonl"):
        return "bpftrace-json"
    if rel.startswith("perf-offcpu/") and name.endswith(".txt"):
        return "perf-script"
    return None


CASES = sorted((p, expected_format(p)) for p in FIX.rglob("*") if p.is_file()
               and expected_format(p) is not None)


def test_every_input_format_has_fixtures():
    have = {fmt for _, fmt in CASES}
    text_formats = {f.name for f in formats.input_formats() if f.sniff is not None}
    assert text_formats <= have, f"no fixture for {text_formats - have}"


@pytest.mark.parametrize("path, fmt", CASES, ids=[str(p.relative_to(FIX)) for p, _ in CASES])
def test_only_the_right_sniffer_says_yes(path, fmt):
    src = Source(str(path))
    try:
        head = src.head
    finally:
        src.close()
    answers = {f.name: f.sniff(head) for f in formats.input_formats() if f.sniff is not None}
    others = [name for name, a in answers.items() if a == YES and name != fmt]
    assert not others, f"{path.name}: {others} also say yes ({answers})"
    assert formats.detect(str(path), head).name == fmt, answers
