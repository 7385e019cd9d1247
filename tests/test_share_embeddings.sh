#!/usr/bin/env bash
# test_share_embeddings.sh: model.share_embeddings (one embedding matrix
# for source and target, docs/model.md) from the command line: what every
# model key gets (lib.sh check_model_key: it trains and changes the model,
# resume is exact, it is fixed for resumes and fine-tuning, a checkpoint
# from before it is a model without it); the checkpoint holds one
# embedding tensor, V x E parameters fewer (none of them the output
# layer's unless tied too); `nmt gradcheck` passes with it alone and with
# tie_embeddings; two tokenizers are refused naming the key: the word
# tokenizer and SentencePiece not joint before anything is trained, two
# different given models once loaded, and the same given model twice is
# one tokenizer.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_share_embeddings

"$NMT" demo-corpus --out "$tmp/data" --train 1500 --valid 40 --test 30 --seed 6 > /dev/null || bad "demo-corpus"
demo_config "$tmp/c.json" \
  '{"emb_dim": 24, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1, "share_embeddings": true,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.005, "batch_sentences": 32, "epochs": 50,
              "max_steps": 40, "valid_every": 20, "log_every": 10, "seed": 3, "threads": 1,
              "save_dir": "run"}' \
  '{"beam": 2, "batch": 16}'
sed -i 's|"tokenizer": "word"|"tokenizer": "spm", "spm_joint": true, "spm_vocab_size": 300|' "$tmp/c.json"
train() { train_into "$tmp/c.json" "$@"; } # DIR SETTINGS...

# 1. a model key
check_model_key model.share_embeddings

# 2. one tensor fewer, V x E parameters fewer (tied too: the output layer's as well)
params() { "$NMT" info "$1" | awk '/^parameters:/ { print $2, $4 }'; } # "count tensors"
vocab=$("$NMT" info "$tmp/run/last.nmt" | awk '/^source vocabulary:/ { print $3 }')
read -r n_shared t_shared <<< "$(params "$tmp/run/last.nmt")"
read -r n_plain t_plain <<< "$(params "$tmp/plain/last.nmt")"
check '[ "$t_shared" -eq $((t_plain - 1)) ] && [ "$n_shared" -eq $((n_plain - vocab * 24)) ]' \
  "shared: $n_shared in $t_shared tensors, plain $n_plain in $t_plain (vocabulary $vocab)"
check '"$NMT" info "$tmp/run/last.nmt" | grep -q "^share_embeddings: *yes"' "nmt info does not say shared"
train tied --set model.tie_embeddings=true --set train.max_steps=2
read -r n_tied t_tied <<< "$(params "$tmp/tied/last.nmt")"
check '[ $rc -eq 0 ] && [ "$t_tied" -eq $((t_plain - 2)) ] && [ "$n_tied" -eq $((n_plain - 2 * vocab * 24)) ]' \
  "shared and tied: $rc, $n_tied in $t_tied tensors, plain $n_plain in $t_plain"

# 3. the gradients
for sets in "" "--set model.tie_embeddings=true"; do
  out=$("$NMT" gradcheck --config "$tmp/c.json" $sets 2>&1)
  check '[ $? -eq 0 ] && printf "%s" "$out" | grep -q "gradients OK"' "gradcheck $sets: $out"
done

# 4. two tokenizers are refused, naming the key; one given model twice is one
train w --set data.tokenizer=word
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "model.share_embeddings: needs one tokenizer for both sides; the word tokenizer has one a side" &&
       [ ! -e "$tmp/cache_w" ]' "word tokenizer: $rc $out"
train s --set data.spm_joint=false --set data.cache_dir="$tmp/scache"
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "model.share_embeddings: needs one tokenizer for both sides: set data.spm_joint true" &&
       [ ! -e "$tmp/scache/src.tok" ]' "SentencePiece not joint, refused before training a tokenizer: $rc $out"
"$NMT" prepare --config "$tmp/c.json" --set data.spm_joint=false --set data.spm_vocab_size=200 --set data.cache_dir="$tmp/sep" > /dev/null 2>&1 ||
  bad "a cache of two SentencePiece models"
train g --set data.spm_src_model="$tmp/sep/src.tok" --set data.spm_tgt_model="$tmp/sep/tgt.tok" \
  --set data.cache_dir="$tmp/gcache"
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "model.share_embeddings: needs one tokenizer for both sides, and the source and target tokenizers differ"' \
  "two given models: $rc $out"
train g2 --set data.spm_src_model="$tmp/sep/tgt.tok" --set data.spm_tgt_model="$tmp/sep/tgt.tok" \
  --set data.cache_dir="$tmp/g2cache" --set train.max_steps=2
check '[ $rc -eq 0 ]' "one given model on both sides: $rc $out"

test_end
