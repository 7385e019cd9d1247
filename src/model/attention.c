/* attention.c: attention scores (dot, scaled dot, general, additive; one
 * or more heads), windows (global, local-m, local-p), context, and their
 * backward (attention.h). Shapes: B sentences, S source positions, K key
 * size, H query size, n heads, qd = attention_qdim. */
#include "model/attention.h"

#include <math.h>

int attention_qdim(const ModelDims *d) {
    switch (d->score) {
    case ATTN_SCORE_DOT:
    case ATTN_SCORE_SCALED_DOT: return d->heads > 1 ? d->dh : d->K;
    case ATTN_SCORE_GENERAL: return d->H;
    default: return d->A;
    }
}

bool attention_projects_keys(const ModelDims *d) {
    bool dot = d->score == ATTN_SCORE_DOT || d->score == ATTN_SCORE_SCALED_DOT;
    return !dot || d->heads > 1;
}

bool attention_projects_query(const ModelDims *d) {
    bool dot = d->score == ATTN_SCORE_DOT || d->score == ATTN_SCORE_SCALED_DOT;
    return (dot && d->heads > 1) || (!dot && d->score != ATTN_SCORE_GENERAL);
}

bool attention_query_form(const ModelDims *d) {
    bool dot = d->score == ATTN_SCORE_DOT || d->score == ATTN_SCORE_SCALED_DOT;
    return d->heads > 1 && (dot || d->score == ATTN_SCORE_GENERAL);
}

void attention_query_form_rows(int R, int n, int32_t *idx) {
    for (int r = 0; r < R; r++)
        for (int j = 0; j < n; j++) idx[(size_t)r * n + j] = j * R + r;
}

static float *param_ptr(const ParamLayout *l, float *base, int idx) {
    return idx < 0 || !base ? NULL : base + l->info[idx].offset;
}

AttnWeights attention_weights(const ParamLayout *l, float *params, float *grads) {
    const ParamIndex *x = &l->idx;
    AttnWeights w = {
        param_ptr(l, params, x->attn_Wq), param_ptr(l, params, x->attn_Wk),
        param_ptr(l, params, x->attn_Wa), param_ptr(l, params, x->attn_W1),
        param_ptr(l, params, x->attn_W2), param_ptr(l, params, x->attn_v),
        param_ptr(l, params, x->attn_Wo), param_ptr(l, params, x->attn_Wp),
        param_ptr(l, params, x->attn_vp), param_ptr(l, grads, x->attn_Wq),
        param_ptr(l, grads, x->attn_Wk), param_ptr(l, grads, x->attn_Wa),
        param_ptr(l, grads, x->attn_W1), param_ptr(l, grads, x->attn_W2),
        param_ptr(l, grads, x->attn_v), param_ptr(l, grads, x->attn_Wo),
        param_ptr(l, grads, x->attn_Wp), param_ptr(l, grads, x->attn_vp),
    };
    return w;
}

/* The key projection of head j, (qd, K), and its gradient; NULL without one. */
static const float *key_proj(const ModelDims *d, const AttnWeights *w, int j, float **grad) {
    int qd = attention_qdim(d);
    size_t size = (size_t)qd * d->K;
    if (w->Wk) return *grad = w->dWk ? w->dWk + j * size : NULL, w->Wk + j * size;
    if (w->Wa) return *grad = w->dWa ? w->dWa + j * size : NULL, w->Wa + j * size;
    if (w->W2) return *grad = w->dW2 ? w->dW2 + j * size : NULL, w->W2 + j * size;
    *grad = NULL;
    return NULL;
}

/* The query projection of head j, (qd, H), and its gradient; NULL without one. */
static const float *query_proj(const ModelDims *d, const AttnWeights *w, int j, float **grad) {
    int qd = attention_qdim(d);
    size_t size = (size_t)qd * d->H;
    if (w->Wq) return *grad = w->dWq ? w->dWq + j * size : NULL, w->Wq + j * size;
    if (w->W1) return *grad = w->dW1 ? w->dW1 + j * size : NULL, w->W1 + j * size;
    *grad = NULL;
    return NULL;
}

