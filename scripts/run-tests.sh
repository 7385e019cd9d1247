#!/usr/bin/env bash
# run-tests.sh: runs every test program given on the command line (and the
# shell tests in tests/*.sh), adds up their "name: N passed, N failed" lines
# and ends with the total. A program that crashes or exits non-zero without
# reporting failures counts as one failure. Each test's line ends with its
# wall time, "(N s)", and the total line with the whole run's and the three
# slowest tests (the suite should stay well under 30 minutes on 2 cores).
# Exit status: 0 only if all passed.
set -u
passed=0
failed=0
times=$(mktemp)
run_start=$SECONDS
for prog in "$@"; do
  log=$(mktemp)
  start=$SECONDS
  case "$prog" in
    *.sh) bash "$prog" >"$log" 2>&1 ;;
    *) "$prog" >"$log" 2>&1 ;;
  esac
  rc=$?
  took=$((SECONDS - start))
  echo "$took $prog" >>"$times"
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
    echo "---- $prog (exit $rc) ----"; cat "$log"; echo "----"
  else
    grep -E '^(SKIP|skip)' "$log" || true
    echo "${line:-$prog: exit $rc} ($took s)"
  fi
  rm -f "$log"
done
slowest=$(sort -rn "$times" | head -n 3 | awk '{ n = $2; sub(/.*\//, "", n); printf "%s%s %d s", (NR > 1 ? ", " : ""), n, $1 }')
rm -f "$times"
echo "run-tests: $# tests in $((SECONDS - run_start)) s; slowest: ${slowest:-none}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
