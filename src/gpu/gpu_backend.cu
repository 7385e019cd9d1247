/* gpu_backend.cu: the CUDA Backend (backend.h, gpu_backend.h): creation and
 * destruction, the table of slots, the error record, and the memory slots
 * (cudaMalloc, and copies and memsets queued on the backend's one stream).
 * The dense algebra is in gpu_gemm.cu (cuBLAS), the other kernels in
 * gpu_ops.cu, gpu_rows.cu and gpu_layer_norm.cu. Design and choices: docs/gpu.md.
 *
 * Ordering: all work goes to one non-blocking stream (lane 1 of a fork to
 * a second one, gpu_lanes.cu), in call order, as
 * ops (gpu_internal.cuh) that are recorded and run at the next host wait
 * (graphs, the default: gpu_graph.cu), or with NMT_CUDA_GRAPHS=0 run at once. upload uses
 * cudaMemcpyAsync from (pageable) host memory, which returns once the host
 * buffer has been staged, so the caller may reuse it at once (recorded
 * uploads are copied when recorded); download and sum_squares wait for
 * the stream, after running what was recorded. */
#include "gpu/gpu_internal.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu_backend.h"

/* cuBLAS workspace: the size NVIDIA recommends for Hopper */
#define GPU_CUBLAS_WORKSPACE (32u << 20)

/* ---- host time ---- */

double gpu_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void gpu_host_call_timed(GpuContext *c, const char *what, double t0) {
    double s = gpu_clock() - t0;
    c->counters.host_call_seconds += s;
    if (s <= c->slow_call_s) return;
    c->counters.slow_calls++;
    c->counters.slow_seconds += s;
    int i = 0;
    while (i < c->n_slow_kinds && strcmp(c->slow_kinds[i].what, what) != 0) i++;
    if (i == c->n_slow_kinds) {
        if (i == GPU_SLOW_KINDS) { /* full: the last entry takes the rest */
            i = GPU_SLOW_KINDS - 1;
            c->slow_kinds[i].what = "other calls";
        } else {
            c->n_slow_kinds++;
            c->slow_kinds[i].what = what;
        }
    }
    c->slow_kinds[i].n++;
    c->slow_kinds[i].s += s;
}

void gpu_wait_timed(GpuContext *c, double t0) { c->counters.wait_seconds += gpu_clock() - t0; }

/* CudaCounters.slow_summary: the three kinds with the most slow time */
static void slow_summary(const GpuContext *c, char *out, size_t size) {
    bool taken[GPU_SLOW_KINDS] = {};
    size_t len = 0;
    out[0] = '\0';
    for (int rank = 0; rank < 3; rank++) {
        int best = -1;
        for (int i = 0; i < c->n_slow_kinds; i++)
            if (!taken[i] && (best < 0 || c->slow_kinds[i].s > c->slow_kinds[best].s)) best = i;
        if (best < 0) break;
        taken[best] = true;
        int w = snprintf(out + len, size - len, "%s%s %lld x %.1f ms", rank ? ", " : "",
                         c->slow_kinds[best].what, c->slow_kinds[best].n, c->slow_kinds[best].s * 1e3);
        if (w < 0 || (size_t)w >= size - len) { /* it does not fit: the kinds before it stay */
            out[len] = '\0';
            break;
        }
        len += (size_t)w;
    }
}

/* ---- the error record ---- */

void gpu_record(GpuContext *c, const char *what, const char *detail, const char *file, int line) {
    if (c->failed) return;
    c->failed = true;
    snprintf(c->error, sizeof c->error, "%s:%d: %s: %s", file, line, what, detail);
}

