/* dropout_math.h: the random numbers behind dropout masks: cuRAND's
 * Philox4x32-10 generator, written out so that the CPU backend draws bit
 * for bit what the CUDA backend's cuRAND calls draw (see kernel_common.h).
 *
 * Philox4x32-10 (Salmon et al. 2011, "Parallel random numbers: as easy as
 * 1, 2, 3"; cuRAND's curand_philox4x32_x.h) maps a 128-bit counter and a
 * 64-bit key to four 32-bit words. cuRAND's device API with
 * curand_init(seed, 0, j, &state) starts at word j of the stream whose key
 * is the seed: word j is word j % 4 of the block with counter j / 4 (the
 * 64-bit block index in the counter's low two words, the subsequence, 0
 * here, in the high two). curand_uniform turns a word x into the float
 * x * 2^-32 + 2^-33 in (0, 1].
 *
 * Mask element i of a call (seed, offset) uses word offset + i, so it is a
 * pure function of (seed, offset + i), whatever the launch shape or thread
 * count: the backward pass draws the forward's mask again instead of
 * keeping it. The CUDA kernel calls cuRAND itself (curand_init,
 * curand_uniform4); tests/test_curand_twin.cu checks these functions
 * against cuRAND's own header, and tests/test_kernel_math.c against the
 * published Random123 known-answer vectors. */
#ifndef NMT_DROPOUT_MATH_H
#define NMT_DROPOUT_MATH_H

#include "kernels/kernel_common.h"

/* Philox4x32's round multipliers and Weyl key increments (Random123) */
#define DROPOUT_PHILOX_M0 0xD2511F53u
#define DROPOUT_PHILOX_M1 0xCD9E8D57u
#define DROPOUT_PHILOX_W0 0x9E3779B9u
#define DROPOUT_PHILOX_W1 0xBB67AE85u
/* cuRAND's CURAND_2POW32_INV: the float 2^-32, written as cuRAND writes it */
#define DROPOUT_2POW32_INV 2.3283064e-10f

/* one Philox round on ctr[4] with key (k0, k1) */
NMT_HD static inline void dropout_math_philox_round(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    uint64_t p0 = (uint64_t)DROPOUT_PHILOX_M0 * ctr[0];
    uint64_t p1 = (uint64_t)DROPOUT_PHILOX_M1 * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ k0;
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ k1;
    ctr[3] = lo0;
}

/* Philox4x32-10: ctr[4] (in: the counter; out: the four words) under the
 * 64-bit key */
NMT_HD static inline void dropout_math_philox(uint32_t ctr[4], uint64_t key) {
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 9; r++) {
        dropout_math_philox_round(ctr, k0, k1);
        k0 += DROPOUT_PHILOX_W0;
        k1 += DROPOUT_PHILOX_W1;
    }
    dropout_math_philox_round(ctr, k0, k1);
}

/* the four words of block g (words 4g .. 4g + 3) of the stream of seed */
NMT_HD static inline void dropout_math_block(uint64_t seed, uint64_t g, uint32_t out[4]) {
    out[0] = (uint32_t)g;
    out[1] = (uint32_t)(g >> 32);
    out[2] = 0;
    out[3] = 0;
    dropout_math_philox(out, seed);
}

/* curand_uniform's float of a word: in (0, 1] */
NMT_HD static inline float dropout_math_uniform(uint32_t x) {
    return (float)x * DROPOUT_2POW32_INV + (DROPOUT_2POW32_INV / 2.0f);
}

/* mask element of a uniform draw u: 0 with probability p, else
 * 1 / (1 - p); p <= 0 gives 1, p >= 1 gives 0 */
NMT_HD static inline float dropout_math_keep(float u, float p) {
    if (p <= 0.0f) return 1.0f;
    if (p >= 1.0f) return 0.0f;
    return u < p ? 0.0f : 1.0f / (1.0f - p);
}

/* y[i] = x[i] * mask[i] (x NULL: the mask itself) for the words
 * j = offset + i < offset + n of block g, from the block's four uniforms u:
 * where a block's draws go, for the CUDA kernel (u from cuRAND) and for
 * dropout_math_mask_block. y may be x. */
NMT_HD static inline void dropout_math_store_block(float *y, const float *x, uint64_t n, float p,
                                                   uint64_t offset, uint64_t g, const float u[4]) {
    for (int k = 0; k < 4; k++) {
        uint64_t j = 4 * g + (uint64_t)k;
        if (j >= offset && j - offset < n) {
            float keep = dropout_math_keep(u[k], p);
            y[j - offset] = x ? x[j - offset] * keep : keep;
        }
    }
}

/* the same with the block drawn here: the CPU's twin of the kernel's body
 * (one Philox block gives four elements) */
NMT_HD static inline void dropout_math_mask_block(float *y, const float *x, uint64_t n, float p,
                                                  uint64_t seed, uint64_t offset, uint64_t g) {
    uint32_t w[4];
    dropout_math_block(seed, g, w);
    float u[4] = {dropout_math_uniform(w[0]), dropout_math_uniform(w[1]),
                  dropout_math_uniform(w[2]), dropout_math_uniform(w[3])};
    dropout_math_store_block(y, x, n, p, offset, g, u);
}

/* the mask element of word j of the stream of seed alone (dropout_rows'
 * row mask: one word per row, drawn where the row is handled) */
NMT_HD static inline float dropout_math_word_keep(uint64_t seed, uint64_t j, float p) {
    uint32_t w[4];
    dropout_math_block(seed, j / 4, w);
    return dropout_math_keep(dropout_math_uniform(w[j % 4]), p);
}

#endif
