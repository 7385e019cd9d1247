#!/usr/bin/env bash
# demo.sh: the main job, end to end, on a fresh Debian/Ubuntu machine:
# installs missing packages, builds nmt, writes the generated demo corpus,
# trains configs/demo.json on the CPU (about a minute on 2 cores once built), translates
# the demo test set and prints its BLEU and chrF (sacreBLEU-compatible).
# Run again, it trains afresh: --overwrite replaces the earlier runs/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -j"$(nproc)" nmt
./nmt --version
./nmt demo-corpus --out data/demo
./nmt train --config configs/demo.json --overwrite
./nmt translate --config configs/demo.json < data/demo/test.src > data/demo/test.hyp
./nmt plot --run runs/demo
echo "demo: translations in data/demo/test.hyp, curves in runs/demo/curves.svg"
./nmt eval --bleu --chrf --ref data/demo/test.tgt --hyp data/demo/test.hyp
