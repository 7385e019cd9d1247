/* fuzz_corpus.c: libFuzzer target for the corpus readers (src/data/corpus.c).
 *
 * The input is a whole file (plain text, or gzip when it starts 1f 8b). It
 * is read several ways, which must agree:
 *   A  line_reader_open_fd on a memfd, validation on (what prepare does);
 *   B  the same with validation off;
 *   C  the input gzip-compressed here (two members, split at a point chosen
 *      by the input's hash), validation on: the same lines as A;
 *   D  the input through a pipe written in small chunks by a thread, so
 *      that reads end at every kind of place (inside "\r\n", a BOM, a UTF-8
 *      sequence, a gzip header): the same lines, status and message as A;
 *   E  a ParallelReader on the two halves of the input;
 *   F  A again with one allocation failing (fuzz_with_alloc_failure).
 * Properties: lines hold no '\n' and are '\0'-terminated; B's lines, each
 * followed by "\n", rebuild the input (BOM dropped, "\r\n" -> "\n", a final
 * "\n" added); A's lines are B's until the first line with a NUL byte or
 * invalid UTF-8, where A fails with "NAME:LINE: ..." naming that line; E
 * gives B's pairs when both halves are valid and equally long, and an error
 * otherwise. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/corpus.h"
#include "fuzz_util.h"

#define NAME "fuzz-input"

/* What one read gave: every line (copied, joined with '\n'), the status and
 * the message of the failure. */
typedef struct {
    char *text;       /* lines, each followed by '\n' */
    size_t len, cap;
    int64_t n_lines;
    NmtStatus st;
    char msg[600];
} Trace;

static void trace_add(Trace *t, const char *line, size_t len) {
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->text = realloc(t->text, t->cap);
        if (!t->text) abort();
    }
    memcpy(t->text + t->len, line, len);
    t->len += len;
    t->text[t->len++] = '\n';
    t->n_lines++;
}

static void trace_free(Trace *t) { free(t->text); }

/* Reads everything from fd into t. */
static void read_fd(int fd, int validate, Trace *t) {
    memset(t, 0, sizeof *t);
    LineReader *r = NULL;
    t->st = line_reader_open_fd(fd, NAME, &r);
    if (t->st != NMT_OK) {
        snprintf(t->msg, sizeof t->msg, "%s", nmt_error_message());
        FUZZ_CHECK(r == NULL, "a failed open left a reader");
        return;
    }
    line_reader_set_validate(r, validate);
    const char *line;
    size_t len;
    int got = 1;
    while (got) {
        t->st = line_reader_next(r, &line, &len, &got);
        if (t->st != NMT_OK) {
            snprintf(t->msg, sizeof t->msg, "%s", nmt_error_message());
            FUZZ_CHECK(line == NULL && got == 0, "a failed read returned a line");
            /* the error is sticky */
            NmtStatus again = line_reader_next(r, &line, &len, &got);
            FUZZ_CHECK(again == t->st, "a second read after an error gave %s",
                       nmt_status_name(again));
            break;
        }
        if (!got) {
            FUZZ_CHECK(line == NULL && len == 0, "end of file with a line");
            FUZZ_CHECK(line_reader_line_no(r) == t->n_lines, "line_no %" PRId64 " at the end of %" PRId64
                       " lines", line_reader_line_no(r), t->n_lines);
            break;
        }
        FUZZ_CHECK(line[len] == '\0', "line not NUL-terminated");
        FUZZ_CHECK(memchr(line, '\n', len) == NULL, "a line holds a newline");
        if (validate) {
            FUZZ_CHECK(memchr(line, '\0', len) == NULL, "a validated line holds a NUL byte");
            FUZZ_CHECK(utf8_validate(line, len, NULL), "a validated line is not UTF-8");
            (void)corpus_line_is_blank(line, len);
        }
        trace_add(t, line, len);
        FUZZ_CHECK(line_reader_line_no(r) == t->n_lines, "line_no %" PRId64 " after %" PRId64
                   " lines", line_reader_line_no(r), t->n_lines);
    }
    line_reader_close(r);
}

static void read_bytes(const uint8_t *data, size_t size, int validate, Trace *t) {
    int fd = fuzz_memfd(data, size);
    if (fd < 0) abort();
    read_fd(fd, validate, t);
    close(fd);
}

/* ---- D: a pipe fed in small chunks ------------------------------------------ */

typedef struct {
    int fd;
    const uint8_t *data;
    size_t size;
    uint64_t seed;
} Feeder;

static void *feed(void *arg) {
    Feeder *f = arg;
    uint64_t s = f->seed | 1;
    size_t pos = 0;
    while (pos < f->size) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t n = 1 + (size_t)(s % 7);
        if (n > f->size - pos) n = f->size - pos;
        ssize_t w = write(f->fd, f->data + pos, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* the reader stopped early (EPIPE) */
        pos += (size_t)w;
    }
    close(f->fd);
    return NULL;
}

