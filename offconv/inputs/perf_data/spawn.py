"""Starting perf script (and the helpers beside it) with what the interpreter has loaded
already: ``os.posix_spawn``, an unnamed file of ``O_TMPFILE`` and a search of $PATH.

offconv.launch starts perf script on a perf.data before the rest of offconv is imported,
and everything this path imports delays that start: ``subprocess``, ``shutil``,
``tempfile``, ``signal`` and ``typing`` together cost more than the interpreter's own start
(``python -X importtime``), and a conversion pays it in full: perf's end, and so the SVG's,
comes that much later. What is used of them here is small: a child
with its stdin, stdout and stderr set, ``poll``, ``wait`` and ``kill`` (``Process``: the
part of ``subprocess.Popen`` that perf_data.Follow uses, with the
same ``returncode`` convention), an unlinked temporary file (``unnamed_file``) and a named
one (``named_file``), and ``shutil.which`` (``which``). Where ``O_TMPFILE`` is not
supported, tempfile makes the unnamed file (``posix_spawn`` is in every Python 3.10 on
Linux and macOS)."""
from __future__ import annotations

import os
import weakref

try:  # the signal numbers without signal.py's enums (enum costs 1 ms on its own)
    from _signal import SIGCONT, SIGKILL, SIGPIPE, SIGSTOP, SIGXFSZ
except ImportError:  # pragma: no cover - CPython has _signal on every platform
    from signal import SIGCONT, SIGKILL, SIGPIPE, SIGSTOP, SIGXFSZ

__all__ = ["Process", "SIGCONT", "SIGKILL", "SIGSTOP", "which", "cxxfilt", "unnamed_file",
           "named_file"]


def which(name: str) -> "str | None":
    """The executable ``name`` on $PATH (as shutil.which: a file, executable by this user),
    or None; ``name`` with a slash is taken as a path."""
    if os.sep in name:
        return name if _executable(name) else None
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(d or ".", name)
        if _executable(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.access(path, os.X_OK) and os.path.isfile(path)


def cxxfilt() -> "str | None":
    """The c++filt to use, or None: then perf demangles (also when $OFFCONV_PERF_DEMANGLE
    is set, which tests and users can use to compare)."""
    if os.environ.get("OFFCONV_PERF_DEMANGLE"):
        return None
    return which("c++filt")


# pid -> Process of this process's still to be waited for (weakly: a dropped one goes to
# _DROPPED): ended at exit (a Ctrl-C, an error, an input left unread), so that no perf
# script outlives offconv; a pipe's closing would not end one still reading its file
_LIVE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_ENDED_AT_EXIT: list = []


def _end_live() -> None:
    for proc in list(_LIVE.values()):
        if proc.parent == os.getpid() and proc.poll() is None:
            try:
                proc.kill()
                proc.wait()
            except OSError:
                pass
    for pid in _DROPPED:
        try:
            os.kill(pid, SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    _DROPPED.clear()


class Process:
    """A child running ``args`` (``args[0]`` a path) with stdin from /dev/null, stdout
    and stderr to the given descriptors (None: /dev/null) and no other descriptor of this
    process's (as Popen's ``close_fds``), the signals Python ignores
    (SIGPIPE, SIGXFSZ) back to their defaults, as subprocess.Popen leaves them. ``poll``,
    ``wait``, ``kill`` and ``returncode`` behave as Popen's (a negative ``returncode`` is
    the signal that ended it)."""

    def __init__(self, args: list, stdout: "int | None" = None, stderr: "int | None" = None):
        _reap_dropped()
        self.args = list(args)
        self.returncode: "int | None" = None
        self.pid = None   # (until it has started: a failed start leaves nothing to reap)
        self.pid = spawn(self.args, stdout, stderr)
        self.parent = os.getpid()
        if not _ENDED_AT_EXIT:
            import atexit
            atexit.register(_end_live)
            _ENDED_AT_EXIT.append(True)
        _LIVE[self.pid] = self

    def __del__(self):
        """Dropped without a wait (an input opened and left, as a test may): its exit is
        collected now, or when the next child starts if it still runs (as Popen's
        ``_active``), so that it is no zombie for as long as offconv runs."""
        if self.pid is not None and self.returncode is None and self.poll() is None:
            _DROPPED.append(self.pid)

    def poll(self) -> "int | None":
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self, timeout: "float | None" = None) -> int:
        if timeout is not None:  # as Popen's: raise once ``timeout`` s have passed
            import subprocess
            import time
            end = time.monotonic() + timeout
            while self.poll() is None:
                if time.monotonic() >= end:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                time.sleep(0.002)
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except InterruptedError:  # pragma: no cover - PEP 475 retries waitpid
            return
        except ChildProcessError:
            # not ours to wait for (a forked offconv.run.parallel child, SIGCHLD ignored): as
            # Popen, taken as ended well
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # pragma: no cover - ended and reaped meanwhile
                pass

    def kill(self) -> None:
        self.send_signal(SIGKILL)


_DROPPED: list = []   # pids of children whose Process was dropped while they ran


def _reap_dropped() -> None:
    for pid in _DROPPED[:]:
        try:
            done = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            done = True
        if done:
            _DROPPED.remove(pid)


def spawn(args: list, stdout: "int | None", stderr: "int | None") -> int:
    """The pid of a child running ``args`` (see Process)."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    for fd, target in ((stdout, 1), (stderr, 2)):
        if fd is None:
            actions.append((os.POSIX_SPAWN_OPEN, target, os.devnull, os.O_WRONLY, 0))
        else:
            # dup2 onto a descriptor other than itself clears close-on-exec in the child
            # (every file Python opens has it set)
            assert fd > 2, "stdout and stderr of a child are files of their own"
            actions.append((os.POSIX_SPAWN_DUP2, fd, target))
    # and none of the descriptors this process inherited open (as Popen's close_fds)
    actions.extend((os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable())
    return os.posix_spawn(args[0], args, os.environ, file_actions=actions,
                          setsigdef=(SIGPIPE, SIGXFSZ))


def _inheritable() -> list:
    """This process's descriptors above 2 that a child would inherit (left open by
    whatever started offconv, such as make's jobserver pipe); every one Python opens is
    close-on-exec."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: left as they are
        return []
    fds = []
    for name in names:
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                fds.append(fd)
        except OSError:  # the listing's own descriptor, closed since
            pass
    return fds


def _tmp_dir() -> str:
    """$TMPDIR (as tempfile reads it first), else /tmp."""
    return os.environ.get("TMPDIR") or "/tmp"


def unnamed_file():
    """A new temporary file with no name (binary, read and write; gone when closed): an
    ``O_TMPFILE`` in $TMPDIR or /tmp, else tempfile.TemporaryFile()."""
    flags = getattr(os, "O_TMPFILE", 0)
    if flags:
        try:
            fd = os.open(_tmp_dir(), flags | os.O_RDWR | os.O_CLOEXEC, 0o600)
        except OSError:  # a file system or kernel without it, no such folder
            pass
        else:
            return os.fdopen(fd, "w+b")
    import tempfile
    return tempfile.TemporaryFile()


def named_file(directory: str, prefix: str) -> tuple:
    """(descriptor open for writing, path) of a new file of mode 0600 in ``directory``
    whose name starts with ``prefix`` (as tempfile.mkstemp); OSError when it cannot be
    made."""
    for _ in range(100):
        path = os.path.join(directory, prefix + os.urandom(6).hex())
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), path
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    raise FileExistsError(f"{directory}: no free name for {prefix}")  # pragma: no cover
