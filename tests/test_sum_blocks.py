"""perf_script.sum_blocks (the collapse's hot path: no record per event) against the record
path it replaces (parse_blocks into Sums.add_records): the same sums in the same order, the
same event-filter state, the same stats and the same errors -- on every perf script fixture
and on random inputs that mix what makes sum_blocks leave its fast path (sched events,
comments, odd leaf lines, dsos with parentheses or '+0x', runs of blank lines, padded
headers), cut into block lists at random places, with flushes forced often. Every test
runs twice: with sum_blocks' per-event loop in C (offconv._speedups, which the test
install builds) and with the Python loop (OFFCONV_SPEEDUPS=0)."""
from __future__ import annotations

from pathlib import Path

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from offconv.run.aggregate import Sums
from offconv.model.errors import OffconvError
from offconv.model.options import ParseOptions
from offconv.inputs.perf_script import summed as perf_script  # sum_blocks' module: the tests set its globals
from offconv.inputs.perf_script.detect import sniff
from offconv.inputs.perf_script.frames import _PLAIN_FRAME, _parse_frame, parse_frame
from offconv.inputs.source import Source, numbered_blocks

FIX = Path(__file__).parent / "fixtures"


def perf_script_files():
    out = []
    for p in sorted(FIX.rglob("*")):
        if not p.is_file() or p.suffix in {".md", ".svg", ".json", ".py", ".folded", ".log"}:
            continue
        try:
            src = Source(str(p))
        except OffconvError:
            continue
        try:
            head = src.head
        except OffconvError:
            continue
        finally:
            src.close()   # (a perf.data's: its perf script killed and waited for)
        if sniff(head) != "no":
            out.append(p)
    return out


FILES = perf_script_files()


@pytest.fixture(autouse=True, params=["c", "python"])
def loop(request):
    """sum_blocks with its loop in C, then in Python. The C module must be built: pip
    install of the checkout compiles it (g++'s gcc, installed by .ci/run)."""
    if request.param == "c":
        try:
            import offconv._speedups  # noqa: F401
        except ImportError as e:
            pytest.fail(f"offconv._speedups is not built ({e}): pip install -e . with a C compiler")
    old = os.environ.get("OFFCONV_SPEEDUPS")
    os.environ["OFFCONV_SPEEDUPS"] = "1" if request.param == "c" else "0"
    assert (perf_script._speedups()[0] is not None) == (request.param == "c")
    yield request.param
    if old is None:
        del os.environ["OFFCONV_SPEEDUPS"]
    else:
        os.environ["OFFCONV_SPEEDUPS"] = old


def lists_of(text: str, cuts=()) -> list:
    """Source.block_lists() of ``text``, the pieces cut into lists before the given piece
    indexes (as 1 MiB reads would cut them), with the right first line numbers."""
    pieces = text.split("\n\n")
    rest = pieces.pop()
    if rest.endswith("\n"):
        rest = rest[:-1]
    out, lineno, start = [], 1, 0
    for cut in sorted(set(c for c in cuts if 0 < c < len(pieces))) + [len(pieces)]:
        group = pieces[start:cut]
        if group:
            out.append((lineno, group))
            lineno += sum(p.count("\n") + 2 for p in group)
        start = cut
    if rest:
        out.append((lineno, [rest]))
    return out


def outcome(fn):
    try:
        return fn()
    except OffconvError as e:
        return ("error", str(e))


def both(lists, opts, path="in.txt", streaming=False):
    def records():
        stats, sums = {}, Sums(opts)
        blocks = (b for n, ps in lists for b in numbered_blocks(n, ps))
        sums.add_records(perf_script.parse_blocks(blocks, path, opts, stats))
        return state(sums, stats)

    def summed():
        stats, sums = {}, Sums(opts)
        perf_script.sum_blocks(iter(lists), path, opts, stats, sums, streaming=streaming)
        return state(sums, stats)

    return outcome(records), outcome(summed)


def state(sums, stats):
    return (list(sums.counts.items()), sums.want, sums.other, sums.unit, sums.kind,
            sums.weighted, stats)


