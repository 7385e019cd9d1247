/* gpu_internal.cuh: what the files of the CUDA backend share (CUDA C++ only,
 * never included from C): the context behind a CUDA Backend, the checks
 * that record the first CUDA/cuBLAS error and turn later slots into no-ops,
 * the ops through which all work reaches the stream (GPU_LAUNCH, GpuVar),
 * block reductions, and the functions behind the slots (gpu_backend.cu
 * fills the table and owns memory; gpu_gemm.cu the dense algebra;
 * gpu_ops.cu the elementwise, LSTM, embedding and optimizer kernels;
 * gpu_rows.cu the row-wise kernels with reductions: attention, guided
 * alignment, loss, sum of squares, top-k; gpu_layer_norm.cu layer
 * normalisation; gpu_graph.cu the op recorder and graph cache of
 * NMT_CUDA_GRAPHS). Contracts of the slots: backend.h. */
#ifndef NMT_GPU_INTERNAL_CUH
#define NMT_GPU_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

#include <utility>

extern "C" {
#include "backend.h"
#include "common.h"
}
#include "gpu/gpu_backend.h"

/* Blocks of the first pass of sum_squares (fixed: the result does not
 * depend on n's split, so it is the same on every run). */
#define GPU_SUMSQ_BLOCKS 512
/* threads of a one-block-per-row kernel (a multiple of 32) */
#define GPU_ROW_THREADS 256
/* threads of an elementwise kernel, and the most blocks of a grid-stride one */
#define GPU_THREADS 256
#define GPU_MAX_BLOCKS 65535
/* kinds of slow host call told apart (GpuContext.slow_kinds) */
#define GPU_SLOW_KINDS 32

/* The cuBLAS entry points nmt calls, loaded at run time (gpu_cublas.cu):
 * nmt does not link libcublas, so that a CUDA build starts without it. */
typedef struct {
    cublasStatus_t (*create)(cublasHandle_t *handle);
    cublasStatus_t (*destroy)(cublasHandle_t handle);
    cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
    cublasStatus_t (*set_workspace)(cublasHandle_t handle, void *workspace, size_t bytes);
    cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode);
    const char *(*status_string)(cublasStatus_t status);
    cublasStatus_t (*sgemm)(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                            int m, int n, int k, const float *alpha, const float *A, int lda,
                            const float *B, int ldb, const float *beta, float *C, int ldc);
    cublasStatus_t (*sgemm_strided_batched)(cublasHandle_t handle, cublasOperation_t ta,
                                            cublasOperation_t tb, int m, int n, int k,
                                            const float *alpha, const float *A, int lda,
                                            long long stride_a, const float *B, int ldb,
                                            long long stride_b, const float *beta, float *C,
                                            int ldc, long long stride_c, int count);
} GpuBlas;

/* The table, loaded on the first call (later calls return it at once);
 * NULL and the reason in err (err_size bytes, may be NULL) when the
 * library or one of its functions cannot be found. Not thread-safe: the
 * backend is created on one thread. */
const GpuBlas *gpu_blas_load(char *err, size_t err_size);

#ifndef NMT_CUDA_EMU
/* A library's entry points by name, each into its slot of a table. */
struct GpuSymbol {
    const char *name;
    void **slot;
};
/* dlopen's lib_name (kept loaded for the life of the process) and fills
 * every slot of symbols[0..n); false and the reason in err when the
 * library cannot be loaded (`what` names it for the message, e.g. "the
 * CUDA toolkit's cuBLAS") or a symbol is missing. gpu_cublas.cu. */
bool gpu_dlopen_symbols(const char *lib_name, const char *what, const GpuSymbol *symbols, size_t n,
                        char *err, size_t err_size);
#endif

/* Values of one kernel call that change from call to call while its other
 * arguments stay the same (a dropout seed, the loss scale 1/tokens, Adam's
 * rate and bias corrections, a clipping factor). A kernel takes them as a
 * GpuVar: by value (ptr NULL) when ops go to the stream at once, or from a
 * slot of device memory that the segment fills before it runs, so that a
 * captured CUDA graph can run again with new values (gpu_graph.cu). */
