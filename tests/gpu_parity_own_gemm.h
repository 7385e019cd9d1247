/* gpu_parity_own_gemm.h: nmt's own GEMM kernel (NMT_CUDA_GEMM=own,
 * src/gpu/gpu_own_gemm.cu) in the parity test. A backend made with it
 * computes every GEMM with that kernel, whose arithmetic is fixed: each
 * element of C is one chain of fused multiply-adds over l = 0..k-1 in
 * order, so its CPU twin (own_gemm_twin) gives the same bits, on a GPU as
 * on the emulator. Checked bit for bit against the twin: every
 * transposition, padded leading dimensions, strided batches with gaps,
 * both tile sizes (32 and 64: the kernel picks by the blocks a GEMM gives
 * against the device's multiprocessors, so a small and a large GEMM), k
 * not a multiple of the 16-wide stage, the grid's y and z loops (the
 * emulator's grid stops at 3), beta 0 with NaN in C (C unread),
 * alpha 0 with NaN in A and B (A and B unread); and as any GEMM against
 * the CPU backend within gemm_tol. Then the variable itself: a value that
 * is neither cublas nor own is refused, and so is own with NMT_TF32=1.
 * Included by test_gpu_parity.c after the harness. */
#ifndef GPU_PARITY_OWN_GEMM_H
#define GPU_PARITY_OWN_GEMM_H

/* the row-major C (m, n) = alpha op(A) op(B) + beta C (backend.h's gemm)
 * as the own kernel computes it (count 0: one matrix; else `count`
 * matrices stride_* apart) */
static void own_gemm_twin(bool ta, bool tb, int m, int n, int k, float alpha, const float *A,
                          int lda, long sa, const float *B, int ldb, long sb, float beta, float *C,
                          int ldc, long sc, int count) {
    for (int z = 0; z < (count > 0 ? count : 1); z++)
        for (int r = 0; r < m; r++)
            for (int c = 0; c < n; c++) {
                float acc = 0.0f, *out = C + z * sc + (long)r * ldc + c;
                const float *a = A + z * sa, *b = B + z * sb;
                for (int l = 0; alpha != 0.0f && l < k; l++)
                    acc = fmaf(ta ? a[(long)l * lda + r] : a[(long)r * lda + l],
                               tb ? b[(long)c * ldb + l] : b[(long)l * ldb + c], acc);
                if (alpha == 0.0f) *out = beta == 0.0f ? 0.0f : beta * *out;
                else *out = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * *out);
            }
}

/* host floats: uniform in [-1, 1), or all `fill` when fill is not 1 */
static float *own_gemm_host(size_t n, float fill) {
    if (fill == 1.0f) return test_hrand(n, -1, 1);
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = fill;
    return h;
}

static float *own_gemm_dev(Backend *b, const float *h, size_t n) {
    float *d = b->alloc(b, n * sizeof(float));
    if (d) b->upload(b, d, h, n * sizeof(float));
    return d;
}

/* One GEMM on the own backend `ob` and on the CPU backend (count 0: gemm,
 * else gemm_batched), of matrices with room for lda/ldb/ldc and the
 * strides; ab_fill/c_fill: 1 for random values, else the value of every
 * entry of A and B / of C (NaN: must not be read). The own result must be
 * the twin's bits (NaN where the twin has NaN), and within gemm_tol of the
 * CPU's when the inputs are numbers. */
