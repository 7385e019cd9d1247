#!/usr/bin/env bash
# test_cli.sh: the nmt command line: --help and --version, exit codes
# (0 ok, 1 runtime failure, 2 usage or config error), config errors that
# name the key or line and column, `nmt prepare` on a small corpus with its
# cache reuse, and docs/config.md matching `nmt config --doc`.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_cli
cd "$ROOT"

expect 0 "usage: nmt COMMAND" "$NMT" --help
expect 2 "usage: nmt COMMAND" "$NMT"
expect 2 "unknown command 'frobnicate'" "$NMT" frobnicate
expect 0 "blas: OpenBLAS" "$NMT" --version
expect 0 "cuda:" "$NMT" --version
# how libgomp's idle threads wait (src/cpu/cpu_env.h): libgomp's own unless
# the user chose (or OpenBLAS runs its own pthreads: passive, nmt's),
# shown with whose choice it is
# (each with the machine's own settings of these variables taken away)
clean_env=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u NMT_NO_REEXEC -u NMT_REEXEC)
wait_line=$("${clean_env[@]}" "$NMT" --version | grep '^openmp:')
check 'printf "%s" "$wait_line" | grep -qE "wait policy: (libgomp.s default|OMP_WAIT_POLICY=passive \(nmt.s default\))$"' \
  "the default wait is not in --version: $wait_line"
expect 0 "wait policy: GOMP_SPINCOUNT=5 (yours)" "${clean_env[@]}" GOMP_SPINCOUNT=5 "$NMT" --version
expect 0 "wait policy: OMP_WAIT_POLICY=active (yours)" "${clean_env[@]}" OMP_WAIT_POLICY=active "$NMT" --version
expect 0 "wait policy: OMP_WAIT_POLICY=passive (yours), GOMP_SPINCOUNT=7 (yours)" "${clean_env[@]}" OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=7 "$NMT" --version
expect 0 "wait policy: libgomp's default (NMT_NO_REEXEC is set)" "${clean_env[@]}" NMT_NO_REEXEC=1 "$NMT" --version
# whose the BLAS core type is: a user's OPENBLAS_CORETYPE is kept and named
# (the core OpenBLAS picks by itself here, asked for by name)
blas_line=$(env -u OPENBLAS_CORETYPE "$NMT" --version | grep '^blas:')
check '! printf "%s" "$blas_line" | grep -q "in the environment"' "no OPENBLAS_CORETYPE, yet: $blas_line"
own_core=$(printf '%s' "$blas_line" | sed -n 's/.*, core \([A-Za-z0-9]*\).*/\1/p')
expect 0 "core $own_core, from OPENBLAS_CORETYPE in the environment (" env OPENBLAS_CORETYPE="$own_core" "$NMT" --version
# an unknown name: OpenBLAS falls back to a core of its own choosing, which
# need not be the one it picks unasked (on a Sapphire Rapids it picked
# SkylakeX unasked but Cooperlake after an unknown name), so any name
expect 0 ", not the OPENBLAS_CORETYPE=Bogus asked for (" env OPENBLAS_CORETYPE=Bogus "$NMT" --version
check 'env OPENBLAS_CORETYPE=Bogus "$NMT" --version | grep -qE "^blas: .*, core [A-Za-z0-9]+, not the OPENBLAS_CORETYPE=Bogus asked for \("' \
  "the core in use should be named: $(env OPENBLAS_CORETYPE=Bogus "$NMT" --version | grep '^blas:')"
for cmd in train translate eval prepare gradcheck config demo-corpus plot; do
  expect 0 "usage: nmt $cmd" "$NMT" "$cmd" --help
done
expect 2 "unknown option '--bogus'" "$NMT" prepare --bogus
expect 2 "no config given" "$NMT" prepare
expect 2 "--config needs a file name" "$NMT" prepare --config
expect 1 "nope.json: cannot open" "$NMT" config --config "$tmp/nope.json"

