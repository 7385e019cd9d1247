#!/usr/bin/env bash
# test_gpu_emu.sh: nmt itself on the CUDA backend compiled by g++ against
# the CPU emulator of tests/gpu_emu/ ($NMT_BUILD/gpu-emu/nmt, mk/gpu.mk),
# on machines without a GPU: the host side of a GPU run. No substitute for
# a GPU run. (The kernels themselves: test_gpu_emu_parity.sh.)
#  1. Three training steps with train.device=cuda give the CPU's losses
#     and validation BLEU; checkpoints cross devices both ways (the
#     "cuda"-trained one translates on the CPU exactly as on "cuda", greedy
#     and beam, and the CPU-trained one too, also as an ensemble and with a
#     shortlist; a CPU run resumes on "cuda", its next step matches
#     resuming on the CPU, and the checkpoint "cuda" then writes holds the
#     CPU's weights); with the streams run in the other order
#     (EMU_STREAM_ORDER=last) training and translation are the same.
#  2. A device that fails mid-run: nmt stops with CUDA's error and writes
#     nothing computed after it.
#  3. A device without the memory asked for: a message with the sizes, the
#     device's free memory and the settings to lower; nothing written.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_gpu_emu
. "$ROOT/tests/gpu_emu/lib.sh"

# 1. nmt on the emulated backend
emu_make nmt bench_train
EMU=$EMU_DIR/nmt
cd "$tmp"
"$NMT" demo-corpus --out data --train 400 --valid 8 --test 8 --seed 7 > /dev/null 2>&1 || bad "demo-corpus"
demo_config c.json \
  '{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 2, "dropout": 0.1, "bidirectional": true,
    "input_feed": true, "attention": {"style": "luong", "score": "general", "heads": 2, "dropout": 0.1}}' \
  '{"optimizer": "adam", "lr": 0.002, "batch_sentences": 8, "max_steps": 3, "label_smoothing": 0.1, "seed": 1,
    "valid_every": 3, "log_every": 1, "threads": 1}' \
  '{"beam": 2, "length_penalty": 0.6, "batch": 8}'
set_len=(--set data.max_len=12)
"$NMT" prepare --config c.json "${set_len[@]}" > prepare.log 2>&1 || bad "prepare: $(tail -2 prepare.log)"
# train SIDE DEVICE BIN [ARGS...]
train() {
  local side=$1 dev=$2 bin=$3
  shift 3
  "$bin" train --config c.json "${set_len[@]}" --set train.device="$dev" --set train.save_dir="run-$side" "$@" \
    > "train-$side.log" 2>&1
}
train cpu cpu "$NMT"
check "[ $? -eq 0 ]" "training on the CPU: $(tail -3 train-cpu.log)"
NMT_CUDA_GRAPHS=0 train cuda cuda "$EMU"
check "[ $? -eq 0 ]" "training on the emulated cuda: $(tail -3 train-cuda.log)"
check "grep -q 'device cuda' train-cuda.log" "the emulated run did not train on cuda: $(grep '^train:' train-cuda.log)"
check "grep -Eq '^train: memory on the cuda: .*; cuda has [0-9.]+ MB free of [0-9]+ MB$' train-cuda.log" \
  "no device memory in the memory line: $(grep '^train: memory' train-cuda.log)"
# same_losses A B [TOL]: step losses (train.csv rows of kind train) agree
# to TOL relative (default 1e-4), validation BLEU exactly
same_losses() {
  awk -F, -v tol="${3:-1e-4}" 'FNR == 1 { next } NR == FNR { if ($1 == "train") a[$2] = $4; else v[$2] = $11; next }
           $1 == "train" { n++; d = $4 - a[$2]; if (d < 0) d = -d; if (!($2 in a) || d > tol * $4) bad++ }
           $1 == "valid" { m++; if (v[$2] != $11) bad++ }
           END { exit !(n > 0 && m > 0 && bad == 0) }' "$1" "$2"
}
check "same_losses run-cpu/train.csv run-cuda/train.csv" \
  "losses or validation BLEU differ: cpu $(cut -d, -f1-4,11 run-cpu/train.csv | tr '\n' ' '), cuda $(cut -d, -f1-4,11 run-cuda/train.csv | tr '\n' ' ')"
