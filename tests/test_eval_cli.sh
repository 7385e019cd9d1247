#!/usr/bin/env bash
# test_eval_cli.sh: `nmt eval` end to end. Every tests/fixtures/bleu/cli/NAME.args
# run must print exactly tests/fixtures/bleu/cli/NAME.out, the output of the
# sacreBLEU 2.6.0 CLI for the same files (scripts/sacrebleu_expected.py wrote
# both); plus stdin input, --json that parses, the paired bootstrap table,
# --help, gzip files and '-' for stdin (the same lines as the plain files; a
# truncated gzip is exit 1 naming it; stdin read twice is exit 2), and the exit
# codes: 1 for line counts that differ (the message names both files and both
# counts) and for missing files, 2 for bad usage. Then
# --split-len (each part's score equals nmt eval on that part's lines alone)
# and, with a tiny model trained here, `nmt eval --model M --src S` equal to
# `nmt translate --model M < S | nmt eval` (BLEU, chrF and TER), with
# decoding options too. TER's own cases are in tests/test_ter_cli.sh.
# Prints "test_eval_cli: N passed, N failed"; exits non-zero on failure.
set -u
cd "$(dirname "$0")/.." || exit 2
NMT="${NMT_BIN:-$PWD/nmt}"
FIX=tests/fixtures/bleu
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1; shift
  if "$@"; then ok; else fail "$what"; fi
}

# run ARGS...: sets rc, out (stdout), err (stderr)
run() {
  "$NMT" eval "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}

expect_rc() { # expect_rc CODE DESCRIPTION
  if [ "$rc" -eq "$1" ]; then ok; else fail "$2: exit $rc, expected $1 (stderr: $err)"; fi
}

expect_err() { # expect_err TEXT DESCRIPTION: stderr contains TEXT
  case "$err" in *"$1"*) ok ;; *) fail "$2: stderr lacks '$1': $err" ;; esac
}

if [ ! -x "$NMT" ]; then
  echo "test_eval_cli: nmt binary not found at $NMT"
  echo "test_eval_cli: 0 passed, 1 failed"
  exit 1
fi

