/* common.h: status codes, the error message slot, logging, the allocation
 * hook and always-on assertions shared by every module of nmt.
 *
 * Library code never exits: a recoverable failure returns an NmtStatus and
 * first records a message with nmt_error_set() that names the file and line
 * or the config key at fault. Only main() turns a status into an exit code
 * (nmt_exit_code). Broken invariants use NMT_ASSERT, which is always on. */
#ifndef NMT_COMMON_H
#define NMT_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    NMT_OK = 0,
    NMT_ERR_IO,      /* a file could not be opened, read or written */
    NMT_ERR_FORMAT,  /* a file's content is malformed (corpus, checkpoint, cache) */
    NMT_ERR_CONFIG,  /* a config key is unknown, mistyped, out of range or contradictory */
    NMT_ERR_USAGE,   /* bad command-line usage */
    NMT_ERR_NOMEM,   /* an allocation failed */
    NMT_ERR_RUNTIME, /* anything else that stopped the work */
    NMT_STOPPED      /* stopped by a signal, its state saved first (nmt train's
                        last.nmt): exit code 128 + the signal (nmt_note_stop_signal) */
} NmtStatus;

/* Exit codes of the nmt binary; NMT_STOPPED exits with 128 + the signal's
 * number, as a shell reports a command a signal ended (130 for Ctrl-C,
 * 143 for SIGTERM), though nmt saved its work before it stopped. */
enum { NMT_EXIT_OK = 0, NMT_EXIT_FAILURE = 1, NMT_EXIT_USAGE = 2 };

/* The signal that NMT_STOPPED answers (its exit code is 128 + sig). */
void nmt_note_stop_signal(int sig);

/* Records the message for the current failure (printf-style) and returns
 * `status`, so that `return nmt_fail(NMT_ERR_IO, "%s: ...", path);` reads
 * naturally. The message is thread-local and overwritten by the next call. */
NmtStatus nmt_fail(NmtStatus status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prepends "context: " to the current message (e.g. the config file name). */
void nmt_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends text to the current message (a hint, e.g. "; lower KEY"). */
void nmt_error_suffix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *nmt_error_message(void);
void nmt_error_clear(void);
/* 0 for NMT_OK, 2 for usage and config errors, 1 for everything else. */
int nmt_exit_code(NmtStatus status);
const char *nmt_status_name(NmtStatus status);

/* Logging to stderr. nmt_log_quiet(1) silences info lines (tests). */
void nmt_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void nmt_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void nmt_log_quiet(int quiet);

/* Allocation hook: every allocation of nmt goes through these. They return
 * NULL on failure (callers turn that into NMT_ERR_NOMEM with nmt_fail_nomem).
 * nmt_alloc_fail_at(n) makes the n-th allocation from now fail (n >= 1);
 * nmt_alloc_fail_at(0) turns the hook off. nmt_alloc_count() counts calls. */
void *nmt_malloc(size_t size);
void *nmt_calloc(size_t count, size_t size);
void *nmt_realloc(void *ptr, size_t size);
void nmt_free(void *ptr);
char *nmt_strdup(const char *s);
char *nmt_strndup(const char *s, size_t n);
void nmt_alloc_fail_at(long n);
long nmt_alloc_count(void);
/* How many allocations have failed so far: lets a caller of a library that
 * cannot tell "out of memory" from "bad input" (cJSON) tell them apart. */
long nmt_alloc_failures(void);
NmtStatus nmt_fail_nomem(const char *what);

/* 1 and *out when s is a whole decimal integer in [lo, hi] (nothing else
 * around it); 0 otherwise (*out untouched, no message: the caller says
 * what was expected). */
int nmt_parse_int(const char *s, int lo, int hi, int *out);
/* The same for an unsigned integer in [0, max] (a seed: max UINT64_MAX);
 * no sign. */
int nmt_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* printf into a newly allocated string (nmt_free it); NULL on failure. */
char *nmt_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Always-on assertion for invariants (never for validating input). */
void nmt_assert_failed(const char *expr, const char *file, int line) __attribute__((noreturn));
#define NMT_ASSERT(cond) \
    do { if (!(cond)) nmt_assert_failed(#cond, __FILE__, __LINE__); } while (0)

#define NMT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Special token ids shared by every tokenizer and the model. */
enum { NMT_PAD_ID = 0, NMT_UNK_ID = 1, NMT_BOS_ID = 2, NMT_EOS_ID = 3, NMT_N_SPECIAL = 4 };

#endif
