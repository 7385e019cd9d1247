/* gpu_own_gemm.cu: nmt's own SGEMM kernel, which replaces cuBLAS for every
 * GEMM of a backend made with NMT_CUDA_GEMM=own (docs/gpu.md, "Own GEMM").
 *
 * Why: a process's first cuBLAS calls load the library's kernels lazily;
 * on the H200 (2026-12-04) they took 106-145 ms, most of a 500-line
 * decoding run (about 0.2 s), and each cuBLAS call costs the host more
 * than a plain launch. A backend with its own GEMM never loads cuBLAS.
 * It is off by default: cuBLAS is faster on the device, and training's
 * large GEMMs want it (and TF32, which this kernel does not do).
 *
 * The arithmetic is fixed, so that a CPU twin can reproduce it bit for bit
 * (own_gemm_twin in tests/gpu_parity_own_gemm.h): each element of C is one
 * thread's chain of fused multiply-adds over l = 0, 1, ..., k-1 in order,
 * starting from 0, then alpha acc (beta 0: C is not read) or
 * fma(alpha, acc, beta C). alpha 0 reads neither A nor B (C = beta C, or 0
 * when beta is 0), as BLAS. The tile size changes which thread computes an
 * element, never the chain, so the result does not depend on it.
 *
 * Terms are cuBLAS's (column-major; gpu_gemm.cu swaps the operands of our
 * row-major calls): C (m, n) = alpha op(A) op(B) + beta C, op(A) (m, k),
 * op(B) (k, n), `count` matrices of each, stride_* apart. A block of
 * 16 x 16 threads computes a TILE x TILE tile of C, PER x PER elements a
 * thread (rows tx PER + r, columns ty PER + s: each thread reads its PER
 * values of a stage's row of A and of B from shared memory as one vector);
 * k goes through shared memory OWN_GEMM_BK at a time, each operand loaded
 * along its contiguous direction. The loops over PER and over a full
 * stage have constant trip counts, which nvcc unrolls. */
#include "gpu/gpu_internal.cuh"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>

#define OWN_GEMM_BK 16  /* k per shared-memory stage */
#define OWN_GEMM_SIDE 16 /* threads per side of a block: 256 threads */
/* grid y and z: CUDA's limit, beyond which the blocks loop; the emulator
 * takes 3, so that the parity test's batches and tall GEMMs run the loops */
#ifdef NMT_CUDA_EMU
#define OWN_GEMM_MAX_GRID 3
#else
#define OWN_GEMM_MAX_GRID 65535
#endif
/* a shared row's padding: keeps rows 16-byte aligned for the vector reads
 * and spreads a transposed operand's stores over 8 banks instead of 1 */
#define OWN_GEMM_PAD 4

/* PER consecutive floats of shared memory (16- or 8-byte aligned) in one
 * vector read (LDS.128 or LDS.64): a warp's reads of its 16 distinct
 * runs take 2 wavefronts where PER scalar reads took PER */