printf '{"model": {\n  "hidden": 64,\n  "emb_dim" 32}}\n' > "$tmp/syntax.json"
expect 2 "syntax.json:3:13: JSON syntax error" "$NMT" config --config "$tmp/syntax.json"
echo '{"model": {"attention": {"window": 0}}}' > "$tmp/range.json"
expect 2 "model.attention.window: must be >= 1, got 0" "$NMT" config --config "$tmp/range.json"
expect 0 '"window":	3' "$NMT" config --config "$tmp/range.json" --set model.attention.window=3
expect 2 "model.hiden: unknown key (did you mean model.hidden?)" "$NMT" config --config "$tmp/range.json" --set model.hiden=3
expect 2 "expected KEY=VALUE" "$NMT" config --config "$tmp/range.json" --set model.hidden
echo '{"model": {"hidden": 64, "enc_hidden": 32, "attention": {"score": "dot"}}}' > "$tmp/dot.json"
expect 2 "got query 64 (model.hidden) and key 32 (model.enc_hidden)" "$NMT" config --config "$tmp/dot.json"
echo '{"train": {"optimiser": "adam"}}' > "$tmp/typo.json"
expect 2 "train.optimiser: unknown key (did you mean train.optimizer?)" "$NMT" config --config "$tmp/typo.json"
expect 2 "model.hidden: expected an integer" "$NMT" train --config "$tmp/dot.json" --set model.hidden='"x"'
# a whole number beyond an int: the range, and the value unrounded
echo '{}' > "$tmp/empty.json"
expect 2 "--set train.seed=2147483648: train.seed: must be in [0, 2147483647], got 2147483648" "$NMT" config --config "$tmp/empty.json" --set train.seed=2147483648
echo '{"model": {"hidden": 1e20}}' > "$tmp/huge.json"
expect 2 "huge.json: model.hidden: must be in [1, 65536], got 1e+20" "$NMT" config --config "$tmp/huge.json"
# numbers are checked as the model computes them, in single precision: a
# value that rounds onto an open bound would give NaN weights or a zero rate
expect 2 "train.adam_beta1: must be in [0, 1), got 0.99999999, which is 1 in single precision" "$NMT" config --config "$tmp/empty.json" --set train.adam_beta1=0.99999999
expect 2 "train.adam_eps: must be in (0, 1], got 1e-50, which is 0 in single precision" "$NMT" config --config "$tmp/empty.json" --set train.adam_eps=1e-50
expect 2 "train.lr: must be in (0, 1000], got 1e-320, which is 0 in single precision" "$NMT" config --config "$tmp/empty.json" --set train.lr=1e-320
expect 0 '"adam_beta2":	0.99999' "$NMT" config --config "$tmp/empty.json" --set train.adam_beta2=0.99999
expect 2 "data.spm_character_coverage: SentencePiece needs at least 0.98, got 0.95" "$NMT" config --config "$tmp/empty.json" --set data.spm_character_coverage=0.95
# ... but a word-tokenizer config (and a checkpoint of one) that holds such a value stays valid
expect 0 '"spm_character_coverage":	0.95' "$NMT" config --config "$tmp/empty.json" --set data.tokenizer=word --set data.spm_character_coverage=0.95
# the single-precision check is for the keys computed in single precision:
# clip_norm is a double (1e39 was refused as inf)
expect 0 '"clip_norm":	1e+39' "$NMT" config --config "$tmp/empty.json" --set train.clip_norm=1e39
expect 2 "train.clip_norm: must be a finite number" "$NMT" config --config "$tmp/empty.json" --set train.clip_norm=1e309
# a number nearer 0 than the smallest double (strtod reads 1e-400 as 0,
# which would turn subword sampling off without a word) is refused, in
# --set and in the file (naming its line and column); a zero written as
# 0e-999 is a zero, and text in a string is no number
expect 2 "--set data.spm_sample_alpha=1e-400: data.spm_sample_alpha: 1e-400 is nearer 0 than the smallest double, so it would read as 0" \
  "$NMT" config --config "$tmp/empty.json" --set data.spm_sample_alpha=1e-400
