#!/usr/bin/env bash
# test_residual_cli.sh: model.residual end to end on the generated demo
# corpus (the model itself: test_model_grad, test_reference, test_decode):
# a deep residual run trains (loss falls) and is another model than the
# same run without the connections; resume is exact; nmt info shows the
# connections (text and JSON); greedy and beam translation and nmt score
# run on it; a resume or a fine-tuning run that changes model.residual is
# refused naming the key; a checkpoint written before the key existed
# (its stored config without it) loads as residual false.
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
losses() { grep '^train,' "$1/train.csv" | cut -d, -f2,4,5; } # DIR: step, loss, ppl

# 1. trains; loss falls; another model than without the connections
train run
check '[ $rc -eq 0 ] && [ -s "$tmp/run/best.nmt" ]' "residual training: $rc $out"
first=$(losses "$tmp/run" | head -1 | cut -d, -f2)
last=$(losses "$tmp/run" | tail -1 | cut -d, -f2)
check "awk 'BEGIN{exit !($last < $first - 0.3)}'" "loss did not fall: $first -> $last"
train plain --set model.residual=false
check '[ $rc -eq 0 ]' "plain training: $rc $out"
check '! cmp -s <(losses "$tmp/run") <(losses "$tmp/plain")' "model.residual changed no loss"

# 2. resume is exact: 20 steps, then resume to 40, equals the 40-step run
train half --set train.max_steps=20
check '[ $rc -eq 0 ]' "first half: $out"
train half --resume
check '[ $rc -eq 0 ]' "resumed half: $out"
check 'cmp -s <(losses "$tmp/run") <(losses "$tmp/half")' \
  "resumed losses differ: $(diff <(losses "$tmp/run") <(losses "$tmp/half") | head -4)"

# 3. nmt info
"$NMT" info "$tmp/run/last.nmt" > "$tmp/info.txt" 2>&1
check 'grep -q "^layers: *3 encoder, 3 decoder, residual connections$" "$tmp/info.txt"' \
  "info: $(grep layers "$tmp/info.txt")"
"$NMT" info "$tmp/plain/last.nmt" > "$tmp/info-plain.txt" 2>&1
check 'grep -q "^layers: *3 encoder, 3 decoder$" "$tmp/info-plain.txt"' "info: $(grep layers "$tmp/info-plain.txt")"
"$NMT" info --json "$tmp/run/last.nmt" > "$tmp/info.json"
check 'python3 -c "import json,sys; m = json.load(open(sys.argv[1]))[\"model\"]; sys.exit(not (m[\"residual\"] is True))" "$tmp/info.json"' \
  "info --json: $(head -c 300 "$tmp/info.json")"

# 4. translate (greedy, beam 3, n-best) and score
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

# 5. the key is part of the model: a resume or fine-tuning run may not change it
train half --resume --set model.residual=false --set train.max_steps=50
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "model.residual"' "resume with another model.residual: $rc $out"
train tuned --set train.init_from="$tmp/run/last.nmt" --set model.residual=false
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "model.residual"' "init_from with another model.residual: $rc $out"
train tuned2 --set train.init_from="$tmp/plain/last.nmt" --set train.max_steps=5
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "model.residual: differs from the model of train.init_from"' \
  "init_from a model without the connections: $rc $out"

# 6. a checkpoint of a binary before model.residual (its stored config
# without the key) is a model without the connections: it translates as
# the checkpoint it was made from
checkpoint_without_key "$tmp/plain/last.nmt" "$tmp/old.nmt" model residual false
check '[ $? -eq 0 ]' "rewriting a checkpoint without model.residual: $out"
check '! grep -q residual <("$NMT" info --config "$tmp/old.nmt")' "the rewritten CONF still names model.residual"
check '"$NMT" info "$tmp/old.nmt" | grep -q "^layers: *3 encoder, 3 decoder$"' "info of the old checkpoint: $("$NMT" info "$tmp/old.nmt" 2>&1 | head -5)"
"$NMT" translate --model "$tmp/plain/last.nmt" < "$tmp/data/test.src" > "$tmp/plain.hyp" 2>&1
"$NMT" translate --model "$tmp/old.nmt" < "$tmp/data/test.src" > "$tmp/old.hyp" 2>&1
check 'cmp -s "$tmp/plain.hyp" "$tmp/old.hyp"' "the old checkpoint translates otherwise: $(diff "$tmp/plain.hyp" "$tmp/old.hyp" | head -3)"

test_end
