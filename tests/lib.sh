# tests/lib.sh: what the shell tests share. Source it after `set -u`:
#
#   . "$(dirname "$0")/lib.sh"
#   test_begin test_name          # NMT, ROOT, tmp, the counters
#   demo_config "$tmp/c.json" MODEL TRAIN DECODE   # a config for the demo corpus
#   check '[ -s "$tmp/x" ]' "x is empty"
#   expect 2 "needs a value" "$NMT" translate --beam
#   test_end                      # "test_name: N passed, N failed"; the exit status
#
# NMT is $NMT_BIN (set by `make test`), else the nmt next to tests/. tmp is a
# fresh folder, removed at exit unless KEEP_TMP is set (then its path is
# printed). A missing binary fails the test at once.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pass=0
fail=0

test_begin() {
  TEST_NAME=$1
  NMT=${NMT_BIN:-$ROOT/nmt}
  case $NMT in /*) ;; *) NMT=$PWD/$NMT ;; esac
  if [ ! -x "$NMT" ]; then
    echo "$TEST_NAME: nmt binary not found at $NMT"
    echo "$TEST_NAME: 0 passed, 1 failed"
    exit 1
  fi
  tmp=$(mktemp -d)
  if [ -n "${KEEP_TMP:-}" ]; then echo "tmp: $tmp (kept)"; else trap 'rm -rf "$tmp"' EXIT; fi
}

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# check CONDITION MESSAGE: CONDITION is shell code (eval'ed), MESSAGE says what went wrong
check() { if eval "$1"; then ok; else bad "$2"; fi; }

# expect CODE NEEDLE CMD...: CMD must exit with CODE and, unless NEEDLE is
# empty, print NEEDLE (stdout and stderr together)
expect() {
  local code=$1 needle=$2 out rc
  shift 2
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$code" ] && { [ -z "$needle" ] || printf '%s' "$out" | grep -qF -- "$needle"; }; then
    ok
  else
    bad "$* -> exit $rc (expected $code), wanted '$needle' in: $(printf '%s' "$out" | head -5)"
  fi
}

# demo_config FILE MODEL TRAIN DECODE: a config FILE for the generated demo
# corpus in $tmp/data (`nmt demo-corpus --out "$tmp/data"`): word tokenizer,
# max_len 40, cache in $tmp/cache, with the JSON objects MODEL, TRAIN and
# DECODE as its model, train and decode sections.
demo_config() {
  cat > "$1" <<JSON
{
  "data": {"train_src": "data/train.src", "train_tgt": "data/train.tgt",
           "valid_src": "data/valid.src", "valid_tgt": "data/valid.tgt",
           "test_src": "data/test.src", "test_tgt": "data/test.tgt",
           "tokenizer": "word", "max_len": 40, "cache_dir": "cache"},
  "model": $2,
  "train": $3,
  "decode": $4
}
JSON
}

# train_into CONFIG DIR SETTINGS...: nmt train --config CONFIG into
# $tmp/DIR with the settings (--set K=V, --resume, --quiet ...); its output
# (stdout and stderr) in out, its exit status in rc
train_into() {
  local config=$1 dir=$2
  shift 2
  out=$("$NMT" train --config "$config" --set train.save_dir="$tmp/$dir" "$@" 2>&1); rc=$?
}

# checkpoint_without_key IN OUT SECTION KEY VALUE: OUT is checkpoint IN
# with SECTION.KEY (e.g. model residual false) taken out of its stored
# config (CONF), as a binary from before the key wrote it; fails unless
# the key held VALUE (a JSON literal). Its output (python's) in out.
checkpoint_without_key() {
  out=$(python3 - "$@" 2>&1 <<'PY'
import json, struct, sys, zlib
src, dst, section, key, value = sys.argv[1:6]
data = open(src, "rb").read()
version, flags, content = struct.unpack_from("<IIQ", data, 8)
out, pos, found = b"", 24, False
while pos < 24 + content:  # every section as it is, CONF without the key
    tag, length = data[pos:pos + 4], struct.unpack_from("<Q", data, pos + 4)[0]
    body = data[pos + 12:pos + 12 + length]
    if tag == b"CONF":
        conf = json.loads(body)
        found = conf[section].pop(key) == json.loads(value)
        body = json.dumps(conf, indent=2).encode()
    out += tag + struct.pack("<Q", len(body)) + body
    pos += 12 + length
assert found, "no %s.%s %s in CONF" % (section, key, value)
out = data[:8] + struct.pack("<IIQ", version, flags, len(out)) + out
open(dst, "wb").write(out + struct.pack("<I", zlib.crc32(out)))
PY
)
}

# losses DIR: the step, loss and ppl columns of DIR's train.csv training rows
losses() { grep '^train,' "$1/train.csv" | cut -d, -f2,4,5; }

# check_resume_exact ROWS WHOLE HALF STEPS [SETTINGS...]: with the test's
# train (train DIR SETTINGS...), trains $tmp/HALF for STEPS updates, then
# --resume to the config's end, both with SETTINGS; checks that ROWS (a
# function of a run folder, e.g. losses) gives the same for it as for the
# uninterrupted run $tmp/WHOLE
check_resume_exact() {
  local rows=$1 whole=$2 half=$3 steps=$4
  shift 4
  train "$half" "$@" --set train.max_steps="$steps"
  check '[ $rc -eq 0 ]' "first $steps steps of $half: $rc $out"
  train "$half" "$@" --resume
  check '[ $rc -eq 0 ]' "resumed $half: $rc $out"
  check 'cmp -s <($rows "$tmp/$whole") <($rows "$tmp/$half")' \
    "$half: resumed rows differ from the uninterrupted run $whole: $(diff <($rows "$tmp/$whole") <($rows "$tmp/$half") | head -4)"
}

# check_model_key KEY: what every CLI test of a boolean model key (e.g.
# model.residual) checks, with the test's train (train DIR SETTINGS...),
# whose config turns KEY on and makes 40 updates (log_every 10) from a
# test set in $tmp/data/test.src:
# 1. the run ($tmp/run) trains: its loss falls by 0.3; and it is another
#    model than the run with KEY false ($tmp/plain)
# 2. resume is exact: 20 updates, then --resume to 40 ($tmp/half), equals it
# 3. the key is part of the model: a resume that changes it, or a
#    fine-tuning run from a checkpoint without it, is refused naming it
# 4. a checkpoint whose stored config lacks KEY (an nmt from before it;
#    $tmp/old.nmt from plain's) is a model with KEY false: it translates
#    as plain's
check_model_key() {
  local key=$1 section=${1%%.*} name=${1#*.} first last
  train run
  check '[ $rc -eq 0 ] && [ -s "$tmp/run/best.nmt" ]' "training with $key: $rc $out"
  first=$(losses "$tmp/run" | head -1 | cut -d, -f2)
  last=$(losses "$tmp/run" | tail -1 | cut -d, -f2)
  check "awk 'BEGIN{exit !($last < $first - 0.3)}'" "$key: loss did not fall: $first -> $last"
  train plain --set "$key=false"
  check '[ $rc -eq 0 ]' "training without $key: $rc $out"
  check '! cmp -s <(losses "$tmp/run") <(losses "$tmp/plain")' "$key changed no loss"

  check_resume_exact losses run half 20

  train half --resume --set "$key=false" --set train.max_steps=50
  check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "$key"' "resume with another $key: $rc $out"
  train tuned --set train.init_from="$tmp/plain/last.nmt" --set train.max_steps=5
  check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "$key: differs from the model of train.init_from"' \
    "init_from a model without $key: $rc $out"

  checkpoint_without_key "$tmp/plain/last.nmt" "$tmp/old.nmt" "$section" "$name" false
  check '[ $? -eq 0 ]' "rewriting a checkpoint without $key: $out"
  check '! grep -q "\"$name\"" <("$NMT" info --config "$tmp/old.nmt")' "the rewritten CONF still names $key"
  "$NMT" translate --model "$tmp/plain/last.nmt" < "$tmp/data/test.src" > "$tmp/plain.hyp" 2>&1
  "$NMT" translate --model "$tmp/old.nmt" < "$tmp/data/test.src" > "$tmp/old.hyp" 2>&1
  check '[ -s "$tmp/old.hyp" ] && cmp -s "$tmp/plain.hyp" "$tmp/old.hyp"' \
    "a checkpoint without $key translates otherwise: $(diff "$tmp/plain.hyp" "$tmp/old.hyp" | head -3)"
}

test_end() {
  echo "$TEST_NAME: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
