/* corpus.c: the streaming line reader (plain or gzip through zlib's inflate),
 * the parallel reader, the strict UTF-8 validator, the blank-line test and
 * the CorpusStats summary line declared in corpus.h.
 *
 * A LineReader keeps one growable buffer of decoded bytes, buf[pos..end):
 * lines are found with memchr and returned in place (the '\n' or '\r' is
 * overwritten by '\0'); when no newline is left, the partial line is moved to
 * the front, the buffer doubles if it is full, and more bytes are decoded. A
 * gzip file is inflated from a second buffer of compressed bytes, in[], member
 * after member; reaching the end of the file inside a member is an error.
 * line_reader_ready decodes the same way with nowait set (lr_decode): the
 * bytes in in[] first, a read only when poll(2) finds bytes, so compressed
 * bytes that were read but not yet inflated never look like "nothing to
 * read", and bytes on the descriptor never look like a whole line. */
#include "data/corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { LR_IN_CHUNK = 64 * 1024, LR_BUF_INIT = 64 * 1024 };

struct LineReader {
    char *path;      /* name used in messages (owned) */
    int fd;
    int owns_fd;     /* close(fd) on line_reader_close */
    int validate;    /* check UTF-8 and NUL bytes */
    /* gzip input */
    int is_gz;
    int zs_live;     /* inflateInit2 succeeded: inflateEnd on close */
    int member_end;  /* the last gzip member ended; another may follow */
    int raw_eof;     /* read() returned 0 */
    z_stream zs;
    unsigned char *in; /* (LR_IN_CHUNK) compressed bytes, gzip only */
    /* decoded bytes: buf[pos..end) not yet returned, no '\n' in buf[pos..scan) */
    char *buf;
    size_t cap, pos, end, scan;
    int eof;         /* no more decoded bytes will come */
    int bom_checked; /* a UTF-8 BOM at the start was looked for (and skipped) */
    int64_t line_no;
    int64_t lines_with_cr; /* lines holding a '\r' not ending them (old Mac line ends) */
    NmtStatus failed;  /* sticky error */
    char failed_msg[512];
};

/* ---- UTF-8 --------------------------------------------------------------- */

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        v = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        v = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        v = b & 0x07;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        *cp = UTF8_INVALID | b;
        return 1;
    }
    if (n < need + 1) {
        *cp = UTF8_INVALID | b;
        return 1;
    }
    for (size_t k = 1; k <= need; k++) {
        unsigned c = s[k];
        unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (c < l || c > h) {
            *cp = UTF8_INVALID | b;
            return 1;
        }
        v = (v << 6) | (c & 0x3F);
    }
    *cp = v;
    return need + 1;
}

int utf8_validate(const char *str, size_t len, size_t *bad_offset) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        /* ASCII runs, eight bytes at a time */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & UINT64_C(0x8080808080808080)) break;
            i += 8;
        }
        if (i >= len) break;
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;          /* continuation bytes */
        unsigned lo = 0x80, hi = 0xBF; /* range of the first continuation byte */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c == 0xE0) {
            need = 2, lo = 0xA0;
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            need = 2;
        } else if (c == 0xED) {
            need = 2, hi = 0x9F; /* no surrogates */
        } else if (c == 0xF0) {
            need = 3, lo = 0x90;
        } else if (c >= 0xF1 && c <= 0xF3) {
            need = 3;
        } else if (c == 0xF4) {
            need = 3, hi = 0x8F; /* nothing above U+10FFFF */
        } else {
            goto bad; /* continuation byte, C0/C1 overlong lead, F5..FF */
        }
        if (len - i - 1 < need) goto bad;
        if (s[i + 1] < lo || s[i + 1] > hi) goto bad;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) goto bad;
        i += need + 1;
        continue;
    bad:
        if (bad_offset) *bad_offset = i;
        return 0;
    }
    return 1;
}

