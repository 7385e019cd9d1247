#!/usr/bin/env bash
# test_train_e2e.sh: nmt end to end on a small generated corpus: train (loss
# falls), checkpoints and train.csv appear, resume is bit-exact against an
# uninterrupted run, translate writes one line per input line whatever the
# line holds, a corrupt checkpoint is refused, a changed model key is
# refused on resume, SIGTERM saves a checkpoint that resumes (and translate
# --config without best.nmt names it), the epoch shown at an epoch's end is
# that epoch's and the done line counts the completed epochs, a fresh run
# over an earlier one is refused and --overwrite replaces it,
# keep_checkpoints keeps the last K step checkpoints without a validation
# set and across --resume, a diverged run's perplexity is printed short
# (validation's capped too), a model gone NaN is never saved,
# decay_start_epoch 1 decays the first epoch,
# nmt plot draws the run.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_train_e2e

"$NMT" demo-corpus --out "$tmp/data" --train 3000 --valid 60 --test 40 --seed 3 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1,
              "attention": {"style": "luong", "score": "general", "mode": "global"}}' \
  '{"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "epochs": 50,
              "max_steps": 60, "valid_every": 20, "log_every": 10, "seed": 5, "threads": 1,
              "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'

# 1. training runs, loss falls, files appear
out=$("$NMT" train --config "$tmp/tiny.json" --quiet 2>&1); rc=$?
check '[ $rc -eq 0 ]' "train exit $rc: $out"
for f in last.nmt best.nmt train.csv config.json; do check "[ -s '$tmp/run/$f' ]" "missing run/$f"; done
first=$(grep '^train,' "$tmp/run/train.csv" | head -1 | cut -d, -f4)
last=$(grep '^train,' "$tmp/run/train.csv" | tail -1 | cut -d, -f4)
check "awk 'BEGIN{exit !($last < $first - 0.3)}'" "loss did not fall: $first -> $last"
check "[ \$(grep -c '^valid,' '$tmp/run/train.csv') -eq 3 ]" "expected 3 validation rows"

# 1b. plateau decay (Adam): every validation that does not beat the best BLEU
# multiplies the rate by train.lr_decay; with lr_decay 1 it stays. A rate of
# 1e-30 keeps the model (and its BLEU) where it started, so validations after
# the first do not improve.
plateau_rates() { # CSV LR0 DECAY: "ok N" (N decays seen) or the first mismatch
  awk -F, -v lr0="$2" -v decay="$3" '
    $1 == "valid" { if (seen && $11 <= best) { scale *= decay; n++ } else best = $11; seen = 1 }
    $1 == "train" { want = lr0 * scale; if ($6 < want * 0.999 || $6 > want * 1.001) { print "step " $2 ": lr " $6 ", want " want; bad = 1; exit } }
    BEGIN { scale = 1; n = 0 }
    END { if (!bad) print "ok " n }' "$1"
}
for decay in 0.5 1; do
  out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/decay$decay" --set train.lr=1e-30 \
      --set train.lr_decay=$decay --set train.patience=0 2>&1)
  check '[ $? -eq 0 ]' "plateau run (lr_decay $decay): $out"
  res=$(plateau_rates "$tmp/decay$decay/train.csv" 1e-30 $decay)
  check '[ "${res%% *}" = ok ] && [ "${res#ok }" -ge 2 ]' "lr_decay $decay: rates do not follow the plateaus: $res"
done
last_lr=$(grep '^train,' "$tmp/decay0.5/train.csv" | tail -1 | cut -d, -f6)
check "awk 'BEGIN{exit !($last_lr < 0.6e-30)}'" "lr_decay 0.5: the last logged rate should be halved (plateau at step 40), got $last_lr"

# 2. resume is exact: 30 steps, then resume to 60, equals the 60-step run
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run2" --set train.max_steps=30 2>&1)
check '[ $? -eq 0 ]' "first half: $out"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run2" --resume 2>&1)
check '[ $? -eq 0 ]' "resumed half: $out"
grep '^train,' "$tmp/run/train.csv" | cut -d, -f2,4,5 > "$tmp/a.txt"
grep '^train,' "$tmp/run2/train.csv" | cut -d, -f2,4,5 > "$tmp/b.txt"
check "cmp -s '$tmp/a.txt' '$tmp/b.txt'" "resumed losses differ from the uninterrupted run: $(diff "$tmp/a.txt" "$tmp/b.txt" | head -4)"
check "[ \$(wc -l < '$tmp/b.txt') -eq 6 ]" "resumed train.csv should hold 6 train rows (appended)"

# 3. translate: one line out per line in, whatever the line holds
{ head -n 5 "$tmp/data/test.src"; echo; printf 'bad \xff byte\n'; printf 'zzz %.0s' $(seq 1 300); echo; echo "   "; tail -n 3 "$tmp/data/test.src"; } > "$tmp/mixed.src"
"$NMT" translate --model "$tmp/run/best.nmt" < "$tmp/mixed.src" > "$tmp/mixed.hyp" 2> "$tmp/mixed.err"
rc=$?
check '[ $rc -eq 0 ]' "translate failed: $(cat "$tmp/mixed.err")"
check "[ \$(wc -l < '$tmp/mixed.src') -eq \$(wc -l < '$tmp/mixed.hyp') ]" "line counts differ"
check "[ -z \"\$(sed -n 6p '$tmp/mixed.hyp')\" ]" "empty line must give an empty line"
check "[ -z \"\$(sed -n 7p '$tmp/mixed.hyp')\" ]" "invalid UTF-8 must give an empty line"
check "grep -q ':7: invalid UTF-8' '$tmp/mixed.err'" "no warning naming line 7"
check "grep -q ':8: .*truncated' '$tmp/mixed.err'" "no truncation warning for line 8"
check "[ -n \"\$(sed -n 1p '$tmp/mixed.hyp')\" ]" "a normal line gave an empty translation"
"$NMT" translate --config "$tmp/tiny.json" < "$tmp/data/test.src" > "$tmp/test.hyp" 2>/dev/null
check '[ $? -eq 0 ] && [ $(wc -l < "$tmp/test.hyp") -eq 40 ]' "translate --config"
out=$("$NMT" eval --bleu --ref "$tmp/data/test.tgt" --hyp "$tmp/test.hyp" 2>&1)
check 'printf "%s" "$out" | grep -q "^BLEU|nrefs:1"' "eval: $out"
out=$(cd "$tmp" && env -u NMT_MODEL "$NMT" translate < /dev/null 2>&1); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "no model"' "translate without a model: $rc $out"

# 3b. beam search with n-best lists in Moses format
"$NMT" translate --model "$tmp/run/best.nmt" --beam 4 --nbest 2 < "$tmp/data/test.src" > "$tmp/nbest.txt" 2>/dev/null
rc=$?
check '[ $rc -eq 0 ] && [ $(wc -l < "$tmp/nbest.txt") -eq 80 ]' "n-best: expected 80 lines, got $(wc -l < "$tmp/nbest.txt")"
check "grep -c -E '^[0-9]+ \|\|\| .* \|\|\| -?[0-9]+\.[0-9]+\$' '$tmp/nbest.txt' | grep -qx 80" "n-best lines not in Moses format"
check "[ \"\$(cut -d' ' -f1 '$tmp/nbest.txt' | uniq -c | awk '{print \$1}' | sort -u)\" = 2 ]" "each input line needs 2 hypotheses"
check "[ \"\$(cut -d' ' -f1 '$tmp/nbest.txt' | uniq | tail -1)\" = 39 ]" "n-best numbering must count input lines from 0"
"$NMT" translate --model "$tmp/run/best.nmt" --beam 3 < "$tmp/mixed.src" > "$tmp/mixed3.hyp" 2>/dev/null
check "[ \$(wc -l < '$tmp/mixed.src') -eq \$(wc -l < '$tmp/mixed3.hyp') ]" "beam: line counts differ"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run4" --set train.max_steps=20 --set decode.beam=3 2>&1)
check '[ $? -eq 0 ] && grep -q "^valid,20," "$tmp/run4/train.csv"' "validation with beam 3: $out"

# 3c. attention out: JSON lines (one per input line), SVG heatmaps, UNK replacement
"$NMT" translate --model "$tmp/run/best.nmt" --beam 2 --attention-out "$tmp/att.jsonl" --attention-svg "$tmp/svg" \
    < "$tmp/mixed.src" > "$tmp/att.hyp" 2>/dev/null
check '[ $? -eq 0 ] && [ $(wc -l < "$tmp/att.jsonl") -eq $(wc -l < "$tmp/mixed.src") ]' "attention JSON lines"
check "python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' '$tmp/att.jsonl'" "attention JSON does not parse"
check "python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); a=r[\"attention\"]; assert len(a)==len(r[\"target\"]) and all(len(x)==len(r[\"source\"]) and abs(sum(x)-1)<1e-3 for x in a)' '$tmp/att.jsonl'" "attention rows must match tokens and sum to 1"
check "[ -s '$tmp/svg/line-000001.svg' ] && python3 -c 'import sys,xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' '$tmp/svg/line-000001.svg'" "attention SVG"
check "[ ! -e '$tmp/svg/line-000006.svg' ]" "no heatmap for an empty line"
# numbering (docs/decoding.md): JSON "line" counts from 0, heatmap files from 1
check "python3 -c 'import json,sys; n=[json.loads(l)[\"line\"] for l in open(sys.argv[1])]; assert n==list(range(len(n))), n' '$tmp/att.jsonl'" \
  "attention JSON line numbers must count input lines from 0"
check "[ -e '$tmp/svg/line-000005.svg' ] && [ ! -e '$tmp/svg/line-000000.svg' ]" "heatmap files must count input lines from 1"
# a model with a 20-word target vocabulary outputs <unk> often; replaced, it copies source words
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run5" --set train.max_steps=40 \
    --set data.word_vocab_size=20 --set data.cache_dir="$tmp/cache5" > /dev/null 2>&1
"$NMT" translate --model "$tmp/run5/best.nmt" < "$tmp/data/test.src" > "$tmp/unk0.hyp" 2>/dev/null
check "grep -q '<unk>' '$tmp/unk0.hyp'" "the small-vocabulary model should output <unk>"
printf 'ki\tKI-TRANSLATED\n' > "$tmp/dict.tsv"
"$NMT" translate --model "$tmp/run5/best.nmt" --replace-unk --unk-dict "$tmp/dict.tsv" < "$tmp/data/test.src" > "$tmp/unk.hyp" 2>/dev/null
check "[ \$(wc -l < '$tmp/unk.hyp') -eq 40 ] && ! grep -q '<unk>' '$tmp/unk.hyp'" "--replace-unk left <unk> in the output"
check "python3 -c 'import sys; src=open(sys.argv[1]).read().split(chr(10)); hyp=open(sys.argv[2]).read().split(chr(10)); n=sum(1 for s,h in zip(src,hyp) for w in h.split() if w in s.split() or w==\"KI-TRANSLATED\"); sys.exit(0 if n > 0 else 1)' '$tmp/data/test.src' '$tmp/unk.hyp'" "replaced words should come from the source line or the dictionary"

# each replaced <unk> is the source word with the highest attention at its step
"$NMT" translate --model "$tmp/run5/best.nmt" --beam 1 --attention-out "$tmp/unk_a.jsonl" \
    < "$tmp/data/test.src" > "$tmp/unk_a.hyp" 2>/dev/null
"$NMT" translate --model "$tmp/run5/best.nmt" --beam 1 --replace-unk \
    < "$tmp/data/test.src" > "$tmp/unk_b.hyp" 2>/dev/null
check "python3 - '$tmp/data/test.src' '$tmp/unk_a.hyp' '$tmp/unk_b.hyp' '$tmp/unk_a.jsonl' <<'PY'
import json, sys
src = open(sys.argv[1]).read().split('\n')
a = open(sys.argv[2]).read().split('\n')
b = open(sys.argv[3]).read().split('\n')
att = [json.loads(l) for l in open(sys.argv[4])]
n = 0
for i, r in enumerate(att):
    words, out = a[i].split(), b[i].split()
    assert len(words) == len(out), (i, words, out)
    for t, w in enumerate(words):
        if w != '<unk>':
            assert out[t] == w, (i, t, w, out[t])
            continue
        row = r['attention'][t]  # rounded to 4 decimals: any word at the top value
        top = [src[i].split()[k] for k in range(len(row)) if row[k] >= max(row) - 1e-4]
        assert out[t] in top, (i, t, out[t], top, row)
        n += 1
sys.exit(0 if n > 0 else 1)
PY" "--replace-unk must put the argmax-attention source word in place of each <unk>"

# the source word is found as the word tokenizer splits the line: words
# apart by a no-break space, U+3000 or a vertical tab give the same output
# as apart by spaces (the words were counted by spaces and tabs only)
for sep in '\xc2\xa0' '\xe3\x80\x80' '\v'; do
  sed "s/ /$(printf "$sep")/g" "$tmp/data/test.src" > "$tmp/unk_sep.src"
  "$NMT" translate --model "$tmp/run5/best.nmt" --beam 1 --replace-unk < "$tmp/unk_sep.src" > "$tmp/unk_sep.hyp" 2>/dev/null
  check "cmp -s '$tmp/unk_b.hyp' '$tmp/unk_sep.hyp'" "--replace-unk with words apart by $sep: $(diff "$tmp/unk_b.hyp" "$tmp/unk_sep.hyp" | head -3)"
done
# a word of 1200 bytes is copied whole, never cut inside a character
python3 -c "print('\u00e9' * 600)" > "$tmp/long_word.src"
"$NMT" translate --model "$tmp/run5/best.nmt" --beam 1 --replace-unk < "$tmp/long_word.src" > "$tmp/long_word.hyp" 2>/dev/null
check "python3 -c 'import sys; w=open(sys.argv[1], encoding=\"utf-8\").read().split(); assert \"\u00e9\" * 600 in w and all(x == \"\u00e9\" * 600 or \"\u00e9\" not in x for x in w), w' '$tmp/long_word.hyp'" \
  "a 1200-byte source word replacing <unk>: $(head -c 300 "$tmp/long_word.hyp")"
# --unk-dict: of a source listed more than once, the first line wins
tr -s ' ' '\n' < "$tmp/data/test.src" | sort -u | awk 'NF { print $0 "\tFIRST"; for (k = 1; k <= 6; k++) print $0 "\tDUP" k }' > "$tmp/dup_dict.tsv"
"$NMT" translate --model "$tmp/run5/best.nmt" --beam 1 --replace-unk --unk-dict "$tmp/dup_dict.tsv" < "$tmp/data/test.src" > "$tmp/unk_dup.hyp" 2>/dev/null
check "grep -q FIRST '$tmp/unk_dup.hyp' && ! grep -q DUP '$tmp/unk_dup.hyp'" "--unk-dict with repeated sources: $(grep -o 'DUP[0-9]' "$tmp/unk_dup.hyp" | sort | uniq -c | head -3)"
# a model without attention: --replace-unk leaves <unk> (it has no attention
# to pick a source word by; the first word of the line was put in)
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run5n" --set train.max_steps=40 \
    --set data.word_vocab_size=20 --set data.cache_dir="$tmp/cache5" --set model.attention.style=none \
    --set model.input_feed=false > /dev/null 2>&1
"$NMT" translate --model "$tmp/run5n/best.nmt" --beam 1 < "$tmp/data/test.src" > "$tmp/unk_n0.hyp" 2>/dev/null
"$NMT" translate --model "$tmp/run5n/best.nmt" --beam 1 --replace-unk < "$tmp/data/test.src" > "$tmp/unk_n1.hyp" 2>/dev/null
check "grep -q '<unk>' '$tmp/unk_n0.hyp' && cmp -s '$tmp/unk_n0.hyp' '$tmp/unk_n1.hyp'" "--replace-unk without attention changed the output: $(diff "$tmp/unk_n0.hyp" "$tmp/unk_n1.hyp" | head -3)"

# 3d. ensembles: a model with itself gives that model's output; other vocabularies are refused
"$NMT" translate --model "$tmp/run/best.nmt" --beam 3 < "$tmp/data/test.src" > "$tmp/single.hyp" 2>/dev/null
"$NMT" translate --model "$tmp/run/best.nmt" --model "$tmp/run/best.nmt" --beam 3 < "$tmp/data/test.src" > "$tmp/ens.hyp" 2>/dev/null
check "cmp -s '$tmp/single.hyp' '$tmp/ens.hyp'" "an ensemble of a model with itself differs from the model"
out=$("$NMT" translate --model "$tmp/run/best.nmt" --model "$tmp/run5/best.nmt" < /dev/null 2>&1); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "vocabularies differ"' "ensemble of different vocabularies: $rc $out"

# 4. a corrupt checkpoint is refused, a truncated one too
cp "$tmp/run/best.nmt" "$tmp/corrupt.nmt"
printf '\x55' | dd of="$tmp/corrupt.nmt" bs=1 seek=5000 conv=notrunc status=none
out=$("$NMT" translate --model "$tmp/corrupt.nmt" < /dev/null 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "corrupt.nmt"' "corrupt checkpoint accepted: $rc $out"
head -c 3000 "$tmp/run/best.nmt" > "$tmp/short.nmt"
out=$("$NMT" translate --model "$tmp/short.nmt" < /dev/null 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "short.nmt"' "truncated checkpoint accepted: $rc $out"

# 5. resume refuses a changed model key, naming it
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run2" --set model.hidden=48 --resume 2>&1); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "model.hidden"' "changed model key on resume: $rc $out"

# 6. SIGTERM saves a checkpoint that resumes
# start_training DIR LOG: a long training into DIR (its output in LOG) in the
# background, its pid in train_pid, once its first train.csv row is written
start_training() {
  "$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$1" --set train.max_steps=100000 \
      --set train.valid_every=100000 > "$2" 2>&1 &
  train_pid=$!
  local i
  for i in $(seq 1 100); do [ -s "$1/train.csv" ] && grep -q '^train,' "$1/train.csv" && break; sleep 0.1; done
}
# stop_training SIGNAL DIR LOG: start_training, then SIGNAL; rc is its exit status
stop_training() {
  start_training "$2" "$3"
  kill -"$1" $train_pid
  wait $train_pid; rc=$?
}
stop_training TERM "$tmp/run3" "$tmp/sig.log"
check '[ $rc -eq 143 ] && grep -q "stopped by signal 15" "$tmp/sig.log"' "SIGTERM: exit $rc (want 128 + 15), $(cat "$tmp/sig.log")"
# stopped before its first validation: no best.nmt; translate --config points at last.nmt
out=$("$NMT" translate --config "$tmp/tiny.json" --set train.save_dir="$tmp/run3" < /dev/null 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF -- "--model $tmp/run3/last.nmt"' "translate --config without best.nmt: no hint of last.nmt: $rc $out"
check '"$NMT" translate --model "$tmp/run3/last.nmt" < /dev/null > /dev/null 2>&1' "translate --model last.nmt after SIGTERM"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run3" --set train.max_steps=1 2>&1); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "continue it with --resume"' "rerun without --resume after SIGTERM: $rc $out"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run3" --set train.max_steps=1 --resume 2>&1); rc=$?
check '[ $rc -eq 0 ]' "resume after SIGTERM: $rc $out"
# a second nmt train into a folder where one runs now is refused (exit 2),
# fresh, --resume or --overwrite alike, and touches none of its files
start_training "$tmp/run3l" "$tmp/lock.log"
for how in "" --resume --overwrite; do
  out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run3l" --set train.max_steps=1 $how 2>&1); rc=$?
  check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "train.save_dir: $tmp/run3l is in use by another nmt train running now"' \
    "a second run ${how:-(fresh)} while one runs in its folder: $rc $out"
done
check '[ -s "$tmp/run3l/config.json" ] && grep -q "^train," "$tmp/run3l/train.csv"' "the running run's files after the refusals: $(ls "$tmp/run3l")"
kill -TERM $train_pid; wait $train_pid; rc=$?
check '[ $rc -eq 143 ] && [ -s "$tmp/run3l/last.nmt" ]' "the run that held the folder, stopped: exit $rc, $(cat "$tmp/lock.log")"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/run3l" --set train.max_steps=1 --resume 2>&1); rc=$?
check '[ $rc -eq 0 ]' "resume once the run holding the folder has ended: $rc $out"
# Ctrl-C (SIGINT) likewise, with its own exit code: 128 + 2
stop_training INT "$tmp/run3i" "$tmp/sigint.log"
check '[ $rc -eq 130 ] && grep -q "stopped by signal 2" "$tmp/sigint.log" && [ -s "$tmp/run3i/last.nmt" ]' \
  "SIGINT: exit $rc (want 128 + 2), $(cat "$tmp/sigint.log")"

# 8. the epoch shown is the epoch of the batch just trained: at the end of an
# epoch (log lines, train and valid rows of train.csv) it is still that epoch
out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/epochs" --set train.max_steps=0 \
    --set train.epochs=2 --set train.log_every=40 --set train.valid_every=100000 2>&1); rc=$?
check '[ $rc -eq 0 ]' "two-epoch run: $rc $out"
per_epoch=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) batches per epoch.*/\1/p')
check '[ -n "$per_epoch" ] && [ "$per_epoch" -gt 40 ]' "no 'N batches per epoch' in the log: $out"
logged=$(printf '%s\n' "$out" | tr '\r' '\n' | sed -n 's/^epoch \([0-9]*\) step \([0-9]*\) .*/\1 \2/p'; \
         awk -F, '$1 != "kind" { print $3, $2 }' "$tmp/epochs/train.csv")
wrong=$(printf '%s\n' "$logged" | awk -v n="${per_epoch:-1}" '{ want = int(($2 + n - 1) / n); if ($1 != want) print "epoch " $1 " at step " $2 " (want " want ")" }')
check '[ -z "$wrong" ] && [ $(printf "%s\n" "$logged" | wc -l) -ge 8 ]' "epoch off at an epoch's end: $wrong"
check "grep -q '^valid,$((2 * ${per_epoch:-0})),2,' '$tmp/epochs/train.csv'" "no valid row of epoch 2 at its last step: $(cat "$tmp/epochs/train.csv")"
check 'printf "%s" "$out" | grep -q "done at step $((2 * ${per_epoch:-0})) (2 epochs completed)"' "done line: $out"
# the done line counts the epochs trained to their last batch, also when the
# run stops on that batch before the epoch's end is noticed (an early stop at
# a validation on an epoch's last step), and not the epoch a stop cuts short
# (max_steps); batches of 500 pairs keep the epochs short
epoch_run() { # DIR SETTINGS...: a run with batches of 500 pairs; its output in out, exit status in rc
  local dir=$1
  shift
  out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/$dir" --set train.batch_sentences=500 \
      --set train.epochs=5 --set train.log_every=1000 "$@" 2>&1); rc=$?
}
epoch_run ep0 --set train.max_steps=2 --set train.valid_every=1000
short=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) batches per epoch.*/\1/p')
check '[ $rc -eq 0 ] && [ -n "$short" ] && [ "$short" -gt 3 ]' "run of 2 steps with batches of 500: $rc $out"
short=${short:-4}
check 'printf "%s" "$out" | grep -q "done at step 2 (0 epochs completed)"' "done line in epoch 1 (max_steps 2): $out"
# a rate of 1e-30 leaves BLEU where it was: the validation at the end of epoch 2 stops the run (patience 1)
epoch_run ep2 --set train.max_steps=0 --set train.valid_every="$short" --set train.patience=1 --set train.lr=1e-30
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "stopping early"' "early stop at the end of epoch 2: $rc $out"
check 'printf "%s" "$out" | grep -q "done at step $((2 * short)) (2 epochs completed)"' "done line at an early stop on epoch 2's last step: $out"
epoch_run ep1 --set train.max_steps=$((short + 2)) --set train.valid_every=1000
check 'printf "%s" "$out" | grep -q "done at step $((short + 2)) (1 epoch completed)"' "done line in the middle of epoch 2 (max_steps): $out"

# 8b. a run stopped on an epoch's last step resumes to the run never
# stopped: that epoch's validation is a scheduled one (at a rate of 1e-30
# BLEU never improves, so from epoch 2 each epoch's end halves the rate
# and counts towards patience); likewise a signal's save at an epoch's end
# (one batch per epoch: the signal comes during a step or its validation),
# whose validation the resumed run does at once; and a run whose patience
# was used up stops at its resume, saying so
plateau=(--set train.lr=1e-30 --set train.lr_decay=0.5 --set train.patience=0 --set train.valid_every=1000 --set train.log_every=1)
rates() { grep '^train,' "$tmp/$1/train.csv" | cut -d, -f2,6; grep '^valid,' "$tmp/$1/train.csv" | cut -d, -f2,3; }
epoch_run plateau "${plateau[@]}" --set train.max_steps=$((3 * short + 2))
epoch_run plateau-cut "${plateau[@]}" --set train.max_steps=$((2 * short))
epoch_run plateau-cut "${plateau[@]}" --set train.max_steps=$((3 * short + 2)) --resume
check '[ $rc -eq 0 ] && cmp -s <(rates plateau) <(rates plateau-cut)' \
  "stopped on epoch 2's last step and resumed: rates or validations differ: $(diff <(rates plateau) <(rates plateau-cut) | head -6)"
one=(--set train.batch_sentences=3000 --set train.lr=1e-30 --set train.lr_decay=0.5 --set train.patience=0 --set train.log_every=1 --set train.valid_every=1000)
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/one" "${one[@]}" --set train.max_steps=5 > /dev/null 2>&1
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/one-cut" "${one[@]}" --set train.max_steps=100000 > "$tmp/one-cut.log" 2>&1 &
pid=$!
for i in $(seq 1 300); do [ "$(grep -c '^train,' "$tmp/one-cut/train.csv" 2>/dev/null)" -ge 2 ] && break; sleep 0.02; done
kill -TERM $pid; wait $pid; rc=$?
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/one-cut" "${one[@]}" --set train.max_steps=5 --resume 2>&1)
check '[ $rc -eq 143 ] && cmp -s <(rates one) <(rates one-cut)' \
  "a signal at an epoch's end, resumed: rates or validations differ ($rc): $(diff <(rates one) <(rates one-cut) | head -6)"
out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/plateau" "${plateau[@]}" --set train.patience=2 \
    --set train.max_steps=0 --set train.epochs=50 --set train.batch_sentences=500 --set train.log_every=1000 --resume 2>&1); rc=$?
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "the run had stopped early: no improvement in its last 2 validations (train.patience 2)" &&
       printf "%s" "$out" | grep -q "done at step $((3 * short + 2)) "' "resume after the patience was used up: $rc $out"

# 9. a fresh run into a save_dir that holds a run is refused (exit 2) and
# changes nothing; --resume continues it; --overwrite starts afresh and
# leaves none of the earlier run's checkpoints
again=$tmp/again
sums() { (cd "$again" && ls -1 | LC_ALL=C sort | xargs md5sum); }
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$again" --set train.max_steps=40 \
    --set train.keep_checkpoints=2 > /dev/null 2>&1
check '[ -s "$again/step-20.nmt" ] && [ -s "$again/step-40.nmt" ]' "no step checkpoints in $again: $(ls "$again")"
"$NMT" plot --run "$again" > /dev/null 2>&1
echo "mine" > "$again/notes.txt"
before=$(sums)
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$again" --set train.max_steps=40 \
    --set train.keep_checkpoints=2 2>&1); rc=$?
check '[ $rc -eq 2 ]' "a second fresh run into $again: exit $rc (want 2): $out"
for needle in "$again" "last.nmt" "--resume" "--overwrite" "train.save_dir"; do
  check 'printf "%s" "$out" | grep -qF -- "$needle"' "the refusal does not say '$needle': $out"
done
check '[ "$(sums)" = "$before" ]' "a refused run changed $again: $(diff <(printf '%s\n' "$before") <(sums))"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$again" --resume --overwrite 2>&1); rc=$?
check '[ $rc -eq 2 ] && [ "$(sums)" = "$before" ]' "--resume with --overwrite: exit $rc (want 2): $out"
# only a step checkpoint, or only train.csv, is a run too (nothing to resume: --resume is not offered)
mkdir -p "$tmp/steponly" "$tmp/csvonly"
cp "$again/step-20.nmt" "$tmp/steponly/"
cp "$again/train.csv" "$tmp/csvonly/"
for d in steponly:step-20.nmt csvonly:train.csv; do
  out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/${d%%:*}" 2>&1); rc=$?
  check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "$tmp/${d%%:*}/${d#*:}" && printf "%s" "$out" | grep -q "no last.nmt"' \
    "a save_dir holding only ${d#*:}: exit $rc (want 2): $out"
  check '[ "$(ls "$tmp/${d%%:*}")" = "${d#*:}" ]' "a refused run wrote into $tmp/${d%%:*}: $(ls "$tmp/${d%%:*}")"
  # --resume there: nothing to resume (exit 2), saying what the folder holds
  out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/${d%%:*}" --resume 2>&1); rc=$?
  check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "has no last.nmt to resume from (it holds ${d#*:}"' \
    "--resume in a save_dir holding only ${d#*:}: exit $rc (want 2): $out"
  check '[ "$(ls "$tmp/${d%%:*}")" = "${d#*:}" ]' "a refused --resume wrote into $tmp/${d%%:*}: $(ls "$tmp/${d%%:*}")"
done
check '! printf "%s" "$out" | grep -qF "translate with"' "--resume with only train.csv offers a checkpoint to translate with: $out"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/steponly" --resume 2>&1)
check 'printf "%s" "$out" | grep -qF "translate with $tmp/steponly/step-20.nmt"' "--resume with a step checkpoint only: $out"
# --resume into a folder that does not exist, or is empty: refused, nothing made
mkdir -p "$tmp/emptyrun"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/norun" --resume 2>&1); rc=$?
check '[ $rc -eq 2 ] && [ ! -e "$tmp/norun" ] && printf "%s" "$out" | grep -qF "train.save_dir $tmp/norun does not exist"' \
  "--resume into a missing save_dir: exit $rc (want 2): $out; $(ls -d "$tmp/norun" 2>&1)"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/emptyrun" --resume 2>&1); rc=$?
check '[ $rc -eq 2 ] && [ -z "$(ls "$tmp/emptyrun")" ] && printf "%s" "$out" | grep -qF "train.save_dir $tmp/emptyrun holds no run (no last.nmt)"' \
  "--resume into an empty save_dir: exit $rc (want 2): $out"
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$again" --set train.max_steps=60 \
    --set train.keep_checkpoints=2 --resume 2>&1); rc=$?
check '[ $rc -eq 0 ] && grep -q "^train,60," "$again/train.csv" && [ -s "$again/step-60.nmt" ]' "--resume after a refusal: $rc $out"
# afresh with another model size: a step checkpoint of the earlier run left behind would break averaging
out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$again" --set train.max_steps=30 \
    --set train.valid_every=15 --set train.keep_checkpoints=2 --set model.hidden=24 --overwrite 2>&1); rc=$?
check '[ $rc -eq 0 ]' "--overwrite: $rc $out"
check 'printf "%s" "$out" | grep -q "removed 7 files of the earlier run"' "--overwrite does not say what it removed: $out"
check '[ "$(cd "$again" && ls step-*.nmt | tr "\n" " ")" = "step-15.nmt step-30.nmt " ]' "step checkpoints after --overwrite: $(ls "$again")"
check '[ "$(awk -F, '"'"'$1 != "kind" { print $2 }'"'"' "$again/train.csv" | sort -n | tail -1)" = 30 ]' \
  "train.csv after --overwrite holds rows of the earlier run: $(cat "$again/train.csv")"
check "awk -F, '\$1 == \"train\" { if (\$2 <= last) exit 1; last = \$2 }' '$again/train.csv'" "train.csv after --overwrite: steps repeat: $(cat "$again/train.csv")"
check '[ ! -e "$again/curves.svg" ] && [ "$(cat "$again/notes.txt")" = mine ]' "--overwrite: curves.svg of the earlier run kept, or notes.txt lost: $(ls "$again")"
check '"$NMT" average --out "$tmp/avg.nmt" "$again"/step-*.nmt > /dev/null 2>&1' "nmt average of the step checkpoints after --overwrite"
check 'grep -Eq "\"hidden\":[[:space:]]*24," "$again/config.json"' "config.json is not the new run's"

# 9b. train.keep_checkpoints without a validation set keeps the last K step
# checkpoints too (a step-N.nmt every valid_every steps), and a --resume
# removes those of the run's earlier part as well
novalid() { # SETTINGS...: a run with train data only (its own cache), keep_checkpoints 2
  "$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/novalid" --set data.valid_src= \
      --set data.valid_tgt= --set data.cache_dir="$tmp/cache-novalid" --set train.valid_every=5 \
      --set train.keep_checkpoints=2 "$@" 2>&1
}
steps_in() { (cd "$1" && ls step-*.nmt 2>/dev/null | sort -t- -k2n | tr '\n' ' '); }
out=$(novalid --set train.max_steps=30); rc=$?
check '[ $rc -eq 0 ] && [ "$(steps_in "$tmp/novalid")" = "step-25.nmt step-30.nmt " ]' \
  "keep_checkpoints 2 without validation: $rc $out; $(ls "$tmp/novalid")"
out=$(novalid --set train.max_steps=42 --resume); rc=$?
check '[ $rc -eq 0 ] && [ "$(steps_in "$tmp/novalid")" = "step-40.nmt step-42.nmt " ]' \
  "keep_checkpoints 2 without validation, resumed: $rc $out; $(ls "$tmp/novalid")"

# 9c. validation decoding with length limits that round down to no step
# (decode.max_len_a 0.001, max_len_b 0): one step, not an internal assertion
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/tinylen" --set train.max_steps=2 \
    --set train.valid_every=2 --set decode.max_len_a=0.001 --set decode.max_len_b=0 2>&1); rc=$?
check '[ $rc -eq 0 ] && grep -q "^valid,2," "$tmp/tinylen/train.csv"' "validation with max_len_a 0.001, max_len_b 0: exit $rc, $out"

# 10. a diverged run (rate 10) prints its huge perplexities in scientific
# notation, not as 100-digit numbers; train.csv keeps numbers that read back
out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/diverged" --set train.max_steps=10 \
    --set train.log_every=5 --set train.valid_every=10 --set train.lr=10 --set train.label_smoothing=0 2>&1); rc=$?
check '[ $rc -eq 0 ]' "diverged run: $rc $out"
ppls=$(printf '%s\n' "$out" | tr '\r' '\n' | sed -n -E 's/^(epoch [0-9]+ step|valid: step) [0-9]+ .*ppl ([^ ]+) .*/\2/p')
check '[ $(printf "%s\n" "$ppls" | grep -c .) -eq 3 ]' "expected 3 perplexities in the log of the diverged run: $ppls"
check 'printf "%s\n" "$ppls" | grep -q "e+"' "the diverged run's perplexities are not above a million (no divergence?): $ppls"
check '! printf "%s\n" "$ppls" | grep -qE "^.{13,}$"' "a perplexity longer than 12 characters in the log: $ppls"
check "python3 - '$tmp/diverged/train.csv' <<'PY'
import csv, math, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['kind'] == 'train']
assert rows and all(abs(float(r['ppl']) / math.exp(min(float(r['loss']), 700)) - 1) < 1e-6 for r in rows), rows
PY" "train.csv of the diverged run: ppl does not read back as exp(loss): $(cat "$tmp/diverged/train.csv")"

