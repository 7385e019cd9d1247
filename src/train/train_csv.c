/* train_csv.c: the run log train.csv (train_csv.h): column names, the
 * writer used by the trainer, the reader and the curves used by
 * `nmt plot`. Every per-column piece of code is generated from
 * TRAIN_CSV_COLUMNS. */
#include "train/train_csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"

static const char *const column_names[TRAIN_CSV_N_COLUMNS] = {
#define NAME_(E, name, T) #name,
    TRAIN_CSV_COLUMNS(NAME_)
#undef NAME_
};

static const char *const kind_names[] = {"train", "valid"};

const char *train_csv_column_name(TrainCsvColumn col) {
    NMT_ASSERT((int)col >= 0 && col < TRAIN_CSV_N_COLUMNS);
    return column_names[col];
}

const char *train_csv_kind_name(TrainCsvKind kind) {
    NMT_ASSERT((int)kind >= 0 && (size_t)kind < NMT_ARRAY_LEN(kind_names));
    return kind_names[kind];
}

void train_csv_row_init(TrainCsvRow *r) {
#define INIT_KIND(name) r->name = TRAIN_CSV_TRAIN;
#define INIT_STEP(name) r->name = 0;
#define INIT_VALUE(name) r->name = TRAIN_CSV_EMPTY;
#define INIT_(E, name, T) INIT_##T(name)
    TRAIN_CSV_COLUMNS(INIT_)
#undef INIT_
#undef INIT_KIND
#undef INIT_STEP
#undef INIT_VALUE
}

double train_csv_row_value(const TrainCsvRow *row, TrainCsvColumn col) {
#define GET_KIND(name) return TRAIN_CSV_EMPTY;
#define GET_STEP(name) return (double)row->name;
#define GET_VALUE(name) return row->name;
#define GET_(E, name, T) case TRAIN_CSV_COL_##E: GET_##T(name)
    switch (col) {
        TRAIN_CSV_COLUMNS(GET_)
    default: break;
    }
#undef GET_
#undef GET_KIND
#undef GET_STEP
#undef GET_VALUE
    return TRAIN_CSV_EMPTY;
}

/* Sets a VALUE column (the kind and step are not set this way). */
static void row_set_value(TrainCsvRow *row, TrainCsvColumn col, double v) {
#define SET_KIND(name)
#define SET_STEP(name)
#define SET_VALUE(name) row->name = v;
#define SET_(E, name, T) case TRAIN_CSV_COL_##E: SET_##T(name) break;
    switch (col) {
        TRAIN_CSV_COLUMNS(SET_)
    default: break;
    }
#undef SET_
#undef SET_KIND
#undef SET_STEP
#undef SET_VALUE
}

