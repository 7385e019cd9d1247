/* test_gpu_parity.c: the CUDA backend against the CPU backend (the
 * reference), on the same seeded random inputs (never all zeros), with
 * awkward shapes (B = 1, S != T, sizes that are not multiples of 32 or 8):
 * - every Backend slot, compared by relative error (max |gpu - cpu| over
 *   max |cpu|): float32 ops below 1e-4, gemm below 1e-4 (1e-2 with
 *   NMT_TF32=1), integer and copy results exactly, dropout masks bit for bit
 *   (guided_align: gpu_parity_align.h);
 * - the traffic of a training step (cuda_backend_counters): no device
 *   allocation, and the host waits twice (the loss, the gradient norm);
 * - nmt's own GEMM kernel (NMT_CUDA_GEMM=own) bit for bit against its CPU
 *   twin (gpu_parity_own_gemm.h); with NMT_CUDA_GEMM=own in the
 *   environment the whole test runs on it;
 * - the error path: a rejected cuBLAS call is recorded, later slots are
 *   no-ops, download gives zeros and sum_squares NaN;
 * - host time and the device profile (NMT_CUDA_PROFILE, gpu_parity_profile.h);
 * - whole training steps of small models, with the same weights on both:
 *   loss, every gradient tensor, three SGD steps; then greedy and beam
 *   decoding give the same tokens. First seven named models (B = 1,
 *   attention dropout, K != H, style none), then the sweep over every
 *   attention combination: style x score x mode x heads 1, 2 x input
 *   feeding (Luong), 72 models. NMT_PARITY_SWEEP_STRIDE=K runs every K-th
 *   combination only (the emulator build: each model takes seconds there).
 * Without a visible GPU (or in a build without CUDA) it checks that
 * cuda_backend_create refuses cleanly with a reason, prints a SKIP line,
 * then runs the harness self-test below (which passes or fails on its own). scripts/gpu-check.sh runs it on a GPU machine (docs/gpu-runs.md);
 * `make gpu-emu-check` links it with the CUDA backend built for the CPU
 * emulator of tests/gpu_emu/ (docs/gpu.md). NMT_PARITY_SELFTEST=1 (and
 * the no-GPU path): a second CPU backend (1 thread) stands in for the GPU,
 * which checks this harness only. The harness (buffers on both backends,
 * the comparisons) is tests/gpu_parity_harness.h. NMT_PARITY_NO_REFUSAL=1
 * leaves out the refused-capture test, whose deliberately illegal call
 * compute-sanitizer counts as an error; NMT_PARITY_NO_PROFILE=1 the device
 * profile's test (CUPTI inside the tool). The decoding settings of the
 * environment (NMT_DECODE_QUANTUM, NMT_DECODE_PIPELINE, NMT_DECODE_FOLD,
 * NMT_DECODE_QUERY_FORM: backend_select.h) apply to the CUDA backend, not
 * to the CPU reference: a failing decoding line can be traced to one of
 * the ways the GPU decodes by turning it off. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_select.h"
#include "common.h"
#include "config.h"
#include "gpu/gpu_backend.h"
#include "kernels/align_math.h"
#include "model/gradcheck.h"
#include "model/seq2seq.h"
#include "model/decode_step.h"
#include "gpu_parity_harness.h"
#include "test_util.h"

#define OP_TOL 1e-4    /* one float32 op, GPU against CPU */
#define STEP_TOL 1e-3  /* a gradient tensor after a whole forward and backward */
#define LOSS_TOL 1e-5  /* a model's loss */

static int selftest; /* NMT_PARITY_SELFTEST: the "GPU" is a second CPU backend */
static double gemm_tol = 1e-4;
/* NMT_TF32: cuBLAS rounds GEMM inputs to 10-bit mantissas, so only the GEMM
 * slots are compared (at 1e-2); the whole-model checks (loss at 1e-5, the
 * same tokens from greedy and beam search) assume float32 GEMMs and are
 * skipped in that run (the default run checks the models; the benchmark
 * step of scripts/gpu-check.sh trains with TF32). */
static int tf32;
/* NMT_CUDA_GEMM=own: every backend made here computes its GEMMs with nmt's
 * own kernel, so the whole test runs on it (the error path and the host
 * time then expect its names); test_own_gemm checks it on its own either
 * way (gpu_parity_own_gemm.h) */
static int own_gemm_env;
/* NMT_CUDA_PERSISTENT: whether the whole models run the persistent
 * recurrence (the slot tests switch it on and off, then back to this) */
static int persist_env;

/* ======================= memory ======================= */

/* download_start/download_finish (backend.h): two pending at once, each
 * giving src as it was when started (work queued after a start overwrites
 * it), host_dst untouched until its finish, one wait per finish; a
 * download larger than a staging slot; zero bytes. x (n floats, n >= 512)
 * holds hx; left as it was. */
static void test_download_halves(float *x, const float *hx, size_t n) {
    static float h1[1000], h2[1000];
    CudaCounters a, b;
    for (size_t i = 0; i < n; i++) h1[i] = h2[i] = -7.0f;
    cuda_backend_counters(gpu, &a);
    gpu->download_start(gpu, h1, x, n * sizeof(float));
    gpu->scale(gpu, x, n, 2.0f); /* after the first start: not in h1 */
    gpu->download_start(gpu, h2, x + 1, 511 * sizeof(float));
    gpu->scale(gpu, x, n, 0.5f); /* back to hx, after both */
    bool untouched = h1[0] == -7.0f && h1[n - 1] == -7.0f && h2[0] == -7.0f;
    cuda_backend_counters(gpu, &b);
    /* (the CUDA backend's own promises; the self-test's CPU copies at once) */
    CHECK(selftest || (b.host_waits == a.host_waits && b.downloads_started - a.downloads_started == 2),
          "download_start: %lld waits, %lld started (want 0 and 2)", b.host_waits - a.host_waits,
          b.downloads_started - a.downloads_started);
    gpu->download_finish(gpu);
    bool second_untouched = h2[0] == -7.0f;
    gpu->download_finish(gpu);
    cuda_backend_counters(gpu, &b);
    bool ok1 = !memcmp(h1, hx, n * sizeof(float)), ok2 = true;
    for (int i = 0; i < 511; i++) ok2 &= h2[i] == 2.0f * hx[i + 1];
    CHECK(ok1 && ok2, "download halves: the first gives src as started (%d), the second after the "
          "work queued between (%d)", ok1, ok2);
    CHECK(selftest || (untouched && second_untouched),
          "download halves: host buffers untouched before their finish");
    CHECK(selftest || b.host_waits - a.host_waits == 2, "download_finish: %lld waits (want 1 each)",
          b.host_waits - a.host_waits);
    /* larger than a staging slot (256 KiB): made at the start */
    size_t big = 100000;
    float *hb = test_hrand(big, -1, 1), *back = malloc(big * sizeof(float));
    float *gb = gpu->alloc(gpu, big * sizeof(float));
    gpu->upload(gpu, gb, hb, big * sizeof(float));
    gpu->download_start(gpu, back, gb, big * sizeof(float));
    gpu->download_start(gpu, h1, x, 0); /* nothing */
    gpu->download_finish(gpu);
    gpu->download_finish(gpu);
    CHECK(!memcmp(back, hb, big * sizeof(float)), "download halves of %zu bytes", big * sizeof(float));
    gpu->release(gpu, gb);
    free(hb);
    free(back);
    const char *e = cuda_backend_error(gpu);
    CHECK(e == NULL, "download halves: CUDA error: %s", e ? e : "");
    printf("  %-58s 2 pending, in order, %zu bytes through one\n", "download halves:", big * sizeof(float));
}

static void test_memory(void) {
    void *g = gpu->alloc(gpu, 4096 * sizeof(float));
    CHECK(g != NULL, "gpu alloc");
    float *h = malloc(4096 * sizeof(float));
    gpu->download(gpu, h, g, 4096 * sizeof(float));
    int zero = 1;
    for (int i = 0; i < 4096; i++) zero &= h[i] == 0.0f;
    CHECK(zero, "gpu alloc returns zeroed memory");
    gpu->release(gpu, g);
    void *z = gpu->alloc(gpu, 0);
    CHECK(z != NULL, "gpu alloc(0) gives a pointer");
    gpu->release(gpu, z);
    gpu->release(gpu, NULL);
    free(h);

    size_t n = 1000;
    float *hs = test_hrand(n, -1, 1);
    Buf a = buf_from(hs, n), b = buf_rand(n, -1, 1);
    float back[1000];
    gpu->download(gpu, back, a.g, n * sizeof(float));
    CHECK(memcmp(back, hs, n * sizeof(float)) == 0, "upload/download round trip");
    test_download_halves(a.g, hs, n);
    BOTH(be->copy(be, P(b) + 3, P(a) + 5, 500 * sizeof(float)));
    BOTH(be->zero(be, P(b) + 600, 77 * sizeof(float)));
    BOTH(be->copy(be, P(a) + 10, P(a), 300 * sizeof(float)));   /* overlapping, forwards */
    BOTH(be->copy(be, P(a) + 400, P(a) + 407, 200 * sizeof(float))); /* overlapping, backwards */
    cmp_exact("copy, zero", b.c, b.g, n * sizeof(float));
    cmp_exact("copy of overlapping ranges (memmove)", a.c, a.g, n * sizeof(float));

    /* copy_cols / add_cols: 37 rows x 13 cols between ld 29 and ld 17 */
    int rows = 37, cols = 13, ldd = 29, lds = 17;
    Buf dd = buf_rand((size_t)rows * ldd, -1, 1), ds = buf_rand((size_t)rows * lds, -1, 1);
    BOTH(be->copy_cols(be, P(dd) + 3, ldd, P(ds) + 2, lds, rows, cols));
    cmp_exact("copy_cols 37 x 13, ld 17 -> 29", dd.c, dd.g, dd.n * sizeof(float));
    BOTH(be->copy_cols(be, P(dd) + 2, ldd, P(dd), ldd, rows, 10)); /* overlapping rows */
    cmp_exact("copy_cols within one buffer (overlapping)", dd.c, dd.g, dd.n * sizeof(float));
    BOTH(be->copy_cols(be, P(dd), 1, P(ds), 1, rows, 1)); /* a column of ld 1 */
    cmp_exact("copy_cols one column, ld 1", dd.c, dd.g, dd.n * sizeof(float));
    BOTH(be->add_cols(be, P(dd) + 1, ldd, P(ds) + 4, lds, rows, cols));
    cmp("add_cols 37 x 13", dd, 0.0);
    free(hs);
}

/* ======================= dense algebra ======================= */

