/* attention_math.h: per-element attention arithmetic shared by the CPU and
 * CUDA backends (see kernel_common.h and docs/model.md, "Attention"):
 * - the additive score term v_a tanh(k_a + q_a) and its backward;
 * - the allowed-position test (padding and local windows);
 * - the local-p Gaussian exp(-(s - p)^2 / (2 sigma^2)) and its derivative
 *   with respect to the centre p, and the centre p = S_b sigmoid(u);
 * - masked softmax rows (forward and backward), written as serial row loops
 *   over the element helpers: a backend may run one row per thread with them
 *   or do its own reductions around the element helpers. */
#ifndef NMT_ATTENTION_MATH_H
#define NMT_ATTENTION_MATH_H

#include "kernels/kernel_common.h"

/* ---- additive score: score = sum_a v_a tanh(k_a + q_a) ---- */

NMT_HD static inline float attn_math_additive_term(float v, float k, float q) {
    return v * kernel_tanhf(k + q);
}

/* Backward of one term for the score gradient ds: *dv (=) d/dv_a,
 * *dpre (=) d/dk_a = d/dq_a. */
NMT_HD static inline void attn_math_additive_backward(float ds, float v, float k, float q,
                                                      float *dv, float *dpre) {
    float t = kernel_tanhf(k + q);
    *dv = ds * t;
    *dpre = ds * v * (1.0f - t * t);
}

/* ---- masks, Gaussian, local-p centre ---- */

/* Position s is allowed when s < src_len and, for a local window
 * (window > 0), |s - center| <= window. */
NMT_HD static inline int attn_math_allowed(int s, int src_len, float center, int window) {
    if (s < 0 || s >= src_len) return 0;
    return window <= 0 || fabsf((float)s - center) <= (float)window;
}

/* g(s) = exp(-(s - center)^2 / (2 sigma^2)) */
NMT_HD static inline float attn_math_gaussian(int s, float center, float sigma) {
    float d = (float)s - center;
    return kernel_expf(-d * d / (2.0f * sigma * sigma));
}

/* dg/dcenter = g(s) (s - center) / sigma^2 */
NMT_HD static inline float attn_math_gaussian_dcenter(int s, float center, float sigma) {
    float d = (float)s - center;
    return attn_math_gaussian(s, center, sigma) * d / (sigma * sigma);
}

/* local-p centre p = src_len * sigmoid(u) and its backward dp -> du */
NMT_HD static inline float attn_math_local_p(float u, int src_len) {
    return (float)src_len * kernel_sigmoidf(u);
}
NMT_HD static inline float attn_math_local_p_grad(float u, int src_len, float dp) {
    float s = kernel_sigmoidf(u);
    return dp * (float)src_len * s * (1.0f - s);
}

/* ---- masked softmax ---- */

/* softmax element from the row max m and 1 / sum_s exp(x_s - m) */
NMT_HD static inline float attn_math_softmax_elem(float x, float m, float inv_sum) {
    return kernel_expf(x - m) * inv_sum;
}

/* softmax backward element: dx = p (dp - sum_s p_s dp_s) */
NMT_HD static inline float attn_math_softmax_backward_elem(float p, float dp, float dot) {
    return p * (dp - dot);
}

/* One row: probs (S) (=) the softmax of x (S) over the allowed positions, 0
 * elsewhere; weights (S) (=) probs * g(s) when gaussian, else probs. A row
 * with no allowed position gets zeros; one allowed position gets 1. */
NMT_HD static inline void attn_math_softmax_row_forward(const float *x, int S, int src_len,
                                                        float center, int window,
                                                        int gaussian, float sigma,
                                                        float *probs, float *weights) {
    float m = 0.0f;
    int any = 0;
    for (int s = 0; s < S; s++)
        if (attn_math_allowed(s, src_len, center, window)) {
            m = any ? kernel_maxf(m, x[s]) : x[s];
            any = 1;
        }
    float sum = 0.0f;
    for (int s = 0; s < S; s++) {
        float e = 0.0f;
        if (any && attn_math_allowed(s, src_len, center, window)) e = kernel_expf(x[s] - m);
        probs[s] = e;
        sum += e;
    }
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f; /* sum >= 1 whenever any */
    for (int s = 0; s < S; s++) {
        float p = probs[s] * inv;
        probs[s] = p;
        weights[s] = gaussian ? p * attn_math_gaussian(s, center, sigma) : p;
    }
}

/* Backward of one row. dw (S) the gradient of the weights; dx (S) (=) the
 * gradient of the scores (0 at masked positions). Returns the gradient of
 * the centre through the Gaussian (0 without it):
 *     dp_s = dw_s g(s) (or dw_s);   dx_s = p_s (dp_s - sum_s' p_s' dp_s')
 *     dcenter = sum_s dw_s p_s g(s) (s - center) / sigma^2 */
NMT_HD static inline float attn_math_softmax_row_backward(const float *p, int S, int src_len,
                                                          float center, int window,
                                                          int gaussian, float sigma,
                                                          const float *dw, float *dx) {
    float dot = 0.0f, dcenter = 0.0f;
    for (int s = 0; s < S; s++) {
        if (!attn_math_allowed(s, src_len, center, window)) continue;
        float dp = dw[s];
        if (gaussian) {
            dp *= attn_math_gaussian(s, center, sigma);
            dcenter += dw[s] * p[s] * attn_math_gaussian_dcenter(s, center, sigma);
        }
        dot += p[s] * dp;
    }
    for (int s = 0; s < S; s++) {
        if (!attn_math_allowed(s, src_len, center, window)) {
            dx[s] = 0.0f;
            continue;
        }
        float dp = gaussian ? dw[s] * attn_math_gaussian(s, center, sigma) : dw[s];
        dx[s] = attn_math_softmax_backward_elem(p[s], dp, dot);
    }
    return dcenter;
}

#endif
