#!/usr/bin/env bash
# test_info_cli.sh: `nmt info` on checkpoints of tiny runs on the generated
# demo corpus: the text facts (step, best step and score, the number of
# validations, the --history table) agree with train.csv and the training
# log; --json parses and holds the same numbers (null for a chrF a format-1
# checkpoint does not have); --config prints the CONF section byte for
# byte; a run with train.ema_decay shows the moving average and its stored
# training weights, and `nmt average`'s copy neither them nor the moments;
# the best scheduled validation and the history's best (best.nmt's) apart;
# a missing, truncated or corrupt file exits 1 naming it; bad usage exits 2.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_info_cli

"$NMT" demo-corpus --out "$tmp/data" --train 800 --valid 30 --test 10 --seed 6 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.01, "batch_sentences": 32, "max_steps": 40,
              "valid_every": 10, "log_every": 10, "seed": 3, "threads": 1, "save_dir": "run"}' \
  '{"beam": 1, "batch": 64}'
train() { train_into "$tmp/tiny.json" "$@"; } # DIR SETTINGS...: lib.sh's train_into with tiny.json
fact() { sed -n "s/^$1: *//p" "$2"; } # LABEL FILE: the fact of a text description
valid_rows() { grep "^valid," "$1/train.csv" | cut -d, -f2,10,11,12; } # DIR: step, ppl, BLEU, chrF
# the last validation the log marks (best): "STEP SCORE", the score in METRIC (BLEU or ppl)
log_best() { printf '%s\n' "$out" | sed -n "s/^valid: step \([0-9]*\) .*$1 \([0-9.]*\).*(best)\$/\1 \2/p" | tail -1; }

# 1. text: the facts agree with train.csv and the log
train run
check '[ $rc -eq 0 ] && [ -s "$tmp/run/best.nmt" ]' "training: $rc $out"
"$NMT" info "$tmp/run/last.nmt" > "$tmp/last.txt" 2> "$tmp/err"
check '[ $? -eq 0 ]' "nmt info last.nmt: $(cat "$tmp/err")"
check '[ "$(fact file "$tmp/last.txt")" = "$tmp/run/last.nmt" ]' "file: $(fact file "$tmp/last.txt")"
check '[ "$(fact size "$tmp/last.txt" | cut -d" " -f1)" = "$(wc -c < "$tmp/run/last.nmt")" ]' "size: $(fact size "$tmp/last.txt")"
check '[ "$(fact format "$tmp/last.txt")" = 3 ]' "format: $(fact format "$tmp/last.txt")"
last_step=$(tail -1 "$tmp/run/train.csv" | cut -d, -f2)
check '[ "$(fact step "$tmp/last.txt")" = "$last_step" ] && [ "$last_step" = 40 ]' \
  "step: $(fact step "$tmp/last.txt"), train.csv's last $last_step"
best=$(log_best BLEU)
check '[ -n "$best" ] && [ "$(fact best "$tmp/last.txt")" = "step ${best% *}, bleu ${best#* }" ]' \
  "best: $(fact best "$tmp/last.txt"), the log's (best) $best"
check '"$NMT" info "$tmp/run/best.nmt" | grep -q "^step: *${best% *}$"' \
  "best.nmt is not at the best step ${best% *}"
n_valid=$(valid_rows "$tmp/run" | wc -l)
check '[ "$(fact validations "$tmp/last.txt")" = "$n_valid" ] && [ "$n_valid" -ge 4 ]' \
  "validations: $(fact validations "$tmp/last.txt"), train.csv has $n_valid"
check 'grep -q "^weights: *the training weights$" "$tmp/last.txt" && ! grep -q "^training weights:" "$tmp/last.txt"' \
  "weights of a run without a moving average: $(grep weights "$tmp/last.txt")"