OPTS = [ParseOptions(), ParseOptions(demangle=True), ParseOptions(lenient=True),
        ParseOptions(addrs=True), ParseOptions(event_filter="cpu-clock:ppp")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIX)))
def test_fixtures_same_as_records(path, monkeypatch):
    monkeypatch.setattr(perf_script, "_RAW", 3)  # resolve the sums often
    text = path.read_text(errors="replace").replace("\r\n", "\n")
    n = text.count("\n\n")
    for opts in OPTS[:3]:
        for cuts in ((), (1, n // 3, n // 2)):
            records, summed = both(lists_of(text, cuts), opts, str(path))
            assert summed == records


def test_fixtures_cover_the_fast_path():
    """The comparison above compares something: in most fixtures most events take the fast
    path (fewer parse_blocks calls than half the blocks), and in some, some do not."""
    mostly_fast = some_slow = 0
    real = perf_script.parse_blocks
    opts = ParseOptions(lenient=True)
    for p in FILES:
        calls = []

        def spy(blocks, *a, **kw):
            calls.append(1)
            return real(blocks, *a, **kw)

        perf_script.parse_blocks = spy
        try:
            lists = list(Source(str(p)).block_lists())
            perf_script.sum_blocks(iter(lists), str(p), opts, {}, Sums(opts))
        except OffconvError:
            continue
        finally:
            perf_script.parse_blocks = real
        blocks = sum(len(ps) for _, ps in lists)
        mostly_fast += len(calls) < blocks / 2
        some_slow += bool(calls)
    # about half the fixtures are sched recordings, which take the record path by design
    assert mostly_fast >= 18 and some_slow > 3, (mostly_fast, some_slow, len(FILES))


# -- random inputs ------------------------------------------------------------------------

SYMS = ["main", "foo+0x1a", "bar+0x0", "baz+0x", "std::f<int (int)>::operator()+0x9",
        "[unknown]", "(anonymous namespace)::g+0x4", "q+0x1F", "a->b+0x3", "sym;x+0x2",
        "_ZN4core3fmt5write17h0123456789abcdefE+0x10", "+0x12", "w\"q'+0x1", "caf\u00e9+0x1",
        "g+0x1a)", "h+0xzz", "k+0x1 (x"]
DSOS = ["([kernel.kallsyms])", "(/usr/lib/libc.so.6)", "([unknown])", "(/memfd:x (deleted))",
        "(/tmp/perf-42.map)", "(/a+0x1)", "(/a+0x1 (b))", "", "([JIT app cache])"]
ADDRS = ["ffffffff8101", "7f00", "0", "zz", "1234abcd"]


@st.composite
def frame_line(draw):
    indent = draw(st.sampled_from(["\t    ", "\t", "\t  ", " \t", "    "]))
    addr = draw(st.sampled_from(ADDRS))
    sym = draw(st.sampled_from(SYMS))
    dso = draw(st.sampled_from(DSOS))
    trail = draw(st.sampled_from(["", "", " ", "\x0b", "\x1c", "\u00a0"]))
    return f"{indent}{addr} {sym} {dso}".rstrip(" ") + trail


@st.composite
def event(draw):
    comm = draw(st.sampled_from(["java", "sh", "a b", "sched-w", "kworker/0:1", "\u00e9t\u00e9"]))
    tid = draw(st.sampled_from(["1", "2", "10/11", "10/12"]))
    cpu = draw(st.sampled_from(["[000] ", "[001] ", ""]))
    t = draw(st.integers(0, 999))
    kind = draw(st.sampled_from(["clock", "clock", "clock", "cycles", "sched", "wake", "bad",
                                 "comment", "offcpu", "lost"]))
    if kind == "clock":
        head = f"{comm} {tid} {cpu}{t}.{t:06d}:     1001001 cpu-clock:ppp: "
    elif kind == "cycles":
        head = f"{comm} {tid} {cpu}{t}.{t:06d}: {draw(st.integers(1, 3))} cycles: "
    elif kind == "sched":
        head = (f"{comm} {tid} {cpu}{t}.{t:06d}: sched:sched_switch: prev_comm={comm} prev_pid=1 "
                f"prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120")
    elif kind == "wake":
        head = f"{comm} {tid} {cpu}{t}.{t:06d}: sched:sched_wakeup: comm=x pid=3 prio=120 target_cpu=001"
    elif kind == "bad":
        head = f"{comm} {tid} {cpu}{t}.x{t}: cpu-clock:ppp:"
    elif kind == "comment":
        head = "# a comment"
    elif kind == "offcpu":
        head = f"{comm} {tid} {cpu}{t}.{t:06d}: 5000 offcpu-time: "
    else:
        head = f"perf  9 [000] {t}.{t:06d}: PERF_RECORD_LOST lost 3"
    frames = draw(st.lists(frame_line(), max_size=5))
    return "\n".join([head] + frames)


@st.composite
def one_line_event(draw):
    """An event of a recording without call chains: perf pads the comm and prints the
    sampled frame (or nothing, with -F without ip,sym) on the header line."""
    comm = draw(st.sampled_from(["java", "sh", "a b", "sched-w", "kworker/0:1"]))
    tid = draw(st.sampled_from(["1", "2", "10/11"]))
    t = draw(st.integers(0, 999))
    ev = draw(st.sampled_from(["    1001001 cpu-clock:ppp:", " 7 cycles:", "cycles:",
                               " sched:sched_switch:", "   2 offcpu-time:"]))
    frame = draw(st.sampled_from(["", "  ffffffff81631cba kmem_cache_free ([kernel.kallsyms])",
                                  "  ffffffff81000000 __schedule+0x1a ([kernel.kallsyms])",
                                  "      564549e74804 get_original_signal+0x24 (/usr/bin/bash)",
                                  "  7f00 f (/a+0x1 (b))", "  zz main ([unknown])", "  main",
                                  "  7f00\tmain+0x1f (/a)", "  abc x+0xg1 (/b)", "  abc x+0x1f (/b) ",
                                  "  abc x+0x1f (b)c)", "  abc\x1cx (/b)", "  abc x(", "  abc (x)",
                                  "  ABC y+0x1 ((/b)", "  7f00 f+0x"]))
    if "sched_switch" in ev:
        frame = (" prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=y "
                 "next_pid=2 next_prio=120")
    return f"{comm:>16} {tid:>6} [000] {t:6d}.{t:06d}:{ev}{frame}"


@st.composite
def one_line_text(draw):
    """Runs of one-line events, now and then an event with a callchain or another line
    (a comment, a lost-events line, a malformed header), mostly without blank lines."""
    out = []
    for _ in range(draw(st.integers(1, 14))):
        if draw(st.integers(0, 5)):
            out.append(draw(one_line_event()))
        else:
            out.append(draw(event()))
        out.append(draw(st.sampled_from(["\n", "\n", "\n", "\n\n"])))
    return "".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=one_line_text(), cuts=st.lists(st.integers(0, 6), max_size=2),
       opts=st.sampled_from(OPTS), raw=st.sampled_from([1, 1 << 17]), streaming=st.booleans())
# found by hypothesis: an indented line after a lost-events line that follows a malformed
# header is no callchain of that header (parse skipped it silently; it counts as skipped)
@example(text="java 1 [000] 0.x0: cpu-clock:ppp:\nperf  9 [000] 0.000000: PERF_RECORD_LOST lost 3\n"
              "            java      1 [000]      0.000000:cycles:\n"
              "            java      1 [000]      0.000000:    1001001 cpu-clock:ppp:\n",
         cuts=[], opts=ParseOptions(lenient=True), raw=1, streaming=False)
def test_one_line_events_same_as_records(text, cuts, opts, raw, streaming):
    old = perf_script._RAW
    perf_script._RAW = raw
    try:
        records, summed = both(lists_of(text, cuts), opts, streaming=streaming)
    finally:
        perf_script._RAW = old
    assert summed == records


def test_one_line_events_take_the_fast_path():
    """The recording without call chains: a few parse_blocks calls (its odd lines), not one
    per event, and the same sums (test_fixtures_same_as_records compares them)."""
    path = FIX / "recorded" / "nocallchain" / "oncpu-no-g.perf-script.txt.gz"
    calls = []
    real = perf_script.parse_blocks

    def spy(blocks, *a, **kw):
        calls.append(1)
        return real(blocks, *a, **kw)

    opts = ParseOptions()
    sums = Sums(opts)
    lists = list(Source(str(path)).block_lists())
    try:
        perf_script.parse_blocks = spy
        perf_script.sum_blocks(iter(lists), str(path), opts, {}, sums)
    finally:
        perf_script.parse_blocks = real
    # no blank line: runs cut between events (source.RUN_LIMIT), a few hundred events each
    assert 2 <= sum(len(ps) for _, ps in lists) <= 20
    assert len(calls) <= 3 and sum(sums.counts.values()) == 2999 * 1001001 + 1001001


@st.composite
def perf_text(draw):
    events = draw(st.lists(event(), min_size=1, max_size=12))
    seps = [draw(st.sampled_from(["\n\n", "\n\n", "\n\n\n", "\n \n", "\n"])) for _ in events]
    return "".join(e + s for e, s in zip(events, seps)).lstrip("\n")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=perf_text(), cuts=st.lists(st.integers(0, 12), max_size=3),
       opts=st.sampled_from(OPTS), raw=st.sampled_from([1, 2, 1 << 17]), streaming=st.booleans(),
       budget=st.sampled_from([1, 40, 32 << 20]), leaves=st.sampled_from([1, 2, 1 << 14]))
