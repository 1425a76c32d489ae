"""perf.data (perf record's binary file) -> perf script text, read as perf writes it.

Recognised by its magic ``PERFILE2`` (tools/perf/util/header.c); the text perf script
prints is then detected and parsed like any other input (normally perf-script). perf writes
into an unlinked temporary file (in $TMPDIR), not a pipe: ``Follow`` reads it as it grows,
and when perf ends with much of it unread -- the parser was the slower side, as on a Java
recording -- offconv.run.parallel.FollowSplit gives the end of it to a second process. The file
holds only what is not read yet (holes are punched behind the reader) and at most ``LAG``
bytes of it (perf is stopped until the reader catches up)."""
from __future__ import annotations

import os
import stat
import struct
import time

from offconv.model.errors import OffconvError
from offconv.inputs.perf_data import spawn
from offconv.inputs.perf_data.header import MAGIC, build_ids, read_header


def convert(path: str, demangle_here: bool = True, kallsyms: str | None = None):
    """(binary stream of perf script's output, finish()). ``finish`` waits for perf and
    raises OffconvError with perf's own first message when it failed; it returns the
    warnings to give (kernel_symbols_note). The stream's ``mangled`` is True when perf left
    the names to offconv (``demangle_here`` and ``no_demangle``: offconv.inputs.demangle);
    ``kallsyms``: perf script --kallsyms."""
    if path == "-":
        raise OffconvError("-: perf.data on stdin is not supported: give its path")
    started = _STARTED.pop(os.path.abspath(path), None)
    if started is not None and (demangle_here or "--no-demangle" not in started[0].args) \
            and _kallsyms_arg(kallsyms) == _kallsyms_arg(started[3]):
        proc, err, out, _ = started
        perf = proc.args[0]
    else:
        if started is not None:
            _stop(started)
        perf = spawn.which("perf")
        if perf is None:
            raise OffconvError(f"{path}: is perf.data, but 'perf' is not on PATH to convert it "
                               "(install linux-perf, or run 'perf script -i FILE > FILE.txt')")
        proc, err, out = _start(perf, path, demangle_here, kallsyms=kallsyms)
    stream = Follow(proc, out, err)
    if FIELDS[1] in proc.args:  # a perf that refuses the field list: its default fields
        stream.fallback = lambda: _start(perf, path, "--no-demangle" in proc.args, fields=False,
                                         kallsyms=kallsyms)
    stream.mangled = "--no-demangle" in proc.args

    def finish() -> None:
        stream.resume()
        rc = stream.proc.wait()
        err = stream.err
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
        err.close()
        if rc != 0:
            raise OffconvError(f"{path}: perf script failed: {_first_message(text, rc)}")
        snapshot = getattr(stream.proc, "kallsyms_snapshot", None)
        if snapshot is not None:
            snapshot.settle()
        note = kernel_symbols_note(path, text, perf, kallsyms)
        return [note] if note else []

    return stream, finish


# perf script's default fields less the symbol offset (``-F -symoff``, perf 4.13 and
# later), for a recording of samples only: the parsers drop a frame's ``+0x...`` anyway,
# and perf formats about 6% fewer bytes, which the parser, the slower side on a Java
# recording, reads sooner. On tracepoints, perf 6.1 then leaves the call chains out, so a recording with
# any keeps the default fields. A perf that refuses the list (too old) prints nothing and
# fails: Follow.read then converts again with the default fields (``Follow.fallback``).
FIELDS = ("-F", "-symoff")


def kernel_symbols_note(path: str, stderr: str, perf: str, kallsyms: str | None) -> str | None:
    """The warning to give when perf found no kernel symbols for the recording (perf.data of
    another kernel build, converted without its kallsyms or vmlinux: every kernel frame is
    ``[unknown]``, and the off-CPU causes are read from kernel frames), else None."""
    import re
    m = re.search(r"No kallsyms or vmlinux with build-id ([0-9a-f]+) was found", stderr)
    if m is None:
        return None
    import platform
    recorded, here = _os_release(perf, path), platform.release()
    where = (f"it was recorded on kernel {recorded}, this machine runs {here}"
             if recorded and recorded != here else
             f"its kernel (build-id {m.group(1)[:12]}) is not the one running here")
    given = f" ({kallsyms} did not match it)" if kallsyms else ""
    return (f"{path}: perf found no kernel symbols for this recording{given}: its kernel "
            f"frames are [unknown], so what blocked threads waited in cannot be read; {where}: "
            "convert it where it was recorded (offconv or perf script there), or give that "
            "machine's /proc/kallsyms, saved while it ran that kernel, with --kallsyms FILE")


