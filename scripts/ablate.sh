#!/usr/bin/env bash
# ablate.sh: the attention ablation (issue #8). Trains one config for a fixed
# budget of updates under each attention variant, each into its own folder,
# then decodes and scores the test set with every model and writes
#   OUT/VARIANT/           the run (train.csv, best.nmt, train.log, test.hyp, ...)
#   OUT/ablation.md        the table, the exact commands, the sacreBLEU signature
#   OUT/ablation.tsv       the numbers of the chart (nmt plot --bars)
#   OUT/ablation.svg       grouped bars: BLEU all/short/long, speeds, memory
# Per variant: test BLEU (also for short and long source sentences), the
# validation perplexity at the end of the budget, training target tokens/s,
# decoding sentences/s, peak memory of the training process and the updates
# needed to reach a target validation perplexity. A variant that fails is a
# row "failed: REASON" and makes the script exit 1. See --help.
set -u
set -o pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'EOF'
usage: scripts/ablate.sh --config FILE [options]

Trains FILE once per attention variant for a fixed number of updates and
compares the variants (docs/results.md, "Attention ablation").

options:
  --config FILE      the base config (its data.test_src/test_tgt are the test set)
  --out DIR          output folder (default ablation/NAME, NAME the config's
                     file name without .json); a variant's subfolder is
                     replaced when it exists
  --variants LIST    comma-separated variants (default: all of them):
                       none                 model.attention.style=none (no input feeding)
                       luong-dot            luong, score dot, global
                       luong-general        luong, score general, global
                       luong-concat         luong, score concat, global
                       luong-scaled_dot     luong, score scaled_dot, global
                       bahdanau-additive    bahdanau, score additive, global (no input
                                            feeding: the context is in the LSTM input)
                       local-m              luong, general, mode local-m
                       local-p              luong, general, mode local-p
                       heads-1              the config's attention with 1 head
                       heads-4              the config's attention with 4 heads
                     the luong/bahdanau/local variants use 1 head; a variant
                     whose resolved attention settings equal an earlier one's
                     (heads-1 and luong-general for a luong general config)
                     is not trained twice: its row reuses the results
  --variant NAME:KEY=VALUE[,KEY=VALUE...]
                     an extra variant (repeatable), e.g.
                     --variant wide-local:model.attention.mode=local-p,model.attention.window=20
  --steps N          the budget: updates per variant (default 2000)
  --valid-every N    validate every N updates (default steps/20, at least 1)
  --target-ppl X     the validation perplexity of "steps to ppl" (default 20)
  --split N          short sentences have at most N source words (default 25)
  --threads N        train.threads, also used for decoding (default 0: all cores)
  --beam K           beam size for the test set (default: the config's decode.beam)
  --set KEY=VALUE    another setting for every variant (repeatable)
  --test-lines N     score only the first N test sentences (default: all)
  --reuse            a variant whose folder already holds a finished run
                     (best.nmt, train.csv, test.hyp) is not trained or
                     decoded again: its numbers are read back (the decoding
                     is timed again when the folder lacks decode_seconds).
                     Lets several ablate.sh runs share the variants of one
                     OUT, and rebuilds the report of an interrupted run
  --quick            a tiny run for tests: 30 steps, validation every 5,
                     variants none,luong-general,local-p, 100 test
                     sentences, beam 1 (each unless given explicitly)
  --nmt PATH         the nmt binary (default $NMT_BIN, else ./nmt)
  -h, --help         this help

Every variant trains with train.max_steps=STEPS, train.valid_every,
train.epochs=1000000 and train.patience=0 (the budget is the same for all),
and decode.beam=1 (greedy validation, which keeps frequent validations cheap;
the test set is decoded with --beam). Exit codes: 0 all variants done, 1 a
variant failed (the others are still reported), 2 bad usage.
EOF
}

