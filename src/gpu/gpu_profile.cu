/* gpu_profile.cu: the device profile of NMT_CUDA_PROFILE=1 (docs/gpu.md,
 * "Profile"). CUPTI's activity API, NVIDIA's library for tracing what ran
 * on the device, hands back a record of every kernel (nmt's by their
 * names, cuBLAS's by theirs, also inside CUDA graphs), copy and memset
 * with its start and end on the device's clock; they are gathered into a
 * ProfileTable (src/profile_table.c), which reports the device's busy
 * time against the wall time and where it went, kernel by kernel. That is
 * what says whether a run is bound by the device or by the host, and
 * which kernels to work on, without a profiler installed on the GPU
 * machine (nsys is not part of the toolkit nmt builds with).
 *
 * CUPTI is opened with dlopen when a backend starts profiling, like cuBLAS
 * and by the same loader (gpu_cublas.cu, gpu_dlopen_symbols): libcupti.so.<CUDA major>, found through the run path
 * (the build's toolkit), LD_LIBRARY_PATH or the loader's cache; gpu-bundle
 * carries the build's own. Its records are read as the structures of the
 * CUPTI headers of the build, so a library of another CUPTI version is
 * refused (the layouts change between versions). The emulator build uses
 * the emulated CUPTI of tests/gpu_emu/ instead.
 *
 * CUPTI's activity tracing is one per process: the first backend that
 * profiles turns it on, the last one to stop turns it off. Two locks:
 * session_lock over starting, stopping and collecting (the CUPTI calls),
 * profile_lock over the table only. CUPTI may return buffers from a thread
 * of its own, or from inside its calls, and the callback takes
 * profile_lock, so no CUPTI call is made while holding it. CUPTI 13.0 lets
 * one tool trace a process: under nsys or another CUPTI tool,
 * NMT_CUDA_PROFILE=1 is refused (cuptiActivityEnable fails). */
#include "gpu/gpu_internal.cuh"

#ifdef NMT_CUDA_EMU
#include "cupti.h"
#else
#include <cupti.h>
#include <type_traits>
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_table.h"

/* the CUPTI entry points used */
struct GpuCupti {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                      CUpti_BuffersCallbackCompleteFunc completed);
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*next_record)(uint8_t *buffer, size_t valid_bytes, CUpti_Activity **record);
    CUptiResult (*dropped)(CUcontext context, uint32_t stream, size_t *dropped);
    CUptiResult (*result_string)(CUptiResult result, const char **str);
    CUptiResult (*version)(uint32_t *version);
};

#ifndef NMT_CUDA_EMU
/* the table's types are the header's own: a changed signature fails here */
static_assert(std::is_same<decltype(GpuCupti::register_callbacks),
                           decltype(&cuptiActivityRegisterCallbacks)>::value, "register_callbacks");
static_assert(std::is_same<decltype(GpuCupti::enable), decltype(&cuptiActivityEnable)>::value, "enable");
static_assert(std::is_same<decltype(GpuCupti::disable), decltype(&cuptiActivityDisable)>::value, "disable");
static_assert(std::is_same<decltype(GpuCupti::flush_all), decltype(&cuptiActivityFlushAll)>::value, "flush_all");
static_assert(std::is_same<decltype(GpuCupti::next_record), decltype(&cuptiActivityGetNextRecord)>::value,
              "next_record");
static_assert(std::is_same<decltype(GpuCupti::dropped), decltype(&cuptiActivityGetNumDroppedRecords)>::value,
              "dropped");
static_assert(std::is_same<decltype(GpuCupti::result_string), decltype(&cuptiGetResultString)>::value,
              "result_string");
static_assert(std::is_same<decltype(GpuCupti::version), decltype(&cuptiGetVersion)>::value, "version");
#endif

/* the record structures of this CUPTI version (their names carry it) */
typedef CUpti_ActivityKernel10 GpuKernelRecord;
typedef CUpti_ActivityMemcpy6 GpuCopyRecord;
typedef CUpti_ActivityMemset4 GpuMemsetRecord;

/* the buffer CUPTI fills (a record takes about 200 bytes) */
#define GPU_PROFILE_BUFFER (8u << 20)

static const CUpti_ActivityKind profile_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, /* unlike _KERNEL, keeps kernels concurrent */
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

static GpuCupti cupti;
static bool cupti_tried, cupti_loaded, callbacks_registered;
static char cupti_error[300];

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER; /* start, stop, collect */
static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER; /* the table */
static ProfileTable *profile; /* while profile_users > 0 (under profile_lock) */
static int profile_users;     /* under session_lock */

