/* gpu_rows.cu: the CUDA backend's kernels with reductions (mirrors the
 * second half of cpu_ops.c): the additive attention score and its
 * backward, the masked attention softmax (windows, local-p Gaussian and
 * the centre's gradient) forward and backward, guided alignment, the
 * label-smoothed softmax cross-entropy, log-softmax, the sum of squares and
 * top-k (of the scores x + bias or their log-softmax, in one kernel).
 *
 * The per-element arithmetic is the shared math of src/kernels/
 * (attention_math.h, align_math.h, loss_math.h); this file owns the launch
 * shapes and the reductions, which keep the CPU's precision: the loss rows'
 * sums of exponentials and gaps, the guided-alignment row losses and the
 * sum of squares are accumulated in double, the attention rows in float.
 * Shapes:
 * - additive_score_forward: one warp per (s, b) score;
 * - additive_score_backward: one thread per (b, a) walking s in order
 *   (dkproj and dqproj without races); dv adds the b's terms in b order
 *   (the CPU's order: the same bits on every run);
 * - softmax rows, guided-alignment rows, loss rows, top-k: one block per row;
 * - sum_squares: GPU_SUMSQ_BLOCKS fixed blocks, then one block adds their
 *   partial sums in a fixed order (the same bits on every run). */
#include "gpu/gpu_internal.cuh"

#include "kernels/align_math.h"
#include "kernels/attention_math.h"
#include "kernels/loss_math.h"

/* threads of an attention-softmax row block (rows are source-length short) */
#define ATTN_THREADS 128
/* b lanes of an additive-backward block (32 columns a each) */
#define ADD_BWD_BLANES 32

struct GpuMaxOp {
    __device__ float operator()(float a, float b) const { return kernel_maxf(a, b); }
};

/* ---- additive score ---- */

/* scores[b, s] = sum_a v_a tanh(kproj[s, b, a] + qproj[b, a]); warp w of
 * the block computes row r = s * B + b (time-major kproj). */
__global__ void additive_score_forward_kernel(int B, int S, int A, const float *kproj,
                                              const float *qproj, const float *v,
                                              float *scores) {
    int lane = threadIdx.x & 31;
    size_t r = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= (size_t)S * B) return; /* a whole warp leaves together */
    int s = (int)(r / B), b = (int)(r % B);
    const float *k = kproj + r * A, *q = qproj + (size_t)b * A;
    float acc = 0.0f;
    for (int a = lane; a < A; a += 32) acc += attn_math_additive_term(v[a], k[a], q[a]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) scores[(size_t)b * S + s] = acc;
}

void gpu_additive_score_forward(Backend *be, int B, int S, int A, const float *kproj,
                                const float *qproj, const float *v, float *scores) {
    GPU_ENTER(be);
    if (B <= 0 || S <= 0) return;
    if (A <= 0) { /* an empty sum */
        gpu_op_memset(ctx, scores, (size_t)B * S * sizeof(float));
        return;
    }
    size_t rows = (size_t)S * B, per_block = GPU_THREADS / 32;
    GPU_LAUNCH(ctx, additive_score_forward_kernel, (unsigned)((rows + per_block - 1) / per_block),
               GPU_THREADS, B, S, A, kproj, qproj, v, scores);
}

/* Grid (A / 32), blocks of 32 x ADD_BWD_BLANES: thread (x, y) has column
 * a = 32 blockIdx.x + x and the rows b = y, y + ADD_BWD_BLANES, ...; for
 * each b it walks s in order, skipping zero score gradients (masked
 * positions) as the CPU does, adds into dkproj and dqproj (nobody else
 * writes those elements) and sums the b's dv term over s. After each round
 * of ADD_BWD_BLANES rows, lane y = 0 adds the round's terms in b order: dv
 * gets the CPU's sum in the CPU's order (cpu_additive_score_backward), the
 * same bits on every run, with no atomics. */
