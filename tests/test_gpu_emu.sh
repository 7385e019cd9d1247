#!/usr/bin/env bash
# test_gpu_emu.sh: the CPU-GPU parity test with the CUDA kernels compiled by
# g++ against the CPU emulator of tests/gpu_emu/ (mk/gpu.mk, gpu-emu-check):
# checks the kernels' indexing, barriers and reductions against the CPU
# backend on machines without a GPU. No substitute for a GPU run.
set -u
cd "$(dirname "$0")/.."
log=$(mktemp)
if ! make -s gpu-emu-check > "$log" 2>&1; then
  cat "$log"
  grep -q -E '^test_gpu_parity: [0-9]+ passed' "$log" || echo "test_gpu_emu: 0 passed, 1 failed"
  rm -f "$log"
  exit 1
fi
grep -E '^(SKIP|test_gpu_parity:)' "$log"
line=$(grep -E '^test_gpu_parity: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
rm -f "$log"
echo "test_gpu_emu: ${line#test_gpu_parity: }"
