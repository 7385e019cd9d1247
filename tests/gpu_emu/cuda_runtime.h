/* cuda_runtime.h (emulator): the part of the CUDA runtime that nmt's CUDA
 * backend uses, emulated on the CPU, so that the .cu files of src/gpu/ compile with g++
 * (-x c++ -DNMT_CUDA_EMU, this folder first on the include path) and their
 * kernels run on a machine without a GPU (`make gpu-emu-check`, docs/gpu.md).
 *
 * Model: blocks run one after another (cooperative launches: below);
 * each CUDA thread of a block is a fiber (emu.cpp) on the calling OS
 * thread; __syncthreads and __syncthreads_or are cooperative barriers over
 * the block's live threads, warp shuffles over the warp's (threads that
 * returned count as arrived, as on sm_70+). The order of the blocks and of the threads between
 * barriers is 0, 1, ... or, with EMU_SCHEDULE=reverse or shuffle, another
 * (emu.cpp), so that a result that depends on it shows. __shared__ is a
 * static variable (shared by the block that is running). atomicAdd is a
 * plain add (one OS thread). Device memory is host memory; cudaMalloc fills
 * it with garbage so that missing zeroing shows, and fails with
 * cudaErrorMemoryAllocation past EMU_DEVICE_MEMORY bytes held at once
 * (default 64 GiB; cudaMemGetInfo reports against it, and the exit line the
 * most ever held); cudaFree of anything else aborts; copies abort on
 * overlapping ranges (undefined on a GPU).
 *
 * Cooperative launches (emu_launch_cooperative, what
 * cudaLaunchCooperativeKernel does on a GPU): every block of the grid is
 * live at once, a fiber per thread of the grid. The blocks run in rounds,
 * in the schedule's order (a new one each round with shuffle), each up to
 * the grid barrier (emu_grid_barrier, cooperative_groups'
 * this_grid().sync()) or its end; when every thread of the grid waits at
 * it, the barrier is released and the next round starts. Each block has
 * its own record of which threads returned (shuffles, __syncthreads_or)
 * and its own dynamic shared memory (emu_dynamic_shared: the launch's
 * bytes, 16-byte aligned, 0xff bytes at each launch, so that a read
 * before a write gives NaN). Static __shared__ variables are one object
 * for all the live blocks: a cooperative kernel must use dynamic shared
 * memory only. The emulated device has EMU_SM_COUNT multiprocessors
 * (default 8) like an sm_90 GPU's (H100, H200): 228 KiB of shared memory
 * (1 KiB reserved per block), 2048 threads and 32 blocks each; a block may
 * have 48 KiB of dynamic shared memory, or up to 227 KiB after
 * cudaFuncSetAttribute. A launch with more than its kernel's limit fails
 * with cudaErrorInvalidValue, one with more blocks than multiprocessors x
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor with
 * cudaErrorCooperativeLaunchTooLarge, both at the call with nothing
 * queued. A grid of more than 65536 threads aborts (the emulator's fibers).
 *
 * Streams: work given to a stream (a kernel launch, a memset, a copy, a
 * cuBLAS call on a handle bound to it; stream 0 and a handle without a
 * stream use the legacy default stream, one more stream object with no
 * implicit synchronisation, i.e. as if every other stream were
 * non-blocking) is queued on it, not run. It runs when the host waits:
 * cudaStreamSynchronize (until that stream's queue is empty),
 * cudaEventSynchronize (until the event's position has run),
 * cudaDeviceSynchronize, cudaFree and cudaFreeHost (the whole device), and
 * cudaStreamDestroy (that stream's work); at exit nothing runs. A copy
 * from pageable host memory reads it at the call (CUDA stages it before
 * cudaMemcpyAsync returns); one from pinned memory (cudaMallocHost) reads
 * it when it runs, and a copy to the host writes it when it runs (CUDA
 * finishes one to pageable memory before returning; stricter here), so a
 * pinned buffer refilled early, or a result read before the wait, shows.
 * cuBLAS's host alpha and beta are read at the call.
 * cudaEventRecord(e, s) remembers (s, items queued on s so far);
 * cudaStreamWaitEvent(s2, e) queues a marker on s2 that holds it until
 * that many items of s ran (an event never recorded: no marker; a later
 * record moves the event for later waits only).
 *
 * The scheduler: draining runs, item by item, the head of a stream that
 * can run (work, or a marker whose event position has run) until the
 * host's target is reached. Which stream goes first is EMU_STREAM_ORDER
 * (or emu_set_stream_order): "first" (default) the earliest-created
 * stream, i.e. the backend's main stream, so that other streams run as
 * late as their dependencies allow and a missing join (main reading a side
 * stream's result without waiting) reads stale data; "last" the
 * latest-created, so that other streams run as early as allowed and a
 * missing fork (a side stream reading main's result without waiting)
 * reads stale data. The parity test passes in both orders only when every
 * cross-stream dependency is an event wait. Nothing able to run while the
 * target is not reached aborts with "cuda emulator: deadlock".
 *
 * Stream capture and graphs: cudaStreamBeginCapture(s) makes s lane 0 of
 * a new graph; work given to a capturing stream is appended to its lane
 * (arguments by value, memory read when the graph runs), not queued. A
 * stream that waits on an event recorded in the capture joins it as a new
 * lane (the fork); cudaStreamEndCapture on lane 0 returns
 * cudaErrorStreamCaptureUnjoined (no graph) unless lane 0 waited, directly
 * or through other lanes, on an event recorded on each other lane after
 * its last work (the join); every lane leaves capture either way.
 * cudaGraphLaunch(exec, s) queues lane 0 on s and each other lane on a
 * stream of the exec (made at instantiate, so later-created than the
 * backend's), markers translated to those streams' positions: replays
 * follow the scheduler as plain work does. As on a GPU, a copy between
 * device and pageable host memory, a synchronisation (including cudaFree)
 * during capture, or a capturing stream waiting on an event recorded
 * outside the capture is an error that invalidates the capture. One
 * capture at a time.
 *
 * What it checks: indexing, launch shapes (at the launch), barriers and
 * shuffles, in-place aliasing, the memory slots, cross-stream ordering
 * (forks and joins, in and out of capture), the cuBLAS transposition (cuBLAS is emulated
 * with a column-major cblas_sgemm after cuBLAS's own argument checks);
 * grid barriers: a block that reads another's data without one, in some
 * block order, and, aborting, a grid barrier in a launch that is not
 * cooperative, a thread that returned while others wait at one, and a
 * block whose live threads wait some at __syncthreads and some at the grid
 * barrier (each would hang a GPU); a cooperative grid's size and shared
 * memory against the emulated device. What it cannot: races between
 * blocks or between threads between two barriers, overlap of two streams'
 * kernels (a queued item runs whole, so two cooperative kernels never
 * compete for the device), a real GPU's co-residency (its occupancy also
 * depends on the kernel's registers, which the emulator does not know: a
 * grid it accepts may be too large on the GPU; the persistent kernel's
 * caller must ask the GPU's own occupancy, as it does), the speed of a
 * grid barrier, device math's last bits, speed. It is no substitute for a
 * GPU run (docs/gpu-runs.md). */
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
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

