/* train_mix.c: an epoch's training pairs from data.train_src (upsampled)
 * and data.extra_src's corpora (train_mix.h). */
#include "data/train_mix.h"

struct TrainMix {
    Dataset *d;
    GuidedAlignments *g; /* NULL: the mix carries no links */
};

NmtStatus train_mix_create(int with_align, TrainMix **out) {
    *out = NULL;
    TrainMix *m = nmt_calloc(1, sizeof *m);
    if (!m) return nmt_fail_nomem("mixing the training corpora");
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
    nmt_free(m);
}

/* Appends every pair of `from`, with its links from `links` (NULL: none). */
static NmtStatus append(TrainMix *m, const Dataset *from, const GuidedAlignments *links) {
    NmtStatus st = NMT_OK;
    for (int64_t i = 0; !st && i < from->n_pairs; i++) {
        st = dataset_add(m->d, dataset_src(from, i), dataset_src_len(from, i), dataset_tgt(from, i),
                         dataset_tgt_len(from, i), from->line_no[i]);
        if (!st && m->g) {
            int64_t at = links ? links->offset[i] : 0;
            int n = links ? (int)(links->offset[i + 1] - at) : 0;
            st = guided_alignments_add(m->g, n ? links->links + 2 * at : NULL, n);
        }
    }
    return st;
}

NmtStatus train_mix_build(TrainMix *m, const Dataset *train, const GuidedAlignments *train_align, int upsample,
                          const Dataset *const *extra, int n_extra, const Dataset **out,
                          const GuidedAlignments **out_align) {
    NMT_ASSERT(upsample >= 1 && !train_align == !m->g && (!train_align || train_align->n_pairs == train->n_pairs));
    *out = NULL;
    if (out_align) *out_align = NULL;
    m->d->n_pairs = 0; /* offsets[0] stays 0: the pairs are appended anew */
    if (m->g) m->g->n_pairs = 0;
    NmtStatus st = NMT_OK;
    for (int k = 0; !st && k < upsample; k++) st = append(m, train, train_align);
    for (int k = 0; !st && k < n_extra; k++) st = append(m, extra[k], NULL);
    if (st) return st;
    *out = m->d;
    if (out_align) *out_align = m->g;
    return NMT_OK;
}
