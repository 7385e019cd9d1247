/* test_guided_align.c: the data side of guided alignment training
 * (data/guided_align.h): parsing Pharaoh lines and their errors, word
 * pairs to token links through hand-made spans (words split into several
 * tokens, a word-start token without a word, duplicates), a batch
 * column's rows in text and right-to-left order, the cache file's round
 * trip and its corruption checks. Training with it:
 * tests/test_guided_alignment.sh. */
#include <stdlib.h>
#include <string.h>

#include "data/guided_align.h"
#include "fileio.h"
#include "test_util.h"

static int parse(const char *line, int ns, int nt, int32_t **pairs, int *n, int *cap) {
    return (int)guided_align_parse_line(line, strlen(line), ns, nt, pairs, n, cap);
}

static void parsing(void) {
    int32_t *p = NULL;
    int n = -1, cap = 0;
    CHECK_EQ_INT(parse("0-1  2-3\t4-0\r", 5, 4, &p, &n, &cap), NMT_OK);
    CHECK(n == 3 && p[0] == 0 && p[1] == 1 && p[2] == 2 && p[3] == 3 && p[4] == 4 && p[5] == 0,
          "three pairs in order (n %d)", n);
    CHECK_EQ_INT(parse("", 5, 4, &p, &n, &cap), NMT_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(parse("   \t", 5, 4, &p, &n, &cap), NMT_OK);
    CHECK_EQ_INT(n, 0);
    /* many pairs grow the array */
    char many[4096] = "";
    for (int k = 0; k < 300; k++) sprintf(many + strlen(many), "%d-%d ", k % 7, k % 5);
    CHECK_EQ_INT(parse(many, 7, 5, &p, &n, &cap), NMT_OK);
    CHECK(n == 300 && p[2 * 299] == 299 % 7 && p[2 * 299 + 1] == 299 % 5, "300 pairs (n %d)", n);
    const char *bad[] = {"1-", "-1", "a-b", "1-2-3", "1_2", "0-1 x", "1 2", "1234567890-1", "+1-2", "1--2"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad); i++) {
        nmt_error_clear();
        CHECK(parse(bad[i], 5, 5, &p, &n, &cap) == NMT_ERR_FORMAT && strstr(nmt_error_message(), "is not a pair"),
              "'%s' should be refused as not a pair: %s", bad[i], nmt_error_message());
    }
    nmt_error_clear();
    CHECK_EQ_INT(parse("0-0 5-1", 5, 4, &p, &n, &cap), NMT_ERR_FORMAT);
    CHECK(strstr(nmt_error_message(), "pair 5-1: the pair's source side has 5 words") != NULL, "%s",
          nmt_error_message());
    nmt_error_clear();
    CHECK_EQ_INT(parse("0-4", 5, 4, &p, &n, &cap), NMT_ERR_FORMAT);
    CHECK(strstr(nmt_error_message(), "pair 0-4: the pair's target side has 4 words") != NULL, "%s",
          nmt_error_message());
    nmt_error_clear();
    CHECK_EQ_INT(parse("0-0", 1, 0, &p, &n, &cap), NMT_ERR_FORMAT);
    CHECK(strstr(nmt_error_message(), "has 0 words") != NULL, "%s", nmt_error_message());
    nmt_error_clear();
    nmt_free(p);

    CHECK_EQ_INT(guided_align_count_words("", 0), 0);
    CHECK_EQ_INT(guided_align_count_words("  a  bb\tc ", 10), 3);
    const char *nbsp = "x\xc2\xa0y z"; /* U+00A0 is a space to word_space_len */
    CHECK_EQ_INT(guided_align_count_words(nbsp, strlen(nbsp)), 3);
}

