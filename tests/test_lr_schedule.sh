#!/usr/bin/env bash
# test_lr_schedule.sh: train.lr_schedule end to end on the generated demo
# corpus: the rate train.csv and the log line print follows the schedule
# (rsqrt: lr * min(1, t / warmup) * sqrt(N / max(t, N)), N = rsqrt_steps or
# warmup_steps; constant: lr * min(1, t / warmup), and naming it changes
# nothing), the plateau/epoch decay multiplies it, resume is exact under
# rsqrt, the schedule (also train.lr and warmup_steps) may change on
# resume, and rsqrt with neither
# rsqrt_steps nor warmup_steps is refused naming the key. The rate itself
# is unit-tested in tests/test_lr_schedule.c; nmt info gives the rate of
# the next update and the schedule.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_lr_schedule

"$NMT" demo-corpus --out "$tmp/data" --train 1000 --valid 20 --test 10 --seed 3 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 16, "hidden": 16, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "warmup_steps": 4, "batch_sentences": 32, "epochs": 50,
              "max_steps": 16, "valid_every": 100000, "log_every": 1, "seed": 5, "threads": 1,
              "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'
train() { train_into "$tmp/tiny.json" "$@"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
train_rows() { grep '^train,' "$1/train.csv" | cut -d, -f2,4,5,6; } # step, loss, ppl, lr
# rates CSV LR W N SCALE [FROM [TO]]: "ok K" (K train rows checked, steps
# FROM to TO) when every train row's lr is LR * SCALE * min(1, t / W) * (N > 0 ?
# sqrt(N / max(t, N)) : 1) to 1e-7 relative (train.csv prints 9 digits),
# else the first mismatch
rates() {
  awk -F, -v lr="$2" -v w="$3" -v n="$4" -v s="$5" -v from="${6:-1}" -v to="${7:-1e18}" '
    $1 == "train" && $2 >= from && $2 <= to {
      t = $2; want = lr * s * (w > 0 && t < w ? t / w : 1)
      if (n > 0 && t > n) want *= sqrt(n / t)
      if ($6 < want * (1 - 1e-7) || $6 > want * (1 + 1e-7)) { print "step " t ": lr " $6 ", want " want; bad = 1; exit }
      k++ }
    END { if (!bad) print "ok " k }' "$1"
}

# 1. constant (the default): the warmup ramp, then lr; naming it trains the
# same run to the bit
train const
check '[ $rc -eq 0 ]' "constant run: $rc $out"
res=$(rates "$tmp/const/train.csv" 0.003 4 0 1)
check '[ "$res" = "ok 16" ]' "constant: rates do not follow lr * min(1, t / 4): $res"
train const2 --set train.lr_schedule=constant
check '[ $rc -eq 0 ] && cmp -s <(train_rows "$tmp/const") <(train_rows "$tmp/const2")' \
  "lr_schedule constant differs from the default: $(diff <(train_rows "$tmp/const") <(train_rows "$tmp/const2") | head -4)"

# 2. rsqrt with N = warmup_steps (rsqrt_steps 0): the peak at t = 4, half
# of it at t = 16; the log line prints the same rate
train rsqrt --set train.lr_schedule=rsqrt
check '[ $rc -eq 0 ]' "rsqrt run: $rc $out"
res=$(rates "$tmp/rsqrt/train.csv" 0.003 4 4 1)
check '[ "$res" = "ok 16" ]' "rsqrt: rates do not follow lr * min(1, t / 4) * sqrt(4 / max(t, 4)): $res"
check 'grep -q "^train,16,.*,0\.0015," "$tmp/rsqrt/train.csv"' "rsqrt: step 16 (4 N) should log half the rate, 0.0015: $(grep '^train,16,' "$tmp/rsqrt/train.csv")"
check 'printf "%s" "$out" | grep -q "step 16 loss .* lr 0\.0015 "' "rsqrt: the log line of step 16 should print lr 0.0015: $(printf '%s' "$out" | grep 'step 16 ')"
check '! cmp -s <(train_rows "$tmp/const") <(train_rows "$tmp/rsqrt")' "rsqrt trained like constant"

# 3. rsqrt_steps of its own (N = 2 inside the warmup of 4: the factors
# multiply), and the epoch decay (decay_start_epoch 1: lr_scale 0.5 from
# the first epoch) multiplies the schedule
train rsqrt2 --set train.lr_schedule=rsqrt --set train.rsqrt_steps=2 --set train.decay_start_epoch=1
check '[ $rc -eq 0 ]' "rsqrt_steps 2 run: $rc $out"
res=$(rates "$tmp/rsqrt2/train.csv" 0.003 4 2 0.5)
check '[ "$res" = "ok 16" ]' "rsqrt_steps 2, lr_scale 0.5: $res"

# 4. resume is exact under rsqrt: 8 steps, then --resume to 16, equals the
# 16-step run (losses and rates)
check_resume_exact train_rows rsqrt half 8 --set train.lr_schedule=rsqrt

# 5. the schedule may change on resume: 8 steps constant, then rsqrt from
# step 9 on, at the rates of rsqrt
train switch --set train.max_steps=8
check '[ $rc -eq 0 ]' "constant 8 steps: $rc $out"
train switch --set train.lr_schedule=rsqrt --set train.rsqrt_steps=6 --resume
check '[ $rc -eq 0 ]' "resume with lr_schedule rsqrt should be accepted: $rc $out"
res=$(rates "$tmp/switch/train.csv" 0.003 4 0 1 1 8)
check '[ "$res" = "ok 8" ]' "before the switch (constant): $res"
res=$(rates "$tmp/switch/train.csv" 0.003 4 6 1 9)
check '[ "$res" = "ok 8" ]' "after the switch to rsqrt (N 6): $res"

# 5b. train.lr and train.warmup_steps may change on resume too (a run that
# diverged, resumed at a lower rate): 8 steps at 0.003 with warmup 4, then
# 0.001 with warmup 12 (still ramping: t / 12) from step 9; the log names
# the keys that changed
train lower --set train.max_steps=8
check '[ $rc -eq 0 ]' "8 steps: $rc $out"
train lower --set train.lr=0.001 --set train.warmup_steps=12 --resume
check '[ $rc -eq 0 ]' "resume with another train.lr and warmup_steps should be accepted: $rc $out"
check 'printf "%s" "$out" | grep -q "resuming with schedule keys changed since the checkpoint: train.lr 0.003 -> 0.001, train.warmup_steps 4 -> 12, train.max_steps 8 -> 16"' \
  "the log line of the changed keys: $out"
res=$(rates "$tmp/lower/train.csv" 0.003 4 0 1 1 8)
check '[ "$res" = "ok 8" ]' "before the change: $res"
res=$(rates "$tmp/lower/train.csv" 0.001 12 0 1 9)
check '[ "$res" = "ok 8" ]' "after the change to lr 0.001, warmup 12: $res"
# still refused: a key that is not a schedule key (train.adam_eps)
train lower --set train.adam_eps=1e-6 --set train.max_steps=20 --resume
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "train.adam_eps: cannot resume"' "adam_eps changed on resume: $rc $out"

# 6. nmt info gives the rate of the next update and its schedule: after
# 16 steps, update 17 runs at 0.003 (constant) and 0.003 * 0.5 * sqrt(2 / 17)
# (rsqrt2: N 2, lr_scale 0.5)
"$NMT" info "$tmp/const/last.nmt" > "$tmp/info-const.txt" 2>&1
check 'grep -qx "learning rate: *0.003 at update 17 (train.lr 0.003 x lr scale 1; constant, warmup 4 updates)" "$tmp/info-const.txt"' \
  "info, constant: $(grep 'learning rate' "$tmp/info-const.txt")"
"$NMT" info "$tmp/rsqrt2/last.nmt" > "$tmp/info-rsqrt.txt" 2>&1
check 'grep -qx "learning rate: *0.000514496 at update 17 (train.lr 0.003 x lr scale 0.5; rsqrt, falling as 1/sqrt(t) after update 2, warmup 4 updates)" "$tmp/info-rsqrt.txt"' \
  "info, rsqrt: $(grep 'learning rate' "$tmp/info-rsqrt.txt")"
"$NMT" info --json "$tmp/rsqrt2/last.nmt" > "$tmp/info-rsqrt.json"
check 'python3 -c "import json, math, sys; s = json.load(open(sys.argv[1]))[\"state\"]; sys.exit(not (s[\"lr_schedule\"] == \"rsqrt\" and abs(s[\"next_lr\"] / (0.0015 * math.sqrt(2 / 17)) - 1) < 1e-7))" "$tmp/info-rsqrt.json"' \
  "info --json, rsqrt: $(grep -E 'lr' "$tmp/info-rsqrt.json")"

# 7. rsqrt with neither rsqrt_steps nor warmup_steps is refused, naming the key
expect 2 "train.rsqrt_steps: train.lr_schedule rsqrt needs train.rsqrt_steps or train.warmup_steps above 0" \
  "$NMT" config --config "$tmp/tiny.json" --set train.lr_schedule=rsqrt --set train.warmup_steps=0
expect 0 "" "$NMT" config --config "$tmp/tiny.json" --set train.lr_schedule=rsqrt --set train.warmup_steps=0 \
  --set train.rsqrt_steps=3
expect 2 "train.lr_schedule: must be one of constant, rsqrt" "$NMT" config --config "$tmp/tiny.json" \
  --set train.lr_schedule=inverse_sqrt

test_end