/* CUDA's vector types used by the kernels (vector_types.h) */
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};

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
    cudaErrorInvalidDevice = 101,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorCapturedEvent = 907
} cudaError_t;
typedef enum {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice
} cudaMemcpyKind;
struct EmuStream;
typedef EmuStream *cudaStream_t; /* NULL: the legacy default stream */
#define cudaStreamNonBlocking 1
typedef enum {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;
struct EmuGraph;
struct EmuGraphExec;
typedef EmuGraph *cudaGraph_t;
typedef EmuGraphExec *cudaGraphExec_t;
struct EmuEvent;
typedef EmuEvent *cudaEvent_t;
#define cudaEventDisableTiming 2

cudaError_t cudaGetDeviceCount(int *n); /* 1, or 0 with EMU_NO_GPU=1 */
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t emu_malloc(void **p, size_t n);
template <class T>
cudaError_t cudaMalloc(T **p, size_t n) {
    return emu_malloc((void **)p, n);
}
cudaError_t cudaFree(void *p);
/* EMU_DEVICE_MEMORY (bytes, default 64 GiB) less what cudaMalloc holds */
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
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
typedef enum {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
} cudaStreamCaptureStatus;
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
/* flags are accepted and ignored (the emulator's graphs allocate nothing) */
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1ULL
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
/* a graph's nodes: one per piece of captured work, every one a kernel node
 * (the emulator captures no memory-allocation nodes); the node is its
 * 1-based index, as a pointer */
typedef enum {
    cudaGraphNodeTypeKernel = 0,
    cudaGraphNodeTypeMemAlloc = 10,
    cudaGraphNodeTypeMemFree = 11
} cudaGraphNodeType;
struct EmuGraphNode;
typedef EmuGraphNode *cudaGraphNode_t;
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num_nodes);
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType *type);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