static float score_scale(const ModelDims *d) {
    if (d->score != ATTN_SCORE_SCALED_DOT) return 1.0f;
    return 1.0f / sqrtf((float)attention_qdim(d));
}

void attention_prepare(Backend *be, const ModelDims *d, const AttnWeights *w, AttnBatch *ab) {
    if (!attention_projects_keys(d) || ab->qk) return; /* kp is the keys themselves, or unused */
    int qd = attention_qdim(d), SB = ab->S * ab->B;
    for (int j = 0; j < d->heads; j++) {
        float *unused;
        const float *W = key_proj(d, w, j, &unused);
        /* kp_j (S*B, qd) = keys (S*B, K) W^T */
        be->gemm(be, false, true, SB, qd, d->K, 1.0f, ab->keys, d->K, W, d->K, 0.0f,
                 ab->kp + (size_t)j * SB * qd, qd);
    }
}

/* The window centre of this step (device pointer) or NULL for global. */
static const float *window_center(const ModelDims *d, const AttnBatch *ab, const AttnStep *st,
                                  int t) {
    if (d->mode == ATTN_MODE_LOCAL_M) return ab->centers + (size_t)t * ab->B * (ab->G > 0 ? ab->G : 1);
    if (d->mode == ATTN_MODE_LOCAL_P) return st->p;
    return NULL;
}

/* A decoding step in the query form (attention_query_form): the scores
 * (n, R, S), the weights, and the head contexts in st->cat (R, n K). Every
 * product runs for all heads at once; a sentence's n*G query rows (row
 * j*R + g*Bs + b of qk and of the scores, j*G + g counting them) are a
 * stride of Bs rows apart, so each is one GEMM batched over sentences. */
static void query_form_forward(Backend *be, const ModelDims *d, const AttnWeights *w, const AttnBatch *ab,
                               const float *q, AttnStep *st, const float *center, int window, bool gaussian,
                               float sigma) {
    int Bs = ab->B, G = ab->G > 0 ? ab->G : 1, R = Bs * G;
    int S = ab->S, K = d->K, H = d->H, n = d->heads, qd = attention_qdim(d);
    size_t RS = (size_t)R * S;
    NMT_ASSERT(!st->dropped && st->weights == st->pre_drop); /* decoding never drops */
    float *unused;
    const float *Wk = key_proj(d, w, 0, &unused); /* head j's at + j * qd K */
    if (d->score == ATTN_SCORE_GENERAL) {
        /* qk_j (R, K) = q (R, H) Wa_j (H, K) */
        be->gemm_batched(be, false, false, R, K, H, 1.0f, q, H, 0, Wk, K, (long)H * K, 0.0f, ab->qk, K,
                         (long)R * K, n);
    } else {
        /* qp_j (R, qd) = q Wq_j^T; qk_j (R, K) = qp_j Wk_j (qd, K) */
        const float *Wq = query_proj(d, w, 0, &unused);
        be->gemm_batched(be, false, true, R, qd, H, 1.0f, q, H, 0, Wq, H, (long)qd * H, 0.0f, st->qp, qd,
                         (long)R * qd, n);
        be->gemm_batched(be, false, false, R, K, qd, 1.0f, st->qp, qd, (long)R * qd, Wk, K, (long)qd * K, 0.0f,
                         ab->qk, K, (long)R * K, n);
    }
    /* per sentence b: scores (n G, S) = scale * qk rows (n G, K) keys_b^T (K, S) */
    be->gemm_batched(be, false, true, n * G, S, K, score_scale(d), ab->qk, Bs * K, K, ab->keys, Bs * K, K, 0.0f,
                     st->scores, Bs * S, S, Bs);
    if (!center && ab->len_copies == n) /* global: every head's rows in one call */
        be->attn_softmax_forward(be, n * R, S, st->scores, ab->src_len, NULL, 0, false, sigma, st->probs,
                                 st->pre_drop);
    else
        for (int j = 0; j < n; j++)
            be->attn_softmax_forward(be, R, S, st->scores + j * RS, ab->src_len, center, window, gaussian, sigma,
                                     st->probs + j * RS, st->pre_drop + j * RS);
    /* per sentence b: contexts (n G, K) = weights rows (n G, S) keys_b (S, K) */
    if (G == 1) { /* straight into cat, where sentence b's n contexts follow one another */
        be->gemm_batched(be, false, false, n, K, S, 1.0f, st->weights, Bs * S, S, ab->keys, Bs * K, K, 0.0f,
                         st->cat, K, (long)n * K, Bs);
    } else { /* into qk, (n, R, K), then gathered into cat's (R, n K) order */
        be->gemm_batched(be, false, false, n * G, K, S, 1.0f, st->weights, Bs * S, S, ab->keys, Bs * K, K, 0.0f,
                         ab->qk, Bs * K, K, Bs);
        be->embedding_forward(be, st->cat, ab->qk, ab->cat_idx, R * n, K);
    }
}

