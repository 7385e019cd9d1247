/* gpu_parity_harness.h: the harness of tests/test_gpu_parity.c (its only
 * includer): the two backends (the CPU reference and the one under test),
 * tensors held on both (Buf, IBuf, filled from test_util.h's seeded
 * inputs; BOTH runs a statement on each, P names the running one's copy),
 * and the comparisons: relative error by buffer (cmp, report; a failed report
 * prints where the worst entry went wrong), bit for bit across backends
 * (cmp_exact) and across two GPU runs (gpu_twice_same). Static functions in
 * a header, as test_util.h: one test program includes it. */
#ifndef NMT_GPU_PARITY_HARNESS_H
#define NMT_GPU_PARITY_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "gpu/gpu_backend.h"
#include "test_util.h"

static Backend *cpu, *gpu;

/* ---- the same tensor on both backends ---- */

typedef struct {
    float *c, *g; /* CPU and GPU copies */
    size_t n;
} Buf;

typedef struct {
    int32_t *c, *g;
    size_t n;
} IBuf;

static void *allocs[2][2048];
static int n_allocs;

static void *both_alloc(size_t bytes, void **g) {
    void *c = cpu->alloc(cpu, bytes);
    *g = gpu->alloc(gpu, bytes);
    if (!c || !*g || n_allocs == (int)NMT_ARRAY_LEN(allocs[0])) {
        fprintf(stderr, "backend alloc of %zu bytes failed (%s)\n", bytes,
                cuda_backend_error(gpu) ? cuda_backend_error(gpu) : "out of memory");
        exit(2);
    }
    allocs[0][n_allocs] = c;
    allocs[1][n_allocs++] = *g;
    return c;
}

/* n elements of `size` bytes from h on both backends (room for one when n
 * is 0): *c the CPU's copy, *g the GPU's */
static void both_from(const void *h, size_t n, size_t size, void **c, void **g) {
    *c = both_alloc((n ? n : 1) * size, g);
    cpu->upload(cpu, *c, h, n * size);
    gpu->upload(gpu, *g, h, n * size);
}

static Buf buf_from(const float *h, size_t n) {
    Buf b = {NULL, NULL, n};
    void *c, *g;
    both_from(h, n, sizeof(float), &c, &g);
    b.c = c;
    b.g = g;
    return b;
}

static Buf buf_rand(size_t n, float lo, float hi) {
    float *h = test_hrand(n, lo, hi);
    Buf b = buf_from(h, n);
    free(h);
    return b;
}

static IBuf ibuf_from(const int32_t *h, size_t n) {
    IBuf b = {NULL, NULL, n};
    void *c, *g;
    both_from(h, n, sizeof(int32_t), &c, &g);
    b.c = c;
    b.g = g;
    return b;
}

/* Runs the statement on both backends: `be` is the backend, P(buf) its copy. */
#define BOTH(...)                                           \
    do {                                                    \
        for (int side_ = 0; side_ < 2; side_++) {           \
            Backend *be = side_ ? gpu : cpu;                \
            (void)be;                                       \
            __VA_ARGS__;                                    \
        }                                                   \
    } while (0)
#define P(b) (side_ ? (b).g : (b).c)

static void get_both(const void *c, const void *g, void *hc, void *hg, size_t bytes) {
    cpu->download(cpu, hc, c, bytes);
    gpu->download(gpu, hg, g, bytes);
}

/* Where the worst comparison since the last report went wrong, printed
 * when that report fails: a GPU run happens rarely and its log is all the
 * next session has to find the fault by (a tail past a multiple of 32, a
 * half never written, NaN...). */
static char worst_detail[256];
static double worst_detail_err = -1.0;

/* Keeps the detail of this comparison if it is the worst one since the last
 * report: the worst entry, how many entries differ by more than 1e-4 of
 * max |c| and the first of them, NaN on the GPU, and GPU zeros where the CPU
 * is not zero. */
