"""The cyclic garbage collector paused over work that allocates millions of tuples of
which none is in a cycle (parsing, summing and drawing stacks; the CLI pauses it for a
whole command, RSS unchanged on every benchmark input): every
collection of the oldest generation walks every live stack again -- 16% of a 100 MB
collapse with 40k distinct stacks. Reference counting still frees everything at once."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused() -> Iterator[None]:
    if not gc.isenabled():  # already paused by a caller
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
