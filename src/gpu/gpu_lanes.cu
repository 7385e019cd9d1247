/* gpu_lanes.cu: the lanes of the CUDA backend (backend.h: fork, lane,
 * join; docs/gpu.md, "Lanes"). Lane 0 is the backend's stream; lane 1 is
 * a second stream with its own cuBLAS handle and workspace (two handles,
 * not one switched between streams: a handle's workspace must not be used
 * by two streams at once).
 *
 * fork, lane and join are ops of the stream like any other
 * (gpu_internal.cuh), so that they are recorded and replayed with the
 * work around them (NMT_CUDA_GRAPHS): running an op sets the lane that
 * the ops after it go to (GpuContext.exec_lane, read by gpu_exec_stream
 * and gpu_exec_blas). A fork records an event on lane 0 that lane 1
 * waits for; a join records one on lane 1 that lane 0 waits for. Under
 * stream capture the fork's wait brings lane 1's stream into the capture
 * and the join brings it back, as CUDA requires before the capture ends.
 *
 * With NMT_CUDA_LANES=0 there is no second stream: lane 1's work goes to
 * lane 0 in call order, the order the CPU backend uses. The slots keep
 * track of fork and join either way, so that misuse (a host wait between
 * fork and join, a join without a fork) is an error with both settings. */
#include "gpu/gpu_internal.cuh"

#include <string.h>

/* ---- the ops ---- */

typedef struct {
    int what; /* LANE_FORK, LANE_SELECT or LANE_JOIN */
    int lane; /* LANE_SELECT: the lane */
} GpuLaneOp;

enum { LANE_FORK, LANE_SELECT, LANE_JOIN };

/* the work queued on `to` from now on waits for all queued on `from` */
static void wait_for(GpuContext *c, cudaStream_t to, cudaStream_t from, cudaEvent_t ev) {
    c->counters.host_calls += 2;
    double t0 = gpu_clock();
    if (GPU_CUDA(c, cudaEventRecord(ev, from))) GPU_CUDA(c, cudaStreamWaitEvent(to, ev, 0));
    gpu_host_call_timed(c, "cudaEventRecord + cudaStreamWaitEvent", t0);
}

static void lane_exec(GpuContext *c, const void *payload) {
    GpuLaneOp op;
    memcpy(&op, payload, sizeof op);
    if (op.what == LANE_FORK) wait_for(c, c->side, c->stream, c->forked);
    if (op.what == LANE_JOIN) wait_for(c, c->stream, c->side, c->joined);
    c->exec_lane = op.lane;
}

static void submit_lane_op(GpuContext *c, int what, int lane) {
    if (!c->side) return; /* NMT_CUDA_LANES=0: one stream, call order */
    GpuLaneOp op = {what, lane};
    gpu_submit(c, lane_exec, &op, sizeof op);
}

/* ---- the slots ---- */

void gpu_fork(Backend *be) {
    GPU_ENTER(be);
    if (ctx->in_fork) {
        gpu_record(ctx, "fork", "called again before join (backend.h: lanes)", __FILE__, __LINE__);
        return;
    }
    ctx->in_fork = true;
    ctx->slot_lane = 1;
    ctx->counters.lane_forks++;
    submit_lane_op(ctx, LANE_FORK, 1);
}

void gpu_lane(Backend *be, int lane) {
    GPU_ENTER(be);
    if (!ctx->in_fork || (lane != 0 && lane != 1)) {
        char why[96];
        snprintf(why, sizeof why, "lane %d %s (backend.h: lanes)", lane,
                 ctx->in_fork ? "does not exist" : "selected outside fork and join");
        gpu_record(ctx, "lane", why, __FILE__, __LINE__);
        return;
    }
    if (lane == ctx->slot_lane) return;
    ctx->slot_lane = lane;
    submit_lane_op(ctx, LANE_SELECT, lane);
}

void gpu_join(Backend *be) {
    GPU_ENTER(be);
    if (!ctx->in_fork) {
        gpu_record(ctx, "join", "called without a fork (backend.h: lanes)", __FILE__, __LINE__);
        return;
    }
    ctx->in_fork = false;
    ctx->slot_lane = 0;
    submit_lane_op(ctx, LANE_JOIN, 0);
}

bool gpu_no_fork(GpuContext *c, const char *what) {
    if (!c->in_fork) return true;
    gpu_record(c, what, "waits for the device between fork and join (backend.h: lanes)",
               __FILE__, __LINE__);
    return false;
}

/* A segment that ends between fork and join (gpu_graph.cu cuts one at its
 * GpuVar limit) must not leave lane 1 running past its end: a captured
 * graph has to end with every stream joined. So the cut joins, and the
 * next segment forks again and reselects the lane: lane 1's work then
 * waits for lane 0's before the cut too, which only removes overlap. */
bool gpu_lanes_cut(GpuContext *c) {
    if (!c->in_fork) return false;
    submit_lane_op(c, LANE_JOIN, 0);
    return true;
}

void gpu_lanes_refork(GpuContext *c) {
    submit_lane_op(c, LANE_FORK, 1);
    if (c->slot_lane == 0) submit_lane_op(c, LANE_SELECT, 0);
}

/* ---- creation ---- */

bool gpu_lanes_create(GpuContext *c) {
    if (!gpu_env_flag("NMT_CUDA_LANES", true)) return true;
    return GPU_CUDA(c, cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking)) &&
           gpu_blas_handle_create(c, c->side, &c->cublas_side, &c->cublas_ws_side) &&
           GPU_CUDA(c, cudaEventCreateWithFlags(&c->forked, cudaEventDisableTiming)) &&
           GPU_CUDA(c, cudaEventCreateWithFlags(&c->joined, cudaEventDisableTiming));
}

void gpu_lanes_destroy(GpuContext *c) {
    /* teardown: errors die with the backend */
    gpu_blas_handle_destroy(c, c->side, c->cublas_side, c->cublas_ws_side);
    if (c->forked) cudaEventDestroy(c->forked);
    if (c->joined) cudaEventDestroy(c->joined);
    if (c->side) cudaStreamDestroy(c->side);
    c->side = NULL;
}
