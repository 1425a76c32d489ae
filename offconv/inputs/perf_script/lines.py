"""perf script text, line by line -> Sample (any event with its stack, weighted by its
period) and SchedEvent (sched tracepoints): ``parse``, the general path, which takes every
line perf script prints (blocks.parse_blocks sends it whatever it does not read itself).

Input as printed by ``perf script`` (perf 6.1, default fields; `-F` variants and older
perfs differ in which header fields appear)::

    victim-main 19944 [000]   655.044405:     sched:sched_switch: prev_comm=victim-main prev_pid=19944 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
    \tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
    \t            e2bc _dl_relocate_object+0x69c (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)

    vote   913    72.176760:     257597 cycles:uppp:
    java 24636/25607 [000] 4794564.109216: cycles:

An event is a header line ``comm [pid/]tid [[cpu]] [secs.frac:] [period] event: [payload]``
(``-F`` without ``event``: ``sleep  8785 80428.758804:``, no event name; without ``trace``: a
sched event with no payload) followed by its callchain, leaf first, one
``addr sym[+off] (dso)`` per indented line (``-F +srcline``: each followed by a source line,
``  write.c:26``, which is not a frame), and ended by a blank line (or the next header, or
the end of the input). The format is defined
by perf's builtin-script.c (``perf_sample__fprintf_*``); the grammar is in
``grammars/perf_script.lark`` and tests check both agree on every fixture.

Frame names are cleaned the way stackcollapse-perf.pl does (its output is matched byte
for byte), except where it is known to be wrong (see ``frames.clean_name``).
"""
from __future__ import annotations

import re
from itertools import chain
from typing import Iterable, Iterator, Optional

from offconv.model.records import ONCPU, SAMPLES, Sample, Task
from offconv.model.options import ParseOptions
from offconv.inputs.perf_script.events import (OFFCPU_EVENT, SCHED_EVENTS, _offcpu_sample,
                                               _sched_event, _skip)
from offconv.inputs.perf_script.frames import _FRAME_LIKE, is_srcline, parse_frame
from offconv.inputs.perf_script.header import (HEADER_HELP, _header_error, padded_header,
                                               parse_header)


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None) -> Iterator:
    """Numbered lines -> Sample and SchedEvent records, in input order. Streams: memory is
    one event plus the cache of cleaned frame lines."""
    addrs = opts.addrs
    demangle = opts.demangle
    cache: dict = {}
    cache_get = cache.get
    groups: list = []
    append = groups.append
    head = None  # (header tuple, lineno, text)
    from_iter = chain.from_iterable

    def finish():  # the event of ``head``; None: a malformed payload skipped (--lenient)
        h, hl, htext = head
        stack = tuple(from_iter(reversed(groups))) if groups else ()
        groups.clear()
        if h[6] in SCHED_EVENTS:
            return _sched_event(h, stack, hl, path, htext, opts, stats)
        if h[6] == OFFCPU_EVENT:
            return _offcpu_sample(h, stack, hl)
        return Sample(stack, h[5], SAMPLES, Task(h[0], h[1], h[2]), h[4], h[3], h[6], ONCPU,
                      None, hl)

    skipping = False  # the callchain of a malformed header skipped with --lenient
    for lineno, line in lines:
        if not line:
            skipping = False
            if head is not None:
                ev = finish()
                if ev is not None:
                    yield ev
                head = None
            continue
        c = line[0]
        if c == "\t" or c == " ":
            g = cache_get(line)
            h = None
            if g is None:
                if not line.strip():
                    skipping = False
                    if head is not None:
                        ev = finish()
                        if ev is not None:
                            yield ev
                        head = None
                    continue
                h = padded_header(line) if c == " " else None
                if h is None:
                    if c == " " and is_srcline(line):  # -F +srcline: under a frame
                        g = ()
                    else:
                        g = parse_frame(line, addrs, demangle)
                    if len(cache) < 2_000_000:
                        cache[line] = g
            if h is None:
                if head is not None:
                    append(g)
                elif not skipping:
                    _skip(stats, path, lineno, line, opts, HEADER_HELP, "a stack line before any event header")
                continue
        elif c == "#":
            if line.startswith(RECORDER_COMMENT) and stats is not None:
                _recorder_comment(line, stats, path)
            continue
        else:
            h = parse_header(line)
        if h is None:
            if head is not None and _FRAME_LIKE.match(line):
                append(parse_frame(line, addrs, demangle))  # unindented callchain (old perf)
                continue
            lost = _LOST.search(line)
            if lost is not None:          # perf script --show-lost-events
                skipping = False          # an event of its own: what follows is not the
                if head is not None:      # callchain of a malformed header before it
                    ev = finish()
                    if ev is not None:
                        yield ev
                    head = None
                if stats is not None:
                    stats["lost_samples"] = stats.get("lost_samples", 0) + int(lost.group(1))
                continue
            if head is not None:
                ev = finish()
                if ev is not None:
                    yield ev
                head = None
            expected, got = _header_error(line)
            _skip(stats, path, lineno, line, opts, expected, got)
            skipping = True
            continue
        skipping = False
        if head is not None:
            ev = finish()
            if ev is not None:
                yield ev
        head = (h, lineno, line)
        payload = h[7]
        if payload and h[6] not in SCHED_EVENTS and _FRAME_LIKE.match(payload):
            append(parse_frame(payload, addrs, demangle))  # header and first frame on one line
    if head is not None:
        ev = finish()
        if ev is not None:
            yield ev


# perf script --show-lost-events (perf 6.1):
#   perf  9518 [000]   324.432732: PERF_RECORD_LOST lost 27
_LOST = re.compile(r"\s\d+\.\d+:\s+PERF_RECORD_LOST lost (\d+)\s*$")
# the first line scripts/record.sh writes:
#   # offconv-record: backend=perf target=... window_s=3 lost_chunks=21 lost_samples_pct=1.2 ...
RECORDER_COMMENT = "# offconv-record:"
_RECORDER_TARGET = re.compile(r"\btarget=(\S+)")
_RECORDER_FIELD = re.compile(r"\b(lost_chunks|lost_samples_pct)=([0-9.]+)")


def _recorder_comment(line: str, stats: dict, path: str) -> None:
    if " backend=perf " in line:
        # scripts/record.sh records system-wide (-a, with filters on its target): whatever
        # its first events look like, the switch-ins are there (not a `perf record -p`)
        stats["recorded_by_offconv"] = stats.get("recorded_by_offconv", ()) + (path,)
        target = _RECORDER_TARGET.search(line)
        if target is not None and target.group(1) != "-a":
            # filtered to a target (-p:PID, cmd:NAME, -a:comm=NAME): its partners' events
            # are in only where the target's are (offconv.analysis.rules.scope)
            stats["recorded_filtered"] = stats.get("recorded_filtered", ()) + (path,)
    for key, value in _RECORDER_FIELD.findall(line):
        if key == "lost_chunks":
            stats["lost_chunks"] = stats.get("lost_chunks", 0) + int(float(value))
        else:
            stats["lost_samples_pct"] = max(stats.get("lost_samples_pct", 0.0), float(value))
