/* kernel_common.h: what every shared kernel-math header needs: the NMT_HD
 * marker (empty for gcc, __host__ __device__ under nvcc) and a few small
 * float helpers (numerically stable sigmoid, min/max).
 *
 * The headers in src/kernels/ hold the per-element arithmetic of every
 * Backend op as `NMT_HD static inline` functions. src/cpu/ loops over them
 * and src/gpu/ calls them from CUDA kernels, so the CPU tests exercise the
 * exact arithmetic the GPU runs; only indexing, launch shapes and reductions
 * are backend-specific. Only float math from <math.h> that CUDA also
 * provides on the device (expf, logf, tanhf, sqrtf, fabsf) may be used;
 * the hot exponentials and tanh go through kernel_expf and kernel_tanhf:
 * the device's own functions under nvcc, and on the host branch-free
 * versions (Cephes' polynomials, within a few ulp of libm) that gcc turns
 * into SIMD loops, where a call to libm's expf or tanhf per element would
 * stop it (libm's vector variants need -ffast-math, which the NaN guard
 * of the trainer cannot have). */
#ifndef NMT_KERNEL_COMMON_H
#define NMT_KERNEL_COMMON_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define NMT_HD __host__ __device__
#else
#define NMT_HD
#endif

/* A row helper that must be inlined into its caller: the CPU's row
 * functions are compiled per instruction set (target_clones), and a copy
 * of their own would run the baseline's scalar code. */
#if defined(__CUDACC__)
#define NMT_HD_INLINE __host__ __device__ static __forceinline__
#elif defined(__GNUC__)
#define NMT_HD_INLINE static inline __attribute__((always_inline))
#else
#define NMT_HD_INLINE static inline
#endif

NMT_HD static inline float kernel_maxf(float a, float b) { return a > b ? a : b; }
NMT_HD static inline float kernel_minf(float a, float b) { return a < b ? a : b; }

#ifdef __CUDACC__
NMT_HD static inline float kernel_expf(float x) { return expf(x); }
NMT_HD static inline float kernel_tanhf(float x) { return tanhf(x); }
#else
/* exp(x): x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two for
 * exactness), e^r by a degree-7 polynomial, 2^n put into the exponent bits
 * as 2^(n/2) 2^(n - n/2): near the top n reaches 128, whose 2^n is not a
 * float although e^x still is (up to 88.72); multiplying by powers of two
 * is exact, so elsewhere the result is that of one 2^n. Below -87.3 the
 * result is 0 (no denormals); above 88.7, +infinity; NaN stays NaN. */
static inline float kernel_expf(float x) {
    float xc = kernel_minf(kernel_maxf(x, -87.33654f), 88.72283f);
    float fx = xc * 1.44269504088896341f;
    /* n = fx rounded to nearest (even on ties): adding 1.5 * 2^23 leaves the
     * integer in the low mantissa bits (|fx| < 2^22). No float-to-int
     * conversion: with one, gcc 12 does not vectorise this for AVX2 or
     * AVX-512 targets (src/cpu/cpu_ops.c compiles its rows for both). */
    union { float f; int32_t i; } rounded;
    rounded.f = fx + 12582912.0f;
    int n = rounded.i - 0x4B400000;
    float r = xc - (float)n * 0.693359375f;
    r = r - (float)n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int n1 = n / 2;
    union { int32_t i; float f; } two_n1, two_n2;
    two_n1.i = (n1 + 127) << 23;
    two_n2.i = (n - n1 + 127) << 23;
    float y = p * two_n1.f * two_n2.f;
    y = x > 88.72283f ? INFINITY : y;
    y = x < -87.33654f ? 0.0f : y;
    return x != x ? x : y;
}

/* tanh(x): an odd polynomial for |x| < 0.625, else 1 - 2 / (e^{2|x|} + 1)
 * with the sign of x (both computed, one kept: no branch). */
static inline float kernel_tanhf(float x) {
    float a = fabsf(x), z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    float big = 1.0f - 2.0f / (kernel_expf(2.0f * kernel_minf(a, 10.0f)) + 1.0f);
    big = x < 0.0f ? -big : big;
    float y = a < 0.625f ? small : big;
    return x != x ? x : y; /* NaN stays NaN */
}
#endif

/* logistic sigmoid 1 / (1 + exp(-x)); exp(-x) saturates instead of
 * overflowing, so large |x| give 0 or 1 */
NMT_HD static inline float kernel_sigmoidf(float x) {
    return 1.0f / (1.0f + kernel_expf(-x));
}

#endif
