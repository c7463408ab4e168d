#!/usr/bin/env bash
# README's "Your first pipeline" exactly as written: its TOML, saved as
# first.toml in a folder laid out like the repository, validates and runs:
# every frame encoded, answers to its question printed one per line.
#   readme_first_pipeline_test.sh VLCACHE REPO
set -euo pipefail
vlcache="$1"; repo="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
ln -s "$repo/models" models
/usr/bin/python3 - "$repo/README.md" > first.toml <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## Your first pipeline", 1)[1]
print(re.search(r"```toml\n(.*?)```", section, re.S).group(1), end="")
PY
grep -q '^\[encoder\]' first.toml || { echo "no TOML under 'Your first pipeline'"; exit 1; }
! grep -q '^\[input\]' first.toml || { echo "the first pipeline should need no [input]"; exit 1; }
"$vlcache" validate first.toml
"$vlcache" run first.toml > run.txt 2>&1 || { cat run.txt; echo "run failed"; exit 1; }
cat run.txt
question="$(sed -n 's/^question = "\(.*\)"$/\1/p' first.toml)"
grep -E '^hall #[0-9]+ ' run.txt | grep -Fq " $question -> " || { echo "no answer line to '$question'"; exit 1; }
grep -Eq "hall +read +100 = encoded +100 " run.txt || { echo "not every frame was encoded"; exit 1; }
! grep -q '^{' run.txt || { echo "JSON lines on the console by default"; exit 1; }
echo "first pipeline ok"
