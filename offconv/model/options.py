"""Option objects with their defaults, defined once; cli.py maps click options onto them
and reuses the defaults in its help text. Library code never sees click."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

MODES = ("auto", "offcpu", "blocked", "runq", "oncpu", "wakeup", "critical-path", "wallclock")
UNITS = ("us", "ms", "ns", "samples")   # --unit
KINDS = ("blocked", "runq")             # --kind
# the causes offconv.sched.causes sorts waits into (the report's rows, diff's --fail-on names);
# here, with the other vocabularies, so that the command line lists them without loading
# the classifier
CAUSES = ("disk", "lock", "network", "local-socket", "poll/idle", "child", "peer-cpu", "sleep", "paging",
          "other")
FAIL_ON_FIXED = ("total", "blocked", "runq", "p99")   # diff --fail-on, besides the causes
FAIL_ON_CHOICES = FAIL_ON_FIXED + CAUSES


@dataclass(frozen=True)
class ParseOptions:
    """What parsers need to know (stackcollapse-perf.pl's options that change frames)."""

    addrs: bool = False            # --addrs: unknown frames as [dso <PC>]
    event_filter: Optional[str] = None  # --event-filter: only this event (default: first seen)
    lenient: bool = False          # --lenient: skip and count malformed lines
    unit: Optional[str] = None     # --unit us|ms|ns|samples: what a folded/stack-map weight is in
    kind: Optional[str] = None     # --kind blocked|runq: what a histogram (or stack map) measures
    demangle: bool = False         # --demangle: legacy Rust symbols left mangled by older perf
    kallsyms: Optional[str] = None  # --kallsyms: perf script's, for perf.data of another kernel


@dataclass(frozen=True)
class NamingOptions:
    """How frames are displayed (stackcollapse-perf.pl's naming flags): offconv.model.naming."""

    pid: bool = False              # --pid: root frame comm-PID
    tid: bool = False              # --tid: root frame comm-PID/TID
    kernel: bool = False           # --kernel: _[k] on kernel frames
    jit: bool = False              # --jit: _[j] on JIT frames


@dataclass(frozen=True)
class AggregateOptions:
    """Modes and filters: Sample/SchedEvent streams -> Profile."""

    mode: str = "auto"
    critical: bool = True                  # keep every interval for the wake-up critical path (with analyse)
    filter_pids: frozenset = frozenset()   # -p/--filter-pid
    filter_tids: frozenset = frozenset()   # --filter-tid
    comm: Optional[str] = None     # --comm REGEX (searched)
    min_block_us: Optional[int] = None  # -m
    max_block_us: Optional[int] = None  # -M
    states: Optional[frozenset] = None  # --state: set of state letters to keep
    user_stacks_only: bool = False  # -U
    kernel_stacks_only: bool = False  # -K
    delimited: bool = False        # -d: '-' frame between user and kernel parts
    include_idle: bool = False     # --include-idle: keep pid 0
    include_open: bool = False     # --include-open: clip open intervals at the end
    state_split: Optional[bool] = None  # None: per-output default (svg/speedscope on, folded off)
    timeline: bool = False         # also keep Profile.sequence: stacks in time order (--flamechart)
    events: bool = False           # also keep the sched events themselves (Profile.events: --to perfetto)
    folded: bool = False           # the output is folded text: offconv.run.parallel names stacks ahead
    svg: bool = False              # the output is an SVG: a perf.data split names stacks ahead
    analyse: bool = True           # per-thread totals, causes, latencies (report, hist, verdict);
                                   # a stack output (folded, svg, ...) can do without them
    by_name: bool = False          # the output prints a thread as its name alone (folded, SVG,
                                   # the report's stacks, hist; not with --pid/--tid): the off-CPU
                                   # path sums each stack by thread name, so memory follows the
                                   # output's stacks, not the threads the input ever had


@dataclass(frozen=True)
class FlameOptions:
    """flamegraph.pl's options, with its names and defaults (ANCHORS.md 1.1).
    None means "choose from the profile" (e.g. title and colors for off-CPU)."""

    title: Optional[str] = None
    subtitle: str = ""
    width: int = 1200
    height: int = 16
    minwidth: str = "0.1"          # pixels, or "N%" of the total
    max_depth: int = 2048          # frames drawn below "all"; deeper stacks are cut there (said)
    fonttype: str = "Verdana"
    fontsize: float = 12
    fontwidth: float = 0.59
    countname: Optional[str] = None
    nametype: str = "Function:"
    colors: Optional[str] = None
    bgcolors: Optional[str] = None
    hash: bool = False
    reverse: bool = False
    inverted: bool = False
    flamechart: bool = False
    negate: bool = False
    notes: str = ""
    factor: float = 1.0
    total: Optional[float] = None


@dataclass(frozen=True)
class ReportOptions:
    """Verdict thresholds (documented in the report's help and docs)."""

    runq_p99_long_us: int = 10_000        # a run-queue p99 above this is a long tail
    runq_share_long: float = 0.10         # or run-queue > 10% of a thread's wall time
    blocked_p99_long_us: int = 10_000     # blocked p99 above this on the request path
    blocked_share_long: float = 0.20      # or blocked > 20% of a thread's wall time
    material_share: float = 0.25          # a long p99 counts when its share is this part of *_share_long
    workload_share: float = 0.05          # a comm group is workload with this share of the busy time
    core_share: float = 0.80              # the verdict weighs the groups holding this much latency time
    top: int = 10
    critical_path: tuple = ()             # --critical-path COMM|TID: threads to follow besides the verdict's


@dataclass(frozen=True)
class Options:
    parse: ParseOptions = field(default_factory=ParseOptions)
    naming: NamingOptions = field(default_factory=NamingOptions)
    aggregate: AggregateOptions = field(default_factory=AggregateOptions)
    flame: FlameOptions = field(default_factory=FlameOptions)
    report: ReportOptions = field(default_factory=ReportOptions)
