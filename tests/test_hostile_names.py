"""Issue 42 item 5, hostile names stay inert: one synthetic perf script sched recording
whose comms and frame names hold markup (``<script>``, ``"><svg onload=...>``, ``]]>``),
control characters (NUL, ESC sequences, CR, NEL, U+2028), bidi overrides, ``;``, an
invalid UTF-8 byte and 100 KB names, run through the CLI to every output: folded (no
frame and no line made by a name), the flame graph and timeline SVGs (well-formed, only
offconv's script and handlers, names escaped; in Chromium no dialog, search finds them),
speedscope, pprof and Perfetto (names kept exactly), and the report (a name cannot end,
rewrite or reorder a line: escaped) and its JSON (kept exactly).

perf script text cannot carry a newline inside a name; the names keep what
stackcollapse-perf.pl's tidy_generic leaves of a symbol (offconv.inputs.perf_script.frames
.clean_name: quotes dropped, the argument list cut at '(', ';' as ':'), and the folded
thread frame is the comm with ' ' and ';' as '_' and ':' (offconv.model.naming)."""
from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import unicodedata
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner
from perf_text import switch, wake

from offconv.cli import app

ROOT = Path(__file__).resolve().parents[1]
SVG_CHECK = Path(os.environ.get("OFFCONV_SHARED") or ROOT.parent / "shared") / "tools" / "svg-check"
NS = "{http://www.w3.org/2000/svg}"

BIG_FRAME = "big_" + "x" * 100_000 + "_end"
BIG_COMM = "C" * 100_000
CONTROLS = "ctl\x00\x01\x1b[31mred\x7f\x0b\x0c\x1c\x85\u2028end"   # NUL, ESC, DEL, VT, FF, FS, NEL, LS
# (symbol as perf script prints it, the frame name offconv keeps)
FRAMES = [
    ("<script>alert`1`</script>", "<script>alert`1`</script>"),
    ('"><svg onload=alert`1`>', "><svg onload=alert`1`>"),            # quotes dropped
    ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),  # '(' inside <..>: kept
    ("x onerror=alert(document.cookie)", "x onerror=alert"),            # the arguments cut
    ("cdata]]><x>", "cdata]]><x>"),
    (CONTROLS, CONTROLS),
    ("bidi\u202eevil\u2066iso\u2069\u200f", "bidi\u202eevil\u2066iso\u2069\u200f"),
    ("semi;colon;frame", "semi:colon:frame"),                         # ';' is the separator
    ("cr\rframe", "cr\rframe"),
    ("amp&lt;&#x41;", "amp&lt:&#x41:"),
    ("bad\udcffutf8", "bad\ufffdutf8"),                               # the byte 0xff: U+FFFD
    (BIG_FRAME, BIG_FRAME),
    ("emoji\U0001F600", "emoji\U0001F600"),
]
COMMS = ["<script>alert`1`</script>", 'my "><svg onload=alert`1`> app', "c]]>d", "x=y",
         "c\x01\x1b[2Jtl", "bidi\u202eevil", "se;mi co;lon", "cr\rcomm", "a ==> b", BIG_COMM,
         "tab\tx", "nel\x85u2028\u2028", "sink"]
WAKER = "<svg/onload=alert`2`>"
TID0, WAKER_TID = 100, 900
NS_PER_US = 1000


def _stack_of(i: int) -> list:
    """Thread i's frames (symbol, kept name): FRAMES[i]; the last thread ('sink') all of them."""
    return FRAMES if COMMS[i] == "sink" else [FRAMES[i]]


