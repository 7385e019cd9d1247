# tests/gpu_emu/lib.sh: what the emulator's shell tests (tests/test_gpu_emu*.sh)
# share. Source it after tests/lib.sh's test_begin:
#
#   . "$ROOT/tests/gpu_emu/lib.sh"
#   emu_make test_gpu_parity nmt        # $EMU_DIR/test_gpu_parity, $EMU_DIR/nmt
#   emu_mk gpu-emu-check > "$tmp/log"   # any other make target, in the same build
#   parity_run "the slot tests in reverse order" "$tmp/rev.log" EMU_SCHEDULE=reverse ...
#
# The emulated programs are built in the build of the binary under test
# (NMT_BUILD, set by `make test`; else build/), as mk/gpu.mk's targets.
# `make test` builds them before any test starts (mk/gpu.mk), because the
# tests run side by side (scripts/run-tests.sh) and two makes writing the
# same files would race; emu_make then finds them up to date, and builds
# them when a test is run alone.

EMU_BUILD=${NMT_BUILD:-$ROOT/build}
EMU_DIR=$EMU_BUILD/gpu-emu

# emu_mk TARGET...: make in $EMU_BUILD with the CUDA setting of the build
# under test ($NMT_CUDA, from `make test`)
emu_mk() {
  make -s -C "$ROOT" BUILD="$EMU_BUILD" ${NMT_CUDA:+CUDA=$NMT_CUDA} "$@"
}

# emu_make PROGRAM...: makes mk/gpu.mk's emulated PROGRAMs ($EMU_DIR/PROGRAM);
# the output in $tmp/emu-make.log. Fails the test (and ends it) when one
# does not build.
emu_make() {
  if ! emu_mk "${@/#/$EMU_DIR/}" > "$tmp/emu-make.log" 2>&1; then
    tail -20 "$tmp/emu-make.log"
    bad "make $* did not build (see above)"
    test_end
    exit
  fi
}

# add_counts LOG PROGRAM WHAT: adds the "PROGRAM: N passed, M failed" line
# of LOG to this test's counts (prints it, and LOG's FAIL lines when M > 0),
# or fails when PROGRAM did not report
add_counts() {
  local line p f
  line=$(grep -E "^$2: [0-9]+ passed, [0-9]+ failed" "$1" | tail -1)
  if [ -z "$line" ]; then
    tail -5 "$1"
    bad "$3 did not report (see above)"
    return
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed.*/\1/')
  pass=$((pass + p))
  fail=$((fail + f))
  [ "$f" -eq 0 ] || grep -E 'FAIL|emulator|deadlock' "$1" | head -20
  echo "$3: $line"
}

# parity_run WHAT LOG [NAME=VALUE...]: the emulated parity test
# ($EMU_DIR/test_gpu_parity, made by emu_make) with the settings, its
# output in LOG; its counts added to this test's
parity_run() {
  local what=$1 log=$2
  shift 2
  env "$@" "$EMU_DIR/test_gpu_parity" > "$log" 2>&1
  add_counts "$log" test_gpu_parity "$what"
}
