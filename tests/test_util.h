/* test_util.h: the minimal test harness used by every tests/test_*.c binary.
 *
 *   CHECK(cond, "fmt", ...)        one assertion; counts a pass or a failure
 *   CHECK_EQ_INT(a, b)             integers, prints both on failure
 *   CHECK_EQ_STR(a, b)             strings (NULL-safe)
 *   CHECK_NEAR(a, b, tol)          doubles, absolute tolerance
 *   CHECK_CONTAINS(haystack, needle)
 *   test_tmpdir()                  a fresh temporary folder for this binary,
 *                                  removed at exit (kept, its path printed,
 *                                  when KEEP_TMP is set, as tests/lib.sh does)
 *   test_write_file(dir, name, bytes, len) -> path (static storage, copy it)
 *   test_urand(), test_fill(x, n, lo, hi), test_hrand(n, lo, hi)
 *                                  seeded inputs (*test_rand_state() = seed)
 *   test_align_targets(T, B, S)    guided alignment rows (Backend.guided_align)
 *   return test_summary("name");   prints "name: N passed, N failed" and
 *                                  returns non-zero when anything failed.
 * scripts/run-tests.sh adds the per-binary lines into the final total. */
#ifndef NMT_TEST_UTIL_H
#define NMT_TEST_UTIL_H

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int test_passed, test_failed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) {                                                         \
            test_passed++;                                                  \
        } else {                                                            \
            test_failed++;                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                 \
    do {                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);    \
        CHECK(check_a_ == check_b_, "%s = %lld, %s = %lld", #a, check_a_, #b, check_b_); \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                  \
    do {                                                                    \
        const char *check_a_ = (a), *check_b_ = (b);                        \
        CHECK(check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0,      \
              "%s = \"%s\", %s = \"%s\"", #a, check_a_ ? check_a_ : "(null)", \
              #b, check_b_ ? check_b_ : "(null)");                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                              \
    do {                                                                   \
        double check_a_ = (double)(a), check_b_ = (double)(b);             \
        CHECK(fabs(check_a_ - check_b_) <= (tol), "%s = %.9g, %s = %.9g (tol %g)", \
              #a, check_a_, #b, check_b_, (double)(tol));                  \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                    \
    do {                                                                    \
        const char *check_h_ = (haystack), *check_n_ = (needle);            \
        CHECK(check_h_ && strstr(check_h_, check_n_) != NULL,               \
              "\"%s\" does not contain \"%s\"", check_h_ ? check_h_ : "(null)", check_n_); \
    } while (0)

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed, test_failed);
    return test_failed > 0 ? 1 : 0;
}

static char test_tmpdir_path[512];

static inline int test_tmpdir_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* at exit: test_tmpdir()'s folder goes, with everything in it */
static inline void test_tmpdir_remove(void) {
    const char *keep = getenv("KEEP_TMP");
    if (keep && *keep)
        fprintf(stderr, "tmp: %s (kept)\n", test_tmpdir_path);
    else if (nftw(test_tmpdir_path, test_tmpdir_remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        perror(test_tmpdir_path); /* (a test may have removed it itself) */
}

/* A fresh folder under $TMPDIR (or /tmp), made once per binary and
 * removed when it exits (before, each run of the C tests left its folders
 * in /tmp: 286 of them by 2026-12-03). */
static inline const char *test_tmpdir(void) {
    char *dir = test_tmpdir_path;
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof test_tmpdir_path, "%s/nmt-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(test_tmpdir_remove);
    }
    return dir;
}

/* Writes `len` bytes into dir/name and returns the path (static buffer). */
static inline const char *test_write_file(const char *dir, const char *name,
                                          const void *bytes, size_t len) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
    return path;
}

/* The Multi30k folder of ../shared/data, or NULL when it is absent
 * (tests that need real text then print a skip line and pass over). */
static inline const char *test_multi30k_dir(void) {
    const char *env = getenv("NMT_MULTI30K");
    static const char *candidates[] = {"../shared/data/multi30k", "../../shared/data/multi30k"};
    if (env && *env) return access(env, R_OK) == 0 ? env : NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], R_OK) == 0) return candidates[i];
    return NULL;
}

/* Seeded test inputs: a private SplitMix64, independent of the library's
 * generator. The state (a program may set it before its first draw): */
static inline uint64_t *test_rand_state(void) {
    static uint64_t state = 0x1234abcd5678ef01ULL;
    return &state;
}

/* uniform in [0, 1) */
static inline double test_urand(void) {
    uint64_t z = (*test_rand_state() += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* x[0..n) uniform in [lo, hi), never exactly 0 */
static inline void test_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        float v;
        do v = (float)(lo + (hi - lo) * test_urand()); while (v == 0.0f);
        x[i] = v;
    }
}

/* the same in a new array (the caller frees it) */
static inline float *test_hrand(size_t n, float lo, float hi) {
    float *x = (float *)malloc((n ? n : 1) * sizeof *x); /* the cast: C++ includers */
    test_fill(x, n, lo, hi);
    return x;
}

/* The rows q (T*B, S) of Backend.guided_align, in a new array, by row r %
 * 3: several nonzero entries (every third one 0) summing to 1, all 0 (no
 * loss, no gradient), one-hot. */
static inline float *test_align_targets(int T, int B, int S) {
    size_t rows = (size_t)T * B;
    size_t n = rows * (size_t)S;
    float *hq = (float *)malloc((n > 0 ? n : 1) * sizeof *hq);
    for (size_t r = 0; r < rows; r++) {
        float *q = hq + r * S;
        int kind = (int)(r % 3);
        double sum = 0.0;
        for (int s = 0; s < S; s++) {
            if (kind == 0) q[s] = s % 3 == 1 ? 0.0f : (float)(0.1 + test_urand());
            else q[s] = kind == 2 && s == (int)(r % S) ? 1.0f : 0.0f;
            sum += q[s];
        }
        for (int s = 0; s < S; s++) q[s] = sum > 0 ? (float)(q[s] / sum) : 0.0f;
    }
    return hq;
}

#endif
