"""What a flame graph needs to know of a frame besides its name: the display names of a
profile's frames (naming.Namer) and, per name, its family (the off-CPU state split, the
waker part of a chain) and kind bits (kernel, JIT, inlined), read from the frames' kinds,
never from the names. Here, below the run layer and the SVG output, so that both can name
stacks with it (the run layer names a profile's first stacks ahead of the drawing)."""
from __future__ import annotations

from offconv.model.naming import Namer, merge_by
from offconv.model.options import NamingOptions
from offconv.model.records import MARKER, STATE

# Frame families (layout flags): the off-CPU state split and the waker part of a chain.
# the bidi controls (marks, embeddings and overrides, isolates) as a regex class's body:
# what the text report escapes and the flame graph isolates in a name
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
FAMILY_NONE = 0
FAMILY_RUNQ = 1
FAMILY_BLOCKED = 2
FAMILY_WAKER = 4
# Kind bits of one frame (not inherited): kernel, JIT and inlined frames stand out.
KIND_KERNEL = 8
KIND_JIT = 16
KIND_INLINE = 32
KIND_BITS = {"kernel": KIND_KERNEL, "jit": KIND_JIT, "inline": KIND_INLINE}


def frame_flags(frame) -> tuple[int, int]:
    """(family, kind bits) of a frame, from its kind: the state-split frames start the
    run-queue or blocked family of the tower above them, '--' the waker part of a chain."""
    if frame.kind == STATE:
        if frame.name.startswith("[blocked "):
            return FAMILY_BLOCKED, 0
        if frame.name in ("[run queue]", "[preempted]"):
            return FAMILY_RUNQ, 0
        return 0, 0
    if frame.kind == MARKER and frame.name == "--":
        return FAMILY_WAKER, 0
    return 0, KIND_BITS.get(frame.kind, 0)


class Labels:
    """Display names of the profile's frames (offconv.model.naming) and, per name, the family
    and kind bits the layout and palette read (from the frames' kinds, never from the
    names). The run layer may name a profile's first stacks with one ahead of the
    drawing (naming.StackNames), which then goes on with it."""

    def __init__(self, naming: NamingOptions):
        self.flags: dict = {}
        self._seen: set = set()
        self.namer = Namer(naming, on_new=self._note)
        self.stack = self.namer.stack

    def _note(self, frame, name: str) -> None:
        """A frame named for the first time: its bits go to the name it has there."""
        if frame in self._seen:  # named before, in a java thread or outside one
            return
        self._seen.add(frame)
        family, bits = frame_flags(frame)
        if family or bits:
            self.add_flags(name, family, bits)

    def add_flags(self, name: str, family: int, bits: int) -> None:
        """``name``'s palette family and kind bits ORed with those it has."""
        old = self.flags.get(name, (0, 0))
        self.flags[name] = (old[0] | family, old[1] | bits)

    def merge(self, samples: dict) -> dict:
        return merge_by(samples, self.stack)
