"""The report as plain data: ``report_data(profile, opts)`` turns a profile (an ``Analysis``
of sched events, a profile of samples, or histograms alone) into the dict the text report,
JSON and the other renderers print (all ``*_us`` integers), with the verdict. The top of
the analysis layer: may import the rest of it, offconv.sched and offconv.model."""
from __future__ import annotations

from array import array
from collections.abc import Sequence

from offconv.analysis.threads import Analysis
from offconv.analysis.totals import _LO, ThreadTotals
from offconv.model.options import ReportOptions
from offconv.model.units import ns_to_us
from offconv.sched.causes import IDLE_CAUSES


# -- the report data ----------------------------------------------------------------------

def _thread_row(t: ThreadTotals, measured: bool = True) -> dict:
    m = (lambda ns: ns_to_us(ns)) if measured else (lambda ns: None)
    return {"comm": t.comm, "pid": t.pid, "tid": t.tid,
            "blocked_us": ns_to_us(t.blocked_ns), "runq_us": m(t.runq_ns),
            "runq_preempted_us": m(t.runq_preempted_ns),
            "oncpu_us": m(t.oncpu_ns), "offcpu_us": m(t.offcpu_ns),
            "wall_us": m(t.wall_ns), "switches": t.switches,
            "inferred_switch_in": t.inferred, "no_wakeup": t.no_wakeup,
            "blocked_by_state_us": {s: ns_to_us(ns) for s, ns in sorted(t.by_state.items())}}


class ThreadRows(Sequence):
    """The report's ``threads``: a row (``_thread_row``) per thread, made when it is read.
    A parallel build's recording has a thread per process it ran; a list of their rows
    held them all at once (0.8 KB a thread: 80 MB of 100k threads while the report is
    written). ``offconv.outputs.json_report`` writes them one at a time."""

    __slots__ = ("_threads", "_measured", "_by")

    def __init__(self, threads, measured: bool, by=None):
        """``threads``: a list of them in order; or, with ``by`` (a mapping of tids to
        threads), their tids in order."""
        self._threads, self._measured, self._by = threads, measured, by

    @classmethod
    def by_offcpu(cls, threads, measured: bool) -> "ThreadRows":
        """The rows of ``threads`` (a mapping of tids to threads), most off-CPU time
        first, then by tid: kept as an array of tids, sorted by an int each (a list of
        100k threads and a tuple each to sort by took 17 MB), when every tid is a plain
        one (an int of 32 bits, its own key)."""
        keys = []
        for tid, t in threads.items():
            if tid.__class__ is not int or not 0 <= tid < 1 << 32 or t.tid != tid:
                return cls(sorted(threads.values(), key=lambda t: (-t.offcpu_ns, t.tid)),
                           measured)
            keys.append(-t.offcpu_ns << 32 | tid)
        keys.sort()
        return cls(array("q", (k & _LO for k in keys)), measured, threads)

    def __len__(self) -> int:
        return len(self._threads)

    def _at(self, x):
        return x if self._by is None else self._by[x]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_thread_row(self._at(t), self._measured) for t in self._threads[i]]
        return _thread_row(self._at(self._threads[i]), self._measured)

    def __iter__(self):
        m, at = self._measured, self._at
        return (_thread_row(at(t), m) for t in self._threads)

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, ThreadRows)) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"ThreadRows({len(self)} threads)"


def stack_of(key: tuple) -> tuple:
    """The stack of a key of ``Analysis.stacks``: (thread frame, frames) -> (thread frame,)
    + frames; a key that is a stack already (a tuple of Frames) is itself."""
    if len(key) == 2 and key[1].__class__ is tuple:
        return (key[0],) + key[1]
    return key


def _top(stacks: dict, n: int, label) -> list:
    """The n heaviest stacks as printed, that round to at least 1 µs (keys: (thread frame,
    frames)): the threads whose stacks print the same (threads of one name, without
    --pid/--tid) are summed in ns first, so a printed stack is listed once; a stack of the
    thread frame alone says so (``comm;[no call chain]``) instead of a bare thread name."""
    by_label: dict = {}
    for k, ns in stacks.items():
        s = stack_of(k)
        name = label(s) + (";[no call chain]" if len(s) == 1 else "")
        by_label[name] = by_label.get(name, 0) + ns
    items = sorted(((s, ns) for s, ns in by_label.items() if ns_to_us(ns)),
                   key=lambda kv: (-kv[1], kv[0]))
    return [(s, ns_to_us(ns)) for s, ns in items[:n]]


