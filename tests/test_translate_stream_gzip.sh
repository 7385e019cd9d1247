#!/usr/bin/env bash
# test_translate_stream_gzip.sh: `nmt translate --stream` with gzip on
# standard input, driven as a coprocess (python3, pipes) like
# test_translate_stream.sh and with the same tiny model: each line is
# written as one zlib.compressobj(wbits=31) write ended by a Z_SYNC_FLUSH
# (so every byte of the line can be inflated at once) and is answered
# before the next is sent, byte for byte as a --batch 1 translation of the
# plain lines; half a line waits for its newline without a busy wait; the
# last line, without a newline, is answered at the end (Z_FINISH, then the
# pipe closed). The two ways the old readiness check went wrong:
#  - a line followed by the first part of a long line whose compressed bytes
#    outrun one read (64 KiB): poll found the rest waiting on the descriptor
#    and the check said "ready", the read then waited for the long line's
#    newline and the answer to the complete line was held back (a hang for
#    a writer that waits for it; the writer here stops the process while it
#    writes, so that the bytes are there whatever the scheduling);
#  - a burst of lines, each its own gzip member, in one write: the members
#    after the first sat in the reader's buffer of compressed bytes, unseen
#    by poll, so the lines were decoded one at a time, not as one block (the
#    n-best scores tell them apart).
# A corrupt or truncated gzip stream after an answered line ends with the
# reader's error. No answer is waited for longer than $WAIT s (20); then
# the process is killed and the check fails: the test never hangs.
# Prints "test_translate_stream_gzip: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_translate_stream_gzip
cd "$ROOT" || exit 2

# the tiny model both stream tests drive, and $tmp/lines.src
. "$ROOT/tests/stream_setup.sh"
# three lines (not the empty one), then one of 200000 characters (random words: about 120 KiB
# compressed; translate truncates it to --max-src-len tokens)
python3 - "$tmp/lines.src" > "$tmp/long.src" <<'PY'
import random, sys
src = open(sys.argv[1], encoding="utf-8").read().split("\n")
rng = random.Random(5)
words = []
while sum(len(w) + 1 for w in words) < 200000:
    words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
print("\n".join(src[:2] + src[3:4] + [" ".join(words)]))
PY

cat > "$tmp/drive.py" <<'PY'
# drive.py SCENARIO LINES REF CMD...: runs CMD (nmt translate ... --stream)
# with pipes, writes LINES to it as gzip and prints one "PASS what" or
# "FAIL what" line per check ("NOTE what": information;
# tests/stream_driver.py).
import fcntl, gzip, os, signal, subprocess, sys, zlib
sys.path.insert(0, os.environ["TESTS"])
from stream_driver import Driver, line_at_a_time

scenario, lines_path, ref_path, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
src = open(lines_path, encoding="utf-8").read().split("\n")[:-1]
ref = open(ref_path, encoding="utf-8").read().split("\n")[:-1]
per = int(os.environ.get("PER", "1"))  # output lines per input line (--nbest)
err_path = os.environ["ERR"]

proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=open(err_path, "w"), bufsize=0)
in_fd = proc.stdin.fileno()
comp = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip wrapper

def write(b):
    view = memoryview(b)
    while len(view):
        view = view[os.write(in_fd, view):]

def send(text):
    """text (UTF-8) as deflate data and a sync flush, in one write."""
    write(comp.compress(text.encode()) + comp.flush(zlib.Z_SYNC_FLUSH))

def close_input(finish=True):
    if finish: write(comp.flush(zlib.Z_FINISH))
    proc.stdin.close()

d = Driver(proc, ref, send, close_input, per=per, wait_s=float(os.environ.get("WAIT", "20")), err_path=err_path)

