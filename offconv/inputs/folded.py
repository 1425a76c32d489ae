"""Folded stacks -> Sample records, all the dialects.

The format of stackcollapse-*.pl, inferno-collapse-*, bcc ``offcputime -f``,
``offwaketime -f`` and ``wakeuptime -f`` (FlameGraph README; bcc tools/offcputime.py,
offwaketime.py, wakeuptime.py; real lines from bcc's tools/*_example.txt)::

    java;start_thread;JavaMain;jni_CallStaticVoidMethod 22
    iperf;[unknown];__libc_write;entry_SYSCALL_64_fastpath;sys_write 1.5
    func_a;main 81 88            <- differential (difffolded.pl): before after

Frames are separated by ';'; the count is the last field, after a run of spaces or tabs
(as flamegraph.pl reads it; bcc comms and demangled names may contain spaces, so split at
the last run; the frames keep no white space at their end). Counts may be fractional.
``#`` comment lines and blank lines are skipped.

The dialect is decided once per file from its first lines (a folded line says nothing of
its unit, so only bcc's own markers can tell):

- **offcputime** (bcc 0.x, ``offcputime -f [-d]``): ``comm;USER root->leaf;-;KERNEL
  root->leaf US`` -- the ``-`` delimiter frame (``-d``) or a ``[Missed User Stack]`` /
  ``[Missed Kernel Stack]`` placeholder marks it. The comm becomes the Sample's task,
  frames before ``-`` are user frames, after it kernel frames; weights are µs, kind
  ``offcpu``.
- **offwaketime** (``offwaketime -f``): ``target;T_USER;[-;]T_KERNEL;--;W_KERNEL
  leaf->root;[-;]W_USER leaf->root;waker US`` -- the ``--`` frame marks it; kind
  ``wakeup``, µs, the waker comm a THREAD frame at the top.
- **offwaketime, old layout** (bcc's offwaketime_example.txt, 2016): ``target;T_KERNEL;-;
  W_KERNEL leaf->root;waker US`` with ``-`` as the target/waker delimiter and empty
  frames where a half is missing (``...;preempt_schedule_common;-; 2``, ``...;;sshd 804``):
  a ``-`` followed by an empty frame marks it. Stacks are kernel stacks.
- **plain** (stackcollapse, inferno, ``wakeuptime -f``, offcputime without ``-d``):
  counts in ``samples`` and kind ``oncpu`` unless ``--unit`` (or ``--countname``) names a
  time unit, which makes them off-CPU time (``--kind blocked|runq`` narrows it).
  ``--unit`` also overrides the µs of the bcc dialects.
"""
from __future__ import annotations

import re
from itertools import chain, islice
from typing import Iterable, Iterator, Optional

from offconv.model.stacktable import COMPACT_MIN, StackTable
from offconv.model.errors import ParseError
from offconv.model.formats import MAYBE, NO, YES, InputFormat
from offconv.model.records import DELIMITER, INLINE, JIT, KERNEL, MARKER, OFFCPU, ONCPU, SAMPLES, THREAD, USER, WAKER_DELIMITER, WAKEUP, Frame, Sample, Task
from offconv.model.options import ParseOptions

EXPECTED = "a folded stack 'frame;frame;... count'"
_COUNT = re.compile(r"^\d+(?:\.\d*)?$")
# stackcollapse's annotations say the kind; the name keeps them (the folded renderer does
# not annotate a name twice), so a folded file passes through unchanged
_KINDS = (("_[k]", KERNEL), ("_[j]", JIT), ("_[i]", INLINE))

PLAIN, OFFCPUTIME, OFFWAKETIME, OFFWAKETIME_OLD = "plain", "offcputime", "offwaketime", "offwaketime-old"
MISSED_USER = "[Missed User Stack]"
MISSED_KERNEL = "[Missed Kernel Stack]"
DIALECT_LINES = 200
_ANNOTATED = re.compile(r"_\[[kjiw]\](?:;|$)")


