/* version.c: `nmt --version`: version, BLAS in use and its thread count,
 * OpenMP threads and how they wait, whether the CUDA backend is built in and sees a GPU, and
 * (CUDA builds) whether cuBLAS, opened at run time, loads. */
#include "version.h"

#include <cblas.h>
#include <omp.h>

#include "cpu/cpu_env.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_info.h"

const char *nmt_blas_description(void) {
    static char text[256];
    const char *origin = cpu_env_core_origin();
    snprintf(text, sizeof text, "%s, core %s%s%s (%d threads)", openblas_get_config(), openblas_get_corename(),
             origin ? ", " : "", origin ? origin : "", openblas_get_num_threads());
    return text;
}

void nmt_print_version(FILE *out) {
    fprintf(out, "nmt %s\n", NMT_VERSION);
    fprintf(out, "blas: %s\n", nmt_blas_description());
    fprintf(out, "openmp: %d threads, wait policy: %s\n", omp_get_max_threads(), cpu_env_wait_description());
    char gpu[512];
    gpu_info_describe(gpu, sizeof gpu);
    fprintf(out, "cuda: %s\n", gpu);
#ifdef NMT_WITH_CUDA
    char why[300];
    if (cuda_backend_load_libraries(why, sizeof why)) fprintf(out, "cublas: loads\n");
    else fprintf(out, "cublas: %s\n", why);
    /* CUPTI, for NMT_CUDA_PROFILE only */
    if (cuda_backend_profile_load(why, sizeof why)) fprintf(out, "cupti: loads (NMT_CUDA_PROFILE)\n");
    else fprintf(out, "cupti: %s (NMT_CUDA_PROFILE cannot run)\n", why);
#endif
}
