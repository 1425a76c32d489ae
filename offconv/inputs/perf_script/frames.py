"""Callchain lines of perf script -> frames: one ``addr sym[+off] (dso)`` line gives the
frames it names, root-first (``parse_frame``), named as stackcollapse-perf.pl names them
except where it is known to be wrong (``clean_name``), each of the kind its dso says
(``frame_kind``). ``is_srcline`` tells the source lines of ``-F +srcline``, which are not
frames.

While ``MANGLED`` is a dict (``offconv.inputs.demangle.collecting``: perf script
--no-demangle's output is being parsed), each frame made from a name perf would have
printed demangled is noted in it (``offconv.inputs.mangled.note``)."""
from __future__ import annotations

import re
from typing import Optional

from offconv.model.records import INLINE, JIT, KERNEL, USER, Frame
from offconv.inputs.mangled import note as demangle_note

# a callchain line as perf prints it (header.padded_header tells it from a header)
_FRAME_LIKE = re.compile(r"^[0-9a-fA-F]+\s+.*\(.*\)$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_GO_METHOD = re.compile(r"\.\(.*\)\.")
_JITDUMP = re.compile(r"(^|/)jitted-\d+-\d+\.so$")
_PERF_MAP = re.compile(r"/tmp/perf-\d+\.map$")


def clean_name(func: str) -> str:
    """stackcollapse-perf.pl's tidy_generic, without its known bugs: ';' becomes ':',
    quotes are dropped, and the argument list is cut at the first '(' -- but not inside
    C++ template brackets or lambda braces (``std::function<int (int, int)>::operator()``),
    not in ``operator()``, ``(anonymous namespace)``, nor in Go methods (``net/http.(*Client).Do``)."""
    func = func.replace(";", ":")
    if "(" in func and not _GO_METHOD.search(func):
        func = _cut_args(func)
    return func.replace('"', "").replace("'", "")


def _cut_args(func: str) -> str:
    depth = 0
    i = 0
    n = len(func)
    while i < n:
        c = func[i]
        if c in "<{":
            depth += 1
        elif c in ">}" and depth > 0:
            if not (c == ">" and func[i - 1:i] == "-"):  # '->' is not a bracket
                depth -= 1
        elif c == "(" and depth == 0:
            if func.startswith("(anonymous namespace)", i):
                i += len("(anonymous namespace)")
                continue
            if func.endswith("operator", 0, i) and func.startswith("()", i):
                i += 2
                continue
            return func[:i]
        i += 1
    return func


_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_ESCAPE = re.compile(r"\$(SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-fA-F]{1,6})\$")
_RUST_CHARS = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")",
               "C": ","}


def _rust_char(m) -> str:
    code = m.group(1)
    if code in _RUST_CHARS:
        return _RUST_CHARS[code]
    try:
        return chr(int(code[1:], 16))
    except ValueError:  # pragma: no cover - the regex keeps it in range
        return m.group(0)


def rust_demangle(name: str) -> str:
    """A legacy-mangled Rust symbol as older perf leaves it
    (``GcBox$LT$T$GT$::new::_$u7b$$u7b$closure$u7d$$u7d$::h2ed0674a1c3dc9fa``) ->
    ``GcBox<T>::new::_{{closure}}``: the ``::h`` + 16 hex hash dropped, ``$..$`` escapes
    and ``..`` (``::``) decoded as rustc-demangle does, and a leading ``_$`` loses its
    ``_``. Other names are returned unchanged."""
    hashed = _RUST_HASH.search(name)
    if hashed is None and "$" not in name:
        return name
    if hashed is not None:
        name = name[:hashed.start()]
    if name.startswith("_$"):
        name = name[1:]
    name = _RUST_ESCAPE.sub(_rust_char, name).replace("..", "::")
    return name.replace(";", ":")


def frame_kind(module: str) -> str:
    if module.startswith("["):
        return USER if module == "[unknown]" else KERNEL
    base = module.rpartition("/")[2]
    if base.startswith("vmlinux") or base.endswith(".ko") or base.endswith(".ko.xz") or base.endswith(".ko.zst"):
        return KERNEL
    if _PERF_MAP.search(module) or _JITDUMP.search(module):
        return JIT
    return USER


