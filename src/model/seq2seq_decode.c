/* seq2seq_decode.c: step-by-step decoding of a Seq2Seq (decode_step.h,
 * docs/decoding.md): a batch's sources encoded once, then per step the
 * decoder, the output layer and the top-k of every row; the reorder that
 * continues beam rows in the decoder state rings and drops finished
 * sentences; the embedding fold and the output shortlist. Letters as in
 * seq2seq_internal.h. */
#include <stdlib.h>
#include <string.h>

#include "model/decode_step.h"
#include "model/seq2seq_internal.h"

/* ---- step-by-step decoding (decode_step.h) ----------------------------- */

/* The query form's gather of the head contexts for the current rows
 * (AttnBatch.cat_idx; beam search with several heads). */
static void upload_cat_idx(Seq2Seq *m) {
    if (!m->a.ab.cat_idx) return;
    int R = m->B * m->G, n = m->d.heads;
    attention_query_form_rows(R, n, m->h_idx);
    m->be->upload(m->be, m->a.ab.cat_idx, m->h_idx, (size_t)R * n * 4);
}

Backend *seq2seq_backend(const Seq2Seq *m) { return m->be; }
const ModelLimits *seq2seq_limits(const Seq2Seq *m) { return &m->lim; }

void seq2seq_decode_setup(Seq2Seq *m, const Batch *batch, int G, int T) {
    NMT_ASSERT(batch->B <= m->lim.max_B && batch->S <= m->lim.max_S && T >= 1 &&
               T <= (m->lim.max_decode_T > 0 ? m->lim.max_decode_T : 1) &&
               G <= (m->lim.max_beam > 1 ? m->lim.max_beam : 1));
    m->B = batch->B;
    m->S = batch->S;
    m->T = T;
    m->G = G;
    m->train = false;
    m->stepwise = true;
    m->ring_phase = 0;
    m->seed = 0;
    m->decode_rows = 0;
    m->decode_steps = 0;
    NMT_ASSERT(m->topk_n == 0); /* the last search finished what it queued */
    m->best_k = 0;
    m->step_bias = NULL;
    for (int b = 0; b < m->B; b++) m->dec_len[b] = batch->src_len[b];
    seq2seq_carve_batch(m, m->B, m->S, T);
    seq2seq_upload_source(m, batch);
    upload_cat_idx(m);
    seq2seq_encoder_forward(m);
    seq2seq_bridge_forward(m);
    AttnWeights aw = attention_weights(&m->layout, m->params, m->grads);
    if (m->d.style != ATTN_STYLE_NONE) attention_prepare(m->be, &m->d, &aw, &m->a.ab);
    /* the output bias of these weights, with PAD and BOS at -infinity: one
     * add per step masks them (a shortlist leaves them out instead) */
    Backend *be = m->be;
    be->copy(be, m->dec_bias, P(m, m->layout.idx.out_b), (size_t)m->d.V_t * sizeof(float));
    be->copy_cols(be, m->dec_bias + NMT_PAD_ID, 1, m->neg_inf, 1, 1, 1);
    be->copy_cols(be, m->dec_bias + NMT_BOS_ID, 1, m->neg_inf, 1, 1, 1);
}

void seq2seq_decode_end(Seq2Seq *m) {
    NMT_ASSERT(m->topk_n == 0); /* every topk queued was finished */
    m->G = 1;
    m->stepwise = false;
}

int seq2seq_decode_rows(const Seq2Seq *m) { return m->B * m->G; }
int seq2seq_decode_vocab(const Seq2Seq *m) { return m->sl_n ? m->sl_n : m->d.V_t; }
/* The step leaves the GEMM's logits; the bias and the log-softmax are
 * applied by the top-k in the same pass (Backend.topk), or here, in place,
 * when the scores themselves are asked for (ensembles). */
float *seq2seq_decode_scores(Seq2Seq *m) {
    if (m->step_bias) {
        Backend *be = m->be;
        int R = m->B * m->G, V = seq2seq_decode_vocab(m);
        be->add_bias(be, m->a.logits, m->step_bias, R, V);
        if (m->step_logprobs) be->log_softmax(be, R, V, m->a.logits, m->a.logits);
        m->step_bias = NULL;
    }
    return m->a.logits;
}
int64_t seq2seq_decode_row_steps(const Seq2Seq *m) { return m->decode_rows; }
int seq2seq_decode_steps(const Seq2Seq *m) { return m->decode_steps; }

