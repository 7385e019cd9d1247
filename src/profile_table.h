/* profile_table.h: the table of a device profile (NMT_CUDA_PROFILE,
 * docs/gpu.md "Profile"): records of what ran on the device (kernels,
 * copies, memsets, each with its device start and end time) go in, and
 * out comes a report of where the device's time went: its busy time
 * against the wall time, and a row per kernel name with its share, time
 * and calls. Plain C with no CUDA in it, so that the arithmetic is tested
 * without a GPU (tests/test_profile_table.c); src/gpu/gpu_profile.cu feeds
 * it from CUPTI's activity records. Not thread-safe: the caller locks. */
#ifndef NMT_PROFILE_TABLE_H
#define NMT_PROFILE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PROFILE_KERNEL,
    PROFILE_COPY_HTOD,  /* host to device */
    PROFILE_COPY_DTOH,  /* device to host */
    PROFILE_COPY_DTOD,  /* device to device */
    PROFILE_COPY_OTHER, /* host to host, peer, arrays */
    PROFILE_MEMSET,
    PROFILE_KINDS
} ProfileKind;

typedef struct ProfileTable ProfileTable;

/* NULL when out of memory */
ProfileTable *profile_table_create(void);
void profile_table_destroy(ProfileTable *t);
/* forgets every record (and the dropped and untimed counts) */
void profile_table_clear(ProfileTable *t);

/* One record: `name` is a kernel's name as the device reports it (a C++
 * name mangled or not; copied), ignored for other kinds; start and end in
 * ns of the device's clock. A record without valid times (a start of 0,
 * the device could not time it, or an end before the start) is counted
 * as untimed and left out of the times and rows.
 * 0, or -1 when out of memory (the record is then counted as dropped). */
int profile_table_add(ProfileTable *t, ProfileKind kind, const char *name, uint64_t start_ns,
                      uint64_t end_ns, uint64_t bytes);
/* records the device's profiler could not keep (its buffers were full) */
void profile_table_note_dropped(ProfileTable *t, size_t n);
/* `name` (a kernel's report name, profile_kernel_name) is one of the
 * program's own kernels, not a library's (cuBLAS's): the report splits
 * the kernel time between the two. Kept by profile_table_clear. 0, or -1
 * when out of memory. */
int profile_table_note_own(ProfileTable *t, const char *name);

typedef struct {
    long long count[PROFILE_KINDS]; /* timed records of each kind */
    double seconds[PROFILE_KINDS];  /* their summed durations */
    uint64_t copy_bytes;            /* bytes of all copies */
    double busy_seconds; /* the union of all records' intervals: time the
                            device was running something (two streams'
                            overlapping work counts once) */
    double span_seconds; /* from the first record's start to the last one's end */
    long long names;     /* distinct rows (kernel names, copy kinds) */
    long long dropped, untimed;
    double own_kernel_seconds; /* of the kernel time: kernels named by
                                  profile_table_note_own (the rest: libraries') */
} ProfileSummary;

void profile_table_summary(const ProfileTable *t, ProfileSummary *s);

/* For tests: the records' intervals are merged once compact_at of them
 * are kept (default 2^20), and merged intervals ending more than
 * horizon_ns (default 1 s) before the latest end are summed and dropped
 * (profile_table.c). */
void profile_table_set_compaction(ProfileTable *t, size_t compact_at, uint64_t horizon_ns);

/* Writes the report, each line starting with `prefix`: a line of totals
 * (the device's busy time against wall_seconds, or against the span
 * of the records when wall_seconds <= 0; the kernels' time, split into
 * the program's own and the libraries'), then a header and the `rows`
 * rows with the most device time, most first, each with its share of the
 * records' summed time (kernels by name, copies by
 * direction, memsets), and one line for the rest. With steps > 0 times and
 * calls are given per step (the records covering that many steps). */
void profile_table_write(const ProfileTable *t, FILE *out, const char *prefix, int rows,
                         long steps, double wall_seconds);

/* A kernel's name for a report: C++ names demangled, then without the
 * return type, the parameter list and "(anonymous namespace)::", e.g.
 * "_Z10add_kernelPfPKfm" -> "add_kernel" and "void topk_kernel<true>(float
 * const*, int)" -> "topk_kernel<true>"; names that are not mangled (cuBLAS's
 * "sm90_xmma_gemm_...") stay as they are. Writes at most size bytes
 * (NUL included, cut short if need be) and returns out. */
char *profile_kernel_name(const char *raw, char *out, size_t size);

/* The profile's settings from the environment, read by every device so
 * that a bad value is refused alike on the CPU and on CUDA:
 * NMT_CUDA_PROFILE (0 or 1; unset or empty: 0) into *on and
 * NMT_CUDA_PROFILE_ROWS (1 to 100000; unset or empty: 25) into *rows.
 * 0, or -1 with a message naming the variable and its value in err. */
int profile_settings_from_env(int *on, int *rows, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
