/* cpu_env.c: OpenBLAS core type and OpenMP wait fix-ups by one re-exec at
 * start-up (cpu_env.h). NMT_REEXEC carries the names of the variables nmt
 * set into the re-executed process (and tells it not to re-exec again). */
#include "cpu/cpu_env.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CPU_ENV_EXEC_FAILED "exec failed"

const char *cpu_env_blas_core(void) { return openblas_get_corename(); }

const char *cpu_env_better_core(const char *loaded, bool avx512, bool avx2) {
    if (!loaded) return NULL;
    if (!strcmp(loaded, "Prescott")) return avx512 ? "SkylakeX" : avx2 ? "Haswell" : NULL;
    return NULL; /* AMD's Zen 5 with AVX-512 is Cooperlake to it, rightly */
}

/* adds `name` to the space-separated list in `set` (at most 2 names) */
static void note_set(char *set, size_t size, const char *name) {
    size_t n = strlen(set);
    snprintf(set + n, size - n, "%s%s", n ? " " : "", name);
}

void cpu_env_apply(char **argv) {
    if (getenv("NMT_REEXEC") || getenv("NMT_NO_REEXEC")) return;
    char set[96] = "";
    /* only when OpenBLAS runs its own pthreads (openblas_get_parallel() == 1):
     * with the OpenMP build one pool serves both */
    if (!getenv("OMP_WAIT_POLICY") && openblas_get_parallel() == 1) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        note_set(set, sizeof set, "OMP_WAIT_POLICY");
    }
    const char *asked = getenv("OPENBLAS_CORETYPE");
    if (!asked || !asked[0]) {
        __builtin_cpu_init();
        bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
        const char *better = cpu_env_better_core(openblas_get_corename(), avx512, __builtin_cpu_supports("avx2"));
        if (better) {
            setenv("OPENBLAS_CORETYPE", better, 1);
            note_set(set, sizeof set, "OPENBLAS_CORETYPE");
        }
    }
    if (!set[0]) return;
    setenv("NMT_REEXEC", set, 1);
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): carry on with the libraries as they are; the
     * variables were set too late to matter, so they go, and --version says so */
    for (char *name = strtok(set, " "); name; name = strtok(NULL, " ")) unsetenv(name);
    unsetenv("NMT_REEXEC");
    setenv("NMT_NO_REEXEC", CPU_ENV_EXEC_FAILED, 1);
}

/* whether nmt set `name` in this process's environment (NMT_REEXEC's list) */
static int set_by_nmt(const char *name) {
    const char *list = getenv("NMT_REEXEC");
    size_t n = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
    return 0;
}

const char *cpu_env_core_origin(void) {
    static char text[96];
    const char *asked = getenv("OPENBLAS_CORETYPE"), *core = openblas_get_corename();
    if (!asked || !asked[0]) return NULL;
    if (!core || strcasecmp(asked, core)) { /* OpenBLAS did not know the name, and chose itself */
        snprintf(text, sizeof text, "not the OPENBLAS_CORETYPE=%.40s asked for", asked);
        return text;
    }
    return set_by_nmt("OPENBLAS_CORETYPE") ? "set by nmt" : "from OPENBLAS_CORETYPE in the environment";
}

const char *cpu_env_wait_description(void) {
    static char text[160];
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    if (!policy && !spin) {
        const char *off = getenv("NMT_NO_REEXEC");
        snprintf(text, sizeof text, "libgomp's default%s", !off                              ? ""
                                                           : !strcmp(off, CPU_ENV_EXEC_FAILED) ? " (nmt could not re-execute itself)"
                                                                                               : " (NMT_NO_REEXEC is set)");
        return text;
    }
    size_t n = 0;
    if (policy)
        n += (size_t)snprintf(text + n, sizeof text - n, "OMP_WAIT_POLICY=%.20s (%s)", policy,
                              set_by_nmt("OMP_WAIT_POLICY") ? "nmt's default" : "yours");
    if (spin && n < sizeof text) /* nmt never sets it */
        snprintf(text + n, sizeof text - n, "%sGOMP_SPINCOUNT=%.20s (yours)", n ? ", " : "", spin);
    return text;
}
