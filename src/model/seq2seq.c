/* seq2seq.c: the Seq2Seq model's memory (seq2seq.h, docs/model.md): all
 * device memory of a batch is carved from one arena by carve(), which runs
 * once in measuring mode at creation to size the arena for the largest
 * batch; then creation, freeing and initialisation. Step-by-step decoding
 * keeps only the last DECODE_RING steps of the per-step buffers (decoder
 * states, inputs, attention, attentional vectors): its memory does not
 * grow with the output length. The passes are in seq2seq_forward.c,
 * seq2seq_backward.c and seq2seq_decode.c (seq2seq_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/seq2seq_internal.h"

/* ---- arena ------------------------------------------------------------- */

typedef struct {
    char *base; /* NULL: measuring */
    size_t used;
} Arena;

static void *take(Arena *ar, size_t n_bytes) {
    size_t at = (ar->used + 63) & ~(size_t)63;
    ar->used = at + n_bytes;
    return ar->base ? ar->base + at : NULL;
}
static float *takef(Arena *ar, size_t n) { return take(ar, n * sizeof(float)); }

static LstmWeights lstm_weights(const Seq2Seq *m, LstmParamIndex x, int in, int size) {
    LstmWeights w = {P(m, x.W_ih), P(m, x.W_hh), P(m, x.b), G(m, x.W_ih), G(m, x.W_hh), G(m, x.b), in, size,
                     P(m, x.ln_ih), P(m, x.ln_hh), G(m, x.ln_ih), G(m, x.ln_hh)};
    return w;
}

/* One layer's buffers for a sequence of `len` steps (ring > 0: `len` is
 * at most the ring's size, see LstmCache); out_floats: the size of its
 * residual output (Layer.out), 0 for none; layer_norm: the products and
 * their statistics (LstmCache.u, r) too. */
static void carve_layer(Arena *ar, Layer *L, int len, int B, int in, int size, int ring, size_t out_floats,
                        bool layer_norm) {
    int states = ring ? ring : len + 1; /* state slots */
    L->cache.ring = ring;
    L->cache.phase = 0;
    L->cache.gates = takef(ar, (size_t)len * B * 4 * size);
    L->cache.u = layer_norm ? takef(ar, (size_t)len * B * 4 * size) : NULL;
    L->cache.r = layer_norm ? takef(ar, (size_t)len * B * 4 * size) : NULL;
    L->cache.u_stats = layer_norm ? takef(ar, (size_t)len * B * 2) : NULL;
    L->cache.r_stats = layer_norm ? takef(ar, (size_t)len * B * 2) : NULL;
    L->cache.h = takef(ar, (size_t)states * B * size);
    L->cache.c = takef(ar, (size_t)states * B * size);
    L->x = in ? takef(ar, (size_t)len * B * in) : NULL;
    L->out = out_floats ? takef(ar, out_floats) : NULL;
}
/* in == 0: the layer shares its input gradient (set by the caller) */
static void carve_layer_grads(Arena *ar, Layer *L, int len, int B, int in, int size) {
    L->dx = in ? takef(ar, (size_t)len * B * in) : NULL;
    L->dc = takef(ar, (size_t)B * size);
    L->dh_rec = takef(ar, (size_t)B * size);
}

/* Lays out every buffer for a batch of (B, S, T); with ar->base NULL it
 * only measures. */
