"""The report as one JSON object (DESIGN.md "CLI contract"): ``totals``, ``threads``,
``latency``, ``causes``, ``top_stacks``, ``dropped``, ``verdict`` and more
(``histograms``, ``top_by_process``, ``span_us``, ``warnings``). Every ``*_us`` is an
integer; keys come in a fixed order, so the bytes are deterministic."""
from __future__ import annotations

import json
from typing import Iterator, TextIO

from offconv.analysis.summary import ThreadRows, report_data
from offconv.model.formats import OutputFormat


_BATCH = 8192   # chunks of the encoder joined per write


def render(profile, out: TextIO, opts=None) -> None:
    """json.dumps(data, indent=2, ensure_ascii=False), byte for byte, written in batches:
    with an indent the encoder is Python's, whose dumps() first lists every chunk (a row
    a thread: 200 MB of small strings for 100k threads). The rows of threads
    (``analysis.ThreadRows``) are made as the encoder reaches them, one at a time."""
    data = report_data(profile, opts)
    data = {k: _Rows(v) if isinstance(v, ThreadRows) else v for k, v in data.items()}
    batch: list = []
    for chunk in json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(data):
        batch.append(chunk)
        if len(batch) >= _BATCH:
            out.write("".join(batch))
            batch.clear()
    batch.append("\n")
    out.write("".join(batch))


class _Rows(list):
    """Rows made as they are iterated, as a list to JSONEncoder.iterencode (its Python
    code, which reads a list with len() and iteration; this list holds nothing itself, so
    it is never handed to the C encoder of json.dumps without an indent)."""

    def __init__(self, rows: ThreadRows):
        super().__init__()
        self.rows = rows

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


FORMAT = OutputFormat(name="json", suffixes=(), render=render, analysis=True, by_name=True,
                      description="the report as JSON (offconv report --json)")