# Graphs, the default (NMT_CUDA_GRAPHS unset; the run above had it 0): the
# same training on the emulated cuda with the work between host waits
# recorded and replayed as graphs gives the same losses, and captures and
# replays graphs; translating with graphs (and a cache of 2, so graphs
# are dropped and captured again) gives the same output, and replays graphs
(unset NMT_CUDA_GRAPHS; train graphs cuda "$EMU")
check "[ $? -eq 0 ]" "training with graphs (the default): $(tail -3 train-graphs.log)"
check "same_losses run-cuda/train.csv run-graphs/train.csv" \
  "graphs: losses differ: $(cut -d, -f1-4,11 run-graphs/train.csv | tr '\n' ' ')"
check "grep -Eq 'train: cuda: .* in [0-9]+ host calls \([1-9][0-9]* graph launches, [1-9][0-9]* graphs captured' train-graphs.log" \
  "graphs (the default): none captured and launched: $(grep 'cuda:' train-graphs.log)"
check "grep -Eq 'train: cuda: .* in [0-9]+ host calls \(0 graph launches, 0 graphs captured.*; [0-9]+ MB of the device.s [0-9]+ MB in use at the end$' train-cuda.log" \
  "NMT_CUDA_GRAPHS=0: graphs used, or no memory in the usage line: $(grep 'cuda:' train-cuda.log)"
# Determinism: with the emulated device's blocks, warps and threads run in
# two different shuffled orders, three training steps of a Luong concat
# model (the additive score: its dv sums over rows) give the same weights
# and Adam moments to the byte: no sum depends on the order in which the
# device runs threads (an atomicAdd scatter would)
for seed in 1 2; do
  EMU_SCHEDULE=shuffle EMU_SEED=$seed train det cuda "$EMU" \
    --set model.attention.score=concat
  check "[ $? -eq 0 ]" "training in shuffled order $seed: $(tail -3 train-det.log)"
  mv run-det "run-det$seed"
done
# (scripts/ckpt_same.py: the PARM and OPTM sections; STAT holds seconds)
same=$(python3 "$ROOT/scripts/ckpt_same.py" run-det1/last.nmt run-det2/last.nmt)
check "[ $? -eq 0 ]" "two shuffled orders of the device's threads trained different weights: $same"
# step_rows SIDE: run-SIDE's train.csv rows (kind, step, epoch, loss, norm,
# validation BLEU), which runs that differ only in their streams have alike
step_rows() { cut -d, -f1-4,7,11 "run-$1/train.csv"; }
# NMT_CUDA_LANES=0: the encoder's two directions on one stream instead of
# two (docs/gpu.md, "Lanes") train bit for bit alike (the same kernels and
# sums, only the streams differ); the default run logs its forks
NMT_CUDA_LANES=0 train onestream cuda "$EMU"
check "[ $? -eq 0 ]" "training with NMT_CUDA_LANES=0: $(tail -3 train-onestream.log)"
check "cmp -s <(step_rows cuda) <(step_rows onestream)" \
  "one stream trains otherwise: $(diff <(step_rows cuda) <(step_rows onestream) | head -4)"
check "grep -Eq 'train: cuda: .*host waits, [1-9][0-9]* lane forks' train-cuda.log" \
  "no lane forks in the usage line: $(grep 'cuda:' train-cuda.log)"
# NMT_CUDA_PERSISTENT=1: each encoder layer's recurrence as one
# cooperative kernel (docs/gpu.md, "Persistent recurrence") trains with the
# CPU's losses, and the usage line counts its runs
NMT_CUDA_PERSISTENT=1 train persist cuda "$EMU"
check "[ $? -eq 0 ]" "training with NMT_CUDA_PERSISTENT=1: $(tail -3 train-persist.log)"
check "same_losses run-cpu/train.csv run-persist/train.csv" \
  "persistent: losses differ: $(cut -d, -f1-4,11 run-persist/train.csv | tr '\n' ' ')"
