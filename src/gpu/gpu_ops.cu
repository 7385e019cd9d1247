/* gpu_ops.cu: the CUDA backend's elementwise kernels (mirrors the first
 * half of cpu_ops.c): add_cols, bias add and its column reduction, tanh,
 * dropout (x times a mask from cuRAND's Philox), word dropout (whole
 * rows, the same Philox words), scale, the fused
 * LSTM cell forward and backward, embedding gather and scatter-add, the
 * local-p centre, and the Adam and SGD updates. The per-element arithmetic
 * is the shared math of src/kernels/ (the same functions the CPU loops
 * call); this file owns only indexing, launch shapes and the column
 * reduction.
 *
 * Launch shapes: elementwise kernels run one thread per element over a
 * grid-stride loop (gpu_blocks); bias_backward runs one 32 x 8 block per 32
 * columns (fixed-order reduction: the same bits on every run);
 * embedding_backward gives each table row to one warp, which adds the
 * positions of its rows in order (the CPU's order: the same bits as the
 * CPU, on every run). */
#include "gpu/gpu_internal.cuh"

#include <curand_kernel.h>

#include "kernels/attention_math.h"
#include "kernels/dropout_math.h"
#include "kernels/lstm_math.h"
#include "kernels/optim_math.h"

/* ---- elementwise ---- */

__global__ void add_cols_kernel(float *dst, int ld_dst, const float *src, int ld_src, int rows,
                                int cols) {
    size_t total = (size_t)rows * cols;
    GPU_GRID_STRIDE(i, total) {
        size_t r = i / cols, c = i % cols;
        dst[r * ld_dst + c] += src[r * ld_src + c];
    }
}

void gpu_add_cols(Backend *be, float *dst, int ld_dst, const float *src, int ld_src, int rows,
                  int cols) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    GPU_LAUNCH(ctx, add_cols_kernel, gpu_blocks((size_t)rows * cols), GPU_THREADS, dst, ld_dst,
               src, ld_src, rows, cols);
}

__global__ void add_bias_kernel(float *y, const float *bias, int rows, int cols) {
    size_t total = (size_t)rows * cols;
    GPU_GRID_STRIDE(i, total) y[i] += bias[i % cols];
}

void gpu_add_bias(Backend *be, float *y, const float *bias, int rows, int cols) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    GPU_LAUNCH(ctx, add_bias_kernel, gpu_blocks((size_t)rows * cols), GPU_THREADS, y, bias, rows,
               cols);
}

/* Block (32, 8) per 32 columns: thread (x, y) sums rows y, y + 8, ... of
 * column x in order (float, as the CPU), then row y == 0 adds the 8
 * partial sums in order. Reads are coalesced across x. */
#define BIAS_COLS 32
#define BIAS_LANES 8

__global__ void bias_backward_kernel(float *dbias, const float *dy, int rows, int cols) {
    __shared__ float part[BIAS_LANES][BIAS_COLS + 1];
    int c = blockIdx.x * BIAS_COLS + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += BIAS_LANES) acc += dy[(size_t)r * cols + c];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float s = part[0][threadIdx.x];
        for (int l = 1; l < BIAS_LANES; l++) s += part[l][threadIdx.x];
        dbias[c] += s;
    }
}

void gpu_bias_backward(Backend *be, float *dbias, const float *dy, int rows, int cols) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    dim3 block(BIAS_COLS, BIAS_LANES);
    GPU_LAUNCH(ctx, bias_backward_kernel, (cols + BIAS_COLS - 1) / BIAS_COLS, block, dbias, dy,
               rows, cols);
}

__global__ void tanh_forward_kernel(float *y, const float *x, size_t n) {
    GPU_GRID_STRIDE(i, n) y[i] = tanhf(x[i]);
}

void gpu_tanh_forward(Backend *be, float *y, const float *x, size_t n) {
    GPU_ENTER(be);
    if (!n) return;
    GPU_LAUNCH(ctx, tanh_forward_kernel, gpu_blocks(n), GPU_THREADS, y, x, n);
}