static void carve(Seq2Seq *m, Arena *ar, int B, int S, int T) {
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    /* measuring a training batch sizes the dropout buffers too (decoding never drops) */
    bool drop = dropping(m) || (!ar->base && m->train);
    int E = d->E, H = d->H, K = d->K, n = d->heads, qd = attention_qdim(d);
    int R = B * m->G; /* decoder rows: G hypotheses per sentence, row g*B + b */
    /* per-step buffers: one slot per step, or the decoding ring */
    int Ts = m->stepwise && T > DECODE_RING ? DECODE_RING : T;
    a->src = take(ar, (size_t)S * B * 4);
    a->tgt_in = take(ar, (size_t)Ts * R * 4);
    a->tgt_out = take(ar, (size_t)Ts * R * 4);
    /* decoding several heads in the query form projects no keys (attention.h) */
    bool attn = d->style != ATTN_STYLE_NONE;
    int qf = m->be->decode_query_form;
    bool qform = attn && m->stepwise && attention_query_form(d) && (qf == 2 || (qf == 1 && m->G == 1));
    int len_copies = qform && n > 1 ? n : 1; /* AttnBatch.len_copies */
    a->src_len = take(ar, (size_t)B * (m->G > 1 ? 1 : len_copies) * 4);
    /* beam search: row -> sentence map, gather indices and scratch */
    a->row_len = m->G > 1 ? take(ar, (size_t)R * len_copies * 4) : a->src_len;
    a->row_sent = m->G > 1 ? take(ar, (size_t)R * 4) : NULL;
    a->parent = m->stepwise ? take(ar, (size_t)R * 4) : NULL;
    a->gather_tmp = m->stepwise ? takef(ar, (size_t)R * (d->L_d * H > H ? d->L_d * H : H)) : NULL;
    bool kproj = attn && attention_projects_keys(d) && !qform;
    size_t kp_floats = kproj ? (size_t)n * S * B * qd : 0, key_floats = (size_t)S * B * K;
    a->compact_idx = m->stepwise ? take(ar, (size_t)n * S * B * 4) : NULL;
    a->compact_tmp = m->stepwise ? takef(ar, kp_floats > key_floats ? kp_floats : key_floats) : NULL;
    a->keep_src = takef(ar, (size_t)S * B);
    a->centers = takef(ar, (size_t)T * R);
    for (int l = 0; l < d->L_e; l++) {
        int in = l == 0 ? E : K, size = l == 0 ? d->D_e : K;
        size_t out = residual_layer(m, l) ? (size_t)S * B * K : 0; /* the output of time s at s */
        carve_layer(ar, &a->enc[l], S, B, in, size, 0, out, d->layer_norm);
        a->enc[l].w = lstm_weights(m, m->layout.idx.enc_fwd[l], in, size);
    }
    if (d->bidirectional) {
        /* the backward direction reads the same input as the forward one */
        carve_layer(ar, &a->enc_bwd, S, B, 0, d->D_e, 0, 0, d->layer_norm);
        a->enc_bwd.x = a->enc[0].x;
        a->enc_bwd.w = lstm_weights(m, m->layout.idx.enc0_bwd, E, d->D_e);
        a->e0 = takef(ar, (size_t)S * B * K);
    } else {
        a->e0 = a->enc[0].cache.h ? a->enc[0].cache.h + (size_t)B * K : NULL;
    }
    Layer *top = &a->enc[d->L_e - 1];
    a->keys = d->L_e == 1 ? a->e0 : (top->cache.h ? enc_layer_output(top, B, K) : NULL);
    a->hfin = takef(ar, (size_t)B * K);
    a->cfin = takef(ar, (size_t)B * K);
    a->h0all = takef(ar, (size_t)B * d->L_d * H);
    a->c0all = takef(ar, (size_t)B * d->L_d * H);
    a->w = takef(ar, (size_t)Ts * R * E);
    for (int l = 0; l < d->L_d; l++) {
        int in = l == 0 ? d->dec_in : H;
        int ring = m->stepwise ? DECODE_RING : 0;
        size_t out = residual_layer(m, l) ? (size_t)(ring ? ring : Ts + 1) * R * H : 0; /* as cache.h */
        carve_layer(ar, &a->dec[l], Ts, R, in, H, ring, out, d->layer_norm);
        a->dec[l].w = lstm_weights(m, m->layout.idx.dec[l], in, H);
    }
    /* attention */
    AttnBatch *ab = &a->ab;
    ab->B = B;
    ab->G = m->G;
    ab->S = S;
    ab->keys = a->keys;
    ab->src_len = m->G > 1 ? a->row_len : a->src_len;
    ab->len_copies = len_copies;
    ab->centers = d->mode == ATTN_MODE_LOCAL_M ? a->centers : NULL;
    ab->kp = kproj ? takef(ar, (size_t)n * S * B * qd) : a->keys;
    ab->qk = qform ? takef(ar, (size_t)n * R * K) : NULL;
    ab->cat_idx = qform && m->G > 1 ? take(ar, (size_t)R * n * 4) : NULL;
    /* per-step attention buffers: one block per step, same layout in each;
     * every block starts 64-byte aligned, so step t is block 0 + t * stride */
    take(ar, 0);
    size_t before = ar->used;
    AttnStep *st = &a->steps_base;
    memset(st, 0, sizeof *st);
    if (attn) {
        size_t BS = (size_t)R * S;
        bool attn_drop = attn_dropping(m) || (!ar->base && m->train);
        for (int t = 0; t < Ts; t++) {
            AttnStep s;
            s.qp = attention_projects_query(d) ? takef(ar, (size_t)n * R * qd) : NULL;
            bool lp = d->mode == ATTN_MODE_LOCAL_P;
            s.ptanh = lp ? takef(ar, (size_t)R * H) : NULL;
            s.u = lp ? takef(ar, R) : NULL;
            s.p = lp ? takef(ar, R) : NULL;
            s.scores = takef(ar, n * BS);
            s.probs = takef(ar, n * BS);
            s.pre_drop = takef(ar, n * BS);
            s.weights = attn_drop ? takef(ar, n * BS) : s.pre_drop;
            s.dropped = attn_dropping(m);
            s.c = s.cat = NULL; /* in wcin and cat_all (step()) */
            if (t == 0) {
                *st = s;
                m->step_stride = ((ar->used - before + 63) & ~(size_t)63) / sizeof(float);
            }
        }
        a->cat_all = n > 1 ? takef(ar, (size_t)Ts * R * n * K) : NULL;
        a->wcin = takef(ar, (size_t)Ts * R * d->wc_in);
        a->hh = takef(ar, (size_t)Ts * R * H);
    } else {
        a->cat_all = a->wcin = NULL;
        Layer *dtop = &a->dec[d->L_d - 1];
        a->hh = dtop->cache.h ? dec_layer_outputs(dtop) + (size_t)R * H : NULL; /* hh_t = the top output of step t */
    }
    a->hd = drop ? takef(ar, (size_t)T * R * H) : a->hh;
    a->logits = takef(ar, (size_t)(m->stepwise ? R : output_chunk_rows(m, T * R)) * d->V_t);
    int k = m->G > m->lim.max_sample_k ? m->G : m->lim.max_sample_k; /* top-k width: beam, or sampling's */
    a->best = takef(ar, (size_t)2 * R * k);
    /* one block, so that the loss is read back with one download (none
     * while decoding) */
    int Tl = m->stepwise ? 0 : T;
    a->loss_rows = takef(ar, (size_t)3 * Tl * R);
    a->nll_rows = a->loss_rows ? a->loss_rows + (size_t)Tl * R : NULL;
    a->align_rows = a->loss_rows ? a->loss_rows + (size_t)2 * Tl * R : NULL;
    if (m->stepwise) { /* decoding: no backward */
        a->grad_begin = a->grad_end = NULL;
        return;
    }

    /* written whole by the training forward (output_layer), before backward */
    a->dhh = takef(ar, (size_t)T * B * H);
    /* gradients: one contiguous region, zeroed by backward */
    size_t grad_start = ar->used;
    for (int l = 0; l < d->L_e; l++) {
        int in = l == 0 ? E : K, size = l == 0 ? d->D_e : K;
        carve_layer_grads(ar, &a->enc[l], S, B, in, size);
        a->dE[l] = takef(ar, (size_t)S * B * K);
    }
    if (d->bidirectional) {
        carve_layer_grads(ar, &a->enc_bwd, S, B, 0, d->D_e);
        a->enc_bwd.dx = a->enc[0].dx; /* both directions add into one input gradient */
        a->dh_f = takef(ar, (size_t)S * B * d->D_e);
        a->dh_b = takef(ar, (size_t)S * B * d->D_e);
        a->dcf_f = takef(ar, (size_t)B * d->D_e);
        a->dcf_b = takef(ar, (size_t)B * d->D_e);
    }
    a->dkeys = a->dE[d->L_e - 1];
    for (int l = 0; l < d->L_d; l++) carve_layer_grads(ar, &a->dec[l], T, B, l == 0 ? d->dec_in : H, H);
    ab->dkeys = a->dkeys;
    ab->dkp = attn && attention_projects_keys(d) ? takef(ar, (size_t)n * S * B * qd) : a->dkeys;
    a->dwcin = takef(ar, (size_t)(attn && n > 1 ? T : 1) * B * (d->wc_in ? d->wc_in : 1));
    a->dpre = takef(ar, (size_t)(attn ? T : 1) * B * H);
    a->dh_top = takef(ar, (size_t)B * H);
    a->dh_tmp = takef(ar, (size_t)B * H);
    a->dres = d->residual ? takef(ar, (size_t)B * H) : NULL;
    a->dq_carry = takef(ar, (size_t)B * H);
    a->dw = takef(ar, (size_t)T * B * E);
    a->dh0all = takef(ar, (size_t)B * d->L_d * H);
    a->dc0all = takef(ar, (size_t)B * d->L_d * H);
    a->dpre_bridge = takef(ar, (size_t)B * d->L_d * H);
    a->dhfin = takef(ar, (size_t)B * K);
    a->dcfin = takef(ar, (size_t)B * K);
    AttnScratch *sc = &a->as;
    bool local_p = d->mode == ATTN_MODE_LOCAL_P;
    sc->T = T;
    sc->dcat = takef(ar, (size_t)B * n * K);
    sc->dw = takef(ar, (size_t)B * S);
    sc->dscores = takef(ar, (size_t)B * S);
    sc->dcenter = takef(ar, B);
    sc->dp = takef(ar, B);
    sc->du = takef(ar, B);
    sc->dptanh = takef(ar, (size_t)B * H);
    sc->dqp = attn && attention_projects_query(d) ? takef(ar, (size_t)n * T * B * qd) : NULL;
    sc->dpre = attn && local_p ? takef(ar, (size_t)T * B * H) : NULL;
    a->grad_begin = ar->base ? ar->base + grad_start : NULL;
    a->grad_end = ar->base ? ar->base + ar->used : NULL;
}

