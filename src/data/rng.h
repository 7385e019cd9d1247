/* rng.h: the one seeded pseudo-random generator of nmt (PCG32, O'Neill 2014).
 *
 * Its whole state is two plain integers, so a checkpoint can save and restore
 * it exactly (copy the struct, or store `state` and `inc`). The batcher uses
 * it for epoch shuffles; the trainer and the model reuse it for dropout masks
 * and initialisation. Every stream is a pure function of (seed, stream), and
 * the outputs are the same on every platform (no libc rand, no floats in the
 * integer paths). */
#ifndef NMT_RNG_H
#define NMT_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state; /* PCG32 state */
    uint64_t inc;   /* stream selector, always odd */
} Rng;

/* Seeds `r` with (seed, stream): different streams of one seed are
 * independent sequences (the batcher uses stream = epoch). Both numbers go
 * through SplitMix64 first, so nearby seeds give unrelated sequences. */
void rng_seed(Rng *r, uint64_t seed, uint64_t stream);

/* SplitMix64 finaliser: a bijective 64-bit mix, handy to derive seeds. */
uint64_t rng_mix64(uint64_t x);

uint32_t rng_u32(Rng *r); /* uniform on [0, 2^32) */
uint64_t rng_u64(Rng *r); /* uniform on [0, 2^64) (two draws) */

/* Uniform integer in [0, n) without modulo bias (Lemire's multiply-and-reject);
 * n must be >= 1. rng_below64 accepts n up to 2^64 - 1. */
uint32_t rng_below(Rng *r, uint32_t n);
uint64_t rng_below64(Rng *r, uint64_t n);

/* Uniform float in [0, 1): 24 random bits, so exactly representable and
 * never 1.0f. rng_uniform_double uses 53 bits. */
float rng_uniform(Rng *r);
double rng_uniform_double(Rng *r);
/* Standard normal (Box-Muller on two uniform doubles; one value per call). */
double rng_normal(Rng *r);

/* Fisher-Yates shuffles in place: every permutation equally likely. */
void rng_shuffle_i64(Rng *r, int64_t *a, int64_t n); /* a: (n) */
void rng_shuffle_i32(Rng *r, int32_t *a, int64_t n); /* a: (n) */

#endif