# the latency of a kind the recording cannot measure (run queue in a `perf record -p`
# recording): null, never 0 (DESIGN.md)
UNMEASURED_LATENCY = {"count": None, "p50_us": None, "p90_us": None, "p99_us": None,
                      "max_us": None}


def summarize(profile, ropts: ReportOptions, label) -> dict:
    """The report as plain data (the JSON of DESIGN.md plus extras), all ``*_us`` integers.
    ``label(stack) -> str`` names a stack (offconv.model.naming.Namer.folded)."""
    from offconv.analysis.verdict import verdict
    an: Analysis = profile.analysis
    an.finish()
    threads = an.threads
    totals = {k: ns_to_us(sum(getattr(t, k + "_ns") for t in threads.values()))
              for k in ("blocked", "runq", "runq_preempted", "oncpu", "offcpu")}
    totals = {k + "_us": v for k, v in totals.items()}
    measured = not an.per_process   # perf record -p: run queue and on-CPU are not measured
    if not measured:
        totals.update(runq_us=None, runq_preempted_us=None, oncpu_us=None, offcpu_us=None)
    causes: dict = {}
    for t in threads.values():
        for (cause, _), ns in t.by_cause.items():
            causes[cause] = causes.get(cause, 0) + ns
    hists = {h.name: [list(b) for b in h.buckets] for h in profile.histograms}
    return {
        "verdict": verdict(an, ropts),
        "totals": totals,
        "span_us": ns_to_us(an.span_ns),
        "threads": ThreadRows.by_offcpu(threads, measured),
        "latency": {"blocked": an.summary("blocked")["stats"],
                    "runq": an.summary("runq")["stats"] if measured else dict(UNMEASURED_LATENCY)},
        "histograms": {"blocked_us": hists.get("blocked_us", []),
                       "runq_us": hists.get("runq_us", [])},
        "causes": [{"cause": c, "blocked_us": ns_to_us(ns), "idle": c in IDLE_CAUSES}
                   for c, ns in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
                   if ns_to_us(ns)],
        "top_stacks": [{"kind": kind, "stack": s, "us": us}
                       for kind in ("blocked", "runq")
                       for s, us in _top(an.stacks.get(kind, {}), ropts.top, label)],
        "top_by_process": [{"process": p, "offcpu_us": ns_to_us(sum(st.values())),
                            "stacks": [{"stack": s, "us": us} for s, us in _top(st, 3, label)]}
                           for p, st in sorted(((p, st) for p, st in an.by_process.items()
                                                if ns_to_us(max(st.values(), default=0))),
                                               key=lambda kv: (-sum(kv[1].values()), kv[0]))[:ropts.top]],
        "dropped": dict(sorted(an.dropped.items())),
        "per_process_recording": an.per_process,
    }