union GpuVarVals {
    float f[4];
    uint64_t u[2];
};
struct GpuVar {
    const GpuVarVals *ptr; /* NULL: use v */
    GpuVarVals v;
};
__device__ inline GpuVarVals gpu_var_read(const GpuVar &a) { return a.ptr ? *a.ptr : a.v; }

struct GpuGraphs; /* the recorder and graph cache (CUDA graphs, on unless NMT_CUDA_GRAPHS=0: gpu_graph.cu) */

typedef struct GpuContext {
    int device;
    cudaStream_t stream;  /* lane 0's: all work but lane 1's */
    const GpuBlas *blas;  /* cuBLAS's functions (gpu_blas_load) */
    cublasHandle_t cublas;
    void *cublas_ws;      /* cuBLAS workspace, taken at setup */
    /* lanes (backend.h; gpu_lanes.cu): lane 1's stream, cuBLAS handle and
     * workspace, and the events of a fork and a join; unset (side NULL)
     * with NMT_CUDA_LANES=0, where lane 1's work goes to lane 0 */
    cudaStream_t side;
    cublasHandle_t cublas_side;
    void *cublas_ws_side;
    cudaEvent_t forked, joined;
    bool in_fork;         /* the slots are between fork and join */
    int slot_lane;        /* the lane the slots queue on (0 or 1) */
    int exec_lane;        /* the lane of the op being run (0 or 1) */
    double *partials;     /* (GPU_SUMSQ_BLOCKS + 1) device doubles: sum_squares */
    double *host_result;  /* 1 pinned host double: sum_squares' answer */
    bool sync_debug;      /* NMT_SYNC_DEBUG=1 */
    bool tf32;            /* NMT_TF32=1 */
    bool own_gemm;        /* NMT_CUDA_GEMM=own: nmt's GEMM kernel, cuBLAS never loaded (blas NULL) */
    bool failed;          /* an error was recorded: every slot is a no-op */
    char error[512];      /* the first error */
    CudaCounters counters; /* cuda_backend_counters */
    /* the persistent LSTM recurrence (gpu_persist.cu): whether the slots
     * use it (NMT_CUDA_PERSISTENT=1, or cuda_backend_set_persistent),
     * whether the device can (cooperative launch), and the device's
     * multiprocessors and opt-in shared memory per block */
    bool persistent, persist_ready;
    int sm_count, smem_optin;
    struct GpuGraphs *graphs; /* graphs on: ops are recorded, else NULL (run at once) */
    /* download_start/download_finish (gpu_backend.cu): a pinned staging slot
     * and an event per pending download, used as a ring from pending_head */
    char *download_pinned; /* BACKEND_MAX_PENDING_DOWNLOADS slots of GPU_DOWNLOAD_SLOT bytes */
    cudaEvent_t download_done[BACKEND_MAX_PENDING_DOWNLOADS];
    struct {
        void *host_dst;
        size_t bytes;
        bool queued; /* copied into the staging slot by queued work (else done, or failed) */
    } pending[BACKEND_MAX_PENDING_DOWNLOADS];
    int pending_head, n_pending;
    /* host time (CudaCounters.host_call_seconds and what follows it):
     * NMT_CUDA_SLOW_CALL_MS in seconds, and the slow calls by kind (`what`
     * literals; the last entry takes every kind beyond the table's size) */
    double slow_call_s;
    struct {
        const char *what;
        long long n;
        double s;
    } slow_kinds[GPU_SLOW_KINDS];
    int n_slow_kinds;
    /* NMT_CUDA_PROFILE=1 (gpu_profile.cu): this backend holds the device
     * profile open; its report shows profile_rows rows */
    bool profiling;
    int profile_rows;
} GpuContext;

static inline GpuContext *gpu_ctx(Backend *be) { return (GpuContext *)be->ctx; }

/* gpu_profile.cu: `name` (a GPU_LAUNCH's kernel name, static storage) is
 * one of nmt's own kernels, for the profile's report; called at each
 * launch while the backend profiles */
void gpu_profile_note_kernel(const char *name);

/* the stream, and the cuBLAS handle, of the op being run */
static inline cudaStream_t gpu_exec_stream(GpuContext *c) {
    return c->exec_lane && c->side ? c->side : c->stream;
}
static inline cublasHandle_t gpu_exec_blas(GpuContext *c) {
    return c->exec_lane && c->side ? c->cublas_side : c->cublas;
}

