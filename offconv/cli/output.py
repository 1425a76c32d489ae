"""Where a command's output goes: the format chosen by ``--to`` or ``-o``'s suffix
(``choose_output``), refused when it names an input (``check_output``), and written whole
or not at all (``write_output``: a temporary file beside OUT, renamed over it when
complete)."""
from __future__ import annotations

import errno
import io
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from typing import Optional

from offconv.model import registry as formats
from offconv.model.errors import OffconvError
from offconv.model.options import Options


def choose_output(out: Optional[str], to: Optional[str]):
    if to:
        return formats.output_format(to)
    if out in (None, "-"):
        return formats.output_format("folded")
    fmt = formats.output_for_path(out)
    if fmt is None:
        names = ", ".join(f.name for f in formats.output_formats())
        raise OffconvError(f"{out}: cannot tell the output format from the file name: give --to ({names})")
    return fmt


def _open_mode(fmt) -> dict:
    return {"mode": "wb"} if fmt.binary else {"mode": "w", "encoding": "utf-8", "newline": "\n"}


def write_output(fmt, profile, opts: Options, out: Optional[str]) -> None:
    """Render to stdout, or to a temp file beside OUT that replaces OUT only when complete.
    Binary formats (``OutputFormat.binary``) get a binary stream."""
    if out in (None, "-"):
        with writing_stdout():
            stream = sys.stdout.buffer if fmt.binary else sys.stdout
            fmt.render(profile, stream, opts)
            stream.flush()
        return
    if os.path.isdir(out):
        raise OffconvError(f"{out}: cannot write: {os.strerror(errno.EISDIR)}")
    if os.path.exists(out) and not os.path.isfile(out):  # /dev/null, a FIFO: no rename
        try:
            with open(out, **_open_mode(fmt)) as f:
                fmt.render(profile, f, opts)
        except OSError as e:  # cannot open it, or a write failed (/dev/full: ENOSPC)
            raise OffconvError(f"{out}: cannot write: {e.strerror or e}") from None
        return
    directory = os.path.dirname(os.path.abspath(out))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".offconv-", dir=directory)
    except OSError as e:
        raise OffconvError(f"{out}: cannot write: {e.strerror}") from None
    try:
        with os.fdopen(fd, **_open_mode(fmt)) as f:
            fmt.render(profile, f, opts)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.strerror:
            raise OffconvError(f"{out}: cannot write: {e.strerror}") from None
        raise


def _file_id(path: str):
    """(device, inode) of PATH (``-``: of standard input) when it is a regular file, else None
    (missing; /dev/null, a pipe or a FIFO hold nothing to lose)."""
    try:
        st = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def refuse_input_as_output(out: str, inputs) -> None:
    """An output never replaces an input: OUT naming the same file as one of INPUTS is
    ``offconv: OUT: is also an input (INPUT): write the output elsewhere``, exit 2."""
    target = _file_id(out)
    if target is None:
        return  # OUT does not exist yet: it cannot be an input
    for path in inputs:
        if _file_id(path) == target:
            shown = "standard input" if path == "-" else path
            raise OffconvError(f"{out}: is also an input ({shown}): write the output elsewhere")


@contextmanager
def writing_stdout():
    """Writes to stdout inside: a write that fails (a full disk: ENOSPC) is the one-line
    error ``offconv: <stdout>: cannot write: <strerror>`` (exit 2), not an internal error;
    what stdout still buffers is dropped (fd 1 is pointed at /dev/null), so the flush at
    exit does not fail again."""
    try:
        yield
    except OSError as e:
        if not e.strerror:
            raise
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass   # no file descriptor (a test's captured stdout): nothing buffered below
        raise OffconvError(f"{STDOUT_NAME}: cannot write: {e.strerror}") from None


def check_output(out: Optional[str], inputs=()) -> None:
    """Fail before reading the input when OUT cannot be written (a missing folder, a
    directory, no permission): ``offconv: OUT: cannot write: <strerror>``, exit 2; or when
    OUT is one of INPUTS (the same file by device and inode: the same path, a symlink, a
    hard link; ``-`` is standard input): ``offconv: OUT: is also an input (...)``, exit 2."""
    if out in (None, "-"):
        return
    refuse_input_as_output(out, inputs)
    if os.path.isdir(out):
        raise OffconvError(f"{out}: cannot write: {os.strerror(errno.EISDIR)}")
    if os.path.exists(out) and not os.path.isfile(out):
        return  # /dev/null, a FIFO: opened when written
    try:
        fd, tmp = tempfile.mkstemp(prefix=".offconv-", dir=os.path.dirname(os.path.abspath(out)))
    except OSError as e:
        raise OffconvError(f"{out}: cannot write: {e.strerror}") from None
    os.close(fd)
    os.unlink(tmp)


STDOUT_NAME = "<stdout>"   # how an error names standard output (as Python names it)
