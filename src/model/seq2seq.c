/* seq2seq.c: the encoder-decoder forward and backward of one batch
 * (seq2seq.h, docs/model.md). All device memory is carved from one arena
 * per batch by carve(), which runs once in measuring mode at creation to
 * size the arena for the largest batch. Step-by-step decoding keeps only
 * the last DECODE_RING steps of the per-step buffers (decoder states,
 * inputs, attention, attentional vectors): its memory does not grow with
 * the output length. Letters: B sentences, S source and
 * T target positions, E embedding, H decoder, K key (encoder output) size,
 * D_e one direction of encoder layer 0, V_t target vocabulary. */
#include "model/seq2seq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/rng.h"

typedef struct {
    LstmCache cache;
    float *x;    /* (len, B, in) the layer's input sequence (after dropout) */
    float *dx;   /* (len, B, in) gradient of x */
    float *dc, *dh_rec; /* (B, size) */
    LstmWeights w;
} Layer;

/* Everything carved from the arena for one batch. */
typedef struct {
    /* inputs */
    int32_t *src, *tgt_in, *tgt_out, *src_len; /* (S*B), (T*B), (T*B), (B) */
    float *keep_src;                           /* (S, B) */
    float *centers;                            /* (T, B) local-m */
    /* encoder */
    Layer enc[MODEL_MAX_LAYERS], enc_bwd;
    float *e0;           /* (S, B, K) layer-0 output (directions concatenated) */
    float *keys;         /* (S, B, K) top output */
    /* bridge */
    float *hfin, *cfin;  /* (B, K) */
    float *h0all, *c0all; /* (B, L_d H) */
    /* decoder */
    float *w;            /* (T, B, E) target embeddings, after dropout */
    Layer dec[MODEL_MAX_LAYERS];
    AttnBatch ab;
    AttnStep steps_base; /* step t's buffers: base + t * stride (see step()) */
    float *cat_all;      /* (T, B, n K) every step's head contexts (n > 1: dWo reads
                            them at once); AttnStep.cat of step t is row block t */
    float *wcin;         /* (T, B, wc_in) */
    float *hh;           /* (T, B, H) attentional vectors */
    float *hd;           /* (T, B, H) after dropout */
    float *logits;       /* (C, V_t) one chunk of output rows (output_chunk_rows),
                            or (R, V_t) when decoding step by step */
    float *best;         /* (2 R G) decoding: the k best scores of each row (R, k),
                            then their token ids (int32, R, k): one download */
    int32_t *row_len;    /* (R) source length of each decoder row (== src_len when G == 1) */
    int32_t *row_sent;   /* (R) sentence of each decoder row (beam search) */
    int32_t *parent;     /* (R) beam search: the row each new row continues */
    float *gather_tmp;   /* (R, max(L_d H, H)) */
    int32_t *compact_idx; /* (heads S B) decoding: gather indices that drop finished sentences */
    float *compact_tmp;  /* (max(S B K, heads S B qdim)) their scratch */
    float *loss_rows, *nll_rows; /* (T*B) */
    /* gradients and scratch (zeroed at the start of backward) */
    char *grad_begin, *grad_end;
    float *dE[MODEL_MAX_LAYERS]; /* (S, B, K) gradient of encoder layer outputs */
    float *dh_f, *dh_b;  /* (S, B, D_e) */
    float *dcf_f, *dcf_b; /* (B, D_e) */
    float *dkeys;        /* (S, B, K) */
    float *dhh;          /* (T, B, H) gradient of hd, from the training forward */
    float *dwcin;        /* (B, wc_in) the gradient of W_c's input, or (T, B, wc_in)
                            with several heads (dWo reads every step's context
                            gradient at once); dwcin_at */
    float *dpre;         /* (T, B, H) gradient of hh's pre-activation, every step
                            (one dW_c GEMM after the steps) */
    float *dh_top;       /* (B, H) */
    float *dh_tmp;       /* (B, H) */
    float *dq_carry;     /* (B, H) bahdanau: query gradient for the previous step */
    float *dw;           /* (T, B, E) */
    float *dh0all, *dc0all, *dpre_bridge; /* (B, L_d H) */
    float *dhfin, *dcfin; /* (B, K) */
    AttnScratch as;
} Acts;

