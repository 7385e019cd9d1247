#!/usr/bin/env bash
# test_translate_cli.sh: the `nmt translate` command line on a tiny model
# trained here: bad option values are usage errors (exit 2) naming the option
# and the value; "--opt=value" equals "--opt value"; the progress line on
# stderr (forced with --progress, shown on a terminal, absent when stderr is
# not a terminal or with --no-progress, never in stdout, updated at most a
# few times a second, ending with a summary line); --maxi-batch (lines
# decoded longest first, written in input order); exactly N --nbest lines
# and one --attention-out line per input line, empty or invalid ones too;
# the output shortlist;
# --help lists every option (--stream too: tests/test_translate_stream.sh).
# Prints "test_translate_cli: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_translate_cli
cd "$ROOT" || exit 2

# a tiny word-level model (a few seconds)
"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 40 --seed 7 > /dev/null 2>&1 || bad "demo-corpus"
cat > "$tmp/tiny.json" <<JSON
{
  "data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
           "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
           "tokenizer": "word", "max_len": 40, "cache_dir": "cache"},
  "model": {"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1,
            "attention": {"heads": 2}},
  "train": {"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "max_steps": 40,
            "valid_every": 40, "seed": 3, "threads": 1, "save_dir": "run"},
  "decode": {"beam": 1, "batch": 8}
}
JSON
out=$("$NMT" train --config "$tmp/tiny.json" --quiet 2>&1) || bad "train: $out"
M="$tmp/run/best.nmt"
in="$tmp/data/test.src"
"$NMT" translate --model "$M" < "$in" > "$tmp/base.hyp" 2> "$tmp/base.err"
rc=$?
check '[ $rc -eq 0 ] && [ $(wc -l < "$tmp/base.hyp") -eq 40 ]' "plain translate: $(cat "$tmp/base.err")"

# 1. bad values: exit 2, the message names the option and the value
usage() { # usage NEEDLE ARGS...: translate ARGS must exit 2 with NEEDLE on stderr
  local needle=$1 out rc
  shift
  out=$("$NMT" translate --model "$M" "$@" < /dev/null 2>&1); rc=$?
  if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -qF -- "$needle"; then ok; else bad "translate $*: exit $rc, output: $out (expected: $needle)"; fi
}
usage "--beam must be an integer in [1, 1000], got '0'" --beam 0
usage "--beam must be an integer in [1, 1000], got '3x'" --beam 3x
usage "--beam needs a value" --beam
usage "--batch must be an integer in [1, 4096], got '5000'" --batch 5000
usage "--nbest must be an integer in [1, 1000], got '-2'" --nbest=-2
usage "--max-src-len must be an integer in [1, 100000], got '0'" --max-src-len 0
usage "--length-penalty must be a number >= 0, got '-0.5'" --length-penalty -0.5
usage "--length-penalty must be a number >= 0, got 'nan'" --length-penalty nan
usage "--coverage-penalty must be a number >= 0, got 'x'" --coverage-penalty x
usage "--device must be auto, cpu or cuda, got 'gpu'" --device gpu
usage "--gpu must be an integer in [0, 1023], got '-1'" --gpu -1
usage "--gpu must be an integer in [0, 1023], got 'cuda:1'" --gpu cuda:1
usage "unknown option '--frobnicate'" --frobnicate
# a GPU other than 0 that cannot be used is an error naming --gpu, also with
# auto (the default) and when no GPU is visible or CUDA is not built in;
# auto with GPU 0 decodes on the CPU without a word
if "$NMT" --version | grep -q -E "cuda: (not built in|built in, no GPU visible)"; then
  for dev in auto cuda; do
    out=$("$NMT" translate --model "$M" --device "$dev" --gpu 3 < "$in" 2>&1 > "$tmp/gpu3.hyp"); rc=$?
    check '[ $rc -eq 2 ] && [ ! -s "$tmp/gpu3.hyp" ] && printf "%s" "$out" | grep -qF -- "--gpu 3: GPU 3 requested (--device $dev), but"' \
      "--device $dev --gpu 3 without a usable GPU: exit $rc: $out"
  done
  out=$("$NMT" translate --model "$M" --gpu 3 < "$in" 2>&1 > "$tmp/gpu3.hyp"); rc=$?
  check '[ $rc -eq 2 ] && [ ! -s "$tmp/gpu3.hyp" ] && printf "%s" "$out" | grep -qF -- "--gpu 3: GPU 3 requested (--device auto), but"' \
    "--gpu 3 (auto by default) without a usable GPU: exit $rc: $out"
  check '[ ! -s "$tmp/base.err" ]' "auto with GPU 0 and no usable GPU is not silent: $(cat "$tmp/base.err")"
