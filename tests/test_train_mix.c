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

/* train_mix_build of epoch 0 with every extra corpus at weight 1 (the
 * mix of data.extra_src without data.extra_weight). */
static NmtStatus build_plain(TrainMix *m, const Dataset *train, const GuidedAlignments *g, int upsample,
                             const Dataset *const *extra, int n_extra, const Dataset **out,
                             const GuidedAlignments **out_align) {
    double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    TrainMixParts p = {train, g, upsample, extra, ones, n_extra, 1};
    return train_mix_build(m, &p, 0, out, out_align);
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

    CHECK_EQ_INT(build_plain(m, train, NULL, 1, NULL, 0, &out, &out_align), NMT_OK);
    CHECK(out_align == NULL, "a mix without links hands out no links");
    check_mix("up 1, no extra", out, NULL, 1, 9, 1, 0);

    CHECK_EQ_INT(build_plain(m, train, NULL, 3, NULL, 0, &out, NULL), NMT_OK);
    check_mix("up 3, no extra", out, NULL, 1, 9, 3, 0);

    CHECK_EQ_INT(build_plain(m, train, NULL, 1, (const Dataset *const[]){extra}, 1, &out, NULL), NMT_OK);
    check_mix("up 1, extra", out, NULL, 1, 9, 1, 5);

    CHECK_EQ_INT(build_plain(m, train, NULL, 3, (const Dataset *const[]){extra}, 1, &out, NULL), NMT_OK);
    check_mix("up 3, extra", out, NULL, 1, 9, 3, 5);
    const Dataset *first = out;

    /* a rebuild of other, smaller inputs (another epoch's segmentation):
     * the pairs of the previous mix are gone, nothing is left over */
    Dataset *train2 = make_corpus(2, 0, 4), *extra2 = make_corpus(2, 1, 2);
    CHECK_EQ_INT(build_plain(m, train2, NULL, 2, (const Dataset *const[]){extra2}, 1, &out, NULL), NMT_OK);
    check_mix("rebuild smaller", out, NULL, 2, 4, 2, 2);
    CHECK(out == first, "the mix's dataset is reused (valid until the next build)");
    /* and larger again, without the extra corpus */
    CHECK_EQ_INT(build_plain(m, train, NULL, 3, NULL, 0, &out, NULL), NMT_OK);
    check_mix("rebuild larger, no extra", out, NULL, 1, 9, 3, 0);
    /* a one-pair training corpus and a large upsample */
    Dataset *one = make_corpus(3, 0, 1);
    Dataset *extra3 = make_corpus(3, 1, 2);
    CHECK_EQ_INT(build_plain(m, one, NULL, 1000, (const Dataset *const[]){extra3}, 1, &out, NULL), NMT_OK);
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

    CHECK_EQ_INT(build_plain(m, train, g, 1, NULL, 0, &out, &out_align), NMT_OK);
    CHECK(out_align != NULL, "a mix with links hands them out");
    check_mix("links, up 1, no extra", out, out_align, 4, 10, 1, 0);

    CHECK_EQ_INT(build_plain(m, train, g, 3, NULL, 0, &out, &out_align), NMT_OK);
    check_mix("links, up 3, no extra", out, out_align, 4, 10, 3, 0);

    CHECK_EQ_INT(build_plain(m, train, g, 1, (const Dataset *const[]){extra}, 1, &out, &out_align), NMT_OK);
    check_mix("links, up 1, extra", out, out_align, 4, 10, 1, 6);

    CHECK_EQ_INT(build_plain(m, train, g, 3, (const Dataset *const[]){extra}, 1, &out, &out_align), NMT_OK);
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
    CHECK_EQ_INT(build_plain(m, train2, g2, 2, (const Dataset *const[]){extra2}, 1, &out, &out_align), NMT_OK);
    check_mix("links, rebuild smaller", out, out_align, 5, 3, 2, 1);
    CHECK_EQ_INT(build_plain(m, train, g, 2, NULL, 0, &out, &out_align), NMT_OK);
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
    CHECK_EQ_INT(build_plain(m, train, NULL, 2, (const Dataset *const[]){x1, x2}, 2, &out, NULL), NMT_OK);
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
    CHECK_EQ_INT(build_plain(m, train, NULL, 1, (const Dataset *const[]){x2, x1}, 2, &out, NULL), NMT_OK);
    if (out && out->n_pairs == N_TRAIN + N_X1 + N_X2) {
        int bad = 0;
        for (int i = 0; i < N_X2; i++) bad += !same_pair(out, N_TRAIN + i, 4, 2, i);
        for (int i = 0; i < N_X1; i++) bad += !same_pair(out, N_TRAIN + N_X2 + i, 4, 1, i);
        CHECK(bad == 0, "the list's order: %d pairs out of place", bad);
    } else {
        CHECK(0, "the list's order: %lld pairs", out ? (long long)out->n_pairs : -1LL);
    }
    CHECK_EQ_INT(build_plain(m, train, NULL, 1, (const Dataset *const[]){x2}, 1, &out, NULL), NMT_OK);
    CHECK(out && out->n_pairs == N_TRAIN + N_X2 && same_pair(out, N_TRAIN, 4, 2, 0),
          "a rebuild with one extra corpus holds its pairs only");
    dataset_free(train);
    dataset_free(x1);
    dataset_free(x2);
    train_mix_free(m);
}

