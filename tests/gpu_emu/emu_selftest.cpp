/* emu_selftest.cpp: checks of the CPU emulator's streams (tests/gpu_emu/,
 * the model is described in cuda_runtime.h): work waits for the host to
 * synchronise; events fork and join streams in both scheduler orders
 * (EMU_STREAM_ORDER first and last); a missing join or fork reads stale
 * data; a captured fork/join graph replays; an unjoined capture fails;
 * pageable uploads are staged at the call, pinned ones read when they run;
 * cuBLAS work goes to its handle's stream; warp ballots and shuffles read
 * the caller's warp, and a mask naming a returned lane aborts. Cooperative
 * launches: a grid barrier orders blocks in every block order (and reads
 * go stale without it), several in a loop give exact values, dynamic
 * shared memory is per block and NaN at each launch, shuffles work per
 * block, the device's attributes, occupancy and refused launches (nothing
 * queued), capture and replay, and what aborts (a grid barrier in a plain
 * launch, a divergent barrier, a returned thread, dynamic shared memory
 * where there is none, a grid past the emulator's fibers). Built by
 * mk/gpu.mk against emu.o alone (`make gpu-emu-selftest`), run by
 * tests/test_gpu_emu.sh. Prints "emu_selftest: N passed, M failed" and
 * exits 1 on a failure.
 *
 * Device memory is host memory in the emulator, so the checks read it
 * directly, also before a synchronisation, to see what has run. Every
 * check compares a value that an emulator running work at once, or
 * ignoring a wait, would change. What must abort runs in a child process
 * (aborts()). The cooperative checks set their own schedule
 * (emu_set_schedule) and EMU_SM_COUNT, and put back the environment's. */
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>

#include "cublas_v2.h"

static int passed, failed;

static void check(bool ok, const char *fmt, ...) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* the two streams of the backend's bidirectional encoder: main is created
 * first, side second */
static cudaStream_t main_s, side_s;
static const char *order_name = "first";

/* ---- kernels ---- */

/* dst[0] = v */
__global__ void set_kernel(float *dst, float v) {
    if (blockIdx.x == 0 && threadIdx.x == 0) dst[0] = v;
}

/* dst[i] = src[i] * mul + add for i < n (grid-stride) */
__global__ void axpb_kernel(float *dst, const float *src, float mul, float add, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dst[i] = src[i] * mul + add;
}

static void set(cudaStream_t s, float *dst, float v) { emu_launch(s, set_kernel, 1, 32, dst, v); }

static void axpb(cudaStream_t s, float *dst, const float *src, float mul, float add) {
    emu_launch(s, axpb_kernel, 2, 32, dst, src, mul, add, 1);
}

/* n device floats, all v (nothing queued may touch them yet) */
static float *dev_floats(int n, float v) {
    float *p = NULL;
    if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess) abort();
    for (int i = 0; i < n; i++) p[i] = v;
    return p;
}

static void fork_streams(cudaEvent_t fork) {
    cudaEventRecord(fork, main_s);
    cudaStreamWaitEvent(side_s, fork, 0);
}

static void join_streams(cudaEvent_t join) {
    cudaEventRecord(join, side_s);
    cudaStreamWaitEvent(main_s, join, 0);
}

/* ---- deferral ---- */

static void test_deferred(void) {
    float *x = dev_floats(4, 0.f);
    set(main_s, x, 1.f);
    cudaMemsetAsync(x + 1, 0, sizeof(float), main_s);
    check(x[0] == 0.f, "a kernel ran before any synchronisation (x = %g)", x[0]);
    x[1] = 5.f;
    cudaStreamSynchronize(main_s);
    check(x[0] == 1.f && x[1] == 0.f,
          "cudaStreamSynchronize did not run the stream's work (x = %g, %g)", x[0], x[1]);

    /* an event synchronisation runs up to the event, not beyond */
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    set(main_s, x, 2.f);
    cudaEventRecord(e, main_s);
    set(main_s, x + 2, 3.f);
    cudaEventSynchronize(e);
    check(x[0] == 2.f && x[2] == 0.f,
          "cudaEventSynchronize: want work before the event only (x = %g, %g)", x[0], x[2]);
    cudaDeviceSynchronize();
    check(x[2] == 3.f, "cudaDeviceSynchronize left work queued (x[2] = %g)", x[2]);

    /* a copy to the host writes it when it runs */
    float host = -1.f;
    cudaMemcpyAsync(&host, x, sizeof host, cudaMemcpyDeviceToHost, main_s);
    check(host == -1.f, "a download wrote the host before the synchronisation");
    cudaStreamSynchronize(main_s);
    check(host == 2.f, "the download after the synchronisation: %g, want 2", host);

    /* cudaFree waits for the whole device */
    float *tmp = dev_floats(1, 0.f);
    set(side_s, x + 3, 4.f);
    cudaFree(tmp);
    check(x[3] == 4.f, "cudaFree did not run the queued work first (x[3] = %g)", x[3]);

    /* cudaStreamDestroy runs the stream's work */
    cudaStream_t third;
    cudaStreamCreateWithFlags(&third, cudaStreamNonBlocking);
    check(third != main_s && third != side_s && main_s != side_s, "streams are not distinct");
    set(third, x, 6.f);
    cudaStreamDestroy(third);
    check(x[0] == 6.f, "cudaStreamDestroy did not run the stream's work (x = %g)", x[0]);
    cudaEventDestroy(e);
    cudaFree(x);
}

