/* cpu_backend.c: the CPU Backend (backend.h): its table of slots, the
 * context, and the memory slots (host memory through the nmt allocation
 * hook). The dense algebra is in cpu_gemm.c (OpenBLAS), every other op in
 * cpu_ops.c (OpenMP loops over the shared math of src/kernels/). */
#include "cpu/cpu_internal.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "backend_steps.h"
#include "common.h"

typedef struct {
    int threads; /* as requested; <= 0: the libraries' defaults (all cores) */
    int pending_downloads; /* started and not finished (download_start) */
} CpuContext;

static void *cpu_alloc(Backend *be, size_t bytes) {
    (void)be;
    /* zeroed; a 0-byte request still gets a unique, freeable pointer */
    return nmt_calloc(1, bytes > 0 ? bytes : 1);
}

static void cpu_release(Backend *be, void *ptr) {
    (void)be;
    nmt_free(ptr);
}

static void cpu_upload(Backend *be, void *dst, const void *host_src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(dst, host_src, bytes);
}

static void cpu_download(Backend *be, void *host_dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(host_dst, src, bytes);
}

/* The work before a start is done, so the copy is made at once; the count
 * only holds callers to the contract (backend.h) that the CUDA backend needs. */
static void cpu_download_start(Backend *be, void *host_dst, const void *src, size_t bytes) {
    CpuContext *ctx = be->ctx;
    NMT_ASSERT(ctx->pending_downloads < BACKEND_MAX_PENDING_DOWNLOADS);
    ctx->pending_downloads++;
    if (bytes) memcpy(host_dst, src, bytes);
}

static void cpu_download_finish(Backend *be) {
    CpuContext *ctx = be->ctx;
    NMT_ASSERT(ctx->pending_downloads > 0);
    ctx->pending_downloads--;
}

static void cpu_copy(Backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes && dst != src) memmove(dst, src, bytes);
}

static void cpu_zero(Backend *be, void *dst, size_t bytes) {
    (void)be;
    if (bytes) memset(dst, 0, bytes);
}

static void cpu_copy_cols(Backend *be, float *dst, int ld_dst, const float *src, int ld_src,
                          int rows, int cols) {
    (void)be;
    if (cols <= 0) return;
    for (int r = 0; r < rows; r++)
        memmove(dst + (size_t)r * ld_dst, src + (size_t)r * ld_src, (size_t)cols * sizeof(float));
}

static void cpu_add_cols(Backend *be, float *dst, int ld_dst, const float *src, int ld_src,
                         int rows, int cols) {
    (void)be;
    long total = (long)rows * cols;
#pragma omp parallel for schedule(static) if (total > CPU_PAR_MIN)
    for (int r = 0; r < rows; r++) {
        float *d = dst + (size_t)r * ld_dst;
        const float *s = src + (size_t)r * ld_src;
        for (int c = 0; c < cols; c++) d[c] += s[c];
    }
}

/* lanes: one thread of control runs the work in call order, which is an
 * order the two lanes allow */
static void cpu_fork(Backend *be) { (void)be; }
static void cpu_lane(Backend *be, int lane) {
    (void)be;
    (void)lane;
}
static void cpu_join(Backend *be) { (void)be; }

static void cpu_destroy(Backend *be) {
    if (!be) return;
    nmt_free(be->ctx);
    nmt_free(be);
}

Backend *cpu_backend_create(int threads) {
    Backend *be = nmt_calloc(1, sizeof *be);
    CpuContext *ctx = nmt_calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        nmt_free(be);
        nmt_free(ctx);
        return NULL;
    }
    ctx->threads = threads;
    if (threads > 0) {
        openblas_set_num_threads(threads);
        omp_set_num_threads(threads);
    }
    be->name = "cpu";
    be->ctx = ctx;
    be->host_memory = true;
    be->decode_quantum = 1;
    be->overlap_downloads = false;
    be->decode_fold_lines = 256;
    be->decode_query_form = 1;

    be->alloc = cpu_alloc;
    be->release = cpu_release;
    be->upload = cpu_upload;
    be->download = cpu_download;
    be->download_start = cpu_download_start;
    be->download_finish = cpu_download_finish;
    be->copy = cpu_copy;
    be->zero = cpu_zero;
    be->copy_cols = cpu_copy_cols;
    be->add_cols = cpu_add_cols;

    be->gemm = cpu_gemm;
    be->gemm_batched = cpu_gemm_batched;
    be->add_bias = cpu_add_bias;
    be->bias_backward = cpu_bias_backward;
    be->tanh_forward = cpu_tanh_forward;
    be->tanh_backward = cpu_tanh_backward;
    be->dropout = cpu_dropout;
    be->dropout_rows = cpu_dropout_rows;

    be->layer_norm_forward = cpu_layer_norm_forward;
    be->layer_norm_backward = cpu_layer_norm_backward;
    be->lstm_forward = cpu_lstm_forward;
    be->lstm_backward = cpu_lstm_backward;
    be->lstm_seq_recurrence = backend_lstm_recurrence_steps;
    be->lstm_seq_recurrence_backward = backend_lstm_recurrence_backward_steps;
    be->embedding_forward = cpu_embedding_forward;
    be->embedding_backward = cpu_embedding_backward;

    be->additive_score_forward = cpu_additive_score_forward;
    be->additive_score_backward = cpu_additive_score_backward;
    be->attn_softmax_forward = cpu_attn_softmax_forward;
    be->attn_softmax_backward = cpu_attn_softmax_backward;
    be->local_p_forward = cpu_local_p_forward;
    be->local_p_backward = cpu_local_p_backward;

    be->guided_align = cpu_guided_align;
    be->softmax_xent = cpu_softmax_xent;
    be->log_softmax = cpu_log_softmax;
    be->sum_squares = cpu_sum_squares;
    be->scale = cpu_scale;
    be->adam_update = cpu_adam_update;
    be->sgd_update = cpu_sgd_update;
    be->ema_update = cpu_ema_update;
    be->topk = cpu_topk;

    be->fork = cpu_fork;
    be->lane = cpu_lane;
    be->join = cpu_join;

    be->destroy = cpu_destroy;
    return be;
}
