/* test_corpus.c: tests of src/data/corpus.[ch]: the strict UTF-8 validator,
 * blank lines, the LineReader on plain and gzip files (CRLF, BOM, blank and
 * unterminated lines, a 10 MB line, invalid UTF-8, NUL bytes, truncated and
 * corrupt gzip, missing files), corpus_read_all (a whole file, plain or
 * gzip, unchanged), the ParallelReader (mismatched lengths), the
 * statistics line, an allocation-failure walk, and Multi30k when present. */
#include "data/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <zlib.h>

#include "test_util.h"

/* ---- helpers ------------------------------------------------------------- */

static char *path_of(const char *name) {
    static char paths[64][1024];
    static int next;
    char *p = paths[next++ % 64];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmpdir(), name);
    return p;
}

static const char *write_plain(const char *name, const void *bytes, size_t len) {
    test_write_file(test_tmpdir(), name, bytes, len);
    return path_of(name);
}

/* Writes bytes as a gzip file with zlib's gzopen "wb". */
static const char *write_gz(const char *name, const void *bytes, size_t len) {
    const char *path = path_of(name);
    gzFile g = gzopen(path, "wb");
    if (!g) {
        perror(path);
        exit(2);
    }
    size_t done = 0;
    while (done < len) {
        unsigned chunk = len - done > (1u << 30) ? 1u << 30 : (unsigned)(len - done);
        if (gzwrite(g, (const char *)bytes + done, chunk) != (int)chunk) {
            fprintf(stderr, "%s: gzwrite failed\n", path);
            exit(2);
        }
        done += chunk;
    }
    if (gzclose(g) != Z_OK) {
        fprintf(stderr, "%s: gzclose failed\n", path);
        exit(2);
    }
    return path;
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) exit(2);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Reads every line of path; returns the status of the first failure (the
 * message stays in nmt_error_message). Lines are copied into out[] (strdup,
 * up to max_lines) and counted in *n_lines. */
static NmtStatus read_all(const char *path, char **out, int max_lines, int *n_lines) {
    *n_lines = 0;
    LineReader *r = NULL;
    NmtStatus st = line_reader_open(path, &r);
    if (st != NMT_OK) return st;
    const char *line;
    size_t len;
    int got = 1;
    while ((st = line_reader_next(r, &line, &len, &got)) == NMT_OK && got) {
        if (line[len] != '\0') st = nmt_fail(NMT_ERR_RUNTIME, "line not terminated");
        if (strlen(line) != len) st = nmt_fail(NMT_ERR_RUNTIME, "line length mismatch");
        if (st != NMT_OK) break;
        if (out && *n_lines < max_lines) out[*n_lines] = strdup(line);
        (*n_lines)++;
        if (line_reader_line_no(r) != *n_lines) {
            st = nmt_fail(NMT_ERR_RUNTIME, "line_no %lld != %d",
                          (long long)line_reader_line_no(r), *n_lines);
            break;
        }
    }
    line_reader_close(r);
    return st;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
}

/* Checks that a file (plain and gzip) reads as exactly `expected`. */
static void check_lines(const char *what, const char *bytes, size_t len,
                        const char *const *expected, int n_expected) {
    char name[128];
    for (int gz = 0; gz < 2; gz++) {
        snprintf(name, sizeof name, "%s.txt%s", what, gz ? ".gz" : "");
        const char *path = gz ? write_gz(name, bytes, len) : write_plain(name, bytes, len);
        char *lines[64] = {0};
        int n = 0;
        NmtStatus st = read_all(path, lines, 64, &n);
        CHECK(st == NMT_OK, "%s: %s", name, nmt_error_message());
        CHECK(n == n_expected, "%s: %d lines, expected %d", name, n, n_expected);
        for (int i = 0; i < n && i < n_expected; i++)
            CHECK(lines[i] && strcmp(lines[i], expected[i]) == 0,
                  "%s line %d: \"%s\", expected \"%s\"", name, i + 1,
                  lines[i] ? lines[i] : "(null)", expected[i]);
        free_lines(lines, n < 64 ? n : 64);
    }
}

/* Expects reading path to fail with status and a message containing each of
 * the (NULL-terminated) needles. */
static void expect_read_error(const char *path, NmtStatus status, const char *needle1,
                              const char *needle2) {
    int n = 0;
    nmt_error_clear();
    NmtStatus st = read_all(path, NULL, 0, &n);
    CHECK(st == status, "%s: status %s, expected %s (%s)", path, nmt_status_name(st),
          nmt_status_name(status), nmt_error_message());
    CHECK_CONTAINS(nmt_error_message(), needle1);
    if (needle2) CHECK_CONTAINS(nmt_error_message(), needle2);
}

/* ---- utf8_validate --------------------------------------------------------- */

