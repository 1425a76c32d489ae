"""The registry of input and output formats: detection by content, --from/--to names,
and the output suffix table (defined once here)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

# Sniff answers (a three-way sniff, as inferno's is_applicable)
YES = "yes"
NO = "no"
MAYBE = "maybe"


@dataclass(frozen=True)
class InputFormat:
    name: str                      # --from name
    sniff: Callable                # sniff(head_lines: list[str]) -> YES | NO | MAYBE
    parse: Callable                # parse(lines, path, opts, stats) -> Iterator[record]
    description: str = ""
    parse_blocks: Optional[Callable] = None  # the same from Source.blocks(), when faster


@dataclass(frozen=True)
class OutputFormat:
    name: str                      # --to name
    suffixes: tuple                # file suffixes that select it (lower case)
    render: Callable               # render(profile, out: TextIO, opts: Options) -> None
    description: str = ""
    binary: bool = False


def input_formats() -> list:
    """In detection priority order."""
    from .parsers import folded, perf_script
    return [perf_script.FORMAT, folded.FORMAT]


def output_formats() -> list:
    from .renderers import folded, hist, json_report, report, svg
    return [folded.FORMAT, svg.FORMAT, hist.FORMAT, report.FORMAT, json_report.FORMAT]


# outputs of DESIGN.md that a later release adds: a clear message instead of a guess
PLANNED_OUTPUTS = {"speedscope": (".speedscope.json", ".json")}


def input_format(name: str) -> InputFormat:
    from .errors import OffconvError
    for f in input_formats():
        if f.name == name:
            return f
    raise OffconvError(f"unknown input format '{name}'")


def output_format(name: str) -> OutputFormat:
    from .errors import OffconvError
    for f in output_formats():
        if f.name == name:
            return f
    if name in PLANNED_OUTPUTS:
        raise OffconvError(f"output format '{name}' is not available yet")
    raise OffconvError(f"unknown output format '{name}'")


def output_for_path(path: str) -> Optional[OutputFormat]:
    """The output format a file name selects by its suffix (longest suffix wins, so
    ``.speedscope.json`` beats ``.json``)."""
    low = path.lower()
    for name, suffixes in PLANNED_OUTPUTS.items():
        if low.endswith(suffixes):
            from .errors import OffconvError
            raise OffconvError(f"{path}: {name} output is not available yet "
                               "(use .svg, .folded, .hist, or --to report/json)")
    best, best_len = None, 0
    for f in output_formats():
        for suf in f.suffixes:
            if low.endswith(suf) and len(suf) > best_len:
                best, best_len = f, len(suf)
    return best


def detect(path: str, head: list[str]) -> InputFormat:
    """Exactly one 'yes' wins; otherwise the first 'maybe'; otherwise an error."""
    from .errors import OffconvError
    if not any(line.strip() for line in head):
        raise OffconvError(f"{path}: empty input")
    answers = [(f, f.sniff(head)) for f in input_formats()]
    yes = [f for f, a in answers if a == YES]
    if yes:
        return yes[0]
    maybe = [f for f, a in answers if a == MAYBE]
    if maybe:
        return maybe[0]
    tried = ", ".join(f.name for f, _ in answers)
    raise OffconvError(f"{path}: not a recognised profile (tried: {tried})")