/* Byte length of the whitespace character at s[0..left), or 0. */
static size_t blank_char_len(const unsigned char *s, size_t left) {
    unsigned c = s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
    if (left >= 2 && c == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (left < 3) return 0;
    if (c == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3;             /* U+1680 */
    if (c == 0xE2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8B) ||                                  /* U+2000..200B */
         s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))                     /* U+2028 2029 202F */
        return 3;
    if (c == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3;             /* U+205F */
    if (c == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3;             /* U+3000 */
    if (c == 0xEF && s[1] == 0xBB && s[2] == 0xBF) return 3;             /* U+FEFF */
    return 0;
}

int corpus_line_is_blank(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        size_t n = blank_char_len(s + i, len - i);
        if (n == 0) return 0;
        i += n;
    }
    return 1;
}

/* ---- LineReader ---------------------------------------------------------- */

static voidpf lr_zalloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    if (size != 0 && items > SIZE_MAX / size) return Z_NULL;
    return nmt_malloc((size_t)items * size);
}

static void lr_zfree(voidpf opaque, voidpf ptr) {
    (void)opaque;
    nmt_free(ptr);
}

/* Records a sticky failure: every later call returns it again. */
static NmtStatus lr_fail(LineReader *r, NmtStatus status) {
    r->failed = status;
    snprintf(r->failed_msg, sizeof r->failed_msg, "%s", nmt_error_message());
    return status;
}

/* read() that retries on EINTR, and on a descriptor in non-blocking mode
 * (a pipe whose other end set O_NONBLOCK, which its flags share: some
 * parent processes do) waits for input with poll(2) instead of failing
 * with EAGAIN; *got = 0 at the end of the file. */
static NmtStatus lr_read(LineReader *r, void *dst, size_t n, size_t *got) {
    for (;;) {
        ssize_t k = read(r->fd, dst, n);
        if (k >= 0) {
            *got = (size_t)k;
            return NMT_OK;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd p = {.fd = r->fd, .events = POLLIN};
            if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
        }
        if (errno != EINTR)
            return nmt_fail(NMT_ERR_IO, "%s: read error: %s", r->path, strerror(errno));
    }
}

/* 1 when a read(2) of the descriptor would wait: poll(2) with timeout 0
 * finds nothing there (an error of poll says 0: the read reports it). */
static int lr_read_would_wait(const LineReader *r) {
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {
    }
    return n == 0;
}

/* Moves the unread compressed bytes to the front of in[] and reads more.
 * With nowait set, a read that would wait is not made: *would_wait = 1. */
static NmtStatus lr_refill_in(LineReader *r, int nowait, int *would_wait) {
    if (r->raw_eof) return NMT_OK;
    if (nowait && lr_read_would_wait(r)) {
        *would_wait = 1;
        return NMT_OK;
    }
    if (r->zs.avail_in > 0 && r->zs.next_in != r->in)
        memmove(r->in, r->zs.next_in, r->zs.avail_in);
    r->zs.next_in = r->in;
    size_t got = 0;
    NmtStatus st = lr_read(r, r->in + r->zs.avail_in, LR_IN_CHUNK - r->zs.avail_in, &got);
    if (st != NMT_OK) return st;
    if (got == 0) r->raw_eof = 1;
    r->zs.avail_in += (uInt)got;
    return NMT_OK;
}

/* Between two gzip members: skips zero padding, then either finds the magic
 * bytes of the next member (*more = 1) or the end of the file (*more = 0);
 * with nowait set, *would_wait = 1 (and *more = 0) when that takes a read
 * that would wait. */