__global__ void additive_score_backward_kernel(int B, int S, int A, const float *kproj,
                                               const float *qproj, const float *v,
                                               const float *dscores, float *dkproj,
                                               float *dqproj, float *dv) {
    __shared__ float terms[ADD_BWD_BLANES][33];
    int x = threadIdx.x, y = threadIdx.y, a = blockIdx.x * 32 + x;
    bool has_a = a < A;
    float va = has_a ? v[a] : 0.0f, dv_acc = 0.0f;
    for (int b0 = 0; b0 < B; b0 += ADD_BWD_BLANES) { /* the same rounds for every thread */
        int b = b0 + y;
        float dva = 0.0f;
        if (has_a && b < B) {
            float q = qproj[(size_t)b * A + a], dq = 0.0f;
            for (int s = 0; s < S; s++) {
                float ds = dscores[(size_t)b * S + s];
                if (ds == 0.0f) continue;
                size_t r = ((size_t)s * B + b) * A + a;
                float dvt, dpre;
                attn_math_additive_backward(ds, va, kproj[r], q, &dvt, &dpre);
                dva += dvt;
                dq += dpre;
                dkproj[r] += dpre;
            }
            dqproj[(size_t)b * A + a] += dq;
        }
        terms[y][x] = dva;
        __syncthreads();
        if (y == 0)
            for (int j = 0; j < ADD_BWD_BLANES && b0 + j < B; j++) dv_acc += terms[j][x];
        __syncthreads();
    }
    if (y == 0 && has_a) dv[a] += dv_acc;
}

void gpu_additive_score_backward(Backend *be, int B, int S, int A, const float *kproj,
                                 const float *qproj, const float *v, const float *dscores,
                                 float *dkproj, float *dqproj, float *dv) {
    GPU_ENTER(be);
    if (B <= 0 || S <= 0 || A <= 0) return;
    GPU_LAUNCH(ctx, additive_score_backward_kernel, (A + 31) / 32, dim3(32, ADD_BWD_BLANES), B, S,
               A, kproj, qproj, v, dscores, dkproj, dqproj, dv);
}

/* ---- masked attention softmax: one block per row b ---- */

/* window 0 and gauss 0 when the host passed no centre (as the CPU) */
__global__ void attn_softmax_forward_kernel(int S, const float *scores, const int32_t *src_len,
                                            const float *center, int window, int gaussian,
                                            float sigma, float *probs, float *weights) {
    __shared__ float sh[32];
    int b = blockIdx.x;
    size_t o = (size_t)b * S;
    int len = src_len[b];
    float cb = center ? center[b] : 0.0f;
    int win = center ? window : 0, gauss = gaussian && center;
    float m = -INFINITY;
    int any = 0;
    for (int s = threadIdx.x; s < S; s += blockDim.x)
        if (attn_math_allowed(s, len, cb, win)) {
            m = any ? kernel_maxf(m, scores[o + s]) : scores[o + s];
            any = 1;
        }
    any = __syncthreads_or(any);
    m = gpu_block_allreduce(m, GpuMaxOp(), sh);
    float sum = 0.0f;
    if (any)
        for (int s = threadIdx.x; s < S; s += blockDim.x)
            if (attn_math_allowed(s, len, cb, win)) sum += expf(scores[o + s] - m);
    sum = gpu_block_allreduce(sum, GpuSumOp(), sh);
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f; /* sum >= 1 whenever any */
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        float p = any && attn_math_allowed(s, len, cb, win)
                      ? attn_math_softmax_elem(scores[o + s], m, inv)
                      : 0.0f;
        probs[o + s] = p;
        weights[o + s] = gauss ? p * attn_math_gaussian(s, cb, sigma) : p;
    }
}

void gpu_attn_softmax_forward(Backend *be, int B, int S, const float *scores,
                              const int32_t *src_len, const float *center, int window,
                              bool gaussian, float sigma, float *probs, float *weights) {
    GPU_ENTER(be);
    if (B <= 0 || S <= 0) return;
    GPU_LAUNCH(ctx, attn_softmax_forward_kernel, B, ATTN_THREADS, S, scores, src_len, center,
               window, (int)gaussian, sigma, probs, weights);
}

/* dp_s = dw_s g(s) (or dw_s); dx_s = p_s (dp_s - sum p dp); dcenter = sum
 * dw_s p_s dg/dcenter (attn_math_softmax_row_backward, with block sums) */
