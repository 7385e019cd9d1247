/* backend_steps.c: the LSTM recurrence over a sequence from the gemm,
 * lstm_forward, lstm_backward and add_cols slots, one time step after the
 * other (backend_steps.h). */
#include "backend_steps.h"

/* state slot s of a (T + 1, B, H) run */
static float *state(float *base, int s, int B, int H) { return base + (size_t)s * B * H; }
static const float *cstate(const float *base, int s, int B, int H) {
    return base + (size_t)s * B * H;
}

void backend_lstm_recurrence_steps(Backend *be, int T, int B, int H, const float *W_hh,
                                   float *gates, float *h, float *c, const float *keep,
                                   bool reverse) {
    int G = 4 * H;
    for (int k = 0; k < T; k++) {
        int t = reverse ? T - 1 - k : k;
        int prev = reverse ? t + 1 : t, next = reverse ? t : t + 1;
        float *z = gates + (size_t)t * B * G;
        /* z (B, 4H) += h_prev (B, H) W_hh^T */
        be->gemm(be, false, true, B, G, H, 1.0f, state(h, prev, B, H), H, W_hh, H, 1.0f, z, G);
        be->lstm_forward(be, B, H, z, NULL, state(c, prev, B, H), state(h, prev, B, H),
                         state(c, next, B, H), state(h, next, B, H), keep + (size_t)t * B);
    }
}

void backend_lstm_recurrence_backward_steps(Backend *be, int T, int B, int H,
                                            const float *W_hh, float *gates, const float *c,
                                            const float *keep, bool reverse, float *dh,
                                            float *dc, float *dh_rec) {
    int G = 4 * H;
    be->zero(be, dh_rec, (size_t)B * H * sizeof(float));
    for (int k = 0; k < T; k++) {
        int t = reverse ? k : T - 1 - k; /* the opposite order of the forward pass */
        int prev = reverse ? t + 1 : t, next = reverse ? t : t + 1;
        float *dh_t = dh + (size_t)t * B * H;
        be->add_cols(be, dh_t, H, dh_rec, H, B, H); /* plus the recurrent gradient */
        float *dz_t = gates + (size_t)t * B * G;    /* the gates, until this call */
        be->lstm_backward(be, B, H, dz_t, cstate(c, prev, B, H), cstate(c, next, B, H), keep + (size_t)t * B, dh_t, dc, dh_rec);
        /* dh_prev = carry part + dz W_hh */
        be->gemm(be, false, false, B, H, G, 1.0f, dz_t, G, W_hh, H, 1.0f, dh_rec, H);
    }
}
