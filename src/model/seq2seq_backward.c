/* seq2seq_backward.c: the backward pass of the last training forward
 * (seq2seq.h, docs/model.md): the decoder step by step in reverse with the
 * attention's gradients, then the weight gradients of all steps at once,
 * the bridge and the encoder (both directions of layer 0 on two lanes).
 * The output layer's backward ran in the forward pass already. Letters as
 * in seq2seq_internal.h. */
#include "model/seq2seq_internal.h"

/* ---- backward ---------------------------------------------------------- */

/* Step t's gradient of W_c's input (B, wc_in): one buffer for every step,
 * or a block of its own per step with several heads (carve). */
static float *dwcin_at(const Seq2Seq *m, int t) {
    return m->a.dwcin + (m->d.heads > 1 ? (size_t)t * m->B * m->d.wc_in : 0);
}

/* dh (B, H) (=) the gradient into layer l's output at step t from above
 * (the next layer's input gradient through its dropout mask, plus with a
 * residual connection the gradient into the next layer's output; or dtop
 * for the top layer), then plus the recurrent gradient of step t + 1 (into
 * h only: the recurrence reads h, not the residual output). dtop is the
 * top layer's dh itself: it is changed. */
static void dec_stack_step_backward(Seq2Seq *m, int t, float *dtop) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = m->B, H = m->d.H;
    for (int l = m->d.L_d - 1; l >= 0; l--) {
        Layer *L = &a->dec[l];
        float *dh = l == m->d.L_d - 1 ? dtop : a->dh_tmp;
        if (l < m->d.L_d - 1) {
            const Layer *up = &a->dec[l + 1];
            const float *dx_up = up->dx + (size_t)t * B * H;
            apply_dropout(m, dh, dx_up, (size_t)B * H, DROP_DEC_LAYER + l + 1, (uint64_t)t * B * H);
            if (up->out) be->add_cols(be, dh, H, a->dres, H, B, H);
        }
        if (L->out) /* out = h + the output below: its gradient passes down as it is */
            be->copy(be, a->dres, dh, (size_t)B * H * sizeof(float));
        be->add_cols(be, dh, H, L->dh_rec, H, B, H);
        /* layer 0's input is [w_t; feed or context]: the step needs the
         * gradient of the second part only; decoder_backward adds the
         * first (into dw) for all steps at once */
        lstm_step_backward(be, &L->w, t, B, m->ones, &L->cache, dh, L->dc,
                           L->dx + (size_t)t * B * L->w.in, l ? 0 : m->d.E, L->dh_rec);
    }
}

static void decoder_backward(Seq2Seq *m, const AttnWeights *aw) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, T = m->T, E = d->E, H = d->H, K = d->K, wc = d->wc_in, in0 = d->dec_in;
    const float *Wc = P(m, m->layout.idx.out_Wc);
    float *dWc = G(m, m->layout.idx.out_Wc);
    Layer *L0 = &a->dec[0];
    for (int t = T - 1; t >= 0; t--) {
        float *dhh_t = a->dhh + (size_t)t * B * H;
        if (d->input_feed && t + 1 < T)
            be->add_cols(be, dhh_t, H, L0->dx + (size_t)(t + 1) * B * in0 + E, in0, B, H);
        float *dx0 = L0->dx + (size_t)t * B * in0;
        float *dw_t = a->dw + (size_t)t * B * E;
        if (d->style == ATTN_STYLE_NONE) {
            dec_stack_step_backward(m, t, dhh_t);
            continue;
        }
        /* hh = tanh(Wc wcin): dpre (zeroed with the gradients), then dwcin;
         * dWc for all steps after the loop */
        const float *hh_t = a->hh + (size_t)t * B * H;
        float *dpre_t = a->dpre + (size_t)t * B * H;
        be->tanh_backward(be, dpre_t, dhh_t, hh_t, (size_t)B * H);
        float *dwcin = dwcin_at(m, t);
        be->gemm(be, false, false, B, wc, H, 1.0f, dpre_t, H, Wc, wc, 0.0f, dwcin, wc);
        AttnStep st = seq2seq_step_buffers(m, t);
        if (d->style == ATTN_STYLE_LUONG) {
            /* wcin = [c_t; h_t^top]; the query is h_t^top; the context's
             * gradient is read where it is, in dwcin */
            be->copy_cols(be, a->dh_top, H, dwcin + K, wc, B, H);
            attention_step_backward(be, d, aw, &a->ab, t, dec_top(m, t + 1), &st, drop_seed(m, DROP_ATTN),
                                    attn_drop_offset(m, t), dwcin, wc, a->dh_top, &a->as);
            dec_stack_step_backward(m, t, a->dh_top);
        } else {
            /* bahdanau: wcin = [s_t; c_t; w_t]; input [w_t; c_t]; query
             * s_{t-1}; the context's gradient is collected in place, in
             * dwcin's c_t columns */
            be->copy_cols(be, a->dh_top, H, dwcin, wc, B, H);
            be->add_cols(be, a->dh_top, H, a->dq_carry, H, B, H);
            dec_stack_step_backward(m, t, a->dh_top);
            be->add_cols(be, dwcin + H, wc, dx0 + E, in0, B, K);
            be->add_cols(be, dw_t, E, dwcin + H + K, wc, B, E);
            be->zero(be, a->dq_carry, (size_t)B * H * sizeof(float));
            attention_step_backward(be, d, aw, &a->ab, t, dec_top(m, t), &st, drop_seed(m, DROP_ATTN),
                                    attn_drop_offset(m, t), dwcin + H, wc, a->dq_carry, &a->as);
        }
    }
    /* every step at once: dWc += dpre^T wcin, dw += dz W_ih[:, :E] of layer 0
     * (with layer normalisation the input product's gradient for dz) */
    if (d->style != ATTN_STYLE_NONE)
        be->gemm(be, true, false, H, wc, T * B, 1.0f, a->dpre, H, a->wcin, wc, 1.0f, dWc, wc);
    lstm_input_grad_cols(be, &L0->w, T * B, lstm_dz_in(&L0->cache), 0, E, a->dw, E);
    int LH = d->L_d * H;
    for (int l = 0; l < d->L_d; l++) {
        Layer *L = &a->dec[l];
        lstm_weight_grads(be, &L->w, T, B, L->x, false, &L->cache);
        be->add_cols(be, a->dh0all + l * H, LH, L->dh_rec, H, B, H);
        be->add_cols(be, a->dc0all + l * H, LH, L->dc, H, B, H);
    }
    if (d->style == ATTN_STYLE_BAHDANAU) /* the first query was h_0^top */
        be->add_cols(be, a->dh0all + (d->L_d - 1) * H, LH, a->dq_carry, H, B, H);
    apply_dropout(m, a->dw, a->dw, (size_t)T * B * E, DROP_TGT_EMB, 0);
    apply_word_dropout(m, a->dw, T * B, E, m->d.word_dropout_tgt, DROP_TGT_WORDS);
    be->embedding_backward(be, G(m, m->layout.idx.tgt_emb), a->dw, a->tgt_in, T * B, E);
}

static void bridge_backward(Seq2Seq *m) {
    const ModelDims *d = &m->d;
    if (!d->bridge_learned) return;
    Backend *be = m->be;
    Acts *a = &m->a;
    const ParamIndex *x = &m->layout.idx;
    int B = m->B, LH = d->L_d * d->H, K = d->K;
    be->tanh_backward(be, a->dpre_bridge, a->dh0all, a->h0all, (size_t)B * LH);
    be->gemm(be, true, false, LH, K, B, 1.0f, a->dpre_bridge, LH, a->hfin, K, 1.0f, G(m, x->bridge_h_W), K);
    be->bias_backward(be, G(m, x->bridge_h_b), a->dpre_bridge, B, LH);
    be->gemm(be, false, false, B, K, LH, 1.0f, a->dpre_bridge, LH, P(m, x->bridge_h_W), K, 0.0f, a->dhfin, K);
    be->gemm(be, true, false, LH, K, B, 1.0f, a->dc0all, LH, a->cfin, K, 1.0f, G(m, x->bridge_c_W), K);
    be->bias_backward(be, G(m, x->bridge_c_b), a->dc0all, B, LH);
    be->gemm(be, false, false, B, K, LH, 1.0f, a->dc0all, LH, P(m, x->bridge_c_W), K, 0.0f, a->dcfin, K);
}