class _PlainFrames(dict):
    """frame text -> Frame of a plain folded line, made on the first lookup: the kind from
    stackcollapse's annotation, if the text carries one."""

    def __missing__(self, text: str) -> Frame:
        kind = USER
        if text.endswith("]"):
            for suffix, k in _KINDS:
                if text.endswith(suffix):
                    kind = k
                    break
        f = self[text] = Frame(text, "", kind)
        return f


def _number(text: str):
    return float(text) if "." in text else int(text)


def _is_count(text: str) -> bool:
    return text.isdecimal() or _COUNT.match(text) is not None  # the common case without the regex


def _last_field(text: str) -> tuple:
    """(the text before the last run of spaces and tabs, the field after it); (None, text)
    when it has none. The text before keeps none of the run, except where the run is all
    of its last frame: stackcollapse-perf.pl folds an address without a symbol into a
    frame ' ' (``...;  3``), kept as flamegraph.pl keeps it (all the run but one)."""
    i = max(text.rfind(" "), text.rfind("\t"))
    if i < 0:
        return None, text
    head = text[:i]
    if head[-1:] in (" ", "\t"):
        stripped = head.rstrip(" \t")
        if stripped and stripped[-1] != ";":
            head = stripped
    return head, text[i + 1:]


def split_line(line: str):
    """(frames_text, count_text, before_text|None) or None."""
    head, last = _last_field(line)
    if head is None or not _is_count(last):
        return None
    head2, mid = _last_field(head)
    if head2 and _is_count(mid):
        return head2, last, mid
    if not head:
        return None
    return head, last, None


