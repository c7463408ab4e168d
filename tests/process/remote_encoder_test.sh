#!/usr/bin/env bash
# The encoder on a separate node process (CAF remote actor over tcp
# loopback) gives the same tokens as the in-process one: same frames, same
# tokens recomputed, same token norms (1e-5).
set -euo pipefail
vlcache="$1"; local_cfg="$2"; remote_cfg="$3"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
# Copies here: the jsonl paths in them are read from the config's folder.
cp "$local_cfg" "$remote_cfg" .
local_cfg="$work/$(basename "$local_cfg")"; remote_cfg="$work/$(basename "$remote_cfg")"
"$vlcache" node --role encoder --listen 5611 --model tiny > node.txt 2>&1 &
node=$!
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done   # handshake
grep -q "listening" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
timeout 60 "$vlcache" run "$remote_cfg" --summary-json remote.json > remote.txt 2>&1 || { echo "remote run failed ($?)"; grep -v '^{' remote.txt; exit 1; }
timeout 60 "$vlcache" run "$local_cfg" --summary-json local.json > local.txt 2>&1 || { echo "local run failed ($?)"; grep -v '^{' local.txt; exit 1; }
kill -TERM $node
for _ in $(seq 100); do kill -0 $node 2>/dev/null || break; sleep 0.1; done
kill -0 $node 2>/dev/null && { echo "node did not stop on SIGTERM"; kill -9 $node; exit 1; }
/usr/bin/python3 - <<'PY'
import json
def lines(path):
    out = {}
    for l in open(path):
        j = json.loads(l)
        out[(j["stream"], j["seq"])] = j
    return out
local, remote = lines("tiny_pipeline.jsonl"), lines("remote.jsonl")
assert local.keys() == remote.keys() and len(local) == 50, (len(local), len(remote))
for k in local:
    a, b = local[k], remote[k]
    assert a["tokens_computed"] == b["tokens_computed"] and a["full"] == b["full"], (k, a, b)
    assert abs(a["token_norm_mean"] - b["token_norm_mean"]) <= 1e-5 * abs(a["token_norm_mean"]), (k, a, b)
l, r = json.load(open("local.json")), json.load(open("remote.json"))
print("remote encoder: same tokens for", len(local), "frames; encode p50 local %.2f ms, remote %.2f ms"
      % (l["latency"]["encode"]["p50_ms"], r["latency"]["encode"]["p50_ms"]))
PY
