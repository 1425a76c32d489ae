"""The record of one perf script event from its header tuple (header.parse_header) and its
stack: a SchedEvent from a sched tracepoint's payload (both dialects: the kernel's
``prev_comm=.. ==> next_comm=..`` and libtraceevent's ``comm:pid [prio] ==> ..``), the
off-CPU Sample of ``perf record --off-cpu``; and what a malformed line costs (``_skip``:
an error, or with --lenient a line counted as skipped)."""
from __future__ import annotations

import re
from typing import Optional

from offconv.model.errors import ParseError
from offconv.model.records import EXIT, OFFCPU, SWITCH, WAKE, Sample, SchedEvent, Task
from offconv.model.options import ParseOptions

# sched payloads, both dialects; parsed from the right (comms may hold spaces, '=', ':')
_SWITCH_KERNEL = re.compile(
    r"^prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
    r"next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)\s*$")
_SWITCH_TEP = re.compile(
    r"^(.*):(-?\d+) \[(-?\d+)\] (\S+) ==> (.*):(-?\d+) \[(-?\d+)\]\s*$")
_WAKEUP_KERNEL = re.compile(
    r"^comm=(.*) pid=(-?\d+) prio=(-?\d+)(?: success=\d+)?(?: target_cpu=(\d+))?\s*$")
_WAKEUP_TEP = re.compile(
    r"^(.*):(-?\d+) \[(-?\d+)\](?: success=\d+)?(?: CPU:(\d+))?\s*$")
_EXIT_KERNEL = re.compile(r"^comm=(.*) pid=(-?\d+) prio=(-?\d+)(?: group_dead=\d+)?\s*$")

SWITCH_EVENTS = {"sched:sched_switch", "sched_switch"}
WAKEUP_EVENTS = {"sched:sched_wakeup", "sched:sched_wakeup_new", "sched:sched_waking",
                 "sched_wakeup", "sched_wakeup_new", "sched_waking"}
WAKEUP_NEW_EVENTS = {"sched:sched_wakeup_new", "sched_wakeup_new"}
EXIT_EVENTS = {"sched:sched_process_exit", "sched_process_exit"}
SCHED_EVENTS = SWITCH_EVENTS | WAKEUP_EVENTS | EXIT_EVENTS


# perf record --off-cpu (Linux 5.19+): the software event whose period is the time the
# task was off CPU, in ns (tools/perf/Documentation/perf-record.txt)
OFFCPU_EVENT = "offcpu-time"


def _offcpu_sample(h: tuple, stack: tuple, lineno: int) -> Sample:
    return Sample(stack, h[5], "ns", Task(h[0], h[1], h[2]), h[4], h[3], h[6], OFFCPU, None,
                  lineno)


def _task_ids(header_pid, header_tid, tid):
    """The pid of a payload task is known only when it is the header's task."""
    return header_pid if tid == header_tid else None


# what each kind of sched event's payload looks like (perf 6.1's trace field, kernel dialect)
_PAYLOADS = {
    SWITCH: "'prev_comm=.. prev_pid=.. prev_prio=.. prev_state=.. ==> next_comm=.. "
            "next_pid=.. next_prio=..'",
    WAKE: "'comm=.. pid=.. prio=.. target_cpu=..'",
    EXIT: "'comm=.. pid=.. prio=..'",
}


def missing_payload(path: str, ev: SchedEvent) -> ParseError:
    """The error of the off-CPU path at a sched event printed without its payload
    (_sched_event leaves its tasks out: prev, next and target are None): the recording
    is fine, perf script was run without the 'trace' field."""
    return ParseError(path, ev.lineno,
                      f"a {ev.event.rpartition(':')[2]} payload {_PAYLOADS[ev.kind]} "
                      "(perf script -F without 'trace'? add it: -F ...,trace)",
                      got=f"'{ev.event}:' with nothing after it")


def _sched_event(h: tuple, stack: tuple, lineno: int, path: str, line: str,
                 opts: ParseOptions, stats: Optional[dict]):
    """The SchedEvent of a sched event's header (``h``: parse_header's tuple) and stack;
    None for a malformed payload skipped with --lenient (counted as a skipped line: the
    event is then missing, as a lost one is, and the intervals treat it so)."""
    comm, pid, tid, cpu, time_ns, period, event, payload = h
    task = Task(comm, pid, tid)
    if time_ns is None:
        raise ParseError(path, lineno, "a timestamp on a sched event (perf script -F ...,time)",
                         got="a header without one", line=line)
    if not payload or payload.isspace():
        # perf script -F without 'trace': the header alone. Counted as an event of its own
        # in on-CPU mode, as stackcollapse-perf.pl does; the off-CPU path, which needs the
        # tasks only the payload names, stops at it (missing_payload)
        kind = SWITCH if event in SWITCH_EVENTS else WAKE if event in WAKEUP_EVENTS else EXIT
        return SchedEvent(kind, time_ns, cpu, task, stack, event, lineno=lineno)
    if event in SWITCH_EVENTS:
        m = _SWITCH_KERNEL.match(payload) or _SWITCH_TEP.match(payload)
        if m is None:
            return _bad_payload(h, SWITCH, lineno, path, line, opts, stats)
        pc, pp, _, st, nc, np_, _ = m.groups()
        pp, np_ = int(pp), int(np_)
        prev = Task(pc, _task_ids(pid, tid, pp), pp)
        nxt = Task(nc, None, np_)
        return SchedEvent(SWITCH, time_ns, cpu, task, stack, event, prev=prev, prev_state=st,
                          next=nxt, lineno=lineno)
    if event in WAKEUP_EVENTS:
        m = _WAKEUP_KERNEL.match(payload) or _WAKEUP_TEP.match(payload)
        if m is None:
            return _bad_payload(h, WAKE, lineno, path, line, opts, stats)
        wc, wp = m.group(1), int(m.group(2))
        return SchedEvent(WAKE, time_ns, cpu, task, stack, event,
                          target=Task(wc, _task_ids(pid, tid, wp), wp),
                          new=event in WAKEUP_NEW_EVENTS, lineno=lineno)
    m = _EXIT_KERNEL.match(payload) or _WAKEUP_TEP.match(payload)
    if m is None:
        return _bad_payload(h, EXIT, lineno, path, line, opts, stats)
    xc, xp = m.group(1), int(m.group(2))
    return SchedEvent(EXIT, time_ns, cpu, task, stack, event,
                      target=Task(xc, _task_ids(pid, tid, xp), xp), lineno=lineno)


def _bad_payload(h: tuple, kind: str, lineno: int, path: str, line: str,
                 opts: ParseOptions, stats: Optional[dict]) -> None:
    """A sched payload that is not one of ``kind``'s: an error naming what it looks like
    and quoting what stands there, or, with --lenient, a skipped line (None)."""
    name = "wakeup" if kind == WAKE else h[6].rpartition(":")[2]
    payload = h[7].strip()   # (a long one by its end: where a cut or a bad field shows)
    got = f"'{payload}'" if len(payload) <= 100 else f"'...{payload[-80:]}'"
    _skip(stats, path, lineno, line, opts, f"a {name} payload {_PAYLOADS[kind]}", got)


def _skip(stats, path, lineno, line, opts, expected, got):
    if not opts.lenient:
        raise ParseError(path, lineno, expected, got=got, line=line)
    if stats is not None:
        stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
        stats.setdefault("first_skipped", f"{path}:{lineno}")
