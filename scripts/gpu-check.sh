#!/usr/bin/env bash
# gpu-check.sh: the whole check of the CUDA backend on a GPU machine, and the
# GPU benchmark of issue #6, in one run of at most about 8 minutes
# (shared/GPU.md; results go into docs/gpu-runs.md by hand).
#
#   build/gpu-bundle/gpu-check.sh    from a bundle made by `make gpu-bundle`
#   scripts/gpu-check.sh             from a tree built with CUDA
#   gpu-check.sh --print-env         print the LD_LIBRARY_PATH export line
#                                    (the bundle's run.sh uses it) and stop
#
# Steps, each under its own time limit; each is also cut to what is left of
# GPU_CHECK_BUDGET (default 480 s from the start), and one with under 20 s
# left is "skipped", so that a slow step cannot eat the run.
# GPU_CHECK_LIMIT_SCALE=K multiplies every step's limit by K (default 1):
# the dry run on a loaded CPU (tests/test_gpu_check_dry.sh), where the
# limits should only stop a hang.
# GPU_CHECK_STEPS=ID,... runs only the steps named (ids 1 2 2b 2c 3 3b 3c 3d 5 5b 6 7 8
# as below; 3 is 3 and 4, 7 needs 6's models for its decoding rows): a
# short lease spent in parts, e.g. GPU_CHECK_STEPS=1,5,6 then 2,2b,3,7,8.
# The steps:
#   nvidia-smi -L and the driver; ldd of the binaries (libraries not found);
#   `nmt --version`;
#   1. the CPU-GPU parity test (every Backend slot, whole training steps,
#      greedy and beam decoding) with NMT_SYNC_DEBUG=1 (210 s);
#   2. again with NMT_TF32=1 (120 s): the GEMM slots at 1e-2, models skipped;
#   2b. again with NMT_CUDA_PERSISTENT=1 (90 s; every 9th model of the
#      attention sweep): the encoder's LSTM recurrence as one cooperative
#      kernel per layer (docs/gpu.md, "Persistent recurrence"), row "parity
#      persistent"; the test also wants the models to have taken that path;
#   2c. again with NMT_CUDA_GEMM=own (60 s; every 9th model): every GEMM by
#      nmt's own kernel (docs/gpu.md, "Own GEMM"; cuBLAS not loaded), row
#      "parity own gemm" (the own kernel's bit-for-bit check against its
#      CPU twin runs in step 1 too);
#   3. training GPU vs CPU (150 s): `nmt demo-corpus` and `nmt prepare`,
#      then one small config (demo sizes) trained 200 steps with
#      train.device=cuda and with train.device=cpu, same seed: the GPU loss
#      must fall by 0.5 nats from its first logged value and stay within
#      GPU_CHECK_TRAIN_TOL (0.002) relative of the CPU loss at every logged
#      step (train.csv, every 10 steps); both curves go into train.log;
#      then the GPU run again: the same weights and Adam moments to the bit
#      (scripts/ckpt_same.py; 60 s);
#   4. checkpoints across devices (90 s): the GPU-trained last.nmt translates
#      the test set (beam 5) with --device cpu and --device cuda, the
#      CPU-trained one likewise; each pair must agree on >= 90% of the lines;
#      then (60 s) the GPU-trained one samples the test set (--sample 10)
#      and scores its references (nmt score) on both devices: >= 90% of the
#      samples the same, scores within 1e-3 relative (row "sample, score");
#   3b. feature combinations (90 s): scripts/combo-soak.sh --device cuda,
#      random combinations of the features on a tiny model, each trained on
#      the CPU and the GPU: exact resume on both, the first step the CPU's,
#      later losses as near as a CPU run from nudged weights, the CPU's
#      checkpoint translating to the CPU's lines (row "combinations GPU vs
#      CPU"; log combo-soak.log);
#   3c. training with CUDA graphs on batches of varying shape (120 s): the
#      demo corpus batched by length at the bench config's sizes, 1000
#      steps (8 epochs) with NMT_CUDA_GRAPHS=0 and =1: the same losses, the
#      target tokens/s of the first epoch and of the third on, the graph
#      counts and the device memory in use at the end (row "train graphs");
#      steps 3 to 3d run with nmt's default (graphs), steps 5 to 8 with
#      NMT_CUDA_GRAPHS=0 except where a row says graphs;
#   3d. real training with validation, graphs on and off (150 s): Multi30k
#      (GPU_CHECK_MULTI30K, else the bundle's data/multi30k, which make
#      gpu-bundle copies from ../shared, else ../shared/data/multi30k;
#      "skipped" where there is none), configs/de-en.json's model
#      (SentencePiece 8000, 4 heads, dropout 0.3), GPU_CHECK_M30K_STEPS
#      (1000, about 2.2 epochs) steps with validation (BLEU, beam 5) every
#      250, with NMT_CUDA_GRAPHS=0 and =1: the same losses (TRAIN_TOL) and
#      the same validation BLEU, the target tokens/s of epoch 1 and of the
#      epochs after, the graph counts and the device memory at the end
#      (row "train multi30k graphs");
#   5. nmt benchmark (100 s per config): bench_train --device cuda with
#      NMT_TF32=1 on synthetic batches, for the bench config (configs/de-en-2x512.json
#      sizes, B 64, S 13, T 16, vocabularies 8000/8000: the mean Multi30k
#      batch of docs/benchmarks.md) and a larger one (emb 512, hidden 1024,
#      B 128): target tokens/s, GPU memory, GEMM FLOPs per step, achieved
#      FLOP/s, and cuBLAS alone on the same GEMM shapes; each config again
#      with NMT_CUDA_GRAPHS=1 (host calls and graph launches per step), the
#      bench config once more with NMT_CUDA_LANES=0 (the encoder's two
#      directions on one stream: what the second stream gains), with the
#      guided alignment loss (bench_train --guided; the alignment loss must
#      be above 0) and with model.layer_norm (rows "bench nmt de-en guided"
#      and "... layer-norm": tokens/s against the plain run's), and each
#      config with NMT_CUDA_PERSISTENT=1 (tokens/s against the plain run's,
#      and a note where bench_train counts no persistent recurrences: the
#      path was not taken, a note and not a failure), and per step the
#      host's time in CUDA calls and in waits for the device (docs/gpu.md,
#      "Host time"); an output without those numbers is a FAIL(parse);
#      the bench config without TF32 through cuBLAS and through nmt's own
#      GEMM kernel (rows "bench nmt de-en fp32" and "... own gemm", each
#      against the row it is measured by; "same-shape GEMMs alone" is then
#      the own kernel's rate on training's shapes);
#      and each config with NMT_CUDA_PROFILE=1 (rows "bench nmt NAME
#      profile"): the device profile of the timed steps (docs/gpu.md,
#      "Profile"): the device's busy time a step against the step's wall
#      time, and the three kernels with the most device time (the table of
#      40 rows in bench.log); on cuda a run without it fails;
#   5b. the encoder's recurrence alone (30 s per shape): bench_recurrence
#      at each config's two encoder shapes (hidden/2 per direction, then
#      hidden), forward and backward through the step path and the
#      persistent kernel, in ms and as ratios (rows "recurrence ...");
#   6. decoding speed (120 s per model): a model of the bench config's
#      sizes, one of the large config's (emb 512, hidden 1024) and one of
#      configs/de-en.json's (emb 256, hidden 256, 1+1 layers, 4 attention
#      heads; rows "decode nmt de-en.json ..."), each
#      trained 150 steps on the GPU on the demo corpus, then `nmt translate
#      --device cuda` of the 500 test sentences with --beam 1 and 5
#      (sentences/s from --progress, i.e. without loading the model, and
#      the whole process's wall time beside it, in every variant row too; with
#      the whole run's host time in CUDA calls, in waits and in calls over
#      1 ms, named by kind: docs/gpu.md, "Host time"), then
#      the same input 4 times over in one run (2000 lines): the rate of the
#      sentences the longer run adds, and the milliseconds of first-use costs
#      (libraries, kernels, new batch shapes) that leaves in the short run;
#      then the 4 times over again with NMT_CUDA_PROFILE=1 (rows "decode
#      nmt ... beam B profile": the device's busy share of the run and the
#      kernels with the most device time, the table in bench.log);
#      the bench-size model's each again with NMT_DECODE_QUANTUM=1 (the
#      batch shrunk at every finished sentence instead of to multiples of
#      8), NMT_DECODE_QUANTUM=64 (never shrunk), that with NMT_CUDA_GRAPHS=1,
#      NMT_CUDA_PERSISTENT=1 (the encoder's recurrence in one kernel),
#      --maxi-batch 1 (input order), NMT_DECODE_PIPELINE=0 (greedy only)
#      and NMT_DECODE_FOLD=0, each with at least 90% of the lines the
#      default's (all but quantum 1 and maxi-batch 1 also 4 times over), and
#      with NMT_CUDA_GRAPHS=1, whose output must be identical; the de-en.json
#      model's (4 heads) again with NMT_DECODE_QUERY_FORM=0, also 4 times over;
#      every model's both beams with NMT_CUDA_GEMM=own (nmt's own GEMM
#      kernel, cuBLAS never loaded: rows "decode nmt ... own gemm"), also 4
#      times over, with the short run's host time;
#   7. PyTorch (120 s per config): scripts/torch_gpu_bench.py with the same
#      sizes and batch shapes (cuDNN LSTMs, TF32 allowed), the ratio
#      nmt/PyTorch, the rate of one 8192^3 TF32 GEMM, and the model's FLOP/s
#      (formula: docs/benchmarks.md) as a fraction of it for nmt and PyTorch; then
#      (60 s per model and way) `reference.py decode --device cuda`
#      translates step 6's input with step 6's checkpoints, beam 1 and 5 (the
#      same search, float32 on both sides), once with every sentence kept in
#      the batch to the end and once with finished ones dropped, the faster
#      counting: sentences/s, the ratio nmt/PyTorch, and the lines identical
#      to nmt's, which must be at least 90% for each way; then PyTorch's
#      rate over the input 4 times again in the same process (warm:
#      --warm-passes 4), next to nmt's rate beyond its first-use costs;
#      the ratio with NMT_CUDA_GEMM=own; and for beam 1, the first beam of
#      the process, PyTorch's cold rate (its untimed one-sentence warm-up,
#      which paid the first use of its libraries, counted in) and nmt's
#      ratios to it;
#      "unavailable" (not a failure) when no python3 has torch with CUDA;
#   8. compute-sanitizer over the parity test where the tool works on this
#      machine: memcheck (every 9th model of the attention sweep; 120 s),
#      then racecheck (shared-memory data hazards) and synccheck (barrier
#      misuse) over its slot tests alone (NMT_PARITY_SLOTS_ONLY=1, which
#      include the persistent kernels; 60 s each); an error the tool reports
#      (its exit status, or a summary that counts errors) fails, a timeout
#      does not.
# Without a GPU every GPU step says "NO GPU" (the check fails, as it should
# there). GPU_CHECK_DEVICE=cpu runs steps 3-7 with cpu in place of cuda, a
# dry run of their logic (the NMT_CUDA_* variants then run the CPU path
# again); GPU_CHECK_QUICK=1 shrinks sizes and step counts.
# Full logs go to $OUT when set, else build/gpu-out/ (tree) or gpu-out/
# (bundle): 13 files (machine, parity, parity-tf32, parity-persistent, parity-own-gemm, train,
# bench, torch, memcheck, racecheck and synccheck .log, summary.txt, and
# summary.md: the rows as the markdown table of a docs/gpu-runs.md entry),
# the .log files packed at the end into logs.tar.gz, since the device tool
# returns at most 8 files (GPU_CHECK_PACK=0 leaves them loose, =1 packs
# any number); scratch
# files (corpus, checkpoints) go to a temporary folder, removed at the end
# (GPU_CHECK_KEEP=1 keeps it). A short table is printed last. Exit status: 0
# when every step that ran passed (benchmark numbers never fail the check; a
# crash of nmt or bench_train does; PyTorch's troubles do not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/test_gpu_parity" ]; then # a bundle: everything beside this script
    NMT="$here/nmt"
    PARITY="$here/test_gpu_parity"
    BENCH="$here/bench_train"
    BENCH_REC="$here/bench_recurrence"
    TORCH_BENCH="$here/torch_gpu_bench.py"
    REFERENCE="$here/reference.py"
    CKPT_SAME="$here/ckpt_same.py"
    COMBO_SOAK="$here/combo-soak.sh"
    BENCH_CONFIG="$here/configs/de-en-2x512.json"
    MULTI30K_DIR="$here/data/multi30k" # mk/gpu.mk copies it in where ../shared has it
    default_out="$here/gpu-out"
    commit=$(cat "$here/COMMIT" 2>/dev/null || echo unknown)
    [ -d "$here/lib" ] && bundle_lib="$here/lib" || bundle_lib=""
    # the bundle's largest libraries travel gzipped (mk/gpu.mk: the call
    # carries at most 64 MiB); unpacked here once, beside their .gz
    for z in "$here"/lib/*.gz; do
        [ -e "$z" ] && [ ! -e "${z%.gz}" ] || continue
        gzip -dc "$z" >"${z%.gz}.tmp" && mv "${z%.gz}.tmp" "${z%.gz}" ||
            { echo "gpu-check.sh: cannot unpack $z" >&2; rm -f "${z%.gz}.tmp"; exit 1; }
    done
else
    root=$(cd "$here/.." && pwd)
    # `make gpu-check` names its BIN and BUILD (NMT_BIN, NMT_BUILD)
    NMT="${NMT_BIN:-$root/nmt}"
    PARITY="${NMT_BUILD:-$root/build}/tests/test_gpu_parity"
    BENCH="${NMT_BUILD:-$root/build}/bench/bench_train"
    BENCH_REC="${NMT_BUILD:-$root/build}/bench/bench_recurrence"
    TORCH_BENCH="$root/scripts/torch_gpu_bench.py"
    REFERENCE="$root/scripts/reference.py"
    CKPT_SAME="$root/scripts/ckpt_same.py"
    COMBO_SOAK="$root/scripts/combo-soak.sh"
    BENCH_CONFIG="$root/configs/de-en-2x512.json"
    MULTI30K_DIR="$root/../shared/data/multi30k"
    default_out="$root/build/gpu-out"
    commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
    bundle_lib=""
fi

# Python (torch) runs with the machine's own library path, not the bundle's.
orig_ld_library_path=${LD_LIBRARY_PATH-}

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

t_begin=$(date +%s)
deadline=$((t_begin + ${GPU_CHECK_BUDGET:-480}))
# GPU_CHECK_STEPS: the steps to run (comma- or space-separated ids of
# step_ids; unset or empty: all), so that a short lease of a GPU can be
# spent in parts, e.g. GPU_CHECK_STEPS=1,5,6 first (off_step below)
step_ids="1 2 2b 2c 3 3b 3c 3d 5 5b 6 7 8"
for id in $(printf '%s' "${GPU_CHECK_STEPS:-}" | tr ',' ' '); do
    case " $step_ids " in *" $id "*) ;; *)
        echo "gpu-check.sh: GPU_CHECK_STEPS=$GPU_CHECK_STEPS: no step '$id' (steps: $step_ids)" >&2
        exit 2 ;;
    esac
done
out=${OUT:-$default_out}
mkdir -p "$out" || exit 1
summary="$out/summary.txt"
: >"$summary"
failed=0
rows=()
md_rows=()

# row NAME RESULT SECONDS DETAIL (also as a markdown row for summary.md,
# the table docs/gpu-runs.md records; a | in the detail is escaped)
row() {
    rows+=("$(printf '%-26s %-12s %6s  %s' "$1" "$2" "$3" "$4")")
    md_rows+=("| $1 | $2 | ${4//|/\\|} |")
}

# limit_for N: N (times GPU_CHECK_LIMIT_SCALE) seconds, or less when the
# budget ends sooner; fails (prints nothing) when under 20 s are left.
limit_for() {
    local left=$((deadline - $(date +%s) - 5)) want=$(($1 * ${GPU_CHECK_LIMIT_SCALE:-1}))
    [ "$left" -lt 20 ] && return 1
    [ "$want" -lt "$left" ] && echo "$want" || echo "$left"
}
# off_step ID: true when GPU_CHECK_STEPS is set and leaves step ID out
# (its rows then say so)
off_step() {
    [ -n "${GPU_CHECK_STEPS:-}" ] || return 1
    case ",$(printf '%s' "$GPU_CHECK_STEPS" | tr ' ' ','),"  in *",$1,"*) return 1 ;; esac
    return 0
}
# step_opens ROW ID LIMIT_S: true (and lim set: limit_for LIMIT_S) when
# the one-row step ID runs now; else its row says why not (no GPU, not in
# GPU_CHECK_STEPS, out of budget) and it is false
step_opens() {
    if [ "$no_gpu" = 1 ]; then
        row "$1" "NO GPU" 0 "no GPU listed by nvidia-smi"
        failed=1
    elif off_step "$2"; then
        row "$1" "skipped" 0 "not in GPU_CHECK_STEPS"
    elif ! lim=$(limit_for "$3"); then
        row "$1" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
    else
        return 0
    fi
    return 1
}
# left_of END: seconds until the epoch second END (at least 1)
left_of() { local l=$(($1 - $(date +%s))); [ "$l" -lt 1 ] && l=1; echo "$l"; }
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
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

# run_bench TAG LIMIT OUTFILE CMD...: a benchmark program under the limit,
# its output to OUTFILE and to bench.log; sets took (seconds). Returns 1
# after writing the TIMEOUT or FAIL row when it did not finish well.
run_bench() {
    local tag=$1 lim=$2 outf=$3 rc start
    shift 3
    start=$(date +%s)
    timeout -k 5 "$lim" "$@" >"$outf" 2>&1
    rc=$?
    cat "$outf" >>"$blog"
    took=$(($(date +%s) - start))
    if timed_out "$rc"; then
        row "$tag" "TIMEOUT" "$took" "over ${lim}s"
    elif [ "$rc" -ne 0 ]; then
        row "$tag" "FAIL($rc)" "$took" "$(tail -n 1 "$outf" | cut -c1-90)"
    else
        return 0
    fi
    failed=1
    return 1
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
    for b in "$NMT" "$PARITY" "$BENCH" "$BENCH_REC"; do
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
# lib_row ROW KEY WANT DETAIL: ROW is "ok" (DETAIL) when nmt --version's
# line "KEY: ..." reads "KEY: WANT", else "MISSING" with the line, and the
# check fails. cuBLAS (src/gpu/gpu_cublas.cu) and CUPTI (src/gpu/gpu_profile.cu,
# for the profile rows; the bundle's own) are opened at run time, so ldd
# does not list them.
# A CPU-only build (nmt --version: "cuda: not built in") has neither; in
# the dry run (GPU_CHECK_DEVICE=cpu, as on a machine without nvcc, whose
# `make test` runs it) that is a "none" row, not a failure.
lib_row() {
    local line
    line=$(grep "^$2:" "$out/machine.log" | head -n 1)
    if [ "$line" = "$2: $3" ]; then
        row "$1" "ok" 0 "$4"
    elif [ "${GPU_CHECK_DEVICE:-cuda}" = cpu ] && grep -q '^cuda: not built in' "$out/machine.log"; then
        row "$1" "none" 0 "a CPU-only build (cuda: not built in): nothing to load"
    else
        row "$1" "MISSING" 0 "${line:-no $2 line in nmt --version}"
        failed=1
    fi
}
lib_row "cuBLAS (dlopen)" cublas "loads" "loads"
lib_row "CUPTI (dlopen)" cupti "loads (NMT_CUDA_PROFILE)" "loads, of the build's version"
[ -n "$bundle_lib" ] && row "bundle" "info" 0 "$(du -sh "$here" 2>/dev/null | cut -f1) in $here"

# parity_step ID ROW LOG LIMIT_S VAR=VALUE...: the parity test as step ID
# (GPU_CHECK_STEPS), with the environment VAR=VALUE..., output to LOG, row
# ROW; within LIMIT_S and what is left of the budget
parity_step() {
    local id=$1 name=$2 log=$3 want=$4 plimit
    shift 4
    if off_step "$id"; then
        row "$name" "skipped" 0 "not in GPU_CHECK_STEPS"
    elif plimit=$(limit_for "$want"); then
        run_step "$name" "$log" "$plimit" env "$@" "$PARITY"
    else
        row "$name" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
    fi
}
# 1. parity, every launch synchronised and checked
parity_step 1 "parity (NMT_SYNC_DEBUG=1)" "$out/parity.log" 210 NMT_SYNC_DEBUG=1
# 2. parity with TF32 tensor cores in cuBLAS (looser gemm tolerance)
parity_step 2 "parity (NMT_TF32=1)" "$out/parity-tf32.log" 120 NMT_TF32=1
# 2b. parity with the persistent LSTM recurrence: the slot tests switch it
# on and off themselves; this run has every whole model use it (and fails
# where none did). Every 9th model of the sweep, within the budget.
parity_step 2b "parity persistent" "$out/parity-persistent.log" 90 NMT_CUDA_PERSISTENT=1 NMT_PARITY_SWEEP_STRIDE=9
# 2c. parity with nmt's own GEMM kernel for every GEMM (cuBLAS not loaded)
parity_step 2c "parity own gemm" "$out/parity-own-gemm.log" 60 NMT_CUDA_GEMM=own NMT_PARITY_SWEEP_STRIDE=9

# ---- steps 3-7: training, checkpoints, benchmark, decoding, PyTorch ----
# Knobs (environment): GPU_CHECK_DEVICE (cuda; cpu for a dry run of the
# logic), GPU_CHECK_QUICK=1 (small sizes, few steps), GPU_CHECK_TRAIN_STEPS,
# GPU_CHECK_TRAIN_TOL, GPU_CHECK_PYTHON (interpreters to try for torch),
# GPU_CHECK_KEEP=1 (keep the scratch folder).
DEV=${GPU_CHECK_DEVICE:-cuda}
QUICK=${GPU_CHECK_QUICK:-0}
TRAIN_STEPS=${GPU_CHECK_TRAIN_STEPS:-200}
# step 3c: 8 epochs of the demo corpus (125 batches of 64)
GRAPHS_TRAIN_STEPS=${GPU_CHECK_GRAPHS_STEPS:-1000}
TRAIN_TOL=${GPU_CHECK_TRAIN_TOL:-0.002} # 2.7e-4 seen on an H200 (docs/gpu.md)
TRAIN_FALL=0.5 # the last logged GPU loss must be this much (nats) below the first
BENCH_STEPS=30
BENCH_WARMUP=5
DECODE_STEPS=150
TEST_N=500
# benchmark runs: name|emb|hidden|enc_layers|dec_layers|B,S,T|src,tgt vocab
# (the rest of the model and of the step from configs/de-en-2x512.json: bidirectional
# first layer, luong general global, input feeding, dropout 0.3, label
# smoothing 0.1, clip 5, Adam; PyTorch gets the same)
BENCH_RUNS=("de-en|256|512|2|2|64,13,16|8000,8000" "large|512|1024|2|2|128,13,16|8000,8000")
# decoding runs (step 6, and PyTorch in step 7): name|model sizes (and
# attention, else write_config's: one head): the bench config's, the large
# one's, and configs/de-en.json's own (1+1 layers, 4 attention heads)
HEADS4='"attention": {"style": "luong", "score": "general", "mode": "global", "heads": 4}'
DEC_RUNS=('de-en|"emb_dim": 256, "hidden": 512, "enc_layers": 2, "dec_layers": 2'
          'large|"emb_dim": 512, "hidden": 1024, "enc_layers": 2, "dec_layers": 2'
          "de-en.json|\"emb_dim\": 256, \"hidden\": 256, \"enc_layers\": 1, \"dec_layers\": 1, $HEADS4")
if [ "$QUICK" = 1 ]; then
    TRAIN_STEPS=${GPU_CHECK_TRAIN_STEPS:-60}
    GRAPHS_TRAIN_STEPS=${GPU_CHECK_GRAPHS_STEPS:-60}
    BENCH_STEPS=2
    BENCH_WARMUP=1
    DECODE_STEPS=300 # enough for varied output: the PyTorch rows compare lines
    TEST_N=100
    BENCH_RUNS=("de-en|32|64|2|2|8,7,9|100,120" "large|64|128|2|2|16,7,9|100,120")
    DEC_RUNS=('de-en|"emb_dim": 32, "hidden": 64, "enc_layers": 2, "dec_layers": 2'
              'large|"emb_dim": 64, "hidden": 128, "enc_layers": 2, "dec_layers": 2'
              "de-en.json|\"emb_dim\": 32, \"hidden\": 64, \"enc_layers\": 1, \"dec_layers\": 1, $HEADS4")
fi
dev_tag=$([ "$DEV" = cuda ] && echo GPU || echo "$DEV (dry run)")
no_gpu=0
[ "$DEV" = cuda ] && [ -z "$gpu" ] && no_gpu=1
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
if [ "${GPU_CHECK_KEEP:-0}" = 1 ]; then echo "   scratch kept in $work"; else trap 'rm -rf "$work"' EXIT; fi

# key LOGTEXT PREFIX: the value after "PREFIX: " on the first such line
key() { printf '%s\n' "$1" | sed -n "s|^$2: ||p" | head -n 1; }
# xlate MODEL DEVICE BEAM HYP LOG LIMIT [INPUT]: translates INPUT (default
# the test set), with the options in XLATE_OPTS if set; prints the
# sentences/s of nmt's --progress summary ("?" when absent); returns nmt's
# status
xlate() {
    local rc input=${7:-$work/data/test.src}
    echo "-- nmt translate --model $1 --device $2 --beam $3 ${XLATE_OPTS:-}< ${input##*/}" >>"$5"
    local t0
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # XLATE_OPTS: words
    timeout -k 5 "$6" "$NMT" translate --model "$1" --device "$2" --beam "$3" --progress ${XLATE_OPTS:-} \
        <"$input" >"$4" 2>"$work/xlate.err"
    rc=$?
    # the whole process's wall time (loading, the device's setup, exit),
    # which the rate leaves out: for the caller, from $work/xlate.wall
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }' >"$work/xlate.wall"
    tr '\r' '\n' <"$work/xlate.err" | grep -v '^translating' | grep -v '^ *$' >>"$5"
    echo "   exit $rc, $(wc -l <"$4") lines" >>"$5"
    local sps
    sps=$(tr '\r' '\n' <"$work/xlate.err" | sed -n 's/^translated [0-9]* lines, \([0-9.]*\) sentences\/s.*/\1/p' | tail -n 1)
    echo "${sps:-?}"
    return $rc
}
# host_time ERRFILE: from nmt's "cuda: host time" log line in ERRFILE (the
# CUDA backend's wall time in host calls and in waits for the device, and
# the calls slower than NMT_CUDA_SLOW_CALL_MS, docs/gpu.md), a short note;
# empty without one (the CPU dry run)
host_time() {
    sed -n 's/^[a-z]*: cuda: host time \([0-9.]*\) ms in host calls, \([0-9.]*\) ms waiting for the device; \([0-9]*\) calls over NMT_CUDA_SLOW_CALL_MS took \([0-9.]*\) ms\(.*\)/host calls \1 ms, waits \2 ms, \3 slow calls \4 ms\5/p' "$1" |
        tail -n 1 | cut -c1-220
}
# profile_note FILE PREFIX: from the device profile report in FILE whose
# lines start with PREFIX (NMT_CUDA_PROFILE=1, docs/gpu.md "Profile"), a
# short note: the device's busy time against the wall time, the kernels,
# and the three rows with the most device time and their shares. Fails
# (prints nothing) without a report.
profile_note() {
    awk -v p="$2" '
        index($0, p) != 1 { next }
        { s = substr($0, length(p) + 1) }
        s ~ /^device busy / { total = s; sub(/, [0-9.]+ copies .*; /, "; ", total); next }
        s ~ /^ *[0-9.]+% / && n < 3 {
            name = s
            sub(/^ *[0-9.]+% +[0-9.]+ +[0-9.]+ +[0-9.]+  /, "", name)
            if (length(name) > 60) name = substr(name, 1, 57) "..."
            split(s, f, " ")
            top = top (n ? ", " : "") name " " f[1]
            n++
        }
        END { if (total == "") exit 1; print total "; most device time: " (n ? top : "none") }' "$1"
}
# marginal_rate N RATE RATE4: from the rates (sentences/s) of one run over N
# sentences and one over the same 4 times (4N), "PER FIXED": sentences/s of
# the 3N sentences the second run adds, and the milliseconds of the first
# run not explained by its N sentences at that rate (first-use costs).
# Fails when the numbers give no positive rate.
marginal_rate() {
    awk -v n="$1" -v r1="$2" -v r4="$3" 'BEGIN {
        if (!(r1 > 0 && r4 > 0)) exit 1
        t1 = n / r1; t4 = 4 * n / r4
        if (t4 <= t1) exit 1
        per = 3 * n / (t4 - t1)
        printf "%.1f %.0f\n", per, 1000 * (t1 - n / per) }'
}
# same_lines A B: "identical total" line counts of two files
same_lines() { awk 'NR == FNR { a[FNR] = $0; next } { n++; if ((FNR in a) && a[FNR] == $0) s++ } END { print s + 0, n + 0 }' "$1" "$2"; }
# decode_profile ROW MODEL BEAM LOG END_AT: translates the test input 4
# times over with the device profile on (NMT_CUDA_PROFILE=1; the whole
# table goes to LOG) and writes ROW: profile_note's summary (the device's
# busy share of the run and the rows with the most device time) and the
# rate under the profiler. On cuda a run without a report fails.
decode_profile() {
    local t1 v rc note
    t1=$(date +%s)
    v=$(export NMT_CUDA_PROFILE=1 NMT_CUDA_PROFILE_ROWS=40
        xlate "$2" "$DEV" "$3" "$work/dec-profile.txt" "$4" "$(left_of "$5")" "$work/data/test-x4.src")
    rc=$?
    if [ "$rc" -ne 0 ]; then
        row "$1" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$(($(date +%s) - t1))" "$(tail -n 2 "$4" | head -n 1 | cut -c1-80)"
        failed=1
    elif tr '\r' '\n' <"$work/xlate.err" >"$work/xlate-profile.err" &&
        note=$(profile_note "$work/xlate-profile.err" "translate: cuda profile: "); then
        row "$1" "info" "$(($(date +%s) - t1))" "$note; $v sent/s under the profiler (4x the input)"
    elif [ "$DEV" = cuda ]; then
        row "$1" "FAIL(profile)" "$(($(date +%s) - t1))" "no device profile in nmt translate's log (bench.log)"
        failed=1
    else
        row "$1" "info" "$(($(date +%s) - t1))" "no device profile off the GPU ($DEV); $v sent/s (4x the input)"
    fi
}
# decode_variant ROW SETTING MODEL BEAM HYP RATE MARGINAL LOG END_AT:
# translates the test input with MODEL again, with one environment SETTING
# (NAME=VALUE) or translate option (--NAME VALUE) at BEAM,
# and writes ROW: its rate next to the default's (RATE, sentences/s), and
# the share of lines it translates as the default did (HYP): at least 90%,
# since a setting that changes which rows are computed together may flip a
# near tie. With MARGINAL (the default's rate beyond first-use costs, or
# "none" where the default's runs gave none) it also translates the input 4
# times over and gives its own. Sets failed, and
# variant_sps (its rate; empty unless it passed).
decode_variant() {
    local row_name=$1 setting=$2 model=$3 beam=$4 hyp=$5 rate=$6 marginal=$7 log=$8 end=$9
    local t1 v rc same total out extra="" v4 per hnote wall wnote
    out=${5%.txt}-$(printf '%s' "$setting" | tr -c 'A-Za-z0-9' '_').txt
    variant_sps=""
    t1=$(date +%s)
    # set_variant: the setting (options, or NAME=VALUE words), in the
    # subshell of each run
    set_variant() {
        if [ "${setting#--}" != "$setting" ]; then export XLATE_OPTS="$setting"; else for s in $setting; do export "$s"; done; fi
    }
    v=$(set_variant; xlate "$model" "$DEV" "$beam" "$out" "$log" "$(left_of "$end")")
    rc=$?
    hnote=$(host_time "$work/xlate.err")
    wall=$(cat "$work/xlate.wall" 2>/dev/null)
    wnote=""
    [ -n "$wall" ] && wnote="; the process $wall s (the default's ${xlate_wall_default:-?} s)"
    read -r same total <<<"$(same_lines "$hyp" "$out" 2>/dev/null)"
    if [ "$rc" -ne 0 ]; then
        row "$row_name" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$(($(date +%s) - t1))" "$(tail -n 2 "$log" | head -n 1 | cut -c1-80)"
        failed=1
        return
    fi
    if [ "${total:-0}" -ne "$TEST_N" ] || [ $((100 * ${same:-0})) -lt $((90 * total)) ]; then
        row "$row_name" "FAIL" "$(($(date +%s) - t1))" "$setting: only ${same:-0} of ${total:-0} lines as the default's"
        failed=1
        return
    fi
    if [ -n "$marginal" ]; then
        if v4=$(set_variant; xlate "$model" "$DEV" "$beam" "$work/dec-variant-x4.txt" "$log" "$(left_of "$end")" "$work/data/test-x4.src") &&
            per=$(marginal_rate "$TEST_N" "$v" "$v4"); then
            extra="; 4x the input: $v4 sent/s, so ${per%% *} sent/s beyond ${per#* } ms of first-use costs (the default's: $marginal)"
        else
            extra="; 4x the input: ${v4:-?} sent/s, no per-sentence rate"
        fi
    fi
    row "$row_name" "pass" "$(($(date +%s) - t1))" "$v sent/s with $setting (the default's: $rate)${hnote:+ ($hnote)}$extra; $same of $total lines as the default's$wnote"
    variant_sps=$v
}
# a demo-corpus training config: write_config FILE SAVE_DIR MODEL_SIZES;
# Luong general global attention, one head, unless MODEL_SIZES has an
# "attention" of its own
write_config() {
    local attn=', "attention": {"style": "luong", "score": "general", "mode": "global"}'
    case $3 in *'"attention"'*) attn="" ;; esac
    cat >"$1" <<JSON
{
  "data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
           "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
           "tokenizer": "word", "word_vocab_size": 1000, "max_len": 40, "cache_dir": "cache"},
  "model": {$3, "bidirectional": true, "input_feed": true$attn},
  "train": {"optimizer": "adam", "lr": 0.002, "batch_sentences": 64, "epochs": 100,
            "label_smoothing": 0.1, "seed": 1, "save_dir": "$2",
            "valid_every": 100000, "log_every": 10},
  "decode": {"beam": 5, "length_penalty": 0.6, "batch": 64}
}
JSON
}

