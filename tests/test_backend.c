/* test_backend.c: the slots of the CPU Backend (backend.h) but the
 * sequence-model ones (tests/test_backend_seq.c), called through the table
 * (be->op(be, ...)) on backend memory: memory and copies, GEMM, elementwise
 * ops, the optimiser updates, dropout, top-k, the loss, layer
 * normalisation and the small backward ops:
 * - forward slots against naive reference loops written here (in double);
 * - every backward slot against central differences of a scalar loss
 *   L = sum(out * R) with random R (the loss accumulated in double);
 * - that no slot is NULL;
 * - that results do not depend on the thread count.
 * Prints the worst relative error per op. The harness: backend_test_util.h. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_test_util.h"
#include "common.h"
#include "test_util.h"

/* ======================= memory and copies ======================= */

static void test_memory(void) {
    float *d = dalloc(1000 * sizeof(float));
    float *h = get_f(d, 1000);
    int zero = 1;
    for (int i = 0; i < 1000; i++) zero &= h[i] == 0.0f;
    CHECK(zero, "alloc returns zeroed memory");
    float src[7] = {1, -2, 3.5f, 4, 5, 6, 7}, back[7];
    be->upload(be, d, src, sizeof src);
    be->download(be, back, d, sizeof back);
    CHECK(memcmp(src, back, sizeof src) == 0, "upload/download round trip");
    float *e = dalloc(7 * sizeof(float));
    be->copy(be, e, d, 7 * sizeof(float));
    be->download(be, back, e, sizeof back);
    CHECK(memcmp(src, back, sizeof src) == 0, "copy");
    be->zero(be, d + 2, 3 * sizeof(float));
    be->download(be, back, d, sizeof back);
    CHECK(back[1] == -2 && back[2] == 0 && back[4] == 0 && back[5] == 6, "zero a range");
    /* a download in halves, two pending: each gives src as it was at its
     * start (work queued after it may overwrite src) */
    float back2[7];
    be->download_start(be, back, e, sizeof back);
    be->zero(be, e, sizeof back);
    be->download_start(be, back2, e, sizeof back2);
    be->download_finish(be);
    be->download_finish(be);
    CHECK(memcmp(src, back, sizeof src) == 0 && back2[0] == 0 && back2[6] == 0, "download_start/finish");
    void *z = be->alloc(be, 0);
    CHECK(z != NULL, "alloc(0) gives a pointer");
    be->release(be, z);
    be->release(be, NULL);
    free(h);

    /* copy_cols / add_cols: 3 rows x 4 cols between ld 7 and ld 10 */
    int rows = 3, cols = 4, lds = 7, ldd = 10;
    float *hs = test_hrand((size_t)rows * lds, -1, 1), *hd = test_hrand((size_t)rows * ldd, -1, 1);
    float *ds = dup_f(hs, (size_t)rows * lds), *dd = dup_f(hd, (size_t)rows * ldd);
    be->copy_cols(be, dd + 2, ldd, ds + 1, lds, rows, cols);
    float *r1 = get_f(dd, (size_t)rows * ldd);
    be->add_cols(be, dd + 2, ldd, ds + 1, lds, rows, cols);
    float *r2 = get_f(dd, (size_t)rows * ldd);
    int ok1 = 1, ok2 = 1;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ldd; c++) {
            int in = c >= 2 && c < 2 + cols;
            float want = in ? hs[r * lds + 1 + c - 2] : hd[r * ldd + c];
            ok1 &= r1[r * ldd + c] == want;
            ok2 &= r2[r * ldd + c] == (in ? want + want : want);
        }
    CHECK(ok1, "copy_cols copies the block and nothing else");
    CHECK(ok2, "add_cols adds the block and nothing else");
    free(hs); free(hd); free(r1); free(r2);
}

/* ======================= dense algebra ======================= */

/* element (i, p) of op(A) for a row-major A with leading dimension lda */
static double op_at(const float *A, int lda, int trans, int i, int p) {
    return trans ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
}

/* C(m, n) (ref, double) = alpha op(A) op(B) + beta C0, over the full ldc rows */
static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const float *A, int lda,
                     const float *B, int ldb, double beta, const float *C0, int ldc,
                     double *ref) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            if (j >= n) {
                ref[(size_t)i * ldc + j] = C0[(size_t)i * ldc + j];
                continue;
            }
            double s = 0.0;
            for (int p = 0; p < k; p++) s += op_at(A, lda, ta, i, p) * op_at(B, ldb, tb, p, j);
            /* beta 0: C's old values are not read (BLAS), NaN included */
            ref[(size_t)i * ldc + j] = alpha * s + (beta != 0.0 ? beta * C0[(size_t)i * ldc + j] : 0.0);
        }
}

