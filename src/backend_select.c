/* backend_select.c: device setting -> Backend (backend_select.h). */
#include "backend_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu/gpu_backend.h"

/* backend_create_for without the decoding settings from the environment.
 * auto with GPU 0 and no GPU visible (or no CUDA built in) runs on the CPU
 * without a word: the normal case on a machine without a GPU. A GPU other
 * than 0 is tried even then, so that one that cannot be used is an error
 * naming gpu_what (cuda_backend_create says why: none visible, not built
 * in, or no such device). With cpu, a GPU other than 0 is warned about as
 * unused. */
static NmtStatus backend_create_device(int device, int gpu, int threads, const char *what,
                                       const char *gpu_what, Backend **out) {
    if (device == CFG_DEVICE_CUDA ||
        (device == CFG_DEVICE_AUTO && (gpu != 0 || cuda_backend_available()))) {
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
    } else if (device == CFG_DEVICE_CPU && gpu != 0) {
        /* a config made for a GPU machine, run on the CPU with --set
         * train.device=cpu, is fine; the GPU number is said to be unused */
        nmt_log_warn("%s %d is not used: %s cpu runs on the CPU", gpu_what, gpu, what);
    }
    *out = cpu_backend_create(threads);
    return *out ? NMT_OK : nmt_fail_nomem("creating the CPU backend");
}

/* An integer setting of the environment: 0 when `name` is unset, 1 and
 * *out when it holds a whole number in [lo, hi], else -1 and an error
 * naming it (`want`: what it takes). */
static int env_int(const char *name, int lo, int hi, const char *want, int *out) {
    const char *v = getenv(name);
    if (!v) return 0;
    if (nmt_parse_int(v, lo, hi, out)) return 1;
    nmt_fail(NMT_ERR_CONFIG, "%s=%s: want %s", name, v, want);
    return -1;
}

NmtStatus backend_apply_decode_env(Backend *be) {
    int quantum, pipeline, fold, qform;
    int has_quantum = env_int("NMT_DECODE_QUANTUM", 1, 4096, "a whole number of sentences from 1 to 4096", &quantum);
    int has_pipeline = has_quantum < 0 ? 0 : env_int("NMT_DECODE_PIPELINE", 0, 1, "0 (off) or 1 (on)", &pipeline);
    int has_fold = has_quantum < 0 || has_pipeline < 0 ? 0 : env_int("NMT_DECODE_FOLD", 0, 1, "0 (off) or 1 (on)", &fold);
    int has_qform = has_quantum < 0 || has_pipeline < 0 || has_fold < 0
                        ? 0
                        : env_int("NMT_DECODE_QUERY_FORM", 0, 2, "0 (never), 1 (greedy) or 2 (greedy and beam)", &qform);
    if (has_quantum < 0 || has_pipeline < 0 || has_fold < 0 || has_qform < 0) return NMT_ERR_CONFIG; /* the message is set */
    if (!be) return NMT_OK;
    if (has_quantum) be->decode_quantum = quantum;
    if (has_pipeline) be->overlap_downloads = pipeline == 1;
    if (has_fold) be->decode_fold_lines = fold; /* 0: never, 1: from the first line */
    if (has_qform) be->decode_query_form = qform;
    return NMT_OK;
}

NmtStatus backend_create_for(int device, int gpu, int threads, const char *what,
                             const char *gpu_what, Backend **out) {
    *out = NULL;
    NmtStatus st = backend_apply_decode_env(NULL); /* a bad value before a device is opened */
    /* the device profile's settings, refused here as the CUDA backend
     * refuses them, whichever device runs */
    int profile = 0, rows;
    char why[160];
    if (!st && profile_settings_from_env(&profile, &rows, why, sizeof why) < 0)
        st = nmt_fail(NMT_ERR_CONFIG, "%s", why);
    if (!st) st = backend_create_device(device, gpu, threads, what, gpu_what, out);
    if (!st) st = backend_apply_decode_env(*out);
    /* the device profile was asked for, and there is no device to profile */
    if (!st && profile == 1 && strcmp((*out)->name, "cuda") != 0)
        nmt_log_warn("NMT_CUDA_PROFILE=1: no device profile, since this runs on the %s (%s %s)", (*out)->name,
                     what, device_names[device]);
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
    /* the device's memory in use at the end (every process's and the
     * context's too: cudaMemGetInfo), which with the cached graphs of a
     * run says what they hold next to a run without them */
    char mem[96] = "";
    size_t free_bytes, total_bytes;
    if (cuda_backend_memory(be, &free_bytes, &total_bytes) == 0)
        snprintf(mem, sizeof mem, "; %.0f MB of the device's %.0f MB in use at the end",
                 (double)(total_bytes - free_bytes) / 1e6, (double)total_bytes / 1e6);
    nmt_log_info("%s: cuda: %lld kernel launches and %lld GEMMs%s in %lld host calls "
                 "(%lld graph launches, %lld graphs captured, %lld captures failed), %lld host waits, "
                 "%lld lane forks, %lld persistent recurrences%s",
                 who, c.launches, c.cublas_calls, c.own_gemm ? " (nmt's own kernel, NMT_CUDA_GEMM=own)" : "",
                 c.host_calls, c.graph_launches,
                 c.graphs_captured, c.capture_failures, c.host_waits, c.lane_forks,
                 c.persistent_runs, mem);
    nmt_log_info("%s: cuda: host time %.1f ms in host calls, %.1f ms waiting for the device; "
                 "%lld calls over NMT_CUDA_SLOW_CALL_MS took %.1f ms%s%s", who, c.host_call_seconds * 1e3,
                 c.wait_seconds * 1e3, c.slow_calls, c.slow_seconds * 1e3, c.slow_summary[0] ? ": " : "",
                 c.slow_summary);
    /* NMT_CUDA_PROFILE=1: the device profile of the whole run, on stderr
     * like the log (whatever its level: it was asked for) */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: cuda profile: ", who);
    cuda_backend_profile_write(be, stderr, prefix, 0, 0);
}