tlog="$out/train.log"
blog="$out/bench.log"
plog="$out/torch.log"
: >"$tlog"
: >"$blog"
: >"$plog"
have_corpus=0
make_corpus() {
    [ "$have_corpus" = 1 ] && return 0
    echo "-- nmt demo-corpus --train 8000 --valid 100 --test $TEST_N --seed 7" >>"$1"
    timeout -k 5 60 "$NMT" demo-corpus --out "$work/data" --train 8000 --valid 100 --test "$TEST_N" --seed 7 >>"$1" 2>&1 &&
        have_corpus=1
}

# 3. training on the GPU against the CPU, 4. checkpoints across devices
echo "== training $dev_tag vs CPU, $TRAIN_STEPS steps (log: train.log)"
if [ "$no_gpu" = 1 ]; then
    row "train GPU vs CPU" "NO GPU" 0 "no GPU listed by nvidia-smi"
    row "checkpoints GPU<->CPU" "NO GPU" 0 "no GPU listed by nvidia-smi"
    failed=1
elif off_step 3; then
    row "train GPU vs CPU" "skipped" 0 "not in GPU_CHECK_STEPS"
    row "checkpoints GPU<->CPU" "skipped" 0 "not in GPU_CHECK_STEPS"
elif ! lim=$(limit_for 150); then
    row "train GPU vs CPU" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
    row "checkpoints GPU<->CPU" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
