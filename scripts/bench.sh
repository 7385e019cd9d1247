#!/usr/bin/env bash
# bench.sh: training speed of nmt next to PyTorch on the same model sizes,
# the same thread count and the same machine, in one run (a benchmark, not
# a test: it prints numbers and never fails on them).
#   bash scripts/bench.sh [STEPS]
# The bench config is configs/de-en-2x512.json (Multi30k de->en, SentencePiece
# unigram 8000 per side, emb 256, hidden 512, 2 encoder layers with the first
# bidirectional, 2 decoder layers, luong general global, input feeding,
# dropout 0.3, label smoothing 0.1, Adam, 64 sentences per batch). PyTorch
# (Debian's python3-torch) runs scripts/reference.py bench with the mean
# batch shape nmt saw. Both sides use the same OpenBLAS; PyTorch is run twice:
# as installed, and with the same OpenBLAS core type and OpenMP wait policy
# that nmt sets for itself (see src/cpu/cpu_env.h).
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-20}
if [ ! -r ../shared/data/multi30k/train.de.gz ]; then
  echo "bench: ../shared/data/multi30k is absent; skipping (see data/README)"
  exit 0
fi
make -s -j"$(nproc)" nmt build/bench/bench_train || exit 1
threads=$(nproc)
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads cores"
echo "== nmt"
out=$(./build/bench/bench_train --config configs/de-en-2x512.json --set train.threads="$threads" --steps "$STEPS" --warmup 3)
echo "$out"
S=$(echo "$out" | sed -n 's/^mean batch: B [0-9.]* S \([0-9.]*\) T.*/\1/p')
T=$(echo "$out" | sed -n 's/^mean batch: .* T \([0-9.]*\)$/\1/p')
Si=$(printf '%.0f' "$S"); Ti=$(printf '%.0f' "$T")
nmt_tgt=$(echo "$out" | sed -n 's/^tgt tokens\/s: //p')
nmt_src=$(echo "$out" | sed -n 's/^src tokens\/s: //p')
nmt_rss=$(echo "$out" | sed -n 's/^peak RSS MB: //p')
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "bench: PyTorch is not installed (apt-get install python3-torch); no ratio"
  exit 0
fi
# run_torch B S T STEPS WARMUP ENV...: PyTorch on random batches of one shape
run_torch() {
  local b=$1 s=$2 t=$3 steps=$4 warm=$5
  shift 5
  env "$@" /usr/bin/python3 scripts/reference.py bench --emb 256 --hidden 512 --enc-layers 2 --dec-layers 2 \
    --bidirectional --batch "$b" --src-vocab 8000 --tgt-vocab 8000 --src-len "$s" --tgt-len "$t" \
    --steps "$steps" --warmup "$warm" --threads "$threads" 2>&1
}
tuned_env=(OPENBLAS_CORETYPE="$(echo "$out" | sed -n 's/^blas: OpenBLAS core \([A-Za-z0-9]*\),.*/\1/p')" OMP_WAIT_POLICY=passive)
for variant in installed tuned; do
  if [ $variant = installed ]; then t=$(run_torch 64 "$Si" "$Ti" "$STEPS" 3 NMT_BENCH=1); else t=$(run_torch 64 "$Si" "$Ti" "$STEPS" 3 "${tuned_env[@]}"); fi
  echo "== PyTorch ($variant)"
  echo "$t" | grep -E '^(train|memory|blas: loaded)'
  pt_tgt=$(echo "$t" | sed -n 's/^train: \([0-9.]*\) source tokens\/s, \([0-9.]*\) target tokens\/s/\2/p')
  pt_src=$(echo "$t" | sed -n 's/^train: \([0-9.]*\) source tokens\/s, .*/\1/p')
  pt_rss=$(echo "$t" | sed -n 's/^memory: peak RSS \([0-9.]*\) MiB/\1/p')
  awk -v a="$nmt_tgt" -v b="$pt_tgt" -v c="$nmt_src" -v d="$pt_src" -v e="$nmt_rss" -v f="$pt_rss" -v v="$variant" \
    'BEGIN{printf "ratio nmt/PyTorch (%s): target tokens/s %.2fx, source tokens/s %.2fx, peak RSS %.2f\n", v, a/b, c/d, e/f}'
done

# The largest batch of the epoch: nmt's arena is sized for it and every
# epoch reaches it, so its peak memory is that of a whole training run.
# Both sides run that one shape (synthetic batches; PyTorch tuned).
read -r LB LS LT < <(echo "$out" | sed -n 's/.*sized for batches up to \([0-9]*\) x \([0-9]*\) x \([0-9]*\)).*/\1 \2 \3/p')
if [ -n "${LT:-}" ]; then
  echo "== largest batch: B $LB S $LS T $LT (3 timed steps after 1)"
  big=$(./build/bench/bench_train --config configs/de-en-2x512.json --set train.threads="$threads" --steps 3 --warmup 1 \
    --synthetic "$LB,$LS,$LT" --vocab 8000,8000)
  echo "$big" | grep -E '^(seconds per step|peak RSS|memory)'
  t=$(run_torch "$LB" "$LS" "$LT" 3 1 "${tuned_env[@]}")
  echo "$t" | grep -E '^(train|memory)'
  awk -v a="$(echo "$big" | sed -n 's/^seconds per step: //p')" -v b="$(echo "$t" | sed -n 's/^train: 3 steps in [0-9.]* s (\([0-9.]*\) ms\/step).*/\1/p')" \
    -v e="$(echo "$big" | sed -n 's/^peak RSS MB: //p')" -v f="$(echo "$t" | sed -n 's/^memory: peak RSS \([0-9.]*\) MiB/\1/p')" \
    'BEGIN{printf "ratio nmt/PyTorch (tuned), largest batch: speed %.2fx, peak RSS %.2f\n", b/1000/a, e/f}'
fi
