/* gpu_cublas.cu: cuBLAS, loaded when the first CUDA backend is made
 * (gpu_internal.cuh, GpuBlas). nmt is not linked against libcublas: the
 * library and its libcublasLt (about 600 MB with CUDA 13) would be mapped
 * and relocated at every start, GPU or not (measured without a GPU: a
 * start took 0.16 s instead of 0.01 s, and greedy decoding on the CPU held
 * 582 MB instead of 429 MB), and a CUDA build would not start at all where
 * they are missing. dlopen loads
 * libcublas.so.<major> of the toolkit the build used (the run path names
 * the build machine's CUDA library folder; elsewhere LD_LIBRARY_PATH or
 * the loader's cache must find it, as gpu-bundle's run.sh arranges); the
 * entry points are the ones cublas_v2.h maps its names to (cublasSgemm is
 * cublasSgemm_v2). The CPU emulator build (NMT_CUDA_EMU) fills the table
 * with its emulated functions instead. gpu_dlopen_symbols, the loader,
 * opens CUPTI too (gpu_profile.cu). */
#include "gpu/gpu_internal.cuh"

#include <stdio.h>
#include <string.h>

#ifndef NMT_CUDA_EMU
#include <dlfcn.h>
#include <type_traits>

#define GPU_STR2(x) #x
#define GPU_STR(x) GPU_STR2(x)
#define GPU_CUBLAS_LIB "libcublas.so." GPU_STR(CUBLAS_VER_MAJOR)

/* the table's types are the header's own: a changed signature fails here */
static_assert(std::is_same<decltype(GpuBlas::create), decltype(&cublasCreate_v2)>::value, "create");
static_assert(std::is_same<decltype(GpuBlas::destroy), decltype(&cublasDestroy_v2)>::value, "destroy");
static_assert(std::is_same<decltype(GpuBlas::set_stream), decltype(&cublasSetStream_v2)>::value,
              "set_stream");
static_assert(std::is_same<decltype(GpuBlas::set_workspace), decltype(&cublasSetWorkspace_v2)>::value,
              "set_workspace");
static_assert(std::is_same<decltype(GpuBlas::set_math_mode), decltype(&cublasSetMathMode)>::value,
              "set_math_mode");
static_assert(std::is_same<decltype(GpuBlas::status_string), decltype(&cublasGetStatusString)>::value,
              "status_string");
static_assert(std::is_same<decltype(GpuBlas::sgemm), decltype(&cublasSgemm_v2)>::value, "sgemm");
static_assert(std::is_same<decltype(GpuBlas::sgemm_strided_batched),
                           decltype(&cublasSgemmStridedBatched)>::value,
              "sgemm_strided_batched");
#endif

static GpuBlas blas;
static bool tried, loaded;
static char load_error[256];

#ifndef NMT_CUDA_EMU
bool gpu_dlopen_symbols(const char *lib_name, const char *what, const GpuSymbol *symbols, size_t n,
                        char *err, size_t err_size) {
    void *lib = dlopen(lib_name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, err_size, "cannot load %s (%s): %s must be on the library path (LD_LIBRARY_PATH)",
                 lib_name, why ? why : "no reason given", what);
        return false;
    }
    /* the library stays loaded for the life of the process */
    for (size_t i = 0; i < n; i++) {
        *symbols[i].slot = dlsym(lib, symbols[i].name);
        if (!*symbols[i].slot) {
            snprintf(err, err_size, "%s has no %s", lib_name, symbols[i].name);
            return false;
        }
    }
    return true;
}
#endif

static bool load(void) {
#ifdef NMT_CUDA_EMU
    blas.create = cublasCreate;
    blas.destroy = cublasDestroy;
    blas.set_stream = cublasSetStream;
    blas.set_workspace = cublasSetWorkspace;
    blas.set_math_mode = cublasSetMathMode;
    blas.status_string = cublasGetStatusString;
    blas.sgemm = cublasSgemm;
    blas.sgemm_strided_batched = cublasSgemmStridedBatched;
    return true;
#else
    const GpuSymbol want[] = {
        {"cublasCreate_v2", (void **)&blas.create},
        {"cublasDestroy_v2", (void **)&blas.destroy},
        {"cublasSetStream_v2", (void **)&blas.set_stream},
        {"cublasSetWorkspace_v2", (void **)&blas.set_workspace},
        {"cublasSetMathMode", (void **)&blas.set_math_mode},
        {"cublasGetStatusString", (void **)&blas.status_string},
        {"cublasSgemm_v2", (void **)&blas.sgemm},
        {"cublasSgemmStridedBatched", (void **)&blas.sgemm_strided_batched},
    };
    return gpu_dlopen_symbols(GPU_CUBLAS_LIB, "the CUDA toolkit's cuBLAS", want, sizeof want / sizeof *want,
                              load_error, sizeof load_error);
#endif
}

const GpuBlas *gpu_blas_load(char *err, size_t err_size) {
    if (!tried) {
        tried = true;
        loaded = load();
    }
    if (!loaded && err && err_size) snprintf(err, err_size, "%s", load_error);
    return loaded ? &blas : NULL;
}

extern "C" int cuda_backend_load_libraries(char *err, size_t err_size) {
    return gpu_blas_load(err, err_size) != NULL;
}