bool gpu_check_cuda(GpuContext *c, cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return true;
    char detail[200];
    snprintf(detail, sizeof detail, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    gpu_record(c, what, detail, file, line);
    return false;
}

bool gpu_check_cuda_sync(GpuContext *c, cudaError_t e, const char *what, const char *file,
                         int line) {
    if (!gpu_check_cuda(c, e, what, file, line)) return false;
    if (!c->sync_debug) return true;
    return gpu_check_cuda(c, cudaStreamSynchronize(gpu_exec_stream(c)), what, file, line);
}

bool gpu_check_cublas(GpuContext *c, cublasStatus_t s, const char *what, const char *file,
                      int line) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s (cuBLAS status %d)", c->blas->status_string(s),
                 (int)s);
        gpu_record(c, what, detail, file, line);
        return false;
    }
    if (!c->sync_debug) return true;
    return gpu_check_cuda(c, cudaStreamSynchronize(gpu_exec_stream(c)), what, file, line);
}

bool gpu_check_launch(GpuContext *c, const char *kernel, const char *file, int line) {
    char what[128];
    snprintf(what, sizeof what, "launch of %s", kernel);
    if (!gpu_check_cuda(c, cudaGetLastError(), what, file, line)) return false;
    if (!c->sync_debug) return true;
    snprintf(what, sizeof what, "%s (NMT_SYNC_DEBUG: after the kernel)", kernel);
    return gpu_check_cuda(c, cudaStreamSynchronize(gpu_exec_stream(c)), what, file, line);
}

/* ---- memory ---- */

/* the memory ops (gpu_internal.cuh): memset and device copies on the stream */

typedef struct {
    void *dst;
    size_t bytes;
} GpuMemsetOp;

static void memset_exec(GpuContext *c, const void *payload) {
    GpuMemsetOp op;
    memcpy(&op, payload, sizeof op);
    c->counters.host_calls++;
    GPU_CUDA_TIMED(c, "cudaMemsetAsync", cudaMemsetAsync(op.dst, 0, op.bytes, gpu_exec_stream(c)));
}

void gpu_op_memset(GpuContext *c, void *dst, size_t bytes) {
    GpuMemsetOp op = {dst, bytes};
    gpu_submit(c, memset_exec, &op, sizeof op);
}

typedef struct {
    void *dst;
    size_t dpitch;
    const void *src;
    size_t spitch, width, height; /* height 0: a plain copy of width bytes */
} GpuMemcpyOp;

static void memcpy_exec(GpuContext *c, const void *payload) {
    GpuMemcpyOp op;
    memcpy(&op, payload, sizeof op);
    c->counters.host_calls++;
    if (!op.height)
        GPU_CUDA_TIMED(c, "cudaMemcpyAsync",
                       cudaMemcpyAsync(op.dst, op.src, op.width, cudaMemcpyDeviceToDevice, gpu_exec_stream(c)));
    else
        GPU_CUDA_TIMED(c, "cudaMemcpy2DAsync",
                       cudaMemcpy2DAsync(op.dst, op.dpitch, op.src, op.spitch, op.width, op.height,
                                         cudaMemcpyDeviceToDevice, gpu_exec_stream(c)));
}

void gpu_op_memcpy(GpuContext *c, void *dst, const void *src, size_t bytes) {
    GpuMemcpyOp op = {dst, 0, src, 0, bytes, 0};
    gpu_submit(c, memcpy_exec, &op, sizeof op);
}

void gpu_op_memcpy2d(GpuContext *c, void *dst, size_t dpitch, const void *src, size_t spitch,
                     size_t width, size_t height) {
    if (!height) return;
    GpuMemcpyOp op = {dst, dpitch, src, spitch, width, height};
    gpu_submit(c, memcpy_exec, &op, sizeof op);
}

static void *gpu_alloc(Backend *be, size_t bytes) {
    GpuContext *ctx = gpu_ctx(be);
    if (!gpu_no_fork(ctx, "alloc")) return NULL;
    gpu_flush(ctx);
    if (ctx->failed) return NULL;
    void *p = NULL;
    ctx->counters.allocs++;
    /* a 0-byte request still gets a unique, freeable pointer */
    double t0 = gpu_clock();
    cudaError_t e = cudaMalloc(&p, bytes > 0 ? bytes : 4);
    gpu_wait_timed(ctx, t0);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* not sticky: the caller reports out of memory */
        return NULL;
    }
    if (!GPU_CUDA(ctx, e)) return NULL;
    if (bytes && !GPU_CUDA_ASYNC(ctx, cudaMemsetAsync(p, 0, bytes, ctx->stream))) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void gpu_release(Backend *be, void *ptr) {
    GpuContext *ctx = gpu_ctx(be);
    if (!ptr) return;
    gpu_no_fork(ctx, "release"); /* misuse is recorded; cudaFree waits for the device anyway */
    gpu_flush(ctx); /* recorded work may use it */
    gpu_graphs_forget(ctx); /* so may cached graphs */
    double t0 = gpu_clock();
    cudaError_t e = cudaFree(ptr);
    gpu_wait_timed(ctx, t0);
    if (!ctx->failed) GPU_CUDA(ctx, e);
}

