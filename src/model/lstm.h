/* lstm.h: one LSTM layer (one direction) over a time-major sequence, on a
 * Backend: all input-to-hidden products of the sequence in one GEMM, the
 * four gates in one GEMM per step, the cell in one fused op per step.
 *
 * State slots: h and c hold T + 1 slots of (B, H). A forward layer starts
 * from slot 0 and writes slot t + 1 at time t; a reverse layer starts from
 * slot T and writes slot t at time t. So the previous state of time t is
 * slot t (forward) or t + 1 (reverse), and both runs of previous states are
 * contiguous, which makes dW_hh one GEMM. Padding rows (keep = 0) carry the
 * state unchanged.
 *
 * Layer normalisation (model.layer_norm, when LstmWeights.g_ih is set):
 * the pre-activations are z = LN(x W_ih^T) g_ih + LN(h_prev W_hh^T) g_hh + b,
 * each product normalised over its whole row of 4H (Backend
 * layer_norm_forward). The products themselves are kept (LstmCache.u, r)
 * for the backward, which turns them into their gradients: the weight and
 * input gradients then read u and r where they read dz without it
 * (lstm_dz_in, lstm_dz_rec). The encoder's recurrence runs step by step
 * in lstm.c instead of the Backend's lstm_seq_recurrence. */
#ifndef NMT_MODEL_LSTM_H
#define NMT_MODEL_LSTM_H

#include <stdbool.h>
#include "backend.h"

typedef struct {
    const float *W_ih, *W_hh, *b; /* (4H, in), (4H, H), (4H) */
    float *dW_ih, *dW_hh, *db;    /* gradients, same shapes (+=) */
    int in, H;
    const float *g_ih, *g_hh;     /* (4H) layer-norm gains; NULL: no layer normalisation */
    float *dg_ih, *dg_hh;         /* their gradients (+=) */
} LstmWeights;

typedef struct {
    float *gates; /* (T, B, 4H) activated gates, by time; backward turns each
                     step's gates into its dz (the pre-activation gradient) */
    float *h, *c; /* (T + 1, B, H) state slots */
    /* layer normalisation only (else NULL), by time as gates: the input
     * products x W_ih^T and the recurrent products h_prev W_hh^T (T, B, 4H),
     * which backward turns into their gradients; their rows' mean and rstd
     * (T, B, 2) */
    float *u, *r, *u_stats, *r_stats;
    /* 0: one slot per time step (training: backward reads them all). n > 0:
     * step-by-step decoding keeps only the last n: time t's gates and state
     * slot s live at (t + phase) % n and (s + phase) % n (h and c hold n
     * slots, gates at most n); a beam reorder that gathers the states into
     * the ring's free slot turns the phase (seq2seq_decode_reorder) */
    int ring, phase;
} LstmCache;

/* Where state slot s / the gates of time t live (see ring). */
static inline size_t lstm_slot(const LstmCache *c, size_t s) {
    return c->ring ? (s + (size_t)c->phase) % (size_t)c->ring : s;
}

/* The gradient of the input products (T*B, 4H) after backward: dz, or
 * with layer normalisation the gradient of x W_ih^T (in u). dW_ih and the
 * input gradient read it. */
static inline const float *lstm_dz_in(const LstmCache *c) { return c->u ? c->u : c->gates; }
/* The gradient of the recurrent products after backward: dz, or the
 * gradient of h_prev W_hh^T (in r). dW_hh reads it. */
static inline const float *lstm_dz_rec(const LstmCache *c) { return c->r ? c->r : c->gates; }

/* Output at time t: slot t + 1 (forward) or t (reverse). */
static inline float *lstm_output(const LstmCache *c, int t, int B, int H, bool reverse) {
    return c->h + lstm_slot(c, (size_t)(reverse ? t : t + 1)) * B * H;
}
/* Previous state slot of time t. */
static inline size_t lstm_prev_slot(int t, bool reverse) { return (size_t)(reverse ? t + 1 : t); }

/* Runs the layer over x (T, B, in). The initial state must already be in
 * the start slot of cache->h and cache->c (zeros or a bridge). keep (T, B).
 * The cache has one slot per step (ring 0): the recurrence is one Backend
 * slot over all of them (lstm_seq_recurrence). */
void lstm_seq_forward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                      const float *keep, bool reverse, LstmCache *cache);

/* Backward of lstm_seq_forward; the weight gradients included. dh (T, B, H):
 * gradient into the outputs by time (used as scratch: it is changed).
 * dc_final (B, H): gradient into the cell of the last state written (slot T
 * forward, slot 0 reverse), or NULL. dx (T, B, in) += (NULL: not needed).
 * dh0, dc0 (B, H) += the gradient into the start state (NULL: not needed).
 * cache->gates become dz. Workspace: dc and dh_rec (B, H) each. */
void lstm_seq_backward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                       const float *keep, bool reverse, LstmCache *cache, float *dh,
                       const float *dc_final, float *dx, float *dh0, float *dc0, float *dc,
                       float *dh_rec);

/* After lstm_seq_backward (lstm_dz_in holds the input products' gradient), the gradient into the
 * inputs: dx (T, B, in) +=. What lstm_seq_backward does when given dx; a
 * caller that runs two layers concurrently into one dx calls it after
 * both. */
void lstm_input_grad(Backend *be, const LstmWeights *w, int T, int B, const LstmCache *cache,
                     float *dx);

/* The gradient into input columns col0 .. col0 + cols of `rows` rows, from
 * their dz (rows, 4H) (time steps' gates after backward): dx (rows, cols;
 * leading dimension ldx) += dz W_ih[:, col0 .. col0 + cols). */
void lstm_input_grad_cols(Backend *be, const LstmWeights *w, int rows, const float *dz, int col0,
                          int cols, float *dx, int ldx);

/* One forward step at time t of a forward layer (the decoder): x_t (B, in)
 * in, state from slot t to slot t + 1. */
void lstm_step_forward(Backend *be, const LstmWeights *w, int t, int B, const float *x_t,
                       const float *keep_t, LstmCache *cache);
/* lstm_step_forward in two halves, for a caller that forms the input
 * product x_t W_ih^T its own way: where the caller writes that product
 * for time t (B, 4H): the gates slot, or u's with layer normalisation;
 * then the rest of the step (z += h_prev W_hh^T, the cell with the bias). */
float *lstm_step_input(const LstmCache *cache, int t, int B, int H);
void lstm_step_forward_rest(Backend *be, const LstmWeights *w, int t, int B, const float *keep_t,
                            LstmCache *cache);

/* One backward step at time t (forward layer). dh_t (B, H): all gradient
 * into h at slot t + 1. dc (B, H): in, gradient into c at slot t + 1; out,
 * into slot t. Time t's gates become its dz. dx_t (B, in) += the
 * gradient of input columns dx_col0 .. in (the others are left alone, for
 * a caller that takes them for all steps at once with
 * lstm_input_grad_cols; dx_t NULL: none needed). dh_prev (B, H) (=) the
 * gradient into h at slot t. Weight gradients are not touched: call
 * lstm_weight_grads once for all steps. */
void lstm_step_backward(Backend *be, const LstmWeights *w, int t, int B, const float *keep_t,
                        LstmCache *cache, const float *dh_t, float *dc, float *dx_t, int dx_col0,
                        float *dh_prev);

/* Once every step's backward has run (cache->gates hold dz):
 * dW_ih += dz^T x, dW_hh += dz^T h_prev, db += sum dz over T steps (with
 * layer normalisation, dW_ih and dW_hh read u's and r's gradients). */
void lstm_weight_grads(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                       bool reverse, const LstmCache *cache);

#endif