void seq2seq_decode_step(Seq2Seq *m, int t, const int32_t *prev, bool logprobs) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int R = m->B * m->G, E = m->d.E, H = m->d.H;
    AttnWeights aw = attention_weights(&m->layout, m->params, m->grads);
    /* the tokens: greedy decoding feeds back the best token of every row,
     * which the device has already (the last top-1), unless rows moved;
     * prev NULL says so without a host copy to compare (a pipelined step) */
    const int32_t *tokens = (const int32_t *)(a->best + R);
    bool on_device = m->best_k == 1 && m->best_rows == R && !m->sl_n; /* a shortlist's are its indices */
    if (!prev) NMT_ASSERT(on_device);
    else if (!(on_device && m->topk_n == 0 &&
               !memcmp(prev, m->h_best + (size_t)m->best_slot * m->h_best_slot + R, (size_t)R * 4))) {
        int32_t *tgt_t = a->tgt_in + ds(m, t) * R;
        be->upload(be, tgt_t, prev, (size_t)R * 4);
        tokens = tgt_t;
    }
    bool folded = m->emb_proj_fresh && m->d.style != ATTN_STYLE_BAHDANAU;
    if (!folded) be->embedding_forward(be, a->w + ds(m, t) * R * E, P(m, m->layout.idx.tgt_emb), tokens, R, E);
    seq2seq_decoder_step(m, &aw, t, folded ? tokens : NULL);
    /* the output layer, or its shortlisted rows; PAD and BOS are never
     * output: -infinity in dec_bias, left out of a shortlist */
    int V = seq2seq_decode_vocab(m);
    const float *W = m->sl_n ? m->sl_W : out_W(m), *bias = m->sl_n ? m->sl_b : m->dec_bias;
    be->gemm(be, false, true, R, V, H, 1.0f, hh_at(m, t), H, W, H, 0.0f, a->logits, V);
    NMT_ASSERT(bias);
    m->step_bias = bias; /* added by the top-k or seq2seq_decode_scores */
    m->step_logprobs = logprobs;
    m->decode_rows += R;
    m->decode_steps++;
}

void seq2seq_decode_topk_start(Seq2Seq *m, int k) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int R = m->B * m->G;
    NMT_ASSERT(m->topk_n < BACKEND_MAX_PENDING_DOWNLOADS && (size_t)2 * R * k <= m->h_best_slot);
    /* scores then ids in one block: one wait for the device per step */
    size_t n = (size_t)R * k;
    be->topk(be, a->logits, m->step_bias, R, seq2seq_decode_vocab(m), m->step_bias && m->step_logprobs, k,
             a->best, (int32_t *)(a->best + n));
    int slot = (m->best_slot + 1) % BACKEND_MAX_PENDING_DOWNLOADS;
    be->download_start(be, m->h_best + (size_t)slot * m->h_best_slot, a->best, 2 * n * sizeof(float));
    int q = (m->topk_head + m->topk_n++) % BACKEND_MAX_PENDING_DOWNLOADS;
    m->topk_queue[q].slot = slot;
    m->topk_queue[q].k = k;
    m->topk_queue[q].rows = R;
    m->best_k = k;
    m->best_rows = R;
    m->best_slot = slot;
}

void seq2seq_decode_topk_finish(Seq2Seq *m, float *values, int32_t *ids) {
    NMT_ASSERT(m->topk_n > 0);
    int q = m->topk_head;
    m->topk_head = (q + 1) % BACKEND_MAX_PENDING_DOWNLOADS;
    m->topk_n--;
    m->be->download_finish(m->be);
    size_t n = (size_t)m->topk_queue[q].rows * m->topk_queue[q].k;
    const float *h = m->h_best + (size_t)m->topk_queue[q].slot * m->h_best_slot;
    if (values) memcpy(values, h, n * sizeof(float));
    memcpy(ids, h + n, n * sizeof(int32_t));
    if (m->sl_n)
        for (size_t i = 0; i < n; i++)
            if (ids[i] >= 0) ids[i] = m->sl_host[ids[i]];
}

