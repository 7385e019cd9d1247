/* gpu_backend.h: the CUDA Backend (backend.h) and its entry points, callable
 * from C. Implemented by src/gpu/gpu_backend.cu (with gpu_gemm.cu and
 * gpu_ops.cu) in CUDA builds, and by src/gpu/gpu_backend_none.c (stubs that
 * answer "built without CUDA") otherwise. Design: docs/gpu.md.
 *
 * Slots cannot fail (backend.h). A failed CUDA, cuBLAS or kernel launch is
 * recorded in the backend instead: from then on every slot is a no-op
 * (download fills the host buffer with zeros, sum_squares returns NaN,
 * alloc returns NULL), and cuda_backend_error() returns the first message,
 * which names the call, the source file and line and the CUDA error.
 *
 * Environment, read by cuda_backend_create:
 *   NMT_SYNC_DEBUG=1  synchronise and check after every launch and copy
 *                     (slow; errors then name the op that caused them)
 *   NMT_TF32=1        let cuBLAS use TF32 tensor cores for sgemm (about
 *                     1e-3 relative error; off by default: plain float32)
 *   NMT_CUDA_GRAPHS=0 run every op at once instead of the default: the
 *                     work between two host waits recorded and run as a
 *                     CUDA graph once the same work was seen before (the
 *                     same kernels, shapes and buffers: the same batch
 *                     shape); on by default since the H200 runs of
 *                     2026-12-04 (the same losses, 1.33-1.40x real training).
 *                     Off with NMT_SYNC_DEBUG. docs/gpu.md
 *   NMT_CUDA_GRAPHS_MAX=N  graphs kept (default 512, least recently used
 *                     dropped)
 *   NMT_CUDA_LANES=0  run lane 1's work (backend.h, lanes: the encoder's
 *                     reverse direction) on the one stream instead of a
 *                     second one (default: a second stream)
 *   NMT_CUDA_PERSISTENT=1  run the encoder's LSTM recurrence (the slots
 *                     lstm_seq_recurrence and its backward) as one
 *                     cooperative kernel per layer with the recurrent
 *                     weights resident in shared memory, where the shapes
 *                     fit, instead of a GEMM and a cell kernel per step;
 *                     off by default until a GPU run has checked it.
 *                     docs/gpu.md, "Persistent recurrence"
 *   NMT_CUDA_SLOW_CALL_MS=X  host calls over X ms count as slow
 *                     (CudaCounters; default 1)
 *   NMT_CUDA_PROFILE=1  the device profile: CUPTI's record of every kernel,
 *                     copy and memset that runs on the device, reported as
 *                     the device's busy time and a row per kernel name
 *                     (cuda_backend_profile_write; nmt train and translate
 *                     write it on exit). 0 or unset: off. docs/gpu.md,
 *                     "Profile"
 *   NMT_CUDA_PROFILE_ROWS=N  rows of that report (default 25) */
#ifndef NMT_GPU_BACKEND_H
#define NMT_GPU_BACKEND_H

#include <stddef.h>
#include <stdio.h>

#include "backend.h"
#include "profile_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has CUDA and the runtime sees at least one GPU. Never
 * aborts, also without a driver. */
int cuda_backend_available(void);

/* A Backend on CUDA device `device` (0-based), with its own stream, cuBLAS
 * handle and workspace. Returns NULL and writes a one-line reason into err
 * (err_size bytes; err may be NULL) when the build has no CUDA, no driver or
 * GPU is visible, the device does not exist, or setup fails. Never aborts.
 * The caller frees it with be->destroy(be). One device per process: the
 * slots run on the thread that created it (cudaSetDevice is per thread). */
Backend *cuda_backend_create(int device, char *err, size_t err_size);

/* Loads the libraries the CUDA backend opens at run time (cuBLAS, see
 * src/gpu/gpu_cublas.cu); needs no GPU. 1 when they load, else 0 and the
 * reason in err (also "built without CUDA"). cuda_backend_create calls it. */
int cuda_backend_load_libraries(char *err, size_t err_size);

/* The first recorded CUDA error of a backend made by cuda_backend_create,
 * or NULL while none happened (also for be == NULL). */
const char *cuda_backend_error(Backend *be);

/* What a CUDA backend has done since it was made: the figures behind the
 * rule "no allocation and no wait for the device inside a training step
 * except reading back the loss and the logged statistics" (docs/gpu.md),
 * which the parity test checks per step. */
