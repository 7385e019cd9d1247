/* checkpoint_average.h: the element-wise mean of the weights of several
 * checkpoints of one training run (checkpoint averaging: the mean of the last
 * few checkpoints usually translates better than any one of them). */
#ifndef NMT_TRAIN_CHECKPOINT_AVERAGE_H
#define NMT_TRAIN_CHECKPOINT_AVERAGE_H

#include "train/checkpoint.h"

/* Averages in[0..n-1] (n >= 1) into *out: the weights are the element-wise
 * mean (summed in double, in the order given); everything else (config,
 * tokenizers, training state, validation history) is a copy of the newest
 * input, the one with the highest state.step (the first of equals). The
 * optimizer moments are not averaged and are left out, so out is meant for
 * translating (a run resumed from it starts its Adam moments afresh).
 * Refuses inputs whose tensor tables (names, shapes) or tokenizers differ,
 * naming paths[i] (the file of in[i]) and what differs, and an input given
 * twice: the same step and the same weights as an earlier one (best.nmt,
 * last.nmt and step-N.nmt of one step, which a glob of every .nmt matches;
 * they would count twice), naming both (NMT_ERR_USAGE). On failure *out is
 * zeroed. */
NmtStatus checkpoint_average(const Checkpoint *in, const char *const *paths, int n, Checkpoint *out);

/* The same one checkpoint at a time, so that only the running sum (in
 * double) and the checkpoint being added are held (`nmt average`):
 *   init; add each input (ck is not kept: free it after add); finish; free.
 * add refuses an input whose tables differ from the first's, or one given
 * before (path names it; every path must outlive the averager); finish
 * fails without inputs. */
typedef struct {
    int64_t step;
    uint64_t hash; /* of the weights' bytes */
    const char *path;
} CheckpointAveragerInput;
typedef struct {
    Checkpoint meta;        /* the newest input so far, without weights */
    const char *first_path;
    double *sum;            /* (n_floats) */
    int n;
    CheckpointAveragerInput *inputs; /* (n) what was added, to refuse a repeat */
} CheckpointAverager;
void checkpoint_averager_init(CheckpointAverager *a);
NmtStatus checkpoint_averager_add(CheckpointAverager *a, const Checkpoint *ck, const char *path);
NmtStatus checkpoint_averager_finish(CheckpointAverager *a, Checkpoint *out);
void checkpoint_averager_free(CheckpointAverager *a);

#endif
