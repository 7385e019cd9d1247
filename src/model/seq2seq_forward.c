/* seq2seq_forward.c: the forward pass of a batch (seq2seq.h,
 * docs/model.md): the encoder (both directions of layer 0 on two lanes),
 * the bridge, the decoder step by step with attention, then the output
 * layer and the loss in chunks of rows, whose backward it finishes at once
 * when training; and the attention statistics of the last forward. The
 * source side, the encoder, the bridge and a decoder step serve decoding
 * too (seq2seq_decode.c). Letters as in seq2seq_internal.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/align_math.h"
#include "model/seq2seq_internal.h"

/* A layer's input from the layer below: in training, dropped out into the
 * layer's own buffer y (the backward reads it there); otherwise the output
 * below itself, read in place (no copy). */
static const float *layer_input(Seq2Seq *m, float *y, const float *below, size_t n, int stream,
                                uint64_t offset) {
    if (!m->train) return below;
    apply_dropout(m, y, below, n, stream, offset);
    return y;
}

/* The source side of a batch, and the local-m centres of m->T steps. */
void seq2seq_upload_source(Seq2Seq *m, const Batch *batch) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = batch->B, S = batch->S, T = m->T;
    be->upload(be, a->src, batch->src, (size_t)S * B * 4);
    int R = B * m->G; /* decoder rows: row r asks sentence r % B */
    /* the row lengths, a->ab.len_copies times over (row i asks sentence i % B) */
    int lens = R * a->ab.len_copies;
    if (m->G > 1) {
        for (int b = 0; b < B; b++) m->h_ids[b] = batch->src_len[b];
        be->upload(be, a->src_len, m->h_ids, (size_t)B * 4);
    }
    for (int i = 0; i < lens; i++) m->h_ids[i] = batch->src_len[i % B];
    be->upload(be, m->G > 1 ? a->row_len : a->src_len, m->h_ids, (size_t)lens * 4);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++) m->h_f[s * B + b] = s < batch->src_len[b] ? 1.0f : 0.0f;
    be->upload(be, a->keep_src, m->h_f, (size_t)S * B * sizeof(float));
    if (m->G > 1) {
        for (int r = 0; r < R; r++) m->h_ids[r] = r % B;
        be->upload(be, a->row_sent, m->h_ids, (size_t)R * 4);
    }
    if (m->d.mode == ATTN_MODE_LOCAL_M && m->d.style != ATTN_STYLE_NONE) {
        for (int t = 0; t < T; t++)
            for (int r = 0; r < R; r++) {
                int last = batch->src_len[r % B] - 1;
                m->h_f[(size_t)t * R + r] = (float)(t < last ? t : last);
            }
        be->upload(be, a->centers, m->h_f, (size_t)T * R * sizeof(float));
    }
}

static void upload_batch(Seq2Seq *m, const Batch *batch) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = batch->B, T = batch->T;
    seq2seq_upload_source(m, batch);
    be->upload(be, a->tgt_in, batch->tgt_in, (size_t)T * B * 4);
    be->upload(be, a->tgt_out, batch->tgt_out, (size_t)T * B * 4);
    int64_t n = 0;
    for (int i = 0; i < T * B; i++) n += batch->tgt_out[i] != NMT_PAD_ID;
    m->n_tokens = n;
}

