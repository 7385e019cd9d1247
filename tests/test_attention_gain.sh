#!/usr/bin/env bash
# test_attention_gain.sh: on the generated demo corpus (word reordering,
# short sentences), a small attention model trained for a fixed budget
# reaches a fixed BLEU on the test split, and clearly beats the same model
# without attention (style none) on the same budget. About 30 s on 2 cores.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_attention_gain
"$NMT" demo-corpus --out "$tmp/data" --train 6000 --valid 200 --test 200 --seed 9 --max-words 12 > /dev/null
cat > "$tmp/c.json" <<JSON
{"data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt", "valid_src": "data/valid.src",
          "valid_tgt": "data/valid.tgt", "tokenizer": "word", "max_len": 40, "cache_dir": "cache"},
 "model": {"emb_dim": 48, "hidden": 96, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0},
 "train": {"lr": 0.005, "batch_sentences": 32, "epochs": 100, "max_steps": 1200, "valid_every": 600,
           "log_every": 200, "seed": 1, "save_dir": "run"},
 "decode": {"batch": 64}}
JSON
declare -A bleu
for style in luong none; do
  if ! "$NMT" train --config "$tmp/c.json" --quiet --set model.attention.style=$style \
       --set train.save_dir="$tmp/run-$style" > "$tmp/$style.log" 2>&1; then
    bad "training $style: $(tail -3 "$tmp/$style.log")"; continue
  fi
  "$NMT" translate --model "$tmp/run-$style/best.nmt" < "$tmp/data/test.src" > "$tmp/$style.hyp" 2>/dev/null
  line=$("$NMT" eval --bleu --ref "$tmp/data/test.tgt" --hyp "$tmp/$style.hyp")
  bleu[$style]=$(printf '%s' "$line" | sed -n -E 's/^BLEU[^=]* = ([0-9.]+) .*/\1/p') # the score, not a later "= N"
  echo "$style: $line"
done
at_least() { awk "BEGIN { exit !($1) }"; } # a comparison of decimal numbers
check 'at_least "${bleu[luong]:-0} >= 40"' "attention BLEU ${bleu[luong]:-none} below 40"
check 'at_least "${bleu[luong]:-0} >= ${bleu[none]:-100} + 25"' "attention (${bleu[luong]:-?}) does not clearly beat none (${bleu[none]:-?})"
test_end
