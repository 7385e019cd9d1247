/* loss_math.h: the label-smoothed softmax cross-entropy of one row and the
 * log-softmax (shared by the CPU and CUDA backends; see kernel_common.h).
 * For logits x (V), target y and smoothing eps (docs/model.md, "Loss"), with
 * the row max m and ls = log sum_v exp(x_v - m):
 *     -log p_v = (m - x_v) + ls        (never forms m + ls: no rounding of
 *                                       large logits)
 *     nll  = -log p_y
 *     loss = (1 - eps) nll + eps mean_v(-log p_v) = (1 - eps) nll + eps (gap + ls)
 *            with gap = mean_v (m - x_v)
 *     dx_v = scale (p_v - q_v),  p_v = exp((x_v - m) - ls),
 *            q_v = eps / V + (1 - eps) [v == y]
 * The row statistics (m, ls, gap) are reductions: the serial helpers here
 * accumulate in double; a GPU may reduce its own way and then use the
 * element functions. */
#ifndef NMT_LOSS_MATH_H
#define NMT_LOSS_MATH_H

#include <stddef.h>

#include "kernels/kernel_common.h"

/* -log p_v from the logit, the row max and the log-sum */
NMT_HD static inline float loss_math_nlp(float x, float m, float ls) { return (m - x) + ls; }

NMT_HD static inline float loss_math_row_loss(float nll, float gap, float ls, float eps) {
    return (1.0f - eps) * nll + eps * (gap + ls);
}

/* dlogits element: scale (p_v - q_v) */
NMT_HD static inline float loss_math_grad(float x, float m, float ls, int is_target, float eps,
                                          int V, float scale) {
    float q = eps / (float)V + (is_target ? 1.0f - eps : 0.0f);
    return scale * (kernel_expf((x - m) - ls) - q);
}

NMT_HD static inline float loss_math_log_softmax(float x, float m, float ls) {
    return (x - m) - ls;
}

/* Element v of the scored row s = x + bias (bias NULL: s = x). Decoding
 * scores x + bias without writing it (Backend.topk); the sum is the one
 * add_bias makes, so the results are add_bias's then the row's. */
NMT_HD static inline float loss_math_score(const float *x, const float *bias, int v) {
    return bias ? x[v] + bias[v] : x[v];
}

/* Row statistics of s = x + bias (V), V >= 1 (bias NULL: s = x): *m the
 * max, *ls = log sum exp(s - m), and when gap is not NULL *gap = mean
 * (m - s); sums in double. Element v goes to lane v % 8 and the lanes are
 * added in order at the end: a fixed order (the same bits every time) that
 * the compiler can run as SIMD (the GPU has its own block reductions,
 * src/gpu/gpu_rows.cu). */
