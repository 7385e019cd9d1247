/* layer_norm_math.h: layer normalisation of one row, forward and backward
 * (model.layer_norm; shared by the CPU and CUDA backends, see
 * kernel_common.h). For a row x of n values:
 *     mean = sum(x) / n     var = sum((x - mean)^2) / n   (biased, two passes)
 *     rstd = 1 / sqrt(var + LAYER_NORM_EPS)    xhat = (x - mean) rstd
 *     y = gain * xhat
 * and with g = dy * gain:
 *     dx = rstd (g - mean(g) - xhat mean(g xhat))     dgain += dy xhat
 * The sums are the backend's (a fixed-order loop on the CPU, a tree in a
 * CUDA block); the per-element arithmetic is here. */
#ifndef NMT_LAYER_NORM_MATH_H
#define NMT_LAYER_NORM_MATH_H

#include "kernels/kernel_common.h"

/* PyTorch's LayerNorm default: a row of equal values (a zero start state's
 * recurrent product) normalises to 0 instead of dividing by 0. */
#define LAYER_NORM_EPS 1e-5f

/* rstd from the row's sum of squared deviations */
NMT_HD static inline float layer_norm_math_rstd(float sum_sq_dev, int n) {
    return 1.0f / sqrtf(sum_sq_dev / (float)n + LAYER_NORM_EPS);
}

NMT_HD static inline float layer_norm_math_xhat(float x, float mean, float rstd) {
    return (x - mean) * rstd;
}

/* dx of one element: g = dy * gain at it; mean_g and mean_gx the row's
 * means of g and of g * xhat */
NMT_HD static inline float layer_norm_math_dx(float g, float xhat, float rstd, float mean_g,
                                             float mean_gx) {
    return rstd * (g - mean_g - xhat * mean_gx);
}

#endif
