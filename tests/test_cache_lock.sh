#!/usr/bin/env bash
# test_cache_lock.sh: two nmt processes that build one data.cache_dir at
# the same time (src/data/prepare.c, lock_cache). The first is slowed down
# with the test hook NMT_TEST_SLOW_SAVE (src/fileio.c: a sleep before each
# 4 KiB piece of a save and before its rename) and the second started once
# the first has written src.tok and is writing tgt.tok (its temporary file
# is there), that is while the first holds the folder's lock. The second must wait for the
# first, then see a complete cache: rebuilt for its own settings when they
# differ (the manifest and the tokenizers agree), reused when they match.
# Without the lock the two interleave, and the folder ends up with one
# config's manifest beside the other's tokenizers. Also: a train.save_dir
# that is the data.cache_dir is locked by train and shared by its own
# prepare step, not waited for by its own holder.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_cache_lock
cd "$tmp"

# a word corpus of some 200 distinct words a side, so that the vocabulary
# size is the one data.word_vocab_size asks for; 60 pairs keep train.bin
# within one 4 KiB piece, so a slow build takes about 10 sleeps
awk 'BEGIN { for (i = 0; i < 60; i++) print "s" (i * 7) % 211, "s" (i * 13) % 211, "s" (i * 29) % 211, "s" i }' > train.src
awk 'BEGIN { for (i = 0; i < 60; i++) print "t" (i * 5) % 199, "t" (i * 11) % 199, "t" (i * 31) % 199, "t" i }' > train.tgt
cat > c.json <<JSON
{"data": {"train_src": "train.src", "train_tgt": "train.tgt", "tokenizer": "word", "cache_dir": "cache"},
 "model": {"hidden": 16, "emb_dim": 8}}
JSON
SLOW=200000 # us: each piece and rename of the first process's saves

# wait_for_temp DIR NAME: until the temporary file of a save of NAME
# (NAME.tmp.PID) is in DIR, at most 10 s; false when none came
wait_for_temp() {
  local i
  for i in $(seq 1 200); do
    ls "$1" 2> /dev/null | grep -q "^$2\.tmp\.[0-9]*\$" && return 0
    sleep 0.05
  done
  return 1
}

# race ARGS_A -- ARGS_B: `nmt prepare` with ARGS_A, slowed, in the
# background; once it writes the cache's tgt.tok, `nmt prepare` with ARGS_B. Logs in
# a.log and b.log, exit statuses in rc_a and rc_b.
race() {
  local args_a=() args_b=()
  while [ "$1" != -- ]; do args_a+=("$1"); shift; done
  shift
  args_b=("$@")
  NMT_TEST_SLOW_SAVE=$SLOW "$NMT" prepare --config c.json "${args_a[@]}" > a.log 2>&1 &
  local pid=$!
  wait_for_temp cache tgt.tok || bad "the first prepare began no save of tgt.tok in 10 s: $(cat a.log)"
  "$NMT" prepare --config c.json "${args_b[@]}" > b.log 2>&1
  rc_b=$?
  wait "$pid"
  rc_a=$?
}

# 1. different settings: the second waits, then rebuilds for its own
race --set data.word_vocab_size=60 -- --set data.word_vocab_size=80
check '[ $rc_a -eq 0 ] && grep -qF "cache $tmp/cache written" a.log' "the first prepare (60 words): exit $rc_a: $(cat a.log)"
check '[ $rc_b -eq 0 ] && grep -qF "prepare: waiting for another nmt process building the cache $tmp/cache" b.log' \
  "the second prepare did not say it waited for the first: exit $rc_b: $(cat b.log)"
check '! grep -qF "waiting" a.log' "the first prepare waited: $(cat a.log)"
check 'grep -qF "stale (data.word_vocab_size changed)" b.log && grep -qF "vocabularies: source 80, target 80; cache $tmp/cache written" b.log' \
  "the second prepare did not rebuild the first's complete cache for its settings: $(cat b.log)"
