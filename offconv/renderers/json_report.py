"""The report as one JSON object (DESIGN.md "CLI contract"): ``totals``, ``threads``,
``latency``, ``causes``, ``top_stacks``, ``dropped``, ``verdict`` and more
(``histograms``, ``top_by_process``, ``span_us``, ``warnings``). Every ``*_us`` is an
integer; keys come in a fixed order, so the bytes are deterministic."""
from __future__ import annotations

import json
from typing import TextIO

from ..analysis import summarize
from ..errors import OffconvError
from ..formats import OutputFormat
from ..options import ReportOptions


def report_data(profile, opts) -> dict:
    if profile.analysis is None:
        raise OffconvError("report: the input has no sched_switch events; record them with "
                           "perf record -e sched:sched_switch -e sched:sched_wakeup -g -a")
    ropts = opts.report if opts is not None else ReportOptions()
    data = summarize(profile.analysis, ropts)
    data["mode"] = profile.mode
    data["warnings"] = list(profile.warnings)
    return data


def render(profile, out: TextIO, opts=None) -> None:
    out.write(json.dumps(report_data(profile, opts), indent=2, ensure_ascii=False))
    out.write("\n")


FORMAT = OutputFormat(name="json", suffixes=(), render=render,
                      description="the report as JSON (offconv report --json)")
