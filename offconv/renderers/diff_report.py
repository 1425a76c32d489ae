"""The diff report (``offconv diff --to report`` / ``--to json``), from ``offconv.diff.report``
data: totals before/after per kind and cause, latency percentiles, the stacks that grew
and shrank most, each side's verdict. Text is fixed-width; JSON keys come in a fixed
order, so both are deterministic and a CI artifact diffs cleanly."""
from __future__ import annotations

import json
from typing import TextIO

from ..units import human_us


def value_formatter(unit: str):
    """A value of the profile's unit as text: durations read best (2.26 s), counts as is."""
    if unit == "us":
        return human_us

    def fmt(v) -> str:
        if isinstance(v, float) and not v.is_integer():
            return f"{v:,.2f} {unit}"
        return f"{int(v):,} {unit}"
    return fmt


def _delta(p: dict, fmt) -> str:
    d = p["delta"]
    if d is None:
        return "n/a"
    sign = "+" if d > 0 else ""
    pct = p["delta_pct"]
    rel = "new" if pct is None else f"{'+' if pct > 0 else ''}{pct}%"
    return f"{sign}{fmt(d)} ({rel})"


def _cell(v, fmt) -> str:
    return "n/a" if v is None else fmt(v)


def render_text(data: dict, out: TextIO) -> None:
    fmt = value_formatter(data["unit"])
    w = out.write
    w(f"offconv diff: {data['before']['path']} -> {data['after']['path']} ({data['mode']}, "
      f"{data['unit']})\n")
    if data["normalized"]:
        w(f"BEFORE scaled by {data['before_scale']} to AFTER's total (-n)\n")
    if data["verdict"]:
        w(f"verdict: {data['verdict']}\n")
    w(f"\n{'':20}{'before':>14}{'after':>14}  delta\n")
    labels = {"total": "total", "blocked": "blocked", "runq": "run queue"}
    for k, p in data["totals"].items():
        w(f"{labels[k]:20}{_cell(p['before'], fmt):>14}{_cell(p['after'], fmt):>14}  "
          f"{_delta(p, fmt)}\n")
    if data["causes"]:
        w("\nblocked time by cause\n")
        for c in data["causes"]:
            w(f"  {c['cause']:18}{fmt(c['before']):>14}{fmt(c['after']):>14}  {_delta(c, fmt)}\n")
    if data["latency"]:
        w("\nlatency percentiles\n")
        for kind, name in (("blocked", "blocked"), ("runq", "run queue")):
            for p, v in data["latency"][kind].items():
                label = f"{name} {p[:-3]}"
                w(f"  {label:18}{_cell(v['before'], human_us):>14}{_cell(v['after'], human_us):>14}"
                  f"  {_delta(v, human_us)}\n")
    for title, key in (("grew most", "grew"), ("shrank most", "shrank")):
        if data[key]:
            w(f"\n{title}\n")
            for r in data[key]:
                w(f"  {_delta(r, fmt):>24}  {r['stack']}\n")
    if not data["grew"] and not data["shrank"]:
        w("\nno stack changed\n")
    for side in ("before", "after"):
        v = data[side]["verdict"]
        if v:
            w(f"\n{side}: {v['reason']}\n")


def render_json(data: dict, out: TextIO) -> None:
    out.write(json.dumps(data, indent=2, ensure_ascii=False))
    out.write("\n")
