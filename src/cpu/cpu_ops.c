/* cpu_ops.c: every CPU Backend slot other than memory and gemm: elementwise
 * ops and dropout, the LSTM cell, embeddings, attention, the loss, the
 * optimizer updates and top-k (contracts in backend.h). The per-element
 * arithmetic comes from src/kernels/ (shared with the CUDA backend); this
 * file owns only the loops, the OpenMP split and the reductions.
 *
 * Every result is independent of the thread count: reductions either run
 * in a fixed order on one thread (per row, per column block) or over fixed
 * chunks summed in order (sum_squares). */
#include "cpu/cpu_internal.h"

#include <math.h>
#include <string.h>

#include "kernels/align_math.h"
#include "kernels/attention_math.h"
#include "kernels/dropout_math.h"
#include "kernels/layer_norm_math.h"
#include "kernels/loss_math.h"
#include "kernels/lstm_math.h"
#include "kernels/optim_math.h"

/* columns per block in column-blocked reductions (bias, embedding, additive
 * score backward): each block is owned by one thread, so no races */
#define CPU_COL_BLOCK 64

static inline int cpu_min_int(int a, int b) { return a < b ? a : b; }

/* the length of the chunk of `chunk` elements at `at` in n elements */
static inline size_t cpu_chunk_len(size_t n, size_t at, size_t chunk) {
    return n - at < chunk ? n - at : chunk;
}

/* Hot elementwise loops: kept out of the OpenMP bodies (see lstm_forward_row),
 * and compiled three times, for AVX-512, AVX2 and the x86-64 baseline
 * (SSE2), the version for this CPU chosen when the program loads (gcc's
 * target_clones): the binary stays portable and wide vectors are used where
 * the CPU has them. The arithmetic per element is the same in every
 * version: -ffp-contract=off (Makefile) keeps AVX-512's fused multiply-add
 * out, and the reductions have a fixed number of lanes (loss_math.h). */
#if defined(__x86_64__) && !defined(NMT_NO_CLONES) && defined(__clang__)
/* clang never inlines a multiversioned function and refuses noinline on one */
#define NMT_CPU_ROW __attribute__((target_clones("avx512f", "avx2", "default")))
#elif defined(__x86_64__) && !defined(NMT_NO_CLONES)
#define NMT_CPU_ROW __attribute__((noinline, target_clones("avx512f", "avx2", "default")))
#else
#define NMT_CPU_ROW __attribute__((noinline))
#endif

/* ---- elementwise ---- */

void cpu_add_bias(Backend *be, float *y, const float *bias, int rows, int cols) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)rows * cols > CPU_PAR_MIN)
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * cols;
        for (int c = 0; c < cols; c++) yr[c] += bias[c];
    }
}

void cpu_bias_backward(Backend *be, float *dbias, const float *dy, int rows, int cols) {
    (void)be;
    int nblk = (cols + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if ((long)rows * cols > CPU_PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CPU_COL_BLOCK, c1 = cpu_min_int(cols, c0 + CPU_COL_BLOCK);
        float acc[CPU_COL_BLOCK] = {0};
        for (int r = 0; r < rows; r++) {
            const float *row = dy + (size_t)r * cols;
            for (int c = c0; c < c1; c++) acc[c - c0] += row[c];
        }
        for (int c = c0; c < c1; c++) dbias[c] += acc[c - c0];
    }
}

/* y may equal x: no restrict */
NMT_CPU_ROW static void tanh_chunk(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = kernel_tanhf(x[i]);
}

#define CPU_TANH_CHUNK 4096

void cpu_tanh_forward(Backend *be, float *y, const float *x, size_t n) {
    (void)be;
    size_t chunks = (n + CPU_TANH_CHUNK - 1) / CPU_TANH_CHUNK;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN / 4)
    for (size_t c = 0; c < chunks; c++) {
        size_t at = c * CPU_TANH_CHUNK;
        tanh_chunk(y + at, x + at, cpu_chunk_len(n, at, CPU_TANH_CHUNK));
    }
}