template <int PER>
__device__ inline void own_gemm_read(const float *p, float *out);
#ifdef NMT_CUDA_EMU
/* a GPU faults on a misaligned vector read; the emulator's CPU would not */
#define OWN_GEMM_ALIGNED(p, bytes) assert((uintptr_t)(p) % (bytes) == 0)
#else
#define OWN_GEMM_ALIGNED(p, bytes) ((void)0)
#endif
template <>
__device__ inline void own_gemm_read<4>(const float *p, float *out) {
    OWN_GEMM_ALIGNED(p, 16);
    float4 v = *reinterpret_cast<const float4 *>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
template <>
__device__ inline void own_gemm_read<2>(const float *p, float *out) {
    OWN_GEMM_ALIGNED(p, 8);
    float2 v = *reinterpret_cast<const float2 *>(p);
    out[0] = v.x, out[1] = v.y;
}

template <int TILE>
__global__ void __launch_bounds__(OWN_GEMM_SIDE * OWN_GEMM_SIDE)
    own_sgemm_kernel(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                     long long stride_a, const float *B, int ldb, long long stride_b, float beta,
                     float *C, int ldc, long long stride_c, int count) {
    constexpr int PER = TILE / OWN_GEMM_SIDE;
    constexpr int THREADS = OWN_GEMM_SIDE * OWN_GEMM_SIDE;
    static_assert((TILE + OWN_GEMM_PAD) % 4 == 0 && PER * OWN_GEMM_SIDE == TILE, "rows of whole vectors");
    /* As[l][i] = op(A)(i0 + i, l0 + l), Bs[l][j] = op(B)(l0 + l, j0 + j) */
    __shared__ __align__(16) float As[OWN_GEMM_BK][TILE + OWN_GEMM_PAD];
    __shared__ __align__(16) float Bs[OWN_GEMM_BK][TILE + OWN_GEMM_PAD];
    /* this thread's elements: rows i0 + tx PER + r, columns j0 + ty PER + s */
    const int t = threadIdx.x, tx = t % OWN_GEMM_SIDE, ty = t / OWN_GEMM_SIDE;
    const int i0 = blockIdx.x * TILE, n_tiles = (n + TILE - 1) / TILE;
    for (int z = blockIdx.z; z < count; z += gridDim.z) {
        const float *a = A + z * stride_a, *b = B + z * stride_b;
        float *c = C + z * stride_c;
        for (int jt = blockIdx.y; jt < n_tiles; jt += gridDim.y) {
            const int j0 = jt * TILE;
            float acc[PER][PER];
            for (int r = 0; r < PER; r++)
                for (int s = 0; s < PER; s++) acc[r][s] = 0.0f;
            /* alpha is the same for the whole block: the barriers below
             * are reached by every thread or by none */
            for (int l0 = 0; alpha != 0.0f && l0 < k; l0 += OWN_GEMM_BK) {
                const int kk = k - l0 < OWN_GEMM_BK ? k - l0 : OWN_GEMM_BK;
                for (int e = t; e < TILE * OWN_GEMM_BK; e += THREADS) {
                    /* op(A)(i, l): A[i + l lda] (N, contiguous in i) or
                     * A[l + i lda] (T, contiguous in l) */
                    int i = ta ? e / OWN_GEMM_BK : e % TILE, l = ta ? e % OWN_GEMM_BK : e / TILE;
                    float v = 0.0f;
                    if (i0 + i < m && l < kk)
                        v = ta ? a[(l0 + l) + (size_t)(i0 + i) * lda] : a[(i0 + i) + (size_t)(l0 + l) * lda];
                    As[l][i] = v;
                    /* op(B)(l, j): B[l + j ldb] (N, contiguous in l) or
                     * B[j + l ldb] (T, contiguous in j) */
                    int j = tb ? e % TILE : e / OWN_GEMM_BK, lb = tb ? e / TILE : e % OWN_GEMM_BK;
                    float w = 0.0f;
                    if (j0 + j < n && lb < kk)
                        w = tb ? b[(j0 + j) + (size_t)(l0 + lb) * ldb] : b[(l0 + lb) + (size_t)(j0 + j) * ldb];
                    Bs[lb][j] = w;
                }
                __syncthreads();
                auto term = [&](int l) {
                    float x[PER], y[PER];
                    own_gemm_read<PER>(&As[l][tx * PER], x);
                    own_gemm_read<PER>(&Bs[l][ty * PER], y);
                    for (int r = 0; r < PER; r++)
                        for (int s = 0; s < PER; s++) acc[r][s] = fmaf(x[r], y[s], acc[r][s]);
                };
                /* a full stage with a constant trip count (unrolled); the
                 * last one only l < kk, so that the chain has exactly k
                 * terms (a padded 0 x 0 would turn -0 into +0) */
                if (kk == OWN_GEMM_BK)
                    for (int l = 0; l < OWN_GEMM_BK; l++) term(l);
                else
                    for (int l = 0; l < kk; l++) term(l);
                __syncthreads();
            }
            for (int s = 0; s < PER; s++)
                for (int r = 0; r < PER; r++) {
                    int i = i0 + tx * PER + r, j = j0 + ty * PER + s;
                    if (i >= m || j >= n) continue;
                    float *out = c + i + (size_t)j * ldc;
                    if (alpha == 0.0f)
                        *out = beta == 0.0f ? 0.0f : __fmul_rn(beta, *out);
                    else
                        *out = beta == 0.0f ? __fmul_rn(alpha, acc[r][s])
                                            : fmaf(alpha, acc[r][s], __fmul_rn(beta, *out));
                }
        }
    }
}

static unsigned own_gemm_grid(long long n) {
    return (unsigned)(n < OWN_GEMM_MAX_GRID ? n : OWN_GEMM_MAX_GRID);
}

/* cuBLAS's argument checks (its CUBLAS_STATUS_INVALID_VALUE): the sizes
 * are not negative, each leading dimension covers its matrix's rows (in
 * column-major terms); false and a detail naming the argument otherwise */
static bool own_gemm_args_ok(int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc,
                             int count, char *detail, size_t size) {
    int rows_a = ta ? k : m, rows_b = tb ? n : k;
    if (m < 0 || n < 0 || k < 0 || count < 0)
        snprintf(detail, size, "invalid argument: a negative size (m %d, n %d, k %d, count %d)", m, n, k, count);
    else if (lda < (rows_a > 1 ? rows_a : 1))
        snprintf(detail, size, "invalid argument: lda %d < %d rows of op(A)'s storage", lda, rows_a);
    else if (ldb < (rows_b > 1 ? rows_b : 1))
        snprintf(detail, size, "invalid argument: ldb %d < %d rows of op(B)'s storage", ldb, rows_b);
    else if (ldc < (m > 1 ? m : 1))
        snprintf(detail, size, "invalid argument: ldc %d < m %d", ldc, m);
    else
        return true;
    return false;
}

void gpu_own_sgemm(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                   int k, float alpha, const float *A, int lda, long long stride_a,
                   const float *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                   long long stride_c, int count) {
    int batch = count > 0 ? count : 1;
    int ta_i = ta != CUBLAS_OP_N, tb_i = tb != CUBLAS_OP_N;
    char detail[160];
    if (!own_gemm_args_ok(ta_i, tb_i, m, n, k, lda, ldb, ldc, count, detail, sizeof detail)) {
        gpu_record(c, "own_sgemm", detail, __FILE__, __LINE__);
        return;
    }
    if (m == 0 || n == 0) return;
    /* 64 x 64 tiles (4 x 4 a thread) when they give every multiprocessor a
     * block; else 32 x 32 (2 x 2 a thread), four times the blocks: a
     * decoding step's GEMMs (64 rows) would leave most of the device idle */
    long long tiles64 = (long long)((m + 63) / 64) * ((n + 63) / 64) * batch;
    if (tiles64 >= (c->sm_count > 0 ? c->sm_count : 1)) {
        dim3 grid((unsigned)((m + 63) / 64), own_gemm_grid((n + 63) / 64), own_gemm_grid(batch));
        GPU_LAUNCH(c, own_sgemm_kernel<64>, grid, OWN_GEMM_SIDE * OWN_GEMM_SIDE, ta_i, tb_i, m, n, k,
                   alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batch);
    } else {
        dim3 grid((unsigned)((m + 31) / 32), own_gemm_grid((n + 31) / 32), own_gemm_grid(batch));
        GPU_LAUNCH(c, own_sgemm_kernel<32>, grid, OWN_GEMM_SIDE * OWN_GEMM_SIDE, ta_i, tb_i, m, n, k,
                   alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batch);
    }
}