void attention_step_forward(Backend *be, const ModelDims *d, const AttnWeights *w,
                            const AttnBatch *ab, int t, const float *q, AttnStep *st,
                            uint64_t drop_seed, uint64_t drop_offset) {
    /* Bs sentences, G query rows each (row g*Bs + b), R = G*Bs query rows */
    int Bs = ab->B, G = ab->G > 0 ? ab->G : 1, R = Bs * G;
    int S = ab->S, K = d->K, H = d->H, n = d->heads, qd = attention_qdim(d);
    size_t RS = (size_t)R * S, SBq = (size_t)S * Bs * qd;
    int ld_cat = n > 1 ? n * K : st->ldc; /* one head: cat is c */
    if (d->mode == ATTN_MODE_LOCAL_P) {
        /* p = S_b * sigmoid(vp . tanh(Wp q)) */
        be->gemm(be, false, true, R, H, H, 1.0f, q, H, w->Wp, H, 0.0f, st->ptanh, H);
        be->tanh_forward(be, st->ptanh, st->ptanh, (size_t)R * H);
        be->gemm(be, false, true, R, 1, H, 1.0f, st->ptanh, H, w->vp, H, 0.0f, st->u, 1);
        be->local_p_forward(be, R, st->u, ab->src_len, st->p);
    }
    const float *center = window_center(d, ab, st, t);
    int window = d->mode == ATTN_MODE_GLOBAL ? 0 : d->window;
    bool gaussian = d->mode == ATTN_MODE_LOCAL_P;
    float sigma = d->window / 2.0f;
    if (ab->qk) {
        query_form_forward(be, d, w, ab, q, st, center, window, gaussian, sigma);
    } else {
        for (int j = 0; j < n; j++) {
            const float *qp = q;
            float *unused;
            const float *Wq = query_proj(d, w, j, &unused);
            if (Wq) {
                float *qp_j = st->qp + (size_t)j * R * qd;
                be->gemm(be, false, true, R, qd, H, 1.0f, q, H, Wq, H, 0.0f, qp_j, qd);
                qp = qp_j;
            }
            const float *kp = ab->kp + (attention_projects_keys(d) ? j * SBq : 0);
            float *scores = st->scores + j * RS;
            if (d->score == ATTN_SCORE_CONCAT || d->score == ATTN_SCORE_ADDITIVE) {
                for (int g = 0; g < G; g++) /* the rows of hypothesis g are contiguous */
                    be->additive_score_forward(be, Bs, S, qd, kp, qp + (size_t)g * Bs * qd, w->v + (size_t)j * qd,
                                               scores + (size_t)g * Bs * S);
            } else {
                /* per sentence b: scores (G, S) = scale * qp rows (G, qd) kp_b^T (qd, S) */
                be->gemm_batched(be, false, true, G, S, qd, score_scale(d), qp, Bs * qd, qd, kp, Bs * qd, qd, 0.0f,
                                 scores, Bs * S, S, Bs);
            }
            float *probs = st->probs + j * RS, *pre = st->pre_drop + j * RS;
            be->attn_softmax_forward(be, R, S, scores, ab->src_len, center, window, gaussian, sigma, probs, pre);
            float *weights = st->weights + j * RS;
            if (st->dropped) {
                be->dropout(be, weights, pre, RS, d->attn_dropout, drop_seed, drop_offset + j * RS);
            } else if (weights != pre) {
                be->copy(be, weights, pre, RS * sizeof(float));
            }
            /* per sentence b: cat rows (G, K) of head j = weights (G, S) keys_b (S, K);
             * row g*Bs + b of cat at ld_cat * (g*Bs + b) */
            be->gemm_batched(be, false, false, G, K, S, 1.0f, weights, Bs * S, S, ab->keys, Bs * K, K, 0.0f,
                             st->cat + (size_t)j * K, Bs * ld_cat, ld_cat, Bs);
        }
    }
    if (n > 1) be->gemm(be, false, true, R, K, n * K, 1.0f, st->cat, n * K, w->Wo, n * K, 0.0f, st->c, st->ldc);
}