static NmtStatus lr_next_member(LineReader *r, int nowait, int *more, int *would_wait) {
    *more = 0;
    for (;;) {
        while (r->zs.avail_in > 0 && r->zs.next_in[0] == 0) {
            r->zs.next_in++;
            r->zs.avail_in--;
        }
        if (r->zs.avail_in == 0 && r->raw_eof) return NMT_OK;
        if (r->zs.avail_in < 2 && !r->raw_eof) {
            NmtStatus st = lr_refill_in(r, nowait, would_wait);
            if (st != NMT_OK || *would_wait) return st;
            continue;
        }
        if (r->zs.avail_in >= 2 && r->zs.next_in[0] == 0x1f && r->zs.next_in[1] == 0x8b) {
            if (inflateReset(&r->zs) != Z_OK)
                return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot restart gzip decoder", r->path);
            *more = 1;
            return NMT_OK;
        }
        return nmt_fail(NMT_ERR_FORMAT, "%s: trailing garbage after gzip data", r->path);
    }
}

/* Decodes more bytes into buf[end..cap) (end < cap); *produced = 0 only at
 * the end of the file, or, with nowait set, when the bytes at hand (the
 * compressed ones in in[] included) decode to nothing more and a read
 * would wait: then *would_wait = 1. Without nowait it reads (and waits) as
 * needed; would_wait may then be NULL. */
static NmtStatus lr_decode(LineReader *r, int nowait, size_t *produced, int *would_wait) {
    int ww = 0;
    *produced = 0;
    if (would_wait) *would_wait = 0;
    if (!r->is_gz) {
        if (nowait && lr_read_would_wait(r)) {
            *would_wait = 1;
            return NMT_OK;
        }
        return lr_read(r, r->buf + r->end, r->cap - r->end, produced);
    }
    for (;;) {
        NmtStatus st;
        if (r->member_end) {
            int more = 0;
            if ((st = lr_next_member(r, nowait, &more, &ww)) != NMT_OK) return st;
            if (ww) break;
            if (!more) return NMT_OK;
            r->member_end = 0;
        }
        if (r->zs.avail_in == 0 && !r->raw_eof) {
            if ((st = lr_refill_in(r, nowait, &ww)) != NMT_OK) return st;
            if (ww) break;
        }
        size_t room = r->cap - r->end;
        if (room > UINT_MAX) room = UINT_MAX;
        r->zs.next_out = (Bytef *)(r->buf + r->end);
        r->zs.avail_out = (uInt)room;
        int ret = inflate(&r->zs, Z_NO_FLUSH);
        *produced = room - r->zs.avail_out;
        switch (ret) {
        case Z_STREAM_END:
            r->member_end = 1;
            /* fall through */
        case Z_OK:
            if (*produced > 0) return NMT_OK;
            break;
        case Z_BUF_ERROR: /* no progress: input exhausted */
            if (r->zs.avail_in == 0 && r->raw_eof)
                return nmt_fail(NMT_ERR_FORMAT,
                                "%s: truncated gzip file (unexpected end of compressed data)",
                                r->path);
            if (r->zs.avail_in != 0)
                return nmt_fail(NMT_ERR_RUNTIME, "%s: gzip decoder made no progress", r->path);
            break;
        case Z_MEM_ERROR:
            return nmt_fail(NMT_ERR_NOMEM, "%s: out of memory while decompressing", r->path);
        default: /* Z_DATA_ERROR (bad header, data or checksum), Z_NEED_DICT */
            return nmt_fail(NMT_ERR_FORMAT, "%s: corrupt gzip data (%s)", r->path,
                            r->zs.msg ? r->zs.msg : "invalid stream");
        }
    }
    *would_wait = 1; /* only reached with nowait */
    return NMT_OK;
}

/* lr_decode that waits for input. */
static NmtStatus lr_fill(LineReader *r, size_t *produced) { return lr_decode(r, 0, produced, NULL); }

