"""The text report, for people: the verdict first, then totals, the per-thread table,
latency percentiles, blocked time by cause, top stacks per kind and per process, and
what was dropped. Durations in the unit that reads best; columns aligned."""
from __future__ import annotations

import re
from typing import Optional, TextIO

from offconv.analysis.summary import report_data
from offconv.model.formats import OutputFormat
from offconv.model.labels import BIDI_CONTROLS
from offconv.model.records import CLOCK_EVENTS, ONCPU
from offconv.model.units import human_us, plural
from offconv.analysis.verdict import left_out_text, scope_text

MAX_THREADS = 20
_NOT_LATENCY = {"poll/idle": "waiting for work, not latency",
                "child": "waiting for child processes: their time is counted on them",
                "peer-cpu": "another thread's CPU work: counted on that thread"}
STACK_FRAMES = 6
# what a terminal acts on or reorders, in a name: C0 and C1 controls (newline, carriage
# return, ESC sequences...), DEL, the line and paragraph separators and the bidi controls
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")


def inert(text: str) -> str:
    """``text`` as the report prints it: each of _UNSAFE as ``\\xNN`` or ``\\uNNNN``, so a
    name cannot end, rewrite or reorder a line of it (the JSON report keeps names exactly)."""
    return _UNSAFE.sub(_escaped, text)


