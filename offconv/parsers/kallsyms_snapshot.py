"""A snapshot of /proc/kallsyms for perf script, used while the kernel's symbols stay the same.

perf script converting a recording of the running kernel reads /proc/kallsyms
(tools/perf/util/symbol.c, dso__find_kallsyms: the recording's kernel build-id is the
host's, so the host's symbols), in three passes. The kernel writes that text anew on every
read: 40 ms of system time for the 121k symbols of this VM, 30-40 ms of a 0.17 s
conversion (benchmarks/README.md, "Nineteenth round"). A regular file holding the same bytes,
given as ``--kallsyms FILE``, is read from the page cache, and perf's output is
byte-identical: the symbols are the same text.

**When the snapshot is the same text.** What perf takes from kallsyms is the kernel's own
symbols, fixed for a boot, and those of the modules it has maps for (/proc/modules). The
entries that come and go without a module -- BPF programs ``[bpf]``, ftrace and kprobe
trampolines ``[__builtin__ftrace]``, ``[__builtin__kprobes]`` -- perf drops ("inconsistency
while looking for module"), and names a sample in a BPF program from the recording's own
ksymbol events: the same recording converted with /proc/kallsyms while two bpftrace
programs were loaded, after they were gone, and with their lines removed gave
byte-identical output (tests/test_kallsyms_snapshot.py). So a snapshot is used while its
key holds: the boot (/proc/sys/kernel/random/boot_id), kptr_restrict (what a reader is
shown), and each module's name, size and address. Any change of these, and it is made again.

The snapshot is ``kallsyms-<build-id>-<digest of its key>`` in $OFFCONV_CACHE_DIR, else
$XDG_CACHE_HOME/offconv (``~/.cache/offconv``), mode 0600 in a 0700 directory: it holds
kernel addresses, as perf's build-id cache (``~/.debug``) does. It is used only when every
one of these holds, otherwise perf reads /proc/kallsyms as it always does:

- the recording's kernel build-id (its header's build-id table) is the running kernel's
  (/sys/kernel/notes): for another kernel, perf does not read /proc/kallsyms at all;
- there is no /proc/kcore (with one, perf takes the kernel's maps from the kcore next to
  the kallsyms file it reads; a snapshot elsewhere would change what it finds: untested);
- $OFFCONV_KALLSYMS_SNAPSHOT is not ``0``.

With no snapshot of the current key, perf reads /proc/kallsyms, and ``cat`` makes one
beside it while perf runs (kept once perf has succeeded).

**Only the symbols the recording needs.** Reading 120k symbols, even from a regular file,
is still 30-40 ms of perf's time; a recording names a few thousand. With the snapshot
there, perf is given ``kallsyms-part-...`` instead: the snapshot's lines around every
address found in the recording's data section (offconv._speedups.kallsyms_for says which
and why), made in 4-5 ms and removed when perf is done. perf's output is byte-identical
with it, on recordings of samples, of sched tracepoints with call chains and of timer
tracepoints that name functions (tests/test_kallsyms_snapshot.py). It is not used without
the C module, with ``OFFCONV_SPEEDUPS=0``, for a data section over ``PART_MAX_DATA`` bytes
(reading it costs more than it saves), nor for a recording whose addresses are not all in
its data section as written: compressed (``perf record -z``) or with AUX data (Intel PT,
CoreSight: the ips are decoded from it).
"""
from __future__ import annotations

import atexit
import os
import struct

from . import spawn

ENV = "OFFCONV_KALLSYMS_SNAPSHOT"
CACHE_ENV = "OFFCONV_CACHE_DIR"
PROC_KALLSYMS = "/proc/kallsyms"
PROC_MODULES = "/proc/modules"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
KPTR_RESTRICT = "/proc/sys/kernel/kptr_restrict"
KERNEL_NOTES = "/sys/kernel/notes"
PROC_KCORE = "/proc/kcore"

PERF_RECORD_MISC_KERNEL = 1      # a build-id entry's cpumode: the kernel
NT_GNU_BUILD_ID = 3


