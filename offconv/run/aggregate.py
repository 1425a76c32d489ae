"""Sample streams -> Profile: weights summed per (thread, stack), as stackcollapse-perf.pl
counts them (by the period when perf printed one, else 1), or as the input states them
(folded lines, stack-keyed maps). The thread becomes the stack's THREAD frame; display
names are made later, by the renderers (offconv.model.naming)."""
from __future__ import annotations

from typing import Iterable, Optional

from offconv.model.stacktable import StackTable, compact
from offconv.model.errors import OffconvError
from offconv.model.records import ONCPU, SAMPLES, Profile, Sample, thread_frame
from offconv.model.options import ParseOptions


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
        # for offconv.run.parallel to share with the other part's
        self.frames: Optional[dict] = None
        # display names of its first stacks, made ahead of the SVG (offconv.run.parallel)
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
        try:
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
        finally:   # (also when they fail: a cut last line is no error, pipeline.ends_inside)
            self.before, self.want, self.other = before, want, other
            self.unit, self.kind, self.weighted = unit, kind, weighted

    def merge(self, part: tuple) -> None:
        """Add the sums of the input's next part (``part()``'s tuple, from another
        process), as if its lines had been read here after this part's."""
        pairs, before, unit, kind, weighted = part
        self.counts = _add(self.counts, pairs)
        if before is not None:
            if self.before is None:
                self.before = {}
            self.before = _add(self.before, before.items())
        if self.unit is None:
            self.unit, self.kind = unit, kind
        self.weighted = self.weighted or weighted

    def part(self) -> tuple:
        """These sums as merge() takes them (a list of pairs: it pickles without hashing
        the stacks; a StackTable as it is)."""
        counts = self.counts
        pairs = counts if isinstance(counts, StackTable) else list(counts.items())
        return pairs, self.before, self.unit, self.kind, self.weighted

    def finish(self, profile: Optional[Profile], path: str = "") -> Profile:
        """The sums added into ``profile`` (a new one if None)."""
        fresh = profile is None or not profile.samples
        if profile is None:
            profile = Profile()
        want, unit, kind = self.want, self.unit, self.kind
        if self.other and self.defaulted:
            if want.startswith("@"):   # bpftrace maps (offconv.inputs.bpftrace.records)
                profile.warnings.append(f"{path or 'input'}: several stack maps: summed {want} (the "
                                        "first), left the others out (--event-filter @NAME "
                                        "picks another)")
            else:
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
    if isinstance(samples, StackTable) and not dst:
        profile.samples = samples   # the first input's table, as it is
    elif not dst and samples.__class__ is dict:
        dst.update(samples)  # the first input: one C loop, the same order
    else:
        profile.samples = _add(dst, samples.items() if samples.__class__ is dict else samples)
    if before is not None:
        if profile.before is None:
            profile.before = {}
        profile.before = _add(profile.before, before.items())


def _add(dst, pairs):
    """``dst`` (a dict or a StackTable) with ``pairs`` (stack, weight) added; a StackTable
    when either is one or the sum holds COMPACT_MIN stacks (then ``dst`` is emptied)."""
    if isinstance(pairs, StackTable):
        if not isinstance(dst, StackTable):
            dst = StackTable.adopt(dst)
        dst.merge_from(pairs)
        return dst
    add = dst.setdefault
    for key, n in pairs:
        m = len(dst)
        had = add(key, n)  # one hash of the stack when it is new
        if len(dst) != m:
            continue
        dst[key] = had + n
    return compact(dst)


# said when -p had to match tids (the input names no processes: perf script's default fields)
PID_FROM_TID = ("-p/--filter-pid: the input carries only thread ids (perf script default "
                "fields), so -p matched the tid; use perf script -F with pid to match processes")


def sample_filters(agg) -> bool:
    """Whether the selection options (-p, --filter-tid, --comm, -U, -K, -d) ask
    select_samples for anything."""
    return bool(agg.filter_pids or agg.filter_tids or agg.comm or agg.user_stacks_only
                or agg.kernel_stacks_only or agg.delimited)