check 'grep -q "^optimizer: *adam, moments stored$" "$tmp/last.txt"' "optimizer: $(fact optimizer "$tmp/last.txt")"
check 'grep -q "^attention: *luong, general, global, 1 head$" "$tmp/last.txt" && grep -q "^emb_dim: *24$" "$tmp/last.txt" &&
       grep -q "^hidden: *32 " "$tmp/last.txt" && grep -q "^tokenizer: *word$" "$tmp/last.txt"' "model facts: $(cat "$tmp/last.txt")"

# --history: one row a validation of train.csv (step; ppl to 3 places, BLEU and chrF to 2)
"$NMT" info --history "$tmp/run/last.nmt" > "$tmp/hist.txt"
sed -n '/^ *step  *ppl  *BLEU  *chrF$/,$p' "$tmp/hist.txt" | tail -n +2 > "$tmp/rows.txt"
check '[ "$(wc -l < "$tmp/rows.txt")" -eq "$n_valid" ]' "--history rows: $(cat "$tmp/hist.txt")"
check 'paste -d" " "$tmp/rows.txt" <(valid_rows "$tmp/run" | tr , " ") | awk "
         function off(a, b, tol) { return a - b > tol || b - a > tol }
         \$1 != \$5 || off(\$2, \$6, 0.00051) || off(\$3, \$7, 0.0051) || off(\$4, \$8, 0.0051) { bad = 1 }
         END { exit bad }"' "--history against train.csv: $(paste -d" " "$tmp/rows.txt" <(valid_rows "$tmp/run"))"

# 2. --json: the same numbers, the history at full precision
"$NMT" info --json "$tmp/run/last.nmt" > "$tmp/last.json"
valid_rows "$tmp/run" > "$tmp/valid.csv"
python3 - "$tmp/last.json" "$tmp/valid.csv" "$last_step" $best > "$tmp/py.txt" 2>&1 <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
rows = [line.strip().split(",") for line in open(sys.argv[2])]
step, best_step, best_bleu = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
close = lambda a, b: abs(a - b) <= 1e-7 * max(1.0, abs(b))
s = info["state"]
assert s["step"] == step and s["best_step"] == best_step and s["valid_metric"] == "bleu", s
assert abs(s["best_metric"] - best_bleu) <= 0.005, (s["best_metric"], best_bleu)
assert info["validations"] == len(rows) == len(info["history"]), info["validations"]
for h, r in zip(info["history"], rows):
    assert h["step"] == int(r[0]) and close(h["ppl"], float(r[1])), (h, r)
    assert close(h["bleu"], float(r[2])) and close(h["chrf"], float(r[3])), (h, r)
assert info["format"] == 3 and info["moments_stored"] is True and info["training_weights_stored"] is False
assert info["weights"] == "training" and info["optimizer"] == "adam"
assert info["model"]["emb_dim"] == 24 and info["model"]["attention"]["score"] == "general"
assert info["tokenizer"]["src_kind"] == "word" and info["tokenizer"]["src_vocab_size"] > 4
assert info["parameters"] > 0 and info["tensors"] > 0 and "config" not in info
PY
check '[ $? -eq 0 ]' "--json: $(cat "$tmp/py.txt")"

# 3. --config: the CONF section as stored, byte for byte
"$NMT" info --config "$tmp/run/last.nmt" > "$tmp/config.out"
check '[ $? -eq 0 ]' "--config failed"
python3 - "$tmp/run/last.nmt" > "$tmp/conf.section" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
pos = 24
while data[pos:pos + 4] != b"CONF":
    pos += 12 + struct.unpack_from("<Q", data, pos + 4)[0]
sys.stdout.buffer.write(data[pos + 12:pos + 12 + struct.unpack_from("<Q", data, pos + 4)[0]])
PY
check '[ -s "$tmp/conf.section" ] && cmp -s <(cat "$tmp/conf.section"; [ "$(tail -c1 "$tmp/conf.section")" = "" ] || echo) "$tmp/config.out"' \
  "--config differs from the CONF section: $(diff <(cat "$tmp/conf.section"; echo) "$tmp/config.out" | head -4)"
