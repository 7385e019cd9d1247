/* train_mix.h: the pairs an epoch trains on, from the prepared corpora:
 * every pair of data.train_src data.train_upsample times over (copies one
 * after the other), then each data.extra_src corpus by its weight
 * (data.extra_weight), in their order; under guided alignment with their
 * token links, none for the extra pairs (they have no word alignment: the
 * guided loss leaves them out).
 *
 * A corpus of n pairs and weight w gives an epoch every pair floor(w)
 * times, then its share of the fraction f = w - floor(w): the corpus's
 * pairs in rounds, each round a new shuffle of them, read as one stream;
 * epoch e takes the stream's positions [floor(e f n), floor((e+1) f n)) (f
 * taken to 9 decimals).
 * So an epoch holds floor(f n) or ceil(f n) of them (f n on average), and
 * every pair comes once before any comes again. The shuffle of round r of
 * corpus k is keyed by (seed, k, r) alone, so an epoch's mix is the same
 * on every run, after --resume, with any thread count.
 *
 * The batcher shuffles the mix like any dataset. With subword sampling
 * the parts are each epoch's own segmentations of the corpora, and the
 * copies of a data.train_src pair share its epoch's segmentation. */
#ifndef NMT_DATA_TRAIN_MIX_H
#define NMT_DATA_TRAIN_MIX_H

#include <stdint.h>

#include "common.h"
#include "data/dataset.h"
#include "data/guided_align.h"

typedef struct TrainMix TrainMix;

/* The corpora of a mix, all borrowed. */
typedef struct {
    const Dataset *train;              /* data.train_src's pairs */
    const GuidedAlignments *train_align; /* their links, or NULL */
    int upsample;                      /* >= 1 */
    const Dataset *const *extra;       /* (n_extra) */
    const double *extra_weight;        /* (n_extra) each in (0, 1000] */
    int n_extra;
    uint64_t seed;                     /* train.seed */
} TrainMixParts;

/* An empty mix; with_align: it carries token links too. */
NmtStatus train_mix_create(int with_align, TrainMix **out);
void train_mix_free(TrainMix *m); /* NULL is a no-op */

/* 1 when weight w has a fraction (to 9 decimals), so that the corpus's
 * share differs from epoch to epoch; train_mix_varies: when some extra
 * corpus's weight has one. */
int train_mix_weight_varies(double w);
int train_mix_varies(const TrainMixParts *p);

/* The most pairs an epoch's mix holds. */
int64_t train_mix_max_pairs(const TrainMixParts *p);

/* Pairs of extra corpus k (n pairs, weight w) that epoch `epoch` takes
 * beyond its floor(w) full copies. */
int64_t train_mix_share(int64_t n, double w, int64_t epoch);

/* Builds the mix of `epoch` (from 0) anew. p->train_align is given exactly
 * when the mix carries links. *out (and *out_align, NULL without links)
 * belong to the mix and stay valid until its next build or its free. Line
 * numbers are each corpus's own. */
NmtStatus train_mix_build(TrainMix *m, const TrainMixParts *p, int64_t epoch, const Dataset **out,
                          const GuidedAlignments **out_align);

#endif
