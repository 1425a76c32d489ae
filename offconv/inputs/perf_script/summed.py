"""perf script text summed into an aggregate Sums without a record per event
(``sum_blocks``): the hot path of a collapse, the same sums in the same order as
blocks.parse_blocks into Sums.add_records. Its per-event loops are offconv._speedups' when
that C module is built (``_speedups``); the Python loops here give the same sums."""
from __future__ import annotations

import os
from itertools import chain
from typing import Iterable, Iterator, Optional

from offconv.model.records import ONCPU, SAMPLES, Task, thread_frame
from offconv.model.options import ParseOptions
from offconv.inputs.source import numbered_blocks
from offconv.inputs.perf_script.blocks import (_HEADS, _LINE_CACHE, _body_stack, _header_entry,
                                               parse_blocks)
from offconv.inputs.perf_script.events import OFFCPU_EVENT, SCHED_EVENTS
from offconv.inputs.perf_script.frames import _FRAME_LIKE, _HEX_DIGITS, parse_frame
from offconv.inputs.perf_script.header import _FAST, _TS, parse_header


def sum_blocks(lists: Iterable[tuple[int, list]], path: str, opts: ParseOptions,
               stats: Optional[dict], sums, streaming: bool = False) -> None:
    """parse_blocks into ``sums`` (an aggregate.Sums) without a record per event: the hot
    path of a collapse. An event is counted under (its header without the timestamp, its
    leaf line's key, its callers' text) -- strings sliced out of the block, hashed in C --
    and those counts are turned into (thread frame + stack) sums only once per distinct
    key, when ``_RAW`` keys have piled up, before any block that needs ``parse_blocks``
    (anything but a plain on-CPU sample with tab-indented frame lines), and at the end: in
    first-seen order, so the sums are the same, in the same order, as through records.
    The leaf (the sampled ip) differs from sample to sample in its address and its
    ``+0x`` offset, which the frames do not depend on: its key leaves both out.
    ``streaming``: the lists come from a pipe that is slower than this loop (perf script
    converting perf.data): the keys are resolved after every list, while the pipe fills,
    so that little is left to do when it ends."""
    if opts.addrs:  # the addresses are kept in the frames: no key can leave them out
        sums.add_records(parse_blocks(_numbered(lists), path, opts, stats))
        return
    demangle = opts.demangle
    heads: dict = {}       # header without its timestamp -> index into entries
    heads_get = heads.get
    entries: list = []     # (thread frame, period, event)
    stacks: dict = {}      # callers' text -> root-first frames
    frames: dict = {}
    names: dict = {}
    leaves: dict = {}      # leaf key -> frames
    leaf_keys: dict = {}   # leaf line -> its key (_leaf_key): the same ip repeats
    leaf_keys_get = leaf_keys.get
    leaf_room = _LEAF_CACHE
    leaf_since = 0         # the count of events (fast) when leaf_keys was last emptied
    raw: dict = {}         # (entry, leaf key, callers) -> events
    raw_get = raw.get
    budget = _CALLERS_BUDGET
    ts_search = _TS.search
    counts = sums.counts
    count_blocks, c_flush = _speedups()
    c_lines = _one_line_events() if count_blocks is not None else None

    def accepts(e: int) -> bool:
        tf, period, event = entries[e]
        return sums.accepts(event, period, SAMPLES, ONCPU)

    def leaf_frames(lk) -> tuple:
        line = "0 " + (lk if lk.__class__ is str else f"{lk[0]}+0x0{lk[1]}")
        g = parse_frame(line, False, demangle)
        if len(leaves) < _LINE_CACHE:
            leaves[lk] = g
        return g

    def callers_frames(callers: str) -> tuple:
        return _body_stack(callers, False, frames, demangle, names)

    resolve = c_flush if c_flush is not None else _flush   # _flush's loop in C, or _flush

    def flush():
        resolve(raw, entries, accepts, leaves, leaf_frames, stacks, callers_frames, counts)

    slow = fast = 0
    lists = iter(lists)
    for base, pieces in lists:
        ci, cl = 0, base   # a piece's index and the number of its first line
        i = -1
        npieces = len(pieces)
        while True:
            i += 1
            if count_blocks is not None:  # the loop below in C, up to a block it leaves
                i, counted, budget = count_blocks(pieces, i, heads, stacks, raw, frames, names,
                                                  budget, _LINE_CACHE)
                fast += counted
            if i >= npieces:
                break
            block = pieces[i]
            header, _, body = block.partition("\n")
            if header[:1] == " " or body and body[:1] != "\t" and body[:1] != " ":
                # one-line events: counted here but for the runs of lines that are not
                # plain on-CPU samples', which go through parse_blocks (in input order)
                lines = block.split("\n")
                n = len(lines)
                pos = 0
                while True:
                    stop = _one_line_run(lines, pos, heads, entries, raw, c_lines)
                    fast += stop - pos
                    if stop >= n:
                        break
                    start = stop - 1 if stop > pos else pos
                    end = stop + 1
                    while end < n and (lines[end][:1] == "\t" or ts_search(lines[end]) is None):
                        end += 1
                    while ci < i:
                        cl += pieces[ci].count("\n") + 2
                        ci += 1
                    if raw:
                        flush()
                    slow += 1
                    if slow > 1000 and slow > fast:  # not on-CPU samples: records
                        sums.add_records(parse_blocks(chain(
                            numbered_blocks(cl + start, ("\n".join(lines[start:]),)),
                            numbered_blocks(cl + block.count("\n") + 2, pieces[i + 1:]),
                            _numbered(lists)), path, opts, stats))
                        return
                    sums.add_records(parse_blocks(numbered_blocks(
                        cl + start, ("\n".join(lines[start:end]),)), path, opts, stats))
                    pos = end
                continue
            if header and header[0] not in " \t#" and "sched" not in header:
                tm = ts_search(header)
                hk = (header[:tm.start()], header[tm.end():]) if tm is not None else header
                e = heads_get(hk)
                if e is None:
                    e = _sum_head(header, tm, hk, heads, entries)
                if e is not None:
                    if not body:
                        key = (e, None, "")
                    else:
                        leaf, _, callers = body.partition("\n")
                        lk = leaf_keys_get(leaf)
                        if lk is None:
                            lk = _leaf_key(leaf)
                            if leaf_room:
                                leaf_keys[leaf] = lk
                                leaf_room -= 1
                                if not leaf_room:  # full: start again if it paid, else keep it
                                    if fast - leaf_since >= 2 * _LEAF_CACHE:
                                        leaf_keys.clear()
                                        leaf_room = _LEAF_CACHE
                                    leaf_since = fast
                        if callers and callers not in stacks:
                            st = _body_stack(callers, False, frames, demangle, names)
                            if st is None:
                                lk = False
                            else:
                                if budget <= 0:  # full: as parse_blocks, start again,
                                    flush()      # once the keys waiting for them are summed
                                    stacks.clear()
                                    budget = _CALLERS_BUDGET
                                stacks[callers] = st
                                budget -= len(callers)
                        key = None if lk is False else (e, lk, callers)
                    if key is not None:
                        raw[key] = raw_get(key, 0) + 1
                        fast += 1
                        continue
            # anything else: through parse_blocks, after the sums so far (their order)
            if raw:
                flush()
            while ci < i:
                cl += pieces[ci].count("\n") + 2
                ci += 1
            slow += 1
            if slow > 1000 and slow > fast:   # not a collapse of on-CPU samples: records
                sums.add_records(parse_blocks(
                    chain(numbered_blocks(cl, pieces[i:]), _numbered(lists)), path, opts, stats))
                return
            sums.add_records(parse_blocks(numbered_blocks(cl, (block,)), path, opts, stats))
        if streaming or len(raw) > _RAW:
            flush()
    flush()