/* ---- fork and join ---- */

/* main: x = 1; fork; side: y = x + 1; join; main: z = 10 y. Returns z
 * after synchronising main (with_fork / with_join false leave a wait out). */
static float fork_join(bool with_fork, bool with_join) {
    float *v = dev_floats(3, 0.f), *x = v, *y = v + 1, *z = v + 2;
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    set(main_s, x, 1.f);
    if (with_fork) fork_streams(fork);
    axpb(side_s, y, x, 1.f, 1.f);
    if (with_join) join_streams(join);
    axpb(main_s, z, y, 10.f, 0.f);
    cudaStreamSynchronize(main_s);
    float r = *z;
    cudaDeviceSynchronize();
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaFree(v);
    return r;
}

static void test_fork_join(void) {
    float z = fork_join(true, true);
    check(z == 20.f, "fork and join (order %s): z = %g, want 20", order_name, z);
}

/* main's work runs as far as it can before the side stream's: without the
 * join, main reads y before side wrote it */
static void test_missing_join_first(void) {
    float z = fork_join(true, false);
    check(z == 0.f, "a missing join (order first): z = %g, want the stale 0", z);
}

/* the side stream runs as early as it can: without the fork it reads x
 * before main wrote it (y = 0 + 1, z = 10) */
static void test_missing_fork_last(void) {
    float z = fork_join(false, true);
    check(z == 10.f, "a missing fork (order last): z = %g, want the stale 10", z);
}

/* a wait takes the event's position when it is queued; recording the
 * event again moves it for later waits only (order last: side runs as soon
 * as it may) */
static void test_event_rerecord_last(void) {
    float *v = dev_floats(3, 0.f), *x = v, *y = v + 1, *w = v + 2;
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    set(main_s, x, 1.f);
    cudaEventRecord(e, main_s);
    cudaStreamWaitEvent(side_s, e, 0);
    axpb(side_s, y, x, 1.f, 0.f);
    set(main_s, x, 2.f);
    cudaEventRecord(e, main_s);
    cudaStreamWaitEvent(side_s, e, 0);
    axpb(side_s, w, x, 1.f, 0.f);
    cudaDeviceSynchronize();
    check(*y == 1.f && *w == 2.f,
          "events recorded twice (order last): y = %g, w = %g, want 1 and 2", *y, *w);
    cudaEventDestroy(e);
    cudaFree(v);
}

static void test_unrecorded_event(void) {
    float *y = dev_floats(1, 0.f);
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    check(cudaStreamWaitEvent(side_s, e, 0) == cudaSuccess,
          "waiting on a never-recorded event failed");
    set(side_s, y, 7.f);
    cudaStreamSynchronize(side_s);
    check(*y == 7.f, "work after a wait on a never-recorded event: %g, want 7", *y);
    cudaEventDestroy(e);
    cudaFree(y);
}

/* ---- copies ---- */

static void test_copies(void) {
    float *d = dev_floats(4, 0.f);
    float host = 1.f;
    cudaMemcpyAsync(d, &host, sizeof host, cudaMemcpyHostToDevice, main_s);
    host = 2.f; /* pageable: CUDA staged it at the call */
    float rows[4] = {1.f, -1.f, 3.f, -1.f};
    cudaMemcpy2DAsync(d + 2, sizeof(float), rows, 2 * sizeof(float), sizeof(float), 2,
                      cudaMemcpyHostToDevice, main_s);
    rows[0] = rows[2] = 9.f;
    cudaStreamSynchronize(main_s);
    check(d[0] == 1.f, "a pageable upload read the host at run time: %g, want 1", d[0]);
    check(d[2] == 1.f && d[3] == 3.f, "a pageable 2D upload: %g %g, want 1 3", d[2], d[3]);

    float *pinned = NULL;
    cudaMallocHost(&pinned, sizeof(float));
    *pinned = 1.f;
    cudaMemcpyAsync(d + 1, pinned, sizeof(float), cudaMemcpyHostToDevice, main_s);
    *pinned = 2.f; /* pinned: read when the copy runs */
    cudaStreamSynchronize(main_s);
    check(d[1] == 2.f, "a pinned upload was read at the call: %g, want 2", d[1]);
    cudaFreeHost(pinned);
    cudaFree(d);
}

/* ---- cuBLAS ---- */

/* C (2x2, column-major) = A B, on a handle bound to the side stream: it
 * runs on that stream, and only main's wait on it orders main after it */