# 10b. a validation perplexity beyond exp(700) is capped as the training
# log's (1.014e+304), not inf, in the log and in train.csv
out=$("$NMT" train --config "$tmp/tiny.json" --set train.save_dir="$tmp/blowup" --set train.max_steps=10 \
    --set train.valid_every=5 --set train.optimizer=sgd --set train.lr=1000 --set train.clip_norm=0 \
    --set train.patience=0 2>&1); rc=$?
check '[ $rc -eq 0 ] && ! printf "%s" "$out" | grep -q "ppl inf"' "validation of a run blown up: exit $rc, $(printf '%s' "$out" | grep 'valid:')"
check "python3 - '$tmp/blowup/train.csv' <<'PY'
import csv, math, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['kind'] == 'valid']
assert len(rows) == 2 and all(math.isfinite(float(r['valid_ppl'])) for r in rows), rows
assert any(float(r['valid_ppl']) > 1e300 for r in rows), rows  # it did blow up
PY" "train.csv of the blown-up run: validation perplexities not finite: $(grep '^valid' "$tmp/blowup/train.csv")"

# 10c. a model whose weights are not finite is never saved: the run stops
# (exit 1) naming the step and the tensor, and the checkpoints already there
# stay the last good ones (test hook: the first weight NaN after step 40's
# update, just before its validation; validations at 20 and 40)
out=$(NMT_TEST_POISON_STEP=40 "$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/poisoned" \
    --set train.keep_checkpoints=5 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "step 40: not saved: .*are not finite.*the first in tensor"' \
  "a NaN model at a validation: exit $rc (want 1): $out"
check "[ -e '$tmp/poisoned/step-20.nmt' ] && [ ! -e '$tmp/poisoned/step-40.nmt' ] && cmp -s '$tmp/poisoned/last.nmt' '$tmp/poisoned/step-20.nmt'" \
  "after the refused save last.nmt should be step 20's: $(ls "$tmp/poisoned")"
"$NMT" translate --model "$tmp/poisoned/best.nmt" < "$tmp/data/test.src" > /dev/null 2>&1
check '[ $? -eq 0 ]' "best.nmt after a refused save should be a finite one"
# and the run goes on from its last good checkpoint at a lower rate (train.lr
# may change on resume): the updates up to the next validation at 0.001
# (a validation that does not improve halves it), none NaN
out=$("$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/poisoned" \
    --set train.keep_checkpoints=5 --set train.lr=0.001 --set train.max_steps=50 --resume 2>&1); rc=$?
# (train.csv is a log: the abandoned run's rows 30 and 40 stay, the resumed
# run's come after them)
check '[ $rc -eq 0 ] && awk -F, "\$1 == \"train\" && \$2 > 20 && \$2 <= 40 { lr[\$2] = \$6; loss[\$2] = \$4 }
       END { exit !(lr[30] + 0 == 0.001 && lr[40] + 0 == 0.001 && loss[40] > 0 && loss[40] < 20) }" "$tmp/poisoned/train.csv"' \
  "resume at a lower train.lr after the refused save: $rc $out $(grep '^train' "$tmp/poisoned/train.csv" | tail -2)"

# 10d. train.decay_start_epoch 1 decays the first epoch's rate already
# (2 and later: that epoch on), from the first logged step
for k in 1 2; do
  "$NMT" train --config "$tmp/tiny.json" --quiet --set train.save_dir="$tmp/decaystart$k" --set train.max_steps=10 \
      --set train.decay_start_epoch=$k --set train.lr_decay=0.5 > /dev/null 2>&1
  lr1=$(grep '^train,' "$tmp/decaystart$k/train.csv" | head -1 | cut -d, -f6)
  want=$([ $k = 1 ] && echo 0.0015 || echo 0.003)
  check "awk 'BEGIN{exit !($lr1 > $want * 0.999 && $lr1 < $want * 1.001)}'" "decay_start_epoch $k: first rate $lr1, want $want"
done

# 7. the curves of the run
out=$("$NMT" plot --run "$tmp/run" 2>&1); rc=$?
check '[ $rc -eq 0 ] && [ -s "$tmp/run/curves.svg" ]' "plot: $rc $out"

test_end
