/* train_mix.h: the pairs an epoch trains on, from the prepared corpora:
 * every pair of data.train_src data.train_upsample times over (copies one
 * after the other), then every pair of each data.extra_src corpus once, in
 * their order; under guided alignment with their token links, none for the
 * extra pairs (they have no word alignment: the guided loss leaves them
 * out).
 *
 * The batcher shuffles the mix like any dataset. With subword sampling
 * the parts are each epoch's own segmentations of the corpora, and the
 * copies of a data.train_src pair share its epoch's segmentation. */
#ifndef NMT_DATA_TRAIN_MIX_H
#define NMT_DATA_TRAIN_MIX_H

#include "common.h"
#include "data/dataset.h"
#include "data/guided_align.h"

typedef struct TrainMix TrainMix;

/* An empty mix; with_align: it carries token links too. */
NmtStatus train_mix_create(int with_align, TrainMix **out);
void train_mix_free(TrainMix *m); /* NULL is a no-op */

/* Builds the mix anew: `upsample` (>= 1) copies of train's pairs, then
 * those of extra[0..n_extra). train_align: train's links, given exactly when the
 * mix carries links. *out (and *out_align, NULL without links) belong to
 * the mix and stay valid until its next build or its free. Line numbers
 * are each corpus's own. */
NmtStatus train_mix_build(TrainMix *m, const Dataset *train, const GuidedAlignments *train_align, int upsample,
                          const Dataset *const *extra, int n_extra, const Dataset **out,
                          const GuidedAlignments **out_align);

#endif