else
    start=$(date +%s)
    end_at=$((start + lim))
    make_corpus "$tlog"
    write_config "$work/train.json" run-x '"emb_dim": 64, "hidden": 128, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1'
    {
        echo "-- config (demo sizes; train.device and train.save_dir set on the command line):"
        cat "$work/train.json"
    } >>"$tlog"
    # the corpus is tokenized and cached once, so both runs time training only
    echo "-- nmt prepare --config train.json" >>"$tlog"
    (cd "$work" && timeout -k 5 "$(left_of "$end_at")" "$NMT" prepare --config train.json) >>"$tlog" 2>&1
    declare -A trc twall
    for side in gpu cpu; do
        d=$([ "$side" = gpu ] && echo "$DEV" || echo cpu)
        echo "-- nmt train --set train.device=$d --set train.max_steps=$TRAIN_STEPS --set train.save_dir=run-$side" >>"$tlog"
        t0=$(date +%s.%N)
        (cd "$work" && timeout -k 5 "$(left_of "$end_at")" "$NMT" train --config train.json --quiet \
            --set train.device="$d" --set train.max_steps="$TRAIN_STEPS" --set train.save_dir="run-$side") >>"$tlog" 2>&1
        trc[$side]=$?
        twall[$side]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        echo "   exit ${trc[$side]}, ${twall[$side]} s" >>"$tlog"
    done
    # both loss curves side by side (train.csv: kind,step,epoch,loss,...)
    cmp_line=$(awk -F, -v tol="$TRAIN_TOL" '
        FNR == 1 { f++; next }
        f == 1 && $1 == "train" { g[$2] = $4; tg[$2] = $9; next }
        f == 2 && $1 == "train" && ($2 in g) {
            n++; r = ($4 != 0) ? (g[$2] - $4) / $4 : 0; if (r < 0) r = -r
            if (n == 1) first = g[$2]
            last = g[$2]
            if (r > worst) { worst = r; wstep = $2 }
            printf "   %6d %10.5f %10.5f %9.2e %s %9.0f %9.0f\n", $2, g[$2], $4, r, (r > tol ? "!" : " "), tg[$2], $9 > "/dev/stderr"
        }
        END { printf "rows %d first %.4f last %.4f worst %.3g step %d\n", n, first, last, worst, wstep }
    ' "$work/run-gpu/train.csv" "$work/run-cpu/train.csv" 2>"$work/curves.txt")
    {
        echo "-- loss curves (train.csv rows; rel = |gpu - cpu| / cpu, ! over $TRAIN_TOL), tgt tokens/s"
        printf "   %6s %10s %10s %9s   %9s %9s\n" step "loss-$DEV" loss-cpu rel "tok/s-$DEV" tok/s-cpu
        cat "$work/curves.txt"
        echo "   $cmp_line"
    } >>"$tlog" 2>/dev/null
    took=$(($(date +%s) - start))
    read -r _ nrows _ first _ last _ worst _ wstep <<<"$cmp_line"
    detail="$TRAIN_STEPS steps: $DEV loss ${first:-?}->${last:-?}, max rel diff to cpu ${worst:-?} (step ${wstep:-?}, tol $TRAIN_TOL); ${twall[gpu]}s vs ${twall[cpu]}s"
    if timed_out "${trc[gpu]}" || timed_out "${trc[cpu]}"; then
        row "train $dev_tag vs CPU" "TIMEOUT" "$took" "over ${lim}s (train exits ${trc[gpu]}/${trc[cpu]})"
        failed=1
    elif [ "${trc[gpu]}" -ne 0 ] || [ "${trc[cpu]}" -ne 0 ]; then
        row "train $dev_tag vs CPU" "FAIL" "$took" "nmt train exit $DEV ${trc[gpu]}, cpu ${trc[cpu]}: $(grep -m1 -i 'error\|fail\|nmt train' "$tlog" | cut -c1-80)"
        failed=1
    elif [ "${nrows:-0}" -lt 3 ] || ! awk -v a="$first" -v b="$last" -v w="$worst" -v t="$TRAIN_TOL" -v f="$TRAIN_FALL" \
        'BEGIN { exit !(b < a - f && w <= t) }'; then
        row "train $dev_tag vs CPU" "FAIL" "$took" "$detail"
        failed=1
    else
        row "train $dev_tag vs CPU" "pass" "$took" "$detail"
    fi
    # 3b. the same training again on the device: the same weights and Adam
    # moments to the bit (no kernel sums in an order that can change)
    if [ "${trc[gpu]}" -eq 0 ] && lim2=$(limit_for 60); then
        t1=$(date +%s)
        echo "-- the same training again: --set train.device=$DEV --set train.save_dir=run-gpu2" >>"$tlog"
        (cd "$work" && timeout -k 5 "$lim2" "$NMT" train --config train.json --quiet \
            --set train.device="$DEV" --set train.max_steps="$TRAIN_STEPS" --set train.save_dir=run-gpu2) >>"$tlog" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ]; then
            row "train $dev_tag twice" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$(($(date +%s) - t1))" "the second run: $(tail -n 1 "$tlog" | cut -c1-80)"
            failed=1
        else
            same=$(env LD_LIBRARY_PATH="$orig_ld_library_path" python3 "$CKPT_SAME" "$work/run-gpu/last.nmt" "$work/run-gpu2/last.nmt" 2>&1)
            rc=$?
            echo "   ckpt_same.py: $same" >>"$tlog"
            case $rc in
                0) row "train $dev_tag twice" "pass" "$(($(date +%s) - t1))" "$same" ;;
                127) row "train $dev_tag twice" "unavailable" "$(($(date +%s) - t1))" "no python3 to compare the checkpoints" ;;
                *) row "train $dev_tag twice" "FAIL" "$(($(date +%s) - t1))" "$(printf '%s' "$same" | cut -c1-100) (run to run)"
                   failed=1 ;;
            esac
        fi
    fi
    # 4. each checkpoint translates the test set on both devices
    start=$(date +%s)
    if [ "${trc[gpu]}" -ne 0 ] || [ "${trc[cpu]}" -ne 0 ] || ! xl=$(limit_for 90); then
        row "checkpoints GPU<->CPU" "skipped" 0 "no checkpoints (training failed) or out of budget"
    else
        end_at=$((start + xl))
        xfail=""
        xdetail=""
        echo "-- checkpoints across devices: each last.nmt translates test.src ($TEST_N lines) on both" >>"$tlog"
        for side in gpu cpu; do
            for d in "$DEV" cpu; do
                xlate "$work/run-$side/last.nmt" "$d" 5 "$work/hyp-$side-$d.txt" "$tlog" "$(left_of "$end_at")" >"$work/sps"
                xr=$?
                [ "$xr" -ne 0 ] && xfail="$xfail $side-model/--device $d exit $xr;"
                [ "$side" = gpu ] && [ "$d" = "$DEV" ] && demo_sps_b5=$(cat "$work/sps")
                [ "$(wc -l <"$work/hyp-$side-$d.txt")" -ne "$TEST_N" ] && xfail="$xfail $side-model/$d: line count;"
                [ "$DEV" = cpu ] && break # a dry run: both devices are the CPU
            done
            if [ "$DEV" != cpu ]; then
                read -r same n <<<"$(same_lines "$work/hyp-$side-$DEV.txt" "$work/hyp-$side-cpu.txt")"
                xdetail="$xdetail $side-trained: $same/$n lines same on $DEV and cpu;"
                awk -v s="$same" -v n="$TEST_N" 'BEGIN { exit !(s >= 0.9 * n) }' || xfail="$xfail $side-trained: only $same/$n lines agree;"
            fi
        done
        for f in "$work"/hyp-*.txt; do
            echo "   $(basename "$f"): $("$NMT" eval --bleu --ref "$work/data/test.tgt" --hyp "$f" 2>&1 | head -n 1)" >>"$tlog"
        done
        echo "   $xdetail" >>"$tlog"
        took=$(($(date +%s) - start))
        if [ -n "$xfail" ]; then
            row "checkpoints GPU<->CPU" "FAIL" "$took" "$xfail"
            failed=1
        else
            row "checkpoints GPU<->CPU" "pass" "$took" "beam 5,${xdetail:- dry run: loads and translates}"
        fi
    fi
    # 4b. the GPU-trained model samples (--sample 10) and scores (nmt score)
    # the test set on both devices: the same samples on >= 90% of the lines
    # (draws are made on the host from each step's top-10, so only logits
    # rounding apart can move one), scores within 1e-3 relative
    if [ "${trc[gpu]}" -ne 0 ] || ! xl=$(limit_for 60); then
        row "sample, score GPU<->CPU" "skipped" 0 "no GPU-trained checkpoint or out of budget"
    else
        start=$(date +%s)
        end_at=$((start + xl))
        sfail=""
        sdetail=""
        m="$work/run-gpu/last.nmt"
        echo "-- sampling (--sample 10 --seed 3) and nmt score of test.src/test.tgt on both devices" >>"$tlog"
        for d in "$DEV" cpu; do
            XLATE_OPTS="--sample 10 --seed 3" xlate "$m" "$d" 1 "$work/samp-$d.txt" "$tlog" "$(left_of "$end_at")" >/dev/null
            xr=$?
            [ "$xr" -ne 0 ] && sfail="$sfail sample --device $d exit $xr;"
            [ "$(wc -l <"$work/samp-$d.txt")" -ne "$TEST_N" ] && sfail="$sfail sample/$d: line count;"
            timeout -k 5 "$(left_of "$end_at")" "$NMT" score --model "$m" --device "$d" --src "$work/data/test.src" \
                --tgt "$work/data/test.tgt" >"$work/score-$d.txt" 2>>"$tlog"
            xr=$?
            [ "$xr" -ne 0 ] && sfail="$sfail score --device $d exit $xr;"
            [ "$(wc -l <"$work/score-$d.txt")" -ne "$TEST_N" ] && sfail="$sfail score/$d: line count;"
            [ "$DEV" = cpu ] && break # a dry run: both devices are the CPU
        done
        if [ "$DEV" != cpu ]; then
            read -r same n <<<"$(same_lines "$work/samp-$DEV.txt" "$work/samp-cpu.txt")"
            worst=$(paste "$work/score-$DEV.txt" "$work/score-cpu.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d;
                s = $2 < 0 ? -$2 : $2; r = d / (s > 1 ? s : 1); if (r > w) w = r } END { printf "%.2g", w + 0 }')
            sdetail="samples: $same/$n lines the same on $DEV and cpu; scores: worst relative difference $worst"
            awk -v s="$same" -v n="$TEST_N" 'BEGIN { exit !(s >= 0.9 * n) }' || sfail="$sfail only $same/$n sampled lines agree;"
            awk -v w="$worst" 'BEGIN { exit !(w <= 1e-3) }' || sfail="$sfail scores differ by $worst;"
        fi
        echo "  ${sdetail:- dry run: samples and scores}" >>"$tlog"
        took=$(($(date +%s) - start))
        if [ -n "$sfail" ]; then
            row "sample, score GPU<->CPU" "FAIL" "$took" "$sfail"
            failed=1
        else
            row "sample, score GPU<->CPU" "pass" "$took" "${sdetail:-dry run: samples and scores $TEST_N lines}"
        fi
    fi
