"""Frame colours: flamegraph.pl's palettes (and inferno's python and rust), chosen by a
stable hash of the frame name so the same input always gives the same bytes.

Default colours take three values in [0, 1) from ``zlib.crc32`` of the name (never the
salted built-in ``hash()``). ``--hash`` uses flamegraph.pl's own name hash instead (the
first three characters, weighted), which gives the colours flamegraph.pl --hash gives.
The RGB formulas per palette are flamegraph.pl's (FG:flamegraph.pl ``sub color``).
"""
from __future__ import annotations

import re
import zlib
from typing import Callable, Optional

from offconv.model.errors import OffconvError
from offconv.model.labels import FAMILY_BLOCKED, FAMILY_RUNQ, FAMILY_WAKER, KIND_INLINE, KIND_JIT, KIND_KERNEL

BASIC = ("hot", "mem", "io", "red", "green", "blue", "aqua", "yellow", "purple", "orange")
MULTI = ("wakeup", "chain", "java", "js", "perl", "python", "rust")
PALETTES = BASIC + MULTI
FLAT = ("red", "green", "blue", "aqua", "yellow", "purple", "orange")

GREY_DASH = "rgb(200,200,200)"     # frames named '-' (user/kernel delimiter)
GREY_DASHDASH = "rgb(160,160,160)"  # frames named '--' (waker/target separator)
SEARCH_FILL = "rgb(230,0,230)"

_KIND_LETTER = ((KIND_KERNEL, "k"), (KIND_JIT, "j"), (KIND_INLINE, "i"))


def _kind_letter(name: str, flags: int) -> str:
    """flamegraph.pl's annotation letter (k, j, i, w) from the frame's kind, or from an
    annotation the name carries (folded input that was annotated upstream)."""
    for bit, letter in _KIND_LETTER:
        if flags & bit:
            return letter
    if name.endswith("]"):
        m = _ANNOTATION.search(name)
        if m:
            return m.group(1)
    return ""

_GRADIENTS = {
    "yellow": ("#eeeeee", "#eeeeb0"),
    "blue": ("#eeeeee", "#e0e0ff"),
    "green": ("#eef2ee", "#e0ffe0"),
    "grey": ("#f8f8f8", "#e8e8e8"),
}
BGCOLORS = tuple(_GRADIENTS)
_HEX = re.compile(r"#[0-9a-fA-F]{6}\Z")
_ANNOTATION = re.compile(r"_\[([kwij])\]\Z")


# Each basic palette: (v1, v2, v3) -> "rgb(r,g,b)", flamegraph.pl's ranges.
_BASIC: dict[str, Callable[[float, float, float], str]] = {
    "hot": lambda a, b, c: f"rgb({205 + int(50 * c)},{int(230 * a)},{int(55 * b)})",
    "mem": lambda a, b, c: f"rgb(0,{190 + int(50 * b)},{int(210 * a)})",
    "io": lambda a, b, c: f"rgb({80 + int(60 * a)},{80 + int(60 * a)},{190 + int(55 * b)})",
    "red": lambda a, b, c: f"rgb({200 + int(55 * a)},{50 + int(80 * a)},{50 + int(80 * a)})",
    "green": lambda a, b, c: f"rgb({50 + int(60 * a)},{200 + int(55 * a)},{50 + int(60 * a)})",
    "blue": lambda a, b, c: f"rgb({80 + int(60 * a)},{80 + int(60 * a)},{205 + int(50 * a)})",
    "yellow": lambda a, b, c: f"rgb({175 + int(55 * a)},{175 + int(55 * a)},{50 + int(20 * a)})",
    "purple": lambda a, b, c: f"rgb({190 + int(65 * a)},{80 + int(60 * a)},{190 + int(65 * a)})",
    "aqua": lambda a, b, c: f"rgb({50 + int(60 * a)},{165 + int(55 * a)},{165 + int(55 * a)})",
    "orange": lambda a, b, c: f"rgb({190 + int(65 * a)},{90 + int(65 * a)},0)",
    # offconv's run-queue family: warm reds and oranges, far from the io blues
    "runq": lambda a, b, c: f"rgb({215 + int(40 * c)},{70 + int(110 * a)},{30 + int(40 * b)})",
    # the run-queue family beside on-CPU frames in hot colours (--mode wallclock): greens
    "runq_hot": lambda a, b, c: f"rgb({40 + int(60 * a)},{160 + int(60 * b)},{90 + int(50 * c)})",
}

# What an annotation suffix means in the palettes that read it (flamegraph.pl: java, js,
# perl, chain; offconv also in hot, mem and io so kernel/JIT/inline frames stand out).
_KIND_HUE = {"k": "orange", "j": "green", "i": "aqua", "w": "aqua"}


def check_palette(name: str) -> str:
    if name not in PALETTES:
        raise OffconvError(f"unknown palette {name!r} (choose from: {', '.join(PALETTES)})")
    return name


def background(bgcolors: Optional[str], palette: str) -> tuple[str, str]:
    """The two stops of the background gradient (flamegraph.pl's --bgcolors)."""
    if bgcolors is None:
        if palette == "mem":
            bgcolors = "green"
        elif palette in ("io", "wakeup", "chain"):
            bgcolors = "blue"
        elif palette in FLAT:
            bgcolors = "grey"
        else:
            bgcolors = "yellow"
    if bgcolors in _GRADIENTS:
        return _GRADIENTS[bgcolors]
    if _HEX.match(bgcolors):
        return bgcolors.lower(), bgcolors.lower()
    raise OffconvError(f"unknown background colour {bgcolors!r} "
                       f"(choose from: {', '.join(BGCOLORS)}, or #rrggbb)")


