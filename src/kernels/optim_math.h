/* optim_math.h: one weight's optimizer update, shared by the CPU and CUDA
 * backends (see kernel_common.h).
 * Adam (Kingma & Ba 2015) with bias correction at step t (1-based):
 *     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *     w -= lr (m / bc1) / (sqrt(v / bc2) + eps),  bc1 = 1 - b1^t, bc2 = 1 - b2^t
 * bc1 and bc2 are computed once per step on the host
 * (optim_math_adam_corrections). SGD: w -= lr g. */
#ifndef NMT_OPTIM_MATH_H
#define NMT_OPTIM_MATH_H

#include "kernels/kernel_common.h"

/* bias corrections 1 - b^t, computed in double (t >= 1) */
static inline void optim_math_adam_corrections(float beta1, float beta2, int t, float *bc1,
                                               float *bc2) {
    *bc1 = (float)(1.0 - pow((double)beta1, (double)t));
    *bc2 = (float)(1.0 - pow((double)beta2, (double)t));
}

NMT_HD static inline void optim_math_adam(float *w, float g, float *m, float *v, float lr,
                                          float beta1, float beta2, float eps, float bc1,
                                          float bc2) {
    float mn = beta1 * *m + (1.0f - beta1) * g;
    float vn = beta2 * *v + (1.0f - beta2) * g * g;
    *m = mn;
    *v = vn;
    *w -= lr * (mn / bc1) / (sqrtf(vn / bc2) + eps);
}

NMT_HD static inline void optim_math_sgd(float *w, float g, float lr) { *w -= lr * g; }

/* One weight's exponential moving average: avg = decay avg + (1 - decay) w,
 * computed as avg += (1 - decay) (w - avg), so that avg stays w exactly
 * once both are equal. keep = 1 - decay, computed by the caller. */
NMT_HD static inline void optim_math_ema(float *avg, float w, float keep) { *avg += keep * (w - *avg); }

#endif
