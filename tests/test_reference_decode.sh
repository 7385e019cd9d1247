#!/usr/bin/env bash
# test_reference_decode.sh: the PyTorch decoder of the benchmarks
# (scripts/reference.py decode, which bench-decode.sh and gpu-check.sh time
# next to nmt) translates as `nmt translate` does, line for line, on tiny
# models trained here: one attention head and five (the heads' W_a, their
# concatenated contexts and W_o), greedy and beam 4, finished sentences kept
# in the batch and dropped. A ratio of speeds means nothing if the two sides
# do not compute the same thing.
# Needs Debian's python3-torch (scripts/install-deps.sh --torch; CI installs
# it): without it the test says it is skipped and passes.
# Prints "test_reference_decode: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_reference_decode
cd "$ROOT" || exit 2
PY=/usr/bin/python3
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "SKIP: test_reference_decode: no PyTorch for $PY (scripts/install-deps.sh --torch)"
  test_end
  exit $?
fi

# a toy task a tiny model learns in a second: the source words, renamed and
# reversed (so attention must look in the right place); halfway trained
# (about BLEU 6 at step 800, 90 at 1500) its greedy and beam lines differ
"$PY" - "$tmp/data" <<'EOF_PY' || bad "toy corpus"
import os, random, sys
r, out = random.Random(5), sys.argv[1]
os.makedirs(out)
for name, n in (("train", 3000), ("valid", 40), ("test", 60)):
    with open(os.path.join(out, name + ".src"), "w") as s, open(os.path.join(out, name + ".tgt"), "w") as t:
        for _ in range(n):
            ws = [r.randrange(20) for _ in range(r.randrange(3, 13))]
            s.write(" ".join("s%d" % w for w in ws) + "\n")
            t.write(" ".join("t%d" % w for w in reversed(ws)) + "\n")
EOF_PY
in="$tmp/data/test.src"
# the same tiny model with 1 and with 5 heads (general score, global; 5 does
# not divide hidden 24 on purpose: each head scores the whole hidden state)
for heads in 1 5; do
  demo_config "$tmp/h$heads.json" \
    "{\"emb_dim\": 16, \"hidden\": 24, \"enc_layers\": 2, \"dec_layers\": 2, \"bidirectional\": true,
      \"input_feed\": true, \"dropout\": 0.1,
      \"attention\": {\"style\": \"luong\", \"score\": \"general\", \"mode\": \"global\", \"heads\": $heads}}" \
    "{\"optimizer\": \"adam\", \"lr\": 0.01, \"lr_decay\": 1, \"batch_sentences\": 32, \"max_steps\": 800,
      \"valid_every\": 800, \"seed\": 5, \"threads\": 1, \"save_dir\": \"run$heads\"}" \
    "{\"beam\": 4, \"batch\": 8, \"length_penalty\": 0.6}"
  out=$(cd "$tmp" && "$NMT" train --config "h$heads.json" --quiet 2>&1) || bad "train ($heads heads): $out"
  M="$tmp/run$heads/best.nmt"
  for beam in 1 4; do
    "$NMT" translate --model "$M" --beam "$beam" --batch 8 < "$in" > "$tmp/nmt.$heads.$beam" 2>"$tmp/err"
    rc=$?
    check '[ $rc -eq 0 ] && [ $(wc -l < "$tmp/nmt.$heads.$beam") -eq 60 ]' "nmt translate ($heads heads, beam $beam): $(cat "$tmp/err")"
    for way in kept dropped; do
      flag=""
      [ "$way" = dropped ] && flag=--drop-finished
      "$PY" scripts/reference.py decode --model "$M" --input "$in" --beam "$beam" --batch 8 --threads 1 \
        $flag --out "$tmp/torch.$heads.$beam.$way" 2>"$tmp/err"
      rc=$?
      check '[ $rc -eq 0 ]' "reference.py decode ($heads heads, beam $beam, $way): $(tail -3 "$tmp/err")"
      check 'cmp -s "$tmp/nmt.$heads.$beam" "$tmp/torch.$heads.$beam.$way"' \
        "$heads heads, beam $beam, $way: not nmt's 60 lines; first differences:
$(diff "$tmp/nmt.$heads.$beam" "$tmp/torch.$heads.$beam.$way" 2>&1 | head -6)"
    done
  done
done
# the lines are not trivially alike: the two models translate differently
check '! cmp -s "$tmp/nmt.1.4" "$tmp/nmt.5.4"' "the 1- and 5-head models gave the same lines"
check '[ $(sort -u "$tmp/nmt.5.4" | wc -l) -gt 40 ]' "the 5-head model's lines are mostly alike: $(sort -u "$tmp/nmt.5.4" | wc -l) distinct"
check '! cmp -s "$tmp/nmt.5.1" "$tmp/nmt.5.4"' "the 5-head model's greedy and beam-4 lines are the same: the beam search is not exercised"

# what the PyTorch side cannot do is refused, naming it
demo_config "$tmp/dot.json" \
  "{\"emb_dim\": 16, \"hidden\": 24, \"enc_layers\": 1, \"dec_layers\": 1,
    \"attention\": {\"style\": \"luong\", \"score\": \"dot\", \"mode\": \"global\", \"heads\": 2}}" \
  "{\"optimizer\": \"adam\", \"lr\": 0.005, \"batch_sentences\": 32, \"max_steps\": 2,
    \"valid_every\": 2, \"seed\": 5, \"threads\": 1, \"save_dir\": \"rundot\"}" "{}"
out=$(cd "$tmp" && "$NMT" train --config dot.json --quiet 2>&1) || bad "train (dot): $out"
out=$("$PY" scripts/reference.py decode --model "$tmp/rundot/best.nmt" --input "$in" 2>&1); rc=$?
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -q "score dot"' "dot-score model: exit $rc: $out"
test_end
