/* dropout_math.h: the counter-based random numbers behind dropout masks,
 * shared by the CPU and CUDA backends (see kernel_common.h).
 *
 * uniform(seed, i) is the i-th output of a SplitMix64 stream (Steele et al.
 * 2014) whose start state is mix64(seed): mix64(mix64(seed) + (i + 1) *
 * golden), top 24 bits scaled to [0, 1). It is a pure function of
 * (seed, i), so element i of a mask depends only on (seed, offset + i) and
 * any thread on any device computes the same value with integer arithmetic
 * only. */
#ifndef NMT_DROPOUT_MATH_H
#define NMT_DROPOUT_MATH_H

#include "kernels/kernel_common.h"

#define DROPOUT_MATH_GOLDEN 0x9e3779b97f4a7c15ULL

/* SplitMix64 finaliser: a bijective 64-bit mix */
NMT_HD static inline uint64_t dropout_math_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* the per-seed key: mix it once per call, not per element */
NMT_HD static inline uint64_t dropout_math_key(uint64_t seed) {
    return dropout_math_mix64(seed + DROPOUT_MATH_GOLDEN);
}

/* uniform float in [0, 1) (24 bits, exactly representable) for counter i */
NMT_HD static inline float dropout_math_uniform(uint64_t key, uint64_t i) {
    uint64_t z = dropout_math_mix64(key + (i + 1) * DROPOUT_MATH_GOLDEN);
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* mask element: 0 with probability p, else 1 / (1 - p); p <= 0 gives 1,
 * p >= 1 gives 0 */
NMT_HD static inline float dropout_math_mask(uint64_t key, uint64_t i, float p) {
    if (p <= 0.0f) return 1.0f;
    if (p >= 1.0f) return 0.0f;
    return dropout_math_uniform(key, i) < p ? 0.0f : 1.0f / (1.0f - p);
}

#endif