def split_frame(text: str) -> tuple:
    """A callchain line -> (addr, symbol as printed, dso); the dso is in the line's last
    parentheses (it may hold spaces and parentheses: ``([JIT app cache])``,
    ``(/memfd:x (deleted))``)."""
    s = text.strip()
    pc, _, rest = s.partition(" ")
    module = ""
    if rest.endswith(")"):
        k = rest.rfind("(")
        if rest.find(")", k) != len(rest) - 1:  # parentheses inside the dso: count them
            k = _open_paren(rest)
        if k == 0:
            module, rest = rest[1:-1], ""
        elif k > 0 and rest[k - 1] in " \t":
            module, rest = rest[k + 1:-1], rest[:k]
    return pc, rest.strip(), module


def _open_paren(text: str) -> int:
    """Index of the '(' that the final ')' closes: a dso may hold parentheses itself,
    as in ``(/memfd:sealed-91 (deleted))``."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return i
    return -1


_HEX_DIGITS = "0123456789abcdefABCDEF"
_KINDS: dict = {}  # dso -> frame_kind(dso): a few hundred dsos, millions of frame lines


# "addr sym[+0xoff] (dso)" with nothing in it that parse_frame treats specially: no
# parentheses in sym or dso, no leading '[', '(' or '+', no white space before the offset
# or " (", and (checked after the match) no '->', quotes or other '+0x' -- the usual line
_PLAIN_FRAME = re.compile(r"\s*[0-9a-fA-F]+ ([^\s(\[+](?:[^(]*?[^\s(])??)(?:\+0x[0-9a-fA-F]+)? "
                          r"\(([^()]+)\)\s*$")


# perf script --no-demangle's output is being parsed (demangle.collecting): frame -> the
# symbol it was made from, for each frame whose name perf would have printed demangled
MANGLED: Optional[dict] = None


def parse_frame(text: str, addrs: bool, demangle: bool = False) -> tuple:
    """One callchain line -> its frames in root-first order (``a->b`` Java inlining gives
    several; a ``(process name)`` pseudo-frame gives none)."""
    m = _PLAIN_FRAME.match(text)
    if m is not None:
        func, module = m.groups()
        if "->" not in func and "+0x" not in func and '"' not in func and "'" not in func:
            raw = func
            if ";" in func:
                func = func.replace(";", ":")
            if demangle:
                func = rust_demangle(func)
            kind = _KINDS.get(module)
            if kind is None:
                kind = _kind(module)
            out = (Frame(func, module, kind),)
            if MANGLED is not None:
                demangle_note(MANGLED, out, raw, module)
            return out
    return _parse_frame(text, addrs, demangle)


def _kind(module: str) -> str:
    kind = frame_kind(module)
    if len(_KINDS) < 100_000:
        _KINDS[module] = kind
    return kind


def _parse_frame(text: str, addrs: bool, demangle: bool) -> tuple:
    pc, rawfunc, module = split_frame(text)
    rawfunc = rawfunc or " "
    k = rawfunc.rfind("+0x")  # _OFFSET without the regex: "+0x" and hex digits to the end
    if k >= 0 and k + 3 < len(rawfunc) and not rawfunc[k + 3:].strip(_HEX_DIGITS):
        rawfunc = rawfunc[:k]
    if rawfunc.startswith("("):
        return ()
    kind = _KINDS.get(module)
    if kind is None:
        kind = _kind(module)
    out = []
    for i, func in enumerate(rawfunc.split("->")):
        if func == "[unknown]":
            if module and module != "[unknown]":
                base = module.rpartition("/")[2]
                if base.endswith(" (deleted)"):
                    base = base[:-10]
                func = f"[{base} <{pc}>]" if addrs else f"[{base}]"
            elif addrs:
                func = f"[unknown <{pc}>]"
        func = clean_name(func)
        if demangle:
            func = rust_demangle(func)
        out.append(Frame(func, module, INLINE if i else kind))
    frames = tuple(out)
    if MANGLED is not None:
        demangle_note(MANGLED, frames, rawfunc, module)
    return frames


def is_srcline(line: str) -> bool:
    """A source line that ``perf script -F +srcline`` prints under a frame line, after
    two spaces (perf 6.1's ``map__fprintf_srcline`` with the prefix "\\n  "), not a frame:
    ``  write.c:26``, ``  libc.so.6[f8350]``, ``  [kernel.kallsyms][ffffffff816d1a12]``.
    Told from a frame line indented with spaces (older perfs) by its first word, which is
    not a hex address; a padded header (the same test would take it) is to be ruled out
    first. stackcollapse-perf.pl without --srcline ignores these lines, and so does
    offconv."""
    if line[:2] != "  " or line[2:3] in ("", " ", "\t"):
        return False
    return bool(line[2:].split(None, 1)[0].strip(_HEX_DIGITS))