try:
    if scenario == "sync":  # a sync-flushed line at a time, as test_translate_stream's "stream"
        line_at_a_time(d, src, "sync")
    elif scenario == "long-half":  # a line, then most of a long line in the same write
        for k in range(2):
            send(src[k] + "\n")
            d.answer(k, "long-half")
        long_line = src[3]
        cut = len(long_line) - 1000
        data = comp.compress((src[2] + "\n" + long_line[:cut]).encode()) + comp.flush(zlib.Z_SYNC_FLUSH)
        # the whole write in the pipe before the process reads any of it
        size = 0
        try:
            size = fcntl.fcntl(in_fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError as e:
            print("NOTE long-half: F_SETPIPE_SZ: %s" % e, flush=True)
        stopped = size > len(data)
        if stopped:
            d.wait_idle("long-half")
            os.kill(proc.pid, signal.SIGSTOP)
        else:
            print("NOTE long-half: pipe of %d bytes: the bytes arrive as the process reads" % size, flush=True)
        write(data)
        if stopped: os.kill(proc.pid, signal.SIGCONT)
        d.report(len(data) > 65536, "long-half: %d compressed bytes, not more than one read" % len(data))
        d.answer(2, "a line followed by most of a long line")
        send(long_line[cut:] + "\n")
        d.answer(3, "the long line")
        close_input()
        d.finish("long-half")
    elif scenario == "split":  # a line, then at once (a second write) the start of the next
        send(src[0] + "\n")
        for k in range(9):
            send(src[k + 1][:3])
            d.answer(k, "a line, then the start of the next in a second write")
            send(src[k + 1][3:] + "\n")
        d.answer(9, "split")
        close_input()
        d.finish("split")
    elif scenario == "members":  # one gzip member per line, one line at a time
        for k in range(4):
            write(gzip.compress((src[k] + "\n").encode(), mtime=0))
            d.answer(k, "members")
        close_input(finish=False)
        d.finish("members")
    elif scenario in ("burst-members", "burst-sync"):  # every line in one write, then a pause
        if scenario == "burst-members":
            data = b"".join(gzip.compress((l + "\n").encode(), mtime=0) for l in src)
        else:
            data = comp.compress("".join(l + "\n" for l in src).encode()) + comp.flush(zlib.Z_SYNC_FLUSH)
        write(data)
        got = d.read_lines(len(ref))
        d.report(got == ref, "%s: got %r, want the block's %r" % (scenario, got, ref))
        if got is None: d.stop(scenario)
        close_input(finish=scenario == "burst-sync")
        d.finish(scenario)
    elif scenario in ("corrupt", "truncated"):  # an answered line, then bad gzip
        send(src[0] + "\n")
        d.answer(0, scenario)
        if scenario == "corrupt":
            write(b"\xff\xff\xff\xff")  # a deflate block of the reserved type 3
            close_input(finish=False)
            d.finish(scenario, 1, "standard input: corrupt gzip data (invalid block type)")
        else:
            close_input(finish=False)  # no last block, no trailer
            d.finish(scenario, 1, "standard input: truncated gzip file (unexpected end of compressed data)")
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
sys.exit(0)
PY

# drive SCENARIO LINES REF CMD...: the checks of drive.py counted here (the
# whole driver is stopped after 300 s, whatever it waits for)
drive() {
  local line
  while IFS= read -r line; do
    case $line in
      PASS*) ok ;;
      FAIL*) bad "${line#FAIL }" ;;
      NOTE*) echo "$line" ;;
      *) bad "drive.py: $line" ;;
    esac
  done < <(TESTS="$ROOT/tests" ERR="$tmp/drive.err" timeout -k 5 300 python3 "$tmp/drive.py" "$@" 2>&1 || echo "drive.py $1: exit $?")
}

# reference: the same lines, plain, one at a time (--batch 1)
ref() { # ref IN OUT ARGS...
  local in=$1 f=$2
  shift 2
  "$NMT" translate --model "$M" --batch 1 "$@" < "$in" > "$f" 2> "$tmp/ref.err" || bad "reference $*: $(cat "$tmp/ref.err")"
}

ref "$tmp/lines.src" "$tmp/plain.ref"
check '[ $(wc -l < "$tmp/plain.ref") -eq 10 ] && [ $(sort -u "$tmp/plain.ref" | wc -l) -ge 6 ]' \
  "reference translations not varied enough: $(cat "$tmp/plain.ref")"
ref "$tmp/long.src" "$tmp/long.ref"

# 1. sync-flushed lines, each answered before the next; half lines; the end
drive sync "$tmp/lines.src" "$tmp/plain.ref" "$NMT" translate --model "$M" --stream
# 2. a line answered while the compressed bytes of a long line's start wait
drive long-half "$tmp/long.src" "$tmp/long.ref" "$NMT" translate --model "$M" --stream
# 2b. the same with the start of the next line in a write of its own, sent
# at once (whether it comes before the reader looks is up to the scheduler)
drive split "$tmp/lines.src" "$tmp/plain.ref" "$NMT" translate --model "$M" --stream
# 3. a gzip member per line (gzip.compress each), each answered before the next
drive members "$tmp/lines.src" "$tmp/plain.ref" "$NMT" translate --model "$M" --stream
# 4. bursts are decoded as one block: n-best scores of the block, not of --batch 1
"$NMT" translate --model "$M" --beam 3 --nbest 2 < "$tmp/lines.src" > "$tmp/nbest-block.ref" 2> "$tmp/ref.err" ||
  bad "block reference: $(cat "$tmp/ref.err")"
ref "$tmp/lines.src" "$tmp/nbest.ref" --beam 3 --nbest 2
check '! cmp -s "$tmp/nbest-block.ref" "$tmp/nbest.ref"' "the n-best scores of one block equal those of --batch 1: the burst checks prove nothing"
PER=2 drive burst-members "$tmp/lines.src" "$tmp/nbest-block.ref" "$NMT" translate --model "$M" --stream --beam 3 --nbest 2
PER=2 drive burst-sync "$tmp/lines.src" "$tmp/nbest-block.ref" "$NMT" translate --model "$M" --stream --beam 3 --nbest 2
# 5. a corrupt or truncated stream after an answered line: the reader's errors
drive corrupt "$tmp/lines.src" "$tmp/plain.ref" "$NMT" translate --model "$M" --stream
drive truncated "$tmp/lines.src" "$tmp/plain.ref" "$NMT" translate --model "$M" --stream

# 6. --stream with a regular gzip file: the default's whole blocks
gzip -c "$tmp/data/test.src" > "$tmp/test.src.gz"
"$NMT" translate --model "$M" --beam 5 --nbest 5 < "$tmp/test.src.gz" > "$tmp/file.hyp" 2> "$tmp/file.err" || bad "gzip file: $(cat "$tmp/file.err")"
"$NMT" translate --model "$M" --beam 5 --nbest 5 --stream < "$tmp/test.src.gz" > "$tmp/file-stream.hyp" 2> "$tmp/file.err" ||
  bad "gzip file --stream: $(cat "$tmp/file.err")"
check '[ $(wc -l < "$tmp/file.hyp") -eq 200 ] && cmp -s "$tmp/file.hyp" "$tmp/file-stream.hyp"' "--stream on a regular gzip file changed the output"

test_end
