#!/usr/bin/env bash
# bt-multi30k.sh: the back-translation experiment of docs/results.md
# ("Back-translation") on Multi30k de->en, simulated: the first half of the
# training pairs is the parallel corpus, the English side of the second half
# is monolingual text. An en->de model trained on the first half translates
# that English into German (beam search), and three de->en runs of equal
# updates compare: the first half alone, with the back-translation as
# data.extra_src tagged <BT>, and untagged; and (steps bts, sampled) with
# a back-translation sampled among the 10 likeliest tokens, tagged; and
# (step full) with the second half's real German instead; and (steps both,
# bothhalf) with both back-translations as two untagged extra corpora, at
# data.extra_weight 1 and at 0.5 (a new half of each every epoch). Each
# run goes through
# scripts/quality-run.sh (checkpoint, beam and length penalty chosen on
# validation, test2016 scored once). See --help.
set -eu
set -o pipefail

usage() {
  cat <<'EOF'
usage: scripts/bt-multi30k.sh [--data DIR] [--out DIR] [--reverse-hours H] [--steps N]
                              [--threads N] [--only LIST]

  --data DIR           Multi30k's gzip files (default ../shared/data/multi30k)
  --out DIR            corpora, configs, caches and runs (default ../runs/bt)
  --reverse-hours H    the en->de model's training budget (default 0.5)
  --steps N            updates of each de->en run (default 4000)
  --threads N          threads of each run (default 1)
  --only LIST          the steps to run, of split,reverse,bt,half,tagged,untagged,
                       bts,sampled,full,both,bothhalf (default all, in that order)
EOF
}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NMT=${NMT_BIN:-$ROOT/nmt}
data=$ROOT/../shared/data/multi30k out=$ROOT/../runs/bt hours=0.5 steps=4000 threads=1
only=split,reverse,bt,half,tagged,untagged,bts,sampled,full,both,bothhalf
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reverse-hours) hours=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bt-multi30k: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
half=14500 # of Multi30k's 29,000 training pairs

if wants split; then
  zcat "$data/train.de.gz" | sed -n "1,${half}p" | gzip > "$out/para.de.gz"
  zcat "$data/train.en.gz" | sed -n "1,${half}p" | gzip > "$out/para.en.gz"
  zcat "$data/train.en.gz" | tail -n +$((half + 1)) | gzip > "$out/mono.en.gz"
  # configs/de-en.json with the half corpus (8000 pieces do not fit it: 5000)
  python3 - "$ROOT/configs/de-en.json" "$data" "$out" <<'PY'
import json, sys
base, data, out = sys.argv[1:]
def make(name, src, tgt, extra=None, tag="", train=None, weight=None):
    c = json.load(open(base))
    d = c["data"]
    train = train or f"{out}/para"
    d.update(train_src=f"{train}.{src}.gz", train_tgt=f"{train}.{tgt}.gz",
             valid_src=f"{data}/val.{src}.gz", valid_tgt=f"{data}/val.{tgt}.gz",
             test_src=f"{data}/test_2016_flickr.{src}.gz", test_tgt=f"{data}/test_2016_flickr.{tgt}.gz",
             spm_vocab_size=5000, cache_dir=f"{out}/cache/{name}")
    if extra:
        d.update(extra_src=extra[0], extra_tgt=extra[1], extra_tag=tag)
    if weight is not None:
        d.update(extra_weight=weight)
    c["train"]["save_dir"] = f"{out}/{name}"
    json.dump(c, open(f"{out}/{name}.json", "w"), indent=1)
make("en-de-half", "en", "de")
make("de-en-half", "de", "en")
bt = (f"{out}/mono.bt.de.gz", f"{out}/mono.en.gz")
make("de-en-bt-tagged", "de", "en", bt, "<BT>")
make("de-en-bt-untagged", "de", "en", bt, "")
make("de-en-bts-tagged", "de", "en", (f"{out}/mono.bts.de.gz", f"{out}/mono.en.gz"), "<BT>")
make("de-en-full", "de", "en", train=f"{data}/train")  # the real second half: the bound
both = ([f"{out}/mono.bt.de.gz", f"{out}/mono.bts.de.gz"], [f"{out}/mono.en.gz", f"{out}/mono.en.gz"])
make("de-en-bt2", "de", "en", both, "", weight=1)
make("de-en-bt2-half", "de", "en", both, "", weight=0.5)
PY
fi
run() { # NAME ARGS...: a quality run of $out/NAME.json
  local name=$1
  shift
  NMT_BIN=$NMT "$ROOT/scripts/quality-run.sh" --config "$out/$name.json" --threads "$threads" "$@"
}
wants reverse && run en-de-half --hours "$hours"
if wants bt; then # the back-translation: beam 5, the en->de run's best checkpoint
  zcat "$out/mono.en.gz" | "$NMT" translate --model "$out/en-de-half/best.nmt" --beam 5 --threads "$threads" \
    --no-progress | gzip > "$out/mono.bt.de.gz"
fi
if wants bts; then # sampled: each token among the 10 likeliest (Edunov et al. 2018)
  zcat "$out/mono.en.gz" | "$NMT" translate --model "$out/en-de-half/best.nmt" --sample 10 --seed 1 \
    --threads "$threads" --no-progress | gzip > "$out/mono.bts.de.gz"
fi
for name in half tagged untagged sampled full both bothhalf; do
  case $name in
    half) config=de-en-half ;;
    full) config=de-en-full ;;
    both) config=de-en-bt2 ;;
    bothhalf) config=de-en-bt2-half ;;
    sampled) config=de-en-bts-tagged ;;
    *) config=de-en-bt-$name ;;
  esac
  wants $name && run $config --hours 3 --set train.max_steps="$steps"
done
exit 0
