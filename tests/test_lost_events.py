"""Lost events are reported (issue 13): perf script --show-lost-events lines and the
comment line scripts/record.sh writes at the top of its output."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from click.testing import CliRunner

from offconv.cli import app

FIX = Path(__file__).parent / "fixtures"
LOST = FIX / "perf-lost" / "lost.perf-script-show-lost-events.txt"
VICTIM = FIX / "recorded" / "victim_a_1" / "victim_a_1.perf-script.txt.gz"


def report_json(path) -> dict:
    r = CliRunner().invoke(app, ["report", "--json", str(path)])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_perf_record_lost_lines_are_counted_not_errors():
    expected = sum(int(m.group(1)) for m in
                   re.finditer(r"PERF_RECORD_LOST lost (\d+)", LOST.read_text()))
    assert expected > 0
    d = report_json(LOST)
    assert d["dropped"]["lost_samples"] == expected
    assert any(w.startswith(f"the recording lost {expected} events") for w in d["warnings"])


def test_recorder_comment_line_carries_the_lost_chunks(tmp_path):
    src = tmp_path / "rec.txt"
    src.write_text("# offconv-record: backend=perf target=-a window_s=3 lost_chunks=21 "
                   "lost_samples_pct=1.2 perf_samples=1744\n"
                   + gzip.decompress(VICTIM.read_bytes()).decode())
    d = report_json(src)
    assert d["dropped"]["lost_chunks"] == 21
    assert "lost 21 chunks (1.2% of samples)" in d["warnings"][0]
    # the same recording without the comment: nothing said about losses
    assert "lost_chunks" not in report_json(VICTIM)["dropped"]