static void test_cublas(void) {
    cublasHandle_t on_main, on_side, no_stream;
    cublasCreate(&on_main);
    cublasCreate(&on_side);
    cublasCreate(&no_stream);
    check(on_main != on_side && on_side != no_stream, "cublasCreate gave the same handle twice");
    cublasSetStream(on_main, main_s);
    cublasSetStream(on_side, side_s);
    float *m = dev_floats(14, 0.f), *A = m, *B = m + 4, *C = m + 8, *out = m + 12;
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}; /* B = identity: C = A */
    memcpy(A, a, sizeof a);
    memcpy(B, b, sizeof b);
    float alpha = 1.f, beta = 0.f;
    cublasSgemm(on_side, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, A, 2, B, 2, &beta, C, 2);
    alpha = 5.f; /* host scalars are read at the call */
    check(C[3] == 0.f, "a gemm ran before any synchronisation (C[3] = %g)", C[3]);
    axpb(main_s, out, C + 3, 1.f, 0.f); /* no join */
    cudaStreamSynchronize(main_s);
    if (!strcmp(order_name, "first"))
        check(*out == 0.f, "a side-stream gemm ran before main's unjoined read: %g", *out);
    cudaEvent_t join;
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaEventRecord(join, side_s);
    cudaStreamWaitEvent(main_s, join, 0);
    axpb(main_s, out + 1, C + 3, 1.f, 0.f);
    cudaStreamSynchronize(main_s);
    check(out[1] == 4.f, "a side-stream gemm joined into main (order %s): %g, want 4",
          order_name, out[1]);
    cudaDeviceSynchronize();

    /* a handle without a stream uses the legacy default stream */
    cublasSgemm(no_stream, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 2, &alpha, A, 2, B, 2, &beta, C, 2);
    cudaStreamSynchronize(side_s);
    check(C[1] == 2.f, "a gemm on a handle without a stream ran with side's sync: %g", C[1]);
    cudaDeviceSynchronize();
    check(C[1] == 15.f, "a gemm on a handle without a stream: %g, want 5 * 3", C[1]);
    cudaEventDestroy(join);
    cudaFree(m);
    cublasDestroy(on_main);
    cublasDestroy(on_side);
    cublasDestroy(no_stream);
}

/* ---- capture ---- */

/* captures main: x2 = 2 in; fork; side: y = x2 + 1; join; main: out = 10 y */
static cudaError_t capture_fork_join(float *in, float *x2, float *y, float *out,
                                     cudaGraph_t *graph) {
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    axpb(main_s, x2, in, 2.f, 0.f);
    fork_streams(fork);
    axpb(side_s, y, x2, 1.f, 1.f);
    join_streams(join);
    axpb(main_s, out, y, 10.f, 0.f);
    cudaError_t e = cudaStreamEndCapture(main_s, graph);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    return e;
}

static void upload(float *dst, float v) {
    cudaMemcpyAsync(dst, &v, sizeof v, cudaMemcpyHostToDevice, main_s);
}

static void test_graph_replay(void) {
    float *v = dev_floats(5, 0.f), *in = v, *x2 = v + 1, *y = v + 2, *out = v + 3, *saved = v + 4;
    cudaGraph_t graph = NULL;
    cudaError_t e = capture_fork_join(in, x2, y, out, &graph);
    check(e == cudaSuccess && graph, "capturing a fork and a join: error %d", (int)e);
    if (!graph) return;
    cudaDeviceSynchronize();
    check(*x2 == 0.f && *y == 0.f && *out == 0.f, "captured work ran at capture");
    cudaGraphExec_t exec = NULL;
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    /* two launches, each with its own input, then one synchronisation: a
     * side lane must wait for its own launch's fork */
    upload(in, 3.f);
    cudaGraphLaunch(exec, main_s);
    cudaMemcpyAsync(saved, out, sizeof(float), cudaMemcpyDeviceToDevice, main_s);
    upload(in, 5.f);
    cudaGraphLaunch(exec, main_s);
    cudaStreamSynchronize(main_s);
    check(*saved == 70.f && *out == 110.f,
          "graph replays (order %s): %g and %g, want 70 and 110", order_name, *saved, *out);
    upload(in, 7.f);
    cudaGraphLaunch(exec, main_s);
    cudaStreamSynchronize(main_s);
    check(*out == 150.f, "a third replay (order %s): %g, want 150", order_name, *out);
    cudaGraphExecDestroy(exec);
    cudaFree(v);
}

/* lanes that are not joined back into the origin, or are joined only
 * before their last work, fail the capture with 904; a join through
 * another lane is a join */
static void test_unjoined(void) {
    float *y = dev_floats(2, 0.f);
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaGraph_t graph = (cudaGraph_t)&graph;
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    fork_streams(fork);
    set(side_s, y, 1.f);
    cudaError_t e = cudaStreamEndCapture(main_s, &graph);
    check(e == cudaErrorStreamCaptureUnjoined && e == 904 && !graph,
          "an unjoined capture: error %d, graph %p; want 904 and none", (int)e, (void *)graph);
    /* both streams left the capture */
    set(side_s, y, 9.f);
    check(cudaStreamSynchronize(side_s) == cudaSuccess && *y == 9.f,
          "the side stream after an unjoined capture: %g, want 9", *y);

    graph = (cudaGraph_t)&graph;
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    fork_streams(fork);
    set(side_s, y, 1.f);
    join_streams(join);
    set(side_s, y + 1, 2.f); /* after the join */
    e = cudaStreamEndCapture(main_s, &graph);
    check(e == cudaErrorStreamCaptureUnjoined && !graph,
          "work after the join: error %d, want 904", (int)e);

    cudaStream_t third;
    cudaStreamCreateWithFlags(&third, cudaStreamNonBlocking);
    cudaEvent_t fork2, join2;
    cudaEventCreateWithFlags(&fork2, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join2, cudaEventDisableTiming);
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    fork_streams(fork);
    cudaEventRecord(fork2, side_s);
    cudaStreamWaitEvent(third, fork2, 0);
    set(third, y + 1, 3.f);
    cudaEventRecord(join2, third);
    cudaStreamWaitEvent(side_s, join2, 0);
    join_streams(join);
    e = cudaStreamEndCapture(main_s, &graph);
    check(e == cudaSuccess && graph, "a join through another lane: error %d", (int)e);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(third);
    cudaEventDestroy(fork2);
    cudaEventDestroy(join2);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaFree(y);
}

