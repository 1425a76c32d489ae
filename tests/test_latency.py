"""Durations kept bounded (offconv.sched.latency): a sequence past EXACT_MAX values becomes
Buckets, and what the report reads of it (count, nearest-rank percentiles, max, log2 µs
histogram) stays within the buckets' precision of the exact answer, against sorted lists."""
from __future__ import annotations

from array import array

from hypothesis import given, settings, strategies as st

from offconv.sched.latency import (EXACT_MAX, FINE_US, Buckets, Runs, bucket_of, grown,
                                   latency_stats, log2_buckets, merged, percentile)


def _close(approx: int, exact: int) -> bool:
    """Within the bucket of ``exact``: 1 µs below FINE_US µs, 1/128 of it above."""
    return abs(approx - exact) <= max(1000, exact / 128)


durations = st.lists(st.one_of(st.integers(0, 200_000), st.integers(0, 60_000_000_000)),
                     min_size=1, max_size=400)


@given(st.lists(durations, min_size=1, max_size=4), st.lists(st.booleans(), min_size=4, max_size=4))
@settings(max_examples=300, deadline=None)
def test_runs_over_buckets_within_a_bucket_of_exact(seqs, bucketed):
    kept = [Buckets(s) if b else array("q", s) for s, b in zip(seqs, bucketed)]
    exact = sorted(v for s in seqs for v in s)
    r = Runs(kept)
    assert len(r) == len(exact)
    for p in (1, 50, 90, 99, 100):
        assert _close(percentile(r, p), percentile(exact, p)), p
    assert _close(r.max(), exact[-1]) and _close(r.min(), exact[0])
    # log2 µs buckets: the buckets' bounds are whole µs on each power of two, so exact
    assert log2_buckets(r) == log2_buckets(exact)
    assert log2_buckets(r) == log2_buckets(array("q", exact))


@given(durations)
@settings(max_examples=200, deadline=None)
def test_only_exact_sequences_answer_exactly(values):
    r = Runs((array("q", values),))
    exact = sorted(values)
    assert [percentile(r, p) for p in range(1, 101)] == [percentile(exact, p) for p in range(1, 101)]
    assert latency_stats(r) == latency_stats(values)


def test_buckets():
    assert bucket_of(0) == 0 and bucket_of(999) == 0 and bucket_of(1000) == 1000
    assert bucket_of((FINE_US - 1) * 1000 + 999) == (FINE_US - 1) * 1000
    # 256 µs .. 512 µs: 2 µs wide (128 an octave)
    assert bucket_of(256_000) == 256_000 and bucket_of(257_999) == 256_000
    assert bucket_of(258_000) == 258_000
    for ns in (256_000, 1_000_000, 123_456_789, 59_999_999_999):
        assert 0 <= ns - bucket_of(ns) <= ns / 128
    # a bucket reads back as its values' mean: the same values, exactly
    b = Buckets([700_123] * 5 + [700_999])
    assert list(b) == [700_269] * 6 and len(b.counts) == 1
    assert list(Buckets([1_234_567] * 3)) == [1_234_567] * 3


def test_a_sequence_past_exact_max_becomes_buckets_and_stays_small():
    seq = array("q", range(0, EXACT_MAX * 1000, 1000))
    assert grown(seq) is not seq and isinstance(grown(seq), Buckets)
    b = grown(seq)
    for i in range(1_000_000):
        b.append(1_000_000 + (i * 7919) % 50_000_000)
    assert len(b) == EXACT_MAX + 1_000_000
    assert len(b.counts) < 2_500     # (128 an octave over 15 octaves, and 256 fine ones)
    small = array("q", [5, 6])
    assert grown(small) is small


def test_remove_and_merge_keep_the_count():
    b = Buckets([1000, 2000, 2200, 600_000])
    b.remove(2100)                   # (the same bucket as 2000 and 2200: its sum less 2100)
    assert len(b) == 3 and list(b) == [1000, 2100, 600_000]
    try:
        b.remove(9_000_000)
    except ValueError:
        pass
    else:
        raise AssertionError("removing an absent value must fail as array.remove does")
    m = merged(array("q", [7000]), b)
    assert isinstance(m, Buckets) and len(m) == 4
    m2 = merged(array("q", [1]), array("q", [2]))
    assert isinstance(m2, array) and list(m2) == [1, 2]


# -- end to end: a thread that waits more than EXACT_MAX times --------------------------------

def test_a_thread_of_many_waits_is_reported_within_a_bucket(tmp_path):
    """A thread that sleeps 3 * EXACT_MAX times (each sleep woken by the timer, then 20 µs
    in the run queue behind the idle CPU's switch): the report's sums stay exact to the µs
    and its percentiles within a bucket of the exact nearest-rank ones."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from perf_text import switch, wake

    n = 3 * EXACT_MAX
    t, lines, sleeps = 1_000_000_000, [switch(1_000_000_000, "swapper/0", 0, "R", "w", 10, frames=())], []
    for i in range(n):
        d = 50 + (i * 7919) % 20_000                # 50 µs .. 20 ms
        sleeps.append(d * 1000)
        t += 30
        lines.append(switch(t, "w", 10, "S", "swapper/0", 0))
        lines.append(wake(t + d, "swapper/0", 0, "w", 10))
        lines.append(switch(t + d + 20, "swapper/0", 0, "R", "w", 10, frames=()))
        t += d + 20
    src = tmp_path / "many.perf-script.txt"
    src.write_text("".join(lines))
    r = subprocess.run([sys.executable, "-m", "offconv", "report", "--json", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    got = j["latency"]["blocked"]
    assert got["count"] == n
    exact = sorted(sleeps)
    for p in (50, 90, 99):
        want = percentile(exact, p) / 1000
        assert abs(got[f"p{p}_us"] - want) <= max(1, want / 128), (p, got, want)
    assert abs(got["max_us"] - exact[-1] / 1000) <= exact[-1] / 1000 / 128   # (a bucket's mean)
    w = next(th for th in j["threads"] if th["tid"] == 10)
    assert w["blocked_us"] == sum(sleeps) // 1000     # the sums: exact
