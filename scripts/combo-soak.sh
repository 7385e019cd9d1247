#!/usr/bin/env bash
# combo-soak.sh: the features together, not one at a time. Each test of
# tests/ checks one feature (word dropout, EMA, guided alignment, extra
# corpora, ...) with the others at their defaults; this script draws random
# combinations of them on the generated demo corpus and checks, for each,
# what must hold whatever the combination:
#   1. training runs (exit 0), or the config is refused with exit 2 and a
#      message naming a key (reported as "refused", for a person to judge);
#   2. resume is exact: N steps, then --resume to 2N, gives the same
#      train.csv rows (losses, rates, gradient norms, validations) and the
#      same last.nmt weights and optimizer state to the bit
#      (scripts/ckpt_same.py) as 2N steps in one go;
#   3. `nmt gradcheck` of the config passes (the hand-written gradients of
#      that combination of layers against central differences);
#   4. `nmt translate` (greedy and beam 3) writes one line per input line
#      and `nmt score` one finite score per pair;
#   5. with --cuda, on train.device=cuda as well: exact resume, the CPU's
#      step losses (as near as the model's conditioning allows: a CPU run
#      from weights 1e-6 apart measures it), and the CPU's checkpoint
#      translating to the CPU's lines.
# Prints one line per combination and a last line
# "combo-soak: N combinations, P passed, R refused, F failed"; exit status 1
# when any failed. See --help; docs/reliability.md has the findings.
set -u
set -o pipefail

