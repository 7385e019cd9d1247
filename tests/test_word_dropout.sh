#!/usr/bin/env bash
# test_word_dropout.sh: model.word_dropout_src and model.word_dropout_tgt
# (whole embeddings of positions dropped in training, docs/model.md "Word
# dropout") from the command line: `nmt gradcheck` passes with them (and
# the hand-written backward is what it checks); they change training, each
# side on its own, and a run with them at 0 is the run without them; the
# masks are a function of the seed and step, so two runs agree and a
# resumed run equals the uninterrupted one; a changed value is refused on
# --resume but allowed for fine-tuning (train.init_from); decoding does not
# drop (translations of one model do not depend on the keys); bad values
# are refused naming the key.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_word_dropout

"$NMT" demo-corpus --out "$tmp/data" --train 1500 --valid 40 --test 30 --seed 4 > /dev/null || bad "demo-corpus"
demo_config "$tmp/wd.json" \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "epochs": 50,
              "max_steps": 40, "valid_every": 20, "log_every": 10, "seed": 5, "threads": 1,
              "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'

# 1. the gradients with word dropout on both sides, and on one
for sets in "model.word_dropout_src=0.3 model.word_dropout_tgt=0.3" "model.word_dropout_tgt=0.5 model.attention.style=bahdanau model.attention.score=additive"; do
  args=()
  for s in $sets; do args+=(--set "$s"); done
  out=$("$NMT" gradcheck --config "$tmp/wd.json" "${args[@]}" 2>&1); rc=$?
  check '[ $rc -eq 0 ]' "gradcheck with $sets: $rc $out"
done

# train NAME [--set K=V ...]: a run in $tmp/NAME; its train rows (step,
# loss, perplexity) in $tmp/NAME.rows
train() {
  local name=$1; shift
  local out
  out=$("$NMT" train --config "$tmp/wd.json" --quiet --set train.save_dir="$tmp/$name" "$@" 2>&1)
  check '[ $? -eq 0 ]' "train $name $*: $out"
  grep '^train,' "$tmp/$name/train.csv" | cut -d, -f2,4,5 > "$tmp/$name.rows"
}

# 2. each side changes training; 0 is the default; the same run twice agrees
train plain
train zero --set model.word_dropout_src=0 --set model.word_dropout_tgt=0
train both --set model.word_dropout_src=0.2 --set model.word_dropout_tgt=0.2
train both2 --set model.word_dropout_src=0.2 --set model.word_dropout_tgt=0.2
train src --set model.word_dropout_src=0.2
train tgt --set model.word_dropout_tgt=0.2
check "cmp -s '$tmp/plain.rows' '$tmp/zero.rows'" "word dropout 0 differs from no word dropout"
check "cmp -s '$tmp/both.rows' '$tmp/both2.rows'" "two runs with word dropout differ: $(diff "$tmp/both.rows" "$tmp/both2.rows" | head -3)"
for a in plain:src plain:tgt src:tgt src:both tgt:both; do
  check "! cmp -s '$tmp/${a%%:*}.rows' '$tmp/${a##*:}.rows'" "runs ${a%%:*} and ${a##*:} have the same losses"
done
# most of the source dropped: after 400 steps, when the model without it
# has begun to read the source (its loss 4.4 against 5.2 at step 200), the
# loss stays higher
long=(--set train.max_steps=400 --set train.lr=0.01 --set train.lr_decay=1 --set train.valid_every=1000)
train long "${long[@]}"
train heavy "${long[@]}" --set model.word_dropout_src=0.9
last_long=$(tail -1 "$tmp/long.rows" | cut -d, -f2)
last_heavy=$(tail -1 "$tmp/heavy.rows" | cut -d, -f2)
check "awk 'BEGIN{exit !($last_heavy > $last_long + 0.2)}'" "source word dropout 0.9 should leave the loss higher: $last_heavy vs $last_long"

# 3. resume is exact: 20 steps, then resume to 40
train half --set model.word_dropout_src=0.2 --set model.word_dropout_tgt=0.2 --set train.max_steps=20
out=$("$NMT" train --config "$tmp/wd.json" --quiet --set train.save_dir="$tmp/half" --set model.word_dropout_src=0.2 \
      --set model.word_dropout_tgt=0.2 --resume 2>&1)
check '[ $? -eq 0 ]' "resume: $out"
grep '^train,' "$tmp/half/train.csv" | cut -d, -f2,4,5 > "$tmp/half.rows"
check "cmp -s '$tmp/both.rows' '$tmp/half.rows'" "resumed losses differ: $(diff "$tmp/both.rows" "$tmp/half.rows" | head -3)"

# 4. a changed value: refused on --resume, allowed when fine-tuning
expect 2 "model.word_dropout_src" "$NMT" train --config "$tmp/wd.json" --quiet --set train.save_dir="$tmp/half" \
  --set model.word_dropout_src=0.3 --set model.word_dropout_tgt=0.2 --set train.max_steps=60 --resume
out=$("$NMT" train --config "$tmp/wd.json" --quiet --set train.save_dir="$tmp/tune" --set train.init_from="$tmp/plain/last.nmt" \
      --set model.word_dropout_src=0.1 --set train.max_steps=10 2>&1)
check '[ $? -eq 0 ]' "fine-tuning with word dropout from a model without: $out"

# 5. decoding never drops, and a checkpoint from before the keys is a model
# without word dropout: the model trained with 0.2 on both sides, its
# stored config stripped of both keys (so they read 0), translates as itself
checkpoint_without_key "$tmp/both/last.nmt" "$tmp/strip1.nmt" model word_dropout_src 0.2
check '[ $? -eq 0 ]' "stripping word_dropout_src: $out"
checkpoint_without_key "$tmp/strip1.nmt" "$tmp/old.nmt" model word_dropout_tgt 0.2
check '[ $? -eq 0 ]' "stripping word_dropout_tgt: $out"
check '! grep -q word_dropout <("$NMT" info --config "$tmp/old.nmt")' "the stripped CONF still names word dropout"
"$NMT" translate --model "$tmp/both/last.nmt" < "$tmp/data/test.src" > "$tmp/a.hyp" 2> /dev/null
"$NMT" translate --model "$tmp/old.nmt" < "$tmp/data/test.src" > "$tmp/b.hyp" 2> /dev/null
check "[ -s '$tmp/a.hyp' ] && cmp -s '$tmp/a.hyp' '$tmp/b.hyp'" "translations depend on the word dropout keys"
# the scores too (their digits move with any change of the encoder's input)
for m in both/last old; do
  "$NMT" score --model "$tmp/$m.nmt" --src "$tmp/data/test.src" --tgt "$tmp/data/test.tgt" > "$tmp/${m%%/*}.scores" 2> /dev/null
done
check "[ \$(wc -l < '$tmp/both.scores') -eq 30 ] && cmp -s '$tmp/both.scores' '$tmp/old.scores'" \
  "scores depend on the word dropout keys: $(diff "$tmp/both.scores" "$tmp/old.scores" | head -3)"

# 6. bad values are refused, naming the key
for v in 1 1.5 -0.1 '"x"'; do
  expect 2 "model.word_dropout_tgt" "$NMT" train --config "$tmp/wd.json" --quiet --set train.save_dir="$tmp/bad" \
    --set model.word_dropout_tgt="$v"
done

test_end