def select_samples(profile: Profile, agg, paths=()) -> None:
    """-p/--filter-pid, --filter-tid, --comm and -U/-K/-d on a profile of samples (perf's
    on-CPU samples, folded stacks, bpftrace stack maps), as offconv.run.offcpu applies them to
    intervals: a stack is kept by the task of its thread frame, and its frames are split
    by kind (user below kernel, a '-' between them with -d). A thread selection the input
    cannot answer (pids of folded stacks, which name threads only) is a usage error, not
    an empty or unfiltered output."""
    import re
    from offconv.model.records import DELIMITER, KERNEL, MARKER, THREAD
    what = " and ".join(paths) or "the input"
    comm_re = re.compile(agg.comm) if agg.comm else None
    tids_as_pids = False
    kept: dict = {}

    def keep(task) -> bool:
        nonlocal tids_as_pids
        k = kept.get(task)
        if k is not None:
            return k
        if agg.filter_pids:
            pid = task.pid
            if pid is None:
                if task.tid is None:
                    raise OffconvError(f"{what}: -p/--filter-pid: the input names no processes "
                                       "(its stacks carry thread names only): select by "
                                       "name with --comm REGEX")
                pid, tids_as_pids = task.tid, True
            if pid not in agg.filter_pids:
                kept[task] = False
                return False
        if agg.filter_tids:
            if task.tid is None:
                raise OffconvError(f"{what}: --filter-tid: the input names no threads by id "
                                   "(its stacks carry thread names only): select by name "
                                   "with --comm REGEX")
            if task.tid not in agg.filter_tids:
                kept[task] = False
                return False
        k = kept[task] = comm_re is None or comm_re.search(task.comm) is not None
        return k

    split = agg.user_stacks_only or agg.kernel_stacks_only or agg.delimited
    any_kernel = False
    frames_of: dict = {}

    def frames(stack: tuple) -> tuple:
        nonlocal any_kernel
        got = frames_of.get(stack)
        if got is None:
            head = stack[:1] if stack and stack[0].kind == THREAD else ()
            body = stack[len(head):]
            # [vdso] is kernel-provided code run in user mode: the user stack's, as bcc's
            # (only stackcollapse-perf.pl's --kernel marks it _[k], by its brackets)
            kernel = tuple(f for f in body if f.kind == KERNEL and f.module != "[vdso]")
            user = tuple(f for f in body if (f.kind != KERNEL or f.module == "[vdso]")
                         and not (f.kind == MARKER and f.name == "-"))
            any_kernel = any_kernel or bool(kernel)
            if agg.user_stacks_only:
                kernel = ()
            if agg.kernel_stacks_only:
                user = ()
            got = frames_of[stack] = head + user + (
                (DELIMITER,) if agg.delimited and user and kernel else ()) + kernel
        return got

    def select(samples: Optional[dict]) -> Optional[dict]:
        if samples is None:
            return None
        out: dict = {}
        for stack, w in samples.items():
            if stack and stack[0].kind == THREAD and stack[0].task is not None:
                if not keep(stack[0].task):
                    continue
            elif agg.filter_pids or agg.filter_tids or comm_re is not None:
                raise OffconvError(f"{what}: -p/--filter-tid/--comm: its stacks name no thread "
                                   "(no comm at their root): nothing to select by")
            if split:
                stack = frames(stack)
            out[stack] = out.get(stack, 0) + w
        return out

    profile.samples = select(profile.samples)
    profile.before = select(profile.before)
    profile.folded_names = profile.stack_names = None   # names of the stacks before
    if tids_as_pids:
        profile.warnings.append(PID_FROM_TID)
    if split and not any_kernel and profile.samples:
        profile.warnings.append("-U/-K/-d: no frame of the input is marked as the kernel's "
                                "(folded stacks without _[k] or bcc's '-' delimiter): "
                                "every frame was taken as a user frame")
