#!/usr/bin/env bash
# Makes the camera-condition clips of the gate table in docs/design/cache-decision.md from a sample
# video with ffmpeg: clean, sensor noise, JPEG at quality ~50, a slow
# lighting ramp and a 2 px/frame pan. Lossless (FFV1) except the JPEG clip,
# whose frames are the JPEGs themselves, so decoding adds nothing.
# Usage: scripts/make_camera_clips.sh OUT_DIR [FRAMES] [VIDEO]
set -euo pipefail
out="${1:?usage: make_camera_clips.sh OUT_DIR [FRAMES] [VIDEO]}"
frames="${2:-100}"
video="${3:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}"
command -v ffmpeg >/dev/null || { echo "make_camera_clips: ffmpeg is missing (scripts/bootstrap.sh installs it)" >&2; exit 1; }
[ -r "$video" ] || { echo "make_camera_clips: cannot read $video" >&2; exit 1; }
mkdir -p "$out"

clip() {  # name, codec arguments, filter
  local name="$1" codec="$2" filter="$3"
  # shellcheck disable=SC2086
  ffmpeg -v error -y -i "$video" -frames:v "$frames" -vf "$filter" $codec "$out/$name.avi"
  echo "$out/$name.avi"
}
lossless="-c:v ffv1 -pix_fmt yuv420p"
clip clean "$lossless" "null"
# Temporal uniform noise of strength 6 on every plane, new each frame.
clip noisy "$lossless" "noise=alls=6:allf=t"
# ffmpeg's MJPEG at qscale 8 matches IJG quality 50 on this video (38.1 dB PSNR both).
clip jpeg50 "-c:v mjpeg -q:v 8 -qmin 8 -qmax 8 -pix_fmt yuvj420p" "null"
# Brightness rises by 0.15 of full scale over 100 frames (0.4 levels a frame).
clip ramp "$lossless" "eq=eval=frame:brightness=0.0015*n"
# A 576x576 window sliding right 2 source pixels a frame.
clip pan "$lossless" "crop=576:576:min(2*n\,192):0"
