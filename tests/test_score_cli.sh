#!/usr/bin/env bash
# test_score_cli.sh: `nmt score` on tiny models trained here (a toy task they
# learn in a second: the source words renamed and reversed):
#  1. every hypothesis of `nmt translate --nbest` (length and coverage
#     penalties 0) gets from nmt score the log-probability translate printed,
#     also for an ensemble; an ensemble of a model with itself is that model;
#     with --full-vocab the validation set's perplexity is train.csv's
#     valid_ppl (the training forward's NLL, another code path); both also
#     for Bahdanau local-p, no attention, and three dot heads local-m;
#  2. scores are <= 0; --batch 1, 64 and the default give every line the
#     same score (lines of very different lengths, so the longest-first
#     order moves them, and pairs far over the base length, so the model is
#     made again); --normalize is the sum over the --tokens count; long
#     pairs are scored whole;
#  3. wrong targets (the next line's reference) score below the references
#     and the greedy translations;
#  4. errors: line counts that differ, a missing file or model, NUL bytes,
#     invalid UTF-8, bad options, two standard inputs, an ensemble of other
#     vocabularies, each with its exit code and message; empty sources by
#     their documented convention;
#  5. two runs on the CPU are byte-identical; gzip input reads as plain;
#  6. on the CUDA emulator (when built), the CPU's scores;
#  7. the model named as nmt translate names it: --config picks best.nmt
#     of its train.save_dir (with --set), $NMT_MODEL when neither --model
#     nor --config is given, --model over --config over $NMT_MODEL (the
#     scores of the model meant, byte for byte), and the errors (no model,
#     --set without --config, a run without best.nmt yet, a bad config)
#     with their exit codes;
#  8. --progress: a progress line on stderr in translate's format, ended
#     by a newline, stdout unchanged; none by default on a file or with
#     --no-progress; on by default on a terminal; at most 4 updates a
#     second; an error's message on a line of its own.
# Prints "test_score_cli: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_score_cli
cd "$ROOT" || exit 2

# the toy corpus: 3 to 12 words s0..s19, the target their t-names reversed
mkdir -p "$tmp/data"
awk -v dir="$tmp/data" 'BEGIN {
  srand(11)
  split("train 3000 valid 40 test 60", a, " ")
  for (k = 1; k <= 6; k += 2)
    for (i = 0; i < a[k + 1]; i++) {
      len = 3 + int(rand() * 10); s = ""; t = ""
      for (j = 0; j < len; j++) { w = int(rand() * 20); s = s (j ? " " : "") "s" w; t = "t" w (j ? " " : "") t }
      print s > (dir "/" a[k] ".src"); print t > (dir "/" a[k] ".tgt")
    }
}'
demo_config "$tmp/toy.json" \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "bidirectional": true, "input_feed": true,
    "attention": {"style": "luong", "score": "general", "mode": "global", "heads": 2}}' \
  '{"optimizer": "adam", "lr": 0.01, "lr_decay": 1, "batch_sentences": 32, "max_steps": 400,
    "valid_every": 400, "seed": 5, "threads": 1, "save_dir": "run"}' \
  '{"beam": 1, "batch": 8}'
out=$("$NMT" train --config "$tmp/toy.json" --quiet 2>&1) || bad "train: $out"
out=$("$NMT" train --config "$tmp/toy.json" --quiet --set train.seed=6 --set train.save_dir="$tmp/run2" 2>&1) ||
  bad "train (second model): $out"
M="$tmp/run/best.nmt" M2="$tmp/run2/best.nmt"
src="$tmp/data/test.src" ref="$tmp/data/test.tgt"

# score ARGS...: nmt score with the model, standard error into $tmp/err
# (one thread: OpenMP's spinning threads make a tiny model's thousands of
# small steps slow on a busy machine, docs/user-guide.md)
score() { "$NMT" score --model "$M" --threads 1 "$@" 2> "$tmp/err"; }
# close A B TOL: files A and B of one number a line differ by at most TOL
# times max(1, |value|) on every line; else it says where
close() {
  paste "$1" "$2" | awk -v tol="$3" '
    { d = $1 - $2; d = d < 0 ? -d : d; m = $1 < 0 ? -$1 : $1; if (m < 1) m = 1
      if (!(d <= tol * m) || NF != 2) { print "line " NR ": " $1 " vs " $2; exit 1 } }
    END { if (NR == 0) { print "no lines"; exit 1 } }'
}

