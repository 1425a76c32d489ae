"""perf script parser: header variants, frames, the cases stackcollapse-perf.pl gets wrong,
and both sched_switch dialects."""
from __future__ import annotations

import pytest

from offconv.model.errors import ParseError
from offconv.model.records import EXIT, INLINE, JIT, KERNEL, SWITCH, USER, WAKEUP, Sample, SchedEvent, Task
from offconv.model.options import ParseOptions
from offconv.inputs.perf_script import parse, sniff
from offconv.inputs.perf_script.frames import clean_name, parse_frame
from offconv.inputs.perf_script.header import parse_header


def events(text: str, **kw):
    lines = list(enumerate(text.split("\n"), 1))
    return list(parse(lines, "t.txt", ParseOptions(**kw)))


@pytest.mark.parametrize("line,expect", [
    # (comm, pid, tid, cpu, time_ns, period, event)
    ("java 25607 4794564.109216: cycles:", ("java", None, 25607, None, 4794564109216000, 1, "cycles")),
    ("java 12688 [002] 6544038.708352: cpu-clock:", ("java", None, 12688, 2, 6544038708352000, 1, "cpu-clock")),
    ("V8 WorkerThread 25607 4794564.109216: cycles:", ("V8 WorkerThread", None, 25607, None, 4794564109216000, 1, "cycles")),
    ("java 24636/25607 [000] 4794564.109216: cycles:", ("java", 24636, 25607, 0, 4794564109216000, 1, "cycles")),
    ("vote   913    72.176760:     257597 cycles:uppp:", ("vote", None, 913, None, 72176760000, 257597, "cycles:uppp")),
    ("dd 29776 666709.771979:   10101010 cpu-clock: ", ("dd", None, 29776, None, 666709771979000, 10101010, "cpu-clock")),
    ("java 19983 cycles:", ("java", None, 19983, None, None, 1, "cycles")),
    ("a 7 [001] 1.5: cycles:", ("a", None, 7, 1, 1500000000, 1, "cycles")),  # single-char comm
    ("kworker/0:1 123 [000] 10.000000001: cycles:", ("kworker/0:1", None, 123, 0, 10000000001, 1, "cycles")),
    ("Thread 2 [worker] 44/45 [003] 9.25: cycles:", ("Thread 2 [worker]", 44, 45, 3, 9250000000, 1, "cycles")),
    ("swapper\t0 [000]\t655.045914: \tsched:sched_wakeup: comm=x pid=1 prio=120 target_cpu=000",
     ("swapper", None, 0, 0, 655045914000, 1, "sched:sched_wakeup")),
    (":-1    -1 [000]   659.134878:     sched:sched_switch: prev_comm=l prev_pid=1 prev_prio=120 prev_state=X ==> next_comm=v next_pid=2 next_prio=120",
     (":-1", None, -1, 0, 659134878000, 1, "sched:sched_switch")),
])
def test_header_variants(line, expect):
    h = parse_header(line)
    assert h is not None
    assert h[:7] == expect


@pytest.mark.parametrize("line", [
    "\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])",
    "this is not a header",
    "foo bar: baz",
    "",
])
def test_not_headers(line):
    assert parse_header(line) is None


def test_time_never_goes_through_float():
    h = parse_header("x 1 [000] 123456789.123456789: ev:")
    assert h[4] == 123456789123456789


def test_event_without_trailing_blank_line_is_kept():
    ev = events("a 1 1.0: cycles:\n\tff f (b)\n\nb 2 2.0: cycles:\n\tff g (b)")
    assert [e.task.comm for e in ev] == ["a", "b"]
    assert ev[1].stack[0].name == "g"


def test_header_and_first_frame_on_one_line():
    ev = events("comm 12 1.0: 1 cycles:  ffffffff81 func_a ([kernel.kallsyms])\n\t7f01 main (/bin/x)\n")
    assert [f.name for f in ev[0].stack] == ["main", "func_a"]
    assert ev[0].stack[1].kind == KERNEL


def test_stack_is_root_first_and_offsets_are_stripped():
    ev = events("a 1 1.0: cycles:\n\tffff leaf+0x1a (/lib/x.so)\n\tffff mid+0x2 (/lib/x.so)\n\tffff root (/bin/a)\n")
    assert [f.name for f in ev[0].stack] == ["root", "mid", "leaf"]