/* The emulated device (header): EMU_SM_COUNT multiprocessors (read at each
 * call; default 8, anything but a whole number from 1 to 1024 aborts),
 * cooperative launches, 232448 bytes (227 KiB) of dynamic shared memory
 * per block with opt-in. Another attribute: cudaErrorInvalidValue; a
 * device but 0: cudaErrorInvalidDevice. */
typedef enum {
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrCooperativeLaunch = 95,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);

/* the most dynamic shared memory a launch of the kernel may take (0 ..
 * 232448 bytes; 49152 without the call), kept per kernel address */
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 } cudaFuncAttribute;
cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value);
template <class K>
cudaError_t cudaFuncSetAttribute(K kernel, cudaFuncAttribute attr, int value) {
    return emu_func_set_attribute(reinterpret_cast<const void *>(kernel), attr, value);
}

/* blocks of block_size threads with dynamic_smem bytes each that fit on
 * one emulated multiprocessor: min(2048 / block_size, 32, 233472 /
 * (dynamic_smem + 1024)), whatever the kernel (the emulator knows no
 * registers); block_size outside 1 .. 1024: cudaErrorInvalidValue */
cudaError_t emu_occupancy(int *num_blocks, int block_size, size_t dynamic_smem);
template <class K>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *num_blocks, K kernel,
                                                          int block_size, size_t dynamic_smem) {
    (void)kernel;
    return emu_occupancy(num_blocks, block_size, dynamic_smem);
}

/* ---- emulator only ---- */

/* queues work on s, or appends it to s's lane while s is captured */
void emu_enqueue(cudaStream_t s, std::function<void()> work);
/* Runs work (a queued kernel, copy or memset, when its stream runs it)
 * and, while the emulated CUPTI (cupti.h, emu_cupti.cpp) has that kind
 * enabled, leaves an activity record of it: a kernel's name (static
 * storage), a copy's cudaMemcpyKind and bytes, a memset's bytes. */
enum EmuActivity { EMU_ACTIVITY_KERNEL, EMU_ACTIVITY_COPY, EMU_ACTIVITY_MEMSET };
void emu_activity_run(EmuActivity what, const char *name, int copy_kind, size_t bytes,
                      const std::function<void()> &work);
/* aborts on a launch shape that CUDA refuses (at the call, not when it runs) */
void emu_check_launch(dim3 grid, dim3 block);
/* "first" or "last", as EMU_STREAM_ORDER (which it overrides); aborts on
 * anything else. For tests/gpu_emu/emu_selftest.cpp. */
void emu_set_stream_order(const char *order);
/* "forward", "reverse" or "shuffle", as EMU_SCHEDULE (which it overrides;
 * EMU_SEED still seeds the shuffle); aborts on anything else. For
 * tests/gpu_emu/emu_selftest.cpp. */
void emu_set_schedule(const char *schedule);

/* ---- device side ---- */

void emu_barrier(void);   /* the running thread waits for the block */
void emu_warp_barrier(void); /* the running thread waits for its warp */
int emu_flat_tid(void);   /* x + y * blockDim.x + ... of the running thread */
extern double emu_slot[1024]; /* one exchange slot per thread of the block */
/* the running block's: 1 while the thread has not returned (a cooperative
 * launch switches it per block) */
extern int *emu_live;

/* the running thread waits until every thread of the grid has reached it
 * (cooperative_groups::this_grid().sync()); aborts in a launch that is not
 * cooperative */
void emu_grid_barrier(void);
/* the running block's dynamic shared memory (header: cooperative launches
 * only); aborts in a plain launch or when the launch asked for none */
void *emu_dynamic_shared(void);

inline void __syncthreads(void) { emu_barrier(); }

/* a product rounded on its own, never fused into a multiply-add (nvcc
 * fuses a * b + c unless told; so may g++ in the emulator's build with
 * fusing, $(GPU_EMU_FMA) of mk/gpu.mk, once this is inlined: hence the
 * store to a volatile, which it cannot fuse across) */
inline float __fmul_rn(float a, float b) {
    volatile float p = a * b;
    return p;
}

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

/* The lanes of the running thread's warp named by mask must all call it,
 * and none of them may have returned (undefined on a GPU: aborts here). */
