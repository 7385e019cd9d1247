/* gpu_info.cu: asks the CUDA runtime which GPUs are visible. Linked only in
 * CUDA builds; works (answers "no GPU") on machines without a GPU or driver. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "gpu/gpu_info.h"

extern "C" int gpu_info_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky error */
        return 0;
    }
    return n;
}

extern "C" void gpu_info_describe(char *buf, size_t size) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        snprintf(buf, size, "built in, no GPU visible (%s)",
                 err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        cudaGetLastError();
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "built in, %d GPU(s):", n);
    for (int i = 0; i < n && used < size; i++) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        used += (size_t)snprintf(buf + used, size - used, " [%d] %s (sm_%d%d, %.0f GiB)", i,
                                 prop.name, prop.major, prop.minor,
                                 prop.totalGlobalMem / 1073741824.0);
    }
}