fi
# --device cpu with a GPU number: decoded on the CPU, the number said to be unused
out=$("$NMT" translate --model "$M" --device cpu --gpu 3 < "$in" 2>&1 > "$tmp/gpu3.hyp"); rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/base.hyp" "$tmp/gpu3.hyp" && printf "%s" "$out" | grep -qF -- "--gpu 3 is not used: --device cpu runs on the CPU"' \
  "--device cpu --gpu 3: exit $rc: $out"
out=$("$NMT" translate --model "$tmp/nope.nmt" < /dev/null 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "nope.nmt"' "missing model: exit $rc: $out"

# env_refused NAME VALUE...: translate exits non-zero for each VALUE of the
# environment variable NAME, writes nothing, and names the setting
env_refused() {
  local name=$1 v out rc
  shift
  for v in "$@"; do
    out=$(env "$name=$v" "$NMT" translate --model "$M" < "$in" 2>&1 > "$tmp/p.hyp"); rc=$?
    check '[ $rc -ne 0 ] && [ ! -s "$tmp/p.hyp" ] && printf "%s" "$out" | grep -qF "$name=$v: want"' \
      "$name=$v: exit $rc: $out"
  done
}
# NMT_CUDA_PROFILE=1 on the CPU: the same output, and a warning that there
# is no device to profile
out=$(NMT_CUDA_PROFILE=1 "$NMT" translate --model "$M" --device cpu < "$in" 2>&1 > "$tmp/prof.hyp"); rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/base.hyp" "$tmp/prof.hyp" && printf "%s" "$out" | grep -qF "NMT_CUDA_PROFILE=1: no device profile, since this runs on the cpu (--device cpu)"' \
  "NMT_CUDA_PROFILE=1 --device cpu: exit $rc: $out"
# a bad profile setting is refused on the CPU too, as the CUDA backend
# refuses it; an empty one is unset there, and here
env_refused NMT_CUDA_PROFILE yes 2 -1
env_refused NMT_CUDA_PROFILE_ROWS 0 x 100001
for v in "NMT_CUDA_PROFILE=" "NMT_CUDA_PROFILE=0" "NMT_CUDA_PROFILE_ROWS=" "NMT_CUDA_PROFILE_ROWS=3"; do
  out=$(env "$v" "$NMT" translate --model "$M" --device cpu < "$in" 2>&1 > "$tmp/prof.hyp"); rc=$?
  check '[ $rc -eq 0 ] && cmp -s "$tmp/base.hyp" "$tmp/prof.hyp" && ! printf "%s" "$out" | grep -qF "NMT_CUDA_PROFILE"' \
    "$v --device cpu: exit $rc: $out"
done
# 2. --opt=value is --opt value; the options still reach the decoder
"$NMT" translate --model "$M" --beam 3 --batch 5 --length-penalty 0.6 < "$in" > "$tmp/b3.hyp" 2>/dev/null
"$NMT" translate --model="$M" --beam=3 --batch=5 --length-penalty=0.6 < "$in" > "$tmp/b3eq.hyp" 2>/dev/null
check "cmp -s '$tmp/b3.hyp' '$tmp/b3eq.hyp'" "--opt=value gives other output than --opt value"
# NMT_DECODE_QUANTUM (backend.h): the batch shrinks only to multiples of
# it; the output is the same, greedy and beam; a bad value is an error
# naming the variable and the value
for q in 3 40; do
  NMT_DECODE_QUANTUM=$q "$NMT" translate --model "$M" < "$in" > "$tmp/q.hyp" 2>/dev/null
  check "cmp -s '$tmp/base.hyp' '$tmp/q.hyp'" "NMT_DECODE_QUANTUM=$q: greedy output differs"
  NMT_DECODE_QUANTUM=$q "$NMT" translate --model "$M" --beam 3 --batch 5 --length-penalty 0.6 < "$in" > "$tmp/q.hyp" 2>/dev/null
  check "cmp -s '$tmp/b3.hyp' '$tmp/q.hyp'" "NMT_DECODE_QUANTUM=$q: beam output differs"
done
env_refused NMT_DECODE_QUANTUM 0 x 5000
# NMT_DECODE_PIPELINE=1 (backend.h: greedy decoding queues a step before
# it reads the last one's tokens) on the CPU too: the same output, also
# with a quantum; 0 is the CPU's default; anything else is refused
for env in "NMT_DECODE_PIPELINE=1" "NMT_DECODE_PIPELINE=1 NMT_DECODE_QUANTUM=4" "NMT_DECODE_PIPELINE=0"; do
  env $env "$NMT" translate --model "$M" --batch 7 < "$in" > "$tmp/p.hyp" 2>/dev/null
  check "cmp -s '$tmp/base.hyp' '$tmp/p.hyp'" "$env: greedy output differs"
done
env_refused NMT_DECODE_PIPELINE 2 x ""
# NMT_DECODE_FOLD=1 (backend.h: target embeddings folded from the first
# line; the CPU's default waits for 256) and 0 (never) give the same
# translations, greedy and beam; anything but 0 or 1 is refused
for beam in 1 3; do
  NMT_DECODE_FOLD=1 "$NMT" translate --model "$M" --beam $beam < "$in" > "$tmp/f1.hyp" 2>/dev/null
  NMT_DECODE_FOLD=0 "$NMT" translate --model "$M" --beam $beam < "$in" > "$tmp/f0.hyp" 2>/dev/null
  check "[ -s '$tmp/f1.hyp' ] && cmp -s '$tmp/f1.hyp' '$tmp/f0.hyp'" "NMT_DECODE_FOLD=0 at beam $beam: the output differs"
done
env_refused NMT_DECODE_FOLD 2 x
# NMT_DECODE_QUERY_FORM (backend.h): the tiny model's 2 heads decode in the
# query form greedy (the CPU's default, 1), at beam 3 too with 2, never
# with 0: the same translations; anything but 0, 1 or 2 is refused
for beam in 1 3; do
  "$NMT" translate --model "$M" --beam $beam < "$in" > "$tmp/qd.hyp" 2>/dev/null
  for qf in 0 2; do
    NMT_DECODE_QUERY_FORM=$qf "$NMT" translate --model "$M" --beam $beam < "$in" > "$tmp/qf.hyp" 2>/dev/null
    check "[ -s '$tmp/qd.hyp' ] && cmp -s '$tmp/qd.hyp' '$tmp/qf.hyp'" "NMT_DECODE_QUERY_FORM=$qf at beam $beam: the output differs"
  done
done
env_refused NMT_DECODE_QUERY_FORM 3 x
# --maxi-batch N: the lines of N batches are decoded longest first and
# written in input order. Every N gives the output of each line decoded
# alone, in order (--batch 1 --maxi-batch 1), also with empty lines, an
# invalid one and repeats mixed in; n-best lines keep their input line
# numbers; bad values are usage errors.
usage "--maxi-batch must be an integer in [1, 1000], got '0'" --maxi-batch 0
usage "--maxi-batch must be an integer in [1, 1000], got '1001'" --maxi-batch 1001
{ head -n 7 "$in"; echo; printf 'bad \377 byte\n'; sed -n '8,20p' "$in"; echo; head -n 3 "$in"; sed -n '21,40p' "$in"; } > "$tmp/mixed.src"
nmix=$(wc -l < "$tmp/mixed.src")
"$NMT" translate --model "$M" --batch 1 --maxi-batch 1 < "$tmp/mixed.src" > "$tmp/alone.hyp" 2>/dev/null
check '[ $(wc -l < "$tmp/alone.hyp") -eq $nmix ] && [ -z "$(sed -n 8p "$tmp/alone.hyp")" ] && [ -z "$(sed -n 9p "$tmp/alone.hyp")" ]' \
  "mixed input: $(wc -l < "$tmp/alone.hyp") lines for $nmix, or lines 8 and 9 (empty, invalid) not empty"
for opts in "--batch 3" "--batch 3 --maxi-batch 2" "--batch 5 --maxi-batch 1000" "--batch 8 --maxi-batch 1"; do
  "$NMT" translate --model "$M" $opts < "$tmp/mixed.src" > "$tmp/mb.hyp" 2>/dev/null
  check "cmp -s '$tmp/alone.hyp' '$tmp/mb.hyp'" "$opts: output differs from each line alone: $(diff "$tmp/alone.hyp" "$tmp/mb.hyp" | head -4)"
done
# a line at a time through a pipe: with --batch 1 (which reads no lines
# ahead) each line's translation comes out before the next line is
# written; with --batch 2 --maxi-batch 3 a block's 6 lines come out once
# they were read, before the input ends
for spec in "1:--batch 1" "6:--batch 2 --maxi-batch 3"; do
  n=${spec%%:*} opts=${spec#*:}
  rm -f "$tmp/in.fifo" "$tmp/stream.out"
  mkfifo "$tmp/in.fifo"
  "$NMT" translate --model "$M" $opts < "$tmp/in.fifo" > "$tmp/stream.out" 2>/dev/null &
  pid=$!
  exec 7> "$tmp/in.fifo"
  head -n "$n" "$in" >&7
  for _ in $(seq 1 150); do [ "$(wc -l < "$tmp/stream.out")" -ge "$n" ] && break; sleep 0.1; done
  got=$(wc -l < "$tmp/stream.out")
  sed -n "$((n + 1)),40p" "$in" >&7
  exec 7>&-
  wait $pid
  check "[ $got -eq $n ] && cmp -s '$tmp/stream.out' '$tmp/base.hyp'" \
    "$opts from a pipe: $got lines out before the rest of the input (want $n), or other output than the file's"
done
"$NMT" translate --model "$M" --beam 2 --nbest 2 --batch 1 --maxi-batch 1 < "$tmp/mixed.src" > "$tmp/nb-alone.hyp" 2>/dev/null
"$NMT" translate --model "$M" --beam 2 --nbest 2 --batch 4 --maxi-batch 3 < "$tmp/mixed.src" > "$tmp/nb-sorted.hyp" 2>/dev/null
# numbers and tokens (a score may differ in its last digit with the batch)
nb_fields() { awk -F' [|][|][|] ' '{ print $1 " ||| " $2 }' "$1"; }
check '[ "$(nb_fields "$tmp/nb-alone.hyp")" = "$(nb_fields "$tmp/nb-sorted.hyp")" ] && [ "$(cut -d" " -f1 "$tmp/nb-sorted.hyp" | uniq | tr "\n" " ")" = "$(seq 0 $((nmix - 1)) | tr "\n" " ")" ]' \
  "--nbest 2 with --maxi-batch 3: lines or numbers differ from each line alone: $(diff "$tmp/nb-alone.hyp" "$tmp/nb-sorted.hyp" | head -4)"
"$NMT" translate --model "$M" --beam 2 --nbest 2 < "$in" > "$tmp/nbest.hyp" 2>/dev/null
check '[ $(wc -l < "$tmp/nbest.hyp") -eq 80 ]' "--nbest 2: expected 80 lines"
# exactly N n-best lines for every input line, also an empty or invalid one
# (the empty hypothesis N times, score 0), in every batching
for opts in "--batch 1 --maxi-batch 1" "--batch 4 --maxi-batch 3"; do
  "$NMT" translate --model "$M" --beam 3 --nbest 3 $opts < "$tmp/mixed.src" > "$tmp/nb3.hyp" 2>/dev/null
  check '[ "$(cut -d" " -f1 "$tmp/nb3.hyp" | uniq -c | awk "\$1 != 3" | wc -l)" -eq 0 ] && [ $(wc -l < "$tmp/nb3.hyp") -eq $((3 * nmix)) ]' \
    "--nbest 3 $opts: not 3 lines for every input line: $(cut -d' ' -f1 "$tmp/nb3.hyp" | uniq -c | awk '$1 != 3' | head -3)"
  check '[ "$(grep -c "^[78] |||  ||| 0.000000\$" "$tmp/nb3.hyp")" -eq 6 ]' \
    "--nbest 3 $opts: the empty and the invalid line (7, 8) want 3 lines 'i |||  ||| 0.000000' each: $(grep "^[78] " "$tmp/nb3.hyp")"
done
# a search that finds fewer than N hypotheses (output of at most one token,
# N above the vocabulary) repeats its last, so the list stays best first
# (it was padded with empty ones scored 0, above every real one), and warns
head -1 "$in" | "$NMT" translate --model "$M" --beam 1000 --nbest 1000 --max-len-a 0 --max-len-b 1 \
    > "$tmp/nbfew.hyp" 2> "$tmp/nbfew.err"
rc=$?
check "[ $rc -eq 0 ] && [ \$(wc -l < '$tmp/nbfew.hyp') -eq 1000 ] && grep -q 'fewer than --nbest 1000; the last is repeated' '$tmp/nbfew.err'" \
  "--nbest 1000 over a small vocabulary: $(wc -l < "$tmp/nbfew.hyp") lines, $(cat "$tmp/nbfew.err")"
check "awk -F' [|][|][|] ' 'NR > 1 && \$3 > prev + 1e-9 { exit 1 } { prev = \$3 }' '$tmp/nbfew.hyp'" \
  "--nbest 1000 over a small vocabulary: scores not best first: $(awk -F' [|][|][|] ' '{print $3}' "$tmp/nbfew.hyp" | uniq -c | head -5)"
check "[ \"\$(tail -1 '$tmp/nbfew.hyp')\" = \"\$(tail -2 '$tmp/nbfew.hyp' | head -1)\" ]" "--nbest 1000: the list's end should repeat its last hypothesis"
# --attention-out: one JSON line per input line, in order, empty and invalid ones too
"$NMT" translate --model "$M" --attention-out "$tmp/attn.jsonl" < "$tmp/mixed.src" > /dev/null 2>&1
check '[ "$(sed "s/^{\"line\": \([0-9]*\),.*/\1/" "$tmp/attn.jsonl" | tr "\n" " ")" = "$(seq 0 $((nmix - 1)) | tr "\n" " ")" ] && grep -q "^{\"line\": 8, \"source\": \[\], \"target\": \[\]" "$tmp/attn.jsonl"' \
  "--attention-out: not one line per input line in order: $(cut -c1-40 "$tmp/attn.jsonl" | head -12)"
"$NMT" translate --model "$M" --batch 3 < "$in" > "$tmp/batch3.hyp" 2>/dev/null
check "cmp -s '$tmp/base.hyp' '$tmp/batch3.hyp'" "greedy output depends on --batch"

# 3. progress: not on a non-terminal by default; forced by --progress; stdout unchanged
check "! grep -q 'sentences/s' '$tmp/base.err'" "progress line printed although stderr is a file: $(cat "$tmp/base.err")"
"$NMT" translate --model "$M" --progress < "$in" > "$tmp/prog.hyp" 2> "$tmp/prog.err"
rc=$?
check '[ $rc -eq 0 ]' "--progress failed: $(cat "$tmp/prog.err")"
check "cmp -s '$tmp/base.hyp' '$tmp/prog.hyp'" "--progress changed the translations"
check "grep -q \$'\\r' '$tmp/prog.err'" "progress line not rewritten with \\r"
check "tr '\\r' '\\n' < '$tmp/prog.err' | grep -qE '^translated 40 lines, [0-9.]+ sentences/s, [0-9]+ target tokens/s *\$'" \
  "no final progress line 'translated 40 lines, S sentences/s, T target tokens/s': $(cat -A "$tmp/prog.err")"
check "[ \"\$(tail -c 1 '$tmp/prog.err' | od -An -c | tr -d ' ')\" = '\\n' ]" "progress output must end with a newline"
"$NMT" translate --model "$M" --progress --no-progress < "$in" > /dev/null 2> "$tmp/noprog.err"
check "! grep -q 'sentences/s' '$tmp/noprog.err'" "--no-progress (last) still printed progress"
# the mixed-lines guarantee holds with the progress line on
{ head -n 3 "$in"; echo; printf 'bad \xff byte\n'; tail -n 2 "$in"; } > "$tmp/mixed.src"
"$NMT" translate --model "$M" --progress < "$tmp/mixed.src" > "$tmp/mixed.hyp" 2> "$tmp/mixed.err"
check '[ $(wc -l < "$tmp/mixed.hyp") -eq 7 ] && [ -z "$(sed -n 4p "$tmp/mixed.hyp")" ] && [ -z "$(sed -n 5p "$tmp/mixed.hyp")" ]' \
  "mixed lines with --progress: $(cat "$tmp/mixed.hyp")"
check "grep -q 'standard input:5: invalid UTF-8' '$tmp/mixed.err' && tr '\\r' '\\n' < '$tmp/mixed.err' | grep -q '^translated 7 lines'" \
  "mixed lines: warning or final progress line missing: $(cat -A "$tmp/mixed.err")"

# 4. updates are rate-limited: at most 4 a second (plus the final line)
for _ in 1 2 3 4 5 6 7 8; do cat "$tmp/data/train.src"; done > "$tmp/big.src"
t0=$(date +%s.%N)
"$NMT" translate --model "$M" --progress --batch 1 < "$tmp/big.src" > "$tmp/big.hyp" 2> "$tmp/big.err"
t1=$(date +%s.%N)
n_upd=$(tr -cd '\r' < "$tmp/big.err" | wc -c)
check "awk -v n=$n_upd -v t0=$t0 -v t1=$t1 'BEGIN { exit !(n >= 1 && n <= 4 * (t1 - t0) + 2) }'" \
  "$n_upd progress updates in $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s (at most 4 a second)"
check '[ $(wc -l < "$tmp/big.hyp") -eq 16000 ]' "big input: line count"
check "tr '\\r' '\\n' < '$tmp/big.err' | grep -q '^translated 16000 lines'" "big input: final progress line"

# 5. on a terminal (a pty from util-linux script) the progress line is on by default
if command -v script > /dev/null 2>&1 && script -qec true /dev/null > /dev/null 2>&1 < /dev/null; then
  script -qec "'$NMT' translate --model '$M' < '$in' > '$tmp/pty.hyp'" /dev/null > "$tmp/pty.log" 2>&1 < /dev/null
  rc=$?
  check '[ $rc -eq 0 ]' "translate under a pty failed: $(cat "$tmp/pty.log")"
  check "cmp -s '$tmp/base.hyp' '$tmp/pty.hyp'" "translations differ under a pty"
  check "tr '\\r' '\\n' < '$tmp/pty.log' | grep -q '^translated 40 lines, .*sentences/s'" "no progress line on a terminal: $(cat -A "$tmp/pty.log")"
  script -qec "'$NMT' translate --model '$M' --no-progress < '$in' > /dev/null" /dev/null > "$tmp/pty2.log" 2>&1 < /dev/null
  check "! grep -q 'sentences/s' '$tmp/pty2.log'" "--no-progress on a terminal still printed progress"
else
  echo "SKIP test_translate_cli pty checks: util-linux script not usable"
fi

# 6. the output shortlist (`nmt shortlist`): one large enough to hold every
# likely token translates exactly as without it; a small one still gives one
# line per input line; a file of another vocabulary, no shortlist at all or
# one cut off is refused naming the file and line; --shortlist-frequent 0 with
# --shortlist-per-source 0 is a usage error
out=$(cd "$tmp" && "$NMT" shortlist --config tiny.json 2>&1); rc=$?
check '[ $rc -eq 0 ] && [ -s "$tmp/run/shortlist.tsv" ] && head -n 1 "$tmp/run/shortlist.tsv" | grep -qx "nmt-shortlist 2 F=[0-9]* L=[0-9]*"' \
  "nmt shortlist: exit $rc: $out"
check 'printf "%s" "$out" | grep -q "shortlist: .* target tokens by frequency"' "nmt shortlist log: $out"
"$NMT" translate --model "$M" --shortlist "$tmp/run/shortlist.tsv" --shortlist-frequent 100000 \
  < "$in" > "$tmp/sl_all.hyp" 2> "$tmp/sl.err"
rc=$?
check '[ $rc -eq 0 ] && cmp -s "$tmp/base.hyp" "$tmp/sl_all.hyp"' "a shortlist of every token changed the output: $(cat "$tmp/sl.err")"
"$NMT" translate --model "$M" --beam 3 < "$in" > "$tmp/b3.hyp" 2>/dev/null
"$NMT" translate --model "$M" --beam 3 --shortlist "$tmp/run/shortlist.tsv" --shortlist-frequent 100000 \
  < "$in" > "$tmp/sl_b3.hyp" 2>/dev/null
check 'cmp -s "$tmp/b3.hyp" "$tmp/sl_b3.hyp"' "beam 3: a shortlist of every token changed the output"
"$NMT" translate --model "$M" --shortlist "$tmp/run/shortlist.tsv" --shortlist-frequent 1 --shortlist-per-source 0 \
  < "$in" > "$tmp/sl_small.hyp" 2>/dev/null
check '[ $? -eq 0 ] && [ $(wc -l < "$tmp/sl_small.hyp") -eq 40 ]' "a small shortlist: one line per input line"
# (the tiny model writes "the" over and over, which the frequent token is:
# the n-best scores, normalised over the list, show the list's effect)
"$NMT" translate --model "$M" --beam 2 --nbest 2 --shortlist "$tmp/run/shortlist.tsv" --shortlist-frequent 1 \
  --shortlist-per-source 0 < "$in" > "$tmp/sl_small_nb.hyp" 2>/dev/null
check '[ $(wc -l < "$tmp/sl_small_nb.hyp") -eq 80 ] && ! cmp -s "$tmp/nbest.hyp" "$tmp/sl_small_nb.hyp"' \
  "a shortlist of EOS, UNK and one token should change the n-best scores"
printf 'nmt-shortlist 1\nF\tthe\t9\nF\tno-such-word-here\t3\n' > "$tmp/other.tsv"
usage_run() { # usage_run EXIT NEEDLE ARGS...
  local want=$1 needle=$2 out rc
  shift 2
  out=$("$NMT" translate --model "$M" "$@" < "$in" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq "$want" ] && printf '%s' "$out" | grep -qF -- "$needle"; then ok; else bad "translate $*: exit $rc, output: $out (expected $want: $needle)"; fi
}
usage_run 1 "other.tsv:3: target piece 'no-such-word-here' is not in the model's vocabulary" --shortlist "$tmp/other.tsv"
usage_run 1 "base.hyp:1: not a shortlist file" --shortlist "$tmp/base.hyp"
usage_run 1 "missing.tsv" --shortlist "$tmp/missing.tsv"
# a file cut off mid-line or at a line boundary is refused naming the file and line
# (cut in the count of line 3, which still reads as a row)
head -n 3 "$tmp/run/shortlist.tsv" | head -c $(($(head -n 3 "$tmp/run/shortlist.tsv" | wc -c) - 2)) > "$tmp/cut.tsv"
usage_run 1 "cut.tsv:3: the last line has no newline: the file is cut off" --shortlist "$tmp/cut.tsv"
head -n 20 "$tmp/run/shortlist.tsv" > "$tmp/cut20.tsv"
usage_run 1 "cut20.tsv:20: the file ends after" --shortlist "$tmp/cut20.tsv"
# option values that leave nothing but EOS and UNK are a usage error
usage_run 2 "--shortlist-frequent 0 with --shortlist-per-source 0 leaves only EOS and UNK" \
  --shortlist "$tmp/run/shortlist.tsv" --shortlist-frequent 0 --shortlist-per-source 0
usage "--shortlist-frequent must be an integer >= 0, got '-1'" --shortlist-frequent -1
# the two tuning options without a shortlist would be ignored: a usage error
usage_run 2 "--shortlist-frequent and --shortlist-per-source tune a shortlist: give its file with --shortlist FILE" \
  --shortlist-frequent 50
usage_run 2 "--shortlist-frequent and --shortlist-per-source tune a shortlist: give its file with --shortlist FILE" \
  --shortlist-per-source 5

# a line of more words than --max-src-len: only the words that give its
# first tokens are encoded; the translation is that of its first 20 words,
# with a warning
long=$(head -n 1 "$in"); while [ "$(printf '%s\n' "$long" | wc -w)" -lt 300 ]; do long="$long $long"; done
first20=$(printf '%s\n' "$long" | tr -s ' ' '\n' | head -n 20 | paste -sd ' ')
out=$(printf '%s\n' "$long" | "$NMT" translate --model "$M" --max-src-len 20 2>&1 > "$tmp/long.hyp"); rc=$?
printf '%s\n' "$first20" | "$NMT" translate --model "$M" --max-src-len 20 > "$tmp/first20.hyp" 2>/dev/null
check '[ $rc -eq 0 ] && cmp -s "$tmp/long.hyp" "$tmp/first20.hyp" && printf "%s" "$out" | grep -qF "standard input:1: more than 20 tokens; truncated to 20 (--max-src-len)"' \
  "a line of 300+ words with --max-src-len 20: exit $rc, $(cat "$tmp/long.hyp") vs $(cat "$tmp/first20.hyp"), $out"
# a SentencePiece model (a few steps): a line of one 20000-byte word of
# characters it never saw, which SentencePiece would merge into one unknown
# piece (and take a minute for a few MB): only the bytes that --max-src-len
# + 1 pieces can hold (64 a piece) are encoded, with a warning; one output
# line per input line
sed -e 's/"tokenizer": "word"/"tokenizer": "spm", "spm_vocab_size": 200/' -e 's/"save_dir": "run"/"save_dir": "runspm"/' \
  -e 's/"cache_dir": "cache"/"cache_dir": "cachespm"/' -e 's/"max_steps": 40/"max_steps": 4/' "$tmp/tiny.json" > "$tmp/spm.json"
out=$(cd "$tmp" && "$NMT" train --config spm.json --quiet 2>&1) || bad "train (spm): $out"
{ echo "a"; awk 'BEGIN { for (i = 0; i < 20000 / 3; i++) printf "\344\270%c", 128 + i % 64; print "" }'; echo "b"; } > "$tmp/blob.txt"
out=$("$NMT" translate --model "$tmp/runspm/last.nmt" --max-src-len 20 < "$tmp/blob.txt" 2>&1 > "$tmp/blob.hyp"); rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/blob.hyp")" -eq 3 ] && printf "%s" "$out" | grep -qF "standard input:2: 20001 bytes; only its first 1344 are translated (--max-src-len 20"' \
  "a 20000-byte unknown word: exit $rc, $(wc -l < "$tmp/blob.hyp") lines, $out"

# 6b. --config's decode section (with --set) gives what the command line
# does not: the same output as the options; --set needs --config and its
# keys are checked; --threads decodes alike on 1 and 2 threads
"$NMT" translate --model "$M" --beam 3 --max-len-a 0 --max-len-b 2 < "$in" > "$tmp/opt.hyp" 2>/dev/null
out=$(cd "$tmp" && "$NMT" translate --config tiny.json --set decode.beam=3 --set decode.max_len_a=0 \
      --set decode.max_len_b=2 < "$in" 2>&1 > "$tmp/cfg.hyp"); rc=$?
check '[ $rc -eq 0 ] && [ -s "$tmp/opt.hyp" ] && cmp -s "$tmp/opt.hyp" "$tmp/cfg.hyp" && ! cmp -s "$tmp/opt.hyp" "$tmp/base.hyp"' \
  "--config with --set decode.*: exit $rc, $out; $(diff "$tmp/opt.hyp" "$tmp/cfg.hyp" | head -3)"
check 'awk "NF > 2 { exit 1 }" "$tmp/opt.hyp"' "--max-len-a 0 --max-len-b 2 gave a line of more than 2 words: $(awk 'NF > 2' "$tmp/opt.hyp" | head -2)"
out=$(cd "$tmp" && "$NMT" translate --config tiny.json --set decode.max_len_b=2 --max-len-b 40 --max-len-a 0 < "$in" 2>&1 > "$tmp/cfg2.hyp"); rc=$?
check '[ $rc -eq 0 ] && awk "NF > 2 { n++ } END { exit !n }" "$tmp/cfg2.hyp"' "the command line's --max-len-b over --set's: exit $rc, $out"
# a config silent on decode: the model's own decode settings (trained with
# --set decode.*) stay; the config's defaults do not replace them
sed -e '/"decode":/d' -e 's/"save_dir": "run"},/"save_dir": "runlen"}/' -e 's/"max_steps": 40/"max_steps": 8/' \
  -e 's/"valid_every": 40/"valid_every": 8/' "$tmp/tiny.json" > "$tmp/silent.json"
out=$(cd "$tmp" && "$NMT" train --config silent.json --quiet --set decode.beam=1 --set decode.max_len_a=0 \
      --set decode.max_len_b=2 2>&1) || bad "train (silent decode): $out"
"$NMT" translate --model "$tmp/runlen/best.nmt" < "$in" > "$tmp/len-model.hyp" 2>/dev/null
out=$(cd "$tmp" && "$NMT" translate --config silent.json < "$in" 2>&1 > "$tmp/len-config.hyp"); rc=$?
check '[ $rc -eq 0 ] && [ -s "$tmp/len-model.hyp" ] && cmp -s "$tmp/len-model.hyp" "$tmp/len-config.hyp" && awk "NF > 2 { exit 1 }" "$tmp/len-config.hyp"' \
  "--config silent on decode: not the model's decode settings: exit $rc, $out; $(diff "$tmp/len-model.hyp" "$tmp/len-config.hyp" | head -3)"
usage "--set needs --config" --set decode.beam=2
# length limits that allow no token: both 0 is a usage error (as in the
# config); a tiny --max-len-a rounds down to 0 steps, decoded as 1 (it was
# an internal assertion, exit 134)
out=$("$NMT" translate --model "$M" --max-len-a 0 --max-len-b 0 < "$in" 2>&1 > /dev/null); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "max-len-a and --max-len-b are both 0"' "--max-len-a 0 --max-len-b 0: exit $rc, $out"
for beam in 1 3; do
  out=$("$NMT" translate --model "$M" --beam $beam --max-len-a 0.001 --max-len-b 0 < "$in" 2>&1 > "$tmp/tiny-len.hyp"); rc=$?
  check '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/tiny-len.hyp")" -eq 40 ] && awk "NF > 1 { exit 1 }" "$tmp/tiny-len.hyp"' \
    "--max-len-a 0.001 --max-len-b 0 (beam $beam): exit $rc, $out"
done
out=$(cd "$tmp" && "$NMT" translate --config tiny.json --set decode.bean=2 < "$in" 2>&1 > /dev/null); rc=$?
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "decode.bean: unknown key (did you mean decode.beam?)"' "--set of an unknown key: exit $rc, $out"
usage "--threads must be an integer in [0, 1024], got '-1'" --threads -1
for t in 1 2; do
  "$NMT" translate --model "$M" --threads $t < "$in" > "$tmp/threads$t.hyp" 2>/dev/null
  check 'cmp -s "$tmp/base.hyp" "$tmp/threads$t.hyp"' "--threads $t decodes differently"
done
# a model without attention: the options that read it do nothing, and a
# warning says so
sed -e 's/"attention": {"heads": 2}/"attention": {"style": "none"}/' -e 's/"save_dir": "run"/"save_dir": "runnone"/' \
  -e 's/"max_steps": 40/"max_steps": 4/' "$tmp/tiny.json" > "$tmp/none.json"
out=$(cd "$tmp" && "$NMT" train --config none.json --quiet 2>&1) || bad "train (style none): $out"
out=$(head -n 3 "$in" | "$NMT" translate --model "$tmp/runnone/last.nmt" --replace-unk --attention-out "$tmp/none.json.att" 2>&1 > /dev/null); rc=$?
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "has no attention (model.attention.style none), so these do nothing: --attention-out (all weights 0), --replace-unk (unknown words stay)"' \
  "a model without attention, --replace-unk --attention-out: exit $rc, $out"
out=$(head -n 3 "$in" | "$NMT" translate --model "$tmp/runnone/last.nmt" 2>&1 > /dev/null)
check '! printf "%s" "$out" | grep -q "no attention"' "a model without attention warns without attention options: $out"

# 7. --help lists every option
out=$("$NMT" translate --help)
for opt in --model --config --set --threads --max-len-a --max-len-b --beam --nbest --length-penalty --coverage-penalty --batch --maxi-batch --max-src-len --device --gpu \
           --replace-unk --unk-dict --attention-out --attention-svg --progress --no-progress --shortlist --shortlist-frequent --shortlist-per-source \
           --stream --no-stream; do
  case "$out" in *"$opt"*) ok ;; *) bad "translate --help lacks $opt" ;; esac
done

test_end
