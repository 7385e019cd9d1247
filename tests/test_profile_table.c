/* test_profile_table.c: the device profile's table (src/profile_table.c):
 * busy time as the union of overlapping records, per-kind totals, rows by
 * name merged and sorted, per-step figures, untimed and dropped records,
 * growth past the first hash table, and kernel names demangled and
 * shortened. */
#include "profile_table.h"

#include "test_util.h"

/* the report of t as a string (static storage) */
static const char *report(const ProfileTable *t, int rows, long steps, double wall) {
    static char buf[16384];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    if (!f) return "";
    profile_table_write(t, f, "P: ", rows, steps, wall);
    fclose(f);
    return buf;
}

/* the line of `text` that holds `needle`, or "" (static storage) */
static const char *line_with(const char *text, const char *needle) {
    static char line[512];
    const char *p = strstr(text, needle);
    line[0] = '\0';
    if (!p) return line;
    while (p > text && p[-1] != '\n') p--;
    size_t n = strcspn(p, "\n");
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p, n);
    line[n] = '\0';
    return line;
}

static void test_busy_and_totals(void) {
    ProfileTable *t = profile_table_create();
    CHECK(t != NULL, "create");
    if (!t) return;
    /* a: 0-100 us; b on another stream 50-150 (overlaps a); gap; c 300-400;
     * a copy 400-450 touching c; a memset 1000-1010 alone */
    const uint64_t us = 1000;
    profile_table_add(t, PROFILE_KERNEL, "_Z8kernel_aPf", 1000000 + 0 * us, 1000000 + 100 * us, 0);
    profile_table_add(t, PROFILE_KERNEL, "kernel_b", 1000000 + 50 * us, 1000000 + 150 * us, 0);
    profile_table_add(t, PROFILE_KERNEL, "_Z8kernel_aPf", 1000000 + 300 * us, 1000000 + 400 * us, 0);
    profile_table_add(t, PROFILE_COPY_HTOD, NULL, 1000000 + 400 * us, 1000000 + 450 * us, 4096);
    profile_table_add(t, PROFILE_MEMSET, NULL, 1000000 + 1000 * us, 1000000 + 1010 * us, 64);
    ProfileSummary s;
    profile_table_summary(t, &s);
    CHECK_NEAR(s.busy_seconds, 310e-6, 1e-12); /* 0-150, 300-450, 1000-1010 */
    CHECK_NEAR(s.span_seconds, 1010e-6, 1e-12);
    CHECK_EQ_INT(s.count[PROFILE_KERNEL], 3);
    CHECK_NEAR(s.seconds[PROFILE_KERNEL], 300e-6, 1e-12);
    CHECK_EQ_INT(s.count[PROFILE_COPY_HTOD], 1);
    CHECK_EQ_INT(s.count[PROFILE_MEMSET], 1);
    CHECK_EQ_INT((long long)s.copy_bytes, 4096); /* memsets are not copies */
    CHECK_EQ_INT(s.names, 4);
    CHECK_EQ_INT(s.dropped, 0);

    /* an interval inside another adds nothing; untimed records are counted apart */
    profile_table_add(t, PROFILE_KERNEL, "kernel_b", 1000000 + 10 * us, 1000000 + 20 * us, 0);
    profile_table_add(t, PROFILE_KERNEL, "kernel_c", 0, 0, 0);
    profile_table_add(t, PROFILE_KERNEL, "kernel_c", 5000000, 4000000, 0); /* ends before it starts */
    profile_table_add(t, PROFILE_KERNEL, "kernel_c", 0, 3000000, 0);
    profile_table_note_dropped(t, 7);
    profile_table_summary(t, &s);
    CHECK_NEAR(s.busy_seconds, 310e-6, 1e-12);
    CHECK_NEAR(s.span_seconds, 1010e-6, 1e-12);
    CHECK_EQ_INT(s.count[PROFILE_KERNEL], 4);
    CHECK_EQ_INT(s.untimed, 3);
    CHECK_EQ_INT(s.dropped, 7);
    CHECK_EQ_INT(s.names, 4); /* the untimed kernel_c's make no row */

    /* over 2 steps, against 2 ms of wall time: busy 0.155 ms of 1 ms a step */
    const char *r = report(t, 10, 2, 2e-3);
    CHECK_CONTAINS(r, "P: device busy 0.155 ms of 1.000 ms wall a step (15.5%): 2.0 kernels 0.155 ms "
                      "(own 0.000, libraries' 0.155), ");
    CHECK_CONTAINS(r, "0.5 copies 0.025 ms (2.0 KB), 0.5 memsets 0.005 ms a step; 7 records dropped, 3 untimed");
    /* kernel_a: 200 of 370 us in all = 54.1%, 0.1 ms and 1 call a step, 100 us a call */
    CHECK_CONTAINS(line_with(r, " kernel_a"), " 54.1%      0.100          1.0      100.00  kernel_a");
    CHECK_CONTAINS(line_with(r, "kernel_b"), "0.055          1.0       55.00  kernel_b");
    CHECK_CONTAINS(line_with(r, "[copy host to device]"), "0.025          0.5       50.00");
    /* most time first: kernel_a's row before kernel_b's, the memset last */
    const char *a = strstr(r, " kernel_a"), *b = strstr(r, " kernel_b"), *m = strstr(r, "[memset]");
    CHECK(a && b && m && a < b && b < m, "rows sorted by time:\n%s", r);

    /* two rows shown, the other two in one line */
    r = report(t, 2, 0, 0);
    CHECK_CONTAINS(r, "of 1.010 ms from the first record to the last (30.7%): 4 kernels 0.310 ms (own 0.000, "
                      "libraries' 0.310), 1 copies 0.050 ms (4.1 KB), 1 memsets 0.010 ms; 7 records dropped, 3 untimed");
    /* kernel_a (mangled as reported) is the program's own, kernel_b a library's */
    CHECK_EQ_INT(profile_table_note_own(t, "kernel_a"), 0);
    CHECK_EQ_INT(profile_table_note_own(t, "kernel_a"), 0); /* once is enough */
    profile_table_summary(t, &s);
    CHECK_NEAR(s.own_kernel_seconds, 200e-6, 1e-12);
    CHECK_CONTAINS(report(t, 2, 0, 0), "4 kernels 0.310 ms (own 0.200, libraries' 0.110), ");
    CHECK_CONTAINS(r, "P:  share     ms all    calls all   us a call  name\n");
    CHECK_CONTAINS(r, "(2 more rows)");
    CHECK(strstr(r, "[memset]") == NULL, "the memset is among the rest:\n%s", r);
    CHECK_CONTAINS(line_with(r, "more rows"), " 16.2%      0.060            2       30.00  (2 more rows)");

    profile_table_clear(t);
    profile_table_summary(t, &s);
    CHECK(s.busy_seconds == 0 && s.names == 0 && s.dropped == 0 && s.untimed == 0 &&
              s.count[PROFILE_KERNEL] == 0,
          "clear forgets every record");
    profile_table_add(t, PROFILE_KERNEL, "_Z8kernel_aPf", 5000, 6000, 0);
    profile_table_summary(t, &s);
    CHECK_NEAR(s.own_kernel_seconds, 1e-6, 1e-15); /* but not the program's own kernels */
    profile_table_clear(t);
    CHECK_CONTAINS(report(t, 5, 3, 0), "device busy 0.000 ms");
    profile_table_destroy(t);
}