static void test_utf8_validate(void) {
    static const struct {
        const char *s;
        size_t len;
        int ok;
        size_t bad;
    } cases[] = {
        {"", 0, 1, 0},
        {"plain ascii text, longer than eight bytes", 41, 1, 0},
        {"a\0b", 3, 1, 0},                       /* U+0000 is well-formed */
        {"\x7F", 1, 1, 0},                       /* U+007F */
        {"\xC2\x80", 2, 1, 0},                   /* U+0080 */
        {"\xC3\xA4", 2, 1, 0},                   /* a-umlaut */
        {"\xDF\xBF", 2, 1, 0},                   /* U+07FF */
        {"\xE0\xA0\x80", 3, 1, 0},               /* U+0800 */
        {"\xE2\x82\xAC", 3, 1, 0},               /* euro sign */
        {"\xED\x9F\xBF", 3, 1, 0},               /* U+D7FF */
        {"\xEE\x80\x80", 3, 1, 0},               /* U+E000 */
        {"\xEF\xBF\xBF", 3, 1, 0},               /* U+FFFF (noncharacter, valid) */
        {"\xF0\x90\x80\x80", 4, 1, 0},           /* U+10000 */
        {"\xF0\x9D\x84\x9E", 4, 1, 0},           /* musical G clef */
        {"\xF4\x8F\xBF\xBF", 4, 1, 0},           /* U+10FFFF */
        {"abcdefgh\xC3\xA4ijklmnop\xF0\x9F\x98\x80", 23, 1, 0},
        /* ill-formed: offset of the first byte of the bad sequence */
        {"\x80", 1, 0, 0},                       /* lone continuation */
        {"ab\xBF", 3, 0, 2},
        {"\xC0\x80", 2, 0, 0},                   /* overlong NUL */
        {"x\xC1\xBF", 3, 0, 1},                  /* overlong 2-byte */
        {"\xE0\x80\xAF", 3, 0, 0},               /* overlong 3-byte */
        {"\xE0\x9F\xBF", 3, 0, 0},               /* overlong U+07FF */
        {"\xF0\x8F\xBF\xBF", 4, 0, 0},           /* overlong 4-byte */
        {"\xED\xA0\x80", 3, 0, 0},               /* surrogate U+D800 */
        {"ok \xED\xBF\xBF", 6, 0, 3},            /* surrogate U+DFFF */
        {"\xF4\x90\x80\x80", 4, 0, 0},           /* U+110000 */
        {"\xF5\x80\x80\x80", 4, 0, 0},           /* lead F5 */
        {"\xFF", 1, 0, 0},
        {"\xFE", 1, 0, 0},
        {"abc\xC3", 4, 0, 3},                    /* truncated at end */
        {"abc\xE2\x82", 5, 0, 3},
        {"\xF0\x9F\x98", 3, 0, 0},
        {"\xE2\x82x", 3, 0, 0},                  /* truncated before ASCII */
        {"\xC3\xA4\xC3", 3, 0, 2},
        {"abcdefghijklmnop\xC3(", 18, 0, 16},    /* bad continuation after a long ASCII run */
        {"\xF0\x9F\x98\x80\xF0\x9F\x98", 7, 0, 4},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(cases); i++) {
        size_t bad = 12345;
        int ok = utf8_validate(cases[i].s, cases[i].len, &bad);
        CHECK(ok == cases[i].ok, "case %zu: utf8_validate = %d, expected %d", i, ok, cases[i].ok);
        if (!cases[i].ok)
            CHECK(bad == cases[i].bad, "case %zu: bad offset %zu, expected %zu", i, bad,
                  cases[i].bad);
        CHECK(utf8_validate(cases[i].s, cases[i].len, NULL) == cases[i].ok, "case %zu (NULL)", i);
    }
    /* Every 2-byte lead below C2 and every byte from F5 up is rejected; every
     * code point 0..10FFFF except surrogates, encoded by hand, is accepted. */
    int wrong = 0;
    for (unsigned cp = 0; cp <= 0x10FFFF; cp++) {
        unsigned char b[4];
        size_t n;
        if (cp < 0x80) b[0] = (unsigned char)cp, n = 1;
        else if (cp < 0x800) b[0] = (unsigned char)(0xC0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
        else if (cp < 0x10000) b[0] = (unsigned char)(0xE0 | cp >> 12), b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), b[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
        else b[0] = (unsigned char)(0xF0 | cp >> 18), b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F)), b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (unsigned char)(0x80 | (cp & 0x3F)), n = 4;
        int expect = !(cp >= 0xD800 && cp <= 0xDFFF);
        if (utf8_validate((const char *)b, n, NULL) != expect) wrong++;
    }
    CHECK(wrong == 0, "%d code points classified wrongly", wrong);
    wrong = 0;
    for (unsigned c = 0x80; c <= 0xFF; c++) {
        char b[2] = {(char)c, (char)0x80};
        int expect = c >= 0xC2 && c <= 0xDF; /* only these form a 2-byte sequence */
        if (utf8_validate(b, 2, NULL) != expect) wrong++;
    }
    CHECK(wrong == 0, "%d lead bytes classified wrongly", wrong);
}

static void test_blank(void) {
    CHECK(corpus_line_is_blank("", 0), "empty");
    CHECK(corpus_line_is_blank(" \t \v\f\r", 6), "ascii whitespace");
    CHECK(corpus_line_is_blank("\xC2\xA0 \xE3\x80\x80\xE2\x80\x89\xE2\x80\x8B\xEF\xBB\xBF", 15),
          "nbsp, ideographic space, thin space, zwsp, zwnbsp");
    CHECK(corpus_line_is_blank("\xC2\x85\xE1\x9A\x80\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xAF\xE2\x81\x9F", 17),
          "NEL, ogham, line/para separators, nnbsp, mmsp");
    CHECK(!corpus_line_is_blank(" a ", 3), "letter");
    CHECK(!corpus_line_is_blank("  .", 3), "dot");
    CHECK(!corpus_line_is_blank("\xC2\xA1", 2), "inverted exclamation mark");
    CHECK(!corpus_line_is_blank("\xE2\x80\x8C", 3), "ZWNJ is not blank");
    CHECK(!corpus_line_is_blank("\xC2", 1), "truncated");
    CHECK(!corpus_line_is_blank("\xE2\x80", 2), "truncated 3-byte");
    CHECK(!corpus_line_is_blank(" \0", 2), "NUL");
}