struct Seq2Seq {
    Backend *be;
    ModelDims d;
    ParamLayout layout;
    ModelLimits lim;
    float *params, *grads;
    char *arena;
    size_t arena_bytes;
    float *zeros;   /* (max_B * max(H, K, E)) zeros */
    float *ones;    /* (max_B) ones: decoder keep */
    float *neg_inf; /* (1) -infinity: dec_bias's PAD and BOS */
    float *dec_bias; /* (V_t) the output bias with -infinity at PAD and BOS: decoding
                        adds it, so those two are never output (seq2seq_decode_setup) */
    /* host staging */
    int32_t *h_ids;
    float *h_f;
    int32_t *h_idx;   /* (heads * max_S * max_B) gather indices */
    /* decoding */
    int *dec_len;     /* (max_B) source length of each sentence still decoded */
    int64_t decode_rows; /* decoder row-steps computed since seq2seq_decode_setup */
    int decode_steps;    /* decoder steps since seq2seq_decode_setup */
    float *h_best;       /* (2, h_best_slot) host copies of Acts.best, a slot per
                            pending seq2seq_decode_topk_start */
    size_t h_best_slot;  /* floats per slot: 2 max_B beam^2 */
    int best_k, best_rows; /* what the last topk queued leaves in Acts.best:
                              k best of best_rows rows (0: nothing) */
    int best_slot;       /* the h_best slot of the last topk queued */
    const float *step_bias; /* the last step's output bias not yet in Acts.logits
                               (NULL: the logits are the step's scores) */
    bool step_logprobs;  /* the last step's scores are log-probabilities */
    float *emb_proj;     /* (V_t, 4H) tgt_emb W_ih[:, :E]^T of decoder layer 0: every
                            target token's input product (seq2seq_fold_embeddings) */
    bool emb_proj_fresh; /* emb_proj is of the current weights (a training step clears it) */
    int ring_phase;      /* decoding: the per-step buffers' ring turned by reorders (ds) */
    struct {
        int slot, k, rows;
    } topk_queue[BACKEND_MAX_PENDING_DOWNLOADS]; /* topk queued, not finished */
    int topk_head, topk_n;
    int sl_n;         /* output shortlist size; 0: the whole vocabulary */
    int32_t *sl_ids, *sl_host; /* (V_t) shortlisted ids, on the backend and on the host */
    float *sl_W, *sl_b; /* (V_t, H), (V_t): their output-layer rows */
    /* current batch */
    int B, S, T;
    bool train;
    bool stepwise; /* decoding: one step's logits at a time */
    int G;         /* decoder rows per sentence: 1, or the beam size */
    uint64_t seed;
    int64_t n_tokens;
    size_t step_stride; /* floats between step t and t+1 in the step arrays */
    Acts a;
};

/* Step-by-step decoding needs only step t - 1's outputs at step t. */
#define DECODE_RING 2

/* The output layer runs over the batch's T*B rows in chunks of at most
 * this many logits (unless ModelLimits.output_chunk says otherwise): a
 * whole batch's logits would be the largest activation by far (64
 * sentences x 80 positions x 32000 words = 655 MB), a chunk's stay at
 * 16 MB, and the training forward turns each chunk into its gradient
 * contributions at once (output_layer). */
#define OUTPUT_CHUNK_FLOATS ((size_t)4 << 20)

/* Rows of the output layer computed at once out of `rows`. */
static int output_chunk_rows(const Seq2Seq *m, int rows) {
    size_t floats = m->lim.output_chunk ? m->lim.output_chunk : OUTPUT_CHUNK_FLOATS;
    size_t fit = floats / (size_t)m->d.V_t;
    if (fit < 1) fit = 1;
    return (size_t)rows < fit ? rows : (int)fit;
}

