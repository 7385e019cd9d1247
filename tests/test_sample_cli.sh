#!/usr/bin/env bash
# test_sample_cli.sh: `nmt translate --sample K` (top-k sampling, e.g. for
# back-translation) on a tiny model trained here: --sample 1 and a
# temperature near 0 give the greedy output, and so does --config whose
# decode.beam is 5 (not used); a seed's samples are the same
# run to run and whatever the batching (--batch, --maxi-batch: line n's
# draws depend on (seed, n) alone); another seed or a higher temperature
# gives other samples, drawn from the model's likeliest tokens (more words
# seen than greedy); what does not go with sampling is refused naming the
# option. The sampler's distribution itself: tests/test_decode.c.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_sample_cli

"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 60 --seed 7 > /dev/null 2>&1 || bad "demo-corpus"
demo_config "$tmp/tiny.json" '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1}' \
  '{"lr": 0.01, "batch_sentences": 32, "max_steps": 120, "valid_every": 1000, "seed": 3, "threads": 1, "save_dir": "run"}' \
  '{"beam": 5, "batch": 8}'
out=$("$NMT" train --config "$tmp/tiny.json" --quiet 2>&1) || bad "train: $out"
M="$tmp/run/last.nmt"
in="$tmp/data/test.src"
translate() { "$NMT" translate --model "$M" "$@" < "$in" 2> "$tmp/err.txt"; }

translate --beam 1 > "$tmp/greedy.txt"
check '[ $(wc -l < "$tmp/greedy.txt") -eq 60 ]' "greedy: $(cat "$tmp/err.txt")"
translate --sample 1 > "$tmp/s1.txt"
check 'cmp -s "$tmp/greedy.txt" "$tmp/s1.txt"' "--sample 1 should be greedy (the model's decode.beam 5 not used)"
translate --sample 20 --temperature 0.0001 > "$tmp/cold.txt"
check 'cmp -s "$tmp/greedy.txt" "$tmp/cold.txt"' "--temperature 0.0001 should be greedy"

translate --sample 20 --seed 5 > "$tmp/a.txt"
check '[ $? -eq 0 ] && [ $(wc -l < "$tmp/a.txt") -eq 60 ]' "--sample 20: $(cat "$tmp/err.txt")"
# the same run again: the same bytes; other batchings: the same lines, but
# for the rare draw that another batch size's last-bit logit difference
# moves across a boundary (a batch-keyed generator would change most lines)
translate --sample 20 --seed 5 > "$tmp/b.txt"
check 'cmp -s "$tmp/a.txt" "$tmp/b.txt"' "--sample 20 --seed 5 twice: $(diff "$tmp/a.txt" "$tmp/b.txt" | head -4)"
for how in "--batch 1" "--batch 64 --maxi-batch 1" "--batch 3 --maxi-batch 7"; do
  translate --sample 20 --seed 5 $how > "$tmp/b.txt"
  same=$(paste "$tmp/a.txt" "$tmp/b.txt" | awk -F'\t' '$1 == $2' | wc -l)
  check '[ "$same" -ge 57 ]' "--sample 20 --seed 5 $how: only $same of 60 lines as with the default batching: $(diff "$tmp/a.txt" "$tmp/b.txt" | head -4)"
done
translate --sample 20 --seed 6 > "$tmp/c.txt"
differ=$(paste -d'\n' "$tmp/a.txt" "$tmp/c.txt" | paste - - | awk -F'\t' '$1 != $2' | wc -l)
from_greedy=$(paste "$tmp/a.txt" "$tmp/greedy.txt" | awk -F'\t' '$1 != $2' | wc -l)
check '[ "$differ" -ge 20 ] && [ "$from_greedy" -ge 20 ]' \
  "seeds 5 and 6 should sample differently, and not greedy ($differ and $from_greedy of 60 lines differ)"
# with --config, whose decode.beam is 5: that beam is not used, the samples are --model's
"$NMT" translate --config "$tmp/tiny.json" --sample 20 --seed 5 < "$in" > "$tmp/cfg.txt" 2> "$tmp/err.txt"
"$NMT" translate --model "$tmp/run/best.nmt" --sample 20 --seed 5 < "$in" > "$tmp/best.txt" 2>/dev/null
check '[ -s "$tmp/cfg.txt" ] && cmp -s "$tmp/cfg.txt" "$tmp/best.txt"' "--config with --sample: $(cat "$tmp/err.txt")"
# nmt eval --model ... --sample: --seed is the sampling seed too
bleu_of() { "$NMT" eval --bleu --model "$M" --src "$in" --ref "$tmp/data/test.tgt" --sample 20 --temperature 2 "$@" 2>/dev/null | head -1; }
s3=$(bleu_of --seed 3); s4=$(bleu_of --seed 4)
translate --sample 20 --temperature 2 --seed 3 > "$tmp/s3.txt"
direct=$("$NMT" eval --bleu --ref "$tmp/data/test.tgt" < "$tmp/s3.txt" 2>/dev/null | head -1)
check '[ -n "$s3" ] && [ "$s3" != "$s4" ] && [ "$s3" = "$direct" ]' "eval --sample --seed: seed 3 '$s3', seed 4 '$s4', translate | eval '$direct'"
# flatter draws use more of the vocabulary than greedy decoding
words() { tr ' ' '\n' < "$1" | sort -u | wc -l; }
translate --sample 50 --temperature 2 > "$tmp/hot.txt"
check '[ $(words "$tmp/hot.txt") -gt $(words "$tmp/greedy.txt") ]' \
  "temperature 2: $(words "$tmp/hot.txt") distinct words, greedy $(words "$tmp/greedy.txt")"

# refused: what sampling does not do, values out of range, a sampling option alone
expect 2 "--sample draws one translation a line, token by token; it does not go with --beam" \
  "$NMT" translate --model "$M" --sample 5 --beam 4
expect 2 "it does not go with --nbest" "$NMT" translate --model "$M" --sample 5 --nbest 2
expect 2 "it does not go with a second --model" "$NMT" translate --model "$M" --model "$M" --sample 5
expect 2 "it does not go with --replace-unk" "$NMT" translate --model "$M" --sample 5 --replace-unk
expect 2 "it does not go with --attention-out" "$NMT" translate --model "$M" --sample 5 --attention-out "$tmp/a.json"
expect 2 "--sample" "$NMT" translate --model "$M" --sample 101
expect 2 "--sample" "$NMT" translate --model "$M" --sample 0
expect 2 "--temperature must be above 0, got 0" "$NMT" translate --model "$M" --sample 5 --temperature 0
expect 2 "--temperature sets how --sample draws: give --sample K too" "$NMT" translate --model "$M" --temperature 2
expect 2 "--seed sets how --sample draws: give --sample K too" "$NMT" translate --model "$M" --seed 2
expect 0 "--sample K" "$NMT" translate --help

test_end