/* ---- LineReader ------------------------------------------------------------ */

static void test_plain_and_gzip(void) {
    static const char text[] = "Zwei junge Männer.\nA € sign and 𝄞\n\n   \nlast line, no newline";
    static const char *const expected[] = {"Zwei junge Männer.", "A € sign and 𝄞", "", "   ",
                                           "last line, no newline"};
    check_lines("basic", text, sizeof text - 1, expected, 5);

    /* CRLF; a lone CR inside a line stays */
    static const char crlf[] = "one\r\ntwo\r\n\r\nin\rside\r\nfour";
    static const char *const crlf_exp[] = {"one", "two", "", "in\rside", "four"};
    check_lines("crlf", crlf, sizeof crlf - 1, crlf_exp, 5);

    /* BOM at the very start is skipped, elsewhere kept */
    static const char bom[] = "\xEF\xBB\xBF" "first\n\xEF\xBB\xBF" "second\n";
    static const char *const bom_exp[] = {"first", "\xEF\xBB\xBF" "second"};
    check_lines("bom", bom, sizeof bom - 1, bom_exp, 2);
    static const char bom_crlf[] = "\xEF\xBB\xBF\r\nx";
    static const char *const bom_crlf_exp[] = {"", "x"};
    check_lines("bom_crlf", bom_crlf, sizeof bom_crlf - 1, bom_crlf_exp, 2);
    check_lines("bom_only", "\xEF\xBB\xBF", 3, NULL, 0);
    static const char *const two_bytes_exp[] = {"\xC3\xA4"};
    check_lines("two_bytes", "\xC3\xA4", 2, two_bytes_exp, 1);

    /* blank lines, trailing newline(s), empty file */
    static const char blank[] = "\n\nx\n\ny\n\n";
    static const char *const blank_exp[] = {"", "", "x", "", "y", ""};
    check_lines("blank", blank, sizeof blank - 1, blank_exp, 6);
    static const char *const nl_exp[] = {""};
    check_lines("newline_only", "\n", 1, nl_exp, 1);
    check_lines("empty", "", 0, NULL, 0);
    static const char *const one_exp[] = {"a"};
    check_lines("one_char", "a", 1, one_exp, 1);

    /* identical content, plain and gzip, across many buffer refills: 20000
     * lines of varying length, compared line by line */
    size_t cap = 4 << 20, len = 0;
    char *big = malloc(cap);
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(big + len, cap - len, "%d Straße ", i);
        len += (size_t)n;
        for (int k = 0; k < i % 97; k++) big[len++] = (char)('a' + (i + k) % 26);
        if (i % 3 == 0) big[len++] = '\r';
        big[len++] = '\n';
    }
    const char *plain = write_plain("many.txt", big, len);
    char plain_path[1024];
    snprintf(plain_path, sizeof plain_path, "%s", plain);
    const char *gz = write_gz("many.txt.gz", big, len);
    LineReader *a = NULL, *b = NULL;
    CHECK(line_reader_open(plain_path, &a) == NMT_OK, "%s", nmt_error_message());
    CHECK(line_reader_open(gz, &b) == NMT_OK, "%s", nmt_error_message());
    int lines = 0, same = 1, right = 1;
    for (;;) {
        const char *la, *lb;
        size_t na, nb;
        int ga, gb;
        if (line_reader_next(a, &la, &na, &ga) != NMT_OK || line_reader_next(b, &lb, &nb, &gb) != NMT_OK) {
            same = 0;
            break;
        }
        if (ga != gb) same = 0;
        if (!ga || !gb) break;
        if (na != nb || memcmp(la, lb, na) != 0) same = 0;
        char prefix[32];
        int pn = snprintf(prefix, sizeof prefix, "%d Straße ", lines);
        if (na != (size_t)pn + (size_t)(lines % 97) || memcmp(la, prefix, (size_t)pn) != 0) right = 0;
        lines++;
    }
    CHECK(same, "plain and gzip differ (line %d)", lines);
    CHECK(right, "content differs from what was written (line %d)", lines);
    CHECK_EQ_INT(lines, 20000);
    CHECK_EQ_INT(line_reader_line_no(a), 20000);
    CHECK_EQ_STR(line_reader_path(a), plain_path);
    line_reader_close(a);
    line_reader_close(b);
    line_reader_close(NULL);

    /* a gzip file of two members (as `cat a.gz b.gz` makes) reads as one */
    size_t l1, l2;
    unsigned char *m1 = slurp(write_gz("m1.gz", "first\nsec", 9), &l1);
    unsigned char *m2 = slurp(write_gz("m2.gz", "ond\nthird\n", 10), &l2);
    unsigned char *cat = malloc(l1 + l2 + 8);
    memcpy(cat, m1, l1);
    memcpy(cat + l1, m2, l2);
    static const char *const members_exp[] = {"first", "second", "third"};
    char *got_lines[8] = {0};
    int n = 0;
    CHECK(read_all(write_plain("members.gz", cat, l1 + l2), got_lines, 8, &n) == NMT_OK, "%s",
          nmt_error_message());
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n && i < 3; i++) CHECK_EQ_STR(got_lines[i], members_exp[i]);
    free_lines(got_lines, n < 8 ? n : 8);
    /* zero padding after the last member is accepted, other trailing bytes not */
    memset(cat + l1 + l2, 0, 8);
    CHECK(read_all(write_plain("padded.gz", cat, l1 + l2 + 8), NULL, 0, &n) == NMT_OK && n == 3,
          "zero-padded gzip: %s", nmt_error_message());
    memcpy(cat + l1 + l2, "garbage!", 8);
    const char *garbage = write_plain("garbage.gz", cat, l1 + l2 + 8);
    expect_read_error(garbage, NMT_ERR_FORMAT, garbage, "trailing garbage");
    free(m1);
    free(m2);
    free(cat);
    free(big);

    /* a pipe, through line_reader_open_fd */
    int fds[2];
    if (pipe(fds) == 0) {
        static const char piped[] = "from\r\na pipe";
        CHECK(write(fds[1], piped, sizeof piped - 1) == (ssize_t)(sizeof piped - 1), "write");
        close(fds[1]);
        LineReader *r = NULL;
        const char *line;
        size_t len2;
        int got = 0;
        CHECK(line_reader_open_fd(fds[0], "<pipe>", &r) == NMT_OK, "%s", nmt_error_message());
        CHECK(r && line_reader_next(r, &line, &len2, &got) == NMT_OK && got, "pipe line 1");
        if (got) CHECK_EQ_STR(line, "from");
        CHECK(r && line_reader_next(r, &line, &len2, &got) == NMT_OK && got, "pipe line 2");
        if (got) CHECK_EQ_STR(line, "a pipe");
        CHECK(r && line_reader_next(r, &line, &len2, &got) == NMT_OK && !got && !line && !len2,
              "pipe end");
        CHECK(r && line_reader_next(r, &line, &len2, &got) == NMT_OK && !got, "end is sticky");
        line_reader_close(r);
        CHECK(close(fds[0]) == 0, "line_reader_open_fd must not close the descriptor");
    }
}