static void read_pipe(const uint8_t *data, size_t size, uint64_t seed, Trace *t) {
    int p[2];
    if (pipe(p) != 0) abort();
    Feeder f = {p[1], data, size, seed};
    pthread_t th;
    if (pthread_create(&th, NULL, feed, &f) != 0) abort();
    read_fd(p[0], 1, t);
    close(p[0]);
    pthread_join(th, NULL);
}

/* ---- C: gzip, two members -------------------------------------------------- */

static int gzip_member(const uint8_t *data, size_t size, uint8_t **out, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    size_t bound = deflateBound(&zs, (uLong)size) + 32;
    *out = realloc(*out, *out_len + bound);
    if (!*out) abort();
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)size;
    zs.next_out = *out + *out_len;
    zs.avail_out = (uInt)bound;
    int ret = deflate(&zs, Z_FINISH);
    *out_len += bound - zs.avail_out;
    deflateEnd(&zs);
    return ret == Z_STREAM_END;
}

/* ---- checks ---------------------------------------------------------------- */

static int same_trace(const Trace *a, const Trace *b) {
    return a->st == b->st && a->n_lines == b->n_lines && a->len == b->len &&
           (a->len == 0 || memcmp(a->text, b->text, a->len) == 0) && strcmp(a->msg, b->msg) == 0;
}

/* B rebuilds the plain input: BOM dropped, "\r\n" -> "\n", final "\n". */
static void check_rebuild(const uint8_t *data, size_t size, const Trace *b) {
    if (b->st != NMT_OK) return;
    size_t i = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    uint8_t *want = malloc(size + 2);
    size_t n = 0;
    for (; i < size; i++) {
        if (data[i] == '\r' && i + 1 < size && data[i + 1] == '\n') continue;
        want[n++] = data[i];
    }
    if (n > 0 && want[n - 1] != '\n') want[n++] = '\n';
    FUZZ_CHECK(n == b->len && (n == 0 || memcmp(want, b->text, n) == 0),
               "the lines do not rebuild the input (%zu bytes from the lines, %zu expected)",
               b->len, n);
    free(want);
}

/* A is B cut at the first bad line, and its error names that line. */
static void check_validated(const Trace *a, const Trace *b) {
    if (b->st != NMT_OK) {
        /* gzip trouble: A may stop earlier (a bad line), never later */
        FUZZ_CHECK(a->st != NMT_OK, "validation on succeeded where validation off failed");
        FUZZ_CHECK(a->len <= b->len && (a->len == 0 || memcmp(a->text, b->text, a->len) == 0),
                   "validated lines are not a prefix of the raw lines");
        return;
    }
    /* find B's first line with a NUL byte or invalid UTF-8 */
    int64_t bad_line = 0, line_no = 0;
    size_t pos = 0, good_len = 0;
    while (pos < b->len) {
        const char *s = b->text + pos;
        size_t len = (size_t)((const char *)memchr(s, '\n', b->len - pos) - s);
        line_no++;
        if (memchr(s, '\0', len) || !utf8_validate(s, len, NULL)) {
            bad_line = line_no;
            break;
        }
        pos += len + 1;
        good_len = pos;
    }
    if (bad_line == 0) {
        FUZZ_CHECK(same_trace(a, b), "validation changed a valid file (%s)", a->msg);
        return;
    }
    FUZZ_CHECK(a->st == NMT_ERR_FORMAT, "a bad line %" PRId64 " gave %s", bad_line,
               nmt_status_name(a->st));
    FUZZ_CHECK(a->n_lines == bad_line - 1 && a->len == good_len &&
                   (good_len == 0 || memcmp(a->text, b->text, good_len) == 0),
               "validated lines before the bad line %" PRId64 " differ", bad_line);
    char where[64];
    snprintf(where, sizeof where, NAME ":%" PRId64 ": ", bad_line);
    FUZZ_CHECK(strncmp(a->msg, where, strlen(where)) == 0, "message \"%s\" does not start \"%s\"",
               a->msg, where);
}