def test_random_inputs_same_as_records(text, cuts, opts, raw, streaming, budget, leaves):
    old = perf_script._RAW, perf_script._CALLERS_BUDGET, perf_script._LEAF_CACHE
    perf_script._RAW, perf_script._CALLERS_BUDGET, perf_script._LEAF_CACHE = raw, budget, leaves
    try:
        records, summed = both(lists_of(text, cuts), opts, streaming=streaming)
    finally:
        perf_script._RAW, perf_script._CALLERS_BUDGET, perf_script._LEAF_CACHE = old
    assert summed == records


def leaf_key_calls(leaves: list, monkeypatch) -> int:
    """How many leaf lines sum_blocks keyed (cache misses) over one event per leaf name in
    ``leaves``, with a leaf cache of two; its sums must be the records'."""
    monkeypatch.setattr(perf_script, "_LEAF_CACHE", 2)
    monkeypatch.setenv("OFFCONV_SPEEDUPS", "0")  # the cache is the Python loop's
    text = "".join(f"a 1 [000] {i}.0: 1 cycles:\n\tff {leaf}+0x1 (b)\n\t1 main (b)\n\n"
                   for i, leaf in enumerate(leaves, 1))
    records, summed = both(lists_of(text), ParseOptions(), "x.txt")
    assert summed == records
    calls = []
    real = perf_script._leaf_key
    monkeypatch.setattr(perf_script, "_leaf_key", lambda leaf: calls.append(leaf) or real(leaf))
    perf_script.sum_blocks(iter(lists_of(text)), "x.txt", ParseOptions(), {}, Sums(ParseOptions()))
    return len(calls)


