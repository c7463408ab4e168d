#!/usr/bin/env bash
# `vlcache tune` on the tiny preset writes a profile; `validate` accepts a
# pipeline naming it; `run` then holds its cameras where the profile says
# (no check within the run, so the start rung stays), not where the built-in ladder
# starts; and a pipeline of another model shape refuses it, naming both shapes.
set -euo pipefail
vlcache="$1"; video="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$vlcache" tune --model tiny --video "$video" --frames 8 --strides 1 --target 0.9 --out "$work/tiny.toml" \
  --plot "$work/front.png" > "$work/tune.txt" 2>&1 || { cat "$work/tune.txt"; echo "tune failed"; exit 1; }
grep -q "^profile: " "$work/tune.txt" || { cat "$work/tune.txt"; echo "no profile line"; exit 1; }
[ -s "$work/front.png" ] || { echo "no plot"; exit 1; }
start=$(/usr/bin/python3 -c '
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))
print(p["ladder"]["tolerances"][p["ladder"]["start"]])' "$work/tiny.toml")
pipeline() {  # profile line -> config
  cat <<TOML
[input]
image_size = 32
patch_size = 8
[encoder]
model = "tiny"
$1
[fidelity]
shadow_every = 1000  # no check within the run: the camera stays on its start rung
[[camera]]
name = "c"
source = "$video"
max_frames = 12
TOML
}
pipeline "profile = \"$work/tiny.toml\"" > "$work/with.toml"
pipeline "" > "$work/without.toml"
"$vlcache" validate "$work/with.toml" > "$work/v.txt" 2>&1 || { cat "$work/v.txt"; echo "validate refused the profile"; exit 1; }
held() {  # config -> the tolerance the camera was held at
  "$vlcache" run "$1" --summary-json "$work/s.json" > "$work/run.txt" 2>&1 || { cat "$work/run.txt"; exit 1; }
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["streams"][0]["fidelity"]["control"]["layer_tolerance"])' "$work/s.json"
}
with=$(held "$work/with.toml")
without=$(held "$work/without.toml")
echo "profile start $start; held with the profile $with, without $without"
/usr/bin/python3 -c 'import sys; a,b,c = map(float, sys.argv[1:]); sys.exit(0 if a == b and b != c else 1)' "$start" "$with" "$without" ||
  { echo "the profile did not change what run does"; exit 1; }
sed 's/model = "tiny"/model = "vit-b16"/; s/image_size = 32/image_size = 224/; s/patch_size = 8/patch_size = 16/' \
  "$work/with.toml" > "$work/other.toml"
if "$vlcache" validate "$work/other.toml" > "$work/o.txt" 2>&1; then cat "$work/o.txt"; echo "a profile for another shape was accepted"; exit 1; fi
grep -q "was measured on a model of 32/8" "$work/o.txt" && grep -q "is 224/16" "$work/o.txt" ||
  { cat "$work/o.txt"; echo "the refusal does not name both shapes"; exit 1; }
echo "profile written, accepted, applied and refused for another shape"
