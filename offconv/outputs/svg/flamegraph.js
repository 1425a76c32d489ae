/* offconv flame graph interaction: hover details, click to zoom, Reset Zoom, regex
   search with "Matched: X%" (relative to the zoomed frame), ignore case, URL state
   (?s=TERM&x=X&y=Y, flamegraph.pl's parameters), keys Ctrl-F/F3, Ctrl-I, Escape.
   Written for offconv; fg_conf is set by the writer just above this script. */
"use strict";
var fg = {
  boxes: [],        /* {g, rect, text, name, x, w, y, fill} with the original geometry */
  zoomed: -1,       /* index of the zoomed frame, -1 when not zoomed */
  term: null,       /* active search term */
  ignorecase: false
};

function init(evt) {
  fg.details = document.getElementById("details").firstChild;
  fg.unzoombtn = document.getElementById("unzoom");
  fg.searchbtn = document.getElementById("search");
  fg.icbtn = document.getElementById("ignorecase");
  fg.matched = document.getElementById("matched");
  fg.frames = document.getElementById("frames");
  fg.charpx = fg_conf.fontsize * fg_conf.fontwidth;
  fg.full = fg_conf.width - 2 * fg_conf.xpad;
  var gs = fg.frames.children;
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], title = g.children[0], rect = g.children[1], text = g.children[2];
    var info = title.textContent, cut = info.lastIndexOf(" (");
    g.fgIndex = i;
    fg.boxes.push({g: g, rect: rect, text: text,
      name: unisolate(cut >= 0 ? info.substring(0, cut) : info),
      x: parseFloat(rect.getAttribute("x")), w: parseFloat(rect.getAttribute("width")),
      y: parseFloat(rect.getAttribute("y")), fill: rect.getAttribute("fill")});
  }
  fg.frames.addEventListener("click", on_click);
  fg.frames.addEventListener("mouseover", on_over);
  fg.frames.addEventListener("mouseout", on_out);
  fg.unzoombtn.addEventListener("click", function () { unzoom(); refresh(); });
  fg.searchbtn.addEventListener("click", search_toggle);
  fg.icbtn.addEventListener("click", toggle_ignorecase);
  window.addEventListener("keydown", on_key);
  restore_state();
}

function frame_index(node) {
  while (node && node.parentNode !== fg.frames) node = node.parentNode;
  return node && node.fgIndex !== undefined ? node.fgIndex : -1;
}

function on_over(e) {
  var i = frame_index(e.target);
  if (i >= 0) fg.details.nodeValue = fg_conf.nametype + " " + fg.boxes[i].g.children[0].textContent;
}

function on_out(e) { fg.details.nodeValue = " "; }

function on_click(e) {
  var i = frame_index(e.target);
  if (i < 0) return;
  zoom(i);
  refresh();
}

function on_key(e) {
  var ctrl = e.ctrlKey || e.metaKey;
  if (e.keyCode === 114 || (ctrl && e.keyCode === 70)) {
    e.preventDefault();
    search_prompt();
  } else if (ctrl && e.keyCode === 73) {
    e.preventDefault();
    toggle_ignorecase();
  } else if (e.key === "Escape" || e.keyCode === 27) {
    unzoom();
    reset_search();
    update_url();
  }
}

/* A name with bidi controls is written as an isolate (write.py's isolate): p + 1 FSIs,
   the name, p + i + 1 PDIs, p and i its own PDIs and isolate openings. */
var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

function count(s, re) { var m = s.match(re); return m ? m.length : 0; }

function isolate(name) {
  if (!BIDI.test(name)) return name;
  var p = count(name, /\u2069/g), i = count(name, /[\u2066-\u2068]/g);
  return "\u2068".repeat(p + 1) + name + "\u2069".repeat(p + i + 1);
}

function unisolate(text) {
  if (!BIDI.test(text)) return text;
  var opens = count(text, /[\u2066-\u2068]/g), p = count(text, /\u2069/g) - opens;
  return text.substring(p + 1, text.length - opens);   /* (p + i + 1 = opens) */
}

/* Fit a frame's label into w pixels, cutting with "..", as the writer does. */
function fit_text(b, x, w) {
  var chars = Math.floor(w / fg.charpx), name = b.name, label = "";
  if (chars >= 3) label = isolate(name.length <= chars ? name : name.substring(0, chars - 2) + "..");
  b.text.setAttribute("x", (x + 3).toFixed(2));
  if (b.text.textContent !== label) b.text.textContent = label;
}

function place(b, x, w) {
  b.rect.setAttribute("x", x.toFixed(1));
  b.rect.setAttribute("width", w.toFixed(1));
  fit_text(b, x, w);
}

function is_ancestor_side(b, y) { return fg_conf.inverted ? b.y < y : b.y > y; }

