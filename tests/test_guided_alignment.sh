#!/usr/bin/env bash
# test_guided_alignment.sh: guided alignment training (data.train_align,
# train.guided_alignment_weight and _cost) end to end on the generated demo
# corpus: the attention learns a given alignment (an anti-diagonal one,
# which the corpus does not suggest) where a run without it does not, in
# word units through SentencePiece pieces too, also with subword sampling
# (every epoch's pieces get the word alignment; resume is exact); train.csv's align_loss and
# the progress line; weight 0 is the plain run to the bit; resume is exact;
# a right-to-left run is the mirror run of the reversed corpus and
# alignment; the cache follows the alignment file; bad alignment files and
# configs are refused naming the file and line or the key; nmt gradcheck
# checks the guided loss's gradient.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_guided_alignment
cd "$tmp" || exit 2

"$NMT" demo-corpus --out data --train 1500 --valid 30 --test 20 --seed 4 --max-words 10 > /dev/null || bad "demo-corpus"
# anti SRC TGT: target word j of a pair aligned to source word ns-1-floor(j*ns/nt)
anti() {
  awk 'NR == FNR { ns[NR] = NF; next }
       { s = ns[FNR]; out = ""; for (j = 0; j < NF; j++) out = out (j ? " " : "") (s - 1 - int(j * s / NF)) "-" j; print out }' "$1" "$2"
}
anti data/train.src data/train.tgt > data/train.aln
MODEL='{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
        "attention": {"style": "luong", "score": "general", "mode": "global", "heads": 2}}'
TRAIN='{"optimizer": "adam", "lr": 0.005, "batch_sentences": 32, "max_steps": 400, "valid_every": 200,
        "log_every": 50, "seed": 2, "threads": 1, "save_dir": "run", "guided_alignment_weight": 1.0}'
demo_config g.json "$MODEL" "$TRAIN" '{"beam": 3, "batch": 16}'
sed -i 's|"cache_dir": "cache"|"cache_dir": "cache", "train_align": "data/train.aln"|' g.json
train() { train_into "$tmp/g.json" "$@"; } # DIR SETTINGS...

# agreement RUN: the share of the given pairs of the first 300 training
# pairs that nmt score --alignment hard (word units) finds with RUN's model
head -300 data/train.src > s300
head -300 data/train.tgt > t300
agreement() {
  "$NMT" score --model "$1/last.nmt" --src s300 --tgt t300 --alignment hard > "$1.scored" 2> /dev/null &&
    python3 - "$1.scored" data/train.aln <<'PY'
import sys
got = [set(l.rstrip("\n").split("\t")[-1].split()) for l in open(sys.argv[1])]
given = [l.split() for l in open(sys.argv[2])][:len(got)]
assert len(got) == 300
print(f"{sum(p in g for g, gv in zip(got, given) for p in gv) / sum(len(gv) for gv in given):.3f}")
PY
}

# 1. the guided run learns the alignment; the plain one does not
train guided
check '[ $rc -eq 0 ]' "guided run: $rc $out"
check 'printf "%s" "$out" | grep -q "guided alignment (ce, weight 1, .*train.aln): [0-9]* token links; 100.0% of the [0-9]* target tokens aligned"' \
  "the run's log line: $out"
check 'printf "%s" "$out" | grep -q "step 400 loss [0-9.]* ppl [0-9.]* align [0-9.]* lr"' "progress line without align: $out"
train plain --set train.guided_alignment_weight=0
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "data.train_align is not used"' "weight 0: $rc $out"
a_guided=$(agreement guided)
a_plain=$(agreement plain)
check 'awk -v g="$a_guided" -v p="$a_plain" "BEGIN { exit !(g >= 0.6 && p <= 0.3) }"' \
  "agreement with the given alignment: guided $a_guided (want >= 0.6), plain $a_plain (want <= 0.3)"

# train.csv: align_loss (the last column) in every training row, falling;
# none in validation rows or without guidance
col() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } $1 == "train" { print $k }' "$1/train.csv"; }
check '[ "$(head -1 guided/train.csv | awk -F, "{print \$NF}")" = align_loss ]' "train.csv header: $(head -1 guided/train.csv)"
check '[ "$(col guided align_loss | grep -c .)" -eq "$(grep -c "^train," guided/train.csv)" ]' \
  "align_loss rows: $(col guided align_loss | tr '\n' ' ')"
check 'col guided align_loss | awk "NR == 1 { f = \$1 } END { exit !(\$1 < f * 0.7) }"' \
  "align_loss did not fall: $(col guided align_loss | tr '\n' ' ')"
