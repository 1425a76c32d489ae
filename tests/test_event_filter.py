"""--event-filter (stackcollapse-perf.pl's option; the suite has no expected files for it)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
MIXED = FIX / "flamegraph-test" / "perf-cycles-instructions-01.txt"
E2E = FIX / "recorded" / "e2e_victim_a_small"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def total(folded_text: str) -> int:
    return sum(int(l.rsplit(" ", 1)[1]) for l in folded_text.splitlines())


def events_of(path: Path, name: str) -> int:
    return sum(1 for l in path.read_text().splitlines()
               if l and not l[0].isspace() and not l.startswith("#") and f" {name}:" in l)


def test_default_is_the_first_event_type_with_a_message():
    r = run(MIXED)
    assert r.exit_code == 0
    assert "Filtering for events of type: instructions" in r.stderr  # the file starts with it
    assert total(r.stdout) == events_of(MIXED, "instructions") == 333


def test_explicit_filter_selects_the_other_event_silently():
    r = run(MIXED, "--event-filter", "cycles")
    assert r.exit_code == 0 and "Filtering" not in r.stderr
    assert total(r.stdout) == events_of(MIXED, "cycles") == 111


def test_filter_on_a_tracepoint_with_arguments():
    """Tracepoints with a payload are events like any other (inferno #308 drops them)."""
    src = E2E / "e2e_victim_a_small.perf-script.txt"
    r = run(src, "--mode", "oncpu", "--event-filter", "sched:sched_wakeup")
    assert r.exit_code == 0
    assert total(r.stdout) == events_of(src, "sched:sched_wakeup")
    # no payload text ever becomes a frame
    assert "prev_comm" not in r.stdout and "target_cpu" not in r.stdout


def test_filter_matching_nothing_gives_empty_output_and_a_warning():
    r = run(MIXED, "--event-filter", "no-such-event")
    assert r.exit_code == 0 and r.stdout == "" and "no events" in r.stderr


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed (.ci/run installs linux-perf)")
def test_perf_data_is_converted_with_perf_script(tmp_path):
    """perf.data (detected by its magic) goes through `perf script`: same events as the text
    perf printed when the recording was made (symbols may resolve differently elsewhere)."""
    data = E2E / "e2e_victim_a_small.data"
    text = E2E / "e2e_victim_a_small.perf-script.txt"
    a = run(data, "--mode", "oncpu", "--event-filter", "sched:sched_switch")
    b = run(text, "--mode", "oncpu", "--event-filter", "sched:sched_switch")
    assert a.exit_code == 0, a.stderr
    assert total(a.stdout) == total(b.stdout) == events_of(text, "sched:sched_switch")
    roots = lambda s: {l.split(";", 1)[0] for l in s.splitlines()}
    assert roots(a.stdout) == roots(b.stdout)


def test_broken_perf_data_is_an_error(tmp_path):
    bad = tmp_path / "perf.data"
    bad.write_bytes(b"PERFILE2" + b"\x00" * 100)
    r = run(bad)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"offconv: {bad}: ")
