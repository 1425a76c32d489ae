"""offconv's SVGs in a real browser: ../shared/tools/svg-check opens them in headless
Chromium, searches (Search button + prompt) and clicks a frame the way a person does.
Needs the shared/ folder beside the repo (as in CI), or $OFFCONV_SHARED; skipped when it
is absent, except with OFFCONV_REQUIRE_BROWSER=1 (set by .ci/run): then they fail."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offconv.model.options import FlameOptions, Options
from offconv.outputs.svg.graph import render

from test_svg_layout import folded_profile, load_fixture

SHARED = Path(os.environ.get("OFFCONV_SHARED") or Path(__file__).resolve().parents[2] / "shared")
SVG_CHECK = SHARED / "tools" / "svg-check"
REQUIRED = os.environ.get("OFFCONV_REQUIRE_BROWSER") == "1"


@pytest.fixture(autouse=True)
def _need_svg_check():
    if not SVG_CHECK.exists():
        if REQUIRED:
            pytest.fail(f"{SVG_CHECK} not found and OFFCONV_REQUIRE_BROWSER=1: CI must run "
                        "the browser tests (give the shared/ folder, or $OFFCONV_SHARED)")
        pytest.skip(f"{SVG_CHECK} not found")


def write_svg(tmp_path: Path, fixture: str, unit: str, mode: str, **flame) -> Path:
    out = io.StringIO()
    render(folded_profile(load_fixture(fixture), unit, mode), out,
           Options(flame=FlameOptions(**flame)))
    path = tmp_path / "flame.svg"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def svg_check(path: Path, *args: str) -> dict:
    res = subprocess.run([str(SVG_CHECK), str(path), *args], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode in (0, 1), f"svg-check could not run: {res.stderr[-2000:]}"
    report = json.loads(res.stdout)
    assert res.returncode == 0 and report["ok"], report["problems"]
    assert report["console_errors"] == [] and report["page_errors"] == []
    assert report["dialogs"] == []
    return report


VARIANTS = {
    "flame": {},
    "inverted": dict(inverted=True),
    "flamechart": dict(flamechart=True),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_offcpu_recording_search_and_zoom(tmp_path, variant):
    path = write_svg(tmp_path, "victim_a_1.offcpu.folded", "us", "offcpu", **VARIANTS[variant])
    report = svg_check(path, "--search", "futex", "--click", "victim-main")
    search = report["search"]
    assert search["method"] == "clicked 'Search'"
    assert 0 < search["matched_percent"] < 100
    assert search["highlighted_frames"] > 0
    assert report["click"]["zoomed"] is True
    assert report["click"]["after"]["frame_width"] > report["click"]["before"]["frame_width"]
    assert report["title"]["heading"] == "Off-CPU Time " + {
        "flame": "Flame Graph", "inverted": "Icicle Graph", "flamechart": "Flame Chart"}[variant]


def test_oncpu_recording_search_and_zoom(tmp_path):
    path = write_svg(tmp_path, "iperf.folded", "samples", "oncpu")
    report = svg_check(path, "--search", "^tcp_", "--click", "iperf")
    assert 0 < report["search"]["matched_percent"] < 100
    assert report["click"]["zoomed"] is True
    assert report["elements"]["frames"] == 357  # what flamegraph.pl draws (test_svg_layout)


def test_hostile_names_stay_inert_in_the_browser(tmp_path):
    path = write_svg(tmp_path, "tiny.folded", "samples", "oncpu")
    report = svg_check(path, "--search", "alert", "--click", "script")
    assert report["search"]["matched_percent"] > 0
    assert report["click"]["zoomed"] is True


def test_wakeup_chain(tmp_path):
    path = write_svg(tmp_path, "victim_a_1.wakeup.folded", "us", "wakeup")
    report = svg_check(path, "--search", "futex", "--click", "lockholder")
    assert 0 < report["search"]["matched_percent"] < 100


# ---- URL state and keys, driven with the Playwright and Chromium svg-check installs ----

PLAYWRIGHT_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import _toolsetup as setup
from playwright.sync_api import sync_playwright
url, x, y = sys.argv[2], sys.argv[3], sys.argv[4]
out, errors = {}, []
matched = "document.getElementById('matched').textContent"
hidden = "document.getElementById('unzoom').classList.contains('hide')"
with sync_playwright() as pw:
    browser = setup.launch_chromium(pw)
    page = browser.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
    page.goto(url + "?s=futex&x=" + x + "&y=" + y)
    out["restored_matched"] = page.evaluate(matched)
    out["restored_zoomed"] = not page.evaluate(hidden)
    page.keyboard.press("Escape")
    out["escape_matched"] = page.evaluate(matched)
    out["escape_zoomed"] = not page.evaluate(hidden)
    out["escape_query"] = page.evaluate("location.search")
    page.keyboard.press("Control+i")
    page.evaluate("search('FUTEX')")
    out["ignorecase_matched"] = page.evaluate(matched)
    page.keyboard.press("Control+i")
    out["case_matched"] = page.evaluate(matched)
    page.evaluate("fg.frames.children[1].dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    out["click_query"] = page.evaluate("location.search")
    browser.close()
out["errors"] = errors
print(json.dumps(out))
"""


def tools_python() -> Path:
    """The Python of the venv svg-check installs (shared/tools/_toolsetup.py's cache)."""
    sys.path.insert(0, str(SVG_CHECK.parent))
    try:
        import _toolsetup
    finally:
        sys.path.pop(0)
    return _toolsetup.cache_dir() / "venv" / "bin" / "python"


def test_url_parameters_and_keys(tmp_path):
    subprocess.run([str(SVG_CHECK), "--setup"], capture_output=True, timeout=600, check=True)
    path = write_svg(tmp_path, "victim_a_1.offcpu.folded", "us", "offcpu")
    text = path.read_text(encoding="utf-8")
    rect = text.split("<title>victim-main (", 1)[1].split("<rect ", 1)[1]
    x, y = rect.split('x="', 1)[1].split('"')[0], rect.split('y="', 1)[1].split('"')[0]
    res = subprocess.run([str(tools_python()), "-c", PLAYWRIGHT_SCRIPT, str(SVG_CHECK.parent),
                          path.as_uri(), x, y], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    print(got)
    assert got["errors"] == []
    assert got["restored_zoomed"] is True
    assert got["restored_matched"].startswith("Matched: ")
    assert got["escape_zoomed"] is False and got["escape_matched"].strip() == ""
    assert got["escape_query"] == ""
    assert got["ignorecase_matched"].startswith("Matched: ")
    assert got["ignorecase_matched"] != "Matched: 0.0%"  # Ctrl-I: FUTEX finds futex
    assert got["case_matched"] == "Matched: 0.0%"
    assert "x=" in got["click_query"] and "y=" in got["click_query"] and "s=FUTEX" in got["click_query"]