/* Host time (CudaCounters.host_call_seconds, wait_seconds, slow calls):
 * gpu_clock is a monotonic clock in seconds; a host call that put work on
 * the stream and began at t0 ends with gpu_host_call_timed (`what` names
 * it, a literal), a wait for the device with gpu_wait_timed. */
double gpu_clock(void);
void gpu_host_call_timed(GpuContext *c, const char *what, double t0);
void gpu_wait_timed(GpuContext *c, double t0);

/* An on/off switch of the environment (NMT_TF32=1, NMT_CUDA_LANES=0): `unset`
 * when the variable is unset or empty, false when it is "0", else true. */
bool gpu_env_flag(const char *name, bool unset);

/* Records the first error (later ones are dropped) and sets failed. */
void gpu_record(GpuContext *c, const char *what, const char *detail, const char *file, int line);
/* Each returns true when the call succeeded; else records and returns false.
 * With sync_debug, gpu_check_cuda_sync and gpu_check_launch also synchronise
 * the stream and check what the queued work did. */
bool gpu_check_cuda(GpuContext *c, cudaError_t e, const char *what, const char *file, int line);
bool gpu_check_cuda_sync(GpuContext *c, cudaError_t e, const char *what, const char *file,
                         int line);
bool gpu_check_cublas(GpuContext *c, cublasStatus_t s, const char *what, const char *file,
                      int line);
bool gpu_check_launch(GpuContext *c, const char *kernel, const char *file, int line);

#define GPU_CUDA(c, call) gpu_check_cuda((c), (call), #call, __FILE__, __LINE__)
/* an asynchronous call (copy, memset) that NMT_SYNC_DEBUG also waits for */
#define GPU_CUDA_ASYNC(c, call) gpu_check_cuda_sync((c), (call), #call, __FILE__, __LINE__)
#define GPU_CUBLAS(c, call) gpu_check_cublas((c), (call), #call, __FILE__, __LINE__)

/* call()'s result, the call timed as a host call named `what` (a literal:
 * gpu_host_call_timed) */
template <class F>
inline auto gpu_timed_call(GpuContext *c, const char *what, F call) -> decltype(call()) {
    double t0 = gpu_clock();
    auto r = call();
    gpu_host_call_timed(c, what, t0);
    return r;
}
/* A call that puts work on the stream, named `what` in the host time and
 * in an error: timed, then checked as GPU_CUDA_ASYNC (a CUDA call) or
 * GPU_CUBLAS (a cuBLAS call) check theirs */
#define GPU_CUDA_TIMED(c, what, call) \
    gpu_check_cuda_sync((c), gpu_timed_call((c), (what), [&] { return (call); }), (what), __FILE__, __LINE__)
#define GPU_CUBLAS_TIMED(c, what, call) \
    gpu_check_cublas((c), gpu_timed_call((c), (what), [&] { return (call); }), (what), __FILE__, __LINE__)

/* kernel<<<grid, block, 0, stream>>>(args...); `name` (static storage)
 * names the emulator's activity records (a GPU's come from the kernel's
 * symbol). NMT_CUDA_EMU: the CPU
 * emulator of tests/gpu_emu/ runs the kernel instead (`make
 * gpu-emu-check`, docs/gpu.md). `kernel` may be a function pointer: nvcc
 * lowers <<<>>> to a push of the launch configuration and a call of the
 * kernel's host stub (through the pointer), and the stub launches. */
#ifdef NMT_CUDA_EMU
#define GPU_KERNEL_CALL(c, name, kernel, grid, block, ...) \
    emu_launch_named(name, gpu_exec_stream(c), kernel, dim3(grid), dim3(block), __VA_ARGS__)
#else
#define GPU_KERNEL_CALL(c, name, kernel, grid, block, ...) \
    kernel<<<(grid), (block), 0, gpu_exec_stream(c)>>>(__VA_ARGS__)
#endif

/* cudaLaunchCooperativeKernel(kernel, grid, block, args, smem, stream): a
 * grid whose blocks are all resident at once, so that they may wait for
 * each other (gpu_grid_sync), with `smem` bytes of dynamic shared memory
 * per block (GPU_DYNAMIC_SHARED). Returns the launch's error. */