/* what invalidates a capture: a synchronisation, a pageable copy, a wait
 * on an event recorded outside it */
static void test_capture_breaks(void) {
    float *d = dev_floats(1, 0.f);
    cudaGraph_t graph;
    /* cudaStreamIsCapturing: none, active, invalidated (also for a stream
     * that joined the capture), none again after the end */
    cudaStreamCaptureStatus st[5];
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    cudaStreamIsCapturing(main_s, &st[0]);
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    cudaStreamIsCapturing(main_s, &st[1]);
    set(main_s, d, 1.f);
    cudaEventRecord(ev, main_s);
    cudaStreamWaitEvent(side_s, ev, 0); /* side_s joins the capture */
    cudaError_t s = cudaStreamSynchronize(main_s);
    cudaStreamIsCapturing(side_s, &st[2]);
    cudaStreamIsCapturing(main_s, &st[3]);
    cudaError_t e = cudaStreamEndCapture(main_s, &graph);
    cudaStreamIsCapturing(side_s, &st[4]);
    check(s != cudaSuccess && e == cudaErrorStreamCaptureInvalidated && !graph,
          "a synchronisation during capture: %d then %d", (int)s, (int)e);
    check(st[0] == cudaStreamCaptureStatusNone && st[1] == cudaStreamCaptureStatusActive &&
              st[2] == cudaStreamCaptureStatusInvalidated && st[3] == cudaStreamCaptureStatusInvalidated &&
              st[4] == cudaStreamCaptureStatusNone,
          "cudaStreamIsCapturing before, during, after a refused call, after the end: %d %d %d %d %d",
          (int)st[0], (int)st[1], (int)st[2], (int)st[3], (int)st[4]);
    cudaEventDestroy(ev);

    float host = 1.f;
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    cudaMemcpyAsync(d, &host, sizeof host, cudaMemcpyHostToDevice, main_s);
    e = cudaStreamEndCapture(main_s, &graph);
    check(e == cudaErrorStreamCaptureInvalidated && !graph, "a pageable copy during capture: %d",
          (int)e);

    cudaEvent_t outside;
    cudaEventCreateWithFlags(&outside, cudaEventDisableTiming);
    cudaEventRecord(outside, side_s);
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    s = cudaStreamWaitEvent(main_s, outside, 0);
    e = cudaStreamEndCapture(main_s, &graph);
    check(s != cudaSuccess && e == cudaErrorStreamCaptureInvalidated && !graph,
          "a wait on an event from outside the capture: %d then %d", (int)s, (int)e);
    cudaDeviceSynchronize();
    check(*d == 0.f, "work of an invalidated capture ran");
    cudaEventDestroy(outside);
    cudaFree(d);
}

/* whether fn aborts, run in a child process with its messages dropped */
static bool aborts(std::function<void()> fn) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* an unknown stream order or schedule aborts */
static void test_bad_order(void) {
    check(aborts([]() { emu_set_stream_order("sideways"); }),
          "emu_set_stream_order(\"sideways\") did not abort");
    check(aborts([]() { emu_set_schedule("sideways"); }),
          "emu_set_schedule(\"sideways\") did not abort");
}

/* out[t] = the ballot of lanes with lane % 3 == 0, and lane 5's value of
 * 100 + lane, for each thread t of a 64-thread block (two warps) */
__global__ void warp_vote_kernel(unsigned *ballots, int *shuffled) {
    int t = threadIdx.x, lane = t & 31;
    ballots[t] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    shuffled[t] = __shfl_sync(0xffffffffu, 100 + t, 5);
}

/* a ballot whose mask names a lane that has returned */
__global__ void exited_lane_kernel(unsigned *out) {
    if (threadIdx.x == 7) return;
    out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
}

/* __ballot_sync and __shfl_sync read the lanes of the caller's warp; a mask
 * naming a returned lane aborts (undefined on a GPU) */