__global__ void tanh_backward_kernel(float *dx, const float *dy, const float *y, size_t n) {
    GPU_GRID_STRIDE(i, n) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

void gpu_tanh_backward(Backend *be, float *dx, const float *dy, const float *y, size_t n) {
    GPU_ENTER(be);
    if (!n) return;
    GPU_LAUNCH(ctx, tanh_backward_kernel, gpu_blocks(n), GPU_THREADS, dx, dy, y, n);
}

/* cuRAND's Philox4x32-10 (device API): one thread per block of four words;
 * word j = offset + i of the stream keyed by seed gives mask[i] and
 * y[i] = x[i] * mask[i], exactly what dropout_math_mask_block computes on
 * the CPU (dropout_math.h). In place (y == x) each thread reads and writes
 * only its own four elements. */
__global__ void dropout_kernel(float *y, const float *x, size_t n, float p, GpuVar seed_var,
                               uint64_t first, uint64_t blocks, uint64_t offset) {
    uint64_t seed = gpu_var_read(seed_var).u[0];
    GPU_GRID_STRIDE(b, blocks) {
        uint64_t g = first + b;
        curandStatePhilox4_32_10_t state;
        curand_init(seed, 0, 4 * g, &state);
        float4 u4 = curand_uniform4(&state);
        float u[4] = {u4.x, u4.y, u4.z, u4.w};
        dropout_math_store_block(y, x, n, p, offset, g, u);
    }
}

void gpu_dropout(Backend *be, float *y, const float *x, size_t n, float p, uint64_t seed,
                 uint64_t offset) {
    GPU_ENTER(be);
    if (!n) return;
    uint64_t first = offset / 4, blocks = (offset + n - 1) / 4 - first + 1;
    GpuVarVals v = {};
    v.u[0] = seed; /* a new seed every step: a graph reads it from device memory */
    GPU_LAUNCH(ctx, dropout_kernel, gpu_blocks(blocks), GPU_THREADS, y, x, n, p, gpu_var(ctx, v),
               first, blocks, offset);
}

/* Word dropout: one thread per element; element i of row r = i / cols
 * is scaled by the mask element of word offset + r, which the thread
 * draws itself with the CPU's Philox (dropout_math_word_keep): the same
 * function on both backends, so their masks agree bit for bit. A row's
 * threads draw its word alike (cols Philox runs for one mask element;
 * cheap next to the embedding gather it follows). */
__global__ void dropout_rows_kernel(float *y, const float *x, size_t n, int cols, float p,
                                    GpuVar seed_var, uint64_t offset) {
    uint64_t seed = gpu_var_read(seed_var).u[0];
    GPU_GRID_STRIDE(i, n) {
        uint64_t r = i / (size_t)cols;
        y[i] = x[i] * dropout_math_word_keep(seed, offset + r, p);
    }
}

void gpu_dropout_rows(Backend *be, float *y, const float *x, int rows, int cols, float p,
                      uint64_t seed, uint64_t offset) {
    GPU_ENTER(be);
    size_t n = (size_t)rows * cols;
    if (!n) return;
    GpuVarVals v = {};
    v.u[0] = seed; /* a new seed every step: a graph reads it from device memory */
    GPU_LAUNCH(ctx, dropout_rows_kernel, gpu_blocks(n), GPU_THREADS, y, x, n, cols, p,
               gpu_var(ctx, v), offset);
}

__global__ void scale_kernel(float *x, size_t n, GpuVar s_var) {
    float s = gpu_var_read(s_var).f[0];
    GPU_GRID_STRIDE(i, n) x[i] *= s;
}

void gpu_scale(Backend *be, float *x, size_t n, float s) {
    GPU_ENTER(be);
    if (!n) return;
    GpuVarVals v = {};
    v.f[0] = s; /* e.g. the clipping factor of this step */
    GPU_LAUNCH(ctx, scale_kernel, gpu_blocks(n), GPU_THREADS, x, n, gpu_var(ctx, v));
}

/* ---- LSTM cell: one thread per (b, j), all four gates of element j ---- */

/* Thread (b, j) alone reads and writes the four gates of element j of row
 * b, so it may add their biases first. */
__global__ void lstm_forward_kernel(int B, int H, float *z, const float *bias,
                                    const float *c_prev, const float *h_prev, float *c, float *h,
                                    const float *keep) {
    size_t total = (size_t)B * H;
    GPU_GRID_STRIDE(i, total) {
        size_t b = i / H;
        int j = (int)(i % H);
        float *zb = z + b * 4 * H;
        if (bias)
            for (int g = 0; g < 4; g++) zb[g * H + j] += bias[g * H + j];
        lstm_math_forward_elem(zb, H, j, c_prev[i], h_prev[i], lstm_math_active(keep[b]), &c[i],
                               &h[i]);
    }
}

void gpu_lstm_forward(Backend *be, int B, int H, float *z, const float *bias,
                      const float *c_prev, const float *h_prev, float *c, float *h,
                      const float *keep) {
    GPU_ENTER(be);
    if (B <= 0 || H <= 0) return;
    GPU_LAUNCH(ctx, lstm_forward_kernel, gpu_blocks((size_t)B * H), GPU_THREADS, B, H, z, bias,
               c_prev, h_prev, c, h, keep);
}

/* In place: thread (b, j) alone reads and writes the four gates of element
 * j of row b. */
__global__ void lstm_backward_kernel(int B, int H, float *gz, const float *c_prev,
                                     const float *c, const float *keep, const float *dh,
                                     float *dc, float *dh_carry) {
    size_t total = (size_t)B * H;
    GPU_GRID_STRIDE(i, total) {
        size_t b = i / H;
        int j = (int)(i % H);
        lstm_math_backward_elem(gz + b * 4 * H, H, j, c_prev[i], c[i], lstm_math_active(keep[b]),
                                dh[i], &dc[i], &dh_carry[i]);
    }
}

void gpu_lstm_backward(Backend *be, int B, int H, float *gz, const float *c_prev,
                       const float *c, const float *keep, const float *dh, float *dc,
                       float *dh_carry) {
    GPU_ENTER(be);
    if (B <= 0 || H <= 0) return;
    GPU_LAUNCH(ctx, lstm_backward_kernel, gpu_blocks((size_t)B * H), GPU_THREADS, B, H, gz,
               c_prev, c, keep, dh, dc, dh_carry);
}

/* ---- embeddings ---- */

__global__ void embedding_forward_kernel(float *out, const float *table, const int32_t *ids,
                                         int N, int E) {
    size_t total = (size_t)N * E;
    GPU_GRID_STRIDE(i, total) out[i] = table[(size_t)ids[i / E] * E + i % E];
}

void gpu_embedding_forward(Backend *be, float *out, const float *table, const int32_t *ids,
                           int N, int E) {
    GPU_ENTER(be);
    if (N <= 0 || E <= 0) return;
    GPU_LAUNCH(ctx, embedding_forward_kernel, gpu_blocks((size_t)N * E), GPU_THREADS, out, table,
               ids, N, E);
}

/* embedding_backward: warps that own table rows (row r belongs to owner
 * r % EMB_OWNERS), EMB_OWNER_WARPS of them a block */
#define EMB_OWNERS 128
#define EMB_OWNER_WARPS 4

/* Grid (columns / 32, EMB_OWNERS / EMB_OWNER_WARPS), blocks of
 * EMB_OWNER_WARPS warps. A warp owns some table rows and 32 columns (a
 * lane each): it reads the ids 32 at a time, and the positions whose row it
 * owns (a ballot), in position order, it adds into the row, keeping the row
 * in a register while the next such position has the same id. So each
 * element gets its additions in position order, as in the CPU's loop (the
 * same bits, on every run), with no atomics. All lanes take part in every
 * ballot and shuffle (lanes past E only skip their memory accesses). */
__global__ void embedding_backward_kernel(float *dtable, const float *dout, const int32_t *ids,
                                          int N, int E) {
    int lane = threadIdx.x & 31, owner = blockIdx.y * EMB_OWNER_WARPS + (threadIdx.x >> 5);
    int col = blockIdx.x * 32 + lane;
    bool has_col = col < E;
    int row = -1;
    float acc = 0.0f;
    for (int base = 0; base < N; base += 32) {
        int id = base + lane < N ? ids[base + lane] : -1;
        unsigned mine = __ballot_sync(0xffffffffu, id >= 0 && id % EMB_OWNERS == owner);
        while (mine) { /* the same for the whole warp */
            int src = __ffs(mine) - 1;
            mine &= mine - 1;
            int r = __shfl_sync(0xffffffffu, id, src);
            if (r != row) {
                if (row >= 0 && has_col) dtable[(size_t)row * E + col] = acc;
                row = r;
                if (has_col) acc = dtable[(size_t)row * E + col];
            }
            if (has_col) acc += dout[(size_t)(base + src) * E + col];
        }
    }
    if (row >= 0 && has_col) dtable[(size_t)row * E + col] = acc;
}

void gpu_embedding_backward(Backend *be, float *dtable, const float *dout,
                            const int32_t *ids, int N, int E) {
    GPU_ENTER(be);
    if (N <= 0 || E <= 0) return;
    dim3 grid((E + 31) / 32, EMB_OWNERS / EMB_OWNER_WARPS);
    GPU_LAUNCH(ctx, embedding_backward_kernel, grid, 32 * EMB_OWNER_WARPS, dtable, dout, ids, N, E);
}

/* ---- local-p centre ---- */

__global__ void local_p_forward_kernel(int B, const float *u, const int32_t *src_len, float *p) {
    GPU_GRID_STRIDE(b, (size_t)B) p[b] = attn_math_local_p(u[b], src_len[b]);
}

void gpu_local_p_forward(Backend *be, int B, const float *u, const int32_t *src_len,
                         float *p) {
    GPU_ENTER(be);
    if (B <= 0) return;
    GPU_LAUNCH(ctx, local_p_forward_kernel, gpu_blocks((size_t)B), GPU_THREADS, B, u, src_len, p);
}

__global__ void local_p_backward_kernel(int B, const float *u, const int32_t *src_len,
                                        const float *dp, float *du) {
    GPU_GRID_STRIDE(b, (size_t)B) du[b] += attn_math_local_p_grad(u[b], src_len[b], dp[b]);
}

void gpu_local_p_backward(Backend *be, int B, const float *u, const int32_t *src_len,
                          const float *dp, float *du) {
    GPU_ENTER(be);
    if (B <= 0) return;
    GPU_LAUNCH(ctx, local_p_backward_kernel, gpu_blocks((size_t)B), GPU_THREADS, B, u, src_len,
               dp, du);
}

/* ---- optimizer ---- */

/* step: lr, bc1, bc2 (they change every step) */
__global__ void adam_kernel(float *w, const float *g, float *m, float *v, size_t n, GpuVar step,
                            float beta1, float beta2, float eps) {
    GpuVarVals s = gpu_var_read(step);
    float lr = s.f[0], bc1 = s.f[1], bc2 = s.f[2];
    GPU_GRID_STRIDE(i, n) optim_math_adam(&w[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, bc1, bc2);
}

void gpu_adam_update(Backend *be, float *w, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, int t) {
    GPU_ENTER(be);
    if (!n) return;
    float bc1, bc2; /* on the host, in double, as the CPU does */
    optim_math_adam_corrections(beta1, beta2, t, &bc1, &bc2);
    GpuVarVals step = {};
    step.f[0] = lr, step.f[1] = bc1, step.f[2] = bc2;
    GPU_LAUNCH(ctx, adam_kernel, gpu_blocks(n), GPU_THREADS, w, g, m, v, n, gpu_var(ctx, step),
               beta1, beta2, eps);
}

__global__ void sgd_kernel(float *w, const float *g, size_t n, GpuVar lr_var) {
    float lr = gpu_var_read(lr_var).f[0];
    GPU_GRID_STRIDE(i, n) optim_math_sgd(&w[i], g[i], lr);
}

void gpu_sgd_update(Backend *be, float *w, const float *g, size_t n, float lr) {
    GPU_ENTER(be);
    if (!n) return;
    GpuVarVals v = {};
    v.f[0] = lr;
    GPU_LAUNCH(ctx, sgd_kernel, gpu_blocks(n), GPU_THREADS, w, g, n, gpu_var(ctx, v));
}

/* keep_var: 1 - decay (it changes every step early in a run) */
__global__ void ema_kernel(float *avg, const float *w, size_t n, GpuVar keep_var) {
    float keep = gpu_var_read(keep_var).f[0];
    GPU_GRID_STRIDE(i, n) optim_math_ema(&avg[i], w[i], keep);
}

void gpu_ema_update(Backend *be, float *avg, const float *w, size_t n, float decay) {
    GPU_ENTER(be);
    if (!n) return;
    GpuVarVals v = {};
    v.f[0] = 1.0f - decay; /* on the host, as the CPU computes it */
    GPU_LAUNCH(ctx, ema_kernel, gpu_blocks(n), GPU_THREADS, avg, w, n, gpu_var(ctx, v));
}
