/* curand_kernel.h (emulator): the part of cuRAND's device API that nmt's
 * CUDA backend calls (Philox4x32-10: curand_init, curand4,
 * curand_uniform4), for the CPU emulator build of src/gpu/ (see
 * cuda_runtime.h beside this file). It keeps cuRAND's state semantics
 * (the counter's low words advance by blocks of four words, the
 * subsequence is the high words, `STATE` the position in the current
 * block) and takes the block function from dropout_math.h, which
 * tests/test_curand_twin.cu checks against cuRAND's own header. */
#ifndef NMT_GPU_EMU_CURAND_KERNEL_H
#define NMT_GPU_EMU_CURAND_KERNEL_H

#include <cstdint>

#include "cuda_runtime.h"
#include "kernels/dropout_math.h"

/* float4: cuda_runtime.h */
struct uint4 {
    unsigned x, y, z, w;
};

struct curandStatePhilox4_32_10_t {
    uint32_t ctr[4];
    uint64_t key;
    uint32_t output[4];
    int STATE;
};

/* the next block: output = Philox(ctr, key) */
inline void emu_philox_output(curandStatePhilox4_32_10_t *s) {
    for (int i = 0; i < 4; i++) s->output[i] = s->ctr[i];
    dropout_math_philox(s->output, s->key);
}

/* the 128-bit counter += n (low words; carry into the high words) */
inline void emu_philox_incr(curandStatePhilox4_32_10_t *s, uint64_t n) {
    uint64_t lo = ((uint64_t)s->ctr[1] << 32 | s->ctr[0]), sum = lo + n;
    s->ctr[0] = (uint32_t)sum;
    s->ctr[1] = (uint32_t)(sum >> 32);
    if (sum < lo && ++s->ctr[2] == 0) ++s->ctr[3];
}

inline void curand_init(unsigned long long seed, unsigned long long subsequence,
                        unsigned long long offset, curandStatePhilox4_32_10_t *s) {
    s->ctr[0] = s->ctr[1] = 0;
    s->ctr[2] = (uint32_t)subsequence;
    s->ctr[3] = (uint32_t)(subsequence >> 32);
    s->key = seed;
    s->STATE = (int)(offset & 3);
    emu_philox_incr(s, offset / 4);
    emu_philox_output(s);
}

/* four words from the current position, then the position moves on by four */
inline uint4 curand4(curandStatePhilox4_32_10_t *s) {
    uint32_t cur[4], nxt[4];
    for (int i = 0; i < 4; i++) cur[i] = s->output[i];
    emu_philox_incr(s, 1);
    emu_philox_output(s);
    for (int i = 0; i < 4; i++) nxt[i] = s->output[i];
    uint32_t w[4];
    for (int i = 0; i < 4; i++) w[i] = s->STATE + i < 4 ? cur[s->STATE + i] : nxt[s->STATE + i - 4];
    return uint4{w[0], w[1], w[2], w[3]};
}

inline float4 curand_uniform4(curandStatePhilox4_32_10_t *s) {
    uint4 w = curand4(s);
    return float4{dropout_math_uniform(w.x), dropout_math_uniform(w.y), dropout_math_uniform(w.z),
                  dropout_math_uniform(w.w)};
}

#endif