# 1. the n-best scores of nmt translate (no penalties: the sum of the
#    tokens' and EOS's log-probabilities) are nmt score's, for every
#    hypothesis that ended with EOS (not cut at 60 tokens)
nbest_check() { # nbest_check NAME MODEL-ARGS...
  local name=$1
  shift
  "$NMT" translate "$@" --threads 1 --beam 4 --nbest 4 --length-penalty 0 --coverage-penalty 0 --max-len-a 0 --max-len-b 60 \
    < "$src" > "$tmp/nb.txt" 2> "$tmp/err" || bad "$name: translate --nbest: $(cat "$tmp/err")"
  awk -F' [|][|][|] ' -v dir="$tmp" 'NR == FNR { s[FNR - 1] = $0; next }
    { print s[$1] > (dir "/nb.src"); print $2 > (dir "/nb.hyp"); print $3 > (dir "/nb.score") }' "$src" "$tmp/nb.txt"
  "$NMT" score "$@" --threads 1 --src "$tmp/nb.src" --tgt "$tmp/nb.hyp" > "$tmp/nb.mine" 2> "$tmp/err" ||
    bad "$name: score: $(cat "$tmp/err")"
  local res
  res=$(paste "$tmp/nb.score" "$tmp/nb.mine" "$tmp/nb.hyp" | awk -F'\t' '
    { if (split($3, w, " ") >= 60) { cut++; next }
      d = $1 - $2; d = d < 0 ? -d : d; if (d > m) { m = d; at = NR ": " $1 " vs " $2 } n++ }
    END { printf "%d %d %s", n, cut, (m <= 1e-4 ? "ok" : "line " at) }')
  check '[ "$(wc -l < "$tmp/nb.txt")" -eq 240 ] && [ "${res%% *}" -ge 120 ] && [ "${res##* }" = ok ]' \
    "$name: translate's n-best score is not nmt score's (compared, cut at the limit, worst): $res"
}
nbest_check "one model" --model "$M"
nbest_check "ensemble" --model "$M" --model "$M2"
score --src "$src" --tgt "$ref" > "$tmp/ref.s"
"$NMT" score --model "$M" --model "$M" --threads 1 --src "$src" --tgt "$ref" > "$tmp/self.s" 2> "$tmp/err"
check 'cmp -s "$tmp/ref.s" "$tmp/self.s"' "an ensemble of the model with itself scores otherwise: $(head -2 "$tmp/self.s")"
"$NMT" score --model "$M2" --threads 1 --src "$src" --tgt "$ref" > "$tmp/ref2.s" 2> "$tmp/err"
"$NMT" score --model "$M" --model "$M2" --threads 1 --src "$src" --tgt "$ref" > "$tmp/ens.s" 2> "$tmp/err"
paste "$tmp/ref.s" "$tmp/ref2.s" | awk '{ printf "%.6f\n", ($1 + $2) / 2 }' > "$tmp/mean.s"
out=$(close "$tmp/ens.s" "$tmp/mean.s" 1e-5)
check '[ $? -eq 0 ]' "an ensemble's score is not the mean of its models': $out"
# --full-vocab: exp(-sum / tokens) over the validation set is train.csv's
# last valid_ppl, that of last.nmt (best.nmt may be an earlier one)
ppl() { awk -F'\t' '{ s += $1; n += split($3, a, " ") } END { printf "%.9g", exp(-s / n) }'; }
ppl_check() { # ppl_check NAME RUN-DIR
  local full dec want
  full=$("$NMT" score --model "$2/last.nmt" --threads 1 --src "$tmp/data/valid.src" --tgt "$tmp/data/valid.tgt" \
    --tokens --full-vocab 2> "$tmp/err" | ppl)
  dec=$("$NMT" score --model "$2/last.nmt" --threads 1 --src "$tmp/data/valid.src" --tgt "$tmp/data/valid.tgt" \
    --tokens 2> "$tmp/err" | ppl)
  want=$(awk -F, '$1 == "valid" { p = $10 } END { print p }' "$2/train.csv")
  check 'awk -v a="$full" -v b="$want" "BEGIN { d = a - b; exit !(d < 1e-5 * b && -d < 1e-5 * b) }"' \
    "$1: --full-vocab perplexity $full, train.csv's valid_ppl $want"
  check 'awk -v a="$dec" -v b="$full" "BEGIN { exit !(a < b) }"' \
    "$1: without PAD and BOS in the softmax the perplexity ($dec) should be below --full-vocab's ($full)"
}
ppl_check "one model" "$tmp/run"
# other attention kinds, two layers each side (a short training)
n=0
for att in '"attention": {"style": "bahdanau", "score": "additive", "mode": "local-p"}, "input_feed": false' \
           '"attention": {"style": "none"}, "input_feed": false, "bidirectional": false' \
           '"attention": {"style": "luong", "score": "dot", "mode": "local-m", "heads": 3}'; do
  n=$((n + 1))
  demo_config "$tmp/v$n.json" "{\"emb_dim\": 16, \"hidden\": 24, \"enc_layers\": 2, \"dec_layers\": 2, $att}" \
    '{"optimizer": "adam", "lr": 0.01, "lr_decay": 1, "batch_sentences": 32, "max_steps": 100,
      "valid_every": 100, "seed": 5, "threads": 1, "save_dir": "runv'$n'"}' '{"beam": 1, "batch": 8}'
  out=$("$NMT" train --config "$tmp/v$n.json" --quiet 2>&1) || bad "train ($att): $out"
  nbest_check "$att" --model "$tmp/runv$n/last.nmt"
  ppl_check "$att" "$tmp/runv$n"