static void gpu_upload(Backend *be, void *dst, const void *host_src, size_t bytes) {
    GPU_ENTER(be);
    if (!bytes) return;
    ctx->counters.uploads++;
    ctx->counters.upload_bytes += (long long)bytes;
    gpu_op_upload(ctx, dst, host_src, bytes);
}

static void gpu_download(Backend *be, void *host_dst, const void *src, size_t bytes) {
    GpuContext *ctx = gpu_ctx(be);
    if (!bytes) return;
    ctx->counters.host_waits++;
    gpu_no_fork(ctx, "download"); /* misuse is recorded: zeros below */
    gpu_flush(ctx);
    double t0 = gpu_clock();
    bool ok = !ctx->failed &&
              GPU_CUDA(ctx, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost,
                                            ctx->stream)) &&
              GPU_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    gpu_wait_timed(ctx, t0);
    if (!ok) memset(host_dst, 0, bytes); /* failed: defined (zero) values, never garbage */
}

/* ---- a download in two halves (backend.h) ----
 * download_start runs what was recorded (with graphs a segment ends here,
 * without a wait), then queues the copy into a pinned staging slot (as
 * download does, after the flush) and records an event after it;
 * download_finish waits for the oldest pending one's event and copies the
 * slot to the caller's buffer. A download larger than a slot is made at
 * once, as download does (a wait in download_start instead). */
#define GPU_DOWNLOAD_SLOT ((size_t)256 << 10)

static void gpu_download_start(Backend *be, void *host_dst, const void *src, size_t bytes) {
    GpuContext *ctx = gpu_ctx(be);
    NMT_ASSERT(ctx->n_pending < BACKEND_MAX_PENDING_DOWNLOADS);
    int k = (ctx->pending_head + ctx->n_pending++) % BACKEND_MAX_PENDING_DOWNLOADS;
    ctx->pending[k].host_dst = host_dst;
    ctx->pending[k].bytes = bytes;
    ctx->pending[k].queued = false;
    if (!bytes) return;
    ctx->counters.downloads_started++;
    if (bytes > GPU_DOWNLOAD_SLOT) { /* now, and done */
        gpu_download(be, host_dst, src, bytes);
        return;
    }
    if (!gpu_no_fork(ctx, "download_start")) return; /* misuse is recorded: zeros at the finish */
    gpu_flush(ctx); /* with graphs: the segment runs now; the host does not wait */
    /* the copy itself is never recorded in a segment: its staging slot
     * alternates with the pending ring's phase, which need not follow the
     * decoding ring's (t % 2), so in a segment it would give each step's
     * graph a key per slot (up to twice the captures) */
    ctx->counters.host_calls++;
    double t0 = gpu_clock();
    ctx->pending[k].queued =
        !ctx->failed &&
        GPU_CUDA_ASYNC(ctx, cudaMemcpyAsync(ctx->download_pinned + (size_t)k * GPU_DOWNLOAD_SLOT, src,
                                            bytes, cudaMemcpyDeviceToHost, ctx->stream)) &&
        GPU_CUDA(ctx, cudaEventRecord(ctx->download_done[k], ctx->stream));
    gpu_host_call_timed(ctx, "download_start", t0);
}

