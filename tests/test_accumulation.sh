#!/usr/bin/env bash
# test_accumulation.sh: gradient accumulation (train.accum_batches) end to
# end on the generated demo corpus: steps count updates of up to K batches
# (an epoch's last update takes the batches left), the log says so, resume
# is exact with K > 1, a signal in the middle of an update drops it and
# --resume trains it again to the same result as an uninterrupted run, a
# skipped update names its batch, and K 0 is refused. That the gradient of
# K batches equals the gradient of one batch holding them all is checked
# in tests/test_model_grad.c (accumulation).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_accumulation

"$NMT" demo-corpus --out "$tmp/data" --train 3000 --valid 60 --test 40 --seed 3 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "epochs": 50, "accum_batches": 3,
              "max_steps": 20, "valid_every": 100000, "log_every": 5, "seed": 5, "threads": 1,
              "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'
train() { train_into "$tmp/tiny.json" "$@"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
train_rows() { grep '^train,' "$1/train.csv" | cut -d, -f2,3,4,5; } # step, epoch, loss, ppl

# 1. two epochs of updates of 3 batches: the log counts them, the run ends
# at 2 x ceil(batches / 3) steps, and every row's epoch is its update's
train epochs --set train.max_steps=0 --set train.epochs=2 --set train.log_every=1
per_epoch=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) batches per epoch.*/\1/p')
check '[ $rc -eq 0 ] && [ -n "$per_epoch" ] && [ "$per_epoch" -gt 20 ]' "two-epoch run: $rc $out"
per_epoch=${per_epoch:-30}
updates=$(( (per_epoch + 2) / 3 ))
check 'printf "%s" "$out" | grep -qF "$per_epoch batches per epoch ($updates updates of up to 3, train.accum_batches)"' \
  "the log should count the updates of an epoch ($updates): $out"
check 'printf "%s" "$out" | grep -q "done at step $((2 * updates)) (2 epochs completed)"' "done line: $out"
wrong=$(awk -F, -v n="$updates" '$1 == "train" { want = int(($2 + n - 1) / n); if ($3 != want) print "epoch " $3 " at step " $2 }' \
  "$tmp/epochs/train.csv")
check '[ -z "$wrong" ] && [ $(grep -c "^train," "$tmp/epochs/train.csv") -eq $((2 * updates)) ]' \
  "one row per update, each in its update's epoch: $wrong $(grep -c '^train,' "$tmp/epochs/train.csv")"
train epochs1 --set train.max_steps=0 --set train.epochs=2 --set train.log_every=1 --set train.accum_batches=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "done at step $((2 * per_epoch)) (2 epochs completed)"' \
  "the same run with accum_batches 1: $rc $out"
check '! printf "%s" "$out" | grep -q "train.accum_batches"' "accum_batches 1 should not mention updates: $out"

# 2. resume is exact with K = 3: 10 steps, then resume to 20, equals 20 steps
train whole
check '[ $rc -eq 0 ]' "20 steps: $rc $out"
check_resume_exact train_rows whole halves 10
check '[ $(train_rows "$tmp/halves" | wc -l) -eq 4 ]' "want 4 rows (steps 5 to 20): $(train_rows "$tmp/halves")"
# K changes the training: the same 20 steps with K = 2 differ
train k2 --set train.accum_batches=2
check '[ $rc -eq 0 ] && ! cmp -s <(train_rows "$tmp/whole") <(train_rows "$tmp/k2")' "accum_batches 2 trained like 3: $rc $out"

# 3. a signal in the middle of an update: updates of 40 batches (an epoch
# is 40 + 40 + the rest), SIGTERM once step 1 is logged, so that it comes
# while step 2's batches run; the update is dropped, and --resume trains
# it again to the rows of an uninterrupted run
long=(--set train.accum_batches=40 --set train.max_steps=6 --set train.log_every=1)
train straight "${long[@]}"
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "done at step 6"' "6 updates of 40 batches: $rc $out"
"$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/cut" "${long[@]}" > "$tmp/cut.log" 2>&1 &
pid=$!
for i in $(seq 1 500); do grep -q '^train,' "$tmp/cut/train.csv" 2>/dev/null && break; sleep 0.02; done
sleep 0.03 # into step 2's batches (measured: batch 9 to 25 of its 40), not before its first
kill -TERM $pid
wait $pid; rc=$?
msg=$(cat "$tmp/cut.log")
check '[ $rc -eq 143 ] && printf "%s" "$msg" | grep -q "stopped by signal 15 at step [1-5] .*the update under way was dropped after [0-9]* of its batches (--resume trains them again)"' \
  "SIGTERM inside an update: $rc $(printf '%s' "$msg" | tail -2)"
train cut "${long[@]}" --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "done at step 6"' "resume after SIGTERM: $rc $out"
check 'cmp -s <(train_rows "$tmp/straight") <(train_rows "$tmp/cut")' \
  "after a signal inside an update, resumed rows differ: $(diff <(train_rows "$tmp/straight") <(train_rows "$tmp/cut") | head -4)"

# 4. an update whose loss is not finite is skipped whole, naming its batch
# (NMT_TEST_POISON_STEP makes the weights NaN after step 2)
out=$(NMT_TEST_POISON_STEP=2 "$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/nan" \
    --set train.max_bad_steps=2 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "step 3: loss (batch 1 of the update.s 3) is not finite; update skipped (1 in a row)"' \
  "a NaN update with accum_batches 3: $rc $out"
check 'printf "%s" "$out" | grep -q "updates in a row had NaN or Inf (train.max_bad_steps); stopped, the last checkpoint in .*nan is intact (--resume, perhaps with a lower train.lr, continues from it)"' \
  "the max_bad_steps stop's message: $out"

# 5. a bad value is refused naming the key
expect 2 "train.accum_batches" "$NMT" config --config "$tmp/tiny.json" --set train.accum_batches=0

test_end
