#!/usr/bin/env bash
# The main job: signatures and cache decisions over the sample video, two
# camera streams at different offsets, with per-frame lines and a summary.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/bootstrap.sh"
video="${VLCACHE_VIDEO:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}"
exec "$repo/build/vlcache" scan --video "$video" --config "$repo/configs/demo.toml" \
  --streams 2 --stream-offset 300 --json "$repo/build/demo_summary.json" "$@"