/* at creation: the staging slots and the events */
static bool downloads_create(GpuContext *ctx) {
    if (!GPU_CUDA(ctx, cudaMallocHost(&ctx->download_pinned,
                                      BACKEND_MAX_PENDING_DOWNLOADS * GPU_DOWNLOAD_SLOT)))
        return false;
    for (int k = 0; k < BACKEND_MAX_PENDING_DOWNLOADS; k++)
        if (!GPU_CUDA(ctx, cudaEventCreateWithFlags(&ctx->download_done[k], cudaEventDisableTiming)))
            return false;
    return true;
}

static void gpu_download_finish(Backend *be) {
    GpuContext *ctx = gpu_ctx(be);
    NMT_ASSERT(ctx->n_pending > 0);
    int k = ctx->pending_head;
    ctx->pending_head = (k + 1) % BACKEND_MAX_PENDING_DOWNLOADS;
    ctx->n_pending--;
    size_t bytes = ctx->pending[k].bytes;
    if (!bytes || bytes > GPU_DOWNLOAD_SLOT) return; /* nothing, or done at the start */
    ctx->counters.host_waits++;
    void *dst = ctx->pending[k].host_dst;
    double t0 = gpu_clock();
    bool ok = gpu_no_fork(ctx, "download_finish") && ctx->pending[k].queued && !ctx->failed &&
              GPU_CUDA(ctx, cudaEventSynchronize(ctx->download_done[k]));
    gpu_wait_timed(ctx, t0);
    if (ok)
        memcpy(dst, ctx->download_pinned + (size_t)k * GPU_DOWNLOAD_SLOT, bytes);
    else
        memset(dst, 0, bytes); /* failed: defined (zero) values, never garbage */
}

/* memmove on the device: overlapping ranges are copied in pieces no longer
 * than their distance, in an order that reads each byte before it is
 * overwritten (stream order serialises the pieces). */
static void gpu_memmove(GpuContext *ctx, char *dst, const char *src, size_t bytes) {
    if (!bytes || dst == src) return;
    size_t dist = dst > src ? (size_t)(dst - src) : (size_t)(src - dst);
    if (dist >= bytes) {
        gpu_op_memcpy(ctx, dst, src, bytes);
        return;
    }
    if (dst < src) { /* forwards */
        for (size_t o = 0; o < bytes && !ctx->failed; o += dist) {
            size_t len = bytes - o < dist ? bytes - o : dist;
            gpu_op_memcpy(ctx, dst + o, src + o, len);
        }
    } else { /* backwards */
        for (size_t end = bytes; end > 0 && !ctx->failed;) {
            size_t len = end < dist ? end : dist;
            end -= len;
            gpu_op_memcpy(ctx, dst + end, src + end, len);
        }
    }
}

static void gpu_copy(Backend *be, void *dst, const void *src, size_t bytes) {
    GPU_ENTER(be);
    gpu_memmove(ctx, (char *)dst, (const char *)src, bytes);
}

static void gpu_zero(Backend *be, void *dst, size_t bytes) {
    GPU_ENTER(be);
    if (!bytes) return;
    gpu_op_memset(ctx, dst, bytes);
}

/* One cudaMemcpy2DAsync; when the two blocks overlap in memory (or a pitch
 * is below the width), row by row with memmove semantics, as the CPU does. */
static void gpu_copy_cols(Backend *be, float *dst, int ld_dst, const float *src, int ld_src,
                          int rows, int cols) {
    GPU_ENTER(be);
    if (rows <= 0 || cols <= 0) return;
    size_t width = (size_t)cols * sizeof(float);
    const char *d0 = (const char *)dst, *s0 = (const char *)src;
    const char *d1 = (const char *)(dst + (size_t)(rows - 1) * ld_dst + cols);
    const char *s1 = (const char *)(src + (size_t)(rows - 1) * ld_src + cols);
    bool overlap = d0 < s1 && s0 < d1;
    if (!overlap && ld_dst >= cols && ld_src >= cols) {
        gpu_op_memcpy2d(ctx, dst, (size_t)ld_dst * sizeof(float), src,
                        (size_t)ld_src * sizeof(float), width, (size_t)rows);
        return;
    }
    for (int r = 0; r < rows && !ctx->failed; r++)
        gpu_memmove(ctx, (char *)(dst + (size_t)r * ld_dst),
                    (const char *)(src + (size_t)r * ld_src), width);
}