/* Where step t's per-step buffers live: slot t, or (t + ring_phase) %
 * DECODE_RING while decoding step by step (the storage index; t itself
 * still gives the position, e.g. local-m's centre). */
static size_t ds(const Seq2Seq *m, int t) {
    return m->stepwise ? ((size_t)t + (size_t)m->ring_phase) % DECODE_RING : (size_t)t;
}

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

static float *P(const Seq2Seq *m, int idx) {
    return idx < 0 ? NULL : m->params + m->layout.info[idx].offset;
}
static float *G(const Seq2Seq *m, int idx) {
    return idx < 0 ? NULL : m->grads + m->layout.info[idx].offset;
}

static LstmWeights lstm_weights(const Seq2Seq *m, LstmParamIndex x, int in, int size) {
    LstmWeights w = {P(m, x.W_ih), P(m, x.W_hh), P(m, x.b), G(m, x.W_ih), G(m, x.W_hh), G(m, x.b), in, size};
    return w;
}

static bool dropping(const Seq2Seq *m) { return m->train && m->d.dropout > 0; }
static bool attn_dropping(const Seq2Seq *m) { return m->train && m->d.attn_dropout > 0; }

/* One layer's buffers for a sequence of `len` steps (ring > 0: `len` is
 * at most the ring's size, see LstmCache). */
static void carve_layer(Arena *ar, Layer *L, int len, int B, int in, int size, int ring) {
    int states = ring ? ring : len + 1; /* state slots */
    L->cache.ring = ring;
    L->cache.phase = 0;
    L->cache.gates = takef(ar, (size_t)len * B * 4 * size);
    L->cache.h = takef(ar, (size_t)states * B * size);
    L->cache.c = takef(ar, (size_t)states * B * size);
    L->x = in ? takef(ar, (size_t)len * B * in) : NULL;
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
    a->src_len = take(ar, (size_t)B * 4);
    /* beam search: row -> sentence map, gather indices and scratch */
    a->row_len = m->G > 1 ? take(ar, (size_t)R * 4) : a->src_len;
    a->row_sent = m->G > 1 ? take(ar, (size_t)R * 4) : NULL;
    a->parent = m->stepwise ? take(ar, (size_t)R * 4) : NULL;
    a->gather_tmp = m->stepwise ? takef(ar, (size_t)R * (d->L_d * H > H ? d->L_d * H : H)) : NULL;
    size_t kp_floats = (size_t)n * S * B * qd, key_floats = (size_t)S * B * K;
    a->compact_idx = m->stepwise ? take(ar, (size_t)n * S * B * 4) : NULL;
    a->compact_tmp = m->stepwise ? takef(ar, kp_floats > key_floats ? kp_floats : key_floats) : NULL;
    a->keep_src = takef(ar, (size_t)S * B);
    a->centers = takef(ar, (size_t)T * R);
    for (int l = 0; l < d->L_e; l++) {
        int in = l == 0 ? E : K, size = l == 0 ? d->D_e : K;
        carve_layer(ar, &a->enc[l], S, B, in, size, 0);
        a->enc[l].w = lstm_weights(m, m->layout.idx.enc_fwd[l], in, size);
    }
    if (d->bidirectional) {
        /* the backward direction reads the same input as the forward one */
        carve_layer(ar, &a->enc_bwd, S, B, 0, d->D_e, 0);
        a->enc_bwd.x = a->enc[0].x;
        a->enc_bwd.w = lstm_weights(m, m->layout.idx.enc0_bwd, E, d->D_e);
        a->e0 = takef(ar, (size_t)S * B * K);
    } else {
        a->e0 = a->enc[0].cache.h ? a->enc[0].cache.h + (size_t)B * K : NULL;
    }
    Layer *top = &a->enc[d->L_e - 1];
    a->keys = d->L_e == 1 ? a->e0 : (top->cache.h ? top->cache.h + (size_t)B * K : NULL);
    a->hfin = takef(ar, (size_t)B * K);
    a->cfin = takef(ar, (size_t)B * K);
    a->h0all = takef(ar, (size_t)B * d->L_d * H);
    a->c0all = takef(ar, (size_t)B * d->L_d * H);
    a->w = takef(ar, (size_t)Ts * R * E);
    for (int l = 0; l < d->L_d; l++) {
        int in = l == 0 ? d->dec_in : H;
        carve_layer(ar, &a->dec[l], Ts, R, in, H, m->stepwise ? DECODE_RING : 0);
        a->dec[l].w = lstm_weights(m, m->layout.idx.dec[l], in, H);
    }
    /* attention */
    AttnBatch *ab = &a->ab;
    ab->B = B;
    ab->G = m->G;
    ab->S = S;
    ab->keys = a->keys;
    ab->src_len = m->G > 1 ? a->row_len : a->src_len;
    ab->centers = d->mode == ATTN_MODE_LOCAL_M ? a->centers : NULL;
    bool attn = d->style != ATTN_STYLE_NONE;
    if (attn && attention_projects_keys(d)) ab->kp = takef(ar, (size_t)n * S * B * qd);
    else ab->kp = a->keys;
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
        a->hh = dtop->cache.h ? dtop->cache.h + (size_t)R * H : NULL; /* hh_t = h_t^top */
    }
    a->hd = drop ? takef(ar, (size_t)T * R * H) : a->hh;
    a->logits = takef(ar, (size_t)(m->stepwise ? R : output_chunk_rows(m, T * R)) * d->V_t);
    a->best = takef(ar, (size_t)2 * R * m->G);
    /* one block, so that the loss is read back with one download (none
     * while decoding) */
    int Tl = m->stepwise ? 0 : T;
    a->loss_rows = takef(ar, (size_t)2 * Tl * R);
    a->nll_rows = a->loss_rows ? a->loss_rows + (size_t)Tl * R : NULL;
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