/* Doubles buf (to at most LINE_READER_MAX_LINE + 1 bytes). */
static NmtStatus lr_grow(LineReader *r) {
    size_t new_cap = r->cap * 2;
    if (new_cap > LINE_READER_MAX_LINE + 1) new_cap = LINE_READER_MAX_LINE + 1;
    if (new_cap <= r->cap)
        return nmt_fail(NMT_ERR_FORMAT, "%s:%" PRId64 ": line longer than %zu bytes", r->path,
                        r->line_no + 1, LINE_READER_MAX_LINE);
    char *nb = nmt_realloc(r->buf, new_cap);
    if (!nb)
        return nmt_fail(NMT_ERR_NOMEM, "%s:%" PRId64 ": out of memory for a line of %zu bytes",
                        r->path, r->line_no + 1, r->end - r->pos);
    r->buf = nb;
    r->cap = new_cap;
    return NMT_OK;
}

/* Creates a reader on fd; on failure closes fd when owns_fd. */
static NmtStatus lr_create(int fd, const char *name, int owns_fd, LineReader **out) {
    *out = NULL;
    LineReader *r = nmt_calloc(1, sizeof *r);
    if (!r) {
        if (owns_fd) close(fd);
        return nmt_fail(NMT_ERR_NOMEM, "%s: out of memory opening the file", name);
    }
    r->fd = fd;
    r->owns_fd = owns_fd;
    r->validate = 1;
    r->path = nmt_strdup(name);
    r->in = nmt_malloc(LR_IN_CHUNK);
    r->buf = nmt_malloc(LR_BUF_INIT);
    r->cap = LR_BUF_INIT;
    NmtStatus st;
    if (!r->path || !r->in || !r->buf) {
        st = nmt_fail(NMT_ERR_NOMEM, "%s: out of memory opening the file", name);
        goto fail;
    }
    /* The first two bytes decide between gzip and plain text. */
    size_t n = 0;
    while (n < 2 && !r->raw_eof && (n == 0 || r->in[0] == 0x1f)) { /* a first byte other than 0x1f: plain */
        size_t got = 0;
        if ((st = lr_read(r, r->in + n, LR_IN_CHUNK - n, &got)) != NMT_OK) goto fail;
        if (got == 0) r->raw_eof = 1;
        n += got;
    }
    if (n >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b) {
        r->is_gz = 1;
        r->zs.zalloc = lr_zalloc;
        r->zs.zfree = lr_zfree;
        r->zs.opaque = Z_NULL;
        r->zs.next_in = r->in;
        r->zs.avail_in = (uInt)n;
        int ret = inflateInit2(&r->zs, 16 + MAX_WBITS); /* gzip wrapper only */
        if (ret != Z_OK) {
            st = ret == Z_MEM_ERROR
                     ? nmt_fail(NMT_ERR_NOMEM, "%s: out of memory opening the file", name)
                     : nmt_fail(NMT_ERR_RUNTIME, "%s: cannot start gzip decoder", name);
            goto fail;
        }
        r->zs_live = 1;
    } else {
        memcpy(r->buf, r->in, n);
        r->end = n;
        r->eof = r->raw_eof;
        nmt_free(r->in);
        r->in = NULL;
    }
    *out = r;
    return NMT_OK;
fail:
    line_reader_close(r);
    return st;
}

NmtStatus line_reader_open_fd(int fd, const char *name, LineReader **out) {
    return lr_create(fd, name, 0, out);
}

NmtStatus line_reader_open(const char *path, LineReader **out) {
    *out = NULL;
    if (strcmp(path, "-") == 0) return lr_create(STDIN_FILENO, "<stdin>", 0, out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        close(fd);
        return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", path, strerror(EISDIR));
    }
    return lr_create(fd, path, 1, out);
}