/* ---- creation ---- */

bool gpu_blas_handle_create(GpuContext *c, cudaStream_t stream, cublasHandle_t *handle,
                            void **workspace) {
    if (!c->blas) return true; /* NMT_CUDA_GEMM=own */
    return GPU_CUBLAS(c, c->blas->create(handle)) &&
           GPU_CUBLAS(c, c->blas->set_stream(*handle, stream)) &&
           /* after cublasSetStream, which resets the workspace to cuBLAS's pool */
           GPU_CUDA(c, cudaMalloc(workspace, GPU_CUBLAS_WORKSPACE)) &&
           GPU_CUBLAS(c, c->blas->set_workspace(*handle, *workspace, GPU_CUBLAS_WORKSPACE)) &&
           GPU_CUBLAS(c, c->blas->set_math_mode(*handle, c->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH));
}

void gpu_blas_handle_destroy(GpuContext *c, cudaStream_t stream, cublasHandle_t handle,
                             void *workspace) {
    if (stream) cudaStreamSynchronize(stream);
    if (handle && c->blas) c->blas->destroy(handle);
    if (workspace) cudaFree(workspace);
}

static void gpu_destroy(Backend *be) {
    if (!be) return;
    GpuContext *ctx = gpu_ctx(be);
    if (ctx) {
        /* teardown errors are not recorded: nobody can read them any more */
        gpu_profile_stop(ctx);
        gpu_graphs_destroy(ctx);
        gpu_lanes_destroy(ctx);
        gpu_blas_handle_destroy(ctx, ctx->stream, ctx->cublas, ctx->cublas_ws);
        if (ctx->partials) cudaFree(ctx->partials);
        if (ctx->host_result) cudaFreeHost(ctx->host_result);
        if (ctx->download_pinned) cudaFreeHost(ctx->download_pinned);
        for (int k = 0; k < BACKEND_MAX_PENDING_DOWNLOADS; k++)
            if (ctx->download_done[k]) cudaEventDestroy(ctx->download_done[k]);
        if (ctx->stream) cudaStreamDestroy(ctx->stream);
        cudaGetLastError();
    }
    nmt_free(ctx);
    nmt_free(be);
}

bool gpu_env_flag(const char *name, bool unset) {
    const char *v = getenv(name);
    return v && *v ? strcmp(v, "0") != 0 : unset;
}

extern "C" int cuda_backend_available(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* no driver or no device: not an error here */
        return 0;
    }
    return n > 0;
}

/* be's context when be is a backend made by cuda_backend_create, else NULL */
static GpuContext *cuda_context_of(Backend *be) {
    if (!be || !be->ctx || !be->name || strcmp(be->name, "cuda") != 0) return NULL;
    return gpu_ctx(be);
}

extern "C" const char *cuda_backend_error(Backend *be) {
    GpuContext *ctx = cuda_context_of(be);
    if (ctx) gpu_flush(ctx); /* errors of recorded work show once it ran */
    return ctx && ctx->failed ? ctx->error : NULL;
}

extern "C" int cuda_backend_counters(Backend *be, CudaCounters *out) {
    GpuContext *ctx = cuda_context_of(be);
    CudaCounters zero = {};
    if (out) *out = ctx ? ctx->counters : zero;
    if (out && ctx) slow_summary(ctx, out->slow_summary, sizeof out->slow_summary);
    if (out && ctx) out->own_gemm = ctx->own_gemm;
    return ctx ? 0 : -1;
}

extern "C" int cuda_backend_memory(Backend *be, size_t *free_bytes, size_t *total_bytes) {
    GpuContext *ctx = cuda_context_of(be);
    size_t f = 0, t = 0;
    bool ok = false;
    if (ctx && !ctx->failed) {
        ok = cudaMemGetInfo(&f, &t) == cudaSuccess;
        if (!ok) cudaGetLastError(); /* not recorded: a question, not work */
    }
    if (free_bytes) *free_bytes = ok ? f : 0;
    if (total_bytes) *total_bytes = ok ? t : 0;
    return ok ? 0 : -1;
}

