"""perf script's symbol names demangled here, as perf would have printed them.

perf demangles every symbol of every C++ or Rust dso it loads, at load time: node's
tens of thousands of V8 symbols are demangled although a recording's callchains name a few
hundred of them. On the benchmark recording (20 s, ``-a``, with node) that is 0.15 s of
perf script's 0.85 s, and perf script is most of a perf.data conversion. So offconv runs
``perf script --no-demangle``: each 1 MiB read of its output is searched for names not met
before, which one ``c++filt -p -i`` process (started once) demangles, a line per name; the
parser then looks a name up when it makes a frame from a line it has not seen (a few
thousand times, not once per frame line). perf calls libiberty's ``cplus_demangle`` with no
options (no parameter lists, no implementation details), which is what ``c++filt -p -i``
does to a name of letters, digits, ``_``, ``$`` and ``.``.

The result must be the text perf would have printed, byte for byte; wherever this module
cannot be sure of that, it raises ``Retry`` and the command runs again with perf's own
demangling (offconv.cli). perf demangles a name (tools/perf/util/symbol-elf.c,
``demangle_sym``) only in a user-space ELF dso -- never a kernel symbol, a module's, or a
JIT's perf-PID.map -- with ``cplus_demangle`` (C++ and Rust: names that start ``_Z``,
``_R`` or ``_GLOBAL_``), else as OCaml (``caml...``) or Java (a name holding ``)``); the
last two mean Retry. A PLT entry is printed as the demangled name plus ``@plt``."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

_NAMES = re.compile(rb" (_[ZR][\w.$@]*|_GLOBAL_[\w.$@]*)")  # what cplus_demangle may demangle
_WORD = re.compile(r"[A-Za-z0-9_.$]+")  # one c++filt word: demangled as cplus_demangle does
_CANDIDATE = ("_Z", "_R", "_GLOBAL_")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_RUST_HASHED = re.compile(r"17h[0-9a-f]{16}E$")  # perf's rust_is_mangled
_PERF_MAP = re.compile(r"perf-\d+\.map")
_MODULE = re.compile(r"\.ko(\.[a-z]+)?$")


class Retry(Exception):
    """The names cannot be demangled here exactly as perf does: let perf demangle them."""


def cxxfilt() -> str | None:
    """The c++filt to use, or None: then perf demangles (also when $OFFCONV_PERF_DEMANGLE
    is set, which tests and users can use to compare)."""
    if os.environ.get("OFFCONV_PERF_DEMANGLE"):
        return None
    return shutil.which("c++filt")


def perf_demangles(dso: str) -> bool:
    """Whether perf demangles the symbols of this dso (as printed in a frame's parentheses)."""
    if dso.startswith("["):
        return dso == "[vdso]"  # kernel, modules, [unknown], [JIT] tid N: never
    base = dso.rpartition("/")[2]
    return not (_PERF_MAP.fullmatch(base) or _MODULE.search(base))


class Names:
    """Mangled name -> the name perf prints, for the frames of one perf script --no-demangle
    run. ``learn`` is given the text before the parser reads it; ``line`` turns a frame
    line into the line perf would have printed."""

    def __init__(self, exe: str, rust: bool = False):
        self.exe = exe
        self.rust = rust  # --demangle too (legacy Rust names, after perf's demangling)
        self._names: dict = {}
        self._proc = None
        self._dsos: dict = {}

    def learn(self, data: bytes) -> None:
        if b" _" not in data:
            return
        new = set(_NAMES.findall(data)).difference(self._names)
        if new:
            self._demangle(sorted(new))

    def line(self, text: str) -> str:
        """A frame line (or a header that ends with ip, symbol and dso) as perf prints it
        with its demangling on; Retry when that cannot be known here."""
        from .perf_script import split_frame
        pc, rawfunc, module = split_frame(text)
        user = self._dsos.get(module)
        if user is None:
            user = self._dsos[module] = perf_demangles(module)
        if not user:
            return text
        func = _OFFSET.sub("", rawfunc)
        if func.startswith(_CANDIDATE):
            got = self._names.get(func)
            if got is None:
                raise Retry(f"a name not demangled here: {func}")
            if got == func:
                return text
            at = text.find(func, text.find(pc) + len(pc)) if pc else -1
            if at < 0:
                raise Retry(f"a frame line of an unknown shape: {text.strip()}")
            return text[:at] + got + text[at + len(func):]
        if ")" in func or func.startswith("caml"):
            raise Retry(f"a name perf demangles as Java or OCaml: {func}")
        return text

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc.stdin.close()
            self._proc.stdout.close()
            self._proc = None

    def _demangle(self, raw: list) -> None:
        words, keys, plt = [], [], []
        for name in raw:
            key = name.decode("utf-8", "replace")
            word = key[:-4] if key.endswith("@plt") else key
            if not _WORD.fullmatch(word):  # a symbol version (name@@V): perf's result unknown here
                self._names[key] = None
                continue
            words.append(word)
            keys.append(key)
            plt.append(word is not key)
        if not words:
            return
        try:
            if self._proc is None:
                self._proc = subprocess.Popen([self.exe, "-p", "-i"], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self._proc.stdin.write("\n".join(words).encode() + b"\n")
            self._proc.stdin.flush()
            got = [self._proc.stdout.readline() for _ in words]
        except OSError as e:
            raise Retry(f"c++filt: {e}") from None
        for key, word, p, g in zip(keys, words, plt, got):
            if not g.endswith(b"\n"):
                raise Retry("c++filt ended early")
            name = g[:-1].decode("utf-8", "replace")
            if name != word and _RUST_HASHED.search(name):
                raise Retry(f"a name perf demangles again as Rust: {name}")
            self._names[key] = name + "@plt" if p else name


class Demangled:
    """perf script --no-demangle's stdout, read through: each read ends at a line's end
    and its names are given to ``names.learn`` before the parser sees them."""

    def __init__(self, raw, names: Names):
        self._raw = raw
        self.names = names
        self._carry = b""

    def read(self, size: int = -1) -> bytes:
        while True:
            data = self._raw.read(size)
            if not data:
                out, self._carry = self._carry, b""
                if out:
                    self.names.learn(out)
                return out
            if self._carry:
                data = self._carry + data
            k = data.rfind(b"\n")
            if k < 0:
                self._carry = data
                continue
            self._carry = data[k + 1:]
            data = data[:k + 1]
            self.names.learn(data)
            return data

    def fileno(self):
        return self._raw.fileno()

    def close(self):
        self.names.close()
        self._raw.close()
