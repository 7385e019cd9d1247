/* cuda_runtime.h (emulator): the part of the CUDA runtime that nmt's CUDA
 * backend uses, emulated on the CPU, so that the .cu files of src/gpu/ compile with g++
 * (-x c++ -DNMT_CUDA_EMU, this folder first on the include path) and their
 * kernels run on a machine without a GPU (`make gpu-emu-check`, docs/gpu.md).
 *
 * Model: blocks run one after another; each CUDA thread of a block is a
 * ucontext fiber on the calling OS thread; __syncthreads and
 * __syncthreads_or are cooperative barriers over the block's live threads,
 * warp shuffles over the warp's (threads that returned count as arrived,
 * as on sm_70+). The order of the blocks and of the threads between
 * barriers is 0, 1, ... or, with EMU_SCHEDULE=reverse or shuffle, another
 * (emu.cpp), so that a result that depends on it shows. __shared__ is a
 * static variable (shared by the block that is running). atomicAdd is a
 * plain add (one OS thread). Device memory is host memory; cudaMalloc fills
 * it with garbage so that missing zeroing shows; copies abort on overlapping
 * ranges (undefined on a GPU).
 *
 * Stream capture and graphs: between cudaStreamBeginCapture and
 * cudaStreamEndCapture, kernel launches, copies, memsets and cuBLAS calls
 * are recorded (arguments by value, memory read when the graph runs), not
 * run; cudaGraphLaunch runs them in order. As on a GPU, a copy between
 * device and pageable host memory (not from cudaMallocHost) or a
 * synchronisation during capture is an error that invalidates the capture.
 *
 * What it checks: indexing, launch shapes, barriers and shuffles, in-place
 * aliasing, the memory slots, the cuBLAS transposition (cuBLAS is emulated
 * with a column-major cblas_sgemm after cuBLAS's own argument checks). What
 * it cannot: races between blocks or between threads between two barriers,
 * device math's last bits, speed. It is no substitute for a GPU run
 * (docs/gpu-runs.md). */
#ifndef NMT_GPU_EMU_CUDA_RUNTIME_H
#define NMT_GPU_EMU_CUDA_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <math.h>

using std::isnan;

#define __global__
#define __device__
#define __host__
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern dim3 threadIdx, blockIdx, blockDim, gridDim;

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorNoDevice = 100,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901
} cudaError_t;
typedef enum {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice
} cudaMemcpyKind;
typedef void *cudaStream_t;
#define cudaStreamNonBlocking 1
typedef enum {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;
struct EmuGraph;
typedef EmuGraph *cudaGraph_t;
typedef EmuGraph *cudaGraphExec_t;
typedef int *cudaEvent_t;
#define cudaEventDisableTiming 2

cudaError_t cudaGetDeviceCount(int *n); /* 1, or 0 with EMU_NO_GPU=1 */
cudaError_t cudaSetDevice(int device);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t emu_malloc(void **p, size_t n);
template <class T>
cudaError_t cudaMalloc(T **p, size_t n) {
    return emu_malloc((void **)p, n);
}
cudaError_t cudaFree(void *p);
cudaError_t emu_malloc_host(void **p, size_t n); /* remembered as pinned */
template <class T>
cudaError_t cudaMallocHost(T **p, size_t n) {
    return emu_malloc_host((void **)p, n);
}
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s);
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaGetLastError(void);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
/* during capture: adds the work to the graph and returns true */
bool emu_capture(std::function<void()> work);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

/* ---- device side ---- */

void emu_barrier(void);   /* the running thread waits for the block */
void emu_warp_barrier(void); /* the running thread waits for its warp */
int emu_flat_tid(void);   /* x + y * blockDim.x + ... of the running thread */
extern double emu_slot[1024]; /* one exchange slot per thread of the block */
extern int emu_live[1024];    /* 1 while the thread has not returned */

inline void __syncthreads(void) { emu_barrier(); }

inline int __syncthreads_or(int p) {
    int t = emu_flat_tid();
    emu_slot[t] = p;
    emu_barrier();
    int r = 0, n = (int)(blockDim.x * blockDim.y * blockDim.z);
    for (int i = 0; i < n; i++)
        if (emu_live[i]) r |= emu_slot[i] != 0.0;
    emu_barrier();
    return r;
}

/* every live thread of the warp must call it (nmt's kernels shuffle in
 * uniform code only); it waits for the warp, not the block, as on a GPU */
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
    (void)mask;
    int t = emu_flat_tid();
    memcpy(&emu_slot[t], &v, sizeof v);
    emu_warp_barrier();
    T r;
    memcpy(&r, &emu_slot[(t & ~31) | ((t & 31) ^ lane_mask)], sizeof r);
    emu_warp_barrier();
    return r;
}

inline float atomicAdd(float *p, float v) {
    float old = *p;
    *p = old + v;
    return old;
}

/* runs body once per thread of every block of the grid */
void emu_run(dim3 grid, dim3 block, std::function<void()> body);

template <class K, class... A>
void emu_launch(cudaStream_t, K kernel, dim3 grid, dim3 block, A... args) {
    std::function<void()> body = [=]() { kernel(args...); };
    if (emu_capture([=]() { emu_run(grid, block, body); })) return;
    emu_run(grid, block, body);
}

#endif