static void test_warp_vote(void) {
    unsigned *ballots = NULL;
    int *shuffled = NULL;
    if (cudaMalloc(&ballots, 64 * sizeof(unsigned)) != cudaSuccess ||
        cudaMalloc(&shuffled, 64 * sizeof(int)) != cudaSuccess)
        abort();
    emu_launch(main_s, warp_vote_kernel, 1, 64, ballots, shuffled);
    cudaStreamSynchronize(main_s);
    unsigned want = 0;
    for (int i = 0; i < 32; i += 3) want |= 1u << i;
    bool ok = true;
    for (int t = 0; t < 64; t++) ok = ok && ballots[t] == want && shuffled[t] == 100 + (t & ~31) + 5;
    check(ok, "__ballot_sync / __shfl_sync: thread 40 got %#x and %d, want %#x and %d", ballots[40],
          shuffled[40], want, 100 + 32 + 5);
    check(aborts([ballots]() {
              emu_launch(main_s, exited_lane_kernel, 1, 32, ballots);
              cudaStreamSynchronize(main_s);
          }),
          "a ballot naming a returned lane did not abort");
    cudaFree(ballots);
    cudaFree(shuffled);
}

/* ---- cooperative launches ---- */

static const char *schedules[3] = {"forward", "reverse", "shuffle"};

/* back to EMU_SCHEDULE's order (or the default) after a test that set its own */
static void restore_schedule(void) {
    const char *s = getenv("EMU_SCHEDULE");
    emu_set_schedule(s && *s ? s : "forward");
}

/* the running thread's index in the grid, blocks and threads x fastest */
__device__ inline int grid_flat_index(void) {
    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return b * (int)(blockDim.x * blockDim.y * blockDim.z) + t;
}

/* a[i] = i; the grid waits (with_barrier); out[i] = a[N - 1 - i], which
 * another block wrote. The index is taken again after the wait, so a
 * wrong blockIdx or threadIdx at a switch shows too. */
__global__ void mirror_kernel(float *a, float *out, int with_barrier) {
    a[grid_flat_index()] = (float)grid_flat_index();
    if (with_barrier) emu_grid_barrier();
    int n = (int)(gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z);
    int i = grid_flat_index();
    out[i] = a[n - 1 - i];
}

/* runs mirror_kernel cooperatively on (grid, block) and returns how many
 * outputs are wrong (-1: the launch failed); *first: the first wrong one's
 * index (-1: none) */
static int mirror_errors(dim3 grid, dim3 block, int with_barrier, int *first) {
    int n = (int)(grid.x * grid.y * grid.z * block.x * block.y * block.z);
    float *a = dev_floats(n, -1.f), *out = dev_floats(n, -1.f);
    cudaError_t e =
        emu_launch_cooperative(main_s, mirror_kernel, grid, block, 0, a, out, with_barrier);
    cudaStreamSynchronize(main_s);
    int wrong = 0;
    *first = -1;
    for (int i = 0; i < n; i++) {
        if (out[i] == (float)(n - 1 - i)) continue;
        if (!wrong++) *first = i;
    }
    cudaFree(a);
    cudaFree(out);
    return e == cudaSuccess ? wrong : -1;
}

/* The grid barrier makes a block's read of another block's slice right
 * in every block order. Without it the blocks that run first read stale
 * data: in forward order blocks 0-3 of 8 (outputs from 0 on), in reverse
 * blocks 4-7 (from 256 on), in a shuffle at least the first one. */
static void test_coop_mirror(void) {
    const int n = 8 * 64;
    int stale[3], first[3];
    for (int k = 0; k < 3; k++) {
        emu_set_schedule(schedules[k]);
        int wrong = mirror_errors(dim3(4, 2), dim3(32, 2), 1, &first[k]);
        check(wrong == 0, "a grid barrier between blocks (schedule %s): %d wrong", schedules[k],
              wrong);
        stale[k] = mirror_errors(dim3(4, 2), dim3(32, 2), 0, &first[k]);
    }
    check(stale[0] == n / 2 && first[0] == 0 && stale[1] == n / 2 && first[1] == n / 2 &&
              stale[2] > 0,
          "without the grid barrier: %d, %d, %d stale reads from %d, %d, %d (forward, reverse, "
          "shuffle), want %d from 0, %d from %d, some",
          stale[0], stale[1], stale[2], first[0], first[1], first[2], n / 2, n / 2, n / 2);
    restore_schedule();
}

/* steps rounds of dst[i] = src[(i + 1) % N] + 1 between a and b (a the
 * input), the grid waiting after each: the result, in a after an even
 * number of steps, is a0[(i + steps) % N] + steps */
__global__ void pingpong_kernel(float *a, float *b, int steps) {
    int N = (int)(gridDim.x * blockDim.x), i = grid_flat_index();
    for (int s = 0; s < steps; s++) {
        const float *src = s % 2 ? b : a;
        float *dst = s % 2 ? a : b;
        dst[i] = src[(i + 1) % N] + 1.f;
        emu_grid_barrier();
    }
}

static const int PP_BLOCKS = 16, PP_THREADS = 32, PP_STEPS = 10;

/* how many of a's values differ from the ping-pong's result for a0[i] = i * scale */
static int pingpong_errors(const float *a, float scale) {
    int N = PP_BLOCKS * PP_THREADS, wrong = 0;
    for (int i = 0; i < N; i++) wrong += a[i] != (float)((i + PP_STEPS) % N) * scale + PP_STEPS;
    return wrong;
}

