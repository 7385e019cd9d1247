#!/usr/bin/env bash
# test_ablate.sh: scripts/ablate.sh on a tiny generated corpus: a few
# variants for a budget of 30 updates and a broken one (an invalid key
# value). The table has one row per variant, a number in every column of
# the variants that ran, "failed" with the reason for the broken one, a
# variant with the same attention settings as another reuses its row; the
# SVG chart is well-formed XML; the script exits 1 because of the broken
# variant, 0 without it ("not reached" for an unreachable perplexity), 2 on
# bad usage. A few seconds on 2 cores.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_ablate
ABLATE=$ROOT/scripts/ablate.sh

"$NMT" demo-corpus --out "$tmp/data" --train 1500 --valid 60 --test 60 --seed 3 --max-words 14 > /dev/null 2>&1 ||
  bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.0}' \
  '{"lr": 0.005, "batch_sentences": 32, "seed": 1, "threads": 1, "save_dir": "run"}' \
  '{"beam": 2, "batch": 32}'
# short/long split at 6 words: both parts hold sentences (3..14 words)
n_short=$(awk 'NF <= 6' "$tmp/data/test.src" | wc -l)
check '[ "$n_short" -gt 0 ] && [ "$n_short" -lt 60 ]' "the split at 6 words leaves a part empty ($n_short short)"

# 1. three variants, heads-1 (the same settings as luong-general), a broken one
out=$(NMT_BIN="$NMT" bash "$ABLATE" --config "$tmp/tiny.json" --out "$tmp/abl" --quick --threads 1 \
  --split 6 --target-ppl 1e9 --variants none,luong-general,bahdanau-additive,heads-1 \
  --variant 'broken:model.attention.score=bogus' 2>&1)
rc=$?
check '[ $rc -eq 1 ]' "a broken variant must make the script exit 1, got $rc: $(printf '%s' "$out" | tail -3)"
md=$tmp/abl/ablation.md
check "[ -s '$md' ]" "ablation.md missing"
rows() { grep -E "^\| $1 \|" "$md"; }
for v in none luong-general bahdanau-additive heads-1 broken; do
  check "[ \$(rows $v | wc -l) -eq 1 ]" "expected one table row for $v"
done
# every column of a variant that ran holds a number (status last)
for v in none luong-general bahdanau-additive heads-1; do
  cells=$(rows "$v" | awk -F'|' '{ for (i = 3; i < NF - 1; i++) printf "%s\n", $i }' | sed 's/^ *//; s/ *$//')
  n=$(printf '%s\n' "$cells" | grep -c .)
  nums=$(printf '%s\n' "$cells" | grep -cE '^-?[0-9]+(\.[0-9]+)?$')
  check '[ "$n" -eq 8 ] && [ "$nums" -eq 8 ]' "$v: expected 8 numeric cells, got $nums of $n: $(rows "$v")"
done
# steps to ppl <= 1e9: the first validation (every 5 updates in --quick)
check '[ "$(rows none | awk -F"|" "{ gsub(/ /, \"\", \$7); print \$7 }")" = 5 ]' "steps to ppl: $(rows none)"
check 'rows none | grep -q "| ok |$"' "none should be ok: $(rows none)"
check 'rows heads-1 | grep -q "same attention settings as luong-general"' "heads-1 should reuse luong-general: $(rows heads-1)"
check '[ "$(rows heads-1 | cut -d"|" -f3-10)" = "$(rows luong-general | cut -d"|" -f3-10)" ]' "heads-1 and luong-general rows differ"
check '[ ! -d "$tmp/abl/heads-1" ]' "heads-1 was trained although reused"
check 'rows broken | grep -q "failed: invalid settings: .*bogus"' "broken row should say why: $(rows broken)"
check 'printf "%s" "$out" | grep -q "broken: FAILED"' "the failure is not reported on stderr"
# the variants that ran have their runs
for v in none luong-general bahdanau-additive; do
  check "[ -s '$tmp/abl/$v/best.nmt' ] && [ -s '$tmp/abl/$v/train.csv' ] && [ \$(wc -l < '$tmp/abl/$v/test.hyp') -eq 60 ]" "$v: run files missing"
done
check 'grep -q "^Signature: .BLEU|nrefs:1|" "$md"' "no sacreBLEU signature in ablation.md"
check 'grep -q "nmt train --config .*model.attention.style=bahdanau" "$md"' "no exact train command in ablation.md"
check 'grep -q "$n_short with at most 6 source words" "$md"' "the split counts are not reported"
# the chart data and the chart
check '[ "$(grep -c . "$tmp/abl/ablation.tsv")" -eq 6 ]' "ablation.tsv: expected a header and 5 rows"
svg=$tmp/abl/ablation.svg
check "[ -s '$svg' ]" "ablation.svg missing"
if command -v python3 > /dev/null 2>&1; then
  check "python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' '$svg'" "ablation.svg is not well-formed XML"
