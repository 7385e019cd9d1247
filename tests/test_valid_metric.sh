#!/usr/bin/env bash
# test_valid_metric.sh: what validation measures and how it steers the run,
# on the generated demo corpus: every validation logs and records chrF
# beside BLEU (the chrF of `nmt eval` on the same translations);
# train.valid_metric chrf picks best.nmt by it; a validation at a stop
# between two scheduled ones (train.max_steps) moves neither the best so
# far, nor the patience, nor the rate, so that a run stopped there and
# resumed ends with the weights of the run that went straight through; a
# metric changed at a resume finds the best so far again in the new
# metric from the validation history (a history from before checkpoint
# format 3 holds no chrF: the next validation is then the best); best.nmt
# keeps a stop's validation that beat every later one; a train.csv of the version before
# valid_chrf is widened when a run is resumed into it.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_valid_metric

"$NMT" demo-corpus --out "$tmp/data" --train 800 --valid 30 --test 10 --seed 6 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.01, "batch_sentences": 32, "epochs": 4,
              "valid_every": 5, "log_every": 5, "seed": 3, "threads": 1,
              "patience": 0, "save_dir": "run"}' \
  '{"beam": 1, "batch": 64}'
train() { train_into "$tmp/tiny.json" "$@"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
valid_rows() { grep "^valid," "$1/train.csv" | cut -d, -f2,10,11,12; } # DIR: step, ppl, BLEU, chrF
best_steps() { printf '%s\n' "$out" | sed -n 's/^valid: step \([0-9]*\) .*(best)$/\1/p' | tr '\n' ' '; }

# 1. chrF beside BLEU, in the log and in train.csv
train chrf --set train.valid_metric=chrf --set train.max_steps=40
check '[ $rc -eq 0 ]' "valid_metric chrf: $rc $out"
check '[ "$(head -1 "$tmp/chrf/train.csv")" = "kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu,valid_chrf,align_loss" ]' \
  "train.csv header: $(head -1 "$tmp/chrf/train.csv")"
rows=$(valid_rows "$tmp/chrf")
check '[ "$(printf "%s\n" "$rows" | wc -l)" -eq 8 ] && ! printf "%s\n" "$rows" | grep -q ",$"' "8 validations with chrF: $rows"
check 'printf "%s" "$out" | grep -Eq "^valid: step 40 ppl [0-9.]+ BLEU [0-9.]+ chrF [0-9.]+"' "the log line: $(printf '%s\n' "$out" | grep '^valid:' | tail -1)"
# the chrF of the last validation is nmt eval's on last.nmt's translation
"$NMT" translate --model "$tmp/chrf/last.nmt" --beam 1 < "$tmp/data/valid.src" > "$tmp/valid.hyp" 2> /dev/null
eval_chrf=$("$NMT" eval --chrf --ref "$tmp/data/valid.tgt" --hyp "$tmp/valid.hyp" 2>&1 | sed -n 's/^chrF2|.* = \([0-9.]*\)$/\1/p')
last_chrf=$(printf '%s\n' "$rows" | tail -1 | cut -d, -f4)
check '[ -n "$eval_chrf" ] && awk -v a="$eval_chrf" -v b="$last_chrf" "BEGIN { exit !(a - b < 0.051 && b - a < 0.051) }"' \
  "validation chrF $last_chrf, nmt eval --chrf $eval_chrf"
# best.nmt follows chrF: the (best) steps are those where chrF beat every earlier one
want=$(printf '%s\n' "$rows" | awk -F, 'NR == 1 || $4 > best { best = $4; printf "%s ", $1 }')
check '[ "$(best_steps)" = "$want" ]' "chrF best steps $(best_steps), from train.csv $want"
want_bleu=$(printf '%s\n' "$rows" | awk -F, 'NR == 1 || $3 > best { best = $3; printf "%s ", $1 }')
train bleu --set train.max_steps=40
check '[ $rc -eq 0 ] && [ "$(best_steps)" = "$want_bleu" ]' "BLEU best steps $(best_steps), from train.csv $want_bleu"

# 2. a stop between scheduled validations changes nothing a resume goes on
#    from: stopped at step 13 (validations every 10) and resumed, the run
#    ends with the weights of the straight one (plateau decay and patience
#    on; BLEU ties at the start would count the stop's validation as the best)
train straight --set train.valid_every=10 --set train.max_steps=40 --set train.patience=3
check '[ $rc -eq 0 ]' "straight run: $rc $out"
train stopped --set train.valid_every=10 --set train.max_steps=13 --set train.patience=3
check '[ $rc -eq 0 ] && grep -q "^valid,13," "$tmp/stopped/train.csv"' "stopped at 13 with its validation: $rc $out"
train stopped --set train.valid_every=10 --set train.max_steps=40 --set train.patience=3 --resume
check '[ $rc -eq 0 ]' "resumed from 13: $rc $out"
check 'python3 "$ROOT/scripts/ckpt_same.py" "$tmp/straight/last.nmt" "$tmp/stopped/last.nmt" > "$tmp/same.txt"' \
  "stopped at 13 and resumed: $(cat "$tmp/same.txt")"
lr_rows() { grep "^train," "$1/train.csv" | awk -F, '$2 > 13 { print $2 "," $6 }'; }
check 'cmp -s <(lr_rows "$tmp/straight") <(lr_rows "$tmp/stopped")' \
  "learning rates after the stop differ: $(diff <(lr_rows "$tmp/straight") <(lr_rows "$tmp/stopped") | head -4)"

# 2b. best.nmt keeps the best validation even when a stop's validation
#     holds it: BLEU steered by a test hook, step 10: 5, the stop at 13: 30,
#     20: 20 (beats the scheduled best, 5, not the stop's 30), 30: 40
export NMT_TEST_VALID_BLEU="10:5,13:30,20:20,30:40"
train keep --set train.valid_every=10 --set train.max_steps=13
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^valid: step 13 .*BLEU 30.00 .*(best)$"' "stop at 13: $rc $out"
cp "$tmp/keep/best.nmt" "$tmp/best13.nmt"
train keep --set train.valid_every=10 --set train.max_steps=20 --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^valid: step 20 .*BLEU 20.00 .*(best of the schedule; best.nmt keeps a stop.s better validation)$"' \
  "step 20 beats the schedule's best, not the stop's: $rc $(printf '%s\n' "$out" | grep '^valid')"
check 'cmp -s "$tmp/keep/best.nmt" "$tmp/best13.nmt"' "best.nmt (BLEU 30, step 13) was replaced by step 20's (BLEU 20)"
train keep --set train.valid_every=10 --set train.max_steps=30 --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^valid: step 30 .*BLEU 40.00 .*(best)$" &&
       ! cmp -s "$tmp/keep/best.nmt" "$tmp/best13.nmt"' "step 30 (BLEU 40) saves best.nmt: $rc $(printf '%s\n' "$out" | grep '^valid')"
unset NMT_TEST_VALID_BLEU

# 3. the metric changed at a resume: the best so far is found again in it
train switch --set train.max_steps=20
check '[ $rc -eq 0 ]' "first part: $rc $out"
want_ppl=$(valid_rows "$tmp/switch" | awk -F, 'NR == 1 || $2 < best { best = $2; step = $1 } END { print step }')
train switch --set train.max_steps=25 --set train.valid_metric=ppl --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "train.valid_metric is ppl now (it was bleu): in it the best so far is step ${want_ppl}'"'"'s"' \
  "bleu to ppl (best ppl at step $want_ppl): $rc $(printf '%s\n' "$out" | grep valid_metric)"
# a checkpoint of an nmt before format 3 has no chrF in its validation
# records: the next validation is then the best
cp -r "$tmp/switch" "$tmp/switch-old"
python3 - "$tmp/switch-old/last.nmt" << 'PY' || bad "rewriting last.nmt as format 1"
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
version, flags, content = struct.unpack_from("<IIQ", data, 8)
assert version == 3, version
out, pos = b"", 24
while pos < 24 + content:  # every section as it is, HIST's records cut to 24 bytes
    tag, length = data[pos:pos + 4], struct.unpack_from("<Q", data, pos + 4)[0]
    body = data[pos + 12:pos + 12 + length]
    if tag == b"HIST":
        n = struct.unpack_from("<I", body)[0]
        body = body[:4] + b"".join(body[4 + 32 * i:4 + 32 * i + 24] for i in range(n))
    out += tag + struct.pack("<Q", len(body)) + body
    pos += 12 + length
out = data[:8] + struct.pack("<IIQ", 1, flags, len(out)) + out
open(path, "wb").write(out + struct.pack("<I", zlib.crc32(out)))
PY
train switch-old --set train.max_steps=30 --set train.valid_metric=chrf --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "the validation history has no chrF (its checkpoint came from an nmt before checkpoint format 3), so the next validation is the best so far" &&
       printf "%s" "$out" | grep -q "^valid: step 30 .*(best)$"' "ppl to chrf without chrF in the history: $rc $(printf '%s\n' "$out" | grep 'valid')"
# since format 3 the history has chrF: the best so far is found in it
want_chrf=$(valid_rows "$tmp/switch" | awk -F, 'NR == 1 || $4 > best { best = $4; step = $1 } END { print step }')
train switch --set train.max_steps=30 --set train.valid_metric=chrf --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "train.valid_metric is chrf now (it was ppl): in it the best so far is step ${want_chrf}'"'"'s"' \
  "ppl to chrf (best chrF at step $want_chrf): $rc $(printf '%s\n' "$out" | grep 'valid')"

# 4. a train.csv without valid_chrf (the version before) is widened at a resume
cut -d, -f1-11 "$tmp/switch/train.csv" > "$tmp/old.csv"
cp "$tmp/old.csv" "$tmp/switch/train.csv"
train switch --set train.max_steps=35 --set train.valid_metric=chrf --resume
check '[ $rc -eq 0 ]' "resumed into an old train.csv: $rc $out"
check '[ "$(head -1 "$tmp/switch/train.csv" | tr "," "\n" | tail -2 | tr "\n" " ")" = "valid_chrf align_loss " ] &&
       cmp -s <(tail -n +2 "$tmp/old.csv") <(head -n "$(wc -l < "$tmp/old.csv")" "$tmp/switch/train.csv" | tail -n +2 | sed "s/,,$//")' \
  "the old rows should be kept, widened by an empty valid_chrf and align_loss"
check '[ "$(grep -c "^valid,35,.*,[0-9.]*$" "$tmp/switch/train.csv")" -eq 1 ]' "the new row has chrF: $(tail -2 "$tmp/switch/train.csv")"
"$NMT" plot --run "$tmp/switch" > /dev/null 2>&1
check '[ $? -eq 0 ] && grep -q "validation chrF2" "$tmp/switch/curves.svg"' "nmt plot draws the chrF curve"

expect 2 "train.valid_metric" "$NMT" config --config "$tmp/tiny.json" --set train.valid_metric=ter
test_end