static void test_coop_pingpong(void) {
    int N = PP_BLOCKS * PP_THREADS;
    for (const char *sched : schedules) {
        emu_set_schedule(sched);
        float *a = dev_floats(N, 0.f), *b = dev_floats(N, -1.f);
        for (int i = 0; i < N; i++) a[i] = (float)i;
        cudaError_t e = emu_launch_cooperative(main_s, pingpong_kernel, PP_BLOCKS, PP_THREADS, 0, a,
                                               b, PP_STEPS);
        cudaStreamSynchronize(main_s);
        int wrong = pingpong_errors(a, 1.f);
        check(e == cudaSuccess && wrong == 0,
              "%d grid barriers in a loop (schedule %s): error %d, %d wrong", PP_STEPS, sched,
              (int)e, wrong);
        cudaFree(a);
        cudaFree(b);
    }
    restore_schedule();
}

/* first[i]: the block's dynamic shared word t as the kernel found it (0 if
 * the memory was not 16-byte aligned); the block writes 1000 b + t there,
 * and after its barrier and the grid's out[i] is word t + 1 */
__global__ void dyn_shared_kernel(float *first, float *out) {
    float *sm = (float *)emu_dynamic_shared();
    int n = (int)blockDim.x, b = (int)blockIdx.x, t = (int)threadIdx.x, i = b * n + t;
    first[i] = (uintptr_t)sm % 16 == 0 ? sm[t] : 0.f;
    sm[t] = 1000.f * b + t;
    __syncthreads();
    emu_grid_barrier(); /* every block wrote before any reads */
    out[i] = sm[(t + 1) % n];
}

/* each block has its own dynamic shared memory, NaN at every launch
 * (1000 bytes: block 1's starts past a rounding to 16) */
static void test_coop_dynamic_shared(void) {
    const int blocks = 4, n = 64;
    float *first = dev_floats(blocks * n, 0.f), *out = dev_floats(blocks * n, 0.f);
    for (int launch = 0; launch < 2; launch++) {
        cudaError_t e =
            emu_launch_cooperative(main_s, dyn_shared_kernel, blocks, n, 1000, first, out);
        cudaStreamSynchronize(main_s);
        int not_nan = 0, wrong = 0;
        for (int i = 0; i < blocks * n; i++) {
            not_nan += !isnan(first[i]);
            wrong += out[i] != 1000.f * (i / n) + (i % n + 1) % n;
        }
        check(e == cudaSuccess && not_nan == 0 && wrong == 0,
              "dynamic shared memory (launch %d): error %d, %d words not NaN (or unaligned) at "
              "the start, %d read back wrong",
              launch + 1, (int)e, not_nan, wrong);
    }
    cudaFree(first);
    cudaFree(out);
}

/* after a grid barrier (every block's threads live), per block b: lane
 * 5's 1000 b + t, the ballot of lanes with (lane + b) % 3 == 0, and the
 * block's __syncthreads_or of (b == 1 && t == 40) */
__global__ void coop_warp_kernel(int *shuffled, unsigned *ballots, int *ors) {
    emu_grid_barrier();
    int b = (int)blockIdx.x, t = (int)threadIdx.x, i = grid_flat_index(), lane = t & 31;
    shuffled[i] = __shfl_sync(0xffffffffu, 1000 * b + t, 5);
    ballots[i] = __ballot_sync(0xffffffffu, (lane + b) % 3 == 0);
    ors[i] = __syncthreads_or(b == 1 && t == 40);
}

static void test_coop_warp(void) {
    const int blocks = 4, n = 64;
    int *shuffled = NULL, *ors = NULL;
    unsigned *ballots = NULL;
    if (cudaMalloc(&shuffled, blocks * n * sizeof(int)) != cudaSuccess ||
        cudaMalloc(&ors, blocks * n * sizeof(int)) != cudaSuccess ||
        cudaMalloc(&ballots, blocks * n * sizeof(unsigned)) != cudaSuccess)
        abort();
    for (const char *sched : schedules) {
        emu_set_schedule(sched);
        emu_launch_cooperative(main_s, coop_warp_kernel, blocks, n, 0, shuffled, ballots, ors);
        cudaStreamSynchronize(main_s);
        int wrong = 0;
        for (int i = 0; i < blocks * n; i++) {
            int b = i / n, t = i % n;
            unsigned want = 0;
            for (int l = 0; l < 32; l++)
                if ((l + b) % 3 == 0) want |= 1u << l;
            wrong +=
                shuffled[i] != 1000 * b + (t & ~31) + 5 || ballots[i] != want || ors[i] != (b == 1);
        }
        check(wrong == 0,
              "shuffles, ballots and __syncthreads_or per block (schedule %s): %d wrong", sched,
              wrong);
    }
    restore_schedule();
    cudaFree(shuffled);
    cudaFree(ors);
    cudaFree(ballots);
}

/* *marker = v (block 0, thread 0) */
__global__ void marker_kernel(float *marker, float v) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *marker = v;
}
/* the same, a distinct kernel for cudaFuncSetAttribute */
__global__ void marker_kernel_big(float *marker, float v) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *marker = v;
}

/* EMU_SM_COUNT as set, or unset for NULL */
static void set_sm_count(const char *v) {
    if (v) setenv("EMU_SM_COUNT", v, 1);
    else unsetenv("EMU_SM_COUNT");
}

