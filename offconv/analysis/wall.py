"""Where each thread's wall time went: on CPU, blocked (by its main cause), waiting for a
CPU -- the three kinds that add up to its time in the trace. In a --mode wallclock report
also its on-CPU time by its samples, and their error against the sched events' on-CPU
time. May import offconv.model and the rest of offconv.analysis."""
from __future__ import annotations

from offconv.analysis.verdict import CAUSE_TEXT
from offconv.model.units import human_us, ns_to_us

WALL_ROWS = 8        # threads the report splits, the workload's first, most wall time first
BAR = 30             # characters of the text report's bar


def rows(an, tids, first=None) -> list:
    """The wall-time split of the threads ``tids`` (each once): ``first`` (the verdict's
    thread) first, then the others, most wall time first."""
    out, seen = [], set()
    ts = sorted((an.threads[t] for t in tids if t in an.threads), key=lambda t: (-t.wall_ns, t.tid))
    if first in an.threads:
        ts.insert(0, an.threads[first])
    for t in ts:
        if t.tid in seen or not t.wall_ns:
            continue
        seen.add(t.tid)
        out.append(row(an, t))
        if len(out) >= WALL_ROWS:
            break
    return out


def row(an, t) -> dict:
    wall = t.wall_ns
    causes = sorted(t.by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
    r = {"tid": t.tid, "comm": t.comm, "wall_us": ns_to_us(wall),
         "oncpu_us": ns_to_us(t.oncpu_ns), "blocked_us": ns_to_us(t.blocked_ns),
         "runq_us": ns_to_us(t.runq_ns),
         "oncpu_share": round(t.oncpu_ns / wall, 4), "blocked_share": round(t.blocked_ns / wall, 4),
         "runq_share": round(t.runq_ns / wall, 4),
         "top_cause": ({"cause": causes[0][0][0], "label": causes[0][0][1],
                        "share": round(causes[0][1] / wall, 4)} if causes else None)}
    if an.sampled:
        s = an.sampled.get(t.tid, 0)
        r["sampled_oncpu_us"] = ns_to_us(s)
        r["sampling_error_us"] = ns_to_us(s - t.oncpu_ns) if s >= t.oncpu_ns else -ns_to_us(t.oncpu_ns - s)
    return r


def split_text(r: dict) -> str:
    """``main: 17% on CPU, 81% blocked (lock waits 74%), 2% waiting for a CPU``."""
    blocked = f"{r['blocked_share']:.0%} blocked"
    c = r["top_cause"]
    if c and c["share"] >= 0.01:
        blocked += f" ({CAUSE_TEXT.get(c['cause'], c['cause'])} {c['share']:.0%})"
    text = (f"{r['comm']} (tid {r['tid']}): {r['oncpu_share']:.0%} on CPU, {blocked}, "
            f"{r['runq_share']:.0%} waiting for a CPU")
    if "sampled_oncpu_us" in r:
        text += (f"; on CPU by its samples {human_us(r['sampled_oncpu_us'])} (sampling error "
                 f"{'+' if r['sampling_error_us'] >= 0 else '-'}{human_us(abs(r['sampling_error_us']))})")
    return text


def bar(r: dict) -> str:
    """``[####.........~~]``: on CPU '#', blocked '.', run queue '~', BAR characters."""
    on = round(r["oncpu_share"] * BAR)
    rq = round(r["runq_share"] * BAR)
    on = min(on, BAR)
    rq = min(rq, BAR - on)
    return "[" + "#" * on + "." * (BAR - on - rq) + "~" * rq + "]"
