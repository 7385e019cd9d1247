#!/usr/bin/env bash
# test_gpu_check_dry.sh: scripts/gpu-check.sh, the one-go check of a GPU
# session, in its dry run (GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1: steps 3-7
# with the CPU in place of cuda, small sizes), so that the script's logic
# and its parsing of nmt's and bench_train's output cannot rot between GPU
# sessions. Without a GPU the script's verdict is FAIL (NO GPU rows); this
# test checks the rows of the steps that ran.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_gpu_check_dry
cd "$ROOT"
out=$tmp/out
GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1 GPU_CHECK_PYTHON=none OUT="$out" NMT_BIN="$NMT" \
  timeout -k 5 300 bash scripts/gpu-check.sh > "$tmp/run.log" 2>&1
rc=$?
check "[ $rc -ne 124 ] && [ $rc -ne 137 ]" "gpu-check.sh ran over 300 s"
check "[ -s '$out/summary.txt' ]" "no summary.txt: $(tail -5 "$tmp/run.log")"
# row NAME: the summary's line for step NAME
row() { grep -E "^$1 " "$out/summary.txt" | head -1; }
check "row 'train cpu \\(dry run\\) vs CPU' | grep -qE ' pass +[0-9]+  [0-9]+ steps: cpu loss [0-9.]+->[0-9.]+'" \
  "training row: $(row 'train cpu')"
check "row 'checkpoints GPU<->CPU' | grep -q ' pass '" "checkpoint row: $(row 'checkpoints')"
for name in 'bench nmt de-en' 'bench nmt large' 'bench nmt de-en graphs' 'bench nmt large graphs' \
  'bench nmt de-en one-stream'; do
  # numbers parsed from bench_train's output: none may be zero or NaN
  check "row '$name' | grep -qE ' info +[0-9]+  [1-9][0-9]* tgt tok/s, [0-9.]*[1-9][0-9.]* ms/step, [0-9.]*[1-9][0-9.]* GFLOP/step = [0-9.]*[1-9][0-9.]* TFLOP/s'" \
    "$name row: $(row "$name")"
done
# the one-stream row also gives the ratio of the first row to it
check "row 'bench nmt de-en one-stream' | grep -qE 'two streams \\(the first row\\) train [0-9.]*[1-9][0-9.]*x as fast as one'" \
  "one-stream row: $(row 'bench nmt de-en one-stream')"
check "! row 'bench nmt large one-stream' | grep -q ." "a one-stream row for the large config"
for beam in 1 5; do
  check "row 'decode nmt beam $beam' | grep -qE ' info +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s, 100 sentences'" \
    "decode beam $beam row: $(row "decode nmt beam $beam")"
  # with NMT_CUDA_GRAPHS=1 (ignored by the CPU here): the same output
  check "row 'decode nmt beam $beam graphs' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_CUDA_GRAPHS=1, output identical'" \
    "decode beam $beam graphs row: $(row "decode nmt beam $beam graphs")"
done
check "! grep -qE 'FAIL\\(|TIMEOUT|MISSING' '$out/summary.txt'" \
  "a step failed: $(grep -E 'FAIL\(|TIMEOUT|MISSING' "$out/summary.txt")"
for f in machine train bench; do
  check "[ -s '$out/$f.log' ]" "no $f.log"
done
test_end
