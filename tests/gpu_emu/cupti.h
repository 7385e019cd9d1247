/* cupti.h (emulator): the part of CUPTI's activity API that nmt's device
 * profile uses (src/gpu/gpu_profile.cu), emulated: once a kind is enabled,
 * every emulated kernel (nmt's, by the name its launch gives, and the
 * emulated cuBLAS's "emu_sgemm"), copy and memset that runs leaves a
 * record with its host wall-clock start and end, written into buffers that
 * the registered callback hands out and returned through the other one
 * when full or flushed, as CUPTI does. The names, values and record fields
 * are CUPTI 13.0's; the records hold only the fields nmt reads, so the
 * layout is this emulator's own. See cuda_runtime.h beside this file. */
#ifndef NMT_GPU_EMU_CUPTI_H
#define NMT_GPU_EMU_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI
#define CUPTI_API_VERSION 130001

typedef void *CUcontext;

typedef enum {
    CUPTI_SUCCESS = 0,
    CUPTI_ERROR_INVALID_PARAMETER = 1,
    CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
    CUPTI_ERROR_NOT_INITIALIZED = 15,
    CUPTI_ERROR_INVALID_KIND = 21,
} CUptiResult;

typedef enum {
    CUPTI_ACTIVITY_KIND_INVALID = 0,
    CUPTI_ACTIVITY_KIND_MEMCPY = 1,
    CUPTI_ACTIVITY_KIND_MEMSET = 2,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
} CUpti_ActivityKind;

typedef enum {
    CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
    CUPTI_ACTIVITY_MEMCPY_KIND_HTOD = 1,
    CUPTI_ACTIVITY_MEMCPY_KIND_DTOH = 2,
    CUPTI_ACTIVITY_MEMCPY_KIND_DTOD = 8,
    CUPTI_ACTIVITY_MEMCPY_KIND_HTOH = 9,
} CUpti_ActivityMemcpyKind;

#define CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1u

typedef struct {
    CUpti_ActivityKind kind;
} CUpti_Activity;

typedef struct {
    CUpti_ActivityKind kind;
    uint64_t start, end;
    uint32_t streamId;
    const char *name;
} CUpti_ActivityKernel10;

typedef struct {
    CUpti_ActivityKind kind;
    uint8_t copyKind;
    uint64_t bytes;
    uint64_t start, end;
    uint32_t streamId;
} CUpti_ActivityMemcpy6;

typedef struct {
    CUpti_ActivityKind kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start, end;
    uint32_t streamId;
} CUpti_ActivityMemset4;

typedef void(CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                         size_t *maxNumRecords);
typedef void(CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId,
                                                          uint8_t *buffer, size_t size,
                                                          size_t validSize);

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                           CUpti_BuffersCallbackCompleteFunc completed);
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind);
CUptiResult cuptiActivityFlushAll(uint32_t flag);
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                       CUpti_Activity **record);
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                              size_t *dropped);
CUptiResult cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult cuptiGetVersion(uint32_t *version);

#endif
