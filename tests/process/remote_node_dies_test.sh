#!/usr/bin/env bash
# An encoder node killed (SIGKILL) in the middle of a run: the pipeline
# notices at once (the node is monitored), the frames it cannot encode fail,
# counted, and the run ends when its cameras do instead of stalling on a
# request timeout (the timeout in the config is 30 s; the cameras have about
# 4 s of frames left when the node dies). With "restart", a new node comes
# up on the same port 1.5 s later: the pipeline reconnects and encodes there
# (the run is stopped once 40 more frames came through).
# With "wrong-model", the new node runs a model of another grid: refused.
set -euo pipefail
vlcache="$1"; cfg="$2"; mode="${3:-}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
# A port nobody holds (a fixed one can sit in TIME_WAIT after a previous run).
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed "s/127.0.0.1:5612/127.0.0.1:$port/" "$cfg" > pipeline.toml
# With a second node the cameras run long (60 s) and the run is stopped
# (SIGINT) once what is checked has happened, so a slow start of the second
# node under load (a ViT-B/16 takes seconds to initialise on a busy machine)
# cannot outlast them.
if [ -n "$mode" ]; then sed -i "s/max_frames = 120/max_frames = 1200/" pipeline.toml; fi
"$vlcache" node --role encoder --listen "$port" --model tiny > node.txt 2>&1 &
node=$!
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done   # handshake
grep -q "listening" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
timeout 100 "$vlcache" run pipeline.toml --summary-json summary.json > run.txt 2>&1 &
run=$!
# Frames flowing through the node first.
for _ in $(seq 300); do [ -f dies.jsonl ] && [ "$(wc -l < dies.jsonl)" -ge 20 ] && break; sleep 0.1; done
[ "$(wc -l < dies.jsonl)" -ge 20 ] || { echo "no frames came through the node"; cat run.txt; exit 1; }
kill -9 $node
killed=$(date +%s.%N)
before=$(wc -l < dies.jsonl)
if [ "$mode" = restart ] || [ "$mode" = wrong-model ]; then
  sleep 1.5
  model=tiny
  [ "$mode" = wrong-model ] && model=vit-b16   # 224/16: not the pipeline's 32/8 grid
  "$vlcache" node --role encoder --listen "$port" --model "$model" > node2.txt 2>&1 &
  for _ in $(seq 600); do grep -q "listening" node2.txt && break; sleep 0.1; done
  grep -q "listening" node2.txt || { echo "the second node never listened"; cat node2.txt; exit 1; }
  for _ in $(seq 600); do
    if [ "$mode" = restart ]; then [ "$(wc -l < dies.jsonl)" -ge $((before + 40)) ] && break
    else grep -q "is refused" run.txt && break; fi
    sleep 0.1
  done
  # Drains the frames in flight. A run that already ended never saw what
  # is checked: say so, the checks below then fail with its log.
  kill -INT $run 2>/dev/null || { echo "the run ended before the checked event (its log follows)"; tail -n 20 run.txt; }
fi
set +e
wait $run
rc=$?
set -e
ended=$(date +%s.%N)
/usr/bin/python3 - "$rc" "$killed" "$ended" "$mode" "$before" <<'PY'
import json, sys
rc, killed, ended = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
mode, before = sys.argv[4], int(sys.argv[5])
s = json.load(open("summary.json"))
failed = sum(st["frames_failed"] for st in s["streams"])
encoded = sum(st["frames_encoded"] for st in s["streams"])
after = ended - killed
print(f"node killed: run ended {after:.1f} s later (exit status {rc}); {encoded} frames encoded, {failed} failed, accounted {s['accounted']}")
assert s["accounted"], "every frame must be accounted for"
assert failed > 0, "frames after the kill must fail, counted"
assert encoded >= 20
if not mode:
    assert after < 15, f"the run stalled {after:.1f} s after the node died"
if mode == "wrong-model":
    reconnects = s["encoder"]["reconnects"]
    print(f"a node with another model: {reconnects} reconnects, {failed} frames failed")
    assert reconnects == 0, "a node encoding another grid must be refused"
if mode == "restart":
    reconnects = s["encoder"]["reconnects"]
    print(f"restarted node: {reconnects} reconnect(s), {encoded} frames encoded in all, {before} before the kill")
    assert reconnects >= 1
    assert encoded >= before + 20, "frames must flow through the restarted node"
PY
if [ "$mode" = wrong-model ]; then grep -m1 "is refused" run.txt; fi