def _escaped(m) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def _inert_data(x):
    """report_data's dict with every string (keys too) through ``inert``; a new one (the data
    are cached on the profile). ThreadRows are left as they are: _table escapes their cells."""
    if x.__class__ is str:
        return inert(x)
    if isinstance(x, dict):
        return {_inert_data(k): _inert_data(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_inert_data(v) for v in x]
    return x


def _table(rows: list, out: TextIO, indent: str = "  ") -> None:
    """Rows of cells; the first row is the header. Text columns left, numbers right."""
    rows = [[inert(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = [i > 0 and all(_numeric(r[i]) for r in rows[1:]) for i in range(len(widths))]
    for r in rows:
        cells = [c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.write(indent + "  ".join(cells).rstrip() + "\n")


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell == "-")


def _short(stack: str) -> str:
    """thread;...;the leaf-most frames (the full stacks are in --json and the folded output)."""
    frames = stack.split(";")
    if len(frames) <= STACK_FRAMES + 1:
        return stack
    return ";".join([frames[0], "…"] + frames[-STACK_FRAMES:])


def render(profile, out: TextIO, opts=None) -> None:
    d = _inert_data(report_data(profile, opts))
    if d.get("source") == "histograms":
        render_histograms(d, out)
        return
    if d.get("source") == "stacks":
        render_stacks(d, out)
        return
    if d.get("source") == "histograms+stacks":
        render_histograms(d, out, notes=False)
        render_stacks(d, out, verdict=False)
        return
    if d.get("source") == "histograms+threads":   # offconv record's bpftrace backend
        _verdict(d["verdict"], out)
        render_histograms(d, out, notes=False, verdict=False)
        render_stacks(d, out, verdict=None)
        return
    _verdict(d["verdict"], out)
    _wall(d.get("wall") or [], out)
    _critical(d.get("critical_path") or [], out)
    w = out.write
    if d["per_process_recording"]:
        w("  NOTE: a `perf record -p` recording: durations need a system-wide recording.\n")
    t = d["totals"]
    w(f"\nTotals over {human_us(d['span_us'])} of trace, {plural(len(d['threads']), 'thread')}\n")
    _table([["off-CPU", "blocked", "run queue", "(preempted)", "on-CPU"],
            [human_us(t["offcpu_us"]), human_us(t["blocked_us"]), human_us(t["runq_us"]),
             human_us(t["runq_preempted_us"]), human_us(t["oncpu_us"])]], out)
    _threads(d["threads"], out)
    _latency(d["latency"], out)
    _shape(d.get("shape"), out)
    _causes(d["causes"], t["blocked_us"], out)
    _stacks(d, out)
    if d["dropped"]:
        w("\nDropped / inferred\n")
        _table([["reason", "count"]] + [[k, str(n)] for k, n in d["dropped"].items()], out)
    for msg in d["warnings"]:
        w(f"\nnote: {msg}\n")


def _wall(rows: list, out: TextIO) -> None:
    """Where the workload's wall time went, per thread (analysis.wall)."""
    if not rows:
        return
    from offconv.analysis.wall import bar, split_text
    out.write("\nWall time (# on CPU, . blocked, ~ waiting for a CPU)\n")
    for r in rows:
        out.write(f"  {bar(r)} {human_us(r['wall_us']):>8}  {split_text(r)}\n")


def _critical(paths: list, out: TextIO) -> None:
    """Where the wait went: each thread's wake-up critical path (analysis.critical_path)."""
    w = out.write
    for p in paths:
        w(f"\nWhere the wait went: {p['comm']} (tid {p['tid']}), {human_us(p['wall_us'])} traced, "
          f"{p['blocked_share']:.0%} blocked (wake-up critical path; shares of its traced time)\n")
        for c in p["chains"]:
            w(f"  {c['share']:>6.1%}  {c['text']}\n")
        if p["unattributed_us"]:
            w(f"  (unattributed: {human_us(p['unattributed_us'])}: wakers not seen, queued wake-ups, "
              "the depth limit)\n")
        if p.get("cut_at_ns") is not None:
            w("  (the path covers the trace up to its first million intervals)\n")


def _threads(threads: list, out: TextIO) -> None:
    out.write(f"\nThreads (by off-CPU time{', top %d' % MAX_THREADS if len(threads) > MAX_THREADS else ''})\n")
    rows = [["thread", "pid", "tid", "off-CPU", "blocked", "run queue", "preempted", "on-CPU",
             "switches", "inferred", "no wakeup"]]
    for r in threads[:MAX_THREADS]:
        rows.append([r["comm"], "-" if r["pid"] is None else str(r["pid"]), str(r["tid"]),
                     human_us(r["offcpu_us"]), human_us(r["blocked_us"]), human_us(r["runq_us"]),
                     human_us(r["runq_preempted_us"]), human_us(r["oncpu_us"]),
                     str(r["switches"]), str(r["inferred_switch_in"]), str(r["no_wakeup"])])
    _table(rows, out)
    if threads and all(r["pid"] is None for r in threads):
        out.write("  (pid -: the input carries thread ids only, as perf script's default fields "
                  "do; perf script -F comm,pid,tid,cpu,time,event,trace,ip,sym,dso gives pids)\n")


def _latency(lat: dict, out: TextIO) -> None:
    out.write("\nLatency (exact, nearest rank)\n")
    rows = [["kind", "count", "p50", "p90", "p99", "max"]]
    for kind, name in (("blocked", "blocked"), ("runq", "run queue")):
        s = lat[kind]
        rows.append([name, "-" if s["count"] is None else str(s["count"])]
                    + [human_us(s[k]) for k in ("p50_us", "p90_us", "p99_us", "max_us")])
    _table(rows, out)


def _causes(causes: list, blocked_us: int, out: TextIO) -> None:
    if not causes:
        return
    out.write("\nBlocked time by cause (from the kernel stack at switch-out)\n")
    rows = [["cause", "time", "share", ""]]
    for c in causes:
        share = f"{c['blocked_us'] / blocked_us:.0%}" if blocked_us else "-"
        rows.append([c["cause"], human_us(c["blocked_us"]), share,
                     _NOT_LATENCY.get(c["cause"], "") if c["idle"] else ""])
    _table(rows, out)


def _stacks(d: dict, out: TextIO) -> None:
    for kind, title in (("blocked", "Top blocked stacks"), ("runq", "Top run-queue stacks")):
        items = [s for s in d["top_stacks"] if s["kind"] == kind]
        if items:
            out.write(f"\n{title}\n")
            _table([[human_us(s["us"]), _short(s["stack"])] for s in items], out)
    if d["top_by_process"]:
        out.write("\nTop off-CPU stacks per process\n")
        for p in d["top_by_process"]:
            out.write(f"  {p['process']}: {human_us(p['offcpu_us'])}\n")
            _table([[human_us(s["us"]), _short(s["stack"])] for s in p["stacks"]], out,
                   indent="    ")


def _shape(shapes, out: TextIO) -> None:
    """One line per kind: the shape reading (offconv.sched.histograms.shape)."""
    if not shapes:
        return
    out.write("\nShape\n")
    for kind, name in (("blocked", "blocked"), ("runq", "run queue")):
        if kind in shapes:
            out.write(f"  {name}: {shapes[kind]['text']}\n")


def _verdict(v: dict, out: TextIO) -> None:
    """The verdict of offconv.analysis.verdict: answer, reason, scope and thresholds."""
    w = out.write
    w(f"Verdict: {v['answer'] or 'none'}{' (uncertain)' if v['uncertain'] else ''}\n  {v['reason']}\n")
    if v.get("wall_split"):
        w(f"  ({v['wall_split']})\n")
    th = v["thresholds"]
    w(f"  ({scope_text(v)})\n")
    w(f"  (long = run-queue behind other tasks >= {th['runq_share_long']:.0%} of the workload's "
      f"(or one program's) wall time, or p99 >= {human_us(th['runq_p99_long_us'])}; blocked >= "
      f"{th['blocked_share_long']:.0%} or p99 >= {human_us(th['blocked_p99_long_us'])}"
      f"{'' if v['idle_waits_counted'] else '; idle, timed and child waits excluded'})\n")


def render_histograms(d: dict, out: TextIO, notes: bool = True, verdict: bool = True) -> None:
    """The report of a histogram-only input (bpftrace, bcc): the verdict, estimates from
    bucket bounds per kind, the shape, and each histogram with the kind assumed."""
    v = d["verdict"]
    w = out.write
    if verdict:
        w(f"Verdict: {v['answer'] or 'none'}\n  {v['reason']}\n")
        th = v["thresholds"]
        w(f"  (long = p99 >= {human_us(th['runq_p99_long_us'])} run queue, >= "
          f"{human_us(th['blocked_p99_long_us'])} blocked)\n")
    if d["latency"]:
        w("\nLatency (bucket-resolution estimates: the upper bound of the bucket)\n")
        rows = [["kind", "count", "p50", "p90", "p99", "max", "total"]]
        for kind, name in (("blocked", "blocked"), ("runq", "run queue")):
            s = d["latency"].get(kind)
            if s:
                rows.append([name, str(s["count"])] + [
                    "<= " + human_us(s[k]) if k in s else "-"
                    for k in ("p50_us", "p90_us", "p99_us", "max_us")]
                    + ["~" + human_us(s["total_us"]) if "total_us" in s else "-"])
        _table(rows, out)
    _shape(d.get("shape"), out)
    w("\nHistograms\n")
    rows = [["histogram", "unit", "kind", "count", "p99", "shape"]]
    for h in d["histograms"]:
        keys = f"[{', '.join(h['keys'])}]" if h["keys"] else ""
        kind = h["kind"] or "unknown"
        rows.append([f"@{h['name']}{keys}", h["unit"] or "-", kind, str(h["count"]),
                     "<= " + human_us(h["p99_us"]) if "p99_us" in h else "-",
                     h["shape"]["text"]])
    _table(rows, out)
    w("  (kind assumed from the histogram name or the bcc banner: runq/rq -> run queue, "
      "block/off/sleep -> blocked; --kind blocked|runq states it)\n")
    for msg in d.get("warnings", ()) if notes else ():
        w(f"\nnote: {msg}\n")


def render_stacks(d: dict, out: TextIO, verdict: Optional[bool] = True) -> None:
    """The report of a stack-only input (offconv.analysis.sample_report): the verdict (False: the
    stacks' own, after another; None: none), what the weights measure, per-thread totals,
    time by cause, wakers and top stacks."""
    v, w = d.get("stacks_verdict", d["verdict"]), out.write
    if verdict:
        w(f"Verdict: {v['answer'] or 'none'}{' (uncertain)' if v['uncertain'] else ''}\n  {v['reason']}\n")
    if v.get("wall_split"):
        w(f"  ({v['wall_split']})\n")
    elif verdict is False:
        w(f"\nFrom the stacks: {v['answer']}{' (uncertain)' if v['uncertain'] else ''}\n"
          f"  {v['reason']}\n")
    if verdict is not None and (v["workload"] or v["left_out"]):
        work = ", ".join(f"{x['comm']} ({plural(x['threads'], 'thread')})" for x in v["workload"][:6])
        left = left_out_text(v["left_out"])
        w(f"  (workload: {work or 'none'}{'; left out: ' + left if left else ''})\n")
    wt, t = d["weights"], d["totals"]
    if wt["unit"] == "samples" or wt["measures"] == ONCPU:   # (sample_report._oncpu_report)
        what = ("Weights in samples (the file does not say their unit)" if v["uncertain"]
                else "On-CPU profile")
        event = (wt.get("event") or "").split(":", 1)[0]
        if wt["unit"] != "samples":   # on-CPU samples as time (--mode wallclock, no sched events)
            weight = f"on-CPU time in {wt['unit']}, {wt['samples']} in all"
        elif event:  # perf printed periods: the weights sum them, as stackcollapse-perf.pl does
            if event in CLOCK_EVENTS:
                weight = (f"samples weighted by their {event} period in ns, {wt['samples']} in "
                          f"all ({human_us(wt['samples'] / 1000)} on CPU)")
            else:
                weight = f"samples weighted by their {event} period, {wt['samples']} in all"
        else:
            weight = f"{wt['samples']} samples"
        w(f"\n{what}: {weight}; {plural(len(d['threads']), 'thread')}; "
          "no off-CPU, run-queue or blocked time measured\n")
        rows = [["thread", "pid", "tid", event or wt["unit"], "share"]]
        for r in d["threads"][:MAX_THREADS]:
            rows.append([r["comm"], _id(r["pid"]), _id(r["tid"]), str(r["samples"]),
                         f"{r['share']:.1%}"])
        _table(rows, out)
        _stack_rows(d, out, lambda s: f"{s['samples']}")
        for msg in d["warnings"]:
            w(f"\nnote: {msg}\n")
        return
    w(f"\nWeights: {wt['what']}, in {wt['unit']} "
      "(summed per stack: no single intervals, no percentiles)\n")
    w(f"\nTotals, {plural(len(d['threads']), 'thread')}\n")
    total = t["offcpu_us"] if t["offcpu_us"] is not None else (
        t["blocked_us"] if t["blocked_us"] is not None else t["runq_us"])
    _table([["off-CPU", "blocked", "run queue", "(preemption stacks)", "on-CPU"],
            [human_us(t["offcpu_us"]), human_us(t["blocked_us"]), human_us(t["runq_us"]),
             human_us(t["preempted_stacks_us"]), human_us(t["oncpu_us"])]], out)
    if None in (t["offcpu_us"], t["blocked_us"], t["runq_us"], t["oncpu_us"]):
        w("  (-: not measured by a stack-only input)\n")
    w(f"\nThreads (by off-CPU time{', top %d' % MAX_THREADS if len(d['threads']) > MAX_THREADS else ''})\n")
    if any(r.get("oncpu_us") is not None for r in d["threads"]):   # per-thread sums too
        rows = [["thread", "pid", "tid", "on-CPU", "run queue", "blocked", "latency waits",
                 "top cause"]]
        for r in d["threads"][:MAX_THREADS]:
            rows.append([r["comm"], _id(r["pid"]), _id(r["tid"]), human_us(r["oncpu_us"]),
                         human_us(r["runq_us"]), human_us(r["blocked_us"]),
                         human_us(r["latency_us"]), next(iter(r["by_cause_us"]), "-")])
        _table(rows, out)
        rows = None
    else:
        rows = [["thread", "pid", "tid", "time", "latency waits", "preemption", "top cause"]]
    for r in d["threads"][:MAX_THREADS] if rows is not None else ():
        time_us = next(r[k] for k in ("offcpu_us", "blocked_us", "runq_us") if r[k] is not None)
        top = next(iter(r["by_cause_us"]), "-")
        rows.append([r["comm"], _id(r["pid"]), _id(r["tid"]), human_us(time_us),
                     human_us(r["latency_us"]), human_us(r["preempted_stacks_us"]), top])
    if rows is not None:
        _table(rows, out)
    if d["causes"]:
        w("\nOff-CPU time by cause (from the kernel frames of each stack)\n")
        rows = [["cause", "time", "share", ""]]
        for c in d["causes"]:
            rows.append([c["cause"], human_us(c["offcpu_us"]),
                         f"{c['offcpu_us'] / total:.0%}" if total else "-",
                         "waiting for work, not latency" if c["idle"] else ""])
        _table(rows, out)
    if d["wakers"]:
        w("\nWakers (the waker's comm, offwaketime)\n")
        _table([["waker", "time"]] + [[x["comm"], human_us(x["us"])] for x in d["wakers"]], out)
    _stack_rows(d, out, lambda s: human_us(s["us"]))
    for msg in list(d.get("notes", ())) + list(d["warnings"]):
        w(f"\nnote: {msg}\n")


def _id(x) -> str:
    return "-" if x is None else str(x)


def _stack_rows(d: dict, out: TextIO, value) -> None:
    if d["top_stacks"]:
        out.write("\nTop stacks\n")
        _table([[value(s), _short(s["stack"])] for s in d["top_stacks"]], out)


FORMAT = OutputFormat(name="report", suffixes=(), render=render, analysis=True, by_name=True,
                      own_warnings=True,
                      description="text report: verdict, per-thread table, causes, top stacks")
