#!/usr/bin/env bash
# tools/train_tiny_llava.py end to end at tiny budgets (seconds, not the
# model card's 42 minutes): renders a few scenes with vlcache, trains the
# tokenizer and both stages, writes the llava-hf snapshot, and vlcache then
# loads that snapshot through its ordinary Hugging Face path and answers.
#   train_tiny_llava_smoke.sh VLCACHE SOURCE_DIR WORK_DIR [TRAINING OPTIONS...]
set -euo pipefail
vlcache=$1 src=$2 work=$3
shift 3
rm -rf "$work/out"
# A tiny stage 0, except where the run starts from a snapshot (whose default is none).
tower=(--tower-minutes 0.05)
for arg in "$@"; do [[ $arg == --init-from ]] && tower=(); done
/usr/bin/python3 "$src/tools/train_tiny_llava.py" --vlcache "$vlcache" --work "$work/scenes" --out "$work/out" \
  --train-scenes 12 --heldout-scenes 1 "${tower[@]}" --minutes 0.1 --threads 1 "$@"
"$vlcache" ask --model "$work/out" --image "$work/scenes/heldout/seed1001/frames/000000.png" \
  --question "How many red shapes are there?"
