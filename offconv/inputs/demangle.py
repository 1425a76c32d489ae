"""perf.data names demangled by offconv, once, after the parse, as perf would have printed them.

perf script demangles every symbol of every C++ or Rust dso it loads, when it loads it:
node's 110k symbols, libLLVM's, cc1plus's, although a recording's callchains name a few
thousand of them (what offconv's way gains: the table of mechanisms in docs/architecture.md).
So a perf.data of samples (no tracepoints: offconv.inputs.perf_data.reader decides) is
converted with ``perf script --no-demangle``: the parser keeps the mangled names it meets
and notes each frame it makes from one (offconv.inputs.mangled.note, into
``perf_script.frames.MANGLED``); when the input is summed, ``apply`` demangles the noted
names with one ``c++filt -p -i`` run, makes each such frame again from the line perf would
have printed, and re-keys the stacks (stacks that then become one are added up, in
first-seen order, as the serial parse would have met them).

perf demangles a name (tools/perf/util/symbol-elf.c, ``demangle_sym``) only in a user-space
ELF dso (``mangled.perf_demangles``) -- never a kernel symbol, a module's, or a JIT's
perf-PID.map -- with ``bfd_demangle(name, DMGL_NO_OPTS)``: libiberty's ``cplus_demangle``
without parameter lists or implementation details (what ``c++filt -p -i`` does to a word of
letters, digits, ``_``, ``$`` and ``.``), with any ``@`` suffix (``@plt``,
``@@GLIBCXX_3.4``) put back after the demangled name; else as OCaml (``camlModule__...``)
or as a Java signature. The result must be the text perf prints, byte for byte: wherever
this module cannot be sure of it (an OCaml or Java-signature name, a Rust name left hashed,
c++filt failing), ``apply`` raises ``Retry`` and offconv.run.pipeline converts the input
again with perf's own demangling."""
from __future__ import annotations

import re
import subprocess
from itertools import chain
from typing import Optional

from offconv.inputs.mangled import CANDIDATE
from offconv.inputs.perf_data.spawn import cxxfilt

_WORD = re.compile(r"[A-Za-z0-9_.$]+")  # one c++filt word: demangled as cplus_demangle does
# a Rust name perf would demangle again (util/demangle-rust.c, rust_is_mangled: a "::h" and
# 16 hex digits at the end), or left in its legacy mangled form
_RUST_HASHED = re.compile(r"(?:::h|17h)[0-9a-f]{16}E?$")
_OCAML = re.compile(r"caml[A-Z]")                # perf's ocaml_is_mangled
_JAVA_SIGNATURE = re.compile(r"\((?:\[*(?:[BCDFIJSZ]|L[\w/$]+;))*\)")  # (Ljava/lang/String;I)


class Retry(Exception):
    """The names cannot be demangled here exactly as perf does: let perf demangle them."""


def apply(sums, registry: dict, addrs: bool, exe: Optional[str] = None) -> None:
    """The noted frames of ``sums`` (an aggregate.Sums) made as from perf's demangled lines;
    Retry where that result cannot be known here."""
    todo: dict = {}   # frame -> (the word c++filt demangles, the suffix put back)
    for frame, raw in registry.items():
        if not raw:
            raise Retry(f"a frame line of an unknown shape in {frame.module}")
        if raw.startswith(CANDIDATE):
            word, at, suffix = raw.partition("@")
            if not _WORD.fullmatch(word):
                raise Retry(f"a name c++filt may read otherwise: {raw}")
            todo[frame] = (word, at + suffix)
        elif _OCAML.match(raw) or _JAVA_SIGNATURE.search(raw):
            raise Retry(f"a name perf demangles as OCaml or Java: {raw}")
    if not todo:
        return
    names = run(sorted({w for w, _ in todo.values()}), exe or cxxfilt())
    from offconv.inputs.perf_script.frames import parse_frame
    mapping: dict = {}
    for frame, (word, suffix) in todo.items():
        name = names[word]
        if name == word:
            continue
        if _RUST_HASHED.search(name):
            raise Retry(f"a name perf demangles again as Rust: {name}")
        # the line perf prints (its address and offset change no frame without --addrs)
        new = parse_frame(f"0 {name}{suffix} ({frame.module})", addrs)
        if new != (frame,):
            mapping[frame] = new
    if mapping:
        sums.counts = remap(sums.counts, mapping)
        if sums.before is not None:
            sums.before = remap(sums.before, mapping)


def run(words: list, exe: Optional[str]) -> dict:
    """word -> ``c++filt -p -i``'s line for it, in one run."""
    if exe is None:
        raise Retry("c++filt is not installed")
    try:
        r = subprocess.run([exe, "-p", "-i"], input="\n".join(words) + "\n", capture_output=True,
                           text=True, errors="surrogateescape")
    except OSError as e:
        raise Retry(f"c++filt: {e}") from None
    got = r.stdout.split("\n")
    if r.returncode != 0 or len(got) != len(words) + 1 or got[-1]:
        raise Retry("c++filt gave another number of lines")
    return dict(zip(words, got))


def remap(counts: dict, mapping: dict) -> dict:
    """stack -> weight with each frame of ``mapping`` replaced by its frames; stacks that
    become equal are added up at the first one's place."""
    one = {f: new[0] for f, new in mapping.items() if len(new) == 1}  # the usual: one frame
    other = mapping.keys() - one.keys()
    same = one.get
    keys = []
    for key in counts:
        if other and not other.isdisjoint(key):
            key = tuple(chain.from_iterable(mapping.get(f, (f,)) for f in key))
        else:
            key = tuple(map(same, key, key))  # one C loop: each frame, or the one it becomes
        keys.append(key)
    out = dict(zip(keys, counts.values()))
    if len(out) == len(keys):  # no two stacks became one
        return out
    out = {}
    get = out.get
    for key, w in zip(keys, counts.values()):
        had = get(key)
        out[key] = w if had is None else had + w
    return out


class collecting:
    """While parsing a perf script --no-demangle output: perf_script.frames.parse_frame notes
    the frames ``apply_noted`` will make again (in a forked part too: the child inherits it)."""

    def __enter__(self):
        from offconv.inputs.perf_script import frames
        frames.MANGLED = {}
        return self

    def __exit__(self, *exc):
        from offconv.inputs.perf_script import frames
        frames.MANGLED = None


def apply_noted(sums, addrs: bool) -> None:
    """``apply`` with the frames noted so far, if names are being collected; else nothing."""
    from offconv.inputs.perf_script import frames
    if frames.MANGLED is not None:
        apply(sums, frames.MANGLED, addrs)
