#!/usr/bin/env bash
# test_layer_norm_cli.sh: model.layer_norm end to end on the generated demo
# corpus (the model itself: test_model_grad, test_reference, test_decode):
# lib.sh's check_model_key (a run with it trains and is another model than
# without; exact resume; a resume or fine-tuning run that changes it is
# refused naming it; a checkpoint from before the key loads without it);
# its gains are parameters (10 tensors more); nmt info shows it (text and
# JSON); greedy and beam translation, n-best and nmt score run on it.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_layer_norm_cli

"$NMT" demo-corpus --out "$tmp/data" --train 1200 --valid 30 --test 20 --seed 5 > /dev/null || bad "demo-corpus"
demo_config "$tmp/ln.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 2, "dec_layers": 2, "layer_norm": true, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "max_steps": 40,
              "valid_every": 20, "log_every": 10, "seed": 2, "threads": 1, "save_dir": "run"}' \
  '{"beam": 3, "batch": 16}'
train() { train_into "$tmp/ln.json" "$1" --quiet "${@:2}"; } # DIR SETTINGS...: lib.sh's train_into with ln.json

# 1. lib.sh's checks of a model key (runs run, plain, half)
check_model_key model.layer_norm

# 2. the gains are parameters: a pair per LSTM (encoder layer 0 both ways
# with 16 units, layer 1 and decoder layers 0 and 1 with 32), 4 x units
# each: 10 tensors, 2 (2 x 64 + 3 x 128) = 1024 values more than without
"$NMT" info --json "$tmp/run/last.nmt" > "$tmp/info.json"
"$NMT" info --json "$tmp/plain/last.nmt" > "$tmp/info-plain.json"
count() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; } # FILE KEY
check '[ $(( $(count "$tmp/info.json" tensors) - $(count "$tmp/info-plain.json" tensors) )) -eq 10 ]' \
  "tensors: $(count "$tmp/info.json" tensors) with, $(count "$tmp/info-plain.json" tensors) without"
check '[ $(( $(count "$tmp/info.json" parameters) - $(count "$tmp/info-plain.json" parameters) )) -eq 1024 ]' \
  "parameters: $(count "$tmp/info.json" parameters) with, $(count "$tmp/info-plain.json" parameters) without"

# 3. nmt info
"$NMT" info "$tmp/run/last.nmt" > "$tmp/info.txt" 2>&1
check 'grep -q "^layers: *2 encoder, 2 decoder, layer normalisation$" "$tmp/info.txt"' \
  "info: $(grep layers "$tmp/info.txt")"
"$NMT" info "$tmp/plain/last.nmt" > "$tmp/info-plain.txt" 2>&1
check 'grep -q "^layers: *2 encoder, 2 decoder$" "$tmp/info-plain.txt"' "info: $(grep layers "$tmp/info-plain.txt")"
check 'python3 -c "import json,sys; m = json.load(open(sys.argv[1]))[\"model\"]; sys.exit(not (m[\"layer_norm\"] is True))" "$tmp/info.json"' \
  "info --json: $(head -c 300 "$tmp/info.json")"
check '"$NMT" info "$tmp/old.nmt" | grep -q "^layers: *2 encoder, 2 decoder$"' \
  "info of a checkpoint from before the key: $("$NMT" info "$tmp/old.nmt" 2>&1 | grep layers)"

# 4. translate (greedy, beam 3 with n-best) and score
n=$(wc -l < "$tmp/data/test.src")
"$NMT" translate --model "$tmp/run/best.nmt" --beam 1 < "$tmp/data/test.src" > "$tmp/hyp1" 2> "$tmp/err"
check '[ $? -eq 0 ] && [ "$(wc -l < "$tmp/hyp1")" -eq "$n" ] && [ -n "$(tr -d " \n" < "$tmp/hyp1")" ]' \
  "translate --beam 1: $(cat "$tmp/err")"
"$NMT" translate --model "$tmp/run/best.nmt" --beam 3 --nbest 3 < "$tmp/data/test.src" > "$tmp/nbest" 2> "$tmp/err"
check '[ $? -eq 0 ] && [ "$(wc -l < "$tmp/nbest")" -eq $((3 * n)) ]' "translate --nbest 3: $(cat "$tmp/err")"
"$NMT" score --model "$tmp/run/best.nmt" --src "$tmp/data/test.src" --tgt "$tmp/hyp1" > "$tmp/scores" 2> "$tmp/err"
check '[ $? -eq 0 ] && [ "$(wc -l < "$tmp/scores")" -eq "$n" ]' "score: $(cat "$tmp/err")"

test_end
