/* gpu_backend_none.c: the CUDA backend's entry points for builds without
 * CUDA (CUDA=0): no GPU is ever available and cuda_backend_create says why.
 * With CUDA the same functions come from gpu_backend.cu and this file
 * compiles to nothing. */
#include "gpu/gpu_backend.h"
#ifndef NMT_WITH_CUDA
#include <stdio.h>
#include <string.h>

int cuda_backend_available(void) { return 0; }

Backend *cuda_backend_create(int device, char *err, size_t err_size) {
    (void)device;
    if (err && err_size) snprintf(err, err_size, "built without CUDA (make CUDA=1)");
    return NULL;
}

int cuda_backend_load_libraries(char *err, size_t err_size) {
    if (err && err_size) snprintf(err, err_size, "built without CUDA (make CUDA=1)");
    return 0;
}

const char *cuda_backend_error(Backend *be) {
    (void)be;
    return NULL;
}

int cuda_backend_counters(Backend *be, CudaCounters *out) {
    (void)be;
    if (out) memset(out, 0, sizeof *out);
    return -1;
}
int cuda_backend_memory(Backend *be, size_t *free_bytes, size_t *total_bytes) {
    (void)be;
    if (free_bytes) *free_bytes = 0;
    if (total_bytes) *total_bytes = 0;
    return -1;
}
int cuda_backend_profile_load(char *err, size_t err_size) {
    if (err && err_size) snprintf(err, err_size, "built without CUDA");
    return 0;
}
int cuda_backend_profile_restart(Backend *be) {
    (void)be;
    return -1;
}
int cuda_backend_profile_write(Backend *be, FILE *out, const char *prefix, long steps,
                               double wall_seconds) {
    (void)be, (void)out, (void)prefix, (void)steps, (void)wall_seconds;
    return -1;
}
int cuda_backend_profile_summary(Backend *be, ProfileSummary *out) {
    (void)be;
    if (out) memset(out, 0, sizeof *out);
    return -1;
}
void cuda_backend_test_break_capture(Backend *be, long long at_op) {
    (void)be;
    (void)at_op;
}
void cuda_backend_test_break_launch(Backend *be) { (void)be; }
int cuda_backend_set_persistent(Backend *be, int on) {
    (void)be;
    (void)on;
    return -1;
}
#else
typedef int gpu_backend_none_is_empty_with_cuda;
#endif
