#!/usr/bin/env bash
# test_gpu_check_dry.sh: scripts/gpu-check.sh, the one-go check of a GPU
# session, in its dry run (GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1: steps 3-7
# with the CPU in place of cuda, small sizes), so that the script's logic
# and its parsing of nmt's and bench_train's output cannot rot between GPU
# sessions. Without a GPU the script's verdict is FAIL (NO GPU rows); this
# test checks the rows of the steps that ran. The PyTorch rows (step 7) are
# checked where Debian's /usr/bin/python3 has torch (python3-torch), and
# said to be unchecked where it has not.
#
# Then the script runs once more on a fake GPU machine (a few seconds): a
# fake nvidia-smi and compute-sanitizer first on PATH, and NMT_BIN and
# NMT_BUILD pointing at a fake nmt (which fails: steps 3, 4 and 6 fail
# fast), test_gpu_parity (prints the environment it got) and bench_train
# (prints the lines the script reads, as on a GPU). That run checks the
# parts only a GPU reaches otherwise: the persistent parity step's
# environment, compute-sanitizer's verdicts (a pass, a racecheck error
# found in the summary alone, a synccheck error by exit status), and the
# persistent benchmark rows' notes from bench_train's "cuda per step" line.
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
# the limits only stop a hang: the whole test took 44 s on 2 quiet
# cores, and went past 300 s on 2 cores shared with two other builds; on
# 2 cores shared with a training run and the suite the decode step's
# 120 s ran out (2026-12-03), so the steps' limits are 5 times the GPU
# run's here, in a budget of 1100 s
GPU_CHECK_PACK=0 GPU_CHECK_DEVICE=cpu GPU_CHECK_QUICK=1 GPU_CHECK_PYTHON=$py OUT="$out" NMT_BIN="$NMT" \
  GPU_CHECK_LIMIT_SCALE=5 GPU_CHECK_BUDGET=1100 timeout -k 5 1200 bash scripts/gpu-check.sh > "$tmp/run.log" 2>&1
rc=$?
check "[ $rc -ne 124 ] && [ $rc -ne 137 ]" "gpu-check.sh ran over 1200 s"
check "[ -s '$out/summary.txt' ]" "no summary.txt: $(tail -5 "$tmp/run.log")"
# row NAME: the summary's line for step NAME
row() { grep -E "^$1 " "$out/summary.txt" | head -1; }
# what a decode row says of its rate beyond the first-use costs, from the
# input once and 4 times over: the rate, or none when the 4 times took no
# longer than once (timing noise of a dry run's 100 short lines can do
# that; at least one row must have a rate, checked below)
MARGINAL='(so [0-9.]*[1-9][0-9.]* sent/s beyond -?[0-9]+ ms of first-use costs|no per-sentence rate)'
# the same in a variant's row, next to the default's rate (none: the
# default's own runs gave no rate, and the variant's 4 times still run)
MARGINAL_VS='(so [0-9.]*[1-9][0-9.]* sent/s beyond -?[0-9]+ ms of first-use costs \(the default.s: ([0-9.]*[1-9][0-9.]*|none)\)|no per-sentence rate)'
check "row 'train cpu \\(dry run\\) vs CPU' | grep -qE ' pass +[0-9]+  [0-9]+ steps: cpu loss [0-9.]+->[0-9.]+'" \
  "training row: $(row 'train cpu')"
check "row 'checkpoints GPU<->CPU' | grep -q ' pass '" "checkpoint row: $(row 'checkpoints')"
check "row 'sample, score GPU<->CPU' | grep -qE ' pass +[0-9]+  dry run: samples and scores [0-9]+ lines'" \
  "sampling and scoring row: $(row 'sample, score')"
# step 3b, the feature combinations (the "device" the CPU again: the plumbing)
check "row 'combinations GPU vs CPU' | grep -qE ' pass +[0-9]+  [1-9][0-9]* combinations, [1-9][0-9]* passed, [0-9]+ refused, 0 failed; worst step-loss difference 0 '" \
  "combinations row: $(row 'combinations GPU vs CPU')"
# step 3c, training with and without graphs (the CPU ignores them: the
# same losses, and no cuda counts)
check "row 'train graphs' | grep -qE ' pass +[0-9]+  60 steps, 30 logged, identical losses \\(tol [0-9.]+\\); tgt tok/s epoch 1 [1-9][0-9]* -> [1-9][0-9]* with graphs, epochs 3\\+ 0 -> 0 \\(no rate\\); '" \
  "training with graphs row: $(row 'train graphs')"
# the training run again: the same weights and Adam moments to the bit
check "row 'train cpu \\(dry run\\) twice' | grep -qE ' pass +[0-9]+  identical: [1-9][0-9]* weights, [1-9][0-9]* optimizer values'" \
  "training twice row: $(row 'train cpu (dry run) twice')"