static void test_gemm(void) {
    double worst = 0.0;
    int threads = omp_get_max_threads(); /* the backend's, restored below */
    /* a small gemm, and gemms of few rows and many columns, which the CPU
     * backend splits into a block of columns per thread (cpu_gemm.c; block
     * edges not on the ld, n not a multiple of 16), on 2 threads and on 3
     * (a middle block, both its edges rounded) */
    static const int shapes[][4] = {{5, 7, 3, 2}, {9, 1003, 37, 2}, {128, 613, 20, 2},
                                    {1, 777, 65, 2}, {7, 1003, 29, 3}, {1, 900, 33, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            omp_set_num_threads(shapes[s][3]);
            int lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 3, ldc = n + 1;
            size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
            size_t nc = (size_t)m * ldc;
            float *hA = test_hrand(na, -1, 1), *hB = test_hrand(nb, -1, 1), *hC = test_hrand(nc, -1, 1);
            float *A = dup_f(hA, na), *B = dup_f(hB, nb), *C = dup_f(hC, nc);
            double *ref = malloc(nc * sizeof *ref);
            ref_gemm(ta, tb, m, n, k, 0.7, hA, lda, hB, ldb, 0.3, hC, ldc, ref);
            be->gemm(be, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, C, ldc);
            float *out = get_f(C, nc);
            double e = rel_err(out, ref, nc);
            if (e > worst) worst = e;
            free(hA); free(hB); free(hC); free(ref); free(out);
        }
    omp_set_num_threads(threads);
    report("gemm (4 trans combos, padded ld, alpha/beta, few rows and many columns)", worst,
           FWD_TOL);

    /* k == 0: C = beta C */
    float hc[4] = {1, 2, 3, 4};
    float *C = dup_f(hc, 4);
    be->gemm(be, false, false, 2, 2, 0, 1.0f, C, 1, C, 2, 0.5f, C, 2);
    float *o = get_f(C, 4);
    CHECK(o[0] == 0.5f && o[3] == 2.0f, "gemm with k = 0 scales C by beta");
    free(o);

    /* beta 0 ignores what C held, NaN and -inf included */
    static const int nan_shapes[][3] = {{1, 13, 7}, {2, 13, 7}, {3, 700, 9}}; /* the last split */
    for (size_t s = 0; s < sizeof nan_shapes / sizeof nan_shapes[0]; s++) {
        int m = nan_shapes[s][0], n = nan_shapes[s][1], k = nan_shapes[s][2];
        float *hA = test_hrand((size_t)m * k, -1, 1), *hB = test_hrand((size_t)n * k, -1, 1);
        float *hC = malloc((size_t)m * n * sizeof *hC);
        for (int i = 0; i < m * n; i++) hC[i] = i % 2 ? NAN : -INFINITY;
        float *A = dup_f(hA, (size_t)m * k), *B = dup_f(hB, (size_t)n * k), *Cd = dup_f(hC, (size_t)m * n);
        double *ref = malloc((size_t)m * n * sizeof *ref);
        ref_gemm(0, 1, m, n, k, 1.0, hA, k, hB, k, 0.0, hC, n, ref);
        be->gemm(be, false, true, m, n, k, 1.0f, A, k, B, k, 0.0f, Cd, n);
        float *out = get_f(Cd, (size_t)m * n);
        double e = rel_err(out, ref, (size_t)m * n);
        CHECK(e <= FWD_TOL, "gemm %d x %d x %d with beta 0 over NaN and -inf in C: rel err %g", m, n, k, e);
        free(hA); free(hB); free(hC); free(ref); free(out);
    }
}

static void test_gemm_batched(void) {
    /* attention over time-major keys (S, B, K): row s*B + b */
    int S = 5, B = 3, K = 4;
    float *hkeys = test_hrand((size_t)S * B * K, -1, 1), *hq = test_hrand((size_t)B * K, -1, 1);
    float *ha = test_hrand((size_t)B * S, 0.1f, 1);
    float *keys = dup_f(hkeys, (size_t)S * B * K), *q = dup_f(hq, (size_t)B * K);
    float *a = dup_f(ha, (size_t)B * S);
    float *scores = drand((size_t)B * S, -1, 1), *ctx = drand((size_t)B * K, -1, 1);
    /* scores[b, s] = q_b . keys[s, b]: (1, K) x (S, K)^T per b */
    be->gemm_batched(be, false, true, 1, S, K, 1.0f, q, K, K, keys, B * K, K, 0.0f, scores, S,
                     S, B);
    /* ctx[b] = sum_s a[b, s] keys[s, b]: (1, S) x (S, K) per b */
    be->gemm_batched(be, false, false, 1, K, S, 1.0f, a, S, S, keys, B * K, K, 0.0f, ctx, K, K,
                     B);
    double *rs = malloc((size_t)B * S * sizeof *rs), *rc = malloc((size_t)B * K * sizeof *rc);
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < S; s++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) acc += (double)hq[b * K + k] * hkeys[(s * B + b) * K + k];
            rs[b * S + s] = acc;
        }
        for (int k = 0; k < K; k++) {
            double acc = 0.0;
            for (int s = 0; s < S; s++) acc += (double)ha[b * S + s] * hkeys[(s * B + b) * K + k];
            rc[b * K + k] = acc;
        }
    }
    float *os = get_f(scores, (size_t)B * S), *oc = get_f(ctx, (size_t)B * K);
    report("gemm_batched: time-major scores (lda = B*K)", rel_err(os, rs, (size_t)B * S), FWD_TOL);
    report("gemm_batched: time-major context", rel_err(oc, rc, (size_t)B * K), FWD_TOL);
    free(os); free(oc); free(rs); free(rc);

    /* dkeys[s, b] += da[b, s] q_b: (S, 1)^T-stored x (1, K), beta 1, ldc B*K */
    float *hdk = test_hrand((size_t)S * B * K, -1, 1);
    float *dk = dup_f(hdk, (size_t)S * B * K);
    be->gemm_batched(be, true, false, S, K, 1, 1.0f, a, S, S, q, K, K, 1.0f, dk, B * K, K, B);
    double *rk = malloc((size_t)S * B * K * sizeof *rk);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++)
            for (int k = 0; k < K; k++) {
                size_t i = ((size_t)s * B + b) * K + k;
                rk[i] = hdk[i] + (double)ha[b * S + s] * hq[b * K + k];
            }
    float *ok = get_f(dk, (size_t)S * B * K);
    report("gemm_batched: interleaved accumulate (beta 1)", rel_err(ok, rk, (size_t)S * B * K),
           FWD_TOL);
    free(ok); free(rk); free(hdk); free(hkeys); free(hq); free(ha);

    /* every trans combination, small (parallel over the batch) and large */
    double worst = 0.0;
    for (int big = 0; big < 2; big++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                if (big && ta != tb) continue;
                int m = big ? 70 : 3, n = big ? 71 : 4, k = big ? 69 : 5, count = big ? 2 : 5;
                int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
                long sa = (long)(ta ? k : m) * lda + 5, sb = (long)(tb ? n : k) * ldb + 1;
                long sc = (long)m * ldc + 2;
                size_t na = (size_t)sa * count, nb = (size_t)sb * count, nc = (size_t)sc * count;
                float *hA = test_hrand(na, -1, 1), *hB = test_hrand(nb, -1, 1), *hC = test_hrand(nc, -1, 1);
                float *dA = dup_f(hA, na), *dB = dup_f(hB, nb), *dC = dup_f(hC, nc);
                be->gemm_batched(be, ta, tb, m, n, k, 1.3f, dA, lda, sa, dB, ldb, sb, -0.4f, dC,
                                 ldc, sc, count);
                double *ref = malloc(nc * sizeof *ref);
                for (size_t i = 0; i < nc; i++) ref[i] = hC[i]; /* gaps stay */
                for (int c = 0; c < count; c++)
                    ref_gemm(ta, tb, m, n, k, 1.3, hA + c * sa, lda, hB + c * sb, ldb, -0.4,
                             hC + c * sc, ldc, ref + c * sc);
                float *out = get_f(dC, nc);
                double e = rel_err(out, ref, nc);
                if (e > worst) worst = e;
                free(hA); free(hB); free(hC); free(ref); free(out);
            }
    report("gemm_batched: trans combos, strides, small+large", worst, FWD_TOL);
}

/* ======================= elementwise ======================= */

