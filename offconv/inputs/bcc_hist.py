"""bcc histogram text (runqlat, cpudist [-O], biolatency, ext4dist, runqlen, ...) ->
Histogram records.

As bcc's ``table.py`` prints them (``_print_log2_hist``, ``_print_linear_hist``; real
output in bcc's tools/*_example.txt, tests/fixtures/bcc/)::

    Tracing run queue latency... Hit Ctrl-C to end.

    03:46:51                                      <- -T / interval output
    pid = 12929                                   <- per-key sections (-P, -L, --pidnss, -D)
         usecs               : count     distribution
             0 -> 1          : 233      |***********                             |
             2 -> 3          : 742      |************************************    |

    (wide form when the top slot is above 32: '%20d -> %-20d : %-8d |%-20s|'; linear
    tables such as runqlen: '        0          : 1776     |****|')

A log2 row ``a -> b`` covers a..b inclusive (slot 1 is ``0 -> 1``, slot i is
[2^(i-1), 2^i - 1]), so its bucket is (a, b + 1); a linear row ``v`` is (v, v + 1). The
label (``usecs``, ``msecs``, ``nsecs``) gives the unit. The banner gives the kind
(``run queue latency`` -> runq, ``off-CPU time`` -> blocked; ``--kind`` overrides) and a
tool prefix for the name, so runqlat's and cpudist's ``usecs`` do not merge. Tables with
the same name and key (interval output) merge bucket-wise later (offconv.sched.histograms).
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.model.formats import MAYBE, NO, YES, InputFormat
from offconv.model.records import BLOCKED, RUNQ, Histogram
from offconv.model.options import ParseOptions

EXPECTED = "a bcc histogram row 'lo -> hi : count |***|'"
_HEADER = re.compile(r"^\s*(\S.*?)\s*: count\s+distribution\s*$")
_LOG2 = re.compile(r"^\s*(\d+) -> (\d+)\s*: (\d+)\s*\|[* ]*\|\s*$")
_LINEAR = re.compile(r"^\s*(\d+)\s*: (\d+)\s*\|[* ]*\|\s*$")
_KEY = re.compile(r"^(\w+) = '?(.*?)'?\s*$")
_TIME = re.compile(r"^\d\d:\d\d:\d\d\s*$")
_UNITS = {"usecs": "us", "msecs": "ms", "nsecs": "ns", "secs": "s"}
# banner -> (tool prefix, kind)
_BANNERS = (("run queue latency", "runqlat", RUNQ), ("off-cpu time", "offcpu", BLOCKED),
            ("on-cpu time", "oncpu", ""), ("block device i/o", "biolatency", ""))


def _banner(line: str):
    low = line.lower()
    if not low.startswith("tracing"):
        return None
    for text, tool, kind in _BANNERS:
        if text in low:
            return tool, kind
    return "", ""


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None) -> Iterator[Histogram]:
    tool, kind = "", ""
    key: tuple = ()
    table = None      # (label, first lineno)
    rows: list = []

    def flush():
        label = table[0]
        name = f"{tool}_{label}" if tool else label
        return Histogram(name, key, _UNITS.get(label, ""), tuple(rows), opts.kind or kind)

    for lineno, line in lines:
        s = line.strip()
        if table is not None:
            m = _LOG2.match(line)
            if m:
                rows.append((int(m.group(1)), int(m.group(2)) + 1, int(m.group(3))))
                continue
            m = _LINEAR.match(line)
            if m:
                v = int(m.group(1))
                rows.append((v, v + 1, int(m.group(2))))
                continue
            if s and (line[:1] in " \t") and ("|" in s or "->" in s or ":" in s) \
                    and not _HEADER.match(line):
                if opts.lenient:
                    if stats is not None:
                        stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
                        stats.setdefault("first_skipped", f"{path}:{lineno}")
                    continue
                raise ParseError(path, lineno, EXPECTED, got=f"'{s[:60]}'", line=line)
            if rows:
                yield flush()
            table, rows = None, []
            if not _HEADER.match(line):
                key = ()
        m = _HEADER.match(line)
        if m:
            table, rows = (m.group(1), lineno), []
            continue
        if not s:
            continue
        b = _banner(s)
        if b is not None:
            tool, kind = b
            continue
        m = _KEY.match(s)
        if m and not _TIME.match(s):
            key = (f"{m.group(1)}={m.group(2)}",)
    if table is not None and rows:
        yield flush()


def _quiet(line: str) -> bool:
    """A line bcc prints around its tables when it has none to print: blank, the ``^C``
    the terminal echoes, an interval's time, a section's key (``pid = 123``)."""
    return not line or line == "^C" or line == "Detaching..." or _TIME.match(line) is not None \
        or _KEY.match(line) is not None


def sniff(head: list[str]) -> str:
    """yes: a ``LABEL : count distribution`` table header line. maybe: a bcc banner
    (``Tracing run queue latency... Hit Ctrl-C to end.``) and no table -- none had events
    (bcc prints a table only when it has one) -- with nothing else but what bcc prints
    around tables (bcc's other tools print other lines after the same banner)."""
    banner = other = False
    for line in head:
        if _HEADER.match(line):
            return YES
        s = line.strip()
        if s.lower().endswith("hit ctrl-c to end."):
            banner = True
        elif not _quiet(s):
            other = True
    return MAYBE if banner and not other else NO


FORMAT = InputFormat(name="bcc-hist", sniff=sniff, parse=parse,
                     description="bcc histogram text (runqlat, cpudist, biolatency, ...)")