def recording() -> bytes:
    """Thread i (tid 100 + i, CPU i) runs 1 ms, sleeps (S) 2 ms + i µs with its hostile
    frames between main and __schedule, is woken by WAKER on CPU 15, waits 500 - i µs for
    its CPU and runs to the end."""
    out = []
    for i, comm in enumerate(COMMS):
        tid, t = TID0 + i, 1_000_000_000 + 1000 * i
        frames = ("__schedule+0x1 ([kernel.kallsyms])",
                  *(f"{sym}+0x10 (/opt/hostile/lib.so)" for sym, _ in _stack_of(i)), "main+0x2 (/bin/w)")
        idle = f"swapper/{i}"
        out += [(t, switch(t, idle, 0, "R", comm, tid, cpu=i, frames=())),
                (t + 1000, switch(t + 1000, comm, tid, "S", idle, 0, cpu=i, frames=frames)),
                (t + 3000 + i, wake(t + 3000 + i, WAKER, WAKER_TID, comm, tid, cpu=15)),
                (t + 3500, switch(t + 3500, idle, 0, "R", comm, tid, cpu=i, frames=()))]
    return "".join(text for _, text in sorted(out, key=lambda e: e[0])).encode("utf-8", "surrogateescape")


def thread_label(comm: str) -> str:
    return comm.replace(" ", "_").replace(";", ":")


def folded_stacks() -> dict:
    """The folded output's lines as (frames root first) -> µs: blocked 2000 + i, run queue
    500 - i, the same stack (the folded output has no state frame)."""
    return {(thread_label(c), "main", *reversed([n for _, n in _stack_of(i)]), "__schedule"): 2500
            for i, c in enumerate(COMMS)}


KEPT = [n for _, n in FRAMES]
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def in_xml(name: str) -> str:
    """What an XML parser reads back of a name the SVG wrote: characters XML 1.0 does not
    allow are U+FFFD (offconv.outputs.svg.write.escape)."""
    return _NOT_XML.sub("\ufffd", name)


def in_flame(name: str) -> str:
    """How the flame graph shows a name: in_xml, and as a bidi isolate when it holds bidi
    controls (offconv.outputs.svg.write.isolate)."""
    if not BIDI & set(name):
        return in_xml(name)
    p, i = name.count("\u2069"), sum(map(name.count, "\u2066\u2067\u2068"))
    return "\u2068" * (p + 1) + in_xml(name) + "\u2069" * (p + i + 1)


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> dict:
    """Every output of the recording, as bytes, by name."""
    d = tmp_path_factory.mktemp("hostile")
    src = d / "hostile.perf-script.txt"
    src.write_bytes(recording())
    files = {"folded": "h.folded", "svg": "h.svg", "speedscope": "h.speedscope.json",
             "pprof": "h.pb.gz", "timeline": "h.timeline.svg", "perfetto": "h.perfetto-trace"}
    res = {"src": src, "dir": d}
    for key, name in files.items():
        run(src, "-o", d / name)
        res[key] = (d / name).read_bytes()
    res["report"] = run("report", src).stdout_bytes
    res["json"] = run("report", src, "--json").stdout_bytes
    return res


def run(*args):
    """The CLI in this process (a fifth of the time of `python -m offconv`), its stdout as
    bytes (text would have read a name's CR as a line end)."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (r.output[-2000:], r.exception)
    return r


# -- folded ------------------------------------------------------------------------------

def test_folded_names_make_no_frame_and_no_line(out):
    text = out["folded"].decode("utf-8")
    lines = text.split("\n")
    assert lines.pop() == ""
    want = folded_stacks()
    assert len(lines) == len(want) == len(COMMS)
    got = {}
    for line in lines:
        stack, _, weight = line.rpartition(" ")
        got[tuple(stack.split(";"))] = int(weight)
    assert got == want   # frames per line, names and weights exactly
    assert sorted(len(s) for s in got) == [4] * (len(COMMS) - 1) + [3 + len(FRAMES)]
    # the CR, NEL, U+2028, VT, FF and FS of names are in it as they were (lines end at '\n'
    # only, as for flamegraph.pl and inferno; str.splitlines would cut at each of them)
    assert "\ncr\rcomm;main;" in text and ";cr\rframe;" in text
    assert len(text.splitlines()) > len(lines)


def test_folded_output_reads_back_the_same(out):
    """offconv's folded reader cuts lines at '\\n' only: the odd bytes stay in their names."""
    again = out["dir"] / "again.folded"
    run(out["dir"] / "h.folded", "-o", again)
    assert again.read_bytes() == out["folded"]