static void test_elementwise(void) {
    int rows = 4, cols = 9;
    size_t n = (size_t)rows * cols;
    float *hy = test_hrand(n, -1, 1), *hb = test_hrand((size_t)cols, -1, 1);
    float *y = dup_f(hy, n), *bias = dup_f(hb, (size_t)cols);
    be->add_bias(be, y, bias, rows, cols);
    double *ref = malloc(n * sizeof *ref);
    for (size_t i = 0; i < n; i++) ref[i] = (double)hy[i] + hb[i % cols];
    float *o = get_f(y, n);
    report("add_bias", rel_err(o, ref, n), FWD_TOL);
    free(o); free(ref); free(hy); free(hb);

    size_t nt = 50;
    float *hx = test_hrand(nt, -3, 3);
    hx[0] = 20.0f;
    hx[1] = -20.0f;
    float *x = dup_f(hx, nt), *t = dalloc(nt * sizeof(float));
    be->tanh_forward(be, t, x, nt);
    be->tanh_forward(be, x, x, nt); /* in place */
    double *rt = malloc(nt * sizeof *rt);
    for (size_t i = 0; i < nt; i++) rt[i] = tanh((double)hx[i]);
    float *ot = get_f(t, nt), *oi = get_f(x, nt);
    report("tanh_forward", rel_err(ot, rt, nt), FWD_TOL);
    CHECK(memcmp(ot, oi, nt * sizeof(float)) == 0, "tanh_forward in place matches");
    free(ot); free(oi); free(rt); free(hx);

    float hw[3] = {1.0f, -2.0f, 0.5f}, hg[3] = {0.1f, 0.2f, -0.3f};
    float *w = dup_f(hw, 3), *g = dup_f(hg, 3);
    be->sgd_update(be, w, g, 3, 0.5f);
    float *ow = get_f(w, 3);
    CHECK(fabsf(ow[0] - 0.95f) < 1e-6f && fabsf(ow[1] + 2.1f) < 1e-6f &&
              fabsf(ow[2] - 0.65f) < 1e-6f,
          "sgd: %g %g %g", ow[0], ow[1], ow[2]);
    be->scale(be, w, 3, -2.0f);
    float *os = get_f(w, 3);
    CHECK(os[0] == -2.0f * ow[0] && os[2] == -2.0f * ow[2], "scale");
    /* ema: avg 0.75 avg + 0.25 w; an average equal to its weight stays it exactly */
    float ha[3] = {2.0f, -1.0f, 0.3f}, hv[3] = {6.0f, 3.0f, 0.3f};
    float *avg = dup_f(ha, 3), *vals = dup_f(hv, 3);
    be->ema_update(be, avg, vals, 3, 0.75f);
    float *oa = get_f(avg, 3);
    CHECK(oa[0] == 3.0f && oa[1] == 0.0f && oa[2] == 0.3f, "ema_update: %g %g %g (want 3 0 0.3)", oa[0], oa[1], oa[2]);
    free(ow); free(os); free(oa);

    /* sum_squares against a double loop; n = 0 gives 0 */
    size_t nq = 100003;
    float *hq = test_hrand(nq, -2, 2);
    float *q = dup_f(hq, nq);
    double want = 0.0;
    for (size_t i = 0; i < nq; i++) want += (double)hq[i] * hq[i];
    double got = be->sum_squares(be, q, nq);
    report("sum_squares (n = 100003)", fabs(got - want) / want, 1e-12);
    CHECK(be->sum_squares(be, q, 0) == 0.0, "sum_squares of nothing");
    CHECK(be->sum_squares(be, q, 1) == (double)hq[0] * hq[0], "sum_squares of one");
    free(hq);
}

static void test_adam(void) {
    /* Hand-computed: w = 1, lr 0.1, b1 0.9, b2 0.999, eps 1e-8, g = 0.5 then -0.25.
     * t = 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25,
     *        w = 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.900000002
     * t = 2: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
     *        mhat = 0.02 / 0.19 = 0.1052631579, vhat = 0.00031225 / 0.001999
     *        = 0.1562031016, sqrt = 0.3952254...,
     *        w = 0.900000002 - 0.1 * 0.1052631579 / 0.3952254 = 0.8733662987
     * The other elements follow a double-precision loop. */
    float hw[5] = {1.0f, -0.3f, 2.0f, 0.7f, -1.1f};
    float hg1[5] = {0.5f, 0.01f, -3.0f, 0.2f, 1e-3f}, hg2[5] = {-0.25f, 0.02f, 1.0f, -0.2f, 2.0f};
    float *w = dup_f(hw, 5), *g = dup_f(hg1, 5), *m = dalloc(5 * 4), *v = dalloc(5 * 4);
    be->adam_update(be, w, g, m, v, 5, 0.1f, 0.9f, 0.999f, 1e-8f, 1);
    float w1 = dget(w, 0);
    be->upload(be, g, hg2, sizeof hg2);
    be->adam_update(be, w, g, m, v, 5, 0.1f, 0.9f, 0.999f, 1e-8f, 2);
    float *ow = get_f(w, 5), *om = get_f(m, 5), *ov = get_f(v, 5);
    CHECK(fabs(w1 - 0.900000002) < 1e-6, "adam step 1: w = %.9g", w1);
    CHECK(fabs(ow[0] - 0.8733662987) < 1e-6, "adam step 2: w = %.9g", ow[0]);
    CHECK(fabs(om[0] - 0.02) < 1e-7 && fabs(ov[0] / 0.00031225 - 1) < 1e-4, /* 1 - 0.999f */
          "adam moments: m = %.9g v = %.9g", om[0], ov[0]);
    double rw[5];
    for (int i = 0; i < 5; i++) {
        double wd = hw[i], md = 0, vd = 0;
        for (int t = 1; t <= 2; t++) {
            double gd = t == 1 ? hg1[i] : hg2[i];
            md = 0.9 * md + 0.1 * gd;
            vd = 0.999 * vd + 0.001 * gd * gd;
            wd -= 0.1 * (md / (1 - pow(0.9, t))) / (sqrt(vd / (1 - pow(0.999, t))) + 1e-8);
        }
        rw[i] = wd;
    }
    report("adam_update (2 steps)", rel_err(ow, rw, 5), 1e-6);
    free(ow); free(om); free(ov);
}

/* The dropout mask itself (x = 1) into device memory `out`. */
static void mask_of(float *out, size_t n, float p, uint64_t seed, uint64_t offset) {
    float *ones = malloc(n * sizeof *ones);
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f;
    be->upload(be, out, ones, n * sizeof(float));
    free(ones);
    be->dropout(be, out, out, n, p, seed, offset);
}