static bool cupti_load(void) {
#ifdef NMT_CUDA_EMU
    cupti.register_callbacks = cuptiActivityRegisterCallbacks;
    cupti.enable = cuptiActivityEnable;
    cupti.disable = cuptiActivityDisable;
    cupti.flush_all = cuptiActivityFlushAll;
    cupti.next_record = cuptiActivityGetNextRecord;
    cupti.dropped = cuptiActivityGetNumDroppedRecords;
    cupti.result_string = cuptiGetResultString;
    cupti.version = cuptiGetVersion;
    return true;
#else
    char name[32];
    snprintf(name, sizeof name, "libcupti.so.%d", CUDART_VERSION / 1000);
    const GpuSymbol want[] = {
        {"cuptiActivityRegisterCallbacks", (void **)&cupti.register_callbacks},
        {"cuptiActivityEnable", (void **)&cupti.enable},
        {"cuptiActivityDisable", (void **)&cupti.disable},
        {"cuptiActivityFlushAll", (void **)&cupti.flush_all},
        {"cuptiActivityGetNextRecord", (void **)&cupti.next_record},
        {"cuptiActivityGetNumDroppedRecords", (void **)&cupti.dropped},
        {"cuptiGetResultString", (void **)&cupti.result_string},
        {"cuptiGetVersion", (void **)&cupti.version},
    };
    return gpu_dlopen_symbols(name, "the CUDA toolkit's CUPTI", want, sizeof want / sizeof *want, cupti_error,
                              sizeof cupti_error);
#endif
}

/* "what: CUPTI_ERROR_..." into cupti_error; false */
static bool cupti_failed(const char *what, CUptiResult r) {
    const char *s = NULL;
    if (cupti.result_string(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI result";
    snprintf(cupti_error, sizeof cupti_error, "%s: %s (%d)", what, s, (int)r);
    return false;
}

static ProfileKind copy_kind(uint8_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return PROFILE_COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return PROFILE_COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return PROFILE_COPY_DTOD;
    default: return PROFILE_COPY_OTHER;
    }
}

/* one record into the table (under profile_lock) */
static void add_record(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const GpuKernelRecord *k = (const GpuKernelRecord *)r;
        profile_table_add(profile, PROFILE_KERNEL, k->name, k->start, k->end, 0);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const GpuCopyRecord *m = (const GpuCopyRecord *)r;
        profile_table_add(profile, copy_kind(m->copyKind), NULL, m->start, m->end, m->bytes);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const GpuMemsetRecord *m = (const GpuMemsetRecord *)r;
        profile_table_add(profile, PROFILE_MEMSET, NULL, m->start, m->end, m->bytes);
        break;
    }
    default: break; /* a kind not asked for */
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    /* CUPTI wants 8-byte alignment (ACTIVITY_RECORD_ALIGNMENT); no buffer: its records are dropped */
    *buffer = (uint8_t *)aligned_alloc(8, GPU_PROFILE_BUFFER);
    *size = *buffer ? GPU_PROFILE_BUFFER : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
    pthread_mutex_lock(&profile_lock);
    if (profile && buffer) {
        CUpti_Activity *r = NULL;
        CUptiResult res;
        while ((res = cupti.next_record(buffer, valid, &r)) == CUPTI_SUCCESS) add_record(r);
        /* MAX_LIMIT_REACHED: the end. INVALID_KIND: an incomplete record
         * (only a forced flush of work still running returns one), and the
         * rest of the buffer with it: at least one record lost */
        if (res != CUPTI_ERROR_MAX_LIMIT_REACHED) profile_table_note_dropped(profile, 1);
    }
    pthread_mutex_unlock(&profile_lock);
    free(buffer);
}

/* CUPTI loaded (once) and of the build's version; else false and the
 * reason in cupti_error. Needs no GPU. */
static bool cupti_ready(void) {
    if (!cupti_tried) {
        cupti_tried = true;
        cupti_loaded = cupti_load();
    }
    if (!cupti_loaded) return false;
    uint32_t version = 0;
    CUptiResult r = cupti.version(&version);
    if (r != CUPTI_SUCCESS) return cupti_failed("cuptiGetVersion", r);
    if (version != CUPTI_API_VERSION) {
        snprintf(cupti_error, sizeof cupti_error, "the CUPTI library found has API version %u, "
                 "nmt was built with %u: its records may be laid out otherwise; put the build's "
                 "libcupti first on LD_LIBRARY_PATH", version, (unsigned)CUPTI_API_VERSION);
        return false;
    }
    return true;
}

extern "C" int cuda_backend_profile_load(char *err, size_t err_size) {
    bool ok = cupti_ready();
    if (!ok && err && err_size) snprintf(err, err_size, "%s", cupti_error);
    return ok;
}

/* nmt's kernel names noted in the table so far (pointers to GPU_LAUNCH's
 * literals), so that a launch looks them up without the lock */
#define GPU_PROFILE_NAMES 128
static const char *noted[GPU_PROFILE_NAMES];
static int n_noted;

void gpu_profile_note_kernel(const char *name) {
    for (int i = 0; i < n_noted; i++)
        if (noted[i] == name) return;
    pthread_mutex_lock(&profile_lock);
    if (profile && profile_table_note_own(profile, name) == 0 && n_noted < GPU_PROFILE_NAMES)
        noted[n_noted++] = name;
    pthread_mutex_unlock(&profile_lock);
}

