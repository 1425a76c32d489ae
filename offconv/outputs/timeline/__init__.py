"""--to timeline: a thread-state timeline as an interactive SVG (timeline.js draws it).

One lane per thread (the verdict's threads first, then by name and tid; at most MAX_LANES,
the busiest), time left to right, each span coloured by the thread's state: Running (on
which CPU), Runnable (woken), Runnable (preempted), Sleeping (S), Uninterruptible (D),
another blocked state, and unknown where the trace shows nothing. Wake-ups are arrows
from the waker's lane to the wakee's; the verdict thread's wake-up critical path
(offconv.sched.critical) is outlined. The data are embedded as JSON (times in µs from
the trace's start); the script draws the spans of the current view, merging those under
a pixel, and gives hover, click-to-zoom, a dragged time-range zoom, reset, and a search
of the blocked stacks and wakers ("Matched: X%" of the lanes' time). Each lane's total
per state is computed in ns and rounded once: the report's per-thread figures."""
from __future__ import annotations

import json
from importlib import resources
from typing import TextIO
from xml.sax.saxutils import escape

from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat
from offconv.model.units import ns_to_us

MAX_LANES = 200
MAX_WAKES = 200_000
WIDTH = 1200
STATES = ("Running", "Runnable (woken)", "Runnable (preempted)", "Sleeping (S)",
          "Uninterruptible (D)", "Blocked (other state)", "Unknown")
RUNNING, WOKEN, PREEMPTED, SLEEPING, UNINT, OTHER, UNKNOWN = range(7)
ON, RQ, BLK = 0, 1, 2          # offconv.sched.critical's interval kinds


def _state(kind: int, info) -> int:
    if kind == ON:
        return RUNNING
    if kind == RQ:
        return PREEMPTED if info else WOKEN
    st = info[0]
    return SLEEPING if st.startswith("S") else UNINT if st.startswith("D") else OTHER


class _Details:
    """The hover texts, interned: a span's code is its state + 8 * its text's index."""

    def __init__(self):
        self.table, self.index = [""], {"": 0}

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.table)
            self.table.append(text)
        return i


def _detail(kind: int, info) -> str:
    if kind == ON:
        return f"on CPU {info}" if info is not None and info >= 0 else ""
    if kind == RQ:
        return ""
    state, stack, waker, _ = info
    text = f"state {state}; " + ";".join(f.name for f in stack)
    if waker is not None:
        text += f"\nwoken by {waker.comm} (tid {waker.tid})"
    return text


def _order(an, lanes, verdict: dict) -> list:
    first = []
    cause = verdict.get("cause") or {}
    if isinstance(cause.get("tid"), int):
        first.append(cause["tid"])
    for w in verdict.get("workload") or ():
        first.extend(w["tids"])
    kept = [t for t in an.threads if t in lanes.by_tid and t and t.__class__ is int]
    rank = {t: i for i, t in enumerate(dict.fromkeys(first))}
    kept.sort(key=lambda t: (rank.get(t, len(rank)), lanes.by_tid[t].task.comm, t))
    if len(kept) > MAX_LANES:
        busy = sorted(kept, key=lambda t: (-an.threads[t].wall_ns, t))[:MAX_LANES]
        keep = set(busy) | set(t for t in kept if t in rank)
        kept = [t for t in kept if t in keep][:MAX_LANES]
    return kept


