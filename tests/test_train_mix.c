/* test_train_mix.c: the pairs an epoch trains on (train_mix.h): the
 * training pairs data.train_upsample times over, in order, then the extra
 * corpus's pairs; the training pairs' token links copied for each copy and
 * no links for the extra pairs; a rebuild replacing the previous mix
 * entirely (with other inputs, fewer or more pairs). The expected mix is
 * recomputed here from the formulas that made the inputs, never read back
 * from the code under test. */
#include <stdint.h>

#include "common.h"
#include "data/dataset.h"
#include "data/guided_align.h"
#include "data/train_mix.h"
#include "test_util.h"

/* The ids of an input pair, a function of (corpus, pair, side, position):
 * corpus 0 is the training corpus, 1 the extra one (seed tells inputs of
 * different builds apart). */
static int32_t tok(int seed, int corpus, int pair, int side, int pos) {
    return NMT_N_SPECIAL + (int32_t)((seed * 7919 + corpus * 1009 + pair * 101 + side * 37 + pos * 3) % 5000);
}
static int src_len(int seed, int corpus, int pair) { return 1 + (pair * 3 + seed + corpus) % 6; }
static int tgt_len(int seed, int corpus, int pair) { return 1 + (pair * 5 + 2 * seed + corpus) % 7; }
static int64_t line_of(int seed, int corpus, int pair) { return 1 + 2 * pair + (corpus ? 500 : 0) + seed * 10000; }
/* the links of training pair `pair`: pair % 4 of them (pair 0 and 4: none),
 * link k joins source k % src_len and target (k + 1) % tgt_len */
static int n_links_of(int pair) { return pair % 4; }
static void link_of(int seed, int pair, int k, int32_t *s, int32_t *t) {
    *s = k % src_len(seed, 0, pair);
    *t = (k + 1) % tgt_len(seed, 0, pair);
}

/* A corpus of n pairs by the formulas above. */
static Dataset *make_corpus(int seed, int corpus, int n) {
    Dataset *d = NULL;
    CHECK_EQ_INT(dataset_create(&d), NMT_OK);
    int32_t s[16], t[16];
    for (int i = 0; i < n; i++) {
        int ns = src_len(seed, corpus, i), nt = tgt_len(seed, corpus, i);
        for (int j = 0; j < ns; j++) s[j] = tok(seed, corpus, i, 0, j);
        for (int j = 0; j < nt; j++) t[j] = tok(seed, corpus, i, 1, j);
        CHECK_EQ_INT(dataset_add(d, s, ns, t, nt, line_of(seed, corpus, i)), NMT_OK);
    }
    return d;
}

static GuidedAlignments *make_links(int seed, int n) {
    GuidedAlignments *g = NULL;
    CHECK_EQ_INT(guided_alignments_create(&g), NMT_OK);
    int32_t pairs[16];
    for (int i = 0; i < n; i++) {
        int nl = n_links_of(i);
        for (int k = 0; k < nl; k++) link_of(seed, i, k, &pairs[2 * k], &pairs[2 * k + 1]);
        CHECK_EQ_INT(guided_alignments_add(g, nl ? pairs : NULL, nl), NMT_OK);
    }
    return g;
}

/* 1 when pair `at` of d is pair `pair` of corpus `corpus` (seed) as made by
 * make_corpus: lengths, every id and the line number. */
static int same_pair(const Dataset *d, int64_t at, int seed, int corpus, int pair) {
    int ns = src_len(seed, corpus, pair), nt = tgt_len(seed, corpus, pair);
    if (dataset_src_len(d, at) != ns || dataset_tgt_len(d, at) != nt) return 0;
    if (d->line_no[at] != line_of(seed, corpus, pair)) return 0;
    for (int j = 0; j < ns; j++)
        if (dataset_src(d, at)[j] != tok(seed, corpus, pair, 0, j)) return 0;
    for (int j = 0; j < nt; j++)
        if (dataset_tgt(d, at)[j] != tok(seed, corpus, pair, 1, j)) return 0;
    return 1;
}

/* Checks a built mix against n_train training pairs (seed) `upsample`
 * times, then n_extra extra pairs (0: extra was NULL); links: the mix's
 * links (NULL: a mix without links). */