#ifdef NMT_CUDA_EMU
#define GPU_COOP_CALL(c, name, kernel, grid, block, smem, ...) \
    emu_launch_cooperative_named(name, gpu_exec_stream(c), kernel, dim3(grid), dim3(block), (size_t)(smem), __VA_ARGS__)
#else
template <class... P>
cudaError_t gpu_coop_call(cudaStream_t stream, void (*kernel)(P...), dim3 grid, dim3 block,
                          size_t smem, const P &...args) {
    void *argv[] = {const_cast<P *>(&args)...};
    return cudaLaunchCooperativeKernel((const void *)kernel, grid, block, argv, smem, stream);
}
#define GPU_COOP_CALL(c, name, kernel, grid, block, smem, ...) \
    gpu_coop_call(gpu_exec_stream(c), kernel, dim3(grid), dim3(block), (size_t)(smem), __VA_ARGS__)
#endif

/* In a kernel: `name`, a T * at the block's dynamic shared memory (16-byte
 * aligned); and the wait of every thread of a cooperative grid for all the
 * others (cooperative_groups' grid sync; the emulator's grid barrier). */
#ifdef NMT_CUDA_EMU
#define GPU_DYNAMIC_SHARED(T, name) T *name = (T *)emu_dynamic_shared()
__device__ inline void gpu_grid_sync(void) { emu_grid_barrier(); }
#else
#include <cooperative_groups.h>
#define GPU_DYNAMIC_SHARED(T, name)                                \
    extern __shared__ __align__(16) unsigned char gpu_dyn_smem_[]; \
    T *name = (T *)gpu_dyn_smem_
__device__ inline void gpu_grid_sync(void) { cooperative_groups::this_grid().sync(); }
#endif

/* ---- the ops of the stream (gpu_graph.cu) ----
 * Every piece of work the slots put on the stream is an op: a function
 * that enqueues it (exec) and the bytes it needs (payload, copied). Without
 * NMT_CUDA_GRAPHS the op runs at once; with it, ops are recorded until the
 * host has to wait (download, sum_squares, alloc, release), and the
 * segment then runs as a cached CUDA graph when the same ops (the same
 * payload bytes) ran before. */
typedef void (*GpuOpExec)(GpuContext *c, const void *payload);
void gpu_submit(GpuContext *c, GpuOpExec exec, const void *payload, size_t bytes);
/* the values of one call's GpuVar argument (see GpuVar) */
GpuVar gpu_var(GpuContext *c, GpuVarVals v);
/* runs what was recorded; every host wait calls it first */
void gpu_flush(GpuContext *c);
/* the stream ops of the slots (device memory; upload from host memory) */
void gpu_op_memset(GpuContext *c, void *dst, size_t bytes);
void gpu_op_memcpy(GpuContext *c, void *dst, const void *src, size_t bytes);
void gpu_op_memcpy2d(GpuContext *c, void *dst, size_t dpitch, const void *src, size_t spitch,
                     size_t width, size_t height);
void gpu_op_upload(GpuContext *c, void *dst, const void *host_src, size_t bytes);
void gpu_op_sgemm(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                  int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);
void gpu_op_sgemm_batched(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m,
                          int n, int k, float alpha, const float *A, int lda, long long stride_a,
                          const float *B, int ldb, long long stride_b, float beta, float *C,
                          int ldc, long long stride_c, int count);
/* gpu_own_gemm.cu: the same GEMM as gpu_op_sgemm_batched (cuBLAS's terms;
 * count 0: one matrix) by nmt's own kernel, as one launch */
void gpu_own_sgemm(GpuContext *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                   int k, float alpha, const float *A, int lda, long long stride_a,
                   const float *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                   long long stride_c, int count);
/* gpu_lanes.cu: NMT_CUDA_LANES (default on) at creation: lane 1's stream,
 * cuBLAS handle and events, or false and an error; and their release */
bool gpu_lanes_create(GpuContext *c);
void gpu_lanes_destroy(GpuContext *c);
/* a cuBLAS handle on `stream` with its own workspace and the math mode
 * (nothing, and true, when cuBLAS is not loaded: NMT_CUDA_GEMM=own); and
 * at teardown (errors unrecorded), after the stream's work: the handle and
 * the workspace released (each may be unset) */