extern "C" void cuda_backend_test_break_capture(Backend *be, long long at_op) {
    GpuContext *ctx = cuda_context_of(be);
    if (ctx) gpu_graphs_test_break_capture(ctx, at_op);
}

extern "C" void cuda_backend_test_break_launch(Backend *be) {
    GpuContext *ctx = cuda_context_of(be);
    if (ctx) gpu_graphs_test_break_launch(ctx);
}

extern "C" int cuda_backend_set_persistent(Backend *be, int on) {
    GpuContext *ctx = cuda_context_of(be);
    if (!ctx || (on && !ctx->persist_ready)) return -1;
    ctx->persistent = on != 0;
    return 0;
}

static void fill_table(Backend *be) {
    be->name = "cuda";
    be->host_memory = false;
    be->decode_quantum = 8;
    be->overlap_downloads = true;
    be->decode_fold_lines = 1;
    be->decode_query_form = 2;
    be->alloc = gpu_alloc;
    be->release = gpu_release;
    be->upload = gpu_upload;
    be->download = gpu_download;
    be->download_start = gpu_download_start;
    be->download_finish = gpu_download_finish;
    be->copy = gpu_copy;
    be->zero = gpu_zero;
    be->copy_cols = gpu_copy_cols;
    be->add_cols = gpu_add_cols;

    be->gemm = gpu_gemm;
    be->gemm_batched = gpu_gemm_batched;
    be->add_bias = gpu_add_bias;
    be->bias_backward = gpu_bias_backward;
    be->tanh_forward = gpu_tanh_forward;
    be->tanh_backward = gpu_tanh_backward;
    be->dropout = gpu_dropout;
    be->dropout_rows = gpu_dropout_rows;

    be->layer_norm_forward = gpu_layer_norm_forward;
    be->layer_norm_backward = gpu_layer_norm_backward;
    be->lstm_forward = gpu_lstm_forward;
    be->lstm_backward = gpu_lstm_backward;
    be->lstm_seq_recurrence = gpu_lstm_seq_recurrence;
    be->lstm_seq_recurrence_backward = gpu_lstm_seq_recurrence_backward;
    be->embedding_forward = gpu_embedding_forward;
    be->embedding_backward = gpu_embedding_backward;

    be->additive_score_forward = gpu_additive_score_forward;
    be->additive_score_backward = gpu_additive_score_backward;
    be->attn_softmax_forward = gpu_attn_softmax_forward;
    be->attn_softmax_backward = gpu_attn_softmax_backward;
    be->local_p_forward = gpu_local_p_forward;
    be->local_p_backward = gpu_local_p_backward;

    be->guided_align = gpu_guided_align;
    be->softmax_xent = gpu_softmax_xent;
    be->log_softmax = gpu_log_softmax;
    be->sum_squares = gpu_sum_squares;
    be->scale = gpu_scale;
    be->adam_update = gpu_adam_update;
    be->sgd_update = gpu_sgd_update;
    be->ema_update = gpu_ema_update;
    be->topk = gpu_topk;

    be->fork = gpu_fork;
    be->lane = gpu_lane;
    be->join = gpu_join;

    be->destroy = gpu_destroy;
}

