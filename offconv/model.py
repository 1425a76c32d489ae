"""The data model every parser produces and every renderer reads.

Immutable and typed. Times are integer nanoseconds (``*_ns``); weights are
integers in the profile's unit. Stacks are tuples, **root first** (folded order).

``Frame`` and ``Task`` are NamedTuples rather than frozen dataclasses: they are
hashed millions of times on the perf script hot path (as parts of stack keys),
and a tuple's hash is computed in C while a dataclass's ``__hash__`` is a Python
call. They are just as immutable and typed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

# Frame kinds
KERNEL = "kernel"
USER = "user"
JIT = "jit"
INLINE = "inline"
MARKER = "marker"  # bcc's '-' / '--' delimiters, offconv's state-split frames

# Interval kinds
BLOCKED = "blocked"
RUNQ = "runq"
ONCPU = "oncpu"

# SchedEvent kinds
SWITCH = "switch"
WAKEUP = "wakeup"
EXIT = "exit"


class Frame(NamedTuple):
    """One stack frame. ``name`` is the cleaned, folded-ready name without annotation
    suffix; ``module`` the DSO as printed by perf (``[kernel.kallsyms]``); ``kind`` one
    of KERNEL, USER, JIT, INLINE, MARKER."""

    name: str
    module: str = ""
    kind: str = USER


Stack = tuple  # tuple[Frame, ...], root first


class Task(NamedTuple):
    """A thread. ``pid`` is None when the input carries only the tid (perf script
    default fields)."""

    comm: str
    pid: Optional[int]
    tid: int


@dataclass(frozen=True, slots=True)
class Sample:
    """An on-CPU sample (or any non-sched event) with its stack."""

    task: Task
    time_ns: int
    cpu: Optional[int]
    event: str  # e.g. "cycles", "cpu-clock", "sched:sched_switch"
    period: int  # 1 when perf did not print a period
    stack: Stack  # root first
    lineno: int = 0


@dataclass(frozen=True, slots=True)
class SchedEvent:
    """A scheduler tracepoint.

    - SWITCH: ``prev`` leaves the CPU in ``prev_state`` ("S", "D", "R", "R+", "D|K", ...),
      ``next`` enters it; ``stack`` is the callchain of the event, i.e. prev's stack.
    - WAKEUP: ``target`` is woken; ``task`` (the header task) is the waker and ``stack``
      its callchain. ``event`` tells sched_waking / sched_wakeup / sched_wakeup_new apart.
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
    lineno: int = 0


@dataclass(frozen=True, slots=True)
class Interval:
    """A span of one thread's life.

    kind BLOCKED: ``state`` is the prev_state letter(s) at switch-out; ``waker`` and
    ``waker_stack`` are who woke it (None / () when no wakeup was seen).
    kind RUNQ: ``state`` is "R" for a preempted thread (switched out runnable), "W" for a
    wait that started at a wakeup.
    kind ONCPU: ``state`` is "".
    ``stack`` is the thread's stack at the switch-out that started the off-CPU period
    (for ONCPU: empty).
    """

    task: Task
    kind: str
    state: str
    start_ns: int
    end_ns: int
    stack: Stack = ()
    waker: Optional[Task] = None
    waker_stack: Stack = ()

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True, slots=True)
class Histogram:
    """A latency histogram: ``buckets`` are (lo, hi, count) with hi exclusive; lo may be
    None for an underflow bucket ``(..., x)`` and hi None for an overflow ``[x, ...)``."""

    name: str
    keys: tuple
    unit: str
    buckets: tuple


@dataclass(slots=True)
class Profile:
    """What renderers read.

    ``samples`` maps a folded stack -- a tuple of display strings, root first, the first
    being the thread name frame, annotations like ``_[k]`` included -- to its weight in
    ``unit`` ("samples", "us", "ns"). Differential profiles (diff) use ``before`` for
    the first column and ``samples`` for the second.
    """

    unit: str = "samples"
    samples: dict = field(default_factory=dict)
    histograms: list = field(default_factory=list)
    threads: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)
    mode: str = "oncpu"
    before: Optional[dict] = None
    # Set by the off-CPU path (offconv.offcpu / offconv.analysis): per-kind latency
    # distributions, causes, top stacks, verdict inputs. Read by report/json/hist.
    analysis: Optional[object] = None
    # Interval data in time order, for flame charts: [(stack, weight)], adjacent equal
    # stacks merged (set by the off-CPU path when AggregateOptions.timeline is on).
    sequence: Optional[list] = None
    # Messages for the user (printed on stderr by the CLI, one per line).
    warnings: list = field(default_factory=list)

    def total(self) -> int:
        return sum(self.samples.values())
