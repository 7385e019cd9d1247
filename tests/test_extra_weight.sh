#!/usr/bin/env bash
# test_extra_weight.sh: data.extra_weight end to end on the generated demo
# corpus, beside an extra corpus whose targets end in a marker word (zz):
# the log line counts an epoch's share; a whole weight of 2 trains exactly
# as the corpus listed twice and a weight of 1 exactly as no weight; a
# fractional weight resumes exactly across epochs (also with subword
# sampling and with guided alignment); the weight steers what the model
# learns (few marked translations at 0.05, most at 3); nmt shortlist
# counts a corpus its weight rounded up; a resume with another weight and
# bad values are refused naming the key. (The draw itself:
# tests/test_train_mix.c; the batcher's range: tests/test_batch.c.)
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_extra_weight
cd "$tmp" || exit 2

"$NMT" demo-corpus --out data --train 800 --valid 30 --test 40 --seed 4 --max-words 8 > /dev/null || bad "demo-corpus"
"$NMT" demo-corpus --out more --train 800 --valid 5 --test 5 --seed 7 --max-words 8 > /dev/null || bad "demo-corpus 2"
sed 's/$/ zz/' more/train.tgt > more/train.zz # the extra corpus's mark
MODEL='{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}'
TRAIN='{"optimizer": "adam", "lr": 0.005, "lr_decay": 1.0, "patience": 0, "max_steps": 100, "batch_sentences": 32,
        "valid_every": 10000, "log_every": 10, "seed": 1, "threads": 1, "save_dir": "run"}'
demo_config c.json "$MODEL" "$TRAIN" '{"beam": 1}'
sed -i 's|"cache_dir": "cache"|"cache_dir": "cache", "extra_src": "more/train.src", "extra_tgt": "more/train.zz", "extra_weight": 0.25|' c.json
train() { train_into "$tmp/c.json" "$@"; } # DIR SETTINGS...
# marked MODEL: how many of the 40 test translations end in zz
marked() { "$NMT" translate --model "$1" < data/test.src 2> /dev/null | grep -c " zz\$"; }
# epochs DIR: the distinct epochs of the run's train.csv rows
epochs() { grep '^train,' "$1/train.csv" | cut -d, -f3 | sort -un | tr '\n' ' '; }

# 1. a quarter of the extra corpus an epoch: the log line, the pairs, and
# more than one epoch in 100 updates; the four epochs' shares (the test
# hook's record of each epoch's pairs: index 800 on) are 200 different
# lines each, all 800 of them
export NMT_TEST_EPOCH_LINES=$tmp/lines_run
train run
check '[ $rc -eq 0 ]' "run: $rc $out"
shares=$(awk -F, '$2 >= 800 { n[$1]++ } END { for (e in n) print e ":" n[e] }' lines_run | sort | xargs)
check '[ "$shares" = "0:200 1:200 2:200 3:200" ]' "the epochs' shares of the extra corpus: $shares"
check '[ "$(awk -F, '"'"'$2 >= 800 { print $3 }'"'"' lines_run | sort -un | wc -l)" -eq 800 ] &&
       [ "$(awk -F, '"'"'$2 >= 800 { print $3 }'"'"' lines_run | sort -n | sed -n "1p;\$p" | tr "\n" " ")" = "1 800 " ]' \
  "four epochs of a quarter take each of the 800 lines once: $(awk -F, '$2 >= 800 { print $3 }' lines_run | sort -un | wc -l) lines"
check '[ "$(awk -F, '"'"'$2 < 800 { print $3 }'"'"' lines_run | sort -n | uniq -c | awk '"'"'$1 != 4'"'"' | wc -l)" -eq 0 ]' \
  "every data.train_src pair in every epoch"
check 'printf "%s" "$out" | grep -qF "an epoch'"'"'s pairs: 800 of data.train_src and 800 of data.extra_src (untagged) x 0.25 (data.extra_weight: 200, a new share every epoch)" &&
       printf "%s" "$out" | grep -q " 1000 training pairs, "' "the pairs of an epoch: $out"
check '[ "$(epochs run | wc -w)" -ge 3 ]' "100 updates of 1000 pairs should span 3 epochs: $(epochs run)"

# 2. exact resume across the epochs' different shares (the mix of the
# resumed epoch is drawn again), also with subword sampling and with
# guided alignment
export NMT_TEST_EPOCH_LINES=$tmp/lines_half
check_resume_exact losses run half 50
check 'cmp -s <(sort -u lines_run) <(sort -u lines_half)' "the resumed run's epochs hold other pairs: $(diff <(sort -u lines_run) <(sort -u lines_half) | head -3)"
# and a resume in the first epoch, whose mix setup has built already (the
# trainer keeps it rather than drawing it again)
export NMT_TEST_EPOCH_LINES=$tmp/lines_first
check_resume_exact losses run first 10
check 'cmp -s <(sort -u lines_run) <(sort -u lines_first)' "resumed in the first epoch, the epochs hold other pairs: $(diff <(sort -u lines_run) <(sort -u lines_first) | head -3)"
unset NMT_TEST_EPOCH_LINES
SPM=(--set data.tokenizer=spm --set data.spm_vocab_size=150 --set data.spm_sample_alpha=0.5
     --set data.cache_dir="$tmp/spm_cache" --quiet)
