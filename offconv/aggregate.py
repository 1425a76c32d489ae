"""Naming and on-CPU aggregation: Sample stream -> Profile.

The naming helpers are shared with the off-CPU path (offconv.offcpu) so that both name
threads and frames identically (stackcollapse-perf.pl's rules)."""
from __future__ import annotations

from typing import Iterable, Optional

from .model import INLINE, JIT, KERNEL, Profile, Sample, Task
from .options import AggregateOptions, ParseOptions


def thread_frame(task: Task, opts: AggregateOptions) -> str:
    """The root frame: comm with spaces as '_'; ``--pid`` adds -PID, ``--tid`` -PID/TID
    ('?' for a pid the input does not carry)."""
    name = task.comm.replace(" ", "_")
    if opts.tid:
        return f"{name}-{'?' if task.pid is None else task.pid}/{task.tid}"
    if opts.pid:
        return f"{name}-{'?' if task.pid is None else task.pid}"
    return name


def frame_label(frame, opts: AggregateOptions, java: bool = False) -> str:
    """A frame's folded text: ``_[i]`` on inlined frames, ``_[k]``/``_[j]`` with
    ``--kernel``/``--jit``; a java thread's ``Lpkg/Class`` loses its ``L``."""
    name = frame.name
    if java and name.startswith("L") and "/" in name:
        name = name[1:]
    kind = frame.kind
    if kind == INLINE:
        return name + "_[i]"
    if kind == KERNEL and opts.kernel:
        return name + "_[k]"
    if kind == JIT and opts.jit:
        return name + "_[j]"
    return name


class Labeler:
    """Caches thread and frame labels (the same few thousand frames repeat millions of times)."""

    def __init__(self, opts: AggregateOptions):
        self.opts = opts
        self._threads: dict = {}
        self._frames: dict = {}

    def thread(self, task: Task) -> str:
        t = self._threads.get(task)
        if t is None:
            t = self._threads[task] = thread_frame(task, self.opts)
        return t

    def stack(self, stack: tuple, java: bool = False) -> tuple:
        cache = self._frames
        out = []
        for f in stack:
            key = (f, java)
            s = cache.get(key)
            if s is None:
                s = cache[key] = frame_label(f, self.opts, java)
            out.append(s)
        return tuple(out)


def aggregate_samples(records: Iterable, opts: AggregateOptions, popts: ParseOptions,
                      profile: Optional[Profile] = None) -> Profile:
    """Weigh events per (thread, stack) like stackcollapse-perf.pl: by the period when perf
    printed one, else 1; only events of ``--event-filter`` (default: the first type seen)."""
    profile = profile or Profile(unit="samples", mode="oncpu")
    labeler = Labeler(opts)
    counts: dict = {}
    want = popts.event_filter
    defaulted = want is None
    warned = False
    for r in records:
        ev = r.event
        if want is None:
            want = ev
        elif ev != want:
            if defaulted and not warned:
                profile.warnings.append(f"Filtering for events of type: {want}")
                warned = True
            continue
        key = (r.task, r.stack)
        counts[key] = counts.get(key, 0) + (r.period if r.__class__ is Sample else 1)
    samples = profile.samples
    for (task, stack), n in counts.items():
        t = labeler.thread(task)
        folded = (t,) + labeler.stack(stack, task.comm == "java")
        samples[folded] = samples.get(folded, 0) + n
    return profile