check 'python3 -c "import json, sys; c = json.load(open(sys.argv[1])); assert c[\"train\"][\"save_dir\"] == sys.argv[2], c[\"train\"]" \
       "$tmp/config.out" "$tmp/run"' "--config: train.save_dir is not $tmp/run"
"$NMT" info --json --config "$tmp/run/last.nmt" > "$tmp/with-config.json"
check 'python3 -c "import json, sys; assert json.load(open(sys.argv[1]))[\"config\"] == json.load(open(sys.argv[2]))" \
       "$tmp/with-config.json" "$tmp/config.out"' "--json --config: its config member is not the stored config"

# 4. a moving average (and best by perplexity): the average is the model,
#    the training weights are stored; `nmt average`'s copy keeps neither
#    them nor the moments
train ema --set train.ema_decay=0.99 --set train.valid_metric=ppl
check '[ $rc -eq 0 ]' "training with train.ema_decay: $rc $out"
"$NMT" info "$tmp/ema/last.nmt" > "$tmp/ema.txt"
check 'grep -q "^weights: *moving average of the training weights (train.ema_decay 0.99)$" "$tmp/ema.txt" &&
       grep -q "^training weights: *stored$" "$tmp/ema.txt"' "ema: $(grep weights "$tmp/ema.txt")"
best=$(log_best ppl)
check '[ -n "$best" ] && [ "$(fact best "$tmp/ema.txt")" = "step ${best% *}, ppl ${best#* }" ]' \
  "best by ppl: $(fact best "$tmp/ema.txt"), the log's (best) $best"
"$NMT" average --out "$tmp/ema-avg.nmt" "$tmp/ema/last.nmt" 2> /dev/null
"$NMT" info "$tmp/ema-avg.nmt" > "$tmp/ema-avg.txt"
check 'grep -q "^weights: *moving average" "$tmp/ema-avg.txt" && grep -q "^training weights: *not stored$" "$tmp/ema-avg.txt" &&
       grep -q "^optimizer: *adam, no moments stored$" "$tmp/ema-avg.txt"' "nmt average of an ema run: $(cat "$tmp/ema-avg.txt")"
"$NMT" average --out "$tmp/avg.nmt" "$tmp/run/last.nmt" 2> /dev/null
"$NMT" info --json "$tmp/avg.nmt" > "$tmp/avg.json"
check 'python3 -c "import json, sys; i = json.load(open(sys.argv[1])); assert not i[\"moments_stored\"] and i[\"state\"][\"step\"] == 40, i" \
       "$tmp/avg.json"' "nmt average's copy: moments_stored should be false: $(head -12 "$tmp/avg.json")"

# a run stopped before its first scheduled validation: no best yet
train early --set train.max_steps=5
"$NMT" info --json "$tmp/early/last.nmt" > "$tmp/early.json"
check '[ $rc -eq 0 ] && "$NMT" info "$tmp/early/last.nmt" | grep -q "^best: *none of the scheduled validations yet$" &&
       python3 -c "import json, sys; s = json.load(open(sys.argv[1]))[\"state\"]; assert s[\"best_step\"] is None and s[\"best_metric\"] is None, s" \
       "$tmp/early.json"' "stopped at step 5: $rc $(grep -A3 best_step "$tmp/early.json")"

# 5. a format-1 checkpoint (before chrF was recorded): chrF '-' and null
python3 - "$tmp/run/last.nmt" "$tmp/format1.nmt" <<'PY' || bad "rewriting last.nmt as format 1"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos = 24
while data[pos:pos + 4] != b"HIST":
    pos += 12 + struct.unpack_from("<Q", data, pos + 4)[0]
