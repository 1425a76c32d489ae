"""perf.data input: perf script's output is read from a file as perf writes it
(perf_data.Follow), and when perf ends with much still unread (the parser was the slower
side), the rest is split over two processes (follow.FollowSplit). Both must give what the
serial path gives, byte for byte, with the same warnings, errors and line numbers.

perf itself is played by a process that writes a perf script text fixture in two steps
(the first fifth, a pause, the rest), so that the split happens whatever this machine's
speed: the reader has the first step, perf "ends" with the rest unread."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from offconv.model import naming
from offconv.run import follow, parallel, pipeline
from offconv.inputs.perf_data import reader as perf_data
from test_parallel import run as convert  # (exit code, output, bytes written) with OFFCONV_JOBS

FIX = Path(__file__).parent / "fixtures"
TEXTS = sorted(p for p in (FIX / "flamegraph-test").glob("*.txt"))
WRITER = ("import sys, time\n"
          "d = open(sys.argv[1], 'rb').read(); n = int(sys.argv[2])\n"
          "sys.stdout.buffer.write(d[:n]); sys.stdout.flush(); time.sleep(float(sys.argv[3]))\n"
          "sys.stdout.buffer.write(d[n:])\n")


class FakePerf:
    """perf script as Follow sees it: the first part of ``text`` is written at once; the
    rest, and perf's end, come at the first poll after the reader has read the first part
    and offconv has decided how to split (Follow.on_done set), or after 50 polls."""

    def __init__(self, out, text: bytes, first: int, mangled: bool = False):
        # perf script's command line, as convert() reads it (--no-demangle: parsers.demangle)
        self.args = ["perf", "script"] + (["--no-demangle"] if mangled else [])
        out.write(text[:first])
        out.flush()
        self._out, self._rest, self._first = out, text[first:], first
        self.returncode = None
        self.pid = -1
        self.follow = None
        self._polls = 0

    def poll(self):
        if self.returncode is None:
            self._polls += 1
            f = self.follow
            if self._polls > 50 or (f is not None and f.on_done is not None and f.pos >= self._first):
                self._out.write(self._rest)
                self._out.flush()
                self.returncode = 0
        return self.returncode

    def wait(self):
        return self.poll() if self.returncode is None else self.returncode


@pytest.fixture
def perf_plays(monkeypatch, tmp_path):
    """Run offconv on a fake perf.data whose 'perf script' writes a text (FakePerf);
    returns run(text_path, jobs, *args) -> (exit code, output, bytes written) and the list
    of the split decisions taken (a cut offset, or None)."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(follow, "FOLLOW_MIN_BYTES", 0)
    monkeypatch.setattr(follow, "FOLLOW_MIN_SVG_BYTES", 0)
    monkeypatch.setattr(parallel, "enabled", lambda: os.environ.get("OFFCONV_JOBS") != "1")
    monkeypatch.setattr(perf_data.Follow, "ENOUGH", 1)  # give the first part as soon as it is there
    cuts = []
    real_done = follow.FollowSplit._done

    def done(self, pos, size):
        cut = real_done(self, pos, size)
        cuts.append(cut)
        return cut

    monkeypatch.setattr(follow.FollowSplit, "_done", done)
    state = {}

    def start(perf, path, demangle_here=True, kallsyms=None):
        text = state["text"].read_bytes()
        lines250 = 0
        for _ in range(250):
            lines250 = text.find(b"\n", lines250) + 1 or len(text)
        first = text.find(b"\n\n", max(len(text) // 5, lines250))
        first = len(text) // 2 if first < 0 else first + 2
        err = tempfile.TemporaryFile()
        out = tempfile.TemporaryFile()
        state["proc"] = FakePerf(out, text, first, state.get("mangled", False))
        return state["proc"], err, out

    real_follow = perf_data.Follow

    class Follow(real_follow):
        def __init__(self, proc, out, err=None):
            super().__init__(proc, out, err)
            proc.follow = self

    monkeypatch.setattr(perf_data, "_start", start)
    monkeypatch.setattr(perf_data, "Follow", Follow)
    data = tmp_path / "fake.data"
    data.write_bytes(perf_data.MAGIC + b"\0" * 64)

    def run(text: Path, jobs: str, *args: str, mangled: bool = False):
        state["text"] = text
        state["mangled"] = mangled
        return convert(monkeypatch, tmp_path, jobs, data, *args)

    return run, cuts


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.name)
@pytest.mark.parametrize("args", [("--mode", "oncpu", "--to", "folded", "--tid"), ("--to", "svg")],
                         ids=["folded", "svg"])
def test_the_followed_split_equals_serial(text, args, perf_plays):
    run, cuts = perf_plays
    serial = run(text, "1", *args)
    assert cuts == []
    assert serial[0] == 0 and serial[2], serial[1]  # a conversion that failed both ways proves nothing
    split = run(text, "2", *args)
    assert split == serial


def test_the_split_happens(perf_plays):
    """The comparison above means something: the perf script fixtures are really split."""
    run, cuts = perf_plays
    big = [t for t in TEXTS if t.read_bytes().count(b"\n") > 300]  # the others are read whole at once
    assert len(big) >= 9
    for text in big:
        run(text, "2", "--mode", "oncpu", "--to", "folded")
    assert len(cuts) == len(big) and None not in cuts, cuts


def _demangle_pairs() -> list:
    rows = (FIX / "demangle" / "perf-6.1-node-rpds.tsv").read_text().splitlines()
    return [tuple(c.replace("\\t", "\t") for c in row.split("\t")) for row in rows]


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) not installed")
@pytest.mark.parametrize("args", [("--mode", "oncpu", "--to", "folded", "--tid"), ("--to", "svg"),
                                  ("--to", "speedscope")], ids=["folded", "svg", "speedscope"])