void cpu_tanh_backward(Backend *be, float *dx, const float *dy, const float *y, size_t n) {
    (void)be;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

/* The mask of Philox blocks g0 .. g0 + count - 1 (words 4 g0 ..), whole
 * blocks only, into out */
NMT_CPU_ROW static void dropout_full_blocks(float *restrict out, uint64_t g0, uint64_t count, float p,
                                            uint64_t seed) {
    for (uint64_t b = 0; b < count; b++) {
        uint32_t w[4];
        dropout_math_block(seed, g0 + b, w);
        for (int k = 0; k < 4; k++) out[4 * b + k] = dropout_math_keep(dropout_math_uniform(w[k]), p);
    }
}

/* y *= mask and y = x * mask, n elements; separate so that each has
 * restrict pointers (the in-place call would defeat gcc's overlap check) */
NMT_CPU_ROW static void dropout_scale_in_place(float *restrict y, const float *restrict mask, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] *= mask[i];
}
NMT_CPU_ROW static void dropout_scale(float *restrict y, const float *restrict x, const float *restrict mask,
                                      size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] * mask[i];
}

/* y *= s and y = x * s for one row of n (restrict: see dropout_scale) */
NMT_CPU_ROW static void cpu_scale_row(float *restrict y, float s, int n) {
    for (int i = 0; i < n; i++) y[i] *= s;
}
NMT_CPU_ROW static void cpu_scale_row_to(float *restrict y, const float *restrict x, float s, int n) {
    for (int i = 0; i < n; i++) y[i] = x[i] * s;
}

#define CPU_DROPOUT_CHUNK 1024 /* Philox blocks per task: a 16 KB mask on the stack */

void cpu_dropout(Backend *be, float *y, const float *x, size_t n, float p, uint64_t seed,
                 uint64_t offset) {
    (void)be;
    if (!n) return;
    /* Philox blocks first .. last hold the words offset .. offset + n - 1;
     * the partial blocks at either end word by word, the others whole, a
     * chunk's mask at a time */
    uint64_t first = offset / 4, last = (offset + n - 1) / 4;
    uint64_t full0 = (offset + 3) / 4, full_end = (offset + n) / 4; /* [full0, full_end) */
    if (full0 >= full_end) {
        for (uint64_t g = first; g <= last; g++) dropout_math_mask_block(y, x, n, p, seed, offset, g);
        return;
    }
    if (first < full0) dropout_math_mask_block(y, x, n, p, seed, offset, first);
    if (last >= full_end) dropout_math_mask_block(y, x, n, p, seed, offset, last);
    uint64_t count = full_end - full0, chunks = (count + CPU_DROPOUT_CHUNK - 1) / CPU_DROPOUT_CHUNK;
    size_t skip = (size_t)(4 * full0 - offset); /* elements before the first whole block */
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (uint64_t c = 0; c < chunks; c++) {
        float mask[4 * CPU_DROPOUT_CHUNK];
        uint64_t at = c * CPU_DROPOUT_CHUNK, len = cpu_chunk_len(count, at, CPU_DROPOUT_CHUNK);
        dropout_full_blocks(mask, full0 + at, len, p, seed);
        size_t o = skip + 4 * at;
        if (y == x) dropout_scale_in_place(y + o, mask, 4 * len);
        else dropout_scale(y + o, x + o, mask, 4 * len);
    }
}

void cpu_dropout_rows(Backend *be, float *y, const float *x, int rows, int cols, float p,
                      uint64_t seed, uint64_t offset) {
    (void)be;
#pragma omp parallel for schedule(static) if ((size_t)rows * cols > CPU_PAR_MIN)
    for (int r = 0; r < rows; r++) {
        float keep = dropout_math_word_keep(seed, offset + (uint64_t)r, p);
        size_t o = (size_t)r * cols;
        if (y == x) cpu_scale_row(y + o, keep, cols);
        else cpu_scale_row_to(y + o, x + o, keep, cols);
    }
}