printf '{"data": {"tokenizer": "spm", "cache_dir": "c-1e-400",\n  "spm_sample_alpha": 1e-400}}\n' > "$tmp/tiny.json"
expect 2 "$tmp/tiny.json:2:23: 1e-400 is nearer 0 than the smallest double" "$NMT" config --config "$tmp/tiny.json"
expect 0 '"clip_norm":	0,' "$NMT" config --config "$tmp/empty.json" --set train.clip_norm=0.000e-999
expect 0 '"spm_sample_alpha":	4.94065645841247e-324' "$NMT" config --config "$tmp/empty.json" --set data.tokenizer=spm --set data.spm_sample_alpha=5e-324
# heads that do not divide the hidden size of dot scores: refused by the
# config check (before any data is prepared), naming the file
echo '{"model": {"hidden": 16, "attention": {"score": "dot", "heads": 3}}}' > "$tmp/heads.json"
expect 2 "heads.json: model.attention.heads: must divide model.hidden (16) for dot scores" "$NMT" config --config "$tmp/heads.json"
expect 0 '"heads":	4' "$NMT" config --config "$tmp/heads.json" --set model.attention.heads=4
# a section set to a value
expect 2 "--set model=3: model: is a section (an object), not a value; set model.KEY=VALUE" "$NMT" config --config "$tmp/empty.json" --set model=3
# --doc is the key reference alone: a config or --set with it is a usage error
expect 2 "--doc prints the reference of every key and takes no --config" "$NMT" config --config "$tmp/empty.json" --doc
expect 2 "--doc prints the reference of every key and takes no --set" "$NMT" config --doc --set train.lr=1
# a folder given as a file: the reason
mkdir -p "$tmp/somedir"
expect 1 "somedir: read error: Is a directory" "$NMT" config --config "$tmp/somedir"
expect 1 "somedir: read error: Is a directory" sh -c '"$0" translate --model "$1" < /dev/null' "$NMT" "$tmp/somedir"
# output that cannot be written (a full disk) is a failure, not exit 0 with
# a short or empty file: /dev/full, where the machine has one that fails
if [ -c /dev/full ] && ! (echo x > /dev/full) 2> /dev/null; then
  printf 'a b c\n' > "$tmp/abc.txt"
  expect 1 "nmt eval: standard output: write error" sh -c '"$0" eval --ref "$1" --hyp "$1" > /dev/full' "$NMT" "$tmp/abc.txt"
  expect 1 "nmt config: standard output: write error" sh -c '"$0" config --config "$1" > /dev/full' "$NMT" "$tmp/empty.json"
  expect 1 "nmt config: standard output: write error" sh -c '"$0" config --doc > /dev/full' "$NMT"
  expect 1 "nmt: standard output: write error" sh -c '"$0" --help > /dev/full' "$NMT"
  expect 1 "nmt eval: standard output: write error" sh -c '"$0" eval --help > /dev/full' "$NMT"
else
  echo "SKIP: no /dev/full that fails writes: the write-error checks"
fi

# docs/config.md holds exactly the generated reference
if "$NMT" config --doc > "$tmp/ref.md" && tail -n "$(wc -l < "$tmp/ref.md")" docs/config.md | cmp -s - "$tmp/ref.md"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: docs/config.md is out of date: regenerate its table with 'nmt config --doc'"
fi

