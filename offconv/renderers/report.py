"""The text report, for people: the verdict first, then totals, the per-thread table,
latency percentiles, blocked time by cause, top stacks per kind and per process, and
what was dropped. Durations in the unit that reads best; columns aligned."""
from __future__ import annotations

from typing import TextIO

from ..analysis import report_data
from ..format_types import OutputFormat
from ..units import human_us, plural

MAX_THREADS = 20
STACK_FRAMES = 6


def _table(rows: list, out: TextIO, indent: str = "  ") -> None:
    """Rows of cells; the first row is the header. Text columns left, numbers right."""
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
    d = report_data(profile, opts)
    v = d["verdict"]
    w = out.write
    w(f"Verdict: {v['answer']}\n  {v['reason']}\n")
    th = v["thresholds"]
    w(f"  (long = run-queue p99 >= {human_us(th['runq_p99_long_us'])} or >= "
      f"{th['runq_share_long']:.0%} of a thread's wall time; blocked p99 >= "
      f"{human_us(th['blocked_p99_long_us'])} or >= {th['blocked_share_long']:.0%}; "
      f"{len(v['threads_considered'])} threads considered"
      f"{'' if v['idle_waits_counted'] else ', idle and child waits excluded'})\n")
    if d["per_process_recording"]:
        w("  NOTE: a `perf record -p` recording: durations need a system-wide recording.\n")
    t = d["totals"]
    w(f"\nTotals over {human_us(d['span_us'])} of trace, {plural(len(d['threads']), 'thread')}\n")
    _table([["off-CPU", "blocked", "run queue", "(preempted)", "on-CPU"],
            [human_us(t["offcpu_us"]), human_us(t["blocked_us"]), human_us(t["runq_us"]),
             human_us(t["runq_preempted_us"]), human_us(t["oncpu_us"])]], out)
    _threads(d["threads"], out)
    _latency(d["latency"], out)
    _causes(d["causes"], t["blocked_us"], out)
    _stacks(d, out)
    if d["dropped"]:
        w("\nDropped / inferred\n")
        _table([["reason", "count"]] + [[k, str(n)] for k, n in d["dropped"].items()], out)
    for msg in d["warnings"]:
        w(f"\nnote: {msg}\n")


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
        rows.append([name, str(s["count"])] + [human_us(s[k]) for k in ("p50_us", "p90_us", "p99_us", "max_us")])
    _table(rows, out)


def _causes(causes: list, blocked_us: int, out: TextIO) -> None:
    if not causes:
        return
    out.write("\nBlocked time by cause (from the kernel stack at switch-out)\n")
    rows = [["cause", "time", "share", ""]]
    for c in causes:
        share = f"{c['blocked_us'] / blocked_us:.0%}" if blocked_us else "-"
        rows.append([c["cause"], human_us(c["blocked_us"]), share,
                     "waiting for work, not latency" if c["idle"] else ""])
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


FORMAT = OutputFormat(name="report", suffixes=(), render=render, report=True,
                      description="text report: verdict, per-thread table, causes, top stacks")
