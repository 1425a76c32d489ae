"""Units and the one duration formatter every output uses (report, SVG, hist, notes)."""
from __future__ import annotations


def ns_to_us(ns: int) -> int:
    """Round to the nearest µs (half up): the only ns -> µs conversion."""
    return (ns + 500) // 1000


_SCALES = ((1_000_000, "s"), (1_000, "ms"), (1, "µs"))


def three_digits(x: float) -> str:
    """About three significant digits: 12.4, 3.1, 125, 1,234."""
    if x >= 100:
        return f"{x:,.0f}"
    text = f"{x:.1f}" if x >= 10 else f"{x:.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def human_us(us, micro: str = "µs") -> str:
    """A duration given in µs, in the unit that reads best, about three significant digits:
    850 µs, 50.3 ms, 2.26 s, 1.5 µs ('-' for None: a quantity the recording cannot
    measure). The one duration formatter of every output (report, SVG, diff, hist notes);
    ``micro`` is how µs is written (the SVG writes ``us`` when --countname says so)."""
    if us is None:
        return "-"
    sign = "-" if us < 0 else ""
    mag = abs(us)
    for scale, unit in _SCALES:
        if mag >= scale:
            break
    else:
        if mag == 0:
            return f"0 {micro}"
        return f"{sign}{mag * 1000:.0f} ns" if mag < 0.01 else f"{sign}{three_digits(mag)} {micro}"
    return f"{sign}{three_digits(mag / scale)} {micro if unit == 'µs' else unit}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 thread', '2 threads' (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
