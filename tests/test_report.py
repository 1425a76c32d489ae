"""Report, JSON and hist renderers; percentiles, buckets, causes and the verdict matrix."""
from __future__ import annotations

import io
import json

import pytest

from offconv.analysis.summary import report_data
from offconv.analysis.threads import Analysis
from offconv.sched.causes import classify
from offconv.model.errors import OffconvError
from offconv.sched.latency import latency_stats, log2_buckets, percentile
from offconv.model.records import KERNEL, Frame, Histogram, OnCpu, Period, Profile, Task
from offconv.model.units import human_us
from offconv.analysis.verdict import verdict
from offconv.run.offcpu import build_profile
from offconv.model.options import AggregateOptions, Options, ReportOptions
from offconv.outputs import hist, json_report, report
from test_offcpu import events


def k(*names):
    return tuple(Frame(n, "[kernel.kallsyms]", KERNEL) for n in names)


@pytest.mark.parametrize("stack,cause", [
    (k("do_syscall_64", "__x64_sys_futex", "futex_wait", "futex_do_wait", "schedule", "__schedule"), "lock"),
    (k("do_fsync", "ext4_sync_file", "folio_wait_bit", "io_schedule", "schedule"), "disk"),
    # a file-backed fault reads the file: I/O on the read path (cold cache), not memory pressure
    (k("asm_exc_page_fault", "filemap_fault", "folio_wait_bit_common", "io_schedule", "schedule"), "disk"),
    # a swap-in, or reclaim under the fault: memory pressure
    (k("asm_exc_page_fault", "handle_mm_fault", "do_swap_page", "__folio_lock_or_retry",
       "folio_wait_bit_common", "io_schedule", "schedule"), "paging"),
    (k("asm_exc_page_fault", "handle_mm_fault", "do_swap_page", "swapin_readahead",
       "try_to_free_mem_cgroup_pages", "shrink_node", "__cond_resched", "__schedule"), "paging"),
    (k("kthread", "worker_thread", "schedule", "__schedule"), "poll/idle"),
    (k("kthread", "worker_thread", "process_one_work", "submit_bio_wait", "io_schedule", "schedule"), "disk"),
    (k("do_epoll_wait", "ep_poll", "schedule_hrtimeout_range_clock", "schedule"), "poll/idle"),
    (k("do_pselect.constprop.0", "core_sys_select", "do_select", "poll_schedule_timeout.constprop.0",
       "schedule_hrtimeout_range_clock", "schedule"), "poll/idle"),
    (k("__do_sys_wait4", "kernel_wait4", "do_wait", "schedule"), "child"),
    (k("__do_sys_clone3", "kernel_clone", "wait_for_completion_state", "__wait_for_common",
       "schedule_timeout", "schedule"), "child"),
    (k("__x64_sys_clock_nanosleep", "hrtimer_nanosleep", "do_nanosleep", "schedule"), "sleep"),
    (k("tcp_recvmsg", "sk_wait_data", "schedule_timeout", "schedule"), "network"),
    (k("rwsem_down_read_slowpath", "schedule"), "lock"),
    # a pipe read or write (waiting for the other end): pipe_read on older kernels,
    # anon_pipe_read / fifo_pipe_read on 6.18 (the wait inlined: no pipe_wait_readable
    # frame), seen in `seq | sort -R | sort -n`
    (k("ksys_read", "vfs_read", "pipe_read", "schedule", "__schedule"), "poll/idle"),
    (k("ksys_read", "vfs_read", "anon_pipe_read", "schedule", "__schedule"), "poll/idle"),
    (k("ksys_read", "vfs_read", "fifo_pipe_read", "schedule", "__schedule"), "poll/idle"),
    (k("ksys_write", "vfs_write", "anon_pipe_write", "schedule", "__schedule"), "poll/idle"),
    (k("mystery", "schedule"), "other"),
    ((Frame("main", "/bin/x"),), "other"),
])
def test_causes(stack, cause):
    assert classify(stack)[0] == cause


def test_percentile_is_nearest_rank():
    v = list(range(1, 101))
    assert (percentile(v, 50), percentile(v, 90), percentile(v, 99)) == (50, 90, 99)
    assert percentile([7], 99) == 7 and percentile([], 50) is None
    assert percentile([1, 2, 3], 50) == 2
    assert latency_stats([1_499, 2_500, 100_000]) == {"count": 3, "p50_us": 3, "p90_us": 100,
                                                      "p99_us": 100, "max_us": 100}


def test_log2_buckets_like_bpftrace_hist():
    assert log2_buckets([0, 999, 1_000, 3_999, 4_000, 1_048_576_000]) [:4] == (
        (0, 1, 2), (1, 2, 1), (2, 4, 1), (4, 8, 1))
    assert log2_buckets([5_000, 40_000])[0] == (4, 8, 1) and log2_buckets([]) == ()


