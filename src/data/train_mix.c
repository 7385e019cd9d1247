/* train_mix.c: an epoch's training pairs from data.train_src (upsampled)
 * and data.extra_src's corpora by their weights (train_mix.h). */
#include "data/train_mix.h"

#include <math.h>

#include "data/rng.h"

struct TrainMix {
    Dataset *d;
    GuidedAlignments *g; /* NULL: the mix carries no links */
    /* the shuffle of one round of one corpus (train_mix.h) */
    int64_t *perm;       /* (cap_perm) */
    int64_t cap_perm;
    int perm_corpus;     /* -1: none yet */
    int64_t perm_round;
};

NmtStatus train_mix_create(int with_align, TrainMix **out) {
    *out = NULL;
    TrainMix *m = nmt_calloc(1, sizeof *m);
    if (!m) return nmt_fail_nomem("mixing the training corpora");
    m->perm_corpus = -1;
    NmtStatus st = dataset_create(&m->d);
    if (!st && with_align) st = guided_alignments_create(&m->g);
    if (st) {
        train_mix_free(m);
        return st;
    }
    *out = m;
    return NMT_OK;
}

void train_mix_free(TrainMix *m) {
    if (!m) return;
    dataset_free(m->d);
    guided_alignments_free(m->g);
    nmt_free(m->perm);
    nmt_free(m);
}

/* Appends pair i of `from`, with its links from `links` (NULL: none). */
static NmtStatus append_pair(TrainMix *m, const Dataset *from, int64_t i, const GuidedAlignments *links) {
    NmtStatus st = dataset_add(m->d, dataset_src(from, i), dataset_src_len(from, i), dataset_tgt(from, i),
                               dataset_tgt_len(from, i), from->line_no[i]);
    if (!st && m->g) {
        int64_t at = links ? links->offset[i] : 0;
        int n = links ? (int)(links->offset[i + 1] - at) : 0;
        st = guided_alignments_add(m->g, n ? links->links + 2 * at : NULL, n);
    }
    return st;
}

/* Appends every pair of `from`. */
static NmtStatus append(TrainMix *m, const Dataset *from, const GuidedAlignments *links) {
    NmtStatus st = NMT_OK;
    for (int64_t i = 0; !st && i < from->n_pairs; i++) st = append_pair(m, from, i, links);
    return st;
}

/* The fraction f = w - floor(w) of weight w, in billionths: a weight is
 * taken to 9 decimals, so 0.3 x 10 pairs is 3 pairs (as a double, 0.3
 * is a little less than 3/10). */
#define FRACTION_UNITS 1000000000
static double fraction(double w) { return w - floor(w); }
static int64_t fraction_units(double w) { return llround(fraction(w) * FRACTION_UNITS); }

/* floor(f n k) in exact integer arithmetic (so that the epochs' shares
 * add up and none exceeds ceil(f n)); ceil_it: ceil instead. */
static int64_t scaled(int64_t n, double w, int64_t k, int ceil_it) {
    unsigned __int128 prod = (unsigned __int128)(uint64_t)fraction_units(w) * (uint64_t)n; /* < 2^30 2^63 */
    NMT_ASSERT(k >= 0 && (uint64_t)k <= (~(unsigned __int128)0) / (prod ? prod : 1)); /* no overflow */
    prod *= (uint64_t)k;
    unsigned __int128 q = prod / FRACTION_UNITS;
    if (ceil_it && prod % FRACTION_UNITS) q++;
    return (int64_t)q;
}

/* Where epoch e starts in the stream of a corpus of n pairs: floor(e f n). */
static int64_t stream_at(int64_t n, double w, int64_t epoch) { return scaled(n, w, epoch, 0); }

int64_t train_mix_share(int64_t n, double w, int64_t epoch) {
    return stream_at(n, w, epoch + 1) - stream_at(n, w, epoch);
}

int train_mix_weight_varies(double w) { return fraction_units(w) > 0; }

int train_mix_varies(const TrainMixParts *p) {
    for (int k = 0; k < p->n_extra; k++)
        if (train_mix_weight_varies(p->extra_weight[k])) return 1;
    return 0;
}

int64_t train_mix_max_pairs(const TrainMixParts *p) {
    int64_t total = (int64_t)p->upsample * p->train->n_pairs;
    for (int k = 0; k < p->n_extra; k++) {
        int64_t n = p->extra[k]->n_pairs;
        double w = p->extra_weight[k];
        total += (int64_t)floor(w) * n + scaled(n, w, 1, 1);
    }
    return total;
}

/* m->perm: the shuffle of round r of corpus k (n pairs). */
static NmtStatus round_shuffle(TrainMix *m, uint64_t seed, int k, int64_t r, int64_t n) {
    if (m->perm_corpus == k && m->perm_round == r) return NMT_OK;
    if (n > m->cap_perm) {
        int64_t *perm = nmt_realloc(m->perm, (size_t)n * sizeof *perm);
        if (!perm) return nmt_fail_nomem("drawing the pairs of a weighted corpus");
        m->perm = perm, m->cap_perm = n;
    }
    for (int64_t i = 0; i < n; i++) m->perm[i] = i;
    Rng rng; /* keyed apart from the batcher's (seed, epoch) streams */
    rng_seed(&rng, rng_mix64(seed ^ 0x6578747261776774ULL), ((uint64_t)k << 48) ^ (uint64_t)r);
    rng_shuffle_i64(&rng, m->perm, n);
    m->perm_corpus = k, m->perm_round = r;
    return NMT_OK;
}

/* Appends extra corpus k's pairs of `epoch` by its weight. */
static NmtStatus append_weighted(TrainMix *m, const TrainMixParts *p, int k, int64_t epoch) {
    const Dataset *from = p->extra[k];
    double w = p->extra_weight[k];
    int64_t n = from->n_pairs;
    NmtStatus st = NMT_OK;
    for (int64_t c = 0; !st && c < (int64_t)floor(w); c++) st = append(m, from, NULL);
    int64_t end = stream_at(n, w, epoch + 1);
    for (int64_t at = stream_at(n, w, epoch); !st && at < end; at++) {
        st = round_shuffle(m, p->seed, k, at / n, n);
        if (!st) st = append_pair(m, from, m->perm[at % n], NULL);
    }
    return st;
}

NmtStatus train_mix_build(TrainMix *m, const TrainMixParts *p, int64_t epoch, const Dataset **out,
                          const GuidedAlignments **out_align) {
    NMT_ASSERT(p->upsample >= 1 && !p->train_align == !m->g &&
               (!p->train_align || p->train_align->n_pairs == p->train->n_pairs) && epoch >= 0);
    *out = NULL;
    if (out_align) *out_align = NULL;
    m->d->n_pairs = 0; /* offsets[0] stays 0: the pairs are appended anew */
    if (m->g) m->g->n_pairs = 0;
    NmtStatus st = NMT_OK;
    for (int k = 0; !st && k < p->upsample; k++) st = append(m, p->train, p->train_align);
    for (int k = 0; !st && k < p->n_extra; k++) st = append_weighted(m, p, k, epoch);
    if (st) return st;
    *out = m->d;
    if (out_align) *out_align = m->g;
    return NMT_OK;
}
