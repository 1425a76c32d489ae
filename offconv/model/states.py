"""--state: offcputime's task-state filter, as a bitmask or as letters, and the test of a
prev_state against it. May import offconv.model."""
from __future__ import annotations

import re
from typing import Optional

from offconv.model.errors import OffconvError

# offcputime's --state tests the task's raw state word (``prev->__state & MASK``; 0: running):
# the bits of each letter sched_switch prints (include/linux/sched.h; I is TASK_IDLE =
# TASK_UNINTERRUPTIBLE | TASK_NOLOAD, so mask 2 matches D and I, as offcputime does)
STATE_BITS = (("S", 0x1), ("D", 0x2), ("T", 0x4), ("t", 0x8), ("X", 0x10), ("Z", 0x20),
              ("P", 0x40), ("K", 0x100), ("W", 0x200), ("N", 0x400), ("I", 0x402))
STATE_LETTERS = "RSDTtXZPIKWN"


def parse_state(text: str) -> frozenset:
    """``--state``: offcputime's bitmask, decimal or hex (``0`` = preempted/R, ``2`` = D
    and I, ``3`` = S, D or I, ``0x402`` = D, I or N), or letters (``D``, ``S,D``, ``SD``:
    exactly those). Returns the set of prev_state letters to keep."""
    text = text.strip()
    if re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)", text):
        mask = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
        if mask == 0:
            return frozenset("R")
        return frozenset(c for c, bits in STATE_BITS if mask & bits)
    letters = set(text.replace(",", "").replace("|", "").replace("+", ""))
    bad = letters - set(STATE_LETTERS)
    if not letters or bad:
        raise OffconvError(f"--state: expected state letters ({STATE_LETTERS}) or a bitmask, "
                           f"got '{text}'")
    return frozenset(letters)


def state_matches(state: str, keep: Optional[frozenset]) -> bool:
    """True when one letter of a prev_state like ``D|K`` or ``R+`` is kept."""
    if keep is None:
        return True
    return any(c in keep for c in state if c not in "|+")