void cpu_scale(Backend *be, float *x, size_t n, float s) {
    (void)be;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* ---- LSTM cell ---- */

/* One row of the cell: separate loops for active and carried rows, restrict
 * pointers (the state slots t and t + 1 never overlap), so that gcc
 * vectorises each; not inlined into the OpenMP body, where gcc drops the
 * restrict and gives up. */
NMT_CPU_ROW static void lstm_forward_row(int H, float *restrict z, const float *restrict bias,
                             const float *restrict c_prev, const float *restrict h_prev,
                             float *restrict c, float *restrict h, int active) {
    if (bias)
        for (int k = 0; k < 4 * H; k++) z[k] += bias[k];
    if (active)
        for (int j = 0; j < H; j++) lstm_math_forward_elem(z, H, j, c_prev[j], h_prev[j], 1, &c[j], &h[j]);
    else
        for (int j = 0; j < H; j++) lstm_math_forward_elem(z, H, j, c_prev[j], h_prev[j], 0, &c[j], &h[j]);
}

NMT_CPU_ROW static void lstm_backward_row(int H, float *restrict gz, const float *restrict c_prev,
                              const float *restrict c, const float *restrict dh, float *restrict dc,
                              float *restrict dh_carry, int active) {
    if (active)
        for (int j = 0; j < H; j++)
            lstm_math_backward_elem(gz, H, j, c_prev[j], c[j], 1, dh[j], &dc[j], &dh_carry[j]);
    else
        for (int j = 0; j < H; j++)
            lstm_math_backward_elem(gz, H, j, c_prev[j], c[j], 0, dh[j], &dc[j], &dh_carry[j]);
}

void cpu_lstm_forward(Backend *be, int B, int H, float *z, const float *bias, const float *c_prev,
                      const float *h_prev, float *c, float *h, const float *keep) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)B * H > CPU_PAR_MIN / 8)
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * H;
        lstm_forward_row(H, z + (size_t)b * 4 * H, bias, c_prev + o, h_prev + o, c + o, h + o,
                         lstm_math_active(keep[b]));
    }
}

void cpu_lstm_backward(Backend *be, int B, int H, float *gz, const float *c_prev,
                       const float *c, const float *keep, const float *dh, float *dc,
                       float *dh_carry) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)B * H > CPU_PAR_MIN / 8)
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * H;
        lstm_backward_row(H, gz + (size_t)b * 4 * H, c_prev + o, c + o, dh + o, dc + o, dh_carry + o,
                          lstm_math_active(keep[b]));
    }
}

/* ---- layer normalisation ---- */

/* One row: its sums in a fixed order (the result does not depend on the
 * thread count). */
NMT_CPU_ROW static void layer_norm_forward_row(int n, const float *restrict x, const float *restrict gain,
                                               int accumulate, float *restrict y, float *restrict stats) {
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += x[j];
    float mean = sum / (float)n, sq = 0.0f;
    for (int j = 0; j < n; j++) sq += (x[j] - mean) * (x[j] - mean);
    float rstd = layer_norm_math_rstd(sq, n);
    if (accumulate)
        for (int j = 0; j < n; j++) y[j] += gain[j] * layer_norm_math_xhat(x[j], mean, rstd);
    else
        for (int j = 0; j < n; j++) y[j] = gain[j] * layer_norm_math_xhat(x[j], mean, rstd);
    if (stats) {
        stats[0] = mean;
        stats[1] = rstd;
    }
}

void cpu_layer_norm_forward(Backend *be, int rows, int cols, const float *x, const float *gain,
                            bool accumulate, float *y, float *stats) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)rows * cols > CPU_PAR_MIN / 4)
    for (int r = 0; r < rows; r++)
        layer_norm_forward_row(cols, x + (size_t)r * cols, gain, accumulate, y + (size_t)r * cols,
                               stats ? stats + 2 * (size_t)r : NULL);
}

/* dx of one row; x and dx may be the same row (each element is read
 * before it is written), so no restrict on them */
NMT_CPU_ROW static void layer_norm_backward_row(int n, const float *x, const float *restrict gain,
                                                const float *restrict dy, float mean, float rstd,
                                                float *dx) {
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int j = 0; j < n; j++) {
        float g = dy[j] * gain[j];
        sum_g += g;
        sum_gx += g * layer_norm_math_xhat(x[j], mean, rstd);
    }
    float mean_g = sum_g / (float)n, mean_gx = sum_gx / (float)n;
    for (int j = 0; j < n; j++)
        dx[j] = layer_norm_math_dx(dy[j] * gain[j], layer_norm_math_xhat(x[j], mean, rstd), rstd, mean_g,
                                   mean_gx);
}

