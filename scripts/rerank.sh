#!/usr/bin/env bash
# rerank.sh: picks each line's translation from an n-best list (nmt translate
# --nbest) by the scores of a left-to-right and a right-to-left model
# (model.right_to_left): total = l2r + weight * r2l + length_weight * words,
# l2r and r2l each the mean log-probability per token of `nmt score
# --normalize` (the target's tokens and </s>), words the hypothesis' count
# of space-separated words (Marian's word penalty). The reranking of Sennrich et al. (2016, Edinburgh's WMT16
# systems) and Marian's right-left rescoring. See --help and
# docs/decoding.md "Reranking with a right-to-left model".
set -u
set -o pipefail

usage() {
  cat <<'EOF'
usage: scripts/rerank.sh --src FILE --nbest FILE --l2r MODEL [--l2r MODEL ...]
                         --r2l MODEL [--r2l MODEL ...] [--weight W] [--length-weight L]
                         [--threads N] [--device auto|cpu|cuda] [--scores]

Reads the n-best list FILE ('i ||| translation ||| score' lines, as
`nmt translate --nbest K` writes them for the source lines of --src),
scores every hypothesis with the --l2r model(s) and the --r2l model(s)
(several of one kind make an ensemble), and writes for each source line
the hypothesis with the highest l2r + W * r2l + L * words, one line per
source line, in order (the first in the list wins a tie). Each score is nmt
score --normalize: the mean natural-log probability of the hypothesis'
tokens and </s>; words counts the hypothesis' words (split at spaces).
Tune W and L on a validation set (docs/decoding.md).

options:
  --src FILE      the source lines the list translates (plain or gzip)
  --nbest FILE    the n-best list ('-': standard input)
  --l2r MODEL     a left-to-right checkpoint (usually the one that made the list)
  --r2l MODEL     a right-to-left checkpoint (model.right_to_left true)
  --weight W      the right-to-left score's weight (default 1)
  --length-weight L  the word count's weight (default 0; above 0 favours
                  longer hypotheses, below 0 shorter ones)
  --threads N, --device D  passed to nmt score
  --scores        write 'translation<TAB>total<TAB>l2r<TAB>r2l<TAB>words' instead
EOF
}

die() { echo "rerank: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NMT=${NMT_BIN:-$ROOT/nmt}
src="" nbest="" weight=1 length_weight=0 scores=0
l2r=() r2l=() pass=()
while [ $# -gt 0 ]; do
  case $1 in
    --src) src=${2:-}; shift 2 ;;
    --nbest) nbest=${2:-}; shift 2 ;;
    --l2r) l2r+=(--model "${2:-}"); shift 2 ;;
    --r2l) r2l+=(--model "${2:-}"); shift 2 ;;
    --weight) weight=${2:-}; shift 2 ;;
    --length-weight) length_weight=${2:-}; shift 2 ;;
    --threads|--device) pass+=("$1" "${2:-}"); shift 2 ;;
    --scores) scores=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "rerank: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] && [ -n "$nbest" ] || { echo "rerank: give --src FILE and --nbest FILE" >&2; exit 2; }
[ ${#l2r[@]} -gt 0 ] && [ ${#r2l[@]} -gt 0 ] || { echo "rerank: give --l2r MODEL and --r2l MODEL" >&2; exit 2; }
awk -v w="$weight" 'BEGIN { exit !(w ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) }' \
  || { echo "rerank: --weight must be a number >= 0, got '$weight'" >&2; exit 2; }
awk -v w="$length_weight" 'BEGIN { exit !(w ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) }' \
  || { echo "rerank: --length-weight must be a number, got '$length_weight'" >&2; exit 2; }
[ -x "$NMT" ] || die "nmt binary not found at $NMT (make, or set NMT_BIN)"

tmp=$(mktemp -d) || die "cannot make a temporary folder"
trap 'rm -rf "$tmp"' EXIT
# a line with invalid UTF-8 or a NUL byte, which nmt translate gave an empty
# translation and nmt score refuses, is scored with those bytes left out
zcat -f -- "$src" | tr -d '\000' | { iconv -c -f UTF-8 -t UTF-8 || true; } > "$tmp/src" || die "$src: cannot read"
if [ "$nbest" = - ]; then cat > "$tmp/nbest"; else cat -- "$nbest" > "$tmp/nbest" || die "$nbest: cannot read"; fi
n_src=$(wc -l < "$tmp/src")

# the list: each hypothesis' source line number (from 0) and text, checked
awk -F ' [|][|][|] ' -v nsrc="$n_src" -v ids="$tmp/ids" -v hyps="$tmp/hyps" '
  NF < 3 || $1 !~ /^[0-9]+$/ { printf "%s:%d: not an n-best line (i ||| translation ||| score): %s\n", FILENAME, NR, substr($0, 1, 80) > "/dev/stderr"; bad = 1; exit 1 }
  $1 + 0 >= nsrc { printf "%s:%d: line number %s, but --src has %d lines\n", FILENAME, NR, $1, nsrc > "/dev/stderr"; bad = 1; exit 1 }
  { text = $2; for (k = 3; k < NF; k++) text = text " ||| " $k   # a translation that holds " ||| "
    print $1 > ids; print text > hyps; seen[$1 + 0] = 1 }
  END { if (bad) exit 1
        for (i = 0; i < nsrc; i++) if (!(i in seen)) { printf "the n-best list has no hypothesis for source line %d\n", i + 1 > "/dev/stderr"; exit 1 } }
' "$tmp/nbest" || die "$nbest: not the n-best list of $src"
awk 'NR == FNR { line[FNR - 1] = $0; next } { print line[$1] }' "$tmp/src" "$tmp/ids" > "$tmp/srcs"

"$NMT" score "${l2r[@]}" --src "$tmp/srcs" --tgt "$tmp/hyps" --normalize --no-progress "${pass[@]}" > "$tmp/l2r" \
  || die "scoring with the --l2r model failed"
"$NMT" score "${r2l[@]}" --src "$tmp/srcs" --tgt "$tmp/hyps" --normalize --no-progress "${pass[@]}" > "$tmp/r2l" \
  || die "scoring with the --r2l model failed"

# the best total per source line; -inf (an empty source) sorts last, a tie keeps the first
paste "$tmp/ids" "$tmp/l2r" "$tmp/r2l" "$tmp/hyps" |
  awk -F '\t' -v w="$weight" -v lw="$length_weight" -v nsrc="$n_src" -v scores="$scores" '
  function num(x) { return x ~ /inf/ ? (x ~ /^-/ ? -1e300 : 1e300) : x + 0 }
  { text = $4; for (k = 5; k <= NF; k++) text = text "\t" $k
    words = split(text, parts, " ")
    total = num($2) + w * num($3) + lw * words
    if (!($1 in best) || total > best[$1]) { best[$1] = total; pick[$1] = text; f0[$1] = $2; f1[$1] = $3; nw[$1] = words } }
  END { for (i = 0; i < nsrc; i++)
          if (scores) printf "%s\t%.6f\t%s\t%s\t%d\n", pick[i], best[i], f0[i], f1[i], nw[i]; else print pick[i] }
'
