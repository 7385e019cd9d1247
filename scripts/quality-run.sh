#!/usr/bin/env bash
# quality-run.sh: one quality run from config to test BLEU, the way
# docs/results.md reports Multi30k: train for a wall-clock budget (SIGTERM at
# the end saves last.nmt), average the newest step checkpoints, pick the
# checkpoint, beam size and length penalty on the validation set, then
# translate and score the test set once with that choice. Writes
#   OUT/summary.md     the run, the validation grid, the choice, the test
#                      score with its sacreBLEU signature, the commands
#   OUT/test.hyp       the test translation of the chosen setting
#   OUT/grid.tsv       checkpoint, beam, length penalty, validation BLEU
# See --help.
set -u
set -o pipefail

usage() {
  cat <<'EOF'
usage: scripts/quality-run.sh --config FILE [options]

Trains FILE for a wall-clock budget, then chooses checkpoint (best.nmt or
the average of the newest step-N.nmt), beam size and length penalty by
validation BLEU, and scores the test set (data.test_src/test_tgt) once.

options:
  --config FILE            the config (needs data.valid_* and data.test_*)
  --hours H                training budget in hours (default 2); at the end
                           training gets SIGTERM and saves last.nmt; 0: no
                           training, evaluate the run in train.save_dir
  --resume                 continue the run in train.save_dir
  --overwrite              start afresh over an earlier run in train.save_dir
                           (nmt train --overwrite; without it or --resume, an
                           earlier run there stops the training)
  --threads N              train.threads, and the threads of decoding (default: the
                           config's for training, all cores for decoding)
  --set KEY=VALUE          another setting for training (repeatable)
  --average K              average the K newest step-N.nmt files of the run
                           (train.keep_checkpoints keeps them; default 5;
                           0: do not average)
  --beams LIST             beam sizes tried on validation (default 1,5,10)
  --length-penalties LIST  length penalties tried with beam > 1 (default 0.6,1.0)
  --out DIR                output folder (default: train.save_dir/eval)
EOF
}

die() { echo "quality-run: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib.sh"
NMT=${NMT_BIN:-$ROOT/nmt}
config="" hours=2 resume=0 overwrite=0 threads="" average=5 beams="1,5,10" lps="0.6,1.0" out=""
sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --config) config=${2:-}; shift 2 ;;
    --hours) hours=${2:-}; shift 2 ;;
    --resume) resume=1; shift ;;
    --overwrite) overwrite=1; shift ;;
    --threads) threads=${2:-}; shift 2 ;;
    --set) sets+=(--set "${2:-}"); shift 2 ;;
    --average) average=${2:-}; shift 2 ;;
    --beams) beams=${2:-}; shift 2 ;;
    --length-penalties) lps=${2:-}; shift 2 ;;
    --out) out=${2:-}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[ -n "$config" ] || { usage >&2; die "--config FILE is required"; }