static void test_dropout(void) {
    size_t n = 100000;
    float p = 0.3f;
    float *mask = dalloc(n * sizeof(float)), *again = dalloc(n * sizeof(float));
    mask_of(mask, n, p, 42, 7);
    float *h = get_f(mask, n);
    double sum = 0.0;
    size_t zeros = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        sum += h[i];
        if (h[i] == 0.0f) zeros++;
        else if (h[i] != 1.0f / (1.0f - p)) bad++;
    }
    printf("  dropout_mask p = 0.3: mean %.4f, zero fraction %.4f\n", sum / n, (double)zeros / n);
    CHECK(fabs(sum / n - 1.0) < 0.02, "dropout mean %g", sum / n);
    CHECK(fabs((double)zeros / n - p) < 0.01, "dropout zero fraction %g", (double)zeros / n);
    CHECK(bad == 0, "every kept value is 1/(1-p)");

    mask_of(again, n, p, 42, 7);
    float *h2 = get_f(again, n);
    CHECK(memcmp(h, h2, n * sizeof(float)) == 0, "same (seed, offset): same mask");
    mask_of(again, 500, p, 42, 7 + 300);
    float *h3 = get_f(again, 500);
    CHECK(memcmp(h + 300, h3, 500 * sizeof(float)) == 0, "offset + i is element i of a larger draw");
    mask_of(again, n, p, 43, 7);
    float *h4 = get_f(again, n);
    size_t same = 0;
    for (size_t i = 0; i < n; i++) same += h[i] == h4[i];
    CHECK(same < n * 0.7, "another seed gives another mask (%zu of %zu equal)", same, n);
    mask_of(again, 1000, 0.0f, 42, 0);
    float *h5 = get_f(again, 1000);
    int ones = 1;
    for (int i = 0; i < 1000; i++) ones &= h5[i] == 1.0f;
    CHECK(ones, "p = 0 gives all ones");

    /* y = x * mask, out of place and in place, at offsets and lengths that
     * cut Philox blocks at both ends and span several chunks: exactly the
     * product with the mask drawn alone */
    size_t lens[] = {1, 3, 6, 4099, 9000, n - 11}, offs[] = {0, 1, 5, 7};
    float *hx = test_hrand(n, -2, 2), *x = dup_f(hx, n), *y = dalloc(n * sizeof(float));
    size_t wrong = 0, checked = 0;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t oi = 0; oi < sizeof offs / sizeof *offs; oi++) {
            size_t len = lens[li];
            uint64_t off = offs[oi] + 1000 * li;
            mask_of(again, len, p, 42, off);
            be->dropout(be, y, x, len, p, 42, off);
            float *hm = get_f(again, len), *hy = get_f(y, len);
            float *inplace = dup_f(hx, len);
            be->dropout(be, inplace, inplace, len, p, 42, off);
            float *hi = get_f(inplace, len);
            for (size_t i = 0; i < len; i++) {
                wrong += hy[i] != hx[i] * hm[i] || hi[i] != hy[i];
                checked++;
            }
            free(hm); free(hy); free(hi);
        }
    CHECK(wrong == 0, "dropout(y, x) = x * mask, in place too (%zu of %zu wrong)", wrong, checked);
    free(hx);
    free(h); free(h2); free(h3); free(h4); free(h5);
}

/* Word dropout: row r of dropout_rows is x's row times element r of the
 * mask dropout draws from the same (seed, offset), whole rows kept or
 * zeroed, at about the rate p; in place too, at offsets inside Philox
 * blocks. */
static void test_dropout_rows(void) {
    int rows = 20000, cols = 7;
    size_t n = (size_t)rows * cols;
    float p = 0.25f;
    float *hx = test_hrand(n, -2, 2);
    for (size_t i = 0; i < n; i++)
        if (hx[i] == 0.0f) hx[i] = 1.0f; /* a zero in x would look dropped */
    float *x = dup_f(hx, n), *y = dalloc(n * sizeof(float)), *mask = dalloc((size_t)rows * sizeof(float));
    uint64_t offs[] = {0, 1, 3, 6, (uint64_t)1 << 40};
    size_t wrong = 0, partial = 0, zeros = 0, checked = 0;
    for (size_t oi = 0; oi < sizeof offs / sizeof *offs; oi++) {
        mask_of(mask, (size_t)rows, p, 99, offs[oi]);
        be->dropout_rows(be, y, x, rows, cols, p, 99, offs[oi]);
        float *hm = get_f(mask, (size_t)rows), *hy = get_f(y, n);
        float *inplace = dup_f(hx, n);
        be->dropout_rows(be, inplace, inplace, rows, cols, p, 99, offs[oi]);
        float *hi = get_f(inplace, n);
        for (int r = 0; r < rows; r++) {
            int zero_cols = 0;
            for (int c = 0; c < cols; c++) {
                size_t i = (size_t)r * cols + c;
                wrong += hy[i] != hx[i] * hm[r] || hi[i] != hy[i];
                zero_cols += hy[i] == 0.0f;
            }
            partial += zero_cols != 0 && zero_cols != cols;
            zeros += zero_cols == cols;
            checked++;
        }
        free(hm); free(hy); free(hi);
    }
    double rate = (double)zeros / checked;
    printf("  dropout_rows p = 0.25: zeroed rows %.4f\n", rate);
    CHECK(wrong == 0, "dropout_rows: row r = x's row r times dropout's mask element offset + r, in place too (%zu wrong)", wrong);
    CHECK(partial == 0, "dropout_rows zeroes whole rows (%zu rows partly zero)", partial);
    CHECK(fabs(rate - p) < 0.01, "dropout_rows zeroes rows at the rate p (%.4f)", rate);
    be->dropout_rows(be, y, x, rows, cols, 0.0f, 99, 0);
    float *h0 = get_f(y, n);
    CHECK(memcmp(h0, hx, n * sizeof(float)) == 0, "dropout_rows with p = 0 copies x");
    free(h0); free(hx);
}

/* The first maximum of v (n) not yet used, or -1: the naive top-k's
 * pick (ties: lower index first; NaN never picked). */
static int naive_pick(const float *v, int n, int *used) {
    int best = -1;
    for (int c = 0; c < n; c++)
        if (!used[c] && v[c] == v[c] && (best < 0 || v[c] > v[best])) best = c;
    if (best >= 0) used[best] = 1;
    return best;
}

/* topk of rows x (rows, cols) (+ bias, as log-probabilities) against a
 * naive selection over want (rows, cols), the values the slot must rank:
 * indices and values exact, past the row's end -inf and -1; x unchanged. */