def test_leaf_cache_keeps_what_it_has_when_it_did_not_pay(monkeypatch):
    """Filled by two misses in a row (a hit rate under half): it keeps a and b, takes no
    more; c is keyed each time (emptied and filled again, each of the 30 would be)."""
    assert leaf_key_calls(["a", "b", "c"] * 10, monkeypatch) == 2 + 10


def test_leaf_cache_starts_again_when_it_paid(monkeypatch):
    """Filled after ten hits: emptied and filled again (c, d), and again, so the a at the
    end is keyed anew; kept instead, c would have been keyed ten times."""
    assert leaf_key_calls(["a"] * 10 + ["b"] + ["c"] * 10 + ["d", "a"], monkeypatch) == 5


def test_a_full_callchain_cache_is_not_parsed_twice(monkeypatch, loop):
    """When the callers' cache is full it starts again, after the keys waiting for its
    entries are summed: each distinct callchain is parsed once per fill, never again by
    the resolution of keys that were counted before the clear (on the javac text, 34k
    parses of 21k distinct callchains before)."""
    events = "".join(f"a 1 [000] {i}.0: 1 cycles:\n\tff leaf (b)\n\t{i:x} f{i % 50} (b)\n"
                     f"\t{i:x} main (b)\n\n" for i in range(1, 400))
    monkeypatch.setattr(perf_script, "_RAW", 1 << 17)  # resolved only at the end...
    monkeypatch.setattr(perf_script, "_CALLERS_BUDGET", 100)  # ...but the cache fills often
    records, summed = both(lists_of(events, ()), ParseOptions(), "x.txt")
    assert summed == records
    calls = []
    real = perf_script._body_stack

    def body_stack(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)
    monkeypatch.setattr(perf_script, "_body_stack", body_stack)
    perf_script.sum_blocks(iter(lists_of(events, ())), "x.txt", ParseOptions(), {},
                           Sums(ParseOptions()))
    # every callchain differs: one parse each (the C loop builds those whose frame lines
    # are all known without Python's _body_stack)
    assert len(calls) == len(set(calls)) and (len(calls) == 399 if loop == "python"
                                              else 0 < len(calls) < 399), len(calls)


