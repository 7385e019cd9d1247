#!/usr/bin/env bash
# test_translate_stream.sh: `nmt translate --stream` on a tiny model trained
# here, driven as a coprocess (python3, pipes): each line written is
# answered before the next is sent (30 s allowed for an answer to come at
# all; no speed is measured), and the answers equal, byte for byte, a
# --batch 1 translation of the same lines (one line decoded at a time is a
# batch of one); for plain output, --nbest, --sample, --attention-out with
# --replace-unk (its JSON lines written as the answers are) and the
# progress line (brought up to date while the input pauses). A line's
# first part without its newline is not translated until the rest comes
# (also when it follows a complete line in the same write, which is
# answered at once); a last line without a newline is translated at the end
# of the input. While it waits, the process sleeps (a pause of 2 s costs it
# under 0.5 s of CPU: no busy wait). Without --stream (and with --stream
# --no-stream) a pipe gets no answer before the end of the input, even
# when the process has read the line and sleeps in the next read (so that
# a change of the default is noticed); a terminal as standard input (a pty)
# streams by default. --stream on a regular file writes what the default
# writes (whole blocks: the n-best scores of batches of one differ here).
# A pipe in non-blocking mode is waited on, not an error (with and without
# --stream). `nmt eval` refuses --stream (it scores a whole output:
# nothing to give early).
# Prints "test_translate_stream: N passed, N failed"; exits non-zero on failure.
set -u
. "$(dirname "$0")/lib.sh"
test_begin test_translate_stream
cd "$ROOT" || exit 2

# the tiny model both stream tests drive, and $tmp/lines.src
. "$ROOT/tests/stream_setup.sh"

cat > "$tmp/drive.py" <<'PY'
# drive.py SCENARIO REF CMD...: runs CMD (nmt translate ...) with pipes (or
# a pty as stdin: scenario "tty"), talks to it line by line and prints one
# "PASS what" or "FAIL what" line per check (tests/stream_driver.py).
import os, pty, subprocess, sys, termios, time
sys.path.insert(0, os.environ["TESTS"])
from stream_driver import Driver, line_at_a_time

scenario, ref_path, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
src = open(os.environ["LINES"], encoding="utf-8").read().split("\n")[:10]
ref = open(ref_path, encoding="utf-8").read().split("\n")[:-1]
per = int(os.environ.get("PER", "1"))  # output lines per input line (--nbest)
attn = os.environ.get("ATTN")          # --attention-out file: lines written so far
progress = os.environ.get("PROGRESS")  # stderr file with the progress line

if scenario == "tty":  # standard input a terminal, canonical mode, no echo
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen(cmd, stdin=slave, stdout=subprocess.PIPE,
                            stderr=open(os.environ["ERR"], "w"))
    os.close(slave)
    def send(s): os.write(master, s.encode())
    def close_input(): os.write(master, b"\x04")  # ^D at a line's start: the end
else:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(progress or os.environ["ERR"], "w"))
    def send(s):
        proc.stdin.write(s.encode())
        proc.stdin.flush()
    def close_input(): proc.stdin.close()
d = Driver(proc, ref, send, close_input, per=per)

def after_answer(k, what):
    """--attention-out's lines and the progress line keep up with the answers."""
    if attn:
        n = len(open(attn).read().splitlines())
        d.report(n == k + 1, "%s: %d --attention-out lines after answer %d" % (what, n, k + 1))
    if progress and d.wait_idle(what):
        time.sleep(0.3)  # an update held back by the rate limit is due 0.25 s after the last
        shown = open(progress, encoding="utf-8", newline="").read().split("\r")[-1]
        d.report(shown.startswith("translating %d lines," % (k + 1)),
                 "%s: progress line after answer %d: %r" % (what, k + 1, shown))
d.after_answer = after_answer

try:
    if scenario == "stream":
        line_at_a_time(d, src, scenario)
    elif scenario in ("stream-one", "tty"):  # whole lines one at a time
        for k in range(10 if scenario != "tty" else 3):
            send(src[k] + "\n")
            d.answer(k, scenario)
        close_input()
        d.finish(scenario)
    elif scenario == "empty-first":  # an empty first line is answered at once
        send("\n")
        got = d.read_lines(1)
        d.report(got == [""], "empty first line: got %r before the next line was sent" % got)
        send(src[0] + "\n")
        d.answer(0, "the line after an empty first line")
        close_input()
        d.finish(scenario)
    elif scenario == "burst":  # every line in one write, then a pause: decoded together
        send("".join(line + "\n" for line in src))
        got = d.read_lines(len(ref))
        d.report(got == ref, "burst: got %r, want the block's %r" % (got, ref))
        close_input()
        d.finish(scenario)
    elif scenario == "blocking":  # without --stream on a pipe: nothing before the end
        for k in range(2):
            send(src[k] + "\n")
            if d.wait_idle("blocking"):
                d.report(d.nothing_written(), "without --stream, line %d was answered before the end of the input" % (k + 1))
        close_input()
        got = d.read_lines(2)
        d.report(got == ref[:2], "blocking: answers at the end: got %r, want %r" % (got, ref[:2]))
        d.finish(scenario)
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
sys.exit(0)
PY

# drive SCENARIO REF CMD...: the checks of drive.py counted here
drive() {
  local line
  while IFS= read -r line; do
    case $line in
      PASS*) ok ;;
      FAIL*) bad "${line#FAIL }" ;;
      *) bad "drive.py: $line" ;;
    esac
  done < <(TESTS="$ROOT/tests" LINES="$tmp/lines.src" ERR="$tmp/drive.err" python3 "$tmp/drive.py" "$@" 2>&1)
}