def strip_annotation(name: str) -> str:
    """``func_[k]`` -> ``func`` (the label and tooltip show names without the suffix)."""
    if name.endswith("]") and _ANNOTATION.search(name):
        return name[:-4]
    return name


def fg_namehash(data: bytes) -> float:
    """flamegraph.pl's name hash over bytes: the first three bytes (after a module prefix
    ending in a backtick), early ones weighing most; in [0, 1]."""
    tick = data.find(b"`", 1)
    if tick >= 0:
        data = data[tick + 1:]
    vector, weight, top, mod = 0.0, 1.0, 1.0, 10
    for byte in data[:3]:
        vector += ((byte % mod) / (mod - 1)) * weight
        mod += 1
        top += weight
        weight *= 0.70
    return 1 - vector / top


def stable_values(name: str) -> tuple[float, float, float]:
    """Three values in [0, 1) from crc32 of the name: stable across runs and machines."""
    h = zlib.crc32(name.encode("utf-8", "surrogatepass"))
    return (h & 0x3FF) / 1024.0, ((h >> 10) & 0x3FF) / 1024.0, ((h >> 20) & 0xFFF) / 4096.0


def _resolve_multi(palette: str, name: str, flags: int = 0) -> str:
    """Which basic hue a multi palette gives this name."""
    k = _kind_letter(name, flags)
    if palette == "wakeup":
        return "aqua"
    if palette == "chain":
        return "aqua" if k == "w" else "blue"
    if palette == "java":
        return _java(name, k)
    if palette == "js":
        return _js(name, k)
    if palette == "perl":
        if k == "k":
            return "orange"
        if "Perl" in name or ".pl" in name:
            return "green"
        return "yellow" if "::" in name else "red"
    if palette == "python":
        return _python(name)
    return _rust(name)


def _java(name: str, k: str) -> str:
    if k in ("k", "i", "j"):
        return _KIND_HUE[k]
    bare = name[1:] if name.startswith("L") else name
    if "::" in name or name.startswith(("-[", "+[")):
        return "yellow"
    if "/" in bare or ("." in bare and not bare.startswith("[")) or bare[:1].isupper():
        return "green"
    return "red"


def _js(name: str, k: str) -> str:
    if name and not name.strip():
        return "green"
    if k == "k":
        return "orange"
    if k == "j":
        return "green" if "/" in name else "aqua"
    if "::" in name:
        return "yellow"
    if ":" in name:
        return "aqua"
    slash = name.find("/")
    if slash >= 0:
        if "node_modules/" in name[slash:]:
            return "purple"
        if ".js" in name[slash:]:
            return "green"
    return "red"


_PY_VERSION = re.compile(r"[Pp]ython[0-9.]*\Z")


def _python(name: str) -> str:
    parts = re.split(r"[/\\]", name)
    if "site-packages" in parts:
        return "aqua"
    if any(p.startswith(("python", "Python")) and _PY_VERSION.match(p) for p in parts) \
            or name.startswith(("<built-in", "<method", "<frozen")):
        return "yellow"
    return "red"


def _rust(name: str) -> str:
    if name.startswith(("core::", "std::", "alloc::", "<std::", "<alloc::")) or (
            name.startswith("<core::")
            and not name.startswith("<core::future::from_generator::GenFuture<T>")):
        return "orange"
    return "aqua" if "::" in name else "yellow"


class Colorizer:
    """Colour of a frame from its name and family flags, cached per (name, flags)."""

    def __init__(self, palette: str, use_hash: bool = False, state_split: bool = True):
        self.palette = check_palette(palette)
        self.use_hash = use_hash
        self.state_split = state_split
        self._cache: dict = {}

    def __call__(self, name: str, flags: int = 0) -> str:
        key = (name, flags)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._compute(name, flags)
        return got

    def values(self, name: str) -> tuple[float, float, float]:
        if self.use_hash:
            data = name.encode("utf-8", "surrogatepass")
            v1 = fg_namehash(data)
            v2 = fg_namehash(data[::-1])
            return v1, v2, v2
        return stable_values(name)

    def hue(self, name: str, flags: int) -> str:
        palette = self.palette
        if palette == "chain" and flags & FAMILY_WAKER:
            return "aqua"
        if self.state_split and flags & FAMILY_RUNQ:
            return "runq_hot" if palette == "hot" else "runq"
        if self.state_split and flags & FAMILY_BLOCKED:
            return "io"
        if palette in MULTI:
            return _resolve_multi(palette, name, flags)
        if palette in ("hot", "mem", "io"):
            k = _kind_letter(name, flags)
            if k:
                return _KIND_HUE[k]
        return palette

    def _compute(self, name: str, flags: int) -> str:
        if name == "-":
            return GREY_DASH
        if name == "--":
            return GREY_DASHDASH
        return _BASIC[self.hue(name, flags)](*self.values(name))


def diff_color(delta: float, max_delta: float) -> str:
    """Differential hue: red for more, blue for less, white for no change, scaled by the
    largest change (flamegraph.pl's color_scale)."""
    if delta > 0:
        c = int(210 * (max_delta - min(delta, max_delta)) / max_delta)
        return f"rgb(255,{c},{c})"
    if delta < 0:
        c = int(210 * (max_delta + max(delta, -max_delta)) / max_delta)
        return f"rgb({c},{c},255)"
    return "rgb(255,255,255)"
