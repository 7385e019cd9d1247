# stream_setup.sh: sourced by test_translate_stream.sh and
# test_translate_stream_gzip.sh after lib.sh and test_begin: skips the test
# (test_end, exit) where python3 or /proc is missing; else trains the tiny
# word-level demo model both drive (about 2 s; its translations differ from
# line to line) and sets M to its best.nmt and $tmp/lines.src to ten test
# lines, the third empty (an empty answer).
if ! command -v python3 > /dev/null 2>&1 || [ ! -r /proc/self/stat ]; then
  echo "SKIP $TEST_NAME: needs python3 and /proc"
  test_end
  exit $?
fi
"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 40 --seed 7 > /dev/null 2>&1 || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 32, "hidden": 48, "enc_layers": 1, "dec_layers": 1, "attention": {"heads": 1}}' \
  '{"optimizer": "adam", "lr": 0.01, "batch_sentences": 32, "max_steps": 300, "valid_every": 300, "seed": 3, "threads": 1, "save_dir": "run"}' \
  '{"beam": 1, "batch": 8}'
out=$("$NMT" train --config "$tmp/tiny.json" --quiet 2>&1) || bad "train: $out"
M="$tmp/run/best.nmt"
{ head -2 "$tmp/data/test.src"; echo; sed -n 3,9p "$tmp/data/test.src"; } > "$tmp/lines.src"
