#!/usr/bin/env bash
# test_alignment_cli.sh: `nmt translate --alignment` on tiny models trained
# here (SentencePiece with 2 attention heads; words with a small vocabulary):
# one 'translation ||| pairs' line per input line (empty and invalid lines
# too), the translations those of a run without it; token pairs against the
# argmax / threshold of the same decode's --attention-out; word pairs
# against an independent mapping of those token pairs
# (tests/alignment_check.py); --alignment soft's rows against the same
# attention, summed into words in Python, and hard as their argmax; --nbest's 'i ||| text ||| pairs ||| score';
# an ensemble reads the first model's attention; --replace-unk with a
# two-word --unk-dict entry aligns both words to the source word looked up;
# `nmt score --alignment` on the greedy translations, and on the n-best
# entries below the first, gives translate's pairs;
# usage errors (exit 2) name the option.
# Prints "test_alignment_cli: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_alignment_cli
cd "$tmp" || exit 2
CHECK_PY="$ROOT/tests/alignment_check.py"

# short sentences, so that a few seconds of training give words
"$NMT" demo-corpus --out data --train 3000 --valid 40 --test 40 --seed 7 --max-words 8 > /dev/null 2>&1 || bad "demo-corpus"
cat > spm.json <<JSON
{
  "data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
           "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
           "tokenizer": "spm", "spm_vocab_size": 200, "max_len": 40, "cache_dir": "cache"},
  "model": {"emb_dim": 32, "hidden": 48, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0,
            "attention": {"heads": 2}},
  "train": {"optimizer": "adam", "lr": 0.005, "batch_sentences": 32, "max_steps": 600,
            "valid_every": 600, "seed": 3, "threads": 1, "save_dir": "run"},
  "decode": {"beam": 2, "batch": 8, "max_len_a": 1.2}
}
JSON
out=$("$NMT" train --config spm.json --quiet 2>&1) || bad "train: $out"
M=run/best.nmt
# the test lines, an empty line, invalid UTF-8, and spaces and a tab within a line
{ head -n 12 data/test.src; echo; printf 'a\xffb\n'; sed -n 13p data/test.src | sed 's/ /  /; s/ \([a-z]*\)$/\t\1/'; } > in.txt
N=$(wc -l < in.txt)

"$NMT" translate --model "$M" < in.txt > plain.hyp 2> err.txt || bad "plain translate: $(cat err.txt)"
"$NMT" translate --model "$M" --alignment hard < in.txt > words.out 2> err.txt
rc=$?
check '[ $rc -eq 0 ] && [ $(wc -l < words.out) -eq $N ]' "--alignment hard: exit $rc, $(wc -l < words.out) lines for $N: $(cat err.txt)"
check '[ $(grep -c " ||| " words.out) -eq $N ]' "every line needs ' ||| ': $(grep -v ' ||| ' words.out | head -2)"
sed 's/ ||| [-0-9 ]*$//' words.out > words.hyp
check 'cmp -s plain.hyp words.hyp' "--alignment changed the translations: $(diff plain.hyp words.hyp | head -4)"
check '[ "$(sed -n 13p words.out)" = " ||| " ] && [ "$(sed -n 14p words.out)" = " ||| " ]' \
  "an empty and an invalid line give ' ||| ': [$(sed -n 13p words.out)] [$(sed -n 14p words.out)]"
check 'grep -Eq " \|\|\| [0-9]+-[0-9]+( [0-9]+-[0-9]+)*$" words.out' "no pairs in the output: $(head -2 words.out)"

# token pairs are the argmax / threshold of the attention rows of the same decode
"$NMT" translate --model "$M" --alignment hard --alignment-units tokens --attention-out attn.jsonl < in.txt > tokens.out 2> err.txt \
  || bad "tokens: $(cat err.txt)"
