"""Inputs a tester's held-out probe of input reading found mishandled (fixtures/heldout/,
PROVENANCE.md there): a UTF-8 byte order mark, tabs before a folded count, a bad folded
line after good ones, xz / bzip2 / zstd compression, a folded file without a final
newline, and bcc's banner with no histogram after it."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.model import registry as formats
from offconv.run import parallel, split
from offconv.cli import app
from offconv.model.formats import MAYBE, NO
from offconv.inputs.grammar import parser
from offconv.inputs import bcc_hist, folded
from offconv.inputs.source import Source

HELD = Path(__file__).parent / "fixtures" / "heldout"
CUT_WARNING = "the input ends inside this line (a file cut short?)"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def run_stdin(data: bytes):
    """offconv - in a process of its own: its stdin a real buffered stream (CliRunner's has
    no peek, which compressed input on stdin needs)."""
    return subprocess.run([sys.executable, "-m", "offconv", "-"], input=data, capture_output=True)


# -- a UTF-8 byte order mark ----------------------------------------------------------------

def test_a_bom_is_not_part_of_the_first_folded_frame():
    r = run(HELD / "bom.folded")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "main;foo 5\nmain;foo;bar 10\n", "")


def test_a_bom_is_not_part_of_the_first_perf_script_comm(tmp_path):
    data = (HELD / "bom_perf.txt").read_bytes()
    assert data.startswith(b"\xef\xbb\xbfsleep ")
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data[3:])
    r, want = run(HELD / "bom_perf.txt"), run(plain)
    assert r.exit_code == 0 and r.stdout == want.stdout and r.stderr == ""
    assert "\ufeff" not in r.stdout and "sleep;" in r.stdout


def test_a_bom_is_dropped_once_from_stdin_and_from_a_compressed_input(tmp_path):
    text = "\ufeffmain;foo 1\n\ufeffmain;bar 2\n"   # a second one is text: kept
    want = "main;foo 1\n\ufeffmain;bar 2\n"   # (byte order)
    assert run_stdin(text.encode()).stdout.decode() == want
    gz = tmp_path / "bom.folded.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert run(gz).stdout == want
    assert Source(str(gz)).head == ["main;foo 1", "\ufeffmain;bar 2"]


# -- spaces and tabs before a folded count --------------------------------------------------

@pytest.mark.parametrize("name, out", [("tab_sep.folded", "main;foo 5\nmain;foo;bar 10\n"),
                                       ("tab_second.folded", "main;bar 3\nmain;foo 2\n")])
def test_a_tab_before_the_count_is_read_as_flamegraph_pl_reads_it(name, out):
    r = run(HELD / name)
    assert (r.exit_code, r.stdout, r.stderr) == (0, out, "")


LINES = {  # line -> (frames, count, before)
    "main;foo;bar\t10": (("main", "foo", "bar"), 10, None),
    "main;foo \t  5": (("main", "foo"), 5, None),
    "main;foo\t\t2.5": (("main", "foo"), 2.5, None),
    "x\t5 10": (("x",), 10, 5),
    "my proc;f  3  4": (("my proc", "f"), 4, 3),
    "java;read;  3": (("java", "read", " "), 3, None),  # stackcollapse's ' ' frame: kept
}


@pytest.mark.parametrize("line", LINES)
def test_white_space_before_the_count_is_no_frame_text(line):
    [rec] = folded.parse([(1, line)], "t")
    assert (tuple(f.name for f in rec.stack), rec.weight, rec.before) == LINES[line]
    tree = parser("folded", "line").parse(line)   # and the grammar reads it the same
    frames = tuple(fr.children[0].value if fr.children else "" for fr in tree.children[0].children)
    assert frames == LINES[line][0]
    assert folded._number(tree.children[-1].children[0].value) == LINES[line][1]


def test_the_summing_path_strips_the_run_before_the_count(tmp_path):
    p = tmp_path / "in.folded"
    p.write_text("main;foo\t 5\nmain;foo 1\nmain;foo  2\n")
    assert run(p).stdout == "main;foo 8\n"


# -- a bad line after good ones -------------------------------------------------------------

def test_a_bad_count_on_line_2_is_a_line_error_of_a_folded_input():
    path = HELD / "negative_second.folded"
    r = run(path)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        f"offconv: {path}:2: expected a folded stack 'frame;frame;... count', got '-3' as the count",
        "  | main;bar -3"]
    assert run(path, "--from", "folded").stderr == r.stderr   # the message --from folded gives
    lenient = run(path, "--lenient")
    assert (lenient.exit_code, lenient.stdout) == (0, "main;foo 2\n")
    assert lenient.stderr == f"offconv: skipped 1 malformed line (first: {path}:2)\n"


@pytest.mark.parametrize("count", ["-3", "+3", "1e3", "-2.5"])
def test_a_malformed_count_is_no_evidence_against_folded(count):
    head = [f"main;foo {count}", "main;bar 1"]
    assert formats.detect("t", head).name == "folded"
    assert formats.detect("t", head[:1]).name == "folded"   # alone: the parser names the line


def test_a_malformed_count_does_not_make_other_text_folded():
    assert folded.sniff(["@us[sshd]: -5", "@x: -1"]) == NO           # bpftrace scalars
    assert folded.sniff(["hello there", "not a profile", "at all -5"]) == NO


# -- compressed inputs ----------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".xz", ".bz2"])
def test_xz_and_bzip2_are_read_like_gzip(tmp_path, suffix):
    want = run(HELD / "comments.folded.gz")
    assert (want.exit_code, want.stdout) == (0, "main;bar 1\nmain;foo 2\n")
    path = HELD / f"comments.folded{suffix}"
    r = run(path)
    assert (r.exit_code, r.stdout, r.stderr) == (0, want.stdout, want.stderr)
    renamed = tmp_path / "no_suffix"   # by its magic, not its name
    shutil.copy(path, renamed)
    assert run(renamed).stdout == want.stdout
    assert run_stdin(path.read_bytes()).stdout.decode() == want.stdout


def test_a_compressed_input_is_streamed(tmp_path):
    lines = "".join(f"main;f{i} {i}\n" for i in range(400_000)).encode()   # 8 MB
    for suffix, module, cls in ((".xz", lzma, lzma.LZMAFile), (".bz2", bz2, bz2.BZ2File)):
        p = tmp_path / f"big{suffix}"
        p.write_bytes(module.compress(lines))
        src = Source(str(p))
        try:
            assert isinstance(src._stream.stream, cls)   # (counted: where damage would be met)
            assert len(src.head) == 200 and len(src._first) <= 2 << 20   # one or two reads
        finally:
            src.close()


@pytest.mark.parametrize("suffix", [".xz", ".bz2"])
def test_a_truncated_compressed_input_is_a_read_error(tmp_path, suffix):
    data = (HELD / f"comments.folded{suffix}").read_bytes()
    p = tmp_path / f"cut{suffix}"
    p.write_bytes(data[:len(data) * 2 // 3])
    r = run(p)
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1
    kind = {".xz": "xz", ".bz2": "bzip2"}[suffix]
    assert r.stderr.startswith(f"offconv: {p}: truncated {kind} data (after "), r.stderr


def test_zstd_says_decompress_it_first(tmp_path):
    path = HELD / "comments.folded.zst"
    r = run(path)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (f"offconv: {path}: is zstd-compressed: decompress it first "
                        f"(zstd -dc {path} | offconv -)\n")
    r = run_stdin(path.read_bytes())
    assert r.returncode == 2
    assert r.stderr.decode() == ("offconv: -: is zstd-compressed: decompress it first "
                                 "(zstd -dc FILE | offconv -)\n")


# -- the last line without its newline ------------------------------------------------------

def test_a_folded_file_without_a_final_newline_is_complete():
    r = run(HELD / "no_final_newline.folded")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "main;bar 3\nmain;foo 10\n", "")
    for mode in ("offcpu", "oncpu"):   # the summing path and the records' path
        r = run(HELD / "no_final_newline.folded", "--mode", mode, "--unit", "us")
        assert r.exit_code == 0 and CUT_WARNING not in r.stderr


def test_a_folded_line_cut_short_still_warns_with_lenient(tmp_path):
    p = tmp_path / "cut.folded"
    p.write_text("main;foo 1\nmain;foo 2\nmain;foo 3\nmain;fo")
    r = run(p, "--lenient")
    assert r.exit_code == 0 and r.stdout == "main;foo 6\n"
    assert f"offconv: {p}:4: {CUT_WARNING}" in r.stderr


def test_the_last_line_of_a_split_folded_input(monkeypatch, tmp_path):
    """Over two processes (offconv.run.parallel: the child reads the last line) as in one."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: os.environ.get("OFFCONV_JOBS") != "1")
    real, splits = split.load_split, []

    def spy(*a, **kw):
        r = real(*a, **kw)
        splits.append(r is not None)
        return r

    monkeypatch.setattr(split, "load_split", spy)
    lines = "\n".join(f"a;b{i} {i + 1}" for i in range(400))
    whole, cut = tmp_path / "whole.folded", tmp_path / "cut.folded"
    whole.write_text(lines + "\na;b;c 7")        # complete: no warning
    cut.write_text(lines + "\na;b;c 7 x")        # not a line: skipped, and cut short
    for path, args, warning in ((whole, (), None), (cut, ("--lenient",), f"{cut}:401: {CUT_WARNING}")):
        results = []
        for jobs in "12":
            monkeypatch.setenv("OFFCONV_JOBS", jobs)
            r = run(path, *args)
            results.append((r.exit_code, r.stdout, r.stderr))
        assert splits[-1] is True and results[0] == results[1] and results[0][0] == 0
        assert (warning in results[0][2]) if warning else results[0][2] == ""


