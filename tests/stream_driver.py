# stream_driver.py: what the drivers of test_translate_stream.sh (plain
# lines through a pipe or a pty) and test_translate_stream_gzip.sh (gzip
# through a pipe) share: talking to `nmt translate --stream` line by line
# and printing one "PASS what" or "FAIL what" line per check, which the
# shell test counts. Each test's drive.py imports it (sys.path: tests/).
#
#   d = Driver(proc, ref, send, close_input, per=1, wait_s=30)
#   d.send(text); d.answer(k, "what"); d.finish("what")
#   line_at_a_time(d, src, "what")
#
# No speed is measured: an answer has wait_s seconds to come at all; one
# that does not come kills the process and ends the driver (the rest would
# wait as long), so a test never hangs.
import os
import select
import subprocess
import sys
import time


class Driver:
    """The process `proc` (stdout a pipe), the reference output lines
    `ref` (`per` of them for each input line), and how to give it input:
    send(text) and close_input()."""

    def __init__(self, proc, ref, send, close_input, per=1, wait_s=30.0, err_path=None):
        self.proc, self.ref, self.per, self.wait_s, self.err_path = proc, ref, per, wait_s, err_path
        self.send, self.close_input = send, close_input
        self.out_fd, self.pending = proc.stdout.fileno(), b""
        self.after_answer = None  # called with k after each right answer (test-specific checks)

    def report(self, ok, what):
        print(("PASS " if ok else "FAIL ") + what, flush=True)
        return ok

    def stop(self, what):
        """Ends the run after a failed wait: the rest would wait as long."""
        self.proc.kill()
        self.proc.wait()
        print("FAIL %s: stopped (the process was killed)" % what, flush=True)
        sys.exit(0)

    def read_lines(self, n):
        """n output lines, or None when they do not come within wait_s s."""
        end = time.time() + self.wait_s
        while self.pending.count(b"\n") < n:
            ready, _, _ = select.select([self.out_fd], [], [], max(0.0, end - time.time()))
            if not ready:
                return None
            got = os.read(self.out_fd, 65536)
            if not got:
                return None
            self.pending += got
        lines = self.pending.split(b"\n")
        self.pending = b"\n".join(lines[n:])
        return [line.decode("utf-8") for line in lines[:n]]

    def nothing_written(self):
        """True when no byte of output is waiting (and none came before)."""
        ready, _, _ = select.select([self.out_fd], [], [], 0)
        return not ready and not self.pending

    def stat(self):
        """(state, CPU ticks of all threads) of the process."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])

    def wait_idle(self, what):
        """Waits until the process sleeps (its main thread in a read, no CPU
        spent for 0.6 s): it has read what was sent and wants more."""
        end, last, calm = time.time() + 60, None, 0
        while time.time() < end:
            s = self.stat()
            calm = calm + 1 if s[0] == "S" and s == last else 0
            if calm >= 6:
                return True
            last = s
            time.sleep(0.1)
        return self.report(False, what + ": the process never went idle")

    def answer(self, k, what):
        """Input line k was sent: reads its answer and compares it with the
        reference."""
        got = self.read_lines(self.per)
        want = self.ref[k * self.per:(k + 1) * self.per]
        if got is None:
            self.report(False, "%s: no answer to line %d within %g s (held back: the reader "
                        "waits for more input while a whole line is there?)" % (what, k + 1, self.wait_s))
            self.stop(what)
        self.report(got == want, "%s: answer to line %d: got %r, want %r" % (what, k + 1, got, want))
        if self.after_answer:
            self.after_answer(k, what)

    def finish(self, what, want_rc=0, want_err=None):
        """The output ends with the answers; the exit status (and, when
        want_err is given, the error output holds it)."""
        end = time.time() + self.wait_s
        while True:
            ready, _, _ = select.select([self.out_fd], [], [], max(0.0, end - time.time()))
            if not ready:
                self.report(False, what + ": the output did not end")
                self.stop(what)
            got = os.read(self.out_fd, 65536)
            if not got:
                break
            self.pending += got
        self.report(self.pending == b"", what + ": output beyond the answers: %r" % self.pending)
        try:
            rc = self.proc.wait(self.wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = -1
        self.report(rc == want_rc, "%s: exit status %d, want %d" % (what, rc, want_rc))
        if want_err is not None:
            err = open(self.err_path, encoding="utf-8", errors="replace").read()
            self.report(want_err in err, "%s: %r not in the error output %r" % (what, want_err, err[-300:]))

    def half_line_waits(self, what):
        """After part of a line was sent: nothing is answered, and waiting
        for the rest costs no CPU (a pause of 2 s: under 0.5 s)."""
        if self.wait_idle(what):
            self.report(self.nothing_written(), "half a line was answered before its newline: %r" % self.pending)
            ticks0 = self.stat()[1]
            time.sleep(2)
            spent = (self.stat()[1] - ticks0) / os.sysconf("SC_CLK_TCK")
            self.report(spent < 0.5, "waiting 2 s for input cost %.2f s of CPU (busy wait?)" % spent)


def line_at_a_time(d, src, what):
    """The ten lines of src, each answered before the next is sent: five
    whole lines; half a line, a pause, its rest; two lines in one write; a
    line with the start of the next in one write (the first is answered,
    the half line waits); the last line without a newline, answered at the
    end of the input. Then the output ends, exit status 0."""
    for k in range(5):
        d.send(src[k] + "\n")
        d.answer(k, what)
    half = len(src[5]) // 2
    d.send(src[5][:half])
    d.half_line_waits("half line")
    d.send(src[5][half:] + "\n")
    d.answer(5, "rest of the half line")
    d.send(src[6] + "\n" + src[7] + "\n")
    d.answer(6, "two lines at once")
    d.answer(7, "two lines at once")
    d.send(src[8] + "\n" + src[9][:3])
    d.answer(8, "a line followed by half a line")
    if d.wait_idle("half line"):
        d.report(d.nothing_written(), "the half line after line 9 was answered: %r" % d.pending)
    d.send(src[9][3:])
    d.close_input()
    d.answer(9, "last line without a newline")
    d.finish(what)