def report_data(profile, opts=None) -> dict:
    """The report of a profile (``summarize`` with the options' ReportOptions and naming),
    computed once per profile and options and kept on it."""
    from offconv.model.errors import OffconvError
    from offconv.model.naming import Namer
    from offconv.model.options import NamingOptions
    if profile.analysis is None and not profile.histograms and not profile.samples:
        raise OffconvError("report: the input has no stacks, sched_switch events or histograms; record them with "
                           "perf record -e sched:sched_switch -e sched:sched_wakeup -g -a")
    ropts = getattr(opts, "report", None) or ReportOptions()
    naming = getattr(opts, "naming", None) or NamingOptions()
    cached = profile.summary
    if cached is not None and cached[0] == (ropts, naming):
        return cached[1]
    if profile.analysis is None and (profile.samples or profile.thread_times):
        # stacks (and per-thread sums), no sched events
        from offconv.analysis import sample_report, sample_threads
        from offconv.sched.histograms import histogram_rows
        data = sample_report.report_data(profile, ropts, Namer(naming).folded)
        data["histogram_details"] = histogram_rows(profile.histograms)
        sample_threads.add_histograms(data, profile, ropts)
        data["dropped"] = dict(sorted({**data["dropped"], **profile.dropped}.items()))
    elif profile.analysis is None:  # histograms only (bpftrace, bcc): offconv.sched.histograms
        from offconv.sched import histograms
        data = histograms.report_data(profile, ropts)
        if profile.dropped:   # (what the parse skipped: pipeline.load's counts)
            data["dropped"] = dict(sorted({**data.get("dropped", {}), **profile.dropped}.items()))
    else:
        data = summarize(profile, ropts, Namer(naming).folded)
        from offconv.sched.histograms import histogram_rows, shape_of_summary
        an = profile.analysis
        data["shape"] = {k: shape_of_summary(an.summary(k)) for k in ("blocked", "runq")}
        if an.per_process:  # no run-queue waits are measured: no shape to read
            data["shape"]["runq"] = {"modes": [], "tail_ratio": None, "first_bucket_only": False,
                                     "text": "not measured (a `perf record -p` recording)"}
        data["histogram_details"] = histogram_rows(profile.histograms)
        data["critical_path"] = _critical_paths(an, data, ropts)
        if not an.per_process:
            _wall(an, data)
    data["mode"] = profile.mode
    data["warnings"] = list(profile.warnings)
    profile.summary = ((ropts, naming), data)
    return data


def _wall(an: Analysis, data: dict) -> None:
    """Each workload thread's wall time split (analysis.wall), the verdict's thread first;
    the verdict is told its thread's split."""
    from offconv.analysis import wall
    v = data["verdict"]
    cause = v.get("cause")
    first = cause["tid"] if cause else None
    tids = [t for w in v.get("workload") or () for t in w["tids"]]
    data["wall"] = wall.rows(an, tids, first)
    if data["wall"] and (first is None or data["wall"][0]["tid"] == first):
        v["wall_split"] = wall.split_text(data["wall"][0])


def _critical_paths(an: Analysis, data: dict, ropts: ReportOptions) -> list:
    """The wake-up critical paths of the thread the verdict names and of those
    --critical-path names. A waiting verdict about a thread others wait on (the holder of
    a lock a server waits for, a client behind that server) is told about the head of that
    chain instead; an on-cpu verdict is told who waits on its threads (a pipeline's stages,
    a shell's children). The verdict is told the first path's root."""
    from offconv.analysis import critical_path
    from offconv.analysis.rules import anchored, decide
    from offconv.analysis.verdict import verdict as verdict_of
    if an.lanes is None:
        return []
    verdict = data["verdict"]
    paths = critical_path.Paths(an.lanes, an.classify)
    workload = [t for w in verdict.get("workload") or () for t in w["tids"]]
    cause = verdict.get("cause")
    tids = []
    if cause and isinstance(cause.get("tid"), int) and verdict["answer"] in ("waiting", "both"):
        # (a thread the verdict's own wait ends at is its partner, not upstream: two
        # threads that take turns with a lock wait on each other)
        own = critical_path.thread_path(paths, cause["tid"])
        partner = {own["root"]["holder"]} if own and own["root"] else set()
        ups = critical_path.upstream(paths, an, {cause["comm"]}, workload, skip=partner)
        if ups:
            head = an.threads[ups[0][0]["tid"]]
            verdict = data["verdict"] = verdict_of(an, ropts, anchored(decide(an, ropts), head))
            cause = verdict["cause"]
    if cause and isinstance(cause.get("tid"), int):
        tids.append(cause["tid"])
    elif verdict["answer"] == "on-cpu" and (head := critical_path.tell_oncpu(verdict, paths, an)):
        tids.append(head["tid"])
    elif verdict.get("workload"):
        tids.extend(verdict["workload"][0]["tids"][:1])
    tids.extend(critical_path.select(an.lanes, ropts.critical_path))
    out = critical_path.report(an.lanes, tids, paths=paths)
    if out and cause and out[0]["tid"] == cause.get("tid"):
        critical_path.tell_verdict(verdict, out[0]["root"])
    return out
