#!/usr/bin/env bash
# test_residual_cli.sh: model.residual end to end on the generated demo
# corpus (the model itself: test_model_grad, test_reference, test_decode):
# lib.sh's check_model_key on a deep residual Bahdanau run (trains, another
# model than without the connections, exact resume, a resume or
# fine-tuning run that changes the key refused naming it, a checkpoint
# from before the key loads without them); nmt info shows the connections
# (text and JSON); greedy and beam translation and nmt score run on it.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_residual_cli

"$NMT" demo-corpus --out "$tmp/data" --train 1200 --valid 30 --test 20 --seed 4 > /dev/null || bad "demo-corpus"
demo_config "$tmp/deep.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 3, "dec_layers": 3, "residual": true, "dropout": 0.1,
              "attention": {"style": "bahdanau", "score": "additive", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "max_steps": 40,
              "valid_every": 20, "log_every": 10, "seed": 2, "threads": 1, "save_dir": "run"}' \
  '{"beam": 3, "batch": 16}'
train() { train_into "$tmp/deep.json" "$1" --quiet "${@:2}"; } # DIR SETTINGS...: lib.sh's train_into with deep.json

# 1. lib.sh's checks of a model key (runs run, plain, half)
check_model_key model.residual

# 2. nmt info
"$NMT" info "$tmp/run/last.nmt" > "$tmp/info.txt" 2>&1
check 'grep -q "^layers: *3 encoder, 3 decoder, residual connections$" "$tmp/info.txt"' \
  "info: $(grep layers "$tmp/info.txt")"
"$NMT" info "$tmp/plain/last.nmt" > "$tmp/info-plain.txt" 2>&1
check 'grep -q "^layers: *3 encoder, 3 decoder$" "$tmp/info-plain.txt"' "info: $(grep layers "$tmp/info-plain.txt")"
"$NMT" info --json "$tmp/run/last.nmt" > "$tmp/info.json"
check 'python3 -c "import json,sys; m = json.load(open(sys.argv[1]))[\"model\"]; sys.exit(not (m[\"residual\"] is True))" "$tmp/info.json"' \
  "info --json: $(head -c 300 "$tmp/info.json")"

# 3. translate (greedy, beam 3, n-best) and score
n=$(wc -l < "$tmp/data/test.src")
for beam in 1 3; do
  "$NMT" translate --model "$tmp/run/best.nmt" --beam $beam < "$tmp/data/test.src" > "$tmp/hyp$beam" 2> "$tmp/err"
  # (after 40 updates beam search prefers the empty output, as without the
  # connections: greedy's words are checked)
  check '[ $? -eq 0 ] && [ "$(wc -l < "$tmp/hyp$beam")" -eq "$n" ] && { [ $beam -gt 1 ] || [ -n "$(tr -d " \n" < "$tmp/hyp$beam")" ]; }' \
    "translate --beam $beam: $(cat "$tmp/err")"
done
"$NMT" score --model "$tmp/run/best.nmt" --src "$tmp/data/test.src" --tgt "$tmp/hyp3" > "$tmp/scores" 2> "$tmp/err"
check '[ $? -eq 0 ] && [ "$(wc -l < "$tmp/scores")" -eq "$n" ]' "score: $(cat "$tmp/err")"

# 4. fine-tuning may not turn the connections off either; a checkpoint
# from before the key (check_model_key's old.nmt) has none
train tuned --set train.init_from="$tmp/run/last.nmt" --set model.residual=false
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "model.residual"' "init_from with another model.residual: $rc $out"
check '"$NMT" info "$tmp/old.nmt" | grep -q "^layers: *3 encoder, 3 decoder$"' "info of the old checkpoint: $("$NMT" info "$tmp/old.nmt" 2>&1 | head -5)"

test_end
