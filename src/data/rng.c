/* rng.c: PCG32 (XSH RR variant) with SplitMix64 seeding, unbiased bounded
 * integers, uniform and normal floats, Fisher-Yates shuffles (rng.h). */
#include "data/rng.h"

#include <math.h>

#define PCG_MULT 6364136223846793005ULL

uint64_t rng_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint32_t rng_u32(Rng *r) {
    uint64_t old = r->state;
    r->state = old * PCG_MULT + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void rng_seed(Rng *r, uint64_t seed, uint64_t stream) {
    r->state = 0;
    r->inc = (rng_mix64(stream ^ 0x5851f42d4c957f2dULL) << 1) | 1u;
    (void)rng_u32(r);
    r->state += rng_mix64(seed);
    (void)rng_u32(r);
}

uint64_t rng_u64(Rng *r) {
    uint64_t hi = rng_u32(r);
    return (hi << 32) | rng_u32(r);
}

uint32_t rng_below(Rng *r, uint32_t n) {
    /* Lemire 2019: the high half of x * n is uniform once the low half is
     * outside the biased zone [0, 2^32 mod n). */
    uint64_t m = (uint64_t)rng_u32(r) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)rng_u32(r) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

uint64_t rng_below64(Rng *r, uint64_t n) {
    if (n <= UINT32_MAX) return rng_below(r, (uint32_t)n);
    /* rejection on the smallest power-of-two mask covering n - 1 */
    uint64_t mask = n - 1;
    mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
    mask |= mask >> 8; mask |= mask >> 16; mask |= mask >> 32;
    uint64_t x;
    do x = rng_u64(r) & mask; while (x >= n);
    return x;
}

float rng_uniform(Rng *r) { return (float)(rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

double rng_uniform_double(Rng *r) {
    return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

double rng_normal(Rng *r) {
    double u1 = 1.0 - rng_uniform_double(r); /* (0, 1]: log is finite */
    double u2 = rng_uniform_double(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rng_shuffle_i64(Rng *r, int64_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below64(r, (uint64_t)i + 1);
        int64_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

void rng_shuffle_i32(Rng *r, int32_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below64(r, (uint64_t)i + 1);
        int32_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}