out=$(python3 "$CHECK_PY" tokens in.txt attn.jsonl tokens.out 0 2>&1)
check '[ $? -eq 0 ]' "hard token pairs vs --attention-out: $(printf '%s' "$out" | head -5)"
out=$(python3 "$CHECK_PY" words in.txt attn.jsonl tokens.out words.out 2>&1)
check '[ $? -eq 0 ]' "word pairs vs the token pairs mapped to words: $(printf '%s' "$out" | head -5)"
"$NMT" translate --model "$M" --alignment 0.2 --alignment-units tokens < in.txt > thr.out 2> err.txt || bad "threshold: $(cat err.txt)"
out=$(python3 "$CHECK_PY" tokens in.txt attn.jsonl thr.out 0.2 2>&1)
check '[ $? -eq 0 ]' "threshold 0.2 token pairs vs --attention-out: $(printf '%s' "$out" | head -5)"
"$NMT" translate --model "$M" --alignment 0.2 < in.txt > thr_words.out 2> err.txt || bad "threshold words: $(cat err.txt)"
out=$(python3 "$CHECK_PY" words in.txt attn.jsonl thr.out thr_words.out 2>&1)
check '[ $? -eq 0 ]' "threshold word pairs vs its token pairs: $(printf '%s' "$out" | head -5)"
# the checker can fail: pairs shifted by one output token are caught
sed 's/\([0-9]*\)-\([0-9]*\)/\1-\2x/g' tokens.out | awk '{ gsub(/-[0-9]+x/, "-0"); print }' > shifted.out
check '! python3 "$CHECK_PY" tokens in.txt attn.jsonl shifted.out 0 > /dev/null 2>&1' "the checker passed pairs all on output token 0"
# a threshold of 1: nothing unless a weight is exactly 1
"$NMT" translate --model "$M" --alignment 1 < in.txt > one.out 2> /dev/null
check '[ $(sed "s/.* ||| //" one.out | tr -d " \n" | wc -c) -le $(grep -c . in.txt) ]' "threshold 1 aligned too much"

# --alignment soft: the attention rows themselves (tokens), and summed into
# source words and averaged over the pieces of an output word (words)
"$NMT" translate --model "$M" --alignment soft --alignment-units tokens < in.txt > soft_tok.out 2> err.txt || bad "soft tokens: $(cat err.txt)"
"$NMT" translate --model "$M" --alignment soft < in.txt > soft_words.out 2> err.txt || bad "soft words: $(cat err.txt)"
check 'cmp -s plain.hyp <(sed "s/ ||| [0-9., ]*$//" soft_words.out)' "--alignment soft changed the translations: $(head -2 soft_words.out)"
check '[ "$(sed -n 13p soft_words.out)" = " ||| " ] && grep -Eq " \|\|\| [01]\.[0-9]{4}(,[01]\.[0-9]{4})*( [01]\.[0-9]{4}(,[01]\.[0-9]{4})*)*$" soft_words.out' \
  "soft lines: $(head -2 soft_words.out) [$(sed -n 13p soft_words.out)]"
out=$(python3 "$CHECK_PY" soft in.txt attn.jsonl soft_tok.out soft_words.out 2>&1)
check '[ $? -eq 0 ]' "soft weights vs --attention-out: $(printf '%s' "$out" | head -5)"
# the checker can fail: word rows of a shifted alignment are caught
sed 's/ ||| \([0-9.]*\),\([0-9.]*\)/ ||| \2,\1/' soft_words.out > soft_swapped.out
check '! python3 "$CHECK_PY" soft in.txt attn.jsonl soft_tok.out soft_swapped.out > /dev/null 2>&1' "the checker passed swapped soft weights"
# hard is the argmax of the soft token rows
out=$(python3 - soft_tok.out tokens.out <<'PY' 2>&1
import sys
for k, (s, h) in enumerate(zip(open(sys.argv[1]), open(sys.argv[2]))):
    rows = [[float(w) for w in g.split(",")] for g in s.rstrip("\n").rpartition(" ||| ")[2].split()]
    pairs = [tuple(map(int, p.split("-"))) for p in h.rstrip("\n").rpartition(" ||| ")[2].split()]
    for src, t in pairs:
        assert rows[t][src] >= max(rows[t]) - 1e-4, f"line {k}: hard pair {src}-{t} is not the row's largest: {rows[t]}"
    assert len({t for _, t in pairs}) == len(rows), f"line {k}: {len(rows)} soft rows, hard pairs {pairs}"
PY
)
check '[ $? -eq 0 ]' "hard pairs vs the soft rows: $out"