static int topk_matches(const float *hx, const float *bias, int rows, int cols, bool logprobs,
                        int k, const float *want) {
    float *x = dup_f(hx, (size_t)rows * cols);
    float *val = dalloc((size_t)rows * k * sizeof(float));
    int32_t *idx = dalloc((size_t)rows * k * sizeof(int32_t));
    be->topk(be, x, bias, rows, cols, logprobs, k, val, idx);
    float *hv = get_f(val, (size_t)rows * k), *after = get_f(x, (size_t)rows * cols);
    int32_t *hi = malloc((size_t)rows * k * sizeof *hi);
    int *used = calloc((size_t)cols + 1, sizeof *used);
    be->download(be, hi, idx, (size_t)rows * k * sizeof *hi);
    int ok = memcmp(after, hx, (size_t)rows * cols * sizeof(float)) == 0;
    for (int r = 0; r < rows; r++) {
        memset(used, 0, (size_t)cols * sizeof *used);
        for (int j = 0; j < k; j++) {
            int best = naive_pick(want + (size_t)r * cols, cols, used);
            float wv = best >= 0 ? want[(size_t)r * cols + best] : -INFINITY;
            ok &= hi[r * k + j] == best && memcmp(&hv[r * k + j], &wv, sizeof wv) == 0;
        }
    }
    free(hv); free(after); free(hi); free(used);
    return ok;
}

static void test_topk(void) {
    int rows = 3, cols = 9;
    float hx[27] = {1, 5, 3, 5, 2, 5, 0, -1, 4,        /* ties at 5 */
                    -3, -1, -2, -7, -1, -9, -4, -5, -6, /* all negative */
                    2, 2, 2, 2, 2, 2, 2, 2, 2};         /* all equal */
    for (int k = 1; k <= cols + 3; k += 3)
        CHECK(topk_matches(hx, NULL, rows, cols, false, k, hx), "topk k = %d (ties: lower index first)", k);
    /* rows longer than the CPU's blocks of 16 columns, values from a small
     * set (ties across blocks), a short last block; then with a bias (-inf
     * at two columns, as decoding masks PAD and BOS) and as log-probabilities:
     * the same as add_bias, log_softmax and topk one after the other */
    rows = 5;
    const int widths[3] = {1001, 16, 7};
    for (int wi = 0; wi < 3; wi++) {
        cols = widths[wi];
        size_t n = (size_t)rows * cols;
        float *h = test_hrand(n, -1, 1), *hb = test_hrand((size_t)cols, -3, 3);
        for (size_t i = 0; i < n; i++) h[i] = (float)(int)(h[i] * 4.0f) * 0.25f - 0.125f;
        for (int c = 0; c < cols; c++) h[cols + c] = 1.5f; /* row 1: all equal */
        h[2 * cols + cols - 1] = 30.0f;                    /* row 2: the best is last */
        hb[0] = hb[cols > 1 ? 1 : 0] = -INFINITY;
        float *bias = dup_f(hb, (size_t)cols);
        float *want = malloc(n * sizeof *want);
        for (int logprobs = 0; logprobs <= 1; logprobs++) {
            float *y = dup_f(h, n);
            be->add_bias(be, y, bias, rows, cols);
            if (logprobs) be->log_softmax(be, rows, cols, y, y);
            be->download(be, want, y, n * sizeof *want);
            const int ks[4] = {1, 5, 12, 40};
            for (int i = 0; i < 4; i++) {
                CHECK(topk_matches(h, NULL, rows, cols, false, ks[i], h), "topk %d x %d k = %d (ties)",
                      rows, cols, ks[i]);
                CHECK(topk_matches(h, bias, rows, cols, logprobs, ks[i], want),
                      "topk of x + bias%s, %d x %d, k = %d: add_bias%s then topk", logprobs ? " as log-probs" : "",
                      rows, cols, ks[i], logprobs ? ", log_softmax" : "");
            }
        }
        free(h); free(hb); free(want);
    }
}

/* ======================= loss ======================= */

typedef struct {
    int N, V;
    float eps, scale;
    float *logits, *loss, *nll, *dl;
    const int32_t *targets;
} XentCtx;

static double xent_loss(void *p) {
    XentCtx *C = p;
    be->softmax_xent(be, C->N, C->V, C->logits, C->targets, NMT_PAD_ID, C->eps, C->scale,
                     C->loss, C->nll, C->dl);
    float *h = get_f(C->loss, (size_t)C->N);
    double s = 0.0;
    for (int r = 0; r < C->N; r++) s += (double)h[r] * C->scale;
    free(h);
    return s;
}

static void test_xent(float eps) {
    char name[96];
    int N = 4, V = 11;
    int32_t ht[4] = {5, NMT_PAD_ID, 10, 3};
    size_t n = (size_t)N * V;
    float *hl = test_hrand(n, -3, 3);
    for (int v = 0; v < V; v++) hl[2 * V + v] += 1000.0f; /* stability: huge logits */
    XentCtx C = {N, V, eps, 0.37f, dup_f(hl, n), drand(4, -5, 5), drand(4, -5, 5),
                 drand(n, -5, 5), dup_i(ht, 4)};
    xent_loss(&C);
    float *ol = get_f(C.loss, 4), *on = get_f(C.nll, 4), *od = get_f(C.dl, n);
    double rl[4], rn[4], *rd = malloc(n * sizeof *rd);
    for (int r = 0; r < N; r++) { /* direct double computation */
        const float *x = hl + (size_t)r * V;
        double m = x[0], sum = 0.0, mean_nlp = 0.0;
        for (int v = 1; v < V; v++) m = fmax(m, x[v]);
        for (int v = 0; v < V; v++) sum += exp(x[v] - m);
        double lse = m + log(sum);
        for (int v = 0; v < V; v++) mean_nlp += (lse - x[v]) / V;
        int pad = ht[r] == NMT_PAD_ID;
        rn[r] = pad ? 0.0 : lse - x[ht[r]];
        rl[r] = pad ? 0.0 : (1 - eps) * rn[r] + eps * mean_nlp;
        for (int v = 0; v < V; v++) {
            double q = eps / V + (v == ht[r] ? 1 - eps : 0);
            rd[(size_t)r * V + v] = pad ? 0.0 : 0.37 * (exp(x[v] - lse) - q);
        }
    }
    snprintf(name, sizeof name, "softmax_xent eps=%.1f: loss, nll", eps);
    report(name, fmax(rel_err(ol, rl, 4), rel_err(on, rn, 4)), FWD_TOL);
    CHECK(ol[1] == 0.0f && on[1] == 0.0f, "pad row: zero loss");
    snprintf(name, sizeof name, "softmax_xent eps=%.1f: dlogits vs direct", eps);
    report(name, rel_err(od, rd, n), FWD_TOL);
    int zero = 1;
    for (int v = 0; v < V; v++) zero &= od[V + v] == 0.0f;
    CHECK(zero, "pad row: zero gradient");

    /* in place: dlogits == logits */
    float *inplace = dup_f(hl, n);
    be->softmax_xent(be, N, V, inplace, C.targets, NMT_PAD_ID, eps, 0.37f, C.loss, C.nll, inplace);
    float *oi = get_f(inplace, n), *ol2 = get_f(C.loss, 4);
    CHECK(memcmp(oi, od, n * sizeof(float)) == 0 && memcmp(ol2, ol, 4 * sizeof(float)) == 0,
          "softmax_xent in place matches");

    /* gradient check (on modest logits: the huge row makes the loss's float
     * rounding larger than the finite differences) */
    for (int v = 0; v < V; v++) hl[2 * V + v] -= 1000.0f;
    be->upload(be, C.logits, hl, n * sizeof(float));
    xent_loss(&C);
    float *grad = dalloc(n * sizeof(float));
    be->copy(be, grad, C.dl, n * sizeof(float));
    snprintf(name, sizeof name, "softmax_xent eps=%.1f: gradient (with pad row)", eps);
    report(name, grad_err(xent_loss, &C, C.logits, n, grad, NULL), GRAD_TOL);
    free(hl); free(ol); free(on); free(od); free(rd); free(oi); free(ol2);
}

