#!/usr/bin/env bash
# test_combo_soak.sh: scripts/combo-soak.sh on a few fixed combinations of
# features (seed 1, combinations 1-5: guided alignment, extra corpora,
# Bahdanau, local-p, EMA, SGD, tied embeddings, residual layers, batches
# by tokens, and a joint BPE SentencePiece model with shared embeddings and
# BPE-dropout among them; their settings are printed): each trains, resumes
# exactly, passes gradcheck, translates and scores. And the soak's
# resume comparison can fail: a learning rate changed at the resume is
# reported as "FAIL resume". The long soak (hundreds of combinations) is
# run by hand: docs/reliability.md.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_combo_soak
export NMT_BIN=$NMT

out=$(bash "$ROOT/scripts/combo-soak.sh" --seed 1 --combos 5 2>&1); rc=$?
check '[ $rc -eq 0 ]' "soak of combinations 1-5: exit $rc: $out"
check 'printf "%s" "$out" | grep -q "^combo-soak: 5 combinations, [45] passed, [01] refused, 0 failed$"' \
  "at most one of 5 refused, none failed: $out"
for k in 1 2 3 4 5; do
  check 'printf "%s" "$out" | grep -qE "^combo $k: (passed|refused .*model\.)"' "combination $k's verdict: $out"
done

# the comparison catches a resume that does not continue the same run
out=$(COMBO_SOAK_RESUME_SET=train.lr=0.0123 bash "$ROOT/scripts/combo-soak.sh" --seed 1 --first 2 --combos 1 2>&1); rc=$?
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "^combo 2: FAIL resume: train.csv differs"' \
  "a changed rate at the resume should fail the comparison: exit $rc: $out"
check 'printf "%s" "$out" | grep -q "^combo-soak: 1 combinations, 0 passed, 0 refused, 1 failed$"' "the failure counted: $out"
kept=$(printf '%s' "$out" | sed -n 's/^  kept: //p')
check '[ -n "$kept" ] && [ -s "$kept/csv.diff" ]' "a failed combination's folder is kept with its diff: $out"
rm -rf "$(dirname "${kept:-/nonexistent/x}")"

expect 2 "--steps must be at least 2" bash "$ROOT/scripts/combo-soak.sh" --steps 1
expect 2 "whole numbers" bash "$ROOT/scripts/combo-soak.sh" --combos x
test_end