static void test_long_line(void) {
    /* line 2 holds 10 MB: ASCII with a 3-byte character every 1000 bytes */
    size_t body = 10u << 20;
    size_t total = 6 + body + 4;
    char *text = malloc(total);
    memcpy(text, "start\n", 6);
    size_t n2 = 0;
    while (n2 < body) {
        if (n2 % 1000 == 0 && body - n2 >= 3) {
            memcpy(text + 6 + n2, "\xE2\x82\xAC", 3);
            n2 += 3;
        } else {
            text[6 + n2] = (char)('a' + n2 % 26);
            n2++;
        }
    }
    memcpy(text + 6 + body, "\nend", 5 - 1);
    for (int gz = 0; gz < 2; gz++) {
        const char *path = gz ? write_gz("long.txt.gz", text, total) : write_plain("long.txt", text, total);
        LineReader *r = NULL;
        const char *line;
        size_t len;
        int got;
        CHECK(line_reader_open(path, &r) == NMT_OK, "%s", nmt_error_message());
        if (!r) continue;
        CHECK(line_reader_next(r, &line, &len, &got) == NMT_OK && got && len == 5, "line 1");
        NmtStatus st = line_reader_next(r, &line, &len, &got);
        CHECK(st == NMT_OK && got, "10 MB line (%s): %s", gz ? "gzip" : "plain", nmt_error_message());
        CHECK_EQ_INT(len, body);
        CHECK(st == NMT_OK && got && memcmp(line, text + 6, body) == 0 && line[len] == '\0',
              "10 MB line content");
        CHECK(line_reader_next(r, &line, &len, &got) == NMT_OK && got && len == 3 &&
                  strcmp(line, "end") == 0, "line after the long one");
        CHECK(line_reader_next(r, &line, &len, &got) == NMT_OK && !got, "end");
        CHECK_EQ_INT(line_reader_line_no(r), 3);
        line_reader_close(r);
    }
    free(text);
}