/* Checks one line for NUL bytes and invalid UTF-8 (whichever comes first). */
static NmtStatus lr_check_line(LineReader *r, const char *s, size_t len) {
    const char *nul = memchr(s, '\0', len);
    size_t limit = nul ? (size_t)(nul - s) : len;
    size_t bad = 0;
    if (!utf8_validate(s, limit, &bad)) {
        const unsigned char *u = (const unsigned char *)s;
        int utf16 = r->line_no == 1 && len >= 2 &&
                    ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF));
        return nmt_fail(NMT_ERR_FORMAT, "%s:%" PRId64 ": invalid UTF-8 at byte %zu%s", r->path,
                        r->line_no, bad + 1,
                        utf16 ? " (the file starts with a UTF-16 byte order mark; "
                                "convert it to UTF-8)"
                              : "");
    }
    if (nul)
        return nmt_fail(NMT_ERR_FORMAT, "%s:%" PRId64 ": NUL byte at byte %zu", r->path,
                        r->line_no, limit + 1);
    return NMT_OK;
}

NmtStatus line_reader_next(LineReader *r, const char **line, size_t *len, int *got) {
    *line = NULL;
    *len = 0;
    *got = 0;
    if (r->failed != NMT_OK) return nmt_fail(r->failed, "%s", r->failed_msg);
    size_t line_end;
    int has_nl;
    NmtStatus st;
    if (!r->bom_checked) {
        /* Reads until the first bytes are known not to be a BOM, or are one
         * (stdin is not kept waiting for bytes a short line lacks). */
        while (r->end < 3 && !r->eof && memcmp(r->buf, "\xEF\xBB\xBF", r->end) == 0) {
            size_t produced = 0;
            if ((st = lr_fill(r, &produced)) != NMT_OK) return lr_fail(r, st);
            if (produced == 0) r->eof = 1;
            r->end += produced;
        }
        if (r->end >= 3 && memcmp(r->buf, "\xEF\xBB\xBF", 3) == 0) r->pos = r->scan = 3;
        r->bom_checked = 1;
    }
    for (;;) {
        char *nl = r->scan < r->end ? memchr(r->buf + r->scan, '\n', r->end - r->scan) : NULL;
        if (nl) {
            line_end = (size_t)(nl - r->buf);
            has_nl = 1;
            break;
        }
        r->scan = r->end;
        if (r->eof) {
            if (r->pos == r->end) return NMT_OK; /* end of file */
            if (r->end == r->cap && (st = lr_grow(r)) != NMT_OK) return lr_fail(r, st);
            line_end = r->end; /* last line without a newline */
            has_nl = 0;
            break;
        }
        if (r->end - r->pos >= LINE_READER_MAX_LINE)
            return lr_fail(r, nmt_fail(NMT_ERR_FORMAT,
                                       "%s:%" PRId64 ": line longer than %zu bytes", r->path,
                                       r->line_no + 1, LINE_READER_MAX_LINE));
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, r->end - r->pos);
            r->end -= r->pos;
            r->scan -= r->pos;
            r->pos = 0;
        }
        if (r->end == r->cap && (st = lr_grow(r)) != NMT_OK) return lr_fail(r, st);
        size_t produced = 0;
        if ((st = lr_fill(r, &produced)) != NMT_OK) return lr_fail(r, st);
        if (produced == 0) r->eof = 1;
        r->end += produced;
    }
    char *s = r->buf + r->pos;
    size_t n = line_end - r->pos;
    r->pos = r->scan = has_nl ? line_end + 1 : line_end;
    r->line_no++;
    if (has_nl && n > 0 && s[n - 1] == '\r') n--;
    if (memchr(s, '\r', n)) r->lines_with_cr++;
    s[n] = '\0';
    if (r->validate && (st = lr_check_line(r, s, n)) != NMT_OK) return lr_fail(r, st);
    *line = s;
    *len = n;
    *got = 1;
    return NMT_OK;
}