done

# 2. a mixed input: the test set, pairs far longer than the base length
#    (100 tokens), one with a 3000-token target, an empty target
awk -v dir="$tmp" 'BEGIN { srand(3) }
  { print > (dir "/mix.src"); getline t < (dir "/data/test.tgt"); print t > (dir "/mix.tgt")
    if (NR % 15 == 0) { len = NR * 10; s = ""; t = ""
      for (j = 0; j < len; j++) { w = int(rand() * 20); s = s (j ? " " : "") "s" w; t = "t" w (j ? " " : "") t }
      print s > (dir "/mix.src"); print t > (dir "/mix.tgt") } }
  END { print "s1 s2" > (dir "/mix.src"); t = ""; for (j = 0; j < 3000; j++) t = t (j ? " " : "") "t" (j % 20)
        print t > (dir "/mix.tgt"); print "s3 s4" > (dir "/mix.src"); print "" > (dir "/mix.tgt") }' "$src"
n_mix=$(wc -l < "$tmp/mix.src")
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" --batch 1 > "$tmp/b1" || bad "--batch 1: $(cat "$tmp/err")"
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" --batch 64 > "$tmp/b64" || bad "--batch 64: $(cat "$tmp/err")"
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" > "$tmp/bdef" || bad "default batch: $(cat "$tmp/err")"
check '[ "$(wc -l < "$tmp/b1")" -eq "$n_mix" ] && [ "$(wc -l < "$tmp/b64")" -eq "$n_mix" ]' \
  "not one line per pair ($n_mix): $(wc -l < "$tmp/b1"), $(wc -l < "$tmp/b64")"
