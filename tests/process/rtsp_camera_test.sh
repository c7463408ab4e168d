#!/usr/bin/env bash
# IP cameras over RTSP on loopback: tools/rtsp_camera.py (GStreamer's RTSP
# server) serves H.264 made from the sample video by ffmpeg. Frames arrive;
# the server is stopped and started again 3 s later: the camera reconnects
# and its outage and gap are counted; a second camera whose server never
# exists keeps retrying the whole time without holding the first one up; a
# third view with max_frames = 10 ends after ten frames, no reconnecting.
# Every wait is for what it checks; the run ends with SIGINT.
set -euo pipefail
vlcache="$1"; repo="$2"; cfg="$3"; video="$4"
source "$(dirname "$0")/../support/in_work_dir.sh"
port=$(free_port); gone=$(free_port)
sed -e "s/PORT_IP/$port/" -e "s/PORT_GONE/$gone/" "$cfg" > pipeline.toml
ffmpeg -v error -y -i "$video" -frames:v 400 -c:v libx264 -preset ultrafast -g 10 -bf 0 -pix_fmt yuv420p cam.mp4
serve() {
  /usr/bin/python3 "$repo/tools/rtsp_camera.py" --port "$port" --path /cam --video cam.mp4 > "server$1.txt" 2>&1 &
  server=$!
  for _ in $(seq 300); do grep -q "^serving" "server$1.txt" && return 0; sleep 0.1; done
  echo "the RTSP server never listened"; cat "server$1.txt"; exit 1
}
ip_frames() { if [ -f rtsp.jsonl ]; then grep -c '"stream":"ip"' rtsp.jsonl || true; else echo 0; fi; }
wait_frames() {  # at least $1 frames of "ip" in the sink
  for _ in $(seq 600); do [ "$(ip_frames)" -ge "$1" ] && return 0; kill -0 $run 2>/dev/null || break; sleep 0.1; done
  echo "camera ip: $(ip_frames) frames, waited for $1"; cat run.txt; exit 1
}
serve 1
"$vlcache" run pipeline.toml --summary-json summary.json > run.txt 2>&1 &
run=$!
wait_frames 20
for _ in $(seq 600); do grep -q "short: ended after max_frames" run.txt && break; sleep 0.1; done
grep -q "short: ended after max_frames (10)" run.txt || { echo "the ten-frame view never ended"; cat run.txt; exit 1; }
kill $server; wait $server 2>/dev/null || true
for _ in $(seq 300); do grep -q "ip: stream lost" run.txt && break; sleep 0.1; done
grep -q "ip: stream lost" run.txt || { echo "the pipeline never noticed the server was gone"; cat run.txt; exit 1; }
sleep 3
before=$(ip_frames)
serve 2
wait_frames $((before + 20))
kill -INT $run
rc=0; wait $run || rc=$?
cat run.txt
[ $rc -eq 0 ] || { echo "the run failed: exit status $rc"; exit 1; }
/usr/bin/python3 - summary.json <<'PY'
import json, sys
s = {c["name"]: c for c in json.load(open(sys.argv[1]))["streams"]}
ip, gone, short = s["ip"], s["gone"], s["short"]
failures = []
if ip["outages"] < 1: failures.append(f"ip: outages {ip['outages']}")
if not ip["gap_seconds"] >= 3.0: failures.append(f"ip: gap {ip['gap_seconds']:.2f} s, the server was down 3 s")
if ip["frames_encoded"] < 40: failures.append(f"ip: {ip['frames_encoded']} frames encoded")
if gone["frames_read"] != 0: failures.append(f"gone: read {gone['frames_read']} frames")
if gone["reopened"] < 2: failures.append(f"gone: {gone['reopened']} reconnect attempts")
if short["frames_read"] != 10: failures.append(f"short: read {short['frames_read']} frames, max_frames is 10")
for c in (ip, gone, short):
    d = c["dropped"]
    if c["frames_read"] != c["frames_encoded"] + c["frames_failed"] + d["oldest"] + d["newest"]:
        failures.append(f"{c['name']}: frames unaccounted")
print(f"ip: {ip['frames_encoded']} frames, {ip['outages']} outage(s), {ip['gap_seconds']:.1f} s gap; "
      f"gone: {gone['reopened']} attempts")
for f in failures: print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
echo "rtsp ok"
