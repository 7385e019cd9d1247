#!/usr/bin/env bash
# test_extra_corpora.sh: several extra training corpora (data.extra_src,
# data.extra_tgt and data.extra_tag as lists) end to end on the generated
# demo corpus: two extra corpora whose targets end in their own marker word
# (zz, yy), each with its own tag, train one model that ends a translation
# in a corpus's marker when, and only when, the input starts with that
# corpus's tag; the log, the cache files and the shortlist count every
# corpus; an untagged item; both tags are SentencePiece pieces; subword
# sampling over three corpora resumes exactly; the cache follows the second
# corpus's files; a resume with another list is refused; lists that
# disagree and a missing file of the second corpus are refused naming the
# key or the file. (tests/test_extra_corpus.sh covers one extra corpus.)
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_extra_corpora
cd "$tmp" || exit 2

"$NMT" demo-corpus --out data --train 800 --valid 30 --test 40 --seed 4 --max-words 8 > /dev/null || bad "demo-corpus"
"$NMT" demo-corpus --out more --train 800 --valid 5 --test 5 --seed 7 --max-words 8 > /dev/null || bad "demo-corpus 2"
"$NMT" demo-corpus --out third --train 800 --valid 5 --test 5 --seed 9 --max-words 8 > /dev/null || bad "demo-corpus 3"
sed 's/$/ zz/' more/train.tgt > more/train.zz # each extra corpus's mark
sed 's/$/ yy/' third/train.tgt > third/train.yy
MODEL='{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}'
TRAIN='{"optimizer": "adam", "lr": 0.005, "lr_decay": 1.0, "patience": 0, "max_steps": 1600, "batch_sentences": 32,
        "valid_every": 10000, "log_every": 10, "seed": 1, "threads": 1, "save_dir": "run"}'
demo_config c.json "$MODEL" "$TRAIN" '{"beam": 1}'
sed -i 's|"cache_dir": "cache"|"cache_dir": "cache", "extra_src": ["more/train.src", "third/train.src"], "extra_tgt": ["more/train.zz", "third/train.yy"], "extra_tag": ["<BT>", "<T2>"]|' c.json
train() { train_into "$tmp/c.json" "$@"; } # DIR SETTINGS...
# marked MODEL WORD [PREFIX]: how many of the 40 test translations end in WORD
marked() { sed "s/^/${3:-}/" data/test.src | "$NMT" translate --model "$1" 2> /dev/null | grep -c " $2\$"; }

# 1. three corpora, two tags: each extra corpus told apart by its own tag
train run
check '[ $rc -eq 0 ]' "run: $rc $out"
check 'printf "%s" "$out" | grep -q "^prepare: extra: 800 pairs read, 800 kept" &&
       printf "%s" "$out" | grep -q "^prepare: extra 2: 800 pairs read, 800 kept"' "the summary lines: $out"
check 'printf "%s" "$out" | grep -qF "on $tmp/data/train.src, $tmp/data/train.tgt, $tmp/more/train.src, $tmp/more/train.zz, $tmp/third/train.src and $tmp/third/train.yy"' \
  "the tokenizers' files: $out"
check 'printf "%s" "$out" | grep -qF "an epoch'"'"'s pairs: 800 of data.train_src, 800 of data.extra_src[1] (<BT>) and 800 of data.extra_src[2] (<T2>)" &&
       printf "%s" "$out" | grep -q " 2400 training pairs, 75 batches per epoch"' "the pairs of an epoch: $out"
check '[ -s cache/extra.bin ] && [ -s cache/extra-2.bin ]' "the cache files: $(ls cache)"
pz=$(marked run/last.nmt zz) py=$(marked run/last.nmt yy)
bz=$(marked run/last.nmt zz '<BT> ') by=$(marked run/last.nmt yy '<BT> ')
tz=$(marked run/last.nmt zz '<T2> ') ty=$(marked run/last.nmt yy '<T2> ')
check '[ "$pz" -le 2 ] && [ "$py" -le 2 ] && [ "$bz" -ge 36 ] && [ "$by" -le 2 ] && [ "$ty" -ge 36 ] && [ "$tz" -le 2 ]' \
  "marks (zz, yy): plain $pz $py; <BT> $bz $by; <T2> $tz $ty (of 40)"