out=$(close "$tmp/b1" "$tmp/b64" 1e-5)
check '[ $? -eq 0 ]' "--batch 1 and --batch 64 differ: $out"
out=$(close "$tmp/b1" "$tmp/bdef" 1e-5)
check '[ $? -eq 0 ]' "--batch 1 and the default batch differ: $out"
check 'awk "{ if (!(\$1 <= 0)) exit 1 }" "$tmp/b64" "$tmp/ref.s" "$tmp/nb.mine"' "a score above 0 (or not a number)"
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" --tokens > "$tmp/tok" || bad "--tokens: $(cat "$tmp/err")"
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" --normalize > "$tmp/norm" || bad "--normalize: $(cat "$tmp/err")"
# each line: the tokens are the target's words and </s>, one log-probability
# each, summing to the score; --normalize is the score over that count
check 'paste "$tmp/tok" "$tmp/mix.tgt" | awk -F"\t" "{ n = split(\$2, w, \" \"); m = split(\$3, p, \" \")
    if (n != m || n != split(\$4, r, \" \") + 1 || w[n] != \"</s>\") exit 1
    s = 0; for (i = 1; i <= m; i++) s += p[i]; d = s - \$1; if (d > 1e-3 || d < -1e-3) exit 1 }"' \
  "--tokens: not the target's tokens and </s>, or log-probabilities that do not sum to the score"
paste "$tmp/tok" | awk -F'\t' '{ printf "%.6f\n", $1 / split($3, a, " ") }' > "$tmp/norm.want"
out=$(close "$tmp/norm" "$tmp/norm.want" 1e-5)
check '[ $? -eq 0 ]' "--normalize is not the score over the --tokens count: $out"
long=$(awk -F'\t' '{ n = split($2, a, " "); if (n > m) m = n } END { print m }' "$tmp/tok")
check '[ "$long" -eq 3001 ]' "the longest target should be scored whole, 3000 tokens and </s>, got $long"
check '[ "$(tail -1 "$tmp/tok" | cut -f2)" = "</s>" ]' "an empty target is scored as </s> alone: $(tail -1 "$tmp/tok")"

# 3. the next line's reference scores below the reference and the greedy output
"$NMT" translate --model "$M" --threads 1 --beam 1 < "$src" > "$tmp/greedy.hyp"
score --src "$src" --tgt "$tmp/greedy.hyp" > "$tmp/greedy.s"
{ tail -n +2 "$ref"; head -1 "$ref"; } > "$tmp/wrong.tgt"
score --src "$src" --tgt "$tmp/wrong.tgt" > "$tmp/wrong.s"
mean() { awk '{ s += $1 } END { printf "%.4f", s / NR }' "$1"; }
mg=$(mean "$tmp/greedy.s") mr=$(mean "$tmp/ref.s") mw=$(mean "$tmp/wrong.s")
check 'awk "BEGIN { exit !($mw < $mr && $mw < $mg) }"' \
  "mean scores: wrong targets $mw, references $mr, greedy $mg (want wrong < references and greedy)"

# 4. errors and edge cases
head -5 "$src" > "$tmp/a.src"
head -4 "$ref" > "$tmp/a.tgt"
out=$(score --src "$tmp/a.src" --tgt "$tmp/a.tgt"); rc=$?
check '[ $rc -eq 1 ] && [ -z "$out" ] && grep -qF "corpus files differ in length: $tmp/a.src has 5 lines, $tmp/a.tgt has 4 lines" "$tmp/err"' \
  "line counts that differ: exit $rc, stdout '$out', $(cat "$tmp/err")"
out=$(score --src - --tgt "$tmp/a.tgt" < "$tmp/a.src"); rc=$?
check '[ $rc -eq 1 ] && [ "$(printf "%s\n" "$out" | wc -l)" -eq 4 ] && grep -qF "<stdin> has 5 lines, $tmp/a.tgt has 4 lines" "$tmp/err"' \
  "standard input one line longer: exit $rc, $(printf "%s\n" "$out" | wc -l) lines, $(cat "$tmp/err")"
out=$(score --src "$tmp/nope.src" --tgt "$tmp/a.tgt"); rc=$?
check '[ $rc -eq 1 ] && [ -z "$out" ] && grep -qF "$tmp/nope.src: cannot open" "$tmp/err"' "missing file: exit $rc, $(cat "$tmp/err")"
expect 1 "$tmp/nope.nmt" "$NMT" score --model "$tmp/nope.nmt" --src "$tmp/a.src" --tgt "$tmp/a.src"
printf 's1 s2\ns3\0 s4\ns5\n' > "$tmp/nul.src"
printf 't2 t1\nt4 t3\nt5\n' > "$tmp/nul.tgt"
out=$(score --src "$tmp/nul.src" --tgt "$tmp/nul.tgt"); rc=$?
check '[ $rc -eq 1 ] && [ -z "$out" ] && grep -qF "$tmp/nul.src:2: NUL byte at byte 3" "$tmp/err"' \
  "NUL byte: exit $rc, stdout '$out', $(cat "$tmp/err")"
out=$(score --src - --tgt "$tmp/nul.tgt" < "$tmp/nul.src"); rc=$?
check '[ $rc -eq 1 ] && [ "$(printf "%s\n" "$out" | wc -l)" -eq 1 ] && grep -qF "<stdin>:2: NUL byte at byte 3" "$tmp/err"' \
  "NUL byte on standard input (the line before is written): exit $rc, stdout '$out', $(cat "$tmp/err")"
printf 't2 t1\nt4 \377t3\nt5\n' > "$tmp/bad.tgt"
out=$(score --src "$tmp/nul.tgt" --tgt "$tmp/bad.tgt"); rc=$?
check '[ $rc -eq 1 ] && [ -z "$out" ] && grep -qF "$tmp/bad.tgt:2: invalid UTF-8 at byte 4" "$tmp/err"' \
  "invalid UTF-8: exit $rc, $(cat "$tmp/err")"
usage() { expect 2 "$1" "$NMT" score --model "$M" --src "$tmp/a.src" --tgt "$tmp/a.src" "${@:2}"; }
usage "--batch must be an integer in [1, 4096], got '0'" --batch 0
usage "--threads must be an integer in [0, 1024], got 'x'" --threads x
usage "--device must be auto, cpu or cuda, got 'gpu'" --device gpu
usage "--gpu must be an integer in [0, 1023], got '-1'" --gpu -1
usage "unknown option '--beam'" --beam 4
usage "unknown option '--frobnicate'" --frobnicate
expect 2 "--tgt needs a value" "$NMT" score --model "$M" --src "$tmp/a.src" --tgt
expect 2 "give the sentences to score with --src FILE and --tgt FILE" "$NMT" score --model "$M" --src "$tmp/a.src"
expect 2 "nmt score: no model: give --model FILE, or --config FILE (uses its train.save_dir/best.nmt), or set NMT_MODEL" \
  env -u NMT_MODEL "$NMT" score --src "$tmp/a.src" --tgt "$tmp/a.src"
expect 2 "would both read standard input" "$NMT" score --model "$M" --src - --tgt -
if "$NMT" --version | grep -q -E "cuda: (not built in|built in, no GPU visible)"; then
  expect 2 "--gpu 3: GPU 3 requested (--device cuda), but" "$NMT" score --model "$M" --device cuda --gpu 3 \
    --src "$tmp/a.src" --tgt "$tmp/a.src"
fi
# an ensemble needs the same vocabularies (a model of a 12-word target vocabulary)
out=$("$NMT" train --config "$tmp/toy.json" --quiet --set data.word_vocab_size=12 --set data.cache_dir="$tmp/cache3" \
  --set train.max_steps=1 --set train.save_dir="$tmp/run3" 2>&1) || bad "train (third model): $out"
expect 2 "its vocabularies differ from the first --model's" "$NMT" score --model "$M" --model "$tmp/run3/last.nmt" \
  --src "$tmp/a.src" --tgt "$tmp/a.src"
# an empty source (or only spaces): 0 with an empty target, else -inf, and one warning
printf 's1 s2\n\n \t\ns3\n' > "$tmp/e.src"
printf 't2 t1\n\nt1 t2\n\n' > "$tmp/e.tgt"
score --src "$tmp/e.src" --tgt "$tmp/e.tgt" > "$tmp/e.s"; rc=$?
out=$(tr '\n' ' ' < "$tmp/e.s")
check '[ $rc -eq 0 ] && [ "$(sed -n 2,3p "$tmp/e.s" | tr "\n" " ")" = "0.000000 -inf " ] && grep -qF "$tmp/e.src:2: 2 pairs with an empty source" "$tmp/err"' \
  "empty sources: exit $rc, scores '$out', $(cat "$tmp/err")"
# an unknown target word is scored as <unk>
printf 's1 s2\n' > "$tmp/u.src"
printf 't2 zebra\n' > "$tmp/u.tgt"
check '[ "$(score --src "$tmp/u.src" --tgt "$tmp/u.tgt" --tokens | cut -f2)" = "t2 <unk> </s>" ]' \
  "an unknown word is not scored as <unk>: $(score --src "$tmp/u.src" --tgt "$tmp/u.tgt" --tokens)"

# 5. the same bytes twice (also with two threads, which split the GEMMs and
#    loops); gzip input as plain
score --src "$tmp/mix.src" --tgt "$tmp/mix.tgt" --tokens > "$tmp/tok2"
check 'cmp -s "$tmp/tok" "$tmp/tok2"' "two runs differ"
for k in 1 2; do
  "$NMT" score --model "$M" --model "$M2" --threads 2 --src "$tmp/nb.src" --tgt "$tmp/nb.hyp" --tokens \
    > "$tmp/det$k" 2> "$tmp/err" || bad "--threads 2: $(cat "$tmp/err")"
done
check '[ -s "$tmp/det1" ] && cmp -s "$tmp/det1" "$tmp/det2"' "two runs with two threads differ"
gzip -c "$tmp/mix.src" > "$tmp/mix.src.gz"
score --src "$tmp/mix.src.gz" --tgt "$tmp/mix.tgt" --tokens > "$tmp/tok3"
check 'cmp -s "$tmp/tok" "$tmp/tok3"' "gzip input scores otherwise: $(cat "$tmp/err")"
# 6. the CUDA backend's host side on the CPU emulator (tests/gpu_emu), when
#    it is built in this build (NMT_BUILD; `make test` builds it before the
#    tests, mk/gpu.mk), after the binary under test: the CPU's scores for an
#    ensemble, a pair past the base length (the models made again) and
#    batches shrinking by cuda's quantum of 8. The long pair is 60 corpus
#    lines (about 430 words): one of 150 (about 1100) was chaotic for these
#    barely trained models, its score depending on the last bits of the
#    arithmetic (the CPU alone gave -6638 to -6701 for the second model
#    under four OPENBLAS_CORETYPE settings, 2026-12-02), so the 1e-5 check
#    held on one machine and not on another; at 430 words the four agree
#    to 3e-8.
emu="${NMT_BUILD:-$ROOT/build}/gpu-emu/nmt"
if [ -x "$emu" ] && [ "$emu" -nt "$NMT" ] && "$emu" score --help > /dev/null 2>&1; then
  { cat "$src"; head -60 "$tmp/data/train.src" | tr '\n' ' '; echo; } > "$tmp/emu.src"
  { cat "$ref"; head -60 "$tmp/data/train.tgt" | tr '\n' ' '; echo; } > "$tmp/emu.tgt"
  "$emu" score --model "$M" --model "$M2" --device cuda --batch 16 --src "$tmp/emu.src" --tgt "$tmp/emu.tgt" \
    > "$tmp/emu.s" 2> "$tmp/err" || bad "emulated cuda: $(tail -3 "$tmp/err")"
  "$NMT" score --model "$M" --model "$M2" --threads 1 --batch 16 --src "$tmp/emu.src" --tgt "$tmp/emu.tgt" > "$tmp/cpu.s"
  out=$(close "$tmp/emu.s" "$tmp/cpu.s" 1e-5)
  check '[ $? -eq 0 ]' "the emulated cuda backend scores otherwise than the CPU: $out"
else
  echo "SKIP: test_score_cli: no CUDA emulator build newer than $NMT (make build/gpu-emu/nmt): the cuda backend is not checked"
fi

# 7. the model: --model, else --config's best.nmt, else $NMT_MODEL
#    ($tmp/ref.s and $tmp/ref2.s are the scores of $M and $M2)
cfgscore() { "$NMT" score --threads 1 --src "$src" --tgt "$ref" "$@" 2> "$tmp/err"; }
cfgscore --config "$tmp/toy.json" > "$tmp/cfg.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref.s" "$tmp/cfg.s"' \
  "--config: not the scores of its save_dir's best.nmt: exit $rc, $(cat "$tmp/err"); $(head -2 "$tmp/cfg.s")"
cfgscore --config "$tmp/toy.json" --set train.save_dir="$tmp/run2" > "$tmp/cfg2.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref2.s" "$tmp/cfg2.s"' \
  "--config with --set train.save_dir: not that run's best.nmt: exit $rc, $(cat "$tmp/err")"
cfgscore --model "$M2" --config "$tmp/toy.json" > "$tmp/cfg3.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref2.s" "$tmp/cfg3.s"' "--model should win over --config: exit $rc, $(cat "$tmp/err")"
NMT_MODEL="$M2" cfgscore > "$tmp/env.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref2.s" "$tmp/env.s"' "\$NMT_MODEL: not its scores: exit $rc, $(cat "$tmp/err")"
NMT_MODEL="$M2" cfgscore --model "$M" > "$tmp/env2.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref.s" "$tmp/env2.s"' "--model should win over \$NMT_MODEL: exit $rc, $(cat "$tmp/err")"
NMT_MODEL="$M2" cfgscore --config "$tmp/toy.json" > "$tmp/env3.s"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref.s" "$tmp/env3.s"' "--config should win over \$NMT_MODEL: exit $rc, $(cat "$tmp/err")"
# the config's decode.batch is the default --batch, as for translate (the
# scores do not depend on it beyond rounding); the config is checked
cfgscore --config "$tmp/toy.json" --set decode.batch=1 --set decode.maxi_batch=1 > "$tmp/cfgb1.s"; rc=$?
out=$(close "$tmp/ref.s" "$tmp/cfgb1.s" 1e-5); crc=$?
check '[ $rc -eq 0 ] && [ $crc -eq 0 ]' "--config with decode.batch 1: exit $rc, $(cat "$tmp/err"), $out"
expect 2 "nmt score: no model: give --model FILE, or --config FILE (uses its train.save_dir/best.nmt), or set NMT_MODEL" \
  env NMT_MODEL= "$NMT" score --src "$src" --tgt "$ref"
expect 2 "nmt score: --set needs --config" "$NMT" score --model "$M" --set decode.batch=2 --src "$src" --tgt "$ref"
expect 2 "--config needs a file name" "$NMT" score --src "$src" --tgt "$ref" --config
expect 1 "$tmp/nope.json: cannot open" "$NMT" score --config "$tmp/nope.json" --src "$src" --tgt "$ref"
expect 2 "decode.batch: must be in" "$NMT" score --config "$tmp/toy.json" --set decode.batch=0 --src "$src" --tgt "$ref"
expect 2 "unknown" "$NMT" score --config "$tmp/toy.json" --set decode.bean=2 --src "$src" --tgt "$ref"
expect 1 "$tmp/nope.nmt" env NMT_MODEL="$tmp/nope.nmt" "$NMT" score --src "$src" --tgt "$ref"
# a run stopped before its first validation: last.nmt, no best.nmt
mkdir -p "$tmp/nobest" && cp "$tmp/run/last.nmt" "$tmp/nobest/"
expect 1 "$tmp/nobest/best.nmt: cannot open: No such file or directory (no validation has saved best.nmt yet; score with the latest checkpoint: --model $tmp/nobest/last.nmt)" \
  "$NMT" score --config "$tmp/toy.json" --set train.save_dir="$tmp/nobest" --src "$src" --tgt "$ref"
# nmt translate names the model by the same code (src/cli_model.c)
expect 1 "(no validation has saved best.nmt yet; translate with the latest checkpoint: --model $tmp/nobest/last.nmt)" \
  "$NMT" translate --config "$tmp/toy.json" --set train.save_dir="$tmp/nobest" < "$src"
expect 2 "nmt translate: no model: give --model FILE, or --config FILE (uses its train.save_dir/best.nmt), or set NMT_MODEL" \
  env -u NMT_MODEL "$NMT" translate < "$src"

# 8. --progress: translate's line ("scored" for "translated") on stderr
cfgscore --model "$M" --progress > "$tmp/prog.s"; rc=$?
cp "$tmp/err" "$tmp/prog.err"
check '[ $rc -eq 0 ] && cmp -s "$tmp/ref.s" "$tmp/prog.s"' "--progress changed stdout or failed: exit $rc, $(cat "$tmp/prog.err")"
check "grep -q \$'\\r' '$tmp/prog.err'" "progress line not rewritten with \\r: $(cat -A "$tmp/prog.err")"
check "tr '\\r' '\\n' < '$tmp/prog.err' | grep -qE '^scored 60 lines, [0-9.]+ sentences/s, [0-9]+ target tokens/s *\$'" \
  "no final progress line 'scored 60 lines, S sentences/s, T target tokens/s': $(cat -A "$tmp/prog.err")"
check "[ \"\$(tail -c 1 '$tmp/prog.err' | od -An -c | tr -d ' ')\" = '\\n' ]" "progress output must end with a newline"
score --src "$src" --tgt "$ref" > /dev/null
check "! grep -q 'sentences/s' '$tmp/err'" "progress line printed although stderr is a file: $(cat "$tmp/err")"
score --src "$src" --tgt "$ref" --progress --no-progress > /dev/null
check "! grep -q 'sentences/s' '$tmp/err'" "--no-progress (last) still printed progress"
# at most 4 updates a second: 3000 pairs, one a batch
t0=$(date +%s.%N)
score --src "$tmp/data/train.src" --tgt "$tmp/data/train.tgt" --batch 1 --progress > "$tmp/big.s"
t1=$(date +%s.%N)
n_upd=$(tr '\r' '\n' < "$tmp/err" | grep -c '^scoring ')
check 'awk -v n="$n_upd" -v a="$t0" -v b="$t1" "BEGIN { exit !(n <= 4 * (b - a) + 2) }"' \
  "$n_upd progress updates in $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s (at most 4 a second)"
check '[ "$(wc -l < "$tmp/big.s")" -eq 3000 ] && tr "\r" "\n" < "$tmp/err" | grep -q "^scored 3000 lines"' \
  "3000 pairs: $(wc -l < "$tmp/big.s") lines, final progress line: $(tail -c 200 "$tmp/err" | cat -A)"
# an error: its message on a line of its own, below the progress line
out=$(score --src - --tgt "$tmp/a.tgt" --progress < "$tmp/a.src"); rc=$?
check '[ $rc -eq 1 ] && tr "\r" "\n" < "$tmp/err" | grep -q "^nmt score: .*<stdin> has 5 lines"' \
  "--progress and an error: exit $rc, $(cat -A "$tmp/err")"
# on a terminal (a pty from util-linux script) it is on by default
if command -v script > /dev/null 2>&1 && script -qec true /dev/null > /dev/null 2>&1 < /dev/null; then
  script -qec "'$NMT' score --model '$M' --threads 1 --src '$src' --tgt '$ref' > '$tmp/pty.s'" /dev/null \
    > "$tmp/pty.log" 2>&1 < /dev/null
  rc=$?
  check '[ $rc -eq 0 ] && cmp -s "$tmp/ref.s" "$tmp/pty.s"' "score under a pty: exit $rc, $(cat "$tmp/pty.log")"
  check "tr '\\r' '\\n' < '$tmp/pty.log' | grep -q '^scored 60 lines, .*sentences/s'" \
    "no progress line on a terminal: $(cat -A "$tmp/pty.log")"
  script -qec "'$NMT' score --model '$M' --threads 1 --src '$src' --tgt '$ref' --no-progress > /dev/null" /dev/null \
    > "$tmp/pty2.log" 2>&1 < /dev/null
  check "! grep -q 'sentences/s' '$tmp/pty2.log'" "--no-progress on a terminal still printed progress"
else
  echo "SKIP: test_score_cli pty checks: util-linux script not usable"
fi

expect 0 "--normalize" "$NMT" score --help
check '"$NMT" score --help | grep -qF "scored as <unk>" && "$NMT" --help | grep -qE "^  score "' \
  "the help does not describe unknown words, or nmt --help does not list score"
check '"$NMT" score --help | grep -qF -- "--config FILE" && "$NMT" score --help | grep -qF "\$NMT_MODEL" &&
       "$NMT" score --help | grep -qF -- "--progress, --no-progress"' \
  "nmt score --help does not describe --config, \$NMT_MODEL or --progress"

test_end