# 1. sacreBLEU's own output for every recorded run
n_cases=0
for args_file in "$FIX"/cli/*.args; do
  name=$(basename "$args_file" .args)
  n_cases=$((n_cases + 1))
  # shellcheck disable=SC2046
  run $(cat "$args_file")
  expect_rc 0 "$name"
  if cmp -s "$tmp/out" "$FIX/cli/$name.out"; then
    ok
  else
    fail "$name: output differs from sacreBLEU's"
    diff "$tmp/out" "$FIX/cli/$name.out" | head -n 20
  fi
done
check "at least 15 recorded sacreBLEU runs (found $n_cases)" [ "$n_cases" -ge 15 ]

# 2. the hypothesis on stdin gives the same line
"$NMT" eval --bleu --ref "$FIX/ref1.txt" <"$FIX/hyp_a.txt" >"$tmp/stdin.out" 2>"$tmp/err"
rc=$?; err=$(cat "$tmp/err")
expect_rc 0 "stdin"
check "stdin output equals sacreBLEU's" cmp -s "$tmp/stdin.out" "$FIX/cli/bleu_default.out"
check "BLEU line format" grep -qE '^BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:2\.6\.0 = [0-9]+\.[0-9] [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ \(BP = [0-9]\.[0-9]{3} ratio = [0-9]\.[0-9]{3} hyp_len = [0-9]+ ref_len = [0-9]+\)$' "$tmp/stdin.out"
run --ref="$FIX/ref1.txt" --hyp="$FIX/hyp_a.txt"
check "--opt=value form" cmp -s "$tmp/out" "$FIX/cli/bleu_default.out"

# 2b. gzip input (by content) and '-' for stdin score as the plain files do.
# The text is made here: a BOM, "\r\n", a lone "\r", a last line without
# "\n" and one ending in "\r", and enough lines (4000) that a file is more
# than one buffer of the reader, compressed or not.
{ printf '\357\273\277the cat sat on the mat .\r\na dog runs in\rthe park\n'
  awk 'BEGIN { for (i = 1; i <= 4000; i++) printf "line %d has words %d and %d .\r\n", i, i % 7, i % 13 }'
  printf 'no newline at the end'; } >"$tmp/gz_ref.txt"
{ printf 'the cat sat on a mat .\na dog is running in\rthe park\r\n'
  awk 'BEGIN { for (i = 1; i <= 4000; i++) printf "line %d has the words %d and %d\n", i, i % 5, i % 13 }'
  printf 'no newline at the end\r'; } >"$tmp/gz_hyp.txt"
gzip -c "$tmp/gz_ref.txt" >"$tmp/gz_ref.gz"
gzip -c "$tmp/gz_hyp.txt" >"$tmp/gz_hyp.gz"
# two gzip members, one after the other (as `cat a.gz b.gz` makes)
{ head -n 2000 "$tmp/gz_hyp.txt" | gzip -c; tail -n +2001 "$tmp/gz_hyp.txt" | gzip -c; } >"$tmp/gz_hyp2.gz"
run --bleu --chrf --ref "$tmp/gz_ref.txt" --hyp "$tmp/gz_hyp.txt"
expect_rc 0 "plain text for the gzip runs"
cp "$tmp/out" "$tmp/plain.out"
case "$out" in *"BLEU|"*" = "*"chrF2|"*" = "*) ok ;; *) fail "plain text for the gzip runs: $out" ;; esac
same_as_plain() { # same_as_plain DESCRIPTION: the last run printed plain.out with exit 0
  if [ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$tmp/plain.out"; then ok
  else fail "$1: exit $rc, output differs from the plain files' (stderr: $err)"; diff "$tmp/out" "$tmp/plain.out" | head -n 6; fi
}
run --bleu --chrf --ref "$tmp/gz_ref.gz" --hyp "$tmp/gz_hyp.gz"
same_as_plain "gzip reference and hypothesis"
run --bleu --chrf --ref "$tmp/gz_ref.gz" --hyp "$tmp/gz_hyp.txt"
same_as_plain "gzip reference"
cp "$tmp/gz_hyp.gz" "$tmp/gz_hyp_noext"
run --bleu --chrf --ref "$tmp/gz_ref.txt" --hyp "$tmp/gz_hyp_noext"
same_as_plain "gzip recognised by content, not by name"
run --bleu --chrf --ref "$tmp/gz_ref.txt" --hyp "$tmp/gz_hyp2.gz"
same_as_plain "two gzip members"
run --bleu --chrf --ref "$tmp/gz_ref.txt" <"$tmp/gz_hyp.gz"
same_as_plain "gzip hypothesis on stdin"
run --bleu --chrf --ref "$tmp/gz_ref.txt" --hyp - <"$tmp/gz_hyp.txt"
same_as_plain "--hyp -"
run --bleu --chrf --ref - --hyp "$tmp/gz_hyp.txt" <"$tmp/gz_ref.gz"
same_as_plain "--ref - (gzip on stdin)"
run --bleu --chrf --ref "$tmp/gz_ref.txt" --hyp - --hyp "$tmp/gz_hyp.gz" <"$tmp/gz_hyp.txt"
expect_rc 0 "--hyp - among several systems"
case "$out" in *"<stdin>"*"$tmp/gz_hyp.gz"*) ok ;; *) fail "--hyp - is named <stdin> in the table: $out" ;; esac
# a truncated or corrupt gzip file is an error naming it, never a short text
head -c 30 "$tmp/gz_ref.gz" >"$tmp/trunc_ref.gz"
run --bleu --ref "$tmp/trunc_ref.gz" --hyp "$tmp/gz_hyp.txt"
expect_rc 1 "truncated gzip reference"
expect_err "trunc_ref.gz: truncated gzip file" "truncated gzip reference is named"
head -c "$(( $(wc -c <"$tmp/gz_hyp.gz") - 4 ))" "$tmp/gz_hyp.gz" >"$tmp/trunc_hyp.gz"
run --bleu --ref "$tmp/gz_ref.txt" --hyp "$tmp/trunc_hyp.gz"
expect_rc 1 "gzip hypothesis missing its last 4 bytes"
expect_err "trunc_hyp.gz: truncated gzip file" "truncated gzip hypothesis is named"
run --bleu --ref "$tmp/gz_ref.txt" <"$tmp/trunc_hyp.gz"
expect_rc 1 "truncated gzip on stdin"
expect_err "<stdin>: truncated gzip file" "truncated gzip on stdin is named <stdin>"
{ cat "$tmp/gz_hyp.gz"; echo junk; } >"$tmp/junk_hyp.gz"
run --bleu --ref "$tmp/gz_ref.txt" --hyp "$tmp/junk_hyp.gz"
expect_rc 1 "garbage after the gzip data"
expect_err "junk_hyp.gz: trailing garbage after gzip data" "garbage after the gzip data is named"
# stdin can be read once
run --bleu --ref - --hyp - <"$tmp/gz_hyp.txt"
expect_rc 2 "--ref - --hyp -"
expect_err "--hyp - and --ref - would both read standard input" "--ref - --hyp - says why"
run --bleu --ref - <"$tmp/gz_hyp.txt"
expect_rc 2 "--ref - with the hypothesis on stdin"
expect_err "would both read standard input" "--ref - without --hyp says why"
run --bleu --ref "$tmp/gz_ref.txt" --hyp - --hyp - <"$tmp/gz_hyp.txt"
expect_rc 2 "--hyp - twice"

# 3. --json parses
if command -v python3 >/dev/null 2>&1; then
  for args in "--json --ref $FIX/ref1.txt --hyp $FIX/hyp_a.txt" \
              "--json --bleu --chrf --lowercase --ref $FIX/ref1.txt --ref $FIX/ref2.txt --hyp $FIX/hyp_b.txt" \
              "--json --bleu --chrf --bootstrap 50 --ref $FIX/ref1.txt --hyp $FIX/hyp_a.txt --hyp $FIX/hyp_b.txt" \
              "--json --chrf --ref $FIX/ref1.txt --hyp $FIX/hyp_a.txt --hyp $FIX/hyp_b.txt"; do
    # shellcheck disable=SC2086
    run $args
    expect_rc 0 "json: $args"
    check "json parses: $args" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out"
  done
  run --json --bleu --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  check "json fields" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [x["name"] for x in d] == ["BLEU", "chrF2"], d
assert d[0]["tok"] == "13a" and d[0]["version"] == "2.6.0" and "verbose_score" in d[0]
assert d[1]["nc"] == "6" and d[1]["space"] == "no"
' "$tmp/out"
else
  echo "SKIP test_eval_cli json parsing: python3 not found"
fi

# 4. paired bootstrap with two systems prints its table; the seed is honoured
run --bleu --chrf --bootstrap 100 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --hyp "$FIX/hyp_b.txt"
expect_rc 0 "bootstrap"
case "$out" in
  *"(p = "*"Paired bootstrap resampling test with 100 resampling trials"*) ok ;;
  *) fail "bootstrap table: $out" ;;
esac
case "$out" in
  *"BLEU (μ ± 95% CI)"*"Baseline: $FIX/hyp_a.txt"*"$FIX/hyp_b.txt"*) ok ;;
  *) fail "bootstrap table header/baseline: $out" ;;
esac
case "$out" in
  *"nrefs:1|bs:100|seed:12345|case:mixed"*) ok ;;
  *) fail "bootstrap signature: $out" ;;
esac
first=$out
run --bleu --chrf --bootstrap 100 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --hyp "$FIX/hyp_b.txt"
check "bootstrap is reproducible" [ "$out" = "$first" ]
run --bleu --bootstrap 100 --seed 99 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --hyp "$FIX/hyp_b.txt"
case "$out" in *"seed:99|"*) ok ;; *) fail "--seed in the signature: $out" ;; esac

# 5. runtime failures: exit 1
head -n 5 "$FIX/hyp_a.txt" >"$tmp/short.txt"
run --bleu --ref "$FIX/ref1.txt" --hyp "$tmp/short.txt"
expect_rc 1 "line count mismatch"
expect_err "5" "mismatch message names the hypothesis count"
expect_err "12" "mismatch message names the reference count"
expect_err "short.txt" "mismatch message names the hypothesis file"
expect_err "ref1.txt" "mismatch message names the reference file"
run --chrf --ref "$FIX/ref1.txt" --ref "$tmp/short.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 1 "second reference shorter"
expect_err "short.txt" "mismatch names the short reference"
run --bleu --ref "$FIX/ref1.txt" --hyp "$tmp/does-not-exist.txt"
expect_rc 1 "missing hypothesis"
expect_err "does-not-exist.txt" "missing hypothesis is named"
run --bleu --ref "$tmp/no-ref.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 1 "missing reference"
expect_err "no-ref.txt" "missing reference is named"
: >"$tmp/empty.txt"
run --bleu --ref "$tmp/empty.txt" --hyp "$tmp/empty.txt"
expect_rc 1 "no lines at all"

# 6. bad usage: exit 2
run --bleu --hyp "$FIX/hyp_a.txt"
expect_rc 2 "no --ref"
run --bleu --frobnicate --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "unknown option"
expect_err "--frobnicate" "unknown option is named"
run --tokenize intl --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "bad --tokenize value"
run --bootstrap abc --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "bad --bootstrap value"
run --bootstrap 0 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "--bootstrap 0"
run --seed -3 --bootstrap 10 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "negative --seed"
run --seed 18446744073709551616 --bootstrap 10 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "--seed of 2^64"
case "$err" in *"--seed needs an integer in [0, 18446744073709551615]"*) ok ;; *) fail "--seed 2^64: the message should give the range: $err" ;; esac
# 100 lines ending in a tokenized period warn, as sacreBLEU does, also when
# Unicode whitespace follows it (sacreBLEU strips every Python whitespace
# character from a line's end; nmt stripped space, tab and CR only)
python3 -c "import sys; sys.stdout.write('a b .\u00a0\n' * int(sys.argv[1]))" 100 > "$tmp/tok100.txt"
python3 -c "import sys; sys.stdout.write('a b .\u00a0\n' * int(sys.argv[1]))" 99 > "$tmp/tok99.txt"
run --ref "$tmp/tok100.txt" --hyp "$tmp/tok100.txt"
case "$err" in *"100 lines end in a tokenized period"*) ok ;; *) fail "100 lines ending ' .' and a no-break space should warn: $err" ;; esac
run --ref "$tmp/tok99.txt" --hyp "$tmp/tok99.txt"
case "$err" in *"tokenized period"*) fail "99 lines should not warn: $err" ;; *) ok ;; esac
# a NUL byte inside a line: refused naming file, line and byte (a C string
# ended there, so nmt scored less than sacreBLEU reads: 100.0 against 30.2)
printf 'a b c d\0 e f\n' > "$tmp/nul.txt"
printf 'a b c d\n' > "$tmp/plain.txt"
run --bleu --chrf --ref "$tmp/plain.txt" --hyp "$tmp/nul.txt"
expect_rc 1 "a NUL byte in a hypothesis"
case "$err" in *"nul.txt:1: NUL byte at byte 8"*) ok ;; *) fail "NUL in a hypothesis: the message should name file, line and byte: $err" ;; esac
run --bleu --ref "$tmp/nul.txt" --hyp "$tmp/plain.txt"
expect_rc 1 "a NUL byte in a reference"
run --ref
expect_rc 2 "--ref without a file"
run --ref "$FIX/ref1.txt" "$FIX/hyp_a.txt"
expect_rc 2 "stray positional argument"
# chrF++'s word order: needs --chrf, 0..4 (nmt's limit; sacreBLEU has none)
for opt in --chrf-word-order -cw; do
  run --bleu "$opt" 2 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  expect_rc 2 "$opt without --chrf"
  expect_err "$opt sets up chrF: add --chrf" "$opt without --chrf is named"
done
for bad in 5 -1 abc 2.0 ""; do
  run --chrf --chrf-word-order "$bad" --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  expect_rc 2 "--chrf-word-order '$bad'"
  expect_err "--chrf-word-order must be an integer in [0, 4], got '$bad'" "--chrf-word-order '$bad' names option, range and value"
done
run --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --chrf-word-order
expect_rc 2 "--chrf-word-order without a value"
expect_err "--chrf-word-order" "--chrf-word-order without a value is named"
# the other spellings print the recorded chrF++ run; word order 0 is plain chrF2
cli_args() { sed "s|--chrf-word-order 2|$1|" "$FIX/cli/chrfpp.args"; }
for form in "--chrf-word-order=2" "-cw 2" "-cw=2"; do
  # shellcheck disable=SC2046
  "$NMT" eval $(cli_args "$form") > "$tmp/out" 2>/dev/null
  check "chrF++ spelled '$form' prints sacreBLEU's output" cmp -s "$tmp/out" "$FIX/cli/chrfpp.out"
done
# shellcheck disable=SC2046
"$NMT" eval --chrf-word-order 0 $(cat "$FIX/cli/chrf_only.args") > "$tmp/out" 2>/dev/null
check "--chrf-word-order 0 is chrF2, byte for byte" cmp -s "$tmp/out" "$FIX/cli/chrf_only.out"
# chrF's other options (sacreBLEU's names): each needs --chrf, is named with
# its range when its value is bad, and may be spelled every way
for opt in "--chrf-char-order 4" "-cc=4" "--chrf-beta 3" "--chrf-whitespace" "--chrf-eps-smoothing"; do
  # shellcheck disable=SC2086
  run --bleu $opt --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  expect_rc 2 "$opt without --chrf"
  name=${opt%% *}
  expect_err "${name%%=*} sets up chrF: add --chrf" "$opt without --chrf is named"
done
for bad in 11 -1 abc 2.5 ""; do
  for opt in --chrf-char-order -cc; do
    run --chrf "$opt" "$bad" --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
    expect_rc 2 "$opt '$bad'"
    expect_err "$opt must be an integer in [0, 10], got '$bad'" "$opt '$bad' names option, range and value"
  done
done
for bad in -1 1001 2.5 x ""; do
  run --chrf --chrf-beta "$bad" --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  expect_rc 2 "--chrf-beta '$bad'"
  expect_err "--chrf-beta must be an integer in [0, 1000], got '$bad'" "--chrf-beta '$bad' names option, range and value"
done
for opt in --chrf-char-order -cc --chrf-beta; do
  run --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" "$opt"
  expect_rc 2 "$opt without a value"
  expect_err "$opt" "$opt without a value is named"
done
run --chrf --chrf-whitespace=1 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
expect_rc 2 "--chrf-whitespace takes no value"
expect_err "unknown option '--chrf-whitespace=1'" "--chrf-whitespace=1 is named"
# character order 0 counts words alone: it needs a word order (sacreBLEU fails with IndexError)
for args in "-cc 0" "--chrf-char-order 0 -cw 0" "-cc 0 --chrf-eps-smoothing"; do
  # shellcheck disable=SC2086
  run --chrf $args --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  expect_rc 2 "chrF $args"
  expect_err "--chrf-char-order 0 (-cc 0) needs --chrf-word-order (-cw) 1 or more" "chrF $args says why"
done
# the recorded runs spelled otherwise; the defaults given explicitly are chrF2 byte for byte
respell() { sed "s|$2|$3|" "$FIX/cli/$1.args"; }
for form in "--chrf-char-order=4" "-cc 4" "-cc=4" "-cc 5 -cc 4"; do
  # shellcheck disable=SC2046
  "$NMT" eval $(respell chrf_cc4 "--chrf-char-order 4" "$form") > "$tmp/out" 2>/dev/null
  check "character order 4 spelled '$form' prints sacreBLEU's output" cmp -s "$tmp/out" "$FIX/cli/chrf_cc4.out"
done
for form in "--chrf-beta=3" "--chrf-beta 03" "--chrf-beta +3"; do
  # shellcheck disable=SC2046
  "$NMT" eval $(respell chrf_beta3 "--chrf-beta 3" "$form") > "$tmp/out" 2>/dev/null
  check "beta 3 spelled '$form' prints sacreBLEU's output" cmp -s "$tmp/out" "$FIX/cli/chrf_beta3.out"
done
# shellcheck disable=SC2046
"$NMT" eval -cc 6 --chrf-beta 2 -cw 0 $(cat "$FIX/cli/chrf_only.args") > "$tmp/out" 2>/dev/null
check "-cc 6 --chrf-beta 2 -cw 0 is chrF2, byte for byte" cmp -s "$tmp/out" "$FIX/cli/chrf_only.out"
# whitespace at a line's end is cut as sacreBLEU's line.rstrip() cuts it
# (it shows with --chrf-whitespace): "\r\n", spaces, tabs, a no-break space
# and an ideographic space added to every hypothesis line, on stdin
sed 's/$/ \t\xc2\xa0\xe3\x80\x80 \r/' "$FIX/hyp_space.txt" > "$tmp/space_hyp.txt"
check "the padded hypothesis differs from the file" sh -c "! cmp -s \"\$1\" \"\$2\"" _ "$tmp/space_hyp.txt" "$FIX/hyp_space.txt"
run --chrf --chrf-whitespace --ref "$FIX/ref_space.txt" < "$tmp/space_hyp.txt"
check "--chrf-whitespace: whitespace at line ends is cut (as sacreBLEU's rstrip)" cmp -s "$tmp/out" "$FIX/cli/chrf_space.out"
sed 's/$/ \t /' "$FIX/ref_space.txt" | gzip -c > "$tmp/space_ref.gz"
run --chrf --chrf-whitespace --ref "$tmp/space_ref.gz" --hyp "$tmp/space_hyp.txt"
check "--chrf-whitespace: a gzip reference's line ends are cut too" cmp -s "$tmp/out" "$FIX/cli/chrf_space.out"

# 7. --help documents every option
run --help
expect_rc 0 "--help"
for opt in --bleu --chrf --chrf-word-order -cw --chrf-char-order -cc --chrf-beta --chrf-whitespace --chrf-eps-smoothing \
           --ter --ter-normalized --ref --hyp --lowercase --tokenize --json --bootstrap --seed \
           --src --split-len --model --beam --batch --length-penalty --device --progress; do
  case "$out" in *"$opt"*) ok ;; *) fail "--help lacks $opt" ;; esac
done
case "$out" in *"gzip"*"'-' is stdin"*) ok ;; *) fail "--help lacks gzip and '-': $out" ;; esac

# 8. --split-len: short and long source sentences scored apart
# The "source" is ref1.txt itself: its lines have 9 11 7 8 6 7 6 6 9 6 2 6
# words, so --split-len 7 puts lines 1, 2, 4 and 9 in the long part.
src="$FIX/ref1.txt"
awk 'NF <= 7' "$src" > "$tmp/ref_short.txt"
awk 'NF > 7' "$src" > "$tmp/ref_long.txt"
awk 'NR == FNR { n[FNR] = NF; next } n[FNR] <= 7' "$src" "$FIX/hyp_a.txt" > "$tmp/hyp_short.txt"
awk 'NR == FNR { n[FNR] = NF; next } n[FNR] > 7' "$src" "$FIX/hyp_a.txt" > "$tmp/hyp_long.txt"
check "the split fixture has 8 short and 4 long lines" \
  [ "$(wc -l < "$tmp/ref_short.txt")" -eq 8 -a "$(wc -l < "$tmp/ref_long.txt")" -eq 4 ]
# "NAME = SCORE VERBOSE" of an nmt eval line, e.g. "BLEU = 34.0 66.0/40.8/... (BP = ...)"
score_of() { sed -n "s/^ *\($1\)|[^=]*= /\1 = /p" "$2"; }
"$NMT" eval --bleu --chrf --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" > "$tmp/short.out" 2>/dev/null
"$NMT" eval --bleu --chrf --ref "$tmp/ref_long.txt" --hyp "$tmp/hyp_long.txt" > "$tmp/long.out" 2>/dev/null
run --bleu --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 7
expect_rc 0 "--split-len"
"$NMT" eval --bleu --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" > "$tmp/whole.out" 2>/dev/null
check "--split-len keeps the whole-corpus lines first" [ "$(head -n 2 "$tmp/out")" = "$(cat "$tmp/whole.out")" ]
want_short="short (source <= 7 words): 8 sentences, $(score_of BLEU "$tmp/short.out"), $(score_of chrF2 "$tmp/short.out")"
want_long="long (source > 7 words): 4 sentences, $(score_of BLEU "$tmp/long.out"), $(score_of chrF2 "$tmp/long.out")"
check "short part = eval of the short lines alone (got: $(sed -n 3p "$tmp/out"), want: $want_short)" \
  [ "$(sed -n 3p "$tmp/out")" = "$want_short" ]
check "long part = eval of the long lines alone (got: $(sed -n 4p "$tmp/out"), want: $want_long)" \
  [ "$(sed -n 4p "$tmp/out")" = "$want_long" ]
check "--split-len adds exactly two lines" [ "$(wc -l < "$tmp/out")" -eq 4 ]
"$NMT" eval --chrf -cw 2 --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" > "$tmp/short_pp.out" 2>/dev/null
run --chrf --chrf-word-order 2 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 7
want_short="short (source <= 7 words): 8 sentences, $(score_of 'chrF2++' "$tmp/short_pp.out")"
check "--split-len with chrF++: the short part is named chrF2++ and scored alone (got: $(sed -n 2p "$tmp/out"), want: $want_short)" \
  [ "$(sed -n 2p "$tmp/out")" = "$want_short" ]
# with chrF's other options: named chrF3, the part scored alone with them
"$NMT" eval --chrf --chrf-beta 3 -cc 4 --chrf-eps-smoothing --chrf-whitespace \
  --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" > "$tmp/short_opt.out" 2>/dev/null
run --chrf --chrf-beta 3 -cc 4 --chrf-eps-smoothing --chrf-whitespace --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" \
  --src "$src" --split-len 7
want_short="short (source <= 7 words): 8 sentences, $(score_of 'chrF3' "$tmp/short_opt.out")"
check "--split-len with chrF's options: named chrF3 and scored alone (got: $(sed -n 2p "$tmp/out"), want: $want_short)" \
  [ "$(sed -n 2p "$tmp/out")" = "$want_short" ]
case "$want_short" in *"chrF3 = "[0-9]*) ok ;; *) fail "the chrF3 part has no score: $want_short" ;; esac
run --bleu --ref "$FIX/ref1.txt" --src "$src" --split-len=100 < "$FIX/hyp_a.txt"
expect_rc 0 "--split-len with the hypothesis on stdin"
case "$out" in *"short (source <= 100 words): 12 sentences, BLEU = "*"long (source > 100 words): 0 sentences") ok ;;
  *) fail "an empty part: $out" ;; esac
if command -v python3 >/dev/null 2>&1; then
  run --json --bleu --chrf --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 7
  expect_rc 0 "--split-len --json"
  "$NMT" eval --json --bleu --chrf --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" > "$tmp/short.json" 2>/dev/null
  "$NMT" eval --json --bleu --chrf --ref "$tmp/ref_long.txt" --hyp "$tmp/hyp_long.txt" > "$tmp/long.json" 2>/dev/null
  check "--split-len --json: parts, counts and scores" python3 -c '
import json, sys
d, s, l = (json.load(open(f)) for f in sys.argv[1:4])
for m in range(2):
    sp = d[m]["split"]
    assert sp["max_words"] == 7, sp
    assert sp["short"]["sentences"] == 8 and sp["long"]["sentences"] == 4, sp
    assert sp["short"]["score"] == s[m]["score"] and sp["long"]["score"] == l[m]["score"], (sp, s[m], l[m])
assert d[0]["split"]["short"]["verbose_score"] == s[0]["verbose_score"]
' "$tmp/out" "$tmp/short.json" "$tmp/long.json"
  run --json --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 0
  check "--split-len 0 --json: an empty part scores null" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["split"]["short"] == {"sentences": 0, "score": None}, d["split"]
assert d["split"]["long"]["sentences"] == 12, d["split"]
' "$tmp/out"
fi
# errors
head -n 11 "$src" > "$tmp/src11.txt"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$tmp/src11.txt" --split-len 7
expect_rc 1 "--src shorter than the hypothesis"
expect_err "src11.txt" "--src mismatch names the source"
expect_err "11 lines" "--src mismatch names the source count"
expect_err "hyp_a.txt' has 12 lines" "--src mismatch names the hypothesis and its count"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$tmp/no-src.txt" --split-len 7
expect_rc 1 "missing --src"
expect_err "no-src.txt" "missing --src is named"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --split-len 7
expect_rc 2 "--split-len without --src"
expect_err "--split-len needs --src" "--split-len without --src says so"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len -1
expect_rc 2 "--split-len -1"
expect_err "--split-len must be an integer >= 0, got '-1'" "bad --split-len is named"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len x
expect_rc 2 "--split-len x"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --hyp "$FIX/hyp_b.txt" --src "$src" --split-len 7
expect_rc 2 "--split-len with two systems"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --src "$src"
expect_rc 2 "--src without --model or --split-len"
run --bleu --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt" --beam 4
expect_rc 2 "a decoding option without --model"
expect_err "need --model" "a decoding option without --model says so"

# 9. --model: translate and score in one go, the same as translate | eval
"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 40 --seed 11 > /dev/null 2>&1 || fail "demo-corpus"
cat > "$tmp/tiny.json" <<JSON
{
  "data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
           "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
           "tokenizer": "word", "max_len": 40, "cache_dir": "cache"},
  "model": {"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1},
  "train": {"optimizer": "adam", "lr": 0.003, "batch_sentences": 32, "max_steps": 40,
            "valid_every": 40, "seed": 3, "threads": 1, "save_dir": "run"},
  "decode": {"beam": 1, "batch": 8}
}
JSON
"$NMT" train --config "$tmp/tiny.json" --quiet > "$tmp/train.log" 2>&1 || fail "train: $(tail -n 3 "$tmp/train.log")"
M="$tmp/run/best.nmt"
S="$tmp/data/test.src"
R="$tmp/data/test.tgt"
# pipe ARGS...: nmt translate ARGS < S | nmt eval METRIC-ARGS, into $tmp/pipe.out
pipe_eval() { # pipe_eval "TRANSLATE ARGS" EVAL ARGS...
  local targs=$1
  shift
  # shellcheck disable=SC2086
  "$NMT" translate $targs < "$S" 2>/dev/null | "$NMT" eval "$@" > "$tmp/pipe.out" 2>/dev/null
}
for dec in "" "--beam 2 --batch 7" "--beam 3 --length-penalty 0.8 --coverage-penalty 0.2" "--batch 1 --max-src-len 5"; do
  pipe_eval "--model $M $dec" --bleu --chrf --ter --ref "$R"
  # shellcheck disable=SC2086
  run --bleu --chrf --ter --model "$M" --src "$S" --ref "$R" $dec
  expect_rc 0 "--model $dec"
  if cmp -s "$tmp/out" "$tmp/pipe.out"; then ok; else
    fail "eval --model $dec differs from translate | eval:"; diff "$tmp/out" "$tmp/pipe.out" | head -n 6
  fi
  check "eval --model $dec prints scores" grep -q '^ *BLEU|nrefs:1' "$tmp/out"
  check "eval --model $dec prints TER" grep -q '^ *TER|nrefs:1|case:lc|tok:tercom' "$tmp/out"
done
check "--beam reaches the decoder (beam 1 and beam 3 translations differ)" \
  sh -c "! cmp -s \"\$1\" \"\$2\"" _ <("$NMT" translate --model "$M" < "$S" 2>/dev/null) \
                                       <("$NMT" translate --model "$M" --beam 3 --length-penalty 0.8 --coverage-penalty 0.2 < "$S" 2>/dev/null)
pipe_eval "--model $M" --chrf --chrf-whitespace --chrf-eps-smoothing -cw 2 --chrf-beta 1 --ref "$R"
run --chrf --chrf-whitespace --chrf-eps-smoothing -cw 2 --chrf-beta 1 --model "$M" --src "$S" --ref "$R"
check "--model with chrF's options equals translate | eval" cmp -s "$tmp/out" "$tmp/pipe.out"
check "--model with chrF's options prints chrF1++" grep -q '^chrF1++|nrefs:1|case:mixed|eff:no|nc:6|nw:2|space:yes' "$tmp/out"
pipe_eval "--model $M --model $M --beam 2" --bleu --json --ref "$R"
run --bleu --json --model "$M" --model="$M" --beam=2 --src "$S" --ref "$R"
check "an ensemble with --json equals translate | eval" cmp -s "$tmp/out" "$tmp/pipe.out"
# with --split-len: the translation is split by the source's word counts
"$NMT" translate --model "$M" < "$S" > "$tmp/model.hyp" 2>/dev/null
run --bleu --ref "$R" --hyp "$tmp/model.hyp" --src "$S" --split-len 12
first=$out
run --bleu --ref "$R" --model "$M" --src "$S" --split-len 12
expect_rc 0 "--model --split-len"
check "--model --split-len equals --hyp --split-len" [ "$out" = "$first" ]
n_short=$(awk 'NF <= 12' "$S" | wc -l)
case "$out" in *"short (source <= 12 words): $n_short sentences"*"long (source > 12 words): $((40 - n_short)) sentences"*) ok ;;
  *) fail "--model --split-len counts (want $n_short short): $out" ;; esac
# progress goes to stderr only, and only when asked for (stderr is a file here)
run --bleu --model "$M" --src "$S" --ref "$R"
case "$err" in *"sentences/s"*) fail "progress line although stderr is not a terminal: $err" ;; *) ok ;; esac
run --bleu --model "$M" --src "$S" --ref "$R" --progress
case "$err" in *"translated 40 lines"*"sentences/s"*) ok ;; *) fail "--progress in eval: $err" ;; esac
check "--progress leaves stdout alone" cmp -s "$tmp/out" <(pipe_eval "--model $M" --bleu --ref "$R"; cat "$tmp/pipe.out")
# errors
head -n 39 "$S" > "$tmp/src39.txt"
run --bleu --model "$M" --src "$tmp/src39.txt" --ref "$R"
expect_rc 1 "--src and --ref line counts differ"
expect_err "src39.txt' (--src) has 39 lines, reference" "the --src/--ref mismatch names both and the counts"
expect_err "has 40 lines" "the --src/--ref mismatch names the reference count"
run --bleu --model "$tmp/nope.nmt" --src "$S" --ref "$R"
expect_rc 1 "missing model"
expect_err "nope.nmt" "the missing model is named"
run --bleu --model "$M" --ref "$R"
expect_rc 2 "--model without --src"
expect_err "--model needs --src" "--model without --src says so"
run --bleu --model "$M" --src "$S" --ref "$R" --hyp "$tmp/model.hyp"
expect_rc 2 "--model with --hyp"
run --bleu --model "$M" --src - --ref "$R" <"$S"
expect_rc 2 "--model with --src -"
expect_err "--src - with --model: the source is read twice" "--model with --src - says why"
run --bleu --model "$M" --src "$S" --ref - <"$R"
check "--model with --ref - equals the files (exit $rc)" cmp -s "$tmp/out" <(pipe_eval "--model $M" --bleu --ref "$R"; cat "$tmp/pipe.out")
run --bleu --model "$M" --src "$S" --ref "$R" --nbest 2
expect_rc 2 "--model with --nbest 2"
run --bleu --model "$M" --src "$S" --ref "$R" --beam 0
expect_rc 2 "--beam 0"
expect_err "--beam must be an integer in [1, 1000], got '0'" "--beam 0 is named"
run --bleu --model "$M" --src "$S" --ref "$R" --device tpu
expect_rc 2 "--device tpu"
expect_err "--device must be auto, cpu or cuda" "--device tpu is named"

echo "test_eval_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