die_usage() { echo "ablate.sh: $*" >&2; echo "try: scripts/ablate.sh --help" >&2; exit 2; }
die() { echo "ablate.sh: $*" >&2; exit 1; }

ALL_VARIANTS="none,luong-dot,luong-general,luong-concat,luong-scaled_dot,bahdanau-additive,local-m,local-p,heads-1,heads-4"
QUICK_VARIANTS="none,luong-general,local-p"

# The --set settings of a built-in variant, comma-separated.
variant_settings() {
  local a=model.attention
  case "$1" in
    none) echo "$a.style=none,model.input_feed=false" ;; # input feeding is Luong's
    luong-dot | luong-general | luong-concat | luong-scaled_dot)
      echo "$a.style=luong,$a.score=${1#luong-},$a.mode=global,$a.heads=1" ;;
    bahdanau-additive) echo "$a.style=bahdanau,$a.score=additive,$a.mode=global,$a.heads=1,model.input_feed=false" ;;
    local-m | local-p) echo "$a.style=luong,$a.score=general,$a.mode=$1,$a.heads=1" ;;
    heads-1) echo "$a.heads=1" ;;
    heads-4) echo "$a.heads=4" ;;
    *) return 1 ;;
  esac
}

config="" out="" variants="" steps="" valid_every="" target_ppl=20 split=25 threads=0
beam="" test_lines="" quick=0 reuse=0
NMT=${NMT_BIN:-./nmt}
extra_sets=()
custom_names=()
declare -A custom=()
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    -h | --help) usage; exit 0 ;;
    --quick) quick=1; shift; continue ;;
    --reuse) reuse=1; shift; continue ;;
    --config | --out | --variants | --variant | --steps | --valid-every | --target-ppl | --split | \
      --threads | --beam | --set | --test-lines | --nmt)
      [ $# -ge 2 ] || die_usage "$opt needs a value"
      val=$2
      shift 2 ;;
    *) die_usage "unknown argument '$opt'" ;;
  esac
  case "$opt" in
    --config) config=$val ;;
    --out) out=$val ;;
    --variants) variants=$val ;;
    --variant)
      name=${val%%:*}
      [[ "$val" == *:?* ]] || die_usage "--variant wants NAME:KEY=VALUE[,KEY=VALUE...], got '$val'"
      custom[$name]=${val#*:}
      custom_names+=("$name") ;;
    --steps) steps=$val ;;
    --valid-every) valid_every=$val ;;
    --target-ppl) target_ppl=$val ;;
    --split) split=$val ;;
    --threads) threads=$val ;;
    --beam) beam=$val ;;
    --set) extra_sets+=(--set "$val") ;;
    --test-lines) test_lines=$val ;;
    --nmt) NMT=$val ;;
  esac
done

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
[ -n "$config" ] || die_usage "--config FILE is required"
[ -f "$config" ] || die_usage "--config: no such file: $config"
if [ "$quick" -eq 1 ]; then
  : "${steps:=30}" "${valid_every:=5}" "${variants:=$QUICK_VARIANTS}" "${test_lines:=100}" "${beam:=1}"
