"""bpftrace text output -> Histogram and Sample records, parsed by the lark grammar
``grammars/bpftrace.lark`` (the grammar is the parser).

Real output of bpftrace v0.17.0 (Debian 0.17.0-1; tests/fixtures/bpftrace/)::

    Attaching 3 probes...

    @blocked_us: 
    [2, 4)               157 |@@@@@@@@@                                           |
    [4, 8)               178 |@@@@@@@@@@                                          |

    @[
        __schedule+1560
        schedule+35
    , victim-main]: 6

What each map becomes (``entries`` -> ``records``, shared with ``bpftrace_json``):

- ``hist()``/``lhist()`` maps (keyed or not) -> ``Histogram(name, keys, unit, buckets,
  kind)``: buckets (lo, hi, count) with hi exclusive (``[0]`` is (0, 1), ``[2, 4)`` is
  (2, 4), ``(..., 0)`` is (None, 0), ``[100, ...)`` is (100, None); K/M/G/T/P/E are powers
  of 1024). The unit comes from the name (``*_us``, ``usecs``, ``_ms``, ``nsecs``...) or
  ``--unit``; the kind from the name (``runq``/``rq`` -> run queue; ``block``/``off``/
  ``sleep`` -> blocked) or ``--kind``.
- stack-keyed maps (``@[kstack]``, ``@us[kstack, comm]``, ``@[kstack, ustack, comm]``) ->
  ``Sample``: frames root first (a kernel stack above a user stack), ``+offset`` removed so
  one function merges, the other key parts as the task (never a fake ``, `` frame, the
  bug of stackcollapse-bpftrace.pl). The weight's unit comes from the name or ``--unit``
  (default ``samples``: ``count()`` maps).
- maps of on-CPU or run-queue time keyed by thread (offconv record's
  ``@oncpu_ns_by_thread[comm, pid, tid]: N``, ``@runq_ns_by_thread[comm, tid]``) ->
  ``ThreadTime`` (``thread_time``).
- other scalar maps (``@syscall[6]: 36862``, ``stats()``, ``avg()``) are parsed (and
  compared with the JSON output in the tests) but have no record in the model: they are
  counted in the parse stats as ``bpftrace_scalars``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.model.formats import MAYBE, NO, YES, InputFormat
from offconv.model.records import BLOCKED, KERNEL, OFFCPU, ONCPU, RUNQ, SAMPLES, USER, Frame, Histogram, Sample, Task, ThreadTime
from offconv.model.options import ParseOptions

SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_OFFSET = re.compile(r"\+(?:0x[0-9a-fA-F]+|\d+)$")
_PERF_FRAME = re.compile(r"^([0-9a-fA-F]+) (.*?)(?: \((.*)\))?$")
_STATS = re.compile(r"^count (-?\d+), average (-?\d+), total (-?\d+)$")
_INT = re.compile(r"^-?\d+$")
_ROW_PARTS = re.compile(r"^(\[[^\])]*[\])]|\(\.\.\., [^)]*\))\s*(\d+) \|")
# functions that only a kernel stack holds (to put a kernel stack above a user stack):
# the scheduler, the syscall, interrupt and exception entries, the idle loop, kthreads
_KERNEL_HINTS = frozenset((
    "__schedule", "schedule", "schedule_idle", "do_syscall_64", "x64_sys_call",
    "entry_SYSCALL_64", "entry_SYSCALL_64_after_hwframe", "ret_from_fork", "ret_from_fork_asm",
    "kthread", "finish_task_switch", "worker_thread", "smpboot_thread_fn", "handle_softirqs",
    "__do_softirq", "irq_exit_rcu", "__irq_exit_rcu", "irqentry_exit_to_user_mode",
    "exit_to_user_mode_loop", "do_idle", "cpu_startup_entry", "start_secondary",
    "secondary_startup_64", "common_startup_64", "start_kernel", "rest_init"))
_KERNEL_PREFIXES = ("__x64_sys_", "__ia32_sys_", "__arm64_sys_", "asm_sysvec_", "asm_exc_",
                    "asm_common_interrupt", "sysvec_", "__sysvec_", "entry_SYSCALL")


@dataclass(frozen=True)
class Entry:
    """One printed map element: ``name`` without the ``@``; ``keys`` a tuple whose parts
    are strings or, for a stack, a tuple of frame lines (leaf first, as printed, stripped);
    ``buckets`` for a histogram, else ``value`` (int, str, or a stats dict)."""

    name: str
    keys: tuple
    buckets: Optional[tuple] = None
    value: object = None
    lineno: int = 0


# -- numbers and labels ------------------------------------------------------------------

def number(text: str) -> int:
    """``1K`` -> 1024, ``2M`` -> 2 MiB, ``-5`` -> -5."""
    if text and text[-1] in SUFFIX:
        return int(text[:-1]) * SUFFIX[text[-1]]
    return int(text)


def bucket(label: str) -> tuple:
    """A row label -> (lo, hi): ``[0]`` (0, 1), ``[2, 4)`` (2, 4), ``(..., 0)`` (None, 0),
    ``[100, ...)`` (100, None)."""
    if label.startswith("(..., "):
        return None, number(label[6:-1])
    if label.endswith("]"):
        v = number(label[1:-1])
        return v, v + 1
    lo, _, hi = label[1:-1].partition(", ")
    return number(lo), (None if hi == "..." else number(hi))


def scalar_value(text: str):
    text = text.strip()
    if _INT.match(text):
        return int(text)
    m = _STATS.match(text)
    if m:
        return {"count": int(m.group(1)), "average": int(m.group(2)), "total": int(m.group(3))}
    return text


def split_keys(text: str) -> tuple:
    """``1, x`` -> ("1", "x") (bpftrace joins tuple parts with ', ')."""
    return tuple(text.split(", ")) if text != "" else ()


def _name_keys(head: str) -> tuple:
    """``@name[k1, k2]`` -> ("name", ("k1", "k2"))."""
    name, br, rest = head[1:].partition("[")
    if not br:
        return name, ()
    return name, split_keys(rest[:-1] if rest.endswith("]") else rest)


# -- the lark parse ----------------------------------------------------------------------

EXPECT = {
    "ROW": "a histogram row '[lo, hi)  count |@@@|'",
    "FRAME": "an indented stack frame",
    "STACK_CLOSE": "']: value' closing the stack key",
    "STACK_HEAD": "']:' closing the stack key",
    "PART_SEP": "', ' between two stacks",
    "HEAD": "a map '@name:'", "SCALAR": "a map line '@name[key]: value'",
    "STACK_OPEN": "a stack key '@name['", "TEXT": "text", "ATTACHING": "'Attaching N probes...'",
}


def _expected(names) -> str:
    wanted = [EXPECT[n] for n in ("ROW", "FRAME", "STACK_CLOSE", "STACK_HEAD", "PART_SEP")
              if n in names]
    return " or ".join(wanted) if wanted else "bpftrace output (a map, a histogram row or text)"


CHUNK_LINES = 5000


def stream_entries(lines: Iterable[tuple[int, str]], path: str, lenient: bool = False,
                   stats: Optional[dict] = None) -> Iterator[Entry]:
    """``entries`` over an input of any size: the text is parsed in chunks of about
    CHUNK_LINES lines, each cut before a line starting with ``@`` (every map element
    starts there, so each chunk is a whole document of the grammar); memory stays bounded."""
    chunk: list = []
    first = 1
    for lineno, line in lines:
        if len(chunk) >= CHUNK_LINES and line.startswith("@"):
            yield from entries("\n".join(chunk), path, lenient, stats, first, (lineno, line))
            chunk, first = [], lineno
        if not chunk:
            first = lineno
        chunk.append(line)
    if chunk:
        yield from entries("\n".join(chunk), path, lenient, stats, first)


def entries(text: str, path: str, lenient: bool = False, stats: Optional[dict] = None,
            first: int = 1, after: Optional[tuple] = None) -> list:
    """The map elements of one bpftrace text output (or one chunk of it, starting at line
    ``first``; ``after`` is the (lineno, text) that follows the chunk), in order."""
    import lark
    from offconv.inputs.grammar import parser
    p = parser("bpftrace", "start")
    if not text.endswith("\n"):
        text += "\n"
    lines = text.split("\n")
    for _ in range(100_000):
        try:
            tree = p.parse("\n".join(lines))
            break
        except lark.exceptions.UnexpectedInput as e:
            lineno = getattr(e, "line", None)
            token = getattr(e, "token", None)
            at_end = token is not None and token.type == "$END" or not lineno or lineno < 1
            names = getattr(e, "expected", None) or getattr(e, "allowed", None) or ()
            if at_end and after is not None and not lenient:
                raise ParseError(path, after[0], _expected(names),
                                 got=f"'{after[1].strip()[:60]}'", line=after[1]) from None
            if at_end:
                lineno = max(1, len(lines) - 1)
                while lineno > 1 and not lines[lineno - 1].strip():
                    lineno -= 1
                got = "the end of the input"
            else:
                got = None
            line = lines[lineno - 1] if lineno <= len(lines) else ""
            if got is None:
                got = f"'{line.strip()[:60]}'" if line.strip() else "a blank line"
            if not lenient:
                raise ParseError(path, lineno + first - 1, _expected(names), got=got,
                                 line=line) from None
            if stats is not None:
                stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
                stats.setdefault("first_skipped", f"{path}:{lineno + first - 1}")
            if got == "the end of the input" or not line.strip():
                # drop the open item: back to its '@' line
                k = lineno - 1
                while k >= 0 and not lines[k].startswith("@"):
                    k -= 1
                for j in range(max(k, 0), len(lines)):
                    if j > lineno - 1 and lines[j].startswith("@"):
                        break
                    lines[j] = ""
            else:
                lines[lineno - 1] = ""
    else:  # pragma: no cover
        raise ParseError(path, None, "bpftrace output", got="too many malformed lines")
    return list(_walk(tree, first - 1))


def _walk(tree, offset: int = 0) -> Iterator[Entry]:
    for item in tree.children:
        kind = item.data
        if kind == "hist":
            head, rows = item.children[0], item.children[1:]
            name, keys = _name_keys(head.rstrip().rstrip(":"))
            yield Entry(name, keys, _rows(rows), lineno=head.line + offset)
        elif kind == "scalar":
            tok = item.children[0]
            m = re.match(r"^(@[A-Za-z_0-9.]*(?:\[.*\])?): (.*)$", str(tok))
            name, keys = _name_keys(m.group(1))
            yield Entry(name, keys, value=scalar_value(m.group(2)), lineno=tok.line + offset)
        elif kind in ("stack_map", "stack_hist"):
            open_tok, parts_tree, close_tok = item.children[:3]
            name, _, before = str(open_tok)[1:].partition("[")
            keys = [k for k in before.split(", ") if k] if before else []
            for sub in parts_tree.children:
                if getattr(sub, "data", None) == "frames":
                    keys.append(tuple(str(t).strip() for t in sub.children))
            close = str(close_tok)
            after, _, value = close.partition("]:")
            if after.startswith(", "):
                keys.extend(split_keys(after[2:]))
            if kind == "stack_map":
                yield Entry(name, tuple(keys), value=scalar_value(value), lineno=open_tok.line + offset)
            else:
                yield Entry(name, tuple(keys), _rows(item.children[3:]), lineno=open_tok.line + offset)


def _rows(rows) -> tuple:
    out = []
    for r in rows:
        m = _ROW_PARTS.match(str(r.children[0]))
        lo, hi = bucket(m.group(1))
        out.append((lo, hi, int(m.group(2))))
    return tuple(out)


# -- entries -> records --------------------------------------------------------------------

_UNIT_TOKENS = {"us": "us", "usecs": "us", "usec": "us", "ns": "ns", "nsecs": "ns",
                "nsec": "ns", "ms": "ms", "msecs": "ms", "msec": "ms", "secs": "s"}


def name_unit(name: str) -> str:
    for tok in reversed(re.split(r"[^A-Za-z0-9]+", name.lower())):
        if tok in _UNIT_TOKENS:
            return _UNIT_TOKENS[tok]
    return ""


def name_kind(name: str) -> str:
    """BLOCKED / RUNQ from a map name, "" when it does not say."""
    low = name.lower()
    toks = re.split(r"[^a-z0-9]+", low)
    if "runq" in low or "rq" in toks or "runqlat" in low or "sched_delay" in low:
        return RUNQ
    if "block" in low or "off" in low or "sleep" in low:
        return BLOCKED
    return ""


def is_stack(part) -> bool:
    return isinstance(part, tuple)


def _frame(line: str, kind: str, cache: dict) -> Frame:
    key = (line, kind)
    f = cache.get(key)
    if f is None:
        module = ""
        m = _PERF_FRAME.match(line)
        name = line
        if m and " " in line:  # perf stack mode: '<addr> sym+off (dso)'
            name, module = m.group(2) or m.group(1), m.group(3) or ""
        name = _OFFSET.sub("", name)
        f = cache[key] = Frame(name, module, kind)
    return f


def _stack_kind(frames: tuple) -> str:
    """KERNEL when the stack holds a function only kernel stacks hold or a kernel address
    (``0xffff...``, ``[kernel.kallsyms]``), USER when it holds a user-space address or dso,
    "" when it does not say."""
    kind = ""
    for line in frames:
        if "[kernel.kallsyms]" in line:
            return KERNEL
        f = _frame(line, USER, {})
        name = f.name
        if name in _KERNEL_HINTS or name.startswith(_KERNEL_PREFIXES):
            return KERNEL
        if name.startswith("0x"):
            if name.startswith("0xffff") and len(name) == 18:
                return KERNEL
            kind = USER
        elif f.module:
            kind = USER
    return kind


def stack_kinds(stacks: list) -> list:
    """The kind of each stack of one key. The key's order is the script's (``kstack``,
    ``ustack`` in any order): a stack that says nothing is USER, unless the key's other
    stack is a user stack (then it is the kernel's), or the key holds two stacks of which
    neither says (then the first is the kernel's: ``@[kstack, ustack, comm]``, the usual
    order of off-CPU scripts). An empty stack (a kernel thread's user stack) is printed as
    an empty key part (``, , comm]``) and holds no frames either way."""
    kinds = [_stack_kind(s) for s in stacks]
    if len(stacks) == 2:
        a, b = kinds
        if a == b == "" or a == b == USER:
            kinds = [KERNEL, USER]
        elif a == "" or b == "":
            known = a or b
            other = USER if known == KERNEL else KERNEL
            kinds = [a or other, b or other]
    return [k or USER for k in kinds]


def stack_of(keys: tuple, cache: dict) -> tuple:
    """(task, frames root first) of a stack-keyed map element: the user frames below the
    kernel frames, the other key parts as the task (the first name-like part its comm, the
    first number its pid, the second its tid; an empty part is an empty stack, never a
    name)."""
    stacks = [p for p in keys if is_stack(p)]
    others = [p for p in keys if not is_stack(p) and p != ""]
    kinds = stack_kinds(stacks)
    frames: list = []
    for s, k in sorted(zip(stacks, kinds), key=lambda sk: sk[1] == KERNEL):
        frames.extend(_frame(line, k, cache) for line in reversed(s))
    comm = next((p for p in others if not _INT.match(p)), None)
    ints = [int(p) for p in others if _INT.match(p)]
    pid = ints[0] if ints else None
    tid = ints[1] if len(ints) > 1 else None
    task = None
    if comm is not None or pid is not None:
        task = Task(comm if comm is not None else str(pid), pid, tid)
    return task, tuple(frames)


def _empty_stacks(items: Iterable[Entry]) -> Iterator[Entry]:
    """The entries, an empty stack made ``()``: bpftrace prints one as an empty key part
    (``@[, , kworker/0:2]: 4``, or ``, , comm]`` after a stack; in JSON ``",comm"``), so an
    element whose every stack is empty looks like a scalar map's. A part is a stack where
    another element of the same map (printed together) has one: elements with an empty
    part met before the map's first stack wait for it (the map ends without one: they
    are what they look like)."""
    name = None
    where: set = set()
    held: list = []
    for e in items:
        if e.name != name:
            yield from held
            held, name, where = [], e.name, set()
        if e.buckets is None:
            at = {i for i, p in enumerate(e.keys) if is_stack(p)}
            if not at <= where:
                where |= at
                for h in held:
                    yield _with_empty(h, where)
                held = []
            if "" in e.keys and isinstance(e.value, int):
                if not where:
                    held.append(e)
                    continue
                e = _with_empty(e, where)
        yield e
    yield from held


def _with_empty(e: Entry, where: set) -> Entry:
    keys = tuple(() if p == "" and i in where else p for i, p in enumerate(e.keys))
    return e if keys == e.keys else Entry(e.name, keys, e.buckets, e.value, e.lineno)


def records(items: Iterable[Entry], opts: ParseOptions, stats: Optional[dict] = None) -> Iterator:
    """Histograms and Samples of the entries. A stack map's samples carry its name as
    their event (``@offcpu_ns``): maps weigh different things in different units, so,
    as perf script's event types, one is summed (the first, or ``--event-filter @name``)."""
    cache: dict = {}
    for e in _empty_stacks(items):
        if e.buckets is not None:
            unit = name_unit(e.name) or (opts.unit if opts.unit not in (None, SAMPLES) else "")
            kind = opts.kind or name_kind(e.name)
            keys = tuple(";".join(_OFFSET.sub("", f) for f in reversed(p)) if is_stack(p) else p
                         for p in e.keys)
            yield Histogram(e.name, keys, unit, e.buckets, kind)
        elif any(is_stack(p) for p in e.keys) and isinstance(e.value, int):
            unit = name_unit(e.name) or opts.unit or SAMPLES
            kind = ONCPU if unit == SAMPLES else (opts.kind or name_kind(e.name) or OFFCPU)
            task, stack = stack_of(e.keys, cache)
            yield Sample(stack, e.value, unit, task, None, None, "@" + e.name, kind, None,
                         e.lineno)
        elif (t := thread_time(e)) is not None:
            yield t
        elif stats is not None:
            stats["bpftrace_scalars"] = stats.get("bpftrace_scalars", 0) + 1


