"""Histograms: bucket-wise merge, estimates from bucket bounds, the shape reading, and
the verdict when histograms are all an input has.

- ``merge``: histograms with the same name and keys (several inputs, bcc interval output)
  add up bucket by bucket; where two were merged, gaps between buckets are filled with
  zero buckets of the same layout (log2 or linear), as bpftrace prints them. A histogram
  seen once is kept as it is.
- ``estimate``: count, p50/p90/p99/max and the total from the bucket bounds. These are
  **bucket-resolution estimates**: a percentile is the bucket it falls in (reported as
  its upper bound, and the bucket itself), the total takes each bucket's midpoint.
- ``shape``: reads a latency distribution for the user -- how many modes and where, where
  the tail is relative to the mode, or that everything is in the first bucket. The same
  reading is made for the exact intervals of perf sched input (``shape_of_durations``).
- ``histogram_verdict``: capacity / waiting / both / on-cpu from a run-queue and a
  blocked histogram (p99 against the report's thresholds; shares of wall time cannot be
  known from histograms, so only the p99 rules apply).
"""
from __future__ import annotations

from typing import Iterable, Optional

from offconv.model.errors import OffconvError
from offconv.sched.latency import Runs, log2_buckets, percentile
from offconv.model.records import BLOCKED, RUNQ, Histogram
from offconv.model.options import ReportOptions
from offconv.model.units import human_us, ns_to_us

US_PER = {"ns": 0.001, "us": 1.0, "ms": 1000.0, "s": 1_000_000.0}
MODE_MIN_SHARE = 0.10     # a secondary peak counts as a mode at this share of the top peak
VALLEY = 0.75             # ... when the counts between the peaks drop below this part of it
TAIL_RATIO = 10           # "read the tail" when p99 is at least this many times the mode
_ORDINAL = {2: "two", 3: "three", 4: "four", 5: "five"}


def _sort_key(b):
    lo, hi, _ = b
    return (float("-inf") if lo is None else lo, float("inf") if hi is None else hi)


def is_linear(buckets) -> bool:
    """True for lhist() layouts: all bounded buckets of one width, and that width is not
    the log2 layout ([0], [1], [2, 4), [4, 8)...)."""
    widths = {hi - lo for lo, hi, _ in buckets if lo is not None and hi is not None}
    if len(widths) > 1:
        return False
    if any(lo is None and hi != 0 for lo, hi, _ in buckets):
        return True   # an underflow below a min other than 0
    if any(hi is None for lo, hi, _ in buckets):
        return True   # log2 hist() has no overflow bucket
    bounded = [(lo, hi) for lo, hi, _ in buckets if lo is not None and hi is not None]
    if not bounded:
        return False
    w = widths.pop()
    if w == 1:
        return any(lo > 1 for lo, _ in bounded)
    # (bounds may be floats: a histogram's scaled into another unit)
    return not all(lo == w and float(lo).is_integer() and (int(lo) & (int(lo) - 1)) == 0
                   for lo, _ in bounded)


def _fill(buckets: list) -> list:
    """Zero buckets in the gaps between non-adjacent buckets (log2 or linear layout)."""
    out: list = []
    linear = is_linear(buckets)
    for b in buckets:
        if out and out[-1][1] is not None and b[0] is not None and out[-1][1] < b[0]:
            lo = out[-1][1]
            width = out[-1][1] - out[-1][0] if out[-1][0] is not None else None
            while lo < b[0]:
                if linear and width:
                    hi = lo + width
                else:
                    hi = 1 if lo == 0 else (2 if lo == 1 else lo * 2)
                if hi > b[0]:
                    break
                out.append((lo, hi, 0))
                lo = hi
        out.append(b)
    return out