def test_mangled_names_split_as_perf_would_have_printed_them(perf_plays, tmp_path, args):
    """perf script --no-demangle (parsers.demangle), split: each process demangles the
    names of its own part; the output is the one of perf's own demangled text, serial."""
    run, cuts = perf_plays
    pairs = _demangle_pairs()
    mangled, demangled = [], []
    for i in range(400):  # callchains of 3 recorded frame lines each, in varied orders
        rows = [pairs[(i * k + k * k) % len(pairs)] for k in (1, 3, 7)]
        head = f"node {100 + i % 5} [000] {i}.5: 1001001 cpu-clock:ppp:\n"
        mangled.append(head + "\n".join(a for a, _ in rows) + "\n\n")
        demangled.append(head + "\n".join(b for _, b in rows) + "\n\n")
    (tmp_path / "m.txt").write_text("".join(mangled))
    (tmp_path / "d.txt").write_text("".join(demangled))
    perfs = run(tmp_path / "d.txt", "1", *args)
    assert perfs[0] == 0, perfs[1]
    ours = run(tmp_path / "m.txt", "2", *args, mangled=True)
    assert cuts and cuts[-1] is not None  # the second part was demangled by the child
    assert ours == perfs
    assert b"v8::internal" in ours[2] and b"_ZN" not in ours[2]


def test_line_numbers_of_the_second_part(perf_plays, tmp_path):
    """The child numbers its lines from 1; the parent shifts them: a line skipped with
    --lenient and the line cut short at the end are named as the serial path names them,
    and without --lenient the error is the same."""
    run, cuts = perf_plays
    events = "".join(f"a 1 [000] {i}.0: 1 cycles:\n\tff f (b)\n\n" for i in range(1, 40))
    bad = tmp_path / "bad.txt"  # the bad line near the end: in the child's part
    bad.write_text(events * 9 + "a 1 [000] 800.6x: cycles:\n\tff f (b)\n\n" + events
                   + "a 1 [000] 900.0: 1 cycles:\n\tff f (b)")
    bad_line = 9 * 117 + 1
    last_line = bad_line + 3 + 117 + 1
    args = ("--mode", "oncpu", "--to", "folded", "--lenient")
    serial = run(bad, "1", *args)
    split = run(bad, "2", *args)
    assert cuts and cuts[-1] is not None and cuts[-1] < bad.read_text().index("800.6x")
    assert split == serial and serial[0] == 0
    assert f":{bad_line})" in serial[1] and f":{last_line}: the input ends" in serial[1], serial[1]
    strict = [run(bad, j, "--mode", "oncpu", "--to", "folded") for j in "12"]
    assert strict[0][0] == 2 and strict[0] == strict[1] and f":{bad_line}:" in strict[0][1]


