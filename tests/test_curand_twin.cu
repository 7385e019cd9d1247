/* test_curand_twin.cu: the CPU's dropout random numbers (dropout_math.h)
 * against cuRAND's own device-API code for Philox4x32-10, run on the host:
 * cuRAND's header is compiled with __host__ added to its functions (its
 * Philox code has a host branch), so this check needs nvcc but no GPU and
 * runs in CI. It compares, for awkward seeds and word positions (counter
 * carries from the low into the high word, unaligned offsets):
 * - single words: curand_init(seed, 0, j) then curand() against word j of
 *   dropout_math_block;
 * - the GPU kernel's recipe (curand_init at 4g, curand_uniform4) against
 *   dropout_math_uniform of block g, bit for bit;
 * - whole masks: the kernel's per-block loop written with cuRAND against
 *   dropout_math_mask_block, as the CPU backend calls it. */
#define QUALIFIERS static __forceinline__ __host__ __device__
#include <curand_kernel.h>

#include <stdio.h>
#include <string.h>

#include "kernels/dropout_math.h"
#include "test_util.h"

static const unsigned long long seeds[] = {0, 1, 42, 0xffffffffULL, 0x100000000ULL,
                                           0x9e3779b97f4a7c15ULL, 0xffffffffffffffffULL};
static const unsigned long long words[] = {0,           1,           2,           3,
                                           4,           5,           1001,        0x3fffffffcULL,
                                           0x3ffffffffULL, 0x400000000ULL, 0x400000003ULL,
                                           (1ULL << 40) + 7, 0xfffffffffffffff0ULL};

static unsigned long long rng = 0x1234567;
static unsigned long long next(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng ^ (rng >> 29);
}

static int same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* the GPU kernel's loop body (src/gpu/gpu_ops.cu, dropout_kernel), for the mask itself */
static void curand_mask_block(float *mask, unsigned long long n, float p, unsigned long long seed,
                              unsigned long long offset, unsigned long long g) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, 0, 4 * g, &state);
    float4 u4 = curand_uniform4(&state);
    float u[4] = {u4.x, u4.y, u4.z, u4.w};
    dropout_math_store_block(mask, NULL, n, p, offset, g, u);
}

int main(void) {
    int n_seeds = sizeof seeds / sizeof *seeds, n_words = sizeof words / sizeof *words;
    long bad_word = 0, bad_uniform = 0, checked = 0;
    for (int s = 0; s < n_seeds + 20; s++) {
        unsigned long long seed = s < n_seeds ? seeds[s] : next();
        for (int w = 0; w < n_words + 20; w++) {
            unsigned long long j = w < n_words ? words[w] : next() >> (next() % 64);
            curandStatePhilox4_32_10_t state;
            curand_init(seed, 0, j, &state);
            unsigned int want = curand(&state);
            uint32_t block[4];
            dropout_math_block(seed, j / 4, block);
            if (block[j % 4] != want) {
                if (bad_word++ < 5)
                    printf("  seed %llx word %llx: curand %08x, dropout_math %08x\n", seed, j, want,
                           block[j % 4]);
            }
            unsigned long long g = j / 4;
            curand_init(seed, 0, 4 * g, &state);
            float4 u = curand_uniform4(&state);
            dropout_math_block(seed, g, block);
            float mine[4] = {dropout_math_uniform(block[0]), dropout_math_uniform(block[1]),
                             dropout_math_uniform(block[2]), dropout_math_uniform(block[3])};
            if (!same_float(u.x, mine[0]) || !same_float(u.y, mine[1]) ||
                !same_float(u.z, mine[2]) || !same_float(u.w, mine[3])) {
                if (bad_uniform++ < 5)
                    printf("  seed %llx block %llx: curand_uniform4 %.9g %.9g %.9g %.9g\n", seed, g,
                           u.x, u.y, u.z, u.w);
            }
            checked++;
        }
    }
    CHECK(bad_word == 0, "curand() word j equals dropout_math_block word j (%ld of %ld differ)",
          bad_word, checked);
    CHECK(bad_uniform == 0, "curand_uniform4 equals dropout_math_uniform (%ld of %ld differ)",
          bad_uniform, checked);

    /* whole masks through both loops, unaligned offsets and lengths */
    static float a[4099], b[4099];
    const unsigned long long offsets[] = {0, 1, 2, 3, 7, 0x3ffffffffULL, 1ULL << 40};
    const unsigned long long lengths[] = {1, 2, 3, 4, 5, 4097};
    const float ps[] = {0.0f, 0.1f, 0.3f, 0.5f, 1.0f};
    long bad_mask = 0, masks = 0;
    for (unsigned o = 0; o < sizeof offsets / sizeof *offsets; o++)
        for (unsigned l = 0; l < sizeof lengths / sizeof *lengths; l++)
            for (unsigned q = 0; q < sizeof ps / sizeof *ps; q++) {
                unsigned long long off = offsets[o], n = lengths[l], seed = next();
                memset(a, 0x7f, sizeof a);
                memset(b, 0x7f, sizeof b);
                unsigned long long first = off / 4, last = (off + n - 1) / 4;
                for (unsigned long long g = first; g <= last; g++) {
                    curand_mask_block(a + 1, n, ps[q], seed, off, g);
                    dropout_math_mask_block(b + 1, NULL, n, ps[q], seed, off, g);
                }
                masks++;
                if (memcmp(a, b, sizeof a) != 0 && bad_mask++ < 5)
                    printf("  mask offset %llx n %llu p %g differs\n", off, n, ps[q]);
            }
    CHECK(bad_mask == 0, "masks from cuRAND and from dropout_math_mask_block are identical (%ld of %ld "
          "differ)", bad_mask, masks);
    printf("  %ld word positions x seeds, %ld masks compared with cuRAND\n", checked, masks);
    return test_summary("test_curand_twin");
}