# reference: the same lines, one at a time (--batch 1)
ref() { # ref FILE ARGS...
  local f=$1
  shift
  "$NMT" translate --model "$M" --batch 1 "$@" < "$tmp/lines.src" > "$f" 2> "$tmp/ref.err" || bad "reference $*: $(cat "$tmp/ref.err")"
}

# 1. plain: one line at a time, half lines, two at once, the last without a newline
ref "$tmp/plain.ref"
check '[ $(wc -l < "$tmp/plain.ref") -eq 10 ] && [ -z "$(sed -n 3p "$tmp/plain.ref")" ] && [ $(sort -u "$tmp/plain.ref" | wc -l) -ge 6 ]' \
  "reference translations not varied enough: $(cat "$tmp/plain.ref")"
drive stream "$tmp/plain.ref" "$NMT" translate --model "$M" --stream

# 2. the other outputs, a line at a time
ref "$tmp/nbest.ref" --beam 3 --nbest 2
PER=2 drive stream-one "$tmp/nbest.ref" "$NMT" translate --model "$M" --stream --beam 3 --nbest 2
ref "$tmp/sample.ref" --sample 5 --seed 11
drive stream-one "$tmp/sample.ref" "$NMT" translate --model "$M" --stream --sample 5 --seed 11
ref "$tmp/attn.ref" --beam 2 --replace-unk --attention-out "$tmp/attn-ref.jsonl"
ATTN="$tmp/attn.jsonl" drive stream-one "$tmp/attn.ref" "$NMT" translate --model "$M" --stream --beam 2 --replace-unk \
  --attention-out "$tmp/attn.jsonl"
check 'cmp -s "$tmp/attn.jsonl" "$tmp/attn-ref.jsonl"' "streamed --attention-out differs from --batch 1's"
PROGRESS="$tmp/progress.err" drive stream-one "$tmp/plain.ref" "$NMT" translate --model "$M" --stream --progress
check "tr '\\r' '\\n' < '$tmp/progress.err' | grep -q '^translated 10 lines'" "streamed progress: no final line: $(cat -A "$tmp/progress.err")"

# 2b. an empty first line is answered before the next comes; a burst of
# lines in one write is decoded as one block, as the whole file is without
# --stream (its n-best scores differ from those of lines decoded one by
# one, which the burst gave when the check asked the descriptor alone)
drive empty-first "$tmp/plain.ref" "$NMT" translate --model "$M" --stream
"$NMT" translate --model "$M" --beam 3 --nbest 2 < "$tmp/lines.src" > "$tmp/nbest-block.ref" 2> "$tmp/ref.err" ||
  bad "block reference: $(cat "$tmp/ref.err")"
check '! cmp -s "$tmp/nbest-block.ref" "$tmp/nbest.ref"' "the n-best scores of one block equal those of --batch 1: the burst check proves nothing"
PER=2 drive burst "$tmp/nbest-block.ref" "$NMT" translate --model "$M" --stream --beam 3 --nbest 2

# 3. the default on a pipe: whole blocks, nothing before the end of the input
drive blocking "$tmp/plain.ref" "$NMT" translate --model "$M"
drive blocking "$tmp/plain.ref" "$NMT" translate --model "$M" --stream --no-stream

# 4. the default on a terminal (a pty as standard input): streamed
drive tty "$tmp/plain.ref" "$NMT" translate --model "$M"

# 5. --stream with a regular file: the default's whole blocks (n-best scores
# of batches of one differ from those of batches of 8 for this model)
in="$tmp/data/test.src"
"$NMT" translate --model "$M" --beam 5 --nbest 5 < "$in" > "$tmp/file.hyp" 2> "$tmp/file.err" || bad "file: $(cat "$tmp/file.err")"
"$NMT" translate --model "$M" --beam 5 --nbest 5 --stream < "$in" > "$tmp/file-stream.hyp" 2> "$tmp/file.err" ||
  bad "file --stream: $(cat "$tmp/file.err")"
check 'cmp -s "$tmp/file.hyp" "$tmp/file-stream.hyp"' "--stream on a regular file changed the output"
"$NMT" translate --model "$M" --beam 5 --nbest 5 --batch 1 < "$in" > "$tmp/file-b1.hyp" 2> "$tmp/file.err"
check '! cmp -s "$tmp/file.hyp" "$tmp/file-b1.hyp"' "the n-best scores of --batch 1 equal batches of 8: the check above proves nothing"

# 6. standard input a pipe in non-blocking mode (O_NONBLOCK on the pipe,
# as some parent processes leave it): nmt waits for input as on a blocking
# one, streamed or not, instead of failing with EAGAIN
cat > "$tmp/nonblock.py" << 'PY'
import os, subprocess, sys, time
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)[:3]
r, w = os.pipe()
os.set_blocking(r, False)
p = subprocess.Popen(sys.argv[2:], stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(r)
for line in lines:  # nothing to read at first, and between the lines
    time.sleep(0.3)
    os.write(w, line)
os.close(w)
out, err = p.communicate(timeout=120)
sys.stdout.write("rc %d lines %d %s\n" % (p.returncode, out.count(b"\n"), err.decode(errors="replace").strip()))
PY
for mode in --stream --no-stream; do
  got=$(python3 "$tmp/nonblock.py" "$tmp/data/test.src" "$NMT" translate --model "$M" $mode 2>&1)
  check '[ "$got" = "rc 0 lines 3 " ]' "non-blocking standard input, $mode: $got"
done

# 7. an option of translate alone: eval scores a whole output (nothing to give early)
expect 2 "unknown option '--stream'" "$NMT" eval --stream

test_end