def data(profile, opts=None) -> dict:
    """The timeline's data (what the SVG embeds)."""
    from offconv.analysis.summary import report_data
    an = profile.analysis
    lanes = getattr(an, "lanes", None)
    if an is None or lanes is None or not lanes.by_tid:
        raise OffconvError("--to timeline needs sched events (sched_switch, sched_wakeup) with "
                           "the critical path's intervals (not --no-critical-path)")
    rep = report_data(profile, opts)
    verdict = rep["verdict"]
    tids = _order(an, lanes, verdict)
    starts = [lanes.lane(t).starts[0] for t in tids if len(lanes.lane(t).starts)]
    if not starts:
        raise OffconvError("nothing to draw: no thread has an interval")
    t0 = min(starts)
    t1 = max(lanes.lane(t).ends[-1] for t in tids if len(lanes.lane(t).ends))
    details = _Details()
    index = {t: i for i, t in enumerate(tids)}
    out_lanes, wakes = [], []
    for tid in tids:
        lane = lanes.lane(tid)
        spans, totals, last = [], [0] * len(STATES), t0
        for s, e, k, info in zip(lane.starts, lane.ends, lane.kinds, lane.info):
            if s > last:
                spans += [(last - t0) // 1000, (s - last) // 1000 or 1, UNKNOWN]
            st = _state(k, info)
            totals[st] += e - s
            a, b = ns_to_us(s - t0), ns_to_us(e - t0)
            spans += [a, max(b - a, 0), st + 8 * details(_detail(k, info))]
            last = max(last, e)
            if k == BLK and info[2] is not None and info[2].tid in index and len(wakes) < MAX_WAKES * 3:
                wakes += [index[info[2].tid], index[tid], b]
        out_lanes.append({"tid": tid, "name": f"{lane.task.comm} (tid {tid})",
                          "totals": {STATES[i]: ns_to_us(ns) for i, ns in enumerate(totals) if ns},
                          "s": spans})
    crit = _critical(an, lanes, verdict, index, t0)
    return {"title": "Thread-State Timeline", "t_us": ns_to_us(t1 - t0), "states": list(STATES),
            "details": details.table, "lanes": out_lanes, "wakes": wakes, "critical": crit,
            "verdict": verdict.get("reason") or "",
            "left_out": max(0, sum(1 for t in an.threads if t in lanes.by_tid and t) - len(tids))}


def _critical(an, lanes, verdict: dict, index: dict, t0: int) -> list:
    """[lane, start µs, length µs]: the pieces of the verdict thread's critical path."""
    from offconv.sched.critical import Paths
    cause = verdict.get("cause") or {}
    tid = cause.get("tid")
    if tid not in index:
        return []
    paths = Paths(lanes, an.classify)
    paths.spans = []
    paths.of(tid)
    merged: dict = {}
    for t, s, e in paths.spans:
        if t in index:
            merged.setdefault(t, []).append((s, e))
    out = []
    for t in sorted(merged, key=index.get):
        cur = None
        for s, e in sorted(merged[t]):
            if cur and s <= cur[1]:
                cur[1] = max(cur[1], e)
                continue
            if cur:
                out += [index[t], ns_to_us(cur[0] - t0), ns_to_us(cur[1] - cur[0])]
            cur = [s, e]
        if cur:
            out += [index[t], ns_to_us(cur[0] - t0), ns_to_us(cur[1] - cur[0])]
    return out


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def render(profile, out: TextIO, opts=None) -> None:
    d = data(profile, opts)
    text = json.dumps(d, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    lane_h, top = 14, 70
    height = top + len(d["lanes"]) * (lane_h + 2) + 60
    out.write('<?xml version="1.0" standalone="no"?>\n')
    out.write(f'<svg version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
              'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n')
    out.write(f'<title>{escape(d["title"])}</title>\n')
    out.write("<style>" + _asset("timeline.css") + "</style>\n")
    out.write(f'<script type="application/json" id="tldata"><![CDATA[{text}]]></script>\n')
    out.write('<rect x="0" y="0" width="100%" height="100%" fill="#f8f8f8"/>\n')
    out.write(f'<text id="title" x="{WIDTH // 2}" y="20" text-anchor="middle" class="title">'
              f'{escape(d["title"])}</text>\n')
    out.write('<text id="unzoom" x="10" y="20" class="button hide">Reset Zoom</text>\n')
    out.write(f'<text id="search" x="{WIDTH - 110}" y="20" class="button">Search</text>\n')
    out.write(f'<text id="matched" x="{WIDTH - 110}" y="{height - 10}"></text>\n')
    out.write(f'<text id="details" x="10" y="{height - 28}"> </text>\n')
    out.write(f'<text id="legend" x="10" y="{height - 10}"></text>\n')
    out.write('<g id="axis"></g><g id="labels"></g><g id="spans"></g><g id="crit"></g><g id="wakes"></g>\n')
    out.write('<rect id="brush" class="hide" x="0" y="0" width="0" height="0"/>\n')
    out.write("<script><![CDATA[\n" + _asset("timeline.js") + "\n]]></script>\n</svg>\n")


FORMAT = OutputFormat(name="timeline", suffixes=(".timeline.svg",), render=render, analysis=True,
                      description="a thread-state timeline (interactive SVG): one lane per thread, "
                                  "wake-ups, the critical path")
