/* progress_line.c: the progress line on stderr (progress_line.h). */
#include "progress_line.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool progress_line_default(void) {
    return isatty(2);
}

void progress_line_start(ProgressLine *p, bool on, const char *doing, const char *done) {
    p->on = on;
    p->doing = doing;
    p->done = done;
    p->t_start = p->t_shown = now_s();
    p->width = 0;
}

bool progress_line_show(ProgressLine *p, int64_t lines, int64_t tokens, bool final) {
    if (!p->on) return false;
    double t = now_s();
    if (!final && t - p->t_shown < PROGRESS_LINE_INTERVAL_S) return false;
    p->t_shown = t;
    double dt = t - p->t_start > 1e-6 ? t - p->t_start : 1e-6;
    char line[160];
    int w = snprintf(line, sizeof line, "%s %lld lines, %.1f sentences/s, %.0f target tokens/s%s",
                     final ? p->done : p->doing, (long long)lines, (double)lines / dt, (double)tokens / dt,
                     final ? "" : " ...");
    /* pad with spaces over a longer previous line (no terminal escapes) */
    fprintf(stderr, "\r%s%*s%s", line, p->width > w ? p->width - w : 0, "", final ? "\n" : "");
    fflush(stderr);
    p->width = final ? 0 : w;
    return true;
}

double progress_line_wait_s(const ProgressLine *p) {
    return p->t_shown + PROGRESS_LINE_INTERVAL_S - now_s();
}

void progress_line_abort(ProgressLine *p) {
    if (p->on && p->width > 0) fputc('\n', stderr);
    p->width = 0;
}