for name in 'bench nmt de-en' 'bench nmt large' 'bench nmt de-en graphs' 'bench nmt large graphs' \
  'bench nmt de-en one-stream' 'bench nmt de-en guided' 'bench nmt de-en layer-norm' \
  'bench nmt de-en persistent' 'bench nmt large persistent' 'bench nmt de-en fp32' 'bench nmt de-en own gemm'; do
  # numbers parsed from bench_train's output: none may be zero or NaN
  check "row '$name' | grep -qE ' info +[0-9]+  [1-9][0-9]* tgt tok/s, [0-9.]*[1-9][0-9.]* ms/step, [0-9.]*[1-9][0-9.]* GFLOP/step = [0-9.]*[1-9][0-9.]* TFLOP/s'" \
    "$name row: $(row "$name")"
done
# bench_train's GEMM shapes (NMT_BENCH_SHAPES=1, in bench.log): every
# shape with its time alone, whose shares of the ceiling's time add up to
# 100% in each benchmark run
shape_re='^  [NT][NT] m [0-9]+ n [0-9]+ k [0-9]+ batch [0-9]+ gemms [0-9]+ GFLOP [0-9.]+; alone [0-9.]+ ms a step \(([0-9.]+)% of the ceiling.s time\), [0-9.]*[1-9][0-9.]* GFLOP/s$'
runs=$(grep -c '^gemm shapes: ' "$out/bench.log")
listed=$(awk '/^gemm shapes: / { n += $3 } END { print n + 0 }' "$out/bench.log")
parsed=$(grep -cE "$shape_re" "$out/bench.log")
share=$(grep -E "$shape_re" "$out/bench.log" | sed -E 's/.* a step \(([0-9.]+)% of the ceiling.*/\1/' | awk '{ s += $1 } END { printf "%.1f", s }')
check "[ $runs -ge 2 ] && [ $parsed -eq $listed ] && awk -v s=$share -v r=$runs 'BEGIN { exit !(s >= 98 * r && s <= 102 * r) }'" \
  "bench.log's GEMM shapes: $runs runs, $listed shapes listed, $parsed with their time alone, shares summing to $share%"
# a CUDA build loads cuBLAS and CUPTI at run time, GPU or not; a CPU-only
# build (make CUDA=0, or no nvcc) has neither, which the dry run notes
if "$NMT" --version 2>/dev/null | grep -q '^cublas:'; then
  check "row 'cuBLAS \\(dlopen\\)' | grep -qE ' ok +[0-9]+  loads$'" "cuBLAS row: $(row 'cuBLAS \(dlopen\)')"
  check "row 'CUPTI \\(dlopen\\)' | grep -qE ' ok +[0-9]+  loads, of the build.s version$'" "CUPTI row: $(row 'CUPTI \(dlopen\)')"
else
  check "row 'cuBLAS \\(dlopen\\)' | grep -qE ' none +[0-9]+  a CPU-only build' && row 'CUPTI \\(dlopen\\)' | grep -qE ' none +[0-9]+  a CPU-only build'" \
    "a CPU-only build's library rows: $(row 'cuBLAS \(dlopen\)'; row 'CUPTI \(dlopen\)')"
fi
# the profile rows run, and say that the CPU has no device profile (the
# fake GPU run below checks what they make of one)
for name in 'bench nmt de-en profile' 'bench nmt large profile'; do
  check "row '$name' | grep -qE ' info +[0-9]+  no device profile off the GPU \\(cpu\\)$'" "$name row: $(row "$name")"
done
for name in 'decode nmt beam 1 profile' 'decode nmt beam 5 profile' 'decode nmt large beam 1 profile'; do
  check "row '$name' | grep -qE ' info +[0-9]+  no device profile off the GPU \\(cpu\\); [0-9.]*[1-9][0-9.]* sent/s \\(4x the input\\)$'" \
    "$name row: $(row "$name")"
done
# the one-stream row also gives the ratio of the first row to it
check "row 'bench nmt de-en one-stream' | grep -qE 'two streams \\(the first row\\) train [0-9.]*[1-9][0-9.]*x as fast as one'" \
  "one-stream row: $(row 'bench nmt de-en one-stream')"
check "! row 'bench nmt large one-stream' | grep -q ." "a one-stream row for the large config"
# the guided alignment and layer-norm rows: the ratio to the plain run, the
# guided one with its alignment loss (above 0); the bench config's only
check "row 'bench nmt de-en guided' | grep -qE 'with the guided alignment loss it trains [0-9.]*[1-9][0-9.]*x as fast as the plain run; alignment loss [0-9.]*[1-9][0-9.]* a token$'" \
  "guided row: $(row 'bench nmt de-en guided')"
check "row 'bench nmt de-en layer-norm' | grep -qE 'with layer normalisation it trains [0-9.]*[1-9][0-9.]*x as fast as the plain run$'" \
  "layer-norm row: $(row 'bench nmt de-en layer-norm')"
# without TF32, through cuBLAS and through the own GEMM kernel (the first
# config only): each against the row it is measured by
check "row 'bench nmt de-en fp32' | grep -qE '; without TF32: TF32 \(the first row\) trains [0-9.]*[1-9][0-9.]*x as fast$'" \
  "fp32 row: $(row 'bench nmt de-en fp32')"