/* Step t's attention buffers. */
static AttnStep step(const Seq2Seq *m, int t) {
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
    size_t stage = (size_t)longest * rows;
    m->params = be->alloc(be, m->layout.total * sizeof(float));
    m->grads = be->alloc(be, m->layout.total * sizeof(float));
    m->arena = be->alloc(be, m->arena_bytes);
    m->zeros = be->alloc(be, rows * widest * sizeof(float));
    m->ones = be->alloc(be, rows * sizeof(float));
    m->neg_inf = be->alloc(be, sizeof(float));
    m->dec_bias = be->alloc(be, (size_t)dims->V_t * sizeof(float));
    m->h_ids = nmt_malloc(stage * sizeof(int32_t));
    m->h_f = nmt_malloc(2 * stage * sizeof(float)); /* 2: the loss and NLL rows together */
    m->h_idx = nmt_malloc((size_t)dims->heads * lim.max_S * lim.max_B * sizeof(int32_t));
    m->dec_len = nmt_malloc((size_t)lim.max_B * sizeof(int));
    m->h_best_slot = (size_t)2 * rows * beam;
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

/* ---- forward ----------------------------------------------------------- */

/* Dropout stream ids: every masked tensor draws from its own stream. */
enum { DROP_SRC_EMB = 1, DROP_TGT_EMB, DROP_HD, DROP_ENC_LAYER, DROP_DEC_LAYER = DROP_ENC_LAYER + MODEL_MAX_LAYERS,
       DROP_ATTN = DROP_DEC_LAYER + MODEL_MAX_LAYERS };

static uint64_t drop_seed(const Seq2Seq *m, int stream) {
    return rng_mix64(m->seed * 0x9E3779B97F4A7C15ull + (uint64_t)stream);
}

/* Where step t's attention weights start in the DROP_ATTN stream: one
 * (heads, rows, S) block per step. */
static uint64_t attn_drop_offset(const Seq2Seq *m, int t) {
    return (uint64_t)t * m->d.heads * m->B * m->G * m->S;
}

/* y = dropout(x) with the mask of `stream` from element `offset` on (a
 * copy when not dropping; y may be x). The backward is the same call on
 * the gradients: the same mask is drawn again. */
static void apply_dropout(Seq2Seq *m, float *y, const float *x, size_t n, int stream, uint64_t offset) {
    Backend *be = m->be;
    if (dropping(m)) be->dropout(be, y, x, n, m->d.dropout, drop_seed(m, stream), offset);
    else if (y != x) be->copy(be, y, x, n * sizeof(float));
}

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
static void upload_source(Seq2Seq *m, const Batch *batch) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = batch->B, S = batch->S, T = m->T;
    be->upload(be, a->src, batch->src, (size_t)S * B * 4);
    for (int b = 0; b < B; b++) m->h_ids[b] = batch->src_len[b];
    be->upload(be, a->src_len, m->h_ids, (size_t)B * 4);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++) m->h_f[s * B + b] = s < batch->src_len[b] ? 1.0f : 0.0f;
    be->upload(be, a->keep_src, m->h_f, (size_t)S * B * sizeof(float));
    int R = B * m->G; /* decoder rows: row r asks sentence r % B */
    if (m->G > 1) {
        for (int r = 0; r < R; r++) m->h_ids[r] = batch->src_len[r % B];
        be->upload(be, a->row_len, m->h_ids, (size_t)R * 4);
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
    upload_source(m, batch);
    be->upload(be, a->tgt_in, batch->tgt_in, (size_t)T * B * 4);
    be->upload(be, a->tgt_out, batch->tgt_out, (size_t)T * B * 4);
    int64_t n = 0;
    for (int i = 0; i < T * B; i++) n += batch->tgt_out[i] != NMT_PAD_ID;
    m->n_tokens = n;
}