fi
: "${steps:=2000}"
is_uint "$steps" && [ "$steps" -ge 1 ] || die_usage "--steps wants a positive integer, got '$steps'"
[ -n "$valid_every" ] || valid_every=$(( steps / 20 > 0 ? steps / 20 : 1 ))
is_uint "$valid_every" && [ "$valid_every" -ge 1 ] || die_usage "--valid-every wants a positive integer, got '$valid_every'"
is_uint "$split" || die_usage "--split wants a non-negative integer, got '$split'"
is_uint "$threads" || die_usage "--threads wants a non-negative integer, got '$threads'"
[ -z "$beam" ] || { is_uint "$beam" && [ "$beam" -ge 1 ]; } || die_usage "--beam wants a positive integer, got '$beam'"
[ -z "$test_lines" ] || { is_uint "$test_lines" && [ "$test_lines" -ge 1 ]; } || die_usage "--test-lines wants a positive integer, got '$test_lines'"
awk -v x="$target_ppl" 'BEGIN { exit !(x + 0 == x && x > 0) }' || die_usage "--target-ppl wants a positive number, got '$target_ppl'"
[ -x "$NMT" ] || command -v "$NMT" > /dev/null 2>&1 || die_usage "nmt binary not found: $NMT (use --nmt or NMT_BIN)"
case "$NMT" in */*) NMT=$(cd "$(dirname "$NMT")" && pwd)/$(basename "$NMT") ;; esac

# the variant list: built-in names from --variants (all by default, unless
# only --variant was given), then the --variant ones
if [ -z "$variants" ] && [ ${#custom_names[@]} -eq 0 ]; then variants=$ALL_VARIANTS; fi
names=()
declare -A settings=()
IFS=, read -r -a listed <<< "$variants"
for v in "${listed[@]}"; do
  [ -n "$v" ] || continue
  s=$(variant_settings "$v") || die_usage "unknown variant '$v' (known: $ALL_VARIANTS)"
  names+=("$v")
  settings[$v]=$s
done
for v in "${custom_names[@]}"; do
  names+=("$v")
  settings[$v]=${custom[$v]}
done
[ ${#names[@]} -gt 0 ] || die_usage "no variants"
declare -A seen=()
for v in "${names[@]}"; do
  [[ "$v" =~ ^[A-Za-z0-9._-]+$ ]] || die_usage "variant name '$v': use letters, digits, '.', '_', '-'"
  [ -z "${seen[$v]:-}" ] || die_usage "variant '$v' given twice"
  seen[$v]=1
done

cfg_name=$(basename "$config" .json)
[ -n "$out" ] || out=ablation/$cfg_name
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)

# The resolved base config: the test set and the decoding beam.
resolved=$("$NMT" config --config "$config" "${extra_sets[@]}" 2>&1) || die "the base config is invalid: $resolved"
json_string() { config_string "$resolved" "$1"; }
json_number() { config_number "$resolved" "$1"; }
test_src=$(json_string test_src)
test_tgt=$(json_string test_tgt)
[ -n "$test_src" ] && [ -n "$test_tgt" ] || die "$config has no data.test_src and data.test_tgt (the test set)"
[ -n "$beam" ] || beam=$(json_number beam)
[ -n "$beam" ] || beam=1

# The test set (optionally its first N lines; gzip read through zcat), split
# into short (<= split source words) and long sentences.
tdir=$out/test
mkdir -p "$tdir"
take() { if [ -n "$test_lines" ]; then head -n "$test_lines"; else cat; fi; }
read_text "$test_src" | take > "$tdir/test.src" || die "cannot read $test_src"
read_text "$test_tgt" | take > "$tdir/test.tgt" || die "cannot read $test_tgt"
n_test=$(wc -l < "$tdir/test.src")
[ "$n_test" -gt 0 ] || die "the test set $test_src is empty"
[ "$n_test" -eq "$(wc -l < "$tdir/test.tgt")" ] || die "$test_src and $test_tgt differ in line count"
awk -v n="$split" '{ print (NF <= n ? "S" : "L") }' "$tdir/test.src" > "$tdir/mask"
# part MASK_LETTER FILE: the lines of FILE whose test sentence is short (S) or long (L)
part() { awk -v want="$1" 'NR == FNR { m[FNR] = $0; next } m[FNR] == want' "$tdir/mask" "$2"; }
part S "$tdir/test.tgt" > "$tdir/short.tgt"
part L "$tdir/test.tgt" > "$tdir/long.tgt"
n_short=$(wc -l < "$tdir/short.tgt")
n_long=$(wc -l < "$tdir/long.tgt")

# Peak memory of a command: GNU time (%M, KiB), else python3's getrusage,
# else none.
if /usr/bin/time --version 2>&1 | grep -q GNU; then
  mem_tool="GNU time (%M)"
  measure() { local f=$1; shift; /usr/bin/time -f %M -o "$f" "$@"; }
elif command -v python3 > /dev/null 2>&1; then
  mem_tool="python3 resource.getrusage (ru_maxrss)"
  measure() {
    local f=$1; shift
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)' "$f" "$@"
  }
else
  mem_tool="none (no GNU time or python3)"
  measure() { local f=$1; shift; "$@"; }
fi

now() { date +%s.%N; }
# bleu_of HYP REF: the BLEU score, or empty
bleu_of() {
  [ -s "$2" ] || return 0
  "$NMT" eval --bleu --ref "$2" --hyp "$1" --json 2> /dev/null |
    sed -n 's/^[[:space:]]*"score":[[:space:]]*\([0-9.eE+-]*\),\{0,1\}$/\1/p'
}
# csv_col FILE KIND COLUMN: the COLUMN values of the KIND rows of train.csv, "step value" per line
csv_col() {
  awk -F, -v kind="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["kind"] == kind && $c[col] != "" { print $c["step"], $c[col] }' "$1"
}
one_line() { tr -s '\n\t|' '   ' | sed 's/^ *//; s/ *$//' | cut -c1-300; }

