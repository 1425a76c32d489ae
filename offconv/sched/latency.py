"""Latency distributions: nearest-rank percentiles over durations, and bpftrace-style log2
histograms (computed once per profile).

The durations of a trace are kept as ``array("q")`` of ns (8 bytes each), one sequence per
thread and kind of wait, exactly up to ``EXACT_MAX`` values. A sequence that grows past it
becomes ``Buckets``: a count and a sum per log-linear bucket (1 µs wide below 256 µs, then
128 buckets an octave), so a thread that waits a hundred million times in a 10 GB stream
holds at most a few thousand of them. A value read back from a bucket is the mean of its
values: within 1 µs below 256 µs and 0.8% above (exact when they are all the same); the
buckets' bounds are whole µs on every power of two, so a log2 µs histogram
(``log2_buckets``) counts them exactly.

``Runs`` reads a multiset of them without making one Python int per value (``sorted(values)``
of a million durations is a ~40 MB list): it copies the exact ones into sorted runs of at
most ``RUN`` values (the only Python list is one run being sorted), sums the bucketed ones
into one weighted run, and answers ranks and counts by binary search. Over exact sequences
the answers are those of the sorted list, exactly."""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, repeat

from offconv.model.units import ns_to_us

RUN = 1 << 16   # values per sorted run (the one transient list: RUN Python ints)
EXACT_MAX = 1 << 10   # values a sequence keeps exactly (8 KB) before it becomes Buckets
FINE_US = 256         # below it, buckets 1 µs wide; above, the top 8 bits of the µs kept


def bucket_of(ns: int) -> int:
    """The lower bound (ns) of ``ns``'s bucket in Buckets."""
    us = ns // 1000
    if us < FINE_US:
        return us * 1000
    e = us.bit_length() - 8
    return (us >> e << e) * 1000


class Buckets:
    """A sequence of durations (ns) past ``EXACT_MAX`` values, as a count and a sum per
    bucket (keyed by its lower bound, ``bucket_of``): a bucket's values read back as their
    mean, within the bucket (exact when they are all the same). It is used where an
    ``array("q")`` of the durations is: ``append``, ``extend``, ``remove``, ``len``,
    iteration (each bucket's mean as often as counted, ascending)."""

    __slots__ = ("counts", "sums", "n")

    def __init__(self, values=()):
        self.counts: dict = {}
        self.sums: dict = {}
        self.n = 0
        self.extend(values)

    def append(self, ns: int) -> None:
        k = bucket_of(ns)
        c = self.counts
        c[k] = c.get(k, 0) + 1
        self.sums[k] = self.sums.get(k, 0) + ns
        self.n += 1

    def extend(self, values) -> None:
        c, s = self.counts, self.sums
        if values.__class__ is Buckets:
            for k, n in values.counts.items():
                c[k] = c.get(k, 0) + n
                s[k] = s.get(k, 0) + values.sums[k]
            self.n += values.n
            return
        for ns in values:
            k = bucket_of(ns)
            c[k] = c.get(k, 0) + 1
            s[k] = s.get(k, 0) + ns
            self.n += 1

    def remove(self, ns: int) -> None:
        k = bucket_of(ns)
        n = self.counts.get(k)
        if not n:
            raise ValueError("Buckets.remove(x): x not in the sequence")
        if n == 1:
            del self.counts[k], self.sums[k]
        else:
            self.counts[k] = n - 1
            self.sums[k] -= ns
        self.n -= 1

    def means(self):
        """(bucket, its values' mean, how many), ascending."""
        for k in sorted(self.counts):
            n = self.counts[k]
            yield k, _mean(self.sums[k], n), n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for _, v, n in self.means():
            yield from repeat(v, n)

    def __repr__(self) -> str:
        return f"Buckets({self.n} values in {len(self.counts)} buckets)"


def _mean(total: int, n: int) -> int:
    """total / n rounded to the nearest int (halves up): within the values' bucket."""
    return (2 * total + n) // (2 * n)


def grown(seq):
    """``seq`` as it should be kept: an exact array past EXACT_MAX values as Buckets."""
    if len(seq) >= EXACT_MAX and seq.__class__ is not Buckets:
        return Buckets(seq)
    return seq


def merged(dest, src):
    """``dest`` with the values of ``src`` added (either an array or Buckets), as kept."""
    if dest.__class__ is Buckets or src.__class__ is Buckets:
        if dest.__class__ is not Buckets:
            dest = Buckets(dest)
        dest.extend(src)
        return dest
    dest.extend(src)
    return grown(dest)


class Runs:
    """An ascending multiset of ints as a few sorted arrays. ``Runs(seqs)``: the values of
    every sequence in ``seqs`` (arrays, lists), in any order."""

    __slots__ = ("runs", "count", "values", "upto")

    def __init__(self, seqs=()):
        self.runs: list = []
        batch = array("q")
        weights: dict = {}   # bucket -> [count, sum] of every Buckets in seqs
        for seq in seqs:
            if seq.__class__ is Buckets:
                for k, n in seq.counts.items():
                    w = weights.get(k)
                    if w is None:
                        weights[k] = [n, seq.sums[k]]
                    else:
                        w[0] += n
                        w[1] += seq.sums[k]
                continue
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
        # the bucketed values (each bucket's mean): ascending, and how many are <= each
        keys = sorted(weights)
        self.values = array("q", (_mean(weights[k][1], weights[k][0]) for k in keys))
        self.upto = array("q", accumulate(weights[k][0] for k in keys))
        self.count = sum(len(r) for r in self.runs) + (self.upto[-1] if self.upto else 0)

    def _flush(self, values) -> None:
        self.runs.append(array("q", sorted(values)))

    def __len__(self) -> int:
        return self.count

    def _ends(self, i: int) -> list:
        return [r[i] for r in self.runs] + ([self.values[i]] if self.values else [])

    def min(self):
        return min(self._ends(0)) if self.count else None

    def max(self):
        return max(self._ends(-1)) if self.count else None

    def count_below(self, x: int) -> int:
        """How many values are < x."""
        n = sum(bisect_left(r, x) for r in self.runs)
        i = bisect_left(self.values, x)
        return n + self.upto[i - 1] if i else n

    def count_upto(self, x: int) -> int:
        """How many values are <= x."""
        n = sum(bisect_right(r, x) for r in self.runs)
        i = bisect_right(self.values, x)
        return n + self.upto[i - 1] if i else n

    def items(self):
        """(value, how many times) in no particular order."""
        for r in self.runs:
            yield from zip(r, repeat(1))
        yield from zip(self.values, (b - a for a, b in zip(
            accumulate(self.upto[:-1], initial=0), self.upto)))

    def kth(self, k: int):
        """The k-th smallest value (1-based), as ``sorted(values)[k - 1]``."""
        if len(self.runs) == 1 and not self.values:
            return self.runs[0][k - 1]
        lo, hi = self.min(), self.max()
        while lo < hi:   # the smallest x with k values <= x: a value of the multiset
            mid = (lo + hi) // 2
            if self.count_upto(mid) >= k:
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
    for ns, n in values_ns.items() if isinstance(values_ns, Runs) else zip(values_ns, repeat(1)):
        us = ns // 1000
        lo = 0 if us == 0 else 1 << (us.bit_length() - 1)
        counts[lo] = counts.get(lo, 0) + n
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
