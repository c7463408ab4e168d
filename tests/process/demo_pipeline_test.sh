#!/usr/bin/env bash
# The demo exactly as shipped (configs/pipeline.toml, the shipped model, the
# demo's scenes), run in a scratch folder laid out like the repository so
# that nothing is written into the source tree.
#   demo_pipeline_test.sh VLCACHE REPO WORK
set -euo pipefail
vlcache="$1" repo="$2" work="$3"
rm -rf "$work"
mkdir -p "$work/build"
ln -s "$repo/configs" "$work/configs"
ln -s "$repo/models" "$work/models"
"$repo/scripts/render_demo_scenes.sh" "$vlcache" "$work/build/demo-scenes"
cd "$work"
"$vlcache" validate configs/pipeline.toml
exec "$vlcache" run configs/pipeline.toml --summary-json "$work/summary.json"
