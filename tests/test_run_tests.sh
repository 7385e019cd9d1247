#!/usr/bin/env bash
# test_run_tests.sh: scripts/run-tests.sh, the runner of `make test`, on
# fake tests (tiny scripts in $tmp/t): the exit status (0 only when all
# passed; a failing, crashing, silently failing test or one whose result
# line has failures fails the run, named, with its whole output); the
# totals and the summary line; passing tests' lines (SKIP lines kept, other
# output not); -j N and NMT_TEST_JOBS: N tests side by side and no more
# (tests that meet through marker files, each waiting for the other), one
# at a time in the given order, bad values refused; the output of tests
# side by side not mixed; OMP_NUM_THREADS / OPENBLAS_NUM_THREADS as cores
# / min(N, tests) when unset (with a fake nproc of 8 cores), kept when
# set; SIGTERM and SIGINT: exit 143 and 130, the test under way stopped,
# the runner's folder removed.
set -u
. "$(dirname "$0")/lib.sh"
# (no test_begin: this test needs no nmt binary)
TEST_NAME=test_run_tests
tmp=$(mktemp -d)
if [ -n "${KEEP_TMP:-}" ]; then echo "tmp: $tmp (kept)"; else trap 'rm -rf "$tmp"' EXIT; fi

RUNNER=$ROOT/scripts/run-tests.sh
t=$tmp/t
mkdir -p "$t" "$tmp/bin" "$tmp/rt"
# the runner's cores: FAKE_NPROC, else 8 (whatever this machine has);
# like GNU nproc it says OMP_NUM_THREADS when that is set
printf '#!/bin/sh\necho "${OMP_NUM_THREADS:-${FAKE_NPROC:-8}}"\n' >"$tmp/bin/nproc"
chmod +x "$tmp/bin/nproc"

# ---- the fake tests; MARKS is a fresh folder for each run of the runner
cat >"$t/pass.sh" <<'EOF'
touch "$MARKS/pass.ran"
echo "chatter of pass.sh"
echo "pass: 3 passed, 0 failed"
EOF
# not a .sh: run as a program
printf '#!/bin/sh\necho "prog: 2 passed, 0 failed"\n' >"$t/prog"
chmod +x "$t/prog"
cat >"$t/skip.sh" <<'EOF'
echo "SKIP: no frobnicator here"
echo "skip: 0 passed, 0 failed"
EOF
cat >"$t/fail.sh" <<'EOF'
echo "fail: before"
echo "FAIL: marker of fail.sh"
echo "fail: 1 passed, 2 failed"
exit 1
EOF
cat >"$t/crash.sh" <<'EOF'
echo "crash: about to crash"
kill -SEGV $$
echo "crash: still here"
EOF
printf 'echo "quiet: nothing to say"\nexit 3\n' >"$t/quiet.sh"
printf 'echo "liar: 4 passed, 1 failed"\nexit 0\n' >"$t/liar.sh"
cat >"$t/omp.sh" <<'EOF'
echo "${OMP_NUM_THREADS-unset} ${OPENBLAS_NUM_THREADS-unset}" >"$MARKS/omp"
echo "omp: 1 passed, 0 failed"
EOF
# meet_X.sh (X: a, b; the other is Y): says it started, waits (up to 20 s)
# for Y to start, then prints LINES lines 0.05 s apart; fails unless Y
# started meanwhile (or, as inter_X.sh, always: its whole output printed)
meet() {
  cat >"$t/$1_$2.sh" <<EOF
touch "\$MARKS/$2.started"
for i in \$(seq 200); do [ -e "\$MARKS/$3.started" ] && break; sleep 0.1; done
for i in \$(seq $4); do echo "$1_$2 line \$i"; sleep 0.05; done
touch "\$MARKS/$2.ended"
if [ -e "\$MARKS/$3.started" ]; then echo "$1_$2: 1 passed, 0 failed"; exit $5; fi
echo "FAIL: $1_$3 did not start while $1_$2 ran"
echo "$1_$2: 0 passed, 1 failed"
exit 1
EOF
}
meet meet a b 0 0
meet meet b a 0 0
meet inter a b 6 1
meet inter b a 6 1
# third.sh: after meet_a and meet_b with -j 2: starts when one has ended
cat >"$t/third.sh" <<'EOF'
if [ -e "$MARKS/a.ended" ] || [ -e "$MARKS/b.ended" ]; then echo "third: 1 passed, 0 failed"; exit 0; fi
echo "FAIL: third started while meet_a and meet_b ran"
echo "third: 0 passed, 1 failed"
exit 1
EOF
# seq_a.sh, seq_b.sh: with one at a time, seq_b starts after seq_a ended
cat >"$t/seq_a.sh" <<'EOF'
touch "$MARKS/seq_a.started"
sleep 0.5
touch "$MARKS/seq_a.ended"
echo "seq_a: 1 passed, 0 failed"
EOF
cat >"$t/seq_b.sh" <<'EOF'
if [ -e "$MARKS/seq_a.ended" ]; then echo "seq_b: 1 passed, 0 failed"; exit 0; fi
echo "FAIL: seq_b started before seq_a ended"
echo "seq_b: 0 passed, 1 failed"
exit 1
EOF
cat >"$t/hang.sh" <<'EOF'
echo $$ >"$MARKS/hang.pid"
touch "$MARKS/hang.started"
exec sleep 60
EOF

