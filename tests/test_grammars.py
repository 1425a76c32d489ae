"""The lark grammars (grammars/*.lark) agree with the hand-written hot-path parsers on every
fixture, and they ship: in a wheel, in an editable install, and in a source tree."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import lark
import pytest

from offconv.inputs.grammar import grammar_text, parser
from offconv.inputs import folded
from offconv.inputs.perf_script.frames import _FRAME_LIKE, is_srcline, split_frame
from offconv.inputs.perf_script.header import padded_header, parse_header

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
PERF_FIXTURES = sorted(FIX.glob("flamegraph-test/*.txt")) + sorted(FIX.glob("flamegraph-test/*.gz")) \
    + sorted(FIX.glob("recorded/*/*.perf-script*.txt")) + sorted(FIX.glob("recorded/*/*.perf-script*.txt.gz")) \
    + sorted(FIX.glob("heldout_perf/*.txt"))   # -F variants: srcline, no trace, no event, no dso
FOLDED_FIXTURES = sorted(FIX.glob("flamegraph-test/results/*.txt"))


def read_lines(path: Path):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace").splitlines()


def grammar_header(tree) -> tuple:
    f = {c.data if isinstance(c, lark.Tree) else c.type: c for c in tree.children}
    ids = [t.value for t in f["ids"].children]
    pid, tid = (int(ids[0]), int(ids[1])) if len(ids) == 2 else (None, int(ids[0]))
    cpu = int(f["cpu"].children[0]) if "cpu" in f else None
    time_ns = None
    if "time" in f:
        sec, frac = f["time"].children[0].value[:-1].split(".")
        time_ns = int(sec) * 10**9 + int((frac + "0" * 9)[:9])
    period = int(f["period"].children[0]) if "period" in f else 1
    payload = f["payload"].children[0].value.strip() if "payload" in f else ""
    event = f["event"].children[0].value if "event" in f else ""   # -F without event
    return (f["COMM"].value.strip(), pid, tid, cpu, time_ns, period, event, payload)


def grammar_frame(tree) -> tuple:
    f = {c.data if isinstance(c, lark.Tree) else c.type: c for c in tree.children}
    sym = f["symbol"].children[0].value.strip() if "symbol" in f else ""
    return f["ADDR"].value, sym, f["dso"].children[0].value if "dso" in f else ""   # -F without dso


@pytest.mark.parametrize("path", PERF_FIXTURES, ids=lambda p: p.name)
def test_perf_script_grammar_agrees_with_parser(path):
    hp, fp = parser("perf_script", "header"), parser("perf_script", "frame")
    sp = parser("perf_script", "srcline")
    headers = frames = srclines = 0
    seen: set = set()   # each distinct line once: frame lines repeat (lark is the slow part)
    for n, line in enumerate(read_lines(path), 1):
        if not line.strip() or line.startswith("#") or line in seen:
            continue
        seen.add(line)
        h = padded_header(line) if line[0] == " " else None
        if h is not None:  # no call chains: a header padded by perf, its frame on it
            assert grammar_header(hp.parse(line)) == h, f"{path.name}:{n}"
            headers += 1
            if h[7] and _FRAME_LIKE.match(h[7]):
                assert grammar_frame(fp.parse(h[7])) == split_frame(h[7]), f"{path.name}:{n}"
                frames += 1
            continue
        if line[0] == " " and is_srcline(line):  # -F +srcline: a source line, not a frame
            assert sp.parse(line).children[0].value == line, f"{path.name}:{n}"
            with pytest.raises(lark.exceptions.UnexpectedInput):
                fp.parse(line)
            srclines += 1
            continue
        if line[0] in " \t":
            assert grammar_frame(fp.parse(line)) == split_frame(line), f"{path.name}:{n}"
            frames += 1
            continue
        h = parse_header(line)
        if h is None:  # unindented frame of an old perf (perf-java-stacks-02)
            assert grammar_frame(fp.parse(line)) == split_frame(line), f"{path.name}:{n}"
            frames += 1
            continue
        assert grammar_header(hp.parse(line)) == h, f"{path.name}:{n}"
        headers += 1
    assert headers > 0 and frames > 0
    assert srclines > 0 or "srcline" not in path.name


@pytest.mark.parametrize("path", FOLDED_FIXTURES[::3], ids=lambda p: p.name)
def test_folded_grammar_agrees_with_parser(path):
    gp = parser("folded", "line")
    lines = read_lines(path)
    records = list(folded.parse(enumerate(lines, 1), str(path)))
    assert len(records) == len(lines)
    for rec, line in zip(records, lines):
        tree = gp.parse(line)
        stack = tree.children[0]
        frames = tuple(fr.children[0].value if fr.children else "" for fr in stack.children)
        counts = [c.children[0].value for c in tree.children[1:]]
        assert frames == tuple(f.name for f in rec.stack)
        assert folded._number(counts[-1]) == rec.weight


def test_grammar_rejects_with_position():
    with pytest.raises(lark.exceptions.UnexpectedInput) as ei:
        parser("perf_script", "header").parse("not a header at all")
    assert ei.value.line == 1 and ei.value.column >= 1


def test_grammars_found_from_source_tree(monkeypatch):
    """Without an installed offconv.grammars (a source tree on sys.path), the grammars are
    read from the repository's grammars/ beside the package."""
    import importlib.resources

    def not_installed(name):
        raise ModuleNotFoundError(name)
    monkeypatch.setattr(importlib.resources, "files", not_installed)
    assert grammar_text("bpftrace") == (ROOT / "grammars" / "bpftrace.lark").read_text()
    assert "header:" in grammar_text("perf_script")
    assert "line:" in grammar_text("folded")


def _pip(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True)


def test_wheel_ships_the_grammars(tmp_path):
    r = _pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT))
    assert r.returncode == 0, r.stderr
    (whl,) = tmp_path.glob("offconv-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "offconv/grammars/perf_script.lark" in names
    assert "offconv/grammars/folded.lark" in names
    # and the installed package finds them (unpacked wheel on sys.path, outside the tree)
    site = tmp_path / "site"
    zipfile.ZipFile(whl).extractall(site)
    code = "from offconv.inputs.grammar import grammar_text; print(len(grammar_text('perf_script')))"
    env = dict(os.environ, PYTHONPATH=str(site))
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) == len(grammar_text("perf_script"))
    p = subprocess.run([sys.executable, "-c", "import offconv.grammars, sys; print(offconv.grammars.__file__)"],
                       cwd=tmp_path, env=env, capture_output=True, text=True)
    assert str(site) in p.stdout


def test_editable_install_finds_the_grammars(tmp_path):
    """Run outside the tree (so the source dir is not on sys.path): the installed package
    (editable in development and CI) must provide offconv.grammars."""
    code = ("import importlib.resources as r; "
            "print((r.files('offconv.grammars') / 'perf_script.lark').read_text()[:20])")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("// perf script text")
