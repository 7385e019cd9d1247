/* cpu_env.h: run-time settings of the CPU libraries that must be in the
 * environment before they load, applied by re-executing nmt once.
 *
 * - OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons (Sapphire
 *   Rapids) and falls back to its Prescott kernels, 2-3x slower than its
 *   SkylakeX or Haswell ones. When the loaded core is Prescott and the CPU
 *   has AVX-512 (or AVX2), OPENBLAS_CORETYPE=SkylakeX (Haswell) is set.
 * - With the pthreads build of OpenBLAS, libgomp's threads spin while
 *   waiting and steal the cores from OpenBLAS's own threads between
 *   parallel loops (5x slower training on 2 cores); OMP_WAIT_POLICY=passive
 *   stops that. The Makefile prefers the OpenMP build of OpenBLAS, where one
 *   thread pool serves both and nothing needs changing.
 * Variables the user set are never changed. NMT_NO_REEXEC=1 turns it off. */
#ifndef NMT_CPU_ENV_H
#define NMT_CPU_ENV_H

/* Sets what is missing and re-executes the program with the same
 * arguments; returns only when nothing had to change (or exec failed). */
void cpu_env_apply(char **argv);
/* The OpenBLAS core type in use, e.g. "SkylakeX". */
const char *cpu_env_blas_core(void);

#endif