void seq2seq_decode_topk(Seq2Seq *m, int k, float *values, int32_t *ids) {
    seq2seq_decode_topk_start(m, k);
    seq2seq_decode_topk_finish(m, values, ids);
}

bool seq2seq_decode_has_shortlist(const Seq2Seq *m) { return m->sl_n > 0; }

void seq2seq_decode_attention(Seq2Seq *m, int t, float *host) {
    AttnStep st = seq2seq_step_buffers(m, t);
    m->be->download(m->be, host, st.pre_drop, (size_t)m->d.heads * m->B * m->G * m->S * sizeof(float));
}

/* Keeps only sentences keep[0..n) (ascending columns) of the source side:
 * keys, projected keys, lengths and local-m centres shrink to n columns. */
static void compact_sources(Seq2Seq *m, const int32_t *keep, int n) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, S = m->S, G = m->G, R = n * G;
    int32_t *idx = m->h_idx;
    if (d->style != ATTN_STYLE_NONE) {
        /* rows i*B + keep[j] -> i*n + j: keys (S, B, K) -> (S, n, K) take
         * i < S; projected keys (heads, S, B, qd) -> (heads, S, n, qd) take
         * i < heads*S, the same list longer: one upload for both */
        bool kp = attention_projects_keys(d) && !a->ab.qk; /* the query form has no kp */
        int rows = kp ? d->heads * S : S;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < n; j++) idx[i * n + j] = i * B + keep[j];
        be->upload(be, a->compact_idx, idx, (size_t)rows * n * 4);
        be->embedding_forward(be, a->compact_tmp, a->keys, a->compact_idx, S * n, d->K);
        be->copy(be, a->keys, a->compact_tmp, (size_t)S * n * d->K * sizeof(float));
        if (kp) {
            int qd = attention_qdim(d);
            be->embedding_forward(be, a->compact_tmp, a->ab.kp, a->compact_idx, rows * n, qd);
            be->copy(be, a->ab.kp, a->compact_tmp, (size_t)rows * n * qd * sizeof(float));
        }
    }
    for (int j = 0; j < n; j++) m->dec_len[j] = m->dec_len[keep[j]];
    m->B = n;
    a->ab.B = n;
    upload_cat_idx(m);
    int lens = R * a->ab.len_copies; /* the row lengths, len_copies times over */
    for (int i = 0; i < lens; i++) m->h_ids[i] = m->dec_len[i % n];
    be->upload(be, G > 1 ? a->row_len : a->src_len, m->h_ids, (size_t)lens * 4);
    if (d->mode == ATTN_MODE_LOCAL_M && d->style != ATTN_STYLE_NONE) {
        for (int t = 0; t < m->T; t++)
            for (int r = 0; r < R; r++) {
                int last = m->dec_len[r % n] - 1;
                m->h_f[(size_t)t * R + r] = (float)(t < last ? t : last);
            }
        be->upload(be, a->centers, m->h_f, (size_t)m->T * R * sizeof(float));
    }
}

/* A ring of two slots of (rows, H) each, at `base` (slot i at i * rows * H):
 * rows a->parent (R of them) of slot `from` (R_old rows) are to be the
 * ring's state for the next step. Gathered straight into the other slot
 * `to` (read no more) when the two do not overlap at these row counts:
 * returns true, and the caller turns the ring's phase so that `to` is read
 * as the slot. Else (the batch shrank and `from` is the first slot) through
 * gather_tmp and back into `from`: false. */
static bool ring_gather(Seq2Seq *m, float *base, size_t from, size_t to, int R_old, int R) {
    Backend *be = m->be;
    int H = m->d.H;
    float *src = base + from * R_old * H, *dst = base + to * R * H;
    bool apart = dst + (size_t)R * H <= src || src + (size_t)R_old * H <= dst;
    if (apart) {
        be->embedding_forward(be, dst, src, m->a.parent, R, H);
        return true;
    }
    be->embedding_forward(be, m->a.gather_tmp, src, m->a.parent, R, H);
    be->copy(be, base + from * R * H, m->a.gather_tmp, (size_t)R * H * sizeof(float));
    return false;
}

void seq2seq_decode_reorder(Seq2Seq *m, int t, const int32_t *rows, const int32_t *keep, int n_keep) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int H = m->d.H, R_old = m->B * m->G, R = n_keep * m->G;
    NMT_ASSERT(n_keep >= 1 && n_keep <= m->B);
    be->upload(be, a->parent, rows, (size_t)R * 4);
    /* the states after step t (ring slot t + 1) and, with attention, hh_t
     * (read by input feeding at t + 1); slot t is read no more */
    size_t from = lstm_slot(&a->dec[0].cache, (size_t)t + 1), to = lstm_slot(&a->dec[0].cache, (size_t)t);
    for (int l = 0; l < m->d.L_d; l++) {
        Layer *L = &a->dec[l];
        bool turn = ring_gather(m, L->cache.h, from, to, R_old, R);
        ring_gather(m, L->cache.c, from, to, R_old, R); /* the same decision */
        /* a residual output is read at the next step only at the top
         * (Bahdanau's query, hh without attention); laid out as h */
        if (L->out && l == m->d.L_d - 1) ring_gather(m, L->out, from, to, R_old, R);
        /* the gather wrote slot t, which step t + 1 is to read as its slot
         * t + 1: the phase goes back one (mod 2, forward one) */
        if (turn) L->cache.phase = (L->cache.phase + L->cache.ring - 1) % L->cache.ring;
    }
    if (m->d.style != ATTN_STYLE_NONE) {
        if (ring_gather(m, a->hh, ds(m, t), ds(m, t + 1), R_old, R)) m->ring_phase = (m->ring_phase + 1) % DECODE_RING;
    } else { /* hh_t is the top output: slot t + 1 of the top layer, at the new row count */
        a->hh = dec_layer_outputs(&a->dec[m->d.L_d - 1]) + (size_t)R * H;
        a->hd = a->hh; /* decoding never drops */
    }
    if (n_keep < m->B) compact_sources(m, keep, n_keep);
}

NmtStatus seq2seq_fold_embeddings(Seq2Seq *m, bool *folded) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    int G4 = 4 * d->H;
    size_t bytes = (size_t)d->V_t * G4 * sizeof(float);
    m->emb_proj_fresh = false;
    if (folded) *folded = false;
    if (d->style == ATTN_STYLE_BAHDANAU || bytes > SEQ2SEQ_FOLD_MAX_BYTES) return NMT_OK;
    if (!m->emb_proj) m->emb_proj = be->alloc(be, bytes);
    if (!m->emb_proj) return NMT_OK; /* no room: decoding embeds as in training */
    /* emb_proj (V_t, 4H) = tgt_emb (V_t, E) W_ih[:, :E]^T, W_ih (4H, dec_in) */
    be->gemm(be, false, true, d->V_t, G4, d->E, 1.0f, P(m, m->layout.idx.tgt_emb), d->E,
             P(m, m->layout.idx.dec[0].W_ih), d->dec_in, 0.0f, m->emb_proj, G4);
    m->emb_proj_fresh = true;
    if (folded) *folded = true;
    return NMT_OK;
}

NmtStatus seq2seq_set_shortlist(Seq2Seq *m, const int32_t *ids, int n) {
    Backend *be = m->be;
    int V = m->d.V_t, H = m->d.H;
    m->sl_n = 0;
    if (n == 0) return NMT_OK;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V || ids[i] == NMT_PAD_ID || ids[i] == NMT_BOS_ID || (i && ids[i] <= ids[i - 1]))
            return nmt_fail(NMT_ERR_USAGE, "output shortlist: id %d at %d is not an ascending id below %d "
                            "other than PAD and BOS", ids[i], i, V);
    if (!m->sl_W) {
        m->sl_ids = be->alloc(be, (size_t)V * 4);
        m->sl_W = be->alloc(be, (size_t)V * H * sizeof(float));
        m->sl_b = be->alloc(be, (size_t)V * sizeof(float));
        m->sl_host = nmt_malloc((size_t)V * 4);
        if (!m->sl_ids || !m->sl_W || !m->sl_b || !m->sl_host) return nmt_fail_nomem("the output shortlist");
    }
    memcpy(m->sl_host, ids, (size_t)n * 4);
    be->upload(be, m->sl_ids, ids, (size_t)n * 4);
    be->embedding_forward(be, m->sl_W, out_W(m), m->sl_ids, n, H);
    be->embedding_forward(be, m->sl_b, P(m, m->layout.idx.out_b), m->sl_ids, n, 1);
    m->sl_n = n;
    return NMT_OK;
}
