#!/usr/bin/env bash
# test_demo_cli.sh: `nmt demo-corpus` end to end: two runs give identical
# files (cmp), sizes and line counts, --seed, --gzip, exit codes and errors;
# a write that fails (file-size limit) leaves no partial file.
# Uses $NMT_BIN (default: ./nmt next to this folder).
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_demo_cli

files="train.src train.tgt valid.src valid.tgt test.src test.tgt"

expect 0 "usage: nmt demo-corpus" "$NMT" demo-corpus --help
expect 0 "" "$NMT" demo-corpus --out "$tmp/a"
expect 0 "" "$NMT" demo-corpus --out "$tmp/b/nested"
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
expect 0 "" "$NMT" demo-corpus --out "$tmp/c" --seed 7 --train 100 --valid 10 --test=20
n=$(wc -l < "$tmp/c/train.tgt"); [ "$n" -eq 100 ] && ok || bad "--train 100 gave $n lines"
n=$(wc -l < "$tmp/c/test.src"); [ "$n" -eq 20 ] && ok || bad "--test=20 gave $n lines"
expect 0 "" "$NMT" demo-corpus --out "$tmp/d" --seed 8 --train 100 --valid 10 --test 20
if cmp -s "$tmp/c/train.src" "$tmp/d/train.src"; then bad "different seeds gave the same train.src"; else ok; fi

# gzip: reproducible bytes, same text
expect 0 "" "$NMT" demo-corpus --out "$tmp/g1" --gzip --train 500
expect 0 "" "$NMT" demo-corpus --out "$tmp/g2" --gzip --train 500
for f in $files; do
  if cmp -s "$tmp/g1/$f.gz" "$tmp/g2/$f.gz"; then ok; else bad "$f.gz differs between two runs"; fi
done
if gzip -dc "$tmp/g1/valid.tgt.gz" | cmp -s - "$tmp/a/valid.tgt"; then ok; else bad "gzip text differs from plain text"; fi

# errors: unwritable folder -> 1 naming the path; usage -> 2
echo x > "$tmp/file"
expect 1 "$tmp/file" "$NMT" demo-corpus --out "$tmp/file/sub"
# a write that fails half-way (a file-size limit, the full disk of a test:
# SIGXFSZ ignored, so write() fails with EFBIG) exits 1 naming the file and
# leaves no partial file nor temporary file; a file of an earlier run stays
# as it was
"$NMT" demo-corpus --out "$tmp/full" --train 100 --valid 10 --test 10 > /dev/null 2>&1 || bad "demo-corpus"
cp "$tmp/full/train.src" "$tmp/train.src.before"
rm "$tmp/full/test.src"
expect 1 "$tmp/full/train.src: write failed" bash -c 'trap "" XFSZ; ulimit -f 64; exec "$@"' nmt \
  "$NMT" demo-corpus --out "$tmp/full" --seed 9
check 'cmp -s "$tmp/full/train.src" "$tmp/train.src.before"' "a failed demo-corpus changed train.src"
expect 1 "$tmp/limited/train.src: write failed" bash -c 'trap "" XFSZ; ulimit -f 64; exec "$@"' nmt \
  "$NMT" demo-corpus --out "$tmp/limited"
check '[ -d "$tmp/limited" ] && [ -z "$(ls -A "$tmp/limited")" ] && [ ! -e "$tmp/full/test.src" ]' \
  "a failed demo-corpus left files: $(ls -A "$tmp/limited" "$tmp/full" 2>&1 | tr '\n' ' ')"
check '! ls -A "$tmp/full" | grep -q "\.tmp\."' "a temporary file was left in $tmp/full"
expect 2 "unknown option '--bogus'" "$NMT" demo-corpus --out "$tmp/e" --bogus
expect 2 "no output folder" "$NMT" demo-corpus
expect 2 "--out needs a value" "$NMT" demo-corpus --out
expect 2 "--train: expected an integer" "$NMT" demo-corpus --out "$tmp/e" --train lots
expect 2 "--valid: expected an integer" "$NMT" demo-corpus --out "$tmp/e" --valid -5
expect 2 "word range" "$NMT" demo-corpus --out "$tmp/e" --min-words 30 --max-words 20
if [ ! -e "$tmp/e" ]; then ok; else bad "a usage error must not write files"; fi

test_end