static void check_mix(const char *what, const Dataset *out, const GuidedAlignments *links, int seed, int n_train,
                      int upsample, int n_extra) {
    int64_t want = (int64_t)n_train * upsample + n_extra;
    CHECK(out != NULL, "%s: no dataset", what);
    if (!out) return;
    CHECK(out->n_pairs == want, "%s: %lld pairs, expected %lld", what, (long long)out->n_pairs, (long long)want);
    if (out->n_pairs != want) return;
    /* the offsets are consistent: each starts where the last ended, from 0 */
    int64_t src_total = 0, tgt_total = 0;
    for (int k = 0; k < upsample; k++)
        for (int i = 0; i < n_train; i++) src_total += src_len(seed, 0, i), tgt_total += tgt_len(seed, 0, i);
    for (int i = 0; i < n_extra; i++) src_total += src_len(seed, 1, i), tgt_total += tgt_len(seed, 1, i);
    CHECK(out->src_offset[0] == 0 && out->tgt_offset[0] == 0, "%s: offsets start at %lld, %lld", what,
          (long long)out->src_offset[0], (long long)out->tgt_offset[0]);
    CHECK(out->src_offset[want] == src_total && out->tgt_offset[want] == tgt_total,
          "%s: %lld source and %lld target ids, expected %lld and %lld", what, (long long)out->src_offset[want],
          (long long)out->tgt_offset[want], (long long)src_total, (long long)tgt_total);
    int bad = 0;
    for (int k = 0; k < upsample; k++)
        for (int i = 0; i < n_train; i++) {
            int64_t at = (int64_t)k * n_train + i;
            if (!same_pair(out, at, seed, 0, i)) {
                if (bad++ < 3) CHECK(0, "%s: pair %lld is not copy %d of training pair %d", what, (long long)at, k, i);
            }
        }
    for (int i = 0; i < n_extra; i++) {
        int64_t at = (int64_t)n_train * upsample + i;
        if (!same_pair(out, at, seed, 1, i)) {
            if (bad++ < 6) CHECK(0, "%s: pair %lld is not extra pair %d", what, (long long)at, i);
        }
    }
    CHECK(bad == 0, "%s: %d pairs differ from the expected mix", what, bad);
    if (!links) return;
    CHECK(links->n_pairs == want, "%s: links of %lld pairs, expected %lld", what, (long long)links->n_pairs,
          (long long)want);
    if (links->n_pairs != want) return;
    int64_t total = 0;
    for (int i = 0; i < n_train; i++) total += n_links_of(i);
    total *= upsample;
    CHECK(links->offset[0] == 0 && links->offset[want] == total, "%s: %lld links (from %lld), expected %lld", what,
          (long long)links->offset[want], (long long)links->offset[0], (long long)total);
    int bad_links = 0;
    for (int64_t at = 0; at < want; at++) {
        int extra = at >= (int64_t)n_train * upsample;
        int pair = extra ? 0 : (int)(at % n_train);
        int nl = extra ? 0 : n_links_of(pair);
        int got = (int)(links->offset[at + 1] - links->offset[at]);
        if (got != nl) {
            if (bad_links++ < 3)
                CHECK(0, "%s: pair %lld has %d links, expected %d%s", what, (long long)at, got, nl,
                      extra ? " (an extra pair has none)" : "");
            continue;
        }
        for (int k = 0; k < nl; k++) {
            int32_t s, t;
            link_of(seed, pair, k, &s, &t);
            const int32_t *l = links->links + 2 * (links->offset[at] + k);
            if (l[0] != s || l[1] != t) {
                if (bad_links++ < 3)
                    CHECK(0, "%s: pair %lld link %d is %d-%d, expected %d-%d", what, (long long)at, k, l[0], l[1], s,
                          t);
            }
        }
    }
    CHECK(bad_links == 0, "%s: %d pairs with wrong links", what, bad_links);
}

/* A mix without links: upsample 1 and 3, extra NULL and given; rebuilds
 * with smaller and larger inputs leave nothing of the previous mix. */
