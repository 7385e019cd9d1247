/* profile_table.c: the table of a device profile (profile_table.h). Rows
 * are kept in a hash table keyed by kind and the name as reported. The
 * device's busy time is the union of the records' intervals: they are kept
 * (16 bytes a record) until there are compact_at of them, then sorted and
 * merged, and the merged intervals that end over a second (horizon_ns)
 * before the latest end seen are added up and dropped. So a night's
 * training under the profile holds a few MB, not GB; a record that arrived
 * more than that second late and overlapped a dropped interval would count
 * its overlap twice (CUPTI returns records in buffers as the work
 * completes, within milliseconds of each other). */
#include "profile_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* the C++ runtime's demangler (libstdc++; every nmt program links it) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

typedef struct {
    ProfileKind kind;
    char *name; /* as reported; NULL for copies and memsets */
    long long count;
    uint64_t ns;
} ProfileRow;

typedef struct {
    uint64_t start, end;
} ProfileSpan;

struct ProfileTable {
    ProfileRow *rows; /* open addressing, cap slots (a power of 2) */
    unsigned char *used; /* used[i]: rows[i] holds a row */
    size_t cap, n_rows;
    ProfileSpan *spans;
    size_t n_spans, cap_spans;
    size_t compact_at;    /* intervals kept before they are merged */
    uint64_t horizon_ns;  /* merged intervals ending this long before the last end are summed */
    uint64_t folded_ns;   /* busy time of the intervals summed and dropped */
    uint64_t first_start, last_end; /* of all timed records (valid when any) */
    bool any;
    char **own; /* profile_table_note_own's names */
    size_t n_own;
    uint64_t copy_bytes;
    long long dropped, untimed;
};

static const char *const kind_names[PROFILE_KINDS] = {
    [PROFILE_KERNEL] = "kernel",
    [PROFILE_COPY_HTOD] = "[copy host to device]",
    [PROFILE_COPY_DTOH] = "[copy device to host]",
    [PROFILE_COPY_DTOD] = "[copy device to device]",
    [PROFILE_COPY_OTHER] = "[copy, other]",
    [PROFILE_MEMSET] = "[memset]",
};

ProfileTable *profile_table_create(void) {
    ProfileTable *t = nmt_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cap = 64;
    t->compact_at = (size_t)1 << 20; /* 16 MB of intervals */
    t->horizon_ns = 1000000000ull;
    t->rows = nmt_calloc(t->cap, sizeof *t->rows);
    t->used = nmt_calloc(t->cap, 1);
    if (!t->rows || !t->used) {
        profile_table_destroy(t);
        return NULL;
    }
    return t;
}

void profile_table_clear(ProfileTable *t) {
    for (size_t i = 0; i < t->cap; i++)
        if (t->used[i]) nmt_free(t->rows[i].name);
    memset(t->rows, 0, t->cap * sizeof *t->rows);
    memset(t->used, 0, t->cap);
    t->n_rows = 0;
    t->n_spans = 0;
    t->folded_ns = t->first_start = t->last_end = 0;
    t->any = false;
    t->copy_bytes = 0;
    t->dropped = t->untimed = 0;
}

void profile_table_destroy(ProfileTable *t) {
    if (!t) return;
    if (t->rows && t->used) profile_table_clear(t);
    for (size_t i = 0; i < t->n_own; i++) nmt_free(t->own[i]);
    nmt_free(t->own);
    nmt_free(t->rows);
    nmt_free(t->used);
    nmt_free(t->spans);
    nmt_free(t);
}

/* FNV-1a over the kind and the name */
static size_t row_hash(ProfileKind kind, const char *name) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    h *= 1099511628211ull;
    for (const char *p = name ? name : ""; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)h;
}

