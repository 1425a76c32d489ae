"""What the first lines of an input say: whether it is perf script text (``sniff``), and
what the recording lacks (``notes``: no call chains, no cpu or dso field)."""
from __future__ import annotations

from offconv.model.formats import MAYBE, NO, YES
from offconv.inputs.perf_script.events import SCHED_EVENTS
from offconv.inputs.perf_script.frames import _FRAME_LIKE
from offconv.inputs.perf_script.header import _BAD_TIME, padded_header, parse_header


def sniff(head: list[str]) -> str:
    """yes: a header line followed by a stack line or a sched payload; no: the first
    non-comment lines are not headers (one bad line among good ones is tolerated, so that
    the parser can name it by file and line); maybe: not enough input."""
    if head and head[0].startswith("# ========"):
        return YES
    prev_header = None
    bad = 0
    for line in head:
        if not line.strip() or line.startswith("#"):
            continue
        if prev_header is not None:
            if line[0] in " \t" or _FRAME_LIKE.match(line):
                return YES
            return YES if parse_header(line) is not None else NO
        h = parse_header(line)
        if h is None:
            if bad and (line[0] == "\t" or _FRAME_LIKE.match(line.strip())):
                continue  # the callchain of the corrupted header
            if bad or line[0] == "\t" or _BAD_TIME.match(line) is None:
                return NO
            bad = 1  # a corrupted header, e.g. its timestamp: look at what follows
            continue
        if h[4] is not None and (h[6] in SCHED_EVENTS or h[7] == "" or _FRAME_LIKE.match(h[7])):
            prev_header = h
            if h[6] in SCHED_EVENTS:
                return YES
            continue
        prev_header = h
    return MAYBE if prev_header is not None else NO


def notes(head: list[str]) -> list[str]:
    """What the first lines say the recording lacks, and what that costs: no call chains
    (no -g, or -F without ip,sym), no cpu field, no dso field."""
    headers = stacks = with_dso = with_cpu = sched = 0
    for line in head:
        if not line.strip() or line[0] == "#":
            continue
        h = padded_header(line) if line[0] == " " else None
        if line[0] == "\t" or (line[0] == " " and h is None):
            stacks += 1
            with_dso += line.rstrip().endswith(")")
            continue
        h = h or parse_header(line)
        if h is None:
            continue
        headers += 1
        with_cpu += h[3] is not None
        sched += h[6] in SCHED_EVENTS
        if h[7] and h[6] not in SCHED_EVENTS and _FRAME_LIKE.match(h[7]):
            stacks += 1
            with_dso += 1
    out = []
    if headers >= 2 and not stacks:
        out.append("the recording has no call chains: causes cannot be read (every cause is "
                   "'other', stacks are thread names only); record with -g, and keep ip,sym,dso "
                   "in perf script -F")
    elif stacks and not with_dso:
        out.append("the recording has no dso field (perf script -F without dso): kernel and "
                   "user frames cannot be told apart, so causes cannot be read (every cause is "
                   "'other') and -U/-K/--kernel do not apply; add dso to -F")
    if sched and not with_cpu:
        out.append("the recording has no cpu field (perf script -F without cpu): a missing "
                   "switch-in cannot be taken from the previous switch on its CPU; the thread's "
                   "next event as the running task is taken instead (its run-queue time is then "
                   "an upper bound); add cpu to -F")
    return out
