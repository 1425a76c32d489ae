"""The SVG writer: a Layout in, flamegraph.pl-shaped interactive SVG text out.

Geometry follows flamegraph.pl (10 px side padding, title band of 3 font sizes, a
bottom band for the details line, frame boxes ``height - 1`` px tall). The document is
lean: one ``<g>`` per frame holding ``<title>``, ``<rect>`` and ``<text>``; fonts and
event handlers are set once (attributes on ``<svg>``, one listener on ``#frames``), the
script and CSS are package data files. Every piece of user text is escaped, and
characters XML 1.0 does not allow are replaced by U+FFFD, so no frame name can break
the document or run script.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from importlib import resources
from typing import Optional, TextIO

from offconv.model.labels import BIDI_CONTROLS
from offconv.model.records import state_help
from offconv.model.units import human_us
from offconv.outputs.svg.layout import XPAD, Layout
from offconv.outputs.svg.palette import FAMILY_BLOCKED, FAMILY_RUNQ, Colorizer, diff_color, strip_annotation

# Characters XML 1.0 does not allow (and lone surrogates, which cannot be encoded): the
# complement of its Char production, spelled as the few ranges it leaves out (the negated
# class compiles 50 times slower, and this module is imported by every run).
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# (a carriage return as a reference: an XML parser reads a literal one as a newline)
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                          "'": "&#39;", "\r": "&#13;"})
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def isolate(name: str) -> str:
    """``name`` as a bidi isolate (FSI ... PDI) when it holds bidi controls, so that an
    override or embedding in it reorders the name alone, never the tooltip or label text
    around it. Its own PDIs (p of them) cannot close the isolate early: it is opened p + 1
    times; its own isolates (i openings) are closed after it too: p + i + 1 PDIs (a PDI
    with nothing open is ignored). flamegraph.js reads the name back by the same counts."""
    if _BIDI.search(name) is None:
        return name
    p = name.count("\u2069")
    i = name.count("\u2066") + name.count("\u2067") + name.count("\u2068")
    return "\u2068" * (p + 1) + name + "\u2069" * (p + i + 1)


def escape(text: str) -> str:
    """Text safe in XML 1.0 element content and attribute values."""
    return _INVALID_XML.sub("\ufffd", str(text)).translate(_ESCAPES)


@dataclass(frozen=True)
class Style:
    """Resolved drawing options (every None of FlameOptions already chosen)."""

    title: str
    subtitle: str
    width: int
    frame_height: int
    fonttype: str
    fontsize: float
    fontwidth: float
    countname: str
    nametype: str
    palette: str
    background: tuple
    use_hash: bool
    inverted: bool
    negate: bool
    notes: str
    factor: float
    state_split: bool


def value_formatter(countname: str, factor: float):
    """value -> display text: "12.4 ms" for time units (offconv.model.units.human_us, the one
    duration formatter), "1,234 samples" otherwise."""
    scale = _TIME_UNITS.get(countname)
    if scale is None:
        def fmt(v: float) -> str:
            return f"{v * factor:,.0f} {countname}"
        return fmt
    micro = "us" if countname == "us" else "µs"  # an explicit --countname us wins
    to_us = factor * scale * 1e6

    def fmt_time(v: float) -> str:
        return human_us(v * to_us, micro)
    return fmt_time


def _resource(name: str) -> str:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    assert "]]>" not in text, f"{name} must not contain ']]>'"
    return text


def _js_config(style: Style) -> str:
    conf = {"nametype": style.nametype, "inverted": style.inverted,
            "fontsize": style.fontsize, "fontwidth": style.fontwidth,
            "xpad": XPAD, "width": style.width}
    text = json.dumps(conf, ensure_ascii=True, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _notes(notes: str) -> str:
    text = escape(notes)
    while "--" in text:
        text = text.replace("--", "- -")
    return f"<!-- NOTES: {text.rstrip('-')} -->\n"


LEGEND = ("blue: blocked (by state: [blocked S], [blocked D], ...) · orange: waiting for a "
          "CPU ([run queue], [preempted]) · hover a [state] frame for its meaning")


def _state_help(bare: str, flags: int) -> str:
    """'; what it means' for a state-split frame ([blocked S], [run queue], ...), in a form
    that keeps the tooltip's last ' (' the value's (flamegraph.js reads the name before it)."""
    if not (flags & (FAMILY_RUNQ | FAMILY_BLOCKED)) or not bare.startswith("["):
        return ""
    text = state_help(bare)
    if not text:
        return ""
    return "; " + escape(text.replace("(", "[").replace(")", "]"))


def cut_note(lay: Layout) -> str:
    """What --max-depth left out, for the subtitle."""
    n, weight, limit = lay.cut
    share = weight / lay.total if lay.total else 0.0
    return (f"{n:,} {'stack' if n == 1 else 'stacks'} deeper than {limit:,} frames drawn to "
            f"that depth ({share:.0%} of the total; --max-depth)")


def write_svg(out: TextIO, lay: Layout, style: Style, differential: bool) -> None:
    if style.state_split and not style.subtitle and not differential and any(
            b[5] & (FAMILY_RUNQ | FAMILY_BLOCKED) for b in lay.boxes):
        style = replace(style, subtitle=LEGEND)
    if lay.cut[0]:
        style = replace(style, subtitle=" · ".join(filter(None, (style.subtitle, cut_note(lay)))))
    ypad1 = style.fontsize * 3 + (style.fontsize * 2 if style.subtitle else 0)
    ypad2 = style.fontsize * 2 + 10
    height = (lay.depth_max + 1) * style.frame_height + ypad1 + ypad2
    out.write(_header(style, _num(height), ypad2))
    parts: list = []
    _frames(parts, lay, style, height, ypad1, ypad2, differential)
    out.write("".join(parts))
    out.write("</g>\n</svg>\n")


def _num(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"


def _header(style: Style, height: str, ypad2: float) -> str:
    w, fs = style.width, style.fontsize
    h = float(height)
    bg1, bg2 = style.background
    subtitle = ""
    if style.subtitle:
        subtitle = (f'<text id="subtitle" x="{_num(w / 2)}" y="{_num(fs * 4)}" '
                    f'text-anchor="middle">{escape(style.subtitle)}</text>\n')
    bottom = _num(h - ypad2 / 2)
    return "".join((
        '<?xml version="1.0" standalone="no"?>\n',
        _notes(style.notes) if style.notes else "",
        f'<svg version="1.1" width="{w}" height="{height}" onload="init(evt)" '
        f'viewBox="0 0 {w} {height}" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="{escape(style.fonttype)}" font-size="{_num(fs)}">\n',
        '<defs>\n<linearGradient id="background" y1="0" y2="1" x1="0" x2="0">\n',
        f'<stop stop-color="{bg1}" offset="5%"/>\n<stop stop-color="{bg2}" offset="95%"/>\n',
        '</linearGradient>\n</defs>\n',
        '<style type="text/css"><![CDATA[\n', _resource("flamegraph.css"), ']]></style>\n',
        '<script type="text/ecmascript"><![CDATA[\n',
        f'var fg_conf = {_js_config(style)};\n', _resource("flamegraph.js"), ']]></script>\n',
        f'<rect x="0" y="0" width="{w}" height="{height}" fill="url(#background)"/>\n',
        f'<text id="title" x="{_num(w / 2)}" y="{_num(fs * 2)}" text-anchor="middle" '
        f'font-size="{_num(fs + 5)}">{escape(style.title)}</text>\n',
        subtitle,
        f'<text id="details" x="{XPAD}" y="{bottom}"> </text>\n',
        f'<text id="unzoom" class="hide" x="{XPAD}" y="{_num(fs * 2)}">Reset Zoom</text>\n',
        f'<text id="search" x="{_num(w - XPAD - 100)}" y="{_num(fs * 2)}">Search</text>\n',
        f'<text id="ignorecase" x="{_num(w - XPAD - 16)}" y="{_num(fs * 2)}">ic</text>\n',
        f'<text id="matched" x="{_num(w - XPAD - 100)}" y="{bottom}"> </text>\n',
        '<g id="frames">\n',
    ))


def _rows_y(lay: Layout, style: Style, height: float, ypad1: float, ypad2: float):
    """Per depth: (rect y, text y) strings."""
    fh = style.frame_height
    rows = []
    for depth in range(lay.depth_max + 1):
        if style.inverted:
            y1 = ypad1 + depth * fh
        else:
            y1 = height - ypad2 - (depth + 1) * fh + 1
        y2 = y1 + fh - 1
        rows.append((_num(y1), _num(3 + (y1 + y2) / 2)))
    return rows


def _frames(parts: list, lay: Layout, style: Style, height: float, ypad1: float,
            ypad2: float, differential: bool) -> None:
    """Append one ``<g>`` per frame. The hot loop of the renderer: everything that can
    be is computed once per name or per depth."""
    rows = _rows_y(lay, style, height, ypad1, ypad2)
    rect_h = _num(style.frame_height - 1)
    wpt = (style.width - 2 * XPAD) / lay.timemax
    char_px = style.fontsize * style.fontwidth
    fmt = value_formatter(style.countname, style.factor)
    pct_of = 100.0 / lay.timemax
    color = Colorizer(style.palette, style.use_hash, style.state_split)
    names: dict = {}
    # per name: its escaped and bare text and state help (as first met); per (name, flags):
    # its fill; per value: its text and percentage (all repeat: the 14.6k boxes of a
    # 23k-stack profile hold 1.9k names and a few thousand values)
    shown_get = names.get
    fills: dict = {}
    fills_get = fills.get
    values: dict = {}
    values_get = values.get
    # per (start, value): the box's x, width and label x as text and how many characters
    # fit (a tower over one stack repeats them: 6.4k of them among the 14.6k boxes); per
    # (name, characters): the label
    geometry: dict = {}
    geometry_get = geometry.get
    labels: dict = {}
    labels_get = labels.get
    append = parts.append
    timemax_x = round(XPAD + lay.timemax * wpt, 1)
    for name, depth, start, value, before, flags, own in lay.boxes:
        shown = shown_get(name)
        if shown is None:
            bare = strip_annotation(name)
            shown = names[name] = (escape(isolate(bare)), bare,
                                   _state_help(bare, flags) if style.state_split else "")
        at = geometry_get((start, value)) if depth else None
        if at is None:
            x1 = round(XPAD + start * wpt, 1)
            x2 = round(XPAD + (start + value) * wpt, 1) if depth else timemax_x
            w = x2 - x1
            at = (f"{x1:.1f}", f"{w:.1f}", f"{x1 + 3:.2f}", int(w / char_px))
            if depth:
                geometry[(start, value)] = at
        xs, ws, txs, chars = at
        if depth == 0:
            info = f"all ({fmt(value)}, 100%)"
            fill = diff_color(own or 0, lay.max_delta) if differential else color("all", 0)
        elif differential:
            info, fill, mark = _diff_info(shown[0], value, before, own, fmt, pct_of, lay, style)
        else:
            shown_value = values_get(value)
            if shown_value is None:
                shown_value = values[value] = f"{fmt(value)}, {value * pct_of:.2f}%"
            info = f"{shown[0]} ({shown_value}{shown[2]})"
            fill = fills_get((name, flags))
            if fill is None:
                fill = fills[(name, flags)] = color(name, flags)
        label = ""
        if chars >= 3:
            bare = shown[1]
            if len(bare) <= chars:
                label = shown[0]
            else:
                label = labels_get((name, chars))
                if label is None:
                    label = labels[(name, chars)] = escape(isolate(bare[:chars - 2] + ".."))
        ry, ty = rows[depth]
        if differential and depth and mark:  # appeared / vanished: a class and a dashed outline
            append(f'<g class="{mark}"><title>{info}</title><rect x="{xs}" y="{ry}" '
                   f'width="{ws}" height="{rect_h}" fill="{fill}" stroke="rgb(0,0,0)" '
                   f'stroke-width="1" stroke-dasharray="3,2"/><text x="{txs}" '
                   f'y="{ty}">{label}</text></g>\n')
            continue
        append(f'<g><title>{info}</title><rect x="{xs}" y="{ry}" width="{ws}" '
               f'height="{rect_h}" fill="{fill}"/><text x="{txs}" y="{ty}">{label}'
               '</text></g>\n')


def _signed(text: str, v: float) -> str:
    return ("+" if v > 0 else "") + text


def _diff_info(esc_name: str, value: float, col1: Optional[float], own: Optional[float], fmt,
               pct_of: float, lay: Layout, style: Style):
    """Tooltip, fill and mark of a differential frame.

    Colour: flamegraph.pl's ``color_scale($delta, $maxdelta)`` of the frame's *own* delta
    (``own``, after - before of the stack ending at this frame; 0 for a parent with no
    self time), negated with --negate; its ``+D%`` is that own delta over the total, as in
    flamegraph.pl's tooltip. Then the subtree's before, after and delta (absolute and
    relative to before). The width column is the second one; with --negate the input is
    ``AFTER BEFORE`` (flamegraph.pl's ``difffolded.pl f2 f1 | flamegraph.pl --negate``),
    so the width is BEFORE's and the first column AFTER's. Mark: "new" (appeared: no
    before), "gone" (vanished: no after, drawn only with BEFORE's widths)."""
    col1 = col1 or 0
    own = own or 0
    if style.negate:
        before, after, own = value, col1, -own
    else:
        before, after = col1, value
    delta = after - before
    mark = "new" if not before and after else "gone" if before and not after else ""
    rel = "new" if not before else f"{_signed(f'{delta * 100.0 / before:.1f}', delta)}%"
    info = (f"{esc_name} ({fmt(value)}, {value * pct_of:.2f}%; {_signed(f'{own * pct_of:.2f}', own)}%; "
            f"before {fmt(before)}, after {fmt(after)}, delta {_signed(fmt(delta), delta)} "
            f"({rel}); self {_signed(fmt(own), own)}{'; ' + mark if mark else ''})")
    return info, diff_color(own, lay.max_delta), mark
