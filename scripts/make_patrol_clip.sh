#!/usr/bin/env bash
# Renders a patrol clip for view memory: a camera cycling between three
# presets (three 288x288 windows of a sample video that share no pixel),
# dwelling DWELL frames on each, the video running on meanwhile, as a PTZ
# camera on a patrol does. Lossless (FFV1), so decoding adds nothing.
# Usage: scripts/make_patrol_clip.sh OUT.avi [FRAMES] [DWELL] [VIDEO]
set -euo pipefail
out="${1:?usage: make_patrol_clip.sh OUT.avi [FRAMES] [DWELL] [VIDEO]}"
frames="${2:-600}"
dwell="${3:-100}"
video="${4:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}"
command -v ffmpeg >/dev/null || { echo "make_patrol_clip: ffmpeg is missing (scripts/bootstrap.sh installs it)" >&2; exit 1; }
[ -r "$video" ] || { echo "make_patrol_clip: cannot read $video" >&2; exit 1; }
# Preset k = floor(n / dwell) mod 3: top left, top right, bottom middle (768x576 source).
k="mod(floor(n/$dwell)\,3)"
ffmpeg -v error -y -i "$video" -frames:v "$frames" \
  -vf "crop=288:288:x='if(eq($k\,0)\,0\,if(eq($k\,1)\,480\,240))':y='if(eq($k\,2)\,288\,0)'" \
  -c:v ffv1 -pix_fmt yuv420p "$out"
echo "$out"