usage() {
  cat <<'EOF'
usage: scripts/combo-soak.sh [--combos N] [--seed S] [--first K] [--steps N] [--keep DIR]
                             [--seconds T] [--cuda | --device DEV] [--cuda-tol X]

Draws N random feature combinations (seeded by S: the same S and N draw the
same ones) and checks each: training, exact resume, gradcheck, translate and
score (see the head of this script).

options:
  --combos N   combinations to draw (default 20)
  --seed S     seed of the draws (default 1); combination K of seed S is
               the same whatever N is, so a failure is re-run with
               --seed S --first K --combos 1
  --first K    start at combination K (default 1)
  --steps N    updates of the first half of a run (default 30; the whole
               run is 2N)
  --cuda       also train each combination with train.device=cuda (nmt
               built with CUDA on a GPU, or the emulator's build
               BUILD/gpu-emu/nmt as NMT_BIN) and check: exact resume there
               too; the first step's loss and gradient norm the CPU's (1e-5,
               1e-4 relative), the later step losses within --cuda-tol
               (default 1e-3) relative of the CPU's or within 10 times the
               drift of a CPU run from weights 1e-6 apart (the model's own
               conditioning); and the CPU's checkpoint translating on cuda
               (beam 3) to the CPU's lines (at least 90% of them)
  --device DEV as --cuda with train.device=DEV (gpu-check.sh's dry run: cpu)
  --seconds T  draw no new combination after T seconds (0: no limit; the
               first is always run); the last line counts those run
  --keep DIR   work in DIR and keep everything there: the corpora and each
               combination's folder (default: a temporary folder; a
               combination's folder is removed unless it failed)
EOF
}

die() { echo "combo-soak: $*" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd) # ckpt_same.py beside it (scripts/, or a GPU bundle)
NMT=${NMT_BIN:-$HERE/../nmt}
case $NMT in /*) ;; *) NMT=$PWD/$NMT ;; esac
combos=20 seed=1 first=1 steps=30 keep="" on_device=0 cuda_tol=1e-3 device=cuda seconds=0
while [ $# -gt 0 ]; do
  case $1 in
    --combos) combos=${2:-}; shift 2 ;;
    --seed) seed=${2:-}; shift 2 ;;
    --first) first=${2:-}; shift 2 ;;
    --steps) steps=${2:-}; shift 2 ;;
    --keep) keep=${2:-}; shift 2 ;;
    --cuda) on_device=1; shift ;;
    --device) on_device=1; device=${2:-}; shift 2 ;;
    --seconds) seconds=${2:-}; shift 2 ;;
    --cuda-tol) cuda_tol=${2:-}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
for v in "$combos" "$seed" "$first" "$steps" "$seconds"; do
  case $v in ''|*[!0-9]*) die "--combos, --seed, --first, --steps and --seconds take whole numbers (got '$v')" ;; esac
done
[ "$steps" -ge 2 ] || die "--steps must be at least 2"
[ -x "$NMT" ] || die "nmt binary not found at $NMT (set NMT_BIN)"

if [ -n "$keep" ]; then # everything stays, the corpora too: a kept combination can be run again
  mkdir -p "$keep" || die "cannot make $keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work/shared"' EXIT
fi
shared=$work/shared
mkdir -p "$shared"
# the corpora every combination shares: the demo task, a second corpus
# (an extra one, its targets marked), and a monotone word alignment
"$NMT" demo-corpus --out "$shared/data" --train 600 --valid 20 --test 12 --seed 3 --max-words 9 > /dev/null 2>&1 ||
  die "demo-corpus failed"
"$NMT" demo-corpus --out "$shared/more" --train 200 --valid 2 --test 2 --seed 8 --max-words 9 > /dev/null 2>&1 ||
  die "demo-corpus failed"
awk 'NR == FNR { ns[NR] = NF; next }
     { s = ns[FNR]; out = ""; for (j = 0; j < NF; j++) out = out (j ? " " : "") int(j * s / NF) "-" j; print out }' \
  "$shared/data/train.src" "$shared/data/train.tgt" > "$shared/data/train.aln"

# rnd NAME N: R = a number in [0, N), splitmix64 of the seed, the
# combination and a hash of NAME (the key drawn): a combination's draws do
# not depend on the combinations before it or on the keys drawn before
rnd() {
  local name=$1 n=$2 h=1469598103934665603 i z
  for ((i = 0; i < ${#name}; i++)); do
    printf -v z '%d' "'${name:i:1}"
    h=$(((h ^ z) * 1099511628211))
  done
  z=$(((seed << 40) ^ (combo << 20) ^ h))
  z=$((z + 0x9E3779B97F4A7C15))
  z=$(((z ^ ((z >> 30) & 0x3FFFFFFFF)) * 0xBF58476D1CE4E5B9))
  z=$(((z ^ ((z >> 27) & 0x1FFFFFFFFF)) * 0x94D049BB133111EB))
  z=$((z ^ ((z >> 31) & 0x1FFFFFFFF)))
  R=$((((z >> 1) & 0x7FFFFFFFFFFFFFFF) % n))
}
# choose NAME VALUE...: R = one of the values
choose() { local name=$1; shift; rnd "$name" $#; shift "$R"; R=$1; }
# chance NAME P: true with probability P percent
chance() { rnd "$1" 100; [ "$R" -lt "$2" ]; }
# setk KEY VALUE...: KEY set to one of the values
setk() { local key=$1; shift; choose "$key" "$@"; sets+=("$key=$R"); }
# setp KEY P VALUE DEFAULT: KEY set to VALUE with probability P percent, else DEFAULT
setp() { if chance "$1" "$2"; then sets+=("$1=$3"); else sets+=("$1=$4"); fi; }

# draw_settings: the --set arguments of combination $combo, in sets[]
draw_settings() {
  sets=()
  local style score
  if chance tokenizer 35; then
    sets+=(data.tokenizer=spm data.spm_joint=true data.spm_vocab_size=120 data.max_len=60)
    setk data.spm_model_type unigram bpe
    setp data.spm_sample_alpha 40 0.3 0
    setp model.share_embeddings 50 true false
  fi
  choose style luong luong bahdanau none; style=$R
  choose score dot scaled_dot general concat additive auto; score=$R
  sets+=("model.attention.style=$style" "model.attention.score=$score")
  setk model.attention.mode global global local-m local-p
  setk model.attention.heads 1 1 2
  setk model.attention.window 1 3
  setp model.attention.dropout 25 0.1 0
  setk model.hidden 8 12 16
  if chance model.tie_embeddings 30; then # the output layer's rows are hidden wide
    sets+=(model.tie_embeddings=true "model.emb_dim=${sets[-1]#*=}")
  else
    sets+=(model.tie_embeddings=false)
    setk model.emb_dim 8 12 16
  fi
  case $score in
    *dot) ;; # dot products need the key size of the query: enc_hidden = hidden
    *) setp model.enc_hidden 25 10 0 ;;
  esac
  setk model.enc_layers 1 2
  setk model.dec_layers 1 2
  setk model.bidirectional true false
  if [ "$style" = luong ]; then setk model.input_feed true false; else sets+=(model.input_feed=false); fi
  setp model.residual 30 true false
  setp model.layer_norm 30 true false
  setp model.right_to_left 20 true false
  setk model.bridge learned zero
  setk model.dropout 0 0.2
  setp model.word_dropout_src 30 0.1 0
  setp model.word_dropout_tgt 30 0.1 0
  choose optimizer adam adam sgd
  sets+=("train.optimizer=$R" "train.lr=$([ "$R" = adam ] && echo 0.01 || echo 0.5)")
  setp train.warmup_steps 30 7 0
  setp train.lr_schedule 25 rsqrt constant
  sets+=(train.rsqrt_steps=5)
  setp train.accum_batches 30 2 1
  setp train.ema_decay 30 0.9 0
  setk train.clip_norm 0 1 5
  setk train.label_smoothing 0 0.1
  setk train.valid_metric bleu ppl chrf
  setp train.decay_start_epoch 20 2 0
  setk train.keep_checkpoints 0 2
  if chance batch_by_tokens 30; then
    sets+=(train.batch_sentences=0)
    setk train.batch_tokens 60 120
  else
    setk train.batch_sentences 8 16 20
    setp train.batch_tokens 20 150 0
  fi
  if [ "$style" != none ] && chance guided 25; then
    sets+=("data.train_align=$shared/data/train.aln" "train.guided_alignment_weight=0.5")
    setk train.guided_alignment_cost ce mse
  fi
  if chance extra 30; then
    sets+=("data.extra_src=$shared/more/train.src" "data.extra_tgt=$shared/more/train.tgt")
    setk data.extra_tag '<BT>' ''
    setk data.train_upsample 1 2
    setk data.extra_weight 1 0.3 2.5
  fi
}

# the config of every combination; --set adds the drawn keys
write_config() {
  cat > "$1" <<JSON
{
  "data": {"train_src": "$shared/data/train.src", "train_tgt": "$shared/data/train.tgt",
           "valid_src": "$shared/data/valid.src", "valid_tgt": "$shared/data/valid.tgt",
           "test_src": "$shared/data/test.src", "test_tgt": "$shared/data/test.tgt",
           "tokenizer": "word", "max_len": 40, "cache_dir": "$2/cache"},
  "model": {"emb_dim": 8, "hidden": 8},
  "train": {"max_steps": $((2 * steps)), "valid_every": $(((steps + 1) / 2)), "patience": 0,
            "log_every": 1, "seed": 5, "threads": 1, "epochs": 1000},
  "decode": {"beam": 2, "batch": 8, "max_len_a": 1.5, "max_len_b": 4}
}
JSON
}

# csv_rows CSV: train.csv without the wall-clock columns (tokens/s)
csv_rows() { grep -v '^kind,' "$1" | cut -d, -f1-7,10-13; }

# train_runs DIR DEVICE PREFIX: steps 1-2 of the head on DEVICE: DIR/PREFIX
# trained 2N steps in one go, DIR/PREFIX-halves N steps then resumed; prints
# "FAIL ..." or "refused ..." on failure (and returns 1)
train_runs() {
  local dir=$1 dev=$2 pre=$3 out rc
  local run=("$NMT" train --config "$dir/c.json" "${args[@]}" --set train.device="$dev" --quiet)
  out=$("${run[@]}" --set train.save_dir="$dir/$pre" 2>&1); rc=$?
  if [ $rc -eq 2 ] && [ "$dev" = cpu ]; then echo "refused ${out//$'\n'/ }"; return 1; fi
  if [ $rc -ne 0 ]; then echo "FAIL training on $dev (exit $rc): ${out//$'\n'/ }"; return 1; fi
  out=$("${run[@]}" --set train.save_dir="$dir/$pre-halves" --set train.max_steps="$steps" 2>&1) ||
    { echo "FAIL first half on $dev: ${out//$'\n'/ }"; return 1; }
  # COMBO_SOAK_RESUME_SET (tests/test_combo_soak.sh): a setting changed at
  # the resume, which the comparison below must catch
  local perturb=()
  [ -z "${COMBO_SOAK_RESUME_SET:-}" ] || perturb=(--set "$COMBO_SOAK_RESUME_SET")
  out=$("${run[@]}" --set train.save_dir="$dir/$pre-halves" --resume "${perturb[@]}" 2>&1) ||
    { echo "FAIL resume on $dev: ${out//$'\n'/ }"; return 1; }
  if ! diff <(csv_rows "$dir/$pre/train.csv") <(csv_rows "$dir/$pre-halves/train.csv") > "$dir/$pre-csv.diff"; then
    echo "FAIL resume on $dev: train.csv differs from the run in one go: $(head -4 "$dir/$pre-csv.diff" | tr '\n' ' ')"
    return 1
  fi
  out=$(python3 "$HERE/ckpt_same.py" "$dir/$pre/last.nmt" "$dir/$pre-halves/last.nmt" 2>&1) ||
    { echo "FAIL resume on $dev: last.nmt differs from the run in one go: $out"; return 1; }
}

# check_combo DIR: the checks of the head for combination $combo; prints
# its verdict, the first line starting passed, refused or FAIL
check_combo() {
  local dir=$1 out n_in n_out beam
  args=()
  for s in "${sets[@]}"; do args+=(--set "$s"); done
  write_config "$dir/c.json" "$dir"
  train_runs "$dir" cpu whole || return
  out=$("$NMT" gradcheck --config "$dir/c.json" "${args[@]}" --samples 6 2>&1) ||
    { echo "FAIL gradcheck: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"; return; }
  n_in=$(wc -l < "$shared/data/test.src")
  for beam in 1 3; do
    "$NMT" translate --model "$dir/whole/last.nmt" --beam $beam --threads 1 --device cpu < "$shared/data/test.src" \
      > "$dir/hyp$beam" 2> "$dir/translate.err" || { echo "FAIL translate beam $beam: $(head -3 "$dir/translate.err")"; return; }
    n_out=$(wc -l < "$dir/hyp$beam")
    [ "$n_out" -eq "$n_in" ] || { echo "FAIL translate beam $beam: $n_out lines for $n_in"; return; }
  done
  "$NMT" score --model "$dir/whole/last.nmt" --src "$shared/data/test.src" --tgt "$shared/data/test.tgt" \
    --threads 1 --device cpu > "$dir/scores" 2> "$dir/score.err" || { echo "FAIL score: $(head -3 "$dir/score.err")"; return; }
  n_out=$(grep -cE '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$' "$dir/scores")
  [ "$n_out" -eq "$n_in" ] || { echo "FAIL score: $n_out finite scores for $n_in pairs"; return; }
  if [ $on_device -eq 1 ]; then
    train_runs "$dir" "$device" cuda || return
    # the first step (the same weights, the same batch) agrees closely;
    # after it, the runs may drift apart as far as the model's own
    # conditioning takes them (a model with layer normalisation and SGD
    # at a rate of 0.5 can turn a difference of 1e-7 into 5% of the
    # gradient norm in two steps on the CPU alone): the step losses must
    # stay within cuda_tol relative of the CPU's, or within 10 times the
    # drift of a CPU run whose initial weights are 1e-6 apart
    out=$("$NMT" train --config "$dir/c.json" "${args[@]}" --set train.device=cpu --quiet \
          --set model.init_range=0.1000001 --set train.save_dir="$dir/nudged" 2>&1) ||
      { echo "FAIL training with nudged weights: ${out//$'\n'/ }"; return; }
    out=$(awk -F, -v tol="$cuda_tol" '
            function rel(x, y) { d = x - y; if (d < 0) d = -d; if (y < 0) y = -y; return d / (y + 1e-30) }
            FNR == 1 { file++; next }
            $1 != "train" { next }
            file == 1 { loss[$2] = $4; gnorm[$2] = $7; next }
            file == 2 { if ($2 in loss && rel($4, loss[$2]) > drift) drift = rel($4, loss[$2]); next }
            !($2 in loss) { print "step " $2 ": on the device, not on the cpu"; bad = 1; exit }
            { n++; r = rel($4, loss[$2]); if (r > worst) { worst = r; at = $2 } }
            n == 1 && (r > 1e-5 || rel($7, gnorm[$2]) > 1e-4) {
              print "first step: loss " $4 " and gradient norm " $7 " on the device, " loss[$2] " and " gnorm[$2] " on the cpu"; bad = 1; exit }
            END { if (bad) exit 1; if (n == 0) { print "no steps"; exit 1 }
                  limit = 10 * drift > tol ? 10 * drift : tol
                  if (worst > limit) { printf "step %d: %.2g relative, over %.2g (the nudged CPU run drifted %.2g)\n", at, worst, limit, drift; exit 1 }
                  printf "%.2g (nudged cpu %.2g)\n", worst, drift }' \
          "$dir/whole/train.csv" "$dir/nudged/train.csv" "$dir/cuda/train.csv") ||
      { echo "FAIL $device against cpu losses: $out"; return; }
    local worst=$out
    # the CPU's checkpoint translated on cuda: the CPU's lines
    "$NMT" translate --model "$dir/whole/last.nmt" --beam 3 --device "$device" < "$shared/data/test.src" \
      > "$dir/hyp3-cuda" 2> "$dir/translate-cuda.err" || { echo "FAIL translate on $device: $(head -3 "$dir/translate-cuda.err")"; return; }
    n_out=$(paste -d '\t' "$dir/hyp3" "$dir/hyp3-cuda" | awk -F'\t' '$1 == $2' | wc -l)
    [ "$n_out" -ge $((n_in * 9 / 10)) ] || { echo "FAIL translate on $device: $n_out of $n_in lines as on the cpu"; return; }
    echo "passed ($device: losses within $worst of the cpu's)"
    return
  fi
  echo "passed"
}

passed=0 refused=0 failed=0 ran=0
for ((combo = first; combo < first + combos; combo++)); do
  [ "$seconds" -eq 0 ] || [ $ran -eq 0 ] || [ $SECONDS -lt "$seconds" ] || break
  ran=$((ran + 1))
  draw_settings
  dir=$work/combo-$combo
  rm -rf "$dir" && mkdir -p "$dir"
  printf '%s\n' "${sets[@]}" > "$dir/settings" # one KEY=VALUE a line
  verdict=$(check_combo "$dir" | grep -m1 -E '^(passed|refused|FAIL)')
  verdict=${verdict:-FAIL no verdict (the checks stopped short)}
  case $verdict in
    passed*) passed=$((passed + 1)) ;;
    refused*) refused=$((refused + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
  echo "combo $combo: $verdict"
  echo "  settings: ${sets[*]}"
  if [ -n "$keep" ]; then
    :
  elif [ "${verdict%% *}" = FAIL ]; then
    echo "  kept: $dir"
  else
    rm -rf "$dir"
  fi
done
[ $failed -gt 0 ] || [ -n "$keep" ] || rm -rf "$work"
echo "combo-soak: $ran combinations, $passed passed, $refused refused, $failed failed"
[ $failed -eq 0 ]