void seq2seq_encoder_forward(Seq2Seq *m) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, S = m->S, K = d->K;
    float *x0 = a->enc[0].x;
    be->embedding_forward(be, x0, P(m, m->layout.idx.src_emb), a->src, S * B, d->E);
    apply_dropout(m, x0, x0, (size_t)S * B * d->E, DROP_SRC_EMB, 0);
    apply_word_dropout(m, x0, S * B, d->E, d->word_dropout_src, DROP_SRC_WORDS);
    for (int l = 0; l < d->L_e; l++) {
        Layer *L = &a->enc[l];
        int size = L->w.H;
        const float *x = L->x;
        const float *below = NULL;
        if (l > 0) {
            below = l == 1 ? a->e0 : enc_layer_output(&a->enc[l - 1], B, K);
            x = layer_input(m, L->x, below, (size_t)S * B * K, DROP_ENC_LAYER + l, 0);
        }
        bool both = l == 0 && d->bidirectional;
        if (both) {
            /* the two directions share only their input: lane 1 runs the
             * reverse one, lane 0 the forward one, concurrently on a GPU */
            be->fork(be);
            Layer *R = &a->enc_bwd;
            size_t start = (size_t)S * B * size; /* a reverse layer starts at slot S */
            be->zero(be, R->cache.h + start, (size_t)B * size * sizeof(float));
            be->zero(be, R->cache.c + start, (size_t)B * size * sizeof(float));
            lstm_seq_forward(be, &R->w, S, B, x, a->keep_src, true, &R->cache);
            /* e0 = [forward outputs (slots 1..S); backward outputs (slots 0..S-1)] */
            be->copy_cols(be, a->e0 + size, K, R->cache.h, size, S * B, size);
            be->lane(be, 0);
        }
        be->zero(be, L->cache.h, (size_t)B * size * sizeof(float)); /* start slot 0 */
        be->zero(be, L->cache.c, (size_t)B * size * sizeof(float));
        lstm_seq_forward(be, &L->w, S, B, x, a->keep_src, false, &L->cache);
        if (both) {
            be->copy_cols(be, a->e0, K, L->cache.h + (size_t)B * size, size, S * B, size);
            be->join(be);
        }
        if (L->out) { /* residual: out = h + the output below (not dropped out) */
            be->copy(be, L->out, L->cache.h + (size_t)B * K, (size_t)S * B * K * sizeof(float));
            be->add_cols(be, L->out, K, below, K, S * B, K);
        }
    }
    /* final states: slot S of the top forward layer; slot 0 of the reverse one */
    Layer *top = &a->enc[d->L_e - 1];
    size_t last = (size_t)S * B * top->w.H;
    if (d->L_e == 1 && d->bidirectional) {
        int De = d->D_e;
        be->copy_cols(be, a->hfin, K, top->cache.h + last, De, B, De);
        be->copy_cols(be, a->hfin + De, K, a->enc_bwd.cache.h, De, B, De);
        be->copy_cols(be, a->cfin, K, top->cache.c + last, De, B, De);
        be->copy_cols(be, a->cfin + De, K, a->enc_bwd.cache.c, De, B, De);
    } else {
        be->copy(be, a->hfin, top->cache.h + last, (size_t)B * K * sizeof(float));
        be->copy(be, a->cfin, top->cache.c + last, (size_t)B * K * sizeof(float));
    }
}

void seq2seq_bridge_forward(Seq2Seq *m) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    const ParamIndex *x = &m->layout.idx;
    int B = m->B, H = d->H, LH = d->L_d * d->H;
    if (d->bridge_learned) {
        be->gemm(be, false, true, B, LH, d->K, 1.0f, a->hfin, d->K, P(m, x->bridge_h_W), d->K, 0.0f, a->h0all, LH);
        be->add_bias(be, a->h0all, P(m, x->bridge_h_b), B, LH);
        be->tanh_forward(be, a->h0all, a->h0all, (size_t)B * LH);
        be->gemm(be, false, true, B, LH, d->K, 1.0f, a->cfin, d->K, P(m, x->bridge_c_W), d->K, 0.0f, a->c0all, LH);
        be->add_bias(be, a->c0all, P(m, x->bridge_c_b), B, LH);
    } else {
        be->zero(be, a->h0all, (size_t)B * LH * sizeof(float));
        be->zero(be, a->c0all, (size_t)B * LH * sizeof(float));
    }
    const float *h0 = a->h0all, *c0 = a->c0all;
    int rows = B;
    Layer *top = &a->dec[d->L_d - 1];
    if (m->G > 1) {
        /* every hypothesis row of a sentence starts from the sentence's state */
        rows = B * m->G;
        be->embedding_forward(be, a->gather_tmp, a->h0all, a->row_sent, rows, LH);
        for (int l = 0; l < d->L_d; l++)
            be->copy_cols(be, a->dec[l].cache.h, H, a->gather_tmp + l * H, LH, rows, H);
        be->embedding_forward(be, a->gather_tmp, a->c0all, a->row_sent, rows, LH);
        for (int l = 0; l < d->L_d; l++)
            be->copy_cols(be, a->dec[l].cache.c, H, a->gather_tmp + l * H, LH, rows, H);
    } else {
        for (int l = 0; l < d->L_d; l++) {
            be->copy_cols(be, a->dec[l].cache.h, H, h0 + l * H, LH, rows, H);
            be->copy_cols(be, a->dec[l].cache.c, H, c0 + l * H, LH, rows, H);
        }
    }
    /* a residual top layer's output slot 0 is its start state (Bahdanau's
     * first query); the layers below have no output before step 0 */
    if (top->out) be->copy(be, dec_top(m, 0), top->cache.h + lstm_slot(&top->cache, 0) * rows * H,
                           (size_t)rows * H * sizeof(float));
}