def test_perf_script_cut_inside_an_event_still_warns(tmp_path):
    data = (HELD / "bom_perf.txt").read_bytes()
    p = tmp_path / "cut.txt"
    p.write_bytes(data[:data.rstrip().rfind(b"(")])   # inside the last frame line
    r = run(p)
    assert r.exit_code == 0 and f"offconv: {p}:17: {CUT_WARNING}" in r.stderr


# -- bcc's banner without a histogram -------------------------------------------------------

def test_a_bcc_banner_without_a_table_is_an_empty_bcc_histogram():
    path = HELD / "runqlat_banner_only.txt"
    assert bcc_hist.sniff(path.read_text().splitlines()) == MAYBE
    r = run(path)
    assert (r.exit_code, r.stdout) == (0, "")
    assert r.stderr.startswith(f"offconv: warning: {path}: ") and len(r.stderr.splitlines()) == 1
    svg = run(path, "--to", "svg")
    assert svg.exit_code == 2 and svg.stderr.startswith("offconv: ")


def test_a_bcc_banner_before_other_output_is_not_a_histogram():
    # offcputime without -f: its stacks follow the same kind of banner
    head = ["Tracing off-CPU time (us) of all threads by user + kernel stack... Hit Ctrl-C to end.",
            "^C", "    schedule", "    -                sshd (1234)", "        12345", ""]
    assert bcc_hist.sniff(head) == NO
    # a bpftrace script's printf banner: its maps decide
    head = ["Attaching 2 probes...", "Tracing off-CPU time... Hit Ctrl-C to end.", "",
            "@us[sshd]: 5"]
    assert formats.detect("t", head).name == "bpftrace"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