static void encoder_forward(Seq2Seq *m) {
    Backend *be = m->be;
    const ModelDims *d = &m->d;
    Acts *a = &m->a;
    int B = m->B, S = m->S, K = d->K;
    float *x0 = a->enc[0].x;
    be->embedding_forward(be, x0, P(m, m->layout.idx.src_emb), a->src, S * B, d->E);
    apply_dropout(m, x0, x0, (size_t)S * B * d->E, DROP_SRC_EMB, 0);
    for (int l = 0; l < d->L_e; l++) {
        Layer *L = &a->enc[l];
        int size = L->w.H;
        const float *x = L->x;
        if (l > 0) {
            const float *below = l == 1 ? a->e0 : a->enc[l - 1].cache.h + (size_t)B * K;
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

static void bridge_forward(Seq2Seq *m) {
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
    if (m->G > 1) {
        /* every hypothesis row of a sentence starts from the sentence's state */
        rows = B * m->G;
        be->embedding_forward(be, a->gather_tmp, a->h0all, a->row_sent, rows, LH);
        for (int l = 0; l < d->L_d; l++)
            be->copy_cols(be, a->dec[l].cache.h, H, a->gather_tmp + l * H, LH, rows, H);
        be->embedding_forward(be, a->gather_tmp, a->c0all, a->row_sent, rows, LH);
        for (int l = 0; l < d->L_d; l++)
            be->copy_cols(be, a->dec[l].cache.c, H, a->gather_tmp + l * H, LH, rows, H);
        return;
    }
    for (int l = 0; l < d->L_d; l++) {
        be->copy_cols(be, a->dec[l].cache.h, H, h0 + l * H, LH, rows, H);
        be->copy_cols(be, a->dec[l].cache.c, H, c0 + l * H, LH, rows, H);
    }
}

/* Top decoder state at slot `s` (slot t + 1 is the output of step t). */
static float *dec_top(const Seq2Seq *m, int s) {
    const Layer *top = &m->a.dec[m->d.L_d - 1];
    return top->cache.h + lstm_slot(&top->cache, (size_t)s) * m->B * m->G * m->d.H;
}

/* The attentional vector hh_t of step t (R, H): its own buffer, or the top
 * decoder state itself without attention. */
static float *hh_at(const Seq2Seq *m, int t) {
    if (m->d.style == ATTN_STYLE_NONE) return dec_top(m, t + 1);
    return m->a.hh + ds(m, t) * m->B * m->G * m->d.H;
}

/* The decoder LSTM stack at step t; layer 0's input is already in place. */
static void dec_stack_step(Seq2Seq *m, int t, const int32_t *folded) {
    Backend *be = m->be;
    Acts *a = &m->a;
    int B = m->B * m->G, H = m->d.H; /* decoder rows */
    for (int l = 0; l < m->d.L_d; l++) {
        Layer *L = &a->dec[l];
        if (l == 0 && folded) { /* x_t W_ih^T = [w_t, hh_{t-1}] W_ih^T: a row of emb_proj + the rest */
            float *z = lstm_step_gates(&L->cache, t, B, H);
            be->embedding_forward(be, z, m->emb_proj, folded, B, 4 * H);
            if (m->d.input_feed && t > 0) /* hh_{-1} is zeros */
                be->gemm(be, false, true, B, 4 * H, H, 1.0f, hh_at(m, t - 1), H, L->w.W_ih + m->d.E, L->w.in,
                         1.0f, z, 4 * H);
            lstm_step_forward_rest(be, &L->w, t, B, m->ones, &L->cache);
            continue;
        }
        const float *x_t = L->x + ds(m, t) * B * L->w.in;
        if (l > 0) {
            const float *below = lstm_output(&a->dec[l - 1].cache, t, B, H, false);
            /* one mask stream per layer over the batch's (T, B, H) inputs */
            x_t = layer_input(m, L->x + ds(m, t) * B * L->w.in, below, (size_t)B * H, DROP_DEC_LAYER + l,
                              (uint64_t)t * B * H);
        }
        lstm_step_forward(be, &L->w, t, B, x_t, m->ones, &L->cache);
    }
}

/* Decoder step t: reads w_t (the embedded, dropped-out previous token) in
 * a->w and writes the attentional vector hh_t. folded (decoding with
 * emb_proj, not Bahdanau): the previous tokens (rows) instead, whose
 * embeddings' input products are rows of emb_proj (w_t is not formed). */
static void decoder_step(Seq2Seq *m, const AttnWeights *aw, int t, const int32_t *folded) {
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
    AttnStep st = step(m, t);
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
    /* w_t into layer 0's input (and Bahdanau's W_c input) for every step at
     * once: one copy instead of one a step */
    const ModelDims *d = &m->d;
    be->copy_cols(be, a->dec[0].x, d->dec_in, a->w, E, T * B, E);
    if (d->style == ATTN_STYLE_BAHDANAU)
        be->copy_cols(be, a->wcin + d->H + d->K, d->wc_in, a->w, E, T * B, E);
    for (int t = 0; t < T; t++) decoder_step(m, aw, t, NULL);
}

static const float *out_W(const Seq2Seq *m) {
    return m->d.tie_embeddings ? P(m, m->layout.idx.tgt_emb) : P(m, m->layout.idx.out_W);
}
static float *out_dW(const Seq2Seq *m) {
    return m->d.tie_embeddings ? G(m, m->layout.idx.tgt_emb) : G(m, m->layout.idx.out_W);
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
    float scale = m->n_tokens ? 1.0f / (float)m->n_tokens : 0.0f;
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
    Arena ar = {m->arena, 0};
    carve(m, &ar, m->B, m->S, m->T);
    NMT_ASSERT(ar.used <= m->arena_bytes);
    upload_batch(m, batch);
    Acts *a = &m->a;
    int B = m->B, T = m->T, H = d->H;
    encoder_forward(m);
    bridge_forward(m);
    AttnWeights aw = attention_weights(&m->layout, m->params, m->grads);
    if (d->style != ATTN_STYLE_NONE) attention_prepare(be, d, &aw, &a->ab);
    decoder_forward(m, &aw);
    apply_dropout(m, a->hd, a->hh, (size_t)T * B * H, DROP_HD, 0);
    output_layer(m, train);
    /* the step's one wait for the device: loss rows, then NLL rows */
    float *rows = m->h_f;
    size_t nll_at = (size_t)(a->nll_rows - a->loss_rows);
    double loss_sum = 0, nll_sum = 0;
    be->download(be, rows, a->loss_rows, (nll_at + (size_t)T * B) * sizeof(float));
    for (int i = 0; i < T * B; i++) loss_sum += rows[i];
    for (int i = 0; i < T * B; i++) nll_sum += rows[nll_at + i];
    loss->loss_sum = loss_sum;
    loss->nll_sum = nll_sum;
    loss->n_tokens = m->n_tokens;
    loss->loss = m->n_tokens ? loss_sum / (double)m->n_tokens : 0.0;
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

/* ---- backward ---------------------------------------------------------- */

/* Step t's gradient of W_c's input (B, wc_in): one buffer for every step,
 * or a block of its own per step with several heads (carve). */
static float *dwcin_at(const Seq2Seq *m, int t) {
    return m->a.dwcin + (m->d.heads > 1 ? (size_t)t * m->B * m->d.wc_in : 0);
}

/* dh (B, H) (=) the gradient into layer l's output at step t from above
 * (the next layer's input gradient through its dropout mask, or dtop for
 * the top layer) plus the recurrent gradient of step t + 1. dtop is the
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
        }
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
        AttnStep st = step(m, t);
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
    /* every step at once: dWc += dpre^T wcin, dw += dz W_ih[:, :E] of layer 0 */
    if (d->style != ATTN_STYLE_NONE)
        be->gemm(be, true, false, H, wc, T * B, 1.0f, a->dpre, H, a->wcin, wc, 1.0f, dWc, wc);
    lstm_input_grad_cols(be, &L0->w, T * B, L0->cache.gates, 0, E, a->dw, E);
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
    /* the top layer's final state (slot S of a forward layer) is its output at S-1 */
    if (fin && !(d->L_e == 1 && d->bidirectional))
        be->add_cols(be, a->dE[d->L_e - 1] + (size_t)(S - 1) * B * K, K, a->dhfin, K, B, K);
    for (int l = d->L_e - 1; l >= 1; l--) {
        Layer *L = &a->enc[l];
        lstm_seq_backward(be, &L->w, S, B, L->x, a->keep_src, false, &L->cache, a->dE[l],
                          fin && l == d->L_e - 1 ? a->dcfin : NULL, L->dx, NULL, NULL, L->dc,
                          L->dh_rec);
        /* layer l's input was dropout(output of l - 1) */
        apply_dropout(m, a->dE[l - 1], L->dx, (size_t)S * B * K, DROP_ENC_LAYER + l, 0);
    }
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
        AttnStep st = step(m, t);
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

/* ---- step-by-step decoding (decode_step.h) ----------------------------- */

Backend *seq2seq_backend(const Seq2Seq *m) { return m->be; }
size_t seq2seq_arena_bytes(const Seq2Seq *m) { return m->arena_bytes; }
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
    Arena ar = {m->arena, 0};
    carve(m, &ar, m->B, m->S, T);
    NMT_ASSERT(ar.used <= m->arena_bytes);
    upload_source(m, batch);
    encoder_forward(m);
    bridge_forward(m);
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
    decoder_step(m, &aw, t, folded ? tokens : NULL);
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
    AttnStep st = step(m, t);
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
        bool kp = attention_projects_keys(d);
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
    for (int r = 0; r < R; r++) m->h_ids[r] = m->dec_len[r % n];
    be->upload(be, G > 1 ? a->row_len : a->src_len, m->h_ids, (size_t)R * 4);
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
        if (turn) L->cache.phase = (L->cache.phase + 1) % L->cache.ring;
    }
    if (m->d.style != ATTN_STYLE_NONE) {
        if (ring_gather(m, a->hh, ds(m, t), ds(m, t + 1), R_old, R)) m->ring_phase = (m->ring_phase + 1) % DECODE_RING;
    } else { /* hh_t is h_t^top: slot t + 1 of the top layer, at the new row count */
        a->hh = a->dec[m->d.L_d - 1].cache.h + (size_t)R * H;
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
