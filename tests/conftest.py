"""Shared test helpers: fixture paths and golden files rewritten only by ``pytest --bless``."""
from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_addoption(parser):
    parser.addoption("--bless", action="store_true", default=False,
                     help="rewrite golden files with the current output")


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory):
    """offconv's cache (the kallsyms snapshot: offconv.inputs.perf_data.kallsyms) in the
    session's own directory, for every offconv the tests run, in this process or not: no
    test reads or leaves the user's ~/.cache/offconv."""
    import os
    saved = os.environ.get("OFFCONV_CACHE_DIR")
    os.environ["OFFCONV_CACHE_DIR"] = str(tmp_path_factory.mktemp("offconv-cache"))
    yield
    if saved is None:
        os.environ.pop("OFFCONV_CACHE_DIR", None)
    else:
        os.environ["OFFCONV_CACHE_DIR"] = saved


@pytest.fixture
def perf_script_runs(monkeypatch) -> list:
    """The command lines of the perf scripts that offconv starts in this process, in order
    (each a list; offconv.inputs.perf_data.spawn.Process is how perf_data starts them)."""
    from offconv.inputs.perf_data import spawn
    started = []
    real = spawn.Process

    def spy(args, *a, **kw):
        if "script" in args:
            started.append(list(args))
        return real(args, *a, **kw)
    monkeypatch.setattr(spawn, "Process", spy)
    return started


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def golden(request):
    """golden(path, actual: str|bytes): compare with the file, or rewrite it under --bless.
    A missing golden fails (never silently created)."""
    bless = request.config.getoption("--bless")

    def check(path: Path, actual):
        data = actual.encode() if isinstance(actual, str) else actual
        if bless:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            return
        assert path.exists(), f"missing golden {path}: run pytest --bless to create it"
        assert path.read_bytes() == data, f"output differs from golden {path} (pytest --bless rewrites it)"

    return check


NAMING_KEYS = ("pid", "tid", "kernel", "jit")


def folded_dict(profile, **naming) -> dict:
    """A profile's samples by display text (offconv.model.naming), merged as the folded output
    merges them."""
    from offconv.model.naming import Namer
    from offconv.model.options import NamingOptions
    namer = Namer(NamingOptions(**naming))
    out: dict = {}
    for k, v in profile.samples.items():
        s = namer.folded(k)
        out[s] = out.get(s, 0) + v
    return out


def split_naming(kw: dict) -> tuple[dict, dict]:
    """(naming kwargs, the rest) of a test's keyword arguments."""
    naming = {k: kw.pop(k) for k in list(kw) if k in NAMING_KEYS}
    return naming, kw


def shared_tool(name: str) -> Path:
    """``../shared/tools/NAME`` beside the clone (CI, a checkout), or beside the folder
    that holds this worktree."""
    repo = Path(__file__).resolve().parents[1]
    for base in (repo.parent, repo.parent.parent):
        p = base / "shared" / "tools" / name
        if p.exists():
            return p
    return repo.parent / "shared" / "tools" / name


# The modules of the suite that drive real tools (perf record, bpftrace, Chromium, go tool
# pprof) or sweep every recorded fixture through several paths: each takes more than 4 s
# of a whole run (pytest --durations=0, 2026-12-07: 21 modules, 650 of its 720 s). The
# quick loop for contributors, `python -m pytest -q -m "not slow"`, leaves them out; the
# README's test command and CI run everything.
SLOW_MODULES = {
    "test_bpftrace_record_verdicts", "test_demangle", "test_diff", "test_follow",
    "test_grammars", "test_heldout_inputs", "test_kallsyms_part", "test_kallsyms_snapshot",
    "test_kernel_symbols", "test_packed_threads", "test_parallel", "test_parse_paths",
    "test_perf_fields", "test_record", "test_sample_report", "test_sched_split",
    "test_speedscope", "test_speedups_same_bytes", "test_sum_blocks", "test_svg_browser",
    "test_verdicts", "test_wallclock",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