static int column_is_value(TrainCsvColumn col) {
    static const unsigned char is_value[TRAIN_CSV_N_COLUMNS] = {
#define ISV_KIND 0
#define ISV_STEP 0
#define ISV_VALUE 1
#define ISV_(E, name, T) ISV_##T,
        TRAIN_CSV_COLUMNS(ISV_)
#undef ISV_
#undef ISV_KIND
#undef ISV_STEP
#undef ISV_VALUE
    };
    return is_value[col];
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

void train_csv_format_number(double v, char *buf, size_t cap) {
    if (cap == 0) return;
    if (isnan(v)) {
        buf[0] = '\0';
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    double a = fabs(v);
    if (a == 0) {
        snprintf(buf, cap, "0");
        return;
    }
    if (a >= 1e15 || a < 1e-15) { /* out of the plain range: strtod still reads it */
        snprintf(buf, cap, "%.9g", v);
        return;
    }
    int e = (int)floor(log10(a));
    int dec = 8 - e;
    if (dec < 0) dec = 0;
    snprintf(buf, cap, "%.*f", dec, v);
    if (strchr(buf, '.')) {
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0') buf[--n] = '\0';
        if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
    }
    if (!strcmp(buf, "-0")) snprintf(buf, cap, "0");
}

static NmtStatus write_line(FILE *f, const char *line, size_t n) {
    if (fwrite(line, 1, n, f) != n || fflush(f) != 0)
        return nmt_fail(NMT_ERR_IO, "train.csv: cannot write a row: %s", strerror(errno));
    return NMT_OK;
}

NmtStatus train_csv_header(FILE *f) {
    char line[TRAIN_CSV_N_COLUMNS * 24 + 2];
    size_t n = 0;
    for (int c = 0; c < TRAIN_CSV_N_COLUMNS; c++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", c ? "," : "", column_names[c]);
    line[n++] = '\n';
    return write_line(f, line, n);
}

NmtStatus train_csv_append(FILE *f, const TrainCsvRow *row) {
    char line[TRAIN_CSV_N_COLUMNS * (TRAIN_CSV_NUMBER_CAP + 1) + 2];
    char num[TRAIN_CSV_NUMBER_CAP];
    size_t n = 0;
    NMT_ASSERT((int)row->kind >= 0 && (size_t)row->kind < NMT_ARRAY_LEN(kind_names));
#define PUT_KIND(name) snprintf(num, sizeof num, "%s", kind_names[row->name]);
#define PUT_STEP(name) snprintf(num, sizeof num, "%lld", (long long)row->name);
#define PUT_VALUE(name) train_csv_format_number(row->name, num, sizeof num);
#define PUT_(E, name, T)                                                                 \
    PUT_##T(name)                                                                        \
    n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", TRAIN_CSV_COL_##E ? "," : "", num);
    TRAIN_CSV_COLUMNS(PUT_)
#undef PUT_
#undef PUT_KIND
#undef PUT_STEP
#undef PUT_VALUE
    line[n++] = '\n';
    return write_line(f, line, n);
}

/* The header line this version writes, without the newline. */
static void header_text(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int c = 0; c < TRAIN_CSV_N_COLUMNS && n < cap; c++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", c ? "," : "", column_names[c]);
}

static int count_commas_n(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += s[i] == ',';
    return c;
}

static int count_commas(const char *s) { return count_commas_n(s, strlen(s)); }

/* Rewrites the log text[0..len) (an earlier version's, whose header is a
 * prefix of `header`) with `header` and `missing` empty fields added to
 * every row; a last line without a newline is dropped (a crash cut it). */
static NmtStatus widen_log(const char *path, const char *text, size_t len, const char *header, int missing) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    size_t cap = len + strlen(header) + 2 + lines * (size_t)missing;
    char *out = nmt_malloc(cap);
    if (!out) return nmt_fail_nomem("train.csv: adding columns");
    size_t n = (size_t)snprintf(out, cap, "%s\n", header);
    const char *p = text, *end = text + len;
    p += strcspn(p, "\n"); /* past the old header */
    if (p < end) p++;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        size_t row = (size_t)(nl - p);
        int cr = row > 0 && p[row - 1] == '\r';
        if (cr) row--;
        memcpy(out + n, p, row);
        n += row;
        if (row > 0)
            for (int k = 0; k < missing; k++) out[n++] = ',';
        out[n++] = '\n';
        p = nl + 1;
    }
    NmtStatus st = file_write_atomic(path, out, n);
    nmt_free(out);
    return st;
}

NmtStatus train_csv_open_append(const char *path, FILE **out) {
    *out = NULL;
    if (access(path, F_OK) == 0) {
        char *text;
        size_t len;
        NmtStatus st = file_read_all(path, &text, &len);
        if (st) return st;
        if (len > 0) {
            char want[TRAIN_CSV_N_COLUMNS * 24];
            header_text(want, sizeof want);
            const char *p = text;
            if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;
            size_t hl = strcspn(p, "\r\n");
            int same = hl == strlen(want) && !memcmp(p, want, hl);
            if (!same && hl > 0 && hl < strlen(want) && !memcmp(p, want, hl) && want[hl] == ',') {
                /* an earlier version's log with fewer columns */
                st = widen_log(path, text, len, want, count_commas(want) - count_commas_n(p, hl));
                nmt_free(text);
                if (st) return st;
                return train_csv_open_append(path, out);
            }
            size_t keep = len;
            while (keep > 0 && text[keep - 1] != '\n') keep--;
            nmt_free(text);
            if (!same)
                return nmt_fail(NMT_ERR_FORMAT,
                                "%s: the header is not this version's (%s); move the file away "
                                "to start a new log",
                                path, want);
            if (keep == 0) /* header without a newline: rewrite it below */
                len = 0;
            else if (keep < len && truncate(path, (off_t)keep) != 0)
                return nmt_fail(NMT_ERR_IO, "%s: cannot cut a partial last line: %s", path,
                                strerror(errno));
        } else {
            nmt_free(text);
        }
        if (len > 0) {
            FILE *f = fopen(path, "ab");
            if (!f) return nmt_fail(NMT_ERR_IO, "%s: cannot open for appending: %s", path, strerror(errno));
            *out = f;
            return NMT_OK;
        }
    }
    FILE *f = fopen(path, "wb");
    if (!f) return nmt_fail(NMT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    NmtStatus st = train_csv_header(f);
    if (st) {
        fclose(f);
        nmt_error_prefix("%s", path);
        return st;
    }
    *out = f;
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *s;
    size_t n;
} Span;

static Span span_trim(const char *s, size_t n) {
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    return (Span){s, n};
}

static int span_eq(Span a, const char *b) {
    return a.n == strlen(b) && !memcmp(a.s, b, a.n);
}

/* Splits a line into at most `max` fields (trimmed); returns how many
 * fields the line has (which may be more than max). */
static size_t split_fields(const char *line, size_t n, Span *fields, size_t max) {
    size_t count = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || line[i] == ',') {
            if (count < max) fields[count] = span_trim(line + start, i - start);
            count++;
            start = i + 1;
        }
    }
    return count;
}

