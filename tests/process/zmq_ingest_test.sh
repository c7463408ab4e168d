#!/usr/bin/env bash
# Real processes on loopback: a pipeline with a ZeroMQ ingest and sink, two
# camera processes, a listener process and a sender of malformed messages.
# A third camera ships changed patches only.
# Checks: answers for every stream arrive in per-stream order; the malformed
# messages are counted and the streams go on; a camera killed and restarted
# resumes its stream and the accounting shows the frames lost in transit.
set -euo pipefail
vlcache="$1"; config="$2"; garbage="$3"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
video=/usr/share/doc/opencv-doc/examples/data/vtest.avi

"$vlcache" run "$config" --summary-json "$work/summary.json" > "$work/pipeline.txt" 2>&1 &
pipeline=$!
# Handshake: camera nodes start once the ingest is listening (a PUSH socket
# with no peer would drop their first frames).
for _ in $(seq 600); do grep -q "ingest: listening" "$work/pipeline.txt" && break; sleep 0.1; done
grep -q "ingest: listening" "$work/pipeline.txt" || { echo "pipeline never listened"; cat "$work/pipeline.txt"; exit 1; }
# The listener waits for lines of each stream it checks (a shared count
# could be filled by the busier cameras alone).
"$vlcache" listen tcp://127.0.0.1:5593 --stream lobby,street --each 5 --timeout-s 150 > "$work/listen.txt" &
listener=$!
"$vlcache" camera --source "$video" --to tcp://127.0.0.1:5592 --stream lobby --frames 40 --fps 20 > /dev/null &
cam_a=$!
# Handshake: a lobby line at the listener proves its subscription is joined
# (PUB/SUB drops what a late joiner missed) before street, the short stream, starts.
for _ in $(seq 1200); do grep -q "^lobby {" "$work/listen.txt" && break; sleep 0.1; done
grep -q "^lobby {" "$work/listen.txt" || { echo "listener got nothing for lobby"; cat "$work/pipeline.txt"; exit 1; }
# A third camera preprocesses and gates itself and ships only changed patches.
"$vlcache" camera --source "$video" --to tcp://127.0.0.1:5592 --stream porch --start 600 --frames 30 --fps 20 \
  --ship-patches --image-size 32 --patch-size 8 --keyframe-every 10 > "$work/porch.txt" &
cam_p=$!
"$vlcache" camera --source "$video" --to tcp://127.0.0.1:5592 --stream street --start 300 --frames 10 --fps 20 > /dev/null
"$garbage" tcp://127.0.0.1:5592
# street comes back from frame 320: frames 310..319 were never sent.
"$vlcache" camera --source "$video" --to tcp://127.0.0.1:5592 --stream street --start 320 --frames 10 --fps 20 > /dev/null
wait $cam_a
wait $cam_p
grep -q "patches per frame sent of 16" "$work/porch.txt" || { cat "$work/porch.txt"; exit 1; }
wait $listener
wait $pipeline   # stop_when_idle: ends once both streams went silent
cat "$work/pipeline.txt" | grep -v '^{'
for s in lobby street; do
  grep -q "^$s {" "$work/listen.txt" || { echo "listener got nothing for $s"; exit 1; }
  grep "^$s {" "$work/listen.txt" | sed 's/.*"seq":\([0-9]*\).*/\1/' | awk 'NR>1 && $1<=prev {bad=1} {prev=$1} END {exit bad}' \
    || { echo "$s out of order at the listener"; exit 1; }
done
/usr/bin/python3 - "$work/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
streams = {x["name"]: x for x in s["streams"]}
assert [x["name"] for x in s["streams"]].count("street") == 1, \
    "street was closed and reopened: its restart took longer than [ingest].idle_timeout_s"
assert s["accounted"], "frames unaccounted"
assert streams["lobby"]["frames_read"] == 40, streams["lobby"]
assert streams["street"]["frames_read"] == 20, streams["street"]
assert streams["street"]["lost_in_transit"] == 10, streams["street"]
assert streams["porch"]["frames_read"] == 30 and streams["porch"]["frames_encoded"] >= 1, streams["porch"]
assert not any("patches" in reason for reason in s["ingest"]["rejected"]), s["ingest"]
rejected = sum(s["ingest"]["rejected"].values())
assert rejected >= 8, s["ingest"]
print("ingest ok: lobby 40 frames, street 20 frames with 10 lost in transit, porch 30 frames as patches,", rejected,
      "malformed messages rejected")
PY
