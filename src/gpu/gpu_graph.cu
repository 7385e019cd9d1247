/* gpu_graph.cu: the CUDA backend's op recorder and graph cache
 * (on by default, NMT_CUDA_GRAPHS=0 off; docs/gpu.md, "CUDA graphs").
 *
 * Every piece of work a slot puts on the stream is an op (gpu_submit: an
 * exec function and its payload bytes, gpu_internal.cuh). Without graphs
 * an op runs at once. With graphs, ops are recorded into a segment until
 * the host must wait (download, sum_squares, alloc, release, destroy,
 * cuda_backend_error): gpu_flush then runs the segment, in one of three
 * ways, chosen by its key (a 128-bit hash of every op's exec function and
 * payload, with the op, value and upload counts):
 *   - a graph with that key is cached: launch it (one host call);
 *   - the key was seen once before: capture the segment into a graph
 *     (stream capture of the ops' own calls), cache and launch it;
 *   - else run the ops one by one, as without graphs.
 * A segment's key covers every argument of every op (kernel, launch shape,
 * pointers, sizes, scalars), so a cached graph only ever runs work
 * identical to what the ops would enqueue. Two kinds of inputs change
 * between runs of the same work and are not part of the key:
 *   - GpuVar values (dropout seeds, the loss scale, Adam's rate and
 *     corrections, a clipping factor): each call gets a slot of a device
 *     array (vars) that the segment's first op fills from pinned memory;
 *   - upload data: copied from the caller's buffer when recorded (the
 *     caller may reuse it at once), then into pinned memory at the flush;
 *     the segment's upload ops copy it from there to the device.
 * Both live in one pinned block that every flush reuses: a flush that
 * stages any first waits for the previous flush's work (an event; in nmt
 * every segment but the optimizer's and a pipelined decoding step's ends
 * in a host wait anyway, and the latter stage nothing). */
#include "gpu/gpu_internal.cuh"

#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "common.h"
}

/* GpuVar slots of one segment (a segment that needs more is flushed early,
 * at the same point every time, so it still repeats) */
#define GPU_VARS_MAX 4096
#define GPU_VARS_BYTES (GPU_VARS_MAX * sizeof(GpuVarVals))
/* keys remembered as seen once: each key has two candidate slots (by h1
 * and by h2), a new key replaces the older of the two */
#define GPU_SEEN_SLOTS 4096
#define GPU_GRAPHS_DEFAULT_MAX 512
/* Larger uploads (weights at setup, a checkpoint's moments) are not
 * recorded: the segment so far runs, then the upload goes straight to the
 * stream, so that neither the staging buffer nor the pinned block grows to
 * the model's size. A step's uploads (ids, lengths, masks) are far below. */
#define GPU_RECORDED_UPLOAD_MAX ((size_t)1 << 20)

typedef struct {
    uint64_t h1, h2, n_ops, n_vars, upload_bytes;
} GpuSegKey;

typedef struct {
    GpuSegKey key;
    cudaGraphExec_t exec;
    uint64_t last_use;
} GpuGraphEntry;

typedef struct {
    GpuOpExec exec;
    uint64_t bytes; /* payload bytes that follow, padded to 8 */
} GpuOpHeader;

struct GpuGraphs {
    /* the segment being recorded */
    unsigned char *ops;
    size_t ops_len, ops_cap, n_ops;
    GpuVarVals vars[GPU_VARS_MAX];
    int n_vars;
    unsigned char *uploads; /* upload data, each piece at an 8-aligned offset */
    size_t up_len, up_cap;
    uint64_t h1, h2;
    /* what segments read when they run */
    GpuVarVals *dev_vars;   /* GPU_VARS_MAX slots, device */
    unsigned char *pinned;  /* [GPU_VARS_BYTES of vars][uploads], pinned host */
    size_t pinned_cap;
    cudaEvent_t flushed;    /* recorded after each flush's work */
    bool flushed_recorded;
    bool flushing;
    /* graphs and keys seen once */
    GpuGraphEntry *cache;
    int cache_n, cache_max;
    uint64_t clock;
    GpuSegKey seen[GPU_SEEN_SLOTS];
    uint64_t seen_at[GPU_SEEN_SLOTS]; /* clock of the last sighting */
    bool seen_refused[GPU_SEEN_SLOTS]; /* its capture failed: run op by op */
    bool warned;            /* a failed capture was logged */
    long long break_at;     /* tests: the op of the next capture before which it
                               makes a call CUDA refuses, or -1 */
    bool break_launch;      /* tests: the next graph launch is refused */
    bool warned_alloc;      /* a graph with memory-allocation nodes was logged */
    bool warned_launch;     /* a refused graph launch was logged */
};