fi

# 3b. feature combinations (scripts/combo-soak.sh --device DEV): random
# combinations of the model and training features on a tiny demo model,
# each trained on the CPU and on the device: exact resume on both, the
# first step's loss and gradient norm the CPU's, later losses as near as
# the model's conditioning allows, the CPU's checkpoint translating to the
# CPU's lines on the device; as many combinations as 90 s allow
echo "== feature combinations on $dev_tag (log: combo-soak.log)"
if step_opens "combinations GPU vs CPU" 3b 90; then
    start=$(date +%s)
    # new combinations until 30 s before the limit (the dry run: for 5 s,
    # at least one), the rest for the one under way
    soak_s=$([ "${GPU_CHECK_QUICK:-0}" = 1 ] && echo 5 || echo $((lim > 40 ? lim - 30 : 10)))
    NMT_BIN="$NMT" timeout -k 5 "$lim" bash "$COMBO_SOAK" --device "$DEV" --combos 1000 \
        --seconds "$soak_s" >"$out/combo-soak.log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    line=$(grep '^combo-soak: ' "$out/combo-soak.log" | tail -n 1)
    line=${line#combo-soak: }
    worst=$(sed -n 's/.*: losses within \([^ ]*\) (nudged cpu \([^)]*\)).*/\1 \2/p' "$out/combo-soak.log" |
            sort -g | tail -n 1)
    if timed_out "$rc"; then
        row "combinations GPU vs CPU" "TIMEOUT" "$took" "over ${lim}s; ${line:-no summary}"
        failed=1
    elif [ "$rc" -ne 0 ] || [ -z "$line" ]; then
        row "combinations GPU vs CPU" "FAIL($rc)" "$took" \
            "${line:-no summary}; $(grep -m1 ': FAIL' "$out/combo-soak.log" | cut -c1-300)"
        failed=1
    else
        row "combinations GPU vs CPU" "pass" "$took" \
            "$line; worst step-loss difference ${worst% *} (a nudged CPU run: ${worst#* })"
    fi
fi

# epoch_rates CSV SKIP: from nmt train's train.csv, the target tokens/s
# (column 9) as the mean of epoch 1's logged rows and of the rows from
# epoch 1 + SKIP on ("RATE1 RATE_LATER", 0 for none)
epoch_rates() {
    awk -F, -v skip="$2" 'FNR == 1 || $1 != "train" { next }
        { if (e0 == "") e0 = $3; if ($3 == e0) { a += $9; na++ } else if ($3 >= e0 + skip) { b += $9; nb++ } }
        END { printf "%.0f %.0f\n", na ? a / na : 0, nb ? b / nb : 0 }' "$1"
}
# graphs_speed NAME SKIP LATER: a row's words on the speed of train_both
# NAME's two runs: the target tokens/s of epoch 1 and of the epochs from
# 1 + SKIP on (named LATER), graphs off -> on, and the later ones' ratio
graphs_speed() {
    local p1 pl g1 gl
    read -r p1 pl <<<"$(epoch_rates "$work/run-$1-plain/train.csv" "$2")"
    read -r g1 gl <<<"$(epoch_rates "$work/run-$1-graphs/train.csv" "$2")"
    printf 'tgt tok/s epoch 1 %s -> %s with graphs, %s %s -> %s (%s)' "$p1" "$g1" "$3" "$pl" "$gl" \
        "$(awk -v a="$pl" -v b="$gl" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else printf "no rate" }')"
}
# losses_words WORST: "identical losses" (WORST 0) or "losses within
# WORST", and the tolerance
losses_words() {
    if [ "$1" = 0 ]; then printf 'identical losses'; else printf 'losses within %s' "$1"; fi
    printf ' (tol %s)' "$TRAIN_TOL"
}
# train_both CONFIG NAME END_AT KEEP [ARGS...]: nmt train --config CONFIG
# (in $work, on $DEV, with ARGS) twice, with NMT_CUDA_GRAPHS=0 (side plain)
# and =1 (side graphs), into run-NAME-SIDE with the output in
# $work/NAME-SIDE.log, of which the last KEEP lines but the step lines go
# to the training log; each side's exit status and wall seconds in
# side_rc[SIDE] and side_wall[SIDE]
declare -A side_rc side_wall
train_both() {
    local config=$1 name=$2 end=$3 keep=$4 side graphs t0
    shift 4
    for side in plain graphs; do
        graphs=$([ $side = graphs ] && echo 1 || echo 0)
        echo "-- nmt train --config $config (NMT_CUDA_GRAPHS=$graphs) --set train.device=$DEV $*" >>"$tlog"
        t0=$(date +%s.%N)
        (cd "$work" && NMT_CUDA_GRAPHS=$graphs timeout -k 5 "$(left_of "$end")" "$NMT" train --config "$config" \
            --set train.device="$DEV" --set train.save_dir="run-$name-$side" "$@") >"$work/$name-$side.log" 2>&1
        side_rc[$side]=$?
        side_wall[$side]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        grep -v '^step \| step ' "$work/$name-$side.log" | tail -n "$keep" >>"$tlog"
        echo "   exit ${side_rc[$side]}, ${side_wall[$side]} s" >>"$tlog"
    done
}
# train_both_ran ROW NAME: true when both runs of train_both NAME exited 0;
# else writes ROW (TIMEOUT past the step's limit, or FAIL with the first
# error line) and sets failed. $took and $lim are the step's.
train_both_ran() {
    if timed_out "${side_rc[plain]}" || timed_out "${side_rc[graphs]}"; then
        row "$1" "TIMEOUT" "$took" "over ${lim}s (train exits ${side_rc[plain]}/${side_rc[graphs]})"
    elif [ "${side_rc[plain]}" -ne 0 ] || [ "${side_rc[graphs]}" -ne 0 ]; then
        row "$1" "FAIL" "$took" "nmt train exit plain ${side_rc[plain]}, graphs ${side_rc[graphs]}: $(grep -m1 -i 'error' "$work/$2-graphs.log" "$work/$2-plain.log" | cut -c1-100)"
    else
        return 0
    fi
    failed=1
    return 1
}
# graphs_verdict ROW AGREE DETAIL: ROW with DETAIL: FAIL unless AGREE is 0
# (the two runs agree), FAIL on cuda when the graphs run launched no
# graph (graphs_note's count), else pass
graphs_verdict() {
    if [ "$2" -ne 0 ]; then
        row "$1" "FAIL" "$took" "$3"
        failed=1
    elif [ "$DEV" = cuda ] && ! [ "${graph_launches:-0}" -gt 0 ] 2>/dev/null; then
        row "$1" "FAIL" "$took" "no graph launches: $3"
        failed=1
    else
        row "$1" "pass" "$took" "$3"
    fi
}
# graphs_note PLAIN_LOG GRAPHS_LOG: from the exit lines ("train: cuda: ...")
# of a run with graphs off and one with them on, the host calls, the graph
# counts and the device memory in use at the end, as words of a row in
# graphs_note_text; graph_launches: the graphs run's count ("?" if none)
graphs_note() {
    local counts ghc ggc ggf phc pmem gmem
    counts=$(sed -n 's/.*train: cuda: .* in \([0-9]*\) host calls (\([0-9]*\) graph launches, \([0-9]*\) graphs captured, \([0-9]*\) captures failed).*/\1 \2 \3 \4/p' "$2" | tail -n 1)
    read -r ghc graph_launches ggc ggf <<<"${counts:-? ? ? ?}"
    phc=$(sed -n 's/.*train: cuda: .* in \([0-9]*\) host calls (.*/\1/p' "$1" | tail -n 1)
    pmem=$(sed -n "s/.*train: cuda: .*; \([0-9]*\) MB of the device's [0-9]* MB in use at the end.*/\1/p" "$1" | tail -n 1)
    gmem=$(sed -n "s/.*train: cuda: .*; \([0-9]*\) MB of the device's [0-9]* MB in use at the end.*/\1/p" "$2" | tail -n 1)
    graphs_note_text="host calls ${phc:-?} -> $ghc, $graph_launches graph launches, $ggc graphs captured, $ggf captures failed; device memory in use at the end ${pmem:-?} -> ${gmem:-?} MB"
}

# 3c. training with CUDA graphs on batches of varying shape: the demo
# corpus batched by length as in real training (bench_train's batches all
# have one shape, the case graphs suit best), at the bench config's sizes,
# GRAPHS_TRAIN_STEPS steps as is and with NMT_CUDA_GRAPHS=1: the same
# losses (every logged step within TRAIN_TOL relative; "identical" when
# all are), the target tokens/s of the first epoch (every key seen for the
# first time: op by op) and of the epochs from the third on (keys seen
# before replay as graphs), nmt train's cuda counts and the device memory
# in use at the end: whether graphs pay in real training, which made them
# the default (2026-12-04; docs/gpu.md, "CUDA graphs")
echo "== training with CUDA graphs on varying batch shapes (log: train.log)"
if step_opens "train graphs" 3c 120; then
    start=$(date +%s)
    end_at=$((start + lim))
    make_corpus "$tlog"
    IFS='|' read -r _ gsizes <<<"${DEC_RUNS[0]}"
    write_config "$work/graphs.json" run-g "$gsizes"
    echo "-- training with graphs: graphs.json (the first decode model's sizes), $GRAPHS_TRAIN_STEPS steps" >>"$tlog"
    (cd "$work" && timeout -k 5 "$(left_of "$end_at")" "$NMT" prepare --config graphs.json) >>"$tlog" 2>&1
    train_both graphs.json g "$end_at" 6 --set train.max_steps="$GRAPHS_TRAIN_STEPS" \
        --set train.log_every=$((GRAPHS_TRAIN_STEPS >= 80 ? GRAPHS_TRAIN_STEPS / 40 : 2))
    took=$(($(date +%s) - start))
    if train_both_ran "train graphs" g; then
        # train.csv: kind,step,epoch,loss,...,tgt_tok_s (column 9); rates
        # per epoch as the mean of its rows' window rates
        gline=$(awk -F, -v tol="$TRAIN_TOL" '
            FNR == 1 { f++; next }
            $1 != "train" { next }
            f == 1 { p[$2] = $4; next }
            ($2 in p) { n++; r = ($4 != 0) ? (p[$2] - $4) / $4 : 0; if (r < 0) r = -r; if (r > worst) worst = r }
            END { printf "%d %.3g\n", n, worst }' "$work/run-g-plain/train.csv" "$work/run-g-graphs/train.csv")
        read -r gn gworst <<<"$gline"
        graphs_note "$work/g-plain.log" "$work/g-graphs.log"
        detail="$GRAPHS_TRAIN_STEPS steps, $gn logged, $(losses_words "$gworst"); $(graphs_speed g 2 "epochs 3+"); ${side_wall[plain]}s -> ${side_wall[graphs]}s in all; $graphs_note_text"
        agree=1
        [ "${gn:-0}" -ge 3 ] && awk -v w="$gworst" -v t="$TRAIN_TOL" 'BEGIN { exit !(w <= t) }' && agree=0
        graphs_verdict "train graphs" "$agree" "$detail"
    fi
fi

# 3d. real training with validation on Multi30k, graphs off and on (the
# default): what steps 3c (training alone, the demo corpus) and 3 (graphs,
# small model) leave open: validation's BLEU decoding between training
# steps (new shapes into the graph cache), SentencePiece batches of real
# text, dropout. The same losses and the same validation BLEU; the speed
# by epoch, the graph counts and the device memory at the end.
M30K_STEPS=${GPU_CHECK_M30K_STEPS:-1000}
M30K_VALID=$((M30K_STEPS >= 8 ? M30K_STEPS / 4 : 2))
[ "$QUICK" = 1 ] && M30K_STEPS=20 M30K_VALID=10
m30k=${GPU_CHECK_MULTI30K:-$MULTI30K_DIR}
echo "== training on Multi30k with validation, graphs off and on (log: train.log)"
if ! step_opens "train multi30k graphs" 3d 150; then
    :
elif [ ! -r "$m30k/train.de.gz" ]; then
    row "train multi30k graphs" "skipped" 0 "no Multi30k at $m30k (GPU_CHECK_MULTI30K; not a failure)"
else
    start=$(date +%s)
    end_at=$((start + lim))
    valid_src=$m30k/val.de.gz valid_tgt=$m30k/val.en.gz beam=5
    if [ "$QUICK" = 1 ]; then
        # a dry run's CPU: 20 validation lines, greedy
        gzip -dc "$m30k/val.de.gz" | head -n 20 >"$work/m30k-val.de"
        gzip -dc "$m30k/val.en.gz" | head -n 20 >"$work/m30k-val.en"
        valid_src=$work/m30k-val.de valid_tgt=$work/m30k-val.en beam=1
    fi
    cat >"$work/m30k.json" <<JSON
{
  "data": {"train_src": "$m30k/train.de.gz", "train_tgt": "$m30k/train.en.gz",
           "valid_src": "$valid_src", "valid_tgt": "$valid_tgt",
           "tokenizer": "spm", "spm_vocab_size": 8000, "spm_model_type": "unigram", "spm_joint": false,
           "max_len": 80, "cache_dir": "m30k-cache"},
  "model": {"emb_dim": 256, "hidden": 256, "enc_layers": 1, "dec_layers": 1, "bidirectional": true,
            "input_feed": true, "dropout": 0.3,
            "attention": {"style": "luong", "score": "general", "mode": "global", "heads": 4}},
  "train": {"optimizer": "adam", "lr": 0.001, "batch_sentences": 64, "clip_norm": 5.0, "label_smoothing": 0.1,
            "seed": 1, "max_steps": $M30K_STEPS, "valid_every": $M30K_VALID, "log_every": $((M30K_STEPS >= 40 ? M30K_STEPS / 40 : 1))},
  "decode": {"beam": $beam, "length_penalty": 0.6, "max_len_a": 1.5, "max_len_b": 10, "batch": 128}
}
JSON
    echo "-- m30k.json (configs/de-en.json's model on $m30k), $M30K_STEPS steps, validation every $M30K_VALID" >>"$tlog"
    (cd "$work" && timeout -k 5 "$(left_of "$end_at")" "$NMT" prepare --config m30k.json) >>"$tlog" 2>&1
    prc=$?
    [ "$prc" -eq 0 ] && train_both m30k.json m30k "$end_at" 8
    took=$(($(date +%s) - start))
    if [ "$prc" -ne 0 ]; then
        row "train multi30k graphs" "$(timed_out "$prc" && echo TIMEOUT || echo "FAIL($prc)")" "$took" "nmt prepare: $(tail -n 1 "$tlog" | cut -c1-100)"
        failed=1
    elif train_both_ran "train multi30k graphs" m30k; then
        # train.csv: kind,step,epoch,loss,...,tgt_tok_s (9), ..., bleu (11):
        # the worst relative loss difference, the validations and how many
        # give another BLEU, and each run's BLEU in order
        mline=$(awk -F, '
            FNR == 1 { f++; next }
            f == 1 && $1 == "train" { p[$2] = $4; next }
            f == 1 && $1 == "valid" { pv[$2] = $11; pb = pb (pb == "" ? "" : " ") $11; next }
            $1 == "train" && ($2 in p) { n++; r = ($4 != 0) ? (p[$2] - $4) / $4 : 0; if (r < 0) r = -r; if (r > worst) worst = r }
            $1 == "valid" { nv++; gb = gb (gb == "" ? "" : " ") $11; if (!($2 in pv) || pv[$2] != $11) dv++ }
            END { printf "%d %.3g %d %d|%s|%s\n", n, worst, nv, dv, pb, gb }' "$work/run-m30k-plain/train.csv" "$work/run-m30k-graphs/train.csv")
        IFS='|' read -r mcounts pbleu gbleu <<<"$mline"
        read -r mn mworst mnv mdv <<<"$mcounts"
        graphs_note "$work/m30k-plain.log" "$work/m30k-graphs.log"
        detail="$M30K_STEPS steps, $mn logged, $(losses_words "$mworst"); $mnv validations (beam $beam), BLEU $pbleu -> $gbleu ($mdv differ); $(graphs_speed m30k 1 later); ${side_wall[plain]}s -> ${side_wall[graphs]}s in all (prepare outside); $graphs_note_text"
        agree=1
        [ "${mn:-0}" -ge 3 ] && [ "${mnv:-0}" -ge 1 ] && [ "${mdv:-1}" -eq 0 ] &&
            awk -v w="$mworst" -v t="$TRAIN_TOL" 'BEGIN { exit !(w <= t) }' && agree=0
        graphs_verdict "train multi30k graphs" "$agree" "$detail"
    fi
fi

# From here on (steps 5 to 8) nmt runs every op at once unless a row says
# graphs (NMT_CUDA_GRAPHS=1): the rows keep the meaning they had before
# graphs became the default (2026-12-04), each graphs row next to its
# plain one. Steps 3 to 3b above ran with the default, graphs.
export NMT_CUDA_GRAPHS=0

# 5. the nmt benchmark: bench_train on synthetic batches, TF32 on
declare -A nmt_sps nmt_tok nmt_gflop nmt_frac pt_frac
echo "== nmt benchmark on $dev_tag (log: bench.log)"
if [ "$no_gpu" = 1 ]; then
    row "bench nmt" "NO GPU" 0 "no GPU listed by nvidia-smi"
    failed=1
elif off_step 5; then
    row "bench nmt" "skipped" 0 "not in GPU_CHECK_STEPS"
else
    for spec in "${BENCH_RUNS[@]}"; do
        IFS='|' read -r name E H Le Ld shape vocab <<<"$spec"
        # each config as is, with NMT_CUDA_GRAPHS=1 (docs/gpu.md, "CUDA
        # graphs") and with NMT_CUDA_PERSISTENT=1 ("Persistent recurrence");
        # the first also with NMT_CUDA_LANES=0 ("Lanes"), with the guided
        # alignment loss (bench_train --guided: the guided_align kernel,
        # ce at 0.1, against a diagonal alignment) and with layer-normalised
        # LSTMs (model.layer_norm); and without TF32 twice, through cuBLAS
        # (fp32) and through nmt's own GEMM kernel (NMT_CUDA_GEMM=own,
        # docs/gpu.md "Own GEMM": its rate on training's shapes, alone and
        # in the step, next to cuBLAS's at the same precision). Every knob
        # is set in every run, so that one exported by the caller changes
        # nothing.
        for variant in plain profile graphs one-stream guided layer-norm persistent fp32 own-gemm; do
            graphs=0 lanes=1 persist=0 profile=0 tf32=1 gemm=cublas tag=$name extra=()
            [ "$variant" = profile ] && profile=1 tag="$name profile"
            [ "$variant" = graphs ] && graphs=1 tag="$name graphs"
            [ "$variant" = one-stream ] && lanes=0 tag="$name one-stream"
            [ "$variant" = guided ] && tag="$name guided" extra=(--guided)
            [ "$variant" = layer-norm ] && tag="$name layer-norm" extra=(--set model.layer_norm=true)
            [ "$variant" = persistent ] && persist=1 tag="$name persistent"
            [ "$variant" = fp32 ] && tf32=0 tag="$name fp32"
            [ "$variant" = own-gemm ] && tf32=0 gemm=own tag="$name own gemm"
            case $variant in one-stream | guided | layer-norm | fp32 | own-gemm) [ "$spec" != "${BENCH_RUNS[0]}" ] && continue ;; esac
            if ! lim=$(limit_for 100); then
                row "bench nmt $tag" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
                continue
            fi
            cmd=("$BENCH" --config "$BENCH_CONFIG" --set model.emb_dim="$E" --set model.hidden="$H"
                --set model.enc_layers="$Le" --set model.dec_layers="$Ld" --device "$DEV"
                --synthetic "$shape" --vocab "$vocab" --steps "$BENCH_STEPS" --warmup "$BENCH_WARMUP" ${extra[@]+"${extra[@]}"})
            echo "-- $tag: NMT_TF32=$tf32 NMT_CUDA_GEMM=$gemm NMT_CUDA_GRAPHS=$graphs NMT_CUDA_LANES=$lanes NMT_CUDA_PERSISTENT=$persist NMT_CUDA_PROFILE=$profile ${cmd[*]}" >>"$blog"
            if run_bench "bench nmt $tag" "$lim" "$work/bench.txt" env NMT_TF32="$tf32" NMT_CUDA_GEMM="$gemm" NMT_CUDA_GRAPHS="$graphs" \
                NMT_CUDA_LANES="$lanes" NMT_CUDA_PERSISTENT="$persist" NMT_CUDA_PROFILE="$profile" \
                NMT_CUDA_PROFILE_ROWS=40 NMT_BENCH_SHAPES=1 "${cmd[@]}"; then
                b=$(cat "$work/bench.txt")
                # the device profile of the timed steps (the whole table in
                # bench.log): where a step's device time goes, and whether
                # the device idles (busy against the wall time)
                if [ "$variant" = profile ]; then
                    if pnote=$(profile_note "$work/bench.txt" "cuda profile: "); then
                        # the libraries' (cuBLAS's) kernel time a step against
                        # the step's GEMM FLOPs: the GEMMs' rate inside the
                        # step, next to the same shapes timed alone
                        lib_ms=$(sed -n "s/^cuda profile: device busy .* (own [0-9.]*, libraries' \([0-9.]*\)).*/\1/p" "$work/bench.txt")
                        gemm=$(awk -v g="$(key "$b" "GEMM GFLOP per step")" -v l="$lib_ms" -v c="$(key "$b" "cublas ceiling GFLOP/s (same shapes)")" \
                            'BEGIN { if (g > 0 && l > 0) printf "; the step'"'"'s GEMMs (cuBLAS'"'"'s kernels) at %.3g TFLOP/s in the step, %.3g alone", g / l, c / 1000 }')
                        row "bench nmt $tag" "info" "$took" "$pnote$gemm; $(key "$b" "tgt tokens/s") tgt tok/s under the profiler"
                    elif [ "$DEV" = cuda ]; then
                        row "bench nmt $tag" "FAIL(profile)" "$took" "no device profile in bench_train's output (bench.log)"
                        failed=1
                    else
                        row "bench nmt $tag" "info" "$took" "no device profile off the GPU ($DEV)"
                    fi
                    continue
                fi
                nmt_sps[$tag]=$(key "$b" "seconds per step")
                nmt_tok[$tag]=$(key "$b" "tgt tokens/s")
                nmt_gflop[$tag]=$(key "$b" "GEMM GFLOP per step")
                mem=$(key "$b" "gpu memory MiB" | awk '{ gsub(/\(/, ""); printf "%s MiB in use of %s (model+arena %s MiB)", $1, $5, $6 }')
                ceil=$(key "$b" "cublas ceiling GFLOP/s (same shapes)")
                [ -z "$ceil" ] && ceil=$(key "$b" "sgemm ceiling GFLOP/s (same shapes)")
                [ -z "$ceil" ] && ceil=$(key "$b" "own gemm ceiling GFLOP/s (same shapes)")
                cstep=$(key "$b" "cuda per step")
                host=$(key "$b" "cuda host time per step" |
                    sed -n 's/^\([0-9.]*\) ms in host calls, \([0-9.]*\) ms waiting for the device (of \([0-9.]*\) ms).*/host calls \1 ms and waits \2 ms of \3 ms a step/p')
                calls=$(printf '%s\n' "$cstep" | sed 's/ (NMT_CUDA_GRAPHS.*//')
                if ! awk -v t="${nmt_tok[$tag]}" -v s="${nmt_sps[$tag]}" -v g="${nmt_gflop[$tag]}" \
                    'BEGIN { exit !(t + 0 > 0 && s + 0 > 0 && g + 0 > 0) }'; then
                    row "bench nmt $tag" "FAIL(parse)" "$took" "bench_train's output lacks tokens/s, s/step or GFLOP/step (bench.log)"
                    failed=1
                    continue
                fi
                gain=""
                [ "$variant" = one-stream ] && gain=$(awk -v a="${nmt_tok[$name]:-0}" -v b="${nmt_tok[$tag]}" \
                    'BEGIN { if (a > 0) printf "; two streams (the first row) train %.3fx as fast as one", a / b }')
                [ "$variant" = fp32 ] && gain=$(awk -v a="${nmt_tok[$name]:-0}" -v b="${nmt_tok[$tag]}" \
                    'BEGIN { if (a > 0) printf "; without TF32: TF32 (the first row) trains %.3fx as fast", a / b }')
                [ "$variant" = own-gemm ] && gain=$(awk -v a="${nmt_tok[$name fp32]:-0}" -v b="${nmt_tok[$tag]}" \
                    'BEGIN { if (a > 0) printf "; nmt'"'"'s own GEMM kernel, no TF32: it trains %.3fx as fast as cuBLAS without TF32 (the fp32 row)", b / a }')
                # the guided and layer-norm runs against the plain one; the
                # guided run's alignment loss must be there (> 0)
                if [ "$variant" = guided ] || [ "$variant" = layer-norm ]; then
                    what="the guided alignment loss"
                    [ "$variant" = layer-norm ] && what="layer normalisation"
                    gain=$(awk -v a="${nmt_tok[$name]:-0}" -v b="${nmt_tok[$tag]}" -v w="$what" \
                        'BEGIN { if (a > 0) printf "; with %s it trains %.3fx as fast as the plain run", w, b / a
                                 else printf "; no plain run to compare" }')
                    aloss=$(key "$b" "loss per token" | sed -n 's/.*(guided alignment \([0-9.]*\)).*/\1/p')
                    if [ "$variant" = guided ] && ! awk -v x="$aloss" 'BEGIN { exit !(x + 0 > 0) }'; then
                        row "bench nmt $tag" "FAIL(guided)" "$took" "no guided alignment loss in bench_train's output (bench.log): '$aloss'"
                        failed=1
                        continue
                    fi
                    [ "$variant" = guided ] && gain="$gain; alignment loss $aloss a token"
                fi
                if [ "$variant" = persistent ]; then
                    gain=$(awk -v a="${nmt_tok[$name]:-0}" -v b="${nmt_tok[$tag]}" \
                        'BEGIN { if (a > 0) printf "; the persistent recurrence trains %.3fx as fast as the plain run", b / a
                                 else printf "; no plain run to compare" }')
                    # whether the path was taken: "..., N persistent
                    # recurrences;" in the "cuda per step" line (runs off the
                    # GPU print no such line; an older bench_train no count).
                    # A path not taken is a note, not a failure: the plan
                    # declines shapes that do not fit the device.
                    prec=$(printf '%s\n' "$cstep" | sed -n 's/.* \([0-9][0-9.]*\) persistent recurrences.*/\1/p')
                    if [ -z "$cstep" ]; then
                        [ "$DEV" = cuda ] && gain="$gain; no \"cuda per step\" line: persistent runs not counted"
                    elif [ -z "$prec" ]; then
                        gain="$gain; persistent recurrences not counted (bench_train without the count)"
                    elif awk -v n="$prec" 'BEGIN { exit !(n == 0) }'; then
                        gain="$gain; persistent path not taken (0 persistent recurrences per step: the step path ran)"
                    fi
                fi
                row "bench nmt $tag" "info" "$took" "$(awk -v t="${nmt_tok[$tag]}" -v s="${nmt_sps[$tag]}" -v g="${nmt_gflop[$tag]}" -v c="$ceil" \
                    'BEGIN { printf "%.0f tgt tok/s, %.1f ms/step, %.1f GFLOP/step = %.4g TFLOP/s (same-shape GEMMs alone %.4g)", t, 1000 * s, g, g / s / 1000, c / 1000 }'), B,S,T $shape; mem ${mem:-n/a}${calls:+; per step: $calls}${host:+; $host}$gain"
            fi
        done
    done
fi

# 5b. the encoder's recurrence alone (bench_recurrence): forward and
# backward of one layer and direction through the step path and the
# persistent kernel, at each config's encoder shapes (first layer: hidden/2
# per direction; second: hidden), so that a run says where the persistent
# kernel loses or gains. Rows "recurrence NAME B b H h"; numbers never fail.
if [ "$no_gpu" = 0 ] && off_step 5b; then
    row "recurrence" "skipped" 0 "not in GPU_CHECK_STEPS"
elif [ "$no_gpu" = 0 ]; then
    for spec in "${BENCH_RUNS[@]}"; do
        IFS='|' read -r name E H Le Ld shape vocab <<<"$spec"
        IFS=',' read -r rB rS rT <<<"$shape"
        for rH in $((H / 2)) "$H"; do
            tag="recurrence $name B $rB H $rH"
            if ! lim=$(limit_for 30); then
                row "$tag" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
                continue
            fi
            echo "-- $tag: $BENCH_REC --device $DEV --T $rS --B $rB --H $rH" >>"$blog"
            run_bench "$tag" "$lim" "$work/rec.txt" "$BENCH_REC" --device "$DEV" --T "$rS" --B "$rB" --H "$rH" || continue
            r=$(cat "$work/rec.txt")
            if [ -z "$(key "$r" "forward ms step")" ]; then
                row "$tag" "FAIL(parse)" "$took" "bench_recurrence printed no forward time (bench.log)"
                failed=1
            else
                pers=$(key "$r" "persistent")
                row "$tag" "info" "$took" "T $rS: forward $(key "$r" "forward ms step") ms, backward $(key "$r" "backward ms step") ms on the step path; $(
                    if [ -n "$(key "$r" "forward ms persistent")" ]; then
                        echo "persistent $(key "$r" "forward ms persistent") / $(key "$r" "backward ms persistent") ms ($(key "$r" "persistent/step forward")x / $(key "$r" "persistent/step backward")x)"
                    else
                        echo "persistent ${pers:-not reported}"
                    fi)"
            fi
        done
    done
fi

# 6. decoding speed: for each of DEC_RUNS a model trained briefly here on
# the demo corpus, translating the test set with beam 1 and 5; the bench-size
# model also with NMT_CUDA_GRAPHS=1, whose output must be identical. Step 7
# decodes the same checkpoints and input with PyTorch.
echo "== decoding on $dev_tag (log: bench.log)"
declare -A dec_model dec_sps
# dec_tag NAME: the row names' infix ("" for de-en, " large" for large,
# " de-en.json" for de-en.json)
dec_tag() { [ "$1" = de-en ] && echo "" || echo " $1"; }
if [ "$no_gpu" = 1 ]; then
    row "decode nmt" "NO GPU" 0 "no GPU listed by nvidia-smi"
    failed=1
elif off_step 6; then
    row "decode nmt" "skipped" 0 "not in GPU_CHECK_STEPS"
else
    for spec in "${DEC_RUNS[@]}"; do
        IFS='|' read -r name sizes <<<"$spec"
        tag=$(dec_tag "$name")
        if ! lim=$(limit_for 120); then
            row "decode nmt$tag" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
            continue
        fi
        start=$(date +%s)
        end_at=$((start + lim))
        make_corpus "$blog"
        for k in 1 2 3 4; do cat "$work/data/test.src"; done >"$work/data/test-x4.src"
        write_config "$work/dec-$name.json" "run-dec-$name" "$sizes, \"dropout\": 0.3"
        echo "-- decode model $name: $sizes, demo corpus, $DECODE_STEPS steps on $DEV" >>"$blog"
        (cd "$work" && timeout -k 5 "$(left_of "$end_at")" "$NMT" train --config "dec-$name.json" --quiet \
            --set train.device="$DEV" --set train.max_steps="$DECODE_STEPS") >>"$blog" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ]; then
            took=$(($(date +%s) - start))
            row "decode nmt$tag" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$took" "training the decode model: $(tail -n 1 "$blog" | cut -c1-80)"
            failed=1
            continue
        fi
        dec_model[$name]="$work/run-dec-$name/last.nmt"
        for beam in 1 5; do
            hyp="$work/dec-$name-b$beam.txt"
            t1=$(date +%s)
            sps=$(xlate "${dec_model[$name]}" "$DEV" "$beam" "$hyp" "$blog" "$(left_of "$end_at")")
            rc=$?
            words=$(awk '{ n += NF } END { printf "%.1f", NR ? n / NR : 0 }' "$hyp")
            if [ "$rc" -ne 0 ]; then
                row "decode nmt$tag beam $beam" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$(($(date +%s) - t1))" "$(tail -n 2 "$blog" | head -n 1 | cut -c1-80)"
                failed=1
                continue
            fi
            dec_sps[$name $beam]=$sps
            hnote=$(host_time "$work/xlate.err")
            # the whole process's wall time, for this row and the variants'
            xlate_wall_default=$(cat "$work/xlate.wall" 2>/dev/null)
            extra=""
            [ "$name" = de-en ] && [ "$beam" = 5 ] && [ -n "${demo_sps_b5:-}" ] && extra="; demo-size model (step 3): $demo_sps_b5 sent/s"
            # the input 4 times over in one run: what a sentence costs beyond
            # the run's first-use costs (libraries, kernels, batch shapes)
            if sps4=$(xlate "${dec_model[$name]}" "$DEV" "$beam" "$work/dec-x4.txt" "$blog" "$(left_of "$end_at")" "$work/data/test-x4.src") &&
                per=$(marginal_rate "$TEST_N" "$sps" "$sps4"); then
                dec_sps[$name $beam marginal]=${per%% *}
                extra="$extra; 4x the input: $sps4 sent/s, so ${per%% *} sent/s beyond ${per#* } ms of first-use costs"
                h4=$(host_time "$work/xlate.err")
                [ -n "$h4" ] && extra="$extra (4x: ${h4%%, [0-9]* slow calls*})"
            else
                extra="$extra; 4x the input: ${sps4:-?} sent/s, no per-sentence rate"
            fi
            row "decode nmt$tag beam $beam" "info" "$(($(date +%s) - t1))" "$sps sent/s, $TEST_N sentences, $words words/line out ($name sizes, trained $DECODE_STEPS steps here)${hnote:+; $hnote}$extra${xlate_wall_default:+; the process ${xlate_wall_default} s}"
            # where the device's time goes, and how much of the run it idles
            decode_profile "decode nmt$tag beam $beam profile" "${dec_model[$name]}" "$beam" "$blog" "$end_at"
            # nmt's own GEMM kernel for every GEMM (docs/gpu.md, "Own
            # GEMM"): cuBLAS is never loaded, so none of its first-use
            # costs (106-145 ms on the H200); also beyond first use (4x)
            decode_variant "decode nmt$tag beam $beam own gemm" NMT_CUDA_GEMM=own "${dec_model[$name]}" "$beam" "$hyp" \
                "$sps" "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            [ -n "$variant_sps" ] && dec_sps[$name $beam own]=$variant_sps
            # the 4 heads without the query form (every head reads its own
            # projected keys, and the keys for its context): what the form
            # gives, also beyond the first-use costs
            [ "$name" = de-en.json ] && decode_variant "decode nmt de-en.json beam $beam query form off" NMT_DECODE_QUERY_FORM=0 \
                "${dec_model[$name]}" "$beam" "$hyp" "$sps" "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            [ "$name" = de-en ] || continue
            # again with the batch shrunk at every finished sentence (the
            # CPU's way; the CUDA backend's default shrinks it only to
            # multiples of 8 sentences): the speed, and the same output
            decode_variant "decode nmt beam $beam quantum 1" NMT_DECODE_QUANTUM=1 "${dec_model[$name]}" "$beam" "$hyp" "$sps" "" "$blog" "$end_at"
            # and never shrunk (a batch of 64 keeps its 64 columns to its
            # last step): whether shrinking pays on a GPU at all, where a
            # step of 8 rows may cost what one of 64 does, also beyond the
            # first-use costs (each new row count is a new GEMM shape)
            decode_variant "decode nmt beam $beam quantum 64" NMT_DECODE_QUANTUM=64 "${dec_model[$name]}" "$beam" "$hyp" "$sps" \
                "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            # and so with graphs: a batch that keeps its shape replays its
            # steps' graphs from its fourth step on (on the emulator, 128
            # lines greedy: 630 -> 374 host calls against quantum 8 with graphs)
            decode_variant "decode nmt beam $beam quantum 64 graphs" "NMT_DECODE_QUANTUM=64 NMT_CUDA_GRAPHS=1" "${dec_model[$name]}" "$beam" \
                "$hyp" "$sps" "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            # the encoder's recurrence as one persistent kernel per layer
            # and direction: slower in training (its backward), but a
            # batch's encoder is a fifth of greedy decoding's host calls
            # (emulator, 16 lines, de-en.json model: 665 -> 543), and
            # decoding runs only its forward
            decode_variant "decode nmt beam $beam persistent" NMT_CUDA_PERSISTENT=1 "${dec_model[$name]}" "$beam" "$hyp" "$sps" \
                "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            # in input order (--maxi-batch 1: no sorting by length), as
            # PyTorch's reference batches: step 7 gives that ratio too
            decode_variant "decode nmt beam $beam maxi-batch 1" "--maxi-batch 1" "${dec_model[$name]}" "$beam" "$hyp" "$sps" "" "$blog" "$end_at"
            dec_sps[$name $beam input order]=$variant_sps
            # greedy without the pipeline (each step queued only after the
            # last one's tokens were read): what the pipeline gives, also
            # beyond the first-use costs (4x the input)
            [ "$beam" = 1 ] && decode_variant "decode nmt beam 1 pipeline off" NMT_DECODE_PIPELINE=0 "${dec_model[$name]}" 1 "$hyp" "$sps" \
                "${dec_sps[$name 1 marginal]:-none}" "$blog" "$end_at"
            # without the target embeddings folded into the first decoder
            # layer (each step embeds, copies and multiplies them): what the
            # fold gives, also beyond the first-use costs
            decode_variant "decode nmt beam $beam fold off" NMT_DECODE_FOLD=0 "${dec_model[$name]}" "$beam" "$hyp" "$sps" \
                "${dec_sps[$name $beam marginal]:-none}" "$blog" "$end_at"
            # again with graphs: the same output, and the speed
            t1=$(date +%s)
            sps=$(NMT_CUDA_GRAPHS=1 xlate "${dec_model[$name]}" "$DEV" "$beam" "${hyp%.txt}-graphs.txt" "$blog" "$(left_of "$end_at")")
            rc=$?
            if [ "$rc" -ne 0 ]; then
                row "decode nmt beam $beam graphs" "$(timed_out "$rc" && echo TIMEOUT || echo "FAIL($rc)")" "$(($(date +%s) - t1))" "$(tail -n 2 "$blog" | head -n 1 | cut -c1-80)"
                failed=1
            elif ! cmp -s "$hyp" "${hyp%.txt}-graphs.txt"; then
                row "decode nmt beam $beam graphs" "FAIL" "$(($(date +%s) - t1))" "NMT_CUDA_GRAPHS=1 translates otherwise: $(diff "$hyp" "${hyp%.txt}-graphs.txt" | grep -c '^<') lines differ"
                failed=1
            else
                dec_sps[$name $beam graphs]=$sps
                row "decode nmt beam $beam graphs" "pass" "$(($(date +%s) - t1))" "$sps sent/s with NMT_CUDA_GRAPHS=1, output identical$(grep -o 'translate: cuda: .*' "$blog" | tail -n 1 | cut -c18-130 | sed 's/^/; /')"
            fi
        done
    done
