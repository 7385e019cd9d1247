/* dataset.h: a tokenized parallel corpus in memory, as stored in the binary
 * cache of `nmt prepare` and read by the batcher.
 *
 * Pair i has source ids src_ids[src_offset[i] .. src_offset[i+1]) and target
 * ids tgt_ids[tgt_offset[i] .. tgt_offset[i+1]): plain token ids, without BOS
 * or EOS (the batcher adds them), never empty. line_no[i] is the 1-based line
 * of the pair in the corpus files (for messages). */
#ifndef NMT_DATASET_H
#define NMT_DATASET_H

#include <stdint.h>
#include "common.h"

typedef struct {
    int64_t n_pairs;
    int64_t *src_offset; /* (n_pairs + 1) */
    int32_t *src_ids;    /* (src_offset[n_pairs]) */
    int64_t *tgt_offset; /* (n_pairs + 1) */
    int32_t *tgt_ids;    /* (tgt_offset[n_pairs]) */
    int64_t *line_no;    /* (n_pairs) */
    int64_t capacity_pairs, capacity_src, capacity_tgt;
} Dataset;

/* An empty dataset; pairs are added with dataset_add. */
NmtStatus dataset_create(Dataset **out);
void dataset_free(Dataset *d); /* NULL is a no-op */
/* Appends one pair (copies the ids). */
NmtStatus dataset_add(Dataset *d, const int32_t *src, int src_len,
                      const int32_t *tgt, int tgt_len, int64_t line_no);

/* Binary file: "NMTDATA\x01", n_pairs, n_src_ids, n_tgt_ids (int64 little
 * endian), then src_offset, src_ids, tgt_offset, tgt_ids, line_no as stored
 * in memory, then a CRC32 (zlib) of everything before it. Written
 * atomically. Loading checks magic, sizes, offsets and the checksum, and
 * names the file on any mismatch (ids are checked by the caller, who knows
 * the vocabularies). */
NmtStatus dataset_save(const Dataset *d, const char *path);
NmtStatus dataset_load(const char *path, Dataset **out);

static inline int dataset_src_len(const Dataset *d, int64_t i) {
    return (int)(d->src_offset[i + 1] - d->src_offset[i]);
}
static inline int dataset_tgt_len(const Dataset *d, int64_t i) {
    return (int)(d->tgt_offset[i + 1] - d->tgt_offset[i]);
}
static inline const int32_t *dataset_src(const Dataset *d, int64_t i) {
    return d->src_ids + d->src_offset[i];
}
static inline const int32_t *dataset_tgt(const Dataset *d, int64_t i) {
    return d->tgt_ids + d->tgt_offset[i];
}

#endif