n = struct.unpack_from("<I", data, pos + 12)[0]
records = b"".join(data[pos + 16 + 32 * i:pos + 40 + 32 * i] for i in range(n))
content = data[24:pos] + b"HIST" + struct.pack("<QI", 4 + 24 * n, n) + records + data[pos + 16 + 32 * n:-4]
body = data[:8] + struct.pack("<IIQ", 1, 0, len(content)) + content
open(sys.argv[2], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
"$NMT" info --history "$tmp/format1.nmt" > "$tmp/f1.txt" 2>&1
check '[ "$(fact format "$tmp/f1.txt")" = 1 ] && [ "$(awk "/^ *step  *ppl/ { on = 1; next } on && \$4 == \"-\"" "$tmp/f1.txt" | wc -l)" -eq "$n_valid" ]' \
  "format 1: chrF should print '-': $(cat "$tmp/f1.txt")"
check '"$NMT" info --json "$tmp/format1.nmt" | python3 -c "import json, sys; h = json.load(sys.stdin)[\"history\"]; assert h and all(r[\"chrf\"] is None for r in h), h"' \
  "format 1: chrF should be null in --json"

# 5b. the best scheduled validation and the history's best (what best.nmt
#     holds) apart: BLEU steered by the test hook of trainer.c, step 10: 5,
#     a stop at 13: 30 (best.nmt), 20: 20 (the schedule's best)
NMT_TEST_VALID_BLEU="10:5,13:30,20:20" train stop --set train.max_steps=13
NMT_TEST_VALID_BLEU="10:5,13:30,20:20" train stop --set train.max_steps=20 --resume
"$NMT" info "$tmp/stop/last.nmt" > "$tmp/stop.txt" 2>&1
check '[ "$(fact best "$tmp/stop.txt")" = "step 20, bleu 20.00" ] &&
       [ "$(fact "history best" "$tmp/stop.txt")" = "step 13, bleu 30.00 (what the run'"'"'s best.nmt holds)" ]' \
  "best and history best: $(grep best "$tmp/stop.txt")"
check '"$NMT" info "$tmp/stop/best.nmt" | grep -q "^step: *13$"' "best.nmt should be step 13's"
check '"$NMT" info --json "$tmp/stop/last.nmt" | python3 -c "import json, sys; s = json.load(sys.stdin)[\"state\"]; sys.exit(not (s[\"best_step\"] == 20 and s[\"history_best_step\"] == 13 and s[\"history_best_metric\"] == 30))"' \
  "--json history_best: $("$NMT" info --json "$tmp/stop/last.nmt" | grep -o '"history_best[^,]*' | tr '\n' ' ')"

# 6. refusals: exit 1 naming the file; usage errors exit 2
expect 1 "$tmp/missing.nmt: cannot open" "$NMT" info "$tmp/missing.nmt"
head -c 5000 "$tmp/run/last.nmt" > "$tmp/truncated.nmt"
expect 1 "$tmp/truncated.nmt: truncated" "$NMT" info "$tmp/truncated.nmt"
cp "$tmp/run/last.nmt" "$tmp/corrupt.nmt"
printf '\x55' | dd of="$tmp/corrupt.nmt" bs=1 seek=3000 conv=notrunc status=none
expect 1 "$tmp/corrupt.nmt: corrupt" "$NMT" info --json "$tmp/corrupt.nmt"
expect 1 "$tmp: read error: Is a directory" "$NMT" info "$tmp"
expect 2 "no checkpoint given" "$NMT" info
expect 2 "usage: nmt info" "$NMT" info --json
expect 2 "unknown option '--bogus'" "$NMT" info --bogus "$tmp/run/last.nmt"
expect 2 "one checkpoint at a time" "$NMT" info "$tmp/run/last.nmt" "$tmp/run/best.nmt"
expect 2 "--config prints the stored config alone" "$NMT" info --config --history "$tmp/run/last.nmt"
expect 0 "usage: nmt info" "$NMT" info --help
check '"$NMT" --help | grep -q "^  info  *describe a checkpoint"' "nmt --help does not list info"

test_end
