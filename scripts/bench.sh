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
run_torch() {
  env "$@" /usr/bin/python3 scripts/reference.py bench --emb 256 --hidden 512 --enc-layers 2 --dec-layers 2 \
    --bidirectional --batch 64 --src-vocab 8000 --tgt-vocab 8000 --src-len "$Si" --tgt-len "$Ti" \
    --steps "$STEPS" --warmup 3 --threads "$threads" 2>&1
}
for variant in installed tuned; do
  if [ $variant = installed ]; then t=$(run_torch NMT_BENCH=1); else t=$(run_torch OPENBLAS_CORETYPE="$(echo "$out" | sed -n 's/^blas: OpenBLAS core \([A-Za-z0-9]*\),.*/\1/p')" OMP_WAIT_POLICY=passive); fi
  echo "== PyTorch ($variant)"
  echo "$t" | grep -E '^(train|memory|blas: loaded)'
  pt_tgt=$(echo "$t" | sed -n 's/^train: \([0-9.]*\) source tokens\/s, \([0-9.]*\) target tokens\/s/\2/p')
  pt_src=$(echo "$t" | sed -n 's/^train: \([0-9.]*\) source tokens\/s, .*/\1/p')
  pt_rss=$(echo "$t" | sed -n 's/^memory: peak RSS \([0-9.]*\) MiB/\1/p')
  awk -v a="$nmt_tgt" -v b="$pt_tgt" -v c="$nmt_src" -v d="$pt_src" -v e="$nmt_rss" -v f="$pt_rss" -v v="$variant" \
    'BEGIN{printf "ratio nmt/PyTorch (%s): target tokens/s %.2fx, source tokens/s %.2fx, peak RSS %.2f\n", v, a/b, c/d, e/f}'
done
