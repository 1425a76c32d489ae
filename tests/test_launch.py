"""offconv.launch: perf script is started on a perf.data input before offconv is imported,
and the converter that parsers.perf_data hands out is that process -- the output is the
same as without it; one that is never taken over is killed when offconv exits."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offconv import launch
from offconv.inputs.perf_data import reader as perf_data

DATA = Path(__file__).parent / "fixtures" / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data"
needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")


@pytest.fixture(autouse=True)
def clean():
    yield
    perf_data._stop_unused()


@needs_perf
def test_convert_takes_the_started_process_over():
    launch.prestart([str(DATA), "--mode", "oncpu"])
    started = perf_data._STARTED[os.path.abspath(DATA)][0]
    stream, finish = perf_data.convert(str(DATA))
    # the stream reads the started perf script's output file (perf_data.Follow)
    assert stream._proc is started and not perf_data._STARTED
    text = stream.read()
    finish()
    fresh, finish2 = perf_data.convert(str(DATA))  # nothing started: a new process
    assert fresh._proc is not started
    assert fresh.read() == text and text.count(b"sched:sched_switch") > 100
    finish2()


def test_only_perf_data_inputs_are_started(tmp_path):
    other = tmp_path / "x.data"
    shutil.copy(DATA, other)
    folded = tmp_path / "in.folded"
    folded.write_text("a;b 1\n")
    calls = []
    real = perf_data.prestart
    perf_data.prestart = lambda path, demangle_here=True, kallsyms=None: calls.append(
        (path, demangle_here) + ((kallsyms,) if kallsyms else ()))
    try:
        launch.prestart([str(folded), "-o", str(other), "--title", str(other)])
        launch.prestart(["record", str(DATA)])
        launch.prestart(["diff", str(DATA), str(folded), str(other)])
        launch.prestart([str(folded), str(other)])
        launch.prestart([str(DATA), "--demangle"])
        # --kallsyms's value is a file, never an input; perf script is started with it
        launch.prestart(["--kallsyms", str(other), str(DATA)])
        launch.prestart([f"--kallsyms={folded}", str(DATA)])
    finally:
        perf_data.prestart = real
    # the first input only, if it is a perf.data: a later one's output would pile up in
    # its file while the first is parsed; with --demangle, perf demangles (parsers.demangle)
    assert calls == [(str(DATA), True), (str(DATA), False), (str(DATA), True, str(other)),
                     (str(DATA), True, str(folded))]


@needs_perf
def test_same_output_through_the_entry_point(tmp_path):
    """`python -m offconv` (the prestart) and the text path agree byte for byte."""
    text = subprocess.run(["perf", "script", "-i", str(DATA)], capture_output=True, check=True).stdout
    (tmp_path / "in.txt").write_bytes(text)
    for name, src in (("a.folded", DATA), ("b.folded", tmp_path / "in.txt")):
        r = subprocess.run([sys.executable, "-m", "offconv", str(src), "-o", str(tmp_path / name)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    a = (tmp_path / "a.folded").read_bytes()
    assert a == (tmp_path / "b.folded").read_bytes() and a.count(b"\n") > 5


@needs_perf
def test_an_unused_converter_is_killed_at_exit(tmp_path):
    code = ("import sys; from offconv import launch; from offconv.inputs.perf_data import reader as perf_data; "
            f"launch.prestart([{str(DATA)!r}]); "
            "print(next(iter(perf_data._STARTED.values()))[0].pid, flush=True)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pid = int(r.stdout)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


@needs_perf
def test_a_usage_error_is_still_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "offconv", str(DATA), "--bogus"], capture_output=True,
                       text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["offconv: No such option '--bogus'.",
                                     "Try 'offconv --help' for help."]


def _buffered() -> dict:
    """The environment without PYTHONUNBUFFERED (set on some machines), so that a missing
    flush would lose output."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def test_the_fast_exit_runs_atexit_handlers_and_flushes_stdout(tmp_path):
    """launch.main ends with os._exit: the atexit handlers (perf_data._stop_unused) run first."""
    marker = tmp_path / "ran"
    code = ("import atexit, sys; from offconv import launch; "
            f"atexit.register(lambda: open({str(marker)!r}, 'w').write('x')); "
            "sys.stdout.write('buffered, not yet flushed'); launch.fast_exit(None)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_buffered())
    assert r.returncode == 0 and marker.read_text() == "x"
    assert r.stdout == "buffered, not yet flushed"


@pytest.mark.parametrize("code, rc, err", [(3, 3, ""), ("offconv: a message", 1, "offconv: a message\n"),
                                           (None, 0, "")])
def test_the_fast_exit_keeps_system_exit_codes(code, rc, err):
    r = subprocess.run([sys.executable, "-c", f"from offconv import launch; launch.fast_exit({code!r})"],
                       capture_output=True, text=True, env=_buffered())
    assert (r.returncode, r.stderr) == (rc, err)


def test_stdout_piped_is_complete_after_the_fast_exit(tmp_path):
    """A folded output written to a pipe arrives whole (the flush before os._exit)."""
    folded = tmp_path / "in.folded"
    lines = [f"main;f{i};g{i % 7} {i + 1}" for i in range(20000)]
    folded.write_text("\n".join(lines) + "\n")
    r = subprocess.run([sys.executable, "-m", "offconv", str(folded), "-o", "-"], capture_output=True,
                       text=True, env=_buffered())
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == sorted(lines)


def test_the_collector_stays_off_until_the_process_ends(tmp_path):
    """Re-enabling the cyclic collector when a command is done made the next allocation
    collect every object allocated during the command (offconv.model.gcpause), all still alive,
    just before os._exit: launch.main leaves it off, and the command's output is whole."""
    folded = tmp_path / "in.folded"
    folded.write_text("main;f;g 3\nmain;f 2\n")
    out = tmp_path / "out.svg"
    code = ("import atexit, gc, sys; from offconv import launch; "
            "atexit.register(lambda: sys.stderr.write(f'gc enabled at exit: {gc.isenabled()}')); "
            f"sys.argv = ['offconv', {str(folded)!r}, '-o', {str(out)!r}]; launch.main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_buffered())
    assert r.returncode == 0, r.stderr
    assert r.stderr == "gc enabled at exit: False"
    assert out.read_text().rstrip().endswith("</svg>")