check '! grep "^valid" guided/train.csv | grep -q ",[0-9.]*[0-9]$" && [ -z "$(col plain align_loss | tr -d "\n")" ]' \
  "align_loss where there is no guidance: $(tail -2 guided/train.csv) / $(col plain align_loss | head -2)"

# 2. weight 0 is the plain run (no data.train_align) to the bit
train nokey --quiet --set data.train_align=
check '[ $rc -eq 0 ]' "run without data.train_align: $rc $out"
out=$(python3 "$ROOT/scripts/ckpt_same.py" plain/last.nmt nokey/last.nmt 2>&1)
check '[ $? -eq 0 ]' "weight 0 trained otherwise than no alignment: $out"

# 3. mse trains too, to another model; ce's align_loss is not mse's
train mse --quiet --set train.guided_alignment_cost=mse --set train.max_steps=100
check '[ $rc -eq 0 ] && [ -n "$(col mse align_loss | head -1)" ]' "mse run: $rc $out"
check '[ "$(col mse align_loss | head -1)" != "$(col guided align_loss | head -1)" ]' "mse's align_loss is ce's"

# 4. resume is exact, align_loss included
rows() { grep '^train,' "$1/train.csv" | cut -d, -f2,4,5,13; }
check_resume_exact rows guided half 150 --quiet

# 5. right to left: the mirror run of the reversed targets and alignment
rev() { awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : ""); print "" }'; }
mkdir -p rdata
cp data/*.src rdata/
for f in train valid test; do rev < "data/$f.tgt" > "rdata/$f.tgt"; done
# target word j of n becomes word n-1-j
awk 'NR == FNR { nt[NR] = NF; next } { out = ""; for (k = 1; k <= NF; k++) { split($k, p, "-"); out = out (k > 1 ? " " : "") p[1] "-" (nt[FNR] - 1 - p[2]) } print out }' \
  data/train.tgt data/train.aln > rdata/train.aln
sed 's/"data\//"rdata\//g; s/"cache"/"rcache"/' g.json > rev.json
train r2l --quiet --set model.right_to_left=true --set train.max_steps=100
check '[ $rc -eq 0 ]' "right-to-left run: $rc $out"
train_into "$tmp/rev.json" mirror --quiet --set train.max_steps=100
check '[ $rc -eq 0 ]' "mirror run: $rc $out"
mrows() { grep -v '^kind' "$1/train.csv" | cut -d, -f1-7,10,11,13; }
check 'cmp -s <(mrows r2l) <(mrows mirror)' "train.csv differs from the mirror run's: $(diff <(mrows r2l) <(mrows mirror) | head -4)"
out=$(python3 "$ROOT/scripts/ckpt_same.py" r2l/last.nmt mirror/last.nmt 2>&1)
check '[ $? -eq 0 ]' "weights differ from the mirror run's: $out"

# 6. SentencePiece: word alignments reach the pieces; agreement in words
train spm --quiet --set data.tokenizer=spm --set data.spm_vocab_size=120 --set data.cache_dir="$tmp/spmcache"
check '[ $rc -eq 0 ]' "spm run: $rc $out"
a_spm=$(agreement spm)
check 'awk -v g="$a_spm" "BEGIN { exit !(g >= 0.45) }"' "spm run's agreement with the given alignment: $a_spm (want >= 0.45)"
check '[ "$("$NMT" score --model spm/last.nmt --src s300 --tgt t300 --alignment hard --alignment-units tokens 2> /dev/null |
         awk -F"\t" "{ n += split(\$NF, x, \" \") } END { print n }")" -gt "$(cat data/train.aln | head -300 | wc -w)" ]' \
  "the spm model should have more target tokens than words"

# 6b. subword sampling: each epoch's sampled pieces get the word alignment
# (alpha 0.1 cuts finely: 1.46x the links of the best segmentation, so
# links that did not follow the pieces would teach a wrong alignment:
# agreement 0.558 with them, 0.384 when the batches took the best
# segmentation's links instead, as measured 2026-12-03)
SPM="--set data.tokenizer=spm --set data.spm_vocab_size=120 --set data.cache_dir=$tmp/spmcache --set data.spm_sample_alpha=0.1"
train spms $SPM
check '[ $rc -eq 0 ]' "spm run with sampling: $rc $out"
check 'printf "%s" "$out" | grep -q "epoch 1: subword sampling (data.spm_sample_alpha 0.1, both)"' "no sampling: $out"
ratio=$(printf "%s" "$out" | sed -n "s/.*epoch 2: guided alignment on the sampled segmentation: [0-9]* token links, \([0-9.]*\)x the best.*/\1/p")
check 'awk -v r="$ratio" "BEGIN { exit !(r > 1.2) }"' "epoch 2's links should outnumber the best segmentation's: '$ratio' in $out"
a_spms=$(agreement spms)
check 'awk -v g="$a_spms" "BEGIN { exit !(g >= 0.47) }"' "sampled spm run's agreement with the given alignment: $a_spms (want >= 0.47)"
# resume is exact, mid-epoch (the draw and its links made again)
check_resume_exact rows spms spms_half 150 --quiet $SPM

