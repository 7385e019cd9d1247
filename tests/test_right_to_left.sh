#!/usr/bin/env bash
# test_right_to_left.sh: model.right_to_left end to end on the generated demo
# corpus (word tokenizer): lib.sh's check_model_key; a right-to-left run is
# the left-to-right run of the same corpus with every target line's words
# reversed (the same train.csv, the same weights), so its translations,
# n-best lists, scores (--tokens in text order) and alignments are that
# run's reversed back; its n-best scores are nmt score's; an ensemble or a
# score that mixes directions is refused; nmt info shows it;
# scripts/rerank.sh picks each line's hypothesis by l2r + W * r2l + L * words (checked
# against the same sum in Python for five pairs of weights), and refuses bad input.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_right_to_left
cd "$tmp" || exit 2

"$NMT" demo-corpus --out data --train 1500 --valid 30 --test 20 --seed 4 --max-words 10 > /dev/null || bad "demo-corpus"
MODEL='{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1, "right_to_left": true,
        "attention": {"style": "luong", "score": "general", "mode": "global", "heads": 2}}'
TRAIN='{"optimizer": "adam", "lr": 0.005, "batch_sentences": 32, "max_steps": 40,
        "valid_every": 20, "log_every": 10, "seed": 2, "threads": 1, "save_dir": "run"}'
demo_config r2l.json "$MODEL" "$TRAIN" '{"beam": 3, "batch": 16}'
train() { train_into "$tmp/r2l.json" "$1" --quiet "${@:2}"; } # DIR SETTINGS...: lib.sh's train_into with r2l.json

# 1. lib.sh's checks of a model key (runs run, plain, half)
check_model_key model.right_to_left

