"""Issue 42, Tests: each error case of items 1 and 2 is run as the real process
(``python -m offconv``) and asserted: its exit code, its stderr exactly (the golden
``tests/fixtures/errors/CASE.expected``: the command, ``# exit N``, then stderr with the
paths written ``{input}``, ``{out}``, ``{link}``), and that ``-o OUT``, which exists with
known content, is neither written nor clobbered, and that no other file appears beside it.
``pytest --bless`` rewrites the goldens; the inputs are made by make_inputs.py there."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ERRORS = Path(__file__).parent / "fixtures" / "errors"
KNOWN = b"the previous output: never clobbered by a failed run\n"

# case -> (input file in fixtures/errors/ (None: none exists), arguments). {input} is the
# input's copy, {out} an existing file (its suffix the case's output), {link} a symlink to
# the input, {hard} a hard link to it. Exit 0 cases are inputs that must be accepted.
CASES = {
    "gzip-truncated": ("gzip-truncated.txt.gz", ["{input}", "-o", "{out}.svg"]),
    "gzip-corrupt": ("gzip-corrupt.txt.gz", ["{input}", "-o", "{out}.folded"]),
    "xz-truncated": ("xz-truncated.txt.xz", ["{input}", "-o", "{out}.speedscope.json"]),
    "xz-corrupt": ("xz-corrupt.txt.xz", ["{input}", "-o", "{out}.pb.gz"]),
    "bzip2-truncated": ("bzip2-truncated.txt.bz2", ["{input}", "-o", "{out}.timeline.svg"]),
    "bzip2-corrupt": ("bzip2-corrupt.txt.bz2", ["{input}", "-o", "{out}.perfetto-trace"]),
    "zstd-not-decompressed": ("zstd.txt.zst", ["{input}", "-o", "{out}.svg"]),
    "perf-bad-timestamp": ("perf-bad-timestamp.txt", ["{input}", "-o", "{out}.svg"]),
    "folded-no-count": ("folded-no-count.folded", ["{input}", "-o", "{out}.svg"]),
    "bpftrace-bad-count": ("bpftrace-bad-count.txt", ["{input}", "--to", "hist", "-o", "{out}.hist"]),
    "bcc-bad-count": ("bcc-bad-count.txt", ["{input}", "--to", "hist", "-o", "{out}.hist"]),
    "bpftrace-json-not-json": ("bpftrace-json-not-json.jsonl", ["{input}", "--to", "hist", "-o", "{out}.hist"]),
    "output-is-input": ("perf-script.txt", ["{input}", "-o", "{input}"]),
    "output-is-input-svg": ("perf-script.txt", ["{input}", "--to", "svg", "-o", "{input}"]),
    "output-is-a-symlink-to-input": ("perf-script.txt", ["{input}", "-o", "{link}"]),
    "output-is-a-hard-link-to-input": ("perf-script.txt", ["{input}", "-o", "{hard}"]),
    "empty-input": ("empty.txt", ["{input}", "-o", "{out}.svg"]),
    "not-a-profile": ("not-a-profile.txt", ["{input}", "-o", "{out}.folded"]),
    "nonexistent-input": (None, ["{input}", "-o", "{out}.svg"]),
    "svg-nothing-to-draw-histograms": ("bpftrace-histograms-only.txt", ["{input}", "-o", "{out}.svg"]),
    "svg-nothing-to-draw-no-events": ("comments-only.folded", ["{input}", "-o", "{out}.svg"]),
    "svg-nothing-to-draw-filtered": ("perf-script.txt", ["{input}", "--comm", "^nomatch$", "-o", "{out}.svg"]),
    "crlf-accepted": ("crlf.folded", ["{input}", "-o", "{out}.folded"]),
}


def run_case(name: str, tmp: Path) -> tuple:
    """Run CASES[name] in ``tmp``: (exit code, stderr with its paths as placeholders,
    the files of ``tmp`` before, after, the paths by placeholder)."""
    src, args = CASES[name]
    inp = tmp / (src or "missing.txt")
    if src is not None:
        inp.write_bytes((ERRORS / src).read_bytes())
    paths = {"input": inp, "link": tmp / "link.txt", "hard": tmp / "hard.txt"}
    if src is not None:
        paths["link"].symlink_to(inp.name)
        os.link(inp, paths["hard"])
    argv = []
    for a in args:
        if a.startswith("{out}"):
            out = paths["out"] = tmp / ("out" + a[len("{out}"):])
            out.write_bytes(KNOWN)
            a = str(out)
        argv.append(a.format(**{k: str(p) for k, p in paths.items()}))
    before = snapshot(tmp)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, "-m", "offconv", *argv], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    err = p.stderr
    for key, path in sorted(paths.items(), key=lambda kv: -len(str(kv[1]))):
        err = err.replace(str(path), "{%s}" % key)
    return p.returncode, err, before, snapshot(tmp), paths


def snapshot(d: Path) -> dict:
    return {p.name: (os.readlink(p) if p.is_symlink() else p.read_bytes()) for p in sorted(d.iterdir())}


def golden_text(name: str, code: int, err: str) -> str:
    _, args = CASES[name]
    return f"# offconv {' '.join(args)}\n# exit {code}\n{err}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_golden(name, tmp_path, golden):
    code, err, before, after, paths = run_case(name, tmp_path)
    assert "Traceback" not in err and "internal error" not in err, err
    golden(ERRORS / f"{name}.expected", golden_text(name, code, err))
    if name.endswith("-accepted"):
        assert code == 0, err
        out = paths["out"]
        assert after.pop(out.name) != KNOWN and before.pop(out.name) == KNOWN
        assert after == before          # nothing else written
        return
    assert code == 2, err
    lines = err.splitlines()
    assert err.endswith("\n") and 1 <= len(lines) <= 2, err
    assert lines[0].startswith("offconv: ") and lines[0].count("offconv: ") == 1, err
    assert len(lines) == 1 or lines[1].startswith("  | "), err
    assert after == before, "the output was written or clobbered, or a file was left"


def test_every_case_has_a_golden_and_every_golden_a_case():
    goldens = {p.stem for p in ERRORS.glob("*.expected")}
    assert goldens == set(CASES)


def test_crlf_reads_as_lf(tmp_path):
    """CRLF line ends (a file saved on Windows) give the same output as LF ones."""
    crlf = (ERRORS / "crlf.folded").read_bytes()
    for name, data in (("crlf.folded", crlf), ("lf.folded", crlf.replace(b"\r\n", b"\n"))):
        (tmp_path / name).write_bytes(data)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outs = [subprocess.run([sys.executable, "-m", "offconv", name], cwd=tmp_path, env=env,
                           capture_output=True, check=True).stdout for name in ("crlf.folded", "lf.folded")]
    assert outs[0] == outs[1] and b"\r" not in outs[0] and outs[0].count(b"\n") == 3
