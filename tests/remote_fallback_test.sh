#!/usr/bin/env bash
# [encoder] fallback = "local": frames never wait on a node. The run starts
# with no node up (frames are encoded here), a node comes up (the streams
# move to it), the node is killed (SIGKILL: the streams come back here and
# keep flowing), then the run is stopped (SIGINT). Only the frames in flight
# on the node when it died may fail.
set -euo pipefail
vlcache="$1"; cfg="$2"
source "$(dirname "$0")/support/in_work_dir.sh"
port=$(free_port)
sed -e "s/127.0.0.1:5612/127.0.0.1:$port/" -e "s/max_frames = 120/max_frames = 600/" \
    -e 's/^remote_timeout_s = 30/remote_timeout_s = 30\nfallback = "local"/' "$cfg" > pipeline.toml
grep -q '^fallback = "local"' pipeline.toml || { echo "the fixture changed: no fallback set"; exit 1; }
lines() { [ -f dies.jsonl ] && wc -l < dies.jsonl || echo 0; }
wait_lines() {  # wait_lines N WHAT: until N frames came through
  for _ in $(seq 600); do [ "$(lines)" -ge "$1" ] && return 0; sleep 0.1; done
  echo "$2: only $(lines) frames came through"; cat run.txt; exit 1
}
timeout 90 "$vlcache" run pipeline.toml --summary-json summary.json > run.txt 2>&1 &
run=$!
wait_lines 20 "no node up, frames encoded here"
grep -q "encoding here until it is" run.txt || { echo "no notice of the fallback"; cat run.txt; exit 1; }
"$vlcache" node --role encoder --listen "$port" --model tiny > node.txt 2>&1 &
node=$!
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done
grep -q "listening" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
for _ in $(seq 600); do grep -q "moves from this process to 127.0.0.1:$port" run.txt && break; sleep 0.1; done
grep -q "moves from this process to 127.0.0.1:$port" run.txt || { echo "no stream moved to the node"; cat run.txt; exit 1; }
wait_lines $(( $(lines) + 20 )) "the node up"
kill -9 $node
wait_lines $(( $(lines) + 30 )) "the node killed, frames encoded here again"
kill -INT $run
set +e
wait $run
rc=$?
set -e
/usr/bin/python3 - "$rc" "$port" <<'PY'
import json, sys
rc, port = int(sys.argv[1]), sys.argv[2]
s = json.load(open("summary.json"))
failed = sum(st["frames_failed"] for st in s["streams"])
encoded = sum(st["frames_encoded"] for st in s["streams"])
nodes = {n["address"]: n for n in s["encoder"]["nodes"]}
local, node = nodes["local"], nodes["127.0.0.1:" + port]
print(f"fallback: {encoded} frames encoded ({local['frames']} here, {node['frames']} on the node), "
      f"{failed} failed, exit status {rc}")
assert rc == 0, rc
assert s["accounted"], "every frame must be accounted for"
assert local["frames"] >= 50, "frames before the node and after its death are encoded here"
assert node["frames"] >= 20, "frames go to the node while it is up"
# max_in_flight 2 per camera: at most the frames in flight when it died.
assert failed <= 4, f"{failed} frames failed: only those in flight on the killed node may"
assert not node["up"]
PY
grep -q "moves from 127.0.0.1:$port to this process" run.txt || { echo "no stream came back here"; exit 1; }
echo "fallback ok"
