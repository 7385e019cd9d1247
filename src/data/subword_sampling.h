/* subword_sampling.h: subword regularization of the training corpus
 * (data.spm_sample_alpha, data.spm_sample_sides): every epoch trains on its
 * own random segmentation of each training pair, drawn by SentencePiece
 * (tokenizer_sample_encode_buf: unigram lattice sampling, or BPE-dropout).
 *
 * Reproducible: the draw for one side of one pair is keyed by (train.seed,
 * epoch, the pair's corpus line, side), so an epoch's segmentation is the
 * same on every run, after --resume, and with any number of threads.
 *
 * The sentences are the training corpus's lines of the pairs that the
 * prepared dataset kept (Dataset.line_no), read once when the sampler is
 * made; their best segmentations must equal the dataset's ids, else the
 * cache does not belong to the files (an error naming the file and line).
 * A draw whose length falls outside the shortest and longest length of its
 * side in the prepared dataset keeps the best segmentation for that side,
 * so the batcher's limits (and the memory sized by them) hold and no side
 * exceeds data.max_len; the epoch's statistics count such sides.
 *
 * Guided alignment (data.train_align) maps each pair's word alignment onto
 * every epoch's segmentation: the words a drawn token covers come from its
 * bytes in the sentence (SentencePiece's spans of the draw), as for the
 * best segmentation in the prepared cache (guided_align.h), so a word
 * drawn as several pieces links each of them. */
#ifndef NMT_DATA_SUBWORD_SAMPLING_H
#define NMT_DATA_SUBWORD_SAMPLING_H

#include <signal.h>
#include <stdint.h>

#include "common.h"
#include "config.h"
#include "data/dataset.h"
#include "data/guided_align.h"
#include "data/tokenizer.h"

typedef struct SubwordSampler SubwordSampler;

/* What one epoch's segmentation came to. */
typedef struct {
    int64_t src_tokens, tgt_tokens;           /* sampled dataset */
    int64_t best_src_tokens, best_tgt_tokens; /* the prepared (best) dataset */
    int64_t kept_best;                        /* sampled sides outside the length range */
    int64_t links, best_links;                /* guided alignment's token links: sampled, best */
    double seconds;                           /* wall time of the draw */
} SubwordEpochStats;

/* Reads the training corpus (cfg->data.train_src/train_tgt) for the pairs
 * of `train` and checks them against it. cfg gives the alpha, the sides and
 * train.seed; the tokenizers and `train` are borrowed and must outlive the
 * sampler. NMT_ERR_CONFIG for a word tokenizer or a BPE alpha of 1 or more
 * (naming data.spm_sample_alpha, and train.init_from when it is set: its
 * tokenizers are the ones used).
 *
 * stop (may be NULL; borrowed for the sampler's life): a signal handler's
 * flag (nmt train's SIGINT/SIGTERM). The check here and each epoch's draw
 * poll it between pairs, so a signal does not wait for a whole pass over
 * the corpus (minutes on a large one); once it is non-zero they return
 * NMT_STOPPED. A stopped draw leaves the epoch's dataset unusable until
 * the next subword_sampler_epoch that completes.
 *
 * train_align (may be NULL; borrowed): the token links of `train` (the
 * prepared cache's train.aln) when training with guided alignment: the
 * sampler then reads cfg's data.train_align lines of the pairs too, and
 * checks that they map onto the best segmentation as train_align holds
 * (an error naming the file and line when not). */
NmtStatus subword_sampler_create(const Config *cfg, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                                 const Dataset *train, const GuidedAlignments *train_align,
                                 const volatile sig_atomic_t *stop, SubwordSampler **out);
/* The same for extra corpus k of data.extra_src/tgt (0-based; cfg must
 * give it): `extra` is its prepared dataset, whose sources were encoded
 * with its data.extra_tag and a space before them, as the sampler reads
 * them. No guided alignment (the extra pairs have no word alignment). Its
 * draws' keys differ from every other corpus's for the same line. */
NmtStatus subword_sampler_create_extra(const Config *cfg, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                                       const Dataset *extra, int k, const volatile sig_atomic_t *stop,
                                       SubwordSampler **out);
void subword_sampler_free(SubwordSampler *s); /* NULL is a no-op */

/* The segmentation of `epoch` (from 0) in *out: the same pairs as the
 * prepared dataset, in its order, with its line numbers. Owned by the
 * sampler, valid until its next call or its free. stats may be NULL.
 * NMT_STOPPED when the stop flag was set (see subword_sampler_create). */
NmtStatus subword_sampler_epoch(SubwordSampler *s, int64_t epoch, const Dataset **out, SubwordEpochStats *stats);

/* Made with train_align: the token links of the last completed epoch's
 * segmentation (owned by the sampler, valid until its next epoch or its
 * free; the pairs of subword_sampler_epoch's dataset, in its order), else
 * NULL. */
const GuidedAlignments *subword_sampler_alignments(const SubwordSampler *s);

#endif
