/* cublas_v2.h (emulator): the cuBLAS calls of nmt's CUDA backend, emulated
 * with a column-major cblas_sgemm after the same argument checks as cuBLAS
 * (so a wrong leading dimension fails here as on the GPU). Each handle is
 * distinct; its work is queued on the stream cublasSetStream bound it to
 * (the legacy default stream before that). See cuda_runtime.h beside this
 * file. */
#ifndef NMT_GPU_EMU_CUBLAS_V2_H
#define NMT_GPU_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

struct EmuBlas;
typedef EmuBlas *cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
const char *cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb,
                                         long long stride_b, const float *beta, float *C,
                                         int ldc, long long stride_c, int count);

#endif
