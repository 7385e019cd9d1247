/* common.c: the error message slot, logging, the allocation hook, the
 * bounded integer parser and the assertion handler declared in common.h. */
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char error_message[4096];
static int log_quiet;
static long alloc_fail_countdown; /* 0: off; n: the n-th allocation fails */
static long alloc_calls;
static long alloc_failures;

NmtStatus nmt_fail(NmtStatus status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, ap);
    va_end(ap);
    return status;
}

void nmt_error_prefix(const char *fmt, ...) {
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof error_message];
    memcpy(old, error_message, sizeof old);
    size_t used = strlen(prefix);
    if (used > sizeof error_message - 3) used = sizeof error_message - 3;
    memcpy(error_message, prefix, used);
    memcpy(error_message + used, ": ", 2);
    used += 2;
    size_t rest = strnlen(old, sizeof old - 1);
    if (rest > sizeof error_message - 1 - used) rest = sizeof error_message - 1 - used;
    memcpy(error_message + used, old, rest);
    error_message[used + rest] = '\0';
}

void nmt_error_suffix(const char *fmt, ...) {
    size_t used = strnlen(error_message, sizeof error_message - 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_message + used, sizeof error_message - used, fmt, ap);
    va_end(ap);
}

const char *nmt_error_message(void) { return error_message; }
void nmt_error_clear(void) { error_message[0] = '\0'; }

static int stop_signal = 2; /* SIGINT until told otherwise */
void nmt_note_stop_signal(int sig) { stop_signal = sig; }

int nmt_exit_code(NmtStatus status) {
    switch (status) {
    case NMT_OK: return NMT_EXIT_OK;
    case NMT_ERR_CONFIG:
    case NMT_ERR_USAGE: return NMT_EXIT_USAGE;
    case NMT_STOPPED: return 128 + stop_signal;
    default: return NMT_EXIT_FAILURE;
    }
}

const char *nmt_status_name(NmtStatus status) {
    switch (status) {
    case NMT_OK: return "ok";
    case NMT_ERR_IO: return "i/o error";
    case NMT_ERR_FORMAT: return "format error";
    case NMT_ERR_CONFIG: return "config error";
    case NMT_ERR_USAGE: return "usage error";
    case NMT_ERR_NOMEM: return "out of memory";
    case NMT_ERR_RUNTIME: return "runtime error";
    case NMT_STOPPED: return "stopped by a signal";
    }
    return "unknown error";
}

void nmt_log_quiet(int quiet) { log_quiet = quiet; }

void nmt_log_info(const char *fmt, ...) {
    if (log_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void nmt_log_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* True when the hook says this allocation must fail. */
static int alloc_should_fail(void) {
    alloc_calls++;
    if (alloc_fail_countdown > 0 && --alloc_fail_countdown == 0) {
        alloc_failures++;
        return 1;
    }
    return 0;
}

/* Counts a real allocation failure too. */
static void *checked(void *p) {
    if (!p) alloc_failures++;
    return p;
}

void *nmt_malloc(size_t size) {
    if (alloc_should_fail()) return NULL;
    return checked(malloc(size ? size : 1));
}

void *nmt_calloc(size_t count, size_t size) {
    if (alloc_should_fail()) return NULL;
    return checked(calloc(count ? count : 1, size ? size : 1));
}

void *nmt_realloc(void *ptr, size_t size) {
    if (alloc_should_fail()) return NULL;
    return checked(realloc(ptr, size ? size : 1));
}

void nmt_free(void *ptr) { free(ptr); }

char *nmt_strndup(const char *s, size_t n) {
    char *copy = nmt_malloc(n + 1);
    if (!copy) return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

char *nmt_strdup(const char *s) { return nmt_strndup(s, strlen(s)); }

void nmt_alloc_fail_at(long n) { alloc_fail_countdown = n > 0 ? n : 0; }
long nmt_alloc_count(void) { return alloc_calls; }
long nmt_alloc_failures(void) { return alloc_failures; }

NmtStatus nmt_fail_nomem(const char *what) {
    return nmt_fail(NMT_ERR_NOMEM, "out of memory while %s", what);
}

int nmt_parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (!*s || *end || errno || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}

int nmt_parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!*s || *s == '-' || *s == '+') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return 0;
    *out = v;
    return 1;
}

char *nmt_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *out = nmt_malloc((size_t)n + 1);
    if (!out) return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

void nmt_assert_failed(const char *expr, const char *file, int line) {
    fprintf(stderr, "nmt: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
