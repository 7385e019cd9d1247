/* cpu_gemm.c: the CPU backend's dense algebra: gemm and strided batched
 * gemm through OpenBLAS's row-major cblas_sgemm (contracts in backend.h). */
#include "cpu/cpu_internal.h"

#include <cblas.h>
#include <omp.h>

/* A batch whose gemms are each at most this many multiply-adds (m n k) runs
 * its gemms in parallel over the batch (OpenMP), each on one thread. */
#define CPU_GEMM_SMALL (64L * 64L * 64L)

/* C (m, n) = beta C, the k == 0 case (OpenBLAS rejects lda < 1 there) */
static void cpu_gemm_scale_c(int m, int n, float beta, float *C, int ldc) {
    for (int i = 0; i < m; i++) {
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < n; j++) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
}

/* A gemm of few rows (a decoding step's m is the batch's sentences or beam
 * rows, which shrink as sentences finish) and many columns (4H gates, the
 * vocabulary) is split here into one block of columns per thread, each an
 * OpenBLAS call on its own thread: OpenBLAS divides a gemm's rows among its
 * threads, so with a few rows some of them idle. Measured on 2 threads
 * (m x 8000 x 256, the output layer of configs/de-en.json): m = 4 and 8
 * 2.0-2.5x faster, m = 24 1.7x, 16, 32 and 64..320 the same to 5%. The
 * split changes the last bits of some elements, as OpenBLAS's own thread
 * count does; it depends only on the shapes and the thread count, so a run
 * is reproducible bit for bit with the same thread count (docs/gpu.md). */
#define CPU_GEMM_SPLIT_MAX_M 128
#define CPU_GEMM_SPLIT_MIN_COLS 256 /* columns a thread at least */
#define CPU_GEMM_SPLIT_ALIGN 16     /* block edges on 64-byte column multiples */

static void cpu_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C,
                ldc);
}

/* threads to split a gemm's columns over: 1 when OpenBLAS's own split
 * serves, and with an OpenBLAS not built for OpenMP (openblas_get_parallel()
 * != 2), whose calls from OpenMP threads would each start its own pool */
static int cpu_gemm_col_blocks(int m, int n) {
    if (m > CPU_GEMM_SPLIT_MAX_M || openblas_get_parallel() != 2 || omp_in_parallel()) return 1;
    int t = omp_get_max_threads(), most = n / CPU_GEMM_SPLIT_MIN_COLS;
    return t < most ? t : most > 1 ? most : 1;
}

void cpu_gemm(Backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C,
              int ldc) {
    (void)be;
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        cpu_gemm_scale_c(m, n, beta, C, ldc);
        return;
    }
    int blocks = cpu_gemm_col_blocks(m, n);
    if (blocks == 1) {
        cpu_sgemm(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* columns [j0, j1) of C, and of op(B): B's rows j when transposed, else its columns */
#pragma omp parallel for schedule(static) num_threads(blocks)
    for (int p = 0; p < blocks; p++) {
        int j0 = (int)((long)n * p / blocks) / CPU_GEMM_SPLIT_ALIGN * CPU_GEMM_SPLIT_ALIGN;
        int j1 = p + 1 == blocks ? n
                                 : (int)((long)n * (p + 1) / blocks) / CPU_GEMM_SPLIT_ALIGN *
                                       CPU_GEMM_SPLIT_ALIGN;
        const float *Bj = trans_b ? B + (size_t)j0 * ldb : B + j0;
        cpu_sgemm(trans_a, trans_b, m, j1 - j0, k, alpha, A, lda, Bj, ldb, beta, C + j0, ldc);
    }
}

void cpu_gemm_batched(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, long stride_a, const float *B,
                      int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                      int count) {
    if (m <= 0 || n <= 0 || count <= 0) return;
    if ((long)m * n * k <= CPU_GEMM_SMALL && count > 1) {
#pragma omp parallel
        {
            /* OpenBLAS (0.3.21, OpenMP build) asks omp_get_max_threads()
             * whether to thread a gemm, also inside this region, and
             * threads some gemms this small: the query form's head
             * contexts (4 x 256 x 32, long leading dimensions) started a
             * nested team of new threads at every call, 600 thread starts
             * for 1000 sentences and twice the decoding time. This
             * thread's answer is now 1 (the setting is the thread's own
             * in the region). */
            omp_set_num_threads(1);
#pragma omp for schedule(static)
            for (int i = 0; i < count; i++)
                cpu_gemm(be, trans_a, trans_b, m, n, k, alpha, A + (long)i * stride_a, lda,
                         B + (long)i * stride_b, ldb, beta, C + (long)i * stride_c, ldc);
        }
        return;
    }
    for (int i = 0; i < count; i++)
        cpu_gemm(be, trans_a, trans_b, m, n, k, alpha, A + (long)i * stride_a, lda,
                 B + (long)i * stride_b, ldb, beta, C + (long)i * stride_c, ldc);
}