# runner [VAR=VALUE...] -- ARGS...: scripts/run-tests.sh ARGS in a clean
# environment (no thread counts, no NMT_TEST_JOBS, the fake nproc) plus
# the VAR=VALUEs, for at most $limit s (default 60); its output in out,
# its exit status in rc, the fake tests' marks in M
runs=0
runner() {
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  runs=$((runs + 1))
  M=$tmp/marks$runs
  mkdir "$M"
  out=$(env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u OMP_THREAD_LIMIT -u NMT_TEST_JOBS \
    PATH="$tmp/bin:$PATH" TMPDIR="$tmp/rt" MARKS="$M" "${envs[@]}" timeout "${limit:-60}" bash "$RUNNER" "$@" 2>&1)
  rc=$?
}
# has TEXT: the runner's output holds the line TEXT
has() { printf '%s\n' "$out" | grep -qxF -- "$1"; }
# block PATH CODE: the lines of the runner's "---- PATH (exit CODE) ----" block
block() { printf '%s\n' "$out" | awk -v h="---- $1 (exit $2) ----" '$0 == h { on = 1; next } on && $0 == "----" { exit } on'; }
summary() { printf '%s\n' "$out" | grep '^run-tests: '; }
said() { printf '%s' "$out" | tail -n 25; }

# ---- 1. all pass: exit 0, the totals, each test's line, the summary
runner -- -j 2 "$t/pass.sh" "$t/prog" "$t/skip.sh"
check '[ $rc -eq 0 ]' "all passing: exit $rc: $(said)"
check '[ "$(printf "%s\n" "$out" | tail -n 1)" = "5 passed, 0 failed" ]' "all passing: the last line is not the total 5 passed: $(said)"
check 'has "SKIP: no frobnicator here"' "a passing test's SKIP line is not shown: $(said)"
for line in "pass: 3 passed, 0 failed" "prog: 2 passed, 0 failed" "skip: 0 passed, 0 failed"; do
  check 'printf "%s\n" "$out" | grep -qxE "$line \([0-9]+ s\)"' "no line '$line (N s)': $(said)"
done
check '! printf "%s" "$out" | grep -qF "chatter of pass.sh"' "a passing test's other output is shown: $(said)"
check 'summary | grep -qxE "run-tests: 3 tests in [0-9]+ s, 2 at a time \(OMP_NUM_THREADS=4\); slowest: (pass\.sh|prog|skip\.sh) [0-9]+ s(, (pass\.sh|prog|skip\.sh) [0-9]+ s){2}"' \
  "summary line of 3 tests, 2 at a time, on 8 cores: '$(summary)'"
check '[ -z "$(ls -A "$tmp/rt")" ]' "the runner left in its TMPDIR: $(ls -A "$tmp/rt")"

# ---- 2. failures: exit non-zero, named, whole output, counted
runner -- -j 2 "$t/pass.sh" "$t/fail.sh"
check '[ $rc -ne 0 ] && [ $rc -ne 124 ]' "a failing test: exit $rc: $(said)"
check '[ "$(block "$t/fail.sh" 1)" = "$(printf "fail: before\nFAIL: marker of fail.sh\nfail: 1 passed, 2 failed")" ]' \
  "the failing test is not named with its whole output: $(said)"
check 'has "4 passed, 2 failed"' "a failing test's counts are not in the total: $(said)"
check 'printf "%s\n" "$out" | grep -qxE "pass: 3 passed, 0 failed \([0-9]+ s\)"' "beside a failing test, the passing one's line is missing: $(said)"

runner -- -j 2 "$t/crash.sh" "$t/pass.sh"
check '[ $rc -ne 0 ] && [ $rc -ne 124 ]' "a test killed by SIGSEGV: exit $rc: $(said)"
check '[ "$(block "$t/crash.sh" 139)" = "crash: about to crash" ]' "the crashed test is not named with its output and exit 139: $(said)"
check 'has "3 passed, 1 failed"' "a crash does not count as one failure: $(said)"

