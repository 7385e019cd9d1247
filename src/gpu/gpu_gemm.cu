/* gpu_gemm.cu: the CUDA backend's dense algebra (mirrors cpu_gemm.c): gemm
 * and strided batched gemm through cuBLAS (contracts in backend.h), or
 * through nmt's own kernel with NMT_CUDA_GEMM=own (gpu_own_gemm.cu).
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

/* a cuBLAS call as an op of the stream (gpu_internal.cuh), in cuBLAS's
 * column-major terms; count 0: cublasSgemm, else strided batched. alpha
 * and beta are host values, read when the call is enqueued (or captured). */
typedef struct {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, count;
    float alpha, beta;
    const float *A, *B;
    float *C;
    long long stride_a, stride_b, stride_c;
} GpuGemmOp;

static void gemm_exec(GpuContext *c, const void *payload) {
    GpuGemmOp g;
    memcpy(&g, payload, sizeof g);
    c->counters.host_calls++;
    if (!g.count)
        GPU_CUBLAS_TIMED(c, "cublasSgemm",
                         c->blas->sgemm(gpu_exec_blas(c), g.ta, g.tb, g.m, g.n, g.k, &g.alpha, g.A, g.lda,
                                        g.B, g.ldb, &g.beta, g.C, g.ldc));
    else
        GPU_CUBLAS_TIMED(c, "cublasSgemmStridedBatched",
                         c->blas->sgemm_strided_batched(gpu_exec_blas(c), g.ta, g.tb, g.m, g.n, g.k,
                                                        &g.alpha, g.A, g.lda, g.stride_a, g.B, g.ldb,
                                                        g.stride_b, &g.beta, g.C, g.ldc, g.stride_c,
                                                        g.count));
}

void gpu_op_sgemm_batched(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m,
                          int n, int k, float alpha, const float *A, int lda, long long stride_a,
                          const float *B, int ldb, long long stride_b, float beta, float *C,
                          int ldc, long long stride_c, int count) {
    c->counters.cublas_calls++;
    if (c->own_gemm) {
        /* NMT_CUDA_GEMM=own: nmt's kernel, a launch (gpu_own_gemm.cu),
         * counted as a GEMM and not also as a launch */
        long long launches = c->counters.launches;
        gpu_own_sgemm(c, ta, tb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
                      stride_c, count);
        c->counters.launches = launches;
        return;
    }
    GpuGemmOp g;
    memset(&g, 0, sizeof g);
    g.ta = ta, g.tb = tb, g.m = m, g.n = n, g.k = k;
    g.alpha = alpha, g.beta = beta;
    g.A = A, g.lda = lda, g.stride_a = stride_a;
    g.B = B, g.ldb = ldb, g.stride_b = stride_b;
    g.C = C, g.ldc = ldc, g.stride_c = stride_c;
    g.count = count;
    gpu_submit(c, gemm_exec, &g, sizeof g);
}

void gpu_op_sgemm(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                  int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc) {
    gpu_op_sgemm_batched(c, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 0);
}

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
    gpu_op_sgemm(ctx, gpu_op(trans_b), gpu_op(trans_a), n, m, k, alpha, B, ldb, A, lda, beta, C,
                 ldc);
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
    gpu_op_sgemm_batched(ctx, gpu_op(trans_b), gpu_op(trans_a), n, m, k, alpha, B, ldb,
                         (long long)stride_b, A, lda, (long long)stride_a, beta, C, ldc,
                         (long long)stride_c, count);
}
