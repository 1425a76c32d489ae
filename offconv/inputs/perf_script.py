"""perf script text -> Sample (any event with its stack, weighted by its period) and
SchedEvent (sched tracepoints).

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
for byte), except where it is known to be wrong (see ``clean_name``).
"""
from __future__ import annotations

import os
import re
from itertools import chain
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.model.formats import MAYBE, NO, YES, InputFormat
from offconv.model.records import EXIT, INLINE, JIT, KERNEL, OFFCPU, ONCPU, SAMPLES, SWITCH, USER, WAKE, Frame, Sample, SchedEvent, Task, thread_frame
from offconv.model.options import ParseOptions
from offconv.inputs.source import numbered_blocks
from offconv.inputs.demangle import note as demangle_note

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
_FRAME_LIKE = re.compile(r"^[0-9a-fA-F]+\s+.*\(.*\)$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_GO_METHOD = re.compile(r"\.\(.*\)\.")
_JITDUMP = re.compile(r"(^|/)jitted-\d+-\d+\.so$")
_PERF_MAP = re.compile(r"/tmp/perf-\d+\.map$")

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


def clean_name(func: str) -> str:
    """stackcollapse-perf.pl's tidy_generic, without its known bugs: ';' becomes ':',
    quotes are dropped, and the argument list is cut at the first '(' -- but not inside
    C++ template brackets or lambda braces (``std::function<int (int, int)>::operator()``),
    not in ``operator()``, ``(anonymous namespace)``, nor in Go methods (``net/http.(*Client).Do``)."""
    func = func.replace(";", ":")
    if "(" in func and not _GO_METHOD.search(func):
        func = _cut_args(func)
    return func.replace('"', "").replace("'", "")


def _cut_args(func: str) -> str:
    depth = 0
    i = 0
    n = len(func)
    while i < n:
        c = func[i]
        if c in "<{":
            depth += 1
        elif c in ">}" and depth > 0:
            if not (c == ">" and func[i - 1:i] == "-"):  # '->' is not a bracket
                depth -= 1
        elif c == "(" and depth == 0:
            if func.startswith("(anonymous namespace)", i):
                i += len("(anonymous namespace)")
                continue
            if func.endswith("operator", 0, i) and func.startswith("()", i):
                i += 2
                continue
            return func[:i]
        i += 1
    return func


_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_ESCAPE = re.compile(r"\$(SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-fA-F]{1,6})\$")
_RUST_CHARS = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")",
               "C": ","}


def _rust_char(m) -> str:
    code = m.group(1)
    if code in _RUST_CHARS:
        return _RUST_CHARS[code]
    try:
        return chr(int(code[1:], 16))
    except ValueError:  # pragma: no cover - the regex keeps it in range
        return m.group(0)


def rust_demangle(name: str) -> str:
    """A legacy-mangled Rust symbol as older perf leaves it
    (``GcBox$LT$T$GT$::new::_$u7b$$u7b$closure$u7d$$u7d$::h2ed0674a1c3dc9fa``) ->
    ``GcBox<T>::new::_{{closure}}``: the ``::h`` + 16 hex hash dropped, ``$..$`` escapes
    and ``..`` (``::``) decoded as rustc-demangle does, and a leading ``_$`` loses its
    ``_``. Other names are returned unchanged."""
    hashed = _RUST_HASH.search(name)
    if hashed is None and "$" not in name:
        return name
    if hashed is not None:
        name = name[:hashed.start()]
    if name.startswith("_$"):
        name = name[1:]
    name = _RUST_ESCAPE.sub(_rust_char, name).replace("..", "::")
    return name.replace(";", ":")


def frame_kind(module: str) -> str:
    if module.startswith("["):
        return USER if module == "[unknown]" else KERNEL
    base = module.rpartition("/")[2]
    if base.startswith("vmlinux") or base.endswith(".ko") or base.endswith(".ko.xz") or base.endswith(".ko.zst"):
        return KERNEL
    if _PERF_MAP.search(module) or _JITDUMP.search(module):
        return JIT
    return USER


def split_frame(text: str) -> tuple:
    """A callchain line -> (addr, symbol as printed, dso); the dso is in the line's last
    parentheses (it may hold spaces and parentheses: ``([JIT app cache])``,
    ``(/memfd:x (deleted))``)."""
    s = text.strip()
    pc, _, rest = s.partition(" ")
    module = ""
    if rest.endswith(")"):
        k = rest.rfind("(")
        if rest.find(")", k) != len(rest) - 1:  # parentheses inside the dso: count them
            k = _open_paren(rest)
        if k == 0:
            module, rest = rest[1:-1], ""
        elif k > 0 and rest[k - 1] in " \t":
            module, rest = rest[k + 1:-1], rest[:k]
    return pc, rest.strip(), module