static void test_without_links(void) {
    TrainMix *m = NULL;
    CHECK_EQ_INT(train_mix_create(0, &m), NMT_OK);
    if (!m) return;
    Dataset *train = make_corpus(1, 0, 9), *extra = make_corpus(1, 1, 5);
    const Dataset *out = NULL;
    const GuidedAlignments *out_align = (const GuidedAlignments *)&out; /* not NULL: must become NULL */

    CHECK_EQ_INT(train_mix_build(m, train, NULL, 1, NULL, 0, &out, &out_align), NMT_OK);
    CHECK(out_align == NULL, "a mix without links hands out no links");
    check_mix("up 1, no extra", out, NULL, 1, 9, 1, 0);

    CHECK_EQ_INT(train_mix_build(m, train, NULL, 3, NULL, 0, &out, NULL), NMT_OK);
    check_mix("up 3, no extra", out, NULL, 1, 9, 3, 0);

    CHECK_EQ_INT(train_mix_build(m, train, NULL, 1, (const Dataset *const[]){extra}, 1, &out, NULL), NMT_OK);
    check_mix("up 1, extra", out, NULL, 1, 9, 1, 5);

    CHECK_EQ_INT(train_mix_build(m, train, NULL, 3, (const Dataset *const[]){extra}, 1, &out, NULL), NMT_OK);
    check_mix("up 3, extra", out, NULL, 1, 9, 3, 5);
    const Dataset *first = out;

    /* a rebuild of other, smaller inputs (another epoch's segmentation):
     * the pairs of the previous mix are gone, nothing is left over */
    Dataset *train2 = make_corpus(2, 0, 4), *extra2 = make_corpus(2, 1, 2);
    CHECK_EQ_INT(train_mix_build(m, train2, NULL, 2, (const Dataset *const[]){extra2}, 1, &out, NULL), NMT_OK);
    check_mix("rebuild smaller", out, NULL, 2, 4, 2, 2);
    CHECK(out == first, "the mix's dataset is reused (valid until the next build)");
    /* and larger again, without the extra corpus */
    CHECK_EQ_INT(train_mix_build(m, train, NULL, 3, NULL, 0, &out, NULL), NMT_OK);
    check_mix("rebuild larger, no extra", out, NULL, 1, 9, 3, 0);
    /* a one-pair training corpus and a large upsample */
    Dataset *one = make_corpus(3, 0, 1);
    Dataset *extra3 = make_corpus(3, 1, 2);
    CHECK_EQ_INT(train_mix_build(m, one, NULL, 1000, (const Dataset *const[]){extra3}, 1, &out, NULL), NMT_OK);
    check_mix("one pair, up 1000", out, NULL, 3, 1, 1000, 2);

    dataset_free(one);
    dataset_free(extra3);
    dataset_free(train2);
    dataset_free(extra2);
    dataset_free(train);
    dataset_free(extra);
    train_mix_free(m);
    train_mix_free(NULL);
}

/* A mix with links: each copy of a training pair gets its links, an extra
 * pair none; a rebuild replaces the links too. */
static void test_with_links(void) {
    TrainMix *m = NULL;
    CHECK_EQ_INT(train_mix_create(1, &m), NMT_OK);
    if (!m) return;
    Dataset *train = make_corpus(4, 0, 10), *extra = make_corpus(4, 1, 6);
    GuidedAlignments *g = make_links(4, 10);
    const Dataset *out = NULL;
    const GuidedAlignments *out_align = NULL;

    CHECK_EQ_INT(train_mix_build(m, train, g, 1, NULL, 0, &out, &out_align), NMT_OK);
    CHECK(out_align != NULL, "a mix with links hands them out");
    check_mix("links, up 1, no extra", out, out_align, 4, 10, 1, 0);

    CHECK_EQ_INT(train_mix_build(m, train, g, 3, NULL, 0, &out, &out_align), NMT_OK);
    check_mix("links, up 3, no extra", out, out_align, 4, 10, 3, 0);

    CHECK_EQ_INT(train_mix_build(m, train, g, 1, (const Dataset *const[]){extra}, 1, &out, &out_align), NMT_OK);
    check_mix("links, up 1, extra", out, out_align, 4, 10, 1, 6);

    CHECK_EQ_INT(train_mix_build(m, train, g, 3, (const Dataset *const[]){extra}, 1, &out, &out_align), NMT_OK);
    check_mix("links, up 3, extra", out, out_align, 4, 10, 3, 6);
    /* the mix's links are a copy: the input's are as they were */
    int64_t total = 0;
    for (int i = 0; i < 10; i++) total += n_links_of(i);
    CHECK(g->n_pairs == 10 && g->offset[10] == total, "the input links changed: %lld pairs, %lld links",
          (long long)g->n_pairs, (long long)g->offset[10]);
    CHECK(out_align != g && out != train, "the mix hands out its own copies");

    /* a rebuild with other inputs: smaller, then larger */
    Dataset *train2 = make_corpus(5, 0, 3), *extra2 = make_corpus(5, 1, 1);
    GuidedAlignments *g2 = make_links(5, 3);
    CHECK_EQ_INT(train_mix_build(m, train2, g2, 2, (const Dataset *const[]){extra2}, 1, &out, &out_align), NMT_OK);
    check_mix("links, rebuild smaller", out, out_align, 5, 3, 2, 1);
    CHECK_EQ_INT(train_mix_build(m, train, g, 2, NULL, 0, &out, &out_align), NMT_OK);
    check_mix("links, rebuild larger", out, out_align, 4, 10, 2, 0);

    guided_alignments_free(g2);
    dataset_free(train2);
    dataset_free(extra2);
    guided_alignments_free(g);
    dataset_free(train);
    dataset_free(extra);
    train_mix_free(m);
}

