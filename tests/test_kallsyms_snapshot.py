"""perf script given a snapshot of /proc/kallsyms instead of the kernel's own file
(offconv.inputs.perf_data.kallsyms): made once, used while the kernel's symbols stay the
same, and the output is perf's own, byte for byte. Recordings are made here (perf, root)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from offconv.cli import app
from offconv.inputs.perf_data import kallsyms as ks

FIXTURES = Path(__file__).parent / "fixtures"
needs_perf_root = pytest.mark.skipif(shutil.which("perf") is None or os.geteuid() != 0,
                                     reason="recording needs perf and root")
no_kcore = pytest.mark.skipif(os.path.exists(ks.PROC_KCORE),
                              reason="with /proc/kcore, perf reads /proc/kallsyms itself")


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """1 s of a read loop, system-wide with call chains: kernel frames in most samples."""
    if shutil.which("perf") is None or os.geteuid() != 0:
        pytest.skip("recording needs perf and root")
    data = tmp_path_factory.mktemp("ks") / "perf.data"
    subprocess.run(["perf", "record", "-q", "-a", "-g", "-F", "999", "-o", str(data), "--",
                    "dd", "if=/dev/zero", "of=/dev/null", "bs=64", "count=400000"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return data


@pytest.fixture
def perf_args(perf_script_runs):
    """The command lines of the perf scripts offconv runs."""
    return perf_script_runs


def _folded(data: Path, out: Path) -> str:
    r = CliRunner().invoke(app, [str(data), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_text()


def _reads_part(args: list, cache: Path) -> bool:
    """Whether a perf script command line reads a part of a snapshot made in ``cache``."""
    return any(a.startswith(f"--kallsyms={cache}/.kallsyms-part-") for a in args)


def _snapshots(directory: Path) -> list:
    return sorted(p for p in directory.iterdir() if p.name.startswith("kallsyms-"))


@needs_perf_root
def test_the_build_ids_are_perfs(recording):
    listed = subprocess.run(["perf", "buildid-list", "-i", str(recording)], capture_output=True,
                            text=True, check=True).stdout.splitlines()
    kernel = [line.split()[0] for line in listed if line.endswith("[kernel.kallsyms]")]
    assert kernel and ks.recorded_kernel_build_id(str(recording)) == kernel[0]
    running = subprocess.run(["perf", "buildid-list", "-k"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert ks.running_build_id() == running
    assert ks.recorded_kernel_build_id(os.devnull) is None


@needs_perf_root
@no_kcore
def test_a_snapshot_is_made_then_read_by_perf_and_the_output_is_unchanged(
        recording, tmp_path, monkeypatch, perf_args):
    cache = tmp_path / "cache"
    monkeypatch.setenv(ks.CACHE_ENV, str(cache))
    monkeypatch.setenv(ks.ENV, "0")
    plain = _folded(recording, tmp_path / "plain.folded")   # perf reads /proc/kallsyms
    assert not cache.exists() and not any("--kallsyms" in " ".join(a) for a in perf_args)

    # the first conversion reads /proc/kallsyms, perf the part of it this recording needs;
    # the copy is kept as the snapshot
    monkeypatch.delenv(ks.ENV)
    first = _folded(recording, tmp_path / "first.folded")
    assert _reads_part(perf_args[-1], cache)
    assert first == plain
    snaps = _snapshots(cache)
    assert len(snaps) == 1, snaps
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(snaps[0].stat().st_mode) == 0o600
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no part, no temporary left
    # the kernel's own symbols, as perf reads them (lines of BPF programs and trampolines
    # may come and go meanwhile: perf drops those, see the last test)
    own = [ln for ln in Path(ks.PROC_KALLSYMS).read_text().splitlines() if "\t[" not in ln]
    assert [ln for ln in snaps[0].read_text().splitlines() if "\t[" not in ln] == own

    # then perf reads the part made from the snapshot, or with OFFCONV_SPEEDUPS=0 (no C
    # module) the whole snapshot
    second = _folded(recording, tmp_path / "second.folded")
    assert _reads_part(perf_args[-1], cache)
    assert second == plain
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]
    monkeypatch.setenv("OFFCONV_SPEEDUPS", "0")
    whole = _folded(recording, tmp_path / "whole.folded")
    assert f"--kallsyms={snaps[0]}" in perf_args[-1]
    assert whole == plain
    snaps[0].unlink()   # and without C module nor snapshot: made, then read whole
    assert _folded(recording, tmp_path / "whole2.folded") == plain
    assert f"--kallsyms={snaps[0]}" in perf_args[-1] and _snapshots(cache) == snaps

    # it is the snapshot that perf reads: a kernel symbol renamed in it is renamed in
    # the output (what a stale snapshot would do, which its key prevents), whole or in part
    name = "do_syscall_64"
    assert f";{name};" in plain
    text = snaps[0].read_text()
    assert f" {name}\n" in text
    snaps[0].write_text(text.replace(f" {name}\n", " renamed_in_the_snapshot\n"))
    for speedups in ("0", "1"):
        monkeypatch.setenv("OFFCONV_SPEEDUPS", speedups)
        renamed = _folded(recording, tmp_path / "renamed.folded")
        assert ";renamed_in_the_snapshot;" in renamed and f";{name};" not in renamed


@needs_perf_root
@no_kcore
def test_a_new_key_makes_a_new_snapshot_and_drops_the_old(recording, tmp_path, monkeypatch,
                                                           perf_args):
    cache = tmp_path / "cache"
    monkeypatch.setenv(ks.CACHE_ENV, str(cache))
    _folded(recording, tmp_path / "a.folded")
    old = _snapshots(cache)
    assert len(old) == 1
    modules = tmp_path / "modules"   # as if a module were loaded since
    modules.write_text("ext4 1089536 2 - Live 0xffffffffc0400000\n")
    monkeypatch.setattr(ks, "PROC_MODULES", str(modules))
    _folded(recording, tmp_path / "b.folded")
    assert _reads_part(perf_args[-1], cache)
    new = _snapshots(cache)
    assert len(new) == 1 and new != old


def test_no_snapshot_for_a_recording_of_another_kernel(tmp_path, monkeypatch):
    """The fixture was recorded on another kernel build: perf finds no symbols for it
    (every kernel frame [unknown]); given this kernel's kallsyms it would name them wrongly
    (mptcp_remote_address, mptcp_pm_announce_addr where it printed [unknown], seen)."""
    monkeypatch.setenv(ks.CACHE_ENV, str(tmp_path / "cache"))
    other = FIXTURES / "recorded" / "e2e_victim_a_small" / "e2e_victim_a_small.data"
    recorded = ks.recorded_kernel_build_id(str(other))
    assert recorded == "4a5a9b0affb66c437abcd455d2738af879985fa9"
    if ks.running_build_id() == recorded:
        pytest.skip("this machine runs the fixture's kernel build")
    assert ks.begin(str(other)) is None
    assert not (tmp_path / "cache").exists()


@needs_perf_root
def test_no_snapshot_where_perf_would_not_read_proc_kallsyms(recording, tmp_path, monkeypatch):
    monkeypatch.setenv(ks.CACHE_ENV, str(tmp_path / "cache"))
    notes = tmp_path / "notes"   # another kernel runs: the recording's is not the host's
    notes.write_bytes((4).to_bytes(4, "little") + (20).to_bytes(4, "little")
                      + (3).to_bytes(4, "little") + b"GNU\0" + bytes(range(20)))
    monkeypatch.setattr(ks, "KERNEL_NOTES", str(notes))
    assert ks.running_build_id() == bytes(range(20)).hex()
    assert ks.begin(str(recording)) is None
    monkeypatch.undo()
    monkeypatch.setenv(ks.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(ks, "PROC_KCORE", str(notes))   # a /proc/kcore: perf maps the kernel from it
    assert ks.begin(str(recording)) is None
    monkeypatch.setattr(ks, "PROC_KCORE", str(tmp_path / "no-kcore"))
    monkeypatch.setenv(ks.ENV, "0")
    assert ks.begin(str(recording)) is None
    monkeypatch.delenv(ks.ENV)
    monkeypatch.setenv(ks.CACHE_ENV, "relative/dir")
    assert ks.begin(str(recording)) is None
    monkeypatch.setenv(ks.CACHE_ENV, str(tmp_path / "cache"))
    snap = ks.begin(str(recording))   # all hold: one is made (kept once perf has started)
    assert snap is not None and _reads_part(snap.args, tmp_path / "cache")
    assert _snapshots(tmp_path / "cache") == []
    snap.started()
    snap.settle()
    made = _snapshots(tmp_path / "cache")
    assert len(made) == 1
    monkeypatch.setenv("OFFCONV_SPEEDUPS", "0")   # the whole snapshot, not a part of it
    used = ks.begin(str(recording))
    assert used is not None and used.args == [f"--kallsyms={made[0]}"]
    os.chmod(made[0], 0o644)   # readable by others: not ours as made, not used but made again
    made[0].write_text("ffffffff81000000 T not_read\n")
    again = ks.begin(str(recording))
    assert again.args == [f"--kallsyms={made[0]}"] and stat.S_IMODE(made[0].stat().st_mode) == 0o600
    assert "not_read" not in made[0].read_text()


def test_the_key_follows_the_boot_the_modules_and_kptr_restrict(tmp_path, monkeypatch):
    modules = tmp_path / "modules"
    boot = tmp_path / "boot_id"
    kptr = tmp_path / "kptr_restrict"
    monkeypatch.setattr(ks, "PROC_MODULES", str(modules))
    monkeypatch.setattr(ks, "BOOT_ID", str(boot))
    monkeypatch.setattr(ks, "KPTR_RESTRICT", str(kptr))
    boot.write_text("2f1d0c1e-0000-4000-8000-000000000001\n")
    kptr.write_text("0\n")
    modules.write_text("ext4 1089536 2 - Live 0xffffffffc0400000\n"
                       "crc16 12288 1 ext4, Live 0xffffffffc0300000\n")
    key = ks.current_key()
    assert key == ks.current_key()
    # use counts and users change all the time: the symbols do not
    modules.write_text("crc16 12288 3 ext4,jbd2, Live 0xffffffffc0300000\n"
                       "ext4 1089536 7 - Live 0xffffffffc0400000\n")
    assert ks.current_key() == key
    modules.write_text("ext4 1089536 2 - Live 0xffffffffc0500000\n"   # loaded again elsewhere
                       "crc16 12288 1 ext4, Live 0xffffffffc0300000\n")
    moved = ks.current_key()
    assert moved != key
    modules.write_text("crc16 12288 1 ext4, Live 0xffffffffc0300000\n")   # unloaded
    assert ks.current_key() not in (key, moved)
    modules.unlink()   # a kernel without modules
    assert ks.current_key() is not None
    modules.write_text("ext4 1089536 2 - Live 0xffffffffc0400000\n"
                       "crc16 12288 1 ext4, Live 0xffffffffc0300000\n")
    kptr.write_text("2\n")   # addresses hidden from readers now
    assert ks.current_key() != key
    kptr.write_text("0\n")
    boot.write_text("2f1d0c1e-0000-4000-8000-000000000002\n")   # another boot: KASLR moved
    assert ks.current_key() != key
    boot.unlink()
    assert ks.current_key() is None


@needs_perf_root
@no_kcore
def test_a_conversion_that_ends_badly_leaves_no_part(recording, tmp_path, monkeypatch):
    """The part made for a conversion is removed when perf is done, and at exit (atexit)
    for one that did not end well (perf failed, a usage error); a copy of /proc/kallsyms
    read for a perf that never started is not kept."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(ks.CACHE_ENV, str(cache))
    snap = ks.begin(str(recording))
    part = Path(snap.args[0].partition("=")[2])
    assert part.exists() and part.name.startswith(".kallsyms-part-")
    snap._abandon()
    assert not list(cache.iterdir())
    snap = ks.begin(str(recording))
    snap.started()
    os.unlink(snap.args[0].partition("=")[2])   # removed meanwhile: no error
    snap.settle()
    assert [p.name for p in cache.iterdir()] == [_snapshots(cache)[0].name]


