#!/usr/bin/env bash
# test_plot_cli.sh: `nmt plot` end to end through the binary: --help, usage
# errors (exit 2), unreadable, empty, malformed and incomplete train.csv
# files (exit 1, the message naming FILE:LINE or the column), the default
# and --out outputs (also a symbolic link, a FIFO, a device node, a pipe
# through /proc/self/fd/1, a folder), well-formed XML (python3, skipped
# without it), the number of plotted points after a resume, extra columns
# ignored; --bars (a grouped bar chart of a TSV table: bars, missing
# values, errors).
# Uses $NMT_BIN (default: ./nmt next to this folder).
# Prints "test_plot_cli: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_plot_cli

HEADER="kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu"

# points NAME FILE: how many points the series NAME has in its polylines
points() {
  python3 - "$1" "$2" 2>/dev/null <<'EOF'
import sys, xml.dom.minidom
name, path = sys.argv[1], sys.argv[2]
doc = xml.dom.minidom.parse(path)
for g in doc.getElementsByTagName("g"):
    if g.getAttribute("class") != "series":
        continue
    t = g.getElementsByTagName("title")
    if not t or t[0].firstChild is None or t[0].firstChild.data != name:
        continue
    print(sum(len(p.getAttribute("points").split()) for p in g.getElementsByTagName("polyline")))
    sys.exit(0)
print("missing")
EOF
}

have_py=0
if command -v python3 >/dev/null 2>&1 && python3 -c 'import xml.dom.minidom' 2>/dev/null; then
  have_py=1
else
  echo "SKIP: python3 not found, XML checks skipped"
fi

# --help and usage errors
expect 0 "usage: nmt plot" "$NMT" plot --help
expect 2 "--run DIR is required" "$NMT" plot
expect 2 "unknown argument '--frobnicate'" "$NMT" plot --run "$tmp" --frobnicate
expect 2 "--run needs a value" "$NMT" plot --run
expect 2 "unknown argument 'stray'" "$NMT" plot --run "$tmp" stray

# runtime errors
expect 1 "$tmp/none/train.csv" "$NMT" plot --run "$tmp/none"
mkdir -p "$tmp/hdr" "$tmp/bad" "$tmp/nostep" "$tmp/nokind" "$tmp/run" "$tmp/resumed"
echo "$HEADER" > "$tmp/hdr/train.csv"
expect 1 "no rows to plot" "$NMT" plot --run "$tmp/hdr"
printf '%s\ntrain,100,0,5,,,,,,,\ntrain,200,0,4.5,,,,,,\n' "$HEADER" > "$tmp/bad/train.csv"
expect 1 "$tmp/bad/train.csv:3:" "$NMT" plot --run "$tmp/bad"
if [ ! -e "$tmp/bad/curves.svg" ]; then ok; else bad "an SVG was written for a malformed file"; fi
printf 'kind,epoch,loss\ntrain,0,5\n' > "$tmp/nostep/train.csv"
expect 1 "$tmp/nostep/train.csv: missing column 'step'" "$NMT" plot --run "$tmp/nostep"
printf 'step,loss\n100,5\n' > "$tmp/nokind/train.csv"
expect 1 "missing column 'kind'" "$NMT" plot --run "$tmp/nokind"

