"""Where the wait went: the wake-up critical path (offconv.sched.critical) of the threads a
report is about, as report data -- per thread its chains with their shares of the
thread's wall time, the root each ends in, and the sentence that names the first hop and
the root. May import offconv.sched and offconv.model (and analysis.verdict's wording)."""
from __future__ import annotations

from typing import Optional

from offconv.analysis.verdict import CAUSE_TEXT, cause_text
from offconv.model.units import ns_to_us
from offconv.sched.causes import INTERRUPT_WAKER_NAME, TIMER_WAKER_NAME
from offconv.sched.critical import (ROOT_CYCLE, ROOT_DISK, ROOT_INTERRUPT, ROOT_KERNEL, ROOT_NOT_SEEN,
                                    ROOT_TIMER, UNATTRIBUTED, Lanes, Paths)

TOP_CHAINS = 6          # chains listed per thread (the rest summed as "other chains")
MIN_SHARE = 0.001       # chains under this share of the thread's time are summed
MIN_WALL_NS = 10_000_000  # a thread seen for less than this has no path worth telling

# what to change at a root (the chain's last hop is blocked and ends there)
ROOT_FIX = {ROOT_DISK: "its disk I/O: fewer or batched syncs (group commit), an async log, a faster device",
            ROOT_TIMER: "its timed wait: the sleep or timeout itself (shorten it, or wake on the event instead)",
            ROOT_INTERRUPT: "the device or network behind the interrupt",
            ROOT_KERNEL: "the kernel work it waits for",
            ROOT_CYCLE: "the threads that wait on each other"}


def _hop_json(h) -> dict:
    return {"tid": h.tid, "comm": h.comm, "state": h.what if h.what != "blocked" else h.state,
            "kind": h.what, "cause": list(h.cause) if h.cause else None,
            "frames": [f.name for f in h.stack], "root": h.root or None,
            "waker_inferred": h.inferred}


def hop_text(h) -> str:
    who = f"{h.comm} (tid {h.tid})"
    if h.what == "blocked":
        cause = CAUSE_TEXT.get(h.cause[0], h.cause[0]) if h.cause else "blocked"
        label = f", {h.cause[1]}" if h.cause and h.cause[1] else ""
        inferred = "; the waker inferred" if h.inferred else ""
        return f"{who} blocked ({h.state}{label}: {cause}{inferred})"
    if h.what == "on-CPU":
        return f"{who} on CPU"
    if h.what == "run queue":
        return f"{who} waiting for a CPU{' (preempted)' if h.state == 'R+' else ''}"
    return f"{who} not seen"


def chain_text(chain: tuple) -> str:
    parts = []
    for i, h in enumerate(chain):
        parts.append(("woken by " if i else "") + hop_text(h))
    last = chain[-1]
    if last.root and last.root != ROOT_NOT_SEEN:
        parts.append(last.root)
    return " → ".join(parts)


def _by_text(out: dict) -> dict:
    """Chains that read the same (the same threads, states, causes and root; other stacks)
    as one, under the first of them met."""
    by, first = {}, {}
    for chain, ns in out.items():
        t = chain_text(chain)
        c = first.setdefault(t, chain)
        by[c] = by.get(c, 0) + ns
    return by


def thread_path(paths: Paths, tid) -> Optional[dict]:
    """One thread's critical path as report data, or None when the trace shows too little
    of it (under MIN_WALL_NS of intervals). Kept in ``paths.memo``: the verdict and the
    report ask for the same threads."""
    if tid in paths.memo:
        return paths.memo[tid]
    p = paths.memo[tid] = _thread_path(paths, tid)
    return p


def _thread_path(paths: Paths, tid) -> Optional[dict]:
    lane = paths.lanes.lane(tid)
    if lane is None:
        return None
    out = _by_text(paths.of(tid))
    wall = sum(out.values())
    if wall < MIN_WALL_NS:
        return None
    ranked = sorted(out.items(), key=lambda kv: (-kv[1], repr(kv[0])))
    blocked = sum(ns for c, ns in out.items() if c[0].what == "blocked")
    unattributed = sum(ns for c, ns in out.items() if c[-1].root in UNATTRIBUTED)
    shown = [kv for kv in ranked[:TOP_CHAINS] if kv[1] >= wall * MIN_SHARE] or ranked[:1]
    chains = [{"share": round(ns / wall, 4), "us": ns_to_us(ns), "text": chain_text(c),
               "hops": [_hop_json(h) for h in c]} for c, ns in shown]
    rest = sum(ns for _, ns in ranked[len(shown):])
    if rest:
        chains.append({"share": round(rest / wall, 4), "us": ns_to_us(rest),
                       "text": f"{len(ranked) - len(shown)} other chains", "hops": []})
    return {"tid": tid, "comm": lane.task.comm, "wall_us": ns_to_us(wall),
            "blocked_share": round(blocked / wall, 4) if wall else 0.0,
            "unattributed_us": ns_to_us(unattributed), "chains": chains,
            "root": _root(ranked, wall)}


