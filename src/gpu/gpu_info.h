/* gpu_info.h: whether the CUDA backend is built in and which GPUs it sees.
 * Implemented by src/gpu/gpu_info.cu when built with CUDA, and by
 * src/gpu/gpu_info_none.c (a build without CUDA) otherwise. */
#ifndef NMT_GPU_INFO_H
#define NMT_GPU_INFO_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 without CUDA or without a GPU. */
int gpu_info_device_count(void);
/* One line: "not built in", "built in, no GPU visible (...)" or the devices. */
void gpu_info_describe(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