def _flush(raw: dict, entries: list, accepts, leaves: dict, leaf_frames, stacks: dict,
           callers_frames, counts: dict) -> None:
    """The Python twin of offconv._speedups.flush (the same arguments, the same sums): the
    counts of ``raw``, (entry, leaf key, callers' text) -> events, added into ``counts`` as
    (thread frame,) + stack -> weight in raw's order, for the entries that ``accepts``;
    the frames of a leaf key or callers' text not in ``leaves`` or ``stacks`` are made by
    ``leaf_frames`` or ``callers_frames``. ``raw`` is emptied."""
    add = counts.setdefault
    accepted: dict = {}  # entry -> counted (Sums.accepts, asked in input order)
    for (e, lk, callers), n in raw.items():
        tf, period, _ = entries[e]
        ok = accepted.get(e)
        if ok is None:
            ok = accepted[e] = accepts(e)
        if not ok:
            continue
        if lk is None:
            stack = ()
        else:
            g = leaves.get(lk)
            if g is None:
                g = leaf_frames(lk)
            if callers:
                cs = stacks.get(callers)
                if cs is None:
                    cs = callers_frames(callers)
                stack = cs + g
            else:
                stack = g
        key = (tf,) + stack
        m = len(counts)
        had = add(key, n * period)  # one hash of the key when it is new
        if len(counts) == m:
            counts[key] = had + n * period
    raw.clear()