/* the table given up (under session_lock, no CUPTI kind enabled) */
static void profile_drop(void) {
    pthread_mutex_lock(&profile_lock);
    profile_table_destroy(profile);
    profile = NULL;
    n_noted = 0; /* the next table learns the names again */
    pthread_mutex_unlock(&profile_lock);
}

bool gpu_profile_start(GpuContext *c, char *err, size_t err_size) {
    pthread_mutex_lock(&session_lock);
    bool ok = cupti_ready();
    if (ok && profile_users == 0) {
        ProfileTable *t = profile_table_create();
        pthread_mutex_lock(&profile_lock);
        profile = t;
        pthread_mutex_unlock(&profile_lock);
        if (!t) {
            snprintf(cupti_error, sizeof cupti_error, "out of host memory");
            ok = false;
        }
        if (ok && !callbacks_registered) { /* once per process */
            CUptiResult r = cupti.register_callbacks(buffer_requested, buffer_completed);
            if (r == CUPTI_SUCCESS) callbacks_registered = true;
            else ok = cupti_failed("cuptiActivityRegisterCallbacks", r);
        }
        for (size_t i = 0; ok && i < sizeof profile_kinds / sizeof *profile_kinds; i++) {
            CUptiResult r = cupti.enable(profile_kinds[i]);
            if (r != CUPTI_SUCCESS) ok = cupti_failed("cuptiActivityEnable", r);
        }
        if (!ok) {
            if (callbacks_registered) {
                for (CUpti_ActivityKind k : profile_kinds) cupti.disable(k);
                cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            }
            profile_drop();
        }
    }
    if (ok) profile_users++;
    pthread_mutex_unlock(&session_lock);
    if (!ok) snprintf(err, err_size, "NMT_CUDA_PROFILE=1: %s", cupti_error);
    c->profiling = ok;
    return ok;
}

/* Every record of the work queued so far into the table (under
 * session_lock): c's device waited for (cuptiActivityFlushAll does not
 * wait for the device), CUPTI's buffers flushed (forced, so that none is
 * held back; after the wait no record is still open) and the records it
 * dropped since the last collect counted. */
static void profile_collect(GpuContext *c) {
    gpu_flush(c);
    cudaSetDevice(c->device); /* the device synchronised below */
    cudaDeviceSynchronize();
    cudaGetLastError(); /* a failure is the stream's to report, not the profile's */
    CUptiResult r = cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) {
        cupti_failed("cuptiActivityFlushAll", r);
        nmt_log_warn("NMT_CUDA_PROFILE: %s: the profile may lack records", cupti_error);
    }
    size_t dropped = 0; /* the global queue's count, reset by the call */
    if (cupti.dropped(NULL, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
    pthread_mutex_lock(&profile_lock);
    if (profile && dropped) profile_table_note_dropped(profile, dropped);
    pthread_mutex_unlock(&profile_lock);
}

void gpu_profile_stop(GpuContext *c) {
    if (!c->profiling) return;
    c->profiling = false;
    pthread_mutex_lock(&session_lock);
    if (--profile_users == 0) {
        profile_collect(c); /* nothing left in flight that could still report */
        for (CUpti_ActivityKind k : profile_kinds) cupti.disable(k);
        cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        profile_drop();
    }
    pthread_mutex_unlock(&session_lock);
}

/* be's context when it is a CUDA backend that profiles, else NULL */
static GpuContext *profiling_context(Backend *be) {
    if (!be || !be->name || strcmp(be->name, "cuda") != 0 || !be->ctx) return NULL;
    GpuContext *c = gpu_ctx(be);
    return c->profiling ? c : NULL;
}

/* collects (profile_collect), then runs use(table) under both locks; -1
 * for a backend that does not profile */
template <class Use>
static int with_profile(Backend *be, Use use) {
    GpuContext *c = profiling_context(be);
    if (!c) return -1;
    pthread_mutex_lock(&session_lock);
    profile_collect(c);
    pthread_mutex_lock(&profile_lock);
    use(profile, c);
    pthread_mutex_unlock(&profile_lock);
    pthread_mutex_unlock(&session_lock);
    return 0;
}

extern "C" int cuda_backend_profile_restart(Backend *be) {
    return with_profile(be, [](ProfileTable *t, GpuContext *) { profile_table_clear(t); });
}

extern "C" int cuda_backend_profile_write(Backend *be, FILE *out, const char *prefix, long steps,
                                          double wall_seconds) {
    int r = with_profile(be, [&](ProfileTable *t, GpuContext *c) {
        profile_table_write(t, out, prefix, c->profile_rows, steps, wall_seconds);
    });
    if (r == 0) fflush(out);
    return r;
}

extern "C" int cuda_backend_profile_summary(Backend *be, ProfileSummary *out) {
    return with_profile(be, [&](ProfileTable *t, GpuContext *) { profile_table_summary(t, out); });
}