void seq2seq_carve_batch(Seq2Seq *m, int B, int S, int T) {
    Arena ar = {m->arena, 0};
    carve(m, &ar, B, S, T);
    NMT_ASSERT(ar.used <= m->arena_bytes);
}

/* Step t's attention buffers. */
AttnStep seq2seq_step_buffers(const Seq2Seq *m, int t) {
    AttnStep s = m->a.steps_base;
    size_t off = ds(m, t) * m->step_stride;
#define SHIFT(f) if (s.f) s.f += off
    SHIFT(qp); SHIFT(ptanh); SHIFT(u); SHIFT(p); SHIFT(scores); SHIFT(probs); SHIFT(weights);
    SHIFT(pre_drop);
#undef SHIFT
    /* the context goes straight into W_c's input: [c_t; h_t^top] (Luong),
     * [s_t; c_t; w_t] (Bahdanau) */
    const ModelDims *d = &m->d;
    size_t R = (size_t)m->B * m->G;
    if (m->a.wcin) {
        s.c = m->a.wcin + ds(m, t) * R * d->wc_in + (d->style == ATTN_STYLE_BAHDANAU ? d->H : 0);
        s.ldc = d->wc_in;
    }
    s.cat = d->heads > 1 ? m->a.cat_all + ds(m, t) * R * d->heads * d->K : s.c;
    return s;
}

