"""The part of a kallsyms snapshot that perf script is given for one recording
(offconv._speedups.kallsyms_for, kallsyms_snapshot.part_for): the C function against a
reference written from its rule, on made-up symbol tables; and perf's output with the
part against its output with the whole snapshot, byte for byte, on recordings made here
of samples with and without call chains, sched tracepoints with call chains, and timer
tracepoints whose records hold function pointers."""
from __future__ import annotations

import bisect
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from offconv.inputs.perf_data import kallsyms as ks
from offconv.inputs.perf_data import reader as perf_data

speedups = pytest.importorskip("offconv._speedups", reason="the C module is not built")
kallsyms_for = speedups.kallsyms_for

TEXT_TYPES = set("tTwW")


def reference(text: bytes, data: bytes):
    """kallsyms_for's rule, written plainly (see its comment in offconv/_speedups.c)."""
    lines = text.splitlines(keepends=True)
    keep = set()
    core = []   # (address, index) of symbol lines without a module tag
    for i, ln in enumerate(lines):
        parts = ln.split(b" ", 2)
        if ln.rstrip(b"\n").endswith(b"]") or len(parts) < 3 or not parts[0] or len(parts[1]) != 1:
            keep.add(i)
            continue
        try:
            addr = int(parts[0][:16], 16)
        except ValueError:
            keep.add(i)
            continue
        if parts[2].rstrip(b"\r\n") in (b"_text", b"_stext", b"_etext"):
            keep.add(i)
        core.append((addr, i, chr(parts[1][0]) in TEXT_TYPES))
    core.sort()
    texts = [c for c in core if c[2]]
    if not texts or texts[0][0] == 0:
        return None
    addrs = [c[0] for c in core]
    text_addrs = [c[0] for c in texts]
    lo = text_addrs[0]
    ranges = []
    for off in range(0, len(data) - 7, 4):
        v, = struct.unpack_from("<Q", data, off)
        if v < lo:
            continue
        below = text_addrs[bisect.bisect_right(text_addrs, v) - 1]
        j = bisect.bisect_right(text_addrs, v)
        above = text_addrs[j] if j < len(text_addrs) else addrs[-1]
        ranges.append((below, above))
    for addr, i, _ in core:
        if addr in (addrs[0], addrs[-1]) or any(a <= addr <= b for a, b in ranges):
            keep.add(i)
    return b"".join(lines[i] for i in sorted(keep))


def _table(rng: random.Random, n: int) -> tuple[bytes, list]:
    """A made-up kallsyms text: text symbols with aliases, data and rodata symbols between
    them, percpu ones at low addresses, module lines, out of order at the end."""
    out, starts = [], []
    addr = 0xffffffff81000000
    out.append(b"0000000000000000 D fixed_percpu_data\n")
    out.append(b"ffffffff81000000 T _stext\nffffffff81000000 T _text\n")
    starts.append(addr)
    for k in range(n):
        addr += rng.choice([0x10, 0x40, 0x100, 0x1000])
        kind = rng.choice("tTtTwrRdDb")
        out.append(b"%x %c sym_%d\n" % (addr, ord(kind), k))
        if kind in TEXT_TYPES:
            starts.append(addr)
            if rng.random() < 0.1:
                out.append(b"%x t alias_%d\n" % (addr, k))
    out.append(b"%x T _etext\n" % (addr + 0x10))
    mods = [b"ffffffffc0%06x t mod_%d\t[mod%d]\n" % (k * 64, k, k % 3) for k in range(20)]
    return b"".join(out + mods), starts


def _data(rng: random.Random, starts: list, n: int) -> bytes:
    """A data section of n words: user addresses, small numbers and kernel addresses,
    some at 4 mod 8 (as in a tracepoint record), some beyond the last symbol."""
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            v = rng.choice(starts) + rng.randrange(0, 0x40)
        elif r < 0.35:
            v = 0xffffffff8f000000 + rng.randrange(1 << 20)   # past the last symbol
        elif r < 0.4:
            v = 0xffffffffc0000000 + rng.randrange(1 << 16)   # in a module
        else:
            v = rng.choice([rng.randrange(1 << 32), 0x7f0000000000 + rng.randrange(1 << 30)])
        words.append(struct.pack("<Q", v))
    blob = b"".join(words)
    return blob[4:] + b"\0\0\0\0" if rng.random() < 0.5 else blob


@pytest.mark.parametrize("seed", range(12))
def test_the_c_function_keeps_what_its_rule_says(seed):
    rng = random.Random(seed)
    text, starts = _table(rng, rng.randrange(50, 400))
    data = _data(rng, starts, rng.randrange(0, 60))
    assert kallsyms_for(text, data) == reference(text, data)
    lines = text.splitlines(keepends=True)
    shuffled = b"".join(lines[:3] + rng.sample(lines[3:], len(lines) - 3))  # not in order
    assert kallsyms_for(shuffled, data) == reference(shuffled, data)


