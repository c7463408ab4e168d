#!/usr/bin/env bash
# Answer audits in a real run: a rendered scene through the scene model,
# answering every 5th frame and auditing every 2nd answer. The audits must
# run (answered again from a full recompute when the answerer is idle), be
# counted in the summary and reach the camera's fidelity controller, and
# their time is reported against the encoder's and the answerer's.
set -euo pipefail
vlcache="$1"; repo="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$vlcache" scene --seed 2201 --start 590 --frames 60 --out "$work/scene" > /dev/null
cat > "$work/p.toml" <<TOML
[pipeline]
drop_policy = "block"
[input]
image_size = 160
patch_size = 16
[encoder]
model = "$repo/models/tiny-llava-scenes"
[llm]
model = "$repo/models/tiny-llava-scenes"
max_new_tokens = 4
every_n_frames = 5
[fidelity]
answer_audit_every = 2
[[camera]]
name = "yard"
source = "$work/scene"
pace_fps = 20
TOML
"$vlcache" run "$work/p.toml" --summary-json "$work/s.json" > "$work/out.txt" 2>&1 ||
  { cat "$work/out.txt"; echo "run failed"; exit 1; }
grep -q "answer audits:" "$work/out.txt" || { cat "$work/out.txt"; echo "no audit line in the summary"; exit 1; }
/usr/bin/python3 - "$work/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
a = s["answers"]
audits = a["audits"]
control = s["streams"][0]["fidelity"]["control"]
print(f"{a['answered']} answers, {audits['audited']} audited, {audits['agreed']} agreeing, "
      f"{audits['skipped']} skipped; controller saw {control['answers_audited']}")
failures = []
if audits["audited"] < 2: failures.append(f"only {audits['audited']} audits of {a['answered']} answers")
if audits["audited"] + audits["skipped"] != a["answered"] // 2:
    failures.append("every 2nd answer should be audited or counted as skipped")
if control["answers_audited"] != audits["audited"]: failures.append("the controller did not get every outcome")
if not (audits["encoder_seconds"] > 0 and audits["llm_seconds"] > 0): failures.append("audit time not measured")
if failures: sys.exit("; ".join(failures))
print("audits ran and reached the controller")
PY