/* ---- hashing ---- */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static void hash_bytes(GpuGraphs *g, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, b + i, n - i < 8 ? n - i : 8);
        g->h1 = (g->h1 ^ w) * 0x100000001b3ULL;
        g->h2 = rotl64(g->h2 ^ (w * 0x9e3779b97f4a7c15ULL), 27) * 0xbf58476d1ce4e5b9ULL + 1;
    }
}

static void seg_reset(GpuGraphs *g) {
    g->ops_len = g->n_ops = 0;
    g->n_vars = 0;
    g->up_len = 0;
    g->h1 = 0xcbf29ce484222325ULL;
    g->h2 = 0x84222325cbf29ce4ULL;
}

static bool grow(unsigned char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    unsigned char *p = (unsigned char *)realloc(*buf, n);
    if (!p) return false;
    *buf = p;
    *cap = n;
    return true;
}

/* ---- recording ---- */

void gpu_submit(GpuContext *c, GpuOpExec exec, const void *payload, size_t bytes) {
    GpuGraphs *g = c->graphs;
    if (!g || g->flushing) {
        exec(c, payload);
        return;
    }
    if (c->failed) return;
    size_t padded = (bytes + 7) & ~(size_t)7;
    if (!grow(&g->ops, &g->ops_cap, g->ops_len + sizeof(GpuOpHeader) + padded)) {
        gpu_record(c, "recording an op", "out of host memory", __FILE__, __LINE__);
        return;
    }
    GpuOpHeader h = {exec, padded};
    unsigned char *at = g->ops + g->ops_len;
    memcpy(at, &h, sizeof h);
    memset(at + sizeof h, 0, padded);
    memcpy(at + sizeof h, payload, bytes);
    hash_bytes(g, at, sizeof h + padded);
    g->ops_len += sizeof h + padded;
    g->n_ops++;
}

GpuVar gpu_var(GpuContext *c, GpuVarVals v) {
    GpuVar r;
    memset(&r, 0, sizeof r);
    GpuGraphs *g = c->graphs;
    if (!g || g->flushing) {
        r.v = v;
        return r;
    }
    if (g->n_vars == GPU_VARS_MAX) gpu_flush(c);
    g->vars[g->n_vars] = v;
    r.ptr = g->dev_vars + g->n_vars++;
    return r;
}

/* an upload in the segment: the data goes to the pinned block at the flush */
typedef struct {
    void *dst;
    size_t off, bytes; /* in the pinned block's upload part */
} GpuStagedUpload;

static void staged_upload_exec(GpuContext *c, const void *payload) {
    GpuStagedUpload op;
    memcpy(&op, payload, sizeof op);
    c->counters.host_calls++;
    GPU_CUDA_TIMED(c, "cudaMemcpyAsync (upload)",
                   cudaMemcpyAsync(op.dst, c->graphs->pinned + GPU_VARS_BYTES + op.off, op.bytes,
                                   cudaMemcpyHostToDevice, gpu_exec_stream(c)));
}

void gpu_op_upload(GpuContext *c, void *dst, const void *host_src, size_t bytes) {
    GpuGraphs *g = c->graphs;
    if (g && bytes > GPU_RECORDED_UPLOAD_MAX) {
        gpu_flush(c); /* the work recorded before it goes first */
        g = NULL;
    }
    if (!g) {
        /* pageable memory: returns once the data is staged, so the caller
         * may reuse its buffer at once */
        c->counters.host_calls++;
        GPU_CUDA_TIMED(c, "cudaMemcpyAsync (upload)",
                       cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, gpu_exec_stream(c)));
        return;
    }
    size_t off = (g->up_len + 7) & ~(size_t)7;
    if (!grow(&g->uploads, &g->up_cap, off + bytes)) {
        gpu_record(c, "recording an upload", "out of host memory", __FILE__, __LINE__);
        return;
    }
    memcpy(g->uploads + off, host_src, bytes);
    g->up_len = off + bytes;
    GpuStagedUpload op = {dst, off, bytes};
    gpu_submit(c, staged_upload_exec, &op, sizeof op);
}

