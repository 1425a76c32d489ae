"""Units and the one duration formatter every output uses (report, SVG, hist, notes)."""
from __future__ import annotations


def ns_to_us(ns: int) -> int:
    """Round to the nearest µs (half up): the only ns -> µs conversion."""
    return (ns + 500) // 1000


def human_us(us) -> str:
    """A duration in the unit that reads best: 850 µs, 50.3 ms, 2.26 s ('-' for None: a
    quantity the recording cannot measure)."""
    if us is None:
        return "-"
    sign = "-" if us < 0 else ""
    us = abs(us)
    if us < 1000:
        return f"{sign}{us:.0f} µs" if isinstance(us, float) else f"{sign}{us} µs"
    if us < 1_000_000:
        return f"{sign}{us / 1000:.1f} ms"
    return f"{sign}{us / 1_000_000:.2f} s"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 thread', '2 threads' (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
