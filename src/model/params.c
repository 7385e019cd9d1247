/* params.c: model sizes from the config, the parameter list, and the
 * initialisation (params.h). */
#include "model/params.h"

#include <math.h>
#include <string.h>

#include "data/rng.h"
#include "kernels/align_math.h"

int model_align_cost_from_config(const Config *cfg) {
    return cfg->train.guided_alignment_cost == CFG_GUIDED_MSE ? ALIGN_COST_MSE : ALIGN_COST_CE;
}

NmtStatus model_dims_from_config(const Config *cfg, int src_vocab, int tgt_vocab, ModelDims *d) {
    const ModelConfig *m = &cfg->model;
    memset(d, 0, sizeof *d);
    d->V_s = src_vocab;
    d->V_t = tgt_vocab;
    d->E = m->emb_dim;
    d->H = m->hidden;
    d->K = m->enc_hidden ? m->enc_hidden : m->hidden;
    d->bidirectional = m->bidirectional;
    d->D_e = d->bidirectional ? d->K / 2 : d->K;
    d->L_e = m->enc_layers;
    d->L_d = m->dec_layers;
    d->style = m->attention.style;
    d->score = m->attention.score;
    d->mode = m->attention.mode;
    d->heads = m->attention.heads;
    d->window = m->attention.window;
    d->A = d->H;
    d->input_feed = m->input_feed && d->style == ATTN_STYLE_LUONG;
    d->tie_embeddings = m->tie_embeddings;
    d->share_embeddings = m->share_embeddings;
    d->residual = m->residual;
    d->layer_norm = m->layer_norm;
    d->bridge_learned = m->bridge == CFG_BRIDGE_LEARNED;
    d->dropout = (float)m->dropout;
    d->attn_dropout = (float)m->attention.dropout;
    d->word_dropout_src = (float)m->word_dropout_src;
    d->word_dropout_tgt = (float)m->word_dropout_tgt;
    d->label_smoothing = (float)cfg->train.label_smoothing;
    if (d->L_e > MODEL_MAX_LAYERS || d->L_d > MODEL_MAX_LAYERS)
        return nmt_fail(NMT_ERR_CONFIG, "model.enc_layers: at most %d layers", MODEL_MAX_LAYERS);
    if (d->style != ATTN_STYLE_NONE && d->heads > 1 &&
        (d->score == ATTN_SCORE_DOT || d->score == ATTN_SCORE_SCALED_DOT)) {
        if (d->H % d->heads)
            return nmt_fail(NMT_ERR_CONFIG,
                            "model.attention.heads: must divide model.hidden (%d) for %s scores, got %d",
                            d->H, attn_score_names[d->score], d->heads);
        d->dh = d->H / d->heads;
    }
    d->dec_in = d->E + (d->input_feed ? d->H : 0) + (d->style == ATTN_STYLE_BAHDANAU ? d->K : 0);
    d->wc_in = d->style == ATTN_STYLE_BAHDANAU ? d->H + d->K + d->E : d->K + d->H;
    if (d->share_embeddings && d->V_s != d->V_t)
        return nmt_fail(NMT_ERR_CONFIG,
                        "model.share_embeddings: needs one vocabulary for both sides, got %d source and %d "
                        "target entries", d->V_s, d->V_t);
    if (d->tie_embeddings && d->E != d->H)
        return nmt_fail(NMT_ERR_CONFIG, "model.tie_embeddings: needs model.emb_dim (%d) equal to model.hidden (%d)",
                        d->E, d->H);
    return NMT_OK;
}

/* Appends one parameter; returns its index. */
static int add(ParamLayout *l, const char *name, int count, int rows, int cols, ParamInit init) {
    NMT_ASSERT(l->n < MODEL_MAX_PARAMS);
    ParamInfo *p = &l->info[l->n];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->count = count;
    p->rows = rows;
    p->cols = cols;
    p->size = (size_t)count * rows * cols;
    p->offset = l->total;
    p->init = init;
    l->total += p->size;
    return l->n++;
}