# 7. the cache keeps the links and follows the alignment file
train cached --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "cache .* is up to date" && printf "%s" "$out" | grep -q "token links"' \
  "a second run should take the cache: $out"
sed -i '1s/.*/0-0/' data/train.aln
train cached2 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "stale (data.train_align changed)"' "a changed alignment file: $out"
# a resume with another alignment file is refused before the cache is rebuilt
cp data/train.aln other.aln
sed -i '2s/.*/0-0/' other.aln
cache_sums() { cat cache/* | cksum; }
before=$(cache_sums)
train cached2 --set train.max_steps=2 --set data.train_align=other.aln --resume
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.train_align: cannot resume" &&
       ! printf "%s" "$out" | grep -q "stale"' "resume with another alignment file: $rc $out"
check '[ "$(cache_sums)" = "$before" ]' "a refused resume rebuilt the cache"

# 8. nmt gradcheck of the config checks the guided loss's gradient too
out=$("$NMT" gradcheck --config g.json --samples 6 --set train.guided_alignment_cost=mse 2>&1); rc=$?
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "guided alignment: mse, weight 1" &&
       printf "%s" "$out" | grep -q "gradients OK"' "gradcheck: $rc $out"

# 9. bad alignment files and configs: the file and line, or the key
bad_run() { # NAME ALIGNMENT-FILE PATTERN
  local want=$3
  train "e_$1" --quiet --set data.train_align="$2" --set data.cache_dir="$tmp/c_$1"
  check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -qF -- "$want"' "$1: want $want, got $rc: $(printf "%s" "$out" | tail -2)"
}
head -5 data/train.aln > short.aln
bad_run short short.aln "short.aln: 5 lines, but the training corpus has more pairs"
(cat data/train.aln; echo "0-0") > long.aln
bad_run long long.aln "long.aln:1501: a line past the last pair of the training corpus (1500 pairs"
sed '5s/.*/0-1 3x4/' data/train.aln > syntax.aln
bad_run syntax syntax.aln "syntax.aln:5: '3x4' is not a pair i-j of word positions"
sed '7s/.*/1-2 0-99/' data/train.aln > range.aln
bad_run range range.aln "range.aln:7: pair 0-99: the pair's target side has $(sed -n 7p data/train.tgt | wc -w) words"
sed '9s/.*/-1-0/' data/train.aln > negative.aln
bad_run negative negative.aln "negative.aln:9: '-1-0' is not a pair"
# a pair dropped for data.max_len still has its line checked
long_line=$(awk 'NF > 6 { print NR; exit }' data/train.src)
sed "${long_line}s/.*/0-99/" data/train.aln > dropped.aln
train e_dropped --quiet --set data.train_align=dropped.aln --set data.cache_dir="$tmp/c_dropped" --set data.max_len=6
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -qF "dropped.aln:$long_line: pair 0-99"' "a dropped pair's bad line: $rc $out"
bad_run missing nope.aln "nope.aln: cannot open"
train e_none --quiet --set model.attention.style=none
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "data.train_align: guided alignment needs attention"' "style none: $rc $out"
# under subword sampling the alignment file is read again: changed since the cache, it is refused naming the line
sed '3s/.*/0-0/' data/train.aln > resampled.aln
train e_sample --quiet $SPM --set data.cache_dir="$tmp/spmcache2" --set data.train_align=resampled.aln --set train.max_steps=1
check '[ $rc -eq 0 ]' "sampling with a new alignment file: $rc $out"
# an edit of the same size under the same time stamp (as rsync -t or cp -p leave one): the cache cannot tell
touch -r resampled.aln stamp
sed -i '3s/.*/0-1/' resampled.aln
touch -r stamp resampled.aln
train e_sample2 --quiet $SPM --set data.cache_dir="$tmp/spmcache2" --set data.train_align=resampled.aln --set train.max_steps=1
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -q "resampled.aln:3: the pair.s word alignment maps onto other token links"' \
  "an alignment file changed under the cache: $rc $out"

test_end