static void test_invalid_utf8(void) {
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
        const char *where; /* ":LINE: invalid UTF-8 at byte N" */
    } cases[] = {
        {"overlong.txt", "ok\nab\xC0\xAF" "cd\n", 9, ":2: invalid UTF-8 at byte 3"},
        {"surrogate.txt", "x\ny\nzz \xED\xA0\x80\n", 11, ":3: invalid UTF-8 at byte 4"},
        {"too_big.txt", "\xF4\x90\x80\x80 high\n", 9, ":1: invalid UTF-8 at byte 1"},
        {"truncated.txt", "fine\nends in \xE2\x82\nnext\n", 21, ":2: invalid UTF-8 at byte 9"},
        {"truncated_eof.txt", "fine\nends \xF0\x9F\x98", 13, ":2: invalid UTF-8 at byte 6"},
        {"continuation.txt", "\x80start\n", 7, ":1: invalid UTF-8 at byte 1"},
        {"latin1.txt", "M\xE4nner\r\n", 9, ":1: invalid UTF-8 at byte 2"},
        {"bom_then_bad.txt", "\xEF\xBB\xBF" "a\xFF\n", 6, ":1: invalid UTF-8 at byte 2"},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(cases); i++) {
        for (int gz = 0; gz < 2; gz++) {
            char name[64], needle[256];
            snprintf(name, sizeof name, "%s%s", cases[i].name, gz ? ".gz" : "");
            const char *path = gz ? write_gz(name, cases[i].bytes, cases[i].len)
                                  : write_plain(name, cases[i].bytes, cases[i].len);
            snprintf(needle, sizeof needle, "%s%s", path, cases[i].where);
            expect_read_error(path, NMT_ERR_FORMAT, needle, NULL);
        }
    }
    /* a UTF-16 file gets a hint */
    const char *u16 = write_plain("utf16.txt", "\xFF\xFEh\0i\0\n\0", 8);
    expect_read_error(u16, NMT_ERR_FORMAT, ":1: invalid UTF-8 at byte 1", "UTF-16");

    /* NUL bytes; the earlier of NUL and invalid UTF-8 is reported */
    const char *nul = write_plain("nul.txt", "good\nabc\0def\n", 13);
    char needle[1200];
    snprintf(needle, sizeof needle, "%s:2: NUL byte at byte 4", nul);
    expect_read_error(nul, NMT_ERR_FORMAT, needle, NULL);
    const char *nul_gz = write_gz("nul.txt.gz", "\0", 1);
    snprintf(needle, sizeof needle, "%s:1: NUL byte at byte 1", nul_gz);
    expect_read_error(nul_gz, NMT_ERR_FORMAT, needle, NULL);
    const char *nul_after = write_plain("nul_after.txt", "a\xC0" "b\0\n", 5);
    expect_read_error(nul_after, NMT_ERR_FORMAT, ":1: invalid UTF-8 at byte 2", NULL);

    /* lines before the bad one are returned; the error is sticky; with
     * validation off the bytes pass through */
    LineReader *r = NULL;
    const char *line;
    size_t len;
    int got;
    const char *bad = write_plain("sticky.txt", "ok\nab\xC0\xAF" "cd\nmore\n", 14);
    CHECK(line_reader_open(bad, &r) == NMT_OK, "%s", nmt_error_message());
    CHECK(line_reader_next(r, &line, &len, &got) == NMT_OK && got && strcmp(line, "ok") == 0,
          "line before the bad one");
    CHECK(line_reader_next(r, &line, &len, &got) == NMT_ERR_FORMAT && !got, "bad line");
    nmt_error_clear();
    CHECK(line_reader_next(r, &line, &len, &got) == NMT_ERR_FORMAT && !got, "sticky");
    CHECK_CONTAINS(nmt_error_message(), ":2: invalid UTF-8 at byte 3");
    line_reader_close(r);
    r = NULL;
    CHECK(line_reader_open(bad, &r) == NMT_OK, "%s", nmt_error_message());
    line_reader_set_validate(r, 0);
    int n = 0;
    while (line_reader_next(r, &line, &len, &got) == NMT_OK && got) {
        n++;
        if (n == 2) CHECK(len == 6 && memcmp(line, "ab\xC0\xAF" "cd", 6) == 0, "raw bytes");
    }
    CHECK_EQ_INT(n, 3);
    line_reader_close(r);
}

static void test_bad_gzip(void) {
    size_t cap = 200000, len = 0;
    char *text = malloc(cap);
    for (int i = 0; len + 64 < cap; i++) len += (size_t)snprintf(text + len, cap - len, "Satz %d: ein Hund läuft.\n", i * 7919 % 10007);
    size_t gz_len;
    unsigned char *gz = slurp(write_gz("whole.gz", text, len), &gz_len);
    int n = 0;
    CHECK(read_all(path_of("whole.gz"), NULL, 0, &n) == NMT_OK, "%s", nmt_error_message());

    /* cut inside the 8-byte trailer, inside the deflate data, and inside the header */
    size_t cuts[] = {gz_len - 1, gz_len - 4, gz_len - 8, gz_len / 2, 20, 5, 2};
    for (size_t i = 0; i < NMT_ARRAY_LEN(cuts); i++) {
        char name[64];
        snprintf(name, sizeof name, "cut%zu.gz", i);
        const char *path = write_plain(name, gz, cuts[i]);
        expect_read_error(path, NMT_ERR_FORMAT, path, "truncated gzip file");
    }
    /* a wrong CRC, a wrong length and a corrupt block are refused too */
    size_t at[] = {gz_len - 8, gz_len - 2, 12};
    for (size_t i = 0; i < NMT_ARRAY_LEN(at); i++) {
        char name[64];
        snprintf(name, sizeof name, "corrupt%zu.gz", i);
        gz[at[i]] ^= 0x55;
        const char *path = write_plain(name, gz, gz_len);
        gz[at[i]] ^= 0x55;
        expect_read_error(path, NMT_ERR_FORMAT, path, "gzip");
    }
    /* plain text starting with the magic bytes is treated as (bad) gzip */
    const char *fake = write_plain("fake.gz", "\x1f\x8bnot really gzip\n", 18);
    expect_read_error(fake, NMT_ERR_FORMAT, fake, "corrupt gzip data");
    free(gz);
    free(text);
}

/* corpus_read_all: plain bytes come back unchanged (BOM, "\r", NUL, invalid
 * UTF-8, no final newline), gzip (one member or two) as its plain text, a
 * truncated gzip or a missing file is an error naming it, and the result is
 * '\0'-terminated; 200 kB so that the buffer grows. */
