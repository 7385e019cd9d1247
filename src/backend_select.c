/* backend_select.c: device setting -> Backend (backend_select.h). */
#include "backend_select.h"

#include <stdlib.h>

#include "config.h"
#include "gpu/gpu_backend.h"

/* backend_create_for without the decoding settings from the environment */
static NmtStatus backend_create_device(int device, int gpu, int threads, const char *what,
                                       const char *gpu_what, Backend **out) {
    if (device == CFG_DEVICE_CUDA || (device == CFG_DEVICE_AUTO && cuda_backend_available())) {
        char err[512] = "";
        *out = cuda_backend_create(gpu, err, sizeof err);
        if (*out) return NMT_OK;
        const char *why = err[0] ? err : "no GPU is usable";
        if (gpu != 0)
            return nmt_fail(NMT_ERR_CONFIG,
                            "%s %d: GPU %d requested (%s %s), but %s; the GPUs are numbered from 0 "
                            "among those CUDA_VISIBLE_DEVICES shows",
                            gpu_what, gpu, gpu, what, device_names[device], why);
        if (device == CFG_DEVICE_CUDA)
            return nmt_fail(NMT_ERR_CONFIG, "%s: cuda requested, but %s", what, why);
        nmt_log_warn("%s: auto: the GPU is not usable (%s); using the CPU", what, err);
    }
    *out = cpu_backend_create(threads);
    return *out ? NMT_OK : nmt_fail_nomem("creating the CPU backend");
}

/* NMT_DECODE_QUANTUM: -1 when unset, 0 (and an error) when not 1..4096 */
static int decode_quantum_from_env(void) {
    const char *v = getenv("NMT_DECODE_QUANTUM");
    if (!v) return -1;
    int q;
    if (nmt_parse_int(v, 1, 4096, &q)) return q;
    nmt_fail(NMT_ERR_CONFIG, "NMT_DECODE_QUANTUM=%s: want a whole number of sentences from 1 to 4096", v);
    return 0;
}

/* NMT_DECODE_PIPELINE: -1 when unset, 0 or 1, or 2 (and an error) otherwise */
static int decode_pipeline_from_env(void) {
    const char *v = getenv("NMT_DECODE_PIPELINE");
    if (!v) return -1;
    int on;
    if (nmt_parse_int(v, 0, 1, &on)) return on;
    nmt_fail(NMT_ERR_CONFIG, "NMT_DECODE_PIPELINE=%s: want 0 (off) or 1 (on)", v);
    return 2;
}

NmtStatus backend_create_for(int device, int gpu, int threads, const char *what,
                             const char *gpu_what, Backend **out) {
    *out = NULL;
    int quantum = decode_quantum_from_env();
    if (quantum == 0) return NMT_ERR_CONFIG; /* the message is set */
    int pipeline = decode_pipeline_from_env();
    if (pipeline == 2) return NMT_ERR_CONFIG;
    NmtStatus st = backend_create_device(device, gpu, threads, what, gpu_what, out);
    if (!st && quantum > 0) (*out)->decode_quantum = quantum;
    if (!st && pipeline >= 0) (*out)->overlap_downloads = pipeline == 1;
    return st;
}

const char *backend_error(Backend *be) { return cuda_backend_error(be); }

void backend_memory_note(Backend *be, char *buf, size_t size) {
    size_t free_bytes, total_bytes;
    if (size) buf[0] = '\0';
    if (be && cuda_backend_memory(be, &free_bytes, &total_bytes) == 0)
        snprintf(buf, size, "; %s has %.1f MB free of %.0f MB", be->name, free_bytes / 1e6, total_bytes / 1e6);
}

void backend_explain_nomem(Backend *be, const char *hint) {
    char note[128];
    backend_memory_note(be, note, sizeof note);
    nmt_error_suffix("%s", note);
    if (hint && *hint) nmt_error_suffix("; %s", hint);
}

void backend_log_usage(Backend *be, const char *who) {
    CudaCounters c;
    if (!be || cuda_backend_counters(be, &c) != 0) return;
    nmt_log_info("%s: cuda: %lld kernel launches and %lld GEMMs in %lld host calls "
                 "(%lld graph launches, %lld graphs captured, %lld captures failed), %lld host waits, "
                 "%lld lane forks, %lld persistent recurrences",
                 who, c.launches, c.cublas_calls, c.host_calls, c.graph_launches,
                 c.graphs_captured, c.capture_failures, c.host_waits, c.lane_forks,
                 c.persistent_runs);
}
