"""--mode wallclock's part of the off-CPU path (run.offcpu): on-CPU samples, weighted by
their period, beside the blocked and run-queue intervals the builder adds itself. ``Samples``
keeps them as they come and, at the end, turns them into ns (a clock event's period is ns
on CPU; another event's counts are scaled to the sampled threads' on-CPU time by the sched
events, said). May import offconv.model."""
from __future__ import annotations

import re

from offconv.model.records import CLOCK_EVENTS, ONCPU, ONCPU_FRAME, Profile
from offconv.model.units import human_us


class Samples:
    def __init__(self, builder):
        self.b = builder
        self.by_key: dict = {}       # (thread, [on-CPU], frames) -> the samples' weights
        self.events: dict = {}       # event -> samples of it
        self.timed = True            # every weight is a clock event's period (ns)
        self.exact_on: dict = {}     # tid -> on-CPU ns by the sched events (kept threads)
        self.tids: set = set()       # the sampled threads

    def oncpu(self, rec) -> None:
        """A kept thread's span on a CPU (OnCpu)."""
        tid = rec.task.tid
        self.exact_on[tid] = self.exact_on.get(tid, 0) + rec.end_ns - rec.start_ns

    def sample(self, rec) -> None:
        """An on-CPU sample, under ``[on-CPU]``, weighted by its period."""
        b, task = self.b, rec.task
        if task is None or not b.keep(task):
            return
        ev = rec.event
        self.events[ev] = self.events.get(ev, 0) + 1
        # (perf names it cpu-clock, cpu-clock:ppp or cpu-clock/period=1000000/)
        if re.split(r"[:/]", ev, maxsplit=1)[0] not in CLOCK_EVENTS or rec.weight == 1:
            self.timed = False           # a count, not ns: scaled in finish()
        key = (b.thread(task), ONCPU_FRAME, b.frames(rec.stack))
        w = int(rec.weight)
        self.tids.add(task.tid)
        self.by_key[key] = self.by_key.get(key, 0) + w
        if b.timeline is not None and rec.time_ns is not None:
            stack = (key[0], key[1]) + key[2]
            # at the sample's start where its weight is its period in ns (it covers the
            # time before it); its span too, kept by spans() or not
            b.timeline.append((rec.time_ns - w if self.timed else rec.time_ns, stack, w))
            b.periods.append((task, rec.time_ns - w, rec.time_ns, stack))
        if b.analyse:
            b.analysis.add_sample(task, w)

    def finish(self, ns: dict) -> list:
        """The samples' weights into ``ns`` (the builder's sums, in ns), and what to say."""
        b, an = self.b, self.b.analysis
        if not self.events:
            return ["--mode wallclock: the input has no on-CPU samples (cpu-clock): its profile "
                    "has the blocked and run-queue kinds only; record with `offconv record "
                    "--wallclock` (perf record -e cpu-clock/period=1000000/ with the sched "
                    "events) for the on-CPU part"]
        notes, factor = [], 1.0
        total = sum(self.by_key.values())
        if not self.timed and total:
            oncpu = sum(self.exact_on.get(t, 0) for t in self.tids)
            factor = oncpu / total if oncpu else 0.0
            each = human_us(oncpu / 1000 / max(1, sum(self.events.values())))
            notes.append(f"--mode wallclock: the samples ({', '.join(sorted(self.events))}) carry "
                         f"no period in ns: each was taken as {each} on CPU, in proportion to "
                         "its count (the sampled threads' on-CPU time by the sched events over "
                         "their samples); record cpu-clock with a period for a measured one")
            for tid in an.sampled:
                an.sampled[tid] = int(an.sampled[tid] * factor)
        for key, w in self.by_key.items():
            ns[key] = ns.get(key, 0) + int(w * factor)
        if factor != 1.0 and b.timeline is not None:
            b.timeline[:] = [(t, k, int(w * factor)) if k[1:2] == (ONCPU_FRAME,) else (t, k, w)
                             for t, k, w in b.timeline]
        return notes

    def spans(self, periods: list) -> None:
        """The time-order spans kept: the samples' where they are timed, else the sched
        events' bare [on-CPU] ones (not both)."""
        if self.by_key:
            periods[:] = [p for p in periods if p[3][1:2] != (ONCPU_FRAME,)
                          or (len(p[3]) > 2) == self.timed]

    def oncpu_only(self) -> Profile:
        """The profile of an input without sched events: its samples as an on-CPU profile
        (their periods in µs where they are a clock's, else counts), said."""
        samples: dict = {}
        for key, w in self.by_key.items():
            stack = (key[0],) + key[2]
            samples[stack] = samples.get(stack, 0) + (w / 1000 if self.timed else w)
        if self.timed:
            samples = {k: round(v) for k, v in samples.items() if round(v)}
        prof = Profile(unit="us" if self.timed else "samples", mode=ONCPU, samples=samples)
        prof.warnings = ["--mode wallclock: the input has no sched events (sched_switch, "
                         "sched_wakeup): only its on-CPU samples are shown; record the sched "
                         "events too (offconv record --wallclock) for blocked and run-queue time"]
        return prof