bool gpu_blas_handle_create(GpuContext *c, cudaStream_t stream, cublasHandle_t *handle,
                            void **workspace);
void gpu_blas_handle_destroy(GpuContext *c, cudaStream_t stream, cublasHandle_t handle,
                             void *workspace);
/* Before a wait for the device (`what`: download, sum_squares, alloc,
 * release): false, with an error recorded, between fork and join. */
bool gpu_no_fork(GpuContext *c, const char *what);
/* a flush between fork and join (gpu_graph.cu cuts a segment): joins
 * before the segment ends; gpu_lanes_refork forks again after it */
bool gpu_lanes_cut(GpuContext *c);
void gpu_lanes_refork(GpuContext *c);
/* graphs on at creation: the recorder's state, or false and an error */
bool gpu_graphs_create(GpuContext *c);
void gpu_graphs_destroy(GpuContext *c);
/* cuda_backend_test_break_capture (gpu_backend.h); nothing without graphs */
void gpu_graphs_test_break_capture(GpuContext *c, long long at_op);
/* before device memory is freed: drops every cached graph and forgets every
 * key (gpu_graph.cu); nothing without graphs */
void gpu_graphs_forget(GpuContext *c);
/* cuda_backend_test_break_launch (gpu_backend.h); nothing without graphs */
void gpu_graphs_test_break_launch(GpuContext *c);

/* A kernel launch as an op: the kernel, its launch shape and its arguments
 * converted to the kernel's parameter types, packed without padding
 * garbage (the payload is zeroed first), so that equal launches have
 * equal bytes. */
template <class... P>
struct GpuPack;
template <>
struct GpuPack<> {};
template <class H, class... R>
struct GpuPack<H, R...> {
    H head;
    GpuPack<R...> rest;
};
inline void gpu_pack_set(GpuPack<> &) {}
template <class H, class... R, class A, class... B>
inline void gpu_pack_set(GpuPack<H, R...> &p, const A &a, const B &...b) {
    p.head = a;
    gpu_pack_set(p.rest, b...);
}
template <size_t I>
struct GpuPackAt {
    template <class H, class... R>
    static const auto &get(const GpuPack<H, R...> &p) { return GpuPackAt<I - 1>::get(p.rest); }
};
template <>
struct GpuPackAt<0> {
    template <class H, class... R>
    static const H &get(const GpuPack<H, R...> &p) { return p.head; }
};

template <class... P>
struct GpuKernelOp {
    const char *name, *file;
    long line;
    void (*kernel)(P...);
    unsigned grid[3], block[3];
    unsigned smem;    /* dynamic shared memory, bytes (cooperative launches) */
    int cooperative;  /* GPU_COOP_CALL instead of GPU_KERNEL_CALL */
    GpuPack<P...> args;
};

template <class... P, size_t... I>
void gpu_kernel_run(GpuContext *c, const GpuKernelOp<P...> &op, std::index_sequence<I...>) {
    void (*kernel)(P...) = op.kernel;
    dim3 grid(op.grid[0], op.grid[1], op.grid[2]), block(op.block[0], op.block[1], op.block[2]);
    c->counters.host_calls++;
    double t0 = gpu_clock();
    if (op.cooperative) {
        cudaError_t e = GPU_COOP_CALL(c, op.name, kernel, grid, block, op.smem, GpuPackAt<I>::get(op.args)...);
        gpu_host_call_timed(c, op.name, t0);
        if (!gpu_check_cuda(c, e, op.name, op.file, (int)op.line)) return;
    } else {
        GPU_KERNEL_CALL(c, op.name, kernel, grid, block, GpuPackAt<I>::get(op.args)...);
        gpu_host_call_timed(c, op.name, t0);
    }
    gpu_check_launch(c, op.name, op.file, (int)op.line);
}

template <class... P>
void gpu_kernel_exec(GpuContext *c, const void *payload) {
    GpuKernelOp<P...> op;
    memcpy(&op, payload, sizeof op);
    gpu_kernel_run(c, op, std::index_sequence_for<P...>{});
}