void train_csv_free(TrainCsvTable *t) {
    if (!t) return;
    nmt_free(t->path);
    nmt_free(t->rows);
    nmt_free(t);
}

/* Shown in messages: a field cut to a readable length. */
#define FIELD_FMT "'%.*s%s'"
#define FIELD_ARG(sp) (int)((sp).n > 40 ? 40 : (sp).n), (sp).s, (sp).n > 40 ? "..." : ""

static NmtStatus parse_step(const char *path, size_t line_no, Span f, int64_t *step) {
    char buf[32];
    int ok = f.n > 0 && f.n < sizeof buf;
    for (size_t i = 0; ok && i < f.n; i++) ok = f.s[i] >= '0' && f.s[i] <= '9';
    if (ok) {
        memcpy(buf, f.s, f.n);
        buf[f.n] = '\0';
        errno = 0;
        long long v = strtoll(buf, NULL, 10);
        ok = errno == 0;
        *step = (int64_t)v;
    }
    if (!ok)
        return nmt_fail(NMT_ERR_FORMAT, "%s:%zu: step " FIELD_FMT " is not a non-negative integer",
                        path, line_no, FIELD_ARG(f));
    return NMT_OK;
}

static NmtStatus parse_value(const char *path, size_t line_no, TrainCsvColumn col, Span f,
                             double *v) {
    if (f.n == 0) {
        *v = TRAIN_CSV_EMPTY;
        return NMT_OK;
    }
    char buf[64];
    int ok = f.n < sizeof buf;
    if (ok) {
        memcpy(buf, f.s, f.n);
        buf[f.n] = '\0';
        char *end;
        *v = strtod(buf, &end);
        ok = end == buf + f.n;
    }
    if (!ok)
        return nmt_fail(NMT_ERR_FORMAT, "%s:%zu: %s " FIELD_FMT " is not a number", path, line_no,
                        column_names[col], FIELD_ARG(f));
    return NMT_OK;
}