# -- the SVGs ----------------------------------------------------------------------------

def _parse(data: bytes):
    return ET.fromstring(data)   # well-formed XML 1.0, or this raises


def _asset(package: str, name: str) -> str:
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


def test_flame_svg_has_only_its_own_script_and_handler(out):
    root = _parse(out["svg"])
    tags = {e.tag.removeprefix(NS) for e in root.iter()}
    assert tags <= {"svg", "defs", "linearGradient", "stop", "style", "script", "rect", "text", "g", "title"}
    scripts = root.findall(f".//{NS}script")
    assert len(scripts) == 1 and scripts[0].get("type") == "text/ecmascript"
    assert scripts[0].text.endswith(_asset("offconv.outputs.svg", "flamegraph.js"))
    assert scripts[0].text.startswith("\nvar fg_conf = {") and scripts[0].text.count("\n") \
        == _asset("offconv.outputs.svg", "flamegraph.js").count("\n") + 2
    handlers = [(e.tag.removeprefix(NS), k, v) for e in root.iter() for k, v in e.attrib.items()
                if k.lower().startswith("on")]
    assert handlers == [("svg", "onload", "init(evt)")]


def test_flame_svg_titles_hold_every_name_escaped(out):
    raw = out["svg"].decode("utf-8")
    for bad in ("<script>alert", "<svg onload", "<svg/onload", "<img ", "<x>", "\x00", "\x1b", "\r"):
        assert bad not in raw.split("<svg ", 1)[1], repr(bad)   # (past the root's own tag)
    assert "&lt;script&gt;alert`1`&lt;/script&gt;" in raw and "cr&#13;frame" in raw
    root = _parse(out["svg"])
    frames = root.find(f"{NS}g[@id='frames']")
    titles = [g.find(f"{NS}title").text for g in frames]
    names = KEPT + [thread_label(c) for c in COMMS]
    for name in names:
        assert any(t.startswith(in_flame(name) + " (") for t in titles), repr(name[:40])
    # a name with bidi controls is an isolate: FSI x (its PDIs + 1), PDI x (its PDIs and
    # isolate openings + 1), so that its override cannot reorder the " (time, %)" after it
    assert any(t.startswith("\u2068\u2068bidi\u202eevil\u2066iso\u2069\u200f\u2069\u2069\u2069 (")
               for t in titles)
    assert in_xml(CONTROLS) == "ctl\ufffd\ufffd\ufffd[31mred\x7f\ufffd\ufffd\ufffd\x85\u2028end"
    # the 100 KB names: whole in the tooltip, cut to the frame's width with '..' in the label
    for g in frames:
        title, label = g.find(f"{NS}title").text, g.find(f"{NS}text").text or ""
        if title.startswith((BIG_FRAME[:20], BIG_COMM[:20])):
            assert len(title) > 100_000 and len(label) < 200
            assert label == "" or label.endswith("..")


def _tldata(root) -> dict:
    data = [s for s in root.iter(f"{NS}script") if s.get("id") == "tldata"]
    assert len(data) == 1 and data[0].get("type") == "application/json"
    return json.loads(data[0].text)


def test_timeline_svg_has_only_its_own_scripts_and_no_handler(out):
    raw = out["timeline"].decode("utf-8")
    root = _parse(out["timeline"])
    tags = {e.tag.removeprefix(NS) for e in root.iter()}
    assert tags <= {"svg", "title", "style", "script", "rect", "text", "g"}
    scripts = root.findall(f".//{NS}script")
    assert [s.get("id") for s in scripts] == ["tldata", None]
    assert scripts[1].text.strip() == _asset("offconv.outputs.timeline", "timeline.js").strip()
    assert [k for e in root.iter() for k in e.attrib if k.lower().startswith("on")] == []
    # the data: JSON in CDATA, ASCII, with '<', '>' and '&' as \\u escapes: no ']]>', no markup
    head = '<script type="application/json" id="tldata"><![CDATA['
    cdata = raw.split(head, 1)[1].split("]]></script>", 1)[0]
    assert cdata.isascii() and not set(cdata) & set("<>&\r\x00")