void emu_check_warp_mask(unsigned mask, const char *what);

/* lane src's v, for every calling lane (mask: as __shfl_xor_sync) */
template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane) {
    emu_check_warp_mask(mask, "__shfl_sync");
    int t = emu_flat_tid();
    memcpy(&emu_slot[t], &v, sizeof v);
    emu_warp_barrier();
    T r;
    memcpy(&r, &emu_slot[(t & ~31) | (src_lane & 31)], sizeof r);
    emu_warp_barrier();
    return r;
}

/* bit i set when lane i of the warp (in mask) passed a non-zero p */
inline unsigned __ballot_sync(unsigned mask, int p) {
    emu_check_warp_mask(mask, "__ballot_sync");
    int t = emu_flat_tid(), w = t & ~31;
    emu_slot[t] = p != 0;
    emu_warp_barrier();
    unsigned r = 0;
    for (int i = 0; i < 32; i++)
        if ((mask >> i & 1u) && emu_slot[w + i] != 0.0) r |= 1u << i;
    emu_warp_barrier();
    return r;
}

/* 1 + the index of the lowest set bit; 0 for 0 */
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }

inline float atomicAdd(float *p, float v) {
    float old = *p;
    *p = old + v;
    return old;
}

/* runs body once per thread of every block of the grid */
void emu_run(dim3 grid, dim3 block, std::function<void()> body);
/* the same with every block live at once, grid barriers and dynamic_smem
 * bytes of dynamic shared memory per block (header) */
void emu_run_cooperative(dim3 grid, dim3 block, size_t dynamic_smem, std::function<void()> body);

/* EMU_FAIL_AFTER_LAUNCHES=N: launches after the first N fail (not queued),
 * and from then on, as after a fault on a GPU, every later launch, copy and
 * synchronisation reports cudaErrorLaunchFailure, which cannot be cleared:
 * the test of what nmt does when the device fails mid-run. */
bool emu_launch_fails(void);

/* kernel<<<grid, block, 0, s>>>(args...); `name` (static storage) names
 * its activity records (cupti.h) */
template <class K, class... A>
void emu_launch_named(const char *name, cudaStream_t s, K kernel, dim3 grid, dim3 block, A... args) {
    emu_check_launch(grid, block);
    if (emu_launch_fails()) return;
    std::function<void()> body = [=]() { kernel(args...); };
    emu_enqueue(s, [=]() { emu_activity_run(EMU_ACTIVITY_KERNEL, name, 0, 0, [&]() { emu_run(grid, block, body); }); });
}
template <class K, class... A>
void emu_launch(cudaStream_t s, K kernel, dim3 grid, dim3 block, A... args) {
    emu_launch_named("emu_kernel", s, kernel, grid, block, args...);
}

/* What cudaLaunchCooperativeKernel does on a GPU (header): at the call,
 * without queuing anything, cudaErrorInvalidValue for more dynamic shared
 * memory than the kernel's limit, cudaErrorCooperativeLaunchTooLarge for
 * more blocks than the device holds at once, the sticky error of
 * EMU_FAIL_AFTER_LAUNCHES; a bad shape aborts, as for emu_launch. Else
 * the grid's run is queued on s (or captured) and cudaSuccess returned. */
cudaError_t emu_check_cooperative(const void *kernel, dim3 grid, dim3 block, size_t dynamic_smem);

template <class K, class... A>
cudaError_t emu_launch_cooperative_named(const char *name, cudaStream_t s, K kernel, dim3 grid,
                                         dim3 block, size_t dynamic_smem, A... args) {
    cudaError_t e =
        emu_check_cooperative(reinterpret_cast<const void *>(kernel), grid, block, dynamic_smem);
    if (e != cudaSuccess) return e;
    std::function<void()> body = [=]() { kernel(args...); };
    emu_enqueue(s, [=]() {
        emu_activity_run(EMU_ACTIVITY_KERNEL, name, 0, 0,
                         [&]() { emu_run_cooperative(grid, block, dynamic_smem, body); });
    });
    return cudaSuccess;
}
template <class K, class... A>
cudaError_t emu_launch_cooperative(cudaStream_t s, K kernel, dim3 grid, dim3 block,
                                   size_t dynamic_smem, A... args) {
    return emu_launch_cooperative_named("emu_kernel", s, kernel, grid, block, dynamic_smem, args...);
}

#endif