check "row 'bench nmt de-en own gemm' | grep -qE '; nmt.s own GEMM kernel, no TF32: it trains [0-9.]*[1-9][0-9.]*x as fast as cuBLAS without TF32 \(the fp32 row\)$'" \
  "own gemm row: $(row 'bench nmt de-en own gemm')"
check "! row 'bench nmt large fp32' | grep -q . && ! row 'bench nmt large own gemm' | grep -q ." "fp32 or own gemm rows for the large config"
check "! row 'bench nmt large guided' | grep -q . && ! row 'bench nmt large layer-norm' | grep -q ." \
  "a guided or layer-norm row for the large config"
check "grep -q -- '--guided' '$out/bench.log' && grep -q -- '--set model.layer_norm=true' '$out/bench.log'" \
  "bench.log lacks the guided and layer-norm commands"
# each config with NMT_CUDA_PERSISTENT=1 (the CPU path again here): the
# ratio to the plain run, and no note on the cuda counts (the CPU has none)
for name in de-en large; do
  check "row 'bench nmt $name persistent' | grep -qE '; the persistent recurrence trains [0-9.]*[1-9][0-9.]*x as fast as the plain run$'" \
    "$name persistent row: $(row "bench nmt $name persistent")"
done
# the recurrence alone at each config's two encoder shapes (QUICK: hidden
# 64 and 128, B 8 and 16): the step path's times; the CPU has no persistent kernel
for name in 'de-en B 8 H 32' 'de-en B 8 H 64' 'large B 16 H 64' 'large B 16 H 128'; do
  check "row 'recurrence $name' | grep -qE ' info +[0-9]+  T 7: forward [0-9.]*[1-9][0-9.]* ms, backward [0-9.]*[1-9][0-9.]* ms on the step path; persistent unavailable \\(the CPU runs the step path only\\)$'" \
    "recurrence $name row: $(row "recurrence $name")"
done
# real training with validation on Multi30k, graphs off and on (step 3d):
# where ../shared has the corpus, on the CPU here, the same losses and
# validation BLEU both ways; else skipped, naming where it looked
if [ -r "$ROOT/../shared/data/multi30k/train.de.gz" ]; then
  check "row 'train multi30k graphs' | grep -qE ' pass +[0-9]+  20 steps, 20 logged, identical losses \(tol [0-9.]+\); 2 validations \(beam 1\), BLEU [0-9.]+ [0-9.]+ -> [0-9.]+ [0-9.]+ \(0 differ\); tgt tok/s epoch 1 [1-9][0-9]* -> [1-9][0-9]* with graphs'" \
    "train multi30k graphs row: $(row 'train multi30k graphs')"
else
  check "row 'train multi30k graphs' | grep -qE ' skipped +0  no Multi30k at .*multi30k'" \
    "train multi30k graphs row (no ../shared): $(row 'train multi30k graphs')"
fi
# the parity runs need a GPU: NO GPU here (pass where there is one), the
# persistent run's log kept
check "row 'parity persistent' | grep -qE ' (NO GPU +[0-9]+  SKIP: no GPU|pass +[0-9]+  test_gpu_parity: [1-9][0-9]* passed, 0 failed)'" \
  "parity persistent row: $(row 'parity persistent')"
# compute-sanitizer: NO GPU here, never a failure where a GPU hides it
for tool in memcheck racecheck synccheck; do
  check "row '$tool' | grep -qE ' (NO GPU|skipped|unavailable|timeout|pass) '" "$tool row: $(row "$tool")"
done
for beam in 1 5; do
  check "row 'decode nmt beam $beam' | grep -qE ' info +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s, 100 sentences'" \
    "decode beam $beam row: $(row "decode nmt beam $beam")"
  # with NMT_DECODE_QUANTUM=1: the rate, and the lines as the default's
  check "row 'decode nmt beam $beam quantum 1' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_QUANTUM=1 \(the default.s: [0-9.]*[1-9][0-9.]*\); 100 of 100 lines as the default.s'" \
    "decode beam $beam quantum 1 row: $(row "decode nmt beam $beam quantum 1")"
  # never shrunk (NMT_DECODE_QUANTUM=64): the rate, also beyond the
  # first-use costs, next to the default's
  check "row 'decode nmt beam $beam quantum 64' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_QUANTUM=64 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
    "decode beam $beam quantum 64 row: $(row "decode nmt beam $beam quantum 64")"
  # nmt's own GEMM kernel (NMT_CUDA_GEMM=own, which the CPU ignores), for
  # every model: the rate, also beyond the first-use costs
  for tag in "" " large" " de-en.json"; do
    check "row 'decode nmt$tag beam $beam own gemm' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_CUDA_GEMM=own \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s; the process [0-9.]*[1-9][0-9.]* s \(the default.s [0-9.]*[1-9][0-9.]* s\)$'" \
      "decode$tag beam $beam own gemm row: $(row "decode nmt$tag beam $beam own gemm")"
    # the whole process's wall time beside the rate (which leaves out loading)
    check "row 'decode nmt$tag beam $beam' | grep -qE '; the process [0-9.]*[1-9][0-9.]* s$'" \
      "decode$tag beam $beam row, the process: $(row "decode nmt$tag beam $beam")"
  done
  # and so with graphs: two settings at once
  check "row 'decode nmt beam $beam quantum 64 graphs' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_QUANTUM=64 NMT_CUDA_GRAPHS=1 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
    "decode beam $beam quantum 64 graphs row: $(row "decode nmt beam $beam quantum 64 graphs")"
  # the persistent encoder recurrence (NMT_CUDA_PERSISTENT=1, which the
  # CPU ignores): the rate, also beyond the first-use costs
  check "row 'decode nmt beam $beam persistent' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_CUDA_PERSISTENT=1 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
    "decode beam $beam persistent row: $(row "decode nmt beam $beam persistent")"
  # in input order (--maxi-batch 1): the rate, and the lines as the default's
  check "row 'decode nmt beam $beam maxi-batch 1' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with --maxi-batch 1 \(the default.s: [0-9.]*[1-9][0-9.]*\); 100 of 100 lines as the default.s'" \
    "decode beam $beam maxi-batch 1 row: $(row "decode nmt beam $beam maxi-batch 1")"
  # greedy with NMT_DECODE_PIPELINE=0 (the CPU's default here): the rate,
  # also beyond the first-use costs, next to the default's; no beam-5 row
  if [ "$beam" = 1 ]; then
    check "row 'decode nmt beam 1 pipeline off' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_PIPELINE=0 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
      "decode beam 1 pipeline off row: $(row "decode nmt beam 1 pipeline off")"
  else
    check "! row 'decode nmt beam $beam pipeline off' | grep -q ." "a pipeline-off row at beam $beam"
  fi
  # with NMT_DECODE_FOLD=0 (target embeddings not folded): the rate, also
  # beyond the first-use costs, next to the default's, at both beams
  check "row 'decode nmt beam $beam fold off' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_FOLD=0 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
    "decode beam $beam fold off row: $(row "decode nmt beam $beam fold off")"
  # the 4-head model with NMT_DECODE_QUERY_FORM=0 (every head reads its
  # own projected keys): the rate, also beyond the first-use costs
  check "row 'decode nmt de-en.json beam $beam query form off' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_DECODE_QUERY_FORM=0 \(the default.s: [0-9.]*[1-9][0-9.]*\); 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL_VS; 100 of 100 lines as the default.s'" \
    "decode de-en.json beam $beam query form off row: $(row "decode nmt de-en.json beam $beam query form off")"
  # with NMT_CUDA_GRAPHS=1 (ignored by the CPU here): the same output
  check "row 'decode nmt beam $beam graphs' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s with NMT_CUDA_GRAPHS=1, output identical'" \
    "decode beam $beam graphs row: $(row "decode nmt beam $beam graphs")"
  # the large model, and configs/de-en.json's sizes with its 4 attention heads
  for tag in " large" " de-en.json"; do
    check "row 'decode nmt$tag beam $beam' | grep -qE ' info +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s, 100 sentences'" \
      "decode$tag beam $beam row: $(row "decode nmt$tag beam $beam")"
  done
  # the input 4 times over: a rate per sentence beyond the first-use costs
  for tag in "" " large" " de-en.json"; do
    check "row 'decode nmt$tag beam $beam' | grep -qE '; 4x the input: [0-9.]*[1-9][0-9.]* sent/s, $MARGINAL'" \
      "decode$tag beam $beam row, 4x the input: $(row "decode nmt$tag beam $beam")"
  done
done
if [ "$py" != none ]; then
  for name in de-en large; do
    check "row 'PyTorch $name' | grep -qE ' info +[0-9]+  best [1-9][0-9]* tgt tok/s .*nmt/PyTorch [0-9.]*[1-9][0-9.]*x'" \
      "PyTorch $name row: $(row "PyTorch $name")"
  done
  # the same checkpoints and input decoded by reference.py: the speed ratio,
  # and on the same device (the CPU here) the same lines as nmt's (the
  # de-en.json model's with 4 attention heads)
  for tag in "" " large" " de-en.json"; do
    for beam in 1 5; do
      # the faster of PyTorch's two ways (all sentences kept, finished ones dropped)
      check "row 'PyTorch decode$tag beam $beam' | grep -qE ' pass +[0-9]+  [0-9.]*[1-9][0-9.]* sent/s \(the faster of: kept [0-9.]*[1-9][0-9.]*, dropped [0-9.]*[1-9][0-9.]*\); nmt/PyTorch [0-9.]*[1-9][0-9.]*x.*; 100 of 100 lines as nmt.s$'" \
        "PyTorch decode$tag beam $beam row: $(row "PyTorch decode$tag beam $beam")"
      # the bench-size model's ratio in input order too (as PyTorch batches)
      if [ -z "$tag" ]; then
        check "row 'PyTorch decode beam $beam' | grep -qE 'nmt/PyTorch [0-9.]*[1-9][0-9.]*x, in input order \(--maxi-batch 1, as PyTorch batches\) [0-9.]*[1-9][0-9.]*x'" \
          "PyTorch decode beam $beam row, input order: $(row "PyTorch decode beam $beam")"
      fi
      # the own GEMM's ratio; and for beam 1 (the first of the process) the
      # cold rate: the untimed warm-up's first-use costs counted in
      check "row 'PyTorch decode$tag beam $beam' | grep -qE ', with own gemm [0-9.]*[1-9][0-9.]*x'" \
        "PyTorch decode$tag beam $beam row, own gemm: $(row "PyTorch decode$tag beam $beam")"
      if [ "$beam" = 1 ]; then
        check "row 'PyTorch decode$tag beam 1' | grep -qE '; cold \(its warm-up counted, first use as in nmt.s run\) [0-9.]*[1-9][0-9.]* sent/s, nmt/PyTorch [0-9.]*[1-9][0-9.]*x, with own gemm [0-9.]*[1-9][0-9.]*x;'" \
          "PyTorch decode$tag beam 1 row, cold: $(row "PyTorch decode$tag beam 1")"
      else
        check "! row 'PyTorch decode$tag beam 5' | grep -q '; cold'" "PyTorch decode$tag beam 5 row has a cold rate: $(row "PyTorch decode$tag beam 5")"
      fi
      # warm (--warm-passes 4) next to nmt's rate beyond its first-use costs
      check "row 'PyTorch decode$tag beam $beam' | grep -qE '; warm [0-9.]*[1-9][0-9.]* sent/s \(kept [0-9.]*[1-9][0-9.]*, dropped [0-9.]*[1-9][0-9.]*\), nmt beyond its first-use costs ([0-9.]*[1-9][0-9.]*x|n/a);'" \
        "PyTorch decode$tag beam $beam row, warm: $(row "PyTorch decode$tag beam $beam")"
    done
  done
fi
check "grep -qE '^decode nmt.*4x the input: [0-9.]*[1-9][0-9.]* sent/s, so [0-9.]*[1-9][0-9.]* sent/s beyond' '$out/summary.txt'" \
  "no decode row has a rate beyond the first-use costs: $(grep -E '^decode nmt' "$out/summary.txt" | head -3)"
check "! grep -qE 'FAIL\\(|TIMEOUT|MISSING' '$out/summary.txt'" \
  "a step failed: $(grep -E 'FAIL\(|TIMEOUT|MISSING' "$out/summary.txt")"
for f in machine train bench parity-persistent; do
  check "[ -s '$out/$f.log' ]" "no $f.log"
done

# ---- the fake GPU machine ----
fake=$tmp/fake
mkdir -p "$fake/bin" "$fake/tests" "$fake/bench"
cat > "$fake/bin/nvidia-smi" <<'SH'
#!/usr/bin/env bash
if [ "${1:-}" = -L ]; then echo "GPU 0: Fake GPU (UUID: GPU-fake)"; else echo "name, driver_version"; echo "Fake GPU, 0"; fi
SH
cat > "$fake/nmt" <<'SH'
#!/usr/bin/env bash
echo "fake nmt: does nothing" >&2
exit 1
SH
# the parity test: the environment that matters, a pass (a failure where
# the fake compute-sanitizer asks for one)
cat > "$fake/tests/test_gpu_parity" <<'SH'
#!/usr/bin/env bash
echo "env: NMT_CUDA_PERSISTENT=${NMT_CUDA_PERSISTENT:-} NMT_PARITY_SWEEP_STRIDE=${NMT_PARITY_SWEEP_STRIDE:-} NMT_PARITY_SLOTS_ONLY=${NMT_PARITY_SLOTS_ONLY:-} NMT_PARITY_NO_REFUSAL=${NMT_PARITY_NO_REFUSAL:-} NMT_PARITY_NO_PROFILE=${NMT_PARITY_NO_PROFILE:-}"
echo "env2: NMT_CUDA_GEMM=${NMT_CUDA_GEMM:-}"
if [ -n "${FAKE_PARITY_FAIL:-}" ]; then
  echo "FAIL: lstm_seq_recurrence: a fake failure"
  echo "test_gpu_parity: 0 passed, 1 failed"
  exit 1
fi
echo "test_gpu_parity: 1 passed, 0 failed"
SH
# compute-sanitizer runs the program, then reports as each tool would:
# memcheck nothing; racecheck a hazard, exiting 0 all the same (only its
# summary tells); under synccheck the test itself fails, the tool finding
# nothing and exiting with the test's status (only that tells)
cat > "$fake/bin/compute-sanitizer" <<'SH'
#!/usr/bin/env bash
echo "========= fake compute-sanitizer $*"
tool=
while [ $# -gt 1 ]; do
  case $1 in --tool) tool=$2; shift 2 ;; --error-exitcode) shift 2 ;; *) break ;; esac