def _open_paren(text: str) -> int:
    """Index of the '(' that the final ')' closes: a dso may hold parentheses itself,
    as in ``(/memfd:sealed-91 (deleted))``."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return i
    return -1


_HEX_DIGITS = "0123456789abcdefABCDEF"
_KINDS: dict = {}  # dso -> frame_kind(dso): a few hundred dsos, millions of frame lines


# "addr sym[+0xoff] (dso)" with nothing in it that parse_frame treats specially: no
# parentheses in sym or dso, no leading '[', '(' or '+', no white space before the offset
# or " (", and (checked after the match) no '->', quotes or other '+0x' -- the usual line
_PLAIN_FRAME = re.compile(r"\s*[0-9a-fA-F]+ ([^\s(\[+](?:[^(]*?[^\s(])??)(?:\+0x[0-9a-fA-F]+)? "
                          r"\(([^()]+)\)\s*$")


# perf script --no-demangle's output is being parsed (parsers.demangle): frame -> the
# symbol it was made from, for each frame whose name perf would have printed demangled
MANGLED: Optional[dict] = None


def parse_frame(text: str, addrs: bool, demangle: bool = False) -> tuple:
    """One callchain line -> its frames in root-first order (``a->b`` Java inlining gives
    several; a ``(process name)`` pseudo-frame gives none)."""
    m = _PLAIN_FRAME.match(text)
    if m is not None:
        func, module = m.groups()
        if "->" not in func and "+0x" not in func and '"' not in func and "'" not in func:
            raw = func
            if ";" in func:
                func = func.replace(";", ":")
            if demangle:
                func = rust_demangle(func)
            kind = _KINDS.get(module)
            if kind is None:
                kind = _kind(module)
            out = (Frame(func, module, kind),)
            if MANGLED is not None:
                demangle_note(MANGLED, out, raw, module)
            return out
    return _parse_frame(text, addrs, demangle)


def _kind(module: str) -> str:
    kind = frame_kind(module)
    if len(_KINDS) < 100_000:
        _KINDS[module] = kind
    return kind


def _parse_frame(text: str, addrs: bool, demangle: bool) -> tuple:
    pc, rawfunc, module = split_frame(text)
    rawfunc = rawfunc or " "
    k = rawfunc.rfind("+0x")  # _OFFSET without the regex: "+0x" and hex digits to the end
    if k >= 0 and k + 3 < len(rawfunc) and not rawfunc[k + 3:].strip(_HEX_DIGITS):
        rawfunc = rawfunc[:k]
    if rawfunc.startswith("("):
        return ()
    kind = _KINDS.get(module)
    if kind is None:
        kind = _kind(module)
    out = []
    for i, func in enumerate(rawfunc.split("->")):
        if func == "[unknown]":
            if module and module != "[unknown]":
                base = module.rpartition("/")[2]
                if base.endswith(" (deleted)"):
                    base = base[:-10]
                func = f"[{base} <{pc}>]" if addrs else f"[{base}]"
            elif addrs:
                func = f"[unknown <{pc}>]"
        func = clean_name(func)
        if demangle:
            func = rust_demangle(func)
        out.append(Frame(func, module, INLINE if i else kind))
    frames = tuple(out)
    if MANGLED is not None:
        demangle_note(MANGLED, frames, rawfunc, module)
    return frames


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
# " 655.044405: " -- a header's timestamp, where the header cache of parse_blocks cuts it out
_TS = re.compile(r" (\d+)\.(\d+): ")
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


def is_srcline(line: str) -> bool:
    """A source line that ``perf script -F +srcline`` prints under a frame line, after
    two spaces (perf 6.1's ``map__fprintf_srcline`` with the prefix "\\n  "), not a frame:
    ``  write.c:26``, ``  libc.so.6[f8350]``, ``  [kernel.kallsyms][ffffffff816d1a12]``.
    Told from a frame line indented with spaces (older perfs) by its first word, which is
    not a hex address; a padded header (the same test would take it) is to be ruled out
    first. stackcollapse-perf.pl without --srcline ignores these lines, and so does
    offconv."""
    if line[:2] != "  " or line[2:3] in ("", " ", "\t"):
        return False
    return bool(line[2:].split(None, 1)[0].strip(_HEX_DIGITS))


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
    add = counts.setdefault
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

    def flush():
        if c_flush is not None:  # the loop below in C
            c_flush(raw, entries, accepts, leaves, leaf_frames, stacks, callers_frames, counts)
            return
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

    def one_line_events(lines: list, pos: int) -> int:
        """Counts a run of one-line events (perf script of a recording without call chains:
        a header with its sampled frame, padded by perf, no blank line between events)
        from ``lines[pos]`` into ``raw``, up to the first line that is not a plain on-CPU
        sample's: returns its index (len(lines) at the end); the line before it is then
        left uncounted too (a callchain may follow it after all)."""
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
                    stop = one_line_events(lines, pos)
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
    """offconv._speedups.one_line_events (the loop of sum_blocks' one_line_events in C),
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
    """The entry of a plain on-CPU sample's header (see _header_entry; a header without a
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


# perf record --off-cpu (Linux 5.19+): the software event whose period is the time the
# task was off CPU, in ns (tools/perf/Documentation/perf-record.txt)
OFFCPU_EVENT = "offcpu-time"


def _offcpu_sample(h: tuple, stack: tuple, lineno: int) -> Sample:
    return Sample(stack, h[5], "ns", Task(h[0], h[1], h[2]), h[4], h[3], h[6], OFFCPU, None,
                  lineno)


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


def _skip(stats, path, lineno, line, opts, expected, got):
    if not opts.lenient:
        raise ParseError(path, lineno, expected, got=got, line=line)
    if stats is not None:
        stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
        stats.setdefault("first_skipped", f"{path}:{lineno}")


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


FORMAT = InputFormat(name="perf-script", sniff=sniff, parse=parse, parse_blocks=parse_blocks,
                   sum_blocks=sum_blocks, notes=notes, description="perf script text (default fields and -F variants)")