static void test_gemm(void) {
    char name[128];
    const int shapes[3][3] = {{37, 53, 129}, {1, 29, 67}, {300, 257, 511}};
    for (int sh = 0; sh < 3; sh++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
                int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 5;
                Buf A = buf_rand((size_t)(ta ? k : m) * lda, -1, 1);
                Buf B = buf_rand((size_t)(tb ? n : k) * ldb, -1, 1);
                Buf C = buf_rand((size_t)m * ldc, -1, 1);
                BOTH(be->gemm(be, ta, tb, m, n, k, 0.7f, P(A), lda, P(B), ldb, 0.3f, P(C), ldc));
                snprintf(name, sizeof name, "gemm %c%c m=%d n=%d k=%d, padded ld, beta 0.3",
                         ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
                cmp(name, C, gemm_tol);
            }
    Buf C = buf_rand(12, -1, 1), A = buf_rand(12, -1, 1);
    BOTH(be->gemm(be, false, false, 3, 4, 0, 1.0f, P(A), 1, P(A), 4, 0.5f, P(C), 4));
    cmp("gemm k = 0 (C = beta C)", C, 0.0);
    BOTH(be->gemm(be, false, false, 3, 4, 0, 1.0f, P(A), 1, P(A), 4, 0.0f, P(C), 4));
    cmp("gemm k = 0, beta 0 (C = 0)", C, 0.0);
}

static void test_gemm_batched(void) {
    char name[128];
    /* attention over time-major keys (S, B, K): scores[b, s] = q_b . keys[s, b] */
    int S = 11, B = 5, K = 37;
    Buf keys = buf_rand((size_t)S * B * K, -1, 1), q = buf_rand((size_t)B * K, -1, 1);
    Buf scores = buf_rand((size_t)B * S, -1, 1), a = buf_rand((size_t)B * S, 0.1f, 1);
    Buf ctxv = buf_rand((size_t)B * K, -1, 1);
    BOTH(be->gemm_batched(be, false, true, 1, S, K, 1.0f, P(q), K, K, P(keys), B * K, K, 0.0f,
                          P(scores), S, S, B));
    cmp("gemm_batched: time-major scores (ldb = B*K)", scores, gemm_tol);
    BOTH(be->gemm_batched(be, false, false, 1, K, S, 1.0f, P(a), S, S, P(keys), B * K, K, 0.0f,
                          P(ctxv), K, K, B));
    cmp("gemm_batched: time-major context", ctxv, gemm_tol);
    BOTH(be->gemm_batched(be, true, false, S, K, 1, 1.0f, P(a), S, S, P(q), K, K, 1.0f, P(keys),
                          B * K, K, B));
    cmp("gemm_batched: interleaved accumulate (beta 1, k 1)", keys, gemm_tol);

    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int m = 13, n = 70, k = 33, count = 7;
            int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
            long sa = (long)(ta ? k : m) * lda + 5, sb = (long)(tb ? n : k) * ldb + 1;
            long sc = (long)m * ldc + 2;
            Buf dA = buf_rand((size_t)sa * count, -1, 1), dB = buf_rand((size_t)sb * count, -1, 1);
            Buf dC = buf_rand((size_t)sc * count, -1, 1);
            BOTH(be->gemm_batched(be, ta, tb, m, n, k, 1.3f, P(dA), lda, sa, P(dB), ldb, sb, -0.4f,
                                  P(dC), ldc, sc, count));
            snprintf(name, sizeof name, "gemm_batched %c%c 13x70x33 x 7, strides with gaps",
                     ta ? 'T' : 'N', tb ? 'T' : 'N');
            cmp(name, dC, gemm_tol);
        }
    Buf C = buf_rand(3 * 24, -1, 1);
    BOTH(be->gemm_batched(be, false, false, 3, 4, 0, 1.0f, P(C), 1, 0, P(C), 4, 0, -2.0f, P(C),
                          5, 24, 3));
    cmp("gemm_batched k = 0 (C = beta C, ldc 5)", C, 0.0);
}

/* ======================= elementwise ======================= */

static void test_elementwise(void) {
    int rows = 37, cols = 70;
    size_t n = (size_t)rows * cols;
    Buf y = buf_rand(n, -1, 1), bias = buf_rand((size_t)cols, -1, 1);
    BOTH(be->add_bias(be, P(y), P(bias), rows, cols));
    cmp("add_bias 37 x 70", y, OP_TOL);
    Buf db = buf_rand(77, -1, 1), dy = buf_rand(1003 * 77, -1, 1);
    BOTH(be->bias_backward(be, P(db), P(dy), 1003, 77));
    cmp("bias_backward 1003 x 77 (+=)", db, OP_TOL);
    Buf db1 = buf_rand(5, -1, 1);
    BOTH(be->bias_backward(be, P(db1), P(dy), 1, 5));
    cmp("bias_backward 1 x 5", db1, OP_TOL);

    size_t nt = 10007;
    float *hx = test_hrand(nt, -4, 4);
    hx[0] = 20.0f, hx[1] = -20.0f, hx[2] = 1e-7f;
    Buf x = buf_from(hx, nt), t = buf_rand(nt, -1, 1);
    BOTH(be->tanh_forward(be, P(t), P(x), nt));
    cmp("tanh_forward", t, OP_TOL);
    BOTH(be->tanh_forward(be, P(x), P(x), nt));
    cmp("tanh_forward in place", x, OP_TOL);
    Buf dx = buf_rand(nt, -1, 1), dyt = buf_rand(nt, -1, 1);
    BOTH(be->tanh_backward(be, P(dx), P(dyt), P(t), nt));
    cmp("tanh_backward (+=)", dx, OP_TOL);

    Buf out = buf_rand(nt, -1, 1);
    BOTH(be->scale(be, P(out), nt, -1.7f));
    cmp("scale", out, OP_TOL);
    BOTH(be->sgd_update(be, P(out), P(dyt), nt, 0.37f));
    cmp("sgd_update", out, OP_TOL);
    BOTH(be->ema_update(be, P(out), P(dyt), nt, 0.9993f));
    cmp("ema_update", out, OP_TOL);
    free(hx);
}

static void test_dropout(void) {
    size_t n = 100003;
    Buf m = buf_rand(n, -1, 1), x = buf_rand(n, -1, 1);
    BOTH(be->dropout(be, P(m), P(x), n, 0.3f, 42, 7));
    cmp_exact("dropout p=0.3 n=100003: bit for bit", m.c, m.g, n * sizeof(float));
    BOTH(be->dropout(be, P(m), P(m), 1001, 0.5f, 0xfeedbeefcafeULL, (uint64_t)1 << 40));
    cmp_exact("dropout in place, p=0.5, 64-bit seed and offset", m.c, m.g, n * sizeof(float));
    BOTH(be->dropout(be, P(m) + 5, P(x) + 5, 1, 0.5f, 9, 2));
    BOTH(be->dropout(be, P(m) + 6, P(x) + 6, 2, 0.5f, 9, 3));
    cmp_exact("dropout inside one Philox block, across two", m.c, m.g, n * sizeof(float));
    BOTH(be->dropout(be, P(m), P(x), 333, 0.0f, 1, 0));
    BOTH(be->dropout(be, P(m) + 333, P(m) + 333, 333, 1.0f, 1, 0));
    cmp_exact("dropout p=0 and p=1", m.c, m.g, n * sizeof(float));
}

/* word dropout: whole rows, each row's mask element drawn by the kernel
 * itself with the CPU's Philox */
static void test_dropout_rows(void) {
    int rows = 4001, cols = 37;
    size_t n = (size_t)rows * cols;
    Buf m = buf_rand(n, -1, 1), x = buf_rand(n, -1, 1);
    BOTH(be->dropout_rows(be, P(m), P(x), rows, cols, 0.3f, 42, 7));
    cmp_exact("dropout_rows p=0.3 4001 x 37: bit for bit", m.c, m.g, n * sizeof(float));
    BOTH(be->dropout_rows(be, P(m), P(m), 1001, 3, 0.5f, 0xfeedbeefcafeULL, (uint64_t)1 << 40));
    cmp_exact("dropout_rows in place, p=0.5, 64-bit seed and offset", m.c, m.g, n * sizeof(float));
    BOTH(be->dropout_rows(be, P(m) + 5, P(x) + 5, 1, 1, 0.5f, 9, 2));
    BOTH(be->dropout_rows(be, P(m), P(x), 333, 1, 0.0f, 1, 0));
    cmp_exact("dropout_rows of one element; p=0", m.c, m.g, n * sizeof(float));
}

static void test_adam(void) {
    size_t n = 10007;
    Buf w = buf_rand(n, -1, 1), g = buf_rand(n, -1, 1), m = buf_rand(n, -0.1f, 0.1f);
    Buf v = buf_rand(n, 0.001f, 0.1f);
    for (int t = 1; t <= 3; t++) {
        BOTH(be->adam_update(be, P(w), P(g), P(m), P(v), n, 0.01f, 0.9f, 0.999f, 1e-8f, t));
        BOTH(be->scale(be, P(g), n, -0.9f));
    }
    cmp("adam_update (3 steps): w", w, OP_TOL);
    cmp("adam_update (3 steps): m", m, OP_TOL);
    cmp("adam_update (3 steps): v", v, OP_TOL);
}

static void test_sum_squares(void) {
    const size_t sizes[4] = {1, 255, 100003, 3000017};
    for (int i = 0; i < 4; i++) {
        size_t n = sizes[i];
        Buf x = buf_rand(n, -2, 2);
        double c = cpu->sum_squares(cpu, x.c, n), g = gpu->sum_squares(gpu, x.g, n);
        char name[96];
        snprintf(name, sizeof name, "sum_squares n=%zu (double)", n);
        report(name, fabs(g - c) / c, 1e-12);
        if (n == 1) CHECK(g == c, "sum_squares of one element is exact (%.17g vs %.17g)", g, c);
    }
    CHECK(gpu->sum_squares(gpu, NULL, 0) == 0.0, "sum_squares of nothing is 0");
}

static void test_topk(void) {
    char name[96];
    /* ties: values from a small set; k = 5 of 1001 columns; B = 7 rows */
    int rows = 7, cols = 1001;
    size_t n = (size_t)rows * cols;
    float *hx = test_hrand(n, -1, 1);
    for (size_t i = 0; i < n; i++) hx[i] = (float)(int)(hx[i] * 4.0f) * 0.25f - 0.125f;
    for (int c = 0; c < cols; c++) hx[cols + c] = 1.5f; /* row 1: all equal */
    hx[2 * cols + 1000] = INFINITY;
    hx[2 * cols + 3] = -INFINITY;
    Buf x = buf_from(hx, n);
    float *hb = test_hrand((size_t)cols, -2, 2);
    for (int c = 0; c < cols; c++) hb[c] = (float)(int)(hb[c] * 4.0f) * 0.25f; /* keeps ties */
    hb[NMT_PAD_ID] = hb[NMT_BOS_ID] = -INFINITY;
    Buf bias = buf_from(hb, (size_t)cols);
    const int ks[4] = {1, 5, 12, 40};
    for (int i = 0; i < 4; i++) {
        int k = ks[i];
        Buf val = buf_rand((size_t)rows * k, -1, 1);
        int32_t *z = calloc((size_t)rows * k, sizeof *z);
        IBuf idx = ibuf_from(z, (size_t)rows * k);
        BOTH(be->topk(be, P(x), NULL, rows, cols, false, k, P(val), P(idx)));
        snprintf(name, sizeof name, "topk 7 x 1001 k=%d (ties): values", k);
        cmp_exact(name, val.c, val.g, val.n * sizeof(float));
        snprintf(name, sizeof name, "topk 7 x 1001 k=%d (ties): indices", k);
        cmp_exact(name, idx.c, idx.g, idx.n * sizeof(int32_t));
        /* the scores x + bias (-inf at PAD and BOS, as decoding masks them),
         * and their log-probabilities: the sums are exact, the log-softmax's
         * statistics are reduced in another order on the GPU; ties stay ties
         * on either side, so the indices are the same */
        for (int logprobs = 0; logprobs <= 1; logprobs++) {
            BOTH(be->topk(be, P(x), P(bias), rows, cols, logprobs, k, P(val), P(idx)));
            snprintf(name, sizeof name, "topk of x + bias%s 7 x 1001 k=%d: values", logprobs ? " as log-probs" : "", k);
            if (logprobs) cmp(name, val, OP_TOL);
            else cmp_exact(name, val.c, val.g, val.n * sizeof(float));
            snprintf(name, sizeof name, "topk of x + bias%s 7 x 1001 k=%d: indices", logprobs ? " as log-probs" : "", k);
            cmp_exact(name, idx.c, idx.g, idx.n * sizeof(int32_t));
        }
        free(z);
    }
    float *after = malloc(n * sizeof *after);
    gpu->download(gpu, after, x.g, n * sizeof *after);
    CHECK(memcmp(after, hx, n * sizeof *after) == 0, "gpu topk leaves x as it was");
    free(after);
    /* k > cols: -inf and -1 past the end */
    float small[6] = {0.5f, -2.0f, 0.5f, 3.0f, -1.0f, 2.0f};
    Buf xs = buf_from(small, 6), val = buf_rand(10, -1, 1);
    int32_t z[10] = {0};
    IBuf idx = ibuf_from(z, 10);
    BOTH(be->topk(be, P(xs), NULL, 2, 3, false, 5, P(val), P(idx)));
    cmp_exact("topk k=5 > cols=3: values", val.c, val.g, 10 * sizeof(float));
    cmp_exact("topk k=5 > cols=3: indices", idx.c, idx.g, 10 * sizeof(int32_t));
    int32_t hi[10];
    gpu->download(gpu, hi, idx.g, sizeof hi);
    CHECK(hi[0] == 0 && hi[1] == 2 && hi[2] == 1 && hi[3] == -1 && hi[4] == -1,
          "topk row 0: %d %d %d %d %d", hi[0], hi[1], hi[2], hi[3], hi[4]);
    /* NaN never wins on the GPU (the CPU's insertion may keep a NaN met
     * first: not compared) */
    if (!selftest) {
        float hn[4] = {NAN, 1.0f, NAN, 2.0f};
        Buf xn = buf_from(hn, 4);
        gpu->topk(gpu, xn.g, NULL, 1, 4, false, 3, val.g, idx.g);
        gpu->download(gpu, hi, idx.g, 3 * sizeof(int32_t));
        CHECK(hi[0] == 3 && hi[1] == 1 && hi[2] == 0, "gpu topk with NaN: %d %d %d", hi[0],
              hi[1], hi[2]);
    }
    free(hx);
    free(hb);
}