static void test_log_softmax(void) {
    int N = 3, V = 7;
    size_t n = (size_t)N * V;
    float *hl = test_hrand(n, -4, 4);
    for (int v = 0; v < V; v++) hl[v] -= 500.0f;
    float *x = dup_f(hl, n), *out = drand(n, -1, 1);
    be->log_softmax(be, N, V, x, out);
    be->log_softmax(be, N, V, x, x);
    double *ref = malloc(n * sizeof *ref);
    for (int r = 0; r < N; r++) {
        double m = -INFINITY, sum = 0.0;
        for (int v = 0; v < V; v++) m = fmax(m, hl[r * V + v]);
        for (int v = 0; v < V; v++) sum += exp(hl[r * V + v] - m);
        for (int v = 0; v < V; v++) ref[r * V + v] = hl[r * V + v] - m - log(sum);
    }
    float *o = get_f(out, n), *oi = get_f(x, n);
    report("log_softmax", rel_err(o, ref, n), FWD_TOL);
    CHECK(memcmp(o, oi, n * sizeof(float)) == 0, "log_softmax in place matches");
    free(hl); free(ref); free(o); free(oi);
}

/* ======================= layer normalisation ======================= */

/* ref (rows, cols) (=) prior + gain (x - mean) rstd (prior NULL: 0) and
 * stats (rows, 2) (=) mean, rstd, in double; eps 1e-5 (PyTorch's LayerNorm
 * default, kernels/layer_norm_math.h), the variance biased */
static void ref_layer_norm(int rows, int cols, const float *x, const float *gain, const float *prior,
                           double *ref, double *stats) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < cols; j++) mean += xr[j];
        mean /= cols;
        for (int j = 0; j < cols; j++) var += (xr[j] - mean) * (xr[j] - mean);
        double rstd = 1.0 / sqrt(var / cols + 1e-5);
        for (int j = 0; j < cols; j++) {
            size_t i = (size_t)r * cols + j;
            ref[i] = (prior ? prior[i] : 0.0) + gain[j] * (xr[j] - mean) * rstd;
        }
        stats[2 * r] = mean;
        stats[2 * r + 1] = rstd;
    }
}

typedef struct {
    int rows, cols;
    float *x, *gain, *y; /* backend memory: the inputs, and y (rows, cols) */
    float *R;            /* host (rows, cols) */
} LnCtx;

static double ln_loss(void *p) {
    LnCtx *C = p;
    be->layer_norm_forward(be, C->rows, C->cols, C->x, C->gain, false, C->y, NULL);
    return dot_out(C->y, C->R, (size_t)C->rows * C->cols);
}

/* a (n) holds the same bits as b (n) in backend memory */
static int same_f(const float *a, const float *b, size_t n) {
    float *ha = get_f(a, n), *hb = get_f(b, n);
    int same = memcmp(ha, hb, n * sizeof *ha) == 0;
    free(ha);
    free(hb);
    return same;
}

/* layer_norm_forward ((=), +=, stats, stats NULL) against the double
 * reference; layer_norm_backward's dx ((=)) and dgain (+=) against central
 * differences of sum(R * y); dx in place (dx == x) against out of place. x
 * is offset (mean near 1) so that a missing mean shows. */
