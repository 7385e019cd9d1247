#!/usr/bin/env bash
# test_ema.sh: the weights' moving average (train.ema_decay) end to end on
# the generated demo corpus: it leaves training itself alone (the same
# losses as without it) and changes what is validated; its checkpoints
# hold the training weights in TRAIN_PARAMS and the average as the model
# (format 3, as their validation records hold chrF; format 2 without);
# the average follows avg += (1 - d_t)(w - avg) with d_t = min(d,
# (1 + t)/(10 + t)), read from consecutive step checkpoints; resume restores
# both exactly; turning it on or off at a resume says what happens; bad
# values are refused; the training weights of a run with the average are
# those of a run without, to the bit, and translate as a model of their
# own. The update kernel itself: test_backend.c (CPU) and
# test_gpu_parity.c (CUDA against the CPU).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_ema

"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 20 --seed 4 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "epochs": 50,
              "max_steps": 20, "valid_every": 10, "log_every": 5, "seed": 5, "threads": 1,
              "patience": 0, "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'
train() { train_into "$tmp/tiny.json" "$@"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
rows() { grep "^$2," "$1/train.csv" | cut -d, -f2,4,5,7,10,11; } # DIR KIND: step, loss, ppl, gnorm, valid ppl, BLEU
# ckpt.py: what tests need of a checkpoint (docs/checkpoint-format.md), standard library only
cat > "$tmp/ckpt.py" <<'PY'
import array, struct, sys
def read(path):
    data = open(path, "rb").read()
    version, size = struct.unpack_from("<I", data, 8)[0], struct.unpack_from("<Q", data, 16)[0]
    found, off = {}, 24
    while off < 24 + size:
        length = struct.unpack_from("<Q", data, off + 4)[0]
        found[data[off:off + 4].decode()] = data[off + 12:off + 12 + length]
        off += 12 + length
    return version, found
def floats(raw):
    a = array.array("f"); a.frombytes(raw); return a
if sys.argv[1] == "layout":  # FILE: "version N sections A,B,..."
    v, s = read(sys.argv[2]); print("version %d sections %s" % (v, ",".join(s)))
elif sys.argv[1] == "ema":  # BEFORE AFTER T DECAY: "E M": M = max |w_T - avg_{T-1}|, E = the worst
    # |avg_T - (avg_{T-1} + (1 - d_T)(w_T - avg_{T-1}))| in units of M (a decay off by 0.05 gives 0.05)
    _, a = read(sys.argv[2]); _, b = read(sys.argv[3]); t = int(sys.argv[4]); d = float(sys.argv[5])
    keep = 1 - min(d, (1 + t) / (10 + t))
    e0, e1, w1 = floats(a["PARM"]), floats(b["PARM"]), floats(b["TPRM"])
    moved = max(abs(w1[i] - e0[i]) for i in range(len(e0)))
    worst = max(abs(e1[i] - (e0[i] + keep * (w1[i] - e0[i]))) for i in range(len(e0)))
    print("%.3g %.3g" % (worst / moved, moved))
PY
py() { python3 "$tmp/ckpt.py" "$@"; }

# 1. the average changes what is validated, not how training goes
train plain
check '[ $rc -eq 0 ]' "run without a moving average: $rc $out"
train ema --set train.ema_decay=0.99
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "MB moving average of the weights, "' "run with ema_decay 0.99: $rc $out"
check 'cmp -s <(rows "$tmp/plain" train) <(rows "$tmp/ema" train)' \
  "the training rows should not change with a moving average: $(diff <(rows "$tmp/plain" train) <(rows "$tmp/ema" train) | head -4)"
# to the bit: the training weights (and Adam's moments) of the run with the
# average are those of the run without (scripts/ckpt_training_weights.py
# makes them a model of their own); the model it saved is not
check 'python3 "$ROOT/scripts/ckpt_training_weights.py" "$tmp/ema/last.nmt" "$tmp/raw.nmt" &&
       python3 "$ROOT/scripts/ckpt_same.py" "$tmp/raw.nmt" "$tmp/plain/last.nmt" > "$tmp/same.txt"' \
  "training weights of the run with the average: $(cat "$tmp/same.txt" 2>&1)"
check '"$NMT" translate --model "$tmp/raw.nmt" < "$tmp/data/test.src" 2> "$tmp/raw.err" | [ "$(wc -l)" -eq 20 ]' \
  "the training weights as a model of their own translate: $(cat "$tmp/raw.err")"
check '! python3 "$ROOT/scripts/ckpt_same.py" "$tmp/ema/last.nmt" "$tmp/plain/last.nmt" > /dev/null' \
  "the saved model should be the average, not the training weights"
check '! python3 "$ROOT/scripts/ckpt_training_weights.py" "$tmp/plain/last.nmt" "$tmp/x.nmt" > /dev/null && [ ! -e "$tmp/x.nmt" ]' \
  "ckpt_training_weights.py on a checkpoint without the average should refuse"
check '[ $(rows "$tmp/ema" valid | wc -l) -eq 2 ] && ! cmp -s <(rows "$tmp/plain" valid) <(rows "$tmp/ema" valid)' \
  "the validations should score the average, not the training weights: $(rows "$tmp/ema" valid)"
check '[ "$(py layout "$tmp/plain/last.nmt")" = "version 3 sections CONF,STOK,TTOK,TENS,PARM,OPTM,STAT,HIST" ]' \
  "a checkpoint without the average (format 3: its validation records hold chrF): $(py layout "$tmp/plain/last.nmt")"
check '[ "$(py layout "$tmp/ema/last.nmt")" = "version 3 sections CONF,STOK,TTOK,TENS,PARM,OPTM,STAT,HIST,TPRM" ]' \
  "a checkpoint with the average: $(py layout "$tmp/ema/last.nmt")"
# the saved model is the average: best.nmt translates (and not as the training weights would)
check '"$NMT" translate --model "$tmp/ema/best.nmt" < "$tmp/data/test.src" > "$tmp/ema.txt" 2>/dev/null && [ $(wc -l < "$tmp/ema.txt") -eq 20 ]' \
  "translate with the average"

# 2. the recurrence, from consecutive step checkpoints: at t = 2 the ramp
# (3/12) is below the decay 0.5, at t = 10 the decay (0.5 < 11/20) rules
train steps --set train.ema_decay=0.5 --set train.max_steps=10 --set train.valid_every=1 --set train.keep_checkpoints=20
check '[ $rc -eq 0 ] && [ -s "$tmp/steps/step-2.nmt" ] && [ -s "$tmp/steps/step-10.nmt" ]' "step checkpoints: $rc $(ls "$tmp/steps")"
for t in 2 10; do
  res=$(py ema "$tmp/steps/step-$((t - 1)).nmt" "$tmp/steps/step-$t.nmt" $t 0.5 2>&1)
  check 'awk -v r="$res" "BEGIN { split(r, a, \" \"); exit !(a[1] < 2e-3 && a[2] > 1e-4) }"' \
    "step $t: the average does not follow avg += (1 - d_t)(w - avg) (worst, largest |w - avg|): $res"
done
# a wrong decay is told apart (the check can fail)
res=$(py ema "$tmp/steps/step-9.nmt" "$tmp/steps/step-10.nmt" 10 0.6 2>&1)
check 'awk -v r="$res" "BEGIN { split(r, a, \" \"); exit !(a[1] > 1e-2) }"' "a decay of 0.6 (0.55 at step 10) should not fit: $res"
res=$(py ema "$tmp/steps/step-1.nmt" "$tmp/steps/step-2.nmt" 2 0.2 2>&1)
check 'awk -v r="$res" "BEGIN { split(r, a, \" \"); exit !(a[1] > 1e-2) }"' "a decay of 0.2 (below the ramp) should not fit step 2: $res"

# 3. resume restores the average: 10 steps, then resume to 20, validates
# (and trains) as the uninterrupted run
train halves --set train.ema_decay=0.99 --set train.max_steps=10
check '[ $rc -eq 0 ]' "first 10 steps: $rc $out"
train halves --set train.ema_decay=0.99 --resume
check '[ $rc -eq 0 ]' "resumed to 20: $rc $out"
for kind in train valid; do
  check 'cmp -s <(rows "$tmp/ema" $kind) <(rows "$tmp/halves" $kind)' \
    "resumed $kind rows differ: $(diff <(rows "$tmp/ema" $kind) <(rows "$tmp/halves" $kind) | head -4)"
done

# 4. turned on at a resume: it starts from the weights; turned off: a
# warning, and training goes on from the training weights (the same
# losses as the run that kept it)
train plain --set train.ema_decay=0.99 --set train.max_steps=30 --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "kept no moving average of the weights; the average of train.ema_decay starts from its weights"' \
  "ema turned on at a resume: $rc $out"
cp -r "$tmp/ema" "$tmp/ema-off"
train ema-off --set train.ema_decay=0 --set train.max_steps=30 --resume
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "holds a moving average of the weights (train.ema_decay); with train.ema_decay 0 the run goes on without it from the training weights"' \
  "ema turned off at a resume: $rc $out"
train ema --set train.ema_decay=0.99 --set train.max_steps=30 --resume
check '[ $rc -eq 0 ] && cmp -s <(rows "$tmp/ema" train) <(rows "$tmp/ema-off" train)' \
  "off at a resume, training should go on from the training weights: $(diff <(rows "$tmp/ema" train) <(rows "$tmp/ema-off" train) | head -4)"
check '[ "$(py layout "$tmp/ema-off/last.nmt")" = "version 3 sections CONF,STOK,TTOK,TENS,PARM,OPTM,STAT,HIST" ]' \
  "without the average again, no TRAIN_PARAMS: $(py layout "$tmp/ema-off/last.nmt")"

# 5. bad values are refused naming the key (1 in single precision too)
for v in 1 0.99999999 -0.1; do
  expect 2 "train.ema_decay" "$NMT" config --config "$tmp/tiny.json" --set train.ema_decay=$v
done

test_end