train spm "${SPM[@]}"
check '[ $rc -eq 0 ]' "sampled run: $rc $out"
check_resume_exact losses spm spm_half 50 "${SPM[@]}"
awk 'NR == FNR { ns[NR] = NF; next }
     { n = NF < ns[FNR] ? NF : ns[FNR]; out = ""; for (j = 0; j < n; j++) out = out (j ? " " : "") j "-" j; print out }' \
  data/train.src data/train.tgt > data/train.aln # the diagonal
G=(--set data.train_align=data/train.aln --set train.guided_alignment_weight=0.5 --set data.cache_dir="$tmp/g_cache" --quiet)
train guided "${G[@]}"
check '[ $rc -eq 0 ]' "guided run: $rc $out"
check_resume_exact losses guided guided_half 50 "${G[@]}"

# 3. whole weights: 2 trains exactly as the corpus listed twice, 1 exactly
# as no weight (the same epochs, the same batches, the same losses); the
# tokenizers given, since listing a corpus twice also trains them on it
# twice
GIVEN=(--set data.tokenizer=spm --set data.spm_src_model=spm_cache/src.tok --set data.spm_tgt_model=spm_cache/tgt.tok)
train two "${GIVEN[@]}" --set data.extra_weight=2 --set data.cache_dir="$tmp/cache1" --set train.max_steps=30
train listed "${GIVEN[@]}" --set 'data.extra_src=["more/train.src", "more/train.src"]' \
  --set 'data.extra_tgt=["more/train.zz", "more/train.zz"]' --set data.extra_weight=1 --set data.cache_dir="$tmp/cache2" \
  --set train.max_steps=30
check '[ -s two/train.csv ] && cmp -s <(losses two) <(losses listed)' "weight 2 against listed twice: $(diff <(losses two) <(losses listed) | head -4)"
check 'printf "%s" "$out" | grep -q " 2400 training pairs, "' "listed twice: $out"
sed 's|, "extra_weight": 0.25||' c.json > plain.json
train_into "$tmp/plain.json" plain --set train.max_steps=30
train one --set data.extra_weight=1 --set train.max_steps=30
check '[ -s plain/train.csv ] && cmp -s <(losses one) <(losses plain)' "weight 1 against none: $(diff <(losses one) <(losses plain) | head -4)"

# 4. the weight steers what is learnt: plain test inputs end in zz rarely
# at 0.05 (40 marked pairs of 840 an epoch), mostly at 3 (2400 of 3200)
train low --set data.extra_weight=0.05 --set train.max_steps=1600 --quiet
check '[ $rc -eq 0 ]' "low weight: $rc $out"
train high --set data.extra_weight=3 --set train.max_steps=1600 --quiet
check '[ $rc -eq 0 ]' "high weight: $rc $out"
lo=$(marked low/last.nmt) hi=$(marked high/last.nmt)
check '[ "$lo" -le 8 ] && [ "$hi" -ge 28 ]' "marked translations (of 40): weight 0.05 $lo, weight 3 $hi"

# 5. nmt shortlist counts a corpus its weight rounded up: every pair that
# some epoch holds
"$NMT" shortlist --config c.json --out sl1.tsv > /dev/null 2>&1
"$NMT" shortlist --config c.json --set data.extra_weight=2.5 --out sl3.tsv > /dev/null 2>&1
check 'grep -q "^F	zz	800$" sl1.tsv && grep -q "^F	zz	2400$" sl3.tsv' \
  "shortlist counts of zz: $(grep -h '	zz	' sl1.tsv sl3.tsv | head -2)"

# 6. refused, naming the key: a resume with another weight, bad values
train run --resume --set data.extra_weight=0.5 --set train.max_steps=110
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.extra_weight"' "resume with another weight: $rc $out"
expect 2 "data.extra_weight: must be in (0, 1000], got 0" "$NMT" config --config c.json --set data.extra_weight=0
expect 2 "data.extra_weight: item 2: must be in (0, 1000], got -1" "$NMT" config --config c.json --set 'data.extra_weight=[1,-1]'
expect 2 "data.extra_weight: 2 weights for the 1 corpus of data.extra_src" \
  "$NMT" config --config c.json --set 'data.extra_weight=[1,2]'
expect 2 "data.extra_weight: weighs the corpora of data.extra_src, which is not given" \
  "$NMT" config --config plain.json --set data.extra_src= --set data.extra_tgt= --set data.extra_weight=0.5
expect 2 "data.extra_weight: expected a number or a list of numbers, got a string" \
  "$NMT" config --config c.json --set 'data.extra_weight="half"'
# the resolved config prints the weight as a number, and a list as an array
out=$("$NMT" config --config c.json --set 'data.extra_src=["more/train.src", "more/train.src"]' \
  --set 'data.extra_tgt=["more/train.zz", "more/train.zz"]' --set 'data.extra_weight=[0.25, 3]' 2>&1)
check 'printf "%s" "$out" | tr -d " \t\n" | grep -qF "\"extra_weight\":[0.25,3]"' "nmt config: $out"

test_end
