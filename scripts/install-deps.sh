#!/usr/bin/env bash
# install-deps.sh: installs, with apt-get, whatever nmt needs to build and
# test that is missing on this Debian/Ubuntu machine. Packages already
# present are left alone; nothing is installed when all are there.
# The CUDA toolkit is not installed here: when nvcc is on PATH, `make`
# builds the CUDA backend too.
set -euo pipefail
packages=(build-essential pkg-config libcjson-dev libsentencepiece-dev sentencepiece
          zlib1g-dev libopenblas-dev libopenblas-openmp-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
