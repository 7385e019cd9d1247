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
# "FAIL what" line per check ("NOTE what": information).
import fcntl, gzip, os, select, signal, subprocess, sys, time, zlib

scenario, lines_path, ref_path, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
src = open(lines_path, encoding="utf-8").read().split("\n")[:-1]
ref = open(ref_path, encoding="utf-8").read().split("\n")[:-1]
per = int(os.environ.get("PER", "1"))  # output lines per input line (--nbest)
wait_s = float(os.environ.get("WAIT", "20"))
err_path = os.environ["ERR"]
failed = 0

def report(ok, what):
    global failed
    failed += not ok
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    return ok

proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=open(err_path, "w"), bufsize=0)
in_fd, out_fd, pending = proc.stdin.fileno(), proc.stdout.fileno(), b""
comp = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip wrapper

def stop(what):
    """Ends the run after a failed wait: the rest would wait as long."""
    proc.kill()
    proc.wait()
    print("FAIL %s: stopped (the process was killed)" % what, flush=True)
    sys.exit(0)

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

def read_lines(n):
    """n output lines, or None when they do not come within wait_s s."""
    global pending
    end = time.time() + wait_s
    while pending.count(b"\n") < n:
        ready, _, _ = select.select([out_fd], [], [], max(0.0, end - time.time()))
        if not ready: return None
        got = os.read(out_fd, 65536)
        if not got: return None
        pending += got
    lines = pending.split(b"\n")
    pending = b"\n".join(lines[n:])
    return [l.decode("utf-8") for l in lines[:n]]

def answer(k, what):
    got = read_lines(per)
    want = ref[k * per:(k + 1) * per]
    if got is None:
        report(False, "%s: no answer to line %d within %g s (held back: the reader "
               "waits for more input while a whole line is there)" % (what, k + 1, wait_s))
        stop(what)
    report(got == want, "%s: answer to line %d: got %r, want %r" % (what, k + 1, got, want))

def nothing_written():
    ready, _, _ = select.select([out_fd], [], [], 0)
    return not ready and not pending

def stat():
    """(state, CPU ticks of all threads) of the process."""
    with open("/proc/%d/stat" % proc.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])

def wait_idle(what):
    """Waits until the process sleeps (no CPU spent for 0.6 s)."""
    end, last, calm = time.time() + 60, None, 0
    while time.time() < end:
        s = stat()
        calm = calm + 1 if s[0] == "S" and s == last else 0
        if calm >= 6: return True
        last = s
        time.sleep(0.1)
    return report(False, what + ": the process never went idle")

def finish(what, want_rc=0, want_err=None):
    """The output ends with the answers; the exit status (and message)."""
    global pending
    end = time.time() + wait_s
    while True:
        ready, _, _ = select.select([out_fd], [], [], max(0.0, end - time.time()))
        if not ready:
            report(False, what + ": the output did not end")
            stop(what)
        got = os.read(out_fd, 65536)
        if not got: break
        pending += got
    report(pending == b"", what + ": output beyond the answers: %r" % pending)
    try:
        rc = proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -1
    report(rc == want_rc, "%s: exit status %d, want %d" % (what, rc, want_rc))
    if want_err is not None:
        err = open(err_path, encoding="utf-8", errors="replace").read()
        report(want_err in err, "%s: %r not in the error output %r" % (what, want_err, err[-300:]))

try:
    if scenario == "sync":  # a sync-flushed line at a time, as test_translate_stream's "stream"
        for k in range(5):
            send(src[k] + "\n")
            answer(k, "sync")
        half = len(src[5]) // 2
        send(src[5][:half])  # half a line: no answer, no busy wait
        if wait_idle("half line"):
            report(nothing_written(), "half a line was answered before its newline: %r" % pending)
            ticks0 = stat()[1]
            time.sleep(2)
            spent = (stat()[1] - ticks0) / os.sysconf("SC_CLK_TCK")
            report(spent < 0.5, "waiting 2 s for input cost %.2f s of CPU (busy wait?)" % spent)
        send(src[5][half:] + "\n")
        answer(5, "rest of the half line")
        send(src[6] + "\n" + src[7] + "\n")  # two lines in one flush
        answer(6, "two lines at once")
        answer(7, "two lines at once")
        send(src[8] + "\n" + src[9][:3])  # a line and the start of the next
        answer(8, "a line followed by half a line")
        if wait_idle("half line"):
            report(nothing_written(), "the half line after line 9 was answered: %r" % pending)
        send(src[9][3:])  # the last line, without a newline, then the end
        close_input()
        answer(9, "last line without a newline")
        finish("sync")
    elif scenario == "long-half":  # a line, then most of a long line in the same write
        for k in range(2):
            send(src[k] + "\n")
            answer(k, "long-half")
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
            wait_idle("long-half")
            os.kill(proc.pid, signal.SIGSTOP)
        else:
            print("NOTE long-half: pipe of %d bytes: the bytes arrive as the process reads" % size, flush=True)
        write(data)
        if stopped: os.kill(proc.pid, signal.SIGCONT)
        report(len(data) > 65536, "long-half: %d compressed bytes, not more than one read" % len(data))
        answer(2, "a line followed by most of a long line")
        send(long_line[cut:] + "\n")
        answer(3, "the long line")
        close_input()
        finish("long-half")
    elif scenario == "split":  # a line, then at once (a second write) the start of the next
        send(src[0] + "\n")
        for k in range(9):
            send(src[k + 1][:3])
            answer(k, "a line, then the start of the next in a second write")
            send(src[k + 1][3:] + "\n")
        answer(9, "split")
        close_input()
        finish("split")
    elif scenario == "members":  # one gzip member per line, one line at a time
        for k in range(4):
            write(gzip.compress((src[k] + "\n").encode(), mtime=0))
            answer(k, "members")
        close_input(finish=False)
        finish("members")
    elif scenario in ("burst-members", "burst-sync"):  # every line in one write, then a pause
        if scenario == "burst-members":
            data = b"".join(gzip.compress((l + "\n").encode(), mtime=0) for l in src)
        else:
            data = comp.compress("".join(l + "\n" for l in src).encode()) + comp.flush(zlib.Z_SYNC_FLUSH)
        write(data)
        got = read_lines(len(ref))
        report(got == ref, "%s: got %r, want the block's %r" % (scenario, got, ref))
        if got is None: stop(scenario)
        close_input(finish=scenario == "burst-sync")
        finish(scenario)
    elif scenario in ("corrupt", "truncated"):  # an answered line, then bad gzip
        send(src[0] + "\n")
        answer(0, scenario)
        if scenario == "corrupt":
            write(b"\xff\xff\xff\xff")  # a deflate block of the reserved type 3
            close_input(finish=False)
            finish(scenario, 1, "standard input: corrupt gzip data (invalid block type)")
        else:
            close_input(finish=False)  # no last block, no trailer
            finish(scenario, 1, "standard input: truncated gzip file (unexpected end of compressed data)")
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
  done < <(ERR="$tmp/drive.err" timeout -k 5 300 python3 "$tmp/drive.py" "$@" 2>&1 || echo "drive.py $1: exit $?")
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
