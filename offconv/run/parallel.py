"""The means to read one input over two processes, for the readers that do (run.split,
run.follow, run.sched_split, run.pair): whether to (``enabled``: OFFCONV_JOBS=1 or one CPU
says no), where to cut a file (at an event boundary), a forked child whose return value
comes back pickled (``Fork``; ``ForkedLater`` waits for its job), and how a child's parse
stats and line numbers join the parent's. Every reader that splits merges the parts in
file order, so its output is byte-identical to one process's."""
from __future__ import annotations

import copyreg
import io
import os
import pickle
import select
import signal
from typing import Optional

from offconv.model.records import Frame
from offconv.inputs.source import first_event_line_cut

MIN_BYTES = 16 << 20   # below this, forking costs more than it saves
CUT_SEARCH = 1 << 20   # look this far past the middle for a blank line
def enabled() -> bool:
    return os.environ.get("OFFCONV_JOBS", "2") != "1" and (os.cpu_count() or 1) > 1


def cut_point(path: str, size: int, sep: bytes = b"\n\n", share: float = 0.5) -> Optional[int]:
    """The byte offset just after ``sep`` (a blank line: an event boundary; a newline for
    a format of one record per line) at ``share`` of the file, or None when there is none.
    (The number of the line there is known only once the first part is read: the child
    numbers its lines from 1 and the parent shifts what it reports.)"""
    with open(path, "rb") as f:
        return cut_in(f.fileno(), 0, size, sep, share)


def cut_in(fd: int, start: int, size: int, sep: bytes, share: float) -> Optional[int]:
    """cut_point within bytes [start, size) of an open file."""
    middle = start + int((size - start) * share)
    buf = os.pread(fd, CUT_SEARCH, middle)
    k = buf.find(sep)
    if k < 0:
        if sep != b"\n\n":
            return None
        # no blank line: perf script of a recording without call chains, one line an
        # event; a cut between two such lines splits no event
        k = first_event_line_cut(buf.decode("latin-1"))  # (ASCII pattern: byte offsets)
        if k is None:
            return None
        cut = middle + k
    else:
        cut = middle + k + len(sep)
    return cut if cut < size else None


def merge_stats(stats: dict, *parts: dict) -> None:
    """The parts' parse stats into ``stats``, in input order: counts add up, the first
    skipped line is the first part's that has one, the recorder's lost share is the
    largest (as one parse would have kept them)."""
    for part in parts:
        for key, value in part.items():
            if key in ("first_skipped", "invalid_utf8_first"):
                stats.setdefault(key, value)
            elif key == "lost_samples_pct":
                stats[key] = max(stats.get(key, 0.0), value)
            elif key in ("recorded_by_offconv", "recorded_filtered"):  # the paths of those inputs
                stats[key] = stats.get(key, ()) + value
            else:
                stats[key] = stats.get(key, 0) + value


def shifted(result: tuple, lines: int) -> tuple:
    """The child's line numbers (the first line skipped with --lenient, the line cut short)
    moved down by ``lines``: in a result whose last two items are its stats and cut line."""
    *rest, stats, cut_line = result
    first = stats.get("first_skipped")
    if first is not None:
        where, _, n = first.rpartition(":")
        stats["first_skipped"] = f"{where}:{int(n) + lines}"
    return (*rest, stats, (cut_line + lines if cut_line is not None else None))


def _reduce_frame(frame: Frame) -> tuple:
    return _frame, tuple(frame)


def _frame(*fields) -> Frame:
    return Frame(*fields)


class _Unpickler(pickle.Unpickler):
    """Loads the child's result with each of its Frames replaced by the equal Frame this
    process already has (``frames``: Frame -> itself), if any: the two parts' stacks then
    share their frames. A lookup of an equal but distinct Frame touches twice the memory:
    the SVG of a million folded stacks (20k distinct frames) spent 6.5 s instead of 3.2 s
    naming them. The child pickles a Frame as a call to ``_frame`` (``_reduce_frame``),
    once per distinct Frame (pickle's memo), and this calls its own method instead."""

    def __init__(self, data: bytes, frames: dict):
        super().__init__(io.BytesIO(data))
        self._frames = frames

    def find_class(self, module, name):
        if module == __name__ and name == "_frame":
            return self._frame
        return super().find_class(module, name)

    def _frame(self, *fields) -> Frame:
        frame = Frame(*fields)
        return self._frames.setdefault(frame, frame)


def _dumps(obj) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, Frame: _reduce_frame}
    pickler.dump(obj)
    return buf.getvalue()


class Fork:
    """``fn(*args)`` in a forked child (a bare fork and a pipe: a multiprocessing pool
    costs more to set up than the work it would save on a 16 MB input); ``result()`` is
    its return value (pickled back), or None when the child failed."""

    def __init__(self, fn, *args, share_frames: bool = True):
        r, w = os.pipe()
        self._share = share_frames
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                value = fn(*args)
                data = _dumps(value) if share_frames else pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self._read = r

    def ready(self) -> bool:
        """Whether the child's result has started to come (or the child has ended)."""
        return bool(select.select([self._read], [], [], 0)[0])

    def result(self, frames: Optional[dict] = None):
        """The child's return value (its Frames made this process's equal ones, from
        ``frames``, where there are), or None when it failed."""
        with os.fdopen(self._read, "rb") as f:
            data = f.read()
        self._read = None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0 or not data:
            return None
        try:
            if not self._share:
                return pickle.loads(data)
            return _Unpickler(data, {} if frames is None else frames).load()
        except pickle.UnpicklingError:   # (what cannot be taken over here: read it again)
            return None

    def stop(self):
        """Kill and reap a child whose result was not read (the parent's part failed)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = None
        if self._read is not None:
            os.close(self._read)
            self._read = None


class ForkedLater(Fork):
    """``fn(**fixed, **job)`` in a child forked now that waits for its ``job``
    (``start``); ``stop()`` before ``start`` ends it unused (a job never sent reads as
    none). ``result()`` as _fork's (pickled back, its Frames its own)."""

    def __init__(self, fn, **fixed):
        jr, jw = os.pipe()
        super().__init__(_run_job, fn, fixed, jr, jw, share_frames=False)
        os.close(jr)
        self._job = jw

    def start(self, **job) -> None:
        with os.fdopen(self._job, "wb") as f:
            self._job = None
            f.write(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))

    def stop(self):
        if self._job is not None:
            os.close(self._job)
            self._job = None
        super().stop()


def _run_job(fn, fixed: dict, jr: int, jw: int):
    """In a ForkedLater child: ``fn(**fixed, **job)`` once its job has come through the
    pipe ``jr``; None when none comes (the pipe closed first)."""
    os.close(jw)
    with os.fdopen(jr, "rb") as f:
        job = f.read()
    return fn(**fixed, **pickle.loads(job)) if job else None