class Snapshot:
    """The snapshot for one conversion: ``args`` go to perf script (empty while it is being
    made); ``settle()`` is called once perf has ended well."""

    def __init__(self, path: str, proc: spawn.Process | None = None,
                 tmp: str | None = None, part: str | None = None):
        self.path = path
        self.args = [f"--kallsyms={part or path}"] if proc is None else []
        self._proc = proc           # cat /proc/kallsyms > tmp: a snapshot being made
        self._tmp = tmp
        self._part = part           # the lines of it that this recording needs
        self._pid = os.getpid()
        if proc is not None or part is not None:
            atexit.register(self._abandon)

    def settle(self) -> None:
        """Keep the snapshot being made (once perf has succeeded), remove the part made
        for this recording. A forked child (offconv.parallel) leaves both to the process
        that started perf."""
        if os.getpid() != self._pid:
            return
        if self._part is not None:
            _unlink(self._part)
            self._part = None
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        tmp, self._tmp = self._tmp, None
        try:
            made = proc.wait() == 0 and os.path.getsize(tmp) > 0
        except OSError:   # (the copy removed meanwhile: none is kept)
            made = False
        if made:
            _keep(tmp, self.path)
        else:
            _unlink(tmp)

    def _abandon(self) -> None:
        """At exit, a snapshot never settled (perf failed, a usage error)."""
        if self._part is not None and os.getpid() == self._pid:
            _unlink(self._part)
            self._part = None
        if self._proc is not None and os.getpid() == self._pid:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
            _unlink(self._tmp)
            self._tmp = None


def begin(path: str) -> Snapshot | None:
    """The snapshot for perf script's conversion of the perf.data ``path`` -- in use, or
    being made while perf reads /proc/kallsyms -- or None (see the module's docstring)."""
    if os.environ.get(ENV) == "0" or os.path.exists(PROC_KCORE):
        return None
    build_id = running_build_id()
    if build_id is None or recorded_kernel_build_id(path) != build_id:
        return None
    key = current_key()
    directory = cache_dir()
    if key is None or directory is None:
        return None
    snap = os.path.join(directory, f"kallsyms-{build_id}-{_digest(key)}")
    if _holds(snap):
        return Snapshot(snap, part=part_for(snap, path, directory))
    cat = spawn.which("cat")
    if cat is None:
        return None
    try:
        fd, tmp = spawn.named_file(directory, ".kallsyms-")
    except OSError:
        return None
    try:
        proc = spawn.Process([cat, PROC_KALLSYMS], fd)
    except OSError:
        _unlink(tmp)
        return None
    finally:
        os.close(fd)
    return Snapshot(snap, proc, tmp)


# the largest data section part_for reads: 0.3-0.4 ms a MB to scan (a 4-byte step), and
# perf saves 30-40 ms, nothing next to its time on a larger recording
PART_MAX_DATA = 32 << 20
HEADER_AUXTRACE = 18
HEADER_DIR_FORMAT = 24
HEADER_COMPRESSED = 27


def part_for(snap: str, path: str, directory: str) -> str | None:
    """A file of the lines of the snapshot ``snap`` that perf needs for the perf.data
    ``path`` (offconv._speedups.kallsyms_for), made in ``directory``; None where it is not
    used (the module's docstring)."""
    if os.environ.get("OFFCONV_SPEEDUPS", "1") == "0":
        return None
    try:
        from offconv._speedups import kallsyms_for
    except ImportError:
        return None
    from .perf_data import _read_header
    header = _read_header(path)
    if header is None:
        return None
    head = header[0]
    features = int.from_bytes(head[72:104], "little")
    if features >> HEADER_AUXTRACE & 1 or features >> HEADER_DIR_FORMAT & 1 \
            or features >> HEADER_COMPRESSED & 1:
        return None
    data_at, data_size = struct.unpack_from("<2Q", head, 40)
    if data_size > PART_MAX_DATA:
        return None
    import mmap   # both mapped, not read: a fresh process's copies cost 5 ms of page faults
    try:
        with open(snap, "rb") as f, open(path, "rb") as g:
            size = os.fstat(g.fileno()).st_size
            if data_at + data_size > size or not data_size:
                return None
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as text, \
                    mmap.mmap(g.fileno(), data_at + data_size, prot=mmap.PROT_READ) as whole:
                with memoryview(whole) as view:
                    lines = kallsyms_for(text, view[data_at:])
        if lines is None:
            return None
        fd, part = spawn.named_file(directory, ".kallsyms-part-")
    except (OSError, ValueError):   # (ValueError: an empty file cannot be mapped)
        return None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(lines)
    except OSError:
        _unlink(part)
        return None
    return part


