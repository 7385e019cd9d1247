#!/usr/bin/env bash
# test_gpu_emu_parity.sh: the CPU-GPU parity test (tests/test_gpu_parity.c)
# with the CUDA kernels compiled by g++ against the CPU emulator of
# tests/gpu_emu/ (mk/gpu.mk), on machines without a GPU, in the
# emulator's modes. No substitute for a GPU run. (nmt itself on the
# emulated backend: test_gpu_emu.sh.)
#  1. `make gpu-emu-check`: every slot test, the whole-model parity
#     (training steps and decoding of the models and every
#     GPU_EMU_SWEEP_STRIDE-th attention combination), graphs, the step's
#     traffic, the error path and the profile: the kernels' indexing,
#     barriers and reductions against the CPU backend.
#  2. The emulator's own self-test (`make gpu-emu-selftest`): work deferred
#     until the host waits, event forks and joins in both stream orders,
#     capture with a fork and a join, graph replays, when copies read host
#     memory, cuBLAS handles' streams.
#  3. The slot tests again with the blocks, warps and threads in reverse
#     and in shuffled order (EMU_SCHEDULE, tests/gpu_emu/emu.cpp): a kernel
#     whose result depends on the order (a missing barrier between warps)
#     fails here.
#  4. The whole test (one model of the sweep) with the latest-created
#     stream run first where it can (EMU_STREAM_ORDER=last,
#     tests/gpu_emu/cuda_runtime.h): work on a second stream then runs as
#     early as its event waits allow, so a missing fork reads stale data, as
#     the default order (the main stream first) shows a missing join.
#  5. The whole test (every 36th model of the sweep) with the persistent
#     recurrence (NMT_CUDA_PERSISTENT=1, docs/gpu.md): each encoder layer's
#     recurrence, forward and backward, runs as one cooperative kernel whose
#     blocks wait for each other at a grid barrier every step; the test
#     checks that the models ran it.
#  6. The whole test (every 36th model of the sweep) with the kernels
#     compiled with their multiplies and adds fused, as nvcc compiles them
#     (mk/gpu.mk, GPU_EMU_FMA): a kernel whose result hangs on a product
#     being rounded on its own fails here as on a GPU (layer_norm_backward
#     over one column did, 2026-12-04). On a CPU with FMA only.
#  7. The whole test (every 72nd model of the sweep) with nmt's own GEMM
#     kernel for every GEMM (NMT_CUDA_GEMM=own, src/gpu/gpu_own_gemm.cu):
#     the models' training steps and decoding with it against the CPU
#     (its bit-for-bit check against its CPU twin runs in every run).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_gpu_emu_parity
. "$ROOT/tests/gpu_emu/lib.sh"

# 1. the parity test (its stride is mk/gpu.mk's)
emu_make test_gpu_parity emu_selftest
log=$tmp/parity.log
emu_mk gpu-emu-check > "$log" 2>&1
grep -E '^SKIP' "$log"
add_counts "$log" test_gpu_parity "the emulated parity test"

# 2. the emulator's self-test
"$EMU_DIR/emu_selftest" > "$tmp/selftest.log" 2>&1
add_counts "$tmp/selftest.log" emu_selftest "the emulator's self-test"

# 3. the slot tests in other thread orders
for sched in reverse shuffle; do
  parity_run "the slot tests in $sched order" "$tmp/sched-$sched.log" \
    EMU_SCHEDULE=$sched EMU_SEED=1 NMT_PARITY_SLOTS_ONLY=1
done

# 4. the streams in the other order
parity_run "the parity test with EMU_STREAM_ORDER=last" "$tmp/order.log" \
  EMU_STREAM_ORDER=last NMT_PARITY_SWEEP_STRIDE=72

# 5. the persistent recurrence
parity_run "the parity test with NMT_CUDA_PERSISTENT=1" "$tmp/persist.log" \
  NMT_CUDA_PERSISTENT=1 NMT_PARITY_SWEEP_STRIDE=36

# 6. the kernels with fused multiply-adds
if [ "$(uname -m)" != x86_64 ] || grep -qw fma /proc/cpuinfo; then
  if ! emu_mk "$EMU_BUILD/gpu-emu-fma/test_gpu_parity" > "$tmp/emu-make-fma.log" 2>&1; then
    tail -20 "$tmp/emu-make-fma.log"
    bad "make of the fused-multiply-add parity test failed (see above)"
  fi
  env NMT_PARITY_SWEEP_STRIDE=36 "$EMU_BUILD/gpu-emu-fma/test_gpu_parity" > "$tmp/fma.log" 2>&1
  add_counts "$tmp/fma.log" test_gpu_parity "the parity test with fused multiply-adds"
else
  echo "SKIP: this CPU has no FMA: the parity test with fused multiply-adds"
fi

# 7. nmt's own GEMM kernel
parity_run "the parity test with NMT_CUDA_GEMM=own" "$tmp/own-gemm.log" \
  NMT_CUDA_GEMM=own NMT_PARITY_SWEEP_STRIDE=72
grep -q 'NMT_CUDA_GEMM=own)$' "$tmp/own-gemm.log" || bad "the NMT_CUDA_GEMM=own run did not say it ran with it"
test_end