static void encoder_backward(Seq2Seq *m) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, S = m->S, K = d->K, De = d->D_e;
    bool fin = d->bridge_learned; /* final states feed the bridge */
    int top = d->L_e - 1;
    for (int l = top; l >= 1; l--) {
        Layer *L = &a->enc[l];
        size_t n = (size_t)S * B * K;
        /* a residual output (out = h + the output below) passes its
         * gradient down as it is; dE[l] then becomes h's gradient */
        if (L->out) be->copy(be, a->dE[l - 1], a->dE[l], n * sizeof(float));
        /* the top layer's final state (slot S) is its state h at S-1 */
        if (fin && l == top) be->add_cols(be, a->dE[l] + (size_t)(S - 1) * B * K, K, a->dhfin, K, B, K);
        lstm_seq_backward(be, &L->w, S, B, L->x, a->keep_src, false, &L->cache, a->dE[l],
                          fin && l == top ? a->dcfin : NULL, L->dx, NULL, NULL, L->dc, L->dh_rec);
        /* layer l's input was dropout(output of l - 1) */
        if (L->out) {
            apply_dropout(m, L->dx, L->dx, n, DROP_ENC_LAYER + l, 0);
            be->add_cols(be, a->dE[l - 1], K, L->dx, K, S * B, K);
        } else {
            apply_dropout(m, a->dE[l - 1], L->dx, n, DROP_ENC_LAYER + l, 0);
        }
    }
    /* a single unidirectional layer: its final state is its output at S-1 */
    if (fin && d->L_e == 1 && !d->bidirectional)
        be->add_cols(be, a->dE[0] + (size_t)(S - 1) * B * K, K, a->dhfin, K, B, K);
    Layer *L0 = &a->enc[0];
    const float *dc_fwd = fin && d->L_e == 1 ? a->dcfin : NULL;
    if (d->bidirectional) {
        Layer *R = &a->enc_bwd;
        be->copy_cols(be, a->dh_f, De, a->dE[0], K, S * B, De);
        be->copy_cols(be, a->dh_b, De, a->dE[0] + De, K, S * B, De);
        const float *dc_bwd = NULL;
        if (fin && d->L_e == 1) {
            /* hfin = [h_f slot S (output S-1); h_b slot 0 (output 0)] */
            be->add_cols(be, a->dh_f + (size_t)(S - 1) * B * De, De, a->dhfin, K, B, De);
            be->add_cols(be, a->dh_b, De, a->dhfin + De, K, B, De);
            be->copy_cols(be, a->dcf_f, De, a->dcfin, K, B, De);
            be->copy_cols(be, a->dcf_b, De, a->dcfin + De, K, B, De);
            dc_fwd = a->dcf_f;
            dc_bwd = a->dcf_b;
        }
        /* the directions concurrently (lanes, as in the forward pass); both
         * add into the one input gradient, so that waits for the join */
        be->fork(be);
        lstm_seq_backward(be, &R->w, S, B, L0->x, a->keep_src, true, &R->cache, a->dh_b, dc_bwd,
                          NULL, NULL, NULL, R->dc, R->dh_rec);
        be->lane(be, 0);
        lstm_seq_backward(be, &L0->w, S, B, L0->x, a->keep_src, false, &L0->cache, a->dh_f, dc_fwd,
                          NULL, NULL, NULL, L0->dc, L0->dh_rec);
        be->join(be);
        lstm_input_grad(be, &L0->w, S, B, &L0->cache, L0->dx);
        lstm_input_grad(be, &R->w, S, B, &R->cache, L0->dx);
    } else {
        lstm_seq_backward(be, &L0->w, S, B, L0->x, a->keep_src, false, &L0->cache, a->dE[0], dc_fwd,
                          L0->dx, NULL, NULL, L0->dc, L0->dh_rec);
    }
    apply_dropout(m, L0->dx, L0->dx, (size_t)S * B * d->E, DROP_SRC_EMB, 0);
    apply_word_dropout(m, L0->dx, S * B, d->E, d->word_dropout_src, DROP_SRC_WORDS);
    be->embedding_backward(be, G(m, m->layout.idx.src_emb), L0->dx, a->src, S * B, d->E);
}

void seq2seq_backward(Seq2Seq *m) {
    NMT_ASSERT(m->train);
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, T = m->T, H = d->H;
    be->zero(be, a->grad_begin, (size_t)(a->grad_end - a->grad_begin));
    /* the output layer's backward ran in the forward pass (output_layer) */
    apply_dropout(m, a->dhh, a->dhh, (size_t)T * B * H, DROP_HD, 0);
    AttnWeights aw = attention_weights(&m->layout, m->params, m->grads);
    a->as.dguide = m->align_active ? m->align : NULL;
    decoder_backward(m, &aw);
    if (d->style != ATTN_STYLE_NONE) {
        /* every step's query (Luong: h_t^top, rows 1..T; Bahdanau: h_{t-1}^top,
         * rows 0..T-1) and context gradient (dwcin's c_t columns) */
        bool luong = d->style == ATTN_STYLE_LUONG;
        AttnSteps all = {dec_top(m, luong ? 1 : 0), a->cat_all, a->dwcin + (luong ? 0 : H), d->wc_in};
        attention_finish_backward(be, d, &aw, &a->ab, &a->as, &all);
    }
    bridge_backward(m);
    encoder_backward(m);
}