function zoom(i) {
  var z = fg.boxes[i], xmin = z.x, xmax = z.x + z.w, ratio = fg.full / z.w, fudge = 0.0001;
  var pad = fg_conf.xpad;
  fg.zoomed = i;
  fg.unzoombtn.classList.remove("hide");
  for (var k = 0; k < fg.boxes.length; k++) {
    var b = fg.boxes[k], cls = b.g.classList;
    if (is_ancestor_side(b, z.y)) {
      if (b.x <= xmin + fudge && b.x + b.w + fudge >= xmax) {
        cls.remove("hide"); cls.add("parent");
        place(b, pad, fg.full);
      } else {
        cls.add("hide");
      }
    } else if (b.x < xmin - fudge || b.x + fudge >= xmax) {
      cls.add("hide");
    } else {
      cls.remove("hide"); cls.remove("parent");
      place(b, (b.x - xmin) * ratio + pad, b.w * ratio);
    }
  }
}

function unzoom() {
  if (fg.zoomed < 0) return;
  fg.zoomed = -1;
  fg.unzoombtn.classList.add("hide");
  for (var k = 0; k < fg.boxes.length; k++) {
    var b = fg.boxes[k];
    b.g.classList.remove("hide");
    b.g.classList.remove("parent");
    place(b, b.x, b.w);
  }
}

/* After a zoom change: redo the search (its % is relative to the zoomed frame). */
function refresh() {
  if (fg.term !== null) search(fg.term);
  update_url();
}

function search_prompt() {
  var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
    (fg.ignorecase ? ", ignoring case" : "") + "\nPress Ctrl-i to toggle case sensitivity", "");
  if (term !== null && term !== "") search(term);
  update_url();
}

function search_toggle() {
  if (fg.term !== null) { reset_search(); update_url(); } else { search_prompt(); }
}

function toggle_ignorecase() {
  fg.ignorecase = !fg.ignorecase;
  if (fg.ignorecase) fg.icbtn.classList.add("show"); else fg.icbtn.classList.remove("show");
  if (fg.term !== null) search(fg.term);
}

function make_regexp(term) {
  var flags = fg.ignorecase ? "i" : "";
  try { return new RegExp(term, flags); }
  catch (err) { return new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), flags); }
}

function search(term) {
  var re = make_regexp(term), hits = [];
  clear_highlight();
  fg.term = term;
  for (var k = 0; k < fg.boxes.length; k++) {
    var b = fg.boxes[k], cls = b.g.classList;
    if (cls.contains("hide") || cls.contains("parent")) continue;
    if (re.test(b.name)) {
      b.rect.setAttribute("fill", "rgb(230,0,230)");
      hits.push(b);
    }
  }
  fg.searchbtn.classList.add("show");
  fg.searchbtn.firstChild.nodeValue = "Reset Search";
  var base = fg.zoomed >= 0 ? fg.boxes[fg.zoomed].w : fg.full;
  var pct = 100 * matched_width(hits) / base;
  var text = pct.toFixed(1);
  fg.matched.firstChild.nodeValue = "Matched: " + (text === "100.0" ? "100" : text) + "%";
}

/* Width covered by the matches, counting a match inside another match once. */
function matched_width(hits) {
  hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
  var total = 0, end = -Infinity;
  for (var k = 0; k < hits.length; k++) {
    var h = hits[k];
    if (h.x + 0.0001 >= end) { total += h.w; end = h.x + h.w; }
  }
  return total;
}

function clear_highlight() {
  for (var k = 0; k < fg.boxes.length; k++) {
    var b = fg.boxes[k];
    if (b.rect.getAttribute("fill") !== b.fill) b.rect.setAttribute("fill", b.fill);
  }
}

function reset_search() {
  clear_highlight();
  fg.term = null;
  fg.searchbtn.classList.remove("show");
  fg.searchbtn.firstChild.nodeValue = "Search";
  fg.matched.firstChild.nodeValue = " ";
}

function update_url() {
  try {
    var params = new URLSearchParams(window.location.search);
    params.delete("s"); params.delete("x"); params.delete("y");
    if (fg.zoomed >= 0) {
      var z = fg.boxes[fg.zoomed];
      params.set("x", z.x.toFixed(1));
      params.set("y", String(z.y));
    }
    if (fg.term !== null) params.set("s", fg.term);
    var query = params.toString();
    var url = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
    history.replaceState(null, "", url);
  } catch (err) { /* no history API (e.g. an embedded <object>): nothing to keep */ }
}

function restore_state() {
  var params;
  try { params = new URLSearchParams(window.location.search); } catch (err) { return; }
  if (params.get("x") !== null && params.get("y") !== null) {
    var x = parseFloat(params.get("x")), y = parseFloat(params.get("y"));
    for (var k = 0; k < fg.boxes.length; k++) {
      var b = fg.boxes[k];
      if (Math.abs(b.x - x) < 0.01 && Math.abs(b.y - y) < 0.01) { zoom(k); break; }
    }
  }
  var term = params.get("s");
  if (term) search(term);
}