[ -r "$config" ] || die "$config: cannot read"
[[ $hours =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--hours must be a number >= 0, got '$hours'"
[[ $average =~ ^[0-9]+$ ]] || die "--average must be an integer >= 0, got '$average'"
[[ $beams =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--beams must be a comma-separated list of integers, got '$beams'"
[[ $lps =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "--length-penalties must be a comma-separated list of numbers, got '$lps'"
[ -x "$NMT" ] || die "nmt binary not found at $NMT (run make)"
[ -n "$threads" ] && sets+=(--set "train.threads=$threads")
decode_threads=()
[ -n "$threads" ] && decode_threads=(--threads "$threads")

resolved=$("$NMT" config --config "$config" "${sets[@]}" 2>&1) || die "the config is invalid: $resolved"
json_string() { config_string "$resolved" "$1"; }
save_dir=$(json_string save_dir)
for key in valid_src valid_tgt test_src test_tgt; do
  [ -n "$(json_string $key)" ] || die "$config: data.$key is not set (the run is chosen on validation and scored on test)"
done
[ -n "$out" ] || out=$save_dir/eval
mkdir -p "$out" || die "$out: cannot create"

# 1. training, for at most the budget
train_seconds=0
if [ "$hours" != 0 ] && [ "$hours" != 0.0 ]; then
  budget=$(awk -v h="$hours" 'BEGIN{printf "%d", h * 3600}')
  args=(train --config "$config" "${sets[@]}")
  [ $resume = 1 ] && args+=(--resume)
  [ $overwrite = 1 ] && args+=(--overwrite)
  echo "quality-run: training for at most ${hours} h: nmt ${args[*]}"
  start=$(date +%s)
  timeout -s TERM "$budget" "$NMT" "${args[@]}" >> "$out/train.log" 2>&1
  rc=$?
  train_seconds=$(( $(date +%s) - start ))
  # 124: the budget ended it (SIGTERM: last.nmt saved; nmt itself exits 143 then)
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q "stopped by signal" "$out/train.log"; then
    die "training failed (exit $rc); see $out/train.log"
  fi
fi
[ -s "$save_dir/best.nmt" ] || die "$save_dir/best.nmt: no trained model"

# 2. the candidates: best.nmt and the average of the newest step checkpoints
candidates=("$save_dir/best.nmt")
if [ "$average" -gt 0 ]; then
  mapfile -t steps < <(ls "$save_dir" | sed -n 's/^step-\([0-9]*\)\.nmt$/\1/p' | sort -n | tail -n "$average")
  if [ ${#steps[@]} -ge 2 ]; then
    files=()
    for s in "${steps[@]}"; do files+=("$save_dir/step-$s.nmt"); done
    "$NMT" average --out "$out/avg.nmt" "${files[@]}" > /dev/null 2>>"$out/eval.log" || die "averaging failed; see $out/eval.log"
    candidates+=("$out/avg.nmt")
    avg_note="avg.nmt: the mean of ${#steps[@]} checkpoints (steps ${steps[*]})"
  fi
fi

# 3. the validation grid
read_text "$(json_string valid_src)" > "$out/valid.src" && read_text "$(json_string valid_tgt)" > "$out/valid.ref" \
  && read_text "$(json_string test_src)" > "$out/test.src" && read_text "$(json_string test_tgt)" > "$out/test.ref" \
  || die "cannot read the validation or test files"
printf 'checkpoint\tbeam\tlength_penalty\tvalid_bleu\n' > "$out/grid.tsv"
best_score=-1 best_ck="" best_beam="" best_lp=""
for ck in "${candidates[@]}"; do
  for beam in ${beams//,/ }; do
    lp_list=${lps//,/ }
    [ "$beam" = 1 ] && lp_list=0
    for lp in $lp_list; do
      "$NMT" translate --model "$ck" --beam "$beam" --length-penalty "$lp" --no-progress "${decode_threads[@]}" \
          < "$out/valid.src" > "$out/valid.hyp" 2>>"$out/eval.log" || die "translating the validation set failed; see $out/eval.log"
      score=$("$NMT" eval --bleu --ref "$out/valid.ref" --hyp "$out/valid.hyp" | bleu_score)
      [ -n "$score" ] || die "no BLEU for the validation set; see $out/eval.log"
      printf '%s\t%s\t%s\t%s\n' "$(basename "$ck")" "$beam" "$lp" "$score" >> "$out/grid.tsv"
      echo "quality-run: valid BLEU $score: $(basename "$ck") beam $beam length penalty $lp"
      if awk -v a="$score" -v b="$best_score" 'BEGIN{exit !(a > b)}'; then
        best_score=$score best_ck=$ck best_beam=$beam best_lp=$lp
      fi
    done
  done
done

# 4. the test set, once, with the choice
"$NMT" translate --model "$best_ck" --beam "$best_beam" --length-penalty "$best_lp" --no-progress "${decode_threads[@]}" \
    < "$out/test.src" > "$out/test.hyp" 2>>"$out/eval.log" || die "translating the test set failed; see $out/eval.log"
test_line=$("$NMT" eval --bleu --chrf --ref "$out/test.ref" --hyp "$out/test.hyp") || die "scoring the test set failed"

# 5. the summary
csv=$save_dir/train.csv
last_train=$(grep '^train,' "$csv" | tail -1)
{
  echo "# Quality run: $(basename "$config" .json)"
  echo
  echo "Config \`$config\`$([ ${#sets[@]} -gt 0 ] && printf ' with `%s`' "${sets[*]}"), run folder \`$save_dir\`, $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores."
  echo
  if [ "$train_seconds" -gt 0 ]; then
    echo "Training this time: $(awk -v s="$train_seconds" 'BEGIN{printf "%.2f", s / 3600}') h of wall time (budget $hours h)."
  fi
  echo "The run: $(echo "$last_train" | cut -d, -f2) updates, epoch $(echo "$last_train" | cut -d, -f3); validation:"
  echo
  echo "| update | epoch | valid ppl | valid BLEU (config's decoding) |"
  echo "| ---: | ---: | ---: | ---: |"
  grep '^valid,' "$csv" | awk -F, '{printf "| %s | %s | %.2f | %.2f |\n", $2, $3, $10, $11}'
  echo
  echo "Validation grid (${avg_note:-no averaged checkpoint}):"
  echo
  echo "| checkpoint | beam | length penalty | valid BLEU |"
  echo "| --- | ---: | ---: | ---: |"
  tail -n +2 "$out/grid.tsv" | awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}'
  echo
  echo "Chosen on validation: $(basename "$best_ck"), beam $best_beam, length penalty $best_lp (valid BLEU $best_score)."
  echo "Test set \`$(json_string test_src)\`, once:"
  echo
  echo "    nmt translate --model $(basename "$best_ck") --beam $best_beam --length-penalty $best_lp < test.src > test.hyp"
  echo "    nmt eval --bleu --chrf --ref test.ref --hyp test.hyp"
  echo
  printf '%s\n' "$test_line" | sed 's/^/    /'
} > "$out/summary.md"
echo "quality-run: test: $(printf '%s\n' "$test_line" | head -1)"
echo "quality-run: wrote $out/summary.md"