# --nbest: 'i ||| translation ||| pairs ||| score', the n-best list of a run without it
"$NMT" translate --model "$M" --beam 3 --nbest 3 < in.txt > nbest.plain 2> /dev/null
"$NMT" translate --model "$M" --beam 3 --nbest 3 --alignment hard < in.txt > nbest.aln 2> err.txt || bad "nbest: $(cat err.txt)"
check '[ $(wc -l < nbest.aln) -eq $((3 * N)) ]' "--nbest 3: $(wc -l < nbest.aln) lines for $N inputs"
check 'awk -F " \\|\\|\\| " "NF != 4 { exit 1 }" nbest.aln' "n-best lines need 4 fields: $(head -2 nbest.aln)"
check 'cmp -s nbest.plain <(awk -F " \\|\\|\\| " "{ print \$1 \" ||| \" \$2 \" ||| \" \$4 }" nbest.aln)' \
  "--alignment changed the n-best list: $(diff nbest.plain <(awk -F ' \\|\\|\\| ' '{ print $1 " ||| " $2 " ||| " $4 }' nbest.aln) | head -4)"
"$NMT" translate --model "$M" --beam 3 --alignment hard < in.txt > beam3.out 2> /dev/null
check 'cmp -s beam3.out <(awk -F " \\|\\|\\| " "NR % 3 == 1 { print \$2 \" ||| \" \$3 }" nbest.aln)' \
  "the first n-best line's pairs must be the 1-best's: $(diff beam3.out <(awk -F ' \\|\\|\\| ' 'NR % 3 == 1 { print $2 " ||| " $3 }' nbest.aln) | head -4)"

# an ensemble reads its first model's attention: the model twice gives the same lines
"$NMT" translate --model "$M" --model "$M" --alignment hard < in.txt > ens.out 2> /dev/null
check 'cmp -s words.out ens.out' "an ensemble of the model with itself: $(diff words.out ens.out | head -4)"
# --stream gives the same lines
"$NMT" translate --model "$M" --alignment hard --stream < in.txt > stream.out 2> /dev/null
check 'cmp -s words.out stream.out' "--stream: $(diff words.out stream.out | head -4)"

# nmt score --alignment: teacher-forced on the greedy translations, the attention of the
# same steps, so the same pairs wherever the translation re-encodes to the tokens decoded
head -n 12 in.txt > valid.txt
"$NMT" translate --model "$M" --beam 1 --alignment hard --alignment-units tokens --attention-out g.jsonl < valid.txt > g_tok.out 2> /dev/null
"$NMT" translate --model "$M" --beam 1 --alignment hard < valid.txt > g_words.out 2> /dev/null
sed 's/ ||| [-0-9 ]*$//' g_words.out > g.hyp
"$NMT" score --model "$M" --src valid.txt --tgt g.hyp --tokens --alignment hard --alignment-units tokens > s_tok.out 2> err.txt \
  || bad "score --alignment: $(cat err.txt)"