/* The decoder LSTM stack at step t; layer 0's input is already in place. */
static void dec_stack_step(Seq2Seq *m, int t, const int32_t *folded) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = m->B * m->G, H = m->d.H; /* decoder rows */
    for (int l = 0; l < m->d.L_d; l++) {
        Layer *L = &a->dec[l];
        if (l == 0 && folded) { /* x_t W_ih^T = [w_t, hh_{t-1}] W_ih^T: a row of emb_proj + the rest */
            float *z = lstm_step_input(&L->cache, t, B, H);
            be->embedding_forward(be, z, m->emb_proj, folded, B, 4 * H);
            if (m->d.input_feed && t > 0) /* hh_{-1} is zeros */
                be->gemm(be, false, true, B, 4 * H, H, 1.0f, hh_at(m, t - 1), H, L->w.W_ih + m->d.E, L->w.in,
                         1.0f, z, 4 * H);
            lstm_step_forward_rest(be, &L->w, t, B, m->ones, &L->cache);
            continue;
        }
        const float *x_t = L->x + ds(m, t) * B * L->w.in;
        const float *below = NULL;
        if (l > 0) {
            below = dec_output(m, l - 1, t + 1);
            /* one mask stream per layer over the batch's (T, B, H) inputs */
            x_t = layer_input(m, L->x + ds(m, t) * B * L->w.in, below, (size_t)B * H, DROP_DEC_LAYER + l,
                              (uint64_t)t * B * H);
        }
        lstm_step_forward(be, &L->w, t, B, x_t, m->ones, &L->cache);
        if (L->out) { /* residual: out = h + the output below (not dropped out) */
            float *out = dec_output(m, l, t + 1);
            be->copy(be, out, lstm_output(&L->cache, t, B, H, false), (size_t)B * H * sizeof(float));
            be->add_cols(be, out, H, below, H, B, H);
        }
    }
}

/* Decoder step t: reads w_t (the embedded, dropped-out previous token) in
 * a->w and writes the attentional vector hh_t. folded (decoding with
 * emb_proj, not Bahdanau): the previous tokens (rows) instead, whose
 * embeddings' input products are rows of emb_proj (w_t is not formed). */
void seq2seq_decoder_step(Seq2Seq *m, const AttnWeights *aw, int t, const int32_t *folded) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B * m->G, E = d->E, H = d->H, K = d->K; /* decoder rows */
    Layer *L0 = &a->dec[0];
    int in0 = d->dec_in, wc = d->wc_in;
    float *x0 = L0->x + ds(m, t) * B * in0;
    const float *w_t = a->w + ds(m, t) * B * E;
    /* a whole sequence has every step's w_t in place already (decoder_forward) */
    if (m->stepwise && !folded) be->copy_cols(be, x0, in0, w_t, E, B, E);
    AttnStep st = seq2seq_step_buffers(m, t);
    uint64_t attn_seed = drop_seed(m, DROP_ATTN), attn_off = attn_drop_offset(m, t);
    if (d->style == ATTN_STYLE_BAHDANAU) {
        attention_step_forward(be, d, aw, &a->ab, t, dec_top(m, t), &st, attn_seed, attn_off);
        be->copy_cols(be, x0 + E, in0, st.c, st.ldc, B, K);
        dec_stack_step(m, t, NULL);
        float *wcin = a->wcin + ds(m, t) * B * wc; /* c_t is in place already */
        be->copy_cols(be, wcin, wc, dec_top(m, t + 1), H, B, H);
        if (m->stepwise) be->copy_cols(be, wcin + H + K, wc, w_t, E, B, E);
    } else {
        if (d->input_feed && !folded) {
            const float *prev = t ? hh_at(m, t - 1) : m->zeros;
            be->copy_cols(be, x0 + E, in0, prev, H, B, H);
        }
        dec_stack_step(m, t, folded);
        if (d->style == ATTN_STYLE_NONE) return; /* hh_t is h_t^top itself */
        attention_step_forward(be, d, aw, &a->ab, t, dec_top(m, t + 1), &st, attn_seed, attn_off);
        float *wcin = a->wcin + ds(m, t) * B * wc; /* c_t is in place already */
        be->copy_cols(be, wcin + K, wc, dec_top(m, t + 1), H, B, H);
    }
    float *hh_t = hh_at(m, t);
    be->gemm(be, false, true, B, H, wc, 1.0f, a->wcin + ds(m, t) * B * wc, wc,
             P(m, m->layout.idx.out_Wc), wc, 0.0f, hh_t, H);
    be->tanh_forward(be, hh_t, hh_t, (size_t)B * H);
}

static void decoder_forward(Seq2Seq *m, const AttnWeights *aw) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = m->B * m->G, T = m->T, E = m->d.E; /* decoder rows */
    be->embedding_forward(be, a->w, P(m, m->layout.idx.tgt_emb), a->tgt_in, T * B, E);
    apply_dropout(m, a->w, a->w, (size_t)T * B * E, DROP_TGT_EMB, 0);
    apply_word_dropout(m, a->w, T * B, E, m->d.word_dropout_tgt, DROP_TGT_WORDS);
    /* w_t into layer 0's input (and Bahdanau's W_c input) for every step at
     * once: one copy instead of one a step */
    const ModelDims *d = &m->d;
    be->copy_cols(be, a->dec[0].x, d->dec_in, a->w, E, T * B, E);
    if (d->style == ATTN_STYLE_BAHDANAU)
        be->copy_cols(be, a->wcin + d->H + d->K, d->wc_in, a->w, E, T * B, E);
    for (int t = 0; t < T; t++) seq2seq_decoder_step(m, aw, t, NULL);
}

/* The factor of every gradient of the training loss: 1 / the target
 * tokens it is the mean over (seq2seq_set_grad_tokens); loss rows are not
 * scaled. */
static float grad_scale(const Seq2Seq *m) {
    int64_t divisor = m->grad_tokens > 0 ? m->grad_tokens : m->n_tokens;
    return divisor ? 1.0f / (float)divisor : 0.0f;
}

/* The output layer and the loss over all T*B rows, a chunk of rows at a
 * time: logits (C, V) = hd out_W^T + out_b, then the smoothed loss rows.
 * Training also finishes the layer's backward per chunk, so no chunk has
 * to be kept: dlogits (in place), out_dW += dlogits^T hd, out_db +=,
 * dhh (=) dlogits out_W (the gradient into hd, before hd's dropout). */
static void output_layer(Seq2Seq *m, bool train) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int N = m->T * m->B, H = m->d.H, V = m->d.V_t, C = output_chunk_rows(m, N);
    const float *W = out_W(m), *bias = P(m, m->layout.idx.out_b);
    float scale = grad_scale(m);
    for (int r0 = 0; r0 < N; r0 += C) {
        int n = N - r0 < C ? N - r0 : C;
        const float *x = a->hd + (size_t)r0 * H;
        be->gemm(be, false, true, n, V, H, 1.0f, x, H, W, H, 0.0f, a->logits, V);
        be->add_bias(be, a->logits, bias, n, V);
        be->softmax_xent(be, n, V, a->logits, a->tgt_out + r0, NMT_PAD_ID, m->d.label_smoothing,
                         scale, a->loss_rows + r0, a->nll_rows + r0, train ? a->logits : NULL);
        if (!train) continue;
        const float *dlogits = a->logits;
        be->gemm(be, true, false, V, H, n, 1.0f, dlogits, V, x, H, 1.0f, out_dW(m), H);
        be->bias_backward(be, G(m, m->layout.idx.out_b), dlogits, n, V);
        be->gemm(be, false, false, n, H, V, 1.0f, dlogits, V, W, H, 0.0f, a->dhh + (size_t)r0 * H, H);
    }
}

void seq2seq_set_grad_tokens(Seq2Seq *m, int64_t n) {
    NMT_ASSERT(n >= 0);
    m->grad_tokens = n;
}

NmtStatus seq2seq_set_guided_alignment(Seq2Seq *m, int cost, float weight) {
    NMT_ASSERT(weight >= 0 && (cost == ALIGN_COST_CE || cost == ALIGN_COST_MSE));
    if (weight > 0 && m->d.style == ATTN_STYLE_NONE)
        return nmt_fail(NMT_ERR_CONFIG, "train.guided_alignment_weight: the model has no attention to guide "
                        "(model.attention = none)");
    if (weight > 0 && !m->align) {
        size_t floats = (size_t)m->lim.max_T * m->lim.max_B * m->lim.max_S;
        m->align = m->be->alloc(m->be, floats * sizeof(float));
        if (!m->align)
            return nmt_fail(NMT_ERR_NOMEM, "out of memory on %s for the guided alignment: %.1f MB", m->be->name,
                            floats * sizeof(float) / 1e6);
    }
    m->align_cost = cost;
    m->align_weight = weight;
    return NMT_OK;
}

/* Guided alignment: the batch's alignment rows against every step's
 * attention (before dropout): the weighted loss rows into align_rows, and
 * the gradient of each step's attention in place of the rows, for the
 * backward (attention_step_backward). */
static void guided_alignment_forward(Seq2Seq *m, const Batch *batch) {
    Backend *be = m->be;
    int B = m->B, S = m->S, T = m->T;
    be->upload(be, m->align, batch->align, (size_t)T * B * S * sizeof(float));
    be->guided_align(be, T, B, S, m->d.heads, m->a.steps_base.pre_drop, m->step_stride, m->align_cost,
                     m->align_weight, grad_scale(m), m->align, m->a.align_rows);
}

void seq2seq_forward(Seq2Seq *m, const Batch *batch, bool train, uint64_t seed, ModelLoss *loss) {
    NMT_ASSERT(batch->B <= m->lim.max_B && batch->S <= m->lim.max_S && batch->T <= m->lim.max_T);
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    m->B = batch->B;
    m->S = batch->S;
    m->T = batch->T;
    m->train = train;
    if (train) m->emb_proj_fresh = false; /* the weights are about to change */
    m->stepwise = false;
    m->G = 1;
    m->seed = seed;
    seq2seq_carve_batch(m, m->B, m->S, m->T);
    upload_batch(m, batch);
    Acts *a = &m->a;
    int B = m->B, T = m->T, H = d->H;
    seq2seq_encoder_forward(m);
    seq2seq_bridge_forward(m);
    AttnWeights aw = attention_weights(&m->layout, m->params, m->grads);
    if (d->style != ATTN_STYLE_NONE) attention_prepare(be, d, &aw, &a->ab);
    decoder_forward(m, &aw);
    apply_dropout(m, a->hd, a->hh, (size_t)T * B * H, DROP_HD, 0);
    output_layer(m, train);
    m->align_active = train && batch->align && m->align_weight > 0;
    if (m->align_active) guided_alignment_forward(m, batch);
    /* the step's one wait for the device: loss rows, NLL rows, then the
     * guided alignment's rows */
    float *rows = m->h_f;
    size_t nll_at = (size_t)(a->nll_rows - a->loss_rows), align_at = (size_t)(a->align_rows - a->loss_rows);
    size_t end = (m->align_active ? align_at : nll_at) + (size_t)T * B;
    double loss_sum = 0, nll_sum = 0, align_sum = 0;
    be->download(be, rows, a->loss_rows, end * sizeof(float));
    for (int i = 0; i < T * B; i++) loss_sum += rows[i];
    for (int i = 0; i < T * B; i++) nll_sum += rows[nll_at + i];
    for (int i = 0; m->align_active && i < T * B; i++) align_sum += rows[align_at + i];
    loss->loss_sum = loss_sum;
    loss->nll_sum = nll_sum;
    loss->align_sum = align_sum;
    loss->n_tokens = m->n_tokens;
    loss->loss = m->n_tokens ? (loss_sum + align_sum) / (double)m->n_tokens : 0.0;
}

void seq2seq_download_logits(Seq2Seq *m, float *host) {
    Backend *be = m->be;
    int N = m->T * m->B, H = m->d.H, V = m->d.V_t, C = output_chunk_rows(m, N);
    for (int r0 = 0; r0 < N; r0 += C) { /* the forward kept no logits: computed again */
        int n = N - r0 < C ? N - r0 : C;
        be->gemm(be, false, true, n, V, H, 1.0f, m->a.hd + (size_t)r0 * H, H, out_W(m), H, 0.0f,
                 m->a.logits, V);
        be->add_bias(be, m->a.logits, P(m, m->layout.idx.out_b), n, V);
        be->download(be, host + (size_t)r0 * V, m->a.logits, (size_t)n * V * sizeof(float));
    }
}

/* ---- attention statistics ---------------------------------------------- */

bool seq2seq_attention_stats(Seq2Seq *m, const Batch *batch, AttnStats *out) {
    const ModelDims *d = &m->d;
    memset(out, 0, sizeof *out);
    out->local_p_offset = NAN;
    if (d->style == ATTN_STYLE_NONE || m->stepwise) return false;
    int B = m->B, S = m->S, n = d->heads;
    size_t BS = (size_t)B * S;
    float *w = nmt_malloc(n * BS * sizeof(float)), *p = nmt_malloc((size_t)B * sizeof(float));
    if (!w || !p) {
        nmt_free(w);
        nmt_free(p);
        return false;
    }
    double sum_max = 0, sum_min = 0, sum_ent = 0, sum_uni = 0, sum_off = 0;
    int64_t rows = 0, p_rows = 0;
    for (int t = 0; t < m->T; t++) {
        AttnStep st = seq2seq_step_buffers(m, t);
        m->be->download(m->be, w, st.pre_drop, n * BS * sizeof(float));
        if (st.p) m->be->download(m->be, p, st.p, (size_t)B * sizeof(float));
        for (int b = 0; b < B; b++) {
            if (t >= batch->tgt_len[b]) continue;
            int Sb = batch->src_len[b];
            for (int j = 0; j < n; j++) {
                const float *row = w + j * BS + (size_t)b * S;
                /* normalised per row: local-p's Gaussian leaves rows summing below 1 */
                double total = 0, mx = 0, mn = 1, ent = 0;
                for (int s = 0; s < Sb; s++) total += row[s];
                int allowed = 0;
                for (int s = 0; s < Sb && total > 0; s++) {
                    if (row[s] <= 0) continue; /* outside the window */
                    double a = row[s] / total;
                    allowed++;
                    mx = fmax(mx, a);
                    mn = fmin(mn, a);
                    ent -= a * log(a);
                }
                if (!allowed) continue;
                sum_max += mx;
                sum_min += mn;
                sum_ent += ent;
                sum_uni += log((double)allowed);
                rows++;
            }
            if (st.p) {
                sum_off += fabs(p[b] / Sb - (double)t / batch->tgt_len[b]);
                p_rows++;
            }
        }
    }
    nmt_free(w);
    nmt_free(p);
    if (rows) {
        out->mean_max = sum_max / rows;
        out->mean_min = sum_min / rows;
        out->mean_entropy = sum_ent / rows;
        out->mean_uniform_entropy = sum_uni / rows;
    }
    if (p_rows) out->local_p_offset = sum_off / p_rows;
    out->rows = rows;
    return rows > 0;
}