def _root(ranked: list, wall: int) -> Optional[dict]:
    """Where the thread's blocked time leaving it ends, summed by the name of the thread and
    the root it ends at (a lock handed on by other waiters ends at the same holder; three
    children run in turn are one): the heaviest such end, the root the verdict names, with
    the hops of its heaviest chain. None if under 5% of the thread's time leaves it."""
    ends: dict = {}
    for chain, ns in ranked:
        last = chain[-1]
        if chain[0].what != "blocked" or len(chain) < 2 or last.root in UNATTRIBUTED:
            continue
        key = (last.comm, last.what, last.root, last.cause)
        got = ends.get(key)
        if got:   # (ns, heaviest chain, the holders' tids)
            got[2].add(last.tid)
            ends[key] = (got[0] + ns, got[1], got[2])
        else:
            ends[key] = (ns, chain, {last.tid})
    if not ends:
        return None
    key, (ns, chain, holders) = max(ends.items(), key=lambda kv: (kv[1][0], repr(kv[0])))
    if ns / wall < 0.05:
        return None
    last = chain[-1]
    fix = ROOT_FIX.get(last.root) if last.what == "blocked" else (
        "its CPU work (profile it on CPU)" if last.what == "on-CPU" else
        "the CPU it waits for (it is runnable, not running)" if last.what == "run queue" else None)
    if (last.root == ROOT_TIMER and last.cause and last.cause[0] == "sleep"
            and chain[-2].cause and chain[-2].cause[0] == "lock"):
        fix = (f"its sleep while it holds the lock {chain[-2].comm} waits for (move the sleep "
               "out of the critical section, or shorten it)")
    return {"share": round(ns / wall, 4), "first_hop": chain[1].comm, "first_hop_tid": chain[1].tid,
            "holder": last.comm, "holder_tid": last.tid, "holder_state": last.what,
            "holder_tids": sorted(holders, key=lambda t: (t.__class__ is not int, t)),
            "root": last.root or last.what, "cause": list(last.cause) if last.cause else None,
            "via": [{"comm": h.comm, "tid": h.tid, "cause": list(h.cause) if h.cause else None}
                    for h in chain[1:-1]],
            "fix": fix, "text": chain_text(chain)}


def report(lanes: Optional[Lanes], tids, classify=None, paths: Optional[Paths] = None) -> list:
    """The critical paths of ``tids`` (each once, in order) as report data (``paths``: the
    walker to reuse, with what it has read of the intervals)."""
    if lanes is None:
        return []
    out, seen, paths = [], set(), paths or Paths(lanes, classify)
    for tid in tids:
        if tid in seen or tid is None:
            continue
        seen.add(tid)
        p = thread_path(paths, tid)
        if p is not None:
            if lanes.full:
                p["cut_at_ns"] = lanes.full_at
            out.append(p)
    return out


def select(lanes: Optional[Lanes], wanted: tuple) -> list:
    """The tids ``--critical-path COMM|TID`` names: a number is a tid, else every thread
    whose name is the text (in tid order)."""
    if lanes is None:
        return []
    tids = []
    for w in wanted:
        if str(w).isdigit():
            tids.append(int(w))
        else:
            tids.extend(sorted(t for t, lane in lanes.by_tid.items() if lane.task.comm == w and t))
    return tids



# the causes of a wait on another thread's answer, whose advice the root's replaces (a
# lock's, a disk's, a peer's CPU work's own advice stands, and the chain is added to it);
# a parent waiting for its children is a dependency on them
FOLLOWED = frozenset(("network", "local-socket", "other", "child"))

# a thread whose time ends this much or more at the verdict's thread is waiting on it: the
# verdict is about the head of that chain (UPSTREAM_THREADS of the workload's, most
# blocked first, are walked)
UPSTREAM_SHARE = 0.3
UPSTREAM_THREADS = 16