template <class... P, class... A>
void gpu_launch(GpuContext *c, const char *name, const char *file, int line,
                void (*kernel)(P...), dim3 grid, dim3 block, unsigned smem, int cooperative,
                const A &...args) {
    static_assert(sizeof...(P) == sizeof...(A), "a kernel launch with the wrong argument count");
    GpuKernelOp<P...> op;
    memset(&op, 0, sizeof op);
    op.name = name;
    op.file = file;
    op.line = line;
    op.kernel = kernel;
    op.grid[0] = grid.x, op.grid[1] = grid.y, op.grid[2] = grid.z;
    op.block[0] = block.x, op.block[1] = block.y, op.block[2] = block.z;
    op.smem = smem;
    op.cooperative = cooperative;
    gpu_pack_set(op.args, args...);
    c->counters.launches++;
    if (c->profiling) gpu_profile_note_kernel(name); /* the report tells nmt's kernels from cuBLAS's */
    gpu_submit(c, gpu_kernel_exec<P...>, &op, sizeof op);
}

/* kernel<<<grid, block>>>(args...) as an op, checked when it is enqueued */
#define GPU_LAUNCH(c, kernel, grid, block, ...) \
    gpu_launch((c), #kernel, __FILE__, __LINE__, kernel, dim3(grid), dim3(block), 0u, 0, __VA_ARGS__)
/* the same as a cooperative launch (GPU_COOP_CALL) with smem bytes of
 * dynamic shared memory */
#define GPU_LAUNCH_COOP(c, kernel, grid, block, smem, ...)                                      \
    gpu_launch((c), #kernel, __FILE__, __LINE__, kernel, dim3(grid), dim3(block), (unsigned)(smem), 1, \
               __VA_ARGS__)

/* Opens a slot: the context, or return when an error was recorded. */
#define GPU_ENTER(be)               \
    GpuContext *ctx = gpu_ctx(be);  \
    if (ctx->failed) return

/* blocks for n elements at GPU_THREADS each (grid-stride beyond the cap) */
static inline unsigned gpu_blocks(size_t n) {
    size_t b = (n + GPU_THREADS - 1) / GPU_THREADS;
    return (unsigned)(b < GPU_MAX_BLOCKS ? (b > 0 ? b : 1) : GPU_MAX_BLOCKS);
}

/* for (size_t i = ...; i < n; ...): a grid-stride loop over n elements */
#define GPU_GRID_STRIDE(i, n)                                              \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

/* ---- block reductions (blockDim.x a multiple of 32, at most 1024) ---- */

struct GpuSumOp {
    template <class T>
    __device__ T operator()(T a, T b) const { return a + b; }
};

/* Every thread gets op over the block's values. The combination order is
 * fixed by the block size: the same inputs give the same bits. `sh` is a
 * __shared__ array of at least 32 elements, reusable right after. */
template <class T, class Op>
__device__ inline T gpu_block_allreduce(T v, Op op, T *sh) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads(); /* an earlier reduction's readers are done with sh */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T r = sh[0];
    for (int i = 1; i < nw; i++) r = op(r, sh[i]);
    return r;
}

/* ---- the slots (contracts in backend.h) ---- */