/* ---- the graph cache ---- */

static bool key_eq(const GpuSegKey *a, const GpuSegKey *b) {
    return a->h1 == b->h1 && a->h2 == b->h2 && a->n_ops == b->n_ops && a->n_vars == b->n_vars &&
           a->upload_bytes == b->upload_bytes;
}

static GpuGraphEntry *cache_find(GpuGraphs *g, const GpuSegKey *k) {
    for (int i = 0; i < g->cache_n; i++)
        if (key_eq(&g->cache[i].key, k)) return &g->cache[i];
    return NULL;
}

static void drop_graphs(GpuContext *c) {
    GpuGraphs *g = c->graphs;
    if (g->cache_n) GPU_CUDA(c, cudaStreamSynchronize(c->stream)); /* none may still run */
    for (int i = 0; i < g->cache_n; i++) GPU_CUDA(c, cudaGraphExecDestroy(g->cache[i].exec));
    g->cache_n = 0;
    memset(g->seen, 0, sizeof g->seen);
    memset(g->seen_at, 0, sizeof g->seen_at);
    memset(g->seen_refused, 0, sizeof g->seen_refused);
}

/* a free entry: a new one, or the least recently used one's */
static GpuGraphEntry *cache_slot(GpuContext *c) {
    GpuGraphs *g = c->graphs;
    if (g->cache_n < g->cache_max) return &g->cache[g->cache_n++];
    GpuGraphEntry *old = &g->cache[0];
    for (int i = 1; i < g->cache_n; i++)
        if (g->cache[i].last_use < old->last_use) old = &g->cache[i];
    GPU_CUDA(c, cudaStreamSynchronize(c->stream)); /* it may still run */
    GPU_CUDA(c, cudaGraphExecDestroy(old->exec));
    return old;
}

/* a key's slot in the table of keys seen, or -1 */
static long seen_slot(const GpuGraphs *g, const GpuSegKey *k) {
    size_t a = k->h1 % GPU_SEEN_SLOTS, b = k->h2 % GPU_SEEN_SLOTS;
    if (key_eq(&g->seen[a], k)) return (long)a;
    if (key_eq(&g->seen[b], k)) return (long)b;
    return -1;
}

enum { SEEN_FIRST, SEEN_AGAIN, SEEN_REFUSED };

/* SEEN_AGAIN the second time (and later times) a key is seen, SEEN_REFUSED
 * when its capture failed, else SEEN_FIRST (and the key is remembered) */
static int seen_before(GpuGraphs *g, const GpuSegKey *k) {
    g->clock++;
    long at = seen_slot(g, k);
    if (at >= 0) return g->seen_refused[at] ? SEEN_REFUSED : SEEN_AGAIN;
    size_t a = k->h1 % GPU_SEEN_SLOTS, b = k->h2 % GPU_SEEN_SLOTS;
    size_t older = g->seen_at[a] <= g->seen_at[b] ? a : b;
    g->seen[older] = *k;
    g->seen_at[older] = g->clock;
    g->seen_refused[older] = false;
    return SEEN_FIRST;
}

/* ---- running a segment ---- */

/* the segment's ops in order, after its GpuVar values; a test's refused
 * call (cuda_backend_test_break_capture) before op `break_at` */
static void run_ops(GpuContext *c, long long break_at) {
    GpuGraphs *g = c->graphs;
    if (g->n_vars) {
        c->counters.host_calls++;
        GPU_CUDA(c, cudaMemcpyAsync(g->dev_vars, g->pinned, g->n_vars * sizeof(GpuVarVals),
                                    cudaMemcpyHostToDevice, c->stream));
    }
    long long i = 0;
    for (size_t at = 0; at < g->ops_len && !c->failed; i++) {
        if (i == break_at) GPU_CUDA(c, cudaStreamSynchronize(gpu_exec_stream(c)));
        if (c->failed) break;
        GpuOpHeader h;
        memcpy(&h, g->ops + at, sizeof h);
        h.exec(c, g->ops + at + sizeof h);
        at += sizeof h + h.bytes;
    }
    if (break_at >= i && !c->failed) GPU_CUDA(c, cudaStreamSynchronize(gpu_exec_stream(c)));
}