def _waiting(an, tids) -> list:
    """Of ``tids``, those worth walking: most blocked first, at most UPSTREAM_THREADS."""
    rows = [an.threads[t] for t in tids if t in an.threads]
    # (a wait a timer or an interrupt ended goes to no thread: only the rest can reach one)
    rows = [t for t in rows if t.wall_ns and sum(
        ns for (_, w), ns in t.wakers.items() if w not in (TIMER_WAKER_NAME, INTERRUPT_WAKER_NAME)
    ) >= t.wall_ns * UPSTREAM_SHARE]
    return [t.tid for t in sorted(rows, key=lambda t: (-t.blocked_ns, t.tid))[:UPSTREAM_THREADS]]


def upstream(paths: Paths, an, comms: set, tids, skip: frozenset = frozenset()) -> list:
    """The threads of ``tids`` (not named in ``comms`` or ``skip``) whose blocked time ends
    at a thread named in ``comms``, UPSTREAM_SHARE of their time or more: (path, root)
    pairs, the longest chain first (the head of the chain), then the largest share."""
    out = []
    for tid in _waiting(an, tids):
        lane = paths.lanes.lane(tid)
        if lane is None or lane.task.comm in comms or lane.task.comm in skip:
            continue
        p = thread_path(paths, tid)
        root = p and p["root"]
        if root and root["holder"] in comms and root["share"] >= UPSTREAM_SHARE:
            out.append((p, root))
    return sorted(out, key=lambda pr: (-len(pr[1]["via"]), -pr[1]["share"], pr[0]["tid"]))


def tell_oncpu(verdict: dict, paths: Paths, an) -> Optional[dict]:
    """An on-cpu verdict: the workload's threads that wait on the threads it names (a
    pipeline's other stages behind its CPU-bound one, a shell behind its children), said
    in its reason; the first such path, or None."""
    top = verdict.get("oncpu_top") or []
    comms = {g["comm"] for g in top}
    # the workload, and the threads left out as small or as idle waits only (a shell
    # waiting for its children has no busy time or latency of its own)
    tids = [t for w in verdict.get("workload", ()) for t in w["tids"]]
    tids += [x["tid"] for x in verdict.get("left_out", ())
             if x["reason"].startswith(("idle waits only", "small"))]
    ups = sorted(((p, r) for p, r in upstream(paths, an, comms, tids) if r["holder_state"] == "on-CPU"),
                 key=lambda pr: (-pr[1]["share"], pr[0]["tid"]))
    if not ups:
        return None
    said = "; ".join(f"{p['comm']} (tid {p['tid']}) waits on {r['holder']}'s CPU work "
                     f"{r['share']:.0%} of its time" for p, r in ups[:2])
    verdict["reason"] = verdict["reason"].rstrip(".") + f". The bottleneck is that CPU work: {said}."
    return ups[0][0]


def tell_verdict(verdict: dict, root: Optional[dict]) -> None:
    """The verdict of the thread whose path this root is (report data, changed in place):
    ``critical_root``, and where the wait goes said in its reason -- for a wait on a peer
    as its advice (what to change at the root, in the thread that holds the time)."""
    cause = verdict["cause"]
    verdict["critical_root"] = root
    if not root or root["holder_tid"] == cause["tid"] or not root["fix"]:
        return
    via = "".join(f"{h['comm']} (tid {h['tid']}"
                  + (f", {CAUSE_TEXT.get(h['cause'][0], h['cause'][0])}" if h["cause"] else "") + ") to "
                  for h in root.get("via", ()))
    n = len(root.get("holder_tids", ()))
    holder = f"{root['holder']} ({n} threads)" if n > 1 else f"{root['holder']} (tid {root['holder_tid']})"
    whose = "their" if n > 1 else "that thread's"
    went = (f"the wait goes {'through ' + via if via else 'to '}{holder}: {root['share']:.0%} of "
            f"this thread's time ends in {_root_words(root, whose)}")
    if cause.get("cause") in FOLLOWED and cause.get("next_step") in verdict["reason"]:
        advice = f"{went}; change {root['fix']}"
        verdict["reason"] = verdict["reason"].replace(cause["next_step"], advice, 1)
        cause["next_step"] = advice
    else:
        verdict["reason"] = verdict["reason"].rstrip(".") + f" ({went})."


def _root_words(root: dict, whose: str = "that thread's") -> str:
    if root["holder_state"] == "blocked":
        cause = cause_text(*root["cause"]) if root["cause"] else "waits"
        return f"{whose} {cause}, ended by {'a ' if root['root'] == 'timer' else ''}{root['root']}"
    return {"on-CPU": f"{whose} time on CPU",
            "run queue": f"{whose} waits for a CPU"}.get(root["holder_state"], root["root"])
