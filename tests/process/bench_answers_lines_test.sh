#!/usr/bin/env bash
# bench answers --answers: one JSON line per question asked (both strides),
# each with its scene, frame, kind, question, truth and both answers; the
# lines agree with the summary's counts.
set -euo pipefail
vlcache="$1"; model="$2"; scene="$3"
source "$(dirname "$0")/../support/in_work_dir.sh"
"$vlcache" bench answers --model "$model" --scene "$scene" --every 5 --json figures.json --answers answers.jsonl
/usr/bin/python3 - <<'PY'
import json
fig = json.load(open("figures.json"))
rows = [json.loads(l) for l in open("answers.jsonl")]
for run in fig["runs"]:
    mine = [r for r in rows if r["stride"] == run["stride"]]
    assert len(mine) == run["asked"], (run["stride"], len(mine), run["asked"])
    right = sum(r["full"].strip() == r["truth"] for r in mine)
    assert abs(right / len(mine) - run["accuracy_full"]) < 1e-9, (right, run["accuracy_full"])
    same = sum(r["full"] == r["cached"] for r in mine)
    assert same >= run["agreement"] * len(mine) - 1e-9, (same, run["agreement"])
for r in rows:
    assert set(r) == {"scene", "frame", "stride", "kind", "question", "truth", "full", "cached"}, r
print(f"answers file ok: {len(rows)} questions")
PY