check "grep -Eq 'train: cuda: .* [1-9][0-9]* persistent recurrences' train-persist.log" \
  "persistent: no persistent recurrence counted: $(grep 'cuda:' train-persist.log)"
# a GPU that does not exist (the emulator has one): an error naming the
# setting, with cuda and with auto (a GPU asked for by number is never
# replaced by the CPU), in training and in translation
for dev in cuda auto; do
  train gpu1 "$dev" "$EMU" --set train.gpu=1
  rc=$?
  check "[ $rc -eq 2 ] && grep -q 'train.gpu 1: GPU 1 requested (train.device $dev), but CUDA device 1 does not exist (1 visible)' train-gpu1.log" \
    "train.gpu=1 with $dev: exit $rc: $(tail -2 train-gpu1.log)"
done
"$EMU" translate --model run-cuda/last.nmt --device cuda --gpu 1 < data/valid.src > gpu1.out 2> gpu1.err
rc=$?
check "[ $rc -ne 0 ] && [ ! -s gpu1.out ] && grep -q -- '--gpu 1: GPU 1 requested (--device cuda), but CUDA device 1 does not exist' gpu1.err" \
  "translate --gpu 1: exit $rc: $(tail -2 gpu1.err)"
NMT_CUDA_GRAPHS=1 NMT_CUDA_GRAPHS_MAX=2 NMT_CUDA_SLOW_CALL_MS=0 "$EMU" translate --model run-cuda/last.nmt \
  --device cuda --beam 2 --nbest 2 < data/valid.src > graphs-b2.cuda 2> graphs-tr.err
check "[ $? -eq 0 ]" "translate with NMT_CUDA_GRAPHS=1: $(tail -2 graphs-tr.err)"
"$EMU" translate --model run-cuda/last.nmt --device cuda --beam 2 --nbest 2 < data/valid.src > plain-b2.cuda 2> tr.err
check "cmp -s plain-b2.cuda graphs-b2.cuda" "translating with graphs differs: $(diff plain-b2.cuda graphs-b2.cuda | head -4)"
check "grep -Eq 'translate: cuda: .*\(([1-9][0-9]*) graph launches, ([1-9][0-9]*) graphs captured' graphs-tr.err" \
  "translating with graphs replayed none: $(grep 'cuda:' graphs-tr.err)"
# EMU_STREAM_ORDER=last (tests/gpu_emu/cuda_runtime.h): the latest-created
# stream's work runs first wherever its event waits allow, so a missing
# fork in nmt's own use of the streams (the encoder's two lanes, the
# downloads overlapped with the next decoding step, validation included)
# reads stale data where the default order shows a missing join: the same
# training, bit for bit, and the same translations, greedy and beam
EMU_STREAM_ORDER=last train order cuda "$EMU"
check "[ $? -eq 0 ] && cmp -s <(step_rows cuda) <(step_rows order)" \
  "training with EMU_STREAM_ORDER=last: $(tail -2 train-order.log; diff <(step_rows cuda) <(step_rows order) | head -4)"
"$EMU" translate --model run-cuda/last.nmt --device cuda --beam 1 --nbest 1 < data/valid.src > plain-b1.cuda 2> tr.err
for beam in 1 2; do
  EMU_STREAM_ORDER=last "$EMU" translate --model run-cuda/last.nmt --device cuda --beam $beam --nbest $beam \
    < data/valid.src > "order-b$beam.cuda" 2> tr.err
  check "[ $? -eq 0 ] && cmp -s plain-b$beam.cuda order-b$beam.cuda" \
    "translating (beam $beam) with EMU_STREAM_ORDER=last differs: $(tail -2 tr.err; diff "plain-b$beam.cuda" "order-b$beam.cuda" | head -4)"
done
# the host time line (docs/gpu.md, "Host time"): with NMT_CUDA_SLOW_CALL_MS=0
# every host call counts as slow, so some are, named by kind; a bad value is
# refused
check "grep -Eq 'translate: cuda: host time [0-9.]+ ms in host calls, [0-9.]+ ms waiting for the device; [1-9][0-9]* calls over NMT_CUDA_SLOW_CALL_MS took [0-9.]+ ms: ' graphs-tr.err" \
  "no host time line: $(grep 'cuda:' graphs-tr.err)"