fi

# 7. PyTorch with cuDNN LSTMs: same sizes, same batches, TF32 allowed

# torch_run NAME LIMIT CMD...: runs a PyTorch command with the machine's own
# library path, output in $work/torch.txt and torch.log; sets took. 0 when it
# ran; else a row for NAME, never a failure: 2 when torch has no CUDA (exit
# status 3: "unavailable"), 1 for a timeout or another error.
torch_run() {
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s)
    echo "-- $name: $*" >>"$plog"
    env LD_LIBRARY_PATH="$orig_ld_library_path" PYTHONUNBUFFERED=1 timeout -k 5 "$limit" "$@" >"$work/torch.txt" 2>&1
    rc=$?
    cat "$work/torch.txt" >>"$plog"
    took=$(($(date +%s) - start))
    if [ "$rc" -eq 3 ]; then
        row "$name" "unavailable" "$took" "$(key "$(cat "$work/torch.txt")" unavailable | cut -c1-90) (not a failure)"
        return 2
    elif timed_out "$rc"; then
        row "$name" "timeout" "$took" "over ${limit}s (not a failure)"
        return 1
    elif [ "$rc" -ne 0 ]; then
        row "$name" "error($rc)" "$took" "$(tail -n 1 "$work/torch.txt" | cut -c1-80) (not a failure)"
        return 1
    fi
    return 0
}
echo "== PyTorch on $dev_tag (log: torch.log)"
tf32_gflops=""
if [ "$no_gpu" = 1 ]; then
    row "PyTorch" "NO GPU" 0 "no GPU listed by nvidia-smi"
    failed=1