static void test_read_all(void) {
    size_t cap = 200000, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "\xEF\xBB\xBF" "bom\r\nlone\rcr\n");
    for (int i = 0; len + 64 < cap; i++) len += (size_t)snprintf(text + len, cap - len, "Satz %d\xC0\r\n", i);
    text[len++] = '\0';
    memcpy(text + len, "last\r", 5);
    len += 5;
    size_t half = len / 2;
    size_t l1, l2;
    unsigned char *m1 = slurp(write_gz("ra1.gz", text, half), &l1);
    unsigned char *m2 = slurp(write_gz("ra2.gz", text + half, len - half), &l2);
    unsigned char *two = malloc(l1 + l2);
    memcpy(two, m1, l1);
    memcpy(two + l1, m2, l2);
    const char *paths[] = {write_plain("ra.txt", text, len), write_gz("ra.txt.gz", text, len),
                           write_plain("ra_two.gz", two, l1 + l2)};
    for (size_t i = 0; i < NMT_ARRAY_LEN(paths); i++) {
        char *buf = NULL;
        size_t n = 1;
        NmtStatus st = corpus_read_all(paths[i], &buf, &n);
        CHECK(st == NMT_OK, "%s: %s", paths[i], nmt_error_message());
        CHECK(n == len && buf && memcmp(buf, text, len) == 0 && buf[n] == '\0',
              "%s: %zu bytes, expected the %zu written", paths[i], n, len);
        nmt_free(buf);
    }
    char *buf = (char *)1;
    size_t n = 1;
    CHECK(corpus_read_all(write_plain("ra_empty.txt", "", 0), &buf, &n) == NMT_OK && n == 0 && buf &&
              buf[0] == '\0', "empty file: %s", nmt_error_message());
    nmt_free(buf);
    const char *cut = write_plain("ra_cut.gz", m1, l1 - 4);
    buf = (char *)1;
    CHECK(corpus_read_all(cut, &buf, &n) == NMT_ERR_FORMAT && buf == NULL && n == 0, "truncated gzip");
    CHECK_CONTAINS(nmt_error_message(), cut);
    CHECK_CONTAINS(nmt_error_message(), "truncated gzip file");
    const char *missing = path_of("ra_missing.txt");
    CHECK(corpus_read_all(missing, &buf, &n) == NMT_ERR_IO && buf == NULL, "missing file");
    CHECK_CONTAINS(nmt_error_message(), missing);
    free(m1);
    free(m2);
    free(two);
    free(text);
}

static void test_missing(void) {
    const char *missing = path_of("no_such_file.txt");
    char needle[1200];
    snprintf(needle, sizeof needle, "%s: cannot open: %s", missing, strerror(ENOENT));
    LineReader *r = (LineReader *)1;
    CHECK(line_reader_open(missing, &r) == NMT_ERR_IO && r == NULL, "missing file");
    CHECK_EQ_STR(nmt_error_message(), needle);
    snprintf(needle, sizeof needle, "%s: cannot open: %s", test_tmpdir(), strerror(EISDIR));
    CHECK(line_reader_open(test_tmpdir(), &r) == NMT_ERR_IO && r == NULL, "directory");
    CHECK_EQ_STR(nmt_error_message(), needle);
    int64_t count = -1;
    CHECK(corpus_count_lines(missing, &count) == NMT_ERR_IO, "count missing");
    CHECK_CONTAINS(nmt_error_message(), missing);
    ParallelReader *p = (ParallelReader *)1;
    const char *src = write_plain("exists.de", "a\n", 2);
    CHECK(parallel_reader_open(src, missing, &p) == NMT_ERR_IO && p == NULL, "missing target");
    CHECK_CONTAINS(nmt_error_message(), missing);
    CHECK(parallel_reader_open(missing, src, &p) == NMT_ERR_IO && p == NULL, "missing source");
    CHECK_CONTAINS(nmt_error_message(), missing);
    parallel_reader_close(NULL);
}

/* ---- ParallelReader -------------------------------------------------------- */

static char *numbered(int n, const char *lang, int gz, const char *name) {
    size_t cap = (size_t)n * 32 + 16, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, "%s %d\n", lang, i + 1);
    const char *path = gz ? write_gz(name, text, len) : write_plain(name, text, len);
    free(text);
    return strdup(path);
}