static void own_gemm_case(Backend *ob, const char *what, bool ta, bool tb, int m, int n, int k,
                          float alpha, int lda, long sa, int ldb, long sb, float beta, int ldc,
                          long sc, int count, float ab_fill, float c_fill) {
    int z = count > 0 ? count : 1;
    size_t na = count ? (size_t)sa * z : (size_t)(ta ? k : m) * lda;
    size_t nb = count ? (size_t)sb * z : (size_t)(tb ? n : k) * ldb;
    size_t nc = count ? (size_t)sc * z : (size_t)m * ldc;
    float *hA = own_gemm_host(na, ab_fill), *hB = own_gemm_host(nb, ab_fill);
    float *hC = own_gemm_host(nc, c_fill), *twin = malloc(nc * sizeof *twin);
    float *got = malloc(nc * sizeof *got), *ref = malloc(nc * sizeof *ref);
    memcpy(twin, hC, nc * sizeof *twin);
    own_gemm_twin(ta, tb, m, n, k, alpha, hA, lda, sa, hB, ldb, sb, beta, twin, ldc, sc, count);
    Backend *side[2] = {ob, cpu};
    float *out[2] = {got, ref};
    for (int s = 0; s < 2; s++) {
        Backend *b = side[s];
        float *dA = own_gemm_dev(b, hA, na), *dB = own_gemm_dev(b, hB, nb), *dC = own_gemm_dev(b, hC, nc);
        if (count)
            b->gemm_batched(b, ta, tb, m, n, k, alpha, dA, lda, sa, dB, ldb, sb, beta, dC, ldc, sc, count);
        else
            b->gemm(b, ta, tb, m, n, k, alpha, dA, lda, dB, ldb, beta, dC, ldc);
        b->download(b, out[s], dC, nc * sizeof(float));
        b->release(b, dA);
        b->release(b, dB);
        b->release(b, dC);
    }
    size_t differ = 0, first = nc;
    for (size_t i = 0; i < nc; i++)
        if (!(isnan(got[i]) && isnan(twin[i])) && memcmp(&got[i], &twin[i], sizeof(float)) != 0) {
            if (!differ) first = i;
            differ++;
        }
    char name[160];
    snprintf(name, sizeof name, "own gemm %s: the twin's bits", what);
    printf("  %-58s %s\n", name, differ ? "DIFFERENT" : "identical");
    CHECK(differ == 0, "%s: %zu of %zu entries differ from the CPU twin, first [%zu]: %.9g, twin %.9g", name,
          differ, nc, first, differ ? got[first] : 0.0, differ ? twin[first] : 0.0);
    if (ab_fill == 1.0f && c_fill == 1.0f) {
        snprintf(name, sizeof name, "own gemm %s: the CPU's", what);
        report(name, rel_err_f(ref, got, nc), gemm_tol);
    }
    free(hA), free(hB), free(hC), free(twin), free(got), free(ref);
}

