#!/usr/bin/env bash
# test_extra_corpus.sh: a second training corpus (data.extra_src and
# data.extra_tgt, e.g. back-translation) end to end on the generated demo
# corpus: with data.extra_tag the model tells the corpora apart (the extra
# corpus's targets end in a marker word; a translation ends in it when,
# and only when, the input starts with the tag, and not at all without a
# tag); data.train_upsample repeats the main pairs in every epoch; the
# tag is one SentencePiece piece; subword sampling and guided alignment
# train with it and resume exactly; the cache follows the extra files;
# bad settings are refused naming the key.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_extra_corpus
cd "$tmp" || exit 2

"$NMT" demo-corpus --out data --train 800 --valid 30 --test 40 --seed 4 --max-words 8 > /dev/null || bad "demo-corpus"
"$NMT" demo-corpus --out more --train 800 --valid 5 --test 5 --seed 7 --max-words 8 > /dev/null || bad "demo-corpus 2"
sed 's/$/ zz/' more/train.tgt > more/train.zz # the extra corpus's mark
MODEL='{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}'
TRAIN='{"optimizer": "adam", "lr": 0.005, "lr_decay": 1.0, "patience": 0, "max_steps": 800, "batch_sentences": 32,
        "valid_every": 10000, "log_every": 10, "seed": 1, "threads": 1, "save_dir": "run"}'
demo_config c.json "$MODEL" "$TRAIN" '{"beam": 1}'
sed -i 's|"cache_dir": "cache"|"cache_dir": "cache", "extra_src": "more/train.src", "extra_tgt": "more/train.zz", "extra_tag": "<BT>"|' c.json
train() { train_into "$tmp/c.json" "$@"; } # DIR SETTINGS...
# marked MODEL [PREFIX]: how many of the 40 test translations end in the mark
marked() { sed "s/^/${2:-}/" data/test.src | "$NMT" translate --model "$1" 2> /dev/null | grep -c ' zz$'; }

# 1. tagged: the corpora told apart by the tag alone
train run
check '[ $rc -eq 0 ]' "tagged run: $rc $out"
check 'printf "%s" "$out" | grep -q "^prepare: extra: 800 pairs read, 800 kept"' "the extra summary line: $out"
check 'printf "%s" "$out" | grep -qF "prepare: training word tokenizers on $tmp/data/train.src, $tmp/data/train.tgt, $tmp/more/train.src and $tmp/more/train.zz"' \
  "the tokenizers' files: $out"
check 'printf "%s" "$out" | grep -qF "an epoch'"'"'s pairs: 800 of data.train_src and 800 of data.extra_src (<BT>)" &&
       printf "%s" "$out" | grep -q " 1600 training pairs, 50 batches per epoch"' "the pairs of an epoch: $out"
plain=$(marked run/last.nmt) tagged=$(marked run/last.nmt '<BT> ')
check '[ "$plain" -le 2 ] && [ "$tagged" -ge 38 ]' "marked translations: $plain of 40 plain, $tagged of 40 tagged"
# ... which the same run without a tag cannot do
train untagged --set data.extra_tag= --set data.cache_dir="$tmp/cache_untagged"
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "800 of data.extra_src (untagged)"' "untagged run: $rc $out"
plain_u=$(marked untagged/last.nmt) tagged_u=$(marked untagged/last.nmt '<BT> ')
check '[ $((tagged_u - plain_u)) -le 10 ] && [ $((tagged_u - plain_u)) -ge -10 ]' \
  "untagged: $plain_u of 40 plain, $tagged_u of 40 with the tag's text"

# 1b. nmt shortlist counts the pairs of an epoch: the mark, in the extra
# corpus only, is frequent (800 times), and twice that with upsampling
out=$("$NMT" shortlist --config c.json --out sl.tsv 2>&1); rc=$?
check '[ $rc -eq 0 ] && grep -q "^F	zz	800$" sl.tsv && grep -q "^F	the	" sl.tsv' "shortlist: $rc $out $(grep zz sl.tsv | head -2)"
out=$("$NMT" shortlist --config c.json --set data.train_upsample=2 --out sl2.tsv 2>&1); rc=$?
the1=$(awk -F'\t' '$1 == "F" && $2 == "the" { print $3 }' sl.tsv) the2=$(awk -F'\t' '$1 == "F" && $2 == "the" { print $3 }' sl2.tsv)
zz2=$(awk -F'\t' '$1 == "F" && $2 == "zz" { print $3 }' sl2.tsv)
main_the=$(grep -cw the data/train.tgt) # pairs containing it
check '[ $rc -eq 0 ] && [ "$zz2" = 800 ] && [ "$the2" -eq $((the1 + main_the)) ]' \
  "upsampled shortlist: $rc, zz $zz2, the $the1 -> $the2 (+$main_the expected) $out"