declare -A status=() reason=() bleu=() bleu_s=() bleu_l=() ppl=() reach=() tok=() sps=() mem=() note=()
declare -A attn_of=() train_cmd=() decode_cmd=()
signature=""
failed=0
budget_sets=(--set "train.max_steps=$steps" --set "train.valid_every=$valid_every"
             --set "train.log_every=$(( valid_every < 100 ? valid_every : 100 ))"
             --set train.epochs=1000000 --set train.patience=0 --set decode.beam=1
             --set "train.threads=$threads")

run_variant() {
  local v=$1 dir=$out/$1
  local sets=("${budget_sets[@]}")
  local kv
  IFS=, read -r -a kvs <<< "${settings[$v]}"
  for kv in "${kvs[@]}"; do [ -n "$kv" ] && sets+=(--set "$kv"); done
  sets+=("${extra_sets[@]}" --set "train.save_dir=$dir")
  local done_before=0
  if [ "$reuse" = 1 ] && [ -s "$dir/best.nmt" ] && [ -s "$dir/train.csv" ] && [ -f "$dir/test.hyp" ]; then
    done_before=1
  else
    rm -rf "$dir"
    mkdir -p "$dir"
  fi
  train_cmd[$v]="nmt train --config $config ${sets[*]} --quiet"
  # the settings must be valid; equal attention settings reuse a result
  local res
  if ! res=$("$NMT" config --config "$config" "${sets[@]}" 2>&1); then
    status[$v]=failed
    reason[$v]="invalid settings: $(printf '%s' "$res" | tail -n 3 | one_line)"
    return 1
  fi
  local attn
  attn=$(printf '%s\n' "$res" | awk '/"attention":/ { on = 1 } on { print } on && /}/ { exit }' | tr -d ' \t\n')
  local u
  for u in "${!attn_of[@]}"; do
    if [ "${attn_of[$u]}" = "$attn" ] && [ "${status[$u]}" = ok ]; then
      status[$v]=ok
      note[$v]="same attention settings as $u: results reused, not trained again"
      bleu[$v]=${bleu[$u]} bleu_s[$v]=${bleu_s[$u]} bleu_l[$v]=${bleu_l[$u]} ppl[$v]=${ppl[$u]}
      reach[$v]=${reach[$u]} tok[$v]=${tok[$u]} sps[$v]=${sps[$u]} mem[$v]=${mem[$u]}
      rmdir "$dir" 2> /dev/null
      return 0
    fi
  done
  attn_of[$v]=$attn
  local t0 t1
  if [ "$done_before" = 1 ]; then
    echo "ablate: $v: reusing the finished run in $dir" >&2
    note[$v]="reused from an earlier ablate.sh run in the same folder"
  else
    echo "ablate: $v: training ($steps updates)" >&2
    t0=$(now)
    if ! measure "$dir/maxrss_kib" "$NMT" train --config "$config" "${sets[@]}" --quiet > "$dir/train.log" 2>&1; then
      status[$v]=failed
      reason[$v]="training failed: $(grep -v '^[[:space:]]*$' "$dir/train.log" | tail -n 2 | one_line)"
      return 1
    fi
    t1=$(now)
    echo "train wall seconds: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >> "$dir/train.log"
  fi
  [ -s "$dir/best.nmt" ] || { status[$v]=failed; reason[$v]="no best.nmt (no validation set?)"; return 1; }
  local csv=$dir/train.csv
  ppl[$v]=$(csv_col "$csv" valid valid_ppl | tail -n 1 | awk '{ printf "%.2f", $2 }')
  reach[$v]=$(csv_col "$csv" valid valid_ppl | awk -v t="$target_ppl" '$2 + 0 <= t + 0 { print $1; exit }')
  [ -n "${reach[$v]}" ] || reach[$v]="not reached"
  tok[$v]=$(csv_col "$csv" train tgt_tok_s | awk '{ s += $2; n++ } END { if (n) printf "%.0f", s / n }')
  mem[$v]=$(awk '/^[0-9]+$/ { v = $1 } END { if (v != "") printf "%.0f", v / 1024 }' "$dir/maxrss_kib" 2> /dev/null)
  # decoding: the whole test set, timed
  decode_cmd[$v]="nmt translate --model $dir/best.nmt --beam $beam --threads $threads < $tdir/test.src > $dir/test.hyp"
  if [ "$done_before" = 0 ] || [ ! -s "$dir/decode_seconds" ]; then
    echo "ablate: $v: decoding $n_test sentences (beam $beam)" >&2
    t0=$(now)
    if ! "$NMT" translate --model "$dir/best.nmt" --beam "$beam" --threads "$threads" < "$tdir/test.src" > "$dir/test.hyp" 2> "$dir/translate.log"; then
      status[$v]=failed
      reason[$v]="decoding failed: $(tail -n 2 "$dir/translate.log" | one_line)"
      return 1
    fi
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' > "$dir/decode_seconds"
  fi
  sps[$v]=$(awk -v n="$n_test" '{ d = $1 } END { printf "%.1f", (d > 0 ? n / d : 0) }' "$dir/decode_seconds")
  bleu[$v]=$(bleu_of "$dir/test.hyp" "$tdir/test.tgt")
  part S "$dir/test.hyp" > "$dir/short.hyp"
  part L "$dir/test.hyp" > "$dir/long.hyp"
  bleu_s[$v]=$(bleu_of "$dir/short.hyp" "$tdir/short.tgt")
  bleu_l[$v]=$(bleu_of "$dir/long.hyp" "$tdir/long.tgt")
  if [ -z "${bleu[$v]}" ]; then status[$v]=failed; reason[$v]="nmt eval gave no score"; return 1; fi
  if [ -z "$signature" ]; then
    signature=$("$NMT" eval --bleu --ref "$tdir/test.tgt" --hyp "$dir/test.hyp" 2> /dev/null | head -n 1 | sed 's/ = .*//')
  fi
  status[$v]=ok
}

