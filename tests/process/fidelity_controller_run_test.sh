#!/usr/bin/env bash
# The fidelity controller in a real run: a clip clean for 3 s, then with
# sensor noise (sigma 8), through the trained scene model with shadow checks
# on every other frame. A target the cheap rungs cannot hold makes the
# controller move the camera safer; a loose one lets it move cheaper. The
# summary JSON says where each camera ended and how it moved.
set -euo pipefail
vlcache="$1"; repo="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ffmpeg -v error -y -i /usr/share/doc/opencv-doc/examples/data/vtest.avi -frames:v 60 \
  -vf "noise=alls=8:allf=t:enable='gte(n,30)'" -c:v ffv1 -pix_fmt yuv420p "$work/rise.avi"
run() {  # target -> summary JSON path
  cat > "$work/p.toml" <<TOML
[pipeline]
drop_policy = "block"
[input]
image_size = 160
patch_size = 16
[encoder]
model = "$repo/models/tiny-llava-scenes"
[fidelity]
target = $1
shadow_every = 2
max_share = 5.0
[[camera]]
name = "rise"
source = "$work/rise.avi"
TOML
  "$vlcache" run "$work/p.toml" --summary-json "$work/s$1.json" > "$work/out$1.txt" 2>&1 ||
    { cat "$work/out$1.txt"; echo "run failed at target $1"; exit 1; }
  grep -q "held at layer tolerance" "$work/out$1.txt" || { cat "$work/out$1.txt"; echo "no controller line"; exit 1; }
  echo "$work/s$1.json"
}
strict=$(run 0.99995)
loose=$(run 0.9)
/usr/bin/python3 - "$strict" "$loose" <<'PY'
import json, sys
strict, loose = (json.load(open(p)) for p in sys.argv[1:])
def control(s):
    c = s["streams"][0]["fidelity"]["control"]
    return c, s["streams"][0]["fidelity"]["checks"], s["streams"][0]["frames_encoded"]
cs, checks_s, enc_s = control(strict)
cl, checks_l, enc_l = control(loose)
print(f"strict target: {checks_s} checks, {cs['tighter']} moves safer, ends at tolerance {cs['layer_tolerance']}")
print(f"loose target: {checks_l} checks, {cl['looser']} moves cheaper, ends at tolerance {cl['layer_tolerance']}")
failures = []
if enc_s != 60 or enc_l != 60: failures.append(f"frames encoded {enc_s}, {enc_l} of 60")
if checks_s < 10: failures.append(f"only {checks_s} checks")
if cs["tighter"] < 1: failures.append("the strict target did not move the camera safer")
if cl["looser"] < 1: failures.append("the loose target did not move the camera cheaper")
if cs["layer_tolerance"] >= cl["layer_tolerance"]: failures.append("the strict target ended no safer than the loose one")
if failures: sys.exit("; ".join(failures))
print("controller moved both ways")
PY