def test_hist_layout_matches_bpftrace():
    h = Histogram("blocked_us", (), "us", ((2, 4, 157), (4, 8, 178), (512, 1024, 842), (1024, 2048, 2)))
    out = io.StringIO()
    hist.render(Profile(histograms=[h]), out, Options())
    assert out.getvalue() == (
        "@blocked_us: \n"
        "[2, 4)               157 |@@@@@@@@@                                           |\n"
        "[4, 8)               178 |@@@@@@@@@@                                          |\n"
        "[512, 1K)            842 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
        "[1K, 2K)               2 |                                                    |\n"
        "\n")
    out = io.StringIO()
    hist.render_histogram(Histogram("ms", ("lockholder",), "ms", ((0, 1, 1), (None, 0, 1), (100, None, 3))), out)
    # an overflow bucket makes it an lhist(), whose width-1 buckets bpftrace 0.17 prints as
    # [0, 1) (log2 hist() prints [0]): tests/test_formats_bpftrace.py round-trips both
    assert out.getvalue().splitlines()[:4] == ["@ms[lockholder]: ", "[0, 1)                 1 |@@@@@@@@@@@@@@@@@                                   |",
                                               "(..., 0)               1 |@@@@@@@@@@@@@@@@@                                   |",
                                               "[100, ...)             3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"]


def test_human_units():
    assert [human_us(x) for x in (0, 850, 50_300, 2_260_000)] == ["0 µs", "850 µs", "50.3 ms", "2.26 s"]


def profile():
    return build_profile([("t.txt", iter(events()))], AggregateOptions())


def test_json_report_has_the_design_keys_and_integer_us():
    out = io.StringIO()
    json_report.render(profile(), out, Options())
    d = json.loads(out.getvalue())
    for key in ("totals", "threads", "latency", "causes", "top_stacks", "dropped", "verdict"):
        assert key in d
    assert set(d["totals"]) >= {"blocked_us", "runq_us", "runq_preempted_us", "oncpu_us", "offcpu_us"}
    assert (d["totals"]["offcpu_us"], d["totals"]["blocked_us"], d["totals"]["runq_us"]) == (206, 101, 105)
    row = next(t for t in d["threads"] if t["tid"] == 10)
    assert (row["comm"], row["pid"], row["blocked_us"], row["runq_us"], row["runq_preempted_us"],
            row["switches"]) == ("my app", None, 100, 25, 20, 2)
    assert set(d["latency"]["runq"]) == {"count", "p50_us", "p90_us", "p99_us", "max_us"}
    # my app: blocked 100 of 220 µs wall (45%); preempted 20 µs + worker's 80 µs behind
    # another task (its 5 µs after the wakeup ended at a switch from idle: not contention)
    v = d["verdict"]
    assert v["answer"] == "both", v["reason"]
    assert v["blocked_share"] == round(100 / (220 + 102), 4) or v["blocked_long"]
    assert v["idle_wakeup_us"] == 5

    def ints(o, key=""):
        if isinstance(o, dict):
            for kk, v in o.items():
                ints(v, kk)
        elif isinstance(o, list):
            for v in o:
                ints(v, key)
        elif key.endswith("_us"):
            assert isinstance(o, int), key
    ints(d)
    again = io.StringIO()
    json_report.render(profile(), again, Options())
    assert again.getvalue() == out.getvalue()


def test_text_report_starts_with_the_verdict():
    out = io.StringIO()
    report.render(profile(), out, Options())
    text = out.getvalue()
    assert text.startswith("Verdict: ")
    assert "Threads (by off-CPU time)" in text and "my app" in text
    assert "p99" in text and "Blocked time by cause" in text


def test_report_without_sched_events_is_an_error():
    with pytest.raises(OffconvError):
        report.render(Profile(), io.StringIO(), Options())


def _analysis(runq_ms, blocked_ms, oncpu_ms, stack, n=20):
    """n threads-worth of intervals for one thread: each period blocked + run queue."""
    an = Analysis()
    t = Task("svc", 1, 1)
    now = 0
    for _ in range(n):
        wake = now + blocked_ms * 1_000_000
        end = wake + runq_ms * 1_000_000
        an.add_period(Period(t, "S", now, wake, end, stack), (Frame("svc"),), "svc")
        now = end
        an.add_oncpu(OnCpu(t, now, now + oncpu_ms * 1_000_000))
        now += oncpu_ms * 1_000_000
    an.threads[1].switches = n
    return an


FUTEX = k("futex_wait", "schedule")
EPOLL = k("ep_poll", "schedule")


@pytest.mark.parametrize("runq,blocked,stack,answer", [
    (30, 0, FUTEX, "capacity"),
    (0, 50, FUTEX, "waiting"),
    (30, 50, FUTEX, "both"),
    (0, 0, FUTEX, "on-cpu"),
    (0, 500, EPOLL, "on-cpu"),       # idle waits are not latency
])
def test_verdict_matrix(runq, blocked, stack, answer):
    v = verdict(_analysis(runq, blocked, 10, stack), ReportOptions())
    assert v["answer"] == answer, v["reason"]