# env_refused NAME=VALUE MESSAGE: translating on cuda with NAME=VALUE exits
# non-zero, writes no translation and says MESSAGE
env_refused() {
  env "$1" "$EMU" translate --model run-cuda/last.nmt --device cuda < data/valid.src > refused.out 2> refused.err
  local rc=$?
  check "[ $rc -ne 0 ] && [ ! -s refused.out ] && grep -qF '$2' refused.err" "$1: exit $rc: $(tail -2 refused.err)"
}
env_refused NMT_CUDA_SLOW_CALL_MS=soon 'NMT_CUDA_SLOW_CALL_MS=soon: not a number of milliseconds'
# nmt's own GEMM kernel (NMT_CUDA_GEMM=own, docs/gpu.md "Own GEMM"): the
# same training (losses to 1e-6, since only the GEMMs' order of summation
# differs, validation BLEU exactly; 1e-4 let a kernel that dropped the
# last term of its sums pass), greedy and beam
# translations with all lines but at most one the cuBLAS run's (the GEMMs
# sum in another order, so a near tie may go the other way), the exit line
# says whose GEMMs ran; a value that is neither cublas nor own is refused
NMT_CUDA_GEMM=own train own cuda "$EMU"
check "[ $? -eq 0 ] && same_losses run-cuda/train.csv run-own/train.csv 1e-6" \
  "training with NMT_CUDA_GEMM=own: $(tail -2 train-own.log; cut -d, -f1-4,11 run-own/train.csv | tr '\n' ' ')"
check "grep -q \"train: cuda: .* GEMMs (nmt's own kernel, NMT_CUDA_GEMM=own) in\" train-own.log" \
  "training with NMT_CUDA_GEMM=own: no own-kernel usage line: $(grep 'cuda:' train-own.log)"
for beam in 1 2; do
  NMT_CUDA_GEMM=own "$EMU" translate --model run-cuda/last.nmt --device cuda --beam $beam --nbest $beam \
    < data/valid.src > "own-b$beam.cuda" 2> own-tr.err
  check "[ $? -eq 0 ] && [ \$(diff plain-b$beam.cuda own-b$beam.cuda | grep -c '^<') -le 1 ] && [ -s own-b$beam.cuda ]" \
    "translating (beam $beam) with NMT_CUDA_GEMM=own: $(tail -2 own-tr.err; diff "plain-b$beam.cuda" "own-b$beam.cuda" | head -4)"
done
check "grep -q \"translate: cuda: .* GEMMs (nmt's own kernel, NMT_CUDA_GEMM=own) in\" own-tr.err" \
  "translating with NMT_CUDA_GEMM=own: no own-kernel usage line: $(grep 'cuda:' own-tr.err)"
env_refused NMT_CUDA_GEMM=cuda 'NMT_CUDA_GEMM=cuda: must be cublas (the default) or own'
# the device profile (docs/gpu.md, "Profile"), also of graph replays: the
# same translations, the report on exit (the kernel time split between
# nmt's own kernels and the emulated cuBLAS's), its rows among them the
# emulated cuBLAS's GEMMs and the top-k kernel (the parity test checks the
# counts and NMT_CUDA_PROFILE_ROWS); a bad value is refused
NMT_CUDA_PROFILE=1 NMT_CUDA_GRAPHS=1 "$EMU" translate --model run-cuda/last.nmt \
  --device cuda --beam 2 --nbest 2 < data/valid.src > prof-b2.cuda 2> prof.err
check "[ $? -eq 0 ] && cmp -s plain-b2.cuda prof-b2.cuda" "translate with NMT_CUDA_PROFILE=1: $(tail -2 prof.err)"
check "grep -Eq '^translate: cuda profile: device busy [0-9.]+ ms of [0-9.]+ ms from the first record to the last \([0-9.]+%\): [1-9][0-9]* kernels [0-9.]+ ms \(own [0-9.]*[1-9][0-9.]*, libraries. [0-9.]*[1-9][0-9.]*\), .*; 0 records dropped, 0 untimed$' prof.err" \
  "no profile totals: $(grep 'cuda profile' prof.err | head -3)"
