"""Event header lines of perf script -> the tuple (comm, pid, tid, cpu, time_ns, period,
event, payload), a plain tuple for speed (``parse_header``); None for a line that is not a
header. ``padded_header`` reads the header perf right-aligns when it prints no callchains,
``_header_at`` a header whose timestamp ``_TS`` found (the caches of blocks and summed key
a header by its text around that timestamp), ``_header_error`` names what is wrong with a
line that is not a header."""
from __future__ import annotations

import re
from typing import Optional

from offconv.inputs.perf_script.frames import _FRAME_LIKE

HEADER_HELP = "an event header 'comm [pid/]tid [cpu] secs.frac: [period] event:'"

# comm [pid/]tid [cpu] secs.frac: [period] event: payload -- the usual header, in one go
_FAST = re.compile(r"^(\S.*?)\s+(?:(-?\d+)/)?(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d+):\s+"
                   r"(?:(\d+)\s+)?(\S+?):(?=\s|$)\s*(.*)$")
# the same without the event (perf script -F without 'event'): "sleep  8785 80428.758804: ";
# its groups numbered as _FAST's (no period, event nor payload)
_NO_EVENT = re.compile(r"^(\S.*?)\s+(?:(-?\d+)/)?(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d+):"
                       r"()()()\s*$")
# " 655.044405: " -- the timestamp splits the header into who/where and what.
_TIME = re.compile(r"\s(\d+)\.(\d+):(?=\s|$)")
# header without a timestamp (perf script -F without time): "java 19983 cycles:"
_NO_TIME = re.compile(r"^(\S.*?)\s+(?:(-?\d+)/)?(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+\s+)?(\S+?):(?=\s|$)(.*)$")
_IDS = re.compile(r"^(?:(-?\d+)/)?(-?\d+)$")
_EVENT = re.compile(r"\s*(?:(\d+)\s+)?(\S+?):(?=\s|$)\s*(.*)$")


def parse_header(line: str) -> Optional[tuple]:
    """Split an event header into the tuple (comm, pid, tid, cpu, time_ns, period, event,
    payload) -- a plain tuple for speed; None when the line is not a header."""
    m = _FAST.match(line)
    if m is not None:  # the common shape, in one regex
        return _fast_tuple(m)
    m = _TIME.search(line)
    if m is not None:
        who = line[:m.start()].rstrip()
        cpu = None
        if who.endswith("]"):
            lb = who.rfind("[")
            if lb < 0 or not who[lb + 1:-1].isdigit():
                return None
            cpu = int(who[lb + 1:-1])
            who = who[:lb].rstrip()
        parts = who.rsplit(None, 1)
        if len(parts) != 2:
            return None
        comm, ids = parts
        mi = _IDS.match(ids)
        if mi is None:
            return None
        me = _EVENT.match(line, m.end())
        if me is not None:
            period, event, payload = me.groups()
        elif line[m.end():].isspace() or m.end() == len(line):
            period, event, payload = None, "", ""   # perf script -F without 'event'
        else:
            return None
        frac = m.group(2)
        time_ns = int(m.group(1)) * 1_000_000_000 + int((frac + "000000000")[:9])
        pid = mi.group(1)
        return (comm.strip(), int(pid) if pid is not None else None, int(mi.group(2)), cpu,
                time_ns, int(period) if period else 1, event, payload)
    m = _NO_TIME.match(line)
    if m is None:
        return None
    comm, pid, tid, cpu, period, event, payload = m.groups()
    if event[0].isdigit():  # "800.69x344:": a corrupted timestamp, not an event name
        return None
    return (comm.strip(), int(pid) if pid is not None else None, int(tid),
            int(cpu) if cpu is not None else None, None, int(period) if period else 1,
            event, payload.strip())


# "comm tid [cpu] 800.69x344:" -- where a header has its timestamp, something else
_BAD_TIME = re.compile(r"^\s*\S.*?\s+(?:-?\d+/)?-?\d+\s+(?:\[\d+\]\s+)?(\d\S*?):(?=\s|$)")


def padded_header(line: str) -> Optional[tuple]:
    """A header whose comm perf right-aligned with spaces (no callchains: ``perf script``
    without -g, or -F without ip,sym), recognised by its shape -- a timestamp and an event
    -- not by its column; None for a callchain line."""
    s = line.lstrip(" ")
    if not s or s[0] == "\t" or _FRAME_LIKE.match(s) and _TIME.search(s) is None:
        return None
    h = parse_header(s)
    return h if h is not None and h[4] is not None else None


def _header_error(line: str) -> tuple:
    """(expected, got) for a line that is not a header: a corrupted timestamp is named,
    and so is what follows a good one where the event name should be."""
    m = _BAD_TIME.match(line)
    if m is not None:
        if _GOOD_TIME.fullmatch(m.group(1)) is None:
            return "a timestamp 'secs.frac:'", f"'{m.group(1)}:'"
        return ("an event name after the timestamp 'secs.frac: [period] event:' (perf script "
                "-F without 'event'? add it: -F ...,event)", f"'{line[m.end():].strip()}'")
    return HEADER_HELP, "a line that is neither an event header nor a stack frame"


_GOOD_TIME = re.compile(r"\d+\.\d+")

# " 655.044405: " -- a header's timestamp, where the header caches of blocks and summed cut
# it out
_TS = re.compile(r" (\d+)\.(\d+): ")


def _header_at(header: str, tm) -> Optional[tuple]:
    """parse_header's tuple for a header whose timestamp is the one ``tm`` found, by the
    same regex (so that any other timestamp in its place parses the same way: the header
    may be cached without it); None for any other header (parse_header reads it)."""
    m = _FAST.match(header)
    if m is None:
        m = _NO_EVENT.match(header)   # perf script -F without 'event'
    if m is None or m.start(5) != tm.start(1) or m.end(6) != tm.end(2):
        return None
    return _fast_tuple(m)


def _fast_tuple(m) -> tuple:
    """parse_header's tuple from a match of _FAST."""
    comm, pid, tid, cpu, sec, frac, period, event, payload = m.groups()
    return (comm, int(pid) if pid is not None else None, int(tid),
            int(cpu) if cpu is not None else None,
            int(sec) * 1_000_000_000 + int((frac + "000000000")[:9]),
            int(period) if period else 1, event, payload)
