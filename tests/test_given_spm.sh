#!/usr/bin/env bash
# test_given_spm.sh: SentencePiece models given as files
# (data.spm_src_model, data.spm_tgt_model; spm_train's .model files)
# instead of trained by nmt prepare: the cache's and the checkpoint's
# tokenizers are the files byte for byte, a unigram source and a bpe
# target model included; models with other special ids than nmt's are used
# with their specials moved to 0..3 and segment as given; the keys that describe the tokenizers follow the
# models (data.spm_model_type, spm_vocab_size, spm_joint); the cache follows
# the files (a run does not resume on a changed one); nmt info
# --tokenizers writes a checkpoint's back as files; translation and
# resume work; bad models and keys are refused
# naming the key and the file.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_given_spm
cd "$tmp" || exit 2
command -v spm_train > /dev/null || { echo "SKIP: spm_train (Debian package sentencepiece) not installed"; test_end; exit; }

"$NMT" demo-corpus --out data --train 500 --valid 30 --test 20 --seed 4 --max-words 10 > /dev/null || bad "demo-corpus"
ids="--pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3"
spm() { spm_train --minloglevel=2 "$@" > /dev/null 2>&1 || bad "spm_train $*"; }
spm --input=data/train.src --model_prefix=src --vocab_size=100 $ids
spm --input=data/train.tgt --model_prefix=tgt --vocab_size=120 --model_type=bpe $ids
spm --input=data/train.src,data/train.tgt --model_prefix=joint --vocab_size=150 $ids
spm --input=data/train.src --model_prefix=plain --vocab_size=100           # SentencePiece's own ids
spm --input=data/train.tgt --model_prefix=nobos --vocab_size=120 --model_type=bpe --bos_id=-1 --eos_id=-1
spm --input=data/train.src --model_prefix=padend --vocab_size=100 --pad_id=99
spm --input=data/train.src --model_prefix=pad3 --vocab_size=100 --pad_id=3
spm --input=data/train.src --model_prefix=taken --vocab_size=100 --bos_id=-1 --user_defined_symbols='<s>'
spm --input=data/train.src --model_prefix=char --model_type=char $ids
MODEL='{"emb_dim": 16, "hidden": 16, "enc_layers": 1, "dec_layers": 1}'
TRAIN='{"max_steps": 20, "batch_sentences": 16, "valid_every": 10, "log_every": 10, "seed": 1, "threads": 1}'
demo_config c.json "$MODEL" "$TRAIN" '{"beam": 2}'
sed -i 's|"tokenizer": "word"|"tokenizer": "spm", "spm_src_model": "src.model", "spm_tgt_model": "tgt.model"|' c.json
train() { train_into "$tmp/c.json" "$@"; } # DIR SETTINGS...

# 1. training with the given models: they are the cache's and the checkpoint's tokenizers
train run
check '[ $rc -eq 0 ]' "run with given models: $rc $out"
check 'printf "%s" "$out" | grep -qF "prepare: the given SentencePiece models (data.spm_src_model $tmp/src.model, data.spm_tgt_model $tmp/tgt.model)"' \
  "the prepare line: $out"
check 'printf "%s" "$out" | grep -qF "the given SentencePiece models ($tmp/src.model: 100 pieces, unigram; $tmp/tgt.model: 120 pieces, bpe) set data.spm_model_type"' \
  "the keys line: $out"
check 'cmp -s cache/src.tok src.model && cmp -s cache/tgt.tok tgt.model' "the cache's tokenizers are not the given files"
info=$("$NMT" info run/last.nmt 2>&1)
check 'printf "%s" "$info" | grep -q "source vocabulary: *100" && printf "%s" "$info" | grep -q "target vocabulary: *120" &&
       printf "%s" "$info" | grep -q "^tokenizer: *spm unigram (source), spm bpe (target)$"' "nmt info: $info"
conf=$("$NMT" config --config c.json 2>/dev/null)
check 'printf "%s" "$conf" | grep -q "\"spm_model_type\":.*\"bpe\"" && printf "%s" "$conf" | grep -q "\"spm_joint\":.*false"' \
  "resolved config: $(printf "%s" "$conf" | grep spm_)"
out=$("$NMT" translate --model run/last.nmt < data/test.src 2>&1 > test.hyp); rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < test.hyp)" -eq 20 ]' "translate: $rc $out"
# resume: the same tokenizers, the cache up to date
train run --resume --set train.max_steps=30
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "is up to date"' "resume: $rc $out"

# 1b. nmt info --tokenizers writes them back as files: the given ones byte
# for byte, which spm_encode and a new run take; never over a file
out=$("$NMT" info run/last.nmt --tokenizers exported 2>&1); rc=$?
check '[ $rc -eq 0 ] && cmp -s exported/src.model src.model && cmp -s exported/tgt.model tgt.model' "export: $rc $out"
check '[ "$out" = "exported/src.model: SentencePiece unigram model, 100 pieces
exported/tgt.model: SentencePiece bpe model, 120 pieces" ]' "export's lines: $out"
check '[ "$(head -3 data/test.src | spm_encode --model=exported/src.model | wc -l)" -eq 3 ]' "spm_encode on the exported model"
expect 1 "exported/src.model: exists; nmt info --tokenizers writes into a folder without" \
  "$NMT" info run/last.nmt --tokenizers exported
