#!/usr/bin/env bash
# The live page laid out in headless Chromium at 1400 and 1920 px wide, four
# cameras: 2 to 4 columns that fill the window with no card past its edge; the
# chart's time axis spans the run so far, not 5 minutes; a pipeline-wide
# rate. After the run (the view held open), the page says the run ended and
# /metrics says vlcache_up 0.
#   live_view_layout_test.sh VLCACHE VIDEO ARTIFACTS
set -euo pipefail
vlcache="$1"; video="$2"; artifacts="$3"
source "$(dirname "$0")/../support/in_work_dir.sh"
mkdir -p "$artifacts"
port=$(free_port)
{
  printf '[pipeline]\nname = "layout"\nprogress_seconds = 0\n[encoder]\nmodel = "tiny"\n[input]\nimage_size = 32\npatch_size = 8\n'
  printf '[llm]\nenabled = false\n'
  for cam in gate hall stairs exit; do
    printf '[[camera]]\nname = "%s"\nsource = "%s"\nloop = true\npace_fps = 10\n' "$cam" "$video"
  done
} > layout.toml
"$vlcache" run layout.toml --http 127.0.0.1:$port --http-hold-s 120 > run.txt 2>&1 &
pipeline=$!
for _ in $(seq 300); do curl -sf http://127.0.0.1:$port/healthz > /dev/null && break; sleep 0.1; done
# Until every camera has frames through (the page builds a card per camera it has seen).
for _ in $(seq 300); do
  [ "$(curl -sf http://127.0.0.1:$port/api/state | grep -o '"name":' | wc -l)" -ge 4 ] && break; sleep 0.1
done
browse() {  # WIDTHxHEIGHT, then chromium's flags and the page: a fresh profile, nothing beyond loopback
  local size="$1"; shift
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$(mktemp -d -p "$work")" --proxy-server="127.0.0.1:9" --proxy-bypass-list="127.0.0.1" \
    --window-size="$size" --virtual-time-budget=4000 "$@" 2> /dev/null
}
for size in 1400,900 1920,1080; do
  browse "$size" --dump-dom "http://127.0.0.1:$port/" > "dom_${size%%,*}.html"
  browse "$size" --screenshot="$artifacts/live_view_${size%%,*}.png" "http://127.0.0.1:$port/" > /dev/null
done
/usr/bin/python3 - dom_1400.html dom_1920.html <<'PY'
import re, sys
for path in sys.argv[1:]:
    d = open(path).read()
    body = re.search(r"<body([^>]*)>", d).group(1)
    attr = dict(re.findall(r'data-(\w+)="([^"]*)"', body))
    assert "columns" in attr, f"{path}: the page did not lay out: {body}"
    cols, overflow, fill = int(attr["columns"]), int(attr["overflow"]), float(attr["fill"])
    cams = re.findall(r'class="cam" data-stream="([^"]+)"', d)
    assert len(cams) == 4, (path, cams)
    assert 2 <= cols <= 4, f"{path}: {cols} columns"
    assert cols == 4, f"{path}: four cameras in {cols} columns, room for four"
    assert overflow == 0, f"{path}: a card reaches past the window"
    assert fill > 0.95, f"{path}: the cards fill {fill:.0%} of the width"
    spans = [float(s) for s in re.findall(r'<canvas[^>]*data-span="([\d.]+)"', d)]
    assert len(spans) == 4 and max(spans) < 120, f"{path}: chart spans {spans} s, the run is shorter"
    rate = re.search(r'<div id="rate">([^<]*)</div>', d).group(1)
    assert re.search(r"pipeline: [\d.]+ frames/s now, 4 camera", rate), f"{path}: rate line '{rate}'"
    print(f"{path}: {cols} columns, fill {fill:.3f}, chart spans {max(spans):.0f} s, '{rate}'")
PY
kill -INT $pipeline  # the run ends; the view holds the final numbers
for _ in $(seq 300); do grep -q "serving the final numbers" run.txt && break; sleep 0.1; done
grep -q "serving the final numbers" run.txt || { echo "the view was not held"; cat run.txt; exit 1; }
browse 1400,900 --dump-dom "http://127.0.0.1:$port/" > dom_ended.html
grep -q 'class="ended"' dom_ended.html || { echo "the page does not show the end"; exit 1; }
grep -Eq 'id="status">run ended after [0-9]+ s: the numbers are final<' dom_ended.html ||
  { echo "no 'run ended' status"; grep -o 'id="status">[^<]*' dom_ended.html; exit 1; }
curl -sf http://127.0.0.1:$port/metrics | grep -q '^vlcache_up{pipeline="layout"} 0$' ||
  { echo "/metrics does not say vlcache_up 0"; curl -sf http://127.0.0.1:$port/metrics | grep vlcache_up; exit 1; }
kill -INT $pipeline
wait $pipeline || true
echo "live view layout ok"