def test_leaf_key_leaves_out_address_and_offset_only():
    """Leaves that differ only in their address and offset are one key; a '+0x' in the
    dso, or an empty offset, is not left out."""
    head = "java 1 [000] 1.000001:     1001001 cpu-clock:ppp: \n"
    text = "\n\n".join(head + leaf for leaf in [
        "\t1 foo+0x1 (/x.so)", "\t2 foo+0xff (/x.so)",        # one key: foo (x.so)
        "\t3 foo+0x (/x.so)",                                  # 'foo+0x': another frame
        "\t4 bar+0x1 (/a+0x1)", "\t5 bar+0x1 (/a+0x2)",        # two dsos
        "\t6 baz+0x1 (/b+0x1 (c))", "\t7 baz+0x1 (/b+0x2 (c))",  # two more
    ]) + "\n"
    opts = ParseOptions()
    records, summed = both(lists_of(text), opts)
    assert summed == records
    names = [[(f.name, f.module) for f in key[1:]] for key, _ in summed[0]]
    assert names == [[("foo", "/x.so")], [("foo+0x", "/x.so")], [("bar", "/a+0x1")],
                     [("bar", "/a+0x2")], [("baz", "/b+0x1 (c)")], [("baz", "/b+0x2 (c)")]]
    assert [n for _, n in summed[0]] == [2 * 1001001] + [1001001] * 5


def test_many_sched_events_in_oncpu_mode_leave_the_fast_path(monkeypatch):
    """Mostly slow blocks (sched events counted as events): the rest goes through records
    in one parse_blocks, with the same result."""
    head = "sh 2 [000] {t}.000001: sched:sched_wakeup: comm=x pid=3 prio=120 target_cpu=001\n\tffff f+0x1 ([kernel.kallsyms])"
    clock = "java 1 [000] 1.000001:     1001001 cpu-clock:ppp: \n\t1 foo+0x1 (/x.so)"
    text = "\n\n".join([clock] + [head.format(t=i) for i in range(1500)] + [clock]) + "\n"
    calls = []
    real = perf_script.parse_blocks
    monkeypatch.setattr(perf_script, "parse_blocks", lambda *a, **k: calls.append(1) or real(*a, **k))
    records, summed = both(lists_of(text, (700,)), ParseOptions())
    assert summed == records
    assert records[0][0][1] == 2 * 1001001 and records[2] is True and records[1] == "cpu-clock:ppp"
    assert len(calls) < 1100  # not one parse_blocks per remaining block


