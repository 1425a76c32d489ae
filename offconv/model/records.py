"""The data model every parser produces and every renderer reads.

Immutable and typed. Times are integer nanoseconds (``*_ns``); weights are numbers in
the profile's unit. A stack is a tuple of ``Frame``, **root first** (folded order).

Records (what parsers yield; the pipeline dispatches on the record's type, never on the
name of the format that produced it):

- ``Sample``: a stack with a weight in a unit (a perf sample, a folded line, a stack-keyed
  bpftrace map entry, a ``perf record --off-cpu`` event);
- ``SchedEvent``: a scheduler tracepoint (switch, wakeup, exit);
- ``Histogram``: a latency (or other) distribution in buckets;
- ``ThreadTime``: one thread's sum of one kind of time (a bpftrace map keyed by thread,
  ``@oncpu_ns_by_thread[comm, pid, tid]: N``).

From sched events, ``offconv.sched.intervals`` makes ``Period`` (one off-CPU period of a thread:
its blocked part and its run-queue part) and ``OnCpu`` records.

``Frame`` and ``Task`` are NamedTuples rather than frozen dataclasses: they are hashed
millions of times on the perf script hot path (as parts of stack keys), and a tuple's
hash is computed in C while a dataclass's ``__hash__`` is a Python call. They are just
as immutable and typed.

``SchedEvent``, ``Period`` and ``OnCpu`` are made once per event and per period on the
off-CPU path: they are slotted dataclasses that are not frozen (a frozen one's __init__
sets each field through object.__setattr__: 1.3 µs for a SchedEvent against 0.24 µs,
0.27 s of 100 MB of sched events), hashed by value like frozen ones (``unsafe_hash``).
Nothing changes them once made: treat them as values (``dataclasses.replace``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

# -- frame kinds -------------------------------------------------------------------------
KERNEL = "kernel"
USER = "user"
JIT = "jit"
INLINE = "inline"
MARKER = "marker"    # bcc's '-' (user/kernel) and '--' (target/waker) delimiters
STATE = "state"      # offconv's [blocked S], [run queue], [preempted], [on-CPU]
THREAD = "thread"    # the thread-name frame a folded line starts with
FRAME_KINDS = (KERNEL, USER, JIT, INLINE, MARKER, STATE, THREAD)

# -- what a weight measures (Sample.kind, Profile.mode) ------------------------------------
ONCPU = "oncpu"      # on-CPU samples (counts, or cpu time from the period)
OFFCPU = "offcpu"    # switch-out -> switch-in (bcc offcputime): blocked + run queue
BLOCKED = "blocked"  # switch-out asleep -> woken
RUNQ = "runq"        # woken or preempted -> switched in
WAKEUP = "wakeup"    # blocked time keyed by target and waker stacks (offwaketime)
CRITICAL = "critical-path"  # blocked time attributed along the wake-up chain (sched.critical)
OFFCPU_MODES = (OFFCPU, BLOCKED, RUNQ, WAKEUP, CRITICAL)
# every kind of a thread's time in one profile: on-CPU samples weighted by their period,
# blocked and run-queue intervals by their length (a sched recording with cpu-clock)
WALLCLOCK = "wallclock"

# -- units -------------------------------------------------------------------------------
SAMPLES = "samples"
TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}

# perf's clock events: their period (the weight of an on-CPU sample, Profile.event) is time
# on CPU in ns (perf-record(1), -F with cpu-clock)
CLOCK_EVENTS = frozenset(("cpu-clock", "task-clock"))

# -- SchedEvent kinds --------------------------------------------------------------------
SWITCH = "switch"
WAKE = "wakeup"
EXIT = "exit"


class Task(NamedTuple):
    """A thread. ``pid`` is None when the input carries only the tid (perf script default
    fields); ``tid`` is None when the input names only the comm (folded stacks)."""

    comm: str
    pid: Optional[int]
    tid: Optional[int]


class Frame(NamedTuple):
    """One stack frame: ``name`` as the input gives it, cleaned but without display
    annotations (``_[k]``, ``-PID/TID``); ``module`` the DSO or file where known
    (``[kernel.kallsyms]``, ``/usr/lib/libc.so.6``); ``kind`` one of FRAME_KINDS.
    THREAD frames carry their ``task``; other frames leave it None."""

    name: str
    module: str = ""
    kind: str = USER
    task: Optional[Task] = None


Stack = tuple  # tuple[Frame, ...], root first


def thread_frame(task: Task) -> Frame:
    return Frame(task.comm, "", THREAD, task)


# The state-split frames (DESIGN.md "State split"), and the delimiters.
RUNQ_FRAME = Frame("[run queue]", "", STATE)
PREEMPTED_FRAME = Frame("[preempted]", "", STATE)
ONCPU_FRAME = Frame("[on-CPU]", "", STATE)
DELIMITER = Frame("-", "", MARKER)        # user | kernel (offcputime -d)
WAKER_DELIMITER = Frame("--", "", MARKER)  # target | waker (offwaketime)
_BLOCKED_FRAMES: dict = {}


def blocked_frame(state: str) -> Frame:
    f = _BLOCKED_FRAMES.get(state)
    if f is None:
        f = _BLOCKED_FRAMES[state] = Frame(f"[blocked {state}]", "", STATE)
    return f


STATE_HELP = {
    "[run queue]": "runnable after a wakeup, waiting for a CPU (run-queue latency)",
    "[preempted]": "preempted while runnable, waiting to get a CPU back (run-queue latency)",
    "[on-CPU]": "running on a CPU",
    "S": "interruptible sleep: a lock, a socket, a pipe, a sleep, a child",
    "D": "uninterruptible sleep: usually disk I/O or page-cache writeback",
    "I": "idle kernel wait (TASK_IDLE): a kernel thread with nothing to do",
    "T": "stopped (signal)", "t": "stopped by a tracer", "P": "parked",
    "W": "waking", "K": "wakekill", "N": "no-load",
}


def state_help(frame_name: str) -> Optional[str]:
    """What a state-split frame means, for tooltips and legends."""
    if frame_name in STATE_HELP:
        return STATE_HELP[frame_name]
    if frame_name.startswith("[blocked ") and frame_name.endswith("]"):
        letters = frame_name[9:-1]
        parts = [STATE_HELP.get(c) for c in letters.replace("|", "").replace("+", "")]
        text = "; ".join(p for p in parts if p)
        return f"blocked ({letters}): {text}" if text else f"blocked ({letters})"
    return None


# -- records -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Sample:
    """A stack with a weight. ``stack`` holds the frames below the thread (root first);
    ``task`` is the thread it belongs to (None when the input names none). ``kind`` says
    what the weight measures (ONCPU, OFFCPU, BLOCKED, RUNQ, WAKEUP) and ``unit`` in what
    (SAMPLES or a TIME_UNITS key). ``event`` is the sampled event where the input has one
    (perf: ``cycles``, ``cpu-clock``), for ``--event-filter``. ``before`` is the first
    column of a differential folded line."""

    stack: Stack
    weight: float
    unit: str = SAMPLES
    task: Optional[Task] = None
    time_ns: Optional[int] = None
    cpu: Optional[int] = None
    event: str = ""
    kind: str = ONCPU
    before: Optional[float] = None
    lineno: int = 0

    # written out (the generated one looks object.__setattr__ up for every field): parsers
    # make one Sample per event, so this is on the hot path
    def __init__(self, stack, weight, unit=SAMPLES, task=None, time_ns=None, cpu=None, event="",
                 kind=ONCPU, before=None, lineno=0, _set=object.__setattr__):
        _set(self, "stack", stack)
        _set(self, "weight", weight)
        _set(self, "unit", unit)
        _set(self, "task", task)
        _set(self, "time_ns", time_ns)
        _set(self, "cpu", cpu)
        _set(self, "event", event)
        _set(self, "kind", kind)
        _set(self, "before", before)
        _set(self, "lineno", lineno)


@dataclass(slots=True, unsafe_hash=True)
class SchedEvent:
    """A scheduler tracepoint.

    - SWITCH: ``prev`` leaves the CPU in ``prev_state`` ("S", "D", "R", "R+", "D|K", ...),
      ``next`` enters it; ``stack`` is the callchain of the event, i.e. prev's stack.
    - WAKE: ``target`` is woken; ``task`` (the header task) is the waker and ``stack``
      its callchain. ``new`` marks sched_wakeup_new (a thread's first wakeup).
    - EXIT: ``target`` exits (sched_process_exit).

    ``task`` is the task of the sample header (perf's placeholder ``:-1`` for an
    exiting thread's last switch-out): trust the payload fields for identity.
    """

    kind: str
    time_ns: int
    cpu: Optional[int]
    task: Task
    stack: Stack
    event: str
    prev: Optional[Task] = None
    prev_state: str = ""
    next: Optional[Task] = None
    target: Optional[Task] = None
    new: bool = False
    lineno: int = 0


@dataclass(frozen=True, slots=True)
class Histogram:
    """A distribution: ``buckets`` are (lo, hi, count) with hi exclusive; lo is None for an
    underflow bucket ``(..., x)`` and hi None for an overflow ``[x, ...)``. ``unit`` is the
    unit of the bounds (a TIME_UNITS key, or "" when they are not durations); ``kind`` is
    BLOCKED or RUNQ when the histogram is a latency of that kind, else ""."""

    name: str
    keys: tuple
    unit: str
    buckets: tuple
    kind: str = ""


@dataclass(frozen=True, slots=True)
class ThreadTime:
    """One thread's sum of one kind of time, summed in the kernel (offconv record's bpftrace
    backend: ``@oncpu_ns_by_thread[comm, pid, tid]``, ``@runq_ns_by_thread[comm, tid]``).
    ``kind`` is ONCPU, RUNQ or BLOCKED; ``idle`` marks run-queue time that ended at a switch
    from the idle task (an idle CPU waking up, not a wait behind another task); ``timer``
    blocked time whose wake-up ran in a timer's expiry (a timeout, not a release)."""

    name: str
    task: Task
    value: int
    unit: str
    kind: str
    idle: bool = False
    timer: bool = False
    count: Optional[int] = None     # the waits summed (a stats() map), where known


def is_sched_tracepoint(event: str) -> bool:
    """An event of the scheduler's tracepoints (sched:..., or tep's sched_...)."""
    return event.startswith(("sched:", "sched_"))


@dataclass(slots=True, unsafe_hash=True)
class Period:
    """One off-CPU period of a thread, switch-out to switch-in.

    ``state`` is the prev_state at switch-out ("S", "D", "D|K", "R"/"R+" when preempted),
    or "" for a new thread whose first run-queue wait starts at sched_wakeup_new.
    ``wake_ns`` is the first wakeup after the switch-out (None: preempted, no wakeup
    seen, or a wakeup after an inferred switch-in); ``end_ns`` the switch-in (None: not seen, e.g. a ``perf record -p`` recording
    or the end of the trace -- the run-queue part is then unknown). ``waker`` and
    ``waker_stack`` are who woke it. ``inferred``: the switch-in was not recorded and the
    previous sched_switch on that CPU was taken (as ``perf sched timehist`` does);
    ``on_idle_cpu``: the switch-in came from the idle task (its run-queue part is the
    wake-up of an idle CPU, not a wait behind another task). ``unknown_ns``: after an
    inferred switch-in from an idle CPU (nothing else ran there) of a thread asleep, its
    wake-up not seen, the time until the thread is seen running there (an event of its
    own: a wakeup it makes, or its switch-out), which it spent blocked or running in an
    unknown split (timehist counts it as run time; offconv too, and reports the
    uncertainty)."""

    task: Task
    state: str
    start_ns: int
    wake_ns: Optional[int]
    end_ns: Optional[int]
    stack: Stack = ()
    waker: Optional[Task] = None
    waker_stack: Stack = ()
    inferred: bool = False
    on_idle_cpu: bool = False
    unknown_ns: int = 0
    woke_ns: Optional[int] = None   # the wakeup's time, even after an inferred switch-in
    throttled: bool = False         # preempted with nothing else to run: the CPU went idle

    @property
    def preempted(self) -> bool:
        return self.state in ("R", "R+")

    @property
    def blocked(self) -> bool:
        """True when the period has a blocked part (it went to sleep)."""
        return self.state != "" and not self.preempted

    @property
    def runq_start_ns(self) -> int:
        if self.preempted or self.state == "":
            return self.start_ns
        return self.wake_ns if self.wake_ns is not None else self.end_ns

    @property
    def blocked_ns(self) -> int:
        if not self.blocked:
            return 0
        end = self.wake_ns if self.wake_ns is not None else self.end_ns
        return end - self.start_ns

    @property
    def runq_ns(self) -> Optional[int]:
        """None when the switch-in was not seen (unknown, not zero)."""
        if self.end_ns is None:
            return None
        return self.end_ns - self.runq_start_ns

    @property
    def has_runq(self) -> bool:
        """True when the period has a known run-queue part (it may be 0 ns long)."""
        return self.end_ns is not None and (not self.blocked or self.wake_ns is not None)

    @property
    def no_wakeup(self) -> bool:
        return self.blocked and self.wake_ns is None and self.end_ns is not None


@dataclass(slots=True, unsafe_hash=True)
class OnCpu:
    """A span a thread ran on a CPU (``cpu`` -1: the input does not say which)."""

    task: Task
    start_ns: int
    end_ns: int
    cpu: int = -1


@dataclass(slots=True)
class ThreadCounts:
    """Per-thread event counts of one input (offconv.sched.intervals)."""

    switches: int = 0
    inferred: int = 0
    no_wakeup: int = 0


# -- the profile -------------------------------------------------------------------------

@dataclass(slots=True)
class Profile:
    """What renderers read.

    ``samples`` maps a stack (a tuple of Frames, root first, normally starting with a
    THREAD frame; with the state split a STATE frame second) to its weight in ``unit``.
    Display names are made from the frames by the renderers (offconv.model.naming). ``mode``
    says what the weights measure (ONCPU or one of OFFCPU_MODES). Differential profiles
    (diff) use ``before`` for the first column and ``samples`` for the second.
    """

    unit: str = SAMPLES
    mode: str = ONCPU
    samples: dict = field(default_factory=dict)
    before: Optional[dict] = None
    histograms: list = field(default_factory=list)
    # Per-thread sums of on-CPU and run-queue time (ThreadTime records), where the input
    # has them (offconv record's bpftrace backend): with the blocked stacks keyed by
    # thread they give each thread's wall-time shares, so the sched verdict's rules apply.
    thread_times: list = field(default_factory=list)
    # The off-CPU path's accumulation (offconv.analysis.threads.Analysis): per-thread totals,
    # exact latencies, causes. Read by report/json/hist through offconv.analysis.summary.summarize.
    analysis: Optional[object] = None
    # Interval data in time order, for flame charts: [(stack, weight)], adjacent equal
    # stacks merged (set by the off-CPU path when AggregateOptions.timeline is on).
    sequence: Optional[list] = None
    # The same parts with their times, for time-ordered outputs (speedscope's evented
    # profiles): [(task, start_ns, end_ns, stack)] in emission order, each stack as in
    # ``samples`` (before rounding and filtering of 0 µs), plus each on-CPU span of the
    # kept threads as (task, start_ns, end_ns, (THREAD frame, ONCPU_FRAME)). Also only
    # with AggregateOptions.timeline.
    periods: Optional[list] = None
    # The sched events themselves, as tuples (run.offcpu._kept_events): only with
    # AggregateOptions.events (--to perfetto).
    events: Optional[list] = None
    # The input paths, for outputs that name their source (speedscope's ``name``).
    sources: tuple = ()
    # Messages for the user (printed on stderr by the CLI, one per line).
    warnings: list = field(default_factory=list)
    # Counts of what was skipped or inferred, by reason.
    dropped: dict = field(default_factory=dict)
    # On-CPU samples weighted by perf's printed periods: the event they count ("cpu-clock",
    # "cycles"); "" when each sample counts 1.
    event: str = ""
    # The report data, computed once per (ReportOptions, NamingOptions) by
    # offconv.analysis.summary.report_data: ((options), data).
    summary: Optional[tuple] = None
    # Folded names made ahead of the folded output (offconv.model.naming.FoldedNames), or None.
    folded_names: Optional[object] = None
    # Display names made ahead of the SVG for its first stacks (offconv.model.naming.StackNames).
    stack_names: Optional[object] = None

    def total(self) -> float:
        return sum(self.samples.values())
