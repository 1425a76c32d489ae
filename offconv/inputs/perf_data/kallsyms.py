"""A snapshot of /proc/kallsyms for perf script, used while the kernel's symbols stay the same.

perf script converting a recording of the running kernel reads /proc/kallsyms
(tools/perf/util/symbol.c, dso__find_kallsyms: the recording's kernel build-id is the
host's, so the host's symbols), in three passes. The kernel writes that text anew on every
read, and that costs perf a sizeable part of a short conversion (what it gains: the table
of mechanisms in docs/architecture.md, switched off by ``OFFCONV_KALLSYMS_SNAPSHOT=0``). A regular file holding the same bytes,
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

**Only the symbols the recording needs.** Reading every kernel symbol, even from a regular
file, still costs perf time; a recording names a few thousand. So perf is given
``.kallsyms-part-...`` instead: the snapshot's lines around every address found in the
recording's data section (offconv._speedups.kallsyms_for says which and why), removed when
perf is done. perf's output is byte-identical with it, on recordings
of samples, of sched tracepoints with call chains and of timer tracepoints that name
functions (tests/test_kallsyms_part.py). The part is not made without the C
module, with ``OFFCONV_SPEEDUPS=0``, for a data section over ``PART_MAX_DATA`` bytes
(reading it costs more than it saves), nor for a recording whose addresses are not all in
its data section as written: compressed (``perf record -z``) or with AUX data (Intel PT,
CoreSight: the ips are decoded from it); perf then reads the whole snapshot.

With no snapshot of the current key, offconv reads /proc/kallsyms once before perf starts,
makes the part from it, and keeps it as the snapshot once perf has started (perf reading
/proc/kallsyms itself takes three passes).
"""
from __future__ import annotations

import atexit
import os
import struct

from offconv.inputs.perf_data import spawn
from offconv.inputs.perf_data.header import build_ids, read_header

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
    """The snapshot for one conversion: ``args`` go to perf script; ``started()`` is
    called once perf has started, ``settle()`` once it has ended well."""

    def __init__(self, path: str, part: str | None = None, text=None):
        self.path = path
        self.args = [f"--kallsyms={part or path}"]
        self._part = part           # the lines of it that this recording needs
        self._text = text           # /proc/kallsyms as read for it, to be kept as ``path``
        self._pid = os.getpid()
        if part is not None:
            atexit.register(self._abandon)

    def started(self) -> None:
        """perf has started on the part: the copy of /proc/kallsyms it was made from is
        kept now, while perf runs, not before it."""
        if self._text is not None:
            text, self._text = self._text, None
            _save(text, self.path)

    def settle(self) -> None:
        """Remove the part made for this recording. A forked child (offconv.run.parallel)
        leaves it to the process that started perf."""
        if os.getpid() == self._pid:
            self._abandon()

    def _abandon(self) -> None:
        """(also at exit, for a conversion that did not end well: perf failed, a usage
        error)"""
        if self._part is not None and os.getpid() == self._pid:
            _unlink(self._part)
            self._part = None


def begin(path: str) -> Snapshot | None:
    """The snapshot for perf script's conversion of the perf.data ``path``, made now from
    /proc/kallsyms if there is none for the current key, or None (see the module's
    docstring)."""
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
    try:
        with open(PROC_KALLSYMS, "rb") as f:
            text = f.read()
    except OSError:
        return None
    if not text:
        return None
    part = _part(text, path, directory)
    if part is not None:
        return Snapshot(snap, part=part, text=text)
    return Snapshot(snap) if _save(text, snap) else None


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
    import mmap   # mapped, not read: a fresh process's copy costs 2-3 ms of page faults
    try:
        with open(snap, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as text:
            return _part(text, path, directory)
    except (OSError, ValueError):   # (ValueError: an empty file cannot be mapped)
        return None


def _part(text, path: str, directory: str) -> str | None:
    """part_for of a kallsyms ``text`` (bytes, or a map of the snapshot)."""
    if os.environ.get("OFFCONV_SPEEDUPS", "1") == "0":
        return None
    try:
        from offconv._speedups import kallsyms_for
    except ImportError:
        return None
    header = read_header(path)
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
    import mmap
    try:
        with open(path, "rb") as g:
            size = os.fstat(g.fileno()).st_size
            if data_at + data_size > size or not data_size:
                return None
            with mmap.mmap(g.fileno(), data_at + data_size, prot=mmap.PROT_READ) as whole:
                with memoryview(whole) as view:
                    lines = kallsyms_for(text, view[data_at:])
        if lines is None:
            return None
        fd, part = spawn.named_file(directory, ".kallsyms-part-")
    except (OSError, ValueError):
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
    header = read_header(path)
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


def _save(text: bytes, snap: str) -> bool:
    """Keep ``text`` as the snapshot ``snap`` (written beside, then renamed: a reader never
    sees part of it); the others (another key, another kernel) are removed. Whether it
    was kept."""
    directory, name = os.path.split(snap)
    try:
        fd, tmp = spawn.named_file(directory, ".kallsyms-")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.replace(tmp, snap)
    except OSError:
        _unlink(tmp)
        return False
    try:
        others = [n for n in os.listdir(directory) if n.startswith("kallsyms-") and n != name]
    except OSError:
        return True
    for n in others:
        _unlink(os.path.join(directory, n))
    return True


def _unlink(path: str | None) -> None:
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass
