/* lstm.c: LSTM layer forward and backward over a sequence or one step
 * (lstm.h), with or without layer normalisation. */
#include "model/lstm.h"

static float *slot(const LstmCache *c, float *base, size_t s, int B, int H) {
    return base + lstm_slot(c, s) * (size_t)B * H;
}

static bool layer_norm(const LstmWeights *w) { return w->g_ih != NULL; }

/* Layer normalisation: the recurrence step by step, as lstm_seq_recurrence
 * does it (backend.h) with the recurrent product normalised: for each time
 * t in order, r_t = h_prev W_hh^T, z_t += LN(r_t) g_hh, the cell. */
static void ln_seq_recurrence(Backend *be, const LstmWeights *w, int T, int B, const float *keep,
                              bool reverse, LstmCache *cache) {
    int H = w->H, G = 4 * H;
    for (int k = 0; k < T; k++) {
        int t = reverse ? T - 1 - k : k;
        size_t prev = lstm_prev_slot(t, reverse), next = reverse ? (size_t)t : (size_t)t + 1;
        const float *h_prev = cache->h + prev * B * H, *c_prev = cache->c + prev * B * H;
        float *z = cache->gates + (size_t)t * B * G, *r = cache->r + (size_t)t * B * G;
        be->gemm(be, false, true, B, G, H, 1.0f, h_prev, H, w->W_hh, H, 0.0f, r, G);
        be->layer_norm_forward(be, B, G, r, w->g_hh, true, z, cache->r_stats + (size_t)t * B * 2);
        be->lstm_forward(be, B, H, z, NULL, c_prev, h_prev, cache->c + next * B * H, cache->h + next * B * H,
                         keep + (size_t)t * B);
    }
}

/* Its backward, as lstm_seq_recurrence_backward with r's gradient: for
 * each time in the opposite order, dh[t] += dh_rec, the cell's backward
 * (gates[t] become dz), r_t becomes dr (through LN, dg_hh +=), dh_rec +=
 * dr W_hh. */
static void ln_seq_recurrence_backward(Backend *be, const LstmWeights *w, int T, int B,
                                       const float *keep, bool reverse, LstmCache *cache, float *dh,
                                       float *dc, float *dh_rec) {
    int H = w->H, G = 4 * H;
    be->zero(be, dh_rec, (size_t)B * H * sizeof(float));
    for (int k = 0; k < T; k++) {
        int t = reverse ? k : T - 1 - k;
        size_t prev = lstm_prev_slot(t, reverse), next = reverse ? (size_t)t : (size_t)t + 1;
        float *dh_t = dh + (size_t)t * B * H, *dz = cache->gates + (size_t)t * B * G;
        float *r = cache->r + (size_t)t * B * G;
        be->add_cols(be, dh_t, H, dh_rec, H, B, H);
        be->lstm_backward(be, B, H, dz, cache->c + prev * B * H, cache->c + next * B * H,
                          keep + (size_t)t * B, dh_t, dc, dh_rec);
        be->layer_norm_backward(be, B, G, r, cache->r_stats + (size_t)t * B * 2, w->g_hh, dz, r, w->dg_hh);
        be->gemm(be, false, false, B, H, G, 1.0f, r, G, w->W_hh, H, 1.0f, dh_rec, H);
    }
}

void lstm_seq_forward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                      const float *keep, bool reverse, LstmCache *cache) {
    int H = w->H, G = 4 * H;
    if (layer_norm(w)) {
        /* u (T*B, 4H) = x W_ih^T, all at once; gates = LN(u) g_ih + b */
        be->gemm(be, false, true, T * B, G, w->in, 1.0f, x, w->in, w->W_ih, w->in, 0.0f, cache->u, G);
        be->layer_norm_forward(be, T * B, G, cache->u, w->g_ih, false, cache->gates, cache->u_stats);
        be->add_bias(be, cache->gates, w->b, T * B, G);
        ln_seq_recurrence(be, w, T, B, keep, reverse, cache);
        return;
    }
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
    be->gemm(be, true, false, G, w->in, T * B, 1.0f, lstm_dz_in(cache), G, x, w->in, 1.0f, w->dW_ih, w->in);
    /* previous states of times 0..T-1 are slots 0..T-1 (forward) or 1..T (reverse) */
    const float *h_prev = cache->h + (reverse ? (size_t)B * H : 0);
    be->gemm(be, true, false, G, H, T * B, 1.0f, lstm_dz_rec(cache), G, h_prev, H, 1.0f, w->dW_hh, H);
    be->bias_backward(be, w->db, dz, T * B, G);
}

