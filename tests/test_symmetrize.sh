#!/usr/bin/env bash
# test_symmetrize.sh: scripts/symmetrize.py, which joins two directional
# word alignments for data.train_align: every method on hand-made lines
# whose answer is worked out in the comments, the output order, and bad
# input (a malformed pair naming the file and line; unequal line counts).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_symmetrize
cd "$tmp" || exit 2
SYM=$ROOT/scripts/symmetrize.py

# line 1: intersection 0-0 1-1; 2-1 and 1-2 are the union's, each a
# diagonal-or-side neighbour of 1-1 with a word not yet aligned: grown in.
# line 2: 3-3 of the forward alone is no neighbour of 0-0: only the final
# step adds it (both its words unaligned).
# line 3: 2-0 of the forward alone: target word 0 is aligned, source word
# 2 not: grow-diag-final adds it (either word free), -and does not.
# line 4: empty in both.
printf '0-0 1-1 2-1\n0-0 3-3\n0-0 2-0\n\n' > fwd
printf '0-0 1-1 1-2\n0-0\n0-0\n\n' > rev
want_intersection=$'0-0 1-1\n0-0\n0-0\n\n'
want_union=$'0-0 1-1 2-1 1-2\n0-0 3-3\n0-0 2-0\n\n'
want_gd=$'0-0 1-1 2-1 1-2\n0-0\n0-0\n\n'
want_gdf=$'0-0 1-1 2-1 1-2\n0-0 3-3\n0-0 2-0\n\n'
want_gdfa=$'0-0 1-1 2-1 1-2\n0-0 3-3\n0-0\n\n'
for m in intersection union grow-diag grow-diag-final grow-diag-final-and; do
  case $m in
    intersection) want=$want_intersection ;; union) want=$want_union ;; grow-diag) want=$want_gd ;;
    grow-diag-final) want=$want_gdf ;; grow-diag-final-and) want=$want_gdfa ;;
  esac
  got=$(python3 "$SYM" fwd rev --method $m; echo x)
  check '[ "${got%x}" = "$want" ]' "$m: got $(printf %q "${got%x}"), want $(printf %q "$want")"
done
got=$(python3 "$SYM" fwd rev; echo x)
check '[ "${got%x}" = "$want_gdfa" ]' "the default should be grow-diag-final-and: $(printf %q "${got%x}")"

# the same pairs in the other order, repeated: the same output
printf '2-1 1-1 0-0 0-0\n3-3 0-0\n2-0 0-0\n\n' > fwd2
got=$(python3 "$SYM" fwd2 rev; echo x)
check '[ "${got%x}" = "$want_gdfa" ]' "input order changed the output: $(printf %q "${got%x}")"

# bad input
printf '0-0\n1-x\n' > badpair
out=$(python3 "$SYM" badpair badpair 2>&1); rc=$?
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -qF "badpair:2: '"'"'1-x'"'"' is not a pair i-j"' "a bad pair: $rc $out"
printf '0-0\n' > one
out=$(python3 "$SYM" fwd one 2>&1); rc=$?
check '[ $rc -ne 0 ] && printf "%s" "$out" | grep -qF "fwd: more lines than the other file (1)"' "unequal files: $rc $out"
out=$(python3 "$SYM" fwd rev --method nope 2>&1); rc=$?
check '[ $rc -eq 2 ]' "an unknown method: $rc $out"

test_end