static void test_own_gemm(void) {
    char err[256], saved[64] = "", what[96];
    const char *was = getenv("NMT_CUDA_GEMM");
    if (was) snprintf(saved, sizeof saved, "%s", was);
    setenv("NMT_CUDA_GEMM", "own", 1);
    Backend *ob = cuda_backend_create(0, err, sizeof err);
    CHECK(ob != NULL, "a CUDA backend with NMT_CUDA_GEMM=own: %s", err);
    if (ob) {
        CudaCounters a, c;
        cuda_backend_counters(ob, &a);
        CHECK(a.own_gemm, "its counters say the GEMMs are nmt's own");
        int calls = 0;
        const int shapes[4][3] = {{37, 53, 129}, {1, 29, 67}, {300, 257, 511}, {5, 3, 16}};
        for (int sh = 0; sh < 4; sh++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    int m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
                    snprintf(what, sizeof what, "%c%c %dx%dx%d, padded ld", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
                    own_gemm_case(ob, what, ta, tb, m, n, k, 0.7f, (ta ? m : k) + 3, 0, (tb ? k : n) + 1, 0,
                                  0.3f, n + 5, 0, 0, 1.0f, 1.0f), calls++;
                }
        /* 1250 x 700 in cuBLAS's terms: 220 blocks of 64 x 64, over the
         * H200's 132 multiprocessors (the small ones take 32 x 32 there) */
        own_gemm_case(ob, "NN 700x1250x19, beta 0, NaN in C", false, false, 700, 1250, 19, 1.0f, 19, 0, 1250, 0,
                      0.0f, 1250, 0, 0, 1.0f, NAN), calls++;
        own_gemm_case(ob, "NT 33x40x21, alpha 0, NaN in A and B", false, true, 33, 40, 21, 0.0f, 21, 0, 21, 0,
                      0.5f, 40, 0, 0, NAN, 1.0f), calls++;
        own_gemm_case(ob, "TN 33x40x21, alpha 0 and beta 0", true, false, 33, 40, 21, 0.0f, 33, 0, 40, 0,
                      0.0f, 40, 0, 0, NAN, NAN), calls++;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int m = 13, n = 70, k = 33, count = 7;
                int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
                long sa = (long)(ta ? k : m) * lda + 5, sb = (long)(tb ? n : k) * ldb + 1, sc = (long)m * ldc + 2;
                snprintf(what, sizeof what, "batched %c%c 13x70x33 x 7, strides with gaps", ta ? 'T' : 'N',
                         tb ? 'T' : 'N');
                own_gemm_case(ob, what, ta, tb, m, n, k, 1.3f, lda, sa, ldb, sb, -0.4f, ldc, sc, count, 1.0f, 1.0f);
                calls++;
            }
        cuda_backend_counters(ob, &c);
        CHECK(c.cublas_calls - a.cublas_calls == calls && c.launches == a.launches,
              "own GEMMs count as GEMMs (%lld of %d), not also as launches (%lld)", c.cublas_calls - a.cublas_calls,
              calls, c.launches - a.launches);
        /* cuBLAS's argument checks, as the error path's test wants them */
        float *x = ob->alloc(ob, 64 * sizeof(float));
        ob->gemm(ob, false, false, 4, 4, 4, 1.0f, x, 4, x, 4, 0.0f, x + 32, 1);
        const char *e = cuda_backend_error(ob);
        CHECK(e && strstr(e, "gpu_own_gemm.cu") && strstr(e, "own_sgemm") && strstr(e, "ldc 1 < m 4"),
              "own gemm: ldc 1 < n 4 is refused, naming ldc: %s", e ? e : "(no error)");
        printf("  %-58s %s\n", "own gemm: ldc 1 < n 4", e ? e : "(no error)");
        CudaCounters r;
        cuda_backend_counters(ob, &r);
        CHECK(r.launches == c.launches && r.cublas_calls == c.cublas_calls + 1,
              "own gemm: the refused call counts as a GEMM and no launch (launches %lld -> %lld)", c.launches,
              r.launches);
        ob->release(ob, x);
        ob->destroy(ob);
    }
    setenv("NMT_CUDA_GEMM", "blas", 1);
    Backend *bad = cuda_backend_create(0, err, sizeof err);
    CHECK(!bad && strstr(err, "NMT_CUDA_GEMM=blas") && strstr(err, "cublas") && strstr(err, "own"),
          "NMT_CUDA_GEMM=blas is refused, naming the values: %s", bad ? "(made a backend)" : err);
    if (bad) bad->destroy(bad);
    char tf_saved[64] = "";
    const char *tf_was = getenv("NMT_TF32");
    if (tf_was) snprintf(tf_saved, sizeof tf_saved, "%s", tf_was);
    setenv("NMT_CUDA_GEMM", "own", 1);
    setenv("NMT_TF32", "1", 1);
    bad = cuda_backend_create(0, err, sizeof err);
    CHECK(!bad && strstr(err, "NMT_CUDA_GEMM=own") && strstr(err, "NMT_TF32"),
          "NMT_CUDA_GEMM=own with NMT_TF32=1 is refused: %s", bad ? "(made a backend)" : err);
    if (bad) bad->destroy(bad);
    if (tf_was) setenv("NMT_TF32", tf_saved, 1);
    else unsetenv("NMT_TF32");
    if (was) setenv("NMT_CUDA_GEMM", saved, 1);
    else unsetenv("NMT_CUDA_GEMM");
}

#endif