static LstmParamIndex add_lstm(ParamLayout *l, const char *prefix, int in, int size, bool layer_norm) {
    char name[32];
    LstmParamIndex idx = {-1, -1, -1, -1, -1};
    snprintf(name, sizeof name, "%s_W_ih", prefix);
    idx.W_ih = add(l, name, 1, 4 * size, in, INIT_UNIFORM);
    snprintf(name, sizeof name, "%s_W_hh", prefix);
    idx.W_hh = add(l, name, 1, 4 * size, size, INIT_UNIFORM);
    snprintf(name, sizeof name, "%s_b", prefix);
    idx.b = add(l, name, 1, 1, 4 * size, INIT_LSTM_BIAS);
    if (layer_norm) {
        snprintf(name, sizeof name, "%s_ln_ih", prefix);
        idx.ln_ih = add(l, name, 1, 1, 4 * size, INIT_ONE);
        snprintf(name, sizeof name, "%s_ln_hh", prefix);
        idx.ln_hh = add(l, name, 1, 1, 4 * size, INIT_ONE);
    }
    return idx;
}

void param_layout_build(const ModelDims *d, ParamLayout *l) {
    memset(l, 0, sizeof *l);
    ParamIndex *x = &l->idx;
    memset(x, -1, sizeof *x); /* every index -1 (all bytes 0xFF) until added */
    /* shared embeddings: one tensor, tgt_emb, that the source reads too */
    if (!d->share_embeddings) x->src_emb = add(l, "src_emb", 1, d->V_s, d->E, INIT_UNIFORM);
    x->tgt_emb = add(l, "tgt_emb", 1, d->V_t, d->E, INIT_UNIFORM);
    if (d->share_embeddings) x->src_emb = x->tgt_emb;
    char prefix[32];
    for (int i = 0; i < d->L_e; i++) {
        snprintf(prefix, sizeof prefix, "enc%d_fwd", i);
        x->enc_fwd[i] = add_lstm(l, prefix, i == 0 ? d->E : d->K, i == 0 ? d->D_e : d->K, d->layer_norm);
        if (i == 0 && d->bidirectional) x->enc0_bwd = add_lstm(l, "enc0_bwd", d->E, d->D_e, d->layer_norm);
    }
    for (int i = 0; i < d->L_d; i++) {
        snprintf(prefix, sizeof prefix, "dec%d", i);
        x->dec[i] = add_lstm(l, prefix, i == 0 ? d->dec_in : d->H, d->H, d->layer_norm);
    }
    if (d->bridge_learned) {
        x->bridge_h_W = add(l, "bridge_h_W", 1, d->L_d * d->H, d->K, INIT_UNIFORM);
        x->bridge_h_b = add(l, "bridge_h_b", 1, 1, d->L_d * d->H, INIT_ZERO);
        x->bridge_c_W = add(l, "bridge_c_W", 1, d->L_d * d->H, d->K, INIT_UNIFORM);
        x->bridge_c_b = add(l, "bridge_c_b", 1, 1, d->L_d * d->H, INIT_ZERO);
    }
    if (d->style != ATTN_STYLE_NONE) {
        int n = d->heads;
        switch (d->score) {
        case ATTN_SCORE_DOT:
        case ATTN_SCORE_SCALED_DOT:
            if (n > 1) {
                x->attn_Wq = add(l, "attn_Wq", n, d->dh, d->H, INIT_UNIFORM);
                x->attn_Wk = add(l, "attn_Wk", n, d->dh, d->K, INIT_UNIFORM);
            }
            break;
        case ATTN_SCORE_GENERAL: x->attn_Wa = add(l, "attn_Wa", n, d->H, d->K, INIT_UNIFORM); break;
        default: /* concat, additive */
            x->attn_W1 = add(l, "attn_W1", n, d->A, d->H, INIT_ORTHOGONAL);
            x->attn_W2 = add(l, "attn_W2", n, d->A, d->K, INIT_ORTHOGONAL);
            x->attn_v = add(l, "attn_v", n, 1, d->A, INIT_SMALL);
            break;
        }
        if (n > 1) x->attn_Wo = add(l, "attn_Wo", 1, d->K, n * d->K, INIT_UNIFORM);
        if (d->mode == ATTN_MODE_LOCAL_P) {
            x->attn_Wp = add(l, "attn_Wp", 1, d->H, d->H, INIT_UNIFORM);
            x->attn_vp = add(l, "attn_vp", 1, 1, d->H, INIT_UNIFORM);
        }
        x->out_Wc = add(l, "out_Wc", 1, d->H, d->wc_in, INIT_UNIFORM);
    }
    if (!d->tie_embeddings) x->out_W = add(l, "out_W", 1, d->V_t, d->H, INIT_UNIFORM);
    x->out_b = add(l, "out_b", 1, 1, d->V_t, INIT_ZERO);
}

