/* seq2seq.h: the whole encoder-decoder of docs/model.md on a Backend:
 * parameters and gradients in two flat blocks of the ParamLayout, an
 * activation arena sized once for the largest batch, and the training pass
 * (forward with the loss, then backward) of one batch.
 *
 * Usage:
 *   seq2seq_create(be, dims, limits, &m);  seq2seq_init_params(m, range, seed);
 *   per step: seq2seq_zero_grads(m); seq2seq_forward(m, batch, true, seed, &loss);
 *             seq2seq_backward(m);  ...optimizer on m->params / m->grads...
 * Memory is taken in seq2seq_create only. */
#ifndef NMT_MODEL_SEQ2SEQ_H
#define NMT_MODEL_SEQ2SEQ_H

#include "backend.h"
#include "data/batch.h"
#include "model/attention.h"
#include "model/lstm.h"
#include "model/params.h"

typedef struct {
    double loss_sum;  /* sum of label-smoothed token losses */
    double nll_sum;   /* sum of -log p(reference token) */
    int64_t n_tokens; /* non-pad target tokens */
    double align_sum; /* guided alignment: the weighted alignment loss of the rows, summed (0 without) */
    double loss;      /* (loss_sum + align_sum) / n_tokens: what backward differentiates */
} ModelLoss;

typedef struct Seq2Seq Seq2Seq;

typedef struct {
    int max_B, max_S, max_T; /* largest training/scoring batch */
    int max_decode_T;        /* longest decoding (0: none) */
    int max_beam;            /* widest beam search (0 or 1: greedy only) */
    size_t output_chunk;     /* logits held at once by the output layer in
                                training and scoring (0: 4M, i.e. 16 MB) */
    int max_sample_k;        /* most candidates of seq2seq_sample (0: no sampling) */
} ModelLimits;

NmtStatus seq2seq_create(Backend *be, const ModelDims *dims, ModelLimits limits, Seq2Seq **out);
void seq2seq_free(Seq2Seq *m); /* NULL is a no-op */

/* Bytes of the activation arena (sized at creation for the limits). */
size_t seq2seq_arena_bytes(const Seq2Seq *m);
const ModelDims *seq2seq_dims(const Seq2Seq *m);
const ParamLayout *seq2seq_layout(const Seq2Seq *m);
float *seq2seq_params(Seq2Seq *m); /* (layout.total) on the backend */
float *seq2seq_grads(Seq2Seq *m);  /* (layout.total) on the backend */

/* Random initial weights (docs/model.md, Initialisation). */
NmtStatus seq2seq_init_params(Seq2Seq *m, float init_range, uint64_t seed);
void seq2seq_zero_grads(Seq2Seq *m);

/* Runs the model on one batch (host arrays, time-major) and computes the
 * loss. train: dropout on (masks from `seed`), the activations are kept
 * for seq2seq_backward, and the output layer's backward is done already
 * (its weight and bias gradients are added into seq2seq_grads, so zero
 * them first). The batch must fit the limits. */
void seq2seq_forward(Seq2Seq *m, const Batch *batch, bool train, uint64_t seed, ModelLoss *loss);
/* Gradient accumulation: the gradient of the next training forwards is the
 * sum over their batch's target tokens divided by n, the target tokens of
 * every batch of one update, so that several batches' gradients add up to
 * the gradient of their mean loss (that of one batch holding them all).
 * 0, the default: each batch's own token count (the mean over the batch).
 * ModelLoss is unaffected (always the batch's own mean). */
void seq2seq_set_grad_tokens(Seq2Seq *m, int64_t n);
/* Guided alignment (docs/model.md, "Guided alignment"): from now on, a
 * training forward of a batch with an alignment (Batch.align) adds
 * `weight` times the cost's loss (kernels/align_math.h: ALIGN_COST_CE or
 * ALIGN_COST_MSE) of every target position's attention, averaged over the
 * heads and taken before attention dropout, against the batch's aligned
 * positions, to the loss (ModelLoss.align_sum) and its gradient to the
 * backward. The first call takes (max_T max_B max_S) floats on the
 * backend. weight 0 turns it off. Not for style none (NMT_ERR_CONFIG). */
NmtStatus seq2seq_set_guided_alignment(Seq2Seq *m, int cost, float weight);
/* Adds the gradient of loss->loss (the mean over target tokens; see
 * seq2seq_set_grad_tokens) of the last training forward into seq2seq_grads. */
void seq2seq_backward(Seq2Seq *m);
/* The logits (T*B, V_t) of the last forward, computed again chunk by chunk
 * (the forward keeps none) and downloaded into host memory. */
void seq2seq_download_logits(Seq2Seq *m, float *host);

/* Attention statistics of the last forward, over the real target positions
 * of every sentence and every head, at the allowed source positions, each
 * row normalised to sum 1 (local-p's Gaussian leaves rows below 1). */
typedef struct {
    double mean_max;      /* mean over rows of the largest weight */
    double mean_min;      /* mean over rows of the smallest weight */
    double mean_entropy;  /* mean entropy of a row, in nats */
    double mean_uniform_entropy; /* the same for uniform rows (log of the allowed count) */
    double local_p_offset; /* local-p: mean |p_t / S_b - t / T_b| (0 on the diagonal); NaN otherwise */
    int64_t rows;
} AttnStats;