# prepare: a small word-level corpus, then the cache is reused
for i in $(seq 1 300); do echo "a$((i % 13)) b$((i % 7)) c$((i % 5))"; done > "$tmp/train.src"
for i in $(seq 1 300); do echo "x$((i % 5)) y$((i % 7)) z$((i % 13))"; done > "$tmp/train.tgt"
cat > "$tmp/prep.json" <<JSON
{"data": {"train_src": "train.src", "train_tgt": "train.tgt", "tokenizer": "word", "cache_dir": "cache"}}
JSON
expect 0 "train: 300 pairs read, 300 kept" "$NMT" prepare --config "$tmp/prep.json"
expect 0 "is up to date" "$NMT" prepare --config "$tmp/prep.json"
expect 0 "written" "$NMT" prepare --config "$tmp/prep.json" --force
head -n 299 "$tmp/train.tgt" > "$tmp/short.tgt"
expect 1 "has 300 lines" "$NMT" prepare --config "$tmp/prep.json" --set data.train_tgt="$tmp/short.tgt"
expect 1 "has 299 lines" "$NMT" prepare --config "$tmp/prep.json" --set data.train_tgt="$tmp/short.tgt"
# nothing left to train a tokenizer on: the reason, naming the key or file
expect 2 "data.max_len = 1: all 300 training pairs (" "$NMT" prepare --config "$tmp/prep.json" --set data.max_len=1 --set data.cache_dir="$tmp/cache-len"
expect 2 "so the vocabulary would hold only the special tokens (the source vocabulary, of $tmp/train.src)" "$NMT" prepare --config "$tmp/prep.json" --set data.word_min_freq=100000 --set data.cache_dir="$tmp/cache-freq"
sed 's/.*//' "$tmp/train.tgt" > "$tmp/blank.tgt"
expect 1 "blank.tgt: every line of its 300 training pairs is empty: nothing to train the target tokenizer on" "$NMT" prepare --config "$tmp/prep.json" --set data.train_tgt="$tmp/blank.tgt" --set data.cache_dir="$tmp/cache-blank"
# a reader's error found before any word stays the error (it was hidden
# behind "every line ... is empty")
printf '\xff bad\nok\n' > "$tmp/bad1.src"
printf 'ok\nfine\n' > "$tmp/bad1.tgt"
expect 1 "bad1.src:1: invalid UTF-8 at byte 1" "$NMT" prepare --config "$tmp/prep.json" --set data.train_src="$tmp/bad1.src" --set data.train_tgt="$tmp/bad1.tgt" --set data.cache_dir="$tmp/cache-bad1"
printf 'ok\n\xff bad\n' > "$tmp/bad.src"
printf 'ok\nfine\n' > "$tmp/bad.tgt"
expect 1 "bad.src:2: invalid UTF-8 at byte 1" "$NMT" prepare --config "$tmp/prep.json" --set data.train_src="$tmp/bad.src" --set data.train_tgt="$tmp/bad.tgt"
# train prepares the data itself and prints the resolved config first
expect 0 "resolved config:" "$NMT" train --config "$tmp/prep.json" --set train.max_steps=2 --set model.hidden=16 --set model.emb_dim=8
expect 0 "gradients OK" "$NMT" gradcheck --config "$tmp/prep.json" --samples 4
expect 0 "gradients OK" "$NMT" gradcheck --config configs/de-en.json --samples 4 --set model.attention.mode=local-p
# its numbers are checked whole (atoi took '3x' as 3, strtoull 'abc' as 0)
expect 2 "--samples must be an integer >= 1, got '3x'" "$NMT" gradcheck --config "$tmp/prep.json" --samples 3x
expect 2 "--seed must be an integer in [0, 18446744073709551615], got 'abc'" "$NMT" gradcheck --config "$tmp/prep.json" --seed abc
expect 2 "--seed must be an integer in [0, 18446744073709551615], got '18446744073709551616'" \
  "$NMT" gradcheck --config "$tmp/prep.json" --seed 18446744073709551616
expect 0 "model: no attention;" "$NMT" gradcheck --config "$tmp/prep.json" --samples 2 --seed 18446744073709551615 \
  --set model.attention.style=none --set model.input_feed=false
expect 2 "unknown option '--bogus'" "$NMT" train --config "$tmp/prep.json" --bogus

# device selection: asking for cuda without a usable GPU is a config error naming the key
# (each into the save_dir of the run above: --overwrite starts afresh there)
if "$NMT" --version | grep -q -E "cuda: (not built in|built in, no GPU visible)"; then
  expect 2 "train.device: cuda requested" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.device=cuda --set train.max_steps=1
  expect 0 "resolved config" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.device=auto --set train.max_steps=1 --set model.hidden=16 --set model.emb_dim=8
  # a GPU other than 0 that cannot be used: an error naming train.gpu, also
  # with auto (docs/user-guide.md "GPU"); auto with GPU 0 trains on the CPU
  expect 2 "train.gpu 2: GPU 2 requested (train.device cuda), but" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.device=cuda --set train.gpu=2 --set train.max_steps=1
  expect 2 "train.gpu 2: GPU 2 requested (train.device auto), but" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.device=auto --set train.gpu=2 --set train.max_steps=1 --set model.hidden=16 --set model.emb_dim=8
  expect 2 "train.gpu 3: GPU 3 requested (train.device auto), but" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.gpu=3 --set train.max_steps=1 --set model.hidden=16 --set model.emb_dim=8
  expect 0 "device cpu" "$NMT" train --config "$tmp/prep.json" --overwrite --set train.device=auto --set train.gpu=0 --set train.max_steps=1 --set model.hidden=16 --set model.emb_dim=8
fi
expect 2 "train.gpu" "$NMT" train --config "$tmp/prep.json" --set train.gpu=-1 --set train.max_steps=1

test_end
