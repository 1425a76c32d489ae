"""Display names, made from frames in one place (DESIGN.md "Model"): the folded renderer
and the SVG call this; nothing parses a display name back into a frame.

- THREAD: the comm with spaces as ``_`` (stackcollapse-perf.pl); ``--pid`` appends
  ``-PID``, ``--tid`` ``-PID/TID`` (``?`` for a pid the input does not carry). A thread
  named only by a folded input keeps its text.
- INLINE ``_[i]`` always; KERNEL ``_[k]`` with ``--kernel``; JIT ``_[j]`` with ``--jit``;
  a name that already carries its annotation (folded input) is not annotated twice.
- a java thread's ``Lpkg/Class`` frames lose their ``L`` (stackcollapse-perf.pl).
- ``;`` (the folded separator) becomes ``:`` in every name.
"""
from __future__ import annotations

from typing import Optional

from offconv.model.records import INLINE, JIT, KERNEL, THREAD, Frame, Task
from offconv.model.options import NamingOptions

_SUFFIX = {INLINE: "_[i]", KERNEL: "_[k]", JIT: "_[j]"}


def thread_label(task: Optional[Task], name: str, opts: NamingOptions) -> str:
    if task is None or task.tid is None and (task.pid is None or not (opts.pid or opts.tid)):
        return name.replace(";", ":")
    label = task.comm.replace(" ", "_").replace(";", ":")
    if opts.tid:
        return f"{label}-{'?' if task.pid is None else task.pid}/{'?' if task.tid is None else task.tid}"
    if opts.pid:
        return f"{label}-{'?' if task.pid is None else task.pid}"
    return label


def frame_label(frame: Frame, opts: NamingOptions, java: bool = False) -> str:
    kind = frame.kind
    if kind == THREAD:
        return thread_label(frame.task, frame.name, opts)
    name = frame.name
    if ";" in name:
        name = name.replace(";", ":")
    if java and name.startswith("L") and "/" in name:
        name = name[1:]
    suffix = _SUFFIX.get(kind)
    if suffix is not None and (kind == INLINE or (kind == KERNEL and opts.kernel)
                               or (kind == JIT and opts.jit)) and not name.endswith(suffix):
        return name + suffix
    return name


class Namer:
    """frame_label with caches (a few thousand frames repeat millions of times).
    ``on_new(frame, label)``, if given, is told of each frame the first time it is named
    in a java or a non-java thread."""

    def __init__(self, opts: NamingOptions, on_new=None):
        self.opts = opts
        # frame -> label, outside and inside a java thread
        self._caches = (_LabelCache(opts, False, on_new), _LabelCache(opts, True, on_new))
        self._lookups = tuple(c.__getitem__ for c in self._caches)

    def label(self, frame: Frame, java: bool = False) -> str:
        return self._caches[java][frame]

    def lookup(self, java: bool):
        """``label`` of one context as a C-level lookup: frame -> display name."""
        return self._lookups[java]

    @staticmethod
    def is_java(root: Frame) -> bool:
        """Whether a stack whose first frame is ``root`` is a java thread's."""
        return _is_java(root)

    def stack(self, stack: tuple) -> tuple:
        """Display names of a stack, root first."""
        java = bool(stack) and _is_java(stack[0])
        return tuple(map(self._lookups[java], stack))  # one C loop; a miss labels the frame

    def folded(self, stack: tuple) -> str:
        return ";".join(self.stack(stack))


class _LabelCache(dict):
    """frame -> frame_label, filled on the first lookup of each frame."""

    __slots__ = ("opts", "java", "on_new")

    def __init__(self, opts: NamingOptions, java: bool, on_new):
        super().__init__()
        self.opts, self.java, self.on_new = opts, java, on_new

    def __missing__(self, frame: Frame) -> str:
        label = self[frame] = frame_label(frame, self.opts, self.java)
        if self.on_new is not None:
            self.on_new(frame, label)
        return label