# 2. nmt shortlist counts the pairs of every corpus
out=$("$NMT" shortlist --config c.json --out sl.tsv 2>&1); rc=$?
check '[ $rc -eq 0 ] && grep -q "^F	zz	800$" sl.tsv && grep -q "^F	yy	800$" sl.tsv' "shortlist: $rc $out $(grep -E '	(zz|yy)	' sl.tsv | head -3)"

# 3. an untagged item ("") beside a tagged one
train untagged --set 'data.extra_tag=["<BT>", ""]' --set data.cache_dir="$tmp/cache_untagged" --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "800 of data.extra_src[1] (<BT>) and 800 of data.extra_src[2] (untagged)"' \
  "untagged item: $rc $out"

# 3b. a corpus listed twice joins twice (the way to weigh an extra corpus);
# its tag twice is one SentencePiece piece
train twice --set 'data.extra_src=["more/train.src", "more/train.src", "third/train.src"]' \
  --set 'data.extra_tgt=["more/train.zz", "more/train.zz", "third/train.yy"]' --set 'data.extra_tag=["<BT>", "<BT>", "<T2>"]' \
  --set data.tokenizer=spm --set data.spm_vocab_size=150 --set data.cache_dir="$tmp/cache_twice" --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "800 of data.train_src, 800 of data.extra_src[1] (<BT>), 800 of data.extra_src[2] (<BT>) and 800 of data.extra_src[3] (<T2>)" &&
       printf "%s" "$out" | grep -q " 3200 training pairs"' "a corpus listed twice: $rc $out"

# 4. SentencePiece: both tags are pieces; subword sampling over the three
# corpora resumes exactly
SPM=(--set data.tokenizer=spm --set data.spm_vocab_size=150 --set data.cache_dir="$tmp/spm_cache")
train spm "${SPM[@]}" --set train.max_steps=40 --set data.spm_sample_alpha=0.5 --quiet
check '[ $rc -eq 0 ]' "sampled spm run: $rc $out"
if command -v spm_encode > /dev/null; then
  pieces=$(printf '<BT> a\n<T2> a\n' | spm_encode --model=spm_cache/src.tok --output_format=piece 2>&1)
  check 'printf "%s" "$pieces" | grep -q "^▁ <BT> " && printf "%s" "$pieces" | grep -q "^▁ <T2> "' "the tags' pieces: $pieces"
fi
check_resume_exact losses spm spm_half 20 "${SPM[@]}" --set train.max_steps=40 --set data.spm_sample_alpha=0.5 --quiet

# 5. the cache follows the second corpus's files; a resume with another
# list of corpora is refused
sed -i '1s/$/ yy/' third/train.yy
train run3 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "stale (data.extra_tgt\[2\] changed)"' "a changed second file: $rc $out"
train run --resume --set 'data.extra_src=["more/train.src"]' --set 'data.extra_tgt=["more/train.zz"]' \
  --set 'data.extra_tag=<BT>' --set train.max_steps=1610
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.extra_src"' "resume with one corpus fewer: $rc $out"

# 6. refused, naming the key or the file
expect 2 "data.extra_tag: 1 tag for the 2 corpora of data.extra_src" \
  "$NMT" config --config c.json --set data.extra_tag='<BT>'
expect 2 "data.extra_tgt: 1 path for the 2 corpora of data.extra_src" \
  "$NMT" config --config c.json --set data.extra_tgt=more/train.zz
expect 2 "data.extra_tag (item 2): \"<s>\" is a special token's name" \
  "$NMT" config --config c.json --set 'data.extra_tag=["<BT>", "<s>"]'
expect 1 "missing.yy" "$NMT" train --config c.json --set 'data.extra_tgt=["more/train.zz", "missing.yy"]' \
  --set data.cache_dir="$tmp/cache_missing" --set train.save_dir="$tmp/x"
# the resolved config prints the lists as arrays
out=$("$NMT" config --config c.json 2>&1)
check 'printf "%s" "$out" | tr -d " \t\n" | grep -qF "\"extra_tag\":[\"<BT>\",\"<T2>\"]"' "nmt config: $out"

test_end
