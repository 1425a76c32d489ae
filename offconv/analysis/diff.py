"""Two Profiles -> one differential Profile, the diff report data, and the CI check.

``compare(before, after, opts)`` matches stacks by their display names
(``offconv.model.naming.Namer``, the same names the folded output prints), so two recordings of
different formats meet on what the user sees. The differential Profile has
``before`` = BEFORE's weights and ``samples`` = AFTER's, keyed by stacks of frames whose
names are those display names (a frame's kind is kept from the first side that has it,
AFTER first, so the SVG still knows kernel frames and the state-split towers).

- ``strip_hex`` (difffolded.pl / inferno-diff-folded ``-s``): ``0x[0-9a-fA-F]+`` becomes
  ``0x...`` (difffolded.pl's rule) and so does a bare run of 8 or more hex digits holding
  at least one decimal digit (perf's ``[unknown]`` addresses, ``memfd:...-91173221a7ea``),
  before matching.
- ``normalize`` (``-n``): BEFORE's weights are scaled by AFTER's total over BEFORE's;
  like difffolded.pl each scaled weight is truncated to an integer when every input
  weight is one (fractional inputs stay fractional).

The report (``report(...)``) compares totals per kind and per cause and the latency
percentiles of each side's ``analysis.report_data`` when both sides have sched events,
the stacks that grew and shrank most, and each side's verdict. ``check(...)`` is
``--fail-above``: what grew by more than the limit, as a one-line message.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from offconv.sched.causes import classify
from offconv.model.errors import OffconvError
from offconv.model.records import Frame, Profile
from offconv.model.naming import Namer
from offconv.model.options import CAUSES, NamingOptions, ReportOptions


_HEX = re.compile(r"0x[0-9a-fA-F]+|\b(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{8,}\b")


def strip_hex(name: str) -> str:
    return _HEX.sub("0x...", name)


def _matched(profile_samples: dict, namer: Namer, hexed: bool, frames: dict,
             reps: dict) -> dict:
    """stack of frames -> weight  =>  tuple of display names -> summed weight; records,
    per display name, the frame that stands for it (first seen wins) and, per display
    stack, the first original stack (for classifying it into a cause)."""
    out: dict = {}
    for stack, w in profile_samples.items():
        names = namer.stack(stack)
        if hexed:
            names = tuple(strip_hex(n) for n in names)
        out[names] = out.get(names, 0) + w
        if names not in reps:
            reps[names] = stack
        for f, n in zip(stack, names):
            if n not in frames:
                frames[n] = Frame(n, f.module, f.kind, None)
    return out


def _all_int(values) -> bool:
    return all(float(v).is_integer() for v in values)


@dataclass
class Diff:
    """The differential profile and what the report needs of the two sides."""

    profile: Profile          # before = BEFORE (normalized if asked), samples = AFTER
    before: Profile
    after: Profile
    scale: float              # the factor BEFORE was multiplied by (1.0 without -n)
    normalized: bool
    stripped: bool
    rows: dict                # display stack (tuple of names) -> (before, after)
    reps: dict                # display stack -> an original stack of frames
    # BEFORE's and AFTER's totals as read (before -n's scaling and its truncation)
    totals: tuple = (0, 0)


def unit_mismatch(before: Profile, after: Profile, formats: tuple = (None, None)) -> str:
    """Why two sides' weights cannot be compared, and the option that fixes it: a folded
    side read as samples against one in a time unit wants ``--unit`` (offconv writes
    off-CPU folded stacks in µs, so a baseline made by ``offconv X > base.folded`` reads
    back as samples unless told); otherwise (an on-CPU recording against an off-CPU one)
    ``--mode``. ``formats``: the input format names of BEFORE and AFTER, where known."""
    units = (before.unit, after.unit)
    msg = (f"diff: BEFORE's weights are in {before.unit}, AFTER's in {after.unit}: they "
           "cannot be compared")
    for i, side in enumerate(("BEFORE", "AFTER")):
        other = units[1 - i]
        if formats[i] == "folded" and units[i] == "samples" and other != "samples":
            return (f"{msg} ({side} is folded input: give --unit {other}, the unit offconv "
                    f"writes off-CPU folded stacks in)" if other == "us" else
                    f"{msg} ({side} is folded input: give --unit {other})")
    return f"{msg} (an on-CPU profile against off-CPU time: give --mode to read both alike)"


def compare(before: Profile, after: Profile, naming: Optional[NamingOptions] = None,
            normalize: bool = False, hexed: bool = False,
            formats: tuple = (None, None)) -> Diff:
    if before.unit != after.unit:
        raise OffconvError(unit_mismatch(before, after, formats))
    namer = Namer(naming or NamingOptions())
    frames: dict = {}
    reps: dict = {}
    a = _matched(after.samples, namer, hexed, frames, reps)
    b = _matched(before.samples, namer, hexed, frames, reps)
    tb, ta = sum(b.values()), sum(a.values())
    scale = 1.0
    if normalize and tb and tb != ta:
        scale = ta / tb
        ints = _all_int(b.values()) and _all_int(a.values())
        b = {k: (int(v * ta / tb) if ints else v * ta / tb) for k, v in b.items()}
    rows = {k: (b.get(k, 0), a.get(k, 0)) for k in sorted(set(a) | set(b))}

    def key(names):
        return tuple(frames[n] for n in names)

    prof = Profile(unit=after.unit, mode=after.mode)
    prof.samples = {key(k): v for k, (_, v) in rows.items() if v}
    prof.before = {key(k): v for k, (v, _) in rows.items() if v}
    for k, (vb, va) in rows.items():  # a stack in neither (both 0) still prints
        if not va and not vb:
            prof.samples[key(k)] = 0
    return Diff(prof, before, after, scale, normalize, hexed, rows, reps, (tb, ta))


# -- the report -------------------------------------------------------------------------

def _pct(b, a) -> Optional[float]:
    """Growth of a over b in percent, one decimal; None when b is 0 and a is not."""
    if b is None or a is None:
        return None
    if not b:
        return 0.0 if not a else None
    return round((a - b) * 100.0 / b, 1)


def _num(v):
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, float):
        return round(v, 3)
    return v


class _Pair(dict):
    """A before/after pair as the report prints it (values rounded for reading), which
    also keeps the values it was made of (``exact``) for ``check`` to compare."""

    __slots__ = ("exact",)


def _pair(b, a) -> dict:
    d = None if b is None or a is None else a - b
    out = _Pair(before=_num(b), after=_num(a), delta=_num(d), delta_pct=_pct(b, a))
    out.exact = (b, a)
    return out


def _side_report(profile: Profile, opts):
    from offconv.analysis.summary import report_data
    if profile.analysis is None and not profile.thread_times:
        return None   # (offconv record's bpftrace sums have a report, and a verdict)
    return report_data(profile, opts)


def _side_latency(profile: Profile, data) -> Optional[dict]:
    """{kind: {p50_us, p90_us, p99_us}} of one side: exact (nearest rank over the
    intervals) when it has sched events, else estimated from its latency histograms
    (``Histogram.kind`` blocked / runq: the upper bound of the bucket holding the rank,
    i.e. "at most"), else None."""
    if data is not None:
        return data["latency"]
    from offconv.model.records import BLOCKED, RUNQ, TIME_UNITS
    out = {}
    for h in profile.histograms:
        if h.kind not in (BLOCKED, RUNQ) or h.unit not in TIME_UNITS or h.kind in out:
            continue
        out[h.kind] = histogram_percentiles(h.buckets, TIME_UNITS[h.unit] / 1000)
    return out or None


def histogram_percentiles(buckets, us_per_unit: float) -> dict:
    """p50/p90/p99 (µs) of (lo, hi, count) buckets: the upper bound of the bucket holding
    the nearest rank (the lower bound for an overflow bucket ``[x, ...)``)."""
    n = sum(c for _, _, c in buckets)
    out = {}
    for p in (50, 90, 99):
        if not n:
            out[f"p{p}_us"] = None
            continue
        rank, seen = max(1, -(-p * n // 100)), 0
        for lo, hi, c in buckets:
            seen += c
            if seen >= rank:
                bound = hi if hi is not None else lo
                out[f"p{p}_us"] = _num(round(bound * us_per_unit, 3))
                break
    return out


def _verdict(profile: Profile, data, ropts: ReportOptions):
    if data is None:
        return None
    v = data["verdict"]
    c = v.get("cause")
    cause = c["cause"] if (c and v["answer"] in ("waiting", "both")) else None
    short = (v["answer"] or "none") + (f" ({cause})" if cause else "")
    return {"answer": v["answer"], "cause": cause, "short": short, "reason": v["reason"]}


def report(diff: Diff, opts=None, paths: tuple = ("", ""), top: int = 10) -> dict:
    """The diff report as plain data (deterministic key order)."""
    ropts = getattr(opts, "report", None) or ReportOptions()
    s = diff.scale
    db, da = _side_report(diff.before, opts), _side_report(diff.after, opts)
    tb = sum(v for v, _ in diff.rows.values())
    ta = sum(v for _, v in diff.rows.values())
    if diff.normalized and diff.totals[0]:
        # -n: BEFORE's total is AFTER's by construction (the rows' sum can fall short of
        # it by the truncation of each scaled count, which is no change)
        tb = ta
    totals = {"total": _pair(tb, ta)}
    causes = []
    latency = None
    if db is not None and da is not None:
        for k in ("blocked", "runq"):
            b, a = db["totals"][k + "_us"], da["totals"][k + "_us"]
            totals[k] = _pair(None if b is None else b * s, a)
        cb = {c["cause"]: c["blocked_us"] * s for c in db["causes"]}
        ca = {c["cause"]: c["blocked_us"] for c in da["causes"]}
        for c in sorted(set(cb) | set(ca), key=lambda c: (-(ca.get(c, 0)), c)):
            causes.append({"cause": c, **_pair(cb.get(c, 0), ca.get(c, 0))})
    lb, la = _side_latency(diff.before, db), _side_latency(diff.after, da)
    if lb is not None and la is not None:
        latency = {kind: {p: _pair(lb.get(kind, {}).get(p), la.get(kind, {}).get(p))
                          for p in ("p50_us", "p90_us", "p99_us")}
                   for kind in ("blocked", "runq")}
    deltas = [(";".join(k), b, a, a - b) for k, (b, a) in diff.rows.items() if a != b]
    grew = sorted((r for r in deltas if r[3] > 0), key=lambda r: (-r[3], r[0]))[:top]
    shrank = sorted((r for r in deltas if r[3] < 0), key=lambda r: (r[3], r[0]))[:top]
    vb, va = _verdict(diff.before, db, ropts), _verdict(diff.after, da, ropts)
    return {
        "before": {"path": paths[0], "verdict": vb},
        "after": {"path": paths[1], "verdict": va},
        "unit": diff.profile.unit,
        "mode": diff.profile.mode,
        "normalized": diff.normalized,
        "before_scale": round(s, 6),
        "strip_hex": diff.stripped,
        "totals": totals,
        "causes": causes,
        "latency": latency,
        "grew": [{"stack": k, **_pair(b, a)} for k, b, a, _ in grew],
        "shrank": [{"stack": k, **_pair(b, a)} for k, b, a, _ in shrank],
        "verdict": (f"before: {vb['short']}; after: {va['short']}" if vb and va else None),
    }


# -- --fail-above -----------------------------------------------------------------------

def _measure(data: dict, what: str) -> list:
    """[(label, pair dict)] compared for one --fail-on value."""
    if what == "total":
        return [("total " + ("off-CPU" if data["mode"] != "oncpu" else "weight"),
                 data["totals"]["total"])]
    need = data["latency"] is None if what == "p99" else "blocked" not in data["totals"]
    if need:
        raise OffconvError(f"diff: --fail-on {what}: needs sched events (perf sched_switch "
                           "recordings) on both sides" + ("" if what != "p99" else
                                                          ", or latency histograms"))
    if what in ("blocked", "runq"):
        return [(("blocked" if what == "blocked" else "run-queue") + " time",
                 data["totals"][what])]
    if what == "p99":
        return [("blocked p99", data["latency"]["blocked"]["p99_us"]),
                ("run-queue p99", data["latency"]["runq"]["p99_us"])]
    for c in data["causes"]:
        if c["cause"] == what:
            return [(f"{what} wait", c)]
    return [(f"{what} wait", _pair(0, 0))]


def _grew_most(diff: Diff, what: str) -> Optional[tuple]:
    """(stack text, delta) of the stack that grew most among those ``what`` is about."""
    best = None
    for k, (b, a) in diff.rows.items():
        d = a - b
        if d <= 0:
            continue
        if what in CAUSES and classify(diff.reps[k])[0] != what:
            continue
        if what == "runq" and not any(n in ("[run queue]", "[preempted]") for n in k):
            if any(n.startswith("[blocked ") for n in k):
                continue
        if what == "blocked" and any(n in ("[run queue]", "[preempted]") for n in k):
            continue
        if best is None or d > best[1]:
            best = (";".join(k), d)
    return best


def _shown_pct(exact: float, limit: float, failed: bool) -> float:
    """``exact`` rounded to one decimal, or to as many more as it takes for the rounded
    value to fall on the same side of ``limit`` as the exact one (10.04% above a limit of
    10 reads +10.04%, not +10.0%; 45.354% under 45.36 reads 45.35%, not 45.4%)."""
    for digits in range(1, 16):
        shown = round(exact, digits)
        if (shown > limit) == failed:
            return shown
    return exact


def _not_measured(diff: Diff, data: dict, p: dict) -> str:
    """Why a check was not compared: the side(s) whose recording cannot measure it."""
    why = []
    for side, prof, v in (("BEFORE", diff.before, p["before"]), ("AFTER", diff.after, p["after"])):
        if v is not None:
            continue
        path = data[side.lower()]["path"]
        what = f"{side} ({path})" if path else side
        if getattr(prof.analysis, "per_process", False):
            what += (" is a `perf record -p` recording, which cannot measure run-queue or "
                     "on-CPU time")
        else:
            what += " does not measure it"
        why.append(what)
    return "; ".join(why)


def check(diff: Diff, data: dict, fail_above: float, fail_on: tuple, fmt) -> list:
    """The checks of --fail-above PCT for each --fail-on value: [dict], and with each the
    one-line message when it failed. ``fmt`` formats a value of the profile's unit.
    Growth is the exact ratio of the values compared (not the rounded percentage the
    report prints); a quantity one side cannot measure (None) is not compared, and the
    check says why (``not_compared``)."""
    out = []
    for what in fail_on or ("total",):
        for label, p in _measure(data, what):
            b, a = getattr(p, "exact", None) or (p["before"], p["after"])
            if b is None or a is None:
                out.append({"on": what, "what": label, "failed": False, "delta_pct": None,
                            "not_compared": _not_measured(diff, data, p), "message": None})
                continue
            exact = (a - b) * 100.0 / b if b else None
            failed = (a > b) and (exact is None or exact > fail_above)
            pct = p["delta_pct"]
            if exact is not None and a > b:
                pct = _shown_pct(exact, fail_above, failed)
            msg = None
            if failed:
                grew = "from 0" if pct is None else f"+{pct}%"
                is_time = label.endswith("p99") or diff.profile.unit == "us" or what != "total"
                f = fmt if is_time else (lambda v: f"{_num(v)} {diff.profile.unit}")
                msg = (f"diff: {label} grew {grew} ({f(p['before'])} -> {f(p['after'])}, "
                       f"+{f(p['delta'])}), above "
                       f"--fail-above {_num(fail_above)}%")
                where = _grew_most(diff, what) if not label.endswith("p99") else None
                if where is not None:
                    msg += f"; grew most: {where[0]} (+{f(where[1])})"
            out.append({"on": what, "what": label, "before": p["before"], "after": p["after"],
                        "delta_pct": pct,
                        "failed": failed, "message": msg})
    return out
