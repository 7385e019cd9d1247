/* lstm.c: LSTM layer forward and backward over a sequence or one step
 * (lstm.h). */
#include "model/lstm.h"

static float *slot(const LstmCache *c, float *base, size_t s, int B, int H) {
    return base + lstm_slot(c, s) * (size_t)B * H;
}

void lstm_seq_forward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                      const float *keep, bool reverse, LstmCache *cache) {
    int H = w->H, G = 4 * H;
    /* all input products at once: gates (T*B, 4H) = x (T*B, in) W_ih^T + b */
    be->gemm(be, false, true, T * B, G, w->in, 1.0f, x, w->in, w->W_ih, w->in, 0.0f,
             cache->gates, G);
    be->add_bias(be, cache->gates, w->b, T * B, G);
    /* then per step z += h_prev W_hh^T and the cell */
    be->lstm_seq_recurrence(be, T, B, H, w->W_hh, cache->gates, cache->h, cache->c, keep, reverse);
}

void lstm_weight_grads(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                       bool reverse, const LstmCache *cache) {
    int H = w->H, G = 4 * H;
    const float *dz = cache->gates; /* (T*B, 4H) after backward */
    /* dW_ih (4H, in) += dz^T (4H, T*B) x (T*B, in) */
    be->gemm(be, true, false, G, w->in, T * B, 1.0f, dz, G, x, w->in, 1.0f, w->dW_ih, w->in);
    /* previous states of times 0..T-1 are slots 0..T-1 (forward) or 1..T (reverse) */
    const float *h_prev = cache->h + (reverse ? (size_t)B * H : 0);
    be->gemm(be, true, false, G, H, T * B, 1.0f, dz, G, h_prev, H, 1.0f, w->dW_hh, H);
    be->bias_backward(be, w->db, dz, T * B, G);
}

void lstm_seq_backward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                       const float *keep, bool reverse, LstmCache *cache, float *dh,
                       const float *dc_final, float *dx, float *dh0, float *dc0, float *dc,
                       float *dh_rec) {
    int H = w->H;
    if (dc_final) be->copy(be, dc, dc_final, (size_t)B * H * sizeof(float));
    else be->zero(be, dc, (size_t)B * H * sizeof(float));
    be->lstm_seq_recurrence_backward(be, T, B, H, w->W_hh, cache->gates, cache->c, keep, reverse,
                                     dh, dc, dh_rec);
    if (dh0) be->add_cols(be, dh0, H, dh_rec, H, B, H);
    if (dc0) be->add_cols(be, dc0, H, dc, H, B, H);
    lstm_weight_grads(be, w, T, B, x, reverse, cache);
    if (dx) lstm_input_grad(be, w, T, B, cache, dx);
}

void lstm_input_grad(Backend *be, const LstmWeights *w, int T, int B, const LstmCache *cache,
                     float *dx) {
    lstm_input_grad_cols(be, w, T * B, cache->gates, 0, w->in, dx, w->in);
}

void lstm_input_grad_cols(Backend *be, const LstmWeights *w, int rows, const float *dz, int col0,
                          int cols, float *dx, int ldx) {
    int G = 4 * w->H;
    /* dx (rows, cols) += dz (rows, 4H) W_ih[:, col0 .. col0 + cols) (4H, cols) */
    be->gemm(be, false, false, rows, cols, G, 1.0f, dz, G, w->W_ih + col0, w->in, 1.0f, dx, ldx);
}

float *lstm_step_gates(const LstmCache *cache, int t, int B, int H) {
    return cache->gates + lstm_slot(cache, (size_t)t) * B * 4 * H;
}

void lstm_step_forward(Backend *be, const LstmWeights *w, int t, int B, const float *x_t,
                       const float *keep_t, LstmCache *cache) {
    int G = 4 * w->H;
    be->gemm(be, false, true, B, G, w->in, 1.0f, x_t, w->in, w->W_ih, w->in, 0.0f,
             lstm_step_gates(cache, t, B, w->H), G);
    lstm_step_forward_rest(be, w, t, B, keep_t, cache);
}

void lstm_step_forward_rest(Backend *be, const LstmWeights *w, int t, int B, const float *keep_t,
                            LstmCache *cache) {
    int H = w->H, G = 4 * H;
    float *z = lstm_step_gates(cache, t, B, H);
    const float *h_prev = slot(cache, cache->h, (size_t)t, B, H);
    const float *c_prev = slot(cache, cache->c, (size_t)t, B, H);
    be->gemm(be, false, true, B, G, H, 1.0f, h_prev, H, w->W_hh, H, 1.0f, z, G);
    /* the cell adds the bias: one pass over z instead of two */
    be->lstm_forward(be, B, H, z, w->b, c_prev, h_prev, slot(cache, cache->c, (size_t)t + 1, B, H),
                     slot(cache, cache->h, (size_t)t + 1, B, H), keep_t);
}

void lstm_step_backward(Backend *be, const LstmWeights *w, int t, int B, const float *keep_t,
                        LstmCache *cache, const float *dh_t, float *dc, float *dx_t, int dx_col0,
                        float *dh_prev) {
    int H = w->H, G = 4 * H;
    float *dz_t = cache->gates + (size_t)t * B * G; /* the gates, until this call */
    be->lstm_backward(be, B, H, dz_t, slot(cache, cache->c, (size_t)t, B, H),
                      slot(cache, cache->c, (size_t)t + 1, B, H), keep_t, dh_t, dc, dh_prev);
    be->gemm(be, false, false, B, H, G, 1.0f, dz_t, G, w->W_hh, H, 1.0f, dh_prev, H);
    if (dx_t && dx_col0 < w->in)
        lstm_input_grad_cols(be, w, B, dz_t, dx_col0, w->in - dx_col0, dx_t + dx_col0, w->in);
}