# a normal run: 30 log rows, 6 validations (one without BLEU), an extra column
{
  echo "$HEADER,note"
  for i in $(seq 1 30); do
    s=$((i * 100))
    loss=$(awk -v i="$i" 'BEGIN { printf "%.4f", 2 + 7 * exp(-i / 8) }')
    ppl=$(awk -v l="$loss" 'BEGIN { printf "%.4f", exp(l) }')
    echo "train,$s,0,$loss,$ppl,0.001,1.2,9000,9500,,,x"
    if [ $((i % 5)) -eq 0 ]; then
      vp=$(awk -v i="$i" 'BEGIN { printf "%.3f", 10 + 60 / i }')
      if [ "$i" -eq 10 ]; then echo "valid,$s,0,,,,,,,$vp,,"; else echo "valid,$s,0,,,,,,,$vp,$((i + 3)).5,"; fi
    fi
  done
} > "$tmp/run/train.csv"
expect 0 "wrote $tmp/run/curves.svg" "$NMT" plot --run "$tmp/run"
# the "wrote" line is a log line, on stderr like every command's: stdout stays empty
"$NMT" plot --run "$tmp/run" > "$tmp/plot.stdout" 2> /dev/null
check '[ $? -eq 0 ] && [ ! -s "$tmp/plot.stdout" ]' "nmt plot wrote to stdout: $(cat "$tmp/plot.stdout")"
if [ -s "$tmp/run/curves.svg" ]; then ok; else bad "curves.svg missing"; fi
if grep -q "Training loss" "$tmp/run/curves.svg" && grep -q "Validation BLEU" "$tmp/run/curves.svg"; then ok; else bad "panel titles"; fi
if grep -q "(log scale)" "$tmp/run/curves.svg"; then ok; else bad "perplexity should be on a log scale"; fi
expect 0 "" "$NMT" plot --run "$tmp/run" --out "$tmp/other.svg"
if cmp -s "$tmp/run/curves.svg" "$tmp/other.svg"; then ok; else bad "--out differs from the default output"; fi
expect 1 "$tmp/no/dir/x.svg" "$NMT" plot --run "$tmp/run" --out "$tmp/no/dir/x.svg"
# --out that is not a plain file (src/fileio.c): a symbolic link is followed
# and stays a link; a FIFO and a device node (made here, never /dev's) are
# written into and stay what they are; /proc/self/fd/1 (what /dev/stdout
# is) into a pipe carries the image alone (the "wrote" line is on stderr);
# a folder is refused naming it; no temporary file is left
mkdir -p "$tmp/outs/real"
ln -s real/linked.svg "$tmp/outs/link.svg"
expect 0 "wrote $tmp/outs/link.svg" "$NMT" plot --run "$tmp/run" --out "$tmp/outs/link.svg"
check '[ -L "$tmp/outs/link.svg" ] && cmp -s "$tmp/run/curves.svg" "$tmp/outs/real/linked.svg"' \
  "--out LINK: the link was replaced or its target not written"
mkfifo "$tmp/outs/fifo"
timeout 60 cat "$tmp/outs/fifo" > "$tmp/outs/from-fifo.svg" &
reader=$!
expect 0 "wrote $tmp/outs/fifo" timeout 60 "$NMT" plot --run "$tmp/run" --out "$tmp/outs/fifo"
wait "$reader"
check '[ -p "$tmp/outs/fifo" ] && cmp -s "$tmp/run/curves.svg" "$tmp/outs/from-fifo.svg"' \
  "--out FIFO: the FIFO was replaced or its reader did not get the image"
if mknod -m 666 "$tmp/outs/null" c 1 3 2>/dev/null; then
  expect 0 "wrote $tmp/outs/null" "$NMT" plot --run "$tmp/run" --out "$tmp/outs/null"
  check '[ -c "$tmp/outs/null" ]' "--out NULL-NODE: no longer a character device"
else
  echo "SKIP: mknod not permitted here: --out to a device node not checked"
fi
"$NMT" plot --run "$tmp/run" --out /proc/self/fd/1 2> "$tmp/outs/stderr" | cat > "$tmp/outs/piped.svg"
check 'cmp -s "$tmp/run/curves.svg" "$tmp/outs/piped.svg" && grep -q "wrote /proc/self/fd/1" "$tmp/outs/stderr"' \
  "--out /proc/self/fd/1 into a pipe: not the image alone"