_THREAD_MAP = re.compile(r"_by_thread$")


def thread_time(e: Entry) -> Optional[ThreadTime]:
    """A ThreadTime of a map keyed by thread whose name says a unit and on-CPU or run-queue
    time, or blocked time ended by a timer (offconv record's ``@oncpu_ns_by_thread[comm,
    pid, tid]``, ``@runq_ns_by_thread``, ``@runq_idle_ns_by_thread[comm, tid]``,
    ``@timer_blocked_us_by_thread``): the keys' name part is the comm, their last
    number the tid, the number before it the pid; None for any other map."""
    value, count = e.value, None
    if isinstance(value, dict) and "total" in value:   # stats(): count, average, total
        value, count = value["total"], value["count"]
    if not (_THREAD_MAP.search(e.name) and isinstance(value, int) and e.keys):
        return None
    unit = name_unit(e.name)
    if not unit:
        return None
    toks = re.split(r"[^a-z0-9]+", e.name.lower())
    kind = ONCPU if ("oncpu" in toks or "on_cpu" in e.name.lower()) else name_kind(e.name)
    timer = "timer" in toks
    if kind not in (ONCPU, RUNQ) and not (kind == BLOCKED and timer):
        return None
    names = [p for p in e.keys if isinstance(p, str) and not _INT.match(p)]
    ints = [int(p) for p in e.keys if isinstance(p, str) and _INT.match(p)]
    if len(names) != 1 or not 1 <= len(ints) <= 2 or len(names) + len(ints) != len(e.keys):
        return None
    task = Task(names[0], ints[0] if len(ints) == 2 else None, ints[-1])
    return ThreadTime("@" + e.name, task, value, unit, kind, "idle" in toks, timer, count)


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None) -> Iterator:
    yield from records(stream_entries(lines, path, opts.lenient, stats), opts, stats)


