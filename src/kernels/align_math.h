/* align_math.h: guided alignment (train.guided_alignment, docs/model.md
 * "Guided alignment"), the per-element arithmetic of Backend.guided_align,
 * shared by the CPU and CUDA backends (kernel_common.h).
 *
 * For one decoder row: a_s, the attention on source position s averaged
 * over the n heads, and q_s, the row's target distribution (the guiding
 * alignment, normalised to sum 1). With weight w and gradient scale k:
 *   ce:  loss = -w sum_s q_s log(a_s + eps)
 *        d loss / d att_j[s] = -w q_s / (n (a_s + eps))
 *   mse: loss = w/2 sum_s (a_s - q_s)^2
 *        d loss / d att_j[s] = w (a_s - q_s) / n
 * and the backend writes k times the derivative (the same for every head).
 * A row whose q is all 0 (a target token without an alignment point, EOS,
 * padding) has no loss and no gradient. eps is Marian's. */
#ifndef NMT_ALIGN_MATH_H
#define NMT_ALIGN_MATH_H

#include "kernels/kernel_common.h"

#define ALIGN_MATH_EPS 1e-6f

enum { ALIGN_COST_CE = 0, ALIGN_COST_MSE = 1 };

/* the head average a_s of position s: head j's weight at att[j * head_stride + s] */
NMT_HD static inline float align_math_mean(const float *att, size_t head_stride, int n, int s) {
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += att[(size_t)j * head_stride + s];
    return sum / (float)n;
}

/* element s's share of the row loss, before the weight */
NMT_HD static inline float align_math_loss_elem(int cost, float a, float q) {
    if (cost == ALIGN_COST_MSE) return 0.5f * (a - q) * (a - q);
    return q > 0.0f ? -q * logf(a + ALIGN_MATH_EPS) : 0.0f;
}

/* the gradient written for element s: k w d loss / d att_j[s]; wk = w k */
NMT_HD static inline float align_math_grad_elem(int cost, float a, float q, int n, float wk) {
    if (cost == ALIGN_COST_MSE) return wk * (a - q) / (float)n;
    return q > 0.0f ? -wk * q / ((float)n * (a + ALIGN_MATH_EPS)) : 0.0f;
}

#endif