/* more names than the first hash table holds, and records past the first
 * block of intervals: nothing lost */
static void test_growth(void) {
    ProfileTable *t = profile_table_create();
    if (!t) return;
    char name[32];
    long long ns = 0;
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "k%d", i % 500);
        profile_table_add(t, PROFILE_KERNEL, name, 1000 + 10 * (uint64_t)i, 1000 + 10 * (uint64_t)i + 5, 0);
        ns += 5;
    }
    ProfileSummary s;
    profile_table_summary(t, &s);
    CHECK_EQ_INT(s.names, 500);
    CHECK_EQ_INT(s.count[PROFILE_KERNEL], 10000);
    CHECK_NEAR(s.seconds[PROFILE_KERNEL], ns * 1e-9, 1e-12);
    CHECK_NEAR(s.busy_seconds, ns * 1e-9, 1e-12);
    const char *r = report(t, 3, 20, 0);
    CHECK_CONTAINS(line_with(r, " k0"), "0.2%      0.000          1.0        0.01  k0");
    CHECK_CONTAINS(r, "(497 more rows)");
    profile_table_destroy(t);
}

/* the intervals merged and summed as they come (a long run holds little):
 * the busy time is still the union, also of records that overlap
 * intervals kept from before a compaction, and of two streams' work */
