/* decode_step.h: step-by-step decoding of a Seq2Seq, the interface between
 * the model (seq2seq_decode.c; seq2seq.c owns the activations) and the search
 * algorithms (beam_search.c: greedy, beam, ensembles).
 *
 * A search sets a batch up with G decoder rows per sentence (row g*B + b
 * belongs to sentence column b), then per step t: seq2seq_decode_step with
 * the previous token of every row, seq2seq_decode_topk, and
 * seq2seq_decode_reorder with the rows that continue. Sentences that are
 * finished leave the batch at a reorder: the remaining ones are renumbered
 * 0..n-1 in their order, and every later step computes only their rows.
 * A sentence's encoder states are shared by its G rows, never copied. */
#ifndef NMT_MODEL_DECODE_STEP_H
#define NMT_MODEL_DECODE_STEP_H

#include "model/seq2seq.h"

Backend *seq2seq_backend(const Seq2Seq *m);
const ModelLimits *seq2seq_limits(const Seq2Seq *m);

/* Encodes batch's sources and prepares G rows per sentence for at most T
 * steps (T <= limits.max_decode_T, G <= max(limits.max_beam, 1)); every
 * row starts from its sentence's bridged state. */
void seq2seq_decode_setup(Seq2Seq *m, const Batch *batch, int G, int T);
/* Leaves decoding mode (the next forward is a training/scoring one). */
void seq2seq_decode_end(Seq2Seq *m);

/* Rows of the current step: G * sentences still in the batch. */
int seq2seq_decode_rows(const Seq2Seq *m);
/* Columns of the step scores: the shortlist's size, or V_t. */
int seq2seq_decode_vocab(const Seq2Seq *m);
/* The last step's scores (rows, vocab) on the backend: logits, or
 * log-probabilities when the step asked for them. The step itself leaves
 * the output GEMM's result; its bias and log-softmax are applied here when
 * the scores are asked for (ensembles average them), else by the top-k in
 * the same pass over the row (Backend.topk). */
float *seq2seq_decode_scores(Seq2Seq *m);
/* Decoder row-steps computed since seq2seq_decode_setup (how much work
 * the search did; finished sentences leaving the batch lower it). */
int64_t seq2seq_decode_row_steps(const Seq2Seq *m);
/* Decoder steps computed since seq2seq_decode_setup. */
int seq2seq_decode_steps(const Seq2Seq *m);

/* Step t on tokens prev (rows): logits, or log-probabilities when
 * `logprobs`, of every row over the output vocabulary; PAD and BOS get
 * -infinity (a shortlist never contains them). prev NULL: every row's own
 * best token of the last top-1 queued (seq2seq_decode_topk_start with
 * k = 1, the rows unchanged since), which the device has already, so the
 * step can be queued before the host has read them; not with a shortlist
 * (seq2seq_decode_has_shortlist). */
void seq2seq_decode_step(Seq2Seq *m, int t, const int32_t *prev, bool logprobs);
/* The k best scores of every row, best first: values (rows, k) (NULL: not
 * wanted) and vocabulary ids (rows, k), in host memory (one download). */
void seq2seq_decode_topk(Seq2Seq *m, int k, float *values, int32_t *ids);
/* seq2seq_decode_topk in two halves (Backend.download_start): _start
 * queues the top-k of the current step and returns without waiting;
 * _finish waits for the oldest one queued and gives its values and ids.
 * At most two are queued at once; every one is finished before the next
 * seq2seq_decode_setup or seq2seq_decode_end. */
void seq2seq_decode_topk_start(Seq2Seq *m, int k);
void seq2seq_decode_topk_finish(Seq2Seq *m, float *values, int32_t *ids);
/* Whether an output shortlist is set (seq2seq_set_shortlist): top-k ids on
 * the device are then the shortlist's indices, not vocabulary ids. */
bool seq2seq_decode_has_shortlist(const Seq2Seq *m);
/* The attention weights of step t before dropout: host (heads, rows, S). */
void seq2seq_decode_attention(Seq2Seq *m, int t, float *host);
/* After step t: new row g*n_keep + i continues row rows[g*n_keep + i] of
 * step t (rows has G*n_keep entries). When n_keep is below the current
 * sentence count, only sentence columns keep[0..n_keep) (ascending) stay,
 * renumbered 0..n_keep-1; rows must then refer to rows of those columns. */
void seq2seq_decode_reorder(Seq2Seq *m, int t, const int32_t *rows, const int32_t *keep, int n_keep);

/* How many of a batch's `cols` sentence columns the next step keeps when
 * `live` of them are still going (0 < live <= cols): all of them until the
 * count can drop to a multiple of the backend's decode quantum q (then the
 * live columns and enough finished ones to reach it). q = 1 compacts at
 * every finish; a larger q gives fewer compactions and batch shapes for a
 * few rows computed in vain. (beam_search.c; nmt score's steps too) */
int seq2seq_decode_kept_columns(const Backend *be, int cols, int live);

#endif