/* ---- creation ---------------------------------------------------------- */

NmtStatus seq2seq_create(Backend *be, const ModelDims *dims, ModelLimits lim, Seq2Seq **out) {
    *out = NULL;
    Seq2Seq *m = nmt_calloc(1, sizeof *m);
    if (!m) return nmt_fail_nomem("creating the model");
    m->be = be;
    m->d = *dims;
    m->lim = lim;
    param_layout_build(dims, &m->layout);
    Arena measure = {NULL, 0};
    m->train = true;
    m->G = 1;
    carve(m, &measure, lim.max_B, lim.max_S, lim.max_T);
    /* decoding, greedy and with the widest beam */
    int beam = lim.max_beam > 1 ? lim.max_beam : 1;
    m->train = false;
    m->stepwise = true;
    for (int g = 1; g <= beam; g = g == beam ? beam + 1 : beam) {
        Arena measure_decode = {NULL, 0};
        m->G = g;
        carve(m, &measure_decode, lim.max_B, lim.max_S, lim.max_decode_T > 0 ? lim.max_decode_T : 1);
        if (measure_decode.used > measure.used) measure.used = measure_decode.used;
    }
    m->G = 1;
    m->stepwise = false;
    m->arena_bytes = measure.used + 64;
    int widest = dims->H > dims->K ? dims->H : dims->K;
    if (dims->E > widest) widest = dims->E;
    int longest = lim.max_S > lim.max_T ? lim.max_S : lim.max_T;
    if (lim.max_decode_T > longest) longest = lim.max_decode_T;
    size_t rows = (size_t)lim.max_B * beam; /* decoder rows at most */
    int top = beam > lim.max_sample_k ? beam : lim.max_sample_k; /* the widest top-k */
    if (dims->heads > longest) longest = dims->heads; /* the row lengths, once per head */
    size_t stage = (size_t)longest * rows;
    m->params = be->alloc(be, m->layout.total * sizeof(float));
    m->grads = be->alloc(be, m->layout.total * sizeof(float));
    m->arena = be->alloc(be, m->arena_bytes);
    m->zeros = be->alloc(be, rows * widest * sizeof(float));
    m->ones = be->alloc(be, rows * sizeof(float));
    m->neg_inf = be->alloc(be, sizeof(float));
    m->dec_bias = be->alloc(be, (size_t)dims->V_t * sizeof(float));
    m->h_ids = nmt_malloc(stage * sizeof(int32_t));
    m->h_f = nmt_malloc(3 * stage * sizeof(float)); /* 3: the loss, NLL and alignment rows together */
    /* gather indices: compact_sources's (heads S B), the query form's (B beam heads) */
    size_t idx_rows = (size_t)(lim.max_S > beam ? lim.max_S : beam) * lim.max_B;
    m->h_idx = nmt_malloc((size_t)dims->heads * idx_rows * sizeof(int32_t));
    m->dec_len = nmt_malloc((size_t)lim.max_B * sizeof(int));
    m->h_best_slot = (size_t)2 * rows * top;
    m->h_best = nmt_malloc(BACKEND_MAX_PENDING_DOWNLOADS * m->h_best_slot * sizeof(float));
    if (!m->params || !m->grads || !m->arena || !m->zeros || !m->ones || !m->neg_inf || !m->dec_bias || !m->h_ids ||
        !m->h_f || !m->h_idx || !m->dec_len || !m->h_best) {
        size_t weights = m->layout.total * sizeof(float);
        seq2seq_free(m);
        return nmt_fail(NMT_ERR_NOMEM, "out of memory on %s for the model: %.1f MB of weights, as much "
                        "for their gradients, and %.1f MB of activations for batches up to %d x %d x %d",
                        be->name, weights / 1e6, measure.used / 1e6, lim.max_B, lim.max_S, lim.max_T);
    }
    for (size_t r = 0; r < rows; r++) m->h_f[r] = 1.0f;
    be->upload(be, m->ones, m->h_f, rows * sizeof(float));
    m->h_f[0] = -INFINITY;
    be->upload(be, m->neg_inf, m->h_f, sizeof(float));
    *out = m;
    return NMT_OK;
}