/* Which pair of corpus `corpus` (seed, n pairs) pair `at` of d is, by its
 * line number and contents; -1 when none. */
static int pair_of(const Dataset *d, int64_t at, int seed, int corpus, int n) {
    for (int i = 0; i < n; i++)
        if (d->line_no[at] == line_of(seed, corpus, i)) return same_pair(d, at, seed, corpus, i) ? i : -1;
    return -1;
}

/* data.extra_weight: a corpus of n pairs and weight w gives each epoch
 * floor(w) copies of every pair, then its share of a stream of shuffled
 * rounds: floor(e f n) to floor((e+1) f n), so floor(f n) or ceil(f n)
 * pairs an epoch, every pair once a round, the rounds in new orders; the
 * same mix for the same (seed, epoch) whatever was built before, another
 * with another seed; train_mix_max_pairs bounds every epoch. */
static void test_weights(void) {
    enum { N_TRAIN = 4, N_X = 10, EPOCHS = 12 };
    Dataset *train = make_corpus(6, 0, N_TRAIN), *x = make_corpus(6, 1, N_X), *y = make_corpus(6, 2, 3);
    const Dataset *extra[2] = {x, y};
    double weight[2] = {0.3, 1};
    TrainMixParts p = {train, NULL, 2, extra, weight, 2, 42};
    TrainMix *m = NULL, *m2 = NULL;
    CHECK_EQ_INT(train_mix_create(0, &m), NMT_OK);
    CHECK_EQ_INT(train_mix_create(0, &m2), NMT_OK);
    if (!m || !m2) return;
    CHECK(train_mix_varies(&p), "a weight of 0.3 varies");
    /* an epoch's share: floor((e+1) * 3) - floor(e * 3) = 3 for f n = 3 */
    for (int e = 0; e < 5; e++) CHECK_EQ_INT(train_mix_share(N_X, 0.3, e), 3);
    /* f n = 2.5: 2 or 3 an epoch, 10 in four epochs */
    int64_t four = 0;
    for (int e = 0; e < 4; e++) {
        int64_t k = train_mix_share(10, 0.25, e);
        CHECK(k == 2 || k == 3, "share of 0.25 x 10 in epoch %d: %lld", e, (long long)k);
        four += k;
    }
    CHECK_EQ_INT(four, 10);
    CHECK_EQ_INT(train_mix_share(7, 2, 5), 0);
    CHECK_EQ_INT(train_mix_share(1, 0.001, 0), 0);
    CHECK_EQ_INT(train_mix_share(1, 0.001, 999), 1); /* a one-pair corpus comes once in 1000 epochs */
    int64_t max_pairs = train_mix_max_pairs(&p);
    CHECK_EQ_INT(max_pairs, 2 * N_TRAIN + 3 + 3);

    int count[N_X] = {0}, round0[N_X], round1[N_X], bad = 0;
    int stream[EPOCHS * 3];
    for (int e = 0; e < EPOCHS; e++) {
        const Dataset *out = NULL;
        CHECK_EQ_INT(train_mix_build(m, &p, e, &out, NULL), NMT_OK);
        if (!out) break;
        int64_t want = 2 * N_TRAIN + train_mix_share(N_X, 0.3, e) + 3;
        CHECK(out->n_pairs == want && out->n_pairs <= max_pairs, "epoch %d: %lld pairs, expected %lld", e,
              (long long)out->n_pairs, (long long)want);
        if (out->n_pairs != want) continue;
        for (int i = 0; i < 2 * N_TRAIN; i++) bad += !same_pair(out, i, 6, 0, i % N_TRAIN);
        for (int i = 0; i < 3; i++) { /* the weight-1 corpus, whole, after the weighted one */
            bad += !same_pair(out, want - 3 + i, 6, 2, i);
        }
        for (int i = 0; i < 3; i++) {
            int which = pair_of(out, 2 * N_TRAIN + i, 6, 1, N_X);
            if (which < 0) {
                bad++;
                continue;
            }
            stream[e * 3 + i] = which;
            count[which]++;
        }
        /* built again, after another epoch, and by another mix: the same */
        if (e == 5) {
            const Dataset *again = NULL;
            CHECK_EQ_INT(train_mix_build(m2, &p, 11, &again, NULL), NMT_OK);
            CHECK_EQ_INT(train_mix_build(m2, &p, 5, &again, NULL), NMT_OK);
            int same = again && again->n_pairs == out->n_pairs;
            for (int64_t i = 0; same && i < out->n_pairs; i++) same = again->line_no[i] == out->line_no[i];
            CHECK(same, "epoch 5 built anew by another mix is the same");
        }
    }
    CHECK(bad == 0, "%d pairs out of place in the weighted epochs", bad);
    /* 12 epochs x 3 = 36 stream positions: rounds 0-2 whole (every pair 3
     * times), then 6 of round 3 */
    int whole = 1;
    for (int i = 0; i < N_X; i++) whole &= count[i] == 3 || count[i] == 4;
    int fours = 0;
    for (int i = 0; i < N_X; i++) fours += count[i] == 4;
    CHECK(whole && fours == 6, "each pair 3 times in 3 rounds, 6 of them once more (%d)", fours);
    /* each round holds every pair once, and rounds differ in order */
    int in_round = 1, differs = 0;
    for (int r = 0; r < 3; r++) {
        int seen[N_X] = {0};
        for (int i = 0; i < N_X; i++) seen[stream[r * N_X + i]]++;
        for (int i = 0; i < N_X; i++) in_round &= seen[i] == 1;
    }
    for (int i = 0; i < N_X; i++) round0[i] = stream[i], round1[i] = stream[N_X + i];
    for (int i = 0; i < N_X; i++) differs |= round0[i] != round1[i];
    CHECK(in_round, "every round of the stream holds every pair once");
    CHECK(differs, "rounds 0 and 1 come in different orders");
    /* another seed: another order */
    TrainMixParts q = p;
    q.seed = 43;
    const Dataset *out = NULL;
    int other = 0;
    for (int e = 0; e < 3; e++) {
        CHECK_EQ_INT(train_mix_build(m, &q, e, &out, NULL), NMT_OK);
        for (int i = 0; out && i < 3; i++) other |= pair_of(out, 2 * N_TRAIN + i, 6, 1, N_X) != stream[e * 3 + i];
    }
    CHECK(other, "seed 43 draws another order than seed 42");
    /* weight 2.5: two whole copies in order, then the share of 0.5 */
    weight[0] = 2.5;
    CHECK_EQ_INT(train_mix_build(m, &p, 1, &out, NULL), NMT_OK);
    int64_t want = 2 * N_TRAIN + 2 * N_X + 5 + 3;
    CHECK(out && out->n_pairs == want, "weight 2.5: %lld pairs, expected %lld", out ? (long long)out->n_pairs : -1LL,
          (long long)want);
    if (out && out->n_pairs == want) {
        int copies_bad = 0, seen[N_X] = {0};
        for (int i = 0; i < 2 * N_X; i++) copies_bad += !same_pair(out, 2 * N_TRAIN + i, 6, 1, i % N_X);
        for (int i = 0; i < 5; i++) {
            int which = pair_of(out, 2 * N_TRAIN + 2 * N_X + i, 6, 1, N_X);
            if (which >= 0) seen[which]++;
            else copies_bad++;
        }
        for (int i = 0; i < N_X; i++) copies_bad += seen[i] > 1;
        CHECK(copies_bad == 0, "weight 2.5: %d pairs out of place", copies_bad);
    }
    CHECK_EQ_INT(train_mix_max_pairs(&p), 2 * N_TRAIN + 2 * N_X + 5 + 3);
    /* whole weights do not vary */
    weight[0] = 3;
    CHECK(!train_mix_varies(&p), "whole weights give every epoch the same pairs");
    CHECK_EQ_INT(train_mix_max_pairs(&p), 2 * N_TRAIN + 3 * N_X + 3);
    dataset_free(train);
    dataset_free(x);
    dataset_free(y);
    train_mix_free(m);
    train_mix_free(m2);
}

int main(void) {
    nmt_log_quiet(1);
    test_without_links();
    test_with_links();
    test_several_extras();
    test_weights();
    return test_summary("test_train_mix");
}