void attention_step_backward(Backend *be, const ModelDims *d, const AttnWeights *w,
                             const AttnBatch *ab, int t, const float *q, const AttnStep *st,
                             uint64_t drop_seed, uint64_t drop_offset, const float *dc, int ld_dc,
                             float *dq, AttnScratch *sc) {
    NMT_ASSERT(ab->G <= 1);
    int B = ab->B, S = ab->S, K = d->K, H = d->H, n = d->heads, qd = attention_qdim(d);
    size_t BS = (size_t)B * S, SBq = (size_t)S * B * qd;
    /* the head contexts' gradient (B, n K), leading dimension ld_cat */
    const float *dcat = dc;
    int ld_cat = ld_dc;
    if (n > 1) { /* dWo for all steps in attention_finish_backward */
        be->gemm(be, false, false, B, n * K, K, 1.0f, dc, ld_dc, w->Wo, n * K, 0.0f, sc->dcat, n * K);
        dcat = sc->dcat;
        ld_cat = n * K;
    }
    const float *center = window_center(d, ab, st, t);
    int window = d->mode == ATTN_MODE_GLOBAL ? 0 : d->window;
    bool gaussian = d->mode == ATTN_MODE_LOCAL_P;
    float sigma = d->window / 2.0f;
    if (gaussian) be->zero(be, sc->dp, (size_t)B * sizeof(float));
    for (int j = 0; j < n; j++) {
        const float *weights = st->weights + j * BS;
        /* dw[b] (1, S) = dcat_j[b] keys_b^T; dkeys_b (S, K) += weights[b]^T dcat_j[b] */
        be->gemm_batched(be, false, true, 1, S, K, 1.0f, dcat + (size_t)j * K, ld_cat, ld_cat,
                         ab->keys, B * K, K, 0.0f, sc->dw, S, S, B);
        be->gemm_batched(be, true, false, S, K, 1, 1.0f, weights, S, S, dcat + (size_t)j * K,
                         ld_cat, ld_cat, 1.0f, ab->dkeys, B * K, K, B);
        if (st->dropped) /* the forward's mask, drawn again */
            be->dropout(be, sc->dw, sc->dw, BS, d->attn_dropout, drop_seed, drop_offset + j * BS);
        if (sc->dguide) /* the guided alignment's, of the weights before dropout */
            be->add_cols(be, sc->dw, S, sc->dguide + (size_t)t * BS, S, B, S);
        be->attn_softmax_backward(be, B, S, st->probs + j * BS, st->pre_drop + j * BS,
                                  ab->src_len, center, window, gaussian, sigma, sc->dw,
                                  sc->dscores, gaussian ? sc->dcenter : NULL);
        if (gaussian) be->add_cols(be, sc->dp, B, sc->dcenter, B, 1, B);
        float *dWq;
        const float *Wq = query_proj(d, w, j, &dWq);
        const float *qp = Wq ? st->qp + (size_t)j * B * qd : q;
        /* the gradient of the (projected) query goes to this step's dqp
         * (zeroed before the first step), or straight to dq */
        float *dqp = Wq ? sc->dqp + ((size_t)j * sc->T + t) * B * qd : dq;
        const float *kp = ab->kp + (attention_projects_keys(d) ? j * SBq : 0);
        float *dkp = ab->dkp + (attention_projects_keys(d) ? j * SBq : 0);
        if (d->score == ATTN_SCORE_CONCAT || d->score == ATTN_SCORE_ADDITIVE) {
            be->additive_score_backward(be, B, S, qd, kp, qp, w->v + (size_t)j * qd, sc->dscores,
                                        dkp, dqp, w->dv + (size_t)j * qd);
        } else {
            float scale = score_scale(d);
            be->gemm_batched(be, false, false, 1, qd, S, scale, sc->dscores, S, S, kp, B * qd, qd,
                             1.0f, dqp, qd, qd, B);
            be->gemm_batched(be, true, false, S, qd, 1, scale, sc->dscores, S, S, qp, qd, qd, 1.0f,
                             dkp, B * qd, qd, B);
        }
        if (Wq) /* dWq for all steps in attention_finish_backward */
            be->gemm(be, false, false, B, H, qd, 1.0f, dqp, qd, Wq, H, 1.0f, dq, H);
    }
    if (gaussian) {
        be->zero(be, sc->du, (size_t)B * sizeof(float));
        be->local_p_backward(be, B, st->u, ab->src_len, sc->dp, sc->du);
        be->gemm(be, true, false, 1, H, B, 1.0f, sc->du, 1, st->ptanh, H, 1.0f, w->dvp, H);
        /* dptanh (B, H) = du (B, 1) vp (1, H), then through tanh into dpre */
        be->gemm(be, false, false, B, H, 1, 1.0f, sc->du, 1, w->vp, H, 0.0f, sc->dptanh, H);
        /* this step's dpre (zeroed before the first step); dWp for all
         * steps in attention_finish_backward */
        float *dpre = sc->dpre + (size_t)t * B * H;
        be->tanh_backward(be, dpre, sc->dptanh, st->ptanh, (size_t)B * H);
        be->gemm(be, false, false, B, H, H, 1.0f, dpre, H, w->Wp, H, 1.0f, dq, H);
    }
}

