"""The header of a perf.data file, read as perf writes it (tools/perf/util/header.c): its
magic ``PERFILE2``, its first 104 bytes and event attributes (``read_header``), and the
build-id table of its features (``build_ids``). Used by reader (what to give perf script)
and kallsyms (whether the recording is of the running kernel)."""
from __future__ import annotations

import os
import struct

MAGIC = b"PERFILE2"
HEADER_BUILD_ID = 2          # the feature bit of the dsos that samples hit
PERF_RECORD_MISC_BUILD_ID_SIZE = 1 << 15


def read_header(path: str) -> tuple | None:
    """(the header's first 104 bytes, its event attributes, each attribute's size) of a
    perf.data file; None for any other file, and for a header not read here (pipe mode,
    another byte order)."""
    try:
        with open(path, "rb") as f:
            head = f.read(104)
            if len(head) < 104 or head[:8] != MAGIC:
                return None
            size, attr_size, attrs_at, attrs_size = struct.unpack_from("<4Q", head, 8)
            if size != 104 or attr_size < 16 or not 0 < attrs_size <= 1 << 20:
                return None
            attrs = _pread(f.fileno(), attrs_size, attrs_at)
    except (OSError, struct.error):
        return None
    if len(attrs) != attrs_size or attrs_size % attr_size:
        return None
    return head, attrs, attr_size


def build_ids(fd: int, head: bytes, features_at: int) -> list:
    """The HEADER_BUILD_ID feature's entries, each (misc, build-id bytes, file name bytes)
    (tools/perf/util/header.c: build_id_event records after the data section, which ends
    at ``features_at``); [] when the header has none."""
    bits = int.from_bytes(head[72:104], "little")
    if not bits >> HEADER_BUILD_ID & 1:
        return []
    index = bin(bits & ((1 << HEADER_BUILD_ID) - 1)).count("1")
    at, size = struct.unpack("<2Q", _pread(fd, 16, features_at + 16 * index))
    if size > 16 << 20:
        return []
    buf = _pread(fd, size, at)
    out = []
    i = 0
    while i + 36 <= len(buf):  # header (type, misc, size), pid, build id[24], file name
        _, misc, n = struct.unpack_from("<IHH", buf, i)
        if n < 36:
            break
        length = buf[i + 32] if misc & PERF_RECORD_MISC_BUILD_ID_SIZE else 20
        out.append((misc, buf[i + 12:i + 12 + min(length, 20)],
                    buf[i + 36:i + n].split(b"\0", 1)[0]))
        i += n
    return out


def _pread(fd: int, n: int, at: int) -> bytes:
    """os.pread, or b"" (nothing there) at an offset no file has: a damaged header's
    offsets are 64-bit and os.pread takes at most 2^63 - 1 (OverflowError above)."""
    return os.pread(fd, n, at) if at < 1 << 63 else b""