check "grep -q '  emu_sgemm\$' prof.err && grep -q '  topk_kernel\$' prof.err" \
  "no GEMM or top-k rows: $(grep 'cuda profile' prof.err)"
# bench_train's profile of its timed steps (scripts/gpu-check.sh's "bench
# nmt ... profile" rows): per step, and with as many kernels a step as the
# backend counts launches and GEMMs (the emulated cuBLAS: one kernel a GEMM)
NMT_CUDA_PROFILE=1 "$EMU_DIR/bench_train" --config c.json --device cuda --synthetic 4,5,6 \
  --vocab 50,60 --steps 2 --warmup 1 > bench-prof.out 2>&1
rc=$?
kernels=$(sed -n 's/^cuda profile: device busy [0-9.]* ms of [0-9.]* ms wall a step ([0-9.]*%): \([0-9.]*\) kernels .*/\1/p' bench-prof.out)
read -r launches gemms <<<"$(sed -n 's/^cuda per step: \([0-9]*\) kernel launches, \([0-9]*\) GEMMs.*/\1 \2/p' bench-prof.out)"
check "[ $rc -eq 0 ] && awk -v k='$kernels' -v l='${launches:-x}' -v g='${gemms:-x}' 'BEGIN { exit !(k > 0 && k == l + g) }'" \
  "bench_train's profile: exit $rc, ${kernels:-no} kernels a step for ${launches:-?} launches and ${gemms:-?} GEMMs: $(grep -E 'cuda (profile|per step)' bench-prof.out | head -3)"
env_refused NMT_CUDA_PROFILE=yes 'NMT_CUDA_PROFILE=yes: want 0 or 1'
# bench_train with nmt's own GEMM kernel (gpu-check's "bench nmt de-en own
# gemm" row): its GEMMs are kernels, and its ceiling line names them
NMT_CUDA_GEMM=own NMT_CUDA_PROFILE=1 "$EMU_DIR/bench_train" --config c.json --device cuda --synthetic 4,5,6 \
  --vocab 50,60 --steps 2 --warmup 1 > bench-own.out 2>&1
rc=$?
check "[ $rc -eq 0 ] && grep -qE '^own gemm ceiling GFLOP/s \(same shapes\): [0-9.]+$' bench-own.out && grep -qE '^cuda profile: .*\(own [0-9.]*[1-9][0-9.]*, libraries. 0\.000' bench-own.out" \
  "bench_train with NMT_CUDA_GEMM=own: exit $rc: $(grep -E 'ceiling|cuda profile: device' bench-own.out | head -3)"
# each checkpoint translates alike on both devices, greedy and beam 2 (the
# 2-best lists with their scores: the models are barely trained, so the
# best hypothesis is often empty, the second one is not)
for ck in cpu cuda; do
  for beam in 1 2; do
    "$NMT" translate --model "run-$ck/last.nmt" --device cpu --beam "$beam" --nbest "$beam" < data/valid.src \
      > "$ck-b$beam.cpu" 2> tr.err
    check "[ $? -eq 0 ] && [ -s '$ck-b$beam.cpu' ]" "translate the $ck checkpoint on the CPU: $(tail -2 tr.err)"
    "$EMU" translate --model "run-$ck/last.nmt" --device cuda --beam "$beam" --nbest "$beam" < data/valid.src \
      > "$ck-b$beam.cuda" 2> tr.err
    check "[ $? -eq 0 ]" "translate the $ck checkpoint on cuda: $(tail -2 tr.err)"
    check "cmp -s '$ck-b$beam.cpu' '$ck-b$beam.cuda'" \
      "the $ck checkpoint, beam $beam: cuda translates otherwise than the CPU: $(diff "$ck-b$beam.cpu" "$ck-b$beam.cuda" | head -4)"
  done
  check "grep -q '||| [^ |]' '$ck-b2.cpu'" "the $ck checkpoint's 2-best lists hold no words: $(head -2 "$ck-b2.cpu")"
