"""Latency distributions: nearest-rank percentiles over exact durations, and bpftrace-style
log2 histograms (computed once per profile).

The durations of a trace are kept as ``array("q")`` of ns (8 bytes each). ``Runs`` reads a
multiset of them without making one Python int per value (``sorted(values)`` of a million
durations is a ~40 MB list): it copies them into sorted runs of at most ``RUN`` values
(the only Python list is one run being sorted) and answers ranks and counts by binary
search. The answers are those of the sorted list, exactly."""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from offconv.model.units import ns_to_us

RUN = 1 << 16   # values per sorted run (the one transient list: RUN Python ints)


class Runs:
    """An ascending multiset of ints as a few sorted arrays. ``Runs(seqs)``: the values of
    every sequence in ``seqs`` (arrays, lists), in any order."""

    __slots__ = ("runs", "count")

    def __init__(self, seqs=()):
        self.runs: list = []
        batch = array("q")
        for seq in seqs:
            if len(seq) >= RUN:
                for i in range(0, len(seq), RUN):
                    self._flush(seq[i:i + RUN])
                continue
            batch.extend(seq) if isinstance(seq, array) else batch.extend(array("q", seq))
            if len(batch) >= RUN:
                self._flush(batch)
                batch = array("q")
        if batch:
            self._flush(batch)
        self.count = sum(len(r) for r in self.runs)

    def _flush(self, values) -> None:
        self.runs.append(array("q", sorted(values)))

    def __len__(self) -> int:
        return self.count

    def min(self):
        return min(r[0] for r in self.runs) if self.count else None

    def max(self):
        return max(r[-1] for r in self.runs) if self.count else None

    def count_below(self, x: int) -> int:
        """How many values are < x."""
        return sum(bisect_left(r, x) for r in self.runs)

    def kth(self, k: int):
        """The k-th smallest value (1-based), as ``sorted(values)[k - 1]``."""
        if len(self.runs) == 1:
            return self.runs[0][k - 1]
        lo, hi = self.min(), self.max()
        runs = self.runs
        while lo < hi:   # the smallest x with k values <= x: a value of the multiset
            mid = (lo + hi) // 2
            if sum(bisect_right(r, mid) for r in runs) >= k:
                hi = mid
            else:
                lo = mid + 1
        return lo


def _runs(values) -> Runs:
    return values if isinstance(values, Runs) else Runs((values,))


def percentile(sorted_values, p: int):
    """Nearest-rank percentile of an ascending sequence or a ``Runs`` (None when empty)."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, -(-p * n // 100))
    if isinstance(sorted_values, Runs):
        return sorted_values.kth(rank)
    return sorted_values[rank - 1]


def latency_stats(values) -> dict:
    """count, p50/p90/p99/max in integer µs (rounded) over ns durations (any order, or a
    ``Runs``)."""
    s = _runs(values)
    out = {"count": len(s)}
    for p in (50, 90, 99):
        v = percentile(s, p)
        out[f"p{p}_us"] = 0 if v is None else ns_to_us(v)
    out["max_us"] = ns_to_us(s.max()) if len(s) else 0
    return out


def log2_buckets(values_ns) -> tuple:
    """bpftrace hist() buckets of floor-µs values: (0,1) for [0], (1,2) for [1], then
    [2^k, 2^(k+1)); only from the first to the last non-empty bucket. ``values_ns``: ns
    durations, or a ``Runs`` of them."""
    if isinstance(values_ns, Runs) and values_ns.count and values_ns.min() >= 0:
        return _log2_runs(values_ns)
    counts: dict = {}
    for ns in values_ns if not isinstance(values_ns, Runs) else (
            v for r in values_ns.runs for v in r):
        us = ns // 1000
        lo = 0 if us == 0 else 1 << (us.bit_length() - 1)
        counts[lo] = counts.get(lo, 0) + 1
    if not counts:
        return ()
    los = [0, 1]
    while los[-1] < max(counts):
        los.append(los[-1] * 2)
    first = min(counts)
    return tuple((lo, 1 if lo == 0 else lo * 2, counts.get(lo, 0))
                 for lo in los if lo >= first and lo <= max(counts))


def _log2_runs(r: Runs) -> tuple:
    """log2_buckets of non-negative values, counted by binary search per bucket bound."""
    top_us = r.max() // 1000
    hi_lo = 0 if top_us == 0 else 1 << (top_us.bit_length() - 1)
    los = [0]
    while los[-1] < hi_lo:
        los.append(los[-1] * 2 or 1)
    below = [r.count_below(lo * 1000) for lo in los[1:]] + [r.count]
    counts = [b - a for a, b in zip([0] + below[:-1], below)]
    first = next(i for i, n in enumerate(counts) if n)
    return tuple((lo, 1 if lo == 0 else lo * 2, n)
                 for i, (lo, n) in enumerate(zip(los, counts)) if i >= first)