# 2. data.train_upsample: the main pairs twice an epoch; resume is exact
train up --set data.train_upsample=2 --set train.max_steps=60 --quiet
check '[ $rc -eq 0 ]' "upsampled run: $rc $out"
out=$("$NMT" train --config c.json --set train.save_dir="$tmp/up_log" --set data.train_upsample=2 --set train.max_steps=1 2>&1)
check 'printf "%s" "$out" | grep -qF "800 of data.train_src x 2 (data.train_upsample) and 800 of data.extra_src (<BT>)" &&
       printf "%s" "$out" | grep -q " 2400 training pairs, 75 batches per epoch"' "upsampled epoch: $out"
check_resume_exact losses up up_half 30 --set data.train_upsample=2 --set train.max_steps=60 --quiet
train up --resume --set data.train_upsample=3 --set train.max_steps=70
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.train_upsample"' "resume with another upsample: $rc $out"
train run --resume --set data.extra_tag='<B>' --set train.max_steps=810
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.extra_tag"' "resume with another tag: $rc $out"

# 3. SentencePiece: the tag is one piece (a user-defined symbol), which
# subword sampling never splits; sampled runs of both corpora resume exactly
SPM=(--set data.tokenizer=spm --set data.spm_vocab_size=150 --set data.cache_dir="$tmp/spm_cache")
train spm "${SPM[@]}" --set train.max_steps=40 --set data.spm_sample_alpha=0.5 --quiet
check '[ $rc -eq 0 ]' "sampled spm run: $rc $out"
if command -v spm_encode > /dev/null; then
  pieces=$(printf '<BT> a b\n' | spm_encode --model=spm_cache/src.tok --output_format=piece 2>&1)
  check 'printf "%s" "$pieces" | grep -q "^▁ <BT> "' "the tag's pieces: $pieces"
fi
check_resume_exact losses spm spm_half 20 "${SPM[@]}" --set train.max_steps=40 --set data.spm_sample_alpha=0.5 --quiet

# 4. guided alignment: the extra pairs have no links
anti() {
  awk 'NR == FNR { ns[NR] = NF; next }
       { s = ns[FNR]; out = ""; for (j = 0; j < NF; j++) out = out (j ? " " : "") (s - 1 - int(j * s / NF)) "-" j; print out }' "$1" "$2"
}
anti data/train.src data/train.tgt > data/train.aln
G=(--set data.train_align=data/train.aln --set train.guided_alignment_weight=1 --set data.cache_dir="$tmp/g_cache")
train guided "${G[@]}" --set train.max_steps=1
main_tgt=$(awk '{ n += NF } END { print n }' data/train.tgt)
extra_tgt=$(awk '{ n += NF } END { print n }' more/train.zz)
share=$(awk -v a="$main_tgt" -v b="$extra_tgt" 'BEGIN { printf "%.1f", 100 * a / (a + b) }') # every main word aligned
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "$share% of the"' "guided: aligned share, expected $share%: $out"
train gs "${G[@]}" --set train.max_steps=40 --set data.train_upsample=2 --set data.tokenizer=spm \
  --set data.spm_vocab_size=150 --set data.spm_sample_alpha=0.5 --set data.cache_dir="$tmp/gs_cache" --quiet
check '[ $rc -eq 0 ]' "guided, sampled, upsampled run: $rc $out"
check_resume_exact losses gs gs_half 20 "${G[@]}" --set train.max_steps=40 --set data.train_upsample=2 \
  --set data.tokenizer=spm --set data.spm_vocab_size=150 --set data.spm_sample_alpha=0.5 \
  --set data.cache_dir="$tmp/gs_cache" --quiet

# 5. the cache follows the extra corpus
sed -i '1s/$/ zz/' more/train.zz
train run3 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "stale (data.extra_tgt changed)"' "a changed extra file: $rc $out"

# 6. refused, naming the key or the file
expect 2 "data.extra_tgt: must be given together with data.extra_src" \
  "$NMT" train --config c.json --set data.extra_tgt= --set train.save_dir="$tmp/x"
expect 2 "data.extra_tag: \"<BT>\" is put before the sentences of data.extra_src, which is not given" \
  "$NMT" train --config c.json --set data.extra_src= --set data.extra_tgt= --set train.save_dir="$tmp/x"
expect 2 "data.extra_tag: \"a b\" must be one token, without white space" \
  "$NMT" config --config c.json --set 'data.extra_tag=a b'
expect 2 "data.extra_tag: at most 64 bytes, got 65" \
  "$NMT" config --config c.json --set "data.extra_tag=<$(printf 'x%.0s' $(seq 63))>"
expect 2 "data.train_upsample: must be in [1, 1000], got 0" "$NMT" config --config c.json --set data.train_upsample=0
expect 1 "missing.src" "$NMT" train --config c.json --set data.extra_src=missing.src --set train.save_dir="$tmp/x"
if command -v spm_train > /dev/null; then
  spm_train --minloglevel=2 --input=data/train.src --model_prefix=notag --vocab_size=100 \
    --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 > /dev/null 2>&1 || bad "spm_train"
  expect 2 "--user_defined_symbols=<BT>" "$NMT" train --config c.json --set data.tokenizer=spm \
    --set data.spm_src_model=notag.model --set data.spm_tgt_model=notag.model \
    --set data.cache_dir="$tmp/notag_cache" --set train.save_dir="$tmp/x"
fi

test_end