elif command -v xmllint > /dev/null 2>&1; then
  check "xmllint --noout '$svg'" "ablation.svg is not well-formed XML"
else
  echo "SKIP: neither python3 nor xmllint: XML well-formedness not checked"
fi
# 4 values per variant that ran (3 BLEU, 2 speeds, memory = 6), n/a for broken
check '[ "$(grep -o "<rect class=\"bar\"" "$svg" | wc -l)" -eq 24 ]' "expected 24 bars (4 variants x 6 values)"
check '[ "$(grep -o "class=\"missing\"" "$svg" | wc -l)" -eq 6 ]' "expected 6 n/a marks for the broken variant"
check 'grep -q ">bahdanau-additive</text>" "$svg"' "variant labels missing from the chart"

# 2. without the broken variant: exit 0; an unreachable perplexity
out=$(NMT_BIN="$NMT" bash "$ABLATE" --config "$tmp/tiny.json" --out "$tmp/abl2" --quick --steps 10 \
  --threads 1 --target-ppl 0.001 --variants local-m 2>&1)
rc=$?
check '[ $rc -eq 0 ]' "one good variant: exit $rc: $(printf '%s' "$out" | tail -3)"
check 'grep -qE "^\| local-m \|.*\| not reached \|" "$tmp/abl2/ablation.md"' "expected 'not reached': $(grep local-m "$tmp/abl2/ablation.md" | head -1)"
check 'grep -q "long (> 25 words)" "$tmp/abl2/ablation.md"' "default split of 25 words not in the header"

# 2b. --reuse: the finished runs of section 1 are read back, not trained or
# decoded again (best.nmt keeps its time), and give the same table rows;
# a folder without a finished run is trained
touch -d '2000-01-01' "$tmp/abl/none/best.nmt"
rm -f "$tmp/abl/luong-general/test.hyp"
out=$(NMT_BIN="$NMT" bash "$ABLATE" --config "$tmp/tiny.json" --out "$tmp/abl" --quick --threads 1 \
  --split 6 --target-ppl 1e9 --variants none,luong-general,bahdanau-additive --reuse 2>&1)
rc=$?
check '[ $rc -eq 0 ]' "--reuse: exit $rc: $(printf '%s' "$out" | tail -3)"
check 'printf "%s" "$out" | grep -q "none: reusing the finished run"' "--reuse did not reuse none: $out"
check '! printf "%s" "$out" | grep -q "none: training"' "--reuse trained none again"
check 'printf "%s" "$out" | grep -q "luong-general: training"' "--reuse should retrain a run without test.hyp: $out"
check '[ "$(stat -c %Y "$tmp/abl/none/best.nmt")" = "$(date -d 2000-01-01 +%s)" ]' "--reuse rewrote none/best.nmt"
check '[ -s "$tmp/abl/none/decode_seconds" ]' "--reuse: decode_seconds not written"
check 'rows none | cut -d"|" -f3-5 | grep -qE "[0-9]"' "--reuse: none row lacks numbers: $(rows none)"

# 3. usage errors exit 2 and train nothing
usage_case() { # WANT_RC NEEDLE ARGS...: exit code and message of a run
  local want=$1 needle=$2
  shift 2
  local got
  got=$(NMT_BIN="$NMT" bash "$ABLATE" "$@" 2>&1)
  local rc=$?
  if [ "$rc" -eq "$want" ] && printf '%s' "$got" | grep -q -- "$needle"; then ok; else
    bad "ablate.sh $* -> exit $rc (expected $want), wanted '$needle' in: $(printf '%s' "$got" | head -2)"
  fi
}
usage_case 2 "--config FILE is required" --out "$tmp/u"
usage_case 2 "unknown variant 'luong-fancy'" --config "$tmp/tiny.json" --out "$tmp/u" --variants luong-fancy
usage_case 2 "--steps wants a positive integer" --config "$tmp/tiny.json" --out "$tmp/u" --steps 0
usage_case 2 "unknown argument '--bogus'" --config "$tmp/tiny.json" --bogus
usage_case 2 "variant 'none' given twice" --config "$tmp/tiny.json" --out "$tmp/u" --variants none,none
usage_case 0 "usage: scripts/ablate.sh" --help
check '[ ! -d "$tmp/u" ]' "a usage error created the output folder"

test_end
