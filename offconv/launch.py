"""The console entry point, run before the rest of offconv is imported: ``perf script`` is
started at once on the first input when it is a perf.data, so that it works while
Python imports offconv and parses the command line (about 0.1 s, an eighth of a 20 s
recording's conversion); offconv.inputs.perf_data.reader then takes the running converter over.
Converters that nobody takes over (a usage error, a file given as an option's value) are
killed at exit.

When the command is done, the process ends with ``os._exit`` once the atexit handlers have
run and stdout and stderr are flushed: tearing down the heap (every stack, frame and cache
of a large input, one object at a time) took 0.08-0.1 s of a 1 s collapse and changes no
output. offconv starts no threads and writes its outputs completely before it returns.
The cyclic collector is off from the start to that end (offconv.model.gcpause): turned back on
after the command, it collected every stack still alive before the process ended (0.05-0.11
s after the SVG of a 23k-stack perf.data)."""
from __future__ import annotations

import gc
import os
import sys

# the options of convert, report and diff whose value is a file (never an input)
_VALUE_OPTIONS = {"-o", "--output", "--to", "--from", "--title", "--subtitle", "--notes",
                  "--event-filter", "--colors", "--bgcolors", "--comm", "--fonttype", "--nametype",
                  "--countname", "--kallsyms"}


def main() -> None:
    try:
        _main()
    except KeyboardInterrupt:   # Ctrl-C before the command runs (its own handler says it then)
        try:
            sys.stderr.write("offconv: interrupted\n")
        except BaseException:  # noqa: BLE001 - a closed stderr
            pass
        fast_exit(130)


def _main() -> None:
    try:
        prestart(sys.argv[1:])
    except Exception:  # noqa: BLE001 - an optimisation: the command runs the same without it
        pass
    from offconv.cli import main as cli_main
    # The cyclic collector stays off until the end: the command pauses it anyway
    # (offconv.model.gcpause), and re-enabling it when the command is done made the next
    # allocation collect every object allocated during the pause, all still alive (every
    # stack and frame): 0.05-0.11 s after a 23k-stack SVG was written, for nothing, as the
    # process then ends with os._exit.
    gc.disable()
    try:
        cli_main()
        code = 0
    except SystemExit as e:
        code = e.code
    fast_exit(code)


def fast_exit(code) -> None:
    """Exit with ``code`` (a SystemExit's: None, an int or a message) without the
    interpreter's teardown; a flush that fails (a closed stdout) takes the normal exit."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    import atexit
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the normal exit reports it as Python would
        sys.exit(code)
    os._exit(code)


def prestart(args: list) -> None:
    if not args or args[0] in ("record", "--help", "-h", "--version"):
        return
    from offconv.inputs.perf_data import reader as perf_data
    kallsyms = None
    for i, a in enumerate(args):
        if a == "--kallsyms" and i + 1 < len(args):
            kallsyms = args[i + 1]
        elif a.startswith("--kallsyms="):
            kallsyms = a.partition("=")[2]
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
            # --demangle (legacy Rust names, after perf's demangling): perf demangles
            perf_data.prestart(a, demangle_here="--demangle" not in args, kallsyms=kallsyms)
        # only the first input: a later one's perf script would write its whole text into
        # its file while the ones before it are parsed (perf_data.Follow bounds only the
        # file it reads)
        return