def test_an_address_keeps_its_symbol_the_one_that_ends_it_and_what_lies_between():
    text = (b"ffffffff81000000 T _text\n"
            b"ffffffff81000100 T a\n"
            b"ffffffff81000200 r data_in_text\n"
            b"ffffffff81000300 t b\n"
            b"ffffffff81000300 t b_alias\n"
            b"ffffffff81000400 T c\n"
            b"ffffffff81000500 T d\n"
            b"ffffffff81000600 T e\n"
            b"ffffffffc0000000 t m\t[mod]\n")
    # an address in a's range past the rodata line: perf (which may skip 'r') names it a
    hit = struct.pack("<Q", 0xffffffff81000250)
    assert kallsyms_for(text, hit) == (b"ffffffff81000000 T _text\n"
                                       b"ffffffff81000100 T a\n"
                                       b"ffffffff81000200 r data_in_text\n"
                                       b"ffffffff81000300 t b\n"
                                       b"ffffffff81000300 t b_alias\n"
                                       b"ffffffff81000600 T e\n"
                                       b"ffffffffc0000000 t m\t[mod]\n")
    # at 4 mod 8, as a pointer in a tracepoint record: c, ended by d
    hit = b"\0" * 4 + struct.pack("<Q", 0xffffffff81000410) + b"\0" * 4
    assert b" c\n" in kallsyms_for(text, hit) and b" d\n" in kallsyms_for(text, hit)
    assert b" a\n" not in kallsyms_for(text, hit)
    assert kallsyms_for(b"0000000000000000 T hidden\n", hit) is None   # kptr_restrict
    assert kallsyms_for(b"ffffffff82000000 D only_data\n", hit) is None


@pytest.fixture(scope="module")
def snapshot_text(tmp_path_factory) -> Path:
    if shutil.which("perf") is None or os.geteuid() != 0:
        pytest.skip("recording needs perf and root")
    if os.path.exists(ks.PROC_KCORE):
        pytest.skip("with /proc/kcore, perf reads /proc/kallsyms itself")
    copy = tmp_path_factory.mktemp("snap") / "kallsyms"
    copy.write_bytes(Path(ks.PROC_KALLSYMS).read_bytes())
    return copy


def _record(path: Path, *args: str) -> Path:
    load = ["sh", "-c", "for i in 1 2 3 4 5 6; do ls -R /usr/lib > /dev/null; "
                        "dd if=/dev/zero of=/dev/null bs=64 count=20000 2>/dev/null; done"]
    subprocess.run(["perf", "record", "-q", "-a", "-o", str(path), *args, "--", *load],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


RECORDINGS = {
    "samples, call chains": ("-F", "1999", "-g"),
    "samples, no call chain": ("-F", "1999"),
    "sched tracepoints, call chains": ("-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
                                       "-e", "sched:sched_wakeup_new", "-g"),
    "timer tracepoints (function pointers)": ("-e", "timer:hrtimer_expire_entry", "-e",
                                              "timer:timer_expire_entry", "-e", "irq:softirq_entry"),
}


@pytest.mark.parametrize("kind", list(RECORDINGS))
def test_perf_prints_the_same_with_the_part(kind, snapshot_text, tmp_path, monkeypatch):
    data = _record(tmp_path / "perf.data", *RECORDINGS[kind])
    monkeypatch.setattr(ks, "PART_MAX_DATA", 1 << 40)
    part = ks.part_for(str(snapshot_text), str(data), str(tmp_path))
    assert part is not None and Path(part).parent == tmp_path
    assert os.stat(part).st_mode & 0o777 == 0o600
    whole_lines = snapshot_text.read_bytes().count(b"\n")
    part_lines = Path(part).read_bytes().count(b"\n")
    assert part_lines < whole_lines / 10, (part_lines, whole_lines)

    def script(kallsyms, *fields):
        return subprocess.run(["perf", "script", "-i", str(data), f"--kallsyms={kallsyms}", *fields],
                              capture_output=True, check=True).stdout
    for fields in ((), perf_data.FIELDS) if "samples" in kind else ((),):
        whole = script(snapshot_text, *fields)
        assert script(part, *fields) == whole, (kind, fields)
    # kernel frames named, or (timer tracepoints, no call chains) the functions in records
    assert (b"function=" if kind.startswith("timer") else b"[kernel.kallsyms]") in whole
    # and perf does read the part: a kernel symbol it names, removed from it, is named
    # otherwise
    names = [ln.split(b" ", 2)[2].strip() for ln in Path(part).read_bytes().splitlines()
             if b"[" not in ln and ln.split(b" ")[1] in (b"t", b"T")]
    named = next(n for n in names if b" " + n + b" ([kernel.kallsyms])" in whole
                 or b" " + n + b"+0x" in whole or b"=" + n + b" " in whole)
    cut = tmp_path / "cut"
    cut.write_bytes(b"".join(ln for ln in Path(part).read_bytes().splitlines(keepends=True)
                             if not ln.rstrip().endswith(b" " + named)))
    assert script(cut) != whole


def test_the_part_is_not_made_where_the_data_section_does_not_hold_every_address(
        snapshot_text, tmp_path, monkeypatch):
    data = _record(tmp_path / "perf.data", "-F", "999")
    assert ks.part_for(str(snapshot_text), str(data), str(tmp_path)) is not None
    for bit in (ks.HEADER_COMPRESSED, ks.HEADER_AUXTRACE, ks.HEADER_DIR_FORMAT):
        other = tmp_path / f"bit{bit}.data"
        raw = bytearray(data.read_bytes())
        features = int.from_bytes(raw[72:104], "little") | 1 << bit
        raw[72:104] = features.to_bytes(32, "little")
        other.write_bytes(raw)
        assert ks.part_for(str(snapshot_text), str(other), str(tmp_path)) is None, bit
    monkeypatch.setattr(ks, "PART_MAX_DATA", 1000)   # too big to be worth reading
    assert ks.part_for(str(snapshot_text), str(data), str(tmp_path)) is None
    monkeypatch.undo()
    monkeypatch.setenv("OFFCONV_SPEEDUPS", "0")
    assert ks.part_for(str(snapshot_text), str(data), str(tmp_path)) is None
    assert ks.part_for(str(snapshot_text), os.devnull, str(tmp_path)) is None