/* the slot of (kind, name): its row, or the free slot where it belongs */
static size_t row_slot(const ProfileTable *t, ProfileKind kind, const char *name) {
    size_t i = row_hash(kind, name) & (t->cap - 1);
    while (t->used[i] &&
           !(t->rows[i].kind == kind &&
             (kind != PROFILE_KERNEL || strcmp(t->rows[i].name, name) == 0)))
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* doubles the hash table; false when out of memory (the table unchanged) */
static bool rows_grow(ProfileTable *t) {
    ProfileTable bigger = *t;
    bigger.cap = t->cap * 2;
    bigger.rows = nmt_calloc(bigger.cap, sizeof *bigger.rows);
    bigger.used = nmt_calloc(bigger.cap, 1);
    if (!bigger.rows || !bigger.used) {
        nmt_free(bigger.rows);
        nmt_free(bigger.used);
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->used[i]) continue;
        size_t j = row_slot(&bigger, t->rows[i].kind, t->rows[i].name);
        bigger.rows[j] = t->rows[i];
        bigger.used[j] = 1;
    }
    nmt_free(t->rows);
    nmt_free(t->used);
    t->rows = bigger.rows;
    t->used = bigger.used;
    t->cap = bigger.cap;
    return true;
}

static int span_cmp(const void *a, const void *b) {
    const ProfileSpan *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* sorts spans[0..n) by start and merges them in place into disjoint
 * intervals; returns how many */
static size_t spans_merge(ProfileSpan *spans, size_t n) {
    if (n == 0) return 0;
    qsort(spans, n, sizeof *spans, span_cmp);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (spans[i].start > spans[m].end) spans[++m] = spans[i]; /* a gap: a new interval */
        else if (spans[i].end > spans[m].end) spans[m].end = spans[i].end;
    }
    return m + 1;
}

/* merges the kept intervals and sums and drops those that end before the horizon */
static void spans_compact(ProfileTable *t) {
    size_t n = spans_merge(t->spans, t->n_spans), kept = 0;
    uint64_t horizon = t->last_end > t->horizon_ns ? t->last_end - t->horizon_ns : 0;
    for (size_t i = 0; i < n; i++) {
        if (t->spans[i].end < horizon) t->folded_ns += t->spans[i].end - t->spans[i].start;
        else t->spans[kept++] = t->spans[i];
    }
    t->n_spans = kept;
    /* mostly inside the horizon still: compact less often, not at every add */
    if (kept > t->compact_at / 2) t->compact_at *= 2;
}

void profile_table_set_compaction(ProfileTable *t, size_t compact_at, uint64_t horizon_ns) {
    t->compact_at = compact_at > 0 ? compact_at : 1;
    t->horizon_ns = horizon_ns;
}

int profile_table_add(ProfileTable *t, ProfileKind kind, const char *name, uint64_t start_ns,
                      uint64_t end_ns, uint64_t bytes) {
    if ((int)kind < 0 || kind >= PROFILE_KINDS) kind = PROFILE_COPY_OTHER;
    if (kind == PROFILE_KERNEL && !name) name = "(no name)";
    /* no times (both 0), or times that cannot be (CUPTI has returned ends
     * before starts, and zeros, after tens of millions of graph kernels):
     * counted, kept out of the times */
    if (start_ns == 0 || end_ns < start_ns) {
        t->untimed++;
        return 0;
    }
    if ((t->n_rows + 1) * 10 > t->cap * 7 && !rows_grow(t)) goto out_of_memory;
    if (t->n_spans >= t->compact_at) spans_compact(t);
    if (t->n_spans == t->cap_spans) {
        size_t cap = t->cap_spans ? t->cap_spans * 2 : 4096;
        ProfileSpan *s = nmt_realloc(t->spans, cap * sizeof *s);
        if (!s) goto out_of_memory;
        t->spans = s;
        t->cap_spans = cap;
    }
    size_t i = row_slot(t, kind, name);
    if (!t->used[i]) {
        char *copy = NULL;
        if (kind == PROFILE_KERNEL && !(copy = nmt_strdup(name))) goto out_of_memory;
        t->rows[i] = (ProfileRow){.kind = kind, .name = copy};
        t->used[i] = 1;
        t->n_rows++;
    }
    t->rows[i].count++;
    t->rows[i].ns += end_ns - start_ns;
    t->spans[t->n_spans++] = (ProfileSpan){start_ns, end_ns};
    if (!t->any || start_ns < t->first_start) t->first_start = start_ns;
    if (!t->any || end_ns > t->last_end) t->last_end = end_ns;
    t->any = true;
    if (kind != PROFILE_KERNEL && kind != PROFILE_MEMSET) t->copy_bytes += bytes;
    return 0;
out_of_memory:
    t->dropped++;
    return -1;
}

void profile_table_note_dropped(ProfileTable *t, size_t n) { t->dropped += (long long)n; }