void cpu_layer_norm_backward(Backend *be, int rows, int cols, const float *x, const float *stats,
                             const float *gain, const float *dy, float *dx, float *dgain) {
    (void)be;
    /* dgain first, by blocks of columns (as bias_backward): it reads x, which dx may overwrite */
    int nblk = (cols + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if ((long)rows * cols > CPU_PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CPU_COL_BLOCK, c1 = cpu_min_int(cols, c0 + CPU_COL_BLOCK);
        float acc[CPU_COL_BLOCK] = {0};
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * cols, *dyr = dy + (size_t)r * cols;
            float mean = stats[2 * (size_t)r], rstd = stats[2 * (size_t)r + 1];
            for (int c = c0; c < c1; c++) acc[c - c0] += dyr[c] * layer_norm_math_xhat(xr[c], mean, rstd);
        }
        for (int c = c0; c < c1; c++) dgain[c] += acc[c - c0];
    }
#pragma omp parallel for schedule(static) if ((long)rows * cols > CPU_PAR_MIN / 4)
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * cols;
        layer_norm_backward_row(cols, x + o, gain, dy + o, stats[2 * (size_t)r], stats[2 * (size_t)r + 1],
                                dx + o);
    }
}

/* ---- embeddings ---- */

void cpu_embedding_forward(Backend *be, float *out, const float *table, const int32_t *ids,
                           int N, int E) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)N * E > CPU_PAR_MIN)
    for (int i = 0; i < N; i++)
        memcpy(out + (size_t)i * E, table + (size_t)ids[i] * E, (size_t)E * sizeof(float));
}

/* Repeated ids hit the same table row: the threads split the E columns, each
 * walks all N rows in order, so there are no races and the sums do not
 * depend on the thread count. */
