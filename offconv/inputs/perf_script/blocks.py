"""perf script text, block by block -> the same records as lines.parse (``parse_blocks``):
the hot path of the record path. A block is the lines of one event (Source.blocks()); the
header without its timestamp, the callchain without its leaf line and each frame line are
looked up in caches; a block it does not read itself goes through lines.parse whole."""
from __future__ import annotations

from itertools import chain
from typing import Iterable, Iterator, Optional

from offconv.model.records import ONCPU, SAMPLES, Sample, SchedEvent, Task
from offconv.model.options import ParseOptions
from offconv.inputs.perf_script.events import (OFFCPU_EVENT, SCHED_EVENTS, _offcpu_sample,
                                               _sched_event)
from offconv.inputs.perf_script.frames import _FRAME_LIKE, is_srcline, parse_frame
from offconv.inputs.perf_script.header import _TS, _header_at, padded_header, parse_header
from offconv.inputs.perf_script.lines import parse


def parse_blocks(blocks: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
                 stats: Optional[dict] = None) -> Iterator:
    """The same records as ``parse``, from event blocks (Source.blocks(): the lines between
    blank lines, with the number of the first). The hot path: identical callchains repeat
    thousands of times, so a whole callchain's text is looked up once instead of line by
    line. Anything unusual in a block (comments, an unindented line, a header with its
    first frame, a malformed line) sends that block through ``parse`` unchanged."""
    addrs = opts.addrs
    demangle = opts.demangle
    frames: dict = {}   # frame line -> frames
    frames_get = frames.get
    names: dict = {}    # the line's text after the address -> frames (see _new_frame)
    stacks: dict = {}
    stacks_get = stacks.get
    budget = _STACKS_BUDGET
    heads: dict = {}  # header without its timestamp -> (header tuple, its Task)
    heads_get = heads.get
    scheds: dict = {}  # a sched event's header without its timestamp -> its fields but time
    scheds_get = scheds.get
    looked = hits = 0  # sched headers looked up in this window of _SCHED_WINDOW, found
    skip = 0           # sched headers still to parse without the cache (it missed too often)
    ts_search = _TS.search
    for lineno, block in blocks:
        header, _, body = block.partition("\n")
        # the header without its timestamp repeats (same thread, event, period; a sched
        # event's same tasks and states): parse once
        if header[0] in " \t#":
            tm = None
        elif skip and "sched" in header:
            tm = None
            skip -= 1
        else:
            tm = ts_search(header)
        task = proto = h = skey = None
        if tm is not None:
            key = (header[:tm.start()], header[tm.end():])
            if "sched" in key[1]:
                proto = scheds_get(key)
                looked += 1
                if proto is None:
                    h = _header_at(header, tm)      # parse_header's, or None
                    if h is not None:
                        skey = key                  # cached once its event is made
                else:
                    hits += 1
                if looked == _SCHED_WINDOW:
                    # a lookup and an entry cost about half what a hit saves: where most
                    # headers are new (short-lived tasks), parse without it for a while
                    if hits < _SCHED_WINDOW * 2 // 5:
                        skip = _SCHED_WINDOW * 4
                    looked = hits = 0
            else:
                hit = heads_get(key)
                if hit is None:
                    hit = _header_entry(header, tm, heads, key)
                if hit is not None:
                    h, task = hit
        if task is None and proto is None and h is None:
            h = None if header[0] in " \t#" else parse_header(header)
            if h is None or (h[7] and h[6] not in SCHED_EVENTS and _FRAME_LIKE.match(h[7])):
                yield from parse(enumerate(block.split("\n"), lineno), path, opts, stats)
                continue
        stack = ()
        if body:
            # the leaf line (the sampled ip) varies from sample to sample; its callers'
            # return addresses repeat: cache the callers' part as a whole
            leaf, _, callers = body.partition("\n")
            stack = stacks_get(callers)
            if stack is None:
                stack = _body_stack(callers, addrs, frames, demangle, names) if callers else ()
                if stack is None:
                    yield from parse(enumerate(block.split("\n"), lineno), path, opts, stats)
                    continue
                if budget <= 0:  # full: start again with the callchains met from now on
                    stacks.clear()
                    budget = _STACKS_BUDGET
                stacks[callers] = stack
                budget -= len(callers)
            g = frames_get(leaf)
            if g is None:
                if not leaf or leaf[0] not in " \t" or not leaf.strip() or padded_header(leaf):
                    yield from parse(enumerate(block.split("\n"), lineno), path, opts, stats)
                    continue
                g = _new_frame(leaf, addrs, demangle, frames, names)
            stack = stack + g if stack else g
        if proto is not None:  # a sched event whose header came from the cache
            frac = tm.group(2)
            kind, cpu, ht, event, prev, state, nxt, target, new = proto
            yield SchedEvent(kind, int(tm.group(1)) * 1_000_000_000 + int((frac + "000000000")[:9]),
                             cpu, ht, stack, event, prev, state, nxt, target, new, lineno)
        elif task is not None:  # a plain sample whose header came from the cache
            frac = tm.group(2)
            yield Sample(stack, h[5], SAMPLES, task,
                         int(tm.group(1)) * 1_000_000_000 + int((frac + "000000000")[:9]),
                         h[3], h[6], ONCPU, None, lineno)
        elif h[6] in SCHED_EVENTS:
            e = _sched_event(h, stack, lineno, path, header, opts, stats)
            if e is None:   # a malformed payload skipped with --lenient
                continue
            if skey is not None:
                if len(scheds) >= _SCHED_HEADS:   # full: start again with those met from now on
                    scheds.clear()
                scheds[skey] = (e.kind, e.cpu, e.task, e.event, e.prev, e.prev_state, e.next,
                               e.target, e.new)
            yield e
        elif h[6] == OFFCPU_EVENT:
            yield _offcpu_sample(h, stack, lineno)
        else:
            yield Sample(stack, h[5], SAMPLES, Task(h[0], h[1], h[2]), h[4], h[3], h[6], ONCPU,
                         None, lineno)