static bool is_own(const ProfileTable *t, const char *name) {
    for (size_t i = 0; i < t->n_own; i++)
        if (strcmp(t->own[i], name) == 0) return true;
    return false;
}

int profile_table_note_own(ProfileTable *t, const char *name) {
    if (is_own(t, name)) return 0;
    char **own = nmt_realloc(t->own, (t->n_own + 1) * sizeof *own);
    if (!own) return -1;
    t->own = own;
    if (!(own[t->n_own] = nmt_strdup(name))) return -1;
    t->n_own++;
    return 0;
}

void profile_table_summary(const ProfileTable *t, ProfileSummary *s) {
    memset(s, 0, sizeof *s);
    char name[256];
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->used[i]) continue;
        s->count[t->rows[i].kind] += t->rows[i].count;
        s->seconds[t->rows[i].kind] += t->rows[i].ns * 1e-9;
        if (t->rows[i].kind == PROFILE_KERNEL && t->n_own &&
            is_own(t, profile_kernel_name(t->rows[i].name, name, sizeof name)))
            s->own_kernel_seconds += t->rows[i].ns * 1e-9;
    }
    s->copy_bytes = t->copy_bytes;
    s->names = (long long)t->n_rows;
    s->dropped = t->dropped;
    s->untimed = t->untimed;
    if (!t->any) return;
    s->span_seconds = (t->last_end - t->first_start) * 1e-9;
    /* the kept intervals merged on a copy, so that adding stays O(1) */
    uint64_t busy = t->folded_ns;
    ProfileSpan *merged = t->n_spans ? nmt_malloc(t->n_spans * sizeof *merged) : NULL;
    if (t->n_spans && !merged) return; /* no busy time rather than a wrong one */
    if (merged) memcpy(merged, t->spans, t->n_spans * sizeof *merged);
    size_t n = spans_merge(merged, t->n_spans);
    for (size_t i = 0; i < n; i++) busy += merged[i].end - merged[i].start;
    nmt_free(merged);
    s->busy_seconds = busy * 1e-9;
}

/* ---- names ---- */

char *profile_kernel_name(const char *raw, char *out, size_t size) {
    if (!size) return out;
    int status = -1;
    char *demangled = raw && raw[0] == '_' && raw[1] == 'Z' ? __cxa_demangle(raw, NULL, NULL, &status) : NULL;
    const char *s = status == 0 && demangled ? demangled : (raw ? raw : "(no name)");
    if (strncmp(s, "void ", 5) == 0) s += 5; /* a kernel's return type */
    size_t o = 0;
    int angle = 0;
    static const char anon[] = "(anonymous namespace)::";
    for (const char *p = s; *p && o + 1 < size; p++) {
        if (strncmp(p, anon, sizeof anon - 1) == 0) {
            p += sizeof anon - 2;
            continue;
        }
        if (*p == '<') angle++;
        if (*p == '>' && angle > 0) angle--;
        if (*p == '(' && angle == 0 && p != s) break; /* the parameter list */
        out[o++] = *p;
    }
    out[o] = '\0';
    free(demangled); /* malloc'ed by the demangler */
    return out;
}

/* ---- the report ---- */

typedef struct {
    ProfileKind kind;
    char name[256];
    long long count;
    uint64_t ns;
} ReportRow;

static int report_cmp(const void *a, const void *b) {
    const ReportRow *x = a, *y = b;
    if (x->ns != y->ns) return x->ns > y->ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* the rows with their report names, rows of the same name merged (C++
 * overloads differ in their parameters only); NULL when out of memory */
static ReportRow *report_rows(const ProfileTable *t, size_t *n_out) {
    ReportRow *r = nmt_malloc((t->n_rows ? t->n_rows : 1) * sizeof *r);
    if (!r) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->used[i]) continue;
        const ProfileRow *row = &t->rows[i];
        ReportRow x = {.kind = row->kind, .count = row->count, .ns = row->ns};
        if (row->kind == PROFILE_KERNEL)
            profile_kernel_name(row->name, x.name, sizeof x.name);
        else
            snprintf(x.name, sizeof x.name, "%s", kind_names[row->kind]);
        size_t j = 0;
        while (j < n && !(r[j].kind == x.kind && strcmp(r[j].name, x.name) == 0)) j++;
        if (j < n) {
            r[j].count += x.count;
            r[j].ns += x.ns;
        } else {
            r[n++] = x;
        }
    }
    qsort(r, n, sizeof *r, report_cmp);
    *n_out = n;
    return r;
}