__global__ void attn_softmax_backward_kernel(int S, const float *probs, const int32_t *src_len,
                                             const float *center, int window, int gaussian,
                                             float sigma, const float *dweights, float *dscores,
                                             float *dcenter) {
    __shared__ float sh[32];
    int b = blockIdx.x;
    size_t o = (size_t)b * S;
    int len = src_len[b];
    float cb = center ? center[b] : 0.0f;
    int win = center ? window : 0, gauss = gaussian && center;
    float dot = 0.0f, dc = 0.0f;
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        if (!attn_math_allowed(s, len, cb, win)) continue;
        float dw = dweights[o + s], p = probs[o + s], dp = dw;
        if (gauss) {
            dp *= attn_math_gaussian(s, cb, sigma);
            dc += dw * p * attn_math_gaussian_dcenter(s, cb, sigma);
        }
        dot += p * dp;
    }
    dot = gpu_block_allreduce(dot, GpuSumOp(), sh);
    dc = gpu_block_allreduce(dc, GpuSumOp(), sh);
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        float dx = 0.0f;
        if (attn_math_allowed(s, len, cb, win)) {
            float dw = dweights[o + s];
            float dp = gauss ? dw * attn_math_gaussian(s, cb, sigma) : dw;
            dx = attn_math_softmax_backward_elem(probs[o + s], dp, dot);
        }
        dscores[o + s] = dx;
    }
    if (dcenter && threadIdx.x == 0) dcenter[b] = dc;
}

void gpu_attn_softmax_backward(Backend *be, int B, int S, const float *probs,
                               const float *weights, const int32_t *src_len,
                               const float *center, int window, bool gaussian, float sigma,
                               const float *dweights, float *dscores, float *dcenter) {
    GPU_ENTER(be);
    (void)weights; /* the Gaussian is recomputed from the centre, as on the CPU */
    if (B <= 0 || S <= 0) return;
    GPU_LAUNCH(ctx, attn_softmax_backward_kernel, B, ATTN_THREADS, S, probs, src_len, center,
               window, (int)gaussian, sigma, dweights, dscores, dcenter);
}

/* ---- guided alignment: one block per decoder row ---- */

/* Grid T*B blocks of ATTN_THREADS; block r (row r = t * B + b of align
 * (T*B, S)), its threads striding over s: a_s = the mean over the n
 * heads of step t's attention, head j's row b at att + t * step_stride +
 * (j * B + b) * S (align_math_mean, the CPU's head order); q = align row r,
 * overwritten in place by weight * scale * d(row loss)/d(att_j[s])
 * (align_math_grad_elem). Whether q has a nonzero entry is a block-wide OR
 * taken before any thread writes (the barrier of __syncthreads_or), so an
 * all-zero row gets 0s as on the CPU. loss_rows[r] (=) weight * the row loss,
 * summed in double by a fixed-order block reduction (the same bits on every
 * run). scale_var.f[0]: the gradient scale (1 / the batch's target tokens),
 * a GpuVar so that a replayed graph reads the new batch's. */
__global__ void guided_align_kernel(int B, int S, int n, const float *att, size_t step_stride,
                                    int cost, float weight, GpuVar scale_var, float *align,
                                    float *loss_rows) {
    __shared__ double sh[32];
    float wk = weight * gpu_var_read(scale_var).f[0]; /* the CPU's weight * scale, in float */
    int r = blockIdx.x, t = r / B, b = r % B;
    size_t head_stride = (size_t)B * S;
    const float *a_row = att + (size_t)t * step_stride + (size_t)b * S; /* head 0's row (S) */
    float *q = align + (size_t)r * S;                                   /* (S) */
    int any = 0;
    for (int s = threadIdx.x; s < S; s += blockDim.x) any |= q[s] != 0.0f;
    any = __syncthreads_or(any); /* every read of q above precedes every write below */
    double loss = 0.0;
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        if (!any) { /* the whole block takes this branch */
            q[s] = 0.0f;
            continue;
        }
        float a = align_math_mean(a_row, head_stride, n, s), qs = q[s];
        loss += (double)align_math_loss_elem(cost, a, qs);
        q[s] = align_math_grad_elem(cost, a, qs, n, wk);
    }
    loss = gpu_block_allreduce(loss, GpuSumOp(), sh);
    if (threadIdx.x == 0) loss_rows[r] = (float)((double)weight * loss);
}

void gpu_guided_align(Backend *be, int T, int B, int S, int n, const float *att, size_t step_stride,
                      int cost, float weight, float scale, float *align, float *loss_rows) {
    GPU_ENTER(be);
    if (T <= 0 || B <= 0 || S <= 0) return;
    GpuVarVals v = {};
    v.f[0] = scale; /* 1 / the target tokens of the batch, or of the update when accumulating */
    GPU_LAUNCH(ctx, guided_align_kernel, T * B, ATTN_THREADS, B, S, n, att, step_stride, cost, weight,
               gpu_var(ctx, v), align, loss_rows);
}

/* ---- loss: one block per row ---- */