/* False (and nothing computed) for style none. Downloads the weights. */
bool seq2seq_attention_stats(Seq2Seq *m, const Batch *batch, AttnStats *out);

/* Output-vocabulary shortlist for decoding (docs/decoding.md): ids in
 * ascending order, without PAD and BOS (EOS should be among them). The
 * output layer's rows of those ids are copied now: call again after the
 * parameters change. Greedy and beam search then score only these ids;
 * n == 0 turns the shortlist off. */
NmtStatus seq2seq_set_shortlist(Seq2Seq *m, const int32_t *ids, int n);

/* For decoding with weights that stay as they are (translation): every
 * target token's product with the first decoder layer's input weights,
 * tgt_emb W_ih[:, :E]^T (V_t, 4H), is made now, so that a decoding step
 * takes its row instead of embedding the token, copying it into the
 * layer's input and multiplying (docs/decoding.md). Call again after the
 * parameters change; a training forward turns it off until then. Not for
 * Bahdanau attention (whose W_c reads the embedding too), nor for a table
 * over SEQ2SEQ_FOLD_MAX_BYTES or one the backend has no memory for: then
 * decoding goes on without it. *folded (may be NULL) says whether it is on. */
#define SEQ2SEQ_FOLD_MAX_BYTES ((size_t)512 << 20)
NmtStatus seq2seq_fold_embeddings(Seq2Seq *m, bool *folded);

/* Greedy decoding of the sources of `batch` (src, src_len, B, S; the
 * target fields are not used): at most max_len_a * src_len + max_len_b
 * tokens per sentence (and max_decode_T). Sentence b's ids go to
 * out[b * out_stride ...], without BOS or EOS; out_len[b] gets its length. */
NmtStatus seq2seq_greedy(Seq2Seq *m, const Batch *batch, double max_len_a, int max_len_b, int32_t *out,
                         int out_stride, int *out_len);

/* Sampling instead of the best token (e.g. for back-translation): at each
 * step the token is drawn among the row's k most probable (renormalised),
 * with probabilities proportional to p^(1 / temperature). Sentence b's
 * draws come from a generator keyed by keys[b] and the step, so a
 * sentence's output does not depend on the batch it is decoded in.
 * k <= ModelLimits.max_sample_k. */
#define SEQ2SEQ_MAX_SAMPLE_K 100
typedef struct {
    int k;               /* candidates per step, 1..SEQ2SEQ_MAX_SAMPLE_K (1: greedy) */
    double temperature;  /* > 0; 1: the model's distribution */
    const uint64_t *keys; /* (B) one per sentence of the batch */
} SampleSpec;
/* As seq2seq_greedy, drawing each token as `spec` says. */
NmtStatus seq2seq_sample(Seq2Seq *m, const Batch *batch, double max_len_a, int max_len_b, const SampleSpec *spec,
                         int32_t *out, int out_stride, int *out_len);

/* Beam search (docs/decoding.md). Scores: log p(y) / lp(|y|) + cp, with the
 * GNMT length penalty lp(n) = ((5 + n) / 6)^alpha (n counts EOS) and
 * coverage penalty cp = beta * sum_s log(min(attention summed over steps, 1)).
 * A sentence stops when it has `nbest` finished hypotheses and no unfinished
 * one can still beat the nbest-th: log p only falls with length and lp is
 * largest at the length limit, so an unfinished hypothesis can reach at
 * most log p / lp(limit). */
typedef struct {
    int beam;                 /* K >= 1 (<= ModelLimits.max_beam) */
    int nbest;                /* hypotheses returned per sentence, 1..K */
    double length_penalty;    /* alpha >= 0 */
    double coverage_penalty;  /* beta >= 0 */
    double max_len_a;
    int max_len_b;
} BeamSpec;

/* Hypothesis i of sentence b: ids at out[(b * nbest + i) * stride ...]
 * (no BOS/EOS), length out_len[b * nbest + i], score out_score[...], best
 * first; out_count[b] hypotheses, at most nbest: fewer when the search
 * finds fewer (a tiny vocabulary or length limit), 0 when every score was
 * NaN (the out_* of missing ones are not written). out_attn (NULL: not wanted) gets
 * (B * nbest, stride, batch->S) floats: the attention of each output token
 * over the source (heads averaged); zeros for style none. */
NmtStatus seq2seq_beam_search(Seq2Seq *m, const Batch *batch, const BeamSpec *spec, int32_t *out, int stride,
                              int *out_len, double *out_score, int *out_count, float *out_attn);
/* The same for an ensemble: the models (same Backend, same target
 * vocabulary, the same shortlist or none) step together and their log-probabilities are averaged at
 * every step. Coverage and recorded attention come from models[0]. */
NmtStatus seq2seq_ensemble_search(Seq2Seq *const *models, int n_models, const Batch *batch, const BeamSpec *spec,
                                  int32_t *out, int stride, int *out_len, double *out_score, int *out_count,
                                  float *out_attn);

#endif