done
# a CPU run resumed on cuda takes the step the CPU takes
cp -r run-cpu run-resume
train cpu cpu "$NMT" --set train.max_steps=4 --resume
check "[ $? -eq 0 ]" "resuming on the CPU: $(tail -3 train-cpu.log)"
train resume cuda "$EMU" --set train.max_steps=4 --resume
check "[ $? -eq 0 ]" "resuming the CPU run on cuda: $(tail -3 train-resume.log)"
check "same_losses run-cpu/train.csv run-resume/train.csv && grep -q '^train,4,' run-resume/train.csv" \
  "resumed on cuda, step 4 differs: cpu $(grep '^train,4,' run-cpu/train.csv), cuda $(grep '^train,4,' run-resume/train.csv)"
# the checkpoint that cuda wrote after that step (parameters and moments
# staged through host memory) holds the CPU's weights: the same 2-best
# lists, scores within 1e-4
same_nbest() {
  awk -F' [|][|][|] ' 'NR == FNR { t[FNR] = $1 "|" $2; s[FNR] = $3; next }
       { n++; d = $3 - s[FNR]; if (d < 0) d = -d; if (t[FNR] != $1 "|" $2 || d > 1e-4) bad++ }
       END { exit !(n > 0 && bad == 0) }' "$1" "$2"
}
for side in cpu resume; do
  "$NMT" translate --model "run-$side/last.nmt" --device cpu --beam 2 --nbest 2 < data/valid.src > "step4-$side" 2> tr.err
  check "[ $? -eq 0 ]" "translate the step-4 $side checkpoint: $(tail -2 tr.err)"
done
check "same_nbest step4-cpu step4-resume" \
  "the checkpoint saved on cuda translates otherwise than the CPU's: $(diff step4-cpu step4-resume | head -4)"
# an ensemble of two, and an output shortlist, alike on both devices
"$NMT" shortlist --config c.json "${set_len[@]}" --out sl.tsv --per-source 5 > sl.log 2>&1 || bad "shortlist: $(tail -2 sl.log)"
for opts in "--model run-cpu/last.nmt --model run-cuda/last.nmt" "--model run-cpu/last.nmt --shortlist sl.tsv"; do
  # shellcheck disable=SC2086
  "$NMT" translate $opts --device cpu --beam 2 --nbest 2 < data/valid.src > x.cpu 2> tr.err
  check "[ $? -eq 0 ] && [ -s x.cpu ]" "translate $opts on the CPU: $(tail -2 tr.err)"
  # shellcheck disable=SC2086
  "$EMU" translate $opts --device cuda --beam 2 --nbest 2 < data/valid.src > x.cuda 2> tr.err
  check "[ $? -eq 0 ]" "translate $opts on cuda: $(tail -2 tr.err)"
  check "cmp -s x.cpu x.cuda" "translate $opts: cuda otherwise than the CPU: $(diff x.cpu x.cuda | head -4)"
done
# 2. a device that fails mid-run (EMU_FAIL_AFTER_LAUNCHES=N: launches after
# the first N fail, and every later CUDA call reports it, as after a fault
# on a GPU; the backend's slots are no-ops from then on and downloads read
# zeros). nmt must stop with the CUDA error and a non-zero status, and
# write nothing computed after it: no checkpoint, no output line. The
# emulator counts a launch when it is queued or captured, not when a graph
# replays it: so (b) and (c), whose failure points are counted from runs
# op by op, run so (NMT_CUDA_GRAPHS=0); (a) runs with graphs, the default.
launches=$(sed -nE 's/^cuda emulator: ([0-9]+) kernel launches.*/\1/p' train-cuda.log | tail -1)
check "[ -n '$launches' ]" "the emulator did not count the run's launches: $(tail -2 train-cuda.log)"
launches=${launches:-0}
# (a) in step 4, after the checkpoint of step 3 (run-cuda took 3 steps and
# saved): the checkpoint left is step 3's, the step is not logged
EMU_FAIL_AFTER_LAUNCHES=$((launches + 40)) train fail4 cuda "$EMU" --set train.max_steps=6
check "[ $? -eq 1 ]" "a device failing in step 4: not exit status 1: $(tail -2 train-fail4.log)"
check "grep -q 'step 4: the cuda device failed: .*cudaErrorLaunchFailure.*stopped without saving' train-fail4.log" \
  "a device failing in step 4: no such message: $(grep 'nmt train' train-fail4.log)"
