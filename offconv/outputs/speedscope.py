"""speedscope JSON (https://www.speedscope.app/file-format-schema.json), for speedscope's
Left Heavy, Sandwich and Time Order views.

- ``shared.frames``: one entry per distinct frame (display name, kind, module), with
  ``file`` = the module (DSO) where the input names one. Names are offconv.model.naming's
  display names, kept exactly (JSON escapes quotes, backslashes and control characters).
- One **sampled** profile per thread (grouped by the stack's THREAD frame, named
  ``comm pid/tid``; the thread frame itself is left out of the stacks, the profile is the
  thread): one sample per distinct stack, weights in the profile's unit
  (``microseconds`` off-CPU, ``none`` for sample counts).
- For sched input (the off-CPU path with ``Profile.periods``), one **evented** profile
  per thread after its sampled one (``comm pid/tid: time order``): each off-CPU part
  opens its frames at its start and closes them at its end; ``[on-CPU]`` is open while
  the thread runs. Times are integer nanoseconds from the trace start; events never go
  back in time and always nest (a part that overlaps the one before it, as can happen
  when inputs from several hosts are merged, starts where that one ended).
- Profiles are ordered by their thread's total weight, largest first;
  ``activeProfileIndex`` is 0.

The state split is on by default for this output (``state_split=True``): in mode offcpu
the kind of each wait is a frame just below the thread, ``[blocked S]``, ``[blocked D]``,
``[run queue]``, ``[preempted]``, as in the SVG, so blocked and run-queue time are told
apart in every view of one profile (``--no-state-split`` merges them).
"""
from __future__ import annotations

import json
from typing import TextIO

from offconv import __version__
from offconv.model.errors import OffconvError
from offconv.model.formats import OutputFormat
from offconv.model.records import THREAD, Profile
from offconv.model.naming import Namer
from offconv.model.options import NamingOptions

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}


def thread_name(task, fallback: str) -> str:
    """``comm pid/tid``; ``comm tid`` without a pid, ``comm`` alone without a tid."""
    if task is None:
        return fallback
    if task.tid is None:
        return task.comm
    if task.pid is None:
        return f"{task.comm} {task.tid}"
    return f"{task.comm} {task.pid}/{task.tid}"


class _Frames:
    """Frame -> index into shared.frames, identity (display name, kind, module)."""

    def __init__(self, namer: Namer):
        self.namer = namer
        self.index: dict = {}
        self.by_frame: dict = {}
        self.out: list = []

    def __call__(self, frame, java: bool = False) -> int:
        i = self.by_frame.get((frame, java))
        if i is not None:
            return i
        name = self.namer.label(frame, java)
        key = (name, frame.kind, frame.module)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.out)
            entry = {"name": name}
            if frame.module:
                entry["file"] = frame.module
            self.out.append(entry)
        self.by_frame[(frame, java)] = i
        return i


def _split(stack: tuple):
    """(thread task or None, the frames below the thread, java?)."""
    if stack and stack[0].kind == THREAD:
        root = stack[0]
        task = root.task
        java = task is not None and task.comm == "java" and task.tid is not None
        return root, stack[1:], java
    return None, stack, False


def _number(w):
    if isinstance(w, float) and w.is_integer():
        return int(w)
    return w


def _evented(parts: list, first_ns: int, end_ns: int, frames: _Frames, java: bool) -> list:
    """[(start_ns, end_ns, frames below the thread)] of one thread -> O/C events."""
    events: list = []
    open_: list = []          # frame indices, root first
    last = first_ns
    for start, end, stack in sorted(parts, key=lambda p: (p[0], p[1])):
        start = max(start, last)
        end = min(end, end_ns)
        if end <= start:
            continue
        idx = [frames(f, java) for f in stack]
        if open_ and start > last:            # a gap: close everything
            for i in reversed(open_):
                events.append({"type": "C", "frame": i, "at": last - first_ns})
            open_ = []
        common = 0
        while common < len(open_) and common < len(idx) and open_[common] == idx[common]:
            common += 1
        for i in reversed(open_[common:]):
            events.append({"type": "C", "frame": i, "at": start - first_ns})
        for i in idx[common:]:
            events.append({"type": "O", "frame": i, "at": start - first_ns})
        open_ = idx
        last = end
    for i in reversed(open_):
        events.append({"type": "C", "frame": i, "at": last - first_ns})
    return events


