/* seq2seq_score.c: teacher-forced scoring (seq2seq_score.h): a batch's
 * reference tokens fed step by step to the decoder of every model; at each
 * step the log-probability of every row's next reference token is gathered
 * on the device (Backend.embedding_forward over the step's (rows, V_t)
 * log-probabilities seen as a table of single floats), and read back with
 * one download per model and batch. Sentences whose target has ended leave
 * the batch as they do in decoding (Backend.decode_quantum). The models are
 * made again when a batch does not fit their limits. Only existing Backend
 * slots are used, so the CUDA backend runs it unchanged. */
#include "model/seq2seq_score.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/decode_step.h"
#include "model/seq2seq_internal.h"

struct Seq2SeqScorer {
    Backend *be;
    int n;                     /* models */
    ModelDims *dims;           /* (n) */
    const float **weights;     /* (n) host weights, borrowed */
    Seq2Seq **models;          /* (n) made for `lim` */
    int V;                     /* target vocabulary */
    bool full_vocab;           /* softmax over PAD and BOS too (training's NLL) */
    ScoreShape base, lim;      /* the base shape (budget base.B * max(base.S, base.T)); the limits now */
    size_t cap;                /* lim.B * lim.T: gathered values a batch holds at most */
    int32_t *d_idx;            /* (cap) device: row * V + token of every row-step */
    float *d_vals;             /* (n, cap) device: their log-probabilities, per model */
    int32_t *h_idx, *h_dest;   /* (cap) host: the indices; where each value goes in logp (-1: nowhere) */
    float *h_vals;             /* (cap) host: one model's values */
    int32_t *prev, *sent, *keep; /* (lim.B) a step's input tokens; batch column of each column (-1:
                                    ended); the columns kept */
    float *h_attn;             /* (heads, cols, S) host: one step's attention (seq2seq_score_batch's attn) */
    size_t h_attn_cap;         /* floats it holds */
};

static size_t shape_cells(ScoreShape s) {
    return (size_t)s.B * (size_t)(s.S > s.T ? s.S : s.T);
}

static ScoreShape shape_max(ScoreShape a, ScoreShape b) {
    ScoreShape m = {a.B > b.B ? a.B : b.B, a.S > b.S ? a.S : b.S, a.T > b.T ? a.T : b.T};
    return m;
}

static bool shape_fits(ScoreShape lim, ScoreShape need) {
    return need.B <= lim.B && need.S <= lim.S && need.T <= lim.T;
}

bool seq2seq_scorer_within_budget(const Seq2SeqScorer *sc, ScoreShape shape) {
    return shape_cells(shape) <= shape_cells(sc->base);
}

/* Frees the models and the buffers sized for them. */
static void release_models(Seq2SeqScorer *sc) {
    Backend *be = sc->be;
    for (int k = 0; k < sc->n; k++) {
        seq2seq_free(sc->models[k]);
        sc->models[k] = NULL;
    }
    be->release(be, sc->d_idx);
    be->release(be, sc->d_vals);
    sc->d_idx = NULL;
    sc->d_vals = NULL;
    nmt_free(sc->h_idx), nmt_free(sc->h_dest), nmt_free(sc->h_vals);
    nmt_free(sc->prev), nmt_free(sc->sent), nmt_free(sc->keep);
    sc->h_idx = sc->h_dest = sc->prev = sc->sent = sc->keep = NULL;
    sc->h_vals = NULL;
    sc->cap = 0;
    memset(&sc->lim, 0, sizeof sc->lim);
}

/* (Re)makes every model and buffer for limits `lim`. */
static NmtStatus make_models(Seq2SeqScorer *sc, ScoreShape lim) {
    Backend *be = sc->be;
    release_models(sc);
    if ((int64_t)lim.B * sc->V > INT32_MAX)
        return nmt_fail(NMT_ERR_USAGE, "%d sentences a batch of a %d-token vocabulary are too many to score at once "
                        "(at most %d)", lim.B, sc->V, (int)(INT32_MAX / sc->V));
    /* step by step only: no training batch (max_T 1), greedy rows (max_beam 1) */
    ModelLimits ml = {.max_B = lim.B, .max_S = lim.S, .max_T = 1, .max_decode_T = lim.T, .max_beam = 1};
    for (int k = 0; k < sc->n; k++) {
        NmtStatus st = seq2seq_create(be, &sc->dims[k], ml, &sc->models[k]);
        if (st) return st;
        be->upload(be, seq2seq_params(sc->models[k]), sc->weights[k],
                   seq2seq_layout(sc->models[k])->total * sizeof(float));
    }
    size_t cap = (size_t)lim.B * lim.T;
    sc->d_idx = be->alloc(be, cap * sizeof(int32_t));
    sc->d_vals = be->alloc(be, (size_t)sc->n * cap * sizeof(float));
    sc->h_idx = nmt_malloc(cap * sizeof(int32_t));
    sc->h_dest = nmt_malloc(cap * sizeof(int32_t));
    sc->h_vals = nmt_malloc(cap * sizeof(float));
    sc->prev = nmt_malloc((size_t)lim.B * sizeof(int32_t));
    sc->sent = nmt_malloc((size_t)lim.B * sizeof(int32_t));
    sc->keep = nmt_malloc((size_t)lim.B * sizeof(int32_t));
    if (!sc->d_idx || !sc->d_vals || !sc->h_idx || !sc->h_dest || !sc->h_vals || !sc->prev || !sc->sent || !sc->keep)
        return nmt_fail(NMT_ERR_NOMEM, "out of memory on %s for the scores of batches up to %d x %d steps",
                        be->name, lim.B, lim.T);
    sc->cap = cap;
    sc->lim = lim;
    return NMT_OK;
}

