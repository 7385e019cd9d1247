/* gpu_info_none.c: gpu_info for builds without CUDA (CUDA=0). With CUDA the
 * same functions come from gpu_info.cu and this file compiles to nothing. */
#include "gpu/gpu_info.h"
#ifndef NMT_WITH_CUDA
#include <stdio.h>
int gpu_info_device_count(void) { return 0; }
void gpu_info_describe(char *buf, size_t size) { snprintf(buf, size, "not built in (make CUDA=1)"); }
#else
typedef int gpu_info_none_is_empty_with_cuda;
#endif