done
[ "$tool" = synccheck ] && export FAKE_PARITY_FAIL=1
"$@"
rc=$?
case $tool in
  memcheck | synccheck) echo "========= ERROR SUMMARY: 0 errors" ;;
  racecheck) echo "========= Error: Race reported between Write access at fake_kernel+0x10"
             echo "=========     and Read access at fake_kernel+0x20 [4 hazards]"
             echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" ;;
esac
exit $rc
SH
# bench_train as on a GPU: 1000 tgt tokens/s, 1500 with NMT_CUDA_PERSISTENT=1,
# an alignment loss with --guided;
# in that run the bench config's (hidden 64 with GPU_CHECK_QUICK=1) line has
# no persistent count (a bench_train from before it), the large one's 0
cat > "$fake/bench/bench_train" <<'SH'
#!/usr/bin/env bash
tok=1000 count=", 0 persistent recurrences"
if [ "${NMT_CUDA_PERSISTENT:-0}" = 1 ]; then
  tok=1500 count=", 0 persistent recurrences"
  case " $* " in *" model.hidden=64 "*) count="" ;; esac
fi
echo "seconds per step: $(awk -v t=$tok 'BEGIN { printf "%.4f", 100 / t }')"
echo "tgt tokens/s: $tok"
case " $* " in *" --guided "*) echo "loss per token: 5.2000 (guided alignment 0.2000)" ;;
  *) echo "loss per token: 5.0000 (guided alignment 0.0000)" ;; esac
echo "gpu memory MiB: 1200 in use of 143000 (700 taken by the model, arena and optimizer)"
echo "cuda per step: 200 kernel launches, 40 GEMMs, 10 host calls, 0.0 graph launches, 2 lane forks$count; 0 graphs captured in all, 0 captures failed (NMT_CUDA_GRAPHS off)"
echo "cuda host time per step: 1.250 ms in host calls, 80.000 ms waiting for the device (of 100.000 ms); 3 calls over NMT_CUDA_SLOW_CALL_MS in all: cublasSgemm 3 x 12.0 ms"
echo "GEMM GFLOP per step: 1.000"
echo "cublas ceiling GFLOP/s (same shapes): 500.00"
# the device profile of the timed steps, as profile_table_write prints it
if [ "${NMT_CUDA_PROFILE:-0}" = 1 ]; then
  echo "cuda profile: device busy 80.000 ms of 100.000 ms wall a step (80.0%): 212.0 kernels 79.000 ms (own 30.000, libraries' 49.000), 6.0 copies 0.900 ms (3.1 KB), 4.0 memsets 0.100 ms a step; 0 records dropped, 0 untimed"
  echo "cuda profile:  share  ms a step calls a step   us a call  name"
  echo "cuda profile:  50.0%     40.000         32.0     1250.00  sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
  echo "cuda profile:  25.0%     20.000         64.0      312.50  lstm_forward_kernel"
  echo "cuda profile:  12.5%     10.000          1.0    10000.00  softmax_xent_kernel"
  echo "cuda profile:   6.0%      4.800          8.0      600.00  topk_kernel<true>"
fi
SH
# bench_recurrence as on a GPU: the persistent kernel half as fast forward
# and twice as fast backward, except at H 128, where the plan declines
cat > "$fake/bench/bench_recurrence" <<'SH'
#!/usr/bin/env bash
echo "forward ms step: 1.0000"
echo "backward ms step: 4.0000"
case " $* " in
  *" --H 128 "*) echo "persistent: unavailable (the plan declined this shape (the step path ran))" ;;
  *) echo "forward ms persistent: 2.0000"; echo "backward ms persistent: 2.0000"
     echo "persistent/step forward: 2.000"; echo "persistent/step backward: 0.500" ;;
esac
SH
chmod +x "$fake/bin/"* "$fake/nmt" "$fake/tests/test_gpu_parity" "$fake/bench/bench_train" "$fake/bench/bench_recurrence"
fout=$tmp/fake-out
env -u NMT_CUDA_PERSISTENT -u NMT_PARITY_SWEEP_STRIDE -u NMT_PARITY_SLOTS_ONLY PATH="$fake/bin:$PATH" \
  GPU_CHECK_DEVICE=cuda GPU_CHECK_QUICK=1 GPU_CHECK_PYTHON=none OUT="$fout" NMT_BIN="$fake/nmt" NMT_BUILD="$fake" \
  timeout -k 5 120 bash scripts/gpu-check.sh > "$tmp/fake-run.log" 2>&1
rc=$?
check "[ $rc -ne 124 ] && [ $rc -ne 137 ] && [ -s '$fout/summary.txt' ]" "the fake GPU run: exit $rc, $(tail -3 "$tmp/fake-run.log")"
# the device tool returns at most 8 files: the logs come packed (auto)
check "[ \$(find '$fout' -type f | wc -l) -le 8 ] && [ -s '$fout/logs.tar.gz' ]" \
  "the fake run left $(find "$fout" -type f | wc -l) files: $(ls "$fout")"