/* ======================= LSTM, embeddings ======================= */

/* with_bias: the cell adds a bias (4H) first */
static void test_lstm(int B, int H, const float *hkeep, bool with_bias) {
    char name[96];
    size_t n = (size_t)B * H;
    Buf z = buf_rand(4 * n, -3, 3), cp = buf_rand(n, -1, 1), hp = buf_rand(n, -1, 1);
    Buf c = buf_rand(n, -5, 5), h = buf_rand(n, -5, 5), keep = buf_from(hkeep, (size_t)B);
    Buf bias = buf_rand(4 * (size_t)H, -1, 1);
    BOTH(be->lstm_forward(be, B, H, P(z), with_bias ? P(bias) : NULL, P(cp), P(hp), P(c), P(h),
                          P(keep)));
    snprintf(name, sizeof name, "lstm_forward B=%d H=%d%s: gates", B, H, with_bias ? " bias" : "");
    cmp(name, z, OP_TOL);
    snprintf(name, sizeof name, "lstm_forward B=%d H=%d: c, h", B, H);
    report(name, fmax(buf_err(c), buf_err(h)), OP_TOL);
    Buf dh = buf_rand(n, -1, 1), dc = buf_rand(n, -1, 1);
    Buf carry = buf_rand(n, -9, 9);
    /* in place: the gates of the forward above become dz */
    BOTH(be->lstm_backward(be, B, H, P(z), P(cp), P(c), P(keep), P(dh), P(dc), P(carry)));
    snprintf(name, sizeof name, "lstm_backward B=%d H=%d: dz, dc_prev, dh_carry", B, H);
    report(name, fmax(buf_err(z), fmax(buf_err(dc), buf_err(carry))), OP_TOL);
}

/* The recurrence over T steps (lstm_seq_recurrence and its backward):
 * sentences of lengths len[b] (keep 0 after them), the start state random.
 * On a CUDA backend, persistent = 1 asks for the persistent kernel, 0 for
 * the step path; the calls must then count want_runs persistent runs (the
 * forward and its repeat, which must give the same bits, the backward and,
 * outside a fork, its repeat, likewise; in a fork lane 0's forward too; 0
 * where the plan does not apply). The self-test's
 * backend is left alone (-1). With fork, the recurrence runs on lane 1 next
 * to one on lane 0, as the encoder's two directions do. */
static void test_recurrence(int T, int B, int H, const int *len, bool reverse, int persistent,
                            bool fork, int want_runs) {
    char name[128], what[64];
    size_t n = (size_t)B * H, states = (size_t)(T + 1) * n, ng = (size_t)T * B * 4 * H;
    float *hkeep = malloc((size_t)T * B * sizeof *hkeep);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) hkeep[(size_t)t * B + b] = t < len[b] ? 1.0f : 0.0f;
    float *hgates = test_hrand(ng, -2, 2), *hh = test_hrand(states, -1, 1), *hc = test_hrand(states, -1, 1);
    Buf keep = buf_from(hkeep, (size_t)T * B), W = buf_rand(4 * (size_t)H * H, -0.3f, 0.3f);
    Buf gates = buf_from(hgates, ng), h = buf_from(hh, states), c = buf_from(hc, states);
    Buf other = buf_rand(ng, -2, 2); /* lane 0's work in a fork */
    Buf oh = buf_rand(states, -1, 1), oc = buf_rand(states, -1, 1);
    snprintf(what, sizeof what, "T=%d B=%d H=%d%s%s%s", T, B, H, reverse ? " reverse" : "",
             persistent == 1 ? (want_runs ? " persistent" : " persistent asked, steps run")
             : persistent == 0 ? " steps" : "",
             fork ? " lane 1" : "");
    CudaCounters before, after;
    if (persistent >= 0)
        CHECK(cuda_backend_set_persistent(gpu, persistent) == 0, "set_persistent %d", persistent);
    cuda_backend_counters(gpu, &before);
    BOTH(if (fork) be->fork(be);
         be->lstm_seq_recurrence(be, T, B, H, P(W), P(gates), P(h), P(c), P(keep), reverse);
         if (fork) {
             be->lane(be, 0);
             be->lstm_seq_recurrence(be, T, B, H, P(W), P(other), P(oh), P(oc), P(keep), !reverse);
             be->join(be);
         });
    snprintf(name, sizeof name, "lstm_seq_recurrence %s: gates", what);
    cmp(name, gates, STEP_TOL);
    snprintf(name, sizeof name, "lstm_seq_recurrence %s: h, c", what);
    report(name, fmax(buf_err(h), buf_err(c)), STEP_TOL);
    if (fork) {
        snprintf(name, sizeof name, "lstm_seq_recurrence %s: lane 0's h", what);
        cmp(name, oh, STEP_TOL);
    }
    if (persistent == 1) {
        Buf g2 = buf_from(hgates, ng), h2 = buf_from(hh, states), c2 = buf_from(hc, states);
        if (fork) gpu->fork(gpu); /* the same plan as the first run's (half the blocks) */
        gpu->lstm_seq_recurrence(gpu, T, B, H, W.g, g2.g, h2.g, c2.g, keep.g, reverse);
        if (fork) gpu->join(gpu);
        snprintf(name, sizeof name, "lstm_seq_recurrence %s: h run to run", what);
        gpu_twice_same(name, h.g, h2.g, states * sizeof(float));
    }
    float *hdh = test_hrand((size_t)T * n, -1, 1), *hdc = test_hrand(n, -1, 1);
    Buf dh = buf_from(hdh, (size_t)T * n), dc = buf_from(hdc, n), dh_rec = buf_rand(n, -9, 9);
    Buf g3 = buf_rand(ng, -2, 2); /* the forward's gates, for a second backward */
    gpu->copy(gpu, g3.g, gates.g, ng * sizeof(float));
    BOTH(be->lstm_seq_recurrence_backward(be, T, B, H, P(W), P(gates), P(c), P(keep), reverse,
                                          P(dh), P(dc), P(dh_rec)));
    snprintf(name, sizeof name, "lstm_seq_recurrence_backward %s: dz, dh", what);
    report(name, fmax(buf_err(gates), buf_err(dh)), STEP_TOL);
    snprintf(name, sizeof name, "lstm_seq_recurrence_backward %s: dc, dh_rec", what);
    report(name, fmax(buf_err(dc), buf_err(dh_rec)), STEP_TOL);
    if (persistent == 1 && !fork) {
        Buf dh3 = buf_from(hdh, (size_t)T * n), dc3 = buf_from(hdc, n), dr3 = buf_rand(n, -9, 9);
        gpu->lstm_seq_recurrence_backward(gpu, T, B, H, W.g, g3.g, c.g, keep.g, reverse, dh3.g,
                                          dc3.g, dr3.g);
        snprintf(name, sizeof name, "lstm_seq_recurrence_backward %s: dh_rec run to run", what);
        gpu_twice_same(name, dh_rec.g, dr3.g, n * sizeof(float));
    }
    cuda_backend_counters(gpu, &after);
    long long runs = after.persistent_runs - before.persistent_runs;
    if (persistent >= 0) {
        CHECK(runs == want_runs, "%s: %lld persistent runs, want %d", what, runs, want_runs);
        cuda_backend_set_persistent(gpu, persist_env);
    }
    free(hkeep);
    free(hgates);
    free(hh);
    free(hc);
    free(hdh);
    free(hdc);
}

/* Shapes for test_recurrence: B = 1; H that no block count divides; a
 * batch whose padded rows are not a multiple of 8; lengths 0 and full. */
static void test_recurrences(void) {
    int len1[1] = {1}, len3[3] = {7, 3, 0}, len70[70];
    for (int b = 0; b < 70; b++) len70[b] = 5 - b % 6;
    int modes = selftest ? 1 : 2;
    for (int m = 0; m < modes; m++) {
        int p = selftest ? -1 : 1 - m; /* persistent, then steps */
        test_recurrence(1, 1, 5, len1, false, p, false, p == 1 ? 4 : 0);
        test_recurrence(7, 3, 37, len3, true, p, false, p == 1 ? 4 : 0);
        test_recurrence(7, 3, 37, len3, false, p, false, p == 1 ? 4 : 0);
        test_recurrence(5, 70, 33, len70, false, p, false, p == 1 ? 4 : 0);
        test_recurrence(5, 70, 33, len70, true, p, true, p == 1 ? 4 : 0);
    }
    /* 1100 rows: more 4 x 4 tiles than threads on any device, so the step
     * path runs even when the persistent kernel is asked for */
    static int len1100[1100];
    for (int b = 0; b < 1100; b++) len1100[b] = 3 - b % 4;
    test_recurrence(3, 1100, 5, len1100, false, selftest ? -1 : 1, false, 0);
}

/* pad_run: the last third of the positions are id 0 in a row (padding) */
static void test_embedding(int V, int E, int N, bool pad_run) {
    char name[96];
    int32_t *ids = malloc((size_t)N * sizeof *ids);
    for (int i = 0; i < N; i++) ids[i] = i % 3 == 0 ? 2 : (int32_t)(test_urand() * V); /* repeats */
    if (pad_run)
        for (int i = N - N / 3; i < N; i++) ids[i] = 0;
    ids[N - 1] = V - 1;
    IBuf id = ibuf_from(ids, (size_t)N);
    Buf table = buf_rand((size_t)V * E, -1, 1), out = buf_rand((size_t)N * E, -1, 1);
    BOTH(be->embedding_forward(be, P(out), P(table), P(id), N, E));
    snprintf(name, sizeof name, "embedding_forward V=%d E=%d N=%d", V, E, N);
    cmp_exact(name, out.c, out.g, out.n * sizeof(float));
    /* the gradient of each position its own (the forward's output repeats
     * rows, and equal terms add up alike in any order) */
    Buf dt = buf_rand((size_t)V * E, -1, 1), dout = buf_rand((size_t)N * E, -1, 1);
    BOTH(be->embedding_backward(be, P(dt), P(dout), P(id), N, E));
    /* each element gets its additions in position order, as on the CPU */
    snprintf(name, sizeof name, "embedding_backward V=%d E=%d N=%d (repeated ids%s)", V, E, N,
             pad_run ? ", a run of 0s" : "");
    cmp_exact(name, dt.c, dt.g, dt.n * sizeof(float));
    free(ids);
}

