#!/usr/bin/env bash
# test_demo_cli.sh: `nmt demo-corpus` end to end: two runs give identical
# files (cmp), sizes and line counts, --seed, --gzip, exit codes and errors.
# Uses $NMT_BIN (default: ./nmt next to this folder).
set -u
NMT=${NMT_BIN:-$(cd "$(dirname "$0")/.." && pwd)/nmt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# run EXPECTED_RC NEEDLE CMD...: exit code and (when NEEDLE is not empty) output
run() {
  local code=$1 needle=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$code" ] && { [ -z "$needle" ] || printf '%s' "$out" | grep -qF -- "$needle"; }; then
    ok
  else
    bad "$* -> exit $rc (expected $code), wanted '$needle' in: $(printf '%s' "$out" | head -3)"
  fi
}

files="train.src train.tgt valid.src valid.tgt test.src test.tgt"

run 0 "usage: nmt demo-corpus" "$NMT" demo-corpus --help
run 0 "" "$NMT" demo-corpus --out "$tmp/a"
run 0 "" "$NMT" demo-corpus --out "$tmp/b/nested"
for f in $files; do
  if cmp -s "$tmp/a/$f" "$tmp/b/nested/$f"; then ok; else bad "$f differs between two runs"; fi
done
for f in train.src train.tgt; do
  n=$(wc -l < "$tmp/a/$f")
  if [ "$n" -eq 20000 ]; then ok; else bad "$f has $n lines, expected 20000"; fi
done
for f in valid.src valid.tgt test.src test.tgt; do
  n=$(wc -l < "$tmp/a/$f")
  if [ "$n" -eq 500 ]; then ok; else bad "$f has $n lines, expected 500"; fi
done
# no sentence is shared between splits
shared=$(cat "$tmp/a/train.src" "$tmp/a/valid.src" "$tmp/a/test.src" | sort | uniq -d | wc -l)
if [ "$shared" -eq 0 ]; then ok; else bad "$shared source sentences occur twice"; fi
# every source line has a target line with 3..25 words
if awk 'NF < 3 || NF > 25 { exit 1 }' "$tmp/a/train.src" "$tmp/a/train.tgt"; then ok; else bad "lengths outside 3..25"; fi

# sizes and seed
run 0 "" "$NMT" demo-corpus --out "$tmp/c" --seed 7 --train 100 --valid 10 --test=20
n=$(wc -l < "$tmp/c/train.tgt"); [ "$n" -eq 100 ] && ok || bad "--train 100 gave $n lines"
n=$(wc -l < "$tmp/c/test.src"); [ "$n" -eq 20 ] && ok || bad "--test=20 gave $n lines"
run 0 "" "$NMT" demo-corpus --out "$tmp/d" --seed 8 --train 100 --valid 10 --test 20
if cmp -s "$tmp/c/train.src" "$tmp/d/train.src"; then bad "different seeds gave the same train.src"; else ok; fi

# gzip: reproducible bytes, same text
run 0 "" "$NMT" demo-corpus --out "$tmp/g1" --gzip --train 500
run 0 "" "$NMT" demo-corpus --out "$tmp/g2" --gzip --train 500
for f in $files; do
  if cmp -s "$tmp/g1/$f.gz" "$tmp/g2/$f.gz"; then ok; else bad "$f.gz differs between two runs"; fi
done
if gzip -dc "$tmp/g1/valid.tgt.gz" | cmp -s - "$tmp/a/valid.tgt"; then ok; else bad "gzip text differs from plain text"; fi

# errors: unwritable folder -> 1 naming the path; usage -> 2
echo x > "$tmp/file"
run 1 "$tmp/file" "$NMT" demo-corpus --out "$tmp/file/sub"
run 2 "unknown option '--bogus'" "$NMT" demo-corpus --out "$tmp/e" --bogus
run 2 "no output folder" "$NMT" demo-corpus
run 2 "--out needs a value" "$NMT" demo-corpus --out
run 2 "--train: expected an integer" "$NMT" demo-corpus --out "$tmp/e" --train lots
run 2 "--valid: expected an integer" "$NMT" demo-corpus --out "$tmp/e" --valid -5
run 2 "word range" "$NMT" demo-corpus --out "$tmp/e" --min-words 30 --max-words 20
if [ ! -e "$tmp/e" ]; then ok; else bad "a usage error must not write files"; fi

echo "test_demo_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
