"""Threads that ended are packed (analysis.PackedThread): a parallel build's recording has
a thread per process it ran, and their sums were most of the report's memory (issue 14).
A packed thread reads as the ThreadTotals it was, and the report with packing is the
report without it, byte for byte, on every recording."""
from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.analysis import totals as analysis
from offconv.analysis import lifetimes
from offconv.analysis.lifetimes import UNWOKEN_LOCK
from offconv.analysis.threads import Analysis
from offconv.analysis.totals import PackedThread, Threads, ThreadTotals
from offconv.cli import app
from offconv.model.records import Task, ThreadCounts

REC = Path(__file__).parent / "fixtures" / "recorded"
RECORDINGS = sorted(p for p in REC.rglob("*.perf-script.txt*"))
FIELDS = ("comm", "pid", "tid", "blocked_ns", "runq_ns", "runq_preempted_ns", "runq_idle_ns",
          "runq_throttled_ns", "oncpu_ns", "unknown_ns", "periods", "woken", "timed_lock_ns",
          "woken_lock_ns", "switches", "inferred", "no_wakeup", "offcpu_ns", "wall_ns",
          "runq_contention_ns")
CONTAINERS = ("by_cause", "unknown_by_cause", "wakers", "by_state", "cause_durations",
              "runq_cont", "runq_idle", "blocked")


def _full() -> ThreadTotals:
    tt = ThreadTotals(Task("cc1", 4242, 4243))
    for i, f in enumerate(FIELDS[3:14]):
        setattr(tt, f, 10_000_000_000 + i)       # beyond 32 bits
    tt.switches, tt.inferred, tt.no_wakeup = 7, 2, 1
    tt.by_cause = {("disk", "read"): 5, ("lock", "futex"): 3_000_000_000_000}
    tt.unknown_by_cause = {("disk", "read"): 9}
    tt.wakers = {(("disk", "read"), "kworker/0:1"): 5, (("lock", "futex"), "make"): 1}
    tt.by_state = {"D": 5, "S": 3}
    tt.cause_durations = {"lock": array("q", [3, 1, 2]), "disk": array("q", [5])}
    tt.runq_cont = array("q", [10, 20])
    tt.runq_idle = array("q")
    return tt


def _same(a, b) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    for f in CONTAINERS:
        x, y = getattr(a, f), getattr(b, f)
        assert dict(x) == dict(y) if isinstance(x, dict) or hasattr(x, "keys") else list(x) == list(y), f
        if hasattr(x, "keys"):
            assert list(x) == list(y), f"{f}: key order"


def _packed(threads: Threads, tt: ThreadTotals):
    threads.live[tt.tid] = tt
    return threads.get(tt.tid) if threads.pack(tt.tid) else None


def test_a_packed_thread_reads_as_the_thread_it_was_and_unpacks_to_it():
    tt = _full()
    threads = Threads()
    threads.chunks[0].extend([1, 2, 3])           # not at the start of its chunk
    p = _packed(threads, tt)
    assert p.__class__ is PackedThread and p._at == 3 and tt.tid not in threads.live
    _same(p, tt)
    assert list(p.cause_durations["lock"]) == [3, 1, 2]
    with pytest.raises(TypeError):
        p.by_cause[("disk", "read")] = 1           # read-only: a change takes it out first
    back = p.unpack()
    assert back.__class__ is ThreadTotals
    _same(back, tt)
    back.by_cause[("disk", "read")] += 1           # its own dicts again
    assert p.by_cause[("disk", "read")] == 5
    before = len(threads.chunks[0])
    empty = _packed(threads, ThreadTotals(Task("sh", None, 9)))
    assert not empty.by_cause and not empty.cause_durations and len(empty.runq_cont) == 0
    assert empty.wall_ns == 0 and empty.pid is None and empty.comm == "sh" and empty.tid == 9
    # tid, pid, comm, mask, counts, the two lengths: no zero kept
    assert len(threads.chunks[0]) - before == 6
    _same(p, tt)                                 # packing another leaves it as it was