expect 1 "$tmp/outs/real: is a directory" "$NMT" plot --run "$tmp/run" --out "$tmp/outs/real"
check '! ls -a "$tmp/outs" "$tmp/outs/real" | grep -q "\.tmp\."' "a temporary file was left in $tmp/outs"
if [ "$have_py" -eq 1 ]; then
  if python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" "$tmp/run/curves.svg"; then ok; else bad "curves.svg is not well-formed XML"; fi
  n=$(points "training loss" "$tmp/run/curves.svg"); [ "$n" = 30 ] && ok || bad "training loss has $n points, expected 30"
  n=$(points "validation" "$tmp/run/curves.svg"); [ "$n" = 6 ] && ok || bad "validation ppl has $n points, expected 6"
  n=$(points "validation BLEU" "$tmp/run/curves.svg"); [ "$n" = 5 ] && ok || bad "validation BLEU has $n points, expected 5"
fi

# a resumed run: 1..8 then resumed from 5 to 10 -> 10 loss points; the
# validation at 800 of the first run is replaced by the one of the second
{
  echo "$HEADER"
  for s in 100 200 300 400 500 600 700 800; do echo "train,$s,0,$((10 - s / 100)),,,,,,,"; done
  echo "valid,400,0,,,,,,,50,10"
  echo "valid,800,0,,,,,,,40,12"
  for s in 600 700 800 900 1000; do echo "train,$s,0,$((11 - s / 100)).5,,,,,,,"; done
  echo "valid,800,0,,,,,,,41,13"
} > "$tmp/resumed/train.csv"
expect 0 "" "$NMT" plot --run "$tmp/resumed"
if [ "$have_py" -eq 1 ]; then
  n=$(points "training loss" "$tmp/resumed/curves.svg"); [ "$n" = 10 ] && ok || bad "resumed loss has $n points, expected 10"
  n=$(points "validation BLEU" "$tmp/resumed/curves.svg"); [ "$n" = 2 ] && ok || bad "resumed BLEU has $n points, expected 2"
fi

# --bars: a grouped bar chart of a TSV table
printf 'variant\tBLEU:all\tBLEU:short\tBLEU:long\tspeed:tokens/s\n' > "$tmp/t.tsv"
printf 'none\t1.5\t2\t1\t9000\nluong-general\t30.25\t33\t25\t7000\nbroken\tfailed\tfailed\tfailed\tfailed\n' >> "$tmp/t.tsv"
expect 0 "wrote $tmp/t.svg (3 categories)" "$NMT" plot --bars "$tmp/t.tsv" --title "Attention ablation"
if grep -q ">Attention ablation</text>" "$tmp/t.svg" 2>/dev/null; then ok; else bad "bar chart title missing"; fi
n=$(grep -o '<rect class="bar"' "$tmp/t.svg" 2>/dev/null | wc -l)
[ "$n" -eq 8 ] && ok || bad "bar chart has $n bars, expected 8"
n=$(grep -o 'class="missing"' "$tmp/t.svg" 2>/dev/null | wc -l)
[ "$n" -eq 4 ] && ok || bad "bar chart has $n missing marks, expected 4"
expect 0 "wrote $tmp/bars.svg" "$NMT" plot --bars "$tmp/t.tsv" --out "$tmp/bars.svg"
if [ "$have_py" -eq 1 ]; then
  if python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" "$tmp/bars.svg"; then ok; else bad "bars.svg is not well-formed XML"; fi
fi
printf 'variant\tBLEU\nnone\t1\nx\tabc\n' > "$tmp/bad.tsv"
expect 1 "$tmp/bad.tsv:3: column 'BLEU': 'abc' is not a number" "$NMT" plot --bars "$tmp/bad.tsv"
if [ ! -e "$tmp/bad.svg" ]; then ok; else bad "an SVG was written for a malformed table"; fi
expect 1 "$tmp/none.tsv" "$NMT" plot --bars "$tmp/none.tsv"
expect 2 "exclude each other" "$NMT" plot --bars "$tmp/t.tsv" --run "$tmp/run"
expect 2 "--bars needs a value" "$NMT" plot --bars

test_end
