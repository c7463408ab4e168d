#!/usr/bin/env bash
# The main job: the demo pipeline (configs/pipeline.toml): four cameras from
# the sample video, CLIP preprocessing, signatures, sharded reference gate,
# sparse ViT encoder batched across cameras, answers from a LLaMA-shaped
# decoder with KV reuse every 10 frames, JSON lines to the console,
# progress lines and a summary (also written to build/demo_summary.json).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/bootstrap.sh"
cd "$repo"  # the config names the tokenizer relative to the repository
exec "$repo/build/vlcache" run "$repo/configs/pipeline.toml" --summary-json "$repo/build/demo_summary.json" "$@"
