#!/usr/bin/env bash
# test_ter_cli.sh: `nmt eval --ter` end to end. Every
# tests/fixtures/ter/cli/NAME.args run must print exactly NAME.out, the
# output of the sacreBLEU 2.6.0 CLI (`sacrebleu REF... -i HYP... -m ... ter`)
# for the same files, written by scripts/sacrebleu_expected.py: TER alone and
# with BLEU and chrF, each --ter-* option, several references, --json,
# several systems, the paired bootstrap and the confidence interval, empty
# hypotheses and references. Then what sacreBLEU cannot be asked for:
# the hypothesis on stdin and gzip input give the same lines, --split-len
# parts equal nmt eval of each part's lines, the paired --json parses, and
# the errors (missing or short files named, exit 1; --ter-* without --ter,
# exit 2). Prints "test_ter_cli: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_ter_cli
cd "$ROOT" || exit 2
FIX=tests/fixtures/ter

# run ARGS...: sets rc, out (stdout, also in $tmp/out), err (stderr)
run() {
  "$NMT" eval "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}

# 1. sacreBLEU's own output for every recorded run
n_cases=0
for args_file in "$FIX"/cli/*.args; do
  name=$(basename "$args_file" .args)
  n_cases=$((n_cases + 1))
  # shellcheck disable=SC2046
  run $(cat "$args_file")
  check '[ "$rc" -eq 0 ]' "$name: exit $rc ($err)"
  if cmp -s "$tmp/out" "$FIX/cli/$name.out"; then ok; else
    bad "$name: output differs from sacreBLEU's"
    diff "$tmp/out" "$FIX/cli/$name.out" | head -n 20
  fi
done
check '[ "$n_cases" -ge 20 ]' "at least 20 recorded sacreBLEU TER runs (found $n_cases)"

# 2. stdin, '-' and gzip give the same lines
"$NMT" eval --ter --ref "$FIX/ref1.txt" <"$FIX/hyp_a.txt" >"$tmp/stdin.out" 2>/dev/null
check 'cmp -s "$tmp/stdin.out" "$FIX/cli/ter_default.out"' "hypothesis on stdin"
gzip -c "$FIX/ref1.txt" >"$tmp/ref1.gz"
gzip -c "$FIX/hyp_a.txt" >"$tmp/hyp_a.gz"
run --ter --ref "$tmp/ref1.gz" --hyp - <"$tmp/hyp_a.gz"
check 'cmp -s "$tmp/out" "$FIX/cli/ter_default.out"' "gzip reference, gzip hypothesis on stdin: $out"
check 'grep -qE "^TER\|nrefs:1\|case:lc\|tok:tercom\|norm:no\|punct:yes\|asian:no\|version:2\.6\.0 = [0-9]+\.[0-9]$" "$FIX/cli/ter_default.out"' \
  "the TER line's format"

# 3. --split-len: each part is nmt eval of that part's lines alone (TER too)
src="$FIX/ref1.txt"
awk 'NF <= 8' "$src" >"$tmp/ref_short.txt"
awk 'NF > 8' "$src" >"$tmp/ref_long.txt"
awk 'NR == FNR { n[FNR] = NF; next } n[FNR] <= 8' "$src" "$FIX/hyp_a.txt" >"$tmp/hyp_short.txt"
awk 'NR == FNR { n[FNR] = NF; next } n[FNR] > 8' "$src" "$FIX/hyp_a.txt" >"$tmp/hyp_long.txt"
score_of() { sed -n "s/^ *\($1\)|[^=]*= /\1 = /p" "$2"; }
"$NMT" eval --chrf --ter --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" >"$tmp/short.out" 2>/dev/null
"$NMT" eval --chrf --ter --ref "$tmp/ref_long.txt" --hyp "$tmp/hyp_long.txt" >"$tmp/long.out" 2>/dev/null
n_short=$(wc -l <"$tmp/ref_short.txt")
run --chrf --ter --ref "$src" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 8
check '[ "$rc" -eq 0 ]' "--split-len with --ter: exit $rc ($err)"
want="short (source <= 8 words): $n_short sentences, $(score_of chrF2 "$tmp/short.out"), $(score_of TER "$tmp/short.out")"
check '[ "$(sed -n 3p "$tmp/out")" = "$want" ]' "short part: got '$(sed -n 3p "$tmp/out")', want '$want'"
want="long (source > 8 words): $((16 - n_short)) sentences, $(score_of chrF2 "$tmp/long.out"), $(score_of TER "$tmp/long.out")"
check '[ "$(sed -n 4p "$tmp/out")" = "$want" ]' "long part: got '$(sed -n 4p "$tmp/out")', want '$want'"
if command -v python3 >/dev/null 2>&1; then
  run --ter --json --ref "$src" --hyp "$FIX/hyp_a.txt" --src "$src" --split-len 8
  "$NMT" eval --ter --json --ref "$tmp/ref_short.txt" --hyp "$tmp/hyp_short.txt" >"$tmp/short.json" 2>/dev/null
  check 'python3 -c "
import json, sys
d, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d[\"name\"] == \"TER\" and d[\"split\"][\"short\"][\"score\"] == s[\"score\"], (d, s)
assert \"verbose_score\" not in d[\"split\"][\"short\"]
" "$tmp/out" "$tmp/short.json"' "--split-len --json with TER"
  # 4. the paired bootstrap as JSON (sacreBLEU cannot print it: float32) parses
  run --bleu --ter --json --bootstrap 50 --ref "$src" --hyp "$FIX/hyp_a.txt" --hyp "$FIX/hyp_b.txt"
  check 'python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert [sorted(x) for x in d] == [[\"BLEU\", \"TER\", \"system\"]] * 2, d
assert d[0][\"TER\"][\"p_value\"] is None and 0 < d[1][\"TER\"][\"p_value\"] <= 1, d
" "$tmp/out"' "paired bootstrap --json with TER parses: $out"
fi

# 5. errors: exit 1 naming the file, exit 2 for usage
run --ter --ref "$tmp/no-such-ref.txt" --hyp "$FIX/hyp_a.txt"
check '[ "$rc" -eq 1 ]' "missing reference: exit $rc"
check 'case "$err" in *no-such-ref.txt*) true ;; *) false ;; esac' "missing reference is named: $err"
run --ter --ref "$FIX/ref1.txt" --hyp "$tmp/no-such-hyp.txt"
check '[ "$rc" -eq 1 ]' "missing hypothesis: exit $rc"
check 'case "$err" in *no-such-hyp.txt*) true ;; *) false ;; esac' "missing hypothesis is named: $err"
head -n 9 "$FIX/hyp_a.txt" >"$tmp/short_hyp.txt"
run --ter --ref "$FIX/ref1.txt" --hyp "$tmp/short_hyp.txt"
check '[ "$rc" -eq 1 ]' "unequal line counts: exit $rc"
check 'case "$err" in *"short_hyp.txt"*9*"ref1.txt"*16*) true ;; *) false ;; esac' \
  "unequal line counts name both files and counts: $err"
run --ter --ref "$FIX/ref1.txt" --ref "$tmp/short_hyp.txt" --hyp "$FIX/hyp_a.txt"
check '[ "$rc" -eq 1 ]' "a second reference shorter: exit $rc"
check 'case "$err" in *short_hyp.txt*) true ;; *) false ;; esac' "the short reference is named: $err"
check '[ -z "$out" ]' "nothing on stdout after an error: $out"
for opt in --ter-normalized --ter-case-sensitive --ter-no-punct --ter-asian-support; do
  run --bleu "$opt" --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
  check '[ "$rc" -eq 2 ]' "$opt without --ter: exit $rc"
  check 'case "$err" in *"add --ter"*) true ;; *) false ;; esac' "$opt without --ter says so: $err"
done
run --ter=1 --ref "$FIX/ref1.txt" --hyp "$FIX/hyp_a.txt"
check '[ "$rc" -eq 2 ]' "--ter=1 is an unknown option: exit $rc"

# 6. --help documents TER and its options
run --help
for opt in --ter --ter-case-sensitive --ter-normalized --ter-no-punct --ter-asian-support; do
  check 'case "$out" in *"$opt "*) true ;; *) false ;; esac' "--help lacks $opt"
done

test_end
