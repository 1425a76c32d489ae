"""``offconv diff``'s two inputs loaded at once: BEFORE in a forked child while this
process loads AFTER (parallel.Fork), errors raised in the serial order."""
from __future__ import annotations

import os

from offconv.run import parallel
from offconv.run.parallel import Fork

# BEFORE bigger than this is loaded by a child while this process loads AFTER
PAIR_MIN_BYTES = 4 << 20


def load_pair(paths: list, load_one) -> list:
    """[load_one(BEFORE), load_one(AFTER)], BEFORE in a forked child while this process
    loads AFTER, where neither is stdin and BEFORE is a file of ``PAIR_MIN_BYTES`` or more (the
    child's Profile is pickled back: 0.1 s for 20k stacks). As the serial order would:
    BEFORE's error is the one raised when both fail, and AFTER is loaded either way; a
    child that failed (an input error) has BEFORE loaded here, to raise that error."""
    before, after = paths
    if not parallel.enabled() or "-" in paths or not _pair_worth(before):
        return [load_one(p) for p in paths]
    child = Fork(_load_side, load_one, before)
    try:
        second = load_one(after)
    except KeyboardInterrupt:
        child.stop()
        raise
    except BaseException:
        try:
            first = child.result()
        finally:
            child.stop()
        if first is None:
            load_one(before)  # raises BEFORE's error, which the serial order meets first
        raise
    try:
        first = child.result()
    finally:
        child.stop()
    return [first if first is not None else load_one(before), second]


def _pair_worth(path: str) -> bool:
    try:
        return os.path.isfile(path) and os.path.getsize(path) >= PAIR_MIN_BYTES
    except OSError:
        return False


def _load_side(load_one, path):
    """In the child: BEFORE's Profile, or None when it failed or holds stacks named ahead
    by identity (naming.FoldedNames, StackNames: they do not survive pickling)."""
    import sys
    try:
        sys.stderr = open(os.devnull, "w")  # its progress lines would mix with this one's
        profile = load_one(path)
        if profile.folded_names is not None or profile.stack_names is not None:
            return None
        return profile
    except BaseException:  # noqa: BLE001 - the parent loads it again to raise the error
        return None