/* the pinned block holds the vars and `uploads` bytes (a larger block has a
 * new address, which the cached graphs read from: they are dropped) */
static bool ensure_pinned(GpuContext *c, size_t uploads) {
    GpuGraphs *g = c->graphs;
    size_t need = GPU_VARS_BYTES + uploads;
    if (need <= g->pinned_cap) return true;
    size_t n = g->pinned_cap ? g->pinned_cap : GPU_VARS_BYTES + (256 << 10);
    while (n < need) n *= 2;
    drop_graphs(c);
    if (g->pinned) GPU_CUDA(c, cudaFreeHost(g->pinned));
    g->pinned = NULL;
    g->pinned_cap = 0;
    if (!GPU_CUDA(c, cudaMallocHost(&g->pinned, n))) return false;
    g->pinned_cap = n;
    return true;
}

/* CUDA refused a segment's capture or its graph's launch, which ran none
 * of its work: the refused call's error is cleared, the key refused (from
 * now on its segment runs op by op; a key forgotten since is remembered
 * again), the refusal counted, and the segment runs op by op from lane 0,
 * where every segment starts. */
static void run_refused(GpuContext *c, const GpuSegKey *key) {
    GpuGraphs *g = c->graphs;
    (void)cudaGetLastError(); /* a refused call leaves its error pending */
    c->exec_lane = 0;
    long at = seen_slot(g, key);
    if (at < 0) {
        seen_before(g, key);
        at = seen_slot(g, key);
    }
    if (at >= 0) g->seen_refused[at] = true;
    c->counters.capture_failures++;
    run_ops(c, -1);
}

/* A cached graph runs the segment: one host call. A launch that CUDA
 * refuses ran nothing of the graph (the H200, 2026-11-30, refused freshly
 * captured graphs with cudaErrorInvalidValue while graphs whose memory had
 * been freed were kept; gpu_graphs_forget now prevents that): the graph is
 * dropped, its key refused, and the segment runs op by op, where an error
 * is the work's own (a fault of earlier work that the launch reported
 * first is reported again by the ops). Logged once, counted as a failed
 * capture. */
static void launch_graph(GpuContext *c, GpuGraphEntry *e) {
    GpuGraphs *g = c->graphs;
    e->last_use = ++g->clock;
    c->counters.host_calls++;
    double t0 = gpu_clock();
    cudaError_t err = g->break_launch ? cudaErrorInvalidValue : cudaGraphLaunch(e->exec, c->stream);
    gpu_host_call_timed(c, "cudaGraphLaunch", t0);
    g->break_launch = false;
    if (err == cudaSuccess) {
        c->counters.graph_launches++;
        return;
    }
    GpuSegKey key = e->key;
    (void)cudaStreamSynchronize(c->stream); /* an earlier launch of it may still run */
    (void)cudaGraphExecDestroy(e->exec);
    *e = g->cache[--g->cache_n]; /* the last entry fills its place */
    if (!g->warned_launch)
        nmt_log_warn("cuda: CUDA refused to launch a cached graph (%s: %s), so that work runs without "
                     "a graph (NMT_CUDA_GRAPHS; logged once)", cudaGetErrorName(err), cudaGetErrorString(err));
    g->warned_launch = true;
    run_refused(c, &key);
}

/* how many memory-allocation nodes a captured graph holds (a library that
 * allocated while being captured: cuBLAS without a workspace, say); such a
 * graph can be relaunched only once its allocations are freed, which
 * cudaGraphInstantiateFlagAutoFreeOnLaunch does. Logged once. (The H200
 * run of 2026-11-30 counted none: cuBLAS uses the workspace we give it.) */