check "! grep -q '^train,4,' run-fail4/train.csv" "a device failing in step 4: the step was logged"
"$NMT" translate --model run-fail4/last.nmt --device cpu --beam 2 --nbest 2 < data/valid.src > fail4.cpu 2> tr.err
check "cmp -s fail4.cpu cuda-b2.cpu" \
  "the checkpoint left by a failure in step 4 is not step 3's: $(diff fail4.cpu cuda-b2.cpu | head -4)"
# (b) in the validation decode of step 3, after its update: no checkpoint
# at all (before, the saves read zeros from the failed device and wrote
# them as best.nmt and last.nmt)
NMT_CUDA_GRAPHS=0 EMU_FAIL_AFTER_LAUNCHES=$((launches - 5)) train failv cuda "$EMU"
check "[ $? -eq 1 ]" "a device failing in validation: not exit status 1: $(tail -2 train-failv.log)"
check "grep -q 'validation at step 3: the cuda device failed' train-failv.log" \
  "a device failing in validation: no such message: $(grep 'nmt train' train-failv.log)"
check "[ ! -e run-failv/last.nmt ] && [ ! -e run-failv/best.nmt ]" \
  "a device failing in validation: a checkpoint was written: $(ls run-failv)"
# (c) translating (2-best lists: the barely trained model's best hypotheses
# are mostly empty), in the third of four batches in input order
# (--maxi-batch 1): the lists of the first two batches are written and
# right, none after (before, the rest came out as garbage read from the
# failed device, with status 0)
NMT_CUDA_GRAPHS=0 "$EMU" translate --model run-cuda/last.nmt --device cuda --beam 2 --nbest 2 --batch 2 --maxi-batch 1 < data/valid.src \
  > all.cuda 2> tr.err
check "[ $? -eq 0 ] && [ \$(wc -l < all.cuda) -eq 16 ]" "translate in batches of 2 on cuda: $(tail -2 tr.err)"
tl=$(sed -nE 's/^cuda emulator: ([0-9]+) kernel launches.*/\1/p' tr.err | tail -1)
NMT_CUDA_GRAPHS=0 EMU_FAIL_AFTER_LAUNCHES=$((${tl:-0} * 5 / 8)) "$EMU" translate --model run-cuda/last.nmt --device cuda --beam 2 \
  --nbest 2 --batch 2 --maxi-batch 1 < data/valid.src > part.cuda 2> tr.err
check "[ $? -eq 1 ]" "a device failing while translating: not exit status 1: $(tail -2 tr.err)"
check "grep -q 'the cuda device failed: .*cudaErrorLaunchFailure.*stopped at input line [0-9]' tr.err" \
  "a device failing while translating: no such message: $(grep 'nmt translate' tr.err)"
n_part=$(wc -l < part.cuda)
check "[ $n_part -ge 4 ] && [ $n_part -lt 16 ] && cmp -s part.cuda <(head -n $n_part all.cuda)" \
  "a device failing while translating: the $n_part lines written are not the first of the full output"
check "grep -q 'stopped at input line $((n_part / 2 + 1)) ' tr.err" \
  "a device failing while translating: the message names another line than $((n_part / 2 + 1)): $(grep 'nmt translate' tr.err)"
# the same failure with the lines decoded longest first (the default,
# --maxi-batch 8: one block of 8 lines), on the input put longest first
# already (word counts descending, ties in input order: nmt's decoding
# order), so that the batches decoded before the failure are the first
# lines in input order: they are written, a prefix of the full output, and
# the message names the first line not written
awk '{ print NF "\t" NR "\t" $0 }' data/valid.src | sort -t "$(printf '\t')" -k1,1nr -k2,2n | cut -f3- > longfirst.src
NMT_CUDA_GRAPHS=0 "$EMU" translate --model run-cuda/last.nmt --device cuda --beam 2 --nbest 2 --batch 2 < longfirst.src \
  > all-lf.cuda 2> tr.err