def merge(histograms: Iterable[Histogram]) -> list:
    """Histograms with the same (name, keys) summed bucket-wise, in first-seen order."""
    groups: dict = {}
    for h in histograms:
        key = (h.name, h.keys)
        g = groups.get(key)
        if g is None:
            groups[key] = [h, {}, 0]
            g = groups[key]
        g[2] += 1
        counts = g[1]
        for lo, hi, n in h.buckets:
            counts[(lo, hi)] = counts.get((lo, hi), 0) + n
        if g[0].kind == "" and h.kind:
            g[0] = Histogram(g[0].name, g[0].keys, g[0].unit, g[0].buckets, h.kind)
    out = []
    for (name, keys), (first, counts, n) in groups.items():
        if n == 1:
            out.append(first)
            continue
        buckets = sorted(((lo, hi, c) for (lo, hi), c in counts.items()), key=_sort_key)
        out.append(Histogram(name, keys, first.unit, tuple(_fill(buckets)), first.kind))
    return out


# -- estimates ------------------------------------------------------------------------------

def _mid(lo, hi) -> float:
    if lo is None:
        return float(hi)
    if hi is None:
        return float(lo)
    return (lo + hi) / 2


def estimate(h: Histogram) -> dict:
    """count, and for duration histograms p50/p90/p99/max (upper bounds of the buckets
    they fall in, µs) with their buckets and the total (bucket midpoints, µs)."""
    count = sum(n for _, _, n in h.buckets)
    out: dict = {"count": count, "estimate": "bucket resolution"}
    scale = US_PER.get(h.unit)
    if scale is None or not count:
        return out
    cum = 0
    marks = {p: -(-p * count // 100) for p in (50, 90, 99)}
    for lo, hi, n in h.buckets:
        cum += n
        for p, rank in list(marks.items()):
            if cum >= rank:
                bound = hi if hi is not None else lo
                out[f"p{p}_us"] = round(bound * scale)
                out[f"p{p}_bucket_us"] = [None if lo is None else round(lo * scale),
                                          None if hi is None else round(hi * scale)]
                del marks[p]
    last = [b for b in h.buckets if b[2]][-1]
    out["max_us"] = round((last[1] if last[1] is not None else last[0]) * scale)
    out["total_us"] = round(sum(max(_mid(lo, hi), 0) * n for lo, hi, n in h.buckets) * scale)
    return out


# -- the shape --------------------------------------------------------------------------------

def _modes(buckets) -> list:
    """Indexes of the modes: local peaks of at least MODE_MIN_SHARE of the top count,
    separated by a valley below VALLEY of the smaller peak."""
    counts = [n for _, _, n in buckets]
    if not counts or max(counts) == 0:
        return []
    top = max(counts)
    peaks = []
    for i, n in enumerate(counts):
        if n < MODE_MIN_SHARE * top or n == 0:
            continue
        left = counts[i - 1] if i else -1
        right = counts[i + 1] if i + 1 < len(counts) else -1
        if n >= left and n >= right and not (n == left and peaks and peaks[-1] == i - 1):
            peaks.append(i)
    modes: list = []
    for i in peaks:
        if modes:
            j = modes[-1]
            valley = min(counts[j:i + 1])
            if valley >= VALLEY * min(counts[i], counts[j]):
                if counts[i] > counts[j]:
                    modes[-1] = i
                continue
        modes.append(i)
    return modes


def _where(b, scale: Optional[float], linear: bool) -> str:
    lo, hi, _ = b
    if lo is None:
        v = float(hi)
    elif hi is None:
        v = float(lo)
    elif linear or lo == 0:
        v = (lo + hi) / 2
    else:
        v = (lo * hi) ** 0.5
    return f"~{human_us(round(v * scale))}" if scale is not None else f"~{v:g}"


def shape(buckets, unit: str = "us", p99_us: Optional[float] = None) -> dict:
    """The reading of a distribution: ``modes`` (where, as text), ``tail_ratio`` (p99 /
    main mode), ``first_bucket_only`` and one ``text`` sentence."""
    buckets = tuple(buckets)
    scale = US_PER.get(unit)
    total = sum(n for _, _, n in buckets)
    if not total:
        return {"modes": [], "tail_ratio": None, "first_bucket_only": False,
                "text": "no events"}
    linear = is_linear(buckets)
    nonzero = [b for b in buckets if b[2]]
    first = min(buckets, key=_sort_key)
    if len(nonzero) == 1 and nonzero[0] == first and (first[0] is None or first[0] <= 0
                                                        or (not linear and first[0] <= 1)):
        hi = first[1]
        below = f" (< {human_us(round(hi * scale))})" if scale is not None and hi else ""
        return {"modes": [_where(first, scale, linear)], "tail_ratio": None,
                "first_bucket_only": True,
                "text": f"all in the first bucket{below}: not off-CPU bound"}
    idx = _modes(buckets)
    where = [_where(buckets[i], scale, linear) for i in idx]
    main = max(idx, key=lambda i: buckets[i][2])
    if len(idx) > 1:
        listed = where[0] if len(where) == 1 else f"{', '.join(where[:-1])} and {where[-1]}"
        text = (f"{_ORDINAL.get(len(idx), str(len(idx)))} modes: {listed}: "
                f"{_ORDINAL.get(len(idx), str(len(idx)))} different wait causes, read the stacks")
    else:
        text = f"one mode: {where[0]}"
    ratio = None
    if scale is not None:
        lo, hi, _ = buckets[main]
        mode_us = _mid(lo, hi) if (linear or not lo) else (lo * hi) ** 0.5 if hi else lo
        mode_us = mode_us * scale
        if p99_us is None:
            p99_us = estimate(Histogram("", (), unit, buckets)).get("p99_us")
        last = buckets[idx[-1]]
        beyond = last[1] is not None and p99_us is not None and p99_us > last[1] * scale
        if p99_us and mode_us > 0:
            ratio = p99_us / mode_us
            if ratio >= TAIL_RATIO and beyond:
                text += f"; p99 is {ratio:.0f}x the mode: read the tail, not the mode"
    return {"modes": where, "tail_ratio": None if ratio is None else round(ratio, 1),
            "first_bucket_only": False, "text": text}


def shape_of_durations(durations_ns) -> dict:
    """The same reading for exact durations (perf sched intervals): log2 µs buckets for
    the modes, the exact nearest-rank p99 for the tail. ``durations_ns``: any order, or
    a ``latency.Runs``."""
    values = durations_ns if isinstance(durations_ns, Runs) else Runs((durations_ns,))
    if not len(values):
        return shape((), "us")
    p99 = ns_to_us(percentile(values, 99))
    return shape(log2_buckets(values), "us", p99_us=p99)


def shape_of_summary(summary: dict) -> dict:
    """shape_of_durations of the durations an ``Analysis.summary`` was made of."""
    if not summary["stats"]["count"]:
        return shape((), "us")
    return shape(summary["buckets"], "us", p99_us=ns_to_us(summary["p99"]))


# -- report data for histogram-only inputs -----------------------------------------------------

def _combined(hists: list, unit: str) -> tuple:
    """All buckets of several histograms (keys summed) in µs-scaled bounds."""
    scale = US_PER[unit]
    counts: dict = {}
    for h in hists:
        s = US_PER[h.unit] / scale
        for lo, hi, n in h.buckets:
            k = (None if lo is None else lo * s, None if hi is None else hi * s)
            counts[k] = counts.get(k, 0) + n
    return tuple(sorted(((lo, hi, n) for (lo, hi), n in counts.items()), key=_sort_key))


def by_kind(histograms: list) -> dict:
    """kind -> the duration histograms of that kind (BLOCKED, RUNQ)."""
    out: dict = {BLOCKED: [], RUNQ: []}
    for h in histograms:
        if h.kind in out and h.unit in US_PER:
            out[h.kind].append(h)
    return out


def histogram_verdict(histograms: list, ropts: ReportOptions = ReportOptions()) -> dict:
    """The verdict (same keys as offconv.analysis.verdict.verdict) from run-queue and blocked
    histograms: a tail is long when its estimated p99 reaches the threshold."""
    kinds = by_kind(histograms)
    p99 = {}
    for k, hs in kinds.items():
        if hs:
            p99[k] = estimate(Histogram("", (), "us", _combined(hs, "us"))).get("p99_us", 0)
    runq_long = p99.get(RUNQ, 0) >= ropts.runq_p99_long_us
    blocked_long = p99.get(BLOCKED, 0) >= ropts.blocked_p99_long_us
    answer = {(True, True): "both", (False, True): "waiting", (True, False): "capacity",
              (False, False): "on-cpu"}[(runq_long, blocked_long)]
    rq = f"run-queue p99 ~{human_us(p99[RUNQ])}" if RUNQ in p99 else None
    bl = f"blocked p99 ~{human_us(p99[BLOCKED])}" if BLOCKED in p99 else None
    missing = [t for t, v in (("no run-queue histogram (run-queue latency unknown)", rq),
                              ("no blocked histogram (blocked time unknown)", bl)) if v is None]
    if answer == "both":
        reason = (f"{bl} and {rq}: both the blocking path and CPU capacity cost time; fix "
                  "the blocking path first, then add capacity.")
    elif answer == "waiting":
        reason = (f"{'; '.join([bl] + ([rq] if rq else missing))}: the threads wait for "
                  "something other than a CPU: read the blocked stacks, adding cores will "
                  "not help.")
    elif answer == "capacity":
        reason = (f"{'; '.join([rq] + ([bl] if bl else missing))}: the threads are runnable "
                  "but wait for a CPU: add cores, run fewer jobs at once or change priorities.")
    elif not p99:
        reason = ("no run-queue or blocked latency histogram (kinds are assumed from the names: "
                  "runq/rq, block/off/sleep; --kind blocked|runq states it): nothing to say "
                  "about waiting.")
    else:
        known = " and ".join(x for x in (rq, bl) if x)
        reason = (f"{known} {'is' if len(p99) == 1 else 'are'} short"
                  f"{'; ' + '; '.join(missing) if missing else ''}: the time is spent on CPU; "
                  "profile on-CPU (perf record -F 99 -g).")
    reason += " (bucket-resolution estimates from histograms; shares of wall time unknown)"
    return {
        "answer": answer, "reason": reason,
        "runq_long": runq_long, "blocked_long": blocked_long,
        "runq_p99_us": p99.get(RUNQ), "blocked_p99_us": p99.get(BLOCKED),
        "runq_share_max": None, "blocked_share_max": None,
        "idle_waits_counted": True, "threads_considered": [],
        "thresholds": {"runq_p99_long_us": ropts.runq_p99_long_us,
                       "runq_share_long": ropts.runq_share_long,
                       "blocked_p99_long_us": ropts.blocked_p99_long_us,
                       "blocked_share_long": ropts.blocked_share_long},
        "source": "histograms",
    }


def _key_text(keys: tuple) -> str:
    return f"[{', '.join(str(k) for k in keys)}]" if keys else ""


def histogram_rows(histograms: list) -> list:
    """Per histogram: name, keys, unit, kind (and whether the kind was assumed from the
    name), buckets, the estimates and the shape."""
    rows = []
    for h in histograms:
        est = estimate(h)
        rows.append({"name": h.name, "keys": [str(k) for k in h.keys], "unit": h.unit,
                     "kind": h.kind, "buckets": [list(b) for b in h.buckets],
                     **est, "shape": shape(h.buckets, h.unit, est.get("p99_us"))})
    return rows


def report_data(profile, ropts: ReportOptions) -> dict:
    """The report of a histogram-only input (no sched events): the verdict, per kind the
    combined estimates and shape, and every histogram."""
    hists = profile.histograms
    if not hists:
        raise OffconvError("report: the input has no sched_switch events and no histograms; "
                           "record them with perf record -e sched:sched_switch -e "
                           "sched:sched_wakeup -g -a")
    kinds = by_kind(hists)
    latency = {}
    shapes = {}
    for k, hs in kinds.items():
        if hs:
            comb = Histogram(k, (), "us", _combined(hs, "us"), k)
            latency[k] = estimate(comb)
            shapes[k] = shape(comb.buckets, "us", latency[k].get("p99_us"))
    return {
        "source": "histograms",
        "verdict": histogram_verdict(hists, ropts),
        "latency": latency,
        "shape": shapes,
        "histograms": histogram_rows(hists),
        "kind_assumed": {h.name + _key_text(h.keys): h.kind or "unknown" for h in hists},
    }
