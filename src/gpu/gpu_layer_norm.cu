/* gpu_layer_norm.cu: the CUDA backend's layer normalisation (mirrors the
 * layer normalisation section of cpu_ops.c): layer_norm_forward and
 * layer_norm_backward (model.layer_norm; contracts in backend.h). The
 * per-element arithmetic is kernels/layer_norm_math.h (the functions the
 * CPU loops call); this file owns the launch shapes and the reductions,
 * which keep the CPU's precision (float sums, two passes for the
 * variance) and a fixed order (the same bits on every run, no atomics).
 *
 * Launch shapes:
 * - the row kernels (forward, and backward's dx): one warp per row when a
 *   row has at most LN_WARP_COLS columns (LN_ROWS_PER_BLOCK rows a block;
 *   warp shuffles only, no barrier), else one block of GPU_ROW_THREADS per
 *   row (gpu_block_allreduce). Thread t of a row takes columns t, t +
 *   threads, ... in every pass, so in the backward each element of x is
 *   read and then written by the one thread that owns it: dx may be x;
 * - dgain: one 32 x 8 block per 32 columns, as bias_backward (gpu_ops.cu):
 *   thread (x, y) adds rows y, y + 8, ... of its column in order, then row
 *   y == 0 adds the 8 partial sums in order. It runs before the dx kernel
 *   on the same stream, so it reads x before an in-place dx overwrites it. */
#include "gpu/gpu_internal.cuh"

#include "kernels/layer_norm_math.h"

/* the widest row that one warp takes (at most 8 columns a lane) */
#define LN_WARP_COLS 256
/* rows (warps) of a warp-per-row block */
#define LN_ROWS_PER_BLOCK (GPU_THREADS / 32)
/* dgain's block: LN_DG_COLS columns by LN_DG_LANES row lanes */
#define LN_DG_COLS 32
#define LN_DG_LANES 8

/* The sum of v over the threads of a row: its warp's (WARP) or its
 * block's (sh: 32 floats of shared memory, reusable right after). Every
 * thread of the row gets the same bits. */
template <bool WARP>
__device__ inline float ln_row_sum(float v, float *sh) {
    if (WARP) {
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        return v;
    }
    return gpu_block_allreduce(v, GpuSumOp(), sh);
}

/* ---- forward ---- */

/* One row of n values, thread t of nt (the row's warp or block): y (=) or
 * (+=) gain xhat; stats (2) (=) mean, rstd when not NULL. */
template <bool WARP>
__device__ void ln_forward_row(int n, const float *x, const float *gain, int accumulate, float *y,
                               float *stats, int t, int nt, float *sh) {
    float s = 0.0f;
    for (int j = t; j < n; j += nt) s += x[j];
    float mean = ln_row_sum<WARP>(s, sh) / (float)n;
    float sq = 0.0f;
    for (int j = t; j < n; j += nt) sq += (x[j] - mean) * (x[j] - mean);
    float rstd = layer_norm_math_rstd(ln_row_sum<WARP>(sq, sh), n);
    if (accumulate)
        for (int j = t; j < n; j += nt) y[j] += gain[j] * layer_norm_math_xhat(x[j], mean, rstd);
    else
        for (int j = t; j < n; j += nt) y[j] = gain[j] * layer_norm_math_xhat(x[j], mean, rstd);
    if (stats && t == 0) {
        stats[0] = mean;
        stats[1] = rstd;
    }
}

/* block r: row r */
__global__ void layer_norm_forward_kernel(int cols, const float *x, const float *gain,
                                          int accumulate, float *y, float *stats) {
    __shared__ float sh[32];
    size_t r = blockIdx.x, o = r * cols;
    ln_forward_row<false>(cols, x + o, gain, accumulate, y + o, stats ? stats + 2 * r : NULL,
                          threadIdx.x, blockDim.x, sh);
}

/* warp w of block b: row b * LN_ROWS_PER_BLOCK + w */
__global__ void layer_norm_forward_warp_kernel(int rows, int cols, const float *x,
                                               const float *gain, int accumulate, float *y,
                                               float *stats) {
    int r = blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return; /* a whole warp leaves together */
    size_t o = (size_t)r * cols;
    ln_forward_row<true>(cols, x + o, gain, accumulate, y + o, stats ? stats + 2 * (size_t)r : NULL,
                         threadIdx.x & 31, 32, NULL);
}

/* rows of a warp-per-row launch: its blocks and their threads (no idle
 * warp when rows is small) */
static inline unsigned ln_warp_blocks(int rows) {
    return (unsigned)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK);
}
static inline unsigned ln_warp_threads(int rows) {
    return 32u * (unsigned)(rows < LN_ROWS_PER_BLOCK ? rows : LN_ROWS_PER_BLOCK);
}

