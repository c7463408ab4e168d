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
#streams{display:flex;flex-wrap:wrap;gap:16px}
.cam{background:#1c1c1c;border:1px solid #333;border-radius:6px;padding:10px;width:470px}
.cam h2{font-size:16px;margin:0 0 6px} .cam img{width:448px;height:448px;background:#000;display:block}
canvas{background:#000;display:block;margin-top:6px}
table{border-collapse:collapse;margin-top:6px} td{padding:1px 8px 1px 0}
.answer{border-top:1px solid #333;padding:4px 0;font-size:13px} .answer b{color:#9cf}
.random{color:#e96} .right{color:#8d8} .wrong{color:#f77}
</style></head>
<body>
<h1 id="title">vlcache</h1>
<div class="muted">red patches were recomputed by the vision encoder; the rest came from the cache.
Updated every second. <span id="status">connecting...</span></div>
<div id="streams"></div>
<script>
"use strict";
const cams = {};
// A view with a token is opened as /?token=...: its requests carry it on.
const token = new URLSearchParams(location.search).get("token");
const auth = token ? "?token=" + encodeURIComponent(token) : "";
function card(name) {
  const d = document.createElement("div");
  d.className = "cam"; d.dataset.stream = name;
  d.innerHTML = '<h2></h2><img alt="latest frame"><canvas width="448" height="90"></canvas>' +
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
function chart(canvas, series) {
  const g = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
  g.clearRect(0, 0, w, h);
  g.strokeStyle = "#333"; g.beginPath();
  for (const f of [0.25, 0.5, 0.75]) { g.moveTo(0, h - f * h); g.lineTo(w, h - f * h); }
  g.stroke();
  g.fillStyle = "#888"; g.font = "10px sans-serif";
  g.fillText("share of tokens computed (1 s buckets, last 5 min; line: 100 %)", 4, 11);
  if (series.length < 1) return;
  const t1 = series[series.length - 1][0], t0 = t1 - 300;
  g.strokeStyle = "#f55"; g.lineWidth = 1.5; g.beginPath();
  series.forEach(([t, v], i) => {
    const x = (t - t0) / 300 * w, y = h - v * h;
    if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
}
function text(el, cls, v) { el.querySelector("." + cls).textContent = v; }
async function tick() {
  try {
    const r = await fetch("/api/state" + auth, {cache: "no-store"});
    const s = await r.json();
    document.getElementById("title").textContent = "vlcache: " + s.title;
    document.getElementById("status").textContent = "up " + s.uptime_s.toFixed(0) + " s";
    for (const st of s.streams) {
      const c = cams[st.name] || (cams[st.name] = card(st.name));
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
  } catch (e) {
    document.getElementById("status").textContent = "pipeline not reachable (" + e + ")";
  }
}
tick();
setInterval(tick, 1000);
</script>
</body></html>
)PAGE";
  return page;
}

}  // namespace vlcache::connectors
