"""bcc output: histogram tables (runqlat, cpudist, runqlen) and the folded dialects of
offcputime / offwaketime / wakeuptime -f (real output from bcc's examples, and lines in
the layouts bcc's tools print where the examples have none)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.run import pipeline
from offconv.cli import app
from offconv.model.errors import ParseError
from offconv.model.records import BLOCKED, DELIMITER, KERNEL, MARKER, OFFCPU, ONCPU, RUNQ, THREAD, USER, WAKER_DELIMITER, WAKEUP
from offconv.model.options import Options, ParseOptions
from offconv.inputs import bcc_hist, folded

BCC = Path(__file__).parent / "fixtures" / "bcc"


def hists(name: str, **kw):
    path = BCC / name
    return list(bcc_hist.parse(enumerate(path.read_text().split("\n"), 1), str(path),
                               ParseOptions(**kw), {}))


def test_runqlat_buckets():
    [h] = hists("runqlat.txt")
    assert (h.name, h.unit, h.kind, h.keys) == ("runqlat_usecs", "us", RUNQ, ())
    assert h.buckets[0] == (0, 2, 233) and h.buckets[1] == (2, 4, 742)
    assert h.buckets[-1] == (32768, 65536, 64) and sum(n for *_, n in h.buckets) == 2398


def test_interval_tables_merge_and_msecs():
    tables = hists("runqlat_-m_5_3.txt")
    assert len(tables) == 3 and all(h.unit == "ms" for h in tables)
    [m] = pipeline.load([str(BCC / "runqlat_-m_5_3.txt")], Options()).histograms
    assert m.buckets[0] == (0, 2, 3818 + 3775 + 3816)


def test_per_key_sections_and_timestamps():
    pids = hists("runqlat_-P.txt")
    assert pids[0].keys == ("pid=0",) and len({h.keys for h in pids}) == len(pids)
    assert {h.keys for h in hists("runqlat_-L.txt")} >= {("tid=0",), ("tid=7",)}
    cpu = hists("cpudist_-TP_5_3.txt")
    assert {h.keys for h in cpu} == {("pid=0",), ("pid=5068",)} and len(cpu) > 2
    assert all(h.kind == "" and h.name == "oncpu_usecs" for h in cpu)
    [off] = hists("cpudist_-O_-p.txt")
    assert off.kind == BLOCKED and off.name == "offcpu_usecs"
    assert hists("runqlat.txt", kind="blocked")[0].kind == BLOCKED


def test_linear_table():
    [h] = hists("runqlen.txt")
    assert h.unit == "" and h.buckets[:2] == ((0, 1, 1068), (1, 2, 642))


def test_broken_row_and_lenient(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("     usecs               : count     distribution\n"
                   "         0 -> 1          : 23x      |***                |\n")
    r = CliRunner().invoke(app, [str(bad), "--to", "hist"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"offconv: {bad}:2: expected a bcc histogram row")
    assert r.stderr.splitlines()[1].startswith("  | ")


# -- folded dialects ------------------------------------------------------------------------

def samples(path_or_lines, **kw):
    if isinstance(path_or_lines, Path):
        lines = path_or_lines.read_text().split("\n")
    else:
        lines = path_or_lines
    return list(folded.parse(enumerate(lines, 1), "t", ParseOptions(**kw), {}))


def test_offcputime_without_markers_is_plain_until_unit_says():
    path = BCC / "offcputime_-K_-f_5.folded"
    s = samples(path)
    assert {(r.unit, r.kind) for r in s} == {("samples", ONCPU)}
    s = samples(path, unit="us")
    assert {(r.unit, r.kind) for r in s} == {("us", OFFCPU)}
    res = CliRunner().invoke(app, [str(path), "--unit", "us", "--to", "svg"])
    assert ">Off-CPU Time Flame Graph</text>" in res.stdout
    assert "<title>all (185 s, 100%)</title>" in res.stdout   # µs weights shown as time
    res = CliRunner().invoke(app, [str(path), "--countname", "us", "--to", "svg"])
    assert ">Off-CPU Time Flame Graph</text>" in res.stdout


def test_offcputime_delimited_and_missed_stacks():
    """offcputime -f -d: comm;USER root->leaf;-;KERNEL root->leaf US (bcc offcputime.py)."""
    lines = ["my app;main;do_read;read;-;entry_SYSCALL_64;ksys_read;schedule 1200",
             "kworker/0:1;[Missed User Stack];ret_from_fork;kthread;worker_thread;schedule 300",
             "bash;main;readline;[Missed Kernel Stack] 7"]
    a, b, c = samples(lines)
    assert (a.unit, a.kind, a.weight, a.task.comm) == ("us", OFFCPU, 1200, "my app")
    assert [f.kind for f in a.stack] == [USER, USER, USER, MARKER, KERNEL, KERNEL, KERNEL]
    assert a.stack[3] == DELIMITER
    assert b.stack[0].name == "[Missed User Stack]" and b.stack[0].kind == USER
    assert all(f.kind == KERNEL for f in b.stack[1:])
    assert c.stack[-1].kind == KERNEL and c.stack[0].kind == USER


def test_offwaketime_layouts():
    """New: target;T_USER;-;T_KERNEL;--;W_KERNEL leaf->root;-;W_USER leaf->root;waker US."""
    [r] = samples(["sshd;main;read;-;sys_read;schedule;--;try_to_wake_up;tty_wake;-;write;"
                   "main;bash 804"])
    assert (r.kind, r.unit, r.task.comm) == (WAKEUP, "us", "sshd")
    names = [f.name for f in r.stack]
    assert names == ["main", "read", "-", "sys_read", "schedule", "--", "try_to_wake_up",
                     "tty_wake", "-", "write", "main", "bash"]
    assert r.stack[5] == WAKER_DELIMITER and r.stack[-1].kind == THREAD
    assert r.stack[6].kind == KERNEL and r.stack[9].kind == USER
    # the old layout of bcc's example: '-' between target and waker, empty frames
    old = samples(BCC / "offwaketime_-fu_5.folded")
    assert {(r.kind, r.unit) for r in old} == {(WAKEUP, "us")}
    empty_waker = old[0]   # 'supervise;...;preempt_schedule_common;-; 2'
    assert empty_waker.stack[-1] == WAKER_DELIMITER and empty_waker.weight == 2
    full = [r for r in old if r.stack[-1].kind == THREAD]
    assert full and all(WAKER_DELIMITER in r.stack and "" not in [f.name for f in r.stack]
                        for r in full)
    res = CliRunner().invoke(app, [str(BCC / "offwaketime_-fu_5.folded"), "--to", "svg"])
    assert res.exit_code == 0 and ">Off-CPU Time Flame Graph</text>" in res.stdout


def test_plain_folded_and_differential_unchanged():
    s = samples(["java;start_thread;JavaMain 22", "a;b_[k] 1.5", "func_a;main 81 88"])
    assert [(r.unit, r.kind, r.task) for r in s] == [("samples", ONCPU, None)] * 3
    assert s[1].stack[1].kind == KERNEL and s[1].weight == 1.5
    assert (s[2].before, s[2].weight) == (81, 88)
    wake = samples(BCC / "wakeuptime_-f_5.folded")
    assert {(r.unit, r.kind) for r in wake} == {("samples", ONCPU)}
    assert {(r.unit, r.kind) for r in samples(BCC / "wakeuptime_-f_5.folded", unit="us",
                                              kind="blocked")} == {("us", BLOCKED)}


def test_folded_output_of_bcc_input_keeps_the_lines():
    path = BCC / "offcputime_-K_-f_5.folded"
    res = CliRunner().invoke(app, [str(path), "--unit", "us"])
    want: dict = {}
    for line in path.read_text().splitlines():   # bcc prints a stack once per pid
        stack, _, n = line.rpartition(" ")
        want[stack] = want.get(stack, 0) + int(n)
    assert res.stdout == "".join(f"{s} {n}\n" for s, n in sorted(want.items()))
