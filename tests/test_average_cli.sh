#!/usr/bin/env bash
# test_average_cli.sh: `nmt average` end to end on a small generated corpus:
# one checkpoint alone gives a copy without the optimizer moments (under half
# the size) that translates exactly like it; the average of three step
# checkpoints of a run loads and translates every line; a checkpoint given
# twice (also as last.nmt of the same step) is refused;
# checkpoints of another run (another seed), missing or corrupt files and bad
# usage, and an --out that is one of the inputs (also by a hard or symbolic
# link), are refused with a message naming the file or the key, and --out
# is not written then; --out to a null device node is written into.
# (The arithmetic is tests/test_checkpoint_average.c.)
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_average_cli

"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 30 --seed 4 > /dev/null || bad "demo-corpus"
demo_config "$tmp/tiny.json" \
  '{"emb_dim": 24, "hidden": 32, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}' \
  '{"lr": 0.003, "batch_sentences": 32, "max_steps": 60, "valid_every": 20, "log_every": 20,
              "seed": 5, "threads": 1, "keep_checkpoints": 3, "save_dir": "run"}' \
  '{"beam": 2, "batch": 16}'
out=$("$NMT" train --config "$tmp/tiny.json" --quiet 2>&1)
check '[ $? -eq 0 ] && [ -s "$tmp/run/step-20.nmt" ] && [ -s "$tmp/run/step-60.nmt" ]' "training with keep_checkpoints: $out"

# 0. one checkpoint "averaged" is a copy without the optimizer moments:
# smaller, and it translates exactly like the original
expect 0 "1 checkpoint (step 60) copied without its moments into $tmp/one.nmt" "$NMT" average --out "$tmp/one.nmt" "$tmp/run/step-60.nmt"
"$NMT" translate --model "$tmp/run/step-60.nmt" < "$tmp/data/test.src" > "$tmp/o1.hyp" 2>/dev/null
"$NMT" translate --model "$tmp/one.nmt" < "$tmp/data/test.src" > "$tmp/o2.hyp" 2>/dev/null
check "[ -s '$tmp/o1.hyp' ] && cmp -s '$tmp/o1.hyp' '$tmp/o2.hyp'" "a one-checkpoint average translates differently"
check "[ \$(wc -c < '$tmp/one.nmt') -lt \$(( \$(wc -c < '$tmp/run/step-60.nmt') / 2 )) ]" \
  "a one-checkpoint average keeps the moments: $(wc -c < "$tmp/one.nmt") bytes of $(wc -c < "$tmp/run/step-60.nmt")"
# 1. a checkpoint given twice, by its name or as last.nmt of the same step
# (a glob of the run's *.nmt), is refused naming both: it would count twice
expect 2 "$tmp/run/step-60.nmt: the same checkpoint as $tmp/run/step-60.nmt (step 60, the same weights)" \
    "$NMT" average --out "$tmp/self.nmt" "$tmp/run/step-60.nmt" "$tmp/run/step-60.nmt"
expect 2 "$tmp/run/last.nmt: the same checkpoint as $tmp/run/step-60.nmt (step 60, the same weights)" \
    "$NMT" average --out "$tmp/self.nmt" "$tmp/run/step-40.nmt" "$tmp/run/step-60.nmt" "$tmp/run/last.nmt"
check "[ ! -e '$tmp/self.nmt' ]" "a refused average must not write --out"

# 2. three step checkpoints: loads, translates every line, reports the newest step
expect 0 "newest at step 60" "$NMT" average --out "$tmp/avg.nmt" "$tmp/run/step-40.nmt" "$tmp/run/step-60.nmt" \
    "$tmp/run/step-20.nmt"
"$NMT" translate --model "$tmp/avg.nmt" < "$tmp/data/test.src" > "$tmp/avg.hyp" 2>"$tmp/avg.err"
rc=$?
check '[ $rc -eq 0 ] && [ $(wc -l < "$tmp/avg.hyp") -eq 30 ]' "translate with the average: $(cat "$tmp/avg.err")"
check "! cmp -s '$tmp/run/step-20.nmt' '$tmp/avg.nmt' && ! cmp -s '$tmp/run/step-60.nmt' '$tmp/avg.nmt'" \
    "the average should differ from its inputs"

