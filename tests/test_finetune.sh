#!/usr/bin/env bash
# test_finetune.sh: fine-tuning (train.init_from) end to end on two demo
# corpora: a fresh run starts from the checkpoint's weights (to the bit)
# with a new optimizer and schedule, encodes its new data with the
# checkpoint's tokenizers (the new checkpoints carry the same tokenizer
# bytes) and the checkpoint's tokenizer keys; its first loss is far below a
# run from scratch; model keys left out are the checkpoint's, stated ones
# must equal them but for dropout and init_range; prepare, shortlist and
# config see the same keys; a moving average is where it starts; a resumed
# fine-tuning run is exact; the cache follows the checkpoint file; a
# missing checkpoint or a pipe is named.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_finetune

"$NMT" demo-corpus --out "$tmp/data" --train 2000 --valid 40 --test 20 --seed 3 > /dev/null || bad "demo-corpus"
"$NMT" demo-corpus --out "$tmp/data2" --train 1000 --valid 40 --test 20 --seed 9 > /dev/null || bad "demo-corpus 2"
model='{"emb_dim": 16, "hidden": 24, "enc_layers": 1, "dec_layers": 1, "dropout": 0.1}'
demo_config "$tmp/base.json" "$model" \
  '{"lr": 0.01, "batch_sentences": 32, "max_steps": 150, "valid_every": 1000, "log_every": 1, "seed": 5,
    "threads": 1, "save_dir": "base"}' '{"beam": 1}'
# the new domain: its own corpus and cache, starting from base's last.nmt
sed -e 's|data/|data2/|g' -e 's|"cache"|"cache2"|' -e 's|"base"|"ft"|' \
    -e 's|"max_steps": 150|"max_steps": 20, "init_from": "base/last.nmt"|' "$tmp/base.json" > "$tmp/ft.json"
train() { # CONFIG DIR SETTINGS...: its output in out, exit status in rc
  local config=$1 dir=$2
  shift 2
  out=$("$NMT" train --config "$tmp/$config" --set train.save_dir="$tmp/$dir" "$@" 2>&1); rc=$?
}
first_loss() { grep '^train,1,' "$1/train.csv" | cut -d, -f4; }
cat > "$tmp/ckpt.py" <<'PY'
import array, struct, sys
def sections(path):
    data = open(path, "rb").read(); size = struct.unpack_from("<Q", data, 16)[0]; found, off = {}, 24
    while off < 24 + size:
        n = struct.unpack_from("<Q", data, off + 4)[0]; found[data[off:off + 4].decode()] = data[off + 12:off + 12 + n]; off += 12 + n
    return found
a, b = sections(sys.argv[2]), sections(sys.argv[3])
if sys.argv[1] == "tokenizers":  # A B: the same tokenizer bytes?
    print("same" if a["STOK"] == b["STOK"] and a["TTOK"] == b["TTOK"] else "differ")
else:  # weights A B: the largest |difference| of the model weights
    x, y = array.array("f", a["PARM"]), array.array("f", b["PARM"])
    print("%g" % max(abs(p - q) for p, q in zip(x, y)) if len(x) == len(y) else "sizes differ")
PY

train base.json base
check '[ $rc -eq 0 ] && [ -s "$tmp/base/last.nmt" ]' "base run: $rc $out"

# 1. fine-tuning: the checkpoint's tokenizers and weights, a new optimizer
train ft.json ft
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -qF "starting from the model of $tmp/base/last.nmt (step 150 of its run), with a new optimizer and schedule"' \
  "fine-tuning run: $rc $out"
check 'printf "%s" "$out" | grep -qF "prepare: the tokenizers of train.init_from ($tmp/base/last.nmt)"' "tokenizers taken: $out"
check '[ "$(python3 "$tmp/ckpt.py" tokenizers "$tmp/base/last.nmt" "$tmp/ft/last.nmt")" = same ]' \
  "the fine-tuned model should carry the base model's tokenizers"
check 'grep -q "^train,1,1," "$tmp/ft/train.csv"' "steps count from 1 again: $(head -3 "$tmp/ft/train.csv")"
train ft.json scratch --set train.init_from=
check '[ $rc -eq 0 ]' "the same run from scratch: $rc $out"
ft1=$(first_loss "$tmp/ft"); scratch1=$(first_loss "$tmp/scratch")
check 'awk -v a="$ft1" -v b="$scratch1" "BEGIN { exit !(a + 0 > 0 && a < b - 0.5) }"' \
  "the first loss of fine-tuning ($ft1) should be far below that from scratch ($scratch1)"
# the weights it starts from are the checkpoint's, to the bit (a rate of
# 1e-30 leaves them where they start)
train ft.json still --set train.lr=1e-30 --set train.max_steps=1
check '[ $rc -eq 0 ] && [ "$(python3 "$tmp/ckpt.py" weights "$tmp/base/last.nmt" "$tmp/still/last.nmt")" = 0 ]' \
  "after a step at rate 1e-30 the weights should be base's: $(python3 "$tmp/ckpt.py" weights "$tmp/base/last.nmt" "$tmp/still/last.nmt") $out"

# 2. the cache follows the checkpoint: up to date on a second run, rebuilt
# when the checkpoint file changes
train ft.json ft2 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "is up to date"' "second run on the same cache: $out"
touch "$tmp/base/last.nmt"
train ft.json ft3 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "train.init_from" && printf "%s" "$out" | grep -q "prepare: the tokenizers of train.init_from"' \
  "a changed checkpoint file should rebuild the cache, naming it: $out"

