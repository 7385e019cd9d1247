/* corpus.h: streaming readers of text corpora (plain or gzip), the strict
 * UTF-8 validator, and the per-split statistics line of `nmt prepare`.
 *
 *   LineReader      one file, line by line, any line length, gzip detected by
 *                   its magic bytes (1f 8b) and inflated through zlib
 *   corpus_read_all one whole file (plain or gzip) in one block, unsplit
 *                   (nmt eval splits it the way sacreBLEU does)
 *   ParallelReader  a source and a target file in step; files of different
 *                   length are an error that gives both names and both counts
 *   utf8_validate   strict UTF-8 (no overlongs, surrogates, > U+10FFFF or
 *                   truncated sequences); shared with `nmt translate`
 *   CorpusStats     pairs read / kept / skipped, and its one-line summary
 *
 * Lines come without their "\n" or "\r\n"; a UTF-8 byte order mark at the very
 * start of a file is skipped; a last line without a newline is still a line;
 * an empty file has no lines. With validation on (the default) a line holding
 * invalid UTF-8 or a NUL byte is an error:
 *   "FILE:LINE: invalid UTF-8 at byte N"   "FILE:LINE: NUL byte at byte N"
 * where LINE and N count from 1 (N is the byte within the line, after a BOM).
 * A truncated or corrupt gzip file is an error naming the file, never a
 * silently short corpus. All memory (zlib's included) goes through the
 * nmt_malloc hook. */
#ifndef NMT_DATA_CORPUS_H
#define NMT_DATA_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include "common.h"

/* Returns 1 when s[0..len) is well-formed UTF-8 (Unicode Table 3-7; U+0000
 * is allowed), else 0 and, when bad_offset is not NULL, sets *bad_offset to
 * the 0-based offset of the first byte of the first ill-formed sequence. */
int utf8_validate(const char *s, size_t len, size_t *bad_offset);

/* Decodes one UTF-8 character at s[0..n) (n >= 1) as Python's strict
 * decoder accepts it (no overlongs, surrogates or code points above
 * U+10FFFF) into *cp; an invalid byte decodes alone to UTF8_INVALID | byte.
 * Returns the bytes used (>= 1). */
#define UTF8_INVALID 0x80000000u
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* 1 when s[0..len) holds only whitespace (or nothing): ASCII space, \t, \n,
 * \v, \f, \r, the other Unicode White_Space characters (U+0085, U+00A0,
 * U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) and the
 * invisible U+200B (zero width space) and U+FEFF (zero width no-break space).
 * Invalid UTF-8 is not whitespace. */
int corpus_line_is_blank(const char *s, size_t len);

/* ---- LineReader ---------------------------------------------------------- */

typedef struct LineReader LineReader;

/* The longest line a reader accepts (bytes); longer is a format error. */
#define LINE_READER_MAX_LINE ((size_t)1 << 30)

/* Opens `path` (plain text or gzip). The path "-" reads standard input,
 * named "<stdin>" in messages. Errors: NMT_ERR_IO "FILE: cannot open: why",
 * NMT_ERR_NOMEM. On failure *out is NULL. Close with line_reader_close. */
NmtStatus line_reader_open(const char *path, LineReader **out);
/* Reads from an already open descriptor, which is not closed at the end;
 * `name` (copied) names it in messages. */
NmtStatus line_reader_open_fd(int fd, const char *name, LineReader **out);
/* Next line: *line points at *len bytes followed by a '\0' (the line holds no
 * NUL when validation is on); it stays valid until the next call on this
 * reader. *got = 1 for a line, 0 at the end of the file (then *line = NULL,
 * *len = 0). Errors: NMT_ERR_FORMAT (invalid UTF-8, NUL byte, line too long,
 * truncated or corrupt gzip), NMT_ERR_IO (read error), NMT_ERR_NOMEM. After an
 * error every later call fails too. */
NmtStatus line_reader_next(LineReader *r, const char **line, size_t *len, int *got);
/* 1-based number of the last line returned (0 before the first); at the end
 * of the file, the number of lines in the file. */
int64_t line_reader_line_no(const LineReader *r);
/* The name used in messages (the path as given, or "<stdin>"). */
const char *line_reader_path(const LineReader *r);
/* Validation on (1, the default) or off (0: invalid UTF-8 and NUL bytes are
 * passed through; *len is then the only reliable length). */
void line_reader_set_validate(LineReader *r, int on);
/* 1 when line_reader_next would return without waiting for input: a whole
 * line is in the buffer, the input has ended, or an error is waiting; 0
 * when it would wait. Never waits: it decodes what it has and reads what
 * poll(2) says is there, until it finds a newline or a read would wait.
 * Gzip input: the compressed bytes already read are inflated first, the
 * descriptor asked only when they are used up, so a line is ready when
 * all of it has been inflated, wherever its bytes lie (`nmt translate
 * --stream`; a writer sends each line with a Z_SYNC_FLUSH, or as its own
 * gzip member). */
int line_reader_ready(LineReader *r);
void line_reader_close(LineReader *r); /* NULL is a no-op */

/* Counts the lines of a file (validating them, like a full read). */
NmtStatus corpus_count_lines(const char *path, int64_t *n);

/* Reads all of `path` ("-": standard input) into *buf, a '\0'-terminated
 * block of *len bytes that the caller frees with nmt_free: plain text as it
 * is, gzip (magic bytes 1f 8b, members one after another) inflated. Nothing
 * is split, stripped or validated (a BOM and "\r" stay). Errors as for
 * line_reader_open and line_reader_next: a truncated or corrupt gzip file is
 * NMT_ERR_FORMAT naming the file, never a short result. */
NmtStatus corpus_read_all(const char *path, char **buf, size_t *len);

/* ---- ParallelReader ------------------------------------------------------ */

typedef struct ParallelReader ParallelReader;

/* Opens the two sides of a parallel corpus. */
NmtStatus parallel_reader_open(const char *src_path, const char *tgt_path,
                               ParallelReader **out);
/* Next pair; both pointers stay valid until the next call. *got = 0 when
 * both files end together. When one file ends first, the rest of the other
 * is counted and the result is NMT_ERR_FORMAT with the message
 * "corpus files differ in length: SRC has N lines, TGT has M lines". */
NmtStatus parallel_reader_next(ParallelReader *p, const char **src, size_t *src_len,
                               const char **tgt, size_t *tgt_len, int *got);
/* 1-based line number of the last pair returned (0 before the first). */
int64_t parallel_reader_line_no(const ParallelReader *p);
void parallel_reader_close(ParallelReader *p); /* NULL is a no-op */

/* ---- statistics of one split ---------------------------------------------- */

typedef struct {
    const char *name;         /* split name, e.g. "train" (borrowed) */
    int max_tokens;           /* length limit of the filter; <= 0: none */
    int64_t pairs_read;       /* every pair of the files */
    int64_t kept;             /* pairs that passed the filters */
    int64_t skipped_empty;    /* either side empty or whitespace-only */
    int64_t skipped_too_long; /* either side longer than max_tokens tokens */
} CorpusStats;

/* Zeroes the counters and sets name and max_tokens. */
void corpus_stats_init(CorpusStats *s, const char *name, int max_tokens);
/* Writes one line (no newline) such as
 *   "train: 29000 pairs read, 28950 kept, 10 skipped (empty), 40 skipped
 *    (longer than 80 tokens)"
 * into buf (n bytes, always '\0'-terminated when n > 0); returns the length
 * the whole line needs, like snprintf. */
int corpus_stats_summary(const CorpusStats *s, char *buf, size_t n);

#endif
