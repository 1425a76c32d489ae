"""Sample streams -> Profile: weights summed per (thread, stack), as stackcollapse-perf.pl
counts them (by the period when perf printed one, else 1), or as the input states them
(folded lines, stack-keyed maps). The thread becomes the stack's THREAD frame; display
names are made later, by the renderers (offconv.naming)."""
from __future__ import annotations

from typing import Iterable, Optional

from .errors import OffconvError
from .model import ONCPU, SAMPLES, Profile, Sample, thread_frame
from .options import ParseOptions


def aggregate_samples(records: Iterable, popts: ParseOptions,
                      profile: Optional[Profile] = None, path: str = "") -> Profile:
    """Sum Samples into ``profile`` (a new one if None). ``--event-filter`` keeps one event
    type (default: the first type seen, with stackcollapse-perf.pl's message). All
    samples of a profile must share one unit and kind."""
    fresh = profile is None or not profile.samples
    if profile is None:
        profile = Profile()
    counts: dict = {}
    before: Optional[dict] = None
    want = popts.event_filter
    defaulted = want is None
    warned = False
    unit = kind = None
    weighted = False
    threads: dict = {}
    for r in records:
        if r.__class__ is not Sample:      # a tracepoint counted as an event (weight 1)
            r = Sample(r.stack, 1, SAMPLES, r.task, r.time_ns, r.cpu, r.event, ONCPU)
        ev = r.event
        if ev:
            if want is None:
                want = ev
            elif ev != want:
                if defaulted and not warned:
                    profile.warnings.append(f"Filtering for events of type: {want}")
                    warned = True
                continue
        if unit is None:
            unit, kind = r.unit, r.kind
        task = r.task
        if task is None:
            key = r.stack
        else:
            tf = threads.get(task)
            if tf is None:
                tf = threads[task] = thread_frame(task)
            key = (tf,) + r.stack
        w = r.weight
        counts[key] = counts.get(key, 0) + w
        if w != 1:
            weighted = True
        if r.before is not None:
            if before is None:
                before = {}
            before[key] = before.get(key, 0) + r.before
    if want and kind == ONCPU and unit == SAMPLES:
        # what the weights are: perf's periods of that event (cpu-clock: ns), or counts
        profile.event = want if weighted else (profile.event or "")
    if fresh:
        if unit is not None:
            profile.unit, profile.mode = unit, kind
    elif unit is not None and (unit, kind) != (profile.unit, profile.mode):
        raise OffconvError(f"{path}: its weights are {kind} in {unit}, the other inputs' "
                           f"{profile.mode} in {profile.unit}: they cannot be merged")
    add_weights(profile, counts, before)
    return profile


def add_weights(profile: Profile, samples: dict, before: Optional[dict]) -> None:
    """Add per-stack weights (and a differential's before column) into ``profile``."""
    dst = profile.samples
    for key, n in samples.items():
        dst[key] = dst.get(key, 0) + n
    if before is not None:
        if profile.before is None:
            profile.before = {}
        dst = profile.before
        for key, n in before.items():
            dst[key] = dst.get(key, 0) + n