void cpu_embedding_backward(Backend *be, float *dtable, const float *dout,
                            const int32_t *ids, int N, int E) {
    (void)be;
    int nblk = (E + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if ((long)N * E > CPU_PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int e0 = blk * CPU_COL_BLOCK, e1 = cpu_min_int(E, e0 + CPU_COL_BLOCK);
        for (int i = 0; i < N; i++) {
            float *dst = dtable + (size_t)ids[i] * E;
            const float *src = dout + (size_t)i * E;
            for (int e = e0; e < e1; e++) dst[e] += src[e];
        }
    }
}

/* ---- attention ---- */

void cpu_additive_score_forward(Backend *be, int B, int S, int A, const float *kproj,
                                const float *qproj, const float *v, float *scores) {
    (void)be;
    int rows = S * B;
#pragma omp parallel for schedule(static) if ((long)rows * A > CPU_PAR_MIN / 4)
    for (int r = 0; r < rows; r++) { /* r = s * B + b (time-major kproj) */
        int s = r / B, b = r % B;
        const float *k = kproj + (size_t)r * A, *q = qproj + (size_t)b * A;
        float acc = 0.0f;
        for (int a = 0; a < A; a++) acc += attn_math_additive_term(v[a], k[a], q[a]);
        scores[(size_t)b * S + s] = acc;
    }
}

/* Split over blocks of the A dimension: a block's dkproj, dqproj and dv
 * entries belong to one thread. Positions with a zero score gradient (the
 * masked ones) contribute exactly nothing and are skipped. */
void cpu_additive_score_backward(Backend *be, int B, int S, int A, const float *kproj,
                                 const float *qproj, const float *v, const float *dscores,
                                 float *dkproj, float *dqproj, float *dv) {
    (void)be;
    int nblk = (A + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if ((long)B * S * A > CPU_PAR_MIN / 4)
    for (int blk = 0; blk < nblk; blk++) {
        int a0 = blk * CPU_COL_BLOCK, a1 = cpu_min_int(A, a0 + CPU_COL_BLOCK);
        /* dv: each row b's terms summed over s, then the rows' sums in b
         * order (the CUDA kernel's order too) */
        float dv_acc[CPU_COL_BLOCK] = {0};
        for (int b = 0; b < B; b++) {
            const float *q = qproj + (size_t)b * A;
            float dq_acc[CPU_COL_BLOCK] = {0}, dv_b[CPU_COL_BLOCK] = {0};
            for (int s = 0; s < S; s++) {
                float ds = dscores[(size_t)b * S + s];
                if (ds == 0.0f) continue;
                size_t r = ((size_t)s * B + b) * A;
                const float *k = kproj + r;
                float *dk = dkproj + r;
                for (int a = a0; a < a1; a++) {
                    float dvt, dpre;
                    attn_math_additive_backward(ds, v[a], k[a], q[a], &dvt, &dpre);
                    dv_b[a - a0] += dvt;
                    dq_acc[a - a0] += dpre;
                    dk[a] += dpre;
                }
            }
            for (int a = a0; a < a1; a++) {
                dqproj[(size_t)b * A + a] += dq_acc[a - a0];
                dv_acc[a - a0] += dv_b[a - a0];
            }
        }
        for (int a = a0; a < a1; a++) dv[a] += dv_acc[a - a0];
    }
}

void cpu_attn_softmax_forward(Backend *be, int B, int S, const float *scores,
                              const int32_t *src_len, const float *center, int window,
                              bool gaussian, float sigma, float *probs, float *weights) {
    (void)be;
    int gauss = gaussian && center != NULL;
#pragma omp parallel for schedule(static) if ((long)B * S > CPU_PAR_MIN / 4)
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * S;
        float cb = center ? center[b] : 0.0f;
        attn_math_softmax_row_forward(scores + o, S, src_len[b], cb, center ? window : 0,
                                      gauss, sigma, probs + o, weights + o);
    }
}

void cpu_attn_softmax_backward(Backend *be, int B, int S, const float *probs,
                               const float *weights, const int32_t *src_len,
                               const float *center, int window, bool gaussian, float sigma,
                               const float *dweights, float *dscores, float *dcenter) {
    (void)be;
    (void)weights; /* the Gaussian is recomputed from the centre */
    int gauss = gaussian && center != NULL;
#pragma omp parallel for schedule(static) if ((long)B * S > CPU_PAR_MIN / 4)
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * S;
        float cb = center ? center[b] : 0.0f;
        float dc = attn_math_softmax_row_backward(probs + o, S, src_len[b], cb,
                                                  center ? window : 0, gauss, sigma,
                                                  dweights + o, dscores + o);
        if (dcenter) dcenter[b] = dc;
    }
}

void cpu_local_p_forward(Backend *be, int B, const float *u, const int32_t *src_len,
                         float *p) {
    (void)be;
    for (int b = 0; b < B; b++) p[b] = attn_math_local_p(u[b], src_len[b]);
}

void cpu_local_p_backward(Backend *be, int B, const float *u, const int32_t *src_len,
                          const float *dp, float *du) {
    (void)be;
    for (int b = 0; b < B; b++) du[b] += attn_math_local_p_grad(u[b], src_len[b], dp[b]);
}

void cpu_guided_align(Backend *be, int T, int B, int S, int n, const float *att, size_t step_stride,
                      int cost, float weight, float scale, float *align, float *loss_rows) {
    (void)be;
    size_t head_stride = (size_t)B * S;
    float wk = weight * scale;
#pragma omp parallel for schedule(static) if ((long)T * B * S * n > CPU_PAR_MIN / 4)
    for (int r = 0; r < T * B; r++) {
        int t = r / B, b = r % B;
        const float *a_row = att + (size_t)t * step_stride + (size_t)b * S;
        float *q = align + (size_t)r * S;
        int any = 0;
        for (int s = 0; s < S; s++) any |= q[s] != 0.0f;
        double loss = 0.0;
        for (int s = 0; s < S; s++) {
            float a = align_math_mean(a_row, head_stride, n, s);
            loss += any ? (double)align_math_loss_elem(cost, a, q[s]) : 0.0;
            q[s] = any ? align_math_grad_elem(cost, a, q[s], n, wk) : 0.0f;
        }
        loss_rows[r] = (float)((double)weight * loss);
    }
}