/* gpu_gemm.cu */
void gpu_gemm(Backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void gpu_gemm_batched(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, long stride_a, const float *B,
                      int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                      int count);

/* gpu_lanes.cu */
void gpu_fork(Backend *be);
void gpu_lane(Backend *be, int lane);
void gpu_join(Backend *be);

/* gpu_ops.cu: elementwise, dropout */
void gpu_add_cols(Backend *be, float *dst, int ld_dst, const float *src, int ld_src, int rows,
                  int cols);
void gpu_add_bias(Backend *be, float *y, const float *bias, int rows, int cols);
void gpu_bias_backward(Backend *be, float *dbias, const float *dy, int rows, int cols);
void gpu_tanh_forward(Backend *be, float *y, const float *x, size_t n);
void gpu_tanh_backward(Backend *be, float *dx, const float *dy, const float *y, size_t n);
void gpu_dropout(Backend *be, float *y, const float *x, size_t n, float p, uint64_t seed,
                 uint64_t offset);
void gpu_dropout_rows(Backend *be, float *y, const float *x, int rows, int cols, float p,
                      uint64_t seed, uint64_t offset);
void gpu_scale(Backend *be, float *x, size_t n, float s);

/* gpu_ops.cu: LSTM, embeddings, local-p, optimizer */
void gpu_lstm_forward(Backend *be, int B, int H, float *z, const float *bias,
                      const float *c_prev, const float *h_prev, float *c, float *h,
                      const float *keep);
void gpu_lstm_backward(Backend *be, int B, int H, float *gz, const float *c_prev,
                       const float *c, const float *keep, const float *dh, float *dc,
                       float *dh_carry);
void gpu_embedding_forward(Backend *be, float *out, const float *table, const int32_t *ids,
                           int N, int E);
void gpu_embedding_backward(Backend *be, float *dtable, const float *dout,
                            const int32_t *ids, int N, int E);
void gpu_local_p_forward(Backend *be, int B, const float *u, const int32_t *src_len,
                         float *p);
void gpu_local_p_backward(Backend *be, int B, const float *u, const int32_t *src_len,
                          const float *dp, float *du);
void gpu_adam_update(Backend *be, float *w, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, int t);
void gpu_sgd_update(Backend *be, float *w, const float *g, size_t n, float lr);
void gpu_ema_update(Backend *be, float *avg, const float *w, size_t n, float decay);

/* gpu_layer_norm.cu: layer normalisation */
void gpu_layer_norm_forward(Backend *be, int rows, int cols, const float *x, const float *gain,
                            bool accumulate, float *y, float *stats);
void gpu_layer_norm_backward(Backend *be, int rows, int cols, const float *x, const float *stats,
                             const float *gain, const float *dy, float *dx, float *dgain);

/* gpu_persist.cu: the LSTM recurrence over a sequence; at creation, the
 * device's limits and NMT_CUDA_PERSISTENT (false and an error on failure) */
void gpu_lstm_seq_recurrence(Backend *be, int T, int B, int H, const float *W_hh, float *gates,
                             float *h, float *c, const float *keep, bool reverse);
void gpu_lstm_seq_recurrence_backward(Backend *be, int T, int B, int H, const float *W_hh,
                                      float *gates, const float *c, const float *keep,
                                      bool reverse, float *dh, float *dc, float *dh_rec);
bool gpu_persist_create(GpuContext *c);

/* gpu_profile.cu: the device profile (NMT_CUDA_PROFILE). start opens it
 * for c (CUPTI loaded, its activity records of kernels, copies and memsets
 * gathered from now on; false and the reason in err when it cannot be);
 * stop closes c's share of it (the records are dropped once no backend
 * profiles). */
bool gpu_profile_start(GpuContext *c, char *err, size_t err_size);
void gpu_profile_stop(GpuContext *c);

/* gpu_rows.cu: attention scores and softmax, guided alignment, loss, sum of squares, top-k */
void gpu_additive_score_forward(Backend *be, int B, int S, int A, const float *kproj,
                                const float *qproj, const float *v, float *scores);
void gpu_additive_score_backward(Backend *be, int B, int S, int A, const float *kproj,
                                 const float *qproj, const float *v, const float *dscores,
                                 float *dkproj, float *dqproj, float *dv);
void gpu_attn_softmax_forward(Backend *be, int B, int S, const float *scores,
                              const int32_t *src_len, const float *center, int window,
                              bool gaussian, float sigma, float *probs, float *weights);
void gpu_attn_softmax_backward(Backend *be, int B, int S, const float *probs,
                               const float *weights, const int32_t *src_len,
                               const float *center, int window, bool gaussian, float sigma,
                               const float *dweights, float *dscores, float *dcenter);
void gpu_guided_align(Backend *be, int T, int B, int S, int n, const float *att, size_t step_stride,
                      int cost, float weight, float scale, float *align, float *loss_rows);
void gpu_softmax_xent(Backend *be, int N, int V, const float *logits, const int32_t *targets,
                      int pad_id, float eps, float scale, float *loss_rows, float *nll_rows,
                      float *dlogits);
void gpu_log_softmax(Backend *be, int N, int V, const float *logits, float *out);
double gpu_sum_squares(Backend *be, const float *x, size_t n);
void gpu_topk(Backend *be, const float *x, const float *bias, int rows, int cols, bool logprobs,
              int k, float *values, int32_t *indices);

#endif