elif off_step 7; then
    row "PyTorch" "skipped" 0 "not in GPU_CHECK_STEPS"
else
    PY=""
    for p in ${GPU_CHECK_PYTHON:-python3 /usr/bin/python3}; do
        if env LD_LIBRARY_PATH="$orig_ld_library_path" timeout 90 "$p" -c 'import torch' >/dev/null 2>&1; then
            PY=$p
            break
        fi
    done
    if [ -z "$PY" ]; then
        echo "no python3 with torch (tried: ${GPU_CHECK_PYTHON:-python3 /usr/bin/python3})" >>"$plog"
        row "PyTorch" "unavailable" 0 "no python3 with torch (not a failure)"
    else
        peak=--peak
        for spec in "${BENCH_RUNS[@]}"; do
            IFS='|' read -r name E H Le Ld shape vocab <<<"$spec"
            IFS=, read -r B S T <<<"$shape"
            IFS=, read -r Vs Vt <<<"$vocab"
            if ! lim=$(limit_for 120); then
                row "PyTorch $name" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
                continue
            fi
            cmd=("$PY" "$TORCH_BENCH" --device "$DEV" --tf32 ${peak:+"$peak"} --emb "$E" --hidden "$H" --enc-layers "$Le"
                --dec-layers "$Ld" --batch "$B" --src-len "$S" --tgt-len "$T" --src-vocab "$Vs" --tgt-vocab "$Vt"
                --steps "$BENCH_STEPS" --warmup "$BENCH_WARMUP")
            torch_run "PyTorch $name" "$lim" "${cmd[@]}"
            case $? in
                2) PY=""; break ;;
                1) continue ;;
            esac
            t=$(cat "$work/torch.txt")
            [ -n "$peak" ] && tf32_gflops=$(printf '%s\n' "$t" | sed -n 's/^gemm tf32 GFLOP\/s ([^)]*): //p') &&
                fp32_gflops=$(printf '%s\n' "$t" | sed -n 's/^gemm fp32 GFLOP\/s ([^)]*): //p')
            peak=""
            pt_tok=$(key "$t" "torch best tgt tokens/s")
            pt_sps=$(key "$t" "torch best seconds per step")
            formula=$(key "$t" "formula GFLOP per step")
            row "PyTorch $name" "info" "$took" "$(awk -v p="$pt_tok" -v n="${nmt_tok[$name]:-0}" -v ng="${nmt_tok[$name graphs]:-0}" -v c="$(key "$t" "torch cudnn tgt tokens/s")" -v l="$(key "$t" "torch cell tgt tokens/s")" \
                'BEGIN { printf "best %.0f tgt tok/s (nn.LSTM decoder %.0f, LSTMCell %.0f); nmt/PyTorch %s, with graphs %s", p, c, l, (n > 0 && p > 0) ? sprintf("%.2fx", n / p) : "n/a", (ng > 0 && p > 0) ? sprintf("%.2fx", ng / p) : "n/a" }')"
            pt_frac[$name]=$(awk -v f="$formula" -v s="$pt_sps" -v p="${tf32_gflops:-0}" 'BEGIN { if (p > 0 && s > 0) printf "%.1f%%", 100 * f / s / p; else print "n/a" }')
            for tag in "$name" "$name graphs"; do
                nmt_frac[$tag]=$(awk -v f="$formula" -v s="${nmt_sps[$tag]:-0}" -v p="${tf32_gflops:-0}" 'BEGIN { if (p > 0 && s > 0) printf "%.1f%%", 100 * f / s / p; else print "n/a" }')
            done
        done
        if [ -n "$tf32_gflops" ]; then
            fr=""
            for spec in "${BENCH_RUNS[@]}"; do
                name=${spec%%|*}
                fr="$fr $name nmt ${nmt_frac[$name]:-n/a}, with graphs ${nmt_frac[$name graphs]:-n/a} (PyTorch ${pt_frac[$name]:-n/a});"
            done
            row "TF32 GEMM rate" "info" 0 "$(awk -v a="$tf32_gflops" -v b="${fp32_gflops:-0}" 'BEGIN { printf "%.1f TFLOP/s (square sgemm, fp32 %.1f); model FLOP/s as a fraction:", a / 1000, b / 1000 }')$fr"
        fi
    fi
    # PyTorch decoding (reference.py decode: the same greedy and batched beam
    # search as nmt, step for step; nn.LSTM encoder, LSTMCell decoder, no
    # TF32 on either side) of step 6's checkpoints and input, 64 sentences a
    # batch like nmt, twice: with every sentence kept in the batch to the
    # end (fewer ops a step) and with finished ones dropped (--drop-finished:
    # fewer rows, as nmt); the faster counts, as for training. Sentences/s,
    # the ratio nmt/PyTorch, and the lines identical to nmt's translation on
    # the same device (the fewer of the two): under 90% fails
    declare -A pt_rate pt_warm pt_cold
    for spec in "${DEC_RUNS[@]}"; do
        name=${spec%%|*}
        tag=$(dec_tag "$name")
        [ -n "$PY" ] && [ -n "${dec_model[$name]:-}" ] || continue
        beams=""
        for beam in 1 5; do [ -n "${dec_sps[$name $beam]:-}" ] && beams="$beams${beams:+,}$beam"; done
        [ -n "$beams" ] || continue
        ran="" took_all=0
        for variant in kept dropped; do
            if ! lim=$(limit_for 60); then
                row "PyTorch decode$tag $variant" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
                continue
            fi
            flag=()
            [ "$variant" = dropped ] && flag=(--drop-finished)
            # one process for both beams (one start of Python and CUDA)
            torch_run "PyTorch decode$tag $variant" "$lim" "$PY" "$REFERENCE" decode --device "$DEV" \
                --model "${dec_model[$name]}" --input "$work/data/test.src" --beam "$beams" --batch 64 \
                --out "$work/pt-$name-$variant-b{beam}.txt" --warm-passes 4 ${flag[@]+"${flag[@]}"} || continue
            took_all=$((took_all + took))
            ran="$ran $variant"
            k=0
            for beam in ${beams//,/ }; do
                k=$((k + 1))
                # beam k's lines: "N sentences ... sentences/s", then its rate
                # over the input 4 times again, warm (--warm-passes)
                pt_rate[$variant $beam]=$(sed -n 's/^decode: [0-9]* sentences, .* s: \([0-9.]*\) sentences\/s.*/\1/p' "$work/torch.txt" | sed -n "${k}p")
                pt_warm[$variant $beam]=$(sed -n 's/^decode: warm, [0-9]* passes: .* s: \([0-9.]*\) sentences\/s.*/\1/p' "$work/torch.txt" | sed -n "${k}p")
                # the first beam of the process: its untimed warm-up paid
                # the first use of the libraries and kernels; counted in,
                # the rate of a cold run, as nmt's (which counts its own)
                pt_cold[$variant $beam]=""
                if [ "$k" = 1 ]; then
                    wu=$(sed -n 's/^decode: untimed warm-up (one sentence, beam [0-9]*): \([0-9.]*\) s$/\1/p' "$work/torch.txt" | head -n 1)
                    pt_cold[$variant $beam]=$(awk -v n="$TEST_N" -v r="${pt_rate[$variant $beam]:-0}" -v w="$wu" \
                        'BEGIN { if (r + 0 > 0 && w != "") printf "%.1f", n / (n / r + w) }')
                fi
            done
        done
        [ -n "$ran" ] || continue
        for beam in ${beams//,/ }; do
            rates="" warms="" pt=0 pw=0 pc=0 same="" total=0
            for variant in $ran; do
                r=${pt_rate[$variant $beam]:-0} w=${pt_warm[$variant $beam]:-0}
                pc=$(awk -v a="$pc" -v b="${pt_cold[$variant $beam]:-0}" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
                rates="$rates${rates:+, }$variant ${r:-?}"
                warms="$warms${warms:+, }$variant ${w:-?}"
                pt=$(awk -v a="$pt" -v b="${r:-0}" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
                pw=$(awk -v a="$pw" -v b="${w:-0}" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
                read -r s t <<<"$(same_lines "$work/dec-$name-b$beam.txt" "$work/pt-$name-$variant-b$beam.txt" 2>/dev/null)"
                if [ -z "$same" ] || [ "${s:-0}" -lt "$same" ]; then same=${s:-0} total=${t:-0}; fi
            done
            detail=$(awk -v p="$pt" -v n="${dec_sps[$name $beam]}" -v g="${dec_sps[$name $beam graphs]:-}" \
                -v io="${dec_sps[$name $beam input order]:-}" \
                -v pw="$pw" -v nm="${dec_sps[$name $beam marginal]:-0}" -v rates="$rates" -v warms="$warms" \
                -v og="${dec_sps[$name $beam own]:-}" -v pc="$pc" \
                'BEGIN { printf "%s sent/s (the faster of: %s); nmt/PyTorch %s", p, rates,
                                (p > 0 && n > 0) ? sprintf("%.2fx", n / p) : "n/a"
                         if (io != "" && p > 0) printf ", in input order (--maxi-batch 1, as PyTorch batches) %.2fx", io / p
                         if (g != "" && p > 0) printf ", with graphs %.2fx", g / p
                         if (og != "" && p > 0) printf ", with own gemm %.2fx", og / p
                         if (pc > 0 && n > 0) {
                             printf "; cold (its warm-up counted, first use as in nmt'"'"'s run) %s sent/s, nmt/PyTorch %.2fx", pc, n / pc
                             if (og != "") printf ", with own gemm %.2fx", og / pc
                         }
                         printf "; warm %s sent/s (%s), nmt beyond its first-use costs %s", pw + 0, warms,
                                (pw > 0 && nm > 0) ? sprintf("%.2fx", nm / pw) : "n/a" }')
            detail="$detail; $same of $total lines as nmt's"
            if [ "$total" -ne "$TEST_N" ] || [ $((100 * same)) -lt $((90 * total)) ]; then
                row "PyTorch decode$tag beam $beam" "FAIL" "$took_all" "$detail (under 90%: torch.log)"
                failed=1
            else
                row "PyTorch decode$tag beam $beam" "pass" "$took_all" "$detail"
            fi
        done
    done
fi

# 8. compute-sanitizer over the parity test, where the machine's runtime
# allows it (last: the least important steps get what is left of the
# budget); memcheck first, then the race and barrier checkers.
# sanitize TOOL LIMIT_S VAR=VALUE...: compute-sanitizer --tool TOOL over the
# parity test, run with the environment VAR=VALUE..., output to TOOL.log
# (its first line the command), row TOOL. The tool's own verdicts:
# "unavailable" when it says it cannot run here and "timeout" past the
# limit, neither a failure; else a FAIL on an exit status other than 0 (99:
# --error-exitcode, the tool found errors; else the test's own) or on a
# summary that counts errors, with the first error line; else "pass" with
# the summary line. The summaries: "ERROR SUMMARY: N errors" (memcheck,
# synccheck), "RACECHECK SUMMARY: N hazards displayed (E errors, W
# warnings)" (racecheck: warnings alone pass).
sanitize() {
    local tool=$1 want=$2 log="$out/$1.log" lim start rc took summary errors first
    shift 2
    if [ -z "$gpu" ]; then
        row "$tool" "NO GPU" 0 "no GPU listed by nvidia-smi"
        return
    elif off_step 8; then
        row "$tool" "skipped" 0 "not in GPU_CHECK_STEPS"
        return
    elif ! command -v compute-sanitizer >/dev/null 2>&1; then
        row "$tool" "skipped" 0 "compute-sanitizer not on PATH"
        return
    elif ! lim=$(limit_for "$want"); then
        row "$tool" "skipped" 0 "out of budget (GPU_CHECK_BUDGET)"
        return
    fi
    start=$(date +%s)
    echo "== $tool: $* compute-sanitizer --tool $tool $PARITY"
    echo "-- $* compute-sanitizer --tool $tool --error-exitcode 99 $PARITY (limit ${lim}s)" >"$log"
    timeout -k 10 "$lim" env "$@" compute-sanitizer --tool "$tool" --error-exitcode 99 "$PARITY" >>"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    summary=$(grep -E '(ERROR|RACECHECK) SUMMARY:' "$log" | tail -n 1 | sed 's/^=* *//')
    errors=$(grep -E '(ERROR|RACECHECK) SUMMARY:' "$log" |
        sed -E 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/; s/.*\(([0-9]+) errors?,.*/\1/' | awk '{ n += $1 } END { print n + 0 }')
    # the first report of the tool ("Invalid __global__ read", "Error: Race
    # reported", "Barrier error detected", "Program hit ...") or of the test
    first=$(grep -m1 -E '^=+ +(Invalid|Error|Barrier|Race|Program hit|Uninitialized|Leaked)|^FAIL' "$log" | sed 's/^=* *//' | cut -c1-100)
    if grep -qE 'Device not supported|error 999|Failed to initialize|LibraryNotLoaded' "$log"; then
        row "$tool" "unavailable" "$took" "compute-sanitizer cannot run here ($tool.log)"
    elif timed_out "$rc"; then
        row "$tool" "timeout" "$took" "not finished in ${lim}s (not a failure)${first:+; reported before: $first}"
    elif [ "$rc" -ne 0 ] || [ "$errors" -gt 0 ]; then
        row "$tool" "FAIL$([ "$rc" -ne 0 ] && echo "($rc)")" "$took" "${first:-${summary:-$(tail -n 1 "$log" | cut -c1-100)}}"
        failed=1
    else
        row "$tool" "pass" "$took" "${summary:-exit 0, no summary line ($tool.log)}"
    fi
}
# memcheck over every 9th model of the attention sweep: memcheck is slow
# (NMT_PARITY_NO_REFUSAL=1 in all three: the refused-capture test makes an
# illegal call on purpose, which the tool would count as an error; and
# NMT_PARITY_NO_PROFILE=1: the profile's test would start CUPTI's tracing
# inside the tool's own instrumentation, which the parity run has checked)
sanitize memcheck 120 NMT_PARITY_SWEEP_STRIDE=9 NMT_PARITY_NO_REFUSAL=1 NMT_PARITY_NO_PROFILE=1
# the race and barrier checkers over the slot tests, which run every kernel
# with shared memory and barriers on awkward shapes (the persistent
# recurrence among them); the whole models would run them again at more
# shapes, too slowly under these tools
sanitize racecheck 60 NMT_PARITY_SLOTS_ONLY=1 NMT_PARITY_NO_REFUSAL=1 NMT_PARITY_NO_PROFILE=1
sanitize synccheck 60 NMT_PARITY_SLOTS_ONLY=1 NMT_PARITY_NO_REFUSAL=1 NMT_PARITY_NO_PROFILE=1

row "beam decode GPU vs CPU" "in parity" 0 "greedy and beam tokens compared in the parity test"

{
    echo
    echo "== gpu-check summary (commit $commit)"
    printf '%-26s %-12s %6s  %s\n' "step" "result" "secs" "detail"
    for r in "${rows[@]}"; do echo "$r"; done
    echo "total: $(($(date +%s) - t_begin)) s"
    echo "overall: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL)"
} | tee -a "$summary"
# the same rows as the markdown table of a docs/gpu-runs.md entry
{
    echo "### Call N (commit $commit, the whole gpu-check.sh, $(($(date +%s) - t_begin)) s)"
    echo
    echo "| step | result | detail |"
    echo "| --- | --- | --- |"
    for r in "${md_rows[@]}"; do echo "$r"; done
} >"$out/summary.md"

# The device tool brings back at most 8 files from $OUT: with more, the logs
# go into one archive beside summary.txt (GPU_CHECK_PACK: auto, the
# default; 1 always; 0 never)
pack=${GPU_CHECK_PACK:-auto}
logs=$(cd "$out" && find . -maxdepth 1 -type f ! -name summary.txt ! -name summary.md ! -name logs.tar.gz -printf '%P\n' | sort)
n_files=$(($(printf '%s' "$logs" | grep -c .) + 2))
if [ -n "$logs" ] && { [ "$pack" = 1 ] || { [ "$pack" = auto ] && [ "$n_files" -gt 8 ]; }; }; then
    # shellcheck disable=SC2086 # file names of this script's own: no spaces
    if (cd "$out" && tar -czf logs.tar.gz $logs && rm -f $logs); then
        echo "logs: $out/logs.tar.gz ($(echo $logs | wc -w) files; tar -xzf to read)"
    fi
fi
exit "$failed"
