#!/usr/bin/env bash
# bench-decode.sh: decoding speed of nmt next to PyTorch, in one run, on the
# same checkpoint, input, batching, OpenBLAS library and thread count (a
# benchmark, not a test: it prints numbers and never fails on them).
#   bash scripts/bench-decode.sh [MODEL]        (make bench-decode)
# MODEL (default runs/de-en/best.nmt) is copied to a temporary file first, so
# a training run may rewrite it meanwhile. Environment:
#   THREADS   threads on both sides (default: the number of cores)
#   BATCH     sentences per batch on both sides (default 64)
#   BEAMS     beam sizes (default "1 5"; 1 is greedy)
#   SRC, REF  source and reference (default Multi30k test2016 de, en)
#   NMT       the nmt binary (default ./nmt; built by make when absent)
#   PT_DROP=1 also PyTorch with finished sentences leaving the batch
#   INPUT_ORDER=1  also nmt with --maxi-batch 1 (batches in input order, as
#             PyTorch's; nmt's default decodes 8 batches longest first)
#   SHORTLIST=FILE  also nmt with --shortlist FILE (`nmt shortlist`; default
#             sizes: 100 frequent tokens + 10 per source token)
#   KEEP=DIR  keep the translations in DIR
# nmt translate and scripts/reference.py decode (PyTorch, the same weights,
# the same greedy / batched beam search: docs/reference.md) each translate
# SRC; the decoding is timed without model loading: PyTorch times its own
# encoder and search loop; nmt's time runs from its first read of standard
# input (after the checkpoint is loaded and the model set up) to its exit.
# Target tokens are the SentencePiece pieces of the output, re-encoded with
# the checkpoint's target model (EOS not counted), the same count for both.
# BLEU is `nmt eval --bleu` (sacreBLEU-compatible) against REF.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
MODEL=${1:-runs/de-en/best.nmt}
NMT=${NMT:-./nmt}
THREADS=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
BATCH=${BATCH:-64}
BEAMS=${BEAMS:-1 5}
SRC=${SRC:-../shared/data/multi30k/test_2016_flickr.de.gz}
REF=${REF:-../shared/data/multi30k/test_2016_flickr.en.gz}
PY=/usr/bin/python3
for f in "$MODEL" "$SRC" "$REF"; do
  if [ ! -r "$f" ]; then echo "bench-decode: $f is absent; skipping"; exit 0; fi
done
if [ ! -x "$NMT" ]; then make -s -j"$(nproc)" "$NMT" || exit 1; fi
if ! $PY -c 'import torch' 2>/dev/null; then
  echo "bench-decode: PyTorch is not installed (apt-get install python3-torch); no comparison"; exit 0
fi
for tool in spm_encode spm_decode; do
  command -v $tool >/dev/null || { echo "bench-decode: $tool is absent (apt-get install sentencepiece)"; exit 0; }