def test_follow_reads_what_perf_writes_and_ends_at_the_cut(tmp_path):
    text = b"".join(b"line %d\n" % i for i in range(100000))
    src = tmp_path / "t.txt"
    src.write_bytes(text)
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(src), str(len(text) // 3), "0.2"], stdout=out)
    f = perf_data.Follow(proc, out)
    seen = []
    f.on_done = lambda pos, size: seen.append((pos, size)) or size - 7
    got = b""
    while True:
        d = f.read(1 << 16)
        if not d:
            break
        got += d
    proc.wait()
    f.close()
    assert seen and seen[0][1] == len(text) and got == text[:-7]


def test_a_lagging_reader_stops_perf_and_lets_it_go_on(tmp_path, monkeypatch):
    """More than LAG bytes unread: perf is stopped (SIGSTOP) and continued (SIGCONT) when
    the reader has caught up with half of it; the text is whole."""
    monkeypatch.setattr(perf_data.Follow, "LAG", 1 << 20)
    sent = []
    real_kill = os.kill
    monkeypatch.setattr(perf_data.os, "kill", lambda pid, sig: sent.append(sig) or real_kill(pid, sig))
    text = b"".join(b"a line of text %09d\n" % i for i in range(400000))  # 10 MB
    out = tempfile.TemporaryFile()
    out.write(text)  # all of it written before the first read: the reader lags by 10 MB
    out.flush()
    sleeper = subprocess.Popen(["sleep", "30"])  # perf, as far as its signals go

    class Running:
        pid = sleeper.pid
        returncode = None

        def poll(self):
            return self.returncode

    proc = Running()
    f = perf_data.Follow(proc, out)
    try:
        first = f.read(1 << 20)
        assert sent == [signal.SIGSTOP]
        for _ in range(200):  # the signal is delivered when the process is next scheduled
            if open(f"/proc/{sleeper.pid}/stat").read().split()[2] == "T":
                break
            time.sleep(0.005)
        assert open(f"/proc/{sleeper.pid}/stat").read().split()[2] == "T"  # stopped
        rest = b""
        while len(first) + len(rest) < len(text) - (1 << 19):
            assert sent == [signal.SIGSTOP]
            rest += f.read(1 << 18)
        rest += f.read(1 << 18)
        assert sent == [signal.SIGSTOP, signal.SIGCONT]  # less than half of LAG to read
        proc.returncode = 0  # now it has ended
        while True:
            d = f.read(1 << 20)
            if not d:
                break
            rest += d
        f.close()
        assert first + rest == text
    finally:
        sleeper.kill()
        sleeper.wait()


def test_read_text_is_freed_behind_the_reader(tmp_path):
    """Holes are punched behind the reader: the file's blocks on disk stay near the
    unread part, not the whole text."""
    text = b"x" * (40 << 20)
    out = tempfile.TemporaryFile()
    out.write(text)
    out.flush()

    class Ended:
        returncode = 0
        pid = -1

        def poll(self):
            return 0

    f = perf_data.Follow(Ended(), out)
    while f.read(1 << 20):
        pass
    blocks = os.fstat(f.fd).st_blocks * 512
    f.close()
    assert blocks < (20 << 20), blocks


def test_a_perf_still_running_when_the_reader_is_done_is_killed(tmp_path):
    """An input whose parse fails early: perf would go on writing a file nobody reads
    (with a pipe, its closing ended perf); closing the stream kills it."""
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen(["sleep", "30"], stdout=out)
    f = perf_data.Follow(proc, out)
    f.close()
    assert proc.returncode is not None and proc.returncode < 0


@pytest.fixture
def workers(monkeypatch):
    """The pids of the children FollowSplit forks (parallel.ForkedLater), in order."""
    pids = []
    real = parallel.ForkedLater.__init__

    def init(self, *a, **kw):
        real(self, *a, **kw)
        pids.append(self.pid)
    monkeypatch.setattr(parallel.ForkedLater, "__init__", init)
    return pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_child_is_forked_before_the_parse_and_reaped_after_it(perf_plays, workers):
    """Forked when the parse begins (a small heap: no copy-on-write of the parser's caches
    at perf's end), the child waits for its part; it is reaped whether it got one or not."""
    run, cuts = perf_plays
    text = max(TEXTS, key=lambda t: t.stat().st_size)
    split = run(text, "2", "--mode", "oncpu", "--to", "folded")
    assert cuts == [cuts[0]] and cuts[0] is not None and len(workers) == 1
    assert _gone(workers[0])
    assert split == run(text, "1", "--mode", "oncpu", "--to", "folded")


def test_a_child_not_needed_is_ended(perf_plays, workers, monkeypatch):
    run, cuts = perf_plays
    monkeypatch.setattr(parallel, "cut_in", lambda *a: None)  # no event boundary to cut at
    text = max(TEXTS, key=lambda t: t.stat().st_size)
    r = run(text, "2", "--mode", "oncpu", "--to", "folded")
    assert r[0] == 0 and cuts == [None] and len(workers) == 1 and _gone(workers[0])


def test_a_waiting_child_ends_with_its_parent(tmp_path):
    """The parent killed before it gave the child a part (its job pipe closes): the child
    does not wait for ever."""
    code = ("import os, sys, time\n"
            "from offconv.run import parallel\n"
            "w = parallel.ForkedLater(lambda **kw: 1)\n"
            "print(w.pid, flush=True)\n"
            "os.kill(os.getpid(), 9)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1])
    pid = int(r.stdout.split()[0])
    for _ in range(200):
        if _gone(pid) or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.01)
    else:
        raise AssertionError(f"child {pid} still waits")


def names_used(monkeypatch) -> list:
    """The number of stacks named ahead (naming.StackNames) each time a drawing takes such
    names over, appended to the list returned."""
    used = []
    real = naming.StackNames.keys

    def keys(self, samples, stack):
        used.append(len(self))
        return real(self, samples, stack)
    monkeypatch.setattr(naming.StackNames, "keys", keys)
    return used


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.name)
@pytest.mark.parametrize("args", [(), ("--tid", "--kernel", "--jit"), ("--colors", "java")],
                         ids=["plain", "annotated", "java-colors"])
