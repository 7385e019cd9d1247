#!/usr/bin/env bash
# gpu-check.sh: the whole check of the CUDA backend on a GPU machine, in one
# run of at most about 8 minutes (shared/GPU.md; results go into
# docs/gpu-runs.md by hand).
#
#   build/gpu-bundle/gpu-check.sh    from a bundle made by `make gpu-bundle`
#   scripts/gpu-check.sh             from a tree built with CUDA
#   gpu-check.sh --print-env         print the LD_LIBRARY_PATH export line
#                                    (the bundle's run.sh uses it) and stop
#
# Steps: nvidia-smi -L and the driver; ldd of the binaries (libraries not
# found); `nmt --version`; the CPU-GPU parity test (every Backend slot,
# whole training steps, greedy and beam decoding) with NMT_SYNC_DEBUG=1, then
# again with NMT_TF32=1; compute-sanitizer memcheck over the parity test
# when the tool works on this machine. The benchmark and a GPU training run
# are skipped with a note until bench_train and the trainer have a device
# switch. Full logs go to $OUT when set, else build/gpu-out/ (tree) or
# gpu-out/ (bundle): at most 8 files. A short table is printed last.
# Exit status: 0 when every step that ran passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/test_gpu_parity" ]; then # a bundle: everything beside this script
    NMT="$here/nmt"
    PARITY="$here/test_gpu_parity"
    BENCH="$here/bench_train"
    default_out="$here/gpu-out"
    commit=$(cat "$here/COMMIT" 2>/dev/null || echo unknown)
    [ -d "$here/lib" ] && bundle_lib="$here/lib" || bundle_lib=""
else
    root=$(cd "$here/.." && pwd)
    NMT="$root/nmt"
    PARITY="$root/build/tests/test_gpu_parity"
    BENCH="$root/build/bench/bench_train"
    default_out="$root/build/gpu-out"
    commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
    bundle_lib=""
fi

# The bundle's libraries first, then the machine's CUDA 13 libraries
# (cuBLAS, cuBLASLt): the toolkit's folders, or pip's nvidia packages.
libpath=$bundle_lib
add_dir() { [ -d "$1" ] && libpath="${libpath:+$libpath:}$1"; }
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libcublas.so.13" ] && add_dir "$d"
done
for s in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for d in "$s"/nvidia/cu13/lib "$s"/nvidia/cublas/lib; do
        [ -e "$d/libcublas.so.13" ] && add_dir "$d"
    done
done
export LD_LIBRARY_PATH="${libpath}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "${1:-}" = --print-env ]; then
    printf 'export LD_LIBRARY_PATH=%q\n' "$LD_LIBRARY_PATH"
    exit 0
fi

out=${OUT:-$default_out}
mkdir -p "$out" || exit 1
summary="$out/summary.txt"
: >"$summary"
failed=0
rows=()

# row NAME RESULT SECONDS DETAIL
row() { rows+=("$(printf '%-26s %-12s %6s  %s' "$1" "$2" "$3" "$4")"); }

# run_step NAME LOG LIMIT_S CMD...: runs CMD with a time limit, output to LOG
run_step() {
    local name=$1 log=$2 limit=$3 start rc line
    shift 3
    start=$(date +%s)
    echo "== $name: $*"
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    local took=$(($(date +%s) - start))
    line=$(grep -E '^[A-Za-z0-9_./-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        row "$name" "TIMEOUT" "$took" "over ${limit}s; ${line:-no summary}"
        failed=1
    elif [ "$rc" -ne 0 ]; then
        row "$name" "FAIL($rc)" "$took" "${line:-$(tail -n 1 "$log")}"
        failed=1
    elif grep -q '^SKIP: no GPU' "$log"; then
        row "$name" "NO GPU" "$took" "$(grep -m1 '^SKIP' "$log" | cut -c1-100)"
        failed=1
    else
        row "$name" "pass" "$took" "${line:-ok}"
    fi
    grep -E '^(FAIL|SKIP)' "$log" | head -n 20
    echo "   -> $(tail -n 1 "$log")"
}

echo "== gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $commit, logs in $out"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit: $commit"
    echo "host: $(uname -a)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    else
        echo "nvidia-smi: not found"
    fi
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for b in "$NMT" "$PARITY" "$BENCH"; do
        echo "-- ldd $b"
        ldd "$b" 2>&1
    done
    echo "-- nmt --version"
    "$NMT" --version 2>&1
} >"$out/machine.log" 2>&1
gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
echo "${gpu:-nvidia-smi: no GPU listed}"
row "nvidia-smi -L" "$([ -n "$gpu" ] && echo ok || echo none)" 0 "${gpu:-no GPU listed}"
missing=$(grep '=> not found' "$out/machine.log" | sort -u | tr -s ' \t' ' ' | tr '\n' ';')
if [ -n "$missing" ]; then
    row "shared libraries" "MISSING" 0 "$missing"
    failed=1
else
    row "shared libraries" "ok" 0 "all found (ldd in machine.log)"
fi
cuda_line=$(grep '^cuda:' "$out/machine.log" | head -n 1)
row "nmt --version" "info" 0 "${cuda_line:-no cuda line}"

# 1. parity, every launch synchronised and checked
run_step "parity (NMT_SYNC_DEBUG=1)" "$out/parity.log" 210 env NMT_SYNC_DEBUG=1 "$PARITY"
# 2. parity with TF32 tensor cores in cuBLAS (looser gemm tolerance)
run_step "parity (NMT_TF32=1)" "$out/parity-tf32.log" 120 env NMT_TF32=1 "$PARITY"

# 3. memory checker, where the machine's runtime allows it
if command -v compute-sanitizer >/dev/null 2>&1; then
    start=$(date +%s)
    echo "== memcheck: compute-sanitizer --tool memcheck $PARITY"
    timeout -k 10 120 compute-sanitizer --tool memcheck --error-exitcode 99 "$PARITY" \
        >"$out/memcheck.log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    if grep -qE 'Device not supported|error 999|Failed to initialize|LibraryNotLoaded' "$out/memcheck.log"; then
        row "memcheck" "unavailable" "$took" "compute-sanitizer cannot run here (memcheck.log)"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        row "memcheck" "timeout" "$took" "not finished in 120s (not a failure)"
    elif [ "$rc" -ne 0 ]; then
        row "memcheck" "FAIL($rc)" "$took" "$(grep -m1 -E 'ERROR SUMMARY|Invalid|error' "$out/memcheck.log")"
        failed=1
    else
        row "memcheck" "pass" "$took" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck.log")"
    fi
else
    row "memcheck" "skipped" 0 "compute-sanitizer not on PATH"
fi

# 4. benchmark and GPU training: only once the programs can choose the device
if "$BENCH" --help 2>&1 | grep -q -- '--device'; then
    row "bench_train" "skipped" 0 "bench_train has --device: add its run here"
else
    row "bench_train" "skipped" 0 "bench_train has no device switch yet"
fi
row "training GPU vs CPU" "skipped" 0 "the trainer has no device switch yet (train.device=cuda)"
row "beam decode GPU vs CPU" "in parity" 0 "greedy and beam tokens compared in the parity test"

{
    echo
    echo "== gpu-check summary (commit $commit)"
    printf '%-26s %-12s %6s  %s\n' "step" "result" "secs" "detail"
    for r in "${rows[@]}"; do echo "$r"; done
    echo "overall: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL)"
} | tee -a "$summary"
exit "$failed"