int line_reader_ready(LineReader *r) {
    if (r->failed != NMT_OK || r->eof) return 1;
    for (;;) {
        if (r->scan < r->end && memchr(r->buf + r->scan, '\n', r->end - r->scan)) return 1;
        r->scan = r->end;
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, r->end - r->pos);
            r->end -= r->pos;
            r->scan -= r->pos;
            r->pos = 0;
        }
        /* too long a line, or no memory: line_reader_next says so */
        if (r->end == r->cap && (r->end >= LINE_READER_MAX_LINE || lr_grow(r) != NMT_OK)) return 1;
        size_t produced = 0;
        int would_wait = 0;
        NmtStatus st = lr_decode(r, 1, &produced, &would_wait);
        if (st != NMT_OK) {
            lr_fail(r, st);
            return 1;
        }
        if (would_wait) return 0;
        if (produced == 0) {
            r->eof = 1;
            return 1;
        }
        r->end += produced;
    }
}

int64_t line_reader_line_no(const LineReader *r) { return r->line_no; }
const char *line_reader_path(const LineReader *r) { return r->path; }
void line_reader_set_validate(LineReader *r, int on) { r->validate = on != 0; }

void line_reader_close(LineReader *r) {
    if (!r) return;
    if (r->zs_live) inflateEnd(&r->zs);
    if (r->owns_fd) close(r->fd);
    nmt_free(r->in);
    nmt_free(r->buf);
    nmt_free(r->path);
    nmt_free(r);
}

NmtStatus corpus_count_lines(const char *path, int64_t *n) {
    *n = 0;
    LineReader *r = NULL;
    NmtStatus st = line_reader_open(path, &r);
    if (st != NMT_OK) return st;
    const char *line;
    size_t len;
    int got = 1;
    while (got && (st = line_reader_next(r, &line, &len, &got)) == NMT_OK) {}
    if (st == NMT_OK) *n = line_reader_line_no(r);
    line_reader_close(r);
    return st;
}

/* The whole decoded content, through the reader's buffer (the line scan,
 * BOM skip and length limit of line_reader_next are not used). */
NmtStatus corpus_read_all(const char *path, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    LineReader *r = NULL;
    NmtStatus st = line_reader_open(path, &r);
    if (st != NMT_OK) return st;
    for (;;) {
        if (r->cap - r->end < 2) { /* room for one byte more and the '\0' */
            char *nb = r->cap <= SIZE_MAX / 2 ? nmt_realloc(r->buf, r->cap * 2) : NULL;
            if (!nb) {
                st = nmt_fail(NMT_ERR_NOMEM, "%s: out of memory reading %zu bytes", r->path, r->end);
                break;
            }
            r->buf = nb;
            r->cap *= 2;
        }
        if (r->eof) break;
        size_t produced = 0;
        if ((st = lr_fill(r, &produced)) != NMT_OK) break;
        if (produced == 0) r->eof = 1;
        r->end += produced;
    }
    if (st == NMT_OK) {
        r->buf[r->end] = '\0';
        *out = r->buf;
        *out_len = r->end;
        r->buf = NULL;
    }
    line_reader_close(r);
    return st;
}

/* ---- ParallelReader ------------------------------------------------------ */

/* Both LineReaders run with validation off: a pair is checked once both of
 * its lines are in, so that when one file ends first the length mismatch is
 * reported even if the tail of the longer file holds bad bytes. */
struct ParallelReader {
    LineReader *src, *tgt;
    int64_t line_no;
    NmtStatus failed; /* sticky error */
    char failed_msg[512];
};

static NmtStatus pr_fail(ParallelReader *p, NmtStatus status) {
    p->failed = status;
    snprintf(p->failed_msg, sizeof p->failed_msg, "%s", nmt_error_message());
    return status;
}

NmtStatus parallel_reader_open(const char *src_path, const char *tgt_path,
                               ParallelReader **out) {
    *out = NULL;
    ParallelReader *p = nmt_calloc(1, sizeof *p);
    if (!p) return nmt_fail(NMT_ERR_NOMEM, "%s: out of memory opening the corpus", src_path);
    NmtStatus st = line_reader_open(src_path, &p->src);
    if (st == NMT_OK) st = line_reader_open(tgt_path, &p->tgt);
    if (st != NMT_OK) {
        parallel_reader_close(p);
        return st;
    }
    p->src->validate = p->tgt->validate = 0;
    *out = p;
    return NMT_OK;
}

