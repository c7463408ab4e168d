#!/usr/bin/env bash
# Trains an 8000-piece BPE tokenizer (LLaMA's settings: byte fallback, digits
# split, no normalisation, dummy prefix) on the English text under
# /usr/share/doc, for benchmarks whose prompts should tokenise about as long
# as with LLaMA's own tokenizer (the 400-piece test tokenizer splits a
# question into ~2x more tokens). Usage: scripts/make_bench_tokenizer.sh OUT_PREFIX
set -euo pipefail
out="${1:-build/bench_tokenizer}"
corpus="$(mktemp)"
trap 'rm -f "$corpus"' EXIT
find /usr/share/doc \( -name '*.txt' -o -name 'README*' -o -name '*.md' -o -name '*.rst' \) -size +4k -print0 2>/dev/null \
  | sort -z | xargs -0 cat 2>/dev/null | tr -cd '\11\12\15\40-\176' | grep -v '^\s*$' | head -400000 > "$corpus" || true
spm_train --input="$corpus" --model_prefix="$out" --vocab_size=8000 --model_type=bpe --byte_fallback=true \
  --split_digits=true --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true \
  --character_coverage=1.0 --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --minloglevel=2 \
  --input_sentence_size=300000 --shuffle_input_sentence=true > /dev/null
echo "$out.model"
