#!/usr/bin/env bash
# test.sh: the whole test suite on a fresh Debian/Ubuntu machine: installs
# missing packages, builds (with -Werror when WERROR=1), runs `make test`.
# Ends with the line "N passed, N failed"; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -j"$(nproc)" WERROR="${WERROR:-0}" nmt
make -j"$(nproc)" WERROR="${WERROR:-0}" test