NmtStatus parallel_reader_next(ParallelReader *p, const char **src, size_t *src_len,
                               const char **tgt, size_t *tgt_len, int *got) {
    *got = 0;
    *src = *tgt = NULL;
    *src_len = *tgt_len = 0;
    if (p->failed != NMT_OK) return nmt_fail(p->failed, "%s", p->failed_msg);
    int got_src = 0, got_tgt = 0;
    const char *s = NULL, *t = NULL;
    size_t sl = 0, tl = 0;
    NmtStatus st = line_reader_next(p->src, &s, &sl, &got_src);
    if (st == NMT_OK) st = line_reader_next(p->tgt, &t, &tl, &got_tgt);
    if (st != NMT_OK) return pr_fail(p, st);
    if (got_src && got_tgt) {
        if ((st = lr_check_line(p->src, s, sl)) != NMT_OK ||
            (st = lr_check_line(p->tgt, t, tl)) != NMT_OK)
            return pr_fail(p, st);
        p->line_no++;
        *src = s;
        *src_len = sl;
        *tgt = t;
        *tgt_len = tl;
        *got = 1;
        return NMT_OK;
    }
    if (!got_src && !got_tgt) return NMT_OK;
    /* One file ended first: count the rest of the other for the message. */
    LineReader *longer = got_src ? p->src : p->tgt;
    const char *line;
    size_t len;
    int more = 1;
    while (more && (st = line_reader_next(longer, &line, &len, &more)) == NMT_OK) {}
    if (st != NMT_OK) return pr_fail(p, st);
    int64_t n_src = line_reader_line_no(p->src), n_tgt = line_reader_line_no(p->tgt);
    const LineReader *cr = p->src->lines_with_cr ? p->src : p->tgt->lines_with_cr ? p->tgt : NULL;
    char hint[600] = "";
    if (cr)
        snprintf(hint, sizeof hint,
                 "; %s has carriage returns inside %" PRId64 " line%s: if they end its lines (old Mac "
                 "line ends), turn them into newlines, e.g. tr '\\r' '\\n'",
                 cr->path, cr->lines_with_cr, cr->lines_with_cr == 1 ? "" : "s");
    return pr_fail(p, nmt_fail(NMT_ERR_FORMAT,
                               "corpus files differ in length: %s has %" PRId64 " line%s, %s has %" PRId64
                               " line%s%s",
                               line_reader_path(p->src), n_src, n_src == 1 ? "" : "s", line_reader_path(p->tgt),
                               n_tgt, n_tgt == 1 ? "" : "s", hint));
}

int64_t parallel_reader_line_no(const ParallelReader *p) { return p->line_no; }

void parallel_reader_close(ParallelReader *p) {
    if (!p) return;
    line_reader_close(p->src);
    line_reader_close(p->tgt);
    nmt_free(p);
}

/* ---- statistics ---------------------------------------------------------- */

void corpus_stats_init(CorpusStats *s, const char *name, int max_tokens) {
    memset(s, 0, sizeof *s);
    s->name = name;
    s->max_tokens = max_tokens;
}

int corpus_stats_summary(const CorpusStats *s, char *buf, size_t n) {
    char too_long[96] = "";
    if (s->max_tokens > 0)
        snprintf(too_long, sizeof too_long, ", %" PRId64 " skipped (longer than %d tokens)",
                 s->skipped_too_long, s->max_tokens);
    else if (s->skipped_too_long > 0)
        snprintf(too_long, sizeof too_long, ", %" PRId64 " skipped (too long)",
                 s->skipped_too_long);
    return snprintf(buf, n, "%s: %" PRId64 " pairs read, %" PRId64 " kept, %" PRId64
                    " skipped (empty)%s",
                    s->name ? s->name : "corpus", s->pairs_read, s->kept, s->skipped_empty,
                    too_long);
}