static void test_coop_device(void) {
    const char *env = getenv("EMU_SM_COUNT");
    char *saved = env ? strdup(env) : NULL;
    int sms = 0, coop = 0, optin = 0, other = 0;
    set_sm_count(NULL);
    cudaError_t e1 = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaError_t e2 = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
    cudaError_t e3 = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    check(!e1 && !e2 && !e3 && sms == 8 && coop == 1 && optin == 232448,
          "device attributes: %d %d %d (errors %d %d %d), want 8 1 232448", sms, coop, optin,
          (int)e1, (int)e2, (int)e3);
    check(cudaDeviceGetAttribute(&other, (cudaDeviceAttr)42, 0) == cudaErrorInvalidValue &&
              cudaDeviceGetAttribute(&other, cudaDevAttrCooperativeLaunch, 1) ==
                  cudaErrorInvalidDevice,
          "an unknown attribute or device was not refused");
    set_sm_count("3");
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    check(sms == 3, "EMU_SM_COUNT=3: %d multiprocessors", sms);
    check(aborts([]() {
              int v;
              set_sm_count("3x");
              cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0);
          }),
          "EMU_SM_COUNT=3x did not abort");
    set_sm_count(NULL);

    /* occupancy: threads, blocks, shared memory */
    const int cases[6][3] = {{256, 0, 8},          {1024, 0, 2},     {32, 0, 32},
                             {128, 100 * 1024, 2}, {256, 232448, 1}, {64, 232449, 0}};
    for (const int *c : cases) {
        int nb = -1;
        cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, mirror_kernel, c[0], (size_t)c[1]);
        check(e == cudaSuccess && nb == c[2],
              "occupancy of %d threads and %d bytes: %d (error %d), want %d", c[0], c[1], nb,
              (int)e, c[2]);
    }
    int nb;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, mirror_kernel, 0, 0) ==
                  cudaErrorInvalidValue &&
              cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, mirror_kernel, 1025, 0) ==
                  cudaErrorInvalidValue,
          "occupancy of 0 or 1025 threads was not refused");

    /* cudaFuncSetAttribute's limits */
    check(cudaFuncSetAttribute(marker_kernel_big, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               -1) == cudaErrorInvalidValue &&
              cudaFuncSetAttribute(marker_kernel_big, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   232449) == cudaErrorInvalidValue &&
              cudaFuncSetAttribute(marker_kernel_big, (cudaFuncAttribute)9, 1024) ==
                  cudaErrorInvalidValue,
          "cudaFuncSetAttribute took -1, 232449 bytes or an unknown attribute");
    check(cudaFuncSetAttribute(marker_kernel_big, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               100 * 1024) == cudaSuccess,
          "cudaFuncSetAttribute refused 100 KiB");

    /* refused launches queue nothing; the limit is per kernel */
    float *marker = dev_floats(1, 0.f);
    cudaError_t big = emu_launch_cooperative(main_s, marker_kernel, 1, 32, 49153, marker, 1.f);
    cudaError_t wide = emu_launch_cooperative(main_s, marker_kernel, 65, 256, 0, marker, 2.f);
    set_sm_count("3");
    cudaError_t wide3 = emu_launch_cooperative(main_s, marker_kernel, 25, 256, 0, marker, 3.f);
    set_sm_count(NULL);
    cudaError_t over =
        emu_launch_cooperative(main_s, marker_kernel_big, 1, 32, 100 * 1024 + 1, marker, 4.f);
    cudaStreamSynchronize(main_s);
    check(big == cudaErrorInvalidValue && wide == cudaErrorCooperativeLaunchTooLarge &&
              wide == 720 && wide3 == cudaErrorCooperativeLaunchTooLarge &&
              over == cudaErrorInvalidValue,
          "refused launches: %d %d %d %d, want 1 720 720 1", (int)big, (int)wide, (int)wide3,
          (int)over);
    check(*marker == 0.f, "a refused cooperative launch ran (marker %g)", *marker);
    check(!strcmp(cudaGetErrorName(wide), "cudaErrorCooperativeLaunchTooLarge") &&
              !strcmp(cudaGetErrorString(wide), "too many blocks in cooperative launch"),
          "error 720's name and text: %s, %s", cudaGetErrorName(wide), cudaGetErrorString(wide));
    cudaError_t fits = emu_launch_cooperative(main_s, marker_kernel, 1, 32, 49152, marker, 5.f);
    cudaStreamSynchronize(main_s);
    check(fits == cudaSuccess && *marker == 5.f,
          "48 KiB on a kernel without the attribute: error %d, marker %g", (int)fits, *marker);
    fits = emu_launch_cooperative(main_s, marker_kernel_big, 1, 32, 100 * 1024, marker, 6.f);
    cudaStreamSynchronize(main_s);
    check(fits == cudaSuccess && *marker == 6.f,
          "100 KiB after cudaFuncSetAttribute: error %d, marker %g", (int)fits, *marker);
    cudaFree(marker);

    /* the largest grids the default device holds run */
    int first;
    int w1 = mirror_errors(64, 256, 1, &first), w2 = mirror_errors(16, 1024, 1, &first);
    check(w1 == 0 && w2 == 0, "64 x 256 and 16 x 1024 cooperative grids: %d and %d wrong", w1, w2);
    set_sm_count(saved);
    free(saved);
}