void profile_table_write(const ProfileTable *t, FILE *out, const char *prefix, int rows,
                         long steps, double wall_seconds) {
    ProfileSummary s;
    profile_table_summary(t, &s);
    double per = steps > 0 ? 1.0 / (double)steps : 1.0;
    const char *unit = steps > 0 ? " a step" : "";
    double wall = wall_seconds > 0 ? wall_seconds : s.span_seconds;
    double copies_s = 0;
    long long copies = 0;
    for (int k = PROFILE_COPY_HTOD; k <= PROFILE_COPY_OTHER; k++) {
        copies += s.count[k];
        copies_s += s.seconds[k];
    }
    int dec = steps > 0 ? 1 : 0; /* decimals of a count: whole numbers unless per step */
    fprintf(out, "%sdevice busy %.3f ms of %.3f ms %s%s (%.1f%%): %.*f kernels %.3f ms (own %.3f, "
            "libraries' %.3f), %.*f copies %.3f ms (%.1f KB), %.*f memsets %.3f ms%s; %lld records "
            "dropped, %lld untimed\n",
            prefix, s.busy_seconds * 1e3 * per, wall * 1e3 * per,
            wall_seconds > 0 ? "wall" : "from the first record to the last", unit,
            wall > 0 ? 100.0 * s.busy_seconds / wall : 0.0, dec, s.count[PROFILE_KERNEL] * per,
            s.seconds[PROFILE_KERNEL] * 1e3 * per, s.own_kernel_seconds * 1e3 * per,
            (s.seconds[PROFILE_KERNEL] - s.own_kernel_seconds) * 1e3 * per, dec, copies * per, copies_s * 1e3 * per,
            s.copy_bytes * per / 1e3, dec, s.count[PROFILE_MEMSET] * per,
            s.seconds[PROFILE_MEMSET] * 1e3 * per, unit, s.dropped, s.untimed);
    size_t n = 0;
    ReportRow *r = report_rows(t, &n);
    if (!r) {
        fprintf(out, "%s(out of memory for the rows)\n", prefix);
        return;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) total += (double)r[i].ns;
    fprintf(out, "%s share %s %s   us a call  name\n", prefix, steps > 0 ? " ms a step" : "    ms all",
            steps > 0 ? "calls a step" : "   calls all");
    size_t shown = rows > 0 && (size_t)rows < n ? (size_t)rows : n;
    for (size_t i = 0; i < shown; i++)
        fprintf(out, "%s%5.1f%% %10.3f %12.*f %11.2f  %s\n", prefix,
                total > 0 ? 100.0 * r[i].ns / total : 0.0, r[i].ns * 1e-6 * per, dec, r[i].count * per,
                r[i].ns * 1e-3 / (double)r[i].count, r[i].name);
    if (shown < n) {
        uint64_t ns = 0;
        long long count = 0;
        for (size_t i = shown; i < n; i++) {
            ns += r[i].ns;
            count += r[i].count;
        }
        fprintf(out, "%s%5.1f%% %10.3f %12.*f %11.2f  (%zu more row%s)\n", prefix,
                total > 0 ? 100.0 * ns / total : 0.0, ns * 1e-6 * per, dec, count * per,
                ns * 1e-3 / (double)count, n - shown, n - shown == 1 ? "" : "s");
    }
    nmt_free(r);
}

/* one setting of profile_settings_from_env: 1 set, 0 unset or empty, -1 bad */
static int profile_env_int(const char *name, int lo, int hi, const char *want, int *out, char *err,
                           size_t err_size) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    if (nmt_parse_int(v, lo, hi, out)) return 1;
    snprintf(err, err_size, "%s=%s: want %s", name, v, want);
    return -1;
}

int profile_settings_from_env(int *on, int *rows, char *err, size_t err_size) {
    *on = 0;
    *rows = 25;
    if (profile_env_int("NMT_CUDA_PROFILE", 0, 1, "0 or 1", on, err, err_size) < 0) return -1;
    if (profile_env_int("NMT_CUDA_PROFILE_ROWS", 1, 100000, "a whole number of rows, 1 to 100000", rows, err,
                        err_size) < 0)
        return -1;
    return 0;
}
