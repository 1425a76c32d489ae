"""Latency distributions: nearest-rank percentiles over exact durations, and bpftrace-style
log2 histograms (computed once per profile)."""
from __future__ import annotations

from .units import ns_to_us


def percentile(sorted_values, p: int):
    """Nearest-rank percentile of an ascending sequence (None when empty)."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, -(-p * n // 100))
    return sorted_values[rank - 1]


def latency_stats(values) -> dict:
    """count, p50/p90/p99/max in integer µs (rounded) over ns durations."""
    s = sorted(values)
    out = {"count": len(s)}
    for p in (50, 90, 99):
        v = percentile(s, p)
        out[f"p{p}_us"] = 0 if v is None else ns_to_us(v)
    out["max_us"] = ns_to_us(s[-1]) if s else 0
    return out


def log2_buckets(values_ns) -> tuple:
    """bpftrace hist() buckets of floor-µs values: (0,1) for [0], (1,2) for [1], then
    [2^k, 2^(k+1)); only from the first to the last non-empty bucket."""
    counts: dict = {}
    for ns in values_ns:
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