/* Several extra corpora (data.extra_src as a list): the training pairs
 * `upsample` times, then each extra corpus's pairs once, in the list's
 * order; a rebuild with fewer corpora leaves nothing of the others. */
static void test_several_extras(void) {
    TrainMix *m = NULL;
    CHECK_EQ_INT(train_mix_create(0, &m), NMT_OK);
    if (!m) return;
    enum { N_TRAIN = 4, N_X1 = 5, N_X2 = 3 };
    Dataset *train = make_corpus(4, 0, N_TRAIN), *x1 = make_corpus(4, 1, N_X1), *x2 = make_corpus(4, 2, N_X2);
    const Dataset *out = NULL;
    CHECK_EQ_INT(train_mix_build(m, train, NULL, 2, (const Dataset *const[]){x1, x2}, 2, &out, NULL), NMT_OK);
    CHECK(out && out->n_pairs == 2 * N_TRAIN + N_X1 + N_X2, "two extras: %lld pairs, expected %d",
          out ? (long long)out->n_pairs : -1LL, 2 * N_TRAIN + N_X1 + N_X2);
    if (out && out->n_pairs == 2 * N_TRAIN + N_X1 + N_X2) {
        int bad = 0;
        for (int i = 0; i < 2 * N_TRAIN; i++) bad += !same_pair(out, i, 4, 0, i % N_TRAIN);
        for (int i = 0; i < N_X1; i++) bad += !same_pair(out, 2 * N_TRAIN + i, 4, 1, i);
        for (int i = 0; i < N_X2; i++) bad += !same_pair(out, 2 * N_TRAIN + N_X1 + i, 4, 2, i);
        CHECK(bad == 0, "two extras: %d pairs out of place (train x 2, then extra 1, then extra 2)", bad);
    }
    /* the second corpus alone, and in the other order */
    CHECK_EQ_INT(train_mix_build(m, train, NULL, 1, (const Dataset *const[]){x2, x1}, 2, &out, NULL), NMT_OK);
    if (out && out->n_pairs == N_TRAIN + N_X1 + N_X2) {
        int bad = 0;
        for (int i = 0; i < N_X2; i++) bad += !same_pair(out, N_TRAIN + i, 4, 2, i);
        for (int i = 0; i < N_X1; i++) bad += !same_pair(out, N_TRAIN + N_X2 + i, 4, 1, i);
        CHECK(bad == 0, "the list's order: %d pairs out of place", bad);
    } else {
        CHECK(0, "the list's order: %lld pairs", out ? (long long)out->n_pairs : -1LL);
    }
    CHECK_EQ_INT(train_mix_build(m, train, NULL, 1, (const Dataset *const[]){x2}, 1, &out, NULL), NMT_OK);
    CHECK(out && out->n_pairs == N_TRAIN + N_X2 && same_pair(out, N_TRAIN, 4, 2, 0),
          "a rebuild with one extra corpus holds its pairs only");
    dataset_free(train);
    dataset_free(x1);
    dataset_free(x2);
    train_mix_free(m);
}

int main(void) {
    nmt_log_quiet(1);
    test_without_links();
    test_with_links();
    test_several_extras();
    return test_summary("test_train_mix");
}