tar -xzf "$fout/logs.tar.gz" -C "$fout" 2>/dev/null
check "[ -s '$fout/parity.log' ] && [ -s '$fout/synccheck.log' ]" "logs.tar.gz holds: $(tar -tzf "$fout/logs.tar.gz" 2>&1 | tr '\n' ' ')"
frow() { grep -E "^$1 " "$fout/summary.txt" | head -1; }
check "frow 'parity persistent' | grep -qE ' pass +[0-9]+  test_gpu_parity: 1 passed, 0 failed'" \
  "fake parity persistent row: $(frow 'parity persistent')"
check "grep -qx 'env: NMT_CUDA_PERSISTENT=1 NMT_PARITY_SWEEP_STRIDE=9 NMT_PARITY_SLOTS_ONLY= NMT_PARITY_NO_REFUSAL= NMT_PARITY_NO_PROFILE=' '$fout/parity-persistent.log'" \
  "parity persistent's environment: $(grep '^env' "$fout/parity-persistent.log" 2>&1)"
check "frow 'parity own gemm' | grep -qE ' pass +[0-9]+  test_gpu_parity: 1 passed, 0 failed' && grep -qx 'env: NMT_CUDA_PERSISTENT= NMT_PARITY_SWEEP_STRIDE=9 NMT_PARITY_SLOTS_ONLY= NMT_PARITY_NO_REFUSAL= NMT_PARITY_NO_PROFILE=' '$fout/parity-own-gemm.log' && grep -qx 'env2: NMT_CUDA_GEMM=own' '$fout/parity-own-gemm.log'" \
  "fake parity own gemm row: $(frow 'parity own gemm'); $(grep '^env' "$fout/parity-own-gemm.log" 2>&1)"
check "frow memcheck | grep -qE ' pass +[0-9]+  ERROR SUMMARY: 0 errors$'" "fake memcheck row: $(frow memcheck)"
check "grep -qx 'env: NMT_CUDA_PERSISTENT= NMT_PARITY_SWEEP_STRIDE=9 NMT_PARITY_SLOTS_ONLY= NMT_PARITY_NO_REFUSAL=1 NMT_PARITY_NO_PROFILE=1' '$fout/memcheck.log'" \
  "memcheck's environment: $(grep '^env' "$fout/memcheck.log" 2>&1)"
# racecheck exited 0: the FAIL comes from its summary
check "frow racecheck | grep -qE ' FAIL +[0-9]+  Error: Race reported between Write access at fake_kernel'" \
  "fake racecheck row: $(frow racecheck)"
# synccheck's summary counts no errors: the FAIL comes from the exit status
check "frow synccheck | grep -qE ' FAIL\(1\) +[0-9]+  FAIL: lstm_seq_recurrence: a fake failure'" "fake synccheck row: $(frow synccheck)"
for tool in racecheck synccheck; do
  check "grep -q -- '^========= fake compute-sanitizer --tool $tool --error-exitcode 99 ' '$fout/$tool.log' &&
    grep -qx 'env: NMT_CUDA_PERSISTENT= NMT_PARITY_SWEEP_STRIDE= NMT_PARITY_SLOTS_ONLY=1 NMT_PARITY_NO_REFUSAL=1 NMT_PARITY_NO_PROFILE=1' '$fout/$tool.log'" \
    "$tool's command or environment: $(head -3 "$fout/$tool.log" 2>&1)"
done
# the persistent rows: the ratio, and the notes from the cuda counts
check "frow 'bench nmt de-en persistent' | grep -qE ' info +[0-9]+  1500 tgt tok/s.*; the persistent recurrence trains 1.500x as fast as the plain run; persistent recurrences not counted'" \
  "fake de-en persistent row: $(frow 'bench nmt de-en persistent')"
check "frow 'bench nmt large persistent' | grep -qE ' info +[0-9]+  1500 tgt tok/s.*; the persistent recurrence trains 1.500x as fast as the plain run; persistent path not taken'" \
  "fake large persistent row: $(frow 'bench nmt large persistent')"
# the recurrence rows from bench_recurrence's lines: both ratios, or the
# reason the persistent kernel did not run
check "frow 'recurrence de-en B 8 H 32' | grep -qE ' info +[0-9]+  T 7: forward 1.0000 ms, backward 4.0000 ms on the step path; persistent 2.0000 / 2.0000 ms \\(2.000x / 0.500x\\)$'" \
  "fake recurrence row: $(frow 'recurrence de-en B 8 H 32')"
check "frow 'recurrence large B 16 H 128' | grep -qE '; persistent unavailable \\(the plan declined this shape \\(the step path ran\\)\\)$'" \
  "fake declined recurrence row: $(frow 'recurrence large B 16 H 128')"