/* The row statistics of loss_math_row_stats with block reductions, over
 * s = x + bias (bias NULL: s = x): *m the max, *ls = log sum exp(s - m)
 * and, when gap is not NULL, *gap = mean (m - s); sums in double. Every
 * read of x happens before the last barrier inside, so the caller may
 * overwrite x afterwards (in place). */
__device__ void row_stats(const float *x, const float *bias, int V, float *m, float *ls,
                          float *gap) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) mx = kernel_maxf(mx, loss_math_score(x, bias, v));
    mx = gpu_block_allreduce(mx, GpuMaxOp(), shf);
    double sum = 0.0, sum_gap = 0.0;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float s = loss_math_score(x, bias, v);
        sum += (double)expf(s - mx);
        sum_gap += (double)(mx - s);
    }
    sum = gpu_block_allreduce(sum, GpuSumOp(), shd);
    if (gap) sum_gap = gpu_block_allreduce(sum_gap, GpuSumOp(), shd); /* uniform: the whole block */
    *m = mx;
    *ls = (float)log(sum);
    if (gap) *gap = (float)(sum_gap / (double)V);
}

__global__ void softmax_xent_kernel(int V, const float *logits, const int32_t *targets,
                                    int pad_id, float eps, GpuVar scale_var, float *loss_rows,
                                    float *nll_rows, float *dlogits) {
    float scale = gpu_var_read(scale_var).f[0];
    int r = blockIdx.x;
    const float *x = logits + (size_t)r * V;
    float *dx = dlogits ? dlogits + (size_t)r * V : NULL;
    int target = targets[r];
    if (target == pad_id) { /* the whole block takes this branch */
        if (threadIdx.x == 0) {
            loss_rows[r] = 0.0f;
            nll_rows[r] = 0.0f;
        }
        if (dx)
            for (int v = threadIdx.x; v < V; v += blockDim.x) dx[v] = 0.0f;
        return;
    }
    float xt = x[target]; /* before any thread can overwrite it (in place) */
    float m, ls, gap;
    row_stats(x, NULL, V, &m, &ls, &gap);
    if (threadIdx.x == 0) {
        float nl = loss_math_nlp(xt, m, ls);
        loss_rows[r] = loss_math_row_loss(nl, gap, ls, eps);
        nll_rows[r] = nl;
    }
    if (dx)
        for (int v = threadIdx.x; v < V; v += blockDim.x)
            dx[v] = loss_math_grad(x[v], m, ls, v == target, eps, V, scale);
}

void gpu_softmax_xent(Backend *be, int N, int V, const float *logits, const int32_t *targets,
                      int pad_id, float eps, float scale, float *loss_rows, float *nll_rows,
                      float *dlogits) {
    GPU_ENTER(be);
    if (N <= 0 || V <= 0) return;
    GpuVarVals v = {};
    v.f[0] = scale; /* 1 / the target tokens of the batch, or of the update when accumulating */
    GPU_LAUNCH(ctx, softmax_xent_kernel, N, GPU_ROW_THREADS, V, logits, targets, pad_id, eps,
               gpu_var(ctx, v), loss_rows, nll_rows, dlogits);
}

__global__ void log_softmax_kernel(int V, const float *logits, float *out) {
    size_t o = (size_t)blockIdx.x * V;
    float m, ls;
    row_stats(logits + o, NULL, V, &m, &ls, NULL);
    for (int v = threadIdx.x; v < V; v += blockDim.x)
        out[o + v] = loss_math_log_softmax(logits[o + v], m, ls);
}

void gpu_log_softmax(Backend *be, int N, int V, const float *logits, float *out) {
    GPU_ENTER(be);
    if (N <= 0 || V <= 0) return;
    GPU_LAUNCH(ctx, log_softmax_kernel, N, GPU_ROW_THREADS, V, logits, out);
}

/* ---- sum of squares ---- */