/* a cooperative launch captured into a graph runs at each replay, on the
 * memory as it is then */
static void test_coop_capture(void) {
    int N = PP_BLOCKS * PP_THREADS;
    float *a = dev_floats(N, 0.f), *b = dev_floats(N, -1.f);
    cudaGraph_t graph = NULL;
    cudaStreamBeginCapture(main_s, cudaStreamCaptureModeRelaxed);
    cudaError_t e =
        emu_launch_cooperative(main_s, pingpong_kernel, PP_BLOCKS, PP_THREADS, 0, a, b, PP_STEPS);
    cudaError_t end = cudaStreamEndCapture(main_s, &graph);
    cudaDeviceSynchronize();
    check(e == cudaSuccess && end == cudaSuccess && graph && b[0] == -1.f,
          "capturing a cooperative launch: errors %d %d, b[0] = %g (want -1: not run)", (int)e,
          (int)end, b[0]);
    if (!graph) return;
    cudaGraphExec_t exec = NULL;
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    for (int replay = 1; replay <= 2; replay++) {
        for (int i = 0; i < N; i++) a[i] = (float)(i * replay);
        cudaGraphLaunch(exec, main_s);
        cudaStreamSynchronize(main_s);
        int wrong = pingpong_errors(a, (float)replay);
        check(wrong == 0, "replay %d of a captured cooperative launch: %d wrong", replay, wrong);
    }
    cudaGraphExecDestroy(exec);
    cudaFree(a);
    cudaFree(b);
}

/* thread 0 of each block waits at __syncthreads, then at the grid, the
 * others the other way round (released barrier by barrier, each thread
 * would reach the end) */
__global__ void divergent_barrier_kernel(float *out) {
    if (threadIdx.x == 0) {
        __syncthreads();
        emu_grid_barrier();
    } else {
        emu_grid_barrier();
        __syncthreads();
    }
    out[grid_flat_index()] = 1.f;
}

/* block 1 returns while the others wait at the grid barrier */
__global__ void early_return_kernel(float *out) {
    if (blockIdx.x == 1) return;
    emu_grid_barrier();
    out[grid_flat_index()] = 1.f;
}

/* dynamic shared memory read in a kernel (launched without any) */
__global__ void dyn_read_kernel(float *out) {
    out[grid_flat_index()] = *(float *)emu_dynamic_shared();
}

/* what aborts: a grid barrier outside a cooperative launch, a divergent
 * barrier, a thread that returned while others wait at the grid, dynamic
 * shared memory where the launch has none, a grid larger than the
 * emulator's fibers */
static void test_coop_aborts(void) {
    float *out = dev_floats(4 * 64, 0.f);
    /* each launch, then the wait that runs it, in a child that must abort */
    struct {
        std::function<void()> launch;
        const char *fails;
    } cases[] = {
        {[out]() { emu_launch(main_s, mirror_kernel, 2, 32, out, out + 64, 1); },
         "a grid barrier in a plain launch did not abort"},
        {[out]() { emu_launch_cooperative(main_s, divergent_barrier_kernel, 2, 32, 0, out); },
         "threads at __syncthreads and at the grid barrier did not abort"},
        {[out]() { emu_launch_cooperative(main_s, early_return_kernel, 4, 32, 0, out); },
         "a block that returned while others wait at the grid barrier did not abort"},
        {[out]() { emu_launch(main_s, dyn_read_kernel, 1, 32, out); },
         "dynamic shared memory in a plain launch did not abort"},
        {[out]() { emu_launch_cooperative(main_s, dyn_read_kernel, 1, 32, 0, out); },
         "dynamic shared memory in a launch with none did not abort"},
        {[out]() { /* aborts at the launch already */
             set_sm_count("64");
             emu_launch_cooperative(main_s, marker_kernel, 128, 1024, 0, out, 1.f);
         },
         "a cooperative grid of 131072 threads did not abort"},
    };
    for (auto &c : cases)
        check(aborts([&c]() {
                  c.launch();
                  cudaStreamSynchronize(main_s);
              }),
              "%s", c.fails);
    cudaFree(out);
}

int main(void) {
    cudaStreamCreateWithFlags(&main_s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&side_s, cudaStreamNonBlocking);
    const char *orders[2] = {"first", "last"};
    for (const char *order : orders) {
        order_name = order;
        emu_set_stream_order(order);
        test_deferred();
        test_fork_join();
        test_unrecorded_event();
        test_copies();
        test_cublas();
        test_graph_replay();
        test_unjoined();
        test_capture_breaks();
        if (!strcmp(order, "first")) test_missing_join_first();
        else {
            test_missing_fork_last();
            test_event_rerecord_last();
        }
    }
    test_bad_order();
    test_warp_vote();
    test_coop_mirror();
    test_coop_pingpong();
    test_coop_dynamic_shared();
    test_coop_warp();
    test_coop_device();
    test_coop_capture();
    test_coop_aborts();
    cudaStreamDestroy(main_s);
    cudaStreamDestroy(side_s);
    printf("emu_selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