"$NMT" score --model "$M" --src valid.txt --tgt g.hyp --alignment hard > s_words.out 2> err.txt || bad "score --alignment words: $(cat err.txt)"
check '[ $(wc -l < s_tok.out) -eq 12 ] && awk -F "\t" "NF != 4 { exit 1 }" s_tok.out' "score --tokens --alignment: 4 tab fields a line: $(head -2 s_tok.out)"
out=$(python3 - g.jsonl g_tok.out g_words.out s_tok.out s_words.out <<'PY' 2>&1
import json, sys
att = [json.loads(l) for l in open(sys.argv[1])]
g_tok = [l.rstrip("\n").rpartition(" ||| ")[2] for l in open(sys.argv[2])]
g_words = [l.rstrip("\n").rpartition(" ||| ")[2] for l in open(sys.argv[3])]
s_tok = [l.rstrip("\n").split("\t") for l in open(sys.argv[4])]
s_words = [l.rstrip("\n").split("\t")[1] for l in open(sys.argv[5])]
same = 0
for k, rec in enumerate(att):
    if s_tok[k][1].split() != rec["target"] + ["</s>"]:
        continue  # the text re-encodes to other tokens than those decoded
    same += 1
    assert s_tok[k][3] == g_tok[k], f"line {k}: score's token pairs {s_tok[k][3]} vs translate's {g_tok[k]}"
    assert s_words[k] == g_words[k], f"line {k}: score's word pairs {s_words[k]} vs translate's {g_words[k]}"
assert same >= 6, f"only {same} of {len(att)} lines re-encode to the tokens decoded"
print(same)
PY
)
check '[ $? -eq 0 ]' "score --alignment vs translate --alignment: $out"
# score --alignment soft: translate's weights on the same steps
"$NMT" translate --model "$M" --beam 1 --alignment soft < valid.txt > g_soft.out 2> /dev/null
"$NMT" score --model "$M" --src valid.txt --tgt g.hyp --alignment soft > s_soft.out 2> err.txt || bad "score soft: $(cat err.txt)"
same=$(paste -d '\t' <(sed 's/.* ||| //' g_soft.out) <(cut -f2 s_soft.out) | awk -F '\t' '$1 == $2 && $1 != ""' | wc -l)
check '[ "$same" -ge 6 ]' "score --alignment soft gives translate's weights on only $same of 12 lines: $(head -1 s_soft.out)"
# the n-best entries below the first carry their own hypothesis's pairs:
# score's on the same texts (the same steps, teacher-forced) agree but for
# texts that re-encode to other tokens than those decoded
python3 - in.txt nbest.aln <<'PY'
import sys
# the entries 2 and 3 of every valid, non-empty input line: lower.src, lower.hyp, lower.nbest
src = open(sys.argv[1], "rb").read().split(b"\n")
nb = open(sys.argv[2], "rb").read().split(b"\n")
with open("lower.src", "wb") as s, open("lower.hyp", "wb") as h, open("lower.nbest", "wb") as n:
    for k, line in enumerate(src[:len(nb) // 3]):
        try:
            ok = line.decode("utf-8").strip() != ""
        except UnicodeDecodeError:
            ok = False
        for e in nb[3 * k + 1:3 * k + 3] if ok else []:
            s.write(line + b"\n"), h.write(e.split(b" ||| ")[1] + b"\n"), n.write(e + b"\n")
PY
"$NMT" score --model "$M" --src lower.src --tgt lower.hyp --alignment hard > lower.score 2> err.txt || bad "score lower: $(cat err.txt)"
out=$(python3 - lower.nbest lower.score <<'PY' 2>&1
import sys
nb = [l.rstrip("\n").split(" ||| ") for l in open(sys.argv[1])]
sc = [l.rstrip("\n").split("\t")[1] for l in open(sys.argv[2])]
assert len(nb) == len(sc) >= 20, f"{len(nb)} entries, {len(sc)} scores"
same = sum(a[2] == b for a, b in zip(nb, sc))
assert same >= 0.8 * len(sc), f"{same} of {len(sc)} lower n-best entries have score's pairs"
print(f"{same} of {len(sc)}")
PY
)
check '[ $? -eq 0 ]' "lower n-best entries vs score --alignment: $out"
expect 2 "--alignment must be hard, soft or a threshold in (0, 1], got 'x'" "$NMT" score --model "$M" --src valid.txt --tgt g.hyp --alignment x
expect 2 "--alignment-units sets what --alignment counts" "$NMT" score --model "$M" --src valid.txt --tgt g.hyp --alignment-units words

# usage errors
expect 2 "--alignment must be hard, soft or a threshold in (0, 1], got 'Soft'" "$NMT" translate --model "$M" --alignment Soft
expect 2 "--alignment must be hard, soft or a threshold in (0, 1], got '0'" "$NMT" translate --model "$M" --alignment 0
expect 2 "--alignment must be hard, soft or a threshold in (0, 1], got '1.5'" "$NMT" translate --model "$M" --alignment=1.5
expect 2 "--alignment needs a value" "$NMT" translate --model "$M" --alignment
expect 2 "--alignment-units must be" "$NMT" translate --model "$M" --alignment hard --alignment-units pieces
expect 2 "--alignment-units sets what --alignment counts" "$NMT" translate --model "$M" --alignment-units tokens
expect 2 "it does not go with --alignment" "$NMT" translate --model "$M" --sample 3 --alignment hard
expect 2 "--alignment does not apply to eval" "$NMT" eval --bleu --model "$M" --src in.txt --ref in.txt --alignment hard
check '"$NMT" translate --help 2>&1 | grep -q -- "--alignment-units"' "translate --help lacks --alignment-units"

# a model without attention: refused, naming the model
demo_config none.json '{"emb_dim": 8, "hidden": 8, "enc_layers": 1, "dec_layers": 1, "attention": {"style": "none"}}' \
  '{"max_steps": 2, "valid_every": 2, "threads": 1, "save_dir": "runnone"}' '{"beam": 1}'
"$NMT" train --config none.json --quiet > /dev/null 2>&1 || bad "train the model without attention"
expect 2 "runnone/best.nmt has no attention" "$NMT" translate --model runnone/best.nmt --alignment hard
expect 2 "runnone/best.nmt has no attention" "$NMT" score --model runnone/best.nmt --src valid.txt --tgt g.hyp --alignment hard

# words: --replace-unk with a two-word dictionary entry: both words aligned to the source word looked up
demo_config words.json '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0}' \
  '{"optimizer": "adam", "lr": 0.005, "batch_sentences": 32, "max_steps": 600, "valid_every": 600, "seed": 5, "threads": 1, "save_dir": "runw"}' \
  '{"beam": 1, "batch": 8}'
# 80 words of about 430 on the target side: many output words are unknown
"$NMT" train --config words.json --set data.word_vocab_size=80 --quiet > /dev/null 2>&1 || bad "train the word model"
tr ' ' '\n' < data/test.src | sort -u | awk 'NF { print $1 "\tKI-" $1 " TR" }' > dict.tsv
head -n 20 data/test.src > win.txt
"$NMT" translate --model runw/best.nmt --replace-unk --unk-dict dict.tsv --alignment hard < win.txt > unk.out 2> err.txt \
  || bad "replace-unk: $(cat err.txt)"
out=$(python3 - win.txt unk.out <<'PY' 2>&1
import sys
src = open(sys.argv[1]).read().split("\n")
seen, looked_up, after = 0, set(), 0
for n, line in enumerate(open(sys.argv[2]).read().split("\n")[:-1]):
    text, _, pairs = line.rpartition(" ||| ")
    words = text.split()
    by_t = {}
    for p in pairs.split():
        s, t = map(int, p.split("-"))
        by_t.setdefault(t, set()).add(s)
    assert sorted(by_t) == list(range(len(words))), f"line {n}: hard alignment must give every output word a pair: {line}"
    for j, w in enumerate(words):
        if w.startswith("KI-"):
            seen += 1
            assert words[j + 1] == "TR" and by_t[j] == by_t[j + 1] and len(by_t[j]) == 1, f"line {n}: {line}"
            s = next(iter(by_t[j]))
            looked_up.add(s)
            after += any(not v.startswith("KI-") and v != "TR" for v in words[j + 2:])
            assert src[n].split()[s] == w[3:], f"line {n}: {w} aligned to source word {s} ({src[n].split()[s]})"
assert seen > 0, "no unknown word was replaced"
assert len(looked_up) > 1, f"every replacement came from one source position: {looked_up}"
assert after > 0, "no known word followed a replaced one"
print(seen)
PY
)
check '[ $? -eq 0 ]' "--replace-unk with --alignment: $out"

test_end
