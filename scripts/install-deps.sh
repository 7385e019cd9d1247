#!/usr/bin/env bash
# install-deps.sh: installs, with apt-get, whatever nmt needs to build and
# test that is missing on this Debian/Ubuntu machine. Packages already
# present are left alone; nothing is installed when all are there.
# The CUDA toolkit is not installed here: when nvcc is on PATH, `make`
# builds the CUDA backend too.
#   --fuzz   also clang and its libFuzzer runtime, for `make fuzz` and
#            `make fuzz-smoke` (CI passes it). The sanitizer suite
#            (`make test SAN=1`) needs nothing more: gcc's ASan and UBSan
#            runtimes come with build-essential.
#   --torch  also Debian's PyTorch (python3-torch, about 400 MB): the
#            benchmarks' PyTorch side, and the PyTorch rows of
#            tests/test_gpu_check_dry.sh, which say they are unchecked
#            without it (CI passes it)
set -euo pipefail
fuzz=0
torch=0
for arg in "$@"; do
  case "$arg" in
    --fuzz) fuzz=1 ;;
    --torch) torch=1 ;;
    *) echo "usage: install-deps.sh [--fuzz] [--torch]" >&2; exit 2 ;;
  esac
done
packages=(build-essential pkg-config libcjson-dev libsentencepiece-dev sentencepiece
          zlib1g-dev libopenblas-dev libopenblas-openmp-dev python3)
[ $fuzz -eq 0 ] || packages+=(clang)
[ $torch -eq 0 ] || packages+=(python3-torch)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
updated=0
install() {
  echo "install-deps: installing $*"
  [ $updated -eq 1 ] || $sudo apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"

# libFuzzer: part of clang's compiler-rt, which Debian 12 ships apart
# (libclang-rt-dev, only recommended by clang); older releases put it in
# libclang-common-N-dev, which clang depends on.
has_libfuzzer() {
  local f
  f=$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a" 2>/dev/null) && [ -f "$f" ]
}
if [ $fuzz -eq 1 ] && ! has_libfuzzer; then
  install libclang-rt-dev
  has_libfuzzer || { echo "install-deps: clang's libFuzzer runtime is still missing" >&2; exit 1; }
fi
