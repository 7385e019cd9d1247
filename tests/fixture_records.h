/* fixture_records.h: reading the records scripts/sacrebleu_expected.py
 * writes (tests/fixtures/bleu/, tests/fixtures/ter/), shared by
 * tests/test_bleu.c and tests/test_ter.c: a file's lines (plain or gzip,
 * through zlib; "\n" or "\r\n"), a record's hypothesis and reference
 * files (Corpus, under a fixture folder given by the caller), the
 * script's escapes, tab- and comma-separated fields, and named numbers.
 * Plain stdio and zlib, apart from the code under test. Include after
 * test_util.h. */
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

/* Splits "a,b,c" into up to 8 names (in place). */
static int split_commas(char *s, char **out) {
    int n = 0;
    for (char *p = strtok(s, ","); p && n < 8; p = strtok(NULL, ",")) out[n++] = p;
    return n;
}

/* Reads the fixture file prefix + name: prefix is the folder the records'
 * names are relative to ("" where they are already paths); a failed check
 * and 0 when it cannot be read. */
static int fixture_read(const char *prefix, const char *name, Lines *l) {
    char path[1024];
    snprintf(path, sizeof path, "%s%s", prefix, name);
    return lines_read(path, l); /* counts the check */
}

/* The hypothesis and reference files of a record. */
typedef struct {
    Lines hyp, refs[8];
    int n_refs, ok;
} Corpus;

/* Reads a record's hypothesis and its comma-separated references (each
 * name under prefix, as fixture_read), checking that every reference has
 * as many lines as the hypothesis; c->ok is 0 when any of that fails.
 * Free with corpus_free, even when not ok. */
static void corpus_load(Corpus *c, const char *prefix, const char *hyp, const char *refs_csv) {
    char csv[1024], *names[8];
    snprintf(csv, sizeof csv, "%s", refs_csv);
    memset(c, 0, sizeof *c);
    c->n_refs = split_commas(csv, names);
    c->ok = fixture_read(prefix, hyp, &c->hyp);
    for (int k = 0; k < c->n_refs; k++) {
        c->ok &= fixture_read(prefix, names[k], &c->refs[k]);
        if (c->ok) CHECK_EQ_INT(c->refs[k].n, c->hyp.n);
        c->ok &= c->refs[k].n == c->hyp.n;
    }
}

static void corpus_free(Corpus *c) {
    lines_free(&c->hyp);
    for (int k = 0; k < c->n_refs; k++) lines_free(&c->refs[k]);
}

/* The references of segment i, in r[0 .. c->n_refs - 1]. */
static void corpus_refs(const Corpus *c, int i, const char **r) {
    for (int k = 0; k < c->n_refs; k++) r[k] = c->refs[k].lines[i];
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
