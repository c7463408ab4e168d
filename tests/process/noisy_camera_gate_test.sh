#!/usr/bin/env bash
# The noise-robust gate on clips made from the sample video by ffmpeg: sensor
# noise and a JPEG re-encode cost at most twice the tokens of the clean clip,
# while the plain MAD gate recomputes nearly every noisy patch (so this test
# can fail), and a pan is still seen as a change. Shares from `vlcache scan`.
set -euo pipefail
vlcache="$1"; repo="$2"; robust_config="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$repo/scripts/make_camera_clips.sh" "$work/clips" 30 > /dev/null
printf '[input]\nimage_size = 224\npatch_size = 16\n[gate]\nmad = 3.0\n' > "$work/raw.toml"
share() {  # config, clip -> mean share of patches changed after the first frame
  "$vlcache" scan --video "$work/clips/$2.avi" --config "$1" --quiet --json "$work/s.json" > "$work/out.txt" 2>&1 ||
    { cat "$work/out.txt"; echo "scan failed on $2"; exit 1; }
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gates"][0]["mean_changed"])' "$work/s.json"
}
clean_raw=$(share "$work/raw.toml" clean)
noisy_raw=$(share "$work/raw.toml" noisy)
clean=$(share "$robust_config" clean)
noisy=$(share "$robust_config" noisy)
jpeg=$(share "$robust_config" jpeg50)
pan=$(share "$robust_config" pan)
echo "plain mad<=3: clean $clean_raw noisy $noisy_raw; noise-robust: clean $clean noisy $noisy jpeg50 $jpeg pan $pan"
/usr/bin/python3 - "$clean_raw" "$noisy_raw" "$clean" "$noisy" "$jpeg" "$pan" <<'PY'
import sys
clean_raw, noisy_raw, clean, noisy, jpeg, pan = map(float, sys.argv[1:])
failures = []
if noisy_raw < 0.5: failures.append(f"the plain gate should see noise as change ({noisy_raw:.3f})")
if noisy > 2 * clean_raw: failures.append(f"noisy {noisy:.3f} > 2x clean {clean_raw:.3f}")
if jpeg > 2 * clean_raw: failures.append(f"jpeg50 {jpeg:.3f} > 2x clean {clean_raw:.3f}")
if pan < 0.3: failures.append(f"a pan must stay a change ({pan:.3f})")
for f in failures: print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