def test_plain_frame_fast_path_equals_the_general_parse():
    """parse_frame's regex fast path gives what split_frame + clean_name give, on every
    combination of the shapes each of them treats specially."""
    from itertools import product
    syms = ["main", "foo+0x1a", "bar+0x0", "baz+0x", "a+0x1+0x2", "std::f<int (int)>::operator()+0x9",
            "[unknown]", "(anonymous namespace)::g+0x4", "q+0x1F", "q", "a->b+0x3", "sym;x+0x2",
            "w\"q'+0x1", "foo bar+0x1", "x  ", "+0x12", "+a", "a+", "a +0x1", "[x]+0x1", "x]",
            "Lcom/ex/C;::m+0x5", "a)b", "t+0xZZ", "_$LT$x$GT$::h0123456789abcdef", "é+0x1", "a\tb+0x1"]
    dsos = ["([kernel.kallsyms])", "(/usr/lib/libc.so.6)", "([unknown])", "(/memfd:x (deleted))",
            "(/tmp/perf-42.map)", "(/a+0x1)", "()", "(a b)", "", "( x )", "(/x.ko)",
            "(/tmp/jitted-1-2.so)", "(x))", "((x)"]
    fast = 0
    for ind, addr, sym, sp, dso, trail, dm in product(
            ["\t    ", "\t", " ", ""], ["ffffffff8101", "zz", "", "0"], syms, [" ", "  ", "\t"], dsos,
            ["", " "], (False, True)):
        line = f"{ind}{addr} {sym}{sp}{dso}{trail}"
        assert parse_frame(line, False, dm) == _parse_frame(line, False, dm), line
        fast += _PLAIN_FRAME.match(line) is not None
    assert fast > 5000  # the fast path is taken, not only the general one


# -- folded.sum_lines against folded.parse into records ------------------------------------

from offconv.inputs import folded  # noqa: E402


def folded_both(text: str, opts: ParseOptions, path="in.folded"):
    lines = list(enumerate(text.split("\n"), 1))

    def records():
        stats, sums = {}, Sums(opts)
        sums.add_records(folded.parse(iter(lines), path, opts, stats))
        return state(sums, stats) + (sums.before and list(sums.before.items()),)

    def summed():
        stats, sums = {}, Sums(opts)
        folded.sum_lines(iter(lines), path, opts, stats, sums)
        return state(sums, stats) + (sums.before and list(sums.before.items()),)

    return outcome(records), outcome(summed)


FOLDED = sorted(p for p in FIX.rglob("*.folded") if p.is_file())


@pytest.mark.parametrize("path", FOLDED, ids=lambda p: str(p.relative_to(FIX)))
def test_folded_fixtures_same_as_records(path):
    text = path.read_text(errors="replace")
    for opts in (ParseOptions(), ParseOptions(lenient=True), ParseOptions(unit="us")):
        records, summed = folded_both(text, opts, str(path))
        assert summed == records


@st.composite
def folded_text(draw):
    names = ["a", "b", "c_[k]", "d_[j]", "-", "--", "", "[Missed User Stack]", "x y"]
    out = []
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.sampled_from(["line", "line", "line", "diff", "comment", "blank", "bad"]))
        stack = ";".join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=4)))
        n = draw(st.sampled_from(["1", "2", "0", "1.5", "7"]))
        out.append({"line": f"{stack} {n}", "diff": f"{stack} {n} 3", "comment": "# c",
                    "blank": "", "bad": f"{stack} x"}[kind])
    return "\n".join(out) + "\n"


@settings(max_examples=300, deadline=None)
@given(text=folded_text(), opts=st.sampled_from([ParseOptions(), ParseOptions(lenient=True)]))
def test_folded_random_same_as_records(text, opts):
    records, summed = folded_both(text, opts)
    assert summed == records


