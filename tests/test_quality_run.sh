#!/usr/bin/env bash
# test_quality_run.sh: scripts/quality-run.sh on a small generated corpus:
# it trains, averages the step checkpoints, tries every checkpoint x beam x
# length penalty of the grid on the validation set, picks the best of the
# grid, and its test score is the one `nmt eval` gives for its test.hyp;
# a config without a test set and bad options are refused.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_quality_run
script=$ROOT/scripts/quality-run.sh

"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 30 --seed 6 > /dev/null 2>&1 || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}' \
  '{"lr": 0.005, "batch_sentences": 32, "max_steps": 400, "valid_every": 100, "log_every": 20,
              "seed": 5, "threads": 1, "keep_checkpoints": 3, "save_dir": "run"}' \
  '{"beam": 1, "batch": 16}'
out=$(NMT_BIN=$NMT bash "$script" --config "$tmp/tiny.json" --hours 0.2 --average 3 --beams 1,3 \
    --length-penalties 0.6,1.0 2>&1); rc=$?
check '[ $rc -eq 0 ]' "quality-run failed ($rc): $(printf '%s' "$out" | tail -5)"
ev=$tmp/run/eval
check "[ -s '$ev/summary.md' ] && [ -s '$ev/avg.nmt' ]" "summary.md or avg.nmt missing"
# 2 checkpoints x (beam 1 + beam 3 with 2 penalties) = 6 rows
check "[ \$(tail -n +2 '$ev/grid.tsv' | wc -l) -eq 6 ]" "grid.tsv should hold 6 rows: $(cat "$ev/grid.tsv")"
check "[ \"\$(cut -f1 '$ev/grid.tsv' | sort -u | tr '\n' ' ')\" = 'avg.nmt best.nmt checkpoint ' ]" \
    "the grid should try best.nmt and avg.nmt"
top=$(tail -n +2 "$ev/grid.tsv" | sort -t$'\t' -k4,4 -g -r | head -1 | cut -f4)
first=$(tail -n +2 "$ev/grid.tsv" | awk -F'\t' -v t="$top" '$4 == t {printf "%s, beam %s, length penalty %s (valid BLEU %s)", $1, $2, $3, $4; exit}')
check "grep -qF 'Chosen on validation: $first' '$ev/summary.md'" "the choice is not the first best row of the grid ($first): $(grep Chosen "$ev/summary.md")"
check "[ \$(wc -l < '$ev/test.hyp') -eq 30 ]" "test.hyp should have 30 lines"
want=$("$NMT" eval --bleu --ref "$tmp/data/test.tgt" --hyp "$ev/test.hyp" | head -1)
check "grep -qF -- '$want' '$ev/summary.md'" "summary's test score differs from nmt eval's: $want"
newest=$(ls "$tmp/run" | sed -n 's/^step-\([0-9]*\)\.nmt$/\1/p' | sort -n | tail -3 | tr '\n' ' ')
check "grep -q 'steps ${newest% })' '$ev/summary.md'" "the average should be of the three newest steps ($newest)"

# refusals
sed 's/"test_src": "data\/test.src", "test_tgt": "data\/test.tgt",//' "$tmp/tiny.json" > "$tmp/notest.json"
expect 1 "data.test_src is not set" env NMT_BIN="$NMT" bash "$script" --config "$tmp/notest.json" --hours 0
expect 1 "--hours must be a number" env NMT_BIN="$NMT" bash "$script" --config "$tmp/tiny.json" --hours soon
expect 1 "--config FILE is required" env NMT_BIN="$NMT" bash "$script" --hours 0
expect 1 "no trained model" env NMT_BIN="$NMT" bash "$script" --config "$tmp/tiny.json" --hours 0 \
    --set train.save_dir="$tmp/empty"

test_end