static void note_alloc_nodes(GpuContext *c, cudaGraph_t graph) {
    size_t n = 0;
    if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess || !n) return;
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)malloc(n * sizeof *nodes);
    if (!nodes) return;
    size_t allocs = 0;
    if (cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess)
        for (size_t i = 0; i < n; i++) {
            cudaGraphNodeType t;
            if (cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess && t == cudaGraphNodeTypeMemAlloc) allocs++;
        }
    free(nodes);
    c->counters.graph_alloc_nodes += (long long)allocs;
    if (allocs && !c->graphs->warned_alloc)
        nmt_log_warn("cuda: a captured graph of %zu nodes holds %zu memory-allocation nodes (a library "
                     "allocating during capture; logged once)", n, allocs);
    if (allocs) c->graphs->warned_alloc = true;
}

/* whether stream s (NULL: none) is out of every capture */
static bool not_capturing(GpuContext *c, cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    return !s || (GPU_CUDA(c, cudaStreamIsCapturing(s, &st)) && st == cudaStreamCaptureStatusNone);
}

/* A capture that failed (a call CUDA refused while capturing, a graph it
 * would not instantiate) ran nothing on the device: captured work runs
 * only when its graph is launched. So the failure is the capture's, not
 * the work's: its error is cleared, the key is refused from now on, and
 * the segment runs op by op, where an error is the work's own and stays
 * recorded (so does a fault of earlier work that the capture's calls
 * reported first: the ops report it again). Logged once. Not when a
 * stream is still capturing: the ops' work would be captured again. CUDA
 * never leaves one so (Programming Guide, "Cross-stream Dependencies and
 * Events": cudaStreamEndCapture takes every stream of the capture out of
 * capture mode, an unjoined one included); the check is a backstop. */
static void capture_failed(GpuContext *c, const GpuSegKey *key) {
    GpuGraphs *g = c->graphs;
    if (!not_capturing(c, c->stream) || !not_capturing(c, c->side)) return;
    char why[sizeof c->error];
    snprintf(why, sizeof why, "%s", c->error);
    c->failed = false;
    c->error[0] = '\0';
    if (!g->warned)
        nmt_log_warn("cuda: a CUDA graph capture failed, so that work runs without a graph "
                     "(NMT_CUDA_GRAPHS; logged once): %s", why);
    g->warned = true;
    run_refused(c, key);
}

static void capture_and_launch(GpuContext *c, const GpuSegKey *key) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    long long break_at = c->graphs->break_at;
    c->graphs->break_at = -1;
    /* relaxed: nothing else runs on this process's CUDA context meanwhile,
     * and a library call that is merely "potentially unsafe" during capture
     * (cuBLAS setting a kernel attribute, say) must not break it. The
     * segment ran op by op once before (it is captured on its second
     * sighting), so every kernel it launches, ours and cuBLAS's, is loaded
     * already: no lazy module loading happens inside the capture. */
    if (!GPU_CUDA(c, cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed))) {
        capture_failed(c, key);
        return;
    }
    run_ops(c, break_at);
    /* end the capture also after a failed op, so the stream is usable */
    double t0 = gpu_clock();
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    bool ok = !c->failed && GPU_CUDA(c, e);
    if (ok) note_alloc_nodes(c, graph);
    ok = ok && GPU_CUDA(c, cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    /* the exec keeps what it needs */
    if (graph) ok = GPU_CUDA(c, cudaGraphDestroy(graph)) && ok;
    gpu_host_call_timed(c, "cudaGraphInstantiate", t0);
    if (!ok) {
        if (exec) cudaGraphExecDestroy(exec);
        capture_failed(c, key);
        return;
    }
    GpuGraphEntry *slot = cache_slot(c);
    slot->key = *key;
    slot->exec = exec;
    c->counters.graphs_captured++;
    launch_graph(c, slot);
}

