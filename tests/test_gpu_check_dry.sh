#!/usr/bin/env bash
# test_gpu_check_dry.sh: scripts/gpu-check.sh, the one-go check of a GPU
# session, in its dry run (GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1: steps 3-7
# with the CPU in place of cuda, small sizes), so that the script's logic
# and its parsing of nmt's and bench_train's output cannot rot between GPU
# sessions. Without a GPU the script's verdict is FAIL (NO GPU rows); this
# test checks the rows of the steps that ran. The PyTorch rows (step 7) are
# checked where Debian's /usr/bin/python3 has torch (python3-torch), and
# said to be unchecked where it has not.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_gpu_check_dry
cd "$ROOT"
out=$tmp/out
py=none
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  py=/usr/bin/python3
else
  echo "test_gpu_check_dry: /usr/bin/python3 has no torch: the PyTorch rows are not checked"
fi
GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1 GPU_CHECK_PYTHON=$py OUT="$out" NMT_BIN="$NMT" \
  timeout -k 5 300 bash scripts/gpu-check.sh > "$tmp/run.log" 2>&1
rc=$?
check "[ $rc -ne 124 ] && [ $rc -ne 137 ]" "gpu-check.sh ran over 300 s"
check "[ -s '$out/summary.txt' ]" "no summary.txt: $(tail -5 "$tmp/run.log")"
# row NAME: the summary's line for step NAME
row() { grep -E "^$1 " "$out/summary.txt" | head -1; }
check "row 'train cpu \\(dry run\\) vs CPU' | grep -qE ' pass +[0-9]+  [0-9]+ steps: cpu loss [0-9.]+->[0-9.]+'" \
  "training row: $(row 'train cpu')"
check "row 'checkpoints GPU<->CPU' | grep -q ' pass '" "checkpoint row: $(row 'checkpoints')"
# the training run again: the same weights and Adam moments to the bit
check "row 'train cpu \\(dry run\\) twice' | grep -qE ' pass +[0-9]+  identical: [1-9][0-9]* weights, [1-9][0-9]* optimizer values'" \
  "training twice row: $(row 'train cpu (dry run) twice')"
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
  check "row 'decode nmt large beam $beam' | grep -qE ' info +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s, 100 sentences'" \
    "large decode beam $beam row: $(row "decode nmt large beam $beam")"
done
if [ "$py" != none ]; then
  for name in de-en large; do
    check "row 'PyTorch $name' | grep -qE ' info +[0-9]+  best [1-9][0-9]* tgt tok/s .*nmt/PyTorch [0-9.]*[1-9][0-9.]*x'" \
      "PyTorch $name row: $(row "PyTorch $name")"
  done
  # the same checkpoints and input decoded by reference.py: the speed ratio,
  # and on the same device (the CPU here) the same lines as nmt's
  for tag in "" " large"; do
    for beam in 1 5; do
      check "row 'PyTorch decode$tag beam $beam' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s; nmt/PyTorch [0-9.]*[1-9][0-9.]*x.*; 100 of 100 lines as nmt.s$'" \
        "PyTorch decode$tag beam $beam row: $(row "PyTorch decode$tag beam $beam")"
    done
  done
fi
check "! grep -qE 'FAIL\\(|TIMEOUT|MISSING' '$out/summary.txt'" \
  "a step failed: $(grep -E 'FAIL\(|TIMEOUT|MISSING' "$out/summary.txt")"
for f in machine train bench; do
  check "[ -s '$out/$f.log' ]" "no $f.log"
done
test_end
