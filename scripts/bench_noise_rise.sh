#!/usr/bin/env bash
# A camera whose noise rises mid-run: vtest.avi clean for 20 s, then sensor
# noise of sigma 8 (ffmpeg), through what a pipeline with MODEL and no tuning
# keys runs (`bench encoder --defaults`: profile, gate, fidelity controller,
# shadow checks charged). Prints the share recomputed by layer before and
# after the change, and how long after it the frames' token cosine p1 is
# back at the target for good. Usage: bench_noise_rise.sh VLCACHE [MODEL] [OUT_DIR]
set -euo pipefail
vlcache="$1"; model="${2:-vit-b16}"; out="${3:-build/noise-rise}"
video=/usr/share/doc/opencv-doc/examples/data/vtest.avi
mkdir -p "$out"
clip="$out/noise_rise.avi"
[ -s "$clip" ] || ffmpeg -v error -y -i "$video" -frames:v 400 \
  -vf "noise=alls=8:allf=t:enable='gte(n,200)'" -c:v ffv1 -pix_fmt yuv420p "$clip"
name="$(basename "$model")"
"$vlcache" bench encoder --model "$model" --video "$clip" --frames 400 --streams 1 --defaults \
  --json "$out/$name.json" > "$out/$name.txt" 2>&1 || { cat "$out/$name.txt"; exit 1; }
grep -E '^pipeline defaults|^1 |controller:' "$out/$name.txt"
/usr/bin/python3 - "$out/$name.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
run = j["runs"][0]
pf = run["per_frame"]
frames, share, p1, gate = pf["frame"], pf["layer_share"], pf["cosine_p1"], pf["share"]
tol = pf.get("layer_tolerance", [])
change, fps = 200, 10.0
clean = [s for f, s in zip(frames, share) if 100 <= f < change]
noisy = [s for f, s in zip(frames, share) if f >= change + 50]
clean_share = sum(clean) / len(clean)
noisy_share = sum(noisy) / len(noisy)
# The target the controller held (the profile's), from the pipeline defaults line.
target = None
for line in open(sys.argv[1].replace(".json", ".txt")):
    if line.startswith("pipeline defaults:") and "target" in line:
        target = float(line.split("target ")[1].split()[0].rstrip(";"))
after = [(f, c) for f, c in zip(frames, p1) if f >= change]
back = next((f for i, (f, c) in enumerate(after) if all(c2 >= target for _, c2 in after[i:i + 30])), None)
def mean_over(xs, lo, hi):
    v = [x for f, x in zip(frames, xs) if lo <= f < hi]
    return sum(v) / len(v)
g_clean, g_noisy = mean_over(gate, 100, change), mean_over(gate, change + 50, 10**9)
print(f"gate misses: clean {100 * g_clean:.1f} %, noisy {100 * g_noisy:.1f} % ({g_noisy / g_clean:.2f}x)")
print(f"by layer: clean {100 * clean_share:.1f} %, noisy {100 * noisy_share:.1f} % ({noisy_share / clean_share:.2f}x)")
if back is None:
    print(f"cosine p1 never stays at the target {target} after the change")
else:
    print(f"cosine p1 at the target {target} for good {(back - change) / fps:.1f} s after the change")
if tol:
    print("layer tolerance: before the change %g, at the end %g" % (tol[change - 2], tol[-1]))
PY