static void test_compaction(void) {
    ProfileTable *t = profile_table_create();
    if (!t) return;
    profile_table_set_compaction(t, 49, 1000); /* merge every 49 records (so that a merge falls between the two lanes of a pair), sum what ended 1 us before */
    uint64_t busy = 0;
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t start = 1000000 + 100 * i; /* a kernel of 40 ns every 100 ns */
        profile_table_add(t, PROFILE_KERNEL, "k", start, start + 40, 0);
        /* every 7th also one on the other lane, overlapping it by 20 ns */
        if (i % 7 == 0) profile_table_add(t, PROFILE_KERNEL, "other_lane", start + 20, start + 70, 0);
        busy += i % 7 == 0 ? 70 : 40;
    }
    ProfileSummary s;
    profile_table_summary(t, &s);
    CHECK_NEAR(s.busy_seconds, busy * 1e-9, 1e-15);
    CHECK_NEAR(s.span_seconds, (100 * 19999 + 70) * 1e-9, 1e-15); /* the last one on both lanes */
    CHECK_EQ_INT(s.count[PROFILE_KERNEL], 20000 + 2858);
    /* and when every record stays inside the horizon, nothing is lost either */
    profile_table_clear(t);
    profile_table_set_compaction(t, 16, 1000000000ull);
    for (uint64_t i = 0; i < 1000; i++) profile_table_add(t, PROFILE_MEMSET, NULL, 5000 + 10 * i, 5000 + 10 * i + 10, 4);
    profile_table_summary(t, &s);
    CHECK_NEAR(s.busy_seconds, 10000e-9, 1e-15);
    profile_table_destroy(t);
}

static void test_names(void) {
    char out[256];
    CHECK_EQ_STR(profile_kernel_name("_Z10add_kernelPfPKfm", out, sizeof out), "add_kernel");
    /* a template instance: the return type and the parameters go, the arguments stay */
    CHECK_EQ_STR(profile_kernel_name("_Z11topk_kernelILb1EEvPKfi", out, sizeof out), "topk_kernel<true>");
    CHECK_EQ_STR(profile_kernel_name("_ZN12_GLOBAL__N_19cell_stepEPf", out, sizeof out), "cell_step");
    /* parentheses inside template arguments are not the parameter list */
    CHECK_EQ_STR(profile_kernel_name("void cutlass::Kernel2<Gemm<(int)4>>(Params)", out, sizeof out),
                 "cutlass::Kernel2<Gemm<(int)4>>");
    CHECK_EQ_STR(profile_kernel_name("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32", out, sizeof out),
                 "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32");
    /* not a valid mangled name: kept as reported */
    CHECK_EQ_STR(profile_kernel_name("_Zbroken", out, sizeof out), "_Zbroken");
    CHECK_EQ_STR(profile_kernel_name(NULL, out, sizeof out), "(no name)");
    char small[6];
    CHECK_EQ_STR(profile_kernel_name("_Z10add_kernelPfPKfm", small, sizeof small), "add_k");

    /* two overloads, one row */
    ProfileTable *t = profile_table_create();
    if (!t) return;
    profile_table_add(t, PROFILE_KERNEL, "_Z4fillPfi", 100, 200, 0);
    profile_table_add(t, PROFILE_KERNEL, "_Z4fillPdi", 300, 350, 0);
    const char *r = report(t, 10, 0, 0);
    CHECK_CONTAINS(line_with(r, "fill"), "100.0%      0.000            2        0.07  fill");
    CHECK(strstr(strstr(r, "fill") + 1, "fill") == NULL, "one row for both overloads:\n%s", r);
    profile_table_destroy(t);
}

int main(void) {
    test_busy_and_totals();
    test_growth();
    test_compaction();
    test_names();
    return test_summary("test_profile_table");
}