# 3. refusals; --out is not written then
"$NMT" train --config "$tmp/tiny.json" --quiet --set train.seed=6 --set train.save_dir="$tmp/other" \
    --set train.max_steps=20 > /dev/null 2>&1
expect 2 "train.seed differs" "$NMT" average --out "$tmp/bad.nmt" "$tmp/run/step-60.nmt" "$tmp/other/last.nmt"
expect 1 "missing.nmt" "$NMT" average --out "$tmp/bad.nmt" "$tmp/run/step-60.nmt" "$tmp/missing.nmt"
cp "$tmp/run/step-40.nmt" "$tmp/corrupt.nmt"
printf '\x55' | dd of="$tmp/corrupt.nmt" bs=1 seek=3000 conv=notrunc status=none
expect 1 "corrupt.nmt" "$NMT" average --out "$tmp/bad.nmt" "$tmp/run/step-60.nmt" "$tmp/corrupt.nmt"
check "[ ! -e '$tmp/bad.nmt' ]" "a refused average must not write --out"
# --out one of the inputs: refused (exit 2) naming both, the input untouched;
# by the same name, by another name of the same file, by a hard link
cp "$tmp/run/step-60.nmt" "$tmp/keep60.nmt"
expect 2 "--out $tmp/run/step-60.nmt is the same file as the checkpoint $tmp/run/step-60.nmt" \
    "$NMT" average --out "$tmp/run/step-60.nmt" "$tmp/run/step-40.nmt" "$tmp/run/step-60.nmt"
expect 2 "--out $tmp/run/./step-60.nmt is the same file as the checkpoint $tmp/run/step-60.nmt" \
    "$NMT" average --out "$tmp/run/./step-60.nmt" "$tmp/run/step-40.nmt" "$tmp/run/step-60.nmt"
ln "$tmp/run/step-60.nmt" "$tmp/link60.nmt"
expect 2 "--out $tmp/link60.nmt is the same file as the checkpoint $tmp/run/step-60.nmt" \
    "$NMT" average --out "$tmp/link60.nmt" "$tmp/run/step-60.nmt"
# by a symbolic link (atomic writes follow links: it would write the input)
ln -s run/step-60.nmt "$tmp/sym60.nmt"
expect 2 "--out $tmp/sym60.nmt is the same file as the checkpoint $tmp/run/step-60.nmt" \
    "$NMT" average --out "$tmp/sym60.nmt" "$tmp/run/step-40.nmt" "$tmp/run/step-60.nmt"
check "[ -L '$tmp/sym60.nmt' ] && cmp -s '$tmp/keep60.nmt' '$tmp/run/step-60.nmt'" \
    "a refused average through a link changed the link or its input step-60.nmt"
check "cmp -s '$tmp/keep60.nmt' '$tmp/run/step-60.nmt'" "a refused average overwrote its input step-60.nmt"
# --out to a null device (a node made here, not /dev's) is not "the same
# file" as an input; it is written into and stays a device
if mknod -m 666 "$tmp/null" c 1 3 2>/dev/null; then
  expect 0 "copied without its moments into $tmp/null" "$NMT" average --out "$tmp/null" "$tmp/run/step-60.nmt"
  check "[ -c '$tmp/null' ]" "--out NULL-NODE: no longer a character device"
else
  echo "SKIP: mknod not permitted here: --out to a device node not checked"
fi
expect 2 "--out FILE is required" "$NMT" average "$tmp/run/step-60.nmt"
expect 2 "no checkpoint given" "$NMT" average --out "$tmp/bad.nmt"
expect 2 "unknown option '--bogus'" "$NMT" average --bogus --out "$tmp/bad.nmt" "$tmp/run/step-60.nmt"
expect 0 "usage: nmt average" "$NMT" average --help

test_end
