"""The registry of input and output formats: the single source of ``--from``/``--to``
names, suffixes, detection by content, binary or text. A new format is one module ending
with its ``FORMAT = InputFormat(...)`` / ``OutputFormat(...)`` plus one line here."""
from __future__ import annotations

from typing import Optional

from .errors import OffconvError
from .format_types import MAYBE, NO, YES, InputFormat, OutputFormat  # noqa: F401 (re-export)
from .parsers import bcc_hist, bpftrace, bpftrace_json, folded, perf_data, perf_script
from .renderers import folded as folded_out
from .renderers import hist, json_report, pprof, report, speedscope, svg

# detection priority order (a binary format is recognised by its magic first)
INPUTS: tuple = (perf_data.FORMAT, perf_script.FORMAT, folded.FORMAT, bcc_hist.FORMAT,
                 bpftrace.FORMAT, bpftrace_json.FORMAT)
OUTPUTS: tuple = (folded_out.FORMAT, svg.FORMAT, hist.FORMAT, report.FORMAT,
                  json_report.FORMAT, speedscope.FORMAT, pprof.FORMAT)
# outputs of DESIGN.md that a later release adds: a clear message instead of a guess
PLANNED_OUTPUTS: dict = {}


def input_formats() -> tuple:
    return INPUTS


def output_formats() -> tuple:
    return OUTPUTS


def input_names() -> list:
    return [f.name for f in INPUTS]


def output_names() -> list:
    return [f.name for f in OUTPUTS]


def suffix_help() -> str:
    return " ".join(s for f in OUTPUTS for s in f.suffixes)


def input_format(name: str) -> InputFormat:
    for f in INPUTS:
        if f.name == name:
            return f
    raise OffconvError(f"unknown input format '{name}' (known: {', '.join(input_names())})")


def output_format(name: str) -> OutputFormat:
    for f in OUTPUTS:
        if f.name == name:
            return f
    if name in PLANNED_OUTPUTS:
        raise OffconvError(f"output format '{name}' is not available yet")
    raise OffconvError(f"unknown output format '{name}' (known: {', '.join(output_names())})")


def output_for_path(path: str) -> Optional[OutputFormat]:
    """The output format a file name selects by its suffix (longest suffix wins, so
    ``.speedscope.json`` beats ``.json``)."""
    low = path.lower()
    best, best_len = None, 0
    for f in OUTPUTS:
        for suf in f.suffixes:
            if low.endswith(suf) and len(suf) > best_len:
                best, best_len = f, len(suf)
    for name, suffixes in PLANNED_OUTPUTS.items():
        if any(low.endswith(s) and len(s) > best_len for s in suffixes):
            raise OffconvError(f"{path}: {name} output is not available yet "
                               f"(use {suffix_help()}, or --to report/json)")
    return best


def by_magic(magic: bytes) -> Optional[InputFormat]:
    for f in INPUTS:
        if f.magic is not None and magic.startswith(f.magic):
            return f
    return None


def detect(path: str, head: list[str]) -> InputFormat:
    """Exactly one 'yes' wins; otherwise the first 'maybe'; otherwise an error."""
    if not any(line.strip() for line in head):
        raise OffconvError(f"{path}: empty input")
    answers = [(f, f.sniff(head)) for f in INPUTS if f.sniff is not None]
    yes = [f for f, a in answers if a == YES]
    if yes:
        return yes[0]
    maybe = [f for f, a in answers if a == MAYBE]
    if maybe:
        return maybe[0]
    tried = ", ".join(f.name for f, _ in answers)
    raise OffconvError(f"{path}: not a recognised profile (tried: {tried})")
