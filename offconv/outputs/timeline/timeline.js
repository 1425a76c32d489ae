"use strict";
// offconv's thread-state timeline: draws the embedded data (tldata) for the current view.
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const D = JSON.parse(document.getElementById("tldata").textContent);
  const COLORS = ["#3cb043", "#f5a623", "#e8743b", "#9ec5f0", "#d9534f", "#b68fd6", "#dddddd"];
  const LEFT = 230, RIGHT = 10, TOP = 70, LANE = 14, GAP = 2, MAXW = 1000, MAXC = 3000;
  const svg = document.documentElement;
  const W = parseFloat(svg.getAttribute("width"));
  const PW = W - LEFT - RIGHT;
  const $ = (id) => document.getElementById(id);
  let v0 = 0, v1 = Math.max(D.t_us, 1), re = null;

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(us) {
    if (us >= 1e6) return (us / 1e6).toPrecision(3) + " s";
    if (us >= 1e3) return (us / 1e3).toPrecision(3) + " ms";
    return Math.round(us) + " µs";
  }
  const X = (t) => LEFT + (t - v0) / (v1 - v0) * PW;
  const laneY = (i) => TOP + i * (LANE + GAP);
  function clear(id) { const g = $(id); while (g.firstChild) g.removeChild(g.firstChild); return g; }
  function matches(code) { return re !== null && re.test(D.details[code >> 3] || ""); }

  function title(s, d, code, extra) {
    const det = D.details[code >> 3];
    return `${D.states[code & 7]} ${fmt(d)} at ${fmt(s)}` + (det ? "\n" + det : "") + (extra || "");
  }
  function span(g, i, x0, x1, fill, text, a, b) {
    const e = el("g", {"data-a": a, "data-b": b}, g);
    el("title", {}, e).textContent = text;
    el("rect", {x: x0.toFixed(1), y: laneY(i), width: Math.max(x1 - x0, 1).toFixed(1), height: LANE,
                fill: fill}, e);
  }
  function render() {
    const g = clear("spans");
    D.lanes.forEach((lane, i) => {
      const s = lane.s;
      let bucket = null;        // sub-pixel spans merged: [x0, a, b, {state: us}, n]
      const flush = () => {
        if (!bucket) return;
        let best = 0, bestUs = -1, parts = [];
        for (const k in bucket[3]) {
          if (bucket[3][k] > bestUs) { best = +k; bestUs = bucket[3][k]; }
          parts.push(`${D.states[k]} ${fmt(bucket[3][k])}`);
        }
        const x1 = Math.max(X(bucket[2]), bucket[0] + 1);
        span(g, i, bucket[0], x1, bucket[5] ? "rgb(230,0,230)" : COLORS[best],
             `${bucket[4]} spans merged, ${fmt(bucket[2] - bucket[1])} at ${fmt(bucket[1])}: ` + parts.join(", "),
             bucket[1], bucket[2]);
        bucket = null;
      };
      for (let j = 0; j < s.length; j += 3) {
        const a = s[j], d = s[j + 1], code = s[j + 2], b = a + d;
        if (b < v0 || a > v1) continue;
        const x0 = X(Math.max(a, v0)), x1 = X(Math.min(b, v1));
        const hit = matches(code);
        if (x1 - x0 >= 1) {
          flush();
          span(g, i, x0, x1, hit ? "rgb(230,0,230)" : COLORS[code & 7], title(a, d, code), a, b);
          continue;
        }
        if (!bucket) bucket = [x0, a, b, {}, 0, false];
        bucket[2] = b; bucket[4] += 1; bucket[5] = bucket[5] || hit;
        bucket[3][code & 7] = (bucket[3][code & 7] || 0) + d;
        if (X(b) - bucket[0] >= 1) flush();
      }
      flush();
    });
    const c = clear("crit");
    for (let j = 0, n = 0; j < D.critical.length && n < MAXC; j += 3) {
      const i = D.critical[j], a = D.critical[j + 1], b = a + D.critical[j + 2];
      if (b < v0 || a > v1) continue;
      const x0 = X(Math.max(a, v0)), x1 = X(Math.min(b, v1));
      el("rect", {x: x0.toFixed(1), y: laneY(i), width: Math.max(x1 - x0, 1).toFixed(1), height: LANE}, c);
      n++;
    }
    const w = clear("wakes");
    for (let j = 0, n = 0; j < D.wakes.length && n < MAXW; j += 3) {
      const t = D.wakes[j + 2];
      if (t < v0 || t > v1) continue;
      const x = X(t), from = D.wakes[j], to = D.wakes[j + 1];
      el("line", {x1: x.toFixed(1), y1: laneY(from) + LANE / 2, x2: x.toFixed(1),
                  y2: laneY(to) + (to > from ? 0 : LANE), "marker-end": "url(#arrow)"}, w);
      n++;
    }
    axis();
    $("unzoom").setAttribute("class", v0 > 0 || v1 < D.t_us ? "button" : "button hide");
  }
  function axis() {
    const g = clear("axis");
    const step = Math.pow(10, Math.floor(Math.log10((v1 - v0) / 5 || 1)));
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      el("line", {x1: X(t), x2: X(t), y1: TOP - 6, y2: TOP - 2, stroke: "#666"}, g);
      el("text", {x: X(t), y: TOP - 9, "text-anchor": "middle", class: "lane"}, g).textContent = tick(t, step);
    }
  }
  function tick(t, step) {   // a tick's time, with the digits its step needs
    const [div, unit] = step >= 1e5 ? [1e6, " s"] : step >= 100 ? [1e3, " ms"] : [1, " µs"];
    const digits = Math.max(0, Math.ceil(-Math.log10(step / div)));
    return (t / div).toFixed(digits) + unit;
  }
  function labels() {
    const g = $("labels");
    D.lanes.forEach((lane, i) => {
      const t = el("text", {x: 5, y: laneY(i) + LANE - 3, class: "lane"}, g);
      t.textContent = lane.name.length > 36 ? lane.name.slice(0, 35) + "…" : lane.name;
      el("title", {}, t).textContent = lane.name + ": " +
        Object.entries(lane.totals).map(([k, us]) => `${k} ${fmt(us)}`).join(", ");
    });
    const legend = $("legend");
    D.states.forEach((name, k) => {
      const ts = el("tspan", {fill: COLORS[k]}, legend);
      ts.textContent = "■ ";
      el("tspan", {}, legend).textContent = name + "   ";
    });
    const defs = el("defs", {}, svg);
    const m = el("marker", {id: "arrow", viewBox: "0 0 6 6", refX: 5, refY: 3, markerWidth: 5,
                           markerHeight: 5, orient: "auto-start-reverse"}, defs);
    el("path", {d: "M0,0 L6,3 L0,6 z", fill: "#333"}, m);
  }
  function zoom(a, b) {
    if (b - a < 1) { const m = (a + b) / 2; a = m - 0.5; b = m + 0.5; }
    v0 = Math.max(0, a); v1 = Math.min(D.t_us, b);
    render();
  }
  // click a span: zoom to it; drag across the lanes: zoom to that time range
  let drag = null;
  svg.addEventListener("mousedown", (e) => {
    if (e.button === 0 && e.clientX > LEFT) drag = {x: e.clientX, y: e.clientY};
  });
  svg.addEventListener("mousemove", (e) => {
    const g = e.target.closest && e.target.closest("#spans > g");
    if (g) $("details").textContent = g.firstChild.textContent.split("\n")[0];
    if (!drag || Math.abs(e.clientX - drag.x) < 4) return;
    const b = $("brush");
    b.setAttribute("class", "");
    b.setAttribute("x", Math.min(drag.x, e.clientX)); b.setAttribute("width", Math.abs(e.clientX - drag.x));
    b.setAttribute("y", TOP); b.setAttribute("height", D.lanes.length * (LANE + GAP));
  });
  let dragged = false;
  svg.addEventListener("mouseup", (e) => {
    const start = drag;
    drag = null;
    dragged = false;
    $("brush").setAttribute("class", "hide");
    if (!start || Math.abs(e.clientX - start.x) < 4) return;
    const inv = (x) => v0 + (x - LEFT) / PW * (v1 - v0);
    dragged = true;
    zoom(inv(Math.min(start.x, e.clientX)), inv(Math.max(start.x, e.clientX)));
  });
  $("spans").addEventListener("click", (e) => {   // a span (not a drag): zoom to it
    if (dragged) { dragged = false; return; }
    let g = e.target;
    while (g && g.parentNode && g.parentNode.id !== "spans") g = g.parentNode;
    if (!g || !g.getAttribute || g.getAttribute("data-a") === null) return;
    const a = +g.getAttribute("data-a"), b = +g.getAttribute("data-b"), pad = Math.max((b - a) * 0.05, 0.5);
    zoom(a - pad, b + pad);
  });
  $("unzoom").addEventListener("click", () => zoom(0, D.t_us));
  function search(term) {
    if (term === null || term === undefined) return;
    if (term === "") { re = null; $("matched").textContent = ""; render(); return; }
    re = new RegExp(term);
    let all = 0, hit = 0;
    for (const lane of D.lanes) {
      for (let j = 0; j < lane.s.length; j += 3) {
        if ((lane.s[j + 2] & 7) === 6) continue;
        all += lane.s[j + 1];
        if (matches(lane.s[j + 2])) hit += lane.s[j + 1];
      }
    }
    $("matched").textContent = "Matched: " + (all ? (100 * hit / all).toFixed(1) : "0.0") + "%";
    render();
  }
  window.search = search;
  $("search").addEventListener("click", () => search(prompt("Search the blocked stacks and wakers (regex):", "")));
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); search(prompt("Search (regex):", "")); }
  });
  labels();
  render();
})();