# 3. model keys: dropout and init_range may differ, the others not; the
# tokenizer keys are the checkpoint's (the resolved config says so)
train ft.json drop --set model.dropout=0.4 --set model.init_range=0.2 --set train.max_steps=1
check '[ $rc -eq 0 ]' "another dropout and init_range: $rc $out"
train ft.json hidden --set model.hidden=32 --set train.max_steps=1
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -qF "model.hidden: differs from the model of train.init_from ($tmp/base/last.nmt)"' \
  "another model.hidden: $rc $out"
check '[ ! -e "$tmp/hidden" ]' "a refused fine-tuning run should create nothing"
train ft.json spm --set data.tokenizer=spm --set data.spm_vocab_size=500 --set train.max_steps=1
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "the config.s data.tokenizer differed"' "a config asking for spm: $rc $out"
check 'grep -q "\"tokenizer\":[[:space:]]*\"word\"" "$tmp/spm/config.json" && grep -q "\"spm_vocab_size\":[[:space:]]*8000" "$tmp/spm/config.json"' \
  "the resolved config should hold the checkpoint's tokenizer keys: $(grep -E 'tokenizer|spm_vocab' "$tmp/spm/config.json")"

# model keys left out are the checkpoint's (a config without a model
# section: base's dropout 0.1, not the default 0.3); a stated window of
# global attention may differ (it has none)
grep -v '"model"' "$tmp/ft.json" > "$tmp/ft-nomodel.json"
train ft-nomodel.json nomodel --set train.max_steps=1
check '[ $rc -eq 0 ] && grep -q "\"dropout\":[[:space:]]*0.1," "$tmp/nomodel/config.json" && grep -q "\"hidden\":[[:space:]]*24," "$tmp/nomodel/config.json"' \
  "a config without a model section: $rc $out $(grep -E '"(dropout|hidden)"' "$tmp/nomodel/config.json")"
train ft.json window --set model.attention.window=3 --set train.max_steps=1
check '[ $rc -eq 0 ]' "another window of global attention: $rc $out"
# nmt prepare, nmt shortlist and nmt config take the same keys as training: no rebuild, the checkpoint's tokenizer
out=$("$NMT" prepare --config "$tmp/ft.json" --set data.tokenizer=spm 2>&1); rc=$?
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "is up to date"' "prepare after training, config asking for spm: $rc $out"
out=$("$NMT" shortlist --config "$tmp/ft.json" --set data.tokenizer=spm --out "$tmp/sl.tsv" 2>&1); rc=$?
check '[ $rc -eq 0 ] && ! printf "%s" "$out" | grep -q "stale"' "shortlist, config asking for spm: $rc $out"
out=$("$NMT" config --config "$tmp/ft.json" --set data.tokenizer=spm 2>/dev/null)
check 'printf "%s" "$out" | grep -q "\"tokenizer\":[[:space:]]*\"word\""' "nmt config should print the checkpoint's tokenizer: $(printf '%s' "$out" | grep tokenizer)"
# a pipe is refused (the checkpoint is read more than once)
train ft.json piped --set train.init_from=<(cat "$tmp/base/last.nmt")
check '[ $rc -eq 2 ] && printf "%s" "$out" | grep -q "not a regular file"' "init_from from a pipe: $rc $out"
# from a checkpoint with a moving average: its model is the average (PARM)
train base.json base-ema --set train.ema_decay=0.9 --set train.max_steps=20
train ft.json from-ema --set train.init_from="$tmp/base-ema/last.nmt" --set data.cache_dir="$tmp/cache-ema" \
  --set train.lr=1e-30 --set train.max_steps=1
check '[ $rc -eq 0 ] && [ "$(python3 "$tmp/ckpt.py" weights "$tmp/base-ema/last.nmt" "$tmp/from-ema/last.nmt")" = 0 ]' \
  "fine-tuning from a moving average should start from it: $rc $(python3 "$tmp/ckpt.py" weights "$tmp/base-ema/last.nmt" "$tmp/from-ema/last.nmt") $out"

# 4. resume is exact: 10 steps, then resume to 20, equals 20 steps
train ft.json half --set train.max_steps=10
train ft.json half --resume
check '[ $rc -eq 0 ] && cmp -s <(grep "^train," "$tmp/ft/train.csv" | cut -d, -f2,4) <(grep "^train," "$tmp/half/train.csv" | cut -d, -f2,4)' \
  "resumed fine-tuning differs: $rc $(diff <(grep '^train,' "$tmp/ft/train.csv" | cut -d, -f2,4) <(grep '^train,' "$tmp/half/train.csv" | cut -d, -f2,4) | head -4)"

# 5. a missing checkpoint is named; nmt prepare takes the tokenizers too
train ft.json gone --set train.init_from="$tmp/nowhere.nmt"
check '[ $rc -eq 1 ] && printf "%s" "$out" | grep -qF "train.init_from: $tmp/nowhere.nmt: cannot open"' "missing checkpoint: $rc $out"
out=$("$NMT" prepare --config "$tmp/ft.json" --force 2>&1); rc=$?
check '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "prepare: the tokenizers of train.init_from"' "nmt prepare with init_from: $rc $out"

test_end