# every bench row but the profile's carries the host time of a step
check "[ \$(grep -cE '^bench nmt .*; host calls 1.250 ms and waits 80.000 ms of 100.000 ms a step' '$fout/summary.txt') -eq \$(grep -E '^bench nmt .* info ' '$fout/summary.txt' | grep -cv '^bench nmt [a-z-]* profile ') ]" \
  "a bench row without the host time: $(grep -E '^bench nmt' "$fout/summary.txt" | grep -v 'ms and waits' | grep -v ' profile ' | head -2)"
# the profile rows: the totals and the three rows with the most device time
# (a long name cut), from bench_train's report under NMT_CUDA_PROFILE=1, and
# the GEMMs' rate in the step: 1 GFLOP a step in the libraries' 49 ms
want_profile="device busy 80.000 ms of 100.000 ms wall a step (80.0%): 212.0 kernels 79.000 ms (own 30.000, libraries' 49.000); 0 records dropped, 0 untimed; most device time: sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32... 50.0%, lstm_forward_kernel 25.0%, softmax_xent_kernel 12.5%; the step's GEMMs (cuBLAS's kernels) at 0.0204 TFLOP/s in the step, 0.5 alone; 1000 tgt tok/s under the profiler"
for cfg in de-en large; do
  check "frow 'bench nmt $cfg profile' | grep -qF ' info ' && frow 'bench nmt $cfg profile' | grep -qF \"\$want_profile\"" \
    "fake $cfg profile row: $(frow "bench nmt $cfg profile")"
done
# summary.md: the same rows as a markdown table, brought back beside summary.txt
check "[ -s '$fout/summary.md' ] && grep -qx '| step | result | detail |' '$fout/summary.md' &&
  [ \$(grep -c '^| ' '$fout/summary.md') -eq \$(sed -n '/^step  *result/,/^total:/p' '$fout/summary.txt' | wc -l) ]" \
  "summary.md: $(head -5 "$fout/summary.md" 2>&1)"
check "grep -qE '^\\| racecheck \\| FAIL \\| Error: Race reported' '$fout/summary.md'" "summary.md's racecheck row: $(grep racecheck "$fout/summary.md")"
# the other bench rows: no such notes, no failure (their cuda line counts
# 0 persistent recurrences, as off the persistent path it should)
check "! grep -E '^bench nmt' '$fout/summary.txt' | grep -vE '^bench nmt [a-z-]+ persistent ' | grep -qE 'recurrence trains|persistent path|not counted|FAIL'" \
  "a note or failure on another bench row: $(grep -E '^bench nmt' "$fout/summary.txt" | grep -vE '^bench nmt [a-z-]+ persistent ')"
# the guided row carries bench_train's alignment loss (the fake's 0.2000 with --guided)
check "frow 'bench nmt de-en guided' | grep -qE ' info .*with the guided alignment loss it trains 1.000x as fast as the plain run; alignment loss 0.2000 a token$'" \
  "the fake run's guided row: $(frow 'bench nmt de-en guided')"
# GPU_CHECK_STEPS: only the steps named run; the others' rows say so; an
# unknown step is refused before anything runs
fout2=$tmp/fake-steps
env -u NMT_CUDA_PERSISTENT -u NMT_PARITY_SWEEP_STRIDE -u NMT_PARITY_SLOTS_ONLY PATH="$fake/bin:$PATH" \
  GPU_CHECK_STEPS=1,5 GPU_CHECK_DEVICE=cuda GPU_CHECK_QUICK=1 GPU_CHECK_PYTHON=none OUT="$fout2" NMT_BIN="$fake/nmt" \
  NMT_BUILD="$fake" timeout -k 5 120 bash scripts/gpu-check.sh > "$tmp/fake-steps.log" 2>&1
srow() { grep -E "^$1 " "$fout2/summary.txt" | head -1; }
check "srow 'parity \\(NMT_SYNC_DEBUG=1\\)' | grep -qE ' pass ' && srow 'bench nmt de-en profile' | grep -qE ' info '" \
  "GPU_CHECK_STEPS=1,5 left out a step it names: $(srow 'parity \(NMT_SYNC_DEBUG=1\)'); $(srow 'bench nmt de-en profile')"
for name in 'parity \(NMT_TF32=1\)' 'parity persistent' 'parity own gemm' 'train multi30k graphs' 'train GPU vs CPU' 'checkpoints GPU<->CPU' 'combinations GPU vs CPU' recurrence 'decode nmt' PyTorch memcheck synccheck; do
  check "srow '$name' | grep -qE ' skipped +0  not in GPU_CHECK_STEPS$'" "GPU_CHECK_STEPS=1,5 ran $name: $(srow "$name")"
done
out3=$(GPU_CHECK_STEPS=1,4 OUT="$tmp/fake-bad" NMT_BIN="$fake/nmt" NMT_BUILD="$fake" bash scripts/gpu-check.sh 2>&1); rc=$?
check "[ $rc -eq 2 ] && printf '%s' \"\$out3\" | grep -qF \"GPU_CHECK_STEPS=1,4: no step '4' (steps: 1 2 2b 2c 3 3b 3c 3d 5 5b 6 7 8)\"" \
  "GPU_CHECK_STEPS=1,4: exit $rc: $out3"
test_end
