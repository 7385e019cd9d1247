/* gpu_gemm.cu: the CUDA backend's dense algebra (mirrors cpu_gemm.c): gemm
 * and strided batched gemm through cuBLAS (contracts in backend.h).
 *
 * cuBLAS is column-major; our matrices are row-major. A row-major (r, c)
 * matrix with leading dimension ld is, read column-major, its (c, r)
 * transpose with the same ld. So the row-major C = op(A) op(B) is the
 * column-major C^T = op(B)^T op(A)^T: cublasSgemm with the operands swapped
 * (B first), the same transposition flags, and m and n swapped. No data
 * moves. TF32 is used only when NMT_TF32=1 set the handle's math mode
 * (gpu_backend.cu). */
#include "gpu/gpu_internal.cuh"

/* C (m, n) (count matrices stride_c apart) = beta C: the k == 0 case, as
 * the CPU does it (beta == 0 writes zeros, whatever C held) */
__global__ void gemm_scale_c_kernel(int m, int n, float beta, float *C, int ldc, long stride_c,
                                    int count) {
    size_t per = (size_t)m * n, total = per * (size_t)count;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / per, r = i % per;
        float *c = C + (long)b * stride_c + (r / n) * (size_t)ldc + r % n;
        *c = beta == 0.0f ? 0.0f : beta * *c;
    }
}

static cublasOperation_t gpu_op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

void gpu_gemm(Backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C,
              int ldc) {
    GPU_ENTER(be);
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        GPU_LAUNCH(ctx, gemm_scale_c_kernel, gpu_blocks((size_t)m * n), GPU_THREADS, m, n, beta,
                   C, ldc, 0L, 1);
        return;
    }
    GPU_CUBLAS(ctx, ctx->blas->sgemm(ctx->cublas, gpu_op(trans_b), gpu_op(trans_a), n, m, k,
                                     &alpha, B, ldb, A, lda, &beta, C, ldc));
}

void gpu_gemm_batched(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, long stride_a, const float *B,
                      int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                      int count) {
    GPU_ENTER(be);
    if (m <= 0 || n <= 0 || count <= 0) return;
    if (k <= 0) {
        GPU_LAUNCH(ctx, gemm_scale_c_kernel, gpu_blocks((size_t)m * n * count), GPU_THREADS, m,
                   n, beta, C, ldc, stride_c, count);
        return;
    }
    GPU_CUBLAS(ctx, ctx->blas->sgemm_strided_batched(
                        ctx->cublas, gpu_op(trans_b), gpu_op(trans_a), n, m, k, &alpha, B, ldb,
                        (long long)stride_b, A, lda, (long long)stride_a, &beta, C, ldc,
                        (long long)stride_c, count));
}