/* E: the two halves as a parallel corpus. */
static void check_parallel(const uint8_t *data, size_t size) {
    size_t half = size / 2;
    Trace s, t;
    read_bytes(data, half, 1, &s);
    read_bytes(data + half, size - half, 1, &t);
    int fs = fuzz_memfd(data, half), ft = fuzz_memfd(data + half, size - half);
    if (fs < 0 || ft < 0) abort();
    char ps[64], pt[64];
    ParallelReader *p = NULL;
    NmtStatus st = parallel_reader_open(fuzz_fd_path(fs, ps, sizeof ps),
                                        fuzz_fd_path(ft, pt, sizeof pt), &p);
    int64_t pairs = 0;
    size_t spos = 0, tpos = 0;
    if (st == NMT_OK) {
        const char *a, *b;
        size_t alen, blen;
        int got = 1;
        while (got && (st = parallel_reader_next(p, &a, &alen, &b, &blen, &got)) == NMT_OK && got) {
            pairs++;
            FUZZ_CHECK(parallel_reader_line_no(p) == pairs, "pair numbering");
            /* each side is what the single reader gave */
            FUZZ_CHECK(spos + alen < s.len && memcmp(s.text + spos, a, alen) == 0 &&
                           s.text[spos + alen] == '\n',
                       "source line %" PRId64 " differs from the single reader's", pairs);
            FUZZ_CHECK(tpos + blen < t.len && memcmp(t.text + tpos, b, blen) == 0 &&
                           t.text[tpos + blen] == '\n',
                       "target line %" PRId64 " differs from the single reader's", pairs);
            spos += alen + 1;
            tpos += blen + 1;
        }
        parallel_reader_close(p);
    }
    if (s.st == NMT_OK && t.st == NMT_OK && s.n_lines == t.n_lines)
        FUZZ_CHECK(st == NMT_OK && pairs == s.n_lines, "a valid parallel corpus failed: %s",
                   nmt_error_message());
    if (s.st == NMT_OK && t.st == NMT_OK && s.n_lines != t.n_lines) {
        FUZZ_CHECK(st == NMT_ERR_FORMAT, "files of %" PRId64 " and %" PRId64 " lines gave %s",
                   s.n_lines, t.n_lines, nmt_status_name(st));
        FUZZ_CHECK(strstr(nmt_error_message(), "differ in length"), "length mismatch message: %s",
                   nmt_error_message());
    }
    if (s.st != NMT_OK || t.st != NMT_OK) FUZZ_CHECK(st != NMT_OK, "a bad side was not reported");
    close(fs);
    close(ft);
    trace_free(&s);
    trace_free(&t);
}

/* F: the validated read with one allocation failing. */
typedef struct {
    const uint8_t *data;
    size_t size;
} Bytes;

static NmtStatus run_validated(void *ctx) {
    const Bytes *b = ctx;
    Trace t;
    read_bytes(b->data, b->size, 1, &t);
    trace_free(&t);
    if (t.st != NMT_OK) nmt_fail(t.st, "%s", t.msg);
    return t.st;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    nmt_log_quiet(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t h = fuzz_hash(data, size);
    int is_gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    Trace a, b, d;
    read_bytes(data, size, 1, &a);
    read_bytes(data, size, 0, &b);
    if (!is_gz) check_rebuild(data, size, &b);
    check_validated(&a, &b);

    read_pipe(data, size, h, &d);
    if (is_gz && a.st != NMT_OK && !same_trace(&a, &d)) {
        /* how much of a corrupt gzip stream decodes before zlib notices
         * depends on where the reads end (garbage may even come out as a bad
         * line first): both must fail, their lines one a prefix of the other */
        size_t common = a.len < d.len ? a.len : d.len;
        FUZZ_CHECK(d.st != NMT_OK && (common == 0 || memcmp(a.text, d.text, common) == 0),
                   "a corrupt gzip file read in chunks: %s / %s", a.msg, d.msg);
    } else {
        FUZZ_CHECK(same_trace(&a, &d), "a pipe read in chunks differs: %s / %s", a.msg, d.msg);
    }
    trace_free(&d);

    if (!is_gz) {
        uint8_t *gz = NULL;
        size_t gz_len = 0, cut = size ? (size_t)(h % (size + 1)) : 0;
        if (gzip_member(data, cut, &gz, &gz_len) && gzip_member(data + cut, size - cut, &gz, &gz_len)) {
            Trace c;
            read_bytes(gz, gz_len, 1, &c);
            FUZZ_CHECK(same_trace(&a, &c), "the gzip copy reads differently: %s / %s", a.msg, c.msg);
            trace_free(&c);
            /* truncated gzip is an error, never a short corpus */
            if (gz_len > 1) {
                read_bytes(gz, gz_len - 1 - (size_t)(h % 8 < gz_len - 1 ? h % 8 : 0), 0, &c);
                FUZZ_CHECK(c.st == NMT_ERR_FORMAT, "a truncated gzip file gave %s",
                           nmt_status_name(c.st));
                trace_free(&c);
            }
        }
        free(gz);
    }
    check_parallel(data, size);

    Bytes in = {data, size};
    fuzz_with_alloc_failure(run_validated, &in, h);
    trace_free(&a);
    trace_free(&b);
    return 0;
}