/* ======================= attention ======================= */

static void test_additive(int B, int S, int A) {
    char name[96];
    size_t nk = (size_t)S * B * A, nq = (size_t)B * A, ns = (size_t)B * S;
    Buf k = buf_rand(nk, -1, 1), q = buf_rand(nq, -1, 1), v = buf_rand((size_t)A, -1, 1);
    Buf sc = buf_rand(ns, -5, 5);
    BOTH(be->additive_score_forward(be, B, S, A, P(k), P(q), P(v), P(sc)));
    snprintf(name, sizeof name, "additive_score_forward B=%d S=%d A=%d", B, S, A);
    cmp(name, sc, OP_TOL);
    float *hds = test_hrand(ns, -1, 1);
    hds[ns / 2] = 0.0f; /* a masked position */
    float *hdk = test_hrand(nk, -1, 1), *hdq = test_hrand(nq, -1, 1), *hdv = test_hrand((size_t)A, -1, 1);
    Buf ds = buf_from(hds, ns), dk = buf_from(hdk, nk), dq = buf_from(hdq, nq), dv = buf_from(hdv, (size_t)A);
    BOTH(be->additive_score_backward(be, B, S, A, P(k), P(q), P(v), P(ds), P(dk), P(dq), P(dv)));
    snprintf(name, sizeof name, "additive_score_backward B=%d S=%d A=%d: dk, dq, dv", B, S, A);
    report(name, fmax(buf_err(dk), fmax(buf_err(dq), buf_err(dv))), OP_TOL);
    /* again on the GPU from the same values: dv sums over b in a fixed order */
    Buf dk2 = buf_from(hdk, nk), dq2 = buf_from(hdq, nq), dv2 = buf_from(hdv, (size_t)A);
    gpu->additive_score_backward(gpu, B, S, A, k.g, q.g, v.g, ds.g, dk2.g, dq2.g, dv2.g);
    snprintf(name, sizeof name, "additive_score_backward B=%d S=%d A=%d: dv run to run", B, S, A);
    gpu_twice_same(name, dv.g, dv2.g, (size_t)A * sizeof(float));
    free(hds);
    free(hdk);
    free(hdq);
    free(hdv);
}

/* hcenter NULL: global */
static void test_softmax(const char *what, int B, int S, const int32_t *hlen,
                         const float *hcenter, int window, int gaussian) {
    char name[128];
    size_t n = (size_t)B * S;
    float sigma = window > 0 ? window / 2.0f : 1.0f;
    Buf sc = buf_rand(n, -3, 3), probs = buf_rand(n, -5, 5), w = buf_rand(n, -5, 5);
    IBuf len = ibuf_from(hlen, (size_t)B);
    Buf center = hcenter ? buf_from(hcenter, (size_t)B) : (Buf){NULL, NULL, 0};
    BOTH(be->attn_softmax_forward(be, B, S, P(sc), P(len), P(center), window, gaussian, sigma,
                                  P(probs), P(w)));
    snprintf(name, sizeof name, "attn_softmax_forward %s: probs, weights", what);
    report(name, fmax(buf_err(probs), buf_err(w)), OP_TOL);
    Buf dw = buf_rand(n, -1, 1), ds = buf_rand(n, -9, 9);
    Buf dc = hcenter ? buf_rand((size_t)B, -9, 9) : (Buf){NULL, NULL, 0};
    BOTH(be->attn_softmax_backward(be, B, S, P(probs), P(w), P(len), P(center), window, gaussian,
                                   sigma, P(dw), P(ds), P(dc)));
    snprintf(name, sizeof name, "attn_softmax_backward %s: dscores", what);
    cmp(name, ds, OP_TOL);
    if (hcenter) {
        snprintf(name, sizeof name, "attn_softmax_backward %s: dcenter", what);
        cmp(name, dc, OP_TOL);
    }
}

static void test_attention(void) {
    test_additive(1, 7, 37);
    test_additive(5, 9, 130);
    test_additive(3, 1, 5);
    test_additive(70, 4, 45); /* three rounds of 32 rows, the last short */

    int32_t len3[3] = {6, 4, 1}, len1[1] = {7};
    test_softmax("global B=3 S=6", 3, 6, len3, NULL, 0, 0);
    test_softmax("global B=1 S=7", 1, 7, len1, NULL, 0, 0);
    int32_t lenw[4] = {9, 5, 8, 9};
    float cw[4] = {3.37f, 0.6f, 7.81f, 40.0f}; /* the last row has no allowed position */
    test_softmax("window 2, fractional centres", 4, 9, lenw, cw, 2, 0);
    test_softmax("window 2, gaussian, empty row", 4, 9, lenw, cw, 2, 1);
    float cw1[1] = {2.45f};
    test_softmax("window 3, gaussian, B=1", 1, 7, len1, cw1, 3, 1);
    int32_t lenl[2] = {300, 171};
    float cl[2] = {150.3f, 20.2f};
    test_softmax("global S=300 (several passes per thread)", 2, 300, lenl, NULL, 0, 0);
    test_softmax("window 60, gaussian, S=300", 2, 300, lenl, cl, 60, 1);

    int B = 5;
    int32_t hl[5] = {5, 9, 1, 12, 33};
    Buf u = buf_rand(5, -3, 3), p = buf_rand(5, -5, 5), du = buf_rand(5, -1, 1);
    Buf dp = buf_rand(5, -1, 1);
    IBuf len = ibuf_from(hl, 5);
    BOTH(be->local_p_forward(be, B, P(u), P(len), P(p)));
    cmp("local_p_forward B=5", p, OP_TOL);
    BOTH(be->local_p_backward(be, B, P(u), P(len), P(dp), P(du)));
    cmp("local_p_backward B=5 (+=)", du, OP_TOL);
}

#include "gpu_parity_align.h" /* guided_align */

/* ======================= loss ======================= */

static void test_xent(int N, int V, float eps) {
    char name[128];
    size_t n = (size_t)N * V;
    float *hl = test_hrand(n, -4, 4);
    for (int v = 0; v < V; v++) hl[(size_t)(N > 2 ? 2 : 0) * V + v] += 1000.0f; /* huge logits */
    int32_t *ht = malloc((size_t)N * sizeof *ht);
    for (int r = 0; r < N; r++) ht[r] = (int32_t)(test_urand() * V);
    if (N > 1) ht[1] = NMT_PAD_ID;
    ht[N - 1] = V - 1;
    Buf x = buf_from(hl, n), loss = buf_rand((size_t)N, -5, 5), nll = buf_rand((size_t)N, -5, 5);
    Buf dl = buf_rand(n, -5, 5);
    IBuf tg = ibuf_from(ht, (size_t)N);
    BOTH(be->softmax_xent(be, N, V, P(x), P(tg), NMT_PAD_ID, eps, 0.37f, P(loss), P(nll), P(dl)));
    snprintf(name, sizeof name, "softmax_xent N=%d V=%d eps=%.1f: loss, nll", N, V, eps);
    report(name, fmax(buf_err(loss), buf_err(nll)), OP_TOL);
    snprintf(name, sizeof name, "softmax_xent N=%d V=%d eps=%.1f: dlogits", N, V, eps);
    cmp(name, dl, OP_TOL);
    Buf loss2 = buf_rand((size_t)N, -5, 5), nll2 = buf_rand((size_t)N, -5, 5);
    BOTH(be->softmax_xent(be, N, V, P(x), P(tg), NMT_PAD_ID, eps, 1.0f, P(loss2), P(nll2), NULL));
    snprintf(name, sizeof name, "softmax_xent N=%d V=%d: loss only (dlogits NULL)", N, V);
    report(name, fmax(buf_err(loss2), buf_err(nll2)), OP_TOL);
    BOTH(be->softmax_xent(be, N, V, P(x), P(tg), NMT_PAD_ID, eps, 0.37f, P(loss2), P(nll2), P(x)));
    snprintf(name, sizeof name, "softmax_xent N=%d V=%d: in place (dlogits = logits)", N, V);
    report(name, fmax(buf_err(x), buf_err(loss2)), OP_TOL);
    float *hg = malloc(n * sizeof *hg);
    gpu->download(gpu, hg, x.g, n * sizeof(float));
    int zero = 1;
    if (N > 1)
        for (int v = 0; v < V; v++) zero &= hg[V + v] == 0.0f;
    CHECK(zero, "softmax_xent: the pad row's gradient is zero on the GPU");
    free(hg);
    free(hl);
    free(ht);
}

static void test_log_softmax(int N, int V) {
    char name[96];
    size_t n = (size_t)N * V;
    float *hl = test_hrand(n, -4, 4);
    for (int r = 0; r < N; r++) { /* masked PAD and BOS, as decoding does */
        hl[(size_t)r * V + NMT_PAD_ID] = -INFINITY;
        if (V > NMT_BOS_ID) hl[(size_t)r * V + NMT_BOS_ID] = -INFINITY;
    }
    for (int v = 0; v < V; v++) hl[v] -= 500.0f;
    Buf x = buf_from(hl, n), out = buf_rand(n, -1, 1);
    BOTH(be->log_softmax(be, N, V, P(x), P(out)));
    snprintf(name, sizeof name, "log_softmax N=%d V=%d (-inf entries)", N, V);
    cmp(name, out, OP_TOL);
    BOTH(be->log_softmax(be, N, V, P(x), P(x)));
    snprintf(name, sizeof name, "log_softmax N=%d V=%d in place", N, V);
    cmp(name, x, OP_TOL);
    free(hl);
}

/* ======================= layer normalisation ======================= */

/* layer_norm_forward ((=) over garbage with stats; += with stats NULL) and
 * its backward (dx (=) over garbage, dgain += onto prior contents), then
 * the backward in place (dx == x): each GPU against CPU, and the GPU's in
 * place against its out of place, bit for bit (dgain from the same prior). x is
 * offset (row means near 1). Shapes: a warp per row up to 256 columns,
 * a block per row above (gpu_layer_norm.cu). */
