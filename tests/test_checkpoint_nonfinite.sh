#!/usr/bin/env bash
# test_checkpoint_nonfinite.sh: a checkpoint whose weights hold NaN or Inf
# (with a valid CRC, so only the values are wrong) is refused by every
# command that uses one: translate, eval --model, average (no --out written)
# and train --resume; exit 1, the message names the file, the count of
# non-finite values and the first tensor holding one. The checkpoint is
# patched as docs/checkpoint-format.md describes: two floats of the PARAMS
# section replaced, the CRC-32 of every byte before the last 4 rewritten
# (gzip's trailer holds the same CRC-32, little endian, as the format).
# Prints "test_checkpoint_nonfinite: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_checkpoint_nonfinite

"$NMT" demo-corpus --out "$tmp/data" --train 500 --valid 20 --test 10 --seed 3 > /dev/null 2>&1 || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 8, "hidden": 8, "enc_layers": 1, "dec_layers": 1}' \
  '{"lr": 0.003, "batch_sentences": 16, "max_steps": 4, "valid_every": 4, "seed": 2, "threads": 1, "save_dir": "run"}' \
  '{"beam": 2, "batch": 8}'
out=$(cd "$tmp" && "$NMT" train --config tiny.json --quiet 2>&1)
check '[ $? -eq 0 ] && [ -s "$tmp/run/last.nmt" ]' "training: $out"
good="$tmp/run/last.nmt"
"$NMT" translate --model "$good" < "$tmp/data/test.src" > "$tmp/good.hyp" 2>&1
check '[ $? -eq 0 ] && [ $(wc -l < "$tmp/good.hyp") -eq 10 ]' "the unpatched checkpoint must translate: $(head -3 "$tmp/good.hyp")"

# poison FILE: weights 5 (NaN) and 7 (+Inf) of the first tensor, CRC fixed
poison() {
  local f=$1 at n
  at=$(grep -obUaF PARM "$f" | head -n 1 | cut -d: -f1)
  [ -n "$at" ] || { bad "no PARAMS section in $f"; return; }
  at=$((at + 12)) # tag 4, length 8
  printf '\000\000\300\177' | dd of="$f" bs=1 seek=$((at + 4 * 5)) conv=notrunc 2>/dev/null
  printf '\000\000\200\177' | dd of="$f" bs=1 seek=$((at + 4 * 7)) conv=notrunc 2>/dev/null
  n=$(wc -c < "$f")
  head -c $((n - 4)) "$f" | gzip -c | tail -c 8 | head -c 4 | dd of="$f" bs=1 seek=$((n - 4)) conv=notrunc 2>/dev/null
}
cp "$good" "$tmp/nan.nmt"
poison "$tmp/nan.nmt"
check '! cmp -s "$good" "$tmp/nan.nmt"' "the patch changed nothing"
want="nan.nmt: 2 of its"
want2="weights are not finite (NaN or Inf), the first in tensor src_emb (element 5, value nan)"
# translate (the file checks out: a CRC error would be another message)
out=$("$NMT" translate --model "$tmp/nan.nmt" < "$tmp/data/test.src" 2>&1 > "$tmp/nan.hyp"); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF -- "$want" && printf "%s" "$out" | grep -qF -- "$want2"' \
  "translate with NaN weights: exit $rc (want 1, '$want ... $want2'): $out"
check '[ ! -s "$tmp/nan.hyp" ]' "translate with NaN weights wrote output: $(head -3 "$tmp/nan.hyp")"
# eval --model
out=$("$NMT" eval --model "$tmp/nan.nmt" --src "$tmp/data/test.src" --ref "$tmp/data/test.tgt" 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF -- "$want"' "eval --model with NaN weights: exit $rc: $out"
# average: refused, --out not written
out=$("$NMT" average --out "$tmp/avg.nmt" "$good" "$tmp/nan.nmt" 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF -- "$want" && [ ! -e "$tmp/avg.nmt" ]' \
  "average with a NaN input: exit $rc, --out written: $([ -e "$tmp/avg.nmt" ] && echo yes || echo no): $out"
# train --resume from a poisoned last.nmt
mkdir -p "$tmp/run2" && cp "$good" "$tmp/run2/last.nmt" && poison "$tmp/run2/last.nmt"
out=$(cd "$tmp" && "$NMT" train --config tiny.json --quiet --set train.save_dir=run2 --set train.max_steps=8 --resume 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF -- "last.nmt: 2 of its"' "train --resume from NaN weights: exit $rc: $out"

test_end
