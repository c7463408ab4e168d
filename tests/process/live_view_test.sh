#!/usr/bin/env bash
# The live view end to end: a pipeline with --http on loopback, the page
# opened in headless Chromium (fresh profile, nothing beyond loopback): the
# frames and numbers appear and change over time; a screenshot is saved.
# After the run, /metrics (held open by --http-hold-s) parses as Prometheus
# text and its counters agree with the run summary.
set -euo pipefail
vlcache="$1"; fixtures="$2"; video="$3"; artifacts="$4"
port=8931
work="$(mktemp -d)"; mkdir -p "$artifacts"
cat > "$work/view.toml" <<TOML
[pipeline]
name = "view-test"
max_in_flight = 2
drop_policy = "block"
progress_seconds = 0

[input]
image_size = 32
patch_size = 8

[encoder]
model = "$fixtures/llama_tiny/llava_new"
batch_tokens = 8
batch_timeout_ms = 5

[llm]
max_new_tokens = 4
every_n_frames = 20

[[camera]]
name = "gate"
source = "$video"
loop = true

[[camera]]
name = "yard"
source = "$video"
start_frame = 300
loop = true

[[sink]]
kind = "jsonl"
path = "$work/lines.jsonl"
TOML
"$vlcache" run "$work/view.toml" --http 127.0.0.1:$port --http-hold-s 60 --summary-json "$work/summary.json" \
  > "$work/run.log" 2>&1 &
pipeline=$!
trap 'kill -INT $pipeline 2>/dev/null; sleep 0.5; kill -INT $pipeline 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/healthz > /dev/null && break; sleep 0.1; done
curl -sf http://127.0.0.1:$port/healthz | grep -q ok

browse() {  # $1: output flag, then the page; a fresh profile each time, no network but loopback
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$(mktemp -d -p "$work")" --proxy-server="127.0.0.1:9" --proxy-bypass-list="127.0.0.1" \
    --window-size=1100,900 --virtual-time-budget=4000 "$@" 2> /dev/null
}
browse --dump-dom "http://127.0.0.1:$port/" > "$work/dom1.html"
browse --dump-dom "http://127.0.0.1:$port/" > "$work/dom2.html"
browse --screenshot="$artifacts/live_view.png" "http://127.0.0.1:$port/" > /dev/null
/usr/bin/python3 - "$work/dom1.html" "$work/dom2.html" "$artifacts/live_view.png" <<'PY'
import re, sys
doms = [open(p).read() for p in sys.argv[1:3]]
snap = []
for d in doms:
    cams = re.findall(r'data-stream="([^"]+)"', d)
    assert sorted(cams) == ["gate", "yard"], cams
    seqs = [int(x) for x in re.findall(r'class="seq">(\d+)<', d)]
    imgs = re.findall(r'src="/frame/(\w+)\.jpg\?seq=(\d+)"', d)
    hits = re.findall(r'class="hit">([\d.]+) %<', d)
    assert len(seqs) == 2 and len(hits) == 2, (seqs, hits)
    assert len(imgs) == 2, "frames did not appear: %r" % imgs
    snap.append((seqs, imgs))
(s1, i1), (s2, i2) = snap
assert all(b > a for a, b in zip(s1, s2)), "numbers did not change: %r -> %r" % (s1, s2)
assert i1 != i2, "frames did not change: %r -> %r" % (i1, i2)
png = open(sys.argv[3], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, "screenshot missing"
print("page: frames %r -> %r, sequence %r -> %r" % (i1, i2, s1, s2))
PY
curl -sf "http://127.0.0.1:$port/frame/gate.jpg" -o "$work/frame.jpg"
[ "$(head -c 3 "$work/frame.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8ff" ] || { echo "frame is not a JPEG"; exit 1; }

kill -INT $pipeline  # stop: drain, summary, then the view holds the final numbers
for _ in $(seq 300); do [ -s "$work/summary.json" ] && grep -q "serving the final numbers" "$work/run.log" && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/metrics" > "$work/metrics.txt"
/usr/bin/python3 - "$work/metrics.txt" "$work/summary.json" <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
summary = json.load(open(sys.argv[2]))
def value(family, **labels):
    for s in fams[family].samples:
        if s.name.endswith("_total") or s.name == family:
            if all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise KeyError((family, labels))
for st in summary["streams"]:
    n = st["name"]
    assert value("vlcache_frames_read", stream=n) == st["frames_read"], n
    assert value("vlcache_frames_encoded", stream=n) == st["frames_encoded"], n
    assert value("vlcache_frames_failed", stream=n) == st["frames_failed"], n
    dropped = sum(value("vlcache_frames_dropped", stream=n, reason=r) for r in ("queue_oldest", "no_credit_newest"))
    assert dropped == st["dropped"]["oldest"] + st["dropped"]["newest"], n
    assert abs(value("vlcache_hit_rate", stream=n) - st["hit_rate"]) < 1e-9, n
    assert value("vlcache_answers", stream=n) == summary["answers"]["per_stream"][n], n
assert sum(value("vlcache_tokens_computed", stream=s["name"]) for s in summary["streams"]) == summary["encoder"]["tokens_computed"]
hist = fams["vlcache_stage_latency_ms"]
count = [s.value for s in hist.samples if s.name.endswith("_count") and s.labels["stage"] == "end_to_end"][0]
assert count == summary["frames_encoded"], (count, summary["frames_encoded"])
print("metrics: %d families parse; counters agree with the summary (%d frames, %d answers)" %
      (len(fams), summary["frames_encoded"], summary["answers"]["answered"]))
PY
kill -INT $pipeline
wait $pipeline
trap 'rm -rf "$work"' EXIT
echo "live view ok"
