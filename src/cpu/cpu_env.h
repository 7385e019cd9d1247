/* cpu_env.h: run-time settings of the CPU libraries that must be in the
 * environment before they load, applied by re-executing nmt once.
 *
 * - OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons (Sapphire
 *   Rapids) and falls back to its Prescott kernels, 2-3x slower than its
 *   SkylakeX or Haswell ones. When the loaded core is Prescott and the CPU
 *   has AVX-512 (or AVX2), OPENBLAS_CORETYPE=SkylakeX (Haswell) is set
 *   (cpu_env_better_core).
 * - With the pthreads build of OpenBLAS, libgomp's threads spin while
 *   waiting and steal the cores from OpenBLAS's own threads between
 *   parallel loops (5x slower training on 2 cores); OMP_WAIT_POLICY=passive
 *   stops that. The Makefile prefers the OpenMP build of OpenBLAS, where one
 *   thread pool serves both, and libgomp's own wait is kept: a shorter spin
 *   (GOMP_SPINCOUNT=10000) made greedy decoding beside two busy processes
 *   4x faster but beside a niced training run 1.7x slower (docs/
 *   benchmarks.md, "OpenMP's wait on a busy machine"), so it is the
 *   user's to choose, and `nmt --version` shows the choice in force.
 * libgomp reads these when it loads, before main, and glibc sets up the
 * environment only after an executable's preinit functions run, hence the
 * re-exec. Variables the user set are never changed (an empty one counts
 * as unset). NMT_NO_REEXEC=1 turns all of it off. */
#ifndef NMT_CPU_ENV_H
#define NMT_CPU_ENV_H

#include <stdbool.h>

/* Sets what is missing and re-executes the program with the same
 * arguments; returns only when nothing had to change (or exec failed). */
void cpu_env_apply(char **argv);
/* The OpenBLAS core type to ask for instead of `loaded` (what OpenBLAS
 * picked), on a CPU with AVX-512 F, BW, VL, DQ and CD (avx512) or AVX2;
 * NULL to keep it. */
const char *cpu_env_better_core(const char *loaded, bool avx512, bool avx2);
/* Who chose the OpenBLAS core type: "set by nmt", "from OPENBLAS_CORETYPE
 * in the environment", "not the OPENBLAS_CORETYPE=X asked for" (a name
 * OpenBLAS does not take), or NULL (OpenBLAS itself). */
const char *cpu_env_core_origin(void);
/* The OpenBLAS core type in use, e.g. "SkylakeX". */
const char *cpu_env_blas_core(void);
/* How libgomp's idle threads wait, and who chose it, for `nmt --version`:
 * e.g. "libgomp's default" or "GOMP_SPINCOUNT=10000 (yours)". */
const char *cpu_env_wait_description(void);

#endif