runner -- -j 1 "$t/quiet.sh"
check '[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(block "$t/quiet.sh" 3)" = "quiet: nothing to say" ] && has "0 passed, 1 failed"' \
  "a test that exits 3 without a result line: exit $rc: $(said)"
runner -- -j 1 "$t/liar.sh"
check '[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(block "$t/liar.sh" 0)" = "liar: 4 passed, 1 failed" ] && has "4 passed, 1 failed"' \
  "a test that reports a failure but exits 0: exit $rc: $(said)"

# ---- 3. side by side: -j 2 runs two at a time (each of meet_a and meet_b
# waits for the other to start), and not three (third starts after one ended)
runner -- -j 2 "$t/meet_a.sh" "$t/meet_b.sh" "$t/third.sh"
check '[ $rc -eq 0 ]' "-j 2: exit $rc: $(said)"
check 'printf "%s\n" "$out" | grep -q "^meet_a: 1 passed, 0 failed (" && printf "%s\n" "$out" | grep -q "^meet_b: 1 passed, 0 failed ("' \
  "-j 2: meet_a and meet_b did not run side by side: $(said)"
check 'printf "%s\n" "$out" | grep -q "^third: 1 passed, 0 failed ("' "-j 2: a third test ran beside two: $(said)"
check 'summary | grep -q "^run-tests: 3 tests in [0-9]* s, 2 at a time "' "-j 2 summary: '$(summary)'"

# the output of tests side by side (inter_a, inter_b: 6 lines each, 0.05 s
# apart, both failing) comes out whole, each once
runner -- -j 2 "$t/inter_a.sh" "$t/inter_b.sh"
for x in a b; do
  y=$([ $x = a ] && echo b || echo a)
  want=$(for i in 1 2 3 4 5 6; do echo "inter_$x line $i"; done; echo "inter_$x: 1 passed, 0 failed")
  check '[ "$(block "$t/inter_$x.sh" 1)" = "$want" ]' "inter_$x's output is not one whole block: $(said)"
  check '[ "$(printf "%s\n" "$out" | grep -c "^inter_$x line")" -eq 6 ]' "inter_$x's lines are not printed once each: $(said)"
done

# -j 1: one at a time, in the given order
runner -- -j 1 "$t/seq_a.sh" "$t/seq_b.sh"
check '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -q "^seq_b: 1 passed, 0 failed ("' "-j 1: seq_b started before seq_a ended: $(said)"
check '[ "$(printf "%s\n" "$out" | grep -o "^seq_[ab]:" | tr -d "\n")" = "seq_a:seq_b:" ]' "-j 1: not reported in the given order: $(said)"
check 'summary | grep -qE "^run-tests: 2 tests in [0-9]+ s, 1 at a time; slowest: seq_[ab]\.sh [0-9]+ s, seq_[ab]\.sh [0-9]+ s$"' "-j 1 summary: '$(summary)'"

# ---- 4. bad -j and NMT_TEST_JOBS are refused, nothing run
refused() { echo "run-tests.sh: -j / NMT_TEST_JOBS wants a number of tests at a time of at least 1, not '$1'"; }
for j in 0 -1 x 2x ""; do
  limit=10 runner -- -j "$j" "$t/pass.sh"
  check '[ $rc -eq 2 ] && has "$(refused "$j")" && [ ! -e "$M/pass.ran" ]' \
    "-j '$j': exit $rc: $(said)"
done
runner -- -j
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "wants a number"' "-j without a number: exit $rc: $(said)"
for j in 0 x; do
  limit=10 runner NMT_TEST_JOBS=$j -- "$t/pass.sh"
  check '[ $rc -eq 2 ] && has "$(refused "$j")" && [ ! -e "$M/pass.ran" ]' \
    "NMT_TEST_JOBS=$j: exit $rc: $(said)"
done