# a line shaped like a folded line whose count is malformed (negative, signed, with an
# exponent): a folded input with a bad line -- the parser names it -- not another format
_BAD_COUNT = re.compile(r"[^\s:][ \t]+[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def complete_line(line: str) -> bool:
    """Whether a line is whole as it stands: blank, a comment, or a stack and its count
    (the last line of an input without a final newline is then not cut short)."""
    line = line.rstrip()
    return not line or line[0] == "#" or split_line(line) is not None


def dialect(lines: Iterable[str]) -> str:
    """Which folded dialect these lines are (module docstring), from bcc's markers."""
    offcpu = wake = False
    for line in lines:
        parts = split_line(line.rstrip())
        if parts is None:
            continue
        if _ANNOTATED.search(parts[0]):
            return PLAIN  # stackcollapse's _[k] annotations: bcc never writes them
        frames = parts[0].split(";")
        if "--" in frames:
            wake = True
            continue
        if "-" in frames:
            i = frames.index("-")
            if "" in frames[i + 1:]:
                return OFFWAKETIME_OLD
            offcpu = True
        elif any(f.startswith("[Missed ") for f in frames):
            offcpu = True
    return OFFWAKETIME if wake else OFFCPUTIME if offcpu else PLAIN


def _half(names: list, default: str, cache: dict) -> list:
    """Frames of one stack half: ``-`` splits user (before) from kernel (after); the
    placeholders tell the side of a missing stack; empty frames are dropped."""
    out = []
    kind = default
    if "-" in names:
        kind = USER
    elif names and names[0] == MISSED_USER:
        kind = KERNEL
    for n in names:
        if n == "-":
            out.append(DELIMITER)
            kind = KERNEL
        elif n == MISSED_USER:
            out.append(_frame(n, USER, cache))
        elif n == MISSED_KERNEL:
            out.append(_frame(n, KERNEL, cache))
        elif n:
            out.append(_frame(n, kind, cache))
    return out


def _frame(name: str, kind: str, cache: dict) -> Frame:
    key = (name, kind)
    f = cache.get(key)
    if f is None:
        f = cache[key] = Frame(name, "", kind)
    return f


def _thread(comm: str, cache: dict) -> Frame:
    key = ("\0thread", comm)
    f = cache.get(key)
    if f is None:
        f = cache[key] = Frame(comm, "", THREAD, Task(comm, None, None))
    return f


def bcc_stack(names: list, which: str, cache: dict) -> tuple:
    """(task, stack) of a bcc line's frames (the comm first)."""
    comm, rest = names[0], names[1:]
    task = Task(comm, None, None)
    if which == OFFCPUTIME:
        return task, tuple(_half(rest, USER, cache))
    if which == OFFWAKETIME:
        if "--" in rest:
            i = rest.index("--")
            target, waker = rest[:i], rest[i + 1:]
            waker_comm = waker.pop() if waker else ""
            # the waker half is leaf->root: kernel frames first, then '-', then user
            wk = []
            kind = KERNEL
            for n in waker:
                if n == "-":
                    wk.append(DELIMITER)
                    kind = USER
                elif n:
                    wk.append(_frame(n, kind, cache))
            stack = _half(target, USER, cache) + [WAKER_DELIMITER] + wk
            if waker_comm:
                stack.append(_thread(waker_comm, cache))
            return task, tuple(stack)
        return task, tuple(_half(rest, USER, cache))
    # old offwaketime: target;kernel...;-;waker kernel leaf->root;waker
    if "-" in rest:
        i = rest.index("-")
        target, waker = rest[:i], rest[i + 1:]
        waker_comm = waker.pop() if waker else ""
        stack = [_frame(n, KERNEL, cache) for n in target if n] + [WAKER_DELIMITER]
        stack += [_frame(n, KERNEL, cache) for n in waker if n]
        if waker_comm:
            stack.append(_thread(waker_comm, cache))
        return task, tuple(stack)
    return task, tuple(_frame(n, KERNEL, cache) for n in rest if n)


def _unit_kind(which: str, opts: ParseOptions) -> tuple:
    if which == PLAIN:
        unit = opts.unit or SAMPLES
        if unit == SAMPLES:
            return unit, ONCPU
        return unit, opts.kind or OFFCPU
    unit = opts.unit or "us"
    if which in (OFFWAKETIME, OFFWAKETIME_OLD):
        return unit, WAKEUP
    return unit, opts.kind or OFFCPU


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None, head: Optional[list] = None) -> Iterator[Sample]:
    """``head``: the input's first lines when ``lines`` are a later part of it (the second
    part of a split input, offconv.run.parallel): they decide the dialect, as for the whole."""
    whole = getattr(lines, "last_line_whole", None)  # a Source's lines
    which, lines = _with_dialect(lines, head)
    unit, kind = _unit_kind(which, opts)
    cache: dict = {}
    plain = _PlainFrames().__getitem__
    for lineno, line in lines:
        parts = _parts(line, lineno, path, opts, stats)
        if parts is None:
            continue
        frames, count, before = parts
        if before is not None:
            before = _number(before)
        if which == PLAIN:
            stack = tuple(map(plain, frames.split(";")))  # one C loop; a new text makes its Frame
            yield Sample(stack, _number(count), unit, None, None, None, "", kind, before, lineno)
        else:
            task, stack = bcc_stack(frames.split(";"), which, cache)
            yield Sample(stack, _number(count), unit, task, None, None, "", kind, before, lineno)
    if whole is not None:
        whole(complete_line)


def _with_dialect(lines: Iterable[tuple[int, str]], head: Optional[list] = None) -> tuple:
    """(the dialect of the first lines -- of ``head``, the input's first lines, if given --,
    all the lines)."""
    if head is not None:
        return dialect(line for line in head[:DIALECT_LINES] if line and not line.startswith("#")), lines
    lines = iter(lines)
    first = list(islice(lines, DIALECT_LINES))
    which = dialect(line for _, line in first if line and not line.startswith("#"))
    return which, chain(first, lines)


