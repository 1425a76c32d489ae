"""The report as one JSON object (DESIGN.md "CLI contract"): ``totals``, ``threads``,
``latency``, ``causes``, ``top_stacks``, ``dropped``, ``verdict`` and more
(``histograms``, ``top_by_process``, ``span_us``, ``warnings``). Every ``*_us`` is an
integer; keys come in a fixed order, so the bytes are deterministic."""
from __future__ import annotations

import json
from typing import TextIO

from ..analysis import report_data
from ..format_types import OutputFormat


def render(profile, out: TextIO, opts=None) -> None:
    out.write(json.dumps(report_data(profile, opts), indent=2, ensure_ascii=False))
    out.write("\n")


FORMAT = OutputFormat(name="json", suffixes=(), render=render, report=True,
                      description="the report as JSON (offconv report --json)")
