"""Which frames perf would have printed demangled: while perf script --no-demangle's output
is parsed, perf_script.frames.parse_frame calls ``note`` with each frame it makes, and the
frames made from a name perf would have printed otherwise are kept in the registry
(perf_script.frames.MANGLED) for offconv.inputs.demangle.apply to make again. perf demangles
a name only in a user-space ELF dso (``perf_demangles``; offconv.inputs.demangle says how).
Imports nothing of offconv."""
from __future__ import annotations

import re

CANDIDATE = ("_Z", "_R", "_GLOBAL_")  # what cplus_demangle may demangle
_PERF_MAP = re.compile(r"perf-\d+\.map")
_MODULE = re.compile(r"\.ko(\.[a-z]+)?$")


def perf_demangles(dso: str) -> bool:
    """Whether perf demangles the symbols of this dso (as printed in a frame's parentheses)."""
    if not dso:
        return False
    if dso.startswith("["):
        return dso == "[vdso]"  # kernel, modules, [unknown], [JIT] tid N: never
    base = dso.rpartition("/")[2]
    return not (_PERF_MAP.fullmatch(base) or _MODULE.search(base))


def note(registry: dict, frames: tuple, raw: str, module: str) -> None:
    """perf_script.frames.parse_frame made ``frames`` from the symbol ``raw`` of ``module``:
    keep the frame if perf would have printed another name there (or may have: Retry
    later)."""
    if raw.startswith(CANDIDATE) or ")" in raw or raw.startswith("caml"):
        if len(frames) == 1 and perf_demangles(module):
            registry.setdefault(frames[0], raw)
        elif frames and perf_demangles(module):  # an a->b line of a mangled dso: not known here
            registry.setdefault(frames[0], "")

