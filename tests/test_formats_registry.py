"""The registry (offconv.model.registry) names each format's module with what the command line
needs before loading it (names, suffixes, magic): those lines agree with the modules'
FORMAT records, and a run loads only the modules of the formats it uses."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from offconv.model import registry as formats

FIX = Path(__file__).parent / "fixtures"
PERF_SCRIPT = FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.perf-script.txt"


@pytest.mark.parametrize("name, module, magic", formats._INPUTS)
def test_input_line_is_its_module(name, module, magic):
    f = import_module(module).FORMAT
    assert (f.name, f.magic) == (name, magic)
    assert formats.input_format(name) is f


@pytest.mark.parametrize("name, module, suffixes", formats._OUTPUTS)
def test_output_line_is_its_module(name, module, suffixes):
    f = import_module(module).FORMAT
    assert (f.name, f.suffixes) == (name, suffixes)
    assert formats.output_format(name) is f


def test_suffixes_pick_the_longest():
    assert formats.output_for_path("x.speedscope.json").name == "speedscope"
    assert formats.output_for_path("x.JSON").name == "speedscope"
    assert formats.output_for_path("x.pb.gz").name == "pprof"
    assert formats.output_for_path("x.svg").name == "svg"
    assert formats.output_for_path("x.png") is None


# what a collapse of perf script text to folded must not load (each is a format or the
# analysis behind another output)
NOT_FOR_A_COLLAPSE = ("offconv.outputs.svg.graph", "offconv.outputs.svg.layout",
                      "offconv.outputs.svg.write", "offconv.outputs.report",
                      "offconv.outputs.json_report", "offconv.outputs.speedscope",
                      "offconv.outputs.pprof", "offconv.analysis.threads", "offconv.analysis.verdict",
                      "offconv.inputs.bpftrace", "offconv.inputs.bpftrace_json",
                      "offconv.inputs.bcc_hist", "offconv.inputs.folded")

_LOADED = ("import atexit, json, runpy, sys\n"
           "atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules "
           "if m.startswith('offconv'))), file=sys.stderr))\n"
           "sys.argv = ['offconv'] + sys.argv[1:]\n"
           "runpy.run_module('offconv', run_name='__main__')\n")


def _modules_loaded(tmp_path, *args) -> set:
    p = subprocess.run([sys.executable, "-c", _LOADED, *args], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stderr.strip().splitlines()[-1]))


def test_a_collapse_loads_one_parser_and_one_renderer(tmp_path):
    out = tmp_path / "out.folded"
    loaded = _modules_loaded(tmp_path, str(PERF_SCRIPT), "--mode", "oncpu", "-o", str(out))
    assert out.stat().st_size > 0
    assert {"offconv.inputs.perf_script", "offconv.outputs.folded"} <= loaded
    assert not loaded & set(NOT_FOR_A_COLLAPSE), sorted(loaded & set(NOT_FOR_A_COLLAPSE))


def test_an_svg_loads_the_svg_renderer(tmp_path):
    out = tmp_path / "out.svg"
    loaded = _modules_loaded(tmp_path, str(PERF_SCRIPT), "-o", str(out))
    assert out.read_text().startswith("<?xml")
    assert "offconv.outputs.svg.graph" in loaded
    assert "offconv.outputs.speedscope" not in loaded