void attention_finish_backward(Backend *be, const ModelDims *d, const AttnWeights *w,
                               AttnBatch *ab, const AttnScratch *sc, const AttnSteps *all) {
    NMT_ASSERT(ab->G <= 1);
    int qd = attention_qdim(d), SB = ab->S * ab->B, TB = sc->T * ab->B, H = d->H, K = d->K;
    int n = d->heads;
    for (int j = 0; j < n; j++) {
        float *dWq;
        const float *Wq = query_proj(d, w, j, &dWq);
        if (Wq) /* dWq_j (qd, H) += dqp_j^T (qd, T*B) q (T*B, H) */
            be->gemm(be, true, false, qd, H, TB, 1.0f, sc->dqp + (size_t)j * TB * qd, qd, all->q, H,
                     1.0f, dWq, H);
    }
    if (n > 1) /* dWo (K, n K) += dc^T (K, T*B) cat (T*B, n K) */
        be->gemm(be, true, false, K, n * K, TB, 1.0f, all->dc, all->ld_dc, all->cat, n * K, 1.0f, w->dWo,
                 n * K);
    if (d->mode == ATTN_MODE_LOCAL_P) /* dWp (H, H) += dpre^T (H, T*B) q (T*B, H) */
        be->gemm(be, true, false, H, H, TB, 1.0f, sc->dpre, H, all->q, H, 1.0f, w->dWp, H);
    if (!attention_projects_keys(d)) return; /* dkp was dkeys itself */
    for (int j = 0; j < n; j++) {
        float *dW;
        const float *W = key_proj(d, w, j, &dW);
        const float *dkp = ab->dkp + (size_t)j * SB * qd;
        be->gemm(be, false, false, SB, K, qd, 1.0f, dkp, qd, W, K, 1.0f, ab->dkeys, K);
        be->gemm(be, true, false, qd, K, SB, 1.0f, dkp, qd, ab->keys, K, 1.0f, dW, K);
    }
}