def _one_line_run(lines: list, pos: int, heads: dict, entries: list, raw: dict,
                  c_lines) -> int:
    """Counts a run of one-line events (perf script of a recording without call chains:
    a header with its sampled frame, padded by perf, no blank line between events)
    from ``lines[pos]`` into ``raw`` (sum_blocks' keys; a new header is added to ``heads``
    and ``entries``), up to the first line that is not a plain on-CPU sample's: returns
    its index (len(lines) at the end); the line before it is then left uncounted too (a
    callchain may follow it after all). ``c_lines``: offconv._speedups.one_line_events,
    which takes the lines it can, or None."""
    heads_get = heads.get
    raw_get = raw.get
    ts_search = _TS.search
    n = len(lines)
    keys = []
    add_key = keys.append
    i = pos
    while i < n:
        if c_lines is not None:  # the loop below in C, up to a line it leaves
            i = c_lines(lines, i, heads, keys)
            if i >= n:
                break
        line = lines[i]
        tm = ts_search(line)
        if tm is None:
            break
        after = line[tm.end():]
        j = after.find(": ")
        if j < 0:
            if not after.endswith(":"):
                break
            j = len(after) - 1
        hk = (line[:tm.start()], after[:j], 1)   # (never a callchain header's key)
        e = heads_get(hk)
        if e is None:
            e = _inline_head(line, tm, hk, heads, entries)
            if e is None:
                break
        payload = after[j + 2:].lstrip(" ")
        if not payload:
            add_key((e, None, ""))
            i += 1
            continue
        if not _FRAME_LIKE.match(payload):
            break
        rest = payload.partition(" ")[2]
        k = rest.rfind("+0x")
        add_key((e, rest if k < 0 else _offset_key(rest, k), ""))
        i += 1
    if i < n and keys:
        keys.pop()
    for key in keys:
        raw[key] = raw_get(key, 0) + 1
    return i


def _speedups() -> tuple:
    """offconv._speedups' count_blocks and flush, sum_blocks' loops in C, or (None, None):
    not built (no C compiler when offconv was installed), or turned off with
    OFFCONV_SPEEDUPS=0 (the tests run both ways)."""
    if os.environ.get("OFFCONV_SPEEDUPS", "1") == "0":
        return None, None
    try:
        from offconv._speedups import count_blocks, flush
    except ImportError:
        return None, None
    return count_blocks, flush


def _one_line_events():
    """offconv._speedups.one_line_events (the loop of _one_line_run in C),
    or None where _speedups gives none (an older build of it)."""
    try:
        from offconv._speedups import one_line_events
    except ImportError:
        return None
    return one_line_events


