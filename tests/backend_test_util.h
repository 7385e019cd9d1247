/* backend_test_util.h: the harness shared by the tests of the CPU
 * Backend's slots (tests/test_backend.c, tests/test_backend_seq.c): the
 * backend under test `be`; backend memory the test allocates (dalloc,
 * dup_f, dup_i, drand; noted in allocs, released at the end) and reads or
 * writes (get_f, dget, dset); the error measure (rel_err, report); and
 * gradient checks by central differences of a scalar loss
 * L = sum(out * R) (LossFn, num_grad, grad_err, dot_out). Static: each
 * test program has its own copy. */
#ifndef NMT_BACKEND_TEST_UTIL_H
#define NMT_BACKEND_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "common.h"
#include "test_util.h"

#define GRAD_TOL 1e-2 /* central differences in float32, eps 1e-3 */
#define FWD_TOL 1e-5  /* float32 forward against a double reference */

static Backend *be;

/* ---- backend memory ---- */

/* Backend allocations made by the test, released at the end. */
static void *allocs[1024];
static int n_allocs;

static void *dalloc(size_t bytes) {
    void *p = be->alloc(be, bytes);
    if (!p || n_allocs == (int)NMT_ARRAY_LEN(allocs)) {
        fprintf(stderr, "backend alloc of %zu bytes failed\n", bytes);
        exit(2);
    }
    allocs[n_allocs++] = p;
    return p;
}

static float *dup_f(const float *h, size_t n) {
    float *d = dalloc(n * sizeof *d);
    be->upload(be, d, h, n * sizeof *d);
    return d;
}

static int32_t *dup_i(const int32_t *h, size_t n) {
    int32_t *d = dalloc(n * sizeof *d);
    be->upload(be, d, h, n * sizeof *d);
    return d;
}

static float *drand(size_t n, float lo, float hi) {
    float *h = test_hrand(n, lo, hi);
    float *d = dup_f(h, n);
    free(h);
    return d;
}

static float *get_f(const float *d, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof *h);
    be->download(be, h, d, n * sizeof *h);
    return h;
}

static float dget(const float *d, size_t i) {
    float v;
    be->download(be, &v, d + i, sizeof v);
    return v;
}

static void dset(float *d, size_t i, float v) { be->upload(be, d + i, &v, sizeof v); }

/* ---- error measures ---- */

/* max_i |a_i - ref_i| / max_i |ref_i| (floored): relative to the size of
 * the whole tensor, so tiny entries do not blow it up. */
static double rel_err(const float *a, const double *ref, size_t n) {
    double num = 0.0, den = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (!(d <= num)) num = d; /* NaN propagates */
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return num / den;
}

static void report(const char *op, double err, double tol) {
    printf("  %-44s worst rel err %.3g (tol %.0e)\n", op, err, tol);
    CHECK(err <= tol, "%s: rel err %g > %g", op, err, tol);
}

/* ---- gradient checks ---- */

/* A loss: runs the forward on the current backend inputs and returns
 * sum(out * R) in double. */
typedef double (*LossFn)(void *ctx);

/* num (n) (=) dL/dx by central differences, perturbing x in backend memory */
static void num_grad(LossFn loss, void *ctx, float *x, size_t n, double *num) {
    const double eps = 1e-3;
    for (size_t i = 0; i < n; i++) {
        float orig = dget(x, i);
        float xp = (float)(orig + eps), xm = (float)(orig - eps);
        dset(x, i, xp);
        double lp = loss(ctx);
        dset(x, i, xm);
        double lm = loss(ctx);
        dset(x, i, orig);
        num[i] = (lp - lm) / ((double)xp - (double)xm);
    }
}

/* The analytic gradient is `dx` minus what it held before the backward
 * (`before`, NULL for (=) outputs); returns the relative error. */
static double grad_err(LossFn loss, void *ctx, float *x, size_t n, const float *dx,
                       const float *before) {
    double *num = malloc(n * sizeof *num);
    float *ana = get_f(dx, n);
    if (before)
        for (size_t i = 0; i < n; i++) ana[i] -= before[i];
    num_grad(loss, ctx, x, n, num);
    double err = rel_err(ana, num, n);
    free(num);
    free(ana);
    return err;
}

/* sum_i out_i R_i over backend memory `out` */
static double dot_out(const float *out, const float *R, size_t n) {
    float *h = get_f(out, n);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)h[i] * R[i];
    free(h);
    return s;
}

#endif