static void test_layer_norm(int rows, int cols) {
    char name[128];
    size_t n = (size_t)rows * cols;
    float *hx = test_hrand(n, -1, 3), *hdg = test_hrand((size_t)cols, -1, 1);
    Buf x = buf_from(hx, n), gain = buf_rand((size_t)cols, 0.5f, 1.5f);
    Buf y = buf_rand(n, -9, 9), stats = buf_rand(2 * (size_t)rows, -9, 9);
    BOTH(be->layer_norm_forward(be, rows, cols, P(x), P(gain), false, P(y), P(stats)));
    snprintf(name, sizeof name, "layer_norm_forward %d x %d: y, stats", rows, cols);
    report(name, fmax(buf_err(y), buf_err(stats)), OP_TOL);
    Buf ya = buf_rand(n, -1, 1);
    BOTH(be->layer_norm_forward(be, rows, cols, P(x), P(gain), true, P(ya), NULL));
    snprintf(name, sizeof name, "layer_norm_forward %d x %d: accumulate, stats NULL", rows, cols);
    cmp(name, ya, OP_TOL);
    Buf dy = buf_rand(n, -1, 1), dx = buf_rand(n, -9, 9), dg = buf_from(hdg, (size_t)cols);
    BOTH(be->layer_norm_backward(be, rows, cols, P(x), P(stats), P(gain), P(dy), P(dx), P(dg)));
    snprintf(name, sizeof name, "layer_norm_backward %d x %d: dx, dgain (+=)", rows, cols);
    report(name, fmax(buf_err(dx), buf_err(dg)), OP_TOL);
    Buf xi = buf_from(hx, n), dgi = buf_from(hdg, (size_t)cols);
    BOTH(be->layer_norm_backward(be, rows, cols, P(xi), P(stats), P(gain), P(dy), P(xi), P(dgi)));
    snprintf(name, sizeof name, "layer_norm_backward %d x %d in place: dx, dgain", rows, cols);
    report(name, fmax(buf_err(xi), buf_err(dgi)), OP_TOL);
    snprintf(name, sizeof name, "layer_norm_backward %d x %d: in place == out of place", rows, cols);
    gpu_twice_same(name, dx.g, xi.g, n * sizeof(float));
    snprintf(name, sizeof name, "layer_norm_backward %d x %d: dgain in place == out", rows, cols);
    gpu_twice_same(name, dg.g, dgi.g, (size_t)cols * sizeof(float));
    free(hx);
    free(hdg);
}

/* rows 0: neither slot writes anything */
static void test_layer_norm_empty(void) {
    Buf x = buf_rand(8, -1, 1), g = buf_rand(4, -1, 1), y = buf_rand(8, -1, 1);
    Buf st = buf_rand(4, -1, 1), dy = buf_rand(8, -1, 1), dg = buf_rand(4, -1, 1);
    BOTH(be->layer_norm_forward(be, 0, 4, P(x), P(g), false, P(y), P(st));
         be->layer_norm_backward(be, 0, 4, P(x), P(st), P(g), P(dy), P(y), P(dg)));
    cmp_exact("layer_norm rows 0: y untouched", y.c, y.g, 8 * sizeof(float));
    cmp_exact("layer_norm rows 0: stats untouched", st.c, st.g, 4 * sizeof(float));
    cmp_exact("layer_norm rows 0: dgain untouched", dg.c, dg.g, 4 * sizeof(float));
}

/* ======================= lanes ======================= */

/* fork, lane, join (backend.h): lane 1 reads what lane 0 wrote just before
 * the fork, and lane 0 reads what lane 1 wrote just before the join, twice
 * (the events are used again). The emulator runs a second stream's work as
 * late as its waits allow (EMU_STREAM_ORDER=first, the default), or as
 * early (=last, tests/test_gpu_emu.sh): a missing join fails the first
 * order here, a missing fork the second. */
static void test_lanes(void) {
    enum { R = 23, C = 37, K = 19 };
    Buf a = buf_rand((size_t)R * K, -1.0f, 1.0f), w = buf_rand((size_t)K * C, -1.0f, 1.0f);
    Buf d = buf_rand((size_t)R * C, -1.0f, 1.0f), y = buf_rand((size_t)R * C, -1.0f, 1.0f);
    Buf z = buf_rand((size_t)R * C, -1.0f, 1.0f);
    for (int round = 0; round < 2; round++) {
        BOTH(be->scale(be, P(a), (size_t)R * K, 2.0f);  /* before the fork, on lane 0 */
             be->fork(be);                              /* lane 1: a GEMM and a kernel */
             be->gemm(be, false, false, R, C, K, 1.0f, P(a), K, P(w), C, 0.5f, P(d), C);
             be->tanh_forward(be, P(d), P(d), (size_t)R * C);
             be->lane(be, 0);                           /* lane 0: a kernel and a copy */
             be->scale(be, P(y), (size_t)R * C, 0.75f);
             be->copy(be, P(z), P(y), (size_t)R * C * sizeof(float));
             be->join(be);
             be->add_cols(be, P(z), C, P(d), C, R, C)); /* after the join, on lane 0 */
    }
    cmp("lanes: lane 1 (GEMM, tanh) after the fork", d, gemm_tol);
    cmp("lanes: lane 0 after the join reads lane 1", z, gemm_tol);
    cmp("lanes: lane 0 between fork and join", y, OP_TOL);
}

/* Misuse of the lanes is an error, never a silent race: a host wait
 * between fork and join, a second fork, a join without a fork, an unknown
 * lane. */
static void test_lane_misuse(void) {
    const char *what[] = {"download", "fork", "join", "lane", "download_start", "download_finish"};
    for (int i = 0; i < 6; i++) {
        char err[256];
        Backend *b = cuda_backend_create(0, err, sizeof err);
        CHECK(b != NULL, "a CUDA backend for lane misuse: %s", err);
        if (!b) return;
        float *x = b->alloc(b, 16 * sizeof(float)), h[16];
        if (i == 0) {
            b->fork(b);
            b->download(b, h, x, sizeof h);
        } else if (i == 1) {
            b->fork(b);
            b->fork(b);
        } else if (i == 2) {
            b->join(b);
        } else if (i == 3) {
            b->fork(b);
            b->lane(b, 2);
        } else { /* either half of a pipelined download between fork and join */
            if (i == 4) b->fork(b);
            b->download_start(b, h, x, sizeof h);
            if (i == 5) b->fork(b);
            b->download_finish(b);
        }
        const char *e = cuda_backend_error(b);
        CHECK(e != NULL && strstr(e, what[i]) && strstr(e, "lanes"),
              "lanes: %s misused is recorded: %s", what[i], e ? e : "(none)");
        printf("  lanes: %-50s %s\n", what[i], e ? e : "(no error)");
        b->release(b, x); /* also after an error, and between fork and join */
        b->destroy(b);
    }
}

/* ======================= the error path ======================= */

static void test_error_path(void) {
    char err[256];
    Backend *b = cuda_backend_create(0, err, sizeof err);
    CHECK(b != NULL, "a second CUDA backend: %s", err);
    if (!b) return;
    CHECK(cuda_backend_error(b) == NULL, "no error after creation");
    float *x = b->alloc(b, 64 * sizeof(float));
    float h[64];
    for (int i = 0; i < 64; i++) h[i] = (float)i + 1.0f;
    b->upload(b, x, h, sizeof h);
    /* ldc 1 < n 4: cuBLAS rejects the call (nothing runs on the device),
     * or with NMT_CUDA_GEMM=own the own kernel's argument checks */
    b->gemm(b, false, false, 4, 4, 4, 1.0f, x, 4, x, 4, 0.0f, x + 32, 1);
    const char *e = cuda_backend_error(b);
    CHECK(e != NULL && (own_gemm_env ? strstr(e, "gpu_own_gemm.cu") && strstr(e, "own_sgemm")
                                     : strstr(e, "gpu_gemm.cu") && strstr(e, "cublasSgemm") && strstr(e, "cuBLAS status")),
          "the rejected gemm is recorded: %s", e ? e : "(none)");
    printf("  recorded error: %s\n", e ? e : "(none)");
    b->scale(b, x, 64, 2.0f); /* a no-op now */
    float back[64];
    b->download(b, back, x, sizeof back);
    CHECK(back[0] == 0.0f && back[63] == 0.0f, "after an error download gives zeros");
    CHECK(isnan(b->sum_squares(b, x, 64)), "after an error sum_squares is NaN");
    CHECK(b->alloc(b, 16) == NULL, "after an error alloc gives NULL");
    b->release(b, x);
    b->destroy(b);
    CHECK(cuda_backend_create(999, err, sizeof err) == NULL && strstr(err, "999") != NULL,
          "device 999 is refused: %s", err);
    CHECK(cuda_backend_error(cpu) == NULL, "cuda_backend_error of the CPU backend is NULL");
}

/* Host time (CudaCounters: host_call_seconds, wait_seconds, slow calls):
 * on a backend that counts every host call as slow
 * (NMT_CUDA_SLOW_CALL_MS=0), the slow calls are all the host calls, in
 * count and time, named by kind; the waits take time too; a value that is
 * no number of milliseconds is refused, naming the variable. */
