/* dataset.c: growable storage of a tokenized parallel corpus (dataset.h). */
#include "data/dataset.h"

#include <string.h>

NmtStatus dataset_create(Dataset **out) {
    *out = NULL;
    Dataset *d = nmt_calloc(1, sizeof *d);
    if (!d) return nmt_fail_nomem("creating a dataset");
    d->src_offset = nmt_calloc(1, sizeof *d->src_offset);
    d->tgt_offset = nmt_calloc(1, sizeof *d->tgt_offset);
    if (!d->src_offset || !d->tgt_offset) {
        dataset_free(d);
        return nmt_fail_nomem("creating a dataset");
    }
    *out = d;
    return NMT_OK;
}

void dataset_free(Dataset *d) {
    if (!d) return;
    nmt_free(d->src_offset);
    nmt_free(d->src_ids);
    nmt_free(d->tgt_offset);
    nmt_free(d->tgt_ids);
    nmt_free(d->line_no);
    nmt_free(d);
}

/* Grows *buf (elements of `size` bytes) to hold at least `need` elements. */
static int grow(void **buf, int64_t *capacity, int64_t need, size_t size) {
    if (need <= *capacity) return 1;
    int64_t cap = *capacity ? *capacity : 64;
    while (cap < need) cap *= 2;
    void *p = nmt_realloc(*buf, (size_t)cap * size);
    if (!p) return 0;
    *buf = p;
    *capacity = cap;
    return 1;
}

NmtStatus dataset_add(Dataset *d, const int32_t *src, int src_len,
                      const int32_t *tgt, int tgt_len, int64_t line_no) {
    NMT_ASSERT(src_len >= 0 && tgt_len >= 0);
    int64_t n = d->n_pairs;
    int64_t pair_cap = d->capacity_pairs;
    int64_t src_need = d->src_offset[n] + src_len, tgt_need = d->tgt_offset[n] + tgt_len;
    /* offsets hold n_pairs + 1 entries: grow them by the same pair capacity */
    if (n + 2 > pair_cap) {
        int64_t cap = pair_cap ? pair_cap * 2 : 64;
        int64_t *so = nmt_realloc(d->src_offset, (size_t)cap * sizeof *so);
        if (!so) return nmt_fail_nomem("growing a dataset");
        d->src_offset = so;
        int64_t *to = nmt_realloc(d->tgt_offset, (size_t)cap * sizeof *to);
        if (!to) return nmt_fail_nomem("growing a dataset");
        d->tgt_offset = to;
        int64_t *ln = nmt_realloc(d->line_no, (size_t)cap * sizeof *ln);
        if (!ln) return nmt_fail_nomem("growing a dataset");
        d->line_no = ln;
        d->capacity_pairs = cap;
    }
    if (!grow((void **)&d->src_ids, &d->capacity_src, src_need, sizeof(int32_t)) ||
        !grow((void **)&d->tgt_ids, &d->capacity_tgt, tgt_need, sizeof(int32_t)))
        return nmt_fail_nomem("growing a dataset");
    if (src_len) memcpy(d->src_ids + d->src_offset[n], src, (size_t)src_len * sizeof(int32_t));
    if (tgt_len) memcpy(d->tgt_ids + d->tgt_offset[n], tgt, (size_t)tgt_len * sizeof(int32_t));
    d->src_offset[n + 1] = src_need;
    d->tgt_offset[n + 1] = tgt_need;
    d->line_no[n] = line_no;
    d->n_pairs = n + 1;
    return NMT_OK;
}
