#!/usr/bin/env bash
# test_subword_sampling.sh: subword regularization (data.spm_sample_alpha)
# in `nmt train` on the generated demo corpus with SentencePiece: every
# epoch says what its draw came to; training differs from a run without
# it; a run stopped inside an epoch and resumed (and one stopped at an
# epoch's end) ends with the weights of the run that went straight
# through, to the bit, so each epoch's segmentation is drawn again the
# same; the sides setting; a corpus changed behind the cache's back and
# the keys' contradictions are refused, naming the line or the key (also
# with train.init_from's tokenizers, before any encoding). The
# sampler itself: tests/test_subword_sampling.c.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_subword_sampling

"$NMT" demo-corpus --out "$tmp/data" --train 600 --valid 20 --test 10 --seed 3 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "epochs": 3,
              "valid_every": 1000, "log_every": 1, "seed": 5, "threads": 1,
              "patience": 0, "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'
spm=(--set data.tokenizer=spm --set data.spm_vocab_size=200 --set data.max_len=100)
train() { train_into "$tmp/tiny.json" "$1" "${spm[@]}" "${@:2}"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
rows() { grep "^train," "$1/train.csv" | cut -d, -f2,4,5,7; } # DIR: step, loss, ppl, gnorm
sampled() { printf '%s\n' "$out" | grep -c "subword sampling (data.spm_sample_alpha"; }

# 1. three epochs with sampling: one line each, more tokens than the best
#    segmentation (alpha 0.3 breaks words up), and other training than without
train plain
check '[ $rc -eq 0 ] && [ "$(sampled)" -eq 0 ] && printf "%s" "$out" | grep -q "600 pairs read, 600 kept"' \
  "run without sampling (every pair kept): $rc $out"
batches=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9]*\) batches per epoch.*/\1/p')
check '[ "${batches:-0}" -gt 5 ]' "batches per epoch: '$batches'"
train straight --set data.spm_sample_alpha=0.3
check '[ $rc -eq 0 ] && [ "$(sampled)" -eq 3 ]' "three epochs should draw three times: $rc $out"
for e in 1 2 3; do
  line=$(printf '%s\n' "$out" | grep "train: epoch $e: subword sampling")
  check 'printf "%s" "$line" | grep -Eq "\(data.spm_sample_alpha 0.3, both\): 1\.[0-9]*[1-9][0-9]*x the source and 1\.[0-9]*[1-9][0-9]*x the target tokens"' \
    "epoch $e should draw more tokens than the best segmentation: '$line'"
done
check '! cmp -s <(rows "$tmp/plain") <(rows "$tmp/straight")' "training with sampling should differ from training without"

# 2. stopped inside epoch 2 and resumed: the same run to the bit (the
#    resumed run draws epoch 2 again, then epoch 3)
half=$((batches + batches / 2))
train halves --set data.spm_sample_alpha=0.3 --set train.max_steps=$half
check '[ $rc -eq 0 ] && [ "$(sampled)" -eq 2 ]' "the first half should draw epochs 1 and 2: $rc $out"
train halves --set data.spm_sample_alpha=0.3 --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "train: epoch 2: subword sampling" &&
       printf "%s" "$out" | grep -q "train: epoch 3: subword sampling"' "the resumed half should draw epochs 2 and 3: $rc $out"
check 'python3 "$ROOT/scripts/ckpt_same.py" "$tmp/straight/last.nmt" "$tmp/halves/last.nmt" > "$tmp/same.txt"' \
  "stopped in epoch 2 and resumed: $(cat "$tmp/same.txt")"
check 'cmp -s <(rows "$tmp/straight") <(rows "$tmp/halves")' \
  "resumed rows differ: $(diff <(rows "$tmp/straight") <(rows "$tmp/halves") | head -4)"
