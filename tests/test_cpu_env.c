/* test_cpu_env.c: which OpenBLAS kernels nmt asks for instead of those
 * OpenBLAS 0.3.21 picks (cpu_env_better_core, src/cpu/cpu_env.h): Prescott
 * on a CPU it does not know is replaced; everything else is kept. The wait settings and the re-exec are checked through the
 * binary by tests/test_cli.sh. */
#include "cpu/cpu_env.h"
#include "test_util.h"

static void expect_core(const char *loaded, bool avx512, bool avx2, const char *want) {
    const char *got = cpu_env_better_core(loaded, avx512, avx2);
    bool same = (!got && !want) || (got && want && !strcmp(got, want));
    CHECK(same, "loaded %s, avx512 %d, avx2 %d: got %s, want %s", loaded ? loaded : "(null)", avx512, avx2,
          got ? got : "(keep)", want ? want : "(keep)");
}

int main(void) {
    /* an unknown CPU: Prescott kernels, replaced by the best the CPU runs */
    expect_core("Prescott", true, true, "SkylakeX");
    expect_core("Prescott", false, true, "Haswell");
    expect_core("Prescott", false, false, NULL);
    /* cores OpenBLAS chose are kept, also a user's OPENBLAS_CORETYPE
     * (this rule runs only when the variable is unset) */
    expect_core("Haswell", true, true, NULL);
    expect_core("Haswell", false, true, NULL);
    expect_core("Zen", true, true, NULL);
    expect_core("SkylakeX", true, true, NULL);
    expect_core("Cooperlake", true, true, NULL);
    expect_core("Sandybridge", false, false, NULL);
    expect_core("Sandybridge", true, true, NULL); /* not ours to second-guess */
    expect_core(NULL, true, true, NULL);
    return test_summary("test_cpu_env");
}
