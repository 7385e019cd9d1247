/* fuzz_util.h: helpers shared by the libFuzzer targets fuzz/fuzz_*.c (built
 * by `make fuzz`, mk/check.mk): property checks that abort with a message,
 * in-memory files (memfd) that the loaders open by path, a hash of the input
 * that picks variants deterministically, and the allocation-failure replay.
 *
 * Every target is a plain C11 file with LLVMFuzzerTestOneInput; a property
 * that does not hold calls FUZZ_CHECK's abort, which libFuzzer reports as a
 * crash and saves the input. */
#ifndef NMT_FUZZ_UTIL_H
#define NMT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

/* Aborts (a libFuzzer crash, input saved) when cond is false. */
#define FUZZ_CHECK(cond, ...)                                                          \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n(last nmt error: %s)\n", nmt_error_message());          \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* FNV-1a of the input: picks variants (allocation to fail, chunk sizes). */
static inline uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
    return h;
}

/* An anonymous in-memory file holding data[0..size), rewound; -1 on failure.
 * fuzz_fd_path gives a path ("/proc/self/fd/N") that open() accepts. */
static inline int fuzz_memfd(const void *data, size_t size) {
    int fd = memfd_create("nmt-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    const char *p = data;
    size_t left = size;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline const char *fuzz_fd_path(int fd, char *buf, size_t cap) {
    snprintf(buf, cap, "/proc/self/fd/%d", fd);
    return buf;
}

/* Runs `run` once normally, counting its allocations, then again with one
 * of them (chosen by `seed`) failing through the nmt_alloc_fail_at hook.
 * The second run must give the first run's status or NMT_ERR_NOMEM, and
 * LeakSanitizer checks that the error path frees everything. Returns the
 * first run's status. */
typedef NmtStatus (*FuzzRun)(void *ctx);
static inline NmtStatus fuzz_with_alloc_failure(FuzzRun run, void *ctx, uint64_t seed) {
    long before = nmt_alloc_count();
    NmtStatus first = run(ctx);
    long n = nmt_alloc_count() - before;
    if (n <= 0) return first;
    long k = 1 + (long)(seed % (uint64_t)n);
    nmt_alloc_fail_at(k);
    NmtStatus second = run(ctx);
    int hit = nmt_alloc_count() - before - n >= k;
    nmt_alloc_fail_at(0);
    FUZZ_CHECK(second == first || second == NMT_ERR_NOMEM || !hit,
               "allocation %ld of %ld failing gave status %s (normal run: %s)", k, n,
               nmt_status_name(second), nmt_status_name(first));
    FUZZ_CHECK(second == NMT_OK || nmt_error_message()[0] != '\0', "a failure without a message");
    return first;
}

#endif