static void test_parallel(void) {
    char *de = numbered(1000, "de", 0, "a.de");
    char *en = numbered(998, "en", 1, "a.en");
    char *en_full = numbered(1000, "en", 1, "full.en");

    ParallelReader *p = NULL;
    const char *s, *t;
    size_t sl, tl;
    int got = 1, pairs = 0, in_step = 1;
    CHECK(parallel_reader_open(de, en_full, &p) == NMT_OK, "%s", nmt_error_message());
    NmtStatus st;
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {
        pairs++;
        char es[32], et[32];
        snprintf(es, sizeof es, "de %d", pairs);
        snprintf(et, sizeof et, "en %d", pairs);
        if (strcmp(s, es) != 0 || strcmp(t, et) != 0 || sl != strlen(es) || tl != strlen(et) ||
            parallel_reader_line_no(p) != pairs)
            in_step = 0;
    }
    CHECK(st == NMT_OK, "%s", nmt_error_message());
    CHECK_EQ_INT(pairs, 1000);
    CHECK(in_step, "pairs out of step");
    parallel_reader_close(p);

    /* the longer file on either side; the full count of the longer one */
    for (int swap = 0; swap < 2; swap++) {
        const char *a = swap ? en : de, *b = swap ? de : en;
        p = NULL;
        CHECK(parallel_reader_open(a, b, &p) == NMT_OK, "%s", nmt_error_message());
        pairs = 0;
        while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) pairs++;
        CHECK(st == NMT_ERR_FORMAT, "mismatch status %s", nmt_status_name(st));
        CHECK_EQ_INT(pairs, 998);
        char needle[2600];
        snprintf(needle, sizeof needle, "corpus files differ in length: %s has %d lines, %s has %d lines",
                 a, swap ? 998 : 1000, b, swap ? 1000 : 998);
        CHECK_EQ_STR(nmt_error_message(), needle);
        parallel_reader_close(p);
    }

    /* the tail of the longer file is counted even when it holds bad bytes */
    char needle_tail[1200];
    const char *x = write_plain("tail.de", "a\nb\n\xFF\xFE\nc", 9);
    const char *y = write_plain("tail.en", "a\nb\n", 4);
    p = NULL;
    CHECK(parallel_reader_open(x, y, &p) == NMT_OK, "%s", nmt_error_message());
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {}
    CHECK(st == NMT_ERR_FORMAT, "tail mismatch");
    CHECK_CONTAINS(nmt_error_message(), "has 4 lines");
    CHECK_CONTAINS(nmt_error_message(), "has 2 lines");
    nmt_error_clear();
    CHECK(parallel_reader_next(p, &s, &sl, &t, &tl, &got) == NMT_ERR_FORMAT && !got, "sticky");
    CHECK_CONTAINS(nmt_error_message(), "differ in length");
    parallel_reader_close(p);
    /* a file of old Mac line ends (CR only) reads as one line: the message
     * says so, in the singular, and how to mend it; CRLF files do not get it */
    const char *mac = write_plain("mac.de", "a b\rc d\re f\r", 12);
    const char *unix3 = write_plain("unix3.en", "A B\r\nC D\r\nE F\r\n", 15);
    p = NULL;
    CHECK(parallel_reader_open(mac, unix3, &p) == NMT_OK, "%s", nmt_error_message());
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {}
    char needle_cr[2600];
    snprintf(needle_cr, sizeof needle_cr,
             "corpus files differ in length: %s has 1 line, %s has 3 lines; %s has carriage returns inside 1 "
             "line: if they end its lines (old Mac line ends), turn them into newlines",
             mac, unix3, mac);
    CHECK(st == NMT_ERR_FORMAT, "CR-only mismatch status %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), needle_cr);
    parallel_reader_close(p);
    const char *unix2 = write_plain("unix2.en", "A B\r\nC D\r\n", 10);
    p = NULL;
    CHECK(parallel_reader_open(unix3, unix2, &p) == NMT_OK, "%s", nmt_error_message());
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {}
    CHECK(st == NMT_ERR_FORMAT && !strstr(nmt_error_message(), "carriage"), "CRLF files: %s", nmt_error_message());
    parallel_reader_close(p);
    /* bad bytes within the common length are reported with file:line */
    const char *u = write_plain("bad_pair.en", "a\nb\nc\nd\n", 8);
    p = NULL;
    CHECK(parallel_reader_open(u, x, &p) == NMT_OK, "%s", nmt_error_message());
    pairs = 0;
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) pairs++;
    CHECK(st == NMT_ERR_FORMAT && pairs == 2, "bad pair: %d pairs", pairs);
    snprintf(needle_tail, sizeof needle_tail, "%s:3: invalid UTF-8 at byte 1", x);
    CHECK_EQ_STR(nmt_error_message(), needle_tail);
    parallel_reader_close(p);
    const char *z = write_plain("nul_pair.de", "a\nb\0\n", 5);
    p = NULL;
    CHECK(parallel_reader_open(z, y, &p) == NMT_OK, "%s", nmt_error_message());
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {}
    snprintf(needle_tail, sizeof needle_tail, "%s:2: NUL byte at byte 2", z);
    CHECK(st == NMT_ERR_FORMAT, "NUL in a pair");
    CHECK_EQ_STR(nmt_error_message(), needle_tail);
    parallel_reader_close(p);
    /* an empty file against a non-empty one */
    const char *empty = write_plain("empty.en", "", 0);
    p = NULL;
    CHECK(parallel_reader_open(y, empty, &p) == NMT_OK, "%s", nmt_error_message());
    CHECK(parallel_reader_next(p, &s, &sl, &t, &tl, &got) == NMT_ERR_FORMAT && !got, "vs empty");
    CHECK_CONTAINS(nmt_error_message(), "has 0 lines");
    parallel_reader_close(p);

    int64_t count = 0;
    CHECK(corpus_count_lines(en, &count) == NMT_OK && count == 998, "count = %lld (%s)",
          (long long)count, nmt_error_message());
    CHECK(corpus_count_lines(x, &count) == NMT_ERR_FORMAT, "count validates");
    free(de);
    free(en);
    free(en_full);
}

static void test_stats(void) {
    CorpusStats s;
    corpus_stats_init(&s, "train", 80);
    CHECK(s.pairs_read == 0 && s.kept == 0 && s.skipped_empty == 0 && s.skipped_too_long == 0,
          "init zeroes");
    s.pairs_read = 29000;
    s.kept = 28950;
    s.skipped_empty = 10;
    s.skipped_too_long = 40;
    char buf[256];
    int n = corpus_stats_summary(&s, buf, sizeof buf);
    const char *want = "train: 29000 pairs read, 28950 kept, 10 skipped (empty), "
                       "40 skipped (longer than 80 tokens)";
    CHECK_EQ_STR(buf, want);
    CHECK_EQ_INT(n, strlen(want));
    char small[10];
    CHECK_EQ_INT(corpus_stats_summary(&s, small, sizeof small), strlen(want));
    CHECK_EQ_STR(small, "train: 29");
    corpus_stats_init(&s, "val", 0);
    s.pairs_read = s.kept = 1014;
    corpus_stats_summary(&s, buf, sizeof buf);
    CHECK_EQ_STR(buf, "val: 1014 pairs read, 1014 kept, 0 skipped (empty)");
}

/* ---- allocation failures ----------------------------------------------------- */

/* Opens and reads a whole parallel corpus; returns the first failure. */
static NmtStatus read_parallel(const char *a, const char *b, int *pairs) {
    ParallelReader *p = NULL;
    *pairs = 0;
    NmtStatus st = parallel_reader_open(a, b, &p);
    if (st != NMT_OK) return st;
    const char *s, *t;
    size_t sl, tl;
    int got;
    while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) (*pairs)++;
    parallel_reader_close(p);
    return st;
}

