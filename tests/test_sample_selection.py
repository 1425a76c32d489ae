"""-p/--filter-pid, --filter-tid, --comm and -U/-K/-d on inputs of samples (perf's on-CPU
samples, folded stacks, bpftrace stack maps): they were applied to sched intervals only
and silently ignored here (held out: `offconv perf.txt -p PID` printed every process)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from offconv.cli import app

FG = Path(__file__).parent / "fixtures" / "flamegraph-test"
PIDTID = str(FG / "perf-iperf-stacks-pidtid-01.txt")   # perf script with pid/tid headers


def _run(*args):
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def _folded(text: str) -> dict:
    out: dict = {}
    for line in text.splitlines():
        stack, _, w = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(w)
    return out


def _headers(path: str) -> list:
    """(comm, pid, tid) of each sample header, read with a plain split."""
    got = []
    for line in open(path, encoding="utf-8", errors="replace"):
        if line[:1] not in ("", "\t", " ", "\n", "#"):
            comm, rest = line.split(" ", 1)
            pid, _, tid = rest.split()[0].partition("/")
            got.append((comm, int(pid), int(tid)))
    return got


def test_pid_tid_and_comm_select_samples():
    heads = _headers(PIDTID)
    by_pid: dict = {}
    for comm, pid, tid in heads:
        by_pid[pid] = by_pid.get(pid, 0) + 1
    pid = max(by_pid, key=by_pid.get)
    code, out, _ = _run(PIDTID, "--pid", "-p", str(pid))
    f = _folded(out)
    assert code == 0 and {s.split(";")[0] for s in f} == {f"iperf-{pid}"}
    assert sum(f.values()) == by_pid[pid]
    tid = next(t for c, p, t in heads if p == pid and t != p)
    code, out, _ = _run(PIDTID, "--tid", "--filter-tid", str(tid))
    f = _folded(out)
    assert {s.split(";")[0] for s in f} == {f"iperf-{pid}/{tid}"}
    assert sum(f.values()) == sum(1 for h in heads if h[2] == tid)
    code, out, _ = _run(PIDTID, "--comm", "^(run|multilog)$")
    assert {s.split(";")[0] for s in _folded(out)} == {"run", "multilog"}
    code, out, err = _run(PIDTID, "--comm", "^nothing-matches$")
    assert code == 0 and out == "" and "warning" in err


def test_user_and_kernel_parts_of_samples():
    _, base, _ = _run(PIDTID, "--kernel")
    _, user, _ = _run(PIDTID, "-U", "--kernel")
    _, kern, _ = _run(PIDTID, "-K", "--kernel")
    _, delim, _ = _run(PIDTID, "-d")
    b, u, k = _folded(base), _folded(user), _folded(kern)
    assert sum(b.values()) == sum(u.values()) == sum(k.values())
    assert any("_[k]" in s for s in b)
    # -U: no kernel frame but [vdso]'s (user-mode code, as bcc counts it)
    assert not any(f.endswith("_[k]") and "vdso" not in f for s in u for f in s.split(";"))
    assert all(f.endswith("_[k]") for s in k for f in s.split(";")[1:])
    # -d: a '-' between a user part and a kernel part, and only there
    d = _folded(delim)
    assert any(";-;" in s for s in d)
    assert sum(d.values()) == sum(b.values())


def test_folded_input_selects_by_name_and_refuses_pids(tmp_path):
    p = tmp_path / "in.folded"
    p.write_text("app;main;read;-;entry_SYSCALL_64;do_syscall_64;schedule 1500\n"
                 "app;main;-;do_nanosleep;schedule 2500\n"
                 "other;main;poll 7\n")
    code, out, _ = _run(str(p), "--comm", "^app$")
    assert code == 0 and set(_folded(out)) == {"app;main;read;-;entry_SYSCALL_64;do_syscall_64;schedule",
                                                "app;main;-;do_nanosleep;schedule"}
    code, out, _ = _run(str(p), "-K")   # bcc's '-' marks the kernel part
    assert _folded(out) == {"app;entry_SYSCALL_64;do_syscall_64;schedule": 1500,
                            "app;do_nanosleep;schedule": 2500, "other": 7}
    code, out, err = _run(str(p), "-p", "42")
    assert code == 2 and "no processes" in err and "--comm" in err
    assert len(err.strip().splitlines()) == 1


def test_folded_output_is_in_microseconds(tmp_path):
    # DESIGN: folded off-CPU weights are integer µs, whatever the input's unit
    p = tmp_path / "in.folded"
    p.write_text("a;b 1500\na;c 499\na;d 2500000\n")
    _, out, _ = _run(str(p), "--unit", "ns")
    assert _folded(out) == {"a;b": 2, "a;d": 2500}       # 499 ns rounds to 0: left out
    _, out, _ = _run(str(p), "--unit", "ms")
    assert _folded(out) == {"a;b": 1500000, "a;c": 499000, "a;d": 2500000000}
    _, out, _ = _run(str(p), "--unit", "us")
    assert _folded(out) == {"a;b": 1500, "a;c": 499, "a;d": 2500000}


def test_pid_of_an_input_with_tids_only_matches_the_tid_and_says_so():
    path = str(FG / "perf-cycles-instructions-01.txt")   # headers 'comm tid ...' (no pid)
    tid = next(int(l.split()[1]) for l in open(path) if l[:1] not in ("", "\t", " ", "\n", "#"))
    code, out, err = _run(path, "--tid", "-p", str(tid))
    assert code == 0 and out and {s.split(";")[0] for s in _folded(out)} == {f"noploop-?/{tid}"}
    assert "so -p matched the tid" in err
