#!/usr/bin/env bash
# Two encoder nodes share four cameras (real processes on loopback): each
# node holds two streams and encodes frames. Then one node is killed: its
# streams move to the other, whose frames keep coming for all four
# cameras; the failed batch is counted and every frame accounted for. A new
# node on the killed one's port is reached again and two streams move back.
set -euo pipefail
vlcache="$1"; video="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
p1=$(free_port); p2=$(free_port)
{
  printf '[pipeline]\nname = "two-nodes"\nmax_in_flight = 2\ndrop_policy = "block"\nprogress_seconds = 0\n'
  printf '[input]\nimage_size = 32\npatch_size = 8\n'
  printf '[encoder]\nremote = ["127.0.0.1:%s", "127.0.0.1:%s"]\nremote_timeout_s = 30\nbatch_tokens = 8\nbatch_timeout_ms = 5\n' "$p1" "$p2"
  for i in 0 1 2 3; do
    printf '[[camera]]\nname = "cam%s"\nsource = "%s"\nstart_frame = %s\nmax_frames = 400\npace_fps = 20\n' "$i" "$video" $((i * 150))
  done
  printf '[[sink]]\nkind = "jsonl"\npath = "two.jsonl"\n'
} > pipeline.toml
"$vlcache" node --role encoder --listen "$p1" --model tiny > node1.txt 2>&1 &
node1=$!
"$vlcache" node --role encoder --listen "$p2" --model tiny > node2.txt 2>&1 &
for n in node1 node2; do
  for _ in $(seq 600); do grep -q "listening" $n.txt && break; sleep 0.1; done
  grep -q "listening" $n.txt || { echo "$n never listened"; cat $n.txt; exit 1; }
done
timeout 240 "$vlcache" run pipeline.toml --summary-json summary.json > run.txt 2>&1 &  # a hung run ends, and says so
run=$!
frames() { if [ -f two.jsonl ]; then grep -c "\"stream\":\"$1\"" two.jsonl || true; else echo 0; fi; }
wait_all() {  # every camera at least $1 frames
  for _ in $(seq 600); do
    local ok=1
    for c in cam0 cam1 cam2 cam3; do [ "$(frames $c)" -ge "$1" ] || ok=0; done
    [ $ok -eq 1 ] && return 0
    kill -0 $run 2>/dev/null || break
    sleep 0.1
  done
  echo "cameras: $(for c in cam0 cam1 cam2 cam3; do echo -n "$c $(frames $c) "; done), waited for $1 each"; cat run.txt; exit 1
}
wait_all 15
kill -9 $node1
before=$(for c in cam0 cam1 cam2 cam3; do frames $c; done | sort -n | tail -n 1)
wait_all $((before + 15))
"$vlcache" node --role encoder --listen "$p1" --model tiny > node1b.txt 2>&1 &
for _ in $(seq 600); do grep -q "listening" node1b.txt && break; sleep 0.1; done
grep -q "listening" node1b.txt || { echo "the new node never listened"; cat node1b.txt; exit 1; }
for _ in $(seq 300); do grep -q "reconnected to the node at 127.0.0.1:$p1" run.txt && break; sleep 0.1; done
grep -q "reconnected to the node at 127.0.0.1:$p1" run.txt || { echo "the node back was not reached"; cat run.txt; exit 1; }
again=$(for c in cam0 cam1 cam2 cam3; do frames $c; done | sort -n | tail -n 1)
wait_all $((again + 15))
kill -INT $run
# The drain takes well under a second here; a run still going a minute later
# is stuck: a second signal makes it say what it waits for, and the test fails.
for _ in $(seq 600); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
stuck=0
if kill -0 $run 2>/dev/null; then stuck=1; kill -INT $run; fi
rc=0; wait $run || rc=$?
grep -v '^{' run.txt | tail -n 24
[ $stuck -eq 0 ] || { echo "the run did not end within 60 s of SIGINT (exit $rc)"; exit 1; }
[ $rc -eq 0 ] || { echo "the run failed: $rc"; exit 1; }
/usr/bin/python3 - summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
nodes = s["encoder"]["nodes"]
assert len(nodes) == 2, nodes
first, second = nodes
assert first["frames"] > 0 and second["frames"] > 0, "both nodes must have encoded frames"
assert first["failures"] >= 1 and first["reconnects"] >= 1 and first["up"], first
assert first["streams"] == 2 and second["streams"] == 2, f"rebalanced after the node came back: {nodes}"
assert s["accounted"], "every frame must be accounted for"
failed = sum(x["frames_failed"] for x in s["streams"])
print(f"two nodes ok: {first['frames']} + {second['frames']} frames; the killed node failed {first['failures']} "
      f"batch(es), {failed} frames failed; back, it holds 2 streams again")
PY