def test_svg_names_made_while_the_child_works_draw_the_same(text, args, perf_plays, monkeypatch):
    """To an SVG, the parent names its own stacks while the child still parses
    (naming.StackNames): here it is made to name them all, as if the child were slow; the
    SVG is the serial one, byte for byte (colours come from the frames' kinds, noted in
    the order serial naming meets them)."""
    run, cuts = perf_plays
    serial = run(text, "1", "--to", "svg", *args)
    assert serial[0] == 0 and serial[2], serial[1]
    monkeypatch.setattr(parallel.Fork, "ready", lambda self: False)
    used = names_used(monkeypatch)
    split = run(text, "2", "--to", "svg", *args)
    if cuts and cuts[-1] is not None:  # split: its names were made ahead and used
        assert used and used[0] > 0
    assert split == serial


class _Counts:
    """Sums as FollowSplit._svg_share reads it: its stacks so far."""

    def __init__(self, stacks: int, depth: int = 20):
        self.counts = {tuple(range(i, i + depth)): 1 for i in range(stacks)}


def _share(stacks: int, left: int, parsed: int = 50 << 20, cpu: float = 0.5) -> float:
    split = follow.FollowSplit.__new__(follow.FollowSplit)
    split._sums = _Counts(stacks)
    split._cpu = time.process_time() - cpu  # ``cpu`` s spent on ``parsed`` bytes so far
    return split._svg_share(parsed, parsed + left)


def test_to_an_svg_the_child_takes_more_the_more_stacks_the_parent_has_to_name():
    """The parent names its own stacks while the child parses (_name_while): its share of
    what is left goes down as its stacks go up, from FOLLOW_SHARE (nothing to name) to 0
    (naming takes longer than the child's parse of all that is left)."""
    shares = [_share(n, 20 << 20) for n in (0, 8000, 12000, 16000, 200000)]
    assert shares[0] == follow.FOLLOW_SHARE and shares[-1] == 0.0
    middle = shares[1:-1]
    assert all(0 < s < follow.FOLLOW_SHARE for s in middle), shares
    assert middle == sorted(middle, reverse=True) and len(set(middle)) == len(middle)
    # the same stacks and more left: the parent keeps more of it
    assert _share(8000, 60 << 20) > _share(8000, 20 << 20)


def test_a_child_that_takes_all_that_is_left_draws_the_same(perf_plays, monkeypatch):
    """Share 0 (the parent only names): the cut is the first event boundary after what the
    parent has read, and the SVG is the serial one, byte for byte."""
    run, cuts = perf_plays
    monkeypatch.setattr(follow, "NAME_BYTES_PER_FRAME", 1e9)
    shares = []
    real = follow.FollowSplit._svg_share

    def share(self, pos, size):
        shares.append(real(self, pos, size))
        return shares[-1]
    monkeypatch.setattr(follow.FollowSplit, "_svg_share", share)
    text = max(TEXTS, key=lambda p: p.stat().st_size)
    serial = run(text, "1", "--to", "svg")
    split = run(text, "2", "--to", "svg")
    assert shares == [0.0] and cuts and cuts[-1] is not None
    assert split == serial and serial[0] == 0


