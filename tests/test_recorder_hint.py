"""scripts/record.sh's first line (``# offconv-record: backend=perf target=...``) says the
recording is system-wide (the recorder always records with -a, with filters on its target),
so offconv never takes it for a `perf record -p` recording, whatever its first events look
like (fixtures/perf-recorder/PROVENANCE.md)."""
from __future__ import annotations

import gzip
from pathlib import Path

from offconv.run import pipeline
from offconv.analysis.summary import report_data
from offconv.model.options import Options

FIX = Path(__file__).parent / "fixtures" / "perf-recorder"
QUIET = FIX / "quiet_pipe_all.perf-script.txt.gz"


def _report(path: Path) -> dict:
    return report_data(pipeline.load([str(path)], Options()))


def test_the_recorders_line_says_system_wide():
    d = _report(QUIET)
    assert d["per_process_recording"] is False
    assert d["totals"]["runq_us"] is not None and d["totals"]["oncpu_us"] > 0
    assert "not measured" not in d["verdict"]["reason"]


def test_without_it_the_same_events_look_per_process(tmp_path):
    """The heuristic alone is fooled by this recording (so the line is what decides)."""
    text = gzip.decompress(QUIET.read_bytes()).decode()
    first, _, rest = text.partition("\n")
    assert first.startswith("# offconv-record: backend=perf target=-a ")
    bare = tmp_path / "bare.txt"
    bare.write_text(rest)
    d = _report(bare)
    assert d["per_process_recording"] is True
    assert d["totals"]["runq_us"] is None


def test_only_the_input_that_has_the_line(tmp_path):
    """Two inputs, one with the recorder's line: only that one is read as system-wide."""
    text = gzip.decompress(QUIET.read_bytes()).decode()
    bare = tmp_path / "bare.txt"
    bare.write_text(text.partition("\n")[2])
    prof = pipeline.load([str(QUIET), str(bare)], Options())
    assert prof.analysis.per_process
