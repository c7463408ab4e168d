#!/usr/bin/env bash
# The model card's held-out scenes: seeds 1001-1008 over background frames
# 590-789 of the sample video (tools/train_tiny_llava.py never trains there).
#   render_heldout_scenes.sh VLCACHE OUT
set -euo pipefail
for seed in 1001 1002 1003 1004 1005 1006 1007 1008; do
  "$1" scene --seed "$seed" --start 590 --frames 200 --out "$2/seed$seed"
done