static void test_layer_norm(int rows, int cols) {
    char name[96];
    int first = n_allocs;
    size_t n = (size_t)rows * cols;
    float *hx = test_hrand(n, -1, 3), *hg = test_hrand((size_t)cols, 0.5f, 1.5f);
    float *hprior = test_hrand(n, -1, 1);
    float *x = dup_f(hx, n), *gain = dup_f(hg, (size_t)cols);
    double *ref = malloc(n * sizeof *ref), *rstats = malloc(2 * (size_t)rows * sizeof *rstats);

    /* forward (=) over garbage, with stats */
    float *y = drand(n, -9, 9), *stats = drand(2 * (size_t)rows, -9, 9);
    be->layer_norm_forward(be, rows, cols, x, gain, false, y, stats);
    ref_layer_norm(rows, cols, hx, hg, NULL, ref, rstats);
    float *o = get_f(y, n), *os = get_f(stats, 2 * (size_t)rows);
    snprintf(name, sizeof name, "layer_norm_forward %d x %d", rows, cols);
    report(name, rel_err(o, ref, n), FWD_TOL);
    /* mean and rstd apart: each relative to its own scale */
    float *om = malloc((size_t)rows * sizeof *om), *orr = malloc((size_t)rows * sizeof *orr);
    double *rm = malloc((size_t)rows * sizeof *rm), *rr = malloc((size_t)rows * sizeof *rr);
    for (int r = 0; r < rows; r++) {
        om[r] = os[2 * r], orr[r] = os[2 * r + 1];
        rm[r] = rstats[2 * r], rr[r] = rstats[2 * r + 1];
    }
    snprintf(name, sizeof name, "layer_norm_forward %d x %d: stats (mean, rstd)", rows, cols);
    report(name, fmax(rel_err(om, rm, (size_t)rows), rel_err(orr, rr, (size_t)rows)), FWD_TOL);
    free(om); free(orr); free(rm); free(rr);

    /* accumulate: onto the prior contents */
    float *ya = dup_f(hprior, n), *sa = drand(2 * (size_t)rows, -9, 9);
    be->layer_norm_forward(be, rows, cols, x, gain, true, ya, sa);
    ref_layer_norm(rows, cols, hx, hg, hprior, ref, rstats);
    float *oa = get_f(ya, n);
    snprintf(name, sizeof name, "layer_norm_forward %d x %d accumulate", rows, cols);
    report(name, rel_err(oa, ref, n), FWD_TOL);
    CHECK(same_f(sa, stats, 2 * (size_t)rows), "layer_norm_forward %d x %d: accumulate gives the same stats",
          rows, cols);

    /* stats NULL: the same y, (=) and += */
    float *yn = drand(n, -9, 9), *yna = dup_f(hprior, n);
    be->layer_norm_forward(be, rows, cols, x, gain, false, yn, NULL);
    be->layer_norm_forward(be, rows, cols, x, gain, true, yna, NULL);
    CHECK(same_f(yn, y, n) && same_f(yna, ya, n), "layer_norm_forward %d x %d: stats NULL gives the same y",
          rows, cols);

    /* backward: dx (=) over garbage, dgain += onto prior contents */
    LnCtx C = {rows, cols, x, gain, dalloc(n * sizeof(float)), test_hrand(n, -1, 1)};
    float *R = dup_f(C.R, n), *dx = drand(n, -9, 9);
    float *before = test_hrand((size_t)cols, -1, 1), *dgain = dup_f(before, (size_t)cols);
    be->layer_norm_backward(be, rows, cols, x, stats, gain, R, dx, dgain);
    /* not for 2 columns: there xhat is +-1 but for the eps, so dx is the
     * size of float rounding (4e-5 here) and central differences measure
     * only noise (rel err 0.05 at 1 x 2); 1 column gives 0 both ways */
    snprintf(name, sizeof name, "layer_norm_backward %d x %d: dx", rows, cols);
    if (cols != 2) report(name, grad_err(ln_loss, &C, x, n, dx, NULL), GRAD_TOL);
    snprintf(name, sizeof name, "layer_norm_backward %d x %d: dgain (+=)", rows, cols);
    report(name, grad_err(ln_loss, &C, gain, (size_t)cols, dgain, before), GRAD_TOL);

    /* in place: dx == x gives the same dx and dgain as out of place */
    float *xi = dup_f(hx, n), *dgi = dup_f(before, (size_t)cols);
    be->layer_norm_backward(be, rows, cols, xi, stats, gain, R, xi, dgi);
    CHECK(same_f(xi, dx, n) && same_f(dgi, dgain, (size_t)cols),
          "layer_norm_backward %d x %d: in place (dx == x) == out of place", rows, cols);

    free(hx); free(hg); free(hprior); free(ref); free(rstats);
    free(o); free(os); free(oa); free(C.R); free(before);
    while (n_allocs > first) be->release(be, allocs[--n_allocs]);
}

/* rows 0: nothing is written */
static void test_layer_norm_empty(void) {
    int first = n_allocs;
    float *x = drand(8, -1, 1), *g = drand(4, -1, 1), *y = drand(8, -1, 1), *st = drand(4, -1, 1);
    float *dy = drand(8, -1, 1), *dg = drand(4, -1, 1);
    float *hy = get_f(y, 8), *hst = get_f(st, 4), *hg = get_f(dg, 4);
    be->layer_norm_forward(be, 0, 4, x, g, false, y, st);
    be->layer_norm_backward(be, 0, 4, x, st, g, dy, y, dg);
    float *ay = get_f(y, 8), *ast = get_f(st, 4), *ag = get_f(dg, 4);
    CHECK(!memcmp(ay, hy, 8 * 4) && !memcmp(ast, hst, 4 * 4) && !memcmp(ag, hg, 4 * 4),
          "layer_norm rows 0: nothing written");
    free(hy); free(hst); free(hg); free(ay); free(ast); free(ag);
    while (n_allocs > first) be->release(be, allocs[--n_allocs]);
}

/* ======================= small backward ops ======================= */

typedef struct {
    size_t n;
    int rows, cols;
    float *x, *y, *aux; /* aux: bias or mask */
    float *R;
} EwCtx;

static double tanh_loss(void *p) {
    EwCtx *C = p;
    be->tanh_forward(be, C->y, C->x, C->n);
    return dot_out(C->y, C->R, C->n);
}

static double bias_loss(void *p) {
    EwCtx *C = p;
    be->copy(be, C->y, C->x, C->n * sizeof(float));
    be->add_bias(be, C->y, C->aux, C->rows, C->cols);
    return dot_out(C->y, C->R, C->n);
}

static double dropout_loss(void *p) {
    EwCtx *C = p;
    be->dropout(be, C->y, C->x, C->n, 0.3f, 5, 0);
    return dot_out(C->y, C->R, C->n);
}

static double dropout_rows_loss(void *p) {
    EwCtx *C = p;
    be->dropout_rows(be, C->y, C->x, C->rows, C->cols, 0.4f, 8, 3);
    return dot_out(C->y, C->R, C->n);
}

static void test_small_backward(void) {
    int rows = 5, cols = 70; /* two column blocks */
    size_t n = (size_t)rows * cols;
    EwCtx C = {n, rows, cols, drand(n, -2, 2), dalloc(n * sizeof(float)),
               drand((size_t)cols, -1, 1), test_hrand(n, -1, 1)};
    float *R = dup_f(C.R, n);

    tanh_loss(&C);
    float *before = test_hrand(n, -1, 1), *dx = dup_f(before, n);
    be->tanh_backward(be, dx, R, C.y, n);
    report("tanh_backward", grad_err(tanh_loss, &C, C.x, n, dx, before), GRAD_TOL);
    free(before);

    before = test_hrand((size_t)cols, -1, 1);
    float *db = dup_f(before, (size_t)cols);
    be->bias_backward(be, db, R, rows, cols);
    report("bias_backward (rows 5, cols 70)", grad_err(bias_loss, &C, C.aux, (size_t)cols, db, before),
           GRAD_TOL);
    free(before);

    /* the backward of dropout is the same call on the gradient (the mask
     * drawn again) */
    dx = dalloc(n * sizeof(float));
    be->dropout(be, dx, R, n, 0.3f, 5, 0);
    report("dropout backward (the same call)", grad_err(dropout_loss, &C, C.x, n, dx, NULL), GRAD_TOL);
    be->dropout_rows(be, dx, R, rows, cols, 0.4f, 8, 3);
    report("dropout_rows backward (the same call)", grad_err(dropout_rows_loss, &C, C.x, n, dx, NULL),
           GRAD_TOL);
    free(C.R);
}

/* ======================= thread-count independence ======================= */

