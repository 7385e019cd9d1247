/* seq2seq_score.h: teacher-forced scoring of given target sentences (`nmt
 * score`, docs/scoring.md): the log-probability of every target token and
 * of the end-of-sentence token under a model, or under an ensemble (the
 * mean of its members' log-probabilities, as an ensemble decodes).
 *
 * Scores come from the step-by-step decoder of decode_step.h fed the
 * reference tokens, the very steps beam search takes: log-softmax over the
 * output vocabulary without PAD and BOS (which decoding never outputs), no
 * dropout, no label smoothing. So `nmt translate --nbest` (length and
 * coverage penalties 0) and `nmt score` give a hypothesis the same
 * log-probability (up to float rounding), and memory does not grow with
 * the target's length (the decoder keeps two steps; docs/decoding.md).
 * With full_vocab the softmax takes PAD and BOS in as well: the training
 * forward's NLL rows (seq2seq_forward's nll_sum, the validation perplexity).
 *
 * Sizing. Step-by-step decoding needs memory for B sentences of S source
 * tokens (and a little for T steps). A Seq2SeqScorer is made for a base
 * shape (B, S, T), whose cells B * max(S, T) are its budget; a batch that
 * does not fit the models' limits has them made again: as large as the old
 * limits and the batch together when that stays within the budget, else as
 * large as the base and the batch, else exactly the batch's (a long pair,
 * batched with few others by the caller). Making again costs an allocation
 * and an upload of the weights, so callers group long pairs together.
 *
 *   Seq2SeqScorer *sc;
 *   seq2seq_scorer_create(be, dims, weights, n_models, base, &sc);
 *   seq2seq_score_batch(sc, &batch, logp, NULL);   // per batch
 *   seq2seq_scorer_free(sc);
 */
#ifndef NMT_MODEL_SEQ2SEQ_SCORE_H
#define NMT_MODEL_SEQ2SEQ_SCORE_H

#include "backend.h"
#include "data/batch.h"
#include "model/params.h"

typedef struct Seq2SeqScorer Seq2SeqScorer;

/* The shape a scorer is made for, and its budget of cells. */
typedef struct {
    int B, S, T; /* sentences, source tokens, decoder steps (target tokens + 1) */
} ScoreShape;

/* n_models models (an ensemble when n > 1; the same target vocabulary) on
 * be, model k of dims[k] with the host weights weights[k] (layout.total
 * floats each; borrowed: they are uploaded again whenever the model is
 * made again, so they must outlive the scorer). NMT_ERR_NOMEM when the
 * base shape does not fit (backend_explain_nomem adds the device's free
 * memory); NMT_ERR_USAGE
 * when base.B times the vocabulary exceeds the 32-bit index of a row.
 * full_vocab: normalise over PAD and BOS too (above). */
NmtStatus seq2seq_scorer_create(Backend *be, const ModelDims *const *dims, const float *const *weights, int n_models,
                                ScoreShape base, bool full_vocab, Seq2SeqScorer **out);
void seq2seq_scorer_free(Seq2SeqScorer *sc); /* NULL is a no-op */

/* Whether a batch of this shape is within the budget (callers batch so). */
bool seq2seq_scorer_within_budget(const Seq2SeqScorer *sc, ScoreShape shape);

/* Scores batch (B, S, T, src, src_len, tgt_in, tgt_out, tgt_len as
 * data/batch.h lays them out, any column order; src_len >= 1). logp
 * (T, B) host: logp[t * B + b] = the log-probability of tgt_out[t * B + b]
 * for t < tgt_len[b] (the last is EOS's), 0 after. The models are made
 * again first when the batch does not fit them (NMT_ERR_NOMEM when that
 * fails: the scorer is then unusable). As with decoding, a device that
 * failed leaves logp void: the caller checks backend_error before it
 * trusts the values. attn (NULL: not wanted; the first model must have
 * attention) (B, T, S) host: attn[(b * T + t) * S + s] = the first model's
 * attention weight of step t on source token s, heads averaged (as
 * decoding records it; 0 past tgt_len[b]); one download a step. */
NmtStatus seq2seq_score_batch(Seq2SeqScorer *sc, const Batch *batch, float *logp, float *attn);

#endif
