/* trainer.h: `nmt train`: the training loop around the model, with
 * validation (perplexity and greedy BLEU), checkpoints (last, best, the
 * last K steps), exact resume, train.csv, early stopping, the NaN guard,
 * the progress line, and a clean stop on SIGINT/SIGTERM.
 *
 * Determinism: the batch order of epoch e depends on (seed, e) only and the
 * dropout masks of update t on (seed, t) only, so a run resumed from a
 * checkpoint repeats the losses of an uninterrupted run exactly (same
 * machine and thread count). */
#ifndef NMT_TRAIN_TRAINER_H
#define NMT_TRAIN_TRAINER_H

#include "config.h"

typedef struct {
    int resume;          /* continue from save_dir/last.nmt */
    int overwrite;       /* start afresh over an earlier run in save_dir, removing its files
                          * (without it and --resume, an earlier run there is refused) */
    int quiet;           /* no progress output (tests) */
} TrainOptions;

/* Runs training as cfg says. Returns NMT_OK when training ended normally
 * (epochs, max_steps or early stopping) and NMT_ERR_RUNTIME, with the
 * checkpoint saved, when interrupted by a signal. */
NmtStatus train_run(const Config *cfg, const TrainOptions *opt);

#endif