def _os_release(perf: str, path: str) -> str | None:
    """The recording's kernel release (its header's os release), None if perf does not say."""
    import subprocess
    try:
        out = subprocess.run([perf, "report", "--header-only", "-i", path], capture_output=True,
                             text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("# os release"):
            return line.partition(":")[2].strip() or None
    return None


def _kallsyms_arg(kallsyms: str | None) -> list:
    return [f"--kallsyms={os.path.abspath(kallsyms)}"] if kallsyms else []


def _start(perf: str, path: str, demangle_here: bool = True, fields: bool = True,
           kallsyms: str | None = None):
    # stderr to a file, not a pipe: perf can print more warnings than a pipe holds; stdout
    # to an unlinked file that Follow reads as it grows (a second process can then parse
    # its end: offconv.run.parallel.follow_split)
    err = spawn.unnamed_file()
    out = spawn.unnamed_file()
    args = [perf, "script", "-i", path, *_kallsyms_arg(kallsyms)]
    snapshot = None
    if not kallsyms and fields:
        # the lines of a /proc/kallsyms copy that this recording needs (kallsyms_snapshot):
        # perf script 0.19-0.23 -> 0.09 s on the recording without call chains
        from offconv.inputs.perf_data.kallsyms import begin
        snapshot = begin(path)
        if snapshot is not None:
            args.extend(snapshot.args)
    header = _samples_header(path)
    if header is not None:
        if fields:
            args.extend(FIELDS)
        if demangle_here and _no_demangle(path, *header):
            args.append("--no-demangle")
    proc = spawn.Process(args, out.fileno(), err.fileno())
    proc.kallsyms_snapshot = snapshot
    if snapshot is not None:
        snapshot.started()
    return proc, err, out


PERF_TYPE_TRACEPOINT = 2
PERF_RECORD_MISC_USER = 2
# What --no-demangle saves and costs, the estimates no_demangle weighs: perf demangles
# every symbol of every C++/Rust dso it loads (about 0.4 us a symbol), while offconv parses
# the longer mangled text and re-keys the stacks holding such frames (about 8 ns per byte
# of perf.data where the parser is the slower side)
SAVED_PER_SYMBOL = 0.4e-6
COST_PER_BYTE = 8e-9


def no_demangle(path: str) -> bool:
    """Whether perf script is to leave the names mangled (offconv demangles them:
    offconv.inputs.demangle): c++filt is there, $OFFCONV_PERF_DEMANGLE is not set, the file's
    header lists its events with none a tracepoint (a recording of samples, which take the
    summed path that demangles; sched events go through the off-CPU path, so perf
    demangles those), and the symbols of the dsos its samples hit are enough that perf's
    demangling of them costs more than the mangled text would cost the parser. A file whose
    header is not read here (pipe mode, another byte order) is left to perf."""
    header = _samples_header(path)
    return header is not None and _no_demangle(path, *header)


def _samples_header(path: str) -> tuple | None:
    """(the header's first 104 bytes, the data section's offset and size) of a perf.data
    whose header lists its events with none a tracepoint; None for any other file, and
    for a header not read here (pipe mode, another byte order)."""
    header = read_header(path)
    if header is None:
        return None
    head, attrs, attr_size = header
    types = [struct.unpack_from("<I", attrs, i)[0] for i in range(0, len(attrs), attr_size)]
    if PERF_TYPE_TRACEPOINT in types:
        return None
    data_at, data_size = struct.unpack_from("<2Q", head, 40)
    return head, data_at, data_size


PERF_SAMPLE_CALLCHAIN = 1 << 5


def without_callchains(path: str) -> bool:
    """Whether the perf.data ``path`` is a recording of samples none of whose events
    records a call chain (perf record without -g: no PERF_SAMPLE_CALLCHAIN in any event's
    sample_type); False when its header is not read here."""
    header = read_header(path)
    if header is None or header[2] < 32:
        return False
    _, attrs, attr_size = header
    for i in range(0, len(attrs), attr_size):
        kind, = struct.unpack_from("<I", attrs, i)
        sample_type, = struct.unpack_from("<Q", attrs, i + 24)
        if kind == PERF_TYPE_TRACEPOINT or sample_type & PERF_SAMPLE_CALLCHAIN:
            return False
    return True


def _no_demangle(path: str, head: bytes, data_at: int, data_size: int) -> bool:
    """no_demangle of a file whose header _samples_header read."""
    if spawn.cxxfilt() is None:
        return False
    try:
        with open(path, "rb") as f:
            dsos = _hit_dsos(f.fileno(), head, data_at + data_size)
    except (OSError, struct.error):
        return False
    symbols = sum(map(_symbols, dsos))
    return symbols * SAVED_PER_SYMBOL > data_size * COST_PER_BYTE


def _hit_dsos(fd: int, head: bytes, features_at: int) -> list:
    """The user-space dsos the samples hit: the file names of the HEADER_BUILD_ID feature."""
    return [name.decode("utf-8", "replace") for misc, _, name in build_ids(fd, head, features_at)
            if misc & 7 == PERF_RECORD_MISC_USER]


def _symbols(dso: str) -> int:
    """The number of entries of an ELF64 dso's symbol tables (.symtab, .dynsym), from its
    section headers; 0 for anything else (a [vdso], a file gone or of another kind: the
    names come from the recording, so a FIFO or a device is not read)."""
    try:
        fd = os.open(dso, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        h = os.pread(fd, 64, 0)
        if len(h) < 64 or h[:4] != b"\x7fELF" or h[4] != 2 or h[5] != 1:
            return 0
        shoff, = struct.unpack_from("<Q", h, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", h, 0x3a)
        if shentsize < 64 or not 0 < shnum < 1 << 16:
            return 0
        sections = os.pread(fd, shentsize * shnum, shoff)
    except (OSError, struct.error):
        return 0
    finally:
        os.close(fd)
    n = 0
    for i in range(0, len(sections) - 63, shentsize):
        kind, = struct.unpack_from("<I", sections, i + 4)
        if kind in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            size, = struct.unpack_from("<Q", sections, i + 32)
            entsize, = struct.unpack_from("<Q", sections, i + 56)
            n += size // (entsize or 24)
    return n


class Follow:
    """perf script's output file, read while perf writes it: a read waits (in steps of
    ``WAIT`` s) until ``ENOUGH`` new bytes are there or perf has ended, and the end of the
    file is known only then. ``on_done(pos, size)``, if set, is called once at that moment
    with the bytes read so far and the file's size; it may return an offset where this
    stream is to end instead (the rest is another process's: offconv.run.parallel).
    Text read is cut out of the file behind the reader (a hole: the disk holds what is not
    parsed yet), and perf is stopped while more than ``LAG`` bytes wait (SIGSTOP/SIGCONT),
    so the file never holds more than that."""

    WAIT = 0.002
    ENOUGH = 256 << 10
    LAG = 256 << 20
    PUNCH = 16 << 20

    def __init__(self, proc, out, err=None):
        self._proc = proc
        self._out = out
        self.err = err  # perf's stderr file (convert's finish reads it)
        self.fallback = None  # () -> (proc, err, out) of perf with its default fields
        self.fd = out.fileno()
        self.pos = 0
        self.end: int | None = None
        self.on_done = None
        self._stopped = False
        self._punched = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:  # all of it
            parts = []
            while True:
                part = self.read(1 << 20)
                if not part:
                    return b"".join(parts)
                parts.append(part)
        while True:
            if self.end is not None:
                n = min(size, self.end - self.pos)
                data = os.pread(self.fd, n, self.pos) if n > 0 else b""
                break
            running = self._proc.poll() is None
            data = os.pread(self.fd, size, self.pos)
            if running and len(data) >= min(size, self.ENOUGH):
                self._throttle()
                break
            if running:
                self.resume()
                time.sleep(self.WAIT)
                continue
            total = os.fstat(self.fd).st_size  # perf has ended: the file is complete
            if not total and self.fallback is not None and self._proc.returncode:
                self._restart()  # it refused the field list (FIELDS): the default fields
                continue
            self.end = total
            if self.on_done is not None:
                done, self.on_done = self.on_done, None
                cut = done(self.pos, total)
                if cut is not None:
                    self.end = cut
            if data:  # read before perf's end was seen: give it (at most to the end)
                data = data[:max(0, self.end - self.pos)]
                break
        self.pos += len(data)
        if self.pos - self._punched >= self.PUNCH:
            self._punched = _punch(self.fd, self._punched, self.pos)
        return data

    @property
    def proc(self):
        return self._proc

    def _restart(self) -> None:
        """Follow a new perf (``fallback``) from its start, this one's files closed."""
        fallback, self.fallback = self.fallback, None
        self._out.close()
        if self.err is not None:
            self.err.close()
        self._proc, self.err, self._out = fallback()
        self.fd = self._out.fileno()

    def _throttle(self) -> None:
        lag = os.fstat(self.fd).st_size - self.pos
        if self._stopped:
            if lag < self.LAG // 2:
                self.resume()
        elif lag > self.LAG and self._proc.returncode is None:
            try:
                os.kill(self._proc.pid, spawn.SIGSTOP)
                self._stopped = True
            except OSError:
                pass

    def resume(self) -> None:
        """Let a stopped perf go on (before waiting for it, and when its output is read)."""
        if self._stopped:
            self._stopped = False
            try:
                os.kill(self._proc.pid, spawn.SIGCONT)
            except OSError:
                pass

    def fileno(self):
        return self.fd

    def close(self):
        """Done with the output: a perf still running (the input's parse failed, or ended
        early) is killed, as a pipe's closing would have ended it."""
        if self._proc.poll() is None:
            try:
                self._proc.kill()
                self._proc.wait()
            except OSError:
                pass
        self.resume()
        self._out.close()


def _punch(fd: int, start: int, end: int) -> int:
    """Free the file's bytes [start, end) rounded to whole MiB (fallocate PUNCH_HOLE, the
    size kept); the new start. Where that is not supported the file keeps them."""
    end &= ~((1 << 20) - 1)
    if end <= start:
        return start
    try:
        _fallocate()(fd, 3, start, end - start)  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
    except Exception:  # noqa: BLE001 - an optimisation of disk space only
        pass
    return end


_FALLOCATE: list = []


def _fallocate():
    if not _FALLOCATE:
        import ctypes  # here: 3 ms that perf script's start need not wait for
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.fallocate
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        _FALLOCATE.append(fn)
    return _FALLOCATE[0]


# absolute path -> (perf script process, its stderr file, its output file, its kallsyms),
# see prestart
_STARTED: dict = {}


def prestart(path: str, demangle_here: bool = True, kallsyms: str | None = None) -> None:
    """Start the conversion of ``path`` now, before offconv asks for it (offconv.launch);
    convert() takes it over. One that is never taken over is killed at exit."""
    key = os.path.abspath(path)
    perf = spawn.which("perf")
    if perf is None or key in _STARTED:
        return
    _STARTED[key] = (*_start(perf, path, demangle_here, kallsyms=kallsyms), kallsyms)
    if len(_STARTED) == 1:
        import atexit
        atexit.register(_stop_unused)


def _stop_unused() -> None:
    for started in _STARTED.values():
        _stop(started)
    _STARTED.clear()


def _stop(started: tuple) -> None:
    proc, err, out, _ = started
    proc.kill()
    proc.wait()
    out.close()
    err.close()


def _first_message(stderr: str, rc: int) -> str:
    """perf's own words: its first non-empty line that is not a banner or a warning about
    build ids (``incompatible file format (rerun with -v to learn more)``)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if not ln.lower().startswith(("warning", "#")):
            return ln
    if lines:
        return lines[0]
    if rc < 0:
        import signal
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"perf was killed by {name} (a truncated or corrupt file?)"
    return f"exit status {rc}"


def __getattr__(name: str):
    """``FORMAT``, made when the registry first asks for it: offconv.launch imports this
    module to start perf script before anything else, and the dataclasses behind
    InputFormat cost that start 8-10 ms (python -X importtime)."""
    if name != "FORMAT":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from offconv.model.formats import InputFormat
    global FORMAT
    FORMAT = InputFormat(name="perf-data", magic=MAGIC, convert=convert,
                         description="perf.data (converted with perf script)")
    return FORMAT
