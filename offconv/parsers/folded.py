"""Folded stacks -> Sample records.

The format of stackcollapse-*.pl, inferno-collapse-*, bcc ``offcputime -f`` and
``offwaketime -f`` (FlameGraph README; bcc tools/offcputime.py)::

    java;start_thread;JavaMain;jni_CallStaticVoidMethod 22
    iperf;[unknown];__libc_write;entry_SYSCALL_64_fastpath;sys_write 1.5
    func_a;main 81 88            <- differential (difffolded.pl): before after

Frames are separated by ';'; the count is the last space-separated field (bcc comms and
demangled names may contain spaces, so split at the last space). Counts may be
fractional. ``#`` comment lines and blank lines are skipped.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional

from ..errors import ParseError
from ..format_types import MAYBE, NO, YES, InputFormat
from ..model import INLINE, JIT, KERNEL, ONCPU, SAMPLES, USER, Frame, Sample
from ..options import ParseOptions

EXPECTED = "a folded stack 'frame;frame;... count'"
_COUNT = re.compile(r"^\d+(?:\.\d*)?$")
# stackcollapse's annotations say the kind; the name keeps them (the folded renderer does
# not annotate a name twice), so a folded file passes through unchanged
_KINDS = (("_[k]", KERNEL), ("_[j]", JIT), ("_[i]", INLINE))


def frame(text: str, cache: dict) -> Frame:
    f = cache.get(text)
    if f is None:
        kind = USER
        if text.endswith("]"):
            for suffix, k in _KINDS:
                if text.endswith(suffix):
                    kind = k
                    break
        f = cache[text] = Frame(text, "", kind)
    return f


def _number(text: str):
    return float(text) if "." in text else int(text)


def split_line(line: str):
    """(frames_text, count_text, before_text|None) or None."""
    head, sep, last = line.rpartition(" ")
    if not sep or not _COUNT.match(last):
        return None
    head2, sep2, mid = head.rpartition(" ")
    if sep2 and _COUNT.match(mid) and head2:
        return head2, last, mid
    if not head:
        return None
    return head, last, None


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None) -> Iterator[Sample]:
    cache: dict = {}
    for lineno, line in lines:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        parts = split_line(line)
        if parts is None:
            if opts.lenient:
                if stats is not None:
                    stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
                    stats.setdefault("first_skipped", f"{path}:{lineno}")
                continue
            last = line.rpartition(" ")[2]
            got = f"no count after the stack" if last == line else f"'{last[:40]}' as the count"
            raise ParseError(path, lineno, EXPECTED, got=got, line=line)
        frames, count, before = parts
        yield Sample(tuple(frame(f, cache) for f in frames.split(";")), _number(count),
                     SAMPLES, None, None, None, "", ONCPU,
                     _number(before) if before is not None else None, lineno)


def sniff(head: list[str]) -> str:
    """yes when most of the first lines are folded stacks (a bad line among them is left
    to the parser, which names it by file and line); no when most are not."""
    seen = bad = 0
    for line in head:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        if line[0] in " \t" or split_line(line) is None:
            bad += 1
            if bad > 8 and bad > seen:
                return NO  # clearly something else: stop looking
            continue
        seen += 1
    if not bad:
        return YES if seen else MAYBE
    return YES if seen > 2 * bad else (MAYBE if seen > bad else NO)


FORMAT = InputFormat(name="folded", sniff=sniff, parse=parse,
                     description="folded stacks (stackcollapse, inferno, bcc -f)")