void gpu_flush(GpuContext *c) {
    GpuGraphs *g = c->graphs;
    if (!g || g->flushing) return;
    if (c->failed || (!g->n_ops && !g->n_vars)) {
        seg_reset(g);
        return;
    }
    bool cut = gpu_lanes_cut(c); /* between fork and join: join at the cut */
    g->flushing = true;
    GpuSegKey key = {g->h1, g->h2, g->n_ops, (uint64_t)g->n_vars, g->up_len};
    /* the previous flush's work has read the pinned block before it is
     * refilled; a segment with nothing to stage (a pipelined decoding step,
     * download_start) refills nothing, so it need not wait */
    bool stages = g->n_vars || g->up_len;
    double t0 = gpu_clock();
    bool ok = !stages || !g->flushed_recorded || GPU_CUDA(c, cudaEventSynchronize(g->flushed));
    gpu_wait_timed(c, t0);
    ok = ok && ensure_pinned(c, g->up_len);
    if (ok) {
        memcpy(g->pinned, g->vars, g->n_vars * sizeof(GpuVarVals));
        if (g->up_len) memcpy(g->pinned + GPU_VARS_BYTES, g->uploads, g->up_len);
        GpuGraphEntry *hit = cache_find(g, &key);
        if (hit) {
            launch_graph(c, hit);
        } else if (g->cache_max > 0 && seen_before(g, &key) == SEEN_AGAIN) {
            capture_and_launch(c, &key);
        } else {
            run_ops(c, -1);
        }
        /* after the last segment that read the block (one that staged
         * nothing did not: waiting for it would only stall the pipeline) */
        if (stages && GPU_CUDA(c, cudaEventRecord(g->flushed, c->stream))) g->flushed_recorded = true;
    }
    g->flushing = false;
    seg_reset(g);
    if (cut) gpu_lanes_refork(c);
}

/* ---- creation ---- */

bool gpu_graphs_create(GpuContext *c) {
    GpuGraphs *g = (GpuGraphs *)calloc(1, sizeof *g);
    if (!g) {
        gpu_record(c, "creating the graph recorder", "out of host memory", __FILE__, __LINE__);
        return false;
    }
    const char *max = getenv("NMT_CUDA_GRAPHS_MAX");
    g->cache_max = max && *max ? atoi(max) : GPU_GRAPHS_DEFAULT_MAX;
    g->break_at = -1;
    if (g->cache_max < 0) g->cache_max = 0;
    g->cache = (GpuGraphEntry *)calloc(g->cache_max ? g->cache_max : 1, sizeof *g->cache);
    seg_reset(g);
    c->graphs = g;
    if (!g->cache) {
        gpu_record(c, "creating the graph cache", "out of host memory", __FILE__, __LINE__);
        return false;
    }
    return GPU_CUDA(c, cudaMalloc(&g->dev_vars, GPU_VARS_BYTES)) &&
           GPU_CUDA(c, cudaEventCreateWithFlags(&g->flushed, cudaEventDisableTiming)) &&
           ensure_pinned(c, 0);
}

void gpu_graphs_test_break_capture(GpuContext *c, long long at_op) {
    if (c->graphs) c->graphs->break_at = at_op;
}

/* Device memory is about to be freed: no cached graph may outlive it. A
 * graph that reads freed memory must never run again, and on the H200
 * (2026-11-30) graphs kept after the memory they use was freed and handed
 * out again broke later launches: cudaGraphLaunch refused a freshly
 * captured graph (cudaErrorInvalidValue) or crashed inside the driver,
 * while the same GEMMs with a cache of one graph (NMT_CUDA_GRAPHS_MAX=1)
 * ran right. So every graph is dropped, and every key forgotten; nmt
 * frees device memory only when a model or optimizer goes away, so a
 * training or decoding loop keeps its graphs. */
void gpu_graphs_forget(GpuContext *c) {
    if (c->graphs) drop_graphs(c);
}

void gpu_graphs_test_break_launch(GpuContext *c) {
    if (c->graphs) c->graphs->break_launch = true;
}

void gpu_graphs_destroy(GpuContext *c) {
    GpuGraphs *g = c->graphs;
    if (!g) return;
    gpu_flush(c);
    /* teardown: what it reports dies with the backend */
    cudaStreamSynchronize(c->stream); /* nothing may still read the blocks freed below */
    drop_graphs(c);
    if (g->flushed) cudaEventDestroy(g->flushed);
    if (g->pinned) cudaFreeHost(g->pinned);
    if (g->dev_vars) cudaFree(g->dev_vars);
    free(g->ops);
    free(g->uploads);
    free(g->cache);
    free(g);
    c->graphs = NULL;
}