for v in "${names[@]}"; do
  if ! run_variant "$v"; then
    failed=$((failed + 1))
    echo "ablate: $v: FAILED: ${reason[$v]}" >&2
  fi
done

# ---- the report ----
or_na() { if [ -n "$1" ]; then printf '%s' "$1"; else printf 'n/a'; fi; }
md=$out/ablation.md
tsv=$out/ablation.tsv
{
  printf 'variant\tTest BLEU:all\tTest BLEU:short (<= %s words)\tTest BLEU:long (> %s words)' "$split" "$split"
  printf '\tTraining speed:target tokens/s\tDecoding speed:sentences/s\tPeak memory (training):MiB\n'
  for v in "${names[@]}"; do
    if [ "${status[$v]}" = ok ]; then
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$(or_na "${bleu[$v]}")" "$(or_na "${bleu_s[$v]}")" \
        "$(or_na "${bleu_l[$v]}")" "$(or_na "${tok[$v]}")" "$(or_na "${sps[$v]}")" "$(or_na "${mem[$v]}")"
    else
      printf '%s\tfailed\tfailed\tfailed\tfailed\tfailed\tfailed\n' "$v"
    fi
  done
} > "$tsv"

{
  echo "# Attention ablation: $cfg_name"
  echo
  echo "Config \`$config\`, $steps updates per variant, validation every $valid_every updates,"
  echo "test set \`$test_src\` ($n_test sentences: $n_short with at most $split source words, $n_long longer),"
  echo "beam $beam. $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc 2> /dev/null || echo '?') cores, $("$NMT" --version 2> /dev/null | head -n 1)."
  echo
  echo "| variant | test BLEU | BLEU short (≤ $split words) | BLEU long (> $split words) | valid ppl (end) | steps to ppl ≤ $target_ppl | train tgt tok/s | decode sent/s | peak MiB (train) | status |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
  for v in "${names[@]}"; do
    if [ "${status[$v]}" = ok ]; then
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$v" "$(or_na "${bleu[$v]}")" \
        "$(or_na "${bleu_s[$v]}")" "$(or_na "${bleu_l[$v]}")" "$(or_na "${ppl[$v]}")" "${reach[$v]}" \
        "$(or_na "${tok[$v]}")" "$(or_na "${sps[$v]}")" "$(or_na "${mem[$v]}")" "${note[$v]:-ok}"
    else
      printf '| %s | - | - | - | - | - | - | - | - | failed: %s |\n' "$v" "${reason[$v]}"
    fi
  done
  echo
  echo "![attention ablation](ablation.svg)"
  echo
  echo "Signature: \`${signature:-n/a}\` (\`nmt eval --bleu\`, sacreBLEU-compatible). BLEU short/long"
  echo "score the test sentences split by source length (whitespace words) against the same split"
  echo "of the references; a part with no sentence reads n/a."
  echo "valid ppl: the last validation of the budget. steps to ppl: the first validation (train.csv"
  echo "\`valid\` rows) at or below the target. train tgt tok/s: the mean of train.csv \`tgt_tok_s\`"
  echo "(training steps only, validation excluded). decode sent/s: test sentences over the wall time"
  echo "of \`nmt translate\` (model loading included). Peak memory: the maximum resident set of the"
  echo "training process, measured with $mem_tool."
  echo
  echo "## Variants"
  echo
  for v in "${names[@]}"; do echo "- \`$v\`: \`${settings[$v]}\`"; done
  echo
  echo "## Commands"
  echo
  echo '```'
  for v in "${names[@]}"; do
    [ -n "${train_cmd[$v]:-}" ] && echo "${train_cmd[$v]}"
    [ -n "${decode_cmd[$v]:-}" ] && {
      echo "${decode_cmd[$v]}"
      echo "nmt eval --bleu --ref $tdir/test.tgt --hyp $out/$v/test.hyp --json"
    }
  done
  echo "nmt plot --bars $tsv --out $out/ablation.svg --title 'Attention ablation: $cfg_name'"
  echo '```'
} > "$md"

if ! plot_out=$("$NMT" plot --bars "$tsv" --out "$out/ablation.svg" --title "Attention ablation: $cfg_name ($steps updates)" 2>&1); then
  echo "ablate.sh: the chart failed: $plot_out" >&2
  failed=$((failed + 1))
fi
echo "ablate: wrote $md, $tsv and $out/ablation.svg" >&2
if [ "$failed" -gt 0 ]; then
  echo "ablate: $failed variant(s) failed (see the table)" >&2
  exit 1
fi
exit 0