def document(profile: Profile, opts=None, name: str = "offconv") -> dict:
    """The speedscope file as a dict (render writes it)."""
    if not any(w > 0 for w in profile.samples.values()):
        raise OffconvError("nothing to export: the profile has no stack with a positive weight"
                           + (" (histogram input has no stacks: use -o x.hist or the report)"
                              if profile.histograms and not profile.samples else ""))
    namer = Namer(getattr(opts, "naming", None) or NamingOptions())
    frames = _Frames(namer)
    unit = UNITS.get(profile.unit, "none")
    # per thread: {frames below the thread: weight}
    threads: dict = {}
    roots: dict = {}
    for stack, w in profile.samples.items():
        if not w > 0:
            continue
        root, below, java = _split(stack)
        key = root.task if root is not None and root.task is not None else \
            (root.name if root is not None else None)
        roots.setdefault(key, (root, java))
        m = threads.setdefault(key, {})
        m[below] = m.get(below, 0) + w
    # per thread: evented parts from the off-CPU path
    parts: dict = {}
    an = profile.analysis
    first_ns = getattr(an, "first_ns", None)
    last_ns = getattr(an, "last_ns", None)
    if profile.periods is not None and first_ns is not None and last_ns is not None:
        for task, start, end, stack in profile.periods:
            key = task if task is not None else None
            if key in threads:
                parts.setdefault(key, []).append((start, end, stack[1:]))
    # order: by total weight (largest first), then by name for ties
    named = []
    for key, stacks in threads.items():
        root, java = roots[key]
        task = root.task if root is not None else None
        label = thread_name(task, root.name if root is not None else name)
        named.append((-sum(stacks.values()), label, key))
    named.sort(key=lambda t: (t[0], t[1], repr(t[2])))
    profiles = []
    for neg, label, key in named:
        root, java = roots[key]
        rows = sorted(((tuple(frames(f, java) for f in below), w)
                       for below, w in threads[key].items()),
                      key=lambda r: ([frames.out[i]["name"] for i in r[0]], r[0]))
        total = _number(-neg)
        profiles.append({
            "type": "sampled", "name": label, "unit": unit,
            "startValue": 0, "endValue": total,
            "samples": [list(s) for s, _ in rows],
            "weights": [_number(w) for _, w in rows],
        })
        if key in parts:
            events = _evented(parts[key], first_ns, last_ns, frames, java)
            if events:
                profiles.append({
                    "type": "evented", "name": f"{label}: time order", "unit": "nanoseconds",
                    "startValue": 0, "endValue": last_ns - first_ns, "events": events,
                })
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames.out},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"offconv@{__version__}",
    }


def source_name(profile: Profile) -> str:
    """The file's ``name``: the input (the first and a count when several were merged)."""
    src = getattr(profile, "sources", ())
    if not src:
        return "offconv"
    return src[0] if len(src) == 1 else f"{src[0]} (+{len(src) - 1} more)"


def render(profile: Profile, out: TextIO, opts=None) -> None:
    # ASCII-only JSON: every name survives exactly, whatever it holds (\uXXXX escapes)
    out.write(json.dumps(document(profile, opts, source_name(profile)), ensure_ascii=True,
                         separators=(",", ":"), allow_nan=False))
    out.write("\n")


FORMAT = OutputFormat(name="speedscope", suffixes=(".speedscope.json", ".json"), render=render,
                      state_split=True, timeline=True,
                      description="speedscope JSON: a sampled profile per thread, and a "
                                  "time-ordered (evented) one for sched input")