@pytest.mark.parametrize("raw,expected", [
    ("std::function<int (int, int)>::operator()(int, int)", "std::function<int (int, int)>::operator()"),
    ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"),
    ("std::vector<std::pair<int, int>>::push_back(std::pair<int, int> const&)",
     "std::vector<std::pair<int, int>>::push_back"),
    ("net/http.(*Client).Do", "net/http.(*Client).Do"),
    ("(anonymous namespace)::foo(int)", "(anonymous namespace)::foo"),
    ("foo(int, char*)", "foo"),
    ("a;b", "a:b"),
    ("RegExp:[&<>\\\"\\']", "RegExp:[&<>\\\\]"),
    ("x->y(int)", "x->y"),
])
def test_clean_name(raw, expected):
    assert clean_name(raw) == expected


@pytest.mark.parametrize("line,kind", [
    ("\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])", KERNEL),
    ("\t8c3453 tcp_sendmsg (/lib/modules/4.3.0-rc1-virtual/build/vmlinux)", KERNEL),
    ("\t8c3453 tcp_sendmsg (/usr/lib/debug/boot/vmlinux-5.4.0-42-generic)", KERNEL),
    ("\t7d8 ipv4_conntrack_local+0x7f8 (/lib/modules/5.4.0/kernel/net/nf_conntrack.ko)", KERNEL),
    ("\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)", JIT),
    ("\t7f0012 compiled_fn (/root/.debug/jit/java-jit-20240101/jitted-1234-56.so)", JIT),
    ("\t7f1e2215d058 main (/usr/bin/x)", USER),
    ("\t0 [unknown] ([unknown])", USER),
])
def test_frame_kinds(line, kind):
    assert parse_frame(line, False)[0].kind == kind


def test_unknown_frames_and_addrs():
    assert parse_frame("\t7f53 [unknown] (/usr/lib/libc.so.6)", False)[0].name == "[libc.so.6]"
    assert parse_frame("\t7f53 [unknown] (/usr/lib/libc.so.6)", True)[0].name == "[libc.so.6 <7f53>]"
    assert parse_frame("\t40 [unknown] ([unknown])", True)[0].name == "[unknown <40>]"
    assert parse_frame("\t40 [unknown] ([unknown])", False)[0].name == "[unknown]"


def test_java_inlining_and_dso_with_spaces():
    fr = parse_frame("\t7f01 a->b->c (/tmp/perf-1.map)", False)
    assert [f.name for f in fr] == ["a", "b", "c"] and fr[1].kind == INLINE
    fr = parse_frame("\t7f01 foo ([JIT app cache])", False)
    assert fr[0].name == "foo" and fr[0].module == "[JIT app cache]"


def test_go_method_kept_whole():
    fr = parse_frame("\t4a1b2c net/http.(*Client).Do+0x10 (/usr/bin/server)", False)
    assert fr[0].name == "net/http.(*Client).Do"


def test_comment_header_block_is_skipped():
    ev = events("# ========\n# captured on: x\n# ========\n#\nfoo 1 [000] 1.0: cycles:\n\tff f (b)\n")
    assert len(ev) == 1


SWITCH_KERNEL = ("victim-main 19944 [000]   655.044405:     sched:sched_switch: prev_comm=victim-main "
                 "prev_pid=19944 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
                 "\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n"
                 "\tffffffff821fb643 schedule+0x23 ([kernel.kallsyms])\n")


def test_sched_switch_kernel_dialect():
    (e,) = events(SWITCH_KERNEL)
    assert isinstance(e, SchedEvent) and e.kind == SWITCH
    assert e.prev == Task("victim-main", None, 19944) and e.prev_state == "D"
    assert e.next == Task("swapper/0", None, 0)
    assert e.time_ns == 655044405000 and e.cpu == 0
    assert [f.name for f in e.stack] == ["schedule", "__schedule"]
    assert e.lineno == 1


@pytest.mark.parametrize("payload,prev,state,nxt", [
    ("prev_comm=a b prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=c=d next_pid=2 next_prio=120",
     "a b", "S", "c=d"),
    ("prev_comm=x prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=kworker/0:1 next_pid=2 next_prio=120",
     "x", "R+", "kworker/0:1"),
    ("prev_comm=x prev_pid=1 prev_prio=120 prev_state=D|K ==> next_comm=y next_pid=2 next_prio=120",
     "x", "D|K", "y"),
    ("a b:c:1 [120] S ==> web/1 2:2 [120]", "a b:c", "S", "web/1 2"),
    ("x prev_pid=9:1 [120] R ==> y:2 [100]", "x prev_pid=9", "R", "y"),
    ("Thread<00>:1 [120] D ==> swapper/1:2 [120]", "Thread<00>", "D", "swapper/1"),
])
def test_sched_switch_dialects_with_odd_comms(payload, prev, state, nxt):
    (e,) = events(f"p 1/1 [001] 1.000001: sched:sched_switch: {payload}\n")
    assert (e.prev.comm, e.prev.tid, e.prev_state, e.next.comm, e.next.tid) == (prev, 1, state, nxt, 2)
    assert e.prev.pid == 1  # header shows pid/tid and the header task is prev