def test_idle_waits_count_when_the_user_selected_threads():
    an = _analysis(0, 500, 10, EPOLL)
    an.threads_filtered = True
    assert verdict(an, ReportOptions())["answer"] == "waiting"


def test_thresholds_are_configurable():
    an = _analysis(3, 0, 10, FUTEX)           # run queue 23% of wall time, p99 3 ms
    assert verdict(an, ReportOptions())["answer"] == "capacity"
    assert verdict(an, ReportOptions(runq_share_long=0.5, runq_p99_long_us=50_000))["answer"] == "on-cpu"


def test_summary_is_deterministic_and_complete():
    s = report_data(Profile(unit="us", mode="offcpu", analysis=_analysis(30, 50, 10, FUTEX)),
                    Options())
    assert s["latency"]["blocked"]["p99_us"] == 50_000
    assert s["causes"] == [{"cause": "lock", "blocked_us": 1_000_000, "idle": False}]
    assert s["verdict"]["reason"].startswith("svc (tid 1) spends 56% of its wall time in lock waits "
                                             "(futex), p99 50 ms")


def test_top_stacks_list_a_printed_stack_once_summed_over_its_threads():
    """Threads of one name with the same stack print the same line: the report lists it
    once, their ns summed and rounded once (50 threads x 1.6 µs = 80 µs, not 2 µs 50
    times); with --tid each thread's line is its own."""
    from offconv.model.options import NamingOptions
    from test_offcpu import _same_name_threads
    prof = build_profile([("t.txt", iter(_same_name_threads()))], AggregateOptions())
    d = report_data(prof)
    blocked = [s for s in d["top_stacks"] if s["kind"] == "blocked"]
    assert blocked == [{"kind": "blocked", "stack": "worker;main;read;ksys_read;schedule", "us": 80}]
    (proc,) = d["top_by_process"]
    assert proc["stacks"] == [{"stack": "worker;main;read;ksys_read;schedule", "us": 80}]
    prof = build_profile([("t.txt", iter(_same_name_threads()))], AggregateOptions())
    d = report_data(prof, Options(naming=NamingOptions(tid=True), report=ReportOptions(top=3)))
    assert [s["stack"].split(";")[0] for s in d["top_stacks"] if s["kind"] == "blocked"] == \
        ["worker-7/100", "worker-7/101", "worker-7/102"]
    assert {s["us"] for s in d["top_stacks"] if s["kind"] == "blocked"} == {2}


def test_json_report_is_written_in_batches_byte_for_byte(monkeypatch):
    """The JSON report streams the encoder's chunks (a many-thread report lists every
    thread: json.dumps would first hold all its chunks), with the bytes of json.dumps."""
    from offconv.outputs import json_report as jr
    from test_offcpu import _same_name_threads
    prof = build_profile([("t.txt", iter(_same_name_threads()))], AggregateOptions())
    data = report_data(prof)
    # the rows of threads are made as they are written (analysis.ThreadRows)
    assert not isinstance(data["threads"], list) and len(data["threads"]) == 50
    whole = json.dumps({**data, "threads": list(data["threads"])}, indent=2,
                       ensure_ascii=False) + "\n"
    assert whole.count('"comm": "worker",\n      "pid"') == 50
    writes = []

    class Out:
        def write(self, s):
            writes.append(s)
    for batch in (3, 8192):
        monkeypatch.setattr(jr, "_BATCH", batch)
        writes.clear()
        jr.render(prof, Out())
        assert "".join(writes) == whole
        assert (len(writes) > 100) == (batch == 3)


@pytest.mark.parametrize("name", ["contention_a_1", "victim_a_unpinned"])
def test_json_report_rows_spliced_byte_for_byte(name, monkeypatch):
    """The streamed rows of threads are indented as json.dumps indents the list: the
    whole report of a recording is json.dumps of its data with the rows listed."""
    from pathlib import Path
    from click.testing import CliRunner
    from offconv.cli import app
    from offconv.outputs import json_report as jr
    rec = Path(__file__).parent / "fixtures" / "recorded" / name
    path = next(rec.glob(f"{name}.perf-script.txt*"))
    seen = []
    monkeypatch.setattr(jr, "report_data", lambda *a: seen.append(report_data(*a)) or seen[-1])
    r = CliRunner().invoke(app, [str(path), "--to", "json"])
    assert r.exit_code == 0, r.stderr
    (data,) = seen
    assert len(data["threads"]) > 5
    assert r.stdout == json.dumps({**data, "threads": list(data["threads"])}, indent=2,
                                  ensure_ascii=False) + "\n"
    assert json.loads("".join(json.JSONEncoder(indent=2).iterencode(jr._Rows([])))) == []
