"""The diff report (``offconv diff --to report`` / ``--to json``), from ``offconv.analysis.diff.report``
data: totals before/after per kind and cause, latency percentiles, the stacks that grew
and shrank most, each side's verdict. Text is fixed-width; JSON keys come in a fixed
order, so both are deterministic and a CI artifact diffs cleanly."""
from __future__ import annotations

import json
from typing import TextIO

from offconv.model.units import human_us


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


LABEL_MIN, VALUE_MIN, DELTA_MIN = 20, 14, 24   # the narrowest columns (wider values widen them)


def _columns(rows: list) -> list:
    """Rows of (label, before, after, delta) cells, or of one cell (a title), as lines: the
    label column left-aligned, before and after right-aligned, each column as wide as
    its widest cell (at least the minimum widths), two spaces at least between columns."""
    cells = [r for r in rows if len(r) == 4]
    lw = max([LABEL_MIN - 2] + [len(r[0]) for r in cells]) + 2
    bw = max([VALUE_MIN - 2] + [len(r[1]) for r in cells]) + 2
    aw = max([VALUE_MIN - 2] + [len(r[2]) for r in cells]) + 2
    return [f"{r[0]:{lw}}{r[1]:>{bw}}{r[2]:>{aw}}  {r[3]}".rstrip() if len(r) == 4 else r[0]
            for r in rows]


def render_text(data: dict, out: TextIO) -> None:
    fmt = value_formatter(data["unit"])
    w = out.write
    w(f"offconv diff: {data['before']['path']} -> {data['after']['path']} ({data['mode']}, "
      f"{data['unit']})\n")
    if data["normalized"]:
        w(f"BEFORE scaled by {data['before_scale']} to AFTER's total (-n)\n")
    if data["verdict"]:
        w(f"verdict: {data['verdict']}\n")
    rows = [("",), ("", "before", "after", "delta")]
    labels = {"total": "total", "blocked": "blocked", "runq": "run queue"}
    for k, p in data["totals"].items():
        rows.append((labels[k], _cell(p["before"], fmt), _cell(p["after"], fmt), _delta(p, fmt)))
    if data["causes"]:
        rows += [("",), ("blocked time by cause",)]
        for c in data["causes"]:
            rows.append((f"  {c['cause']}", _cell(c["before"], fmt), _cell(c["after"], fmt),
                         _delta(c, fmt)))
    if data["latency"]:
        rows += [("",), ("latency percentiles",)]
        for kind, name in (("blocked", "blocked"), ("runq", "run queue")):
            for p, v in data["latency"][kind].items():
                rows.append((f"  {name} {p[:-3]}", _cell(v["before"], human_us),
                             _cell(v["after"], human_us), _delta(v, human_us)))
    for line in _columns(rows):
        w(line + "\n")
    stacks = [r for key in ("grew", "shrank") for r in data[key]]
    dw = max([DELTA_MIN] + [len(_delta(r, fmt)) for r in stacks])
    for title, key in (("grew most", "grew"), ("shrank most", "shrank")):
        if data[key]:
            w(f"\n{title}\n")
            for r in data[key]:
                w(f"  {_delta(r, fmt):>{dw}}  {r['stack']}\n")
    if not data["grew"] and not data["shrank"]:
        w("\nno stack changed\n")
    _checks(data, w)
    for side in ("before", "after"):
        v = data[side]["verdict"]
        if v:
            w(f"\n{side}: {v['reason']}\n")


def _checks(data: dict, w) -> None:
    """--fail-above: each check, passed, failed, or not compared and why."""
    if "checks" not in data:
        return
    limit = data.get("fail_above")
    w(f"\n--fail-above{'' if limit is None else f' {limit}%'}\n")
    for c in data["checks"]:
        if "not_compared" in c:
            w(f"  {c['what']}: not compared: {c['not_compared']}\n")
            continue
        pct = c["delta_pct"]
        change = "new" if pct is None else f"{'+' if pct > 0 else ''}{pct}%"
        w(f"  {c['what']}: {change}: {'above the limit' if c['failed'] else 'ok'}\n")


def render_json(data: dict, out: TextIO) -> None:
    out.write(json.dumps(data, indent=2, ensure_ascii=False))
    out.write("\n")