# characters of callers' text sum_blocks keeps as cache keys (a collapse keeps more than
# parse_blocks: its keys are checked once, then only hashed); when full, it starts again
_CALLERS_BUDGET = 32 << 20
# leaf lines whose keys sum_blocks keeps (a sampled ip repeats: 9k distinct in 18k events
# of the shallow recording). When full, it starts again only if at least half the events
# since it was last emptied were hits; else it keeps what it has and takes no more: an
# input whose every leaf is new (addresses randomised, the shallow recording's leaves made
# unique) paid 0.35-0.45 s a 100 MB for keeping its strings (1.9-2.2 s without the cache)
_LEAF_CACHE = 1 << 14
_RAW = 1 << 15  # distinct (header, leaf, callers) keys summed before they are resolved


def _numbered(lists: Iterable[tuple[int, list]]) -> Iterator[tuple[int, str]]:
    for lineno, pieces in lists:
        yield from numbered_blocks(lineno, pieces)


def _sum_head(header: str, tm, hk, heads: dict, entries: list) -> Optional[int]:
    """The entry of a plain on-CPU sample's header (see blocks._header_entry; a header without a
    timestamp, as older perfs print it, is its own key), or None."""
    if tm is not None:
        hit = _header_entry(header, tm, {}, hk)
        if hit is None:
            return None
        h, task = hit
    else:
        h = parse_header(header)
        if (h is None or h[4] is not None or h[6] in SCHED_EVENTS or h[6] == OFFCPU_EVENT
                or (h[7] and _FRAME_LIKE.match(h[7]))):
            return None
        task = Task(h[0], h[1], h[2])
    e = len(entries)
    entries.append((thread_frame(task), h[5], h[6]))
    if len(heads) < _HEADS:
        heads[hk] = e
    return e


def _leaf_key(leaf: str):
    """The key of a callchain's first line (the sampled ip) in sum_blocks: _offset_key
    of its text after the address; False when it is not a tab-indented frame line (the
    event goes through parse_blocks)."""
    s = leaf.strip() if leaf[:1] == "\t" else ""
    if not s:
        return False
    rest = s.partition(" ")[2]
    k = rest.rfind("+0x")
    return rest if k < 0 else _offset_key(rest, k)


def _offset_key(rest: str, k: int):
    """The leaf key of a frame line's text after its address, ``rest``, whose last "+0x"
    is at ``k``: (symbol, " (dso)") without the offset when it is one (hex digits, then
    the dso in parentheses, ending the line), so that samples of one symbol at different
    offsets share a key; else ``rest`` itself."""
    tail = rest[k + 3:].lstrip(_HEX_DIGITS)
    if (tail[:2] == " (" and len(tail) < len(rest) - k - 3
            and tail.find("(", 2) < 0 and tail.find(")") == len(tail) - 1):
        return (rest[:k], tail)
    return rest


def _inline_head(line: str, tm, hk, heads: dict, entries: list) -> Optional[int]:
    """The entry (see _sum_head) of a one-line event: a plain on-CPU sample's header,
    padded by perf, with its sampled frame (or nothing) as its payload; None otherwise.
    Cached under ``hk`` (its text before the timestamp, and between the timestamp and the
    payload, and a 1: a key of its own), which decides everything parse_header takes from
    it."""
    s = line.lstrip(" ")
    m = _FAST.match(s)
    off = len(line) - len(s)
    if m is None or m.start(5) + off != tm.start(1) or m.end(6) + off != tm.end(2):
        return None
    if m.group(9) != line[tm.end() + len(hk[1]) + 2:].lstrip(" "):
        return None   # the regex reads the payload from elsewhere: not this path's
    h = parse_header(s)
    if h[6] in SCHED_EVENTS or h[6] == OFFCPU_EVENT:
        return None
    e = len(entries)
    entries.append((thread_frame(Task(h[0], h[1], h[2])), h[5], h[6]))
    if len(heads) < _HEADS:
        heads[hk] = e
    return e
