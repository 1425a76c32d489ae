"""bpftrace ``-f json`` output -> the same records as the text output of the same program
(offconv.inputs.bpftrace: ``Entry`` -> ``records``).

One JSON object per line (bpftrace v0.17.0, src/output.cpp JsonOutput; real lines in
tests/fixtures/bpftrace/)::

    {"type": "attached_probes", "data": {"probes": 3}}
    {"type": "hist", "data": {"@blocked_us": [{"min": 2, "max": 3, "count": 35}, ...]}}
    {"type": "hist", "data": {"@runq_us": {"cpuhog": [{"min": 8192, "max": 16383, "count": 4}]}}}
    {"type": "map", "data": {"@us": {"\\n    __schedule+1560\\n    schedule+35\\n": 3011}}}
    {"type": "stats", "data": {"@s": {"count": 2, "average": 15, "total": 30}}}

Bucket ``max`` is inclusive (``{"min": 2, "max": 3}`` is the text's ``[2, 4)``); an
underflow bucket has no ``min`` (``{"max": -1}`` is ``(..., 0)``), an overflow bucket no
``max`` (``[100, ...)``). Keyed maps nest one object per key; tuple keys are joined with
``,`` (the text output uses ``, ``); a stack part is its multi-line string. ``printf``,
``lost_events``, ``time``, ``join`` and ``attached_probes`` carry no map. Blank lines
(bpftrace prints two after ``attached_probes``) are skipped.

Note: bpftrace 0.17 writes a log2 bucket of 2^31 and above with a wrong ``min``/``max``
(``{"min": -2147483648, "max": 0}`` for the text's ``[2G, 4G)``): its text output is the
one to trust there.
"""
from __future__ import annotations

import json
from typing import Iterable, Iterator, Optional

from offconv.model.errors import ParseError
from offconv.model.formats import NO, YES, MAYBE, InputFormat
from offconv.model.options import ParseOptions
from offconv.inputs.bpftrace import Entry, records

TYPES = {"attached_probes", "map", "hist", "stats", "printf", "lost_events", "time", "join",
         "helper_error", "syscall", "value", "tseries"}
EXPECTED = "a bpftrace -f json object '{\"type\": ..., \"data\": ...}'"


def split_key(key: str) -> tuple:
    """A JSON map key -> key parts: stack parts (``"\\n    f1\\n    f2\\n"``) as tuples of
    stripped frame lines (leaf first), the others split at ``,``."""
    parts: list = []
    rest = key
    while rest:
        if rest.startswith("\n"):
            end = 1
            while True:
                nl = rest.find("\n", end)
                if nl < 0:
                    end = len(rest)
                    break
                nxt = rest[nl + 1:nl + 2]
                if nxt not in (" ", "\t"):
                    end = nl + 1
                    break
                end = nl + 1
            parts.append(tuple(l.strip() for l in rest[1:end].split("\n") if l.strip()))
            rest = rest[end:]
            if rest.startswith(","):
                rest = rest[1:]
        else:
            comma = rest.find(",")
            if comma < 0:
                parts.append(rest)
                rest = ""
            else:
                parts.append(rest[:comma])
                rest = rest[comma + 1:]
    return tuple(parts)


class _Shape(ValueError):
    """JSON, but not of bpftrace's shape: its message says what the line holds instead."""


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _buckets(rows: list) -> tuple:
    if not isinstance(rows, list):
        raise _Shape(f"a histogram of {type(rows).__name__}, not a list of buckets")
    out = []
    for r in rows:
        if not isinstance(r, dict) or not _int(r.get("count")) or r["count"] < 0 \
                or not all(r.get(k) is None or _int(r[k]) for k in ("min", "max")):
            raise _Shape(f"the bucket {json.dumps(r)[:60]}, not "
                         "{\"min\": N, \"max\": N, \"count\": N}")
        lo = r.get("min")
        hi = r.get("max")
        out.append((lo, None if hi is None else hi + 1, r["count"]))
    return tuple(out)


def _value(v):
    """A map element's value; a stats() value's numbers checked (records read its total
    and count)."""
    if isinstance(v, dict) and "total" in v and not (_int(v["total"]) and _int(v.get("count"))):
        raise _Shape(f"the value {json.dumps(v)[:60]}, not stats() "
                     "{\"count\": N, \"average\": N, \"total\": N}")
    return v


def entries_of(obj: dict, lineno: int) -> Iterator[Entry]:
    kind = obj.get("type")
    data = obj.get("data")
    if kind not in ("hist", "map", "stats") or not isinstance(data, dict):
        return
    for full, value in data.items():
        name = full[1:] if full.startswith("@") else full
        if kind == "hist":
            if isinstance(value, list):
                yield Entry(name, (), _buckets(value), lineno=lineno)
            elif isinstance(value, dict):
                for k, rows in value.items():
                    yield Entry(name, split_key(k), _buckets(rows), lineno=lineno)
            else:
                raise _Shape(f"a histogram of {type(value).__name__}, not a list of buckets")
        elif isinstance(value, dict) and not (kind == "stats" and "count" in value
                                              and "average" in value):
            for k, v in value.items():
                yield Entry(name, split_key(k), value=_value(v), lineno=lineno)
        else:
            yield Entry(name, (), value=_value(value), lineno=lineno)


def entries(lines: Iterable[tuple[int, str]], path: str, lenient: bool = False,
            stats: Optional[dict] = None) -> Iterator[Entry]:
    for lineno, line in lines:
        s = line.strip()
        if not s:
            continue
        try:
            obj = json.loads(s)
            if not isinstance(obj, dict) or "type" not in obj:
                raise _Shape("a JSON value without a type")
            found = list(entries_of(obj, lineno))
        except (ValueError, RecursionError) as e:
            if not lenient:
                raise ParseError(path, lineno, EXPECTED, got=_got(e), line=line) from None
            if stats is not None:
                stats["skipped_lines"] = stats.get("skipped_lines", 0) + 1
                stats.setdefault("first_skipped", f"{path}:{lineno}")
            continue
        yield from found


def _got(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):   # where: a long line's quote shows 200 characters
        return f"not JSON ({e.msg} at column {e.colno})"
    if isinstance(e, RecursionError):
        return "JSON nested too deeply to read"
    if isinstance(e, _Shape):
        return str(e)
    return f"not JSON ({e})"   # (a number of more than 4300 digits)


def parse(lines: Iterable[tuple[int, str]], path: str, opts: ParseOptions = ParseOptions(),
          stats: Optional[dict] = None) -> Iterator:
    yield from records(entries(lines, path, opts.lenient, stats), opts, stats)


def sniff(head: list[str]) -> str:
    """yes: the first non-blank line is a JSON object with a bpftrace ``type``."""
    for line in head:
        s = line.strip()
        if not s:
            continue
        if not s.startswith("{"):
            return NO
        try:
            obj = json.loads(s)
        except RecursionError:
            return MAYBE   # nested deeper than Python reads: the parser says so, at its line
        except ValueError:
            return MAYBE if len(s) > 4096 else NO
        return YES if isinstance(obj, dict) and obj.get("type") in TYPES else NO
    return NO


FORMAT = InputFormat(name="bpftrace-json", sniff=sniff, parse=parse,
                     description="bpftrace -f json output (one JSON object per line)")