/* links of text pairs through spans given by hand */
static void mapping(void) {
    /* source "ab cd ef": tokens "a" "b" " cd" " ef" (words 0 0 1 2) */
    const char *src = "ab cd ef";
    TokenSpan ss[] = {{0, 1}, {1, 2}, {2, 5}, {5, 8}};
    /* target "x yz": tokens "x" " y" "z" " " (words 0 1 1, and a lone space:
     * no word of its own, so the previous token's) */
    const char *tgt = "x yz ";
    TokenSpan ts[] = {{0, 1}, {1, 3}, {3, 4}, {4, 5}};
    int32_t word_pairs[] = {0, 1, 2, 0, 0, 1}; /* 0-1 2-0 0-1 (a duplicate) */
    int32_t *links = NULL;
    int n = -1, cap = 0;
    CHECK_EQ_INT(guided_align_token_links(word_pairs, 3, src, strlen(src), ss, 4, tgt, strlen(tgt), ts, 4, &links,
                                          &n, &cap),
                 NMT_OK);
    /* target then source order: t0-s3; t1, t2 and t3 (word 1) to s0, s1 */
    const int32_t want[] = {3, 0, 0, 1, 1, 1, 0, 2, 1, 2, 0, 3, 1, 3};
    CHECK(n == 7 && !memcmp(links, want, sizeof want), "links (%d): %d-%d %d-%d %d-%d ...", n, n > 0 ? links[0] : -1,
          n > 0 ? links[1] : -1, n > 1 ? links[2] : -1, n > 1 ? links[3] : -1, n > 2 ? links[4] : -1,
          n > 2 ? links[5] : -1);
    CHECK_EQ_INT(guided_align_token_links(word_pairs, 0, src, strlen(src), ss, 4, tgt, strlen(tgt), ts, 4, &links,
                                          &n, &cap),
                 NMT_OK);
    CHECK_EQ_INT(n, 0);
    nmt_free(links);

    /* the rows of a batch column: B 2, S 5, column 1, 4 target tokens (rows
     * t = 0..3 of the text; T 5 with EOS) */
    GuidedAlignments *g = NULL;
    CHECK_EQ_INT(guided_alignments_create(&g), NMT_OK);
    if (!g) return;
    int32_t none[] = {0, 0};
    CHECK_EQ_INT(guided_alignments_add(g, none, 0), NMT_OK);
    CHECK_EQ_INT(guided_alignments_add(g, want, 7), NMT_OK);
    CHECK(g->n_pairs == 2 && g->offset[1] == 0 && g->offset[2] == 7, "two pairs");
    CHECK_EQ_INT(guided_alignments_aligned_targets(g), 4);
    enum { B = 2, S = 5, T = 5 };
    for (int reverse = 0; reverse <= 1; reverse++) {
        float rows[T * B * S] = {0};
        guided_align_fill_column(g, 1, 1, B, S, 4, reverse, rows);
        guided_align_fill_column(g, 0, 0, B, S, 4, reverse, rows); /* no links: nothing */
        float expect[T * B * S] = {0};
        for (int t = 0; t < 4; t++) {
            int pos = reverse ? 3 - t : t;
            float *row = expect + ((size_t)pos * B + 1) * S;
            if (t == 0) row[3] = 1.0f;
            else row[0] = row[1] = 0.5f;
        }
        CHECK(!memcmp(rows, expect, sizeof rows), "fill_column (reverse %d)", reverse);
    }

    /* the cache file */
    char path[1024];
    snprintf(path, sizeof path, "%s/train.aln", test_tmpdir());
    CHECK_EQ_INT(guided_alignments_save(g, path), NMT_OK);
    GuidedAlignments *back = NULL;
    CHECK_EQ_INT(guided_alignments_load(path, &back), NMT_OK);
    CHECK(back && back->n_pairs == 2 && back->offset[2] == 7 && !memcmp(back->links, want, sizeof want),
          "round trip");
    guided_alignments_free(back);
    char *bytes = NULL;
    size_t size = 0;
    CHECK_EQ_INT(file_read_all(path, &bytes, &size), NMT_OK);
    for (size_t at = 0; bytes && at < size; at += 7) { /* any byte changed, or the file cut short */
        char *copy = malloc(size);
        memcpy(copy, bytes, size);
        copy[at] ^= 0x10;
        const char *p = test_write_file(test_tmpdir(), "bad.aln", copy, size);
        back = NULL;
        nmt_error_clear();
        CHECK(guided_alignments_load(p, &back) == NMT_ERR_FORMAT && back == NULL &&
                  strstr(nmt_error_message(), "bad.aln") != NULL,
              "byte %zu changed: %s", at, nmt_error_message());
        p = test_write_file(test_tmpdir(), "short.aln", bytes, at);
        nmt_error_clear();
        CHECK(guided_alignments_load(p, &back) == NMT_ERR_FORMAT, "cut at %zu: %s", at, nmt_error_message());
        free(copy);
    }
    nmt_free(bytes);
    nmt_error_clear();

    /* against a dataset: pair counts and token counts */
    Dataset *d = NULL;
    CHECK_EQ_INT(dataset_create(&d), NMT_OK);
    int32_t ids[] = {5, 6, 7, 8, 9};
    dataset_add(d, ids, 2, ids, 3, 1);
    dataset_add(d, ids, 4, ids, 4, 2);
    CHECK_EQ_INT(guided_alignments_check(g, d, "x.aln"), NMT_OK);
    dataset_add(d, ids, 1, ids, 1, 3);
    CHECK_EQ_INT(guided_alignments_check(g, d, "x.aln"), NMT_ERR_FORMAT);
    dataset_free(d);
    d = NULL;
    CHECK_EQ_INT(dataset_create(&d), NMT_OK);
    dataset_add(d, ids, 2, ids, 3, 1);
    dataset_add(d, ids, 3, ids, 4, 2); /* pair 1 links source token 3 */
    nmt_error_clear();
    CHECK(guided_alignments_check(g, d, "x.aln") == NMT_ERR_FORMAT && strstr(nmt_error_message(), "x.aln: pair 1"),
          "a link past the tokens: %s", nmt_error_message());
    nmt_error_clear();
    dataset_free(d);
    guided_alignments_free(g);
}

int main(void) {
    parsing();
    mapping();
    return test_summary("test_guided_align");
}