extern "C" Backend *cuda_backend_create(int device, char *err, size_t err_size) {
    char scratch[8];
    if (!err || !err_size) {
        err = scratch;
        err_size = sizeof scratch;
    }
    err[0] = '\0';
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(err, err_size, "no CUDA device visible (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        cudaGetLastError();
        return NULL;
    }
    if (device < 0 || device >= n) {
        snprintf(err, err_size, "CUDA device %d does not exist (%d visible)", device, n);
        return NULL;
    }
    /* NMT_CUDA_SLOW_CALL_MS: a host call over it counts as slow (CudaCounters) */
    double slow_ms = 1.0;
    const char *slow = getenv("NMT_CUDA_SLOW_CALL_MS");
    if (slow && *slow) {
        char *end;
        slow_ms = strtod(slow, &end);
        if (*end || !isfinite(slow_ms) || slow_ms < 0) {
            snprintf(err, err_size, "NMT_CUDA_SLOW_CALL_MS=%s: not a number of milliseconds >= 0", slow);
            return NULL;
        }
    }
    /* NMT_CUDA_PROFILE=1: the device profile (gpu_profile.cu), with
     * NMT_CUDA_PROFILE_ROWS rows */
    int profile_on, profile_rows;
    if (profile_settings_from_env(&profile_on, &profile_rows, err, err_size) < 0) return NULL;
    bool profile = profile_on == 1;
    /* NMT_CUDA_GEMM: cublas (the default) or own (gpu_own_gemm.cu: nmt's
     * kernel for every GEMM, and cuBLAS is not even loaded) */
    const char *gemm = getenv("NMT_CUDA_GEMM");
    bool own_gemm = gemm && !strcmp(gemm, "own");
    if (gemm && *gemm && !own_gemm && strcmp(gemm, "cublas")) {
        snprintf(err, err_size, "NMT_CUDA_GEMM=%s: must be cublas (the default) or own", gemm);
        return NULL;
    }
    if (own_gemm && gpu_env_flag("NMT_TF32", false)) {
        snprintf(err, err_size, "NMT_CUDA_GEMM=own with NMT_TF32=1: nmt's own GEMM has no TF32 path "
                 "(TF32 is cuBLAS's tensor-core math)");
        return NULL;
    }
    char why[256];
    const GpuBlas *blas = own_gemm ? NULL : gpu_blas_load(why, sizeof why);
    if (!blas && !own_gemm) {
        snprintf(err, err_size, "CUDA backend: %s", why);
        return NULL;
    }
    Backend *be = (Backend *)nmt_calloc(1, sizeof *be);
    GpuContext *ctx = (GpuContext *)nmt_calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        nmt_free(be);
        nmt_free(ctx);
        snprintf(err, err_size, "out of host memory creating the CUDA backend");
        return NULL;
    }
    be->ctx = ctx;
    ctx->blas = blas;
    fill_table(be);
    ctx->device = device;
    ctx->sync_debug = gpu_env_flag("NMT_SYNC_DEBUG", false);
    ctx->tf32 = gpu_env_flag("NMT_TF32", false);
    ctx->own_gemm = own_gemm;
    ctx->slow_call_s = slow_ms * 1e-3;
    ctx->profile_rows = profile_rows;

    bool ok =
        GPU_CUDA(ctx, cudaSetDevice(device)) &&
        GPU_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) &&
        gpu_blas_handle_create(ctx, ctx->stream, &ctx->cublas, &ctx->cublas_ws) &&
        gpu_lanes_create(ctx) &&
        gpu_persist_create(ctx) &&
        GPU_CUDA(ctx, cudaMalloc(&ctx->partials, (GPU_SUMSQ_BLOCKS + 1) * sizeof(double))) &&
        GPU_CUDA(ctx, cudaMallocHost(&ctx->host_result, sizeof(double))) &&
        downloads_create(ctx) &&
        /* graphs (on unless NMT_CUDA_GRAPHS=0) only without NMT_SYNC_DEBUG,
         * which waits inside segments */
        (!gpu_env_flag("NMT_CUDA_GRAPHS", true) || ctx->sync_debug || gpu_graphs_create(ctx));
    if (ok && !ctx->failed && profile && !gpu_profile_start(ctx, err, err_size)) {
        gpu_destroy(be);
        return NULL;
    }
    if (!ok || ctx->failed) {
        int len = snprintf(err, err_size, "CUDA backend setup failed: %s", ctx->error);
        bool out_of_memory = strstr(ctx->error, "cudaErrorMemoryAllocation") != NULL;
        gpu_destroy(be);
        /* what the device has without this backend's blocks */
        size_t free_bytes, total_bytes;
        if (out_of_memory && len >= 0 && (size_t)len < err_size &&
            cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
            snprintf(err + len, err_size - (size_t)len, "; device %d has %.0f MB free of %.0f MB (other processes?)",
                     device, free_bytes / 1e6, total_bytes / 1e6);
        return NULL;
    }
    return be;
}