static void test_host_time(void) {
    char err[256], saved[64] = "";
    const char *was = getenv("NMT_CUDA_SLOW_CALL_MS");
    if (was) snprintf(saved, sizeof saved, "%s", was);
    const char *bad[] = {"abc", "-1", "1ms", "nan"};
    for (int i = 0; i < 4; i++) {
        setenv("NMT_CUDA_SLOW_CALL_MS", bad[i], 1);
        Backend *b = cuda_backend_create(0, err, sizeof err);
        CHECK(b == NULL && strstr(err, "NMT_CUDA_SLOW_CALL_MS") && strstr(err, bad[i]),
              "NMT_CUDA_SLOW_CALL_MS=%s is refused: %s", bad[i], b ? "(made a backend)" : err);
        if (b) b->destroy(b);
    }
    setenv("NMT_CUDA_SLOW_CALL_MS", "0", 1);
    Backend *b = cuda_backend_create(0, err, sizeof err);
    if (was) setenv("NMT_CUDA_SLOW_CALL_MS", saved, 1);
    else unsetenv("NMT_CUDA_SLOW_CALL_MS");
    CHECK(b != NULL, "a CUDA backend with NMT_CUDA_SLOW_CALL_MS=0: %s", err);
    if (!b) return;
    enum { R = 3, C = 40, K = 8 };
    float *x = b->alloc(b, R * C * sizeof(float)), *w = b->alloc(b, C * C * sizeof(float));
    float *y = b->alloc(b, R * C * sizeof(float)), *vals = b->alloc(b, R * 2 * sizeof(float));
    int32_t *ids = b->alloc(b, R * 2 * sizeof(int32_t));
    float h[C * C];
    for (int i = 0; i < C * C; i++) h[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    b->upload(b, x, h, R * C * sizeof(float));
    b->upload(b, w, h, sizeof h);
    CudaCounters a, c;
    cuda_backend_counters(b, &a);
    b->gemm(b, false, true, R, C, C, 1.0f, x, C, w, C, 0.0f, y, C);
    b->topk(b, y, NULL, R, C, true, 2, vals, ids);
    float back[R * 2];
    b->download(b, back, vals, sizeof back);
    cuda_backend_counters(b, &c);
    CHECK(c.host_call_seconds > a.host_call_seconds && c.wait_seconds > a.wait_seconds,
          "host time: %.3g s in host calls, %.3g s waiting (want both > 0)",
          c.host_call_seconds - a.host_call_seconds, c.wait_seconds - a.wait_seconds);
    CHECK(c.host_calls >= 4 && c.slow_calls == c.host_calls && c.slow_seconds == c.host_call_seconds,
          "every host call slow at 0 ms: %lld slow of %lld calls, %.6g of %.6g s", c.slow_calls,
          c.host_calls, c.slow_seconds, c.host_call_seconds);
    CHECK(strstr(c.slow_summary, own_gemm_env ? "own_sgemm_kernel<32> 1 x" : "cublasSgemm 1 x") &&
              strstr(c.slow_summary, "topk_kernel 1 x") &&
              strstr(c.slow_summary, "cudaMemcpyAsync (upload) 2 x"),
          "the slow calls by kind: %s", c.slow_summary);
    printf("  %-58s %.3f ms in %lld host calls, %.3f ms waiting; %s\n", "host time (every call slow):",
           c.host_call_seconds * 1e3, c.host_calls, c.wait_seconds * 1e3, c.slow_summary);
    CHECK(cuda_backend_error(b) == NULL, "host time: CUDA error: %s", cuda_backend_error(b));
    void *bufs[] = {x, w, y, vals, ids};
    for (int i = 0; i < 5; i++) b->release(b, bufs[i]);
    b->destroy(b);
}

/* ======================= whole models ======================= */

enum { MB = 4, MS = 7, MT = 5, MAXT = 12, BEAM = 4, NBEST = 2, V_S = 37, V_T = 29 };

/* max over parameter tensors of the rel err of a flat block (params or
 * grads) of the two models; names the worst tensor */
static double model_block_err(const ParamLayout *L, float *c_dev, float *g_dev, char *worst,
                              size_t worst_size) {
    float *hc = malloc(L->total * sizeof(float)), *hg = malloc(L->total * sizeof(float));
    get_both(c_dev, g_dev, hc, hg, L->total * sizeof(float));
    double err = 0.0;
    snprintf(worst, worst_size, "-");
    for (int i = 0; i < L->n; i++) {
        const ParamInfo *p = &L->info[i];
        double e = rel_err_f(hc + p->offset, hg + p->offset, p->size);
        if (!(e <= err)) {
            err = e;
            snprintf(worst, worst_size, "%s", p->name);
        }
    }
    free(hc);
    free(hg);
    return err;
}

/* The dims of the parity models: a small 2+2-layer model with dropout 0.3
 * and label smoothing 0.1, changed by sets. False (a failed check) when the
 * config or the dims are refused. */
static bool parity_dims(const char *label, const char *const *sets, int n_sets, ModelDims *d) {
    const char *base = "{\"model\": {\"emb_dim\": 10, \"hidden\": 18, \"enc_layers\": 2,"
                       " \"dec_layers\": 2, \"dropout\": 0.3, \"attention\": {\"window\": 2}},"
                       " \"train\": {\"label_smoothing\": 0.1}}";
    Config cfg;
    NmtStatus st = config_load_string(base, "parity", "/", sets, n_sets, &cfg);
    CHECK(st == NMT_OK, "%s: config: %s", label, nmt_error_message());
    if (st) return false;
    st = model_dims_from_config(&cfg, cfg.model.share_embeddings ? V_T : V_S, V_T, d); /* shared: one vocabulary */
    config_free(&cfg);
    CHECK(st == NMT_OK, "%s: dims: %s", label, nmt_error_message());
    return st == NMT_OK;
}

/* The CPU model and the "GPU" model (on backend gb) of the same dims, with
 * the output layer in chunks of 7 rows (row offsets and a short last
 * chunk on the device too). False (both NULL) when either fails. */
static bool model_pair(const ModelDims *d, Backend *gb, Seq2Seq **mc, Seq2Seq **mg) {
    ModelLimits lim = {MB, MS, MT, MAXT, BEAM, (size_t)7 * V_T, 0};
    *mc = *mg = NULL;
    CHECK_EQ_INT(seq2seq_create(cpu, d, lim, mc), NMT_OK);
    CHECK_EQ_INT(seq2seq_create(gb, d, lim, mg), NMT_OK);
    if (*mc && *mg) return true;
    seq2seq_free(*mc);
    seq2seq_free(*mg);
    *mc = *mg = NULL;
    return false;
}

/* Greedy decoding of the batch's first B sentences by both models: true
 * when the tokens are identical; *tokens counts the CPU's. */
static bool greedy_same(Seq2Seq *mc, Seq2Seq *mg, const Batch *batch, int B, int *tokens) {
    int32_t oc[MB * MAXT], og[MB * MAXT];
    int lc[MB], lg[MB];
    memset(oc, 0, sizeof oc);
    memset(og, 0, sizeof og);
    seq2seq_greedy(mc, batch, 1.5, 2, oc, MAXT, lc);
    seq2seq_greedy(mg, batch, 1.5, 2, og, MAXT, lg);
    bool same = true;
    *tokens = 0;
    for (int b = 0; b < B; b++) {
        same &= lc[b] == lg[b] && !memcmp(oc + b * MAXT, og + b * MAXT, (size_t)lc[b] * 4);
        *tokens += lc[b];
    }
    return same;
}

/* Beam search (beam 4, 2-best, length and coverage penalties) by both
 * models: true when the hypotheses are identical; *worst_score is the
 * largest relative score difference; ac and ag (MB * NBEST * MAXT * MS
 * floats, may be NULL) receive the attention of the outputs. */
static bool beam_same(Seq2Seq *mc, Seq2Seq *mg, const Batch *batch, int B, double *worst_score,
                      float *ac, float *ag) {
    BeamSpec spec = {BEAM, NBEST, 0.6, 0.2, 1.5, 2};
    int32_t bc[MB * NBEST * MAXT], bg[MB * NBEST * MAXT];
    int blc[MB * NBEST], blg[MB * NBEST], cc[MB], cg[MB];
    double sc[MB * NBEST], sg[MB * NBEST];
    memset(bc, 0, sizeof bc);
    memset(bg, 0, sizeof bg);
    CHECK_EQ_INT(seq2seq_beam_search(mc, batch, &spec, bc, MAXT, blc, sc, cc, ac), NMT_OK);
    CHECK_EQ_INT(seq2seq_beam_search(mg, batch, &spec, bg, MAXT, blg, sg, cg, ag), NMT_OK);
    bool same = true;
    *worst_score = 0.0;
    for (int b = 0; b < B; b++) {
        same &= cc[b] == cg[b];
        for (int i = 0; i < cc[b] && i < cg[b]; i++) {
            int h = b * NBEST + i;
            same &= blc[h] == blg[h] && !memcmp(bc + h * MAXT, bg + h * MAXT, (size_t)blc[h] * 4);
            *worst_score = fmax(*worst_score, fabs(sg[h] - sc[h]) / fmax(fabs(sc[h]), 1e-6));
        }
    }
    return same;
}

/* Guided alignment for the next test_model calls (seq2seq_set_guided_alignment
 * against gradcheck_make_batch's random alignment); weight 0: none. */
static float parity_align_weight;
static int parity_align_cost;

static void test_model(const char *label, const char *const *sets, int n_sets, int B) {
    char name[192], worst[40];
    ModelDims d;
    if (!parity_dims(label, sets, n_sets, &d)) return;
    Batch batch;
    gradcheck_make_batch(B, MS, MT, d.V_s, d.V_t, 17, &batch);
    Seq2Seq *mc, *mg;
    if (!model_pair(&d, gpu, &mc, &mg)) return;
    if (parity_align_weight > 0) {
        CHECK_EQ_INT(seq2seq_set_guided_alignment(mc, parity_align_cost, parity_align_weight), NMT_OK);
        CHECK_EQ_INT(seq2seq_set_guided_alignment(mg, parity_align_cost, parity_align_weight), NMT_OK);
    }
    const ParamLayout *L = seq2seq_layout(mc);
    float *host = malloc(L->total * sizeof(float));
    param_init_host(L, 0.3f, 11, host);
    cpu->upload(cpu, seq2seq_params(mc), host, L->total * sizeof(float));
    gpu->upload(gpu, seq2seq_params(mg), host, L->total * sizeof(float));

    /* three training steps (dropout on, the same masks), SGD between them */
    for (int step = 0; step < 3; step++) {
        ModelLoss lc, lg;
        seq2seq_zero_grads(mc);
        seq2seq_zero_grads(mg);
        seq2seq_forward(mc, &batch, true, 100 + step, &lc);
        seq2seq_forward(mg, &batch, true, 100 + step, &lg);
        snprintf(name, sizeof name, "%s B=%d step %d: loss %.6f", label, B, step, lc.loss);
        report(name, fabs(lg.loss - lc.loss) / fabs(lc.loss), LOSS_TOL);
        CHECK(lc.n_tokens == lg.n_tokens && lc.n_tokens > 0, "%s: token counts %lld %lld", label,
              (long long)lc.n_tokens, (long long)lg.n_tokens);
        CHECK(fabs(lg.nll_sum - lc.nll_sum) <= LOSS_TOL * fabs(lc.nll_sum), "%s: nll %g vs %g",
              label, lg.nll_sum, lc.nll_sum);
        CHECK((parity_align_weight > 0) == (lc.align_sum > 0) &&
                  fabs(lg.align_sum - lc.align_sum) <= LOSS_TOL * fabs(lc.align_sum),
              "%s: guided alignment loss %g vs %g", label, lg.align_sum, lc.align_sum);
        seq2seq_backward(mc);
        seq2seq_backward(mg);
        double e = model_block_err(L, seq2seq_grads(mc), seq2seq_grads(mg), worst, sizeof worst);
        snprintf(name, sizeof name, "%s B=%d step %d: every gradient (worst %s)", label, B, step,
                 worst);
        report(name, e, STEP_TOL);
        double nc = cpu->sum_squares(cpu, seq2seq_grads(mc), L->total);
        double ng = gpu->sum_squares(gpu, seq2seq_grads(mg), L->total);
        CHECK(fabs(ng - nc) <= 1e-4 * nc, "%s: gradient norm^2 %g vs %g", label, ng, nc);
        cpu->sgd_update(cpu, seq2seq_params(mc), seq2seq_grads(mc), L->total, 0.5f);
        gpu->sgd_update(gpu, seq2seq_params(mg), seq2seq_grads(mg), L->total, 0.5f);
    }
    double e = model_block_err(L, seq2seq_params(mc), seq2seq_params(mg), worst, sizeof worst);
    snprintf(name, sizeof name, "%s B=%d: weights after 3 SGD steps (worst %s)", label, B, worst);
    report(name, e, OP_TOL);

    /* decoding from the same (uploaded) weights, larger for peaked outputs */
    param_init_host(L, 0.8f, 5, host);
    cpu->upload(cpu, seq2seq_params(mc), host, L->total * sizeof(float));
    gpu->upload(gpu, seq2seq_params(mg), host, L->total * sizeof(float));
    int tokens;
    bool same = greedy_same(mc, mg, &batch, B, &tokens);
    printf("  %-58s %s (%d tokens)\n", "greedy decode", same ? "identical" : "DIFFERENT", tokens);
    CHECK(same, "%s B=%d: greedy decoding differs between GPU and CPU", label, B);

    size_t na = (size_t)MB * NBEST * MAXT * MS;
    float *ac = calloc(na, sizeof *ac), *ag = calloc(na, sizeof *ag);
    double worst_score;
    same = beam_same(mc, mg, &batch, B, &worst_score, ac, ag);
    printf("  %-58s %s\n", "beam search (beam 4, 2-best, penalties)",
           same ? "identical" : "DIFFERENT");
    CHECK(same, "%s B=%d: beam search hypotheses differ between GPU and CPU", label, B);
    snprintf(name, sizeof name, "%s B=%d: beam scores", label, B);
    report(name, worst_score, OP_TOL);
    snprintf(name, sizeof name, "%s B=%d: beam attention of the outputs", label, B);
    report(name, rel_err_f(ac, ag, na), STEP_TOL);
    free(ac);
    free(ag);
    /* folded, as nmt translate decodes (seq2seq_fold_embeddings): each
     * device makes its table of input products and the steps read its rows */
    bool fc = false, fg = false;
    CHECK_EQ_INT(seq2seq_fold_embeddings(mc, &fc), NMT_OK);
    CHECK_EQ_INT(seq2seq_fold_embeddings(mg, &fg), NMT_OK);
    CHECK(fc == fg && fc == (d.style != ATTN_STYLE_BAHDANAU), "%s: folded on the CPU %d, on the GPU %d", label, fc,
          fg);
    if (fc) {
        same = greedy_same(mc, mg, &batch, B, &tokens);
        printf("  %-58s %s (%d tokens)\n", "greedy decode, folded", same ? "identical" : "DIFFERENT", tokens);
        CHECK(same, "%s B=%d: folded greedy decoding differs between GPU and CPU", label, B);
        same = beam_same(mc, mg, &batch, B, &worst_score, NULL, NULL);
        printf("  %-58s %s\n", "beam search, folded", same ? "identical" : "DIFFERENT");
        CHECK(same, "%s B=%d: folded beam search hypotheses differ between GPU and CPU", label, B);
        snprintf(name, sizeof name, "%s B=%d: folded beam scores", label, B);
        report(name, worst_score, OP_TOL);
    }
    const char *ge = cuda_backend_error(gpu);
    CHECK(ge == NULL, "%s: CUDA error: %s", label, ge ? ge : "");
    free(host);
    seq2seq_free(mc);
    seq2seq_free(mg);
}

static void test_models(void) {
    const char *luong_general[] = {"model.attention.style=luong", "model.attention.score=general",
                                   "model.attention.mode=global", "model.input_feed=true"};
    const char *bahdanau[] = {"model.attention.style=bahdanau", "model.attention.score=additive"};
    const char *local_p[] = {"model.attention.style=luong", "model.attention.score=dot",
                             "model.attention.mode=local-p", "model.attention.heads=2"};
    const char *local_m[] = {"model.attention.style=luong", "model.attention.score=scaled_dot",
                             "model.attention.mode=local-m", "model.attention.dropout=0.2"};
    const char *concat[] = {"model.attention.style=luong", "model.attention.score=concat",
                            "model.enc_hidden=14", "model.input_feed=false"};
    const char *none[] = {"model.attention.style=none"};
    test_model("luong general global input-feed", luong_general, 4, MB);
    test_model("luong general global input-feed", luong_general, 4, 1);
    test_model("bahdanau additive", bahdanau, 2, MB);
    test_model("luong dot local-p heads 2", local_p, 4, MB);
    test_model("luong scaled_dot local-m attn-dropout", local_m, 4, MB);
    test_model("luong concat global K != H", concat, 4, MB);
    const char *word_drop[] = {"model.word_dropout_src=0.3", "model.word_dropout_tgt=0.2",
                               "model.attention.heads=2"};
    test_model("luong general word dropout", word_drop, 3, MB);
    const char *shared[] = {"model.share_embeddings=true", "model.tie_embeddings=true", "model.emb_dim=8",
                            "model.hidden=8", "model.word_dropout_tgt=0.2"};
    test_model("shared and tied embeddings", shared, 5, MB);
    test_model("style none", none, 1, MB);
    /* residual connections (the top decoder output as Bahdanau's next
     * query), deeper stacks with dropout between layers */
    const char *res_bahdanau[] = {"model.residual=true", "model.attention.style=bahdanau",
                                  "model.attention.score=additive", "model.enc_layers=3", "model.dec_layers=3"};
    const char *res_luong[] = {"model.residual=true", "model.enc_layers=3", "model.bidirectional=false"};
    test_model("residual bahdanau additive 3+3 layers", res_bahdanau, 5, MB);
    test_model("residual luong general 3+2 layers unidirectional", res_luong, 3, MB);
    /* layer normalisation: the encoder's recurrence step by step in the
     * model code (both directions on two lanes), the decoder's products
     * kept for backward, the gains' gradients; with residual connections */
    const char *ln_luong[] = {"model.layer_norm=true", "model.enc_layers=2", "model.dec_layers=2"};
    const char *ln_bahdanau[] = {"model.layer_norm=true", "model.residual=true", "model.attention.style=bahdanau",
                                 "model.attention.score=additive", "model.dec_layers=2", "model.bridge=zero"};
    test_model("layer norm luong general 2+2 layers", ln_luong, 3, MB);
    test_model("layer norm residual bahdanau additive 1+2 layers zero bridge", ln_bahdanau, 6, MB);
    /* guided alignment: its loss in the loss, its gradient in every step's
     * attention backward (several heads, local-p's centre, attention dropout) */
    parity_align_weight = 1.0f;
    parity_align_cost = ALIGN_COST_CE;
    test_model("guided ce luong dot local-p heads 2", local_p, 4, MB);
    test_model("guided ce luong scaled_dot local-m attn-dropout", local_m, 4, MB);
    parity_align_cost = ALIGN_COST_MSE;
    test_model("guided mse bahdanau additive", bahdanau, 2, MB);
    parity_align_weight = 0.0f;
}

/* every attention combination, as test_model_grad.c sweeps them: Luong
 * with and without input feeding, Bahdanau (always feeds); dot scores get
 * K = H, the others K != H. Every stride-th only, from the environment. */
static void test_model_sweep(void) {
    const char *styles[] = {"luong", "bahdanau"};
    const char *scores[] = {"dot", "scaled_dot", "general", "additive"};
    const char *modes[] = {"global", "local-m", "local-p"};
    const char *env = getenv("NMT_PARITY_SWEEP_STRIDE");
    int stride = env && atoi(env) > 0 ? atoi(env) : 1;
    int index = 0, run = 0;
    for (int st = 0; st < 2; st++)
        for (int sc = 0; sc < 4; sc++)
            for (int mo = 0; mo < 3; mo++)
                for (int heads = 1; heads <= 2; heads++)
                    for (int feed = 0; feed <= (st == 0); feed++, index++) {
                        if (index % stride) continue;
                        char s1[64], s2[64], s3[64], s4[64], s5[64], s6[64], label[128];
                        snprintf(s1, sizeof s1, "model.attention.style=%s", styles[st]);
                        snprintf(s2, sizeof s2, "model.attention.score=%s", scores[sc]);
                        snprintf(s3, sizeof s3, "model.attention.mode=%s", modes[mo]);
                        snprintf(s4, sizeof s4, "model.attention.heads=%d", heads);
                        snprintf(s5, sizeof s5, "model.enc_hidden=%d", sc < 2 ? 18 : 14);
                        snprintf(s6, sizeof s6, "model.input_feed=%s", feed ? "true" : "false");
                        const char *sets[] = {s1, s2, s3, s4, s5, s6};
                        snprintf(label, sizeof label, "sweep %s %s %s heads %d%s", styles[st],
                                 scores[sc], modes[mo], heads,
                                 st == 0 ? (feed ? " feed" : " no-feed") : "");
                        /* style bahdanau must not set input_feed */
                        test_model(label, sets, st == 0 ? 6 : 5, MB);
                        run++;
                    }
    CHECK_EQ_INT(index, 4 * 3 * 2 * 2 + 4 * 3 * 2);
    printf("  attention sweep: %d of %d combinations (stride %d)\n", run, index, stride);
}

/* The rule of the issue: inside a training step no allocation and no wait
 * for the device except reading back the loss and the logged statistics
 * (here: the loss rows, one download, and the gradient norm of clipping).
 * Counted by the CUDA backend (cuda_backend_counters) over the step the
 * trainer takes: forward, backward, sum_squares, Adam. Decoding is
 * counted too (no allocation; its waits are the per-step top-k read). */
static void test_step_traffic(void) {
    const char *sets[] = {"model.attention.style=luong", "model.attention.score=general",
                          "model.attention.heads=2", "model.input_feed=true",
                          "model.attention.dropout=0.1"};
    ModelDims d;
    if (!parity_dims("traffic", sets, 5, &d)) return;
    Batch batch;
    gradcheck_make_batch(MB, MS, MT, V_S, V_T, 23, &batch);
    ModelLimits lim = {MB, MS, MT, MAXT, BEAM, (size_t)7 * V_T, 0}; /* chunks add no waits */
    Seq2Seq *m = NULL;
    CHECK_EQ_INT(seq2seq_create(gpu, &d, lim, &m), NMT_OK);
    if (!m) return;
    size_t n = seq2seq_layout(m)->total;
    float *host = malloc(n * sizeof(float));
    param_init_host(seq2seq_layout(m), 0.3f, 3, host);
    gpu->upload(gpu, seq2seq_params(m), host, n * sizeof(float));
    float *mom = gpu->alloc(gpu, n * sizeof(float)), *var = gpu->alloc(gpu, n * sizeof(float));
    CudaCounters a, b;
    long long waits = -1, step_allocs = -1;
    for (int step = 1; step <= 3; step++) {
        cuda_backend_counters(gpu, &a);
        ModelLoss loss;
        seq2seq_zero_grads(m);
        seq2seq_forward(m, &batch, true, 50 + step, &loss);
        seq2seq_backward(m);
        double norm2 = gpu->sum_squares(gpu, seq2seq_grads(m), n);
        gpu->adam_update(gpu, seq2seq_params(m), seq2seq_grads(m), mom, var, n, 1e-3f, 0.9f, 0.999f,
                         1e-8f, step);
        cuda_backend_counters(gpu, &b);
        CHECK(isfinite(norm2) && loss.loss > 0, "traffic step %d: loss %g norm^2 %g", step, loss.loss,
              norm2);
        waits = b.host_waits - a.host_waits;
        step_allocs = b.allocs - a.allocs;
        CHECK(b.lane_forks - a.lane_forks == 2, "training step %d: %lld forks (want 2: the "
              "bidirectional layer forward and backward)", step, b.lane_forks - a.lane_forks);
        CHECK(step_allocs == 0, "training step %d: %lld device allocations (want 0)", step, step_allocs);
        CHECK(waits == 2, "training step %d: the host waited %lld times (want 2: loss, gradient "
              "norm)", step, waits);
        CHECK(b.wait_seconds > a.wait_seconds && b.host_call_seconds > a.host_call_seconds,
              "training step %d: %.3g s waiting, %.3g s in host calls (want both > 0)", step,
              b.wait_seconds - a.wait_seconds, b.host_call_seconds - a.host_call_seconds);
    }
    printf("  %-58s %lld launches, %lld cuBLAS, %lld uploads (%lld B), %lld waits, %lld allocs\n",
           "training step (forward, backward, norm, Adam):", b.launches - a.launches,
           b.cublas_calls - a.cublas_calls, b.uploads - a.uploads, b.upload_bytes - a.upload_bytes,
           waits, step_allocs);
    int32_t out[MB * MAXT];
    int len[MB];
    cuda_backend_counters(gpu, &a);
    CHECK_EQ_INT(seq2seq_greedy(m, &batch, 1.5, 2, out, MAXT, len), NMT_OK);
    cuda_backend_counters(gpu, &b);
    CHECK(b.allocs == a.allocs, "greedy decoding allocated %lld times", b.allocs - a.allocs);
    CHECK(b.lane_forks - a.lane_forks == 1, "greedy decoding forked %lld times (want 1: the "
          "encoder)", b.lane_forks - a.lane_forks);
    int steps = seq2seq_decode_steps(m);
    CHECK(b.host_waits - a.host_waits == steps, "greedy decoding waited %lld times in %d steps (want "
          "one a step: the top-1 ids)", b.host_waits - a.host_waits, steps);
    CHECK(b.host_call_seconds > a.host_call_seconds && b.wait_seconds > a.wait_seconds &&
              b.slow_seconds <= b.host_call_seconds && b.slow_calls <= b.host_calls,
          "greedy decoding's host time: %.3g s in calls, %.3g s waiting; slow %lld calls %.3g s of "
          "%lld calls %.3g s", b.host_call_seconds - a.host_call_seconds, b.wait_seconds - a.wait_seconds,
          b.slow_calls, b.slow_seconds, b.host_calls, b.host_call_seconds);
    CHECK(b.downloads_started - a.downloads_started == steps, "greedy decoding started %lld downloads "
          "in %d steps (want one a step: pipelined)", b.downloads_started - a.downloads_started, steps);
    printf("  %-58s %lld launches, %lld waits for %d steps, %lld allocs\n", "greedy decode:",
           b.launches - a.launches, b.host_waits - a.host_waits, steps, b.allocs - a.allocs);
    /* a greedy step fed the last top-1 ids reads them on the device (no
     * upload); a step fed other tokens uploads them. (That the tokens read
     * are the right ones, the greedy parity of test_models shows.) */
    {
        int32_t ids[MB];
        long long up[2];
        seq2seq_decode_setup(m, &batch, 1, MAXT);
        for (int r = 0; r < MB; r++) ids[r] = NMT_BOS_ID;
        seq2seq_decode_step(m, 0, ids, false);
        for (int k = 0; k < 2; k++) {
            seq2seq_decode_topk(m, 1, NULL, ids);
            if (k == 1) ids[MB - 1] = ids[MB - 1] == 5 ? 6 : 5; /* one row fed another token */
            cuda_backend_counters(gpu, &a);
            seq2seq_decode_step(m, 1 + k, ids, false);
            cuda_backend_counters(gpu, &b);
            up[k] = b.uploads - a.uploads;
        }
        seq2seq_decode_end(m);
        CHECK(up[0] == 0 && up[1] == 1, "greedy steps fed the top-1 ids, then other ids: %lld and %lld "
              "uploads (want 0 and 1)", up[0], up[1]);
    }
    /* beam search: no allocation either; one wait a step for the scores
     * and ids, one more for the attention weights with a coverage penalty */
    for (int cov = 0; cov <= 1; cov++) {
        BeamSpec spec = {BEAM, NBEST, 0.6, cov ? 0.2 : 0.0, 1.5, 2};
        int32_t bout[MB * NBEST * MAXT];
        int blen[MB * NBEST], bcount[MB];
        double bscore[MB * NBEST];
        cuda_backend_counters(gpu, &a);
        CHECK_EQ_INT(seq2seq_beam_search(m, &batch, &spec, bout, MAXT, blen, bscore, bcount, NULL), NMT_OK);
        cuda_backend_counters(gpu, &b);
        steps = seq2seq_decode_steps(m);
        CHECK(b.allocs == a.allocs, "beam search allocated %lld times", b.allocs - a.allocs);
        CHECK(b.host_waits - a.host_waits == (long long)(1 + cov) * steps,
              "beam search (coverage %d) waited %lld times in %d steps (want %d a step)", cov,
              b.host_waits - a.host_waits, steps, 1 + cov);
        printf("  %-58s %lld launches, %lld waits for %d steps, %lld allocs\n",
               cov ? "beam search (beam 4, 2-best, coverage penalty):" : "beam search (beam 4, 2-best):",
               b.launches - a.launches, b.host_waits - a.host_waits, steps, b.allocs - a.allocs);
    }
    const char *ge = cuda_backend_error(gpu);
    CHECK(ge == NULL, "traffic: CUDA error: %s", ge ? ge : "");
    gpu->release(gpu, mom);
    gpu->release(gpu, var);
    free(host);
    seq2seq_free(m);
}

#include "gpu_parity_graphs.h"
#include "gpu_parity_own_gemm.h"
#include "gpu_parity_profile.h"

/* everything after the slot tests: a step's traffic, the error path, CUDA
 * graphs, whole models */
static void test_beyond_slots(void) {
    if (!selftest) test_step_traffic();
    if (!selftest) test_error_path();
    if (!selftest) test_lane_misuse();
    if (!selftest) test_host_time();
    if (!selftest && !tf32) test_graphs();
    if (tf32)
        printf("SKIP: whole-model parity under NMT_TF32 (its 1e-5 loss and identical tokens assume "
               "float32 GEMMs; the default run checks the models)\n");
    else {
        test_models();
        test_model_sweep();
    }
    /* last: CUPTI, once started, stays loaded in the process; should it
     * upset anything, every other line is already out.
     * NMT_PARITY_NO_PROFILE=1 (gpu-check.sh's compute-sanitizer runs)
     * leaves it out */
    const char *no_profile = getenv("NMT_PARITY_NO_PROFILE");
    if (no_profile && *no_profile && strcmp(no_profile, "0") != 0)
        printf("SKIP: NMT_PARITY_NO_PROFILE: the device profile's test\n");
    else if (!selftest)
        test_profile();
}

int main(void) {
    /* line by line: a run killed at its time limit (a hung kernel) still
     * leaves in its log every check before the hang */
    setvbuf(stdout, NULL, _IOLBF, 0);
    nmt_log_quiet(1);
    *test_rand_state() = 0x5eed0f9a1b2c3d4eULL; /* this program's inputs */
    char err[256] = "";
    /* NMT_PARITY_SELFTEST=1: a second CPU backend (1 thread) stands in for
     * the GPU, to check this harness on a machine without one */
    const char *self = getenv("NMT_PARITY_SELFTEST");
    selftest = self && *self && strcmp(self, "0") != 0;
    /* the run-time libraries (cuBLAS) load with or without a GPU */
    char lib_err[320] = "";
    int libs = cuda_backend_load_libraries(lib_err, sizeof lib_err);
    /* and CUPTI (NMT_CUDA_PROFILE), of the version of the build's headers */
    char prof_err[320] = "";
    int prof = cuda_backend_profile_load(prof_err, sizeof prof_err);
#ifdef NMT_WITH_CUDA
    CHECK(libs == 1, "a CUDA build loads cuBLAS at run time: %s", lib_err);
    CHECK(prof == 1, "a CUDA build loads CUPTI of its own version at run time: %s", prof_err);
#else
    CHECK(libs == 0 && strstr(lib_err, "without CUDA"), "without CUDA: %d (%s)", libs, lib_err);
    CHECK(prof == 0 && strstr(prof_err, "without CUDA"), "without CUDA: %d (%s)", prof, prof_err);
#endif
    if (!selftest && !cuda_backend_available()) {
        /* the skip path itself must be clean: NULL and a reason, no abort */
        Backend *b = cuda_backend_create(0, err, sizeof err);
        CHECK(b == NULL, "without a GPU cuda_backend_create returns NULL");
        CHECK(err[0] != '\0', "and says why");
        CHECK(cuda_backend_create(0, NULL, 0) == NULL, "also without an error buffer");
        CHECK(cuda_backend_error(NULL) == NULL, "cuda_backend_error(NULL) is NULL");
        if (b) b->destroy(b);
        printf("SKIP: no GPU visible (%s): CPU-GPU parity not checked\n", err);
        /* the harness still runs, against a second CPU backend, so that a
         * broken check shows before the next GPU session */
        selftest = 1;
    }
    /* the backends made here run every op at once (the slot tests count
     * host calls and waits), unless NMT_CUDA_GRAPHS says otherwise; the
     * graph tests make their own with it on (gpu_parity_graphs.h) */
    setenv("NMT_CUDA_GRAPHS", "0", 0);
    const char *tf = getenv("NMT_TF32");
    tf32 = tf && *tf && strcmp(tf, "0") != 0;
    if (tf32) gemm_tol = 1e-2;
    const char *og = getenv("NMT_CUDA_GEMM");
    own_gemm_env = og && !strcmp(og, "own");
    const char *pe = getenv("NMT_CUDA_PERSISTENT");
    persist_env = !selftest && pe && *pe && strcmp(pe, "0") != 0;
    cpu = cpu_backend_create(0);
    gpu = selftest ? cpu_backend_create(1) : cuda_backend_create(0, err, sizeof err);
    CHECK(cpu != NULL, "cpu backend");
    CHECK(gpu != NULL, "cuda_backend_create: %s", err);
    if (!cpu || !gpu) return test_summary("test_gpu_parity");
    CHECK(selftest || strcmp(gpu->name, "cuda") == 0, "name");
    if (!selftest) {
        NmtStatus st = backend_apply_decode_env(gpu);
        CHECK(st == NMT_OK, "the decoding settings of the environment: %s", nmt_error_message());
        if (st) return test_summary("test_gpu_parity");
        printf("GPU decoding: quantum %d, pipeline %s, query form %d (NMT_DECODE_*)\n", gpu->decode_quantum,
               gpu->overlap_downloads ? "on" : "off", gpu->decode_query_form);
    }
    if (selftest)
        printf("SELFTEST: a 1-thread CPU backend stands in for the GPU (checks this harness "
               "only)\n");
    else
        printf("GPU backend vs CPU backend (gemm tol %.0e%s%s)\n", gemm_tol,
               gemm_tol > 1e-4 ? ", NMT_TF32" : "", own_gemm_env ? ", NMT_CUDA_GEMM=own" : "");

    const char *graphs_only = getenv("NMT_PARITY_GRAPHS_ONLY");
    if (!selftest && graphs_only && *graphs_only && strcmp(graphs_only, "0") != 0) {
        printf("SKIP: NMT_PARITY_GRAPHS_ONLY: test_graphs alone (parts: %s)\n",
               getenv("NMT_PARITY_GRAPH_PARTS") ? getenv("NMT_PARITY_GRAPH_PARTS") : "all");
        test_graphs();
        gpu->destroy(gpu);
        cpu->destroy(cpu);
        return test_summary("test_gpu_parity");
    }
    test_memory();
    test_gemm();
    test_gemm_batched();
    if (!selftest && !tf32) test_own_gemm(); /* own makes no TF32 backend */
    test_elementwise();
    test_dropout();
    test_dropout_rows();
    test_adam();
    test_sum_squares();
    test_topk();
    float keep5[5] = {1, 0, 1, 1, 0}, keep1[1] = {1};
    test_lstm(5, 37, keep5, true);
    test_lstm(1, 130, keep1, false);
    test_recurrences();
    test_embedding(29, 37, 50, false);
    test_embedding(1001, 70, 300, false);
    test_embedding(300, 33, 97, true);
    test_attention();
    test_guided_aligns();
    test_xent(37, 1001, 0.1f);
    test_xent(5, 29, 0.0f);
    test_xent(1, 7, 0.1f);
    test_log_softmax(7, 1001);
    test_log_softmax(3, 5);
    test_layer_norm(1, 4 * 37);
    test_layer_norm(301, 4 * 37);
    test_layer_norm(9, 1);
    test_layer_norm(1, 4 * 300);
    test_layer_norm(301, 4 * 300);
    test_layer_norm(3, 4 * 65536);
    test_layer_norm_empty();
    test_lanes();
    const char *ge = cuda_backend_error(gpu);
    CHECK(ge == NULL, "no CUDA error in the slot tests: %s", ge ? ge : "");
    /* NMT_PARITY_SLOTS_ONLY=1: the slot tests above only (test_gpu_emu.sh
     * runs them again with the emulator's threads in reverse order) */
    const char *slots_only = getenv("NMT_PARITY_SLOTS_ONLY");
    if (slots_only && *slots_only && strcmp(slots_only, "0") != 0)
        printf("SKIP: NMT_PARITY_SLOTS_ONLY: traffic, error path, graphs and whole models\n");
    else {
        CudaCounters before, after;
        cuda_backend_counters(gpu, &before);
        test_beyond_slots();
        cuda_backend_counters(gpu, &after);
        if (persist_env)
            CHECK(after.persistent_runs > before.persistent_runs,
                  "NMT_CUDA_PERSISTENT=1: the models ran the persistent recurrence (%lld runs)",
                  after.persistent_runs - before.persistent_runs);
    }

    for (int i = 0; i < n_allocs; i++) {
        cpu->release(cpu, allocs[0][i]);
        gpu->release(gpu, allocs[1][i]);
    }
    ge = cuda_backend_error(gpu);
    CHECK(ge == NULL, "no CUDA error at the end: %s", ge ? ge : "");
    gpu->destroy(gpu);
    cpu->destroy(cpu);
    return test_summary("test_gpu_parity");
}
