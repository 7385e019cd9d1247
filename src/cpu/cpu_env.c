/* cpu_env.c: OpenBLAS core type and OpenMP wait policy fix-ups by one
 * re-exec at start-up (cpu_env.h). */
#include "cpu/cpu_env.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cpu_env_blas_core(void) { return openblas_get_corename(); }

void cpu_env_apply(char **argv) {
    if (getenv("NMT_REEXEC") || getenv("NMT_NO_REEXEC")) return;
    int change = 0;
    /* only when OpenBLAS runs its own pthreads (openblas_get_parallel() == 1):
     * with the OpenMP build one pool serves both and spinning is what we want */
    if (!getenv("OMP_WAIT_POLICY") && openblas_get_parallel() == 1) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        change = 1;
    }
    const char *core = openblas_get_corename();
    if (!getenv("OPENBLAS_CORETYPE") && core && !strcmp(core, "Prescott")) {
        __builtin_cpu_init();
        const char *better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                             : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                               : NULL;
        if (better) {
            setenv("OPENBLAS_CORETYPE", better, 1);
            change = 1;
        }
    }
    if (!change) return;
    setenv("NMT_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the libraries as they are */
}
