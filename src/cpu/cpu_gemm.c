/* cpu_gemm.c: the CPU backend's dense algebra: gemm and strided batched
 * gemm through OpenBLAS's row-major cblas_sgemm (contracts in backend.h). */
#include "cpu/cpu_internal.h"

#include <cblas.h>

/* A batch whose gemms are each at most this many multiply-adds (m n k) runs
 * its gemms in parallel over the batch (OpenMP). OpenBLAS computes gemms
 * this small on the calling thread (its own threading starts at 64^3), so
 * the concurrent calls do not fight over its thread pool. */
#define CPU_GEMM_SMALL (64L * 64L * 64L)

/* C (m, n) = beta C, the k == 0 case (OpenBLAS rejects lda < 1 there) */
static void cpu_gemm_scale_c(int m, int n, float beta, float *C, int ldc) {
    for (int i = 0; i < m; i++) {
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < n; j++) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
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
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C,
                ldc);
}

void cpu_gemm_batched(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, long stride_a, const float *B,
                      int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                      int count) {
    if (m <= 0 || n <= 0 || count <= 0) return;
    bool small = (long)m * n * k <= CPU_GEMM_SMALL;
#pragma omp parallel for schedule(static) if (small && count > 1)
    for (int i = 0; i < count; i++)
        cpu_gemm(be, trans_a, trans_b, m, n, k, alpha, A + (long)i * stride_a, lda,
                 B + (long)i * stride_b, ldb, beta, C + (long)i * stride_c, ldc);
}