/* Makes the models again when `need` does not fit: as large as the old
 * limits and `need` together, or as the base and `need`, within the budget;
 * else exactly `need` (seq2seq_score.h, Sizing). */
static NmtStatus fit_models(Seq2SeqScorer *sc, ScoreShape need) {
    if (sc->cap && shape_fits(sc->lim, need)) return NMT_OK;
    size_t budget = shape_cells(sc->base);
    ScoreShape grown = shape_max(sc->lim, need), from_base = shape_max(sc->base, need);
    ScoreShape lim = shape_cells(grown) <= budget ? grown : shape_cells(from_base) <= budget ? from_base : need;
    return make_models(sc, lim);
}

NmtStatus seq2seq_scorer_create(Backend *be, const ModelDims *const *dims, const float *const *weights, int n_models,
                                ScoreShape base, bool full_vocab, Seq2SeqScorer **out) {
    *out = NULL;
    NMT_ASSERT(n_models >= 1 && base.B >= 1 && base.S >= 1 && base.T >= 1);
    Seq2SeqScorer *sc = nmt_calloc(1, sizeof *sc);
    if (!sc) return nmt_fail_nomem("the scorer");
    sc->be = be;
    sc->n = n_models;
    sc->V = dims[0]->V_t;
    sc->base = base;
    sc->full_vocab = full_vocab;
    sc->dims = nmt_calloc((size_t)n_models, sizeof *sc->dims);
    sc->weights = nmt_calloc((size_t)n_models, sizeof *sc->weights);
    sc->models = nmt_calloc((size_t)n_models, sizeof *sc->models);
    if (!sc->dims || !sc->weights || !sc->models) {
        seq2seq_scorer_free(sc);
        return nmt_fail_nomem("the scorer");
    }
    for (int k = 0; k < n_models; k++) {
        NMT_ASSERT(dims[k]->V_t == sc->V);
        sc->dims[k] = *dims[k];
        sc->weights[k] = weights[k];
    }
    NmtStatus st = make_models(sc, base);
    if (st) {
        seq2seq_scorer_free(sc);
        return st;
    }
    *out = sc;
    return NMT_OK;
}

void seq2seq_scorer_free(Seq2SeqScorer *sc) {
    if (!sc) return;
    if (sc->models) release_models(sc);
    nmt_free(sc->h_attn);
    nmt_free(sc->dims);
    nmt_free(sc->weights);
    nmt_free(sc->models);
    nmt_free(sc);
}

/* Step t's input tokens and gather indices for the `cols` columns, from
 * h_idx[off]: column j's row j, its sentence's reference token; an ended
 * column reads EOS and its value goes nowhere. */
static void step_tokens(Seq2SeqScorer *sc, const Batch *batch, int t, int cols, size_t off) {
    int B = batch->B;
    for (int j = 0; j < cols; j++) {
        int b = sc->sent[j];
        bool live = b >= 0;
        sc->prev[j] = live ? batch->tgt_in[(size_t)t * B + b] : NMT_EOS_ID;
        sc->h_idx[off + j] = j * sc->V + (live ? batch->tgt_out[(size_t)t * B + b] : NMT_EOS_ID);
        sc->h_dest[off + j] = live ? t * B + b : -1;
    }
}

/* After step t: ends the columns whose target is complete and drops them
 * from every model's batch (down to the decode quantum); returns the
 * columns of the next step, 0 when none is left. */