def _is_java(root: Frame) -> bool:
    return root.kind == THREAD and root.task is not None and root.task.comm == "java" \
        and root.task.tid is not None


class FoldedNames:
    """Folded names made ahead of the folded output for some stacks (offconv.run.parallel
    names its own part's stacks while it waits for the second part), under one
    NamingOptions. Looked up by the stack object's identity: the stacks are kept alive
    here, so an id is never reused while its entry exists; a stack not met here (the
    second part's) is named when the output is written."""

    def __init__(self, opts: NamingOptions, stacks: list):
        self.opts = opts
        self._stacks = stacks  # kept alive: their ids stay theirs
        self._names = dict(zip(map(id, stacks), map(Namer(opts).folded, stacks)))
        # folded name -> weight of stacks that are not in the profile, only named (the
        # split's second part): the folded output adds them in
        self.named: dict = {}

    def add_named(self, names: list, weights: list) -> None:
        named = self.named
        for name, w in zip(names, weights):
            named[name] = named.get(name, 0) + w

    def folded(self, samples: dict, namer: Namer) -> list:
        """The folded name of every stack of ``samples``, in its order."""
        return _known_or_named(self._names, samples, namer.folded)


class StackNames:
    """Display names made ahead of the SVG for the first stacks of a profile
    (offconv.run.parallel names its own part's while the second part is still parsed), by
    ``labels`` (the SVG renderer's labeller: its Namer, and the flags it notes for each
    frame it names first), looked up by the stack object's identity (kept alive here).
    The renderer takes ``labels`` over, so that its labels, flags and first-seen order are
    those of naming every stack there, and names only the stacks not named here."""

    def __init__(self, opts: NamingOptions, labels):
        self.opts = opts
        self.labels = labels
        self._stack = labels.stack
        self._stacks: list = []
        self._names: dict = {}
        # display name -> weight of stacks that are not in the profile, only named
        # (add_named: the split's second part)
        self.named: dict = {}

    def add(self, stacks: list) -> None:
        """Name ``stacks``, the next stacks of the profile in its order."""
        self._stacks.extend(stacks)
        self._names.update(zip(map(id, stacks), map(self._stack, stacks)))

    def add_named(self, names: list, weights: list, flags: dict) -> None:
        """Display names with their weights, of stacks that are not in the profile (the
        split's second part, named by another process's labeller: the SVG adds them to
        its rows), and the ``flags`` (display name -> family and kind bits) that labeller
        noted, added to ``labels``'."""
        named = self.named
        for name, w in zip(names, weights):
            named[name] = named.get(name, 0) + w
        for name, (family, bits) in flags.items():
            self.labels.add_flags(name, family, bits)

    def __len__(self) -> int:
        return len(self._stacks)

    def keys(self, samples: dict, stack) -> list:
        """The display names of every stack of ``samples`` in its order, those not named
        here by ``stack``."""
        return _known_or_named(self._names, samples, stack)


def _known_or_named(known: dict, samples: dict, name) -> list:
    """The name of every stack of ``samples`` in its order: ``known``'s (by the stack
    object's identity), else ``name(stack)``."""
    names = list(map(known.get, map(id, samples)))
    if None in names:
        for i, stack in enumerate(samples):
            if names[i] is None:
                names[i] = name(stack)
    return names


def merge_by(samples: dict, key, keys: Optional[list] = None) -> dict:
    """stack of frames -> weight  =>  key(stack) -> summed weight: stacks that display the
    same (e.g. two threads of one comm without --tid) merge. ``key`` is a Namer's
    ``stack`` (a tuple of names) or ``folded`` (the folded text); ``keys``, if given, are
    those names already made, in the order of ``samples``."""
    if keys is None:
        keys = list(map(key, samples))
    out = dict(zip(keys, samples.values()))
    if len(out) == len(keys):  # every stack displays differently: nothing to add up
        return out
    out = {}
    get = out.get
    for k, w in zip(keys, samples.values()):
        out[k] = get(k, 0) + w
    return out