# sched event headers (without their timestamps) parse_blocks keeps: the same tasks
# switching on the same CPU repeat (91% of sched.txt's events; 30% of a parallel build's,
# most of its tasks short-lived); when full, it starts again. 8192 (16384 until
# 2026-12-03): the same speed on both 100 MB sched inputs, 5.5 MB less (an entry is about
# 0.7 KB: its key's strings, the event's fields and tasks)
_SCHED_HEADS = 1 << 13
_SCHED_WINDOW = 4096
# characters of callchain text parse_blocks keeps as cache keys (a sched_switch callchain is
# about 2 KB; 4M keeps the 1 GB sched benchmark under 100 MiB); when full, it starts again
_STACKS_BUDGET = 4 << 20
_HEADS = 1 << 16


def _header_entry(header: str, tm, heads: dict, key: tuple) -> Optional[tuple]:
    """(parse_header's tuple, Task) for a plain on-CPU sample header whose timestamp is the
    one ``tm`` found (so that any other timestamp in its place parses the same way: the
    regex treats every run of digits alike), cached under ``key``; None otherwise."""
    h = _header_at(header, tm)
    if h is None:
        return None
    if h[6] in SCHED_EVENTS or h[6] == OFFCPU_EVENT or (h[7] and _FRAME_LIKE.match(h[7])):
        return None
    hit = (h, Task(h[0], h[1], h[2]))
    if len(heads) < _HEADS:
        heads[key] = hit
    return hit


def _body_stack(body: str, addrs: bool, frames: dict, demangle: bool = False,
                names: Optional[dict] = None) -> Optional[tuple]:
    """A callchain (indented frame lines, leaf first) -> root-first frames; None if a line
    is not an indented frame."""
    lines = body.split("\n")
    groups = list(map(frames.get, lines))  # the lines met before: one C loop
    if None in groups:
        if names is None:
            names = {}
        get = frames.get
        for i, g in enumerate(groups):
            if g is None:
                line = lines[i]
                g = groups[i] = get(line)  # met earlier in this callchain (a recursion)
                if g is not None:
                    continue
                if not line or line[0] not in " \t" or not line.strip():
                    return None
                if line[0] == " ":
                    # no callchains: a header padded by perf (never a line that starts
                    # with a tab)
                    if padded_header(line) is not None:
                        return None
                    if is_srcline(line):  # perf script -F +srcline: under a frame
                        groups[i] = ()
                        if len(frames) < _LINE_CACHE:
                            frames[line] = ()
                        continue
                groups[i] = _new_frame(line, addrs, demangle, frames, names)
    groups.reverse()
    return tuple(chain.from_iterable(groups))


_LINE_CACHE = 1 << 19  # frame lines kept whole; beyond, only the names cache grows


def _new_frame(line: str, addrs: bool, demangle: bool, frames: dict, names: dict) -> tuple:
    """parse_frame for a line not seen before. Without --addrs the frames depend only on
    the text after the address (split_frame), which repeats even where the address does
    not (a different leaf ip in every sample, JIT code): that text is the second key."""
    if addrs:
        g = parse_frame(line, addrs, demangle)
    else:
        key = line.strip().partition(" ")[2]
        g = names.get(key)
        if g is None:
            g = names[key] = parse_frame(line, addrs, demangle)
    if len(frames) < _LINE_CACHE:
        frames[line] = g
    return g
