/* version.h: the nmt version and the build/runtime facts printed by
 * `nmt --version` (BLAS library and threads, OpenMP threads, CUDA). */
#ifndef NMT_VERSION_H
#define NMT_VERSION_H
#include <stdio.h>

#define NMT_VERSION "0.1.0"

void nmt_print_version(FILE *out);
/* The BLAS library actually linked, e.g. "OpenBLAS 0.3.21 ... (8 threads)". */
const char *nmt_blas_description(void);

#endif
