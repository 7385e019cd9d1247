#!/usr/bin/env bash
# test_eval_cli.sh: `nmt eval` end to end. Every tests/fixtures/bleu/cli/NAME.args
# run must print exactly tests/fixtures/bleu/cli/NAME.out, the output of the
# sacreBLEU 2.6.0 CLI for the same files (scripts/sacrebleu_expected.py wrote
# both); plus stdin input, --json that parses, the paired bootstrap table,
# --help, and the exit codes: 1 for line counts that differ (the message names
# both files and both counts) and for missing files, 2 for bad usage.
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
run --ref
expect_rc 2 "--ref without a file"
run --ref "$FIX/ref1.txt" "$FIX/hyp_a.txt"
expect_rc 2 "stray positional argument"

# 7. --help documents every option
run --help
expect_rc 0 "--help"
for opt in --bleu --chrf --ref --hyp --lowercase --tokenize --json --bootstrap --seed; do
  case "$out" in *"$opt"*) ok ;; *) fail "--help lacks $opt" ;; esac
done

echo "test_eval_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
