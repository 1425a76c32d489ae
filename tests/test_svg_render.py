"""The SVG renderer: goldens, defaults per profile, colours, units, escaping, determinism,
and the CLI path (``offconv INPUT -o out.svg``)."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from offconv.model.errors import OffconvError
from offconv.model.records import Profile
from offconv.model.options import FlameOptions, Options
from offconv.outputs.svg.graph import FORMAT, render
from offconv.outputs.svg.write import escape, value_formatter

from test_svg_layout import SVG_FIXTURES, folded_profile, load_fixture

NS = "{http://www.w3.org/2000/svg}"
REPO = Path(__file__).resolve().parents[1]


def svg_text(profile: Profile, **flame) -> str:
    out = io.StringIO()
    render(profile, out, Options(flame=FlameOptions(**flame)))
    return out.getvalue()


def frames_of(text: str):
    """[(title, fill, label)] for every frame <g> of the document (parsing it as XML)."""
    root = ET.fromstring(text.encode("utf-8"))
    group = root.find(f"{NS}g[@id='frames']")
    rows = []
    for g in group:
        rect = g.find(f"{NS}rect")
        rows.append((g.find(f"{NS}title").text, rect.get("fill"), g.find(f"{NS}text").text or ""))
    return rows


def rgb(fill: str):
    return tuple(int(v) for v in re.findall(r"\d+", fill))


GOLDENS = {
    "tiny": ("tiny.folded", "samples", "oncpu", {}),
    "tiny-options": ("tiny.folded", "samples", "oncpu",
                     dict(title="Custom <title> & more", subtitle="sub", width=800, height=20,
                          inverted=True, colors="java", hash=True, notes="n--o<te>",
                          minwidth="2%", fonttype="monospace", fontsize=10)),
    "victim-offcpu": ("victim_a_1.offcpu.folded", "us", "offcpu", {}),
    "victim-wakeup": ("victim_a_1.wakeup.folded", "us", "wakeup", {}),
    "diff": ("diff.folded", "samples", "oncpu", {}),
    "iperf-flamechart": ("iperf.folded", "samples", "oncpu", dict(flamechart=True)),
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(name, golden):
    fixture, unit, mode, flame = GOLDENS[name]
    text = svg_text(folded_profile(load_fixture(fixture), unit, mode), **flame)
    golden(SVG_FIXTURES / f"{name}.svg", text)


def test_format_record():
    assert FORMAT.name == "svg" and FORMAT.suffixes == (".svg",) and FORMAT.render is render


def test_same_input_same_bytes_whatever_the_hash_seed(tmp_path):
    code = ("import sys; sys.path[:0] = sys.argv[1:3];"
            "from test_svg_render import svg_text;"
            "from test_svg_layout import folded_profile, load_fixture;"
            "sys.stdout.write(svg_text(folded_profile(load_fixture('tiny.folded'))))")
    outs = set()
    for seed in ("1", "2", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code, str(REPO), str(REPO / "tests")], env=env,
                                capture_output=True, check=True).stdout)
    assert len(outs) == 1


def test_defaults_oncpu_offcpu_wakeup():
    oncpu = svg_text(folded_profile("t;a 1"))
    assert ">Flame Graph</text>" in oncpu and 'stop-color="#eeeeb0"' in oncpu
    off = svg_text(folded_profile("t;[blocked S];a 1000", "us", "offcpu"))
    assert ">Off-CPU Time Flame Graph</text>" in off and 'stop-color="#e0e0ff"' in off
    assert "(1 ms, 100.00%)" in off
    assert ">Icicle Graph</text>" in svg_text(folded_profile("t;a 1"), inverted=True)
    assert ">Flame Chart</text>" in svg_text(folded_profile("t;a 1"), flamechart=True)
    assert ">Mine</text>" in svg_text(folded_profile("t;a 1"), title="Mine")


def test_offcpu_state_split_runq_and_blocked_hues_differ():
    text = svg_text(folded_profile(load_fixture("victim_a_1.offcpu.folded"), "us", "offcpu"))
    fills = {}
    for title, fill, _ in frames_of(text):
        fills.setdefault(title.rsplit(" (", 1)[0], []).append(rgb(fill))
    for r, g, b in fills["[run queue]"] + fills["[preempted]"]:
        assert r > b + 100, "run-queue towers are warm"
    for r, g, b in fills["[blocked S]"] + fills["[blocked D]"]:
        assert b > r + 50, "blocked towers are blue"


def test_separators_are_grey_and_chain_waker_part_is_aqua():
    text = svg_text(folded_profile(load_fixture("victim_a_1.wakeup.folded"), "us", "wakeup"))
    fills = {title.rsplit(" (", 1)[0]: rgb(fill) for title, fill, _ in frames_of(text)}
    assert fills["--"] == (160, 160, 160)
    r, g, b = fills["try_to_wake_up"]
    assert g > r + 50 and b > r + 50  # aqua
    r, g, b = fills["futex_wait"]
    assert b > g + 50  # blue (target part)
    dash = svg_text(folded_profile("t;-;k 1"))
    assert any(rgb(f) == (200, 200, 200) for _, f, _ in frames_of(dash))


def test_annotations_are_stripped_and_coloured_by_kind():
    rows = frames_of(svg_text(folded_profile(load_fixture("tiny.folded")), colors="java"))
    by = {t.rsplit(" (", 1)[0]: (rgb(f), label) for t, f, label in rows}
    assert "org/app/Main.run" in by and not any("_[" in t for t in by)
    r, g, b = by["org/app/Main.run"][0]
    assert g > r and g > b  # jit: green
    r, g, b = by["fork"][0]
    assert r > g > b  # kernel: orange
    assert by["fork"][1] == "fork"


def test_values_in_the_unit_that_reads_best():
    us = value_formatter("us", 1.0)
    assert us(12400) == "12.4 ms" and us(3_100_000) == "3.1 s" and us(999) == "999 us"
    assert value_formatter("ns", 1.0)(1500) == "1.5 µs"
    assert value_formatter("µs", 1.0)(999) == "999 µs"   # the default for off-CPU profiles
    assert value_formatter("samples", 1.0)(1234567) == "1,234,567 samples"
    assert value_formatter("us", 1000.0)(5) == "5 ms"  # --factor scales what is shown
    text = svg_text(folded_profile("t;a 12400", "us", "blocked"))
    assert "<title>a (12.4 ms, 100.00%)</title>" in text


def test_differential_shows_before_after_delta_and_red_blue():
    rows = frames_of(svg_text(folded_profile(load_fixture("diff.folded"))))
    by = {t.split(" (", 1)[0]: (t, rgb(f)) for t, f, _ in rows}
    title, (r, g, b) = by["execute"]
    assert "before 7 samples, after 14 samples, delta +7 samples" in title and r == 255 and g < 255
    title, (r, g, b) = by["parse"]
    assert "delta -5 samples" in title and b == 255 and r < 255
    assert by["new_func"][0].endswith("; new)")
    negated = frames_of(svg_text(folded_profile(load_fixture("diff.folded")), negate=True))
    assert any(t.startswith("execute ") and rgb(f)[2] == 255 for t, f, _ in negated)


def test_hostile_names_cannot_break_the_document_or_run_script():
    text = svg_text(folded_profile(load_fixture("tiny.folded")))
    root = ET.fromstring(text.encode("utf-8"))  # well-formed XML 1.0
    assert len(root.findall(f".//{NS}script")) == 1
    titles = [t for t, _, _ in frames_of(text)]
    assert any(t.startswith("<script>alert(1)</script> (") for t in titles)
    assert any(t.startswith("ctl\ufffdchar\ufffd\ufffd (") for t in titles)
    assert "<script>alert" not in text and "]]>" not in text.split("]]></script>")[-1]
    assert escape("a\x00b\ud800c\"'") == "a\ufffdb\ufffdc&quot;&#39;"


def test_labels_are_truncated_with_two_dots():
    rows = frames_of(svg_text(folded_profile("t;" + "x" * 300 + " 1")))
    label = [lbl for t, _, lbl in rows if t.startswith("xxx")][0]
    assert label.endswith("..") and len(label) == int(1180 / (12 * 0.59))


def test_notes_become_a_safe_comment():
    text = svg_text(folded_profile("t;a 1"), notes="a--b<c>")
    assert "<!-- NOTES: a- -b&lt;c&gt; -->" in text


@pytest.mark.parametrize("flame, message", [
    (dict(colors="rainbow"), "unknown palette"),
    (dict(bgcolors="pink"), "unknown background"),
    (dict(minwidth="x"), "--minwidth"),
    (dict(width=5), "--width"),
])
def test_bad_options_are_user_errors(flame, message):
    with pytest.raises(OffconvError, match=message):
        svg_text(folded_profile("t;a 1"), **flame)


def test_bgcolors_flat_and_named():
    assert 'stop-color="#123abc"' in svg_text(folded_profile("t;a 1"), bgcolors="#123ABC")
    assert 'stop-color="#e0ffe0"' in svg_text(folded_profile("t;a 1"), bgcolors="green")


def test_empty_profile_is_nothing_to_draw():
    with pytest.raises(OffconvError, match="^nothing to draw"):
        svg_text(Profile())


def test_renderer_is_stateless():
    """Rendering another profile (other names, another palette, a title) in between does
    not change what the first one renders to: nothing is kept between calls."""
    p = folded_profile(load_fixture("iperf.folded"))
    first = svg_text(p)
    other = svg_text(folded_profile("t;[blocked S];zz 1000", "us", "offcpu"), title="Other",
                     colors="java")
    assert other != first and ">Other</text>" in other
    assert svg_text(replace(p)) == first


# ---- the CLI path (the lead maps flamegraph.pl's options onto FlameOptions in cli.py) ----

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "offconv", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_cli_writes_an_svg(tmp_path):
    out = tmp_path / "flame.svg"
    res = run_cli(SVG_FIXTURES / "tiny.folded", "-o", out)
    assert res.returncode == 0, res.stderr
    assert frames_of(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("args, expect", [
    (("--title", "Hello"), ">Hello</text>"),
    (("--inverted",), ">Icicle Graph</text>"),
    (("--colors", "blue"), 'stop-color="#f8f8f8"'),
])
def test_cli_flamegraph_options(tmp_path, args, expect):
    out = tmp_path / "flame.svg"
    res = run_cli(SVG_FIXTURES / "tiny.folded", *args, "-o", out)
    assert res.returncode == 0, res.stderr
    assert expect in out.read_text(encoding="utf-8")


def test_a_stack_deeper_than_max_depth_is_drawn_to_it_and_the_subtitle_says_so(tmp_path):
    src = tmp_path / "deep.folded"
    src.write_text(";".join(["main"] + ["f"] * 3000) + " 30\nmain;g 10\n")
    out = tmp_path / "deep.svg"
    r = run_cli(src, "-o", out)
    assert r.returncode == 0, r.stderr
    root = ET.parse(out).getroot()
    sub = root.find(f".//{NS}text[@id='subtitle']")
    assert sub is not None and sub.text == \
        "1 stack deeper than 2,048 frames drawn to that depth (75% of the total; --max-depth)"
    titles = [t for t, _, _ in frames_of(out.read_text(encoding="utf-8"))]
    assert sum(t.startswith("f (") for t in titles) == 2048 - 1   # depth 1 is main
    # a lower limit, and a drawing as tall as what it draws
    r = run_cli(src, "-o", out, "--max-depth", "10")
    assert r.returncode == 0, r.stderr
    root = ET.parse(out).getroot()
    assert "deeper than 10 frames" in root.find(f".//{NS}text[@id='subtitle']").text
    assert float(root.get("height")) < 20 * 16 + 100
    r = run_cli(src, "-o", out, "--max-depth", "0")
    assert r.returncode == 2 and "--max-depth" in r.stderr
