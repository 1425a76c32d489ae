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
    sums = Sums(popts)
    sums.add_records(records)
    return sums.finish(profile, path)


class Sums:
    """The sums of one input on their way into a Profile, in first-seen order, fed with
    records (``add_records``) or by a parser that sums its own events (it asks
    ``accepts`` for each kind of event, then adds into ``counts``): the two may be
    interleaved, in input order."""

    def __init__(self, popts: ParseOptions):
        self.counts: dict = {}
        self.before: Optional[dict] = None
        self.want = popts.event_filter
        self.defaulted = self.want is None
        self.other = False      # an event of another type was left out
        self.unit = self.kind = None
        self.weighted = False   # a record weighed other than 1
        self.threads: dict = {}
        # the parser's distinct Frames, if it keeps them (folded: its text -> Frame cache),
        # for offconv.parallel to share with the other part's
        self.frames: Optional[dict] = None
        # display names of its first stacks, made ahead of the SVG (offconv.parallel)
        self.stack_names = None

    def accepts(self, event: str, weight, unit: str, kind: str) -> bool:
        """Whether events of type ``event`` weighing ``weight`` each, met now (in input
        order), are counted; the caller then adds their sums into ``counts`` itself."""
        if event:
            if self.want is None:
                self.want = event
            elif event != self.want:
                self.other = True
                return False
        if self.unit is None:
            self.unit, self.kind = unit, kind
        if weight != 1:
            self.weighted = True
        return True

    def add_records(self, records: Iterable) -> None:
        counts = self.counts
        before = self.before
        want = self.want
        other = self.other
        unit, kind = self.unit, self.kind
        weighted = self.weighted
        threads = self.threads
        for r in records:
            if r.__class__ is not Sample:      # a tracepoint counted as an event (weight 1)
                r = Sample(r.stack, 1, SAMPLES, r.task, r.time_ns, r.cpu, r.event, ONCPU)
            ev = r.event
            if ev:
                if want is None:
                    want = ev
                elif ev != want:
                    other = True
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
        self.before, self.want, self.other = before, want, other
        self.unit, self.kind, self.weighted = unit, kind, weighted

    def merge(self, part: tuple) -> None:
        """Add the sums of the input's next part (``part()``'s tuple, from another
        process), as if its lines had been read here after this part's."""
        pairs, before, unit, kind, weighted = part
        _add(self.counts, pairs)
        if before is not None:
            if self.before is None:
                self.before = {}
            _add(self.before, before.items())
        if self.unit is None:
            self.unit, self.kind = unit, kind
        self.weighted = self.weighted or weighted

    def part(self) -> tuple:
        """These sums as merge() takes them (a list of pairs: it pickles without hashing
        the stacks)."""
        return list(self.counts.items()), self.before, self.unit, self.kind, self.weighted

    def finish(self, profile: Optional[Profile], path: str = "") -> Profile:
        """The sums added into ``profile`` (a new one if None)."""
        fresh = profile is None or not profile.samples
        if profile is None:
            profile = Profile()
        want, unit, kind = self.want, self.unit, self.kind
        if self.other and self.defaulted:
            profile.warnings.append(f"Filtering for events of type: {want}")
        if want and kind == ONCPU and unit == SAMPLES:
            # what the weights are: perf's periods of that event (cpu-clock: ns), or counts
            profile.event = want if self.weighted else (profile.event or "")
        if fresh:
            if unit is not None:
                profile.unit, profile.mode = unit, kind
            profile.stack_names = self.stack_names  # a prefix of the samples: their first
        elif unit is not None and (unit, kind) != (profile.unit, profile.mode):
            raise OffconvError(f"{path}: its weights are {kind} in {unit}, the other inputs' "
                               f"{profile.mode} in {profile.unit}: they cannot be merged")
        add_weights(profile, self.counts, self.before)
        return profile


def add_weights(profile: Profile, samples, before: Optional[dict]) -> None:
    """Add per-stack weights (and a differential's before column) into ``profile``.
    ``samples`` is a dict, or (stack, weight) pairs in first-seen order (the split's child
    sends a list: it pickles and unpickles without hashing its 20k stacks)."""
    dst = profile.samples
    if not dst and samples.__class__ is dict:
        dst.update(samples)  # the first input: one C loop, the same order
    else:
        _add(dst, samples.items() if samples.__class__ is dict else samples)
    if before is not None:
        if profile.before is None:
            profile.before = {}
        _add(profile.before, before.items())


def _add(dst: dict, pairs) -> None:
    add = dst.setdefault
    for key, n in pairs:
        m = len(dst)
        had = add(key, n)  # one hash of the stack when it is new
        if len(dst) != m:
            continue
        dst[key] = had + n