void gpu_layer_norm_forward(Backend *be, int rows, int cols, const float *x, const float *gain,
                            bool accumulate, float *y, float *stats) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    if (cols <= LN_WARP_COLS)
        GPU_LAUNCH(ctx, layer_norm_forward_warp_kernel, ln_warp_blocks(rows), ln_warp_threads(rows),
                   rows, cols, x, gain, (int)accumulate, y, stats);
    else
        GPU_LAUNCH(ctx, layer_norm_forward_kernel, rows, GPU_ROW_THREADS, cols, x, gain,
                   (int)accumulate, y, stats);
}

/* ---- backward ---- */

/* dgain[c] += sum over rows r of dy[r, c] xhat[r, c] (block of LN_DG_COLS
 * columns; fixed order, see the file's comment) */
__global__ void layer_norm_dgain_kernel(int rows, int cols, const float *x, const float *stats,
                                        const float *dy, float *dgain) {
    __shared__ float part[LN_DG_LANES][LN_DG_COLS + 1];
    int c = blockIdx.x * LN_DG_COLS + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += LN_DG_LANES) {
            size_t o = (size_t)r * cols + c;
            acc += dy[o] * layer_norm_math_xhat(x[o], stats[2 * (size_t)r], stats[2 * (size_t)r + 1]);
        }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float s = part[0][threadIdx.x];
        for (int l = 1; l < LN_DG_LANES; l++) s += part[l][threadIdx.x];
        dgain[c] += s;
    }
}

/* dx of one row (thread t of nt): its two sums, then each element; x and
 * dx may be the same row (each thread reads and writes its own columns
 * only), so neither is restrict.
 * g = dy gain is rounded on its own (__fmul_rn, never fused into a
 * multiply-add), as the CPU's (built with -ffp-contract=off): a row of
 * one column has xhat 0 and mean(g) == g, so dx is exactly 0 on both;
 * with g - mean(g) fused, dx was the product's rounding error times rstd
 * (1 / sqrt(1e-5)): -5.5e-6 against the CPU's 0 on the H200 (2026-12-04;
 * the emulator built to fuse as nvcc does, GPU_EMU_FMA of mk/gpu.mk, shows
 * it too). */
template <bool WARP>
__device__ void ln_backward_row(int n, const float *x, const float *gain, const float *dy,
                                float mean, float rstd, float *dx, int t, int nt, float *sh) {
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int j = t; j < n; j += nt) {
        float g = __fmul_rn(dy[j], gain[j]);
        sum_g += g;
        sum_gx += g * layer_norm_math_xhat(x[j], mean, rstd);
    }
    float mean_g = ln_row_sum<WARP>(sum_g, sh) / (float)n;
    float mean_gx = ln_row_sum<WARP>(sum_gx, sh) / (float)n;
    for (int j = t; j < n; j += nt)
        dx[j] = layer_norm_math_dx(__fmul_rn(dy[j], gain[j]), layer_norm_math_xhat(x[j], mean, rstd),
                                   rstd, mean_g, mean_gx);
}

__global__ void layer_norm_backward_kernel(int cols, const float *x, const float *stats,
                                           const float *gain, const float *dy, float *dx) {
    __shared__ float sh[32];
    size_t r = blockIdx.x, o = r * cols;
    ln_backward_row<false>(cols, x + o, gain, dy + o, stats[2 * r], stats[2 * r + 1], dx + o,
                           threadIdx.x, blockDim.x, sh);
}

__global__ void layer_norm_backward_warp_kernel(int rows, int cols, const float *x,
                                                const float *stats, const float *gain,
                                                const float *dy, float *dx) {
    int r = blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return; /* a whole warp leaves together */
    size_t o = (size_t)r * cols;
    ln_backward_row<true>(cols, x + o, gain, dy + o, stats[2 * (size_t)r], stats[2 * (size_t)r + 1],
                          dx + o, threadIdx.x & 31, 32, NULL);
}

void gpu_layer_norm_backward(Backend *be, int rows, int cols, const float *x, const float *stats,
                             const float *gain, const float *dy, float *dx, float *dgain) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    /* dgain first: it reads x, which an in-place dx overwrites */
    dim3 block(LN_DG_COLS, LN_DG_LANES);
    GPU_LAUNCH(ctx, layer_norm_dgain_kernel, (cols + LN_DG_COLS - 1) / LN_DG_COLS, block, rows, cols,
               x, stats, dy, dgain);
    if (cols <= LN_WARP_COLS)
        GPU_LAUNCH(ctx, layer_norm_backward_warp_kernel, ln_warp_blocks(rows), ln_warp_threads(rows),
                   rows, cols, x, stats, gain, dy, dx);
    else
        GPU_LAUNCH(ctx, layer_norm_backward_kernel, rows, GPU_ROW_THREADS, cols, x, stats, gain, dy,
                   dx);
}
