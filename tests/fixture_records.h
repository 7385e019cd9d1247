/* fixture_records.h: reading the records scripts/sacrebleu_expected.py
 * writes (tests/fixtures/bleu/, tests/fixtures/ter/), shared by
 * tests/test_bleu.c and tests/test_ter.c: a file's lines (plain or gzip,
 * through zlib; "\n" or "\r\n"), the script's escapes, tab- and
 * comma-separated fields, and named numbers. Plain stdio and zlib, apart
 * from the code under test. Include after test_util.h. */
#ifndef NMT_TESTS_FIXTURE_RECORDS_H
#define NMT_TESTS_FIXTURE_RECORDS_H

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef MAX_FIELDS
#define MAX_FIELDS 16 /* fields of a record at most */
#endif

typedef struct {
    char *buf;
    char **lines;
    int n;
} Lines;

static void lines_free(Lines *l) {
    free(l->buf);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

/* Lines of a text (NUL-terminated, modified in place) without "\n"/"\r\n". */
static void lines_split(char *buf, size_t len, Lines *l) {
    int n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == '\n';
    if (len && buf[len - 1] != '\n') n++;
    l->buf = buf;
    l->lines = malloc(sizeof *l->lines * (size_t)(n + 1));
    char *p = buf;
    for (int i = 0; i < n; i++) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        size_t k = strlen(p);
        if (k && p[k - 1] == '\r') p[k - 1] = '\0';
        l->lines[i] = p;
        p = e ? e + 1 : p + k;
    }
    l->n = n;
}

/* The whole content of a plain or gzip file (zlib reads both), NUL
 * terminated, in *len bytes (free it); NULL when it cannot be opened. */
static char *gz_read_all(const char *path, size_t *len) {
    gzFile g = gzopen(path, "rb");
    if (!g) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int k;
    while ((k = gzread(g, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)k;
        if (cap - n < 2) buf = realloc(buf, cap *= 2);
    }
    gzclose(g);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Reads a plain or gzip file; 0 on failure (a failed check). */
static int lines_read(const char *path, Lines *l) {
    memset(l, 0, sizeof *l);
    size_t n;
    char *buf = gz_read_all(path, &n);
    CHECK(buf != NULL, "cannot read %s", path);
    if (!buf) return 0;
    lines_split(buf, n, l);
    return 1;
}

/* Undoes the script's escapes in place. */
static char *unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r == 'r' ? '\r' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return s;
}

static int split_tabs(char *line, char **f) {
    int n = 0;
    for (char *p = line; n < MAX_FIELDS;) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    return n;
}

/* Splits "a,b,c" into up to 8 names (in place). */
static int split_commas(char *s, char **out) {
    int n = 0;
    for (char *p = strtok(s, ","); p && n < 8; p = strtok(NULL, ",")) out[n++] = p;
    return n;
}

typedef struct {
    char name[64];
    double value;
} Named;

static int named_get(const Named *v, int n, const char *name, double *out) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name)) {
            *out = v[i].value;
            return 1;
        }
    return 0;
}

#endif
