/* batch.h: length-bucketed batching of a Dataset with an exactly restorable
 * position.
 *
 * Budgets. A batch of B pairs has S = the longest source and T = the longest
 * target + 1 (the BOS/EOS position). It respects
 *     B <= batch_sentences          (when batch_sentences > 0)
 *     S * B <= batch_tokens  and  T * B <= batch_tokens   (when batch_tokens > 0)
 * i.e. the token budget bounds the PADDED source and the PADDED target cells
 * separately. A single pair that alone exceeds the token budget still forms a
 * batch of one: no pair is ever dropped.
 *
 * Order. With shuffle = 1 the plan of epoch e is a pure function of
 * (seed, e, dataset): the pair indices are shuffled with an Rng seeded by
 * (seed, stream e), cut into pools of about 100 batches' worth, each pool is
 * sorted (stably) by (source length, target length), cut greedily into
 * batches by the budgets, and the batch order of the whole epoch is shuffled
 * with the same Rng. With shuffle = 0 (validation, translation) every epoch is
 * the corpus order cut greedily by the budgets, without sorting.
 * Inside every batch the pairs are ordered by decreasing source length (ties
 * keep the plan order); pair_index gives each column's pair back.
 *
 * Position. The position is (epoch, batch index inside the epoch), the batch
 * that the next batcher_next returns. Saving it and calling batcher_seek on a
 * batcher built from the same dataset and spec continues exactly the same
 * sequence. Epochs count from 0.
 *
 * Memory. Everything is allocated by batcher_create (sized for the largest
 * possible batch); batcher_next and batcher_seek never allocate. */
#ifndef NMT_BATCH_H
#define NMT_BATCH_H

#include <stdint.h>

#include "common.h"
#include "data/dataset.h"
#include "data/guided_align.h"

typedef struct {
    int batch_sentences; /* max pairs per batch, 0 = unlimited */
    int batch_tokens;    /* max padded cells S*B and T*B, 0 = unlimited */
    uint64_t seed;       /* epoch plans derive from (seed, epoch) */
    int shuffle;         /* 1: shuffled length-bucketed; 0: corpus order */
    int reverse_tgt;     /* 1: every target right to left in tgt_in/tgt_out (model.right_to_left) */
} BatchSpec;

/* One batch: memory owned by the batcher, valid until its next call.
 * Column b (0 <= b < B) is pair pair_index[b]. */
typedef struct {
    int B, S, T;
    int32_t *src;        /* (S, B) time-major: src[s*B + b]; PAD from src_len[b] on */
    int *src_len;        /* (B) source lengths, decreasing */
    int32_t *tgt_in;     /* (T, B) BOS, target ids, then PAD */
    int32_t *tgt_out;    /* (T, B) target ids, EOS, then PAD */
    int *tgt_len;        /* (B) target length + 1 (real cells of tgt_in/tgt_out) */
    int64_t *pair_index; /* (B) index of the pair in the dataset */
    int64_t n_src_tokens; /* sum of src_len (unpadded) */
    int64_t n_tgt_tokens; /* sum of tgt_len, i.e. target tokens + one EOS each */
    float *align;        /* (T, B, S) guided alignment (data.train_align): row (t, b) is
                            the distribution over source positions that target position t
                            of column b is aligned to (the aligned positions' share, 1 /
                            their count), all 0 where none is; NULL when the dataset has
                            no alignments */
} Batch;

typedef struct {
    int64_t epoch;       /* from 0 */
    int64_t batch_index; /* next batch to return in that epoch */
} BatchPosition;

/* Upper bounds over every batch this batcher can return (to size arenas). */
typedef struct {
    int max_B, max_S, max_T;
    int64_t max_src_cells; /* max S*B */
    int64_t max_tgt_cells; /* max T*B */
} BatchLimits;

typedef struct Batcher Batcher;

/* Reverses ids[0..n) in place: a right-to-left model's tokens (model.right_to_left)
 * to and from text order. */