NmtStatus train_csv_parse(const char *path, const char *text, size_t len, TrainCsvTable **out) {
    *out = NULL;
    TrainCsvTable *t = nmt_calloc(1, sizeof *t);
    if (!t || !(t->path = nmt_strdup(path))) {
        nmt_free(t);
        return nmt_fail_nomem("train.csv table");
    }
    NmtStatus st = NMT_OK;
    Span *fields = NULL;
    size_t pos = 0, line_no = 0, n_header = 0, cap_rows = 0;
    int col_pos[TRAIN_CSV_N_COLUMNS];
    for (int c = 0; c < TRAIN_CSV_N_COLUMNS; c++) col_pos[c] = -1;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) pos = 3;
    while (pos < len && st == NMT_OK) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        line_no++;
        Span whole = span_trim(line, n);
        if (line_no == 1) { /* the header */
            n_header = split_fields(line, n, NULL, 0);
            fields = nmt_malloc(n_header * sizeof *fields);
            if (!fields) {
                st = nmt_fail_nomem("train.csv header");
                break;
            }
            split_fields(line, n, fields, n_header);
            for (size_t i = 0; i < n_header && st == NMT_OK; i++)
                for (int c = 0; c < TRAIN_CSV_N_COLUMNS; c++) {
                    if (!span_eq(fields[i], column_names[c])) continue;
                    if (col_pos[c] >= 0)
                        st = nmt_fail(NMT_ERR_FORMAT, "%s:1: column '%s' appears twice in the header",
                                      path, column_names[c]);
                    col_pos[c] = (int)i;
                    t->has_column |= 1u << c;
                }
            for (int c = TRAIN_CSV_COL_KIND; c <= TRAIN_CSV_COL_STEP && st == NMT_OK; c++)
                if (col_pos[c] < 0)
                    st = nmt_fail(NMT_ERR_FORMAT, "%s: missing column '%s' in the header (line 1)",
                                  path, column_names[c]);
            continue;
        }
        if (whole.n == 0) continue; /* blank line */
        size_t count = split_fields(line, n, fields, n_header);
        if (count != n_header) {
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%zu: %zu fields, but the header has %zu", path,
                          line_no, count, n_header);
            break;
        }
        Span kind = fields[col_pos[TRAIN_CSV_COL_KIND]];
        TrainCsvKind k;
        if (span_eq(kind, "train")) {
            k = TRAIN_CSV_TRAIN;
        } else if (span_eq(kind, "valid")) {
            k = TRAIN_CSV_VALID;
        } else if (kind.n == 0) {
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%zu: empty kind (expected train or valid)", path,
                          line_no);
            break;
        } else {
            t->n_ignored++; /* a kind from a newer writer */
            continue;
        }
        int64_t step = 0;
        st = parse_step(path, line_no, fields[col_pos[TRAIN_CSV_COL_STEP]], &step);
        if (st) break;
        TrainCsvRow row;
        train_csv_row_init(&row);
        row.kind = k;
        row.step = step;
        for (int c = 0; c < TRAIN_CSV_N_COLUMNS && st == NMT_OK; c++) {
            if (!column_is_value((TrainCsvColumn)c) || col_pos[c] < 0) continue;
            double v = TRAIN_CSV_EMPTY;
            st = parse_value(path, line_no, (TrainCsvColumn)c, fields[col_pos[c]], &v);
            if (st == NMT_OK) row_set_value(&row, (TrainCsvColumn)c, v);
        }
        if (st) break;
        if (t->n_rows == cap_rows) {
            size_t cap = cap_rows ? cap_rows * 2 : 256;
            TrainCsvRow *grown = nmt_realloc(t->rows, cap * sizeof *grown);
            if (!grown) {
                st = nmt_fail_nomem("train.csv rows");
                break;
            }
            t->rows = grown;
            cap_rows = cap;
        }
        t->rows[t->n_rows++] = row;
    }
    nmt_free(fields);
    if (st) {
        train_csv_free(t);
        return st;
    }
    *out = t;
    return NMT_OK;
}

NmtStatus train_csv_read(const char *path, TrainCsvTable **out) {
    *out = NULL;
    char *text;
    size_t len;
    NmtStatus st = file_read_all(path, &text, &len);
    if (st) return st;
    st = train_csv_parse(path, text, len, out);
    nmt_free(text);
    return st;
}

size_t train_csv_count(const TrainCsvTable *t, TrainCsvKind kind) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_rows; i++) n += t->rows[i].kind == kind;
    return n;
}

void train_csv_series_free(TrainCsvSeries *s) {
    if (!s) return;
    nmt_free(s->step);
    nmt_free(s->value);
    s->step = s->value = NULL;
    s->n = 0;
}

NmtStatus train_csv_series(const TrainCsvTable *t, TrainCsvKind kind, TrainCsvColumn col,
                           TrainCsvSeries *out) {
    memset(out, 0, sizeof *out);
    size_t cap = train_csv_count(t, kind);
    out->step = nmt_malloc((cap ? cap : 1) * sizeof *out->step);
    out->value = nmt_malloc((cap ? cap : 1) * sizeof *out->value);
    if (!out->step || !out->value) {
        train_csv_series_free(out);
        return nmt_fail_nomem("train.csv series");
    }
    int64_t last_train = 0, last_kind = 0;
    int have_train = 0, have_kind = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        const TrainCsvRow *r = &t->rows[i];
        double s = (double)r->step;
        /* a train row going back is a resume: it cuts every curve */
        if (r->kind == TRAIN_CSV_TRAIN) {
            if (have_train && r->step <= last_train)
                while (n > 0 && out->step[n - 1] >= s) n--;
            last_train = r->step;
            have_train = 1;
        }
        if (r->kind != kind) continue;
        if (have_kind && r->step <= last_kind)
            while (n > 0 && out->step[n - 1] >= s) n--;
        last_kind = r->step;
        have_kind = 1;
        double v = train_csv_row_value(r, col);
        if (isnan(v)) continue;
        out->step[n] = s;
        out->value[n] = v;
        n++;
    }
    out->n = n;
    return NMT_OK;
}
