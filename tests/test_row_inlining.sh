#!/usr/bin/env bash
# test_row_inlining.sh: the CPU's row functions run their shared kernel math
# inlined. src/cpu/cpu_ops.c compiles each hot row function per instruction
# set (target_clones: AVX-512, AVX2, baseline); a helper of src/kernels/
# that gcc leaves out of line is compiled once, for the baseline, and the
# AVX-512 clone calls that scalar copy (it happened: the cross-entropy rows
# went from 2.8% to 7.6% of a training profile, docs/benchmarks.md). So the
# optimised nmt binary must hold no function of src/kernels/ (loss_math_*,
# lstm_math_*, attn_math_*, optim_math_*, dropout_math_*, kernel_*) of its
# own. The sanitizer build (-O1, NMT_SAN=1) inlines less and is not checked.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_row_inlining

if [ -n "${NMT_SAN:-}" ]; then
  echo "SKIP: test_row_inlining: the sanitizer build (-O1) is not an optimised one"
  test_end
  exit
fi
if ! command -v nm >/dev/null; then
  echo "SKIP: test_row_inlining: no nm (binutils)"
  test_end
  exit
fi

nm "$NMT" > "$tmp/symbols" 2>"$tmp/nm.err"
rc=$?
check '[ $rc -eq 0 ]' "nm $NMT failed: $(cat "$tmp/nm.err")"
# the row functions themselves are there (the symbols are not stripped)
check 'grep -Eq " [tT] (topk_row|xent_row)" "$tmp/symbols"' "no topk_row or xent_row symbol in $NMT"
grep -E ' [tT] (loss_math|lstm_math|attn_math|optim_math|dropout_math|kernel)_[A-Za-z0-9_]*$' \
  "$tmp/symbols" > "$tmp/out_of_line"
check '[ ! -s "$tmp/out_of_line" ]' "src/kernels/ helpers compiled out of line (force them inline, NMT_HD_INLINE): $(awk '{ print $3 }' "$tmp/out_of_line" | tr '\n' ' ')"

test_end
