#!/usr/bin/env bash
# Renders the demo's four camera scenes (configs/pipeline.toml) into
# OUT (default build/demo-scenes): coloured shapes over the held-out segment
# of the sample video (frames 590.. ; the model never trained on them), with
# seeds no training or held-out set uses. Deterministic: the same pixels and
# truth every time.
set -euo pipefail
vlcache="$1"
out="${2:-build/demo-scenes}"
seed=2001
for cam in gate hall stairs exit; do
  "$vlcache" scene --seed "$seed" --start 590 --frames 200 --out "$out/$cam" >/dev/null
  seed=$((seed + 1))
done
echo "demo scenes: $out/{gate,hall,stairs,exit}"
