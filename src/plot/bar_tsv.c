/* bar_tsv.c: svg_bars_read_tsv (bar_svg.h): a tab-separated table of
 * categories and values into a grouped bar chart, columns "PANEL:SERIES"
 * grouped into panels. Errors name FILE:LINE (and the column of a bad
 * value). */
#include "plot/bar_svg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fileio.h"

/* Splits text into lines in place: returns the next line (without its
 * "\n" or "\r\n") and advances *p; NULL at the end. */
static char *next_line(char **p) {
    if (!*p || !**p) return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = line + strlen(line);
    }
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[n - 1] = '\0';
    return line;
}

/* Splits a line at tabs in place into fields[0..cap); returns the count
 * (which may exceed cap: the extra fields are not stored). */
static int split_tabs(char *line, char **fields, int cap) {
    int n = 0;
    for (char *f = line;;) {
        char *tab = strchr(f, '\t');
        if (tab) *tab = '\0';
        if (n < cap) fields[n] = f;
        n++;
        if (!tab) break;
        f = tab + 1;
    }
    return n;
}

static char *trim(char *s) {
    while (*s == ' ') s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ') s[--n] = '\0';
    return s;
}

static int is_missing(const char *s) {
    static const char *const words[] = {"", "-", "n/a", "na", "nan", "failed"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(words); i++)
        if (!strcasecmp(s, words[i])) return 1;
    return 0;
}

/* A value cell: 1 with *v set (NaN for a missing value), 0 when it is not
 * a number. */
static int parse_value(char *cell, double *v) {
    char *s = trim(cell);
    if (is_missing(s)) {
        *v = NAN;
        return 1;
    }
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(d)) return 0;
    *v = d;
    return 1;
}

static int skip_line(const char *line) {
    const char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    return *s == '\0' || *line == '#';
}

typedef struct {
    char *text;
    char **header;    /* (n_cols) pointers into text */
    int n_cols;       /* columns after the category column */
    char **labels;    /* (n_rows) */
    double *values;   /* (n_rows, n_cols) */
    int n_rows, cap_rows;
} Table;

static void table_free(Table *t) {
    nmt_free(t->text);
    nmt_free(t->header);
    nmt_free(t->labels);
    nmt_free(t->values);
}

static NmtStatus add_row(Table *t, const char *path, int line_no, char *line) {
    if (t->n_rows == t->cap_rows) {
        int cap = t->cap_rows ? 2 * t->cap_rows : 16;
        char **labels = nmt_realloc(t->labels, (size_t)cap * sizeof *labels);
        if (labels) t->labels = labels;
        double *values = labels ? nmt_realloc(t->values, (size_t)cap * (size_t)t->n_cols * sizeof *values) : NULL;
        if (!values) return nmt_fail_nomem("bar chart table");
        t->values = values;
        t->cap_rows = cap;
    }
    char **f = nmt_malloc((size_t)(t->n_cols + 1) * sizeof *f);
    if (!f) return nmt_fail_nomem("bar chart table");
    NmtStatus st = NMT_OK;
    int n = split_tabs(line, f, t->n_cols + 1);
    if (n != t->n_cols + 1) {
        st = nmt_fail(NMT_ERR_FORMAT, "%s:%d: %d fields, the header has %d", path, line_no, n,
                      t->n_cols + 1);
    } else if (!*trim(f[0])) {
        st = nmt_fail(NMT_ERR_FORMAT, "%s:%d: empty category label", path, line_no);
    } else {
        t->labels[t->n_rows] = trim(f[0]);
        double *row = t->values + (size_t)t->n_rows * t->n_cols;
        for (int j = 0; j < t->n_cols && !st; j++)
            if (!parse_value(f[j + 1], &row[j]))
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%d: column '%s': '%s' is not a number", path,
                              line_no, t->header[j], trim(f[j + 1]));
        if (!st) t->n_rows++;
    }
    nmt_free(f);
    return st;
}

/* The panel and series names of a header cell: "BLEU : all" gives "BLEU"
 * and "all", "speed" gives "speed" twice (new strings, trimmed, nmt_free
 * them). NMT_ERR_FORMAT (no message) when either is empty. */