int param_layout_find(const ParamLayout *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->info[i].name, name)) return i;
    return -1;
}

/* Orthogonal (rows, cols) matrix by Gram-Schmidt on Gaussian vectors: rows
 * orthonormal when rows <= cols, else columns orthonormal. */
static void orthogonal(Rng *rng, float *w, int rows, int cols) {
    int transpose = rows > cols;
    int n = transpose ? cols : rows, m = transpose ? rows : cols; /* n vectors of length m */
    double *v = nmt_malloc((size_t)n * m * sizeof *v);
    NMT_ASSERT(v); /* tiny next to the parameters themselves */
    for (int i = 0; i < n; i++) {
        for (;;) {
            double *vi = v + (size_t)i * m;
            for (int k = 0; k < m; k++) vi[k] = rng_normal(rng);
            for (int j = 0; j < i; j++) {
                double *vj = v + (size_t)j * m, dot = 0;
                for (int k = 0; k < m; k++) dot += vi[k] * vj[k];
                for (int k = 0; k < m; k++) vi[k] -= dot * vj[k];
            }
            double norm = 0;
            for (int k = 0; k < m; k++) norm += vi[k] * vi[k];
            norm = sqrt(norm);
            if (norm < 1e-6) continue; /* degenerate draw: try again */
            for (int k = 0; k < m; k++) vi[k] /= norm;
            break;
        }
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m; k++) {
            float x = (float)v[(size_t)i * m + k];
            if (transpose) w[(size_t)k * cols + i] = x;
            else w[(size_t)i * cols + k] = x;
        }
    nmt_free(v);
}

void param_init_host(const ParamLayout *l, float init_range, uint64_t seed, float *host) {
    Rng rng;
    rng_seed(&rng, seed, 0x5eed);
    for (int i = 0; i < l->n; i++) {
        const ParamInfo *p = &l->info[i];
        float *w = host + p->offset;
        switch (p->init) {
        case INIT_UNIFORM:
            for (size_t k = 0; k < p->size; k++) w[k] = (2 * rng_uniform(&rng) - 1) * init_range;
            break;
        case INIT_SMALL:
            for (size_t k = 0; k < p->size; k++) w[k] = (2 * rng_uniform(&rng) - 1) * 0.01f;
            break;
        case INIT_ZERO: memset(w, 0, p->size * sizeof *w); break;
        case INIT_ONE:
            for (size_t k = 0; k < p->size; k++) w[k] = 1.0f;
            break;
        case INIT_LSTM_BIAS: {
            int size = p->cols / 4; /* gates i, f, g, o */
            for (int k = 0; k < p->cols; k++) w[k] = (k >= size && k < 2 * size) ? 1.0f : 0.0f;
            break;
        }
        case INIT_ORTHOGONAL:
            for (int c = 0; c < p->count; c++)
                orthogonal(&rng, w + (size_t)c * p->rows * p->cols, p->rows, p->cols);
            break;
        }
    }
}