def test_packed_threads_pickled_to_a_process_that_numbers_keys_its_own_way(monkeypatch):
    """`offconv diff` loads BEFORE in a forked child, which numbers the keys it meets after
    the fork as the parent numbers its own (AFTER's): the records go with their keys and
    are renumbered where they are read (a held-out diff of two recordings crashed)."""
    import pickle
    threads = Threads()
    tt = _full()
    _packed(threads, tt)
    threads.live[7] = ThreadTotals(Task("live", None, 7))
    other = _full()
    other.tid, other.comm = 99, "cc1plus"
    _packed(threads, other)
    threads.take(99)                          # taken out: its record is skipped
    threads.live.pop(99)
    data = pickle.dumps(threads)
    keys = ["shifted-%d" % i for i in range(5)] + [("disk", "read"), "S"]
    monkeypatch.setattr(analysis, "_KEYS", list(keys))
    monkeypatch.setattr(analysis, "_KEY_IDS", {k: i for i, k in enumerate(keys)})
    got = pickle.loads(data)
    assert set(got.live) == {7} and len(got) == 2 and 99 not in got
    _same(got.get(tt.tid), tt)
    _same(got.get(tt.tid).unpack(), tt)
    # where its keys cannot be numbered (beyond _KMAX), it is refused: the parent then
    # loads that side itself (parallel.Fork.result: None)
    monkeypatch.setattr(analysis, "_KMAX", len(keys))
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data)


def test_the_arena_starts_a_new_chunk_and_a_thread_that_does_not_fit_stays_live(monkeypatch):
    monkeypatch.setattr(analysis, "ARENA_CHUNK", 60)
    threads = Threads()
    packed = []
    for tid in range(5):
        tt = _full()
        tt.tid = tid
        packed.append(_packed(threads, tt))
    assert len(threads.chunks) > 1 and all(len(c) <= 60 for c in threads.chunks)
    for tid, p in enumerate(packed):
        want = _full()
        want.tid = tid
        _same(p, want)
    assert [t.tid for t in threads.values()] == list(range(5))
    big = _full()
    big.tid = 99
    big.by_cause[("disk", "write")] = 1 << 47     # beyond the bits a packed value has
    assert _packed(threads, big) is None and threads.live[99] is big
    monkeypatch.setattr(analysis, "_NMAX", 1)
    small = _full()
    small.tid = 100
    assert _packed(threads, small) is None        # two keys in by_cause: more than _NMAX
    an = Analysis()
    an.threads[5] = _full()
    an.exited(5)
    assert an.threads[5].__class__ is ThreadTotals


def test_the_table_finds_every_packed_thread_by_tid_and_takes_them_out():
    threads = Threads()
    tids = [5000 + 4096 * i for i in range(3000)] + list(range(1, 3000))  # sparse, then dense
    for tid in tids:
        t = ThreadTotals(Task("cc1", tid, tid))
        t.blocked_ns = tid
        threads.live[tid] = t
        assert threads.pack(tid)
    assert len(threads) == len(tids) and not threads.live
    assert all(threads[tid].blocked_ns == tid for tid in tids)
    assert 0 not in threads and -1 not in threads and (0, 1) not in threads
    assert threads.get(3000) is None and threads.get(3001, "none") == "none"
    for tid in tids[::3]:                          # taken out (tombstones), some packed again
        assert threads.take(tid).blocked_ns == tid and tid in threads.live
    assert threads.take(tids[0]) is None           # (live now, not packed)
    for tid in tids[::6]:
        assert threads.pack(tid)
    assert len(threads) == len(tids)
    assert sorted(t.tid for t in threads.values()) == sorted(tids)
    assert all(threads[tid].blocked_ns == tid for tid in tids)
    assert sorted(threads) == sorted(tids)
    assert sorted(k for k, _ in threads.items()) == sorted(tids)
    again = ThreadTotals(Task("as", 1, 1))        # a tid packed again (its first record
    threads.live[1] = again                       # out of the way)
    assert threads.pack(1) and len(threads) == len(tids) and threads[1].comm == "as"
    assert [t.comm for t in threads.values()].count("as") == 1


