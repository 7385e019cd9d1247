#!/usr/bin/env bash
# test_crash_safety.sh: kills `nmt train` with SIGKILL at random moments,
# most of them inside a checkpoint save, many times over, resuming after
# each kill. After every kill: last.nmt (and best.nmt when there is one)
# loads, the next --resume starts from a step no earlier than the one
# before, and at most one temporary file per checkpoint is lying around
# (the atomic writer removes those of dead processes at its next save).
# At the end the run, completed with --resume, translates the test split
# exactly like an uninterrupted run of the same config, and no temporary
# file is left.
#
# Saves are slowed down with the test hook NMT_TEST_SLOW_SAVE (src/fileio.c:
# microseconds of sleep before each 4 KiB written and before the rename),
# so that a kill at a random moment usually lands inside a save.
# CRASH_KILLS (default 30; 12 under the sanitizer suite, NMT_SAN=1) sets the
# number of kills, CRASH_SEED the random seed (printed, for a rerun).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_crash_safety

kills=${CRASH_KILLS:-30}
if [ -z "${CRASH_KILLS:-}" ] && [ "${NMT_SAN:-0}" = 1 ]; then
  kills=12; echo "sanitizer build (NMT_SAN=1): $kills kills instead of 30"
fi
seed=${CRASH_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "kills: $kills, seed: $seed (CRASH_SEED=$seed reruns the same delays)"

"$NMT" demo-corpus --out "$tmp/data" --train 400 --valid 16 --test 8 --seed 4 --max-words 10 > /dev/null \
  || bad "demo-corpus"
cat > "$tmp/c.json" <<JSON
{"data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
          "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
          "tokenizer": "word", "max_len": 40, "cache_dir": "cache"},
 "model": {"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1},
 "train": {"optimizer": "adam", "lr": 0.003, "batch_sentences": 16, "epochs": 1000,
           "max_steps": 300, "valid_every": 2, "valid_metric": "ppl", "patience": 0,
           "log_every": 50, "seed": 7, "threads": 1, "save_dir": "run"},
 "decode": {"beam": 1, "batch": 16}}
JSON
run=$tmp/run
head -n 3 "$tmp/data/test.src" > "$tmp/three.src"

# loads(FILE): the checkpoint passes every check of the loader and translates
loads() {
  "$NMT" translate --model "$1" < "$tmp/three.src" > "$tmp/three.hyp" 2> "$tmp/three.err" \
    && [ "$(wc -l < "$tmp/three.hyp")" -eq 3 ]
}
# the temporary files of the atomic writer in run/ (NAME.tmp.PID)
temps() { (cd "$run" 2>/dev/null && ls -1 | grep -E '\.tmp\.[0-9]+$'); }

prev_step=0
inside=0
done_early=0
for i in $(seq 1 "$kills"); do
  # killed before its first last.nmt, a run is started afresh over what it left
  resume=--overwrite; [ -f "$run/last.nmt" ] && resume=--resume
  NMT_TEST_SLOW_SAVE=1000 "$NMT" train --config "$tmp/c.json" $resume > "$tmp/kill$i.log" 2>&1 &
  pid=$!
  # odd kills: a random moment (start-up, training, validation or a save);
  # even kills: a random moment after the next save has begun
  sleep "0.$(printf '%03d' $((50 + RANDOM % 650)))"
  if [ $((i % 2)) -eq 0 ]; then
    for _ in $(seq 1 1000); do   # up to 10 s on a loaded machine
      compgen -G "$run/*.tmp.$pid" > /dev/null && break
      kill -0 $pid 2> /dev/null || break
      sleep 0.01
    done
    sleep "0.$(printf '%03d' $((RANDOM % 150)))"   # a save takes 0.1 s or more
  fi
  kill -KILL $pid 2> /dev/null
  wait $pid 2> /dev/null; rc=$?
  if [ $rc -eq 0 ]; then done_early=1; echo "the run finished before kill $i"; break; fi
  check "[ $rc -eq 137 ]" "kill $i: nmt train exited $rc by itself: $(tail -3 "$tmp/kill$i.log")"
  compgen -G "$run/*.tmp.$pid" > /dev/null && inside=$((inside + 1))
  # the resume started where the newest complete checkpoint was
  step=$(sed -n -E 's/.*resumed from .* at step ([0-9]+).*/\1/p' "$tmp/kill$i.log")
  if [ -n "$resume" ] && [ -n "$step" ]; then
    check "[ $step -ge $prev_step ]" "kill $i: resumed at step $step, before step $prev_step of an earlier resume"
    prev_step=$step
  fi
  for f in last best; do
    [ -f "$run/$f.nmt" ] || continue
    if loads "$run/$f.nmt"; then ok; else bad "kill $i: $f.nmt does not load: $(cat "$tmp/three.err")"; fi
  done
  # at most one temporary file per target (the others were removed)
  dup=$(temps | sed -E 's/\.tmp\.[0-9]+$//' | sort | uniq -d)
  check "[ -z '$dup' ]" "kill $i: more than one temporary file for $dup: $(temps | tr '\n' ' ')"
  other=$(cd "$run" 2>/dev/null && ls -1 | grep -v -E '^(last\.nmt|best\.nmt|train\.csv|config\.json)(\.tmp\.[0-9]+)?$')
  check "[ -z '$other' ]" "kill $i: unexpected files in run/: $other"
done
echo "$inside of $kills kills landed inside a save (a temporary file of the killed process left behind)"
[ $done_early -eq 1 ] || check "[ $inside -ge $((kills / 4)) ]" \
  "only $inside of $kills kills landed inside a save: the test does not test what it says"
check "[ -f '$run/last.nmt' ]" "no last.nmt after $kills kills"

# finish the run with --resume, without kills or the slow-save hook
out=$("$NMT" train --config "$tmp/c.json" --resume 2>&1); rc=$?
check "[ $rc -eq 0 ]" "final --resume: exit $rc: $(printf '%s' "$out" | tail -3)"
step=$(printf '%s' "$out" | sed -n -E 's/.*resumed from .* at step ([0-9]+).*/\1/p')
check "[ -n '$step' ] && [ '$step' -ge $prev_step ]" "final --resume: resumed at step '${step}', earlier resumes reached $prev_step"
check "printf '%s' \"\$out\" | grep -q 'done at step 300'" "final --resume did not reach step 300: $(printf '%s' "$out" | tail -2)"
left=$(temps)
if [ -n "$left" ] && ! printf '%s' "$out" | grep -q '(best)'; then
  left=$(printf '%s\n' "$left" | grep -v '^best\.nmt\.')   # best.nmt was not saved again
fi
check "[ -z '$left' ]" "temporary files left after a complete run: $left"

# the interrupted run ends where an uninterrupted one does
out=$("$NMT" train --config "$tmp/c.json" --set train.save_dir="$tmp/ref" 2>&1)
check "[ $? -eq 0 ]" "uninterrupted run: $(printf '%s' "$out" | tail -3)"
for f in last best; do
  "$NMT" translate --model "$run/$f.nmt" < "$tmp/data/test.src" > "$tmp/$f.hyp" 2> /dev/null
  "$NMT" translate --model "$tmp/ref/$f.nmt" < "$tmp/data/test.src" > "$tmp/$f.ref.hyp" 2> /dev/null
  check "[ -s '$tmp/$f.hyp' ] && cmp -s '$tmp/$f.hyp' '$tmp/$f.ref.hyp'" \
    "$f.nmt after the kills translates differently from an uninterrupted run: $(diff "$tmp/$f.hyp" "$tmp/$f.ref.hyp" | head -4)"
done

test_end