static int drop_ended(Seq2SeqScorer *sc, const Batch *batch, int t, int cols) {
    int live = 0;
    for (int j = 0; j < cols; j++) {
        if (sc->sent[j] >= 0 && batch->tgt_len[sc->sent[j]] <= t + 1) sc->sent[j] = -1;
        if (sc->sent[j] >= 0) live++;
    }
    if (live == 0) return 0;
    int n = seq2seq_decode_kept_columns(sc->be, cols, live);
    if (n == cols) return cols;
    int dead = n - live, k = 0; /* every live column, and the first ended ones to reach n */
    for (int j = 0; j < cols; j++)
        if (sc->sent[j] >= 0 || dead-- > 0) sc->keep[k++] = j;
    NMT_ASSERT(k == n);
    for (int i = 0; i < n; i++) sc->sent[i] = sc->sent[sc->keep[i]];
    /* one row per sentence: the rows that continue are the columns kept */
    for (int m = 0; m < sc->n; m++) seq2seq_decode_reorder(sc->models[m], t, sc->keep, sc->keep, n);
    return n;
}

/* attn (B, T, S) row (b, t) = the first model's attention of column j
 * (sentence b) at step t, heads averaged. */
static void keep_attention(Seq2SeqScorer *sc, const Batch *batch, int t, int cols, float *attn) {
    int S = batch->S, T = batch->T, heads = sc->dims[0].heads;
    seq2seq_decode_attention(sc->models[0], t, sc->h_attn);
    for (int j = 0; j < cols; j++) {
        int b = sc->sent[j];
        if (b < 0) continue;
        float *row = attn + ((size_t)b * T + t) * S;
        for (int x = 0; x < S; x++) {
            float sum = 0;
            for (int h = 0; h < heads; h++) sum += sc->h_attn[((size_t)h * cols + j) * S + x];
            row[x] = sum / heads;
        }
    }
}

NmtStatus seq2seq_score_batch(Seq2SeqScorer *sc, const Batch *batch, float *logp, float *attn) {
    ScoreShape need = {batch->B, batch->S, batch->T};
    NmtStatus st = fit_models(sc, need);
    if (st) return st;
    if (attn) {
        NMT_ASSERT(sc->dims[0].style != ATTN_STYLE_NONE);
        size_t cells = (size_t)sc->dims[0].heads * batch->B * batch->S;
        if (cells > sc->h_attn_cap) {
            float *p = nmt_realloc(sc->h_attn, cells * sizeof *p);
            if (!p) return nmt_fail_nomem("the attention of a batch");
            sc->h_attn = p;
            sc->h_attn_cap = cells;
        }
        memset(attn, 0, (size_t)batch->B * batch->T * batch->S * sizeof *attn);
    }
    Backend *be = sc->be;
    int B = batch->B, T = batch->T;
    for (int m = 0; m < sc->n; m++) {
        Seq2Seq *model = sc->models[m];
        seq2seq_decode_setup(model, batch, 1, T);
        /* decoding's output bias has -inf at PAD and BOS (never output);
         * the plain bias normalises over them too, as training does */
        if (sc->full_vocab)
            be->copy(be, model->dec_bias, P(model, model->layout.idx.out_b), (size_t)sc->V * sizeof(float));
    }
    for (int b = 0; b < B; b++) sc->sent[b] = b;
    size_t off = 0; /* row-steps so far: where step t's values go */
    for (int t = 0, cols = B; cols > 0; t++) {
        NMT_ASSERT(t < T && off + (size_t)cols <= sc->cap);
        step_tokens(sc, batch, t, cols, off);
        be->upload(be, sc->d_idx + off, sc->h_idx + off, (size_t)cols * sizeof(int32_t));
        for (int m = 0; m < sc->n; m++) {
            seq2seq_decode_step(sc->models[m], t, sc->prev, true);
            const float *lp = seq2seq_decode_scores(sc->models[m]); /* (cols, V) log-probabilities */
            be->embedding_forward(be, sc->d_vals + (size_t)m * sc->cap + off, lp, sc->d_idx + off, cols, 1);
        }
        if (attn) keep_attention(sc, batch, t, cols, attn);
        off += (size_t)cols;
        cols = drop_ended(sc, batch, t, cols);
    }
    /* an ensemble's log-probabilities are averaged, as its decoding does:
     * summed over the models, then scaled */
    memset(logp, 0, (size_t)T * B * sizeof(float));
    for (int m = 0; m < sc->n; m++) {
        be->download(be, sc->h_vals, sc->d_vals + (size_t)m * sc->cap, off * sizeof(float));
        for (size_t i = 0; i < off; i++)
            if (sc->h_dest[i] >= 0) logp[sc->h_dest[i]] += sc->h_vals[i];
    }
    if (sc->n > 1)
        for (size_t i = 0; i < (size_t)T * B; i++) logp[i] *= 1.0f / sc->n;
    for (int m = 0; m < sc->n; m++) seq2seq_decode_end(sc->models[m]);
    return NMT_OK;
}
