/* emu_cupti.cpp: the emulated CUPTI activity API (cupti.h beside this file)
 * and emu_activity_run, through which the emulator runs every queued
 * kernel, copy and memset. Records are written one after another, each
 * padded to 8 bytes, into the buffer the client's request callback gave;
 * a full buffer (or a flush) goes back through its completion callback.
 * A record that does not fit an empty buffer, or that finds no buffer, is
 * dropped and counted, as in CUPTI. Everything runs on the host thread
 * that drains the streams, so nothing here locks. */
#include "cupti.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_runtime.h"

static CUpti_BuffersCallbackRequestFunc emu_requested;
static CUpti_BuffersCallbackCompleteFunc emu_completed;
static bool emu_kernels_on, emu_copies_on, emu_memsets_on;
static uint8_t *emu_buf;
static size_t emu_buf_size, emu_buf_used, emu_dropped;

static uint64_t emu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t emu_record_size(CUpti_ActivityKind kind) {
    size_t n = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
               : kind == CUPTI_ACTIVITY_KIND_MEMCPY         ? sizeof(CUpti_ActivityMemcpy6)
               : kind == CUPTI_ACTIVITY_KIND_MEMSET         ? sizeof(CUpti_ActivityMemset4)
                                                            : sizeof(CUpti_Activity);
    return (n + 7) & ~(size_t)7;
}

/* the buffer in use goes back to the client */
static void emu_complete_buffer(void) {
    if (!emu_buf) return;
    uint8_t *b = emu_buf;
    size_t size = emu_buf_size, used = emu_buf_used;
    emu_buf = NULL;
    emu_buf_size = emu_buf_used = 0;
    emu_completed(NULL, 0, b, size, used);
}

/* n bytes for a record, or NULL (the record dropped) */
static void *emu_reserve(size_t n) {
    if (emu_buf && emu_buf_used + n > emu_buf_size) emu_complete_buffer();
    if (!emu_buf) {
        size_t max_records = 0;
        emu_requested(&emu_buf, &emu_buf_size, &max_records);
        emu_buf_used = 0;
        if (emu_buf && emu_buf_size < n) emu_complete_buffer(); /* too small: back, empty */
        if (!emu_buf) {
            emu_dropped++;
            return NULL;
        }
    }
    void *p = emu_buf + emu_buf_used;
    emu_buf_used += n;
    memset(p, 0, n);
    return p;
}

static uint8_t emu_copy_kind(int kind) {
    switch (kind) {
    case cudaMemcpyHostToDevice: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case cudaMemcpyDeviceToHost: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case cudaMemcpyDeviceToDevice: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case cudaMemcpyHostToHost: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    default: return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
    }
}

void emu_activity_run(EmuActivity what, const char *name, int copy_kind, size_t bytes,
                      const std::function<void()> &work) {
    bool on = emu_requested && (what == EMU_ACTIVITY_KERNEL   ? emu_kernels_on
                                : what == EMU_ACTIVITY_COPY   ? emu_copies_on
                                                              : emu_memsets_on);
    if (!on) {
        work();
        return;
    }
    uint64_t start = emu_now_ns();
    work();
    uint64_t end = emu_now_ns();
    if (what == EMU_ACTIVITY_KERNEL) {
        auto *r = (CUpti_ActivityKernel10 *)emu_reserve(emu_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        if (!r) return;
        r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r->start = start;
        r->end = end;
        r->name = name; /* static storage, shared by all its records, as in CUPTI */
    } else if (what == EMU_ACTIVITY_COPY) {
        auto *r = (CUpti_ActivityMemcpy6 *)emu_reserve(emu_record_size(CUPTI_ACTIVITY_KIND_MEMCPY));
        if (!r) return;
        r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r->copyKind = emu_copy_kind(copy_kind);
        r->bytes = bytes;
        r->start = start;
        r->end = end;
    } else {
        auto *r = (CUpti_ActivityMemset4 *)emu_reserve(emu_record_size(CUPTI_ACTIVITY_KIND_MEMSET));
        if (!r) return;
        r->kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r->bytes = bytes;
        r->start = start;
        r->end = end;
    }
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                           CUpti_BuffersCallbackCompleteFunc completed) {
    if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
    emu_requested = requested;
    emu_completed = completed;
    return CUPTI_SUCCESS;
}

static CUptiResult emu_set_kind(CUpti_ActivityKind kind, bool on) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: emu_kernels_on = on; return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_MEMCPY: emu_copies_on = on; return CUPTI_SUCCESS;
    case CUPTI_ACTIVITY_KIND_MEMSET: emu_memsets_on = on; return CUPTI_SUCCESS;
    default: return CUPTI_ERROR_INVALID_PARAMETER;
    }
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { return emu_set_kind(kind, true); }
CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return emu_set_kind(kind, false); }

CUptiResult cuptiActivityFlushAll(uint32_t) {
    if (!emu_requested) return CUPTI_ERROR_NOT_INITIALIZED;
    emu_complete_buffer();
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = *record ? (size_t)((uint8_t *)*record - buffer) + emu_record_size((*record)->kind) : 0;
    if (off + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + off);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t *dropped) {
    if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = emu_dropped;
    emu_dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
    switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; break;
    }
    return CUPTI_SUCCESS;
}

/* EMU_CUPTI_VERSION=N: the version the library reports (default the header's), for
 * the test of a libcupti other than the build's */
CUptiResult cuptiGetVersion(uint32_t *version) {
    if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
    const char *v = getenv("EMU_CUPTI_VERSION");
    *version = v && *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}