typedef struct {
    long long allocs;       /* cudaMalloc calls (the alloc slot) */
    long long host_waits;   /* times the host waited for the stream (download, sum_squares,
                               download_finish) */
    long long downloads_started; /* download_start calls: copies the host waited for
                                    later, in download_finish */
    long long uploads;      /* upload calls (cudaMemcpyAsync from host memory) */
    long long upload_bytes;
    long long launches;     /* kernel launches the slots asked for */
    long long cublas_calls; /* GEMM calls the slots asked for (cuBLAS, or nmt's own kernel
                               with NMT_CUDA_GEMM=own: then not counted in launches) */
    bool own_gemm;          /* the backend's GEMMs are nmt's own kernel (NMT_CUDA_GEMM=own;
                               cuBLAS not loaded) */
    long long host_calls;   /* CUDA and cuBLAS calls that put work on the stream: one
                               per launch, GEMM and copy, or one per graph launch
                               (a graph replays a segment without the host) */
    long long graph_launches;  /* NMT_CUDA_GRAPHS: segments run as a cached graph */
    long long graphs_captured; /* NMT_CUDA_GRAPHS: segments captured into a graph */
    long long capture_failures; /* NMT_CUDA_GRAPHS: captures (or launches of a cached
                                   graph) CUDA refused; such segments run op by op
                                   (docs/gpu.md, "CUDA graphs") */
    long long graph_alloc_nodes; /* NMT_CUDA_GRAPHS: memory-allocation nodes in the
                                    graphs captured (a library allocating under capture) */
    long long lane_forks;      /* forks (backend.h, lanes) asked for, with or without
                                  NMT_CUDA_LANES */
    long long persistent_runs; /* recurrences (forward or backward) run by the
                                  persistent kernel (NMT_CUDA_PERSISTENT) */
    /* Host time, wall clock, in seconds: inside the calls that put work on
     * the stream (each op's CUDA or cuBLAS calls, a graph's launch or
     * capture), and waiting for the device (the host waits above, and
     * cudaMalloc and cudaFree, which wait too). Next to a run's wall time
     * they say where it went: mostly waits, the device bounds it; mostly
     * host calls, the host does. */
    double host_call_seconds;
    double wait_seconds;
    /* Host calls that took longer than NMT_CUDA_SLOW_CALL_MS (default 1
     * ms): mostly first-use costs, such as a kernel's module loaded at its
     * first launch or a GEMM shape's first cuBLAS call. slow_summary names
     * the three kinds of call with the most such time, e.g.
     * "cublasSgemm 12 x 85.3 ms, topk_kernel 1 x 2.1 ms" (empty: none). */
    long long slow_calls;
    double slow_seconds;
    char slow_summary[192];
} CudaCounters;

/* Fills *out and returns 0 for a backend made by cuda_backend_create; -1
 * (and zeros) for any other backend or NULL. */
int cuda_backend_counters(Backend *be, CudaCounters *out);

/* The device's free and total memory in bytes (cudaMemGetInfo) for a
 * backend made by cuda_backend_create: 0, or -1 (and zeros) for any other
 * backend, NULL, or when CUDA cannot say. Records no error. */
int cuda_backend_memory(Backend *be, size_t *free_bytes, size_t *total_bytes);

/* The device profile (NMT_CUDA_PROFILE=1). Each waits for the device
 * first, so that every record of the work queued so far is in.
 * restart forgets what was recorded so far (bench_train: the warm-up);
 * write prints the report (profile_table_write: every line starting with
 * prefix, NMT_CUDA_PROFILE_ROWS rows, per step when steps > 0, busy time
 * against wall_seconds when > 0); summary fills *out. Each returns 0, or
 * -1 for a backend that does not profile (any but a CUDA backend made
 * with NMT_CUDA_PROFILE=1, or NULL). */
int cuda_backend_profile_restart(Backend *be);
/* Loads CUPTI as NMT_CUDA_PROFILE does and checks that it is of the
 * build's version; needs no GPU. 1, or 0 and the reason in err (also
 * "built without CUDA"). */
int cuda_backend_profile_load(char *err, size_t err_size);
int cuda_backend_profile_write(Backend *be, FILE *out, const char *prefix, long steps,
                               double wall_seconds);
int cuda_backend_profile_summary(Backend *be, ProfileSummary *out);

/* For tests of a failed capture (NMT_CUDA_GRAPHS): the backend's next
 * stream capture makes a call that CUDA refuses during a capture (it
 * synchronises the stream) just before the segment's op `at_op` (0-based;
 * at or past the segment's end: after its last op), as a library might.
 * The backend must then run that segment op by op, with no error. No
 * effect on other backends or without NMT_CUDA_GRAPHS. */
void cuda_backend_test_break_capture(Backend *be, long long at_op);

/* For tests of a refused graph launch (NMT_CUDA_GRAPHS): the backend's next
 * launch of a cached graph is treated as one CUDA refused (nothing is
 * launched). The backend must then drop that graph and run the segment op
 * by op, with no error. No effect on other backends or without graphs. */
void cuda_backend_test_break_launch(Backend *be);

/* For tests: turns the persistent recurrence (NMT_CUDA_PERSISTENT) on or
 * off for a backend made by cuda_backend_create. 0, or -1 when be is no
 * such backend or `on` asks for what the device cannot do (no cooperative
 * launch). */
int cuda_backend_set_persistent(Backend *be, int on);

#ifdef __cplusplus
}
#endif

#endif