done
tmp=$(mktemp -d /tmp/bench-decode.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$MODEL" "$tmp/model.nmt" || exit 1
read_text "$SRC" > "$tmp/src.txt" && read_text "$REF" > "$tmp/ref.txt" || exit 1

# The same OpenBLAS on both sides: PyTorch's libblas.so.3 is taken from the
# folder of the libopenblas that nmt links (the OpenMP build), with nmt's core
# type; both get the same thread count and a passive OpenMP wait policy
# (spinning waiters take the cores from each other when the machine is busy).
blas_lib=$(ldd "$NMT" | sed -n 's/.*libopenblas[^ ]* => \([^ ]*\) .*/\1/p' | head -1)
blas_dir=$(dirname "$(realpath "$blas_lib")")
core=$(OMP_NUM_THREADS=$THREADS "$NMT" --version | sed -n 's/.*core \([A-Za-z0-9]*\).*/\1/p')
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
lines=$(wc -l < "$tmp/src.txt")
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== model $MODEL, input $SRC ($lines lines), batch $BATCH, $THREADS threads,"
echo "   OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE OMP_WAIT_POLICY=$OMP_WAIT_POLICY, PyTorch's BLAS from $blas_dir"
"$NMT" --version | sed 's/^/   nmt: /'

# nmt translate; prints the seconds from its first read of stdin to its exit
time_nmt() { # out_file beam [nmt options...]
  $PY - "$1" "$tmp/src.txt" "$NMT" translate --model "$tmp/model.nmt" --beam "$2" --batch "$BATCH" "${@:3}" <<'EOF'
import subprocess, sys, time
out, inp, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(inp, "rb") as fi, open(out, "wb") as fo:
    p = subprocess.Popen(cmd, stdin=fi, stdout=fo)
    start = None
    while start is None and p.poll() is None:
        try:
            with open("/proc/%d/fdinfo/0" % p.pid) as f:
                if int(f.readline().split()[1]) > 0:
                    start = time.perf_counter()
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(0.002)
    rc = p.wait()
    end = time.perf_counter()
if rc != 0 or start is None:
    sys.exit("nmt translate failed (exit %d)" % rc)
print("%.3f" % (end - start))
EOF
}

# PyTorch: scripts/reference.py decode; prints its lines, sets secs[KEY]
run_torch() { # key out_file beam [--drop-finished]
  LD_LIBRARY_PATH="$blas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" $PY scripts/reference.py decode \
    --model "$tmp/model.nmt" --input "$tmp/src.txt" --out "$2" --beam "$3" --batch "$BATCH" \
    --threads "$THREADS" --keep-spm "$tmp/spm" "${@:4}" 2> "$2.log" || { cat "$2.log"; return 1; }
  grep -h '^decode: ' "$2.log" | sed 's/^decode: /   PyTorch: /'
  secs[$1]=$(sed -n 's/^decode: .* in \([0-9.]*\) s: .*/\1/p' "$2.log")
}

bleu() { "$NMT" eval --bleu --ref "$tmp/ref.txt" < "$1" | bleu_score; }
toks() { spm_encode --model "$tmp/spm/tgt.model" --output_format id < "$1" | wc -w; }
nonempty=$(grep -c '[^[:space:]]' "$tmp/src.txt")

declare -A secs
for beam in $BEAMS; do
  echo "== beam $beam"
  secs[nmt,$beam]=$(time_nmt "$tmp/nmt.$beam.txt" "$beam") || exit 1
  echo "   nmt: ${secs[nmt,$beam]} s"
  if [ "${INPUT_ORDER:-0}" = 1 ]; then
    secs[nmto,$beam]=$(time_nmt "$tmp/nmto.$beam.txt" "$beam" --maxi-batch 1) || exit 1
    echo "   nmt in input order: ${secs[nmto,$beam]} s"
  fi
  if [ -n "${SHORTLIST:-}" ]; then
    secs[nmts,$beam]=$(time_nmt "$tmp/nmts.$beam.txt" "$beam" --shortlist "$SHORTLIST") || exit 1
    echo "   nmt with the shortlist: ${secs[nmts,$beam]} s"
  fi
  run_torch "pt,$beam" "$tmp/pt.$beam.txt" "$beam" || exit 1
  if [ "${PT_DROP:-0}" = 1 ]; then
    run_torch "ptd,$beam" "$tmp/ptd.$beam.txt" "$beam" --drop-finished || exit 1
  fi
done

echo
echo "| side | beam | sentences/s | target tokens/s | BLEU | nmt / PyTorch |"
echo "| --- | --- | --- | --- | --- | --- |"
for beam in $BEAMS; do
  for side in nmt nmto nmts pt ptd; do
    [ -n "${secs[$side,$beam]:-}" ] || continue
    f="$tmp/$side.$beam.txt"
    case $side in nmt) name=nmt ;; nmto) name="nmt, --maxi-batch 1 (input order)" ;; nmts) name="nmt, output shortlist" ;; pt) name=PyTorch ;; ptd) name="PyTorch, finished sentences leave the batch" ;; esac
    awk -v n="$name" -v b="$beam" -v s="${secs[$side,$beam]}" -v sent="$nonempty" -v tok="$(toks "$f")" \
        -v bl="$(bleu "$f")" -v side="$side" -v ref="${secs[pt,$beam]}" -v refd="${secs[ptd,$beam]:-}" 'BEGIN {
      r = side ~ /^nmt/ ? sprintf("**%.2fx**", ref / s) : (side == "ptd" ? sprintf("(PyTorch: %.2fx faster)", ref / s) : "")
      if (side ~ /^nmt/ && refd != "") r = r sprintf("; %.2fx against PyTorch with finished sentences leaving", refd / s)
      printf "| %s | %s | %.1f | %.0f | %s | %s |\n", n, b, sent / s, tok / s, bl, r }'
  done
done
echo
for beam in $BEAMS; do
  same=$(paste -d '\n' "$tmp/nmt.$beam.txt" "$tmp/pt.$beam.txt" | awk 'NR % 2 { a = $0; next } a == $0 { n++ } END { print n + 0 }')
  echo "beam $beam: $same of $lines translations identical (nmt and PyTorch)"
done
echo "seconds of decoding (nmt from its first read of the input to its exit; PyTorch its encoder and search loop):"
for k in "${!secs[@]}"; do echo "  $k ${secs[$k]}"; done | sort
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/*.txt "$tmp"/*.log "$KEEP"/ && echo "translations kept in $KEEP"; fi
