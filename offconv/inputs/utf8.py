"""Invalid UTF-8 in an input (docs/formats.md, "Odd characters in names"): the decoder's
error handler that reads each invalid sequence as U+FFFD and counts it into the ``invalid``
list of the Source being read (``source._text_chunks``), and the one warning made of the
counts (a split input's child part brings its count in its parse stats). May import
offconv.model."""
from __future__ import annotations

import codecs
from typing import Optional

DECODING: list = [None, 0]   # the ``invalid`` count of the decode in progress, its base


def _replace_counted(e: UnicodeDecodeError) -> tuple:
    """The "replace" error handler, counting: each invalid sequence read as U+FFFD."""
    invalid, base = DECODING
    if invalid is not None:
        if invalid[1] is None:
            invalid[1] = base + e.start
        invalid[0] += 1
    return "\ufffd", e.end


codecs.register_error("offconv-replace", _replace_counted)


def invalid_utf8_stats(src, stats: dict) -> None:
    """A part read in a child: its invalid UTF-8 count into its parse ``stats`` (merged
    into the parent's, where ``invalid_utf8_warning`` says it)."""
    n, first = src.invalid_utf8
    if n:
        stats["invalid_utf8"] = stats.get("invalid_utf8", 0) + n
        stats.setdefault("invalid_utf8_first", (src.path, first))


def invalid_utf8_warning(sources: list, stats: dict) -> Optional[str]:
    """The one warning of the invalid UTF-8 the inputs had (this process's Sources and the
    parts read in children, ``stats``): how many sequences, where the first was."""
    n = sum(src.invalid_utf8[0] for src in sources if getattr(src, "invalid_utf8", None))
    n += stats.get("invalid_utf8", 0)
    if not n:
        return None
    first = next(((src.path, src.invalid_utf8[1], src.kind) for src in sources
                  if getattr(src, "invalid_utf8", None) and src.invalid_utf8[0]), None)
    if first is None:   # (only in a part read by a child: a plain file's)
        first = (*stats["invalid_utf8_first"], "text")
    path, offset, kind = first
    where = ("" if kind == "text" else " of the decompressed text"
             if kind in ("gzip", "xz", "bzip2", "zstd") else " of perf script's output")
    seq = "sequence" if n == 1 else "sequences"
    return (f"{path}: {n:,} invalid UTF-8 {seq} read as U+FFFD (the first at byte offset "
            f"{offset:,}{where}): names that contain them are not the bytes recorded")
