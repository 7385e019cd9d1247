#!/usr/bin/env bash
# run-tests.sh: runs every test program given on the command line (and the
# shell tests in tests/*.sh), adds up their "name: N passed, N failed" lines
# and ends with the total. A program that crashes or exits non-zero without
# reporting failures counts as one failure.
#
#   scripts/run-tests.sh [-j N] TEST...
#
# Tests run N at a time (-j N, else $NMT_TEST_JOBS, else one per core), in
# the order given: a test starts when a slot frees, so the slowest tests
# should come first (the Makefile's TEST_FIRST). Each test's output is kept
# apart and printed when it ends: its result line, ending with its wall
# time "(N s)", or, when it failed, its whole output. The total line comes
# last, after a line with the run's time and its three slowest tests (the
# suite should stay well under 30 minutes on 2 cores).
# Exit status: 0 only if all passed.
set -u
# the cores: GNU nproc counts OMP_NUM_THREADS and OMP_THREAD_LIMIT, which
# are the tests' threads, not the machine's cores
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)
jobs=${NMT_TEST_JOBS:-$cores}
if [ "${1:-}" = "-j" ]; then
  jobs=${2:-}
  shift 2 || shift
fi
case $jobs in
  '' | *[!0-9]* | 0) echo "run-tests.sh: -j / NMT_TEST_JOBS wants a number of tests at a time of at least 1, not '$jobs'" >&2; exit 2 ;;
esac
# Side by side, the tests share the cores: a test that leaves its thread
# count to the libraries (nmt's threads 0, PyTorch, OpenBLAS) gets
# cores / N of them, unless OMP_NUM_THREADS is set already. Two tests each
# running two OpenMP threads on two cores made each parallel loop wait for
# a thread the other test held: test_attention_gain took 584 s instead of
# 94 (2026-12-03). A test that asks for a number of threads gets it.
side_by_side=$((jobs < $# ? jobs : $#))
if [ -z "${OMP_NUM_THREADS:-}" ] && [ "$side_by_side" -gt 1 ]; then
  share=$((cores / side_by_side))
  export OMP_NUM_THREADS=$((share > 0 ? share : 1))
  export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS
fi
passed=0
failed=0
out=$(mktemp -d)
run_start=$SECONDS
# A signal stops the tests under way too, and whatever they started: each
# test runs in a process group of its own (see the loop below), which the
# signal goes to whole. Exit 128 + the signal's number.
stop() {
  local p
  for p in $(jobs -p); do kill -TERM -- "-$p" 2>/dev/null; done
  rm -rf "$out"
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM

# run_one I PROG: runs PROG with its output in $out/I.log; then writes its
# exit status and wall time to $out/I.done (last, so that a .done file
# means the test has ended)
run_one() {
  local start=$SECONDS rc
  case "$2" in
    *.sh) bash "$2" >"$out/$1.log" 2>&1 ;;
    *) "$2" >"$out/$1.log" 2>&1 ;;
  esac
  rc=$?
  echo "$rc $((SECONDS - start))" >"$out/$1.tmp"
  mv "$out/$1.tmp" "$out/$1.done"
}

# report I PROG: adds test I's counts to the totals and prints its line
report() {
  local log=$out/$1.log rc took line p f
  read -r rc took <"$out/$1.done"
  echo "$took $2" >>"$out/times"
  line=$(grep -E '^[A-Za-z0-9_./-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
  else
    p=0; f=0
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
    echo "---- $2 (exit $rc) ----"; cat "$log"; echo "----"
  else
    grep -E '^(SKIP|skip)' "$log" || true
    echo "${line:-$2: exit $rc} ($took s)"
  fi
}

progs=("$@")
reported=()
# report_ended: reports every test that has ended since the last call
report_ended() {
  local i
  for i in "${!progs[@]}"; do
    if [ -e "$out/$i.done" ] && [ -z "${reported[$i]:-}" ]; then
      report "$i" "${progs[$i]}"
      reported[$i]=1
    fi
  done
}
for i in "${!progs[@]}"; do
  while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do
    wait -n
  done
  report_ended
  # job control on for the fork only: the test's own process group (its
  # stdin /dev/null, as without job control)
  set -m
  run_one "$i" "${progs[$i]}" </dev/null &
  set +m
done
wait
report_ended
# a test whose runner was killed before it wrote its status
for i in "${!progs[@]}"; do
  if [ -z "${reported[$i]:-}" ]; then
    echo "0 ${progs[$i]}" >>"$out/times"
    echo "---- ${progs[$i]}: ended without a status ----"; cat "$out/$i.log" 2>/dev/null; echo "----"
    failed=$((failed + 1))
  fi
done
slowest=$(sort -rn "$out/times" 2>/dev/null | head -n 3 | awk '{ n = $2; sub(/.*\//, "", n); printf "%s%s %d s", (NR > 1 ? ", " : ""), n, $1 }')
rm -rf "$out"
echo "run-tests: $# tests in $((SECONDS - run_start)) s, $jobs at a time${OMP_NUM_THREADS:+ (OMP_NUM_THREADS=$OMP_NUM_THREADS)}; slowest: ${slowest:-none}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
