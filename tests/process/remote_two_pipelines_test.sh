#!/usr/bin/env bash
# Two pipelines on one encoder node keep apart: both number their cameras
# from 0, on different footage; pipeline A's tokens with B running beside it
# on the same node are the tokens A gets alone (before, the node keyed its
# token stores by the client's stream id only and A's frames were encoded
# against B's cached tokens).
#   remote_two_pipelines_test.sh VLCACHE VIDEO
set -euo pipefail
vlcache="$1"; video="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
port=$(free_port)
pipeline() {  # NAME START_FRAME: one camera named "cam" (stream id 0), paced so the two overlap
  cat > "$1.toml" <<TOML
[pipeline]
name = "$1"
progress_seconds = 0
[input]
image_size = 32
patch_size = 8
[encoder]
model = "tiny"
remote = "127.0.0.1:$port"
[llm]
enabled = false
[[camera]]
name = "cam"
source = "$video"
start_frame = $2
max_frames = 60
pace_fps = 30
[[sink]]
kind = "jsonl"
path = "$1.jsonl"
TOML
}
pipeline alone 0
pipeline a 0
pipeline b 500
"$vlcache" node --role encoder --listen "$port" --model tiny --store-budget-mb 64 > node.txt 2>&1 &
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done
grep -q "listening" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
"$vlcache" run alone.toml > alone.txt 2>&1 || { cat alone.txt; exit 1; }
"$vlcache" run a.toml > a.txt 2>&1 &
first=$!
"$vlcache" run b.toml > b.txt 2>&1 || { cat b.txt; exit 1; }
wait $first || { cat a.txt; exit 1; }
/usr/bin/python3 - <<'PY'
import json
def lines(path):
    return {j["seq"]: j for j in map(json.loads, open(path))}
alone, shared, other = lines("alone.jsonl"), lines("a.jsonl"), lines("b.jsonl")
assert len(alone) == len(shared) == len(other) == 60, (len(alone), len(shared), len(other))
differ = [s for s in alone if alone[s]["tokens_computed"] != shared[s]["tokens_computed"]
          or abs(alone[s]["token_norm_mean"] - shared[s]["token_norm_mean"]) > 1e-5 * abs(alone[s]["token_norm_mean"])]
assert not differ, f"A's tokens differ with B on the node on {len(differ)} of 60 frames: {differ[:10]}"
assert any(alone[s]["token_norm_mean"] != other[s]["token_norm_mean"] for s in alone), "B's footage is not A's"
print("two pipelines on one node: A's 60 frames match A alone")
PY
