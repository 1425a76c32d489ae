"""The report as one JSON object (DESIGN.md "CLI contract"): ``totals``, ``threads``,
``latency``, ``causes``, ``top_stacks``, ``dropped``, ``verdict`` and more
(``histograms``, ``top_by_process``, ``span_us``, ``warnings``). Every ``*_us`` is an
integer; keys come in a fixed order, so the bytes are deterministic."""
from __future__ import annotations

import json
from typing import TextIO

from ..analysis import report_data
from ..format_types import OutputFormat


_BATCH = 8192   # chunks of the encoder joined per write


def render(profile, out: TextIO, opts=None) -> None:
    """json.dumps(data, indent=2, ensure_ascii=False), byte for byte, written in batches:
    with an indent the encoder is Python's, whose dumps() first lists every chunk (a row
    a thread: 200 MB of small strings for 100k threads)."""
    batch: list = []
    for chunk in json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(report_data(profile, opts)):
        batch.append(chunk)
        if len(batch) >= _BATCH:
            out.write("".join(batch))
            batch.clear()
    batch.append("\n")
    out.write("".join(batch))


FORMAT = OutputFormat(name="json", suffixes=(), render=render, report=True,
                      description="the report as JSON (offconv report --json)")