/* ---- loss ---- */

/* one row of each, as NMT_CPU_ROW versions (loss_math.h) */
NMT_CPU_ROW static void xent_row(const float *x, int V, int target, int pad_id, float eps,
                                 float scale, float *loss, float *nll, float *dx) {
    loss_math_xent_row(x, V, target, pad_id, eps, scale, loss, nll, dx);
}
NMT_CPU_ROW static void log_softmax_row(const float *x, int V, float *out) {
    loss_math_log_softmax_row(x, V, out);
}

void cpu_softmax_xent(Backend *be, int N, int V, const float *logits, const int32_t *targets,
                      int pad_id, float eps, float scale, float *loss_rows, float *nll_rows,
                      float *dlogits) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)N * V > CPU_PAR_MIN / 4)
    for (int r = 0; r < N; r++) {
        size_t o = (size_t)r * V;
        xent_row(logits + o, V, targets[r], pad_id, eps, scale, &loss_rows[r], &nll_rows[r],
                 dlogits ? dlogits + o : NULL);
    }
}

void cpu_log_softmax(Backend *be, int N, int V, const float *logits, float *out) {
    (void)be;
#pragma omp parallel for schedule(static) if ((long)N * V > CPU_PAR_MIN / 4)
    for (int r = 0; r < N; r++) {
        size_t o = (size_t)r * V;
        log_softmax_row(logits + o, V, out + o);
    }
}

/* ---- optimizer ---- */

/* Fixed chunks summed in order, each over a fixed number of lanes: the
 * same bits whatever the thread count or the vector width. */
#define CPU_SUMSQ_CHUNKS 64
#define CPU_SUMSQ_LANES 8

NMT_CPU_ROW static double sumsq_chunk(const float *restrict x, size_t n) {
    double lane[CPU_SUMSQ_LANES] = {0};
    size_t full = n - n % CPU_SUMSQ_LANES;
    for (size_t i = 0; i < full; i += CPU_SUMSQ_LANES)
        for (int k = 0; k < CPU_SUMSQ_LANES; k++) lane[k] += (double)x[i + k] * (double)x[i + k];
    for (size_t i = full; i < n; i++) lane[i - full] += (double)x[i] * (double)x[i];
    double acc = 0.0;
    for (int k = 0; k < CPU_SUMSQ_LANES; k++) acc += lane[k];
    return acc;
}

double cpu_sum_squares(Backend *be, const float *x, size_t n) {
    (void)be;
    double part[CPU_SUMSQ_CHUNKS];
    size_t chunk = (n + CPU_SUMSQ_CHUNKS - 1) / CPU_SUMSQ_CHUNKS;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (int c = 0; c < CPU_SUMSQ_CHUNKS; c++) {
        size_t i0 = (size_t)c * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
        part[c] = i0 < i1 ? sumsq_chunk(x + i0, i1 - i0) : 0.0;
    }
    double total = 0.0;
    for (int c = 0; c < CPU_SUMSQ_CHUNKS; c++) total += part[c];
    return total;
}

/* Adam over one chunk: restrict pointers and scalar arguments (not the
 * OpenMP body's shared variables) let gcc vectorise it, sqrtf included
 * (-fno-math-errno) */
NMT_CPU_ROW static void adam_chunk(float *restrict w, const float *restrict g, float *restrict m,
                                   float *restrict v, size_t n, float lr, float beta1, float beta2,
                                   float eps, float bc1, float bc2) {
    for (size_t i = 0; i < n; i++)
        optim_math_adam(&w[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, bc1, bc2);
}

#define CPU_ADAM_CHUNK 8192

void cpu_adam_update(Backend *be, float *w, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, int t) {
    (void)be;
    float bc1, bc2;
    optim_math_adam_corrections(beta1, beta2, t, &bc1, &bc2);
    size_t chunks = (n + CPU_ADAM_CHUNK - 1) / CPU_ADAM_CHUNK;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t c = 0; c < chunks; c++) {
        size_t at = c * CPU_ADAM_CHUNK;
        adam_chunk(w + at, g + at, m + at, v + at, cpu_chunk_len(n, at, CPU_ADAM_CHUNK), lr, beta1,
                   beta2, eps, bc1, bc2);
    }
}

