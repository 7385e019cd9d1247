/* checkpoint.h: the one-file checkpoint of a training run: everything
 * needed to translate with the model and to resume training exactly.
 *
 * File layout (little endian):
 *   magic "NMTCKPT\0" (8 bytes), format version (u32), flags (u32, 0),
 *   content length in bytes (u64),
 *   content: a sequence of sections, each tag (u32), length (u64), bytes,
 *   CRC32 (zlib) of every byte before it (u32).
 * Sections (tags in checkpoint.c): the resolved config (JSON text); the
 * source and target tokenizers (tokenizer_serialize bytes); the parameter
 * table (name and shape of every tensor) and the weights (float32, layout
 * order); the optimizer kind and its moments; the training state (step,
 * epoch, batch position, RNG, learning-rate scale, counters); the
 * validation history; with train.ema_decay, the training weights (format
 * 2; the parameter section then holds their moving average). Unknown tags
 * are an error (a newer writer bumps the version). Weights are plain host floats: a checkpoint does not depend on
 * the device it was written on.
 *
 * Saving is atomic (fileio.h): the previous file stays intact until the new
 * one is complete and renamed over it. Loading verifies magic, version,
 * length and checksum before reading anything, and refuses a corrupt,
 * truncated or newer file with a message naming it. */
#ifndef NMT_TRAIN_CHECKPOINT_H
#define NMT_TRAIN_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common.h"

/* The newest format read and written (format 2 adds TRAIN_PARAMS, format 3
 * a chrF to each validation record; a file is written in the oldest format
 * that holds what it carries). */
enum { CHECKPOINT_VERSION = 3, CHECKPOINT_MAX_HISTORY = 100000 };

typedef struct {
    int64_t step;        /* updates done */
    double ppl;          /* validation perplexity */
    double bleu;         /* validation BLEU (negative when not computed) */
    double chrf;         /* validation chrF; NaN when not known (read from a format 1 or 2 file) */
} ValidRecord;

typedef struct {
    int64_t step;             /* updates done */
    int64_t epoch;            /* current epoch (from 0) */
    int64_t batch_index;      /* next batch of that epoch */
    uint64_t rng_state, rng_inc; /* the trainer's RNG (PCG32) */
    double lr_scale;          /* decay factor applied so far (1 at start) */
    int64_t bad_steps;        /* updates skipped in a row for NaN/Inf */
    int64_t evals_since_best; /* validations without improvement */
    double best_metric;       /* best validation metric so far */
    int64_t best_step;
    double tokens_seen;       /* target tokens trained on */
    double seconds;           /* training time so far */
} TrainState;

typedef struct {
    char name[32];
    int32_t count, rows, cols;
} CheckpointTensor;

typedef struct {
    char *config_json;              /* resolved config (nmt_malloc'ed, '\0'-terminated) */
    uint8_t *src_tok, *tgt_tok;     /* serialized tokenizers */
    size_t src_tok_len, tgt_tok_len;
    int n_tensors;
    CheckpointTensor *tensors;      /* (n_tensors) names and shapes, layout order */
    size_t n_floats;                /* sum of count*rows*cols */
    float *params;                  /* (n_floats) the weights a translation uses */
    float *train_params;            /* (n_floats) or NULL: the weights training continues from,
                                       when params holds their moving average (train.ema_decay);
                                       loaded by checkpoint_load only, like the moments */
    int32_t optimizer;              /* CfgOptimizer */
    float *adam_m, *adam_v;         /* (n_floats) each; NULL for sgd or when absent */
    TrainState state;
    int n_history;
    ValidRecord *history;           /* (n_history) */
    /* What the loaders found in the file, whether they loaded it or not
     * (checkpoint_save ignores these): its format version, whether it
     * stores the optimizer's moments, whether it stores TRAIN_PARAMS. */
    uint32_t format;
    bool moments_stored, train_params_stored;
} Checkpoint;

/* A validation's score in train.valid_metric `metric` (CfgValidMetric),
 * higher is better: BLEU, chrF, or minus the perplexity; NaN where the
 * record has none (chrF from a format 1 or 2 file). */
double valid_record_score(const ValidRecord *r, int metric);

/* The record of history[0..n) with the best score in train.valid_metric
 * `metric` (CfgValidMetric: the highest BLEU or chrF, the lowest
 * perplexity; the first of equal ones), records without a score in it
 * (NaN: chrF from a format 1 or 2 file) skipped; -1 when none has one. A
 * validation saves best.nmt only when it beats that record, so best.nmt
 * holds its weights (unless train.valid_metric changed during the run). */
int valid_history_best(const ValidRecord *history, int n, int metric);

/* Writes `ck` to `path` atomically. Errors (a full disk) name the file and
 * leave an existing file at `path` untouched. */
NmtStatus checkpoint_save(const Checkpoint *ck, const char *path);
/* Reads a checkpoint into *ck (every pointer newly allocated); on failure
 * *ck is zeroed and the message names the file and what is wrong. */
NmtStatus checkpoint_load(const char *path, Checkpoint *ck);
/* The same without the optimizer's moments (adam_m, adam_v NULL; the file
 * is checked alike): for translating and averaging, which never use them
 * (they are two thirds of an Adam checkpoint). */
NmtStatus checkpoint_load_weights(const char *path, Checkpoint *ck);
/* Refuses (NMT_ERR_FORMAT, exit 1) a loaded checkpoint whose weights, or
 * optimizer moments when loaded, hold NaN or Inf: the message names the
 * file, the count of non-finite values and the first tensor holding one.
 * The format stores such values as they are; the commands that use a
 * checkpoint (translate, eval --model, average, train --resume) call this
 * after loading. One pass over the floats. */
NmtStatus checkpoint_check_finite(const Checkpoint *ck, const char *path);
/* checkpoint_load_weights, then checkpoint_check_finite: a model to use
 * (translate, score, average, train.init_from). On failure *ck holds
 * nothing. */
NmtStatus checkpoint_load_model(const char *path, Checkpoint *ck);
/* Frees the members (not the struct); a zeroed struct is fine. */
void checkpoint_free(Checkpoint *ck);

#endif