def test_c_loop_counts_most_samples(loop):
    """The C loop is what counts on-CPU samples (the comparisons above compare it): over
    three copies of a recorded perf script (the suite's vert.x stacks), Python parses the
    first sample of each new header and callchain into the caches, and the C loop counts
    every sample of the second and third copies."""
    if loop != "c":
        pytest.skip("the C loop")
    text = (FIX / "flamegraph-test" / "perf-vertx-stacks-01.txt").read_text()
    text = "\n".join(ln for ln in text.split("\n") if not ln.startswith("#")).strip("\n")
    events = text.count("\n\n") + 1
    counted = []
    real, real_flush = perf_script._speedups()

    def spy(*a):
        stop, n, budget = real(*a)
        counted.append(n)
        return stop, n, budget

    opts = ParseOptions()
    old = perf_script._speedups
    perf_script._speedups = lambda: (spy, real_flush)
    try:
        perf_script.sum_blocks(iter(lists_of("\n\n".join([text] * 3) + "\n")), "x.txt", opts,
                               {}, Sums(opts))
    finally:
        perf_script._speedups = old
    assert events == 286 and 2 * events <= sum(counted) < 3 * events, sum(counted)


def test_c_loop_counts_most_one_line_events(loop):
    """The C loop of one-line events (a recording without call chains) is what counts
    them: Python takes the first event of each new head (and the lines it leaves), C the
    rest; the sums are the Python loop's (test_fixtures_same_as_records)."""
    if loop != "c":
        pytest.skip("the C loop")
    path = FIX / "recorded" / "nocallchain" / "oncpu-no-g.perf-script.txt.gz"
    real = perf_script._one_line_events()
    taken = []

    def spy(lines, i, heads, keys):
        before = len(keys)
        stop = real(lines, i, heads, keys)
        taken.append(len(keys) - before)
        return stop

    opts = ParseOptions()
    sums = Sums(opts)
    old = perf_script._one_line_events
    perf_script._one_line_events = lambda: spy
    try:
        perf_script.sum_blocks(iter(Source(str(path)).block_lists()), str(path), opts, {}, sums)
    finally:
        perf_script._one_line_events = old
    assert 2900 <= sum(taken) <= 3000, sum(taken)
    assert sum(sums.counts.values()) == 2999 * 1001001 + 1001001


def test_c_loop_leaks_nothing(loop):
    """The C loops hold no reference they do not give back: summing the same input again
    and again leaves the traced memory where one run left it (a reference leaked per
    event or per key, a tuple of ~64 bytes, would add ~100 KB a run here)."""
    if loop != "c":
        pytest.skip("the C loop")
    import gc
    import tracemalloc
    text = (FIX / "flamegraph-test" / "perf-vertx-stacks-01.txt").read_text()
    text = "\n".join(ln for ln in text.split("\n") if not ln.startswith("#")).strip("\n")
    lists = lists_of("\n\n".join([text] * 6) + "\n", (300, 900))
    opts = ParseOptions()

    one_line = list(Source(str(FIX / "recorded" / "nocallchain" / "oncpu-no-g.perf-script.txt.gz"))
                    .block_lists())

    def run():
        sums = Sums(opts)
        perf_script.sum_blocks(iter(lists), "x.txt", opts, {}, sums)
        perf_script.sum_blocks(iter(one_line), "y.txt", opts, {}, sums)  # one-line events
        return len(sums.counts)

    tracemalloc.start()
    try:
        run()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(10):
            assert run() > 100
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, grown


def test_without_the_c_module_the_python_loop_runs(monkeypatch, loop):
    """Installed without a C compiler (setup.py marks the module optional), offconv runs
    the Python loop: the same sums, as every test above shows with OFFCONV_SPEEDUPS=0."""
    import sys
    monkeypatch.setenv("OFFCONV_SPEEDUPS", "1")
    monkeypatch.setitem(sys.modules, "offconv._speedups", None)  # import raises ImportError
    assert perf_script._speedups() == (None, None)
    text = (FIX / "flamegraph-test" / "perf-vertx-stacks-01.txt").read_text()
    records, summed = both(lists_of(text), ParseOptions(), "x.txt")
    assert summed == records and records[0]