@pytest.mark.parametrize("args", [(), ("--tid", "--kernel", "--jit")], ids=["plain", "annotated"])
def test_to_an_svg_the_child_sends_the_names_of_its_stacks(args, perf_plays, monkeypatch):
    """The child names its part's stacks with the SVG's labeller and sends their names and
    weights, not the stacks (split._labelled_part): the parent names none of them, and a
    name the child got wrong would show."""
    run, cuts = perf_plays
    text = max(TEXTS, key=lambda p: p.stat().st_size)
    serial = run(text, "1", "--to", "svg", *args)
    sent = []
    real = naming.StackNames.add_named

    def add_named(self, names, weights, flags):
        sent.append(len(names))
        real(self, names, weights, flags)
    monkeypatch.setattr(naming.StackNames, "add_named", add_named)
    assert run(text, "2", "--to", "svg", *args) == serial
    assert cuts[-1] is not None and sent and sent[0] > 0

    def wrong(self, names, weights, flags):  # the child's names are the ones drawn
        real(self, [n[:-1] + ("renamed",) for n in names], weights, flags)
    monkeypatch.setattr(naming.StackNames, "add_named", wrong)
    assert run(text, "2", "--to", "svg", *args) != serial


def test_two_perf_data_inputs_to_an_svg_draw_the_same(perf_plays, tmp_path):
    """Only the first input's child may send names instead of stacks (its sums become the
    profile; a later input's are added to it as stacks): two inputs, both split, draw the
    serial SVG of both."""
    run, cuts = perf_plays
    text = max(TEXTS, key=lambda p: p.stat().st_size)
    again = str(tmp_path / "fake.data")  # the fixture's perf.data, given twice
    serial = run(text, "1", again, "--to", "svg")
    assert serial[0] == 0 and serial[2], serial[1]
    one = run(text, "1", "--to", "svg")
    assert one[2] != serial[2]  # the second input counts
    split = run(text, "2", again, "--to", "svg")
    assert len(cuts) == 2 and None not in cuts
    assert split == serial


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.name)
@pytest.mark.parametrize("args", [(), ("--tid", "--kernel", "--jit"), ("--colors", "java")],
                         ids=["plain", "annotated", "java-colors"])
def test_svg_names_made_by_the_split_draw_the_same(text, args, perf_plays, monkeypatch):
    """To an SVG, the second process sends its part's display names, and this one names its
    own stacks while it waits: the SVG is the serial one, byte for byte."""
    run, cuts = perf_plays
    plain = run(text, "1", "--to", "svg", *args)
    assert plain[0] == 0 and plain[2], plain[1]
    assert run(text, "2", "--to", "svg", *args) == plain


@pytest.mark.skipif(shutil.which("perf") is None or os.geteuid() != 0,
                    reason="recording needs perf and root")
def test_a_recording_without_call_chains_is_not_split(tmp_path, monkeypatch):
    """Its one-line events parse three to four times as fast as perf prints them: no
    child is forked for it (FollowSplit), where a recording with call chains has one."""
    made = []
    real = follow.FollowSplit.__init__

    def init(self, *a, **kw):
        made.append(True)
        real(self, *a, **kw)
    monkeypatch.setattr(follow.FollowSplit, "__init__", init)
    monkeypatch.setattr(parallel, "enabled", lambda: True)
    for flags, split in (([], False), (["-g"], True)):
        data = tmp_path / f"rec{len(flags)}.data"
        subprocess.run(["perf", "record", "-q", "-a", "-F", "4999", *flags, "-o", str(data), "--",
                        "sleep", "1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert os.path.getsize(data) >= follow.FOLLOW_MIN_BYTES // 64
        assert perf_data.without_callchains(str(data)) is not split
        made.clear()
        code, out, _ = convert(monkeypatch, tmp_path, "2", data, "--to", "svg")
        assert code == 0, out
        assert made == ([True] if split else []), flags
    sched = FIX / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data"
    assert not perf_data.without_callchains(str(sched))   # tracepoints, call chains
    assert not perf_data.without_callchains(os.devnull)