__global__ void sumsq_partial_kernel(const float *x, size_t n, double *partials) {
    __shared__ double sh[32];
    double acc = 0.0;
    GPU_GRID_STRIDE(i, n) acc += (double)x[i] * (double)x[i];
    acc = gpu_block_allreduce(acc, GpuSumOp(), sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

/* partials[nparts] (=) the sum of partials[0 .. nparts) */
__global__ void sumsq_final_kernel(double *partials, int nparts) {
    __shared__ double sh[32];
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partials[i];
    acc = gpu_block_allreduce(acc, GpuSumOp(), sh);
    if (threadIdx.x == 0) partials[nparts] = acc;
}

double gpu_sum_squares(Backend *be, const float *x, size_t n) {
    GpuContext *ctx = gpu_ctx(be);
    if (ctx->failed || !gpu_no_fork(ctx, "sum_squares"))
        return NAN; /* a NaN norm stops the trainer's step */
    if (!n) return 0.0;
    GPU_LAUNCH(ctx, sumsq_partial_kernel, GPU_SUMSQ_BLOCKS, GPU_THREADS, x, n, ctx->partials);
    GPU_LAUNCH(ctx, sumsq_final_kernel, 1, GPU_THREADS, ctx->partials, GPU_SUMSQ_BLOCKS);
    ctx->counters.host_waits++;
    gpu_flush(ctx);
    double t0 = gpu_clock();
    bool ok = !ctx->failed &&
              GPU_CUDA(ctx, cudaMemcpyAsync(ctx->host_result, ctx->partials + GPU_SUMSQ_BLOCKS,
                                            sizeof(double), cudaMemcpyDeviceToHost, ctx->stream)) &&
              GPU_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    gpu_wait_timed(ctx, t0);
    return ok ? *ctx->host_result : NAN;
}

/* ---- top-k: one block per row, k selection rounds ---- */

/* Does (av, ai) rank before (bv, bi)? Larger values first, ties by lower
 * index; NaN ranks below every number (it never wins); index -1 (nothing)
 * ranks last. A strict total order over a row's entries. */
__device__ inline bool topk_before(float av, int ai, float bv, int bi) {
    if (ai < 0) return false;
    if (bi < 0) return true;
    bool an = isnan(av), bn = isnan(bv);
    if (an || bn) return an && bn ? ai < bi : bn;
    if (av != bv) return av > bv;
    return ai < bi;
}

/* Round j picks the best entry ranked after round j-1's pick: each thread
 * scans its columns, then a block argmax. The row's values are the scores
 * s = x + bias, or log_softmax(s) when logprobs (its statistics first, as
 * log_softmax_kernel's), computed as they are read: x is not written. k
 * reads of the row (k is a beam width, small); rounds past the row's end
 * give -inf and -1. */
__global__ void topk_kernel(const float *x, const float *bias, int cols, bool logprobs, int k,
                            float *values, int32_t *indices) {
    __shared__ float sv[32];
    __shared__ int si[32];
    int r = blockIdx.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int nw = (blockDim.x + 31) >> 5;
    const float *xr = x + (size_t)r * cols;
    float m = 0.0f, ls = 0.0f;
    if (logprobs && cols > 0) row_stats(xr, bias, cols, &m, &ls, NULL); /* uniform: the whole block */
    float pv = 0.0f;
    int pi = -1;
    for (int j = 0; j < k; j++) {
        float bv = -INFINITY;
        int bi = -1;
        if (j == 0 || pi >= 0)
            for (int c = threadIdx.x; c < cols; c += blockDim.x) {
                float xv = loss_math_score(xr, bias, c);
                if (logprobs) xv = loss_math_log_softmax(xv, m, ls);
                if (j > 0 && !topk_before(pv, pi, xv, c)) continue; /* taken already */
                if (topk_before(xv, c, bv, bi)) {
                    bv = xv;
                    bi = c;
                }
            }
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (topk_before(ov, oi, bv, bi)) {
                bv = ov;
                bi = oi;
            }
        }
        __syncthreads();
        if (lane == 0) {
            sv[w] = bv;
            si[w] = bi;
        }
        __syncthreads();
        bv = sv[0];
        bi = si[0];
        for (int i = 1; i < nw; i++)
            if (topk_before(sv[i], si[i], bv, bi)) {
                bv = sv[i];
                bi = si[i];
            }
        if (threadIdx.x == 0) {
            values[(size_t)r * k + j] = bi >= 0 ? bv : -INFINITY;
            indices[(size_t)r * k + j] = bi;
        }
        pv = bv;
        pi = bi;
    }
}

void gpu_topk(Backend *be, const float *x, const float *bias, int rows, int cols, bool logprobs,
              int k, float *values, int32_t *indices) {
    GPU_ENTER(be);
    if (k <= 0 || rows <= 0) return;
    GPU_LAUNCH(ctx, topk_kernel, rows, GPU_ROW_THREADS, x, bias, cols > 0 ? cols : 0, logprobs, k,
               values, indices);
}