def _parts(line: str, lineno: int, path: str, opts: ParseOptions, stats: Optional[dict]):
    """split_line of the line without trailing white space; None for a blank or comment
    line, and for a malformed one with --lenient (counted; an error without)."""
    line = line.rstrip()
    if not line or line[0] == "#":
        return None
    parts = split_line(line)
    if parts is None:
        _bad_line(path, lineno, line, opts, stats)
    return parts


def sum_lines(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions,
              stats: Optional[dict], sums, head: Optional[list] = None) -> None:
    """parse into ``sums`` (an aggregate.Sums) without a Sample per line: a plain folded
    file's lines are summed straight into ``sums.counts`` (they have no thread and no
    event); the bcc dialects go through parse. ``head`` as for parse."""
    whole = getattr(lines, "last_line_whole", None)  # a Source's lines
    which, lines = _with_dialect(lines, head)
    if which != PLAIN:
        sums.add_records(parse(lines, path, opts, stats, head))
        if whole is not None:
            whole(complete_line)
        return
    unit, kind = _unit_kind(which, opts)
    frames = sums.frames = _PlainFrames()
    plain = frames.__getitem__
    counts = sums.counts
    add = counts.setdefault
    before_counts = sums.before
    first = True
    for lineno, line in lines:
        if not line or line[0] == "#":
            continue
        frames, _, count = line.rpartition(" ")
        if count.isdecimal() and frames and " " not in frames and "\t" not in frames:
            # the usual 'frames count'
            w = int(count)
            before = None
        else:
            parts = _parts(line, lineno, path, opts, stats)
            if parts is None:
                continue
            frames, count, before = parts
            w = _number(count)
        stack = tuple(map(plain, frames.split(";")))
        if first:
            first = False
            sums.accepts("", 1, unit, kind)
        n = len(counts)
        had = add(stack, w)  # one hash of the stack when it is new (a folded file's lines are)
        if len(counts) == n:
            counts[stack] = had + w
        elif n >= COMPACT_MIN and counts.__class__ is dict:   # many unique stacks: compact
            counts = sums.counts = StackTable.adopt(counts)
            add = counts.setdefault
        if w != 1:
            sums.weighted = True
        if before is not None:
            if before_counts is None:
                before_counts = sums.before = {}
            before_counts[stack] = before_counts.get(stack, 0) + _number(before)
    if whole is not None:
        whole(complete_line)


def _bad_line(path: str, lineno: int, line: str, opts: ParseOptions, stats: Optional[dict]) -> None:
    """A line that is not 'frames count': skipped and counted with --lenient, else the
    one-line error."""
    if opts.lenient:
        if stats is not None:
            stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
            stats.setdefault("first_skipped", f"{path}:{lineno}")
        return
    head, last = _last_field(line)
    got = "no count after the stack" if head is None else f"'{last[:40]}' as the count"
    raise ParseError(path, lineno, EXPECTED, got=got, line=line)


def sniff(head: list[str]) -> str:
    """yes when most of the first lines are folded stacks (a bad line among them is left
    to the parser, which names it by file and line); no when most are not. A stack with a
    malformed count (``main;foo -3``) counts for neither."""
    seen = bad = 0
    for line in head:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        if line[0] in " \t" or split_line(line) is None:
            if line[0] not in " \t" and _BAD_COUNT.search(line):
                continue
            bad += 1
            if bad > 8 and bad > seen:
                return NO  # clearly something else: stop looking
            continue
        if line[0] == "@" and line.rpartition(" ")[0].endswith(":"):
            return NO  # a bpftrace map line '@name[key]: 5'
        seen += 1
    if not bad:
        return YES if seen else MAYBE
    return YES if seen > 2 * bad else (MAYBE if seen > bad else NO)


FORMAT = InputFormat(name="folded", sniff=sniff, parse=parse, sum_lines=sum_lines,
                     description="folded stacks (stackcollapse, inferno, bcc offcputime/"
                                 "offwaketime/wakeuptime -f)")