static void note_detail(const float *c, const float *g, size_t n, double err, double den) {
    if (!(err > worst_detail_err)) return;
    size_t worst = 0, first = n, differ = 0, nan_g = 0, zero_g = 0;
    double worst_d = -1.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(g[i]) && !isnan(c[i])) nan_g++;
        if (g[i] == 0.0f && c[i] != 0.0f) zero_g++;
        if (c[i] == g[i] || (isnan(c[i]) && isnan(g[i]))) continue;
        double d = fabs((double)g[i] - (double)c[i]);
        if (!isfinite(d)) d = INFINITY;
        if (d > worst_d) {
            worst_d = d;
            worst = i;
        }
        if (d > 1e-4 * den) {
            differ++;
            if (first == n) first = i;
        }
    }
    worst_detail_err = err;
    if (worst_d < 0) {
        snprintf(worst_detail, sizeof worst_detail, "all %zu entries equal", n);
        return;
    }
    snprintf(worst_detail, sizeof worst_detail,
             "worst at [%zu] of %zu: cpu %.7g gpu %.7g; %zu entries differ by > 1e-4 of max |cpu| "
             "(first at [%zu]); gpu NaN at %zu, gpu 0 where cpu is not at %zu",
             worst, n, c[worst], g[worst], differ, first < n ? first : 0, nan_g, zero_g);
}

/* max |g - c| / max |c| (floored at 1e-6); equal entries (infinities
 * included) and NaN in both count as agreement, a NaN in one as infinite
 * error */
static double rel_err_f(const float *c, const float *g, size_t n) {
    double num = 0.0, den = 1e-6;
    for (size_t i = 0; i < n; i++) {
        if (c[i] == g[i] || (isnan(c[i]) && isnan(g[i]))) {
            if (isfinite(c[i]) && fabs(c[i]) > den) den = fabs(c[i]);
            continue;
        }
        double d = fabs((double)g[i] - (double)c[i]);
        if (!(d <= num)) num = isfinite(d) ? d : INFINITY;
        if (isfinite(c[i]) && fabs(c[i]) > den) den = fabs(c[i]);
    }
    note_detail(c, g, n, num / den, den);
    return num / den;
}

static void report(const char *what, double err, double tol) {
    printf("  %-58s rel err %.3g (tol %.0e)\n", what, err, tol);
    CHECK(err <= tol, "%s: GPU vs CPU rel err %g > %g", what, err, tol);
    if (!(err <= tol) && worst_detail_err >= 0) printf("    where: %s\n", worst_detail);
    worst_detail_err = -1.0;
}

/* compares a whole buffer of the two backends */
static double buf_err(Buf b) {
    float *hc = malloc((b.n ? b.n : 1) * sizeof(float)), *hg = malloc((b.n ? b.n : 1) * sizeof(float));
    get_both(b.c, b.g, hc, hg, b.n * sizeof(float));
    double e = rel_err_f(hc, hg, b.n);
    free(hc);
    free(hg);
    return e;
}

static void cmp(const char *what, Buf b, double tol) { report(what, buf_err(b), tol); }

/* whether `bytes` bytes at x (on backend bx) and at y (on by) are equal */
static int same_bits(Backend *bx, const void *x, Backend *by, const void *y, size_t bytes) {
    void *hx = malloc(bytes ? bytes : 1), *hy = malloc(bytes ? bytes : 1);
    bx->download(bx, hx, x, bytes);
    by->download(by, hy, y, bytes);
    int same = memcmp(hx, hy, bytes) == 0;
    free(hx);
    free(hy);
    return same;
}

static void cmp_exact(const char *what, const void *c, const void *g, size_t bytes) {
    int same = same_bits(cpu, c, gpu, g, bytes);
    printf("  %-58s %s\n", what, same ? "identical" : "DIFFERENT");
    CHECK(same, "%s: GPU and CPU results differ", what);
}

/* The GPU gave the same bits twice (g1, g2: the results of two runs of a
 * slot on the same inputs): no atomics or other order-dependent sums. */
static void gpu_twice_same(const char *what, const void *g1, const void *g2, size_t bytes) {
    int same = same_bits(gpu, g1, gpu, g2, bytes);
    printf("  %-58s %s\n", what, same ? "the same bits twice" : "DIFFERENT RUN TO RUN");
    CHECK(same, "%s: two GPU runs on the same inputs differ", what);
}

#endif
