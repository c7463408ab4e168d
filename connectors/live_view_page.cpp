// The live view's page: plain HTML, CSS and JavaScript, no build step and
// nothing fetched from outside the pipeline, so it works offline.
#include "connectors/live_view.hpp"

namespace vlcache::connectors {

const std::string& live_view_page() {
  static const std::string page = R"PAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vlcache live</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px;background:#111;color:#ddd}
h1{font-size:18px;margin:0 0 8px} .muted{color:#888}
#rate{font-size:15px;margin:4px 0 10px;color:#cde}
.ended #status{color:#fc6;font-weight:bold}
/* As many columns as fit at 300 px or more, never more than 4: the cameras fill the window. */
#streams{display:grid;gap:12px;grid-template-columns:repeat(auto-fit,minmax(max(300px,calc((100% - 36px) / 4)),1fr))}
.cam{background:#1c1c1c;border:1px solid #333;border-radius:6px;padding:10px;min-width:0}
.cam h2{font-size:16px;margin:0 0 6px} .cam img{width:100%;aspect-ratio:1/1;background:#000;display:block}
canvas{background:#000;display:block;margin-top:6px;width:100%;height:90px}
table{border-collapse:collapse;margin-top:6px} td{padding:1px 8px 1px 0}
.answer{border-top:1px solid #333;padding:4px 0;font-size:13px} .answer b{color:#9cf}
.random{color:#e96} .right{color:#8d8} .wrong{color:#f77}
</style></head>
<body>
<h1 id="title">vlcache</h1>
<div class="muted">patches outlined in white were recomputed by the vision encoder; the rest came from the
cache (an outline, so the colours inside stay true). Updated every second. <span id="status">connecting...</span></div>
<div id="rate">-</div>
<div id="streams"></div>
<script>
"use strict";
const cams = new Map();  // by stream name: a Map, so "__proto__" is a name like any other
let last = null;  // {t, encoded}: the previous tick's totals, for the pipeline's rate
// A view with a token is opened as /?token=...: its requests carry it on.
const token = new URLSearchParams(location.search).get("token");
const auth = token ? "?token=" + encodeURIComponent(token) : "";
function card(name) {
  const d = document.createElement("div");
  d.className = "cam"; d.dataset.stream = name;
  d.innerHTML = '<h2></h2><img alt="latest frame"><canvas height="90"></canvas>' +
    '<table><tr><td>frame</td><td class="seq">-</td><td>hit rate</td><td class="hit">-</td></tr>' +
    '<tr><td>read</td><td class="read">-</td><td>encoded</td><td class="encoded">-</td></tr>' +
    '<tr><td>dropped</td><td class="dropped">-</td><td>failed</td><td class="failed">-</td></tr>' +
    '<tr><td>answered</td><td class="answered">-</td><td>in flight</td><td class="inflight">-</td></tr>' +
    '<tr><td>evicted</td><td class="evicted">-</td><td>refilled</td><td class="refilled">-</td></tr>' +
    '<tr><td>noise</td><td class="noise">-</td><td>gate</td><td class="gate">-</td></tr>' +
    '<tr><td>fidelity</td><td class="fidelity" colspan="3">-</td></tr>' +
    '<tr><td>right</td><td class="score" colspan="3">-</td></tr></table>' +
    '<div class="answers"></div>';
  d.querySelector("h2").textContent = name;
  document.getElementById("streams").appendChild(d);
  return {el: d, frameSeq: -1};
}
// The time axis spans the run so far (at least 10 s, at most the 5 minutes kept).
function chart(canvas, series) {
  const w = canvas.width = Math.max(200, Math.round(canvas.clientWidth)), h = canvas.height;
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, w, h);
  g.strokeStyle = "#333"; g.beginPath();
  for (const f of [0.25, 0.5, 0.75]) { g.moveTo(0, h - f * h); g.lineTo(w, h - f * h); }
  g.stroke();
  const t1 = series.length ? series[series.length - 1][0] : 0;
  const span = series.length ? Math.min(300, Math.max(10, t1 - series[0][0] + 1)) : 10, t0 = t1 - span;
  canvas.dataset.span = span;
  g.fillStyle = "#888"; g.font = "10px sans-serif";
  g.fillText("share of tokens computed, last " + span.toFixed(0) + " s (1 s buckets; top: 100 %)", 4, 11);
  if (series.length < 1) return;
  g.strokeStyle = "#f55"; g.lineWidth = 1.5; g.beginPath();
  series.forEach(([t, v], i) => {
    const x = (t - t0) / span * w, y = h - v * h;
    if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
}
// What the layout came to, for people checking it (and the layout test).
function measureLayout() {
  const box = document.getElementById("streams");
  const cols = getComputedStyle(box).gridTemplateColumns.split(" ").filter(x => x).length;
  let right = 0;
  for (const c of box.children) right = Math.max(right, c.getBoundingClientRect().right);
  document.body.dataset.columns = cols;
  document.body.dataset.overflow = right > window.innerWidth ? 1 : 0;
  document.body.dataset.fill = (box.children.length ? (right - box.getBoundingClientRect().left) /
                                box.clientWidth : 0).toFixed(3);
}
function text(el, cls, v) { el.querySelector("." + cls).textContent = v; }
async function tick() {
  try {
    const r = await fetch("/api/state" + auth, {cache: "no-store"});
    const s = await r.json();
    document.getElementById("title").textContent = "vlcache: " + s.title;
    document.body.classList.toggle("ended", !!s.ended);
    document.getElementById("status").textContent = s.ended
      ? "run ended after " + s.uptime_s.toFixed(0) + " s: the numbers are final" : "up " + s.uptime_s.toFixed(0) + " s";
    let encoded = 0, answered = 0;
    for (const st of s.streams) { encoded += (st.counters || {}).encoded ?? 0; answered += st.answered; }
    const rate = last && s.uptime_s > last.t ? (encoded - last.encoded) / (s.uptime_s - last.t) : null;
    last = {t: s.uptime_s, encoded};
    document.getElementById("rate").textContent = "pipeline: " +
      (s.ended ? encoded + " frames in " + s.uptime_s.toFixed(0) + " s (" + (encoded / Math.max(1e-9, s.uptime_s)).toFixed(1) +
                 " frames/s)" : (rate === null ? "-" : rate.toFixed(1)) + " frames/s now") +
      ", " + s.streams.length + " camera(s), " + answered + " answers";
    for (const st of s.streams) {
      if (!cams.has(st.name)) cams.set(st.name, card(st.name));
      const c = cams.get(st.name);
      const k = st.counters || {};
      text(c.el, "seq", st.seq);
      text(c.el, "hit", (100 * st.hit_rate).toFixed(1) + " %");
      text(c.el, "read", k.read ?? "-");
      text(c.el, "encoded", k.encoded ?? "-");
      text(c.el, "dropped", k.dropped === undefined ? "-" : k.dropped);
      text(c.el, "failed", k.failed ?? "-");
      text(c.el, "answered", st.answered);  // the answers this page lists come from the same count
      text(c.el, "inflight", k.in_flight ?? "-");
      text(c.el, "evicted", k.evictions ?? "-");  // the store budget gave its tokens up
      text(c.el, "refilled", k.refills ?? "-");
      text(c.el, "noise", k.noise_floor ? "sigma " + k.noise_floor.toFixed(1) : "-");  // [gate].noise_factor
      text(c.el, "gate", k.mad_threshold ? "mad <= " + k.mad_threshold.toFixed(1) : "-");
      text(c.el, "fidelity", k.fidelity_checks ? "cosine " + k.fidelity_cosine_mean.toFixed(5) + ", worst token " +
           k.fidelity_cosine_min.toFixed(4) + " (" + k.fidelity_checks + " checks, " + k.fidelity_refreshes +
           " refreshes)" + (k.fidelity_layer_tolerance != null ? "; held at layer tolerance " +
           k.fidelity_layer_tolerance + ", low percentile " + k.fidelity_cosine_low.toFixed(5) + ", " +
           k.fidelity_adjustments + " adjustments" : "") : "not checked");
      text(c.el, "score", st.with_truth ? st.correct + " of " + st.with_truth + " with a known answer (" +
           (100 * st.correct / st.with_truth).toFixed(0) + " %)" : "no known answers");
      if (st.has_frame && st.frame_seq !== c.frameSeq) {
        c.frameSeq = st.frame_seq;
        c.el.querySelector("img").src = "/frame/" + encodeURIComponent(st.name) + ".jpg?seq=" + st.frame_seq +
          auth.replace("?", "&");
      }
      chart(c.el.querySelector("canvas"), st.series);
      const box = c.el.querySelector(".answers");
      box.innerHTML = "";
      for (const a of st.answers) {
        const d = document.createElement("div");
        d.className = "answer";
        const lat = a.latency_ms || {};
        d.innerHTML = "<b></b> <span></span><div class='muted'></div>";
        d.querySelector("b").textContent = "#" + a.seq + (a.on_demand ? " (asked)" : "");
        d.querySelector("span").textContent = a.question + " -> " + a.text +
          (a.truth === undefined ? "" : "   (truth: " + a.truth + (a.correct ? ", right)" : ", WRONG)"));
        if (a.truth !== undefined) d.querySelector("span").className = a.correct ? "right" : "wrong";
        if (a.text.includes("\ufffd"))
          d.querySelector("span").title = "\ufffd marks decoded bytes that were not valid UTF-8";
        if (a.random_weights) d.querySelector("span").className = "random";
        d.querySelector("div").textContent = "prefill " + (lat.prefill ?? 0).toFixed(0) + " ms, decode " +
          (lat.decode ?? 0).toFixed(0) + " ms, total " + (lat.total ?? 0).toFixed(0) + " ms; image tokens recomputed " +
          a.kv.image_recomputed + "/" + a.kv.image_tokens + (a.random_weights ? "; RANDOM weights" : "");
        box.appendChild(d);
      }
    }
    measureLayout();
  } catch (e) {
    document.getElementById("status").textContent = "pipeline not reachable (" + e + ")";
  }
}
tick();
setInterval(tick, 1000);
window.addEventListener("resize", measureLayout);
</script>
</body></html>
)PAGE";
  return page;
}

}  // namespace vlcache::connectors