@needs_perf_root
@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="bpftrace not installed")
def test_bpf_programs_in_kallsyms_do_not_change_perfs_output(tmp_path):
    """What makes a snapshot without [bpf] lines safe: a recording with samples in two
    loaded BPF programs converts byte-identically with /proc/kallsyms as it was while
    they ran (their [bpf] lines in it), without those lines, and after they are gone.
    perf names the programs from the recording's ksymbol events."""
    sysctl = Path("/proc/sys/net/core/bpf_jit_kallsyms")
    saved = sysctl.read_text() if sysctl.exists() else None
    if saved is not None and saved.strip() != "1":
        sysctl.write_text("1\n")
    bt = subprocess.Popen(["bpftrace", "-e", "tracepoint:syscalls:sys_enter_read { @r[comm] = count(); } "
                           "tracepoint:sched:sched_switch { @s[cpu] = count(); }"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        during = ""
        for _ in range(100):   # until both programs are listed
            during = Path(ks.PROC_KALLSYMS).read_text()
            if during.count("\t[bpf]") >= 2:
                break
            time.sleep(0.1)
        else:
            pytest.skip("bpftrace's programs are not listed in /proc/kallsyms here")
        data = tmp_path / "bpf.data"
        subprocess.run(["perf", "record", "-q", "-a", "-g", "-F", "4999", "-o", str(data), "--",
                        "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        bt.terminate()
        bt.wait(timeout=30)
        if saved is not None and saved.strip() != "1":
            sysctl.write_text(saved)
    with_bpf = tmp_path / "during"
    with_bpf.write_text(during)
    without = tmp_path / "without"
    without.write_text("".join(ln for ln in during.splitlines(keepends=True) if "\t[" not in ln))

    def script(*extra):
        return subprocess.run(["perf", "script", "-i", str(data), *extra], capture_output=True,
                              check=True).stdout
    now = script()
    assert b"bpf_prog_" in now and b"_sys_enter_read" in now   # samples in a BPF program
    assert script(f"--kallsyms={with_bpf}") == now
    assert script(f"--kallsyms={without}") == now
