/* progress_line.h: the progress line on stderr of the commands that work
 * through input lines (`nmt translate` and `nmt eval --model` through
 * src/translator.c, and `nmt score`): "\r<doing> N lines, R sentences/s,
 * T target tokens/s ..." rewritten at most every PROGRESS_LINE_INTERVAL_S,
 * and at the end "<done> N lines, R sentences/s, T target tokens/s" and a
 * newline. No terminal escapes: a line shorter than the one before is
 * padded with spaces. Whether it is shown is the caller's choice (by
 * default when stderr is a terminal: progress_line_default). */
#ifndef NMT_PROGRESS_LINE_H
#define NMT_PROGRESS_LINE_H

#include <stdbool.h>
#include <stdint.h>

#define PROGRESS_LINE_INTERVAL_S 0.25 /* at most 4 updates a second */

typedef struct {
    bool on;                  /* shown at all */
    const char *doing, *done; /* "scoring", "scored" */
    double t_start, t_shown;  /* seconds (monotonic clock) */
    int width;                /* length of the last line shown; 0: none yet */
} ProgressLine;

/* The default: on when stderr is a terminal. */
bool progress_line_default(void);
/* Starts the clock; nothing is shown before the first update is due. */
void progress_line_start(ProgressLine *p, bool on, const char *doing, const char *done);
/* The line for `lines` lines and `tokens` target tokens so far, when the
 * last one is PROGRESS_LINE_INTERVAL_S old; final: the summary, always,
 * with a newline. Returns whether it drew one. */
bool progress_line_show(ProgressLine *p, int64_t lines, int64_t tokens, bool final);
/* Seconds until the next update is due (<= 0: due now). */
double progress_line_wait_s(const ProgressLine *p);
/* On an error: ends a line shown with a newline, so that the message
 * comes below it. */
void progress_line_abort(ProgressLine *p);

#endif