expect 2 "--tokenizers writes the tokenizers alone" "$NMT" info run/last.nmt --tokenizers other --json
expect 2 "--tokenizers needs a folder" "$NMT" info run/last.nmt --tokenizers

# 2. one file on both sides: a joint model, data.spm_vocab_size its pieces
train joint --quiet --set data.spm_src_model=joint.model --set data.spm_tgt_model=joint.model \
  --set data.cache_dir="$tmp/jcache" --set train.max_steps=2
check '[ $rc -eq 0 ] && cmp -s jcache/src.tok joint.model && cmp -s jcache/tgt.tok joint.model' "joint run: $rc $out"
conf=$("$NMT" config --config c.json --set data.spm_src_model=joint.model --set data.spm_tgt_model=joint.model 2>/dev/null)
check 'printf "%s" "$conf" | grep -q "\"spm_joint\":.*true" && printf "%s" "$conf" | grep -q "\"spm_vocab_size\":.*150" &&
       printf "%s" "$conf" | grep -q "\"spm_model_type\":.*\"unigram\""' "joint resolved config: $(printf "%s" "$conf" | grep spm_)"

# 3. the cache follows the files
cp src.model src.keep
spm --input=data/train.src --model_prefix=src --vocab_size=90 $ids
train run2 --set train.max_steps=2
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "stale (data.spm_src_model changed)" && cmp -s cache/src.tok src.model' \
  "a changed model file: $rc $out"
# ... and a run of the old one does not resume with it
train run --resume --set train.max_steps=40
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.spm_src_model: cannot resume: the source tokenizer differs from the checkpoint.s (the model file changed)"' \
  "resume after the model changed: $rc $out"
cp src.keep src.model

# 3b. models with other special ids than nmt's (spm_train's defaults: no
# pad, unk 0, bos 1, eos 2; bos and eos off; pad elsewhere): used with the
# specials moved to 0..3, a log line saying how; the cache's model segments
# every training sentence as the given one, each piece's id moved as the
# line says; a run trains, translates and resumes on them
same_pieces() { # GIVEN CACHED [TEXT]: spm_encode's pieces of TEXT (train.src) agree
  local text=${3:-data/train.src}
  cmp -s <(spm_encode --model="$1" < "$text") <(spm_encode --model="$2" < "$text")
}
id_shifts() { # GIVEN CACHED [TEXT]: how the ids of TEXT (train.src) differ, "shift count" lines
  local text=${3:-data/train.src}
  paste <(spm_encode --model="$1" --output_format=id < "$text" | tr ' ' '\n') \
        <(spm_encode --model="$2" --output_format=id < "$text" | tr ' ' '\n') |
    awk '{ d[$2 - $1]++ } END { for (k in d) print k, d[k] }'
}
train moved --set data.spm_src_model=plain.model --set data.spm_tgt_model=nobos.model \
  --set data.cache_dir="$tmp/mcache"
check '[ $rc -eq 0 ]' "run on models with SentencePiece's own ids: $rc $out"
check 'printf "%s" "$out" | grep -qF "data.spm_src_model: $tmp/plain.model has SentencePiece'"'"'s special ids pad none, unk 0, bos 1, eos 2; nmt moves them to pad 0, unk 1, bos 2, eos 3 (adding <pad>), and every other piece'"'"'s id is 1 higher, in nmt and in the cache'"'"'s src.tok"' \
  "the source model's line: $out"
check 'printf "%s" "$out" | grep -qF "data.spm_tgt_model: $tmp/nobos.model has SentencePiece'"'"'s special ids pad none, unk 0, bos none, eos none; nmt moves them to pad 0, unk 1, bos 2, eos 3 (adding <pad>, <s>, </s>), and every other piece'"'"'s id is 3 higher"' \
  "the target model's line: $out"
check 'same_pieces plain.model mcache/src.tok && same_pieces nobos.model mcache/tgt.tok data/train.tgt' "the moved models segment otherwise"
shifts=$(id_shifts plain.model mcache/src.tok)
check '[ "${shifts%% *}" = 1 ] && [ "$(printf "%s\n" "$shifts" | wc -l)" -eq 1 ]' "source ids should all be 1 higher: $shifts"
shifts=$(id_shifts nobos.model mcache/tgt.tok data/train.tgt)
check '[ "${shifts%% *}" = 3 ] && [ "$(printf "%s\n" "$shifts" | wc -l)" -eq 1 ]' "target ids should all be 3 higher: $shifts"
check '[ "$(spm_export_vocab --model=mcache/tgt.tok | head -4 | cut -f1 | tr "\n" " ")" = "<pad> <unk> <s> </s> " ]' \
  "the moved target model's first pieces: $(spm_export_vocab --model=mcache/tgt.tok | head -4)"