# 2. the left-to-right run of the reversed corpus: the same run (both
# longer than check_model_key's, so that they translate)
rev() { awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : ""); print "" }'; }
mkdir -p rdata
cp data/*.src rdata/
for f in train valid test; do rev < "data/$f.tgt" > "rdata/$f.tgt"; done
sed 's/"data\//"rdata\//g; s/"cache"/"rcache"/' r2l.json > rev.json
LONG=(--set train.max_steps=400 --set train.valid_every=200 --set train.log_every=50)
train r2l "${LONG[@]}"
check '[ $rc -eq 0 ]' "the longer run: $out"
train_into "$tmp/rev.json" mirror --quiet --set model.right_to_left=false "${LONG[@]}"
check '[ $rc -eq 0 ]' "the mirror run: $out"
# all but the speeds and chrF (whose character n-grams run across words, so
# reversing the words changes them; BLEU's word n-grams reverse alike)
rows() { grep -v '^kind' "$1/train.csv" | cut -d, -f1-7,10,11; }
check 'cmp -s <(rows r2l) <(rows mirror)' "train.csv differs from the mirror run's: $(diff <(rows r2l) <(rows mirror) | head -4)"
out=$(python3 "$ROOT/scripts/ckpt_same.py" r2l/last.nmt mirror/last.nmt 2>&1)
check '[ $? -eq 0 ]' "weights differ from the mirror run's: $out"
# the right-to-left run learned something: its validation perplexity fell
check 'grep "^valid" r2l/train.csv | cut -d, -f10 | awk "NR == 1 { first = \$1 } END { exit !(\$1 < first * 0.8) }"' \
  "validation perplexity: $(grep '^valid' r2l/train.csv | cut -d, -f10 | tr '\n' ' ')"

# validation decoded right to left, scored in text order: its chrF (which,
# unlike BLEU here, changes when the words are reversed) is nmt eval's of
# the same model, to eval's one decimal
v=$(grep '^valid,400,' r2l/train.csv | cut -d, -f12)
e=$("$NMT" eval --chrf --json --model r2l/last.nmt --src data/valid.src --ref data/valid.tgt --beam 3 --threads 1 2> /dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["score"])')
check 'awk -v v="$v" -v e="$e" "BEGIN { d = v - e; exit !(e != \"\" && d < 0.051 && d > -0.051) }"' \
  "validation chrF $v of the last step vs nmt eval's $e"

T=data/test.src
"$NMT" translate --model r2l/last.nmt < $T > a.hyp 2> err.txt || bad "translate: $(cat err.txt)"
"$NMT" translate --model mirror/last.nmt < $T | rev > b.hyp
check '[ -n "$(tr -d " \n" < a.hyp)" ] && cmp -s a.hyp b.hyp' "translations are not the mirror's reversed: $(diff a.hyp b.hyp | head -4)"
"$NMT" translate --model r2l/last.nmt --nbest 3 < $T > a.nbest 2> /dev/null
"$NMT" translate --model mirror/last.nmt --nbest 3 < $T > b.nbest 2> /dev/null
revnbest() { awk -F ' [|][|][|] ' '{ n = split($2, w, " "); t = ""; for (i = n; i > 0; i--) t = t w[i] (i > 1 ? " " : ""); print $1 " ||| " t " ||| " $3 }'; }
check 'cmp -s a.nbest <(revnbest < b.nbest)' "n-best lists are not the mirror's reversed: $(diff a.nbest <(revnbest < b.nbest) | head -4)"
"$NMT" score --model r2l/last.nmt --src $T --tgt data/test.tgt --tokens > a.score 2> err.txt || bad "score: $(cat err.txt)"
"$NMT" score --model mirror/last.nmt --src $T --tgt rdata/test.tgt --tokens > b.score 2> /dev/null
out=$(python3 - a.score b.score data/test.tgt <<'PY' 2>&1
import sys
a = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
b = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
tgt = open(sys.argv[3]).read().split("\n")
for k, (x, y) in enumerate(zip(a, b)):
    assert x[0] == y[0], f"line {k}: score {x[0]} vs the mirror's {y[0]}"
    assert x[1].split() == tgt[k].split() + ["</s>"], f"line {k}: tokens {x[1]} not in text order"
    lx, ly = x[2].split(), y[2].split()
    assert lx[:-1] == ly[:-1][::-1] and lx[-1] == ly[-1], f"line {k}: log-probabilities {lx} vs the mirror's {ly}"
assert len(a) == len(b) == 20
PY
)
check '[ $? -eq 0 ]' "score is not the mirror's: $out"
"$NMT" translate --model r2l/last.nmt --alignment hard < $T > a.aln 2> /dev/null
"$NMT" translate --model mirror/last.nmt --alignment hard < $T > b.aln 2> /dev/null
out=$(python3 - a.aln b.aln <<'PY' 2>&1
import sys
for k, (x, y) in enumerate(zip(open(sys.argv[1]), open(sys.argv[2]))):
    (tx, _, px), (ty, _, py) = x.rstrip("\n").rpartition(" ||| "), y.rstrip("\n").rpartition(" ||| ")
    n = len(ty.split())
    want = sorted((int(s), n - 1 - int(t)) for s, t in (p.split("-") for p in py.split()))
    got = sorted(tuple(map(int, p.split("-"))) for p in px.split())
    assert got == want and got, f"line {k}: pairs {px} vs the mirror's {py} mapped back"
PY
)
check '[ $? -eq 0 ]' "alignments are not the mirror's: $out"

# 3. n-best scores (no length or coverage penalty) are nmt score's
"$NMT" translate --model r2l/last.nmt --nbest 3 --length-penalty 0 --coverage-penalty 0 < $T > p0.nbest 2> /dev/null
awk -F ' [|][|][|] ' '{ print $2 }' p0.nbest > p0.hyp
awk '{ for (k = 0; k < 3; k++) print }' $T > p0.src
"$NMT" score --model r2l/last.nmt --src p0.src --tgt p0.hyp > p0.score 2> /dev/null
check 'paste <(awk -F " [|][|][|] " "{ print \$3 }" p0.nbest) p0.score | awk "{ d = \$1 - \$2; if (d < -1e-4 || d > 1e-4) exit 1 }"' \
  "n-best scores vs nmt score: $(paste <(awk -F ' [|][|][|] ' '{ print $3 }' p0.nbest) p0.score | head -3)"

# 4. one direction per ensemble; nmt info
expect 2 "model.right_to_left is false, the first --model's true" "$NMT" translate --model r2l/last.nmt --model plain/last.nmt
expect 2 "model.right_to_left is false, the first --model's true" "$NMT" score --model r2l/last.nmt --model plain/last.nmt --src $T --tgt data/test.tgt
check '"$NMT" info r2l/last.nmt | grep -q "^target order: *right to left"' "info: $("$NMT" info r2l/last.nmt | head -12)"
check '! "$NMT" info plain/last.nmt | grep -q "^target order"' "info of a left-to-right model names a target order"
check 'python3 -c "import json,sys; sys.exit(json.load(sys.stdin)[\"model\"][\"right_to_left\"] is not True)" < <("$NMT" info --json r2l/last.nmt)' \
  "info --json lacks model.right_to_left true"

# 5. scripts/rerank.sh: the n-best list of a left-to-right model, reranked
train l2r "${LONG[@]}" --set model.right_to_left=false
check '[ $rc -eq 0 ]' "the left-to-right run: $out"
RR="$ROOT/scripts/rerank.sh"
"$NMT" translate --model l2r/last.nmt --beam 4 --nbest 4 < $T > l2r.nbest 2> /dev/null
awk -F ' [|][|][|] ' '{ print $2 }' l2r.nbest > all.hyp
awk '{ for (k = 0; k < 4; k++) print }' $T > all.src
"$NMT" score --model l2r/last.nmt --src all.src --tgt all.hyp --normalize > f0 2> /dev/null
"$NMT" score --model r2l/last.nmt --src all.src --tgt all.hyp --normalize > f1 2> /dev/null
for wl in 0:0 1:0 3:0 1:5 1:-5; do
  w=${wl%:*} lw=${wl#*:}
  name=rr$w.txt
  [ "$lw" = 0 ] || name=rr$w,$lw.txt
  NMT_BIN="$NMT" "$RR" --src $T --nbest l2r.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt --weight $w --length-weight $lw \
    --threads 1 > "$name" 2> err.txt
  rc=$?
  out=$(python3 - l2r.nbest f0 f1 "$name" $w $lw <<'PY' 2>&1
import sys
nb = [l.rstrip("\n").split(" ||| ") for l in open(sys.argv[1])]
f0 = [float(x) for x in open(sys.argv[2])]
f1 = [float(x) for x in open(sys.argv[3])]
got = open(sys.argv[4]).read().split("\n")[:-1]
w, lw = float(sys.argv[5]), float(sys.argv[6])
best = {}
for (i, text, _), a, b in zip(nb, f0, f1):
    t = a + w * b + lw * len(text.split())
    if int(i) not in best or t > best[int(i)][0]:
        best[int(i)] = (t, text)
want = [best[i][1] for i in range(len(best))]
assert got == want, f"weight {w}, length weight {lw}: {[(k, g, x) for k, (g, x) in enumerate(zip(got, want)) if g != x][:3]}"
PY
)
  check '[ $rc -eq 0 ] && [ -z "$out" ]' "rerank.sh --weight $w --length-weight $lw: exit $rc $(cat err.txt) $out"
done
check '! cmp -s rr0.txt rr3.txt' "the right-to-left model changed no choice (weights 0 and 3 pick alike)"
# the length weight moves choices: fewer words below 0, no fewer above (the
# n-best lists of this tiny model hold few longer hypotheses)
words() { awk '{ n += NF } END { print n + 0 }' "$1"; }
check '[ $(words "rr1,5.txt") -ge $(words rr1.txt) ] && [ $(words "rr1,-5.txt") -lt $(words rr1.txt) ]' \
  "length weights 5 / 0 / -5: $(words "rr1,5.txt") / $(words rr1.txt) / $(words "rr1,-5.txt") words"
NMT_BIN="$NMT" "$RR" --src $T --nbest l2r.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt --scores > rrs.txt 2> /dev/null
check 'cmp -s <(cut -f1 rrs.txt) rr1.txt && awk -F "\t" "NF != 5 || \$5 != split(\$1, x, \" \") { exit 1 }" rrs.txt' "--scores: $(head -2 rrs.txt)"
expect 2 "--length-weight must be a number, got 'x'" env NMT_BIN="$NMT" "$RR" --src $T --nbest l2r.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt --length-weight x
expect 2 "--weight must be a number >= 0, got 'x'" env NMT_BIN="$NMT" "$RR" --src $T --nbest l2r.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt --weight x
expect 2 "give --l2r MODEL and --r2l MODEL" env NMT_BIN="$NMT" "$RR" --src $T --nbest l2r.nbest --l2r l2r/last.nmt
# a source line of invalid UTF-8 (nmt translate writes it an empty translation): reranked too
{ head -n 3 $T; printf 'a\xffb\n'; sed -n 4p $T; } > bad.src
"$NMT" translate --model l2r/last.nmt --beam 4 --nbest 4 < bad.src > bad.nbest 2> /dev/null
NMT_BIN="$NMT" "$RR" --src bad.src --nbest bad.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt > bad.out 2> err.txt
check '[ $? -eq 0 ] && [ $(wc -l < bad.out) -eq 5 ] && [ -z "$(sed -n 4p bad.out)" ] && [ -n "$(sed -n 5p bad.out)" ]' \
  "rerank with an invalid UTF-8 source line: $(cat err.txt) $(cat bad.out)"
head -n 8 l2r.nbest > short.nbest
expect 1 "the n-best list has no hypothesis for source line 3" env NMT_BIN="$NMT" "$RR" --src $T --nbest short.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt
echo "99 ||| x ||| -1" >> short.nbest
expect 1 "line number 99, but --src has 20 lines" env NMT_BIN="$NMT" "$RR" --src $T --nbest short.nbest --l2r l2r/last.nmt --r2l r2l/last.nmt

test_end