static void test_threads(void) {
    /* the same work on this 2-thread backend and on a 1-thread one */
    int rows = 300, cols = 513, V = 50;
    size_t n = (size_t)rows * cols;
    float *hx = test_hrand(n, -1, 1);
    int32_t *hids = malloc((size_t)rows * sizeof *hids);
    for (int i = 0; i < rows; i++) hids[i] = (int32_t)(test_urand() * V);
    float *hg = test_hrand((size_t)cols, 0.5f, 1.5f), *hdy = test_hrand(n, -1, 1);
    float *res[2][3], *ln[2][4]; /* layer norm: y, stats, dx, dgain */
    double ss[2];
    Backend *two = be, *one = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            one = cpu_backend_create(1);
            CHECK(one != NULL, "cpu_backend_create(1)");
            if (!one) return;
            be = one;
        }
        int first = n_allocs;
        float *x = dup_f(hx, n), *db = dalloc((size_t)cols * 4);
        float *dt = dalloc((size_t)V * cols * 4);
        int32_t *ids = dup_i(hids, (size_t)rows);
        float *lo = dalloc((size_t)rows * 4), *nl = dalloc((size_t)rows * 4);
        float *g = dup_f(hg, (size_t)cols), *dy = dup_f(hdy, n), *y = dalloc(n * 4);
        float *st = dalloc((size_t)rows * 2 * 4), *dx = dalloc(n * 4), *dg = dalloc((size_t)cols * 4);
        be->layer_norm_forward(be, rows, cols, x, g, false, y, st);
        be->layer_norm_backward(be, rows, cols, x, st, g, dy, dx, dg);
        ln[pass][0] = get_f(y, n);
        ln[pass][1] = get_f(st, (size_t)rows * 2);
        ln[pass][2] = get_f(dx, n);
        ln[pass][3] = get_f(dg, (size_t)cols);
        be->bias_backward(be, db, x, rows, cols);
        be->embedding_backward(be, dt, x, ids, rows, cols);
        ss[pass] = be->sum_squares(be, x, n);
        be->softmax_xent(be, rows, cols, x, ids, NMT_PAD_ID, 0.1f, 1.0f, lo, nl, x);
        res[pass][0] = get_f(db, (size_t)cols);
        res[pass][1] = get_f(dt, (size_t)V * cols);
        res[pass][2] = get_f(x, n);
        while (n_allocs > first) be->release(be, allocs[--n_allocs]);
    }
    one->destroy(one);
    be = two; /* note: OpenMP now runs on 1 thread for the rest */
    CHECK(memcmp(res[0][0], res[1][0], (size_t)cols * 4) == 0, "bias_backward: 2 threads == 1");
    CHECK(memcmp(res[0][1], res[1][1], (size_t)V * cols * 4) == 0,
          "embedding_backward: 2 threads == 1");
    CHECK(memcmp(res[0][2], res[1][2], n * 4) == 0, "softmax_xent: 2 threads == 1");
    CHECK(ss[0] == ss[1], "sum_squares: 2 threads == 1");
    CHECK(memcmp(ln[0][0], ln[1][0], n * 4) == 0 && memcmp(ln[0][1], ln[1][1], (size_t)rows * 2 * 4) == 0,
          "layer_norm_forward: 2 threads == 1");
    CHECK(memcmp(ln[0][2], ln[1][2], n * 4) == 0 && memcmp(ln[0][3], ln[1][3], (size_t)cols * 4) == 0,
          "layer_norm_backward: 2 threads == 1");
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < 3; i++) free(res[p][i]);
        for (int i = 0; i < 4; i++) free(ln[p][i]);
    }
    free(hx); free(hids); free(hg); free(hdy);
}

static int slots_set(const Backend *b) {
#define SLOT_SET(f) (b->f != NULL)
    return SLOT_SET(alloc) && SLOT_SET(release) && SLOT_SET(upload) && SLOT_SET(download) &&
           SLOT_SET(download_start) && SLOT_SET(download_finish) &&
           SLOT_SET(copy) && SLOT_SET(zero) && SLOT_SET(copy_cols) && SLOT_SET(add_cols) &&
           SLOT_SET(gemm) && SLOT_SET(gemm_batched) && SLOT_SET(add_bias) &&
           SLOT_SET(bias_backward) && SLOT_SET(tanh_forward) && SLOT_SET(tanh_backward) &&
           SLOT_SET(dropout) && SLOT_SET(dropout_rows) && SLOT_SET(layer_norm_forward) && SLOT_SET(layer_norm_backward) &&
           SLOT_SET(lstm_forward) && SLOT_SET(lstm_backward) && SLOT_SET(lstm_seq_recurrence) &&
           SLOT_SET(lstm_seq_recurrence_backward) && SLOT_SET(embedding_forward) &&
           SLOT_SET(embedding_backward) && SLOT_SET(additive_score_forward) &&
           SLOT_SET(additive_score_backward) && SLOT_SET(attn_softmax_forward) &&
           SLOT_SET(attn_softmax_backward) && SLOT_SET(local_p_forward) &&
           SLOT_SET(local_p_backward) && SLOT_SET(guided_align) && SLOT_SET(softmax_xent) &&
           SLOT_SET(log_softmax) && SLOT_SET(sum_squares) && SLOT_SET(scale) && SLOT_SET(adam_update) &&
           SLOT_SET(sgd_update) && SLOT_SET(ema_update) && SLOT_SET(topk) && SLOT_SET(fork) && SLOT_SET(lane) &&
           SLOT_SET(join) && SLOT_SET(destroy);
#undef SLOT_SET
}

int main(void) {
    be = cpu_backend_create(2);
    CHECK(be != NULL, "cpu_backend_create");
    if (!be) return test_summary("test_backend");
    CHECK(strcmp(be->name, "cpu") == 0, "name");
    CHECK(slots_set(be), "no slot is NULL");

    test_memory();
    test_gemm();
    test_gemm_batched();
    test_elementwise();
    test_adam();
    test_dropout();
    test_dropout_rows();
    test_topk();

    test_xent(0.0f);
    test_xent(0.1f);
    test_log_softmax();
    test_layer_norm(1, 1);
    test_layer_norm(1, 2);
    test_layer_norm(37, 2);
    test_layer_norm(3, 1);
    test_layer_norm(2, 3);
    test_layer_norm(5, 70);
    test_layer_norm(1, 4 * 33);
    test_layer_norm(37, 4 * 33);
    test_layer_norm_empty();
    test_small_backward();
    test_threads();

    for (int i = 0; i < n_allocs; i++) be->release(be, allocs[i]);
    be->destroy(be);
    return test_summary("test_backend");
}
