/* attention.h: every attention variant of docs/model.md, for one decoder
 * step at a time, forward and backward, on a Backend.
 *
 * Per batch, attention_prepare projects the keys once (general: Wa k;
 * additive: W2 k; dot with several heads: Wk k), except for decoding in
 * the query form (attention_query_form), which projects each step's
 * queries instead. Per step,
 * attention_step_forward turns the query (B, H) into the context (B, K)
 * and keeps what its backward needs in an AttnStep; attention_step_backward
 * adds into the query gradient, the projected-key gradient and the small
 * weight gradients (v, vp) and keeps each step's projected-query gradient;
 * attention_finish_backward turns the projected-key gradient into the key
 * gradient and computes the large weight gradients (query and key
 * projections, Wo, Wp) once per batch, one GEMM over all steps each. Forward steps also serve beam
 * search (G query rows per sentence, keys not copied); the backward ones
 * need G == 1. Per-step shapes below use B for the query rows G*B. */
#ifndef NMT_MODEL_ATTENTION_H
#define NMT_MODEL_ATTENTION_H

#include "backend.h"
#include "model/params.h"

typedef struct {
    const float *Wq, *Wk, *Wa, *W1, *W2, *v, *Wo, *Wp, *vp; /* NULL when absent */
    float *dWq, *dWk, *dWa, *dW1, *dW2, *dv, *dWo, *dWp, *dvp;
} AttnWeights;

/* What stays the same for every step of a batch. */
typedef struct {
    int B, S;
    int G;                  /* query rows per sentence: 1 in training; the beam
                               size in beam search, row g*B + b asking sentence b */
    const float *keys;      /* (S, B, K) encoder top outputs, shared by a sentence's rows */
    float *dkeys;           /* (S, B, K) += */
    float *kp, *dkp;        /* (n, S, B, qdim) projected keys and their gradient;
                               kp == keys when there is no projection */
    const int32_t *src_len; /* (len_copies*G*B) source length of each query row, on
                               the backend, len_copies times over */
    int len_copies;         /* n in the query form with n > 1 heads (one softmax call
                               for every head's rows, row j*G*B + r), else 1 */
    const float *centers;   /* (T, G*B) local-m window centres, else NULL */
    float *qk;              /* decoding in the query form (attention_query_form):
                               (n, G*B, K) each head's query through its key
                               projection, then each head's context; NULL: the
                               keys are projected (kp), as in training */
    int32_t *cat_idx;       /* query form with G > 1: (G*B n) the gather of the
                               contexts in qk into cat's (G*B, n K) order, row
                               r*n + j <- row j*G*B + r (attention_query_form_rows) */
} AttnBatch;

/* Saved activations of one step. */
typedef struct {
    float *qp;      /* (n, B, qdim) projected query; NULL when it is the query itself */
    float *ptanh;   /* (B, H) tanh(Wp q), local-p */
    float *u, *p;   /* (B) local-p: vp . ptanh and the centre */
    float *scores;  /* (n, B, S) */
    float *probs;   /* (n, B, S) windowed softmax */
    float *weights; /* (n, B, S) after the Gaussian and dropout: what the context uses */
    float *pre_drop;/* (n, B, S) before dropout (== weights when no dropout) */
    bool dropped;   /* weights = dropout(pre_drop); the mask is drawn again in backward */
    float *cat;     /* (B, n K) head contexts; == c when n == 1 */
    float *c;       /* (B, K), leading dimension ldc: where the caller wants the
                       context (the decoder: in its W_c input) */
    int ldc;
} AttnStep;

/* Scratch for the backward of one step (reused across steps), and the
 * gradients every step keeps for the weight gradients that
 * attention_finish_backward computes once for all steps. */
typedef struct {
    int T;          /* steps of the batch */
    float *dcat;    /* (B, n K) */
    float *dw;      /* (B, S) */
    float *dscores; /* (B, S) */
    float *dcenter; /* (B) */
    float *dp;      /* (B) */
    float *du;      /* (B) */
    float *dptanh;  /* (B, H) */
    float *dqp;     /* (n, T, B, qdim) every step's projected-query gradient, zeroed
                       before the first step; NULL without a query projection */
    float *dpre;    /* (T, B, H) local-p: every step's gradient of Wp q, zeroed
                       before the first step; NULL otherwise */
    const float *dguide; /* (T, B, S) guided alignment: the gradient of each step's
                            weights before dropout, the same for every head
                            (Backend.guided_align); NULL: none */
} AttnScratch;

/* What the weight gradients read for every step at once. */
typedef struct {
    const float *q;   /* (T, B, H) the queries of steps 0..T-1 */
    const float *cat; /* (T, B, n K) the head contexts; read only when n > 1 */
    const float *dc;  /* (T, B, ld_dc) the context gradients; read only when n > 1 */
    int ld_dc;
} AttnSteps;

/* Size of the projected query and keys. */
int attention_qdim(const ModelDims *d);
/* Whether keys are projected (kp is its own buffer). */
bool attention_projects_keys(const ModelDims *d);
/* Whether the query is projected (AttnStep.qp is its own buffer). */
bool attention_projects_query(const ModelDims *d);
/* Whether step-by-step decoding takes the query form: several heads of
 * general or (scaled) dot scores. Then a head's score q^T Wq^T Wk k (dot;
 * general: q^T Wa k) is computed as (q Wq^T Wk) k instead of q^T (Wk k):
 * each step reads the keys once for all heads, for the scores and again for
 * the contexts, instead of every head's projected keys and then the keys
 * once per head; attention_prepare projects no keys. The same scores up to
 * rounding (docs/decoding.md). Set AttnBatch.qk to take it. */
bool attention_query_form(const ModelDims *d);
/* The gather indices of AttnBatch.cat_idx for R query rows and n heads:
 * idx[r*n + j] = j*R + r (host memory, R*n entries). */
void attention_query_form_rows(int R, int n, int32_t *idx);

AttnWeights attention_weights(const ParamLayout *l, float *params, float *grads);

void attention_prepare(Backend *be, const ModelDims *d, const AttnWeights *w, AttnBatch *ab);
/* t: the 0-based target step (local-m centre). q (B, H). drop_seed: the
 * dropout stream of this step (unused without attention dropout). */
void attention_step_forward(Backend *be, const ModelDims *d, const AttnWeights *w,
                            const AttnBatch *ab, int t, const float *q, AttnStep *st,
                            uint64_t drop_seed, uint64_t drop_offset);
/* dc (B, K; leading dimension ld_dc) in; dq (B, H) +=. drop_seed,
 * drop_offset: those of the step's forward (the dropout mask is drawn
 * again). */
void attention_step_backward(Backend *be, const ModelDims *d, const AttnWeights *w,
                             const AttnBatch *ab, int t, const float *q, const AttnStep *st,
                             uint64_t drop_seed, uint64_t drop_offset, const float *dc, int ld_dc,
                             float *dq, AttnScratch *sc);
/* Once per batch, after every step's backward: dkeys += the key gradient
 * collected in dkp; the weight gradients of the key projections, and those
 * the steps left for all steps at once (the query projections from sc->dqp,
 * Wo from all->dc, local-p's Wp from sc->dpre). */
void attention_finish_backward(Backend *be, const ModelDims *d, const AttnWeights *w,
                               AttnBatch *ab, const AttnScratch *sc, const AttnSteps *all);

#endif