def test_timeline_data_keeps_every_name(out):
    d = _tldata(_parse(out["timeline"]))
    lanes = {lane["tid"]: lane["name"] for lane in d["lanes"]}
    assert lanes == {TID0 + i: f"{c} (tid {TID0 + i})" for i, c in enumerate(COMMS)}
    for i, c in enumerate(COMMS):
        detail = "state S; " + ";".join(["main", *reversed([n for _, n in _stack_of(i)]), "__schedule"]) \
            + f"\nwoken by {WAKER} (tid {WAKER_TID})"
        assert detail in d["details"], repr(c[:40])


# -- in Chromium -------------------------------------------------------------------------

def svg_check(path: Path, *args) -> dict:
    if not SVG_CHECK.exists():
        if os.environ.get("OFFCONV_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{SVG_CHECK} not found and OFFCONV_REQUIRE_BROWSER=1")
        pytest.skip(f"{SVG_CHECK} not found")
    p = subprocess.run([str(SVG_CHECK), str(path), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["problems"] == [] and report["ok"] and p.returncode == 0
    assert report["console_errors"] == [] and report["page_errors"] == [] and report["dialogs"] == []
    return report


# (output, search regex, click text, matched %: None for 0 < % < 100, frames highlighted)
BROWSER = {
    # the comm 'bidi..' (1 frame), the frame 'bidi..' of 'se;mi co;lon' and of 'sink' (2
    # each: blocked and run queue): 3 of the 13 threads' 2.5 ms
    "flame-bidi": ("svg", "\u202eevil", "onload", 100 * 3 / len(COMMS), 5),
    # the comm and frame of thread 100 (nested: counted once), the frame of 'sink'
    "flame-script": ("svg", "<script>alert`1`", "cdata]]>", 100 * 2 / len(COMMS), 5),
    # the blocked spans whose stack holds the frame (the timeline searches stacks and wakers)
    "timeline-bidi": ("timeline", "\u202eevil", "Sleeping", None, 2),
    "timeline-100KB": ("timeline", "big_x{100000}_end", "onload", None, 2),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BROWSER))
def test_in_the_browser_no_script_runs_and_search_finds_the_names(out, case):
    key, term, click, pct, frames = BROWSER[case]
    path = out["dir"] / ("h.svg" if key == "svg" else "h.timeline.svg")
    report = svg_check(path, "--search", term, "--click", click,
                       "--screenshot", str(out["dir"] / f"{case}.png"))
    s = report["search"]
    assert s["error"] is None and s["highlighted_frames"] == frames, s
    if pct is None:
        assert 0 < s["matched_percent"] < 100
    else:
        assert s["matched_percent"] == round(pct, 1)
    assert report["click"]["zoomed"] is True


# -- speedscope, pprof, Perfetto: kept exactly -------------------------------------------

STATE_FRAMES = {"[blocked S]", "[run queue]", "[on-CPU]"}


def test_speedscope_keeps_names_exactly(out):
    d = json.loads(out["speedscope"])
    names = [f["name"] for f in d["shared"]["frames"]]
    assert len(names) == len(set(names))
    assert set(names) == set(KEPT) | {"main", "__schedule"} | STATE_FRAMES
    assert {f["file"] for f in d["shared"]["frames"] if f["name"] in KEPT} == {"/opt/hostile/lib.so"}
    want = {f"{c} {TID0 + i}" for i, c in enumerate(COMMS)}
    got = {p["name"] for p in d["profiles"]}
    assert got == want | {w + ": time order" for w in want}


def _pprof(data: bytes):
    from offconv.outputs.proto import profile_pb2
    msg = profile_pb2.Profile()
    msg.ParseFromString(gzip.decompress(data))
    return msg


def test_pprof_keeps_names_exactly(out):
    msg = _pprof(out["pprof"])
    s = msg.string_table
    funcs = {f.id: f for f in msg.function}
    locs = {loc.id: loc for loc in msg.location}
    threads, stacks = set(), {}
    for smp in msg.sample:
        labels = {s[lb.key]: s[lb.str] for lb in smp.label if lb.str}
        threads.add(labels["thread"])
        names = tuple(s[funcs[locs[i].line[0].function_id].name] for i in reversed(smp.location_id))
        stacks[names] = stacks.get(names, 0) + smp.value[0]
    assert threads == set(COMMS)
    assert stacks == {k: v * NS_PER_US for k, v in folded_stacks().items()}
    assert {s[f.system_name] for f in msg.function} >= set(KEPT)


def test_perfetto_keeps_comms_exactly(out):
    """The trace has no stacks (sched events only): the comms are its names."""
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    trace = pb.Trace()
    trace.ParseFromString(out["perfetto"])
    threads = {t.tid: t.name for p in trace.packet if p.HasField("process_tree")
               for t in p.process_tree.threads}
    assert threads == {**{TID0 + i: c for i, c in enumerate(COMMS)}, WAKER_TID: WAKER}
    seen = set()
    for p in trace.packet:
        for e in p.ftrace_events.event:
            kind = e.WhichOneof("event")
            ev = getattr(e, kind)
            if kind == "sched_switch":
                seen |= {(ev.prev_pid, ev.prev_comm), (ev.next_pid, ev.next_comm)}
            else:
                seen.add((ev.pid, ev.comm))
    assert {(t, c) for t, c in seen if t} == {(TID0 + i, c) for i, c in enumerate(COMMS)}


# -- the report --------------------------------------------------------------------------

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def shown(name: str) -> str:
    """A name as the text report shows it (controls, line separators, bidi controls escaped)."""
    def esc(c):
        if c in BIDI or c in "\u2028\u2029" or unicodedata.category(c) == "Cc":
            return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        return c
    return "".join(map(esc, name))


def test_report_text_a_name_cannot_break_rewrite_or_reorder_a_line(out):
    text = out["report"].decode("utf-8")
    bad = {c for c in set(text) if c != "\n" and (unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI)}
    assert bad == set()
    assert len(text.splitlines()) == text.count("\n")
    lines = text.split("\n")
    table = lines.index("Threads (by off-CPU time)")
    rows = lines[table + 2:table + 2 + len(COMMS)]
    for i, c in enumerate(COMMS):   # one row per thread, its comm escaped
        cell = "  " + shown(c) + " "
        mine = [r for r in rows if r.startswith(cell) and f" {TID0 + i} " in r]
        assert len(mine) == 1, repr(cell[:40])
    assert "  c\\x01\\x1b[2Jtl " in text and "  cr\\x0dcomm " in text and "bidi\\u202eevil" in text
    assert shown(CONTROLS) == "ctl\\x00\\x01\\x1b[31mred\\x7f\\x0b\\x0c\\x1c\\x85\\u2028end"
    stacks = [ln.strip() for ln in lines if ln.startswith("  ") and ";__schedule" in ln]
    i = COMMS.index("bidi\u202eevil")   # its frame: CONTROLS
    assert any(s.endswith(f"{shown(thread_label(COMMS[i]))};main;{shown(CONTROLS)};__schedule") for s in stacks)


def test_report_json_keeps_names_exactly(out):
    d = json.loads(out["json"])
    assert {r["tid"]: r["comm"] for r in d["threads"]} == {TID0 + i: c for i, c in enumerate(COMMS)}
    folded = {";".join(k) for k in folded_stacks()}
    top = [s["stack"] for s in d["top_stacks"]]
    assert top and set(top) <= folded