# ---- 5. NMT_TEST_JOBS as -j; -j before it
runner NMT_TEST_JOBS=1 -- "$t/seq_a.sh" "$t/seq_b.sh"
check '[ $rc -eq 0 ] && summary | grep -q " 1 at a time; "' "NMT_TEST_JOBS=1: not one at a time: exit $rc: $(said)"
runner NMT_TEST_JOBS=2 -- "$t/meet_a.sh" "$t/meet_b.sh" "$t/third.sh"
check '[ $rc -eq 0 ] && summary | grep -q " 2 at a time (OMP_NUM_THREADS=4); "' "NMT_TEST_JOBS=2: not two at a time: exit $rc: $(said)"
runner NMT_TEST_JOBS=x -- -j 1 "$t/seq_a.sh" "$t/seq_b.sh"
check '[ $rc -eq 0 ] && summary | grep -q " 1 at a time; "' "-j 1 with NMT_TEST_JOBS=x: exit $rc: $(said)"
runner -- "$t/omp.sh" "$t/pass.sh" "$t/prog"
check '[ $rc -eq 0 ] && summary | grep -q "^run-tests: 3 tests in [0-9]* s, 8 at a time (OMP_NUM_THREADS=2); "' \
  "without -j or NMT_TEST_JOBS: not one per core (8): $(said)"

# ---- 6. thread counts: cores / min(jobs, tests) when unset, kept when set
check '[ "$(cat "$M/omp" 2>/dev/null)" = "2 2" ]' "8 cores, 3 tests, 8 at a time: OMP and OpenBLAS threads $(cat "$M/omp" 2>/dev/null), want 2 2"
runner OMP_NUM_THREADS=1 -- "$t/pass.sh" "$t/prog"
check '[ $rc -eq 0 ] && summary | grep -q " 8 at a time (OMP_NUM_THREADS=1); "' \
  "OMP_NUM_THREADS=1 (which GNU nproc says) took for the cores: $(said)"
omp_case() { # JOBS TESTS WANT [VAR=VALUE...]
  local j=$1 n=$2 want=$3 tests=("$t/omp.sh" "$t/pass.sh" "$t/prog" "$t/skip.sh")
  shift 3
  runner "$@" -- -j "$j" "${tests[@]:0:n}"
  check '[ $rc -eq 0 ] && [ "$(cat "$M/omp" 2>/dev/null)" = "$want" ]' \
    "-j $j, $n tests, $*: OMP and OpenBLAS threads $(cat "$M/omp" 2>/dev/null), want $want: $(said)"
}
omp_case 2 2 "4 4"
omp_case 4 2 "4 4"
omp_case 4 4 "2 2"
omp_case 2 2 "1 1" FAKE_NPROC=1
omp_case 2 2 "3 unset" OMP_NUM_THREADS=3
check 'summary | grep -q " 2 at a time (OMP_NUM_THREADS=3); "' "summary with OMP_NUM_THREADS=3: '$(summary)'"
omp_case 1 2 "unset unset"
omp_case 3 1 "unset unset"
check 'summary | grep -q "^run-tests: 1 tests in [0-9]* s, 3 at a time; "' "summary of one test alone: '$(summary)'"

# ---- 7. SIGTERM and SIGINT: exit 143 and 130, the test under way stopped, the runner's folder removed
# (the runner starts with job control on, so that SIGINT is not ignored
# in it as in a background job of a script)
for sig in TERM INT; do
  want=$([ $sig = TERM ] && echo 143 || echo 130)
  M=$tmp/marks-$sig
  mkdir "$M"
  set -m
  # --default-signal: a shell started in the background of a script (CI
  # under `nohup ... &`, say) ignores SIGINT, and bash can neither trap nor
  # reset a signal ignored when it starts; the runner gets SIGINT's default
  env --default-signal=INT -u OMP_NUM_THREADS -u NMT_TEST_JOBS PATH="$tmp/bin:$PATH" TMPDIR="$tmp/rt" MARKS="$M" \
    bash "$RUNNER" -j 1 "$t/hang.sh" >"$tmp/$sig.out" 2>&1 &
  runner_pid=$!
  set +m
  # the signal once the test is under way
  for i in $(seq 1200); do [ -e "$M/hang.started" ] && break; sleep 0.1; done
  check '[ -e "$M/hang.started" ]' "SIG$sig: the runner had not started hang.sh after 120 s"
  kill -$sig $runner_pid
  wait $runner_pid
  rc=$?
  check '[ $rc -eq $want ]' "SIG$sig: exit $rc, want $want: $(cat "$tmp/$sig.out")"
  check '[ -z "$(ls -A "$tmp/rt")" ]' "after SIG$sig the runner left in its TMPDIR: $(ls -A "$tmp/rt")"
  hang_pid=$(cat "$M/hang.pid" 2>/dev/null)
  for i in $(seq 50); do kill -0 "$hang_pid" 2>/dev/null || break; sleep 0.1; done
  check '[ -n "$hang_pid" ] && ! kill -0 "$hang_pid" 2>/dev/null' "the test under way ($hang_pid) outlived the runner's SIG$sig"
  [ -n "$hang_pid" ] && kill "$hang_pid" 2>/dev/null
done

test_end
