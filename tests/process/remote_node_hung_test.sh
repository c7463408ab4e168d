#!/usr/bin/env bash
# SIGINT while the encoder node hangs (SIGSTOP: alive, connected, silent):
# the batch waiting on it fails at once, counted, and the run ends within
# seconds, not after [encoder].remote_timeout_s (30 s here).
set -euo pipefail
vlcache="$1"; cfg="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
port=$(free_port)
sed -e "s/127.0.0.1:5612/127.0.0.1:$port/" -e "s/max_frames = 120/max_frames = 400/" "$cfg" > pipeline.toml
"$vlcache" node --role encoder --listen "$port" --model tiny > node.txt 2>&1 &
node=$!
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done
grep -q "listening" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
"$vlcache" run pipeline.toml --summary-json summary.json > run.txt 2>&1 &
run=$!
for _ in $(seq 300); do [ -f dies.jsonl ] && [ "$(wc -l < dies.jsonl)" -ge 20 ] && break; sleep 0.1; done
[ "$(wc -l < dies.jsonl)" -ge 20 ] || { echo "no frames came through the node"; cat run.txt; exit 1; }
kill -STOP $node
sleep 1   # frames keep coming: a batch now waits on the silent node
asked=$(date +%s.%N)
kill -INT $run
rc=0; wait $run || rc=$?
ended=$(date +%s.%N)
kill -KILL $node 2>/dev/null || true
grep -v '^{' run.txt | tail -n 12
/usr/bin/python3 - "$rc" "$asked" "$ended" <<'PY'
import json, sys
rc, asked, ended = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
s = json.load(open("summary.json"))
failed = sum(st["frames_failed"] for st in s["streams"])
took = ended - asked
print(f"hung node: SIGINT took {took:.1f} s to end the run (exit status {rc}); {failed} frames failed, accounted {s['accounted']}")
assert rc == 0, rc
assert s["accounted"], "every frame must be accounted for"
assert failed >= 1, "the batch on the hung node must fail, counted"
assert took < 10, f"the stop waited {took:.1f} s on the hung node"
PY
echo "hung ok"