check 'grep -qxF "data.word_vocab_size = 80" cache/manifest.txt' "the manifest is not the second config's: $(cat cache/manifest.txt)"
# the manifest and the tokenizers agree: the settings the manifest names
# find the cache up to date, with the vocabularies they ask for (without
# the lock: 60 in the manifest, up to date, and the second's src.tok of 80
# words beside the first's tgt.tok of 60)
n=$(sed -n 's/^data.word_vocab_size = //p' cache/manifest.txt)
expect 0 "vocabularies: source $n, target $n; cache $tmp/cache is up to date" "$NMT" prepare --config c.json --set data.word_vocab_size="$n"
check '[ "$(ls -A cache | tr "\n" " ")" = "manifest.txt src.tok summary.txt tgt.tok train.bin " ]' \
  "the cache folder holds other files (a lock file, a temporary file): $(ls -A cache)"
# and the first config's settings see it stale, and rebuild their own sizes
expect 0 "vocabularies: source 60, target 60; cache $tmp/cache written" "$NMT" prepare --config c.json --set data.word_vocab_size=60

# 2. the same settings: the second waits for the first's rebuild and reuses it
race --set data.word_vocab_size=60 --force -- --set data.word_vocab_size=60
check '[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] && grep -qF "waiting for another nmt process" b.log' \
  "the second prepare (same settings) did not wait: exit $rc_a, $rc_b: $(cat b.log)"
check 'grep -qF "vocabularies: source 60, target 60; cache $tmp/cache is up to date" b.log' \
  "the second prepare (same settings) did not reuse the first's cache: $(cat b.log)"

# 3. train.save_dir = data.cache_dir: train holds the folder's lock and its
# own prepare step shares it (before, it would have waited for itself)
mkdir same
timeout 30 "$NMT" train --config c.json --set data.cache_dir=same --set train.save_dir=same \
  --set train.max_steps=1 > same.log 2>&1
rc=$?
check '[ $rc -eq 0 ] && grep -qF "cache $tmp/same written" same.log && ! grep -qF waiting same.log' \
  "train with train.save_dir = data.cache_dir: exit $rc (124: it waited for itself): $(tail -5 same.log)"

# 4. nmt train into a save_dir that does not exist yet, waiting for the
# cache: a run that trains into the same save_dir and ends meanwhile is
# not overwritten; the waiting run is refused once it has the cache (exit
# 2). And a signal while waiting stops it with 128 + the signal.
# train_waiting DIR LOG: a slow nmt prepare holds the cache (pid_a), and
# nmt train into DIR (output in LOG, pid_t) waits for it
train_waiting() {
  NMT_TEST_SLOW_SAVE=500000 "$NMT" prepare --config c.json --set data.word_vocab_size=60 --force > a.log 2>&1 &
  pid_a=$!
  wait_for_temp cache tgt.tok || bad "the slow prepare began no save of tgt.tok in 10 s: $(cat a.log)"
  "$NMT" train --config c.json --set data.word_vocab_size=60 --set train.save_dir="$1" --set train.max_steps=1 > "$2" 2>&1 &
  pid_t=$!
  local i
  for i in $(seq 1 100); do grep -q "waiting for another nmt process" "$2" && break; sleep 0.05; done
}
train_waiting late b.log
"$NMT" train --config c.json --set data.cache_dir=cache_d --set train.save_dir=late --set train.max_steps=1 > d.log 2>&1
rc_d=$?
sums_d=$(cd late && md5sum last.nmt train.csv)
wait "$pid_t"; rc_b=$?
wait "$pid_a"
check '[ $rc_d -eq 0 ] && grep -q "waiting for another nmt process" b.log' "the other run into late/ (exit $rc_d) or the wait: $(cat d.log b.log)"
check '[ $rc_b -eq 2 ] && grep -qF "train.save_dir: $tmp/late already holds a run" b.log' \
  "a run that waited for the cache overwrote a run that ended meanwhile: exit $rc_b: $(cat b.log)"
check '[ "$(cd late && md5sum last.nmt train.csv)" = "$sums_d" ]' "the ended run's files changed"
train_waiting sig s.log
kill -TERM "$pid_t"; wait "$pid_t"; rc_s=$?
wait "$pid_a"
check '[ $rc_s -eq 143 ] && grep -qF "stopped by signal 15 while setting up, before the first step (nothing saved)" s.log' \
  "SIGTERM while waiting for the cache: exit $rc_s (want 143): $(cat s.log)"

test_end