void cpu_sgd_update(Backend *be, float *w, const float *g, size_t n, float lr) {
    (void)be;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) optim_math_sgd(&w[i], g[i], lr);
}

void cpu_ema_update(Backend *be, float *avg, const float *w, size_t n, float decay) {
    (void)be;
    float keep = 1.0f - decay;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) optim_math_ema(&avg[i], w[i], keep);
}

/* ---- decoding ---- */

/* Insertion into a sorted list of k: a later column enters only when
 * strictly larger than a kept one, so ties keep the lower index first.
 * With k > cols the missing entries are -inf with index -1. */
/* a ranks above b: NaN ranks below every number (as on the GPU) */
static inline int topk_greater(float a, float b) { return a > b || (b != b && a == a); }

/* The row's values are scored in blocks of TOPK_BLOCK columns; once k are
 * kept, a block none of whose values beats the k-th is passed over with one
 * vector comparison (most of a vocabulary row). */
#define TOPK_BLOCK 16

/* One row of cpu_topk: val, idx (k), k >= 1. Inlined into topk_row once
 * per case, so that each case's loops are free of the tests on bias and
 * logprobs and vectorise. */
static inline __attribute__((always_inline)) void topk_row_case(const float *x, const float *bias,
                                                               int cols, bool logprobs, int k,
                                                               float *val, int32_t *idx) {
    float m = 0.0f, ls = 0.0f;
    if (logprobs && cols > 0) loss_math_row_stats(x, bias, cols, &m, &ls, NULL);
    int filled = 0;
    for (int j = 0; j < k; j++) {
        val[j] = -INFINITY;
        idx[j] = -1;
    }
    for (int c0 = 0; c0 < cols; c0 += TOPK_BLOCK) {
        int n = cols - c0 < TOPK_BLOCK ? cols - c0 : TOPK_BLOCK;
        float v[TOPK_BLOCK];
        for (int i = 0; i < n; i++) {
            float s = loss_math_score(x, bias, c0 + i);
            v[i] = logprobs ? loss_math_log_softmax(s, m, ls) : s;
        }
        float kth = val[k - 1];
        if (filled == k && kth == kth) { /* a NaN k-th is beaten by any number */
            int beats = 0;
            for (int i = 0; i < n; i++) beats |= v[i] > kth;
            if (!beats) continue;
        }
        for (int i = 0; i < n; i++) {
            float xv = v[i];
            if (filled == k && !topk_greater(xv, val[k - 1])) continue;
            int pos = filled < k ? filled : k - 1; /* slot to fill or to evict */
            while (pos > 0 && topk_greater(xv, val[pos - 1])) {
                val[pos] = val[pos - 1];
                idx[pos] = idx[pos - 1];
                pos--;
            }
            val[pos] = xv;
            idx[pos] = c0 + i;
            if (filled < k) filled++;
        }
    }
}

NMT_CPU_ROW static void topk_row(const float *x, const float *bias, int cols, bool logprobs, int k,
                                 float *val, int32_t *idx) {
    if (bias && logprobs) topk_row_case(x, bias, cols, true, k, val, idx);
    else if (bias) topk_row_case(x, bias, cols, false, k, val, idx);
    else if (logprobs) topk_row_case(x, NULL, cols, true, k, val, idx);
    else topk_row_case(x, NULL, cols, false, k, val, idx);
}

void cpu_topk(Backend *be, const float *x, const float *bias, int rows, int cols, bool logprobs,
              int k, float *values, int32_t *indices) {
    (void)be;
    if (k <= 0) return;
    long par_min = logprobs ? CPU_PAR_MIN / 4 : CPU_PAR_MIN; /* exponentials: as log_softmax */
#pragma omp parallel for schedule(static) if ((long)rows * cols > par_min)
    for (int r = 0; r < rows; r++)
        topk_row(x + (size_t)r * cols, bias, cols, logprobs, k, values + (size_t)r * k,
                 indices + (size_t)r * k);
}