static NmtStatus split_header(const char *h, char **panel, char **series) {
    const char *colon = strchr(h, ':');
    size_t pl = colon ? (size_t)(colon - h) : strlen(h);
    char *p = nmt_asprintf("%.*s", (int)pl, h), *s = nmt_strdup(colon ? colon + 1 : h);
    *panel = *series = NULL;
    if (!p || !s) {
        nmt_free(p);
        nmt_free(s);
        return nmt_fail_nomem("bar chart header");
    }
    char *pt = trim(p), *sn = trim(s);
    memmove(p, pt, strlen(pt) + 1);
    memmove(s, sn, strlen(sn) + 1);
    *panel = p;
    *series = s;
    return *p && *s ? NMT_OK : NMT_ERR_FORMAT;
}

static NmtStatus build_chart(const Table *t, const char *x_label, const char *title,
                             SvgBarChart **out) {
    SvgBarChart *c = svg_bars_create(title, x_label, (const char *const *)t->labels, t->n_rows);
    double *v = nmt_malloc((size_t)t->n_rows * sizeof *v);
    int *done = nmt_calloc((size_t)t->n_cols, sizeof *done);
    NmtStatus st = c && v && done ? NMT_OK : nmt_fail_nomem("bar chart");
    /* panels in the order of their first column; each takes every later
     * column with the same panel name */
    for (int j = 0; j < t->n_cols && !st; j++) {
        if (done[j]) continue;
        char *panel = NULL, *series = NULL;
        st = split_header(t->header[j], &panel, &series);
        int p = 0;
        if (!st) st = svg_bars_add_panel(c, panel, NULL, &p);
        for (int k = j; k < t->n_cols && !st; k++) {
            char *pk = NULL, *sk = NULL;
            st = split_header(t->header[k], &pk, &sk);
            if (!st && !strcmp(pk, panel)) {
                done[k] = 1;
                for (int i = 0; i < t->n_rows; i++) v[i] = t->values[(size_t)i * t->n_cols + k];
                st = svg_bars_add_series(c, p, sk, v, NULL);
            }
            nmt_free(pk);
            nmt_free(sk);
        }
        nmt_free(panel);
        nmt_free(series);
    }
    nmt_free(v);
    nmt_free(done);
    if (st) {
        svg_bars_free(c);
        return st;
    }
    *out = c;
    return NMT_OK;
}

NmtStatus svg_bars_read_tsv(const char *path, const char *title, SvgBarChart **out) {
    *out = NULL;
    Table t = {0};
    size_t size = 0;
    NmtStatus st = file_read_all(path, &t.text, &size);
    if (st) return st;
    if (strlen(t.text) != size) {
        table_free(&t);
        return nmt_fail(NMT_ERR_FORMAT, "%s: holds a NUL byte", path);
    }
    char *p = t.text;
    if (!strncmp(p, "\xEF\xBB\xBF", 3)) p += 3;
    char *line, *x_label = NULL;
    int line_no = 0;
    while (!st && (line = next_line(&p))) {
        line_no++;
        if (skip_line(line)) continue;
        if (!t.header) { /* the header */
            int n = 1;
            for (const char *c = line; *c; c++) n += *c == '\t';
            if (n < 2) {
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%d: the header needs a category column and at "
                              "least one value column, separated by tabs", path, line_no);
                break;
            }
            char **f = nmt_malloc((size_t)n * sizeof *f);
            if (!f) {
                st = nmt_fail_nomem("bar chart table");
                break;
            }
            split_tabs(line, f, n);
            x_label = trim(f[0]);
            t.n_cols = n - 1;
            t.header = f;
            for (int j = 0; j < t.n_cols && !st; j++) {
                t.header[j] = trim(f[j + 1]); /* shifts left by one; f[0] is in x_label */
                char *pn = NULL, *sn = NULL;
                st = split_header(t.header[j], &pn, &sn);
                nmt_free(pn);
                nmt_free(sn);
                if (st == NMT_ERR_FORMAT)
                    st = nmt_fail(NMT_ERR_FORMAT, "%s:%d: header column %d: '%s': want "
                                  "PANEL:SERIES or NAME", path, line_no, j + 2, t.header[j]);
            }
            continue;
        }
        st = add_row(&t, path, line_no, line);
    }
    if (!st && !t.header) st = nmt_fail(NMT_ERR_FORMAT, "%s: empty: no header line", path);
    if (!st && t.n_rows == 0) st = nmt_fail(NMT_ERR_FORMAT, "%s: no data lines under the header", path);
    if (!st) st = build_chart(&t, x_label && *x_label ? x_label : NULL, title, out);
    table_free(&t);
    return st;
}