void lstm_seq_backward(Backend *be, const LstmWeights *w, int T, int B, const float *x,
                       const float *keep, bool reverse, LstmCache *cache, float *dh,
                       const float *dc_final, float *dx, float *dh0, float *dc0, float *dc,
                       float *dh_rec) {
    int H = w->H, G = 4 * H;
    if (dc_final) be->copy(be, dc, dc_final, (size_t)B * H * sizeof(float));
    else be->zero(be, dc, (size_t)B * H * sizeof(float));
    if (layer_norm(w)) {
        ln_seq_recurrence_backward(be, w, T, B, keep, reverse, cache, dh, dc, dh_rec);
        /* every step's dz at once into u's gradient (in place), dg_ih += */
        be->layer_norm_backward(be, T * B, G, cache->u, cache->u_stats, w->g_ih, cache->gates, cache->u,
                                w->dg_ih);
    } else {
        be->lstm_seq_recurrence_backward(be, T, B, H, w->W_hh, cache->gates, cache->c, keep, reverse,
                                         dh, dc, dh_rec);
    }
    if (dh0) be->add_cols(be, dh0, H, dh_rec, H, B, H);
    if (dc0) be->add_cols(be, dc0, H, dc, H, B, H);
    lstm_weight_grads(be, w, T, B, x, reverse, cache);
    if (dx) lstm_input_grad(be, w, T, B, cache, dx);
}

void lstm_input_grad(Backend *be, const LstmWeights *w, int T, int B, const LstmCache *cache,
                     float *dx) {
    lstm_input_grad_cols(be, w, T * B, lstm_dz_in(cache), 0, w->in, dx, w->in);
}

void lstm_input_grad_cols(Backend *be, const LstmWeights *w, int rows, const float *dz, int col0,
                          int cols, float *dx, int ldx) {
    int G = 4 * w->H;
    /* dx (rows, cols) += dz (rows, 4H) W_ih[:, col0 .. col0 + cols) (4H, cols) */
    be->gemm(be, false, false, rows, cols, G, 1.0f, dz, G, w->W_ih + col0, w->in, 1.0f, dx, ldx);
}

float *lstm_step_input(const LstmCache *cache, int t, int B, int H) {
    return (cache->u ? cache->u : cache->gates) + lstm_slot(cache, (size_t)t) * B * 4 * H;
}

void lstm_step_forward(Backend *be, const LstmWeights *w, int t, int B, const float *x_t,
                       const float *keep_t, LstmCache *cache) {
    int G = 4 * w->H;
    be->gemm(be, false, true, B, G, w->in, 1.0f, x_t, w->in, w->W_ih, w->in, 0.0f,
             lstm_step_input(cache, t, B, w->H), G);
    lstm_step_forward_rest(be, w, t, B, keep_t, cache);
}

void lstm_step_forward_rest(Backend *be, const LstmWeights *w, int t, int B, const float *keep_t,
                            LstmCache *cache) {
    int H = w->H, G = 4 * H;
    size_t at = lstm_slot(cache, (size_t)t);
    float *z = cache->gates + at * B * G;
    const float *h_prev = slot(cache, cache->h, (size_t)t, B, H);
    const float *c_prev = slot(cache, cache->c, (size_t)t, B, H);
    if (layer_norm(w)) {
        /* z = LN(u_t) g_ih + LN(r_t) g_hh; the cell adds the bias */
        float *u = cache->u + at * B * G, *r = cache->r + at * B * G;
        be->layer_norm_forward(be, B, G, u, w->g_ih, false, z, cache->u_stats + at * B * 2);
        be->gemm(be, false, true, B, G, H, 1.0f, h_prev, H, w->W_hh, H, 0.0f, r, G);
        be->layer_norm_forward(be, B, G, r, w->g_hh, true, z, cache->r_stats + at * B * 2);
    } else {
        be->gemm(be, false, true, B, G, H, 1.0f, h_prev, H, w->W_hh, H, 1.0f, z, G);
    }
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
    const float *dz_rec = dz_t, *dz_in = dz_t;
    if (layer_norm(w)) { /* u_t and r_t become their gradients (in place) */
        float *u = cache->u + (size_t)t * B * G, *r = cache->r + (size_t)t * B * G;
        be->layer_norm_backward(be, B, G, r, cache->r_stats + (size_t)t * B * 2, w->g_hh, dz_t, r, w->dg_hh);
        be->layer_norm_backward(be, B, G, u, cache->u_stats + (size_t)t * B * 2, w->g_ih, dz_t, u, w->dg_ih);
        dz_rec = r;
        dz_in = u;
    }
    be->gemm(be, false, false, B, H, G, 1.0f, dz_rec, G, w->W_hh, H, 1.0f, dh_prev, H);
    if (dx_t && dx_col0 < w->in)
        lstm_input_grad_cols(be, w, B, dz_in, dx_col0, w->in - dx_col0, dx_t + dx_col0, w->in);
}