def test_tids_used_again_and_again_leave_a_bounded_arena(monkeypatch):
    """A stream of repeated recordings ends and starts the same tids again and again: each
    time a thread's record is taken out and a new one packed. The arena is compacted when
    what was taken out is most of it (and more than a chunk), so it stays bounded by the
    threads, and every thread reads as it was, in the order they were packed."""
    monkeypatch.setattr(analysis, "ARENA_CHUNK", 200)
    threads = Threads()
    tids = list(range(1, 41))
    most = 0
    for rnd in range(60):
        for tid in tids:
            t = threads.take(tid) or ThreadTotals(Task("w", tid, tid))
            t.blocked_ns += tid
            t.cause_durations.setdefault("sleep", array("q")).append(rnd)
            threads.live[tid] = t
            assert threads.pack(tid)
        held = sum(map(len, threads.chunks))
        records = sum(t._end() - t._at for t in threads.packed())
        # (the records, at most as much again taken out, and a chunk's worth)
        assert held <= 2 * records + 2 * 200, (rnd, held, records)
        most = max(most, held)
    assert most < 60 * 40 * 30 / 4      # (never compacted: 60 rounds of 40 growing records)
    assert len(threads) == len(tids) and [t.tid for t in threads.values()] == tids
    for tid in tids:
        t = threads[tid]
        assert t.blocked_ns == 60 * tid and list(t.cause_durations["sleep"]) == list(range(60))
    assert threads.take(7).blocked_ns == 420 and 7 in threads.live


def test_the_counts_of_a_packed_thread_take_it_out_to_be_added():
    an = Analysis()
    an.thread(Task("a", 1, 5)).blocked_ns = 100
    an.exited(5)
    assert an.threads[5].__class__ is PackedThread
    an.add_counts({"threads": {5: ThreadCounts()}})          # nothing to add: stays packed
    assert an.threads[5].__class__ is PackedThread
    c = ThreadCounts()
    c.switches = 3
    an.add_counts({"threads": {5: c}})
    assert an.threads[5].__class__ is ThreadTotals and an.threads[5].switches == 3
    assert an.threads[5].blocked_ns == 100


def test_a_tid_used_again_after_its_thread_ended_unpacks_it():
    an = Analysis()
    tt = an.thread(Task("a", 1, 5))
    tt.blocked_ns = 100
    an.exited(5)
    assert an.threads[5].__class__ is PackedThread
    again = an.thread(Task("b", 1, 5))
    assert again.__class__ is ThreadTotals and again.blocked_ns == 100 and again.comm == "b"
    an.pinned.add(6)
    an.thread(Task("c", 1, 6))
    an.exited(6)                                  # a wait of it is still to be decided
    assert an.threads[6].__class__ is ThreadTotals
    tt = an.thread(Task("d", 1, 7))
    tt.by_cause[UNWOKEN_LOCK] = 50       # a futex wait with no wakeup seen
    tt.cause_durations["lock?"] = array("q", [50])
    tt.timed_lock_ns, tt.woken_lock_ns = 0, 10
    an.exited(7)                                  # decided by finish(), after all inputs
    assert an.threads[7].__class__ is ThreadTotals
    an.finish()
    assert dict(an.threads[7].by_cause) == {("lock", "futex"): 50}


def _report(path: Path, args: list) -> str:
    r = CliRunner().invoke(app, [str(path), *args])
    assert r.exit_code == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_report_with_packed_threads_is_the_report_without(path, monkeypatch):
    """Packing, and the purge of what ended threads leave in the interval maps (at every
    exit here, one exit after the thread ended: the shortest lag), change nothing."""
    packed, purged = [], []
    real, real_purge = Analysis.exited, Analysis._purge

    def exited(self, tid, held=None, at=None):
        assert held is not None and at is not None
        real(self, tid, held, at)
        packed.append(self.threads.get(tid).__class__ is PackedThread)

    def purge(self, held):
        n = len(self.last_in) + len(self.last_cause) + len(self.live_exits)
        real_purge(self, held)
        purged.append(n - len(self.last_in) - len(self.last_cause) - len(self.live_exits))
    monkeypatch.setattr(lifetimes, "PURGE_EVERY", 1)
    monkeypatch.setattr(Analysis, "exited", exited)
    monkeypatch.setattr(Analysis, "_purge", purge)
    got = [_report(path, ["--to", "json"]), _report(path, ["--to", "report"])]
    # (nothing packed; what an exit decides of a thread's last waits still decided)
    monkeypatch.setattr(Analysis, "exited", lambda self, tid, held=None, at=None:
                        self.exit_decides(tid, at))
    assert got == [_report(path, ["--to", "json"]), _report(path, ["--to", "report"])]
    exits = sum(packed)
    if path.parent.name in ("make_j4", "sched_record_build", "shell_children", "contention_a_1"):
        assert exits >= 10, exits                 # these recordings run many processes
        if path.parent.name != "sched_record_build":   # (no call chains: its parents'
            # waits are decided at the end of the input, by their children's exits)
            assert sum(purged) >= 2 * (exits - 2), (sum(purged), exits)   # each leaves 2-3
