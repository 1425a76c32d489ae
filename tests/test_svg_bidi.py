"""Issue 42 item 5: a frame or comm name with bidi controls cannot reorder the flame
graph's text around it. ``write.isolate`` wraps such a name in FSI ... PDI, opened once
more than the name's own PDIs could close and closed as often as the name could leave
open; flamegraph.js reads the name back from its tooltip (``unisolate``) and wraps a
label it cuts the same way (``isolate``).

The bidi state is followed here as the Unicode Bidirectional Algorithm's rules X2-X6a
keep it (the directional status stack: embeddings, overrides and isolates; a PDF closes
an embedding only inside the current isolate; a PDI closes everything back to its
isolate, and is ignored with none open; the depth limit of 125 is not reached by these
names). The property: while the name is read, one of the wrapper's own isolates is still
open (so nothing in the name reaches the text outside it), and after it nothing is."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offconv.outputs.svg.write import isolate

OPENS = "\u2066\u2067\u2068"            # LRI, RLI, FSI
EMBEDS = "\u202a\u202b\u202d\u202e"     # LRE, RLE, LRO, RLO
PDF, PDI = "\u202c", "\u2069"
CONTROLS = OPENS + EMBEDS + PDF + PDI + "\u061c\u200e\u200f"


def stack_after(text: str, stack: list) -> list:
    """The directional status stack after ``text``: entries 'iso:<who>' and 'emb'."""
    for c in text:
        if c in OPENS:
            stack.append("iso:name")
        elif c in EMBEDS:
            stack.append("emb")
        elif c == PDF:
            if stack and stack[-1] == "emb":
                stack.pop()
        elif c == PDI:
            if any(e.startswith("iso") for e in stack):
                while not stack.pop().startswith("iso"):
                    pass
    return stack


def check_contained(name: str) -> None:
    wrapped = isolate(name)
    if not set(name) & set(CONTROLS):
        assert wrapped == name       # a plain name is written as it is
        return
    lead = name.count(PDI) + 1          # the wrapper's FSIs, then the name, then PDIs only
    assert wrapped[:lead] == "\u2068" * lead and wrapped[lead:lead + len(name)] == name
    assert set(wrapped[lead + len(name):]) == {PDI}
    stack = ["iso:ours"] * lead
    for k in range(len(name)):
        stack_after(name[k], stack)
        assert stack and stack[0] == "iso:ours", (name, k, stack)  # the wrapper still holds it
    assert stack_after(wrapped[lead + len(name):], stack) == []     # nothing left open after


NAMES = [
    "bidi\u202eevil",                       # an override never closed
    "bidi\u202eevil\u2066iso\u2069\u200f",  # the hostile fixture's frame
    "\u2069\u2069\u202eafter two stray PDIs",
    "\u2067\u2067\u2067three isolates opened",
    "\u202b\u202d\u202c\u202c\u202c\u2069",
    "\u2068starts like the wrapper\u2069",
    "plain name", "",
]


@pytest.mark.parametrize("name", NAMES)
def test_an_isolated_name_reorders_nothing_outside_it(name):
    check_contained(name)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(CONTROLS) + list("ab ;(")), max_size=30))
def test_any_mix_of_bidi_controls_stays_inside_its_isolate(name):
    check_contained(name)


def test_the_exact_wrapping():
    assert isolate("a\u202eb") == "\u2068a\u202eb\u2069"
    # two PDIs of its own: opened three times; with one opening too: closed 2 + 1 + 1 times
    assert isolate("\u2069\u2066x\u2069") == "\u2068" * 3 + "\u2069\u2066x\u2069" + "\u2069" * 4


def _js_functions() -> str:
    """flamegraph.js's BIDI, count, isolate and unisolate, for node."""
    js = resources.files("offconv.outputs.svg").joinpath("flamegraph.js").read_text("utf-8")
    parts = [re.search(r"^var BIDI = .*?;$", js, re.M).group(0)]
    for fn in ("count", "isolate", "unisolate"):
        parts.append(re.search(r"^function %s\(.*?^}$" % fn, js, re.M | re.S).group(0))
    return "\n".join(parts)


def test_flamegraph_js_reads_back_and_wraps_as_the_writer_does():
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node not installed (CI installs it with npm)")
    names = NAMES + ["\u2069" * 5 + "x" + "\u2068" * 3, "\u061cmark only", "ctl ; (x)"]
    script = _js_functions() + """
const names = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(names.map((n) => [isolate(n), unisolate(isolate(n))])));
"""
    p = subprocess.run([node, "-e", script], input=json.dumps(names), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert [w for w, _ in got] == [isolate(n) for n in names]
    assert [back for _, back in got] == names