check "[ $? -eq 0 ] && [ \$(wc -l < all-lf.cuda) -eq 16 ]" "translate longest first on cuda: $(tail -2 tr.err)"
tl=$(sed -nE 's/^cuda emulator: ([0-9]+) kernel launches.*/\1/p' tr.err | tail -1)
NMT_CUDA_GRAPHS=0 EMU_FAIL_AFTER_LAUNCHES=$((${tl:-0} * 5 / 8)) "$EMU" translate --model run-cuda/last.nmt --device cuda --beam 2 \
  --nbest 2 --batch 2 < longfirst.src > part.cuda 2> tr.err
check "[ $? -eq 1 ]" "a device failing while translating longest first: not exit status 1: $(tail -2 tr.err)"
n_part=$(wc -l < part.cuda)
check "[ $n_part -ge 4 ] && [ $n_part -lt 16 ] && cmp -s part.cuda <(head -n $n_part all-lf.cuda) && grep -q 'stopped at input line $((n_part / 2 + 1)) ' tr.err" \
  "a device failing while translating longest first: $n_part lines written (want the batches decoded before the failure, a prefix of the full output, and the message naming the next line): $(grep 'nmt translate' tr.err)"

# 3. out of device memory (EMU_DEVICE_MEMORY: the emulated GPU's size): a
# clear message with the sizes asked for, what the device has free, and the
# settings to lower; exit status 1; nothing written. The limit is what the
# 3-step run held at most plus 10 MB, so the backend fits and the models
# below do not: hidden 2048 (about 180 MB of weights), and translating 4096
# sentences a batch with 64 beams.
peak=$(sed -nE 's/^cuda emulator: .* ([0-9]+) bytes of device memory at most/\1/p' train-cuda.log | tail -1)
check "[ -n '$peak' ]" "the emulator did not report its peak device memory: $(tail -1 train-cuda.log)"
limit=$((${peak:-0} + 10000000))
EMU_DEVICE_MEMORY=$limit train oom cuda "$EMU" --set model.hidden=2048
check "[ $? -eq 1 ]" "a model too big for the device: not exit status 1: $(tail -2 train-oom.log)"
check "grep -Eq 'nmt train: out of memory on cuda for the model: [0-9.]+ MB of weights, as much for their gradients, and [0-9.]+ MB of activations for batches up to 8 x [0-9]+ x [0-9]+; cuda has [0-9.]+ MB free of [0-9]+ MB; lower train.batch_sentences \\(8\\) or train.batch_tokens \\(0\\), data.max_len \\(12\\)' train-oom.log" \
  "a model too big for the device: no such message: $(grep 'nmt train' train-oom.log)"
check "[ ! -e run-oom ]" "a model too big for the device: the save folder was made: $(ls run-oom 2>&1 | head -3)"
EMU_DEVICE_MEMORY=$limit "$EMU" translate --model run-cuda/last.nmt --device cuda --batch 4096 --beam 64 \
  < data/valid.src > oom.out 2> tr.err
check "[ $? -eq 1 ] && [ ! -s oom.out ]" "translating beyond the device's memory: not exit status 1 with no output: $(tail -2 tr.err)"
check "grep -Eq 'nmt translate: out of memory on cuda for the model: .*; cuda has [0-9.]+ MB free of [0-9]+ MB; run-cuda/last.nmt: lower --batch \\(4096\\), --beam \\(64\\) or --max-src-len \\([0-9]+\\)' tr.err" \
  "translating beyond the device's memory: no such message: $(grep 'nmt translate' tr.err)"
# a device too full for the backend itself (its cuBLAS workspaces)
EMU_DEVICE_MEMORY=1000000 "$EMU" translate --model run-cuda/last.nmt --device cuda < data/valid.src > oom.out 2> tr.err
check "[ $? -ne 0 ] && grep -Eq 'CUDA backend setup failed: .*out of memory.*; device 0 has 1 MB free of 1 MB' tr.err" \
  "a device too full for the backend: $(grep 'nmt translate' tr.err)"
test_end