static size_t heap_in_use(void) {
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

static void test_alloc_failures(void) {
    /* a plain and a gzip side; a 300 kB line makes the buffer grow */
    size_t cap = 400000, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < 50; i++) len += (size_t)snprintf(text + len, cap - len, "Zeile %d ä\n", i);
    memset(text + len, 'x', 300000);
    len += 300000;
    text[len++] = '\n';
    const char *plain = write_plain("walk.de", text, len);
    char plain_path[1024];
    snprintf(plain_path, sizeof plain_path, "%s", plain);
    const char *gz = write_gz("walk.en.gz", text, len);
    free(text);

    int pairs = 0;
    CHECK(read_parallel(plain_path, gz, &pairs) == NMT_OK && pairs == 51, "warm-up: %d pairs, %s",
          pairs, nmt_error_message());
    size_t heap_before = heap_in_use();
    long calls_before = nmt_alloc_count();
    CHECK(read_parallel(plain_path, gz, &pairs) == NMT_OK, "count pass");
    long calls = nmt_alloc_count() - calls_before;
    CHECK(calls >= 8, "only %ld allocations counted", calls);

    int failures = 0, bad_status = 0, n;
    for (n = 1; n < 10000; n++) {
        nmt_alloc_fail_at(n);
        NmtStatus st = read_parallel(plain_path, gz, &pairs);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) break;
        failures++;
        if (st != NMT_ERR_NOMEM || !strstr(nmt_error_message(), "out of memory")) {
            bad_status++;
            fprintf(stderr, "alloc %d: %s: %s\n", n, nmt_status_name(st), nmt_error_message());
        }
    }
    CHECK_EQ_INT(failures, calls);
    CHECK_EQ_INT(bad_status, 0);
    CHECK_EQ_INT(pairs, 51);
    /* the same for a single LineReader on each file */
    const char *files[] = {plain_path, gz};
    for (int f = 0; f < 2; f++) {
        int fails = 0, lines = 0;
        for (n = 1; n < 10000; n++) {
            nmt_alloc_fail_at(n);
            NmtStatus st = read_all(files[f], NULL, 0, &lines);
            nmt_alloc_fail_at(0);
            if (st == NMT_OK) break;
            fails++;
            CHECK(st == NMT_ERR_NOMEM, "%s alloc %d: %s", files[f], n, nmt_error_message());
        }
        CHECK(fails >= 3 && lines == 51, "%s: %d failures, %d lines", files[f], fails, lines);
    }
    size_t heap_after = heap_in_use();
    CHECK(heap_after <= heap_before, "heap grew by %zu bytes: a leak on a failure path",
          heap_after - heap_before);
}

/* ---- Multi30k ---------------------------------------------------------------- */

static void test_multi30k(void) {
    const char *dir = test_multi30k_dir();
    if (!dir) {
        printf("SKIP test_corpus multi30k: data/multi30k not found (set NMT_MULTI30K)\n");
        return;
    }
    static const struct {
        const char *split;
        int pairs;
        int64_t de_bytes, en_bytes; /* zcat | wc -c */
    } splits[] = {
        {"train", 29000, 2110398, 1801238},
        {"val", 1014, -1, -1},
        {"test_2016_flickr", 1000, -1, -1},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(splits); i++) {
        char de[1024], en[1024];
        snprintf(de, sizeof de, "%s/%s.de.gz", dir, splits[i].split);
        snprintf(en, sizeof en, "%s/%s.en.gz", dir, splits[i].split);
        ParallelReader *p = NULL;
        CHECK(parallel_reader_open(de, en, &p) == NMT_OK, "%s", nmt_error_message());
        if (!p) continue;
        const char *s, *t;
        size_t sl, tl;
        int got, pairs = 0, blank = 0;
        int64_t de_bytes = 0, en_bytes = 0;
        NmtStatus st;
        while ((st = parallel_reader_next(p, &s, &sl, &t, &tl, &got)) == NMT_OK && got) {
            pairs++;
            de_bytes += (int64_t)sl + 1;
            en_bytes += (int64_t)tl + 1;
            blank += corpus_line_is_blank(s, sl) || corpus_line_is_blank(t, tl);
        }
        CHECK(st == NMT_OK, "%s: %s", splits[i].split, nmt_error_message());
        CHECK(pairs == splits[i].pairs, "%s: %d pairs, expected %d", splits[i].split, pairs,
              splits[i].pairs);
        CHECK(blank == 0, "%s: %d blank pairs", splits[i].split, blank);
        if (splits[i].de_bytes > 0) {
            CHECK_EQ_INT(de_bytes, splits[i].de_bytes);
            CHECK_EQ_INT(en_bytes, splits[i].en_bytes);
        }
        parallel_reader_close(p);
    }
}

/* Removes the files this binary wrote (kept when a check failed). */
static void remove_tmpdir(void) {
    const char *dir = test_tmpdir();
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[1200];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int main(void) {
    nmt_log_quiet(1);
    test_utf8_validate();
    test_blank();
    test_plain_and_gzip();
    test_long_line();
    test_invalid_utf8();
    test_bad_gzip();
    test_read_all();
    test_missing();
    test_parallel();
    test_stats();
    test_alloc_failures();
    test_multi30k();
    if (test_failed == 0) remove_tmpdir();
    return test_summary("test_corpus");
}