void batch_reverse_ids(int32_t *ids, int n);

/* Builds a batcher positioned at (0, 0). The dataset is borrowed: it must
 * outlive the batcher and not change. Fails with NMT_ERR_CONFIG on a bad spec
 * (negative budgets, both 0), NMT_ERR_FORMAT on an empty dataset or a pair
 * with an empty source, NMT_ERR_NOMEM. */
NmtStatus batcher_create(const Dataset *d, const BatchSpec *spec, Batcher **out);
void batcher_free(Batcher *b); /* NULL is a no-op */

/* What every dataset a batcher will be given (batcher_set_dataset) may
 * hold: at most max_pairs pairs, source lengths in [min_src, max_src] and
 * target lengths (without the EOS) in [min_tgt, max_tgt]. Start from
 * {max_pairs} with the lengths 0 and widen the lengths by each corpus
 * with batch_range_add. */
typedef struct {
    int64_t max_pairs;
    int min_src, max_src, min_tgt, max_tgt;
} BatchRange;
void batch_range_add(BatchRange *r, const Dataset *d);

/* batcher_create, sized (limits, memory) for every dataset of `range`
 * (NULL: d's own), which must hold d. The plans' sorting pools are sized
 * from d. */
NmtStatus batcher_create_ranged(const Dataset *d, const BatchSpec *spec, const BatchRange *range, Batcher **out);

/* Batches carry alignment rows (Batch.align) from now on: g's links of
 * the dataset's pairs (borrowed: it must outlive the batcher). Allocates
 * the rows (max T*B cells x max S floats). NMT_ERR_RUNTIME when g is not
 * of the dataset's pairs. batcher_set_dataset then takes a dataset only
 * with its alignments. */
NmtStatus batcher_set_alignments(Batcher *b, const GuidedAlignments *g);

/* Replaces the dataset from the current epoch on (subword sampling gives
 * every epoch its own segmentation of the same pairs, data.extra_weight
 * its own share of a corpus) and rebuilds the current epoch's plan from
 * it; the position stays. `d` is borrowed like the first. It must hold
 * 1 to the first's pairs (or its range's max_pairs), each side's lengths
 * within the first dataset's (or its range's) shortest and longest of
 * that side (so batcher_limits still hold); otherwise NMT_ERR_RUNTIME and
 * nothing changes. g: the new dataset's alignments (borrowed like d), given
 * exactly when the batcher has alignments (batcher_set_alignments), of as
 * many pairs, each link within its pair's lengths. Never allocates. */
NmtStatus batcher_set_dataset(Batcher *b, const Dataset *d, const GuidedAlignments *g);

/* Fills *out with the next batch and sets *got = 1; at the end of an epoch
 * sets *got = 0 and moves to the start of the next epoch, so the call after
 * that returns the first batch of the next epoch. Never allocates. */
void batcher_next(Batcher *b, Batch *out, int *got);

BatchPosition batcher_position(const Batcher *b);
/* Moves to `pos` (rebuilding that epoch's plan). batch_index may equal the
 * epoch's batch count (the end-of-epoch state). Fails with NMT_ERR_FORMAT
 * (naming the position) when the position does not exist. */
NmtStatus batcher_seek(Batcher *b, BatchPosition pos);

/* Looks ahead without moving: the target tokens (Batch.n_tgt_tokens) of
 * the next n batches of the current epoch, summed into *tgt_tokens; returns
 * how many batches that was (fewer than n near the epoch's end, 0 at it).
 * Gradient accumulation divides every batch's gradient by the tokens of
 * the whole update. Never allocates. */
int batcher_peek_tgt_tokens(Batcher *b, int n, int64_t *tgt_tokens);

/* Number of batches in the epoch of the current position. */
int64_t batcher_batches_in_epoch(const Batcher *b);
BatchLimits batcher_limits(const Batcher *b);

#endif
