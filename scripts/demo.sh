#!/usr/bin/env bash
# The main job: the demo pipeline (configs/pipeline.toml): four cameras on
# rendered scenes with known answers, the tiny LLaVA trained on such scenes
# (models/tiny-llava-scenes), CLIP preprocessing, signatures, sharded
# reference gate, sparse ViT encoder batched across cameras, answers with KV
# reuse every 10 frames scored against the scenes' truth, JSON lines to the
# console, progress lines and a summary with the accuracy (also written to
# build/demo_summary.json). Extra arguments go to `vlcache run`.
# The sample video with random weights: build/vlcache run configs/vtest.toml
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/bootstrap.sh"
cd "$repo"  # the config names the model and the scenes relative to the repository
scripts/render_demo_scenes.sh "$repo/build/vlcache" build/demo-scenes
exec "$repo/build/vlcache" run configs/pipeline.toml --summary-json "$repo/build/demo_summary.json" "$@"