def current_key() -> str | None:
    """What the kernel's symbols that perf reads depend on, as text: the boot, the
    kptr_restrict that decides whether a reader sees addresses, the reader, and each
    module's name, size and address (not its use count, which changes all the time).
    None where the boot is not known."""
    try:
        with open(BOOT_ID) as f:
            boot = f.read().strip()
    except OSError:
        return None
    try:
        with open(KPTR_RESTRICT) as f:
            kptr = f.read().strip()
    except OSError:
        kptr = "?"
    modules = []
    try:
        with open(PROC_MODULES) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6:
                    modules.append(f"{parts[0]} {parts[1]} {parts[5]}")
                elif parts:
                    modules.append(" ".join(parts[:2]))
    except FileNotFoundError:
        pass  # a kernel without modules
    except OSError:
        return None
    return "\n".join([f"boot {boot}", f"kptr_restrict {kptr}", f"euid {os.geteuid()}",
                      *sorted(modules)]) + "\n"


def _digest(key: str) -> str:
    """The key's digest, in the snapshot's name (binding the two: no pair of files that a
    concurrent offconv could leave mismatched)."""
    try:
        from _blake2 import blake2b  # 0.5 ms, where hashlib's import costs 6 (OpenSSL)
    except ImportError:
        from hashlib import blake2b
    return blake2b(key.encode(), digest_size=10).hexdigest()


def _holds(snap: str) -> bool:
    """Whether ``snap`` is a snapshot of this user's, only theirs to read."""
    try:
        st = os.lstat(snap)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and st.st_mode & 0o177777 == 0o100600 and st.st_size > 0


def cache_dir() -> str | None:
    """$OFFCONV_CACHE_DIR, else $XDG_CACHE_HOME/offconv (~/.cache/offconv), made mode 0700
    if missing; None when it cannot be made, or is not a directory of this user's that
    only they can read."""
    directory = os.environ.get(CACHE_ENV)
    if not directory:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(base, "offconv")
    if not os.path.isabs(directory):
        return None
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.lstat(directory)
    except OSError:
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or not os.path.isdir(directory):
        return None
    return directory


def running_build_id() -> str | None:
    """The running kernel's build-id (hex), from its ELF notes; None if not there."""
    try:
        with open(KERNEL_NOTES, "rb") as f:
            notes = f.read(1 << 16)
    except OSError:
        return None
    i = 0
    while i + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<3I", notes, i)
        name_at = i + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        end = desc_at + (descsz + 3) // 4 * 4
        if end > len(notes):
            return None
        if kind == NT_GNU_BUILD_ID and notes[name_at:name_at + namesz] == b"GNU\0" and descsz:
            return notes[desc_at:desc_at + descsz].hex()
        i = end
    return None


def recorded_kernel_build_id(path: str) -> str | None:
    """The build-id (hex) that the perf.data ``path`` lists for [kernel.kallsyms] in its
    header's build-id table; None when it lists none or is not read here (pipe mode,
    another byte order)."""
    from .perf_data import _read_header, build_ids
    header = _read_header(path)
    if header is None:
        return None
    head = header[0]
    data_at, data_size = struct.unpack_from("<2Q", head, 40)
    try:
        with open(path, "rb") as f:
            entries = build_ids(f.fileno(), head, data_at + data_size)
    except (OSError, struct.error):
        return None
    for misc, build_id, name in entries:
        if misc & 7 == PERF_RECORD_MISC_KERNEL and name == b"[kernel.kallsyms]":
            return build_id.hex()
    return None


def _keep(tmp: str, snap: str) -> None:
    """``tmp`` becomes the snapshot ``snap``; the others (another key, another kernel) are
    removed."""
    try:
        os.chmod(tmp, 0o600)
        os.replace(tmp, snap)
    except OSError:
        _unlink(tmp)
        return
    directory, name = os.path.split(snap)
    try:
        others = [n for n in os.listdir(directory) if n.startswith("kallsyms-") and n != name]
    except OSError:
        return
    for n in others:
        _unlink(os.path.join(directory, n))


def _unlink(path: str | None) -> None:
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass
