/* emu.cpp (emulator): the CPU emulation of the CUDA runtime and cuBLAS
 * declared in cuda_runtime.h and cublas_v2.h beside this file (the model is
 * described there), plus gpu_info for the emulated build. Built and linked
 * by `make gpu-emu-check` (mk/gpu.mk) with the .cu files of src/gpu/
 * compiled by g++. */
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <ucontext.h>
#include <utility>
#include <vector>

#include "cublas_v2.h"

extern "C" {
#include "gpu/gpu_info.h"
}

dim3 threadIdx, blockIdx, blockDim, gridDim;
double emu_slot[1024];
int emu_live[1024];

static long emu_launches, emu_threads;

/* ---- fibers: one per CUDA thread of the running block ---- */

/* a fiber runs, waits at a block barrier (__syncthreads), waits at a warp
 * barrier (a shuffle: only the 32 threads of its warp), or has returned */
enum { EMU_RUN, EMU_WAIT, EMU_WAIT_WARP, EMU_DONE };

typedef struct {
    ucontext_t ctx;
    int state;
} EmuFiber;

static const size_t EMU_STACK = 64 * 1024;
static ucontext_t emu_sched;
static EmuFiber emu_fiber[1024];
static char *emu_stacks;
static int emu_cur;
static std::function<void()> *emu_body;

int emu_flat_tid(void) { return emu_cur; }

static void emu_entry(void) {
    (*emu_body)();
    emu_fiber[emu_cur].state = EMU_DONE;
    emu_live[emu_cur] = 0;
    swapcontext(&emu_fiber[emu_cur].ctx, &emu_sched);
}

void emu_barrier(void) {
    emu_fiber[emu_cur].state = EMU_WAIT;
    swapcontext(&emu_fiber[emu_cur].ctx, &emu_sched);
}

void emu_warp_barrier(void) {
    emu_fiber[emu_cur].state = EMU_WAIT_WARP;
    swapcontext(&emu_fiber[emu_cur].ctx, &emu_sched);
}

/* The order in which blocks run, in which the warps of a block run up to
 * the next block barrier, and in which the threads of a warp run between
 * two barriers (EMU_SCHEDULE): "forward" (default: 0, 1, ...), "reverse",
 * or "shuffle" (a new permutation every time, seeded by EMU_SEED). CUDA
 * promises no order between blocks, nor between threads that do not
 * synchronise: a kernel whose results change with the order has a race
 * that the default order may hide. Atomic sums change in their
 * last bits with the order, as on a GPU. */
enum { EMU_FORWARD, EMU_REVERSE, EMU_SHUFFLE };
static int emu_schedule = -1;
static uint64_t emu_rng = 0x9e3779b97f4a7c15ULL;

static void emu_schedule_init(void) {
    const char *s = getenv("EMU_SCHEDULE"), *seed = getenv("EMU_SEED");
    emu_schedule = EMU_FORWARD;
    if (s && !strcmp(s, "reverse")) emu_schedule = EMU_REVERSE;
    else if (s && !strcmp(s, "shuffle")) emu_schedule = EMU_SHUFFLE;
    else if (s && *s && strcmp(s, "forward")) {
        fprintf(stderr, "cuda emulator: EMU_SCHEDULE=%s: want forward, reverse or shuffle\n", s);
        abort();
    }
    if (seed && *seed) emu_rng ^= strtoull(seed, NULL, 10) * 0xbf58476d1ce4e5b9ULL;
}

static uint64_t emu_next(void) {
    emu_rng ^= emu_rng << 13;
    emu_rng ^= emu_rng >> 7;
    emu_rng ^= emu_rng << 17;
    return emu_rng;
}

/* order[0..n) in the schedule's order */
static void emu_order(std::vector<unsigned> &order, unsigned n) {
    order.resize(n);
    for (unsigned i = 0; i < n; i++) order[i] = emu_schedule == EMU_REVERSE ? n - 1 - i : i;
    if (emu_schedule == EMU_SHUFFLE)
        for (unsigned i = n; i > 1; i--) std::swap(order[i - 1], order[emu_next() % i]);
}

/* Runs the threads of warp [w, end) that can run, in the schedule's order,
 * until each waits at __syncthreads or has returned: a warp whose live
 * threads all wait at a shuffle is released and runs on (threads that
 * returned count as arrived). One warp thus runs ahead of the others up to
 * the next block barrier, which is allowed on a GPU and exposes a warp
 * that reads shared memory another warp may already have overwritten. */
static void emu_run_warp(int w, int end) {
    std::vector<unsigned> order;
    for (;;) {
        emu_order(order, (unsigned)(end - w));
        for (unsigned i : order) {
            int t = w + (int)i;
            if (emu_fiber[t].state != EMU_RUN) continue;
            emu_cur = t;
            threadIdx = dim3(t % blockDim.x, (t / blockDim.x) % blockDim.y,
                             t / (blockDim.x * blockDim.y));
            swapcontext(&emu_sched, &emu_fiber[t].ctx);
        }
        int waiting = 0, live = 0;
        for (int t = w; t < end; t++) {
            if (emu_fiber[t].state == EMU_DONE) continue;
            live++;
            waiting += emu_fiber[t].state == EMU_WAIT_WARP;
        }
        if (!live || waiting != live) return;
        for (int t = w; t < end; t++)
            if (emu_fiber[t].state == EMU_WAIT_WARP) emu_fiber[t].state = EMU_RUN;
    }
}

/* Each block: start every thread, run each until it waits or returns; when
 * none can run, release the waiting ones; until all have returned. */
void emu_run(dim3 grid, dim3 block, std::function<void()> body) {
    int n = (int)(block.x * block.y * block.z);
    if (n < 1 || n > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1) {
        fprintf(stderr, "cuda emulator: bad launch (%u %u %u) x (%u %u %u)\n", grid.x, grid.y,
                grid.z, block.x, block.y, block.z);
        abort();
    }
    if (!emu_stacks && !(emu_stacks = (char *)malloc(1024 * EMU_STACK))) abort();
    if (emu_schedule < 0) emu_schedule_init();
    blockDim = block;
    gridDim = grid;
    emu_body = &body;
    emu_launches++;
    std::vector<unsigned> blocks, warps;
    emu_order(blocks, grid.x * grid.y * grid.z);
    for (unsigned flat : blocks) {
        unsigned bx = flat % grid.x, by = (flat / grid.x) % grid.y, bz = flat / (grid.x * grid.y);
        blockIdx = dim3(bx, by, bz);
        for (int t = 0; t < n; t++) {
            getcontext(&emu_fiber[t].ctx);
            emu_fiber[t].ctx.uc_stack.ss_sp = emu_stacks + (size_t)t * EMU_STACK;
            emu_fiber[t].ctx.uc_stack.ss_size = EMU_STACK;
            emu_fiber[t].ctx.uc_link = NULL;
            makecontext(&emu_fiber[t].ctx, emu_entry, 0);
            emu_fiber[t].state = EMU_RUN;
            emu_live[t] = 1;
        }
        emu_threads += n;
        int n_warps = (n + 31) / 32;
        for (int done = 0; done < n;) {
            /* each warp in turn, up to the block barrier (or its end) */
            emu_order(warps, (unsigned)n_warps);
            for (unsigned w : warps) emu_run_warp(32 * (int)w, 32 * (int)w + 32 < n ? 32 * (int)w + 32 : n);
            done = 0;
            for (int t = 0; t < n; t++) {
                if (emu_fiber[t].state == EMU_WAIT_WARP) {
                    fprintf(stderr, "cuda emulator: a shuffle in a warp whose other threads wait "
                                    "at __syncthreads (divergent warp)\n");
                    abort();
                }
                if (emu_fiber[t].state == EMU_DONE) done++;
                else emu_fiber[t].state = EMU_RUN; /* barrier released */
            }
        }
    }
}

/* ---- stream capture and graphs ---- */

struct EmuGraph {
    std::vector<std::function<void()>> work;
};
static EmuGraph *emu_capturing;  /* the graph being captured, or NULL */
static bool emu_capture_broken;  /* an illegal call happened during capture */
static std::vector<std::pair<const char *, size_t>> emu_pinned; /* cudaMallocHost blocks */

bool emu_capture(std::function<void()> work) {
    if (!emu_capturing) return false;
    emu_capturing->work.push_back(std::move(work));
    return true;
}

/* a call that is illegal during capture: it breaks the capture */
static cudaError_t emu_capture_unsupported(const char *what) {
    fprintf(stderr, "cuda emulator: %s during stream capture\n", what);
    emu_capture_broken = true;
    return cudaErrorStreamCaptureUnsupported;
}

static bool emu_is_pinned(const void *p, size_t n) {
    const char *a = (const char *)p;
    for (auto &b : emu_pinned)
        if (a >= b.first && a + n <= b.first + b.second) return true;
    return false;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
    if (emu_capturing) return cudaErrorInvalidValue;
    emu_capturing = new EmuGraph;
    emu_capture_broken = false;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph) {
    if (!emu_capturing) return cudaErrorInvalidValue;
    EmuGraph *g = emu_capturing;
    emu_capturing = NULL;
    if (emu_capture_broken) {
        delete g;
        *graph = NULL;
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
    if (!graph) return cudaErrorInvalidValue;
    *exec = new EmuGraph(*graph);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
    if (emu_capturing) return emu_capture_unsupported("cudaGraphLaunch");
    if (!exec) return cudaErrorInvalidValue;
    for (auto &w : exec->work) w();
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    delete graph;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) {
    *e = new int(0);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    return emu_capturing ? emu_capture_unsupported("cudaEventSynchronize") : cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}

/* ---- runtime ---- */

cudaError_t cudaGetDeviceCount(int *n) {
    const char *no = getenv("EMU_NO_GPU");
    *n = no && *no && strcmp(no, "0") ? 0 : 1;
    return *n ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    static int stream;
    *s = &stream;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    return emu_capturing ? emu_capture_unsupported("cudaStreamSynchronize") : cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

cudaError_t emu_malloc(void **p, size_t n) {
    *p = n <= ((size_t)1 << 36) ? malloc(n) : NULL;
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* NaN floats, -1 ints: the backend must zero */
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    free(p);
    return cudaSuccess;
}
cudaError_t emu_malloc_host(void **p, size_t n) {
    cudaError_t e = emu_malloc(p, n);
    if (e == cudaSuccess) emu_pinned.push_back({(const char *)*p, n});
    return e;
}
cudaError_t cudaFreeHost(void *p) {
    for (size_t i = 0; i < emu_pinned.size(); i++)
        if (emu_pinned[i].first == p) {
            emu_pinned.erase(emu_pinned.begin() + (long)i);
            break;
        }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) {
    if (emu_capture([=]() { memset(p, v, n); })) return cudaSuccess;
    memset(p, v, n);
    return cudaSuccess;
}

static void emu_no_overlap(const char *what, const void *d, size_t dn, const void *s, size_t sn) {
    const char *a = (const char *)d, *b = (const char *)s;
    if (dn && sn && a < b + sn && b < a + dn) {
        fprintf(stderr, "cuda emulator: %s with overlapping ranges (undefined on a GPU)\n", what);
        abort();
    }
}

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind kind,
                            cudaStream_t) {
    emu_no_overlap("cudaMemcpyAsync", d, n, s, n);
    if (emu_capturing) {
        /* CUDA cannot capture a copy to or from pageable host memory */
        if ((kind == cudaMemcpyHostToDevice && !emu_is_pinned(s, n)) ||
            (kind == cudaMemcpyDeviceToHost && !emu_is_pinned(d, n)))
            return emu_capture_unsupported("a copy with pageable host memory");
        emu_capture([=]() { memcpy(d, s, n); });
        return cudaSuccess;
    }
    memcpy(d, s, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind, cudaStream_t) {
    if (dpitch < width || spitch < width) return cudaErrorInvalidPitchValue;
    if (height)
        emu_no_overlap("cudaMemcpy2DAsync", d, (height - 1) * dpitch + width, s,
                       (height - 1) * spitch + width);
    auto work = [=]() {
        for (size_t r = 0; r < height; r++)
            memcpy((char *)d + r * dpitch, (const char *)s + r * spitch, width);
    };
    if (!emu_capture(work)) work();
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated CUDA error" : "no error"; }
const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorEmulated" : "cudaSuccess"; }

/* ---- cuBLAS ---- */

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    static int handle;
    *h = &handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s) {
    return s ? "an invalid value was used as an argument (emulated)" : "success";
}

static int emu_max1(int a) { return a > 1 ? a : 1; }

cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    if (m < 0 || n < 0 || k < 0 || lda < emu_max1(ta == CUBLAS_OP_N ? m : k) ||
        ldb < emu_max1(tb == CUBLAS_OP_N ? k : n) || ldc < emu_max1(m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    /* host scalars are read at the call, also when it is captured */
    float al = *alpha, be = *beta;
    auto work = [=]() {
        cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                    tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, al, A, lda, B, ldb,
                    be, C, ldc);
    };
    if (!emu_capture(work)) work();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb,
                                         long long stride_b, const float *beta, float *C,
                                         int ldc, long long stride_c, int count) {
    if (count < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < count; i++) {
        cublasStatus_t s = cublasSgemm(h, ta, tb, m, n, k, alpha, A + i * stride_a, lda,
                                       B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- gpu_info (gpu_info.cu is not built here) ---- */

extern "C" int gpu_info_device_count(void) { return 1; }
extern "C" void gpu_info_describe(char *buf, size_t size) {
    snprintf(buf, size, "CPU emulator (tests/gpu_emu), no GPU");
}

__attribute__((destructor)) static void emu_report(void) {
    fflush(stdout); /* keep the test's own lines whole */
    if (emu_launches)
        fprintf(stderr, "cuda emulator: %ld kernel launches, %ld threads\n", emu_launches,
                emu_threads);
}