_ATTACH = re.compile(r"^Attach(?:ing|ed) \d+ probes?(?:\.\.\.)?$")
_HEAD = re.compile(r"^@[A-Za-z_0-9.]*(?:\[.*\])?: ?$")
_MAPLINE = re.compile(r"^@[A-Za-z_0-9.]*(?:\[.*\])?: \S")
_ROW = re.compile(r"^[\[(].*[)\]] +\d+ \|[@ ]*\|$")
_OPEN = re.compile(r"^@[A-Za-z_0-9.]*\[[^\]]*$")


def sniff(head: list[str]) -> str:
    """yes: 'Attaching N probes...' as the first line, or a map head followed by a
    histogram row, or a map line / stack key; no: the first line is a folded line, a perf
    header, JSON, or anything else before any map."""
    prev = None
    for line in head:
        s = line.rstrip()
        if not s:
            continue
        if prev is None and _ATTACH.match(s):
            return YES
        if prev is not None and _HEAD.match(prev) and _ROW.match(s):
            return YES
        if _MAPLINE.match(s) or (prev is not None and _OPEN.match(prev) and s[0] in " \t"):
            return YES
        if s.startswith("{") or s[0] in " \t":
            return NO
        prev = s
    return MAYBE if prev is not None and _HEAD.match(prev) else NO


FORMAT = InputFormat(name="bpftrace", sniff=sniff, parse=parse,
                     description="bpftrace text output (hist, lhist, stack-keyed and scalar maps)")
