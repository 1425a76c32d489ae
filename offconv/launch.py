"""The console entry point, run before the rest of offconv is imported: ``perf script`` is
started at once on each perf.data input named on the command line, so that it works while
Python imports offconv and parses the command line (about 0.1 s, an eighth of a 20 s
recording's conversion); offconv.parsers.perf_data then takes the running converter over.
Converters that nobody takes over (a usage error, a file given as an option's value) are
killed at exit."""
from __future__ import annotations

import os
import sys

# the options of convert, report and diff whose value is a file (never an input)
_VALUE_OPTIONS = {"-o", "--output", "--to", "--from", "--title", "--subtitle", "--notes",
                  "--event-filter", "--colors", "--bgcolors", "--comm", "--fonttype", "--nametype",
                  "--countname"}


def main() -> None:
    try:
        prestart(sys.argv[1:])
    except Exception:  # noqa: BLE001 - an optimisation: the command runs the same without it
        pass
    from .cli import main as cli_main
    cli_main()


def prestart(args: list) -> None:
    if not args or args[0] in ("record", "--help", "-h", "--version"):
        return
    from .parsers import perf_data
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in _VALUE_OPTIONS:
            skip = True
            continue
        if a.startswith("-") or not os.path.isfile(a):
            continue
        try:
            with open(a, "rb") as f:
                magic = f.read(len(perf_data.MAGIC))
        except OSError:
            continue
        if magic == perf_data.MAGIC:
            perf_data.prestart(a)