void seq2seq_free(Seq2Seq *m) {
    if (!m) return;
    Backend *be = m->be;
    be->release(be, m->params);
    be->release(be, m->grads);
    be->release(be, m->arena);
    be->release(be, m->zeros);
    be->release(be, m->ones);
    be->release(be, m->neg_inf);
    be->release(be, m->dec_bias);
    be->release(be, m->sl_ids);
    be->release(be, m->sl_W);
    be->release(be, m->sl_b);
    be->release(be, m->emb_proj);
    be->release(be, m->align);
    nmt_free(m->h_ids);
    nmt_free(m->h_f);
    nmt_free(m->h_idx);
    nmt_free(m->dec_len);
    nmt_free(m->h_best);
    nmt_free(m->sl_host);
    nmt_free(m);
}

const ModelDims *seq2seq_dims(const Seq2Seq *m) { return &m->d; }
const ParamLayout *seq2seq_layout(const Seq2Seq *m) { return &m->layout; }
float *seq2seq_params(Seq2Seq *m) { return m->params; }
float *seq2seq_grads(Seq2Seq *m) { return m->grads; }
size_t seq2seq_arena_bytes(const Seq2Seq *m) { return m->arena_bytes; }

NmtStatus seq2seq_init_params(Seq2Seq *m, float init_range, uint64_t seed) {
    float *host = nmt_malloc(m->layout.total * sizeof(float));
    if (!host) return nmt_fail_nomem("initialising the model");
    param_init_host(&m->layout, init_range, seed, host);
    m->be->upload(m->be, m->params, host, m->layout.total * sizeof(float));
    nmt_free(host);
    return NMT_OK;
}

void seq2seq_zero_grads(Seq2Seq *m) {
    m->be->zero(m->be, m->grads, m->layout.total * sizeof(float));
}