@pytest.mark.parametrize("event,payload", [
    ("sched:sched_wakeup", "comm=victim main pid=19944 prio=120 target_cpu=000"),
    ("sched:sched_wakeup_new", "comm=victim main pid=19944 prio=120 target_cpu=001"),
    ("sched:sched_waking", "comm=victim main pid=19944 prio=120 target_cpu=000"),
    ("sched:sched_wakeup", "victim main:19944 [120] CPU:000"),
    ("sched:sched_wakeup", "victim main:19944 [120] success=1 CPU:000"),
])
def test_wakeup_dialects(event, payload):
    (e,) = events(f"swapper 0 [000] 2.5: {event}: {payload}\n\tff ttwu_do_activate ([kernel.kallsyms])\n")
    assert e.kind == WAKEUP and e.event == event
    assert e.target == Task("victim main", None, 19944)
    assert e.task == Task("swapper", None, 0)  # the waker
    assert e.stack[0].name == "ttwu_do_activate"


def test_process_exit():
    (e,) = events("x 5 [000] 3.0: sched:sched_process_exit: comm=x pid=5 prio=120\n")
    assert e.kind == EXIT and e.target.tid == 5


def test_other_tracepoints_are_samples_with_payload_not_frames():
    (e,) = events("x 5 [000] 3.0: sched:sched_stat_sleep: comm=x pid=5 delay=100 [ns]\n\tff f (b)\n")
    assert isinstance(e, Sample) and e.event == "sched:sched_stat_sleep"
    assert [f.name for f in e.stack] == ["f"]


def test_malformed_sched_payload_is_an_error_with_line():
    with pytest.raises(ParseError) as ei:
        events("\nx 5 [000] 3.0: sched:sched_switch: garbage\n")
    assert ei.value.lineno == 2
    assert "sched_switch payload" in ei.value.message


def test_malformed_header_error_and_lenient():
    text = "a 1 1.0: cycles:\n\tff f (b)\n\nnot a header\nb 2 2.0: cycles:\n"
    with pytest.raises(ParseError) as ei:
        events(text)
    assert ei.value.message.startswith("t.txt:4: expected an event header")
    stats = {}
    ev = list(parse(enumerate(text.split("\n"), 1), "t.txt", ParseOptions(lenient=True), stats))
    assert len(ev) == 2 and stats["skipped_lines"] == 1 and stats["first_skipped"] == "t.txt:4"


def test_sniff():
    assert sniff(["# ========"]) == "yes"
    assert sniff(["a 1 [000] 1.0: cycles:", "\tff f (b)"]) == "yes"
    assert sniff(["a;b;c 12"]) == "no"
    assert sniff(["@[kstack]: 1"]) == "no"


def test_dso_with_parentheses():
    fr = parse_frame("\t           c584f [unknown] (/memfd:sealed-91173221a7ea (deleted))", False)
    assert fr[0].name == "[memfd:sealed-91173221a7ea]"
    assert fr[0].module == "/memfd:sealed-91173221a7ea (deleted)"
    fr = parse_frame("\t7f01 foo(int) (bar) (/usr/lib/x.so)", False)
    assert fr[0].name == "foo" and fr[0].module == "/usr/lib/x.so"


def test_where_stackcollapse_perf_pl_has_known_bugs(tmp_path):
    """docs/formats.md's list, from a Go + I/O recording: a memfd dso with "(deleted)" and an
    exiting task's header with pid -1 fold as the script means to, not as its regexes fail."""
    from click.testing import CliRunner
    from offconv.cli import app
    text = ("memfd:sealed-91 10156 [001] 36748.984096:    1001001 cpu-clock:ppp: \n"
            "\t           5ab32 [unknown] (/memfd:sealed-91173221a7ea (deleted))\n"
            "\t           12ef5 [unknown] (/memfd:sealed-91173221a7ea (deleted))\n\n"
            ":-1    -1 [001] 36763.534651:    1001001 cpu-clock:ppp: \n"
            "\tffffffff8220342e _raw_write_unlock_irq+0xe ([kernel.kallsyms])\n"
            "\tffffffff8135fc2e do_exit+0x62e ([kernel.kallsyms])\n\n")
    src = tmp_path / "go.txt"
    src.write_text(text)
    r = CliRunner().invoke(app, [str(src), "--to", "folded"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        ":-1;do_exit;_raw_write_unlock_irq 1001001",
        "memfd:sealed-91;[memfd:sealed-91173221a7ea];[memfd:sealed-91173221a7ea] 1001001",
    ]