# stopped at the end of epoch 1 (the next epoch's draw comes at the resume)
train ends --set data.spm_sample_alpha=0.3 --set train.max_steps=$batches
check '[ $rc -eq 0 ]' "stopped at the end of epoch 1: $rc $out"
train ends --set data.spm_sample_alpha=0.3 --resume
check 'python3 "$ROOT/scripts/ckpt_same.py" "$tmp/straight/last.nmt" "$tmp/ends/last.nmt" > "$tmp/same.txt"' \
  "stopped at the end of epoch 1 and resumed: $(cat "$tmp/same.txt")"
# the draw is part of the run: another alpha at a resume is refused
train ends --set data.spm_sample_alpha=0.5 --resume
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.spm_sample_alpha"' "another alpha at a resume: $rc $out"

# 3. sides: src leaves the target tokens as they were
train src --set data.spm_sample_alpha=0.3 --set data.spm_sample_sides=src --set train.epochs=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "x the source and 1.000x the target tokens"' \
  "sides src: $rc $(printf '%s\n' "$out" | grep 'subword sampling')"

# 4. a corpus changed since the cache was built, with its size and time
#    kept (so the cache looks current): the first line that differs is named
cp -p "$tmp/data/train.src" "$tmp/train.src.orig"
line=7
awk -v n=$line 'NR == n { $0 = toupper($0) } { print }' "$tmp/train.src.orig" > "$tmp/data/train.src"
touch -r "$tmp/train.src.orig" "$tmp/data/train.src"
check '[ "$(stat -c %s "$tmp/data/train.src")" = "$(stat -c %s "$tmp/train.src.orig")" ] && ! cmp -s "$tmp/data/train.src" "$tmp/train.src.orig"' \
  "the changed corpus should keep its size"
train changed --set data.spm_sample_alpha=0.3
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -q "train.src:$line: the line encodes to other ids than the prepared cache"' \
  "a corpus changed behind the cache's back: $rc $out"
cp "$tmp/train.src.orig" "$tmp/data/train.src"
touch -r "$tmp/train.src.orig" "$tmp/data/train.src"

# 5. contradictions name the key
expect 2 "data.spm_sample_alpha: subword sampling needs data.tokenizer spm, got word" \
  "$NMT" config --config "$tmp/tiny.json" --set data.spm_sample_alpha=0.2
expect 2 "data.spm_sample_alpha: with data.spm_model_type bpe it is the merge dropout probability and must be below 1, got 1" \
  "$NMT" config --config "$tmp/tiny.json" "${spm[@]}" --set data.spm_model_type=bpe --set data.spm_sample_alpha=1
expect 2 "data.spm_sample_alpha" "$NMT" config --config "$tmp/tiny.json" "${spm[@]}" --set data.spm_sample_alpha=-1
expect 2 "data.spm_sample_sides" "$NMT" config --config "$tmp/tiny.json" "${spm[@]}" --set data.spm_sample_alpha=0.1 \
  --set data.spm_sample_sides=left

# 6. fine-tuning (train.init_from) from a model with word tokenizers: its
#    tokenizer keys replace the config's, so sampling is refused, naming
#    train.init_from, before prepare encodes the corpus (no cache written)
train words --set data.tokenizer=word --set data.cache_dir="$tmp/word-cache" --set train.epochs=1
check '[ $rc -eq 0 ] && [ -f "$tmp/words/best.nmt" ]' "a model with word tokenizers: $rc $out"
train tuned --set data.spm_sample_alpha=0.2 --set train.init_from="$tmp/words/best.nmt" \
  --set data.cache_dir="$tmp/tuned-cache"
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.spm_sample_alpha: subword sampling needs data.tokenizer spm, got word (the tokenizers and their keys are those of train.init_from, $tmp/words/best.nmt)"' \
  "sampling on train.init_from's word tokenizers: $rc $out"
check '[ ! -e "$tmp/tuned-cache" ]' "refused only after prepare built $tmp/tuned-cache: $(ls "$tmp/tuned-cache" 2>&1)"

test_end
