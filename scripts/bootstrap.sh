#!/usr/bin/env bash
# Installs what vlcache needs from Debian's archive (only what is missing),
# points BLAS at OpenBLAS-OpenMP, and builds into build/. Safe to rerun.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  g++ cmake ninja-build pkg-config ccache
  libcaf-dev libtorch-dev libopenblas0-openmp
  libopencv-dev opencv-doc
  cppzmq-dev libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
  libsentencepiece-dev sentencepiece libcpp-httplib-dev
  libgtest-dev libbenchmark-dev
  python3-torch python3-numpy python3-pil python3-zmq  # reference checks, Python example
  python3-sentencepiece  # tools/train_tiny_llava.py (retraining the shipped model)
  python3-prometheus-client  # parses /metrics in the tests
  chromium  # the live view's end-to-end test (headless)
  ffmpeg  # scripts/make_camera_clips.sh (the noisy-camera clips and their test)
  gir1.2-gst-rtsp-server-1.0 python3-gi gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly  # tools/rtsp_camera.py
  openssl  # the HTTPS view test makes a self-signed certificate
)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The OpenAI API's test runs the official Node client (npm install openai):
# Debian's node and npm, unless a node with its npm is there already.
command -v npm > /dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# LibTorch on the reference BLAS is ~45x slower; the pthread OpenBLAS
# oversubscribes against LibTorch's OpenMP threads. Pin the OpenMP build.
for lib in libblas.so.3 liblapack.so.3; do
  alt="/usr/lib/x86_64-linux-gnu/openblas-openmp/$lib"
  name="$lib-x86_64-linux-gnu"
  if [ -e "$alt" ] && [ "$(readlink -f "/etc/alternatives/$name" 2>/dev/null)" != "$alt" ]; then
    as_root update-alternatives --set "$name" "$alt"
  fi
done

export CCACHE_BASEDIR="$repo"
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$repo/build"