info=$("$NMT" info moved/last.nmt 2>&1)
check 'printf "%s" "$info" | grep -q "source vocabulary: *101" && printf "%s" "$info" | grep -q "target vocabulary: *123"' \
  "nmt info of the moved run: $info"
out=$("$NMT" translate --model moved/last.nmt < data/test.src 2>&1 > moved.hyp); rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < moved.hyp)" -eq 20 ]' "translate with moved models: $rc $out"
train moved --resume --set data.spm_src_model=plain.model --set data.spm_tgt_model=nobos.model \
  --set data.cache_dir="$tmp/mcache" --set train.max_steps=30
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "is up to date"' "resume on moved models: $rc $out"
for m in padend:99:1:"every other piece's id is 1 higher" pad3:3:0:"the other pieces keep their ids"; do
  IFS=: read -r name pad want says <<< "$m"
  "$NMT" prepare --config c.json --set data.spm_src_model=$name.model --set data.cache_dir="$tmp/c$name" > prep.log 2>&1
  check '[ $? -eq 0 ] && grep -qF "$tmp/$name.model has SentencePiece'"'"'s special ids pad $pad, unk 0, bos 1, eos 2;" prep.log' \
    "prepare with $name.model: $(cat prep.log)"
  check 'grep -qF "$says" prep.log' "$name.model: want '$says': $(grep special prep.log)"
  shifts=$(id_shifts $name.model c$name/src.tok)
  check 'same_pieces $name.model c$name/src.tok && [ "$shifts" = "$want $(spm_encode --model=$name.model < data/train.src | wc -w)" ]' \
    "$name.model: pieces or id shifts ($shifts)"
done

# 4. refused, naming the key and the file
bad_run() { # WANT-CODE NEEDLE SETTINGS...
  local code=$1 want=$2
  shift 2
  train "e$RANDOM" --quiet --set data.cache_dir="$tmp/ecache" "$@"
  check '[ $rc -eq $code ] && printf "%s" "$out" | grep -qF -- "$want"' "want $code and '$want', got $rc: $(printf "%s" "$out" | tail -2)"
}
bad_run 2 "data.spm_tgt_model: must be given together with data.spm_src_model" --set data.spm_tgt_model=
bad_run 2 "data.spm_src_model: a SentencePiece model needs data.tokenizer spm, got word" --set data.tokenizer=word
"$NMT" train --config c.json --quiet --set train.save_dir="$tmp/plainrun" --set data.spm_src_model= \
  --set data.spm_tgt_model= --set data.spm_vocab_size=100 --set data.cache_dir="$tmp/pcache" > /dev/null 2>&1 ||
  bad "a run to fine-tune from"
bad_run 2 "data.spm_src_model: with train.init_from the tokenizers are its checkpoint's ($tmp/plainrun/last.nmt)" \
  --set train.init_from=plainrun/last.nmt
bad_run 1 "data.spm_src_model: $tmp/taken.model: the SentencePiece model has no <s> control piece (nmt needs one at id 2) and its piece 1, a user-defined or other piece, is named <s>, so none can be added" \
  --set data.spm_src_model=taken.model
bad_run 1 "data.spm_tgt_model: $tmp/char.model: a SentencePiece char model; nmt takes unigram and bpe models" \
  --set data.spm_tgt_model=char.model
bad_run 1 "data.spm_src_model: $tmp/nope.model" --set data.spm_src_model=nope.model
printf 'not a model\n' > text.model
bad_run 1 "data.spm_src_model: $tmp/text.model: not a valid SentencePiece model" --set data.spm_src_model=text.model
"$NMT" prepare --config c.json --set data.tokenizer=word --set data.spm_src_model= --set data.spm_tgt_model= \
  --set data.cache_dir="$tmp/wcache" > /dev/null 2>&1 || bad "a word cache"
# a word model's tokenizers export as vocabularies
train wordrun --quiet --set data.tokenizer=word --set data.spm_src_model= --set data.spm_tgt_model= \
  --set data.cache_dir="$tmp/wcache" --set train.max_steps=1
out=$("$NMT" info wordrun/last.nmt --tokenizers wexp 2>&1); rc=$?
check '[ $rc -eq 0 ] && cmp -s wexp/src.vocab wcache/src.tok && cmp -s wexp/tgt.vocab wcache/tgt.tok &&
       printf "%s" "$out" | grep -q "^wexp/src.vocab: word vocabulary, [0-9]* entries$"' "word export: $rc $out"
bad_run 1 "data.spm_src_model: $tmp/wcache/src.tok: a word vocabulary (nmt's word tokenizer), not a SentencePiece model" \
  --set data.spm_src_model=wcache/src.tok
# subword sampling: the bpe target model's alpha is a merge dropout below 1
bad_run 2 "data.spm_sample_alpha: with data.spm_model_type bpe it is the merge dropout probability and must be below 1, got 1.5 (the tokenizers and their keys are those of data.spm_src_model" \
  --set data.spm_sample_alpha=1.5
train sampled --quiet --set data.spm_sample_alpha=0.2 --set train.max_steps=2
check '[ $rc -eq 0 ]' "sampling with the given models: $rc $out"

test_end
