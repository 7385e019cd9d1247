/* kernel_common.h: what every shared kernel-math header needs: the NMT_HD
 * marker (empty for gcc, __host__ __device__ under nvcc) and a few small
 * float helpers (numerically stable sigmoid, min/max).
 *
 * The headers in src/kernels/ hold the per-element arithmetic of every
 * Backend op as `NMT_HD static inline` functions. src/cpu/ loops over them
 * and src/gpu/ calls them from CUDA kernels, so the CPU tests exercise the
 * exact arithmetic the GPU runs; only indexing, launch shapes and reductions
 * are backend-specific. Only float math from <math.h> that CUDA also
 * provides on the device (expf, logf, tanhf, sqrtf, fabsf) may be used. */
#ifndef NMT_KERNEL_COMMON_H
#define NMT_KERNEL_COMMON_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define NMT_HD __host__ __device__
#else
#define NMT_HD
#endif

/* logistic sigmoid 1 / (1 + exp(-x)), without overflow for large |x| */
NMT_HD static inline float kernel_sigmoidf(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

NMT_HD static inline float kernel_maxf(float a, float b) { return a > b ? a : b; }
NMT_HD static inline float kernel_minf(float a, float b) { return a < b ? a : b; }

#endif