#define LOSS_MATH_LANES 8
NMT_HD_INLINE void loss_math_row_stats(const float *x, const float *bias, int V, float *m, float *ls,
                                       float *gap) {
    enum { L = LOSS_MATH_LANES };
    float lane_max[L];
    int full = V - V % L;
#if defined(__GNUC__) && !defined(__CUDACC__)
    /* the same lanes as GCC vectors (gcc does not vectorise the loop below:
     * a float max is not a reduction it may reorder), each lane
     * kernel_maxf(lane, s) = lane > s ? lane : s, bit for bit */
    typedef float lanes_f __attribute__((vector_size(L * sizeof(float))));
    typedef int32_t lanes_i __attribute__((vector_size(L * sizeof(int32_t))));
    lanes_f lm;
    for (int k = 0; k < L; k++) lm[k] = loss_math_score(x, bias, 0);
    for (int v = 0; v < full; v += L) {
        lanes_f sv, bv;
        __builtin_memcpy(&sv, x + v, sizeof sv);
        if (bias) {
            __builtin_memcpy(&bv, bias + v, sizeof bv);
            sv = sv + bv; /* loss_math_score's sum */
        }
        lanes_i keep = lm > sv;
        lm = (lanes_f)(((lanes_i)lm & keep) | ((lanes_i)sv & ~keep));
    }
    __builtin_memcpy(lane_max, &lm, sizeof lm);
#else
    for (int k = 0; k < L; k++) lane_max[k] = loss_math_score(x, bias, 0);
    for (int v = 0; v < full; v += L)
        for (int k = 0; k < L; k++) lane_max[k] = kernel_maxf(lane_max[k], loss_math_score(x, bias, v + k));
#endif
    for (int v = full; v < V; v++) lane_max[0] = kernel_maxf(lane_max[0], loss_math_score(x, bias, v));
    float mx = lane_max[0];
    for (int k = 1; k < L; k++) mx = kernel_maxf(mx, lane_max[k]);
    double lane_sum[L], lane_gap[L];
    for (int k = 0; k < L; k++) lane_sum[k] = 0.0, lane_gap[k] = 0.0;
#if defined(__GNUC__) && !defined(__CUDACC__)
    /* a chunk's exponentials first, then their sums in the same lanes and
     * order (the same bits): gcc vectorises the two loops apart better than
     * the two in one (a row of 8000 with AVX-512: 0.60 against 1.07 ns an
     * element, the max included) */
    enum { CHUNK = 32 * L };
    float e[CHUNK];
    for (int v0 = 0; v0 < full; v0 += CHUNK) {
        int n = full - v0 < CHUNK ? full - v0 : CHUNK; /* a multiple of L */
        for (int i = 0; i < n; i++) e[i] = kernel_expf(loss_math_score(x, bias, v0 + i) - mx);
        for (int i = 0; i < n; i += L)
            for (int k = 0; k < L; k++) lane_sum[k] += (double)e[i + k];
        if (gap)
            for (int i = 0; i < n; i += L)
                for (int k = 0; k < L; k++) lane_gap[k] += (double)(mx - loss_math_score(x, bias, v0 + i + k));
    }
#else
    for (int v = 0; v < full; v += L)
        for (int k = 0; k < L; k++) {
            float s = loss_math_score(x, bias, v + k);
            lane_sum[k] += (double)kernel_expf(s - mx);
            if (gap) lane_gap[k] += (double)(mx - s);
        }
#endif
    for (int v = full; v < V; v++) {
        float s = loss_math_score(x, bias, v);
        lane_sum[v - full] += (double)kernel_expf(s - mx);
        if (gap) lane_gap[v - full] += (double)(mx - s);
    }
    double sum = 0.0, sum_gap = 0.0;
    for (int k = 0; k < L; k++) sum += lane_sum[k], sum_gap += lane_gap[k];
    *m = mx;
    *ls = (float)log(sum);
    if (gap) *gap = (float)(sum_gap / (double)V);
}

/* One row of softmax_xent. dx (V) (=) may alias x, or be NULL (loss only).
 * A row whose target is pad_id gives loss 0, nll 0 and a zero gradient. */
NMT_HD_INLINE void loss_math_xent_row(const float *x, int V, int target, int pad_id, float eps,
                                      float scale, float *loss, float *nll, float *dx) {
    if (target == pad_id) {
        *loss = 0.0f;
        *nll = 0.0f;
        if (dx)
            for (int v = 0; v < V; v++) dx[v] = 0.0f;
        return;
    }
    float m, ls, gap;
    loss_math_row_stats(x, NULL, V, &m, &ls, &gap);
    float nl = loss_math_nlp(x[target], m, ls);
    *loss = loss_math_row_loss(nl, gap, ls, eps);
    *nll = nl;
    if (dx)
        for (int v = 0; v < V; v++) dx[v] = loss_math_grad(x[v], m, ls, v == target, eps, V, scale);
}

/* One row of log_softmax: out (V) (=) may alias x. */
NMT_HD_INLINE void loss_math_log_softmax_row(const float *x, int V, float *out) {
    float m, ls;
    loss_math_row_stats(x, NULL, V, &m, &ls, NULL);
    for (int v = 0; v < V; v++) out[v] = loss_math_log_softmax(x[v], m, ls);
}

#endif
