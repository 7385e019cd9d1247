/* gpu_parity_profile.h: the device profile's test in tests/test_gpu_parity.c
 * (its only includer). NMT_CUDA_PROFILE=1 (src/gpu/gpu_profile.cu,
 * docs/gpu.md "Profile"): bad values refused, naming the variable; on a
 * backend that profiles, known work, each kind in a window of its own
 * (restart forgets what came before), leaves the records it should: a
 * memset alone, two kernels by name (counted in the report), GEMMs (at
 * least a kernel each: cuBLAS may add kernels and memsets), a download;
 * the report has the rows asked for and a line for the rest; two backends
 * profile at once and one outlives the other. On the emulator, also a
 * CUPTI library of another version is refused. Static functions in a
 * header, as test_util.h. */
#ifndef NMT_GPU_PARITY_PROFILE_H
#define NMT_GPU_PARITY_PROFILE_H

#include "gpu/gpu_info.h"

/* a CUDA backend made with NMT_CUDA_PROFILE=value and NMT_CUDA_PROFILE_ROWS=rows
 * (NULL: unset), the environment restored after */
static Backend *profile_backend(const char *value, const char *rows, char *err, size_t err_size) {
    const char *names[2] = {"NMT_CUDA_PROFILE", "NMT_CUDA_PROFILE_ROWS"}, *want[2] = {value, rows};
    char saved[2][64];
    bool was[2];
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        was[i] = v != NULL;
        snprintf(saved[i], sizeof saved[i], "%s", v ? v : "");
        if (want[i]) setenv(names[i], want[i], 1);
        else unsetenv(names[i]);
    }
    Backend *b = cuda_backend_create(0, err, err_size);
    for (int i = 0; i < 2; i++) {
        if (was[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
    }
    return b;
}

/* the calls column of the report row named `name` (text of
 * profile_table_write without steps), or -1 */
static double profile_calls(const char *report, const char *name) {
    char needle[128];
    snprintf(needle, sizeof needle, "  %s\n", name);
    const char *p = strstr(report, needle);
    if (!p) return -1;
    while (p > report && p[-1] != '\n') p--;
    double share, ms, calls;
    if (sscanf(p, "P: %lf%% %lf %lf", &share, &ms, &calls) != 3) return -1;
    return calls;
}

static void test_profile(void) {
    char err[400];
    const char *bad[][2] = {{"2", NULL}, {"yes", NULL}, {"1", "0"}, {"1", "many"}};
    for (int i = 0; i < 4; i++) {
        Backend *b = profile_backend(bad[i][0], bad[i][1], err, sizeof err);
        const char *var = bad[i][1] ? "NMT_CUDA_PROFILE_ROWS=" : "NMT_CUDA_PROFILE=";
        CHECK(b == NULL && strstr(err, var), "%s%s is refused: %s", var, bad[i][1] ? bad[i][1] : bad[i][0],
              b ? "(made a backend)" : err);
        if (b) b->destroy(b);
    }
    char where[128];
    gpu_info_describe(where, sizeof where);
    if (strstr(where, "emulator")) { /* the emulated CUPTI reports the version asked for */
        setenv("EMU_CUPTI_VERSION", "120000", 1);
        Backend *b = profile_backend("1", NULL, err, sizeof err);
        unsetenv("EMU_CUPTI_VERSION");
        CHECK(b == NULL && strstr(err, "API version 120000") && strstr(err, "LD_LIBRARY_PATH"),
              "a CUPTI of another version is refused: %s", b ? "(made a backend)" : err);
        if (b) b->destroy(b);
    }
    Backend *off = profile_backend("0", NULL, err, sizeof err);
    CHECK(off && cuda_backend_profile_restart(off) == -1 && cuda_backend_profile_write(off, stdout, "", 0, 0) == -1,
          "without NMT_CUDA_PROFILE=1 there is no profile: %s", off ? "(it answered)" : err);
    if (off) off->destroy(off);

    Backend *b = profile_backend("1", "3", err, sizeof err);
    CHECK(b != NULL, "a CUDA backend with NMT_CUDA_PROFILE=1: %s", err);
    if (!b) return;
    enum { R = 5, C = 70 };
    float *x = b->alloc(b, R * C * sizeof(float)), *w = b->alloc(b, C * C * sizeof(float));
    float *y = b->alloc(b, R * C * sizeof(float)), *bias = b->alloc(b, C * sizeof(float));
    float *h = test_hrand(C * C, -0.5f, 0.5f), back[R * C];
    b->upload(b, x, h, R * C * sizeof(float));
    b->upload(b, w, h, C * C * sizeof(float));
    b->upload(b, bias, h, C * sizeof(float));
    CHECK(cuda_backend_profile_restart(b) == 0, "restart");
    ProfileSummary s;
    cuda_backend_profile_summary(b, &s);
    CHECK(s.count[PROFILE_KERNEL] + s.count[PROFILE_COPY_HTOD] + s.count[PROFILE_MEMSET] == 0 && s.names == 0,
          "restart forgets the uploads: %lld copies to the device, %lld rows", s.count[PROFILE_COPY_HTOD], s.names);
    /* each kind of work in a window of its own, since cuBLAS may add
     * kernels (a split-k reduction) and memsets (its workspace) of its own */
    long long copies;
#define PROFILE_COPIES(s) ((s).count[PROFILE_COPY_HTOD] + (s).count[PROFILE_COPY_DTOH] + \
                           (s).count[PROFILE_COPY_DTOD] + (s).count[PROFILE_COPY_OTHER])
    b->zero(b, y, R * C * sizeof(float)); /* a memset alone */
    cuda_backend_profile_summary(b, &s);
    copies = PROFILE_COPIES(s);
    CHECK(s.count[PROFILE_MEMSET] == 1 && s.count[PROFILE_KERNEL] == 0 && copies == 0,
          "zero: %lld memsets, %lld kernels, %lld copies (want 1, 0, 0)", s.count[PROFILE_MEMSET],
          s.count[PROFILE_KERNEL], copies);
    cuda_backend_profile_restart(b); /* two kernels of nmt's */
    b->add_bias(b, x, bias, R, C);
    b->add_bias(b, x, bias, R, C);
    cuda_backend_profile_summary(b, &s);
    CHECK(s.count[PROFILE_KERNEL] == 2 && s.names == 1 && s.count[PROFILE_MEMSET] == 0,
          "add_bias twice: %lld kernels in %lld rows, %lld memsets (want 2, 1, 0)", s.count[PROFILE_KERNEL], s.names,
          s.count[PROFILE_MEMSET]);
    CHECK(s.seconds[PROFILE_KERNEL] > 0 && s.own_kernel_seconds == s.seconds[PROFILE_KERNEL],
          "add_bias_kernel is nmt's own: %.3g of %.3g s", s.own_kernel_seconds, s.seconds[PROFILE_KERNEL]);
    static char report[16384];
    FILE *f = fmemopen(report, sizeof report, "w");
    if (f) {
        cuda_backend_profile_write(b, f, "P: ", 0, 0);
        fclose(f);
    }
    double calls = profile_calls(report, "add_bias_kernel");
    CHECK(calls == 2, "the report counts add_bias_kernel's 2 calls: %g\n%s", calls, report);
    cuda_backend_profile_restart(b); /* two GEMMs: at least a kernel each */
    CudaCounters c0, c1;
    cuda_backend_counters(b, &c0);
    b->gemm(b, false, true, R, C, C, 1.0f, x, C, w, C, 0.0f, y, C);
    b->gemm(b, false, false, R, C, C, 1.0f, x, C, w, C, 1.0f, y, C);
    cuda_backend_counters(b, &c1);
    cuda_backend_profile_summary(b, &s);
    /* cuBLAS's kernels are not nmt's own; with NMT_CUDA_GEMM=own they all are */
    CHECK(c1.cublas_calls - c0.cublas_calls == 2 && s.count[PROFILE_KERNEL] >= 2 &&
              (own_gemm_env ? s.own_kernel_seconds == s.seconds[PROFILE_KERNEL] : s.own_kernel_seconds == 0),
          "two GEMMs: %lld kernel records, %.3g s of %.3g s nmt's own (want >= 2, and %s)", s.count[PROFILE_KERNEL],
          s.own_kernel_seconds, s.seconds[PROFILE_KERNEL], own_gemm_env ? "all (NMT_CUDA_GEMM=own)" : "none: cuBLAS's");
    cuda_backend_profile_restart(b); /* a download */
    b->download(b, back, y, sizeof back);
    cuda_backend_profile_summary(b, &s);
    CHECK(s.count[PROFILE_COPY_DTOH] >= 1 && s.count[PROFILE_COPY_HTOD] == 0 && s.count[PROFILE_KERNEL] == 0,
          "download: %lld copies to the host, %lld to the device, %lld kernels (want >= 1, 0, 0)",
          s.count[PROFILE_COPY_DTOH], s.count[PROFILE_COPY_HTOD], s.count[PROFILE_KERNEL]);
    /* all of it in one window: more rows than NMT_CUDA_PROFILE_ROWS=3 */
    cuda_backend_profile_restart(b);
    b->zero(b, y, R * C * sizeof(float));
    b->add_bias(b, x, bias, R, C);
    b->gemm(b, false, true, R, C, C, 1.0f, x, C, w, C, 0.0f, y, C);
    b->download(b, back, y, sizeof back);
    cuda_backend_profile_summary(b, &s);
    CHECK(s.busy_seconds > 0 && s.busy_seconds <= s.span_seconds * (1 + 1e-9) && s.dropped == 0 && s.untimed == 0,
          "busy %.3g s of a %.3g s span, %lld dropped, %lld untimed", s.busy_seconds, s.span_seconds, s.dropped,
          s.untimed);
    f = fmemopen(report, sizeof report, "w");
    if (f) {
        cuda_backend_profile_write(b, f, "P: ", 0, 0);
        fclose(f);
    }
    int lines = 0;
    for (const char *p = report; (p = strchr(p, '\n')); p++) lines++;
    /* totals, header, 3 rows and the rest (the memset, add_bias_kernel,
     * the GEMM's kernels, the copy to the host: at least 4 rows) */
    CHECK(strstr(report, "P: device busy ") == report && lines == 6 && strstr(report, " more row"),
          "the report's lines: %d\n%s", lines, report);
    printf("  %-58s %lld kernels (%.3f ms nmt's, %.3f ms cuBLAS's), %lld memsets, %lld copies to the host; "
           "busy %.3f ms of %.3f ms\n", "profile (NMT_CUDA_PROFILE=1), all in one window:", s.count[PROFILE_KERNEL],
           s.own_kernel_seconds * 1e3, (s.seconds[PROFILE_KERNEL] - s.own_kernel_seconds) * 1e3,
           s.count[PROFILE_MEMSET], s.count[PROFILE_COPY_DTOH], s.busy_seconds * 1e3, s.span_seconds * 1e3);

    /* a second backend profiles too; the first one's end leaves it its profile */
    Backend *b2 = profile_backend("1", NULL, err, sizeof err);
    CHECK(b2 != NULL, "a second backend that profiles: %s", err);
    void *bufs[] = {x, w, y, bias};
    for (int i = 0; i < 4; i++) b->release(b, bufs[i]);
    CHECK(cuda_backend_error(b) == NULL, "profile: CUDA error: %s", cuda_backend_error(b));
    b->destroy(b);
    if (b2) {
        float *z = b2->alloc(b2, C * sizeof(float)), *zb = b2->alloc(b2, C * sizeof(float));
        b2->upload(b2, zb, h, C * sizeof(float));
        cuda_backend_profile_restart(b2);
        b2->add_bias(b2, z, zb, 1, C);
        cuda_backend_profile_summary(b2, &s);
        CHECK(s.count[PROFILE_KERNEL] == 1, "the second backend's profile after the first one's end: %lld kernels",
              s.count[PROFILE_KERNEL]);
        b2->release(b2, z);
        b2->release(b2, zb);
        CHECK(cuda_backend_error(b2) == NULL, "profile: CUDA error: %s", cuda_backend_error(b2));
        b2->destroy(b2);
    }
    free(h);
}

#endif
