"""The registry of input and output formats: the single source of ``--from``/``--to``
names, suffixes, detection by content, binary or text. A new format is one module ending
with its ``FORMAT = InputFormat(...)`` / ``OutputFormat(...)`` plus one line here.

The lines here name each format's module, and what the command line needs before any
module is loaded (names, suffixes, a binary format's magic); a module is imported when its
format is chosen or asked to sniff. A collapse then loads one parser and one renderer, not
all thirteen. tests/test_formats_registry.py checks each line
against its module's FORMAT."""
from __future__ import annotations

from importlib import import_module
from typing import Optional

from offconv.model.errors import OffconvError
from offconv.model.formats import MAYBE, NO, YES, InputFormat, OutputFormat  # noqa: F401 (re-export)

# (name, module, magic): in detection priority order (a binary format is recognised by its
# magic first)
_INPUTS: tuple = (
    ("perf-data", "offconv.inputs.perf_data.reader", b"PERFILE2"),
    ("perf-script", "offconv.inputs.perf_script", None),
    ("folded", "offconv.inputs.folded", None),
    ("bcc-hist", "offconv.inputs.bcc_hist", None),
    ("bpftrace", "offconv.inputs.bpftrace", None),
    ("bpftrace-json", "offconv.inputs.bpftrace_json", None),
)
# (name, module, suffixes)
_OUTPUTS: tuple = (
    ("folded", "offconv.outputs.folded", (".folded", ".collapsed", ".txt")),
    ("svg", "offconv.outputs.svg.graph", (".svg",)),
    ("hist", "offconv.outputs.hist", (".hist",)),
    ("report", "offconv.outputs.report", ()),
    ("json", "offconv.outputs.json_report", ()),
    ("speedscope", "offconv.outputs.speedscope", (".speedscope.json", ".json")),
    ("pprof", "offconv.outputs.pprof", (".pb.gz", ".pprof")),
    ("perfetto", "offconv.outputs.perfetto", (".perfetto-trace", ".pftrace")),
    ("timeline", "offconv.outputs.timeline", (".timeline.svg",)),
)
# outputs of DESIGN.md that a later release adds: a clear message instead of a guess
PLANNED_OUTPUTS: dict = {}


def _load(module: str):
    return import_module(module).FORMAT


def input_formats() -> tuple:
    return tuple(_load(m) for _, m, _ in _INPUTS)


def output_formats() -> tuple:
    return tuple(_load(m) for _, m, _ in _OUTPUTS)


def input_names() -> list:
    return [n for n, _, _ in _INPUTS]


def output_names() -> list:
    return [n for n, _, _ in _OUTPUTS]


def suffix_help() -> str:
    return " ".join(s for _, _, suffixes in _OUTPUTS for s in suffixes)


def input_format(name: str) -> InputFormat:
    for n, m, _ in _INPUTS:
        if n == name:
            return _load(m)
    raise OffconvError(f"unknown input format '{name}' (known: {', '.join(input_names())})")


def output_format(name: str) -> OutputFormat:
    for n, m, _ in _OUTPUTS:
        if n == name:
            return _load(m)
    if name in PLANNED_OUTPUTS:
        raise OffconvError(f"output format '{name}' is not available yet")
    raise OffconvError(f"unknown output format '{name}' (known: {', '.join(output_names())})")


def output_for_path(path: str) -> Optional[OutputFormat]:
    """The output format a file name selects by its suffix (longest suffix wins, so
    ``.speedscope.json`` beats ``.json``)."""
    low = path.lower()
    best, best_len = None, 0
    for _, m, suffixes in _OUTPUTS:
        for suf in suffixes:
            if low.endswith(suf) and len(suf) > best_len:
                best, best_len = m, len(suf)
    for name, suffixes in PLANNED_OUTPUTS.items():
        if any(low.endswith(s) and len(s) > best_len for s in suffixes):
            raise OffconvError(f"{path}: {name} output is not available yet "
                               f"(use {suffix_help()}, or --to report/json)")
    return None if best is None else _load(best)


def by_magic(magic: bytes) -> Optional[InputFormat]:
    for _, m, mag in _INPUTS:
        if mag is not None and magic.startswith(mag):
            return _load(m)
    return None


def detect(path: str, head: list[str]) -> InputFormat:
    """The first format (in priority order) whose sniff says yes; otherwise the first
    that says maybe; otherwise an error."""
    if not any(line.strip() for line in head):
        raise OffconvError(f"{path}: empty input")
    answers = []
    for _, m, mag in _INPUTS:  # in priority order: the first 'yes' ends the search
        if mag is not None:
            continue
        f = _load(m)
        if f.sniff is None:
            continue
        a = f.sniff(head)
        if a == YES:
            return f
        answers.append((f, a))
    maybe = [f for f, a in answers if a == MAYBE]
    if maybe:
        return maybe[0]
    tried = ", ".join(f.name for f, _ in answers)
    raise OffconvError(f"{path}: not a recognised profile (tried: {tried})")
