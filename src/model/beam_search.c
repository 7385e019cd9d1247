/* beam_search.c: greedy decoding, beam search and ensembles (seq2seq.h,
 * docs/decoding.md) on the step-by-step interface of decode_step.h.
 *
 * Rows are G-major: row g*C + j is hypothesis g of sentence column j, C
 * the sentences still being decoded. When sentences finish, the others
 * move down to columns 0..C'-1 and later steps compute only their rows;
 * sent[j] remembers which batch sentence column j is. How far the columns
 * shrink is the backend's choice (Backend.decode_quantum, seq2seq_decode_kept_columns):
 * a finished sentence may keep its column for a while, as a dead column
 * (sent[j] = -1) whose rows are computed and never read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/rng.h"
#include "model/decode_step.h"

/* The step limit of a batch: the longest a * src_len + b, capped by every
 * model's max_decode_T (and `cap` when positive). */
static int decode_limit(Seq2Seq *const *models, int n_models, const Batch *batch, double a, int b_len, int cap) {
    int T = 1;
    for (int b = 0; b < batch->B; b++) {
        int limit = (int)(a * batch->src_len[b]) + b_len;
        if (limit > T) T = limit;
    }
    for (int k = 0; k < n_models; k++)
        if (T > seq2seq_limits(models[k])->max_decode_T) T = seq2seq_limits(models[k])->max_decode_T;
    if (cap > 0 && T > cap) T = cap;
    return T;
}

int seq2seq_decode_kept_columns(const Backend *be, int cols, int live) {
    int q = be->decode_quantum > 1 ? be->decode_quantum : 1;
    int want = (live + q - 1) / q * q;
    return want < cols ? want : cols;
}

/* Fills keep[0..n) (ascending) with the columns that stay: every live one
 * (sent[j] >= 0) and the first n - live finished ones. */
static void choose_columns(const int32_t *sent, int cols, int live, int n, int32_t *keep) {
    int dead = n - live, k = 0;
    for (int j = 0; j < cols; j++)
        if (sent[j] >= 0 || dead-- > 0) keep[k++] = j;
    NMT_ASSERT(k == n);
}

/* ---- greedy decoding --------------------------------------------------- */

/* Where the backend overlaps downloads (Backend.overlap_downloads), greedy
 * decoding is pipelined: it queues step t+1 before it reads step t's
 * tokens, feeding every column its own best token, which the device has
 * already; the device computes step t+1 while the host waits for and reads
 * step t's. A sentence that finished at step t is then a dead column of
 * step t+1. The batch shrinks only after a step that was not queued
 * ahead: when step t shows it should, step t+1 (queued) still computes
 * every column, and step t+2 waits until step t+1 is read. The step after
 * the last sentence finished is queued in vain (one per batch), unless the
 * length limits show that no sentence can need it. The tokens are the
 * same either way (docs/decoding.md). */
/* The token sampling draws for the sentence of `key` at step t among a
 * row's k candidates (log-probabilities lp (k), best first, their ids;
 * -1 past the row's end): index i with probability proportional to
 * exp((lp_i - lp_0) / temperature), from a uniform number that is a pure
 * function of (key, t). A row with no finite candidate (NaN logits) ends
 * the sentence: EOS. */
static int32_t sample_candidate(const SampleSpec *spec, uint64_t key, int t, const float *lp, const int32_t *id) {
    double w[SEQ2SEQ_MAX_SAMPLE_K], total = 0;
    int n = 0;
    for (int i = 0; i < spec->k && id[i] >= 0 && isfinite(lp[i]); i++, n++) {
        w[i] = exp(((double)lp[i] - lp[0]) / spec->temperature);
        total += w[i];
    }
    if (n == 0) return NMT_EOS_ID;
    uint64_t bits = rng_mix64(key ^ rng_mix64((uint64_t)t + 0x9e3779b97f4a7c15ULL));
    double u = (double)(bits >> 11) * 0x1p-53 * total; /* [0, total) */
    for (int i = 0; i < n; i++) {
        if (u < w[i]) return id[i];
        u -= w[i];
    }
    return id[n - 1]; /* rounding at the very end */
}

/* Greedy decoding, or sampling (spec not NULL: no pipelining, k candidates
 * read per step, the token drawn on the host). */
static NmtStatus one_best(Seq2Seq *m, const Batch *batch, double max_len_a, int max_len_b, const SampleSpec *spec,
                          int32_t *out, int out_stride, int *out_len) {
    int B = batch->B, k = spec ? spec->k : 1;
    NMT_ASSERT(k >= 1 && k <= SEQ2SEQ_MAX_SAMPLE_K && (k == 1 || k <= seq2seq_limits(m)->max_sample_k));
    int T = decode_limit(&m, 1, batch, max_len_a, max_len_b, 0);
    int32_t *prev = nmt_malloc((size_t)B * 4), *ids = nmt_malloc((size_t)B * 4);
    int32_t *keep = nmt_malloc((size_t)B * 4), *sent = nmt_malloc((size_t)B * 4);
    float *cand_lp = spec ? nmt_malloc((size_t)B * k * sizeof(float)) : NULL;
    int32_t *cand_id = spec ? nmt_malloc((size_t)B * k * 4) : NULL;
    if (!prev || !ids || !keep || !sent || (spec && (!cand_lp || !cand_id))) {
        nmt_free(prev), nmt_free(ids), nmt_free(keep), nmt_free(sent), nmt_free(cand_lp), nmt_free(cand_id);
        return nmt_fail_nomem(spec ? "sampling" : "greedy decoding");
    }
    Backend *be = seq2seq_backend(m);
    bool pipelined = !spec && be->overlap_downloads && !seq2seq_decode_has_shortlist(m);
    seq2seq_decode_setup(m, batch, 1, T);
    int cols = B;
    for (int b = 0; b < B; b++) {
        prev[b] = NMT_BOS_ID;
        sent[b] = b;
        out_len[b] = T;
    }
    seq2seq_decode_step(m, 0, prev, spec != NULL); /* sampling draws from log-probabilities */
    seq2seq_decode_topk_start(m, k);
    int horizon = T;         /* no sentence still searching needs step `horizon` */
    bool shrink_due = false; /* the last step read showed the batch should shrink */
    for (int t = 0;; t++) { /* step t is queued */
        bool ahead = pipelined && !shrink_due && t + 1 < horizon;
        if (ahead) { /* on every column's best token of step t (top-1 ids are never -1) */
            seq2seq_decode_step(m, t + 1, NULL, false);
            seq2seq_decode_topk_start(m, 1);
        }
        if (spec) { /* step t's candidates; a dead column's draw is never read */
            seq2seq_decode_topk_finish(m, cand_lp, cand_id);
            for (int j = 0; j < cols; j++)
                ids[j] = sent[j] < 0 ? NMT_EOS_ID
                                     : sample_candidate(spec, spec->keys[sent[j]], t, cand_lp + (size_t)j * k,
                                                        cand_id + (size_t)j * k);
        } else {
            seq2seq_decode_topk_finish(m, NULL, ids); /* step t's */
        }
        int live = 0;
        horizon = 0;
        for (int j = 0; j < cols; j++) {
            int b = sent[j];
            if (b < 0) continue; /* a dead column */
            int limit = (int)(max_len_a * batch->src_len[b]) + max_len_b;
            if (limit > T) limit = T;
            bool eos = ids[j] == NMT_EOS_ID;
            if (!eos) out[(size_t)b * out_stride + t] = ids[j];
            if (eos || t + 1 >= limit) {
                out_len[b] = eos ? t : t + 1;
                sent[j] = -1;
                continue;
            }
            if (limit > horizon) horizon = limit;
            live++;
        }
        if (live == 0) {
            if (ahead) seq2seq_decode_topk_finish(m, NULL, ids); /* the step queued in vain */
            break;
        }
        int n = seq2seq_decode_kept_columns(be, cols, live);
        if (ahead) { /* step t+1 computes every column; shrink after it */
            shrink_due = n < cols;
            continue;
        }
        shrink_due = false;
        /* every column is fed its own best token (a dead one's is never
         * read), so an unchanged batch feeds back exactly the ids read */
        if (n < cols) {
            choose_columns(sent, cols, live, n, keep);
            for (int i = 0; i < n; i++) sent[i] = sent[keep[i]], prev[i] = ids[keep[i]];
            seq2seq_decode_reorder(m, t, keep, keep, n); /* one row per sentence: rows are columns */
        } else {
            memcpy(prev, ids, (size_t)cols * 4);
        }
        for (int i = 0; i < n; i++)
            if (prev[i] < 0) prev[i] = NMT_EOS_ID; /* no best token (all -inf): any valid one */
        cols = n;
        seq2seq_decode_step(m, t + 1, prev, spec != NULL);
        seq2seq_decode_topk_start(m, k);
    }
    seq2seq_decode_end(m);
    nmt_free(prev), nmt_free(ids), nmt_free(keep), nmt_free(sent), nmt_free(cand_lp), nmt_free(cand_id);
    return NMT_OK;
}

NmtStatus seq2seq_greedy(Seq2Seq *m, const Batch *batch, double max_len_a, int max_len_b, int32_t *out,
                         int out_stride, int *out_len) {
    return one_best(m, batch, max_len_a, max_len_b, NULL, out, out_stride, out_len);
}

NmtStatus seq2seq_sample(Seq2Seq *m, const Batch *batch, double max_len_a, int max_len_b, const SampleSpec *spec,
                         int32_t *out, int out_stride, int *out_len) {
    NMT_ASSERT(spec && spec->keys && spec->temperature > 0);
    return one_best(m, batch, max_len_a, max_len_b, spec, out, out_stride, out_len);
}

/* ---- beam search ------------------------------------------------------- */

/* GNMT length penalty of a hypothesis of `len` tokens (EOS counted). */
static double length_penalty(double alpha, int len) {
    return alpha > 0 ? pow((5.0 + len) / 6.0, alpha) : 1.0;
}

/* GNMT coverage penalty of one hypothesis' summed attention over its source. */
static double coverage_penalty(double beta, const float *cov, int src_len) {
    if (beta <= 0) return 0;
    double sum = 0;
    for (int s = 0; s < src_len; s++) sum += log(fmin(fmax(cov[s], 1e-6), 1.0));
    return beta * sum;
}

typedef struct {
    int row;   /* parent row */
    int token;
    double logp;
} BeamCand;

static int cand_cmp(const void *x, const void *y) {
    const BeamCand *a = x, *b = y;
    if (a->logp != b->logp) return a->logp > b->logp ? -1 : 1;
    if (a->row != b->row) return a->row - b->row;
    return a->token - b->token;
}

/* Where finished hypotheses go (seq2seq_ensemble_search's outputs). */
typedef struct {
    int nbest, stride, S;
    int32_t *tokens;
    int *len;
    double *score;
    int *count;
    float *attn; /* (B * nbest, stride, S) or NULL */
} BeamOut;

/* Inserts a finished hypothesis into sentence b's sorted n-best list; attn
 * (T_hist, S) holds its attention rows by step when recorded. */
static void add_finished(const BeamOut *o, int b, const int32_t *tokens, int len, double score, const float *attn) {
    int n = o->nbest, *count = &o->count[b];
    size_t arow = (size_t)o->stride * o->S;
    int at = *count;
    while (at > 0 && o->score[b * n + at - 1] < score) at--;
    if (at >= n) return;
    int last = *count < n ? *count : n - 1;
    for (int i = last; i > at; i--) {
        memcpy(o->tokens + (size_t)(b * n + i) * o->stride, o->tokens + (size_t)(b * n + i - 1) * o->stride,
               (size_t)o->stride * 4);
        o->len[b * n + i] = o->len[b * n + i - 1];
        o->score[b * n + i] = o->score[b * n + i - 1];
        if (o->attn) memcpy(o->attn + (b * n + i) * arow, o->attn + (b * n + i - 1) * arow, arow * sizeof(float));
    }
    memcpy(o->tokens + (size_t)(b * n + at) * o->stride, tokens, (size_t)len * 4);
    o->len[b * n + at] = len;
    o->score[b * n + at] = score;
    if (o->attn && attn) memcpy(o->attn + (b * n + at) * arow, attn, (size_t)len * o->S * sizeof(float));
    if (*count < n) (*count)++;
}

/* Host state of a search, indexed by row (R = G * B at most). */
typedef struct {
    int32_t *prev, *ids, *rows, *keep, *sent, *parent, *next_tok;
    int32_t *hist, *new_hist;   /* (R, T) tokens so far */
    float *vals;                /* (R, G) */
    double *logp, *next_logp;   /* (R) */
    float *cov, *new_cov;       /* (R, S) coverage penalty: attention summed over steps */
    float *hattn, *new_hattn;   /* (R, T, S) recorded attention */
    float *attn;                /* (heads, R, S) one step's attention */
    BeamCand *cands;            /* (G * G) */
} Search;

static void search_free(Search *s) {
    nmt_free(s->prev), nmt_free(s->ids), nmt_free(s->rows), nmt_free(s->keep), nmt_free(s->sent);
    nmt_free(s->parent), nmt_free(s->next_tok), nmt_free(s->hist), nmt_free(s->new_hist), nmt_free(s->vals);
    nmt_free(s->logp), nmt_free(s->next_logp), nmt_free(s->cov), nmt_free(s->new_cov), nmt_free(s->hattn);
    nmt_free(s->new_hattn), nmt_free(s->attn), nmt_free(s->cands);
}

static NmtStatus search_alloc(Search *s, int B, int G, int T, int S, int heads, bool cov_on, bool rec) {
    size_t R = (size_t)G * B;
    memset(s, 0, sizeof *s);
    s->prev = nmt_malloc(R * 4), s->ids = nmt_malloc(R * G * 4), s->rows = nmt_malloc(R * 4);
    s->keep = nmt_malloc((size_t)B * 4), s->sent = nmt_malloc((size_t)B * 4), s->parent = nmt_malloc(R * 4);
    s->next_tok = nmt_malloc(R * 4), s->hist = nmt_malloc(R * T * 4), s->new_hist = nmt_malloc(R * T * 4);
    s->vals = nmt_malloc(R * G * sizeof(float));
    s->logp = nmt_malloc(R * sizeof(double)), s->next_logp = nmt_malloc(R * sizeof(double));
    s->cands = nmt_malloc((size_t)G * G * sizeof(BeamCand));
    bool ok = s->prev && s->ids && s->rows && s->keep && s->sent && s->parent && s->next_tok && s->hist &&
              s->new_hist && s->vals && s->logp && s->next_logp && s->cands;
    if (cov_on) {
        s->cov = nmt_calloc(R * S, sizeof(float)), s->new_cov = nmt_calloc(R * S, sizeof(float));
        ok = ok && s->cov && s->new_cov;
    }
    if (rec) {
        s->hattn = nmt_calloc(R * T * S, sizeof(float)), s->new_hattn = nmt_calloc(R * T * S, sizeof(float));
        ok = ok && s->hattn && s->new_hattn;
    }
    if (cov_on || rec) {
        s->attn = nmt_malloc((size_t)heads * R * S * sizeof(float));
        ok = ok && s->attn;
    }
    if (ok) return NMT_OK;
    search_free(s);
    return nmt_fail_nomem("beam search");
}

/* Rows g0..G-1 of sentence column j (of cols) next step: empty, they
 * continue anything (row j) and are never chosen. */
static void empty_rows(Search *s, int cols, int j, int g0, int G) {
    for (int g = g0; g < G; g++) {
        s->parent[g * cols + j] = j;
        s->next_logp[g * cols + j] = -INFINITY;
        s->next_tok[g * cols + j] = NMT_EOS_ID;
    }
}

#define SWAP(type, x, y) do { type swap_ = x; x = y; y = swap_; } while (0)

NmtStatus seq2seq_beam_search(Seq2Seq *m, const Batch *batch, const BeamSpec *spec, int32_t *out, int stride,
                              int *out_len, double *out_score, int *out_count, float *out_attn) {
    return seq2seq_ensemble_search(&m, 1, batch, spec, out, stride, out_len, out_score, out_count, out_attn);
}

NmtStatus seq2seq_ensemble_search(Seq2Seq *const *models, int n_models, const Batch *batch, const BeamSpec *spec,
                                  int32_t *out, int stride, int *out_len, double *out_score, int *out_count,
                                  float *out_attn) {
    Seq2Seq *m = models[0]; /* attention (coverage, recording) comes from the first model */
    Backend *be = seq2seq_backend(m);
    const ModelDims *d = seq2seq_dims(m);
    int B = batch->B, G = spec->beam, S = batch->S, heads = d->heads;
    NMT_ASSERT(n_models >= 1 && spec->nbest >= 1 && spec->nbest <= G);
    for (int k = 0; k < n_models; k++) {
        const ModelLimits *lim = seq2seq_limits(models[k]);
        NMT_ASSERT(seq2seq_backend(models[k]) == be && seq2seq_dims(models[k])->V_t == d->V_t &&
                   seq2seq_decode_vocab(models[k]) == seq2seq_decode_vocab(m) &&
                   G <= (lim->max_beam > 1 ? lim->max_beam : 1));
    }
    int T = decode_limit(models, n_models, batch, spec->max_len_a, spec->max_len_b, stride);
    bool cov_on = spec->coverage_penalty > 0 && d->style != ATTN_STYLE_NONE;
    bool rec = out_attn && d->style != ATTN_STYLE_NONE; /* attention rows of every hypothesis */
    Search s;
    NmtStatus st = search_alloc(&s, B, G, T, S, heads, cov_on, rec);
    if (st) return st;
    BeamOut bo = {spec->nbest, stride, S, out, out_len, out_score, out_count, rec ? out_attn : NULL};
    if (out_attn) memset(out_attn, 0, (size_t)B * spec->nbest * stride * S * sizeof(float));
    for (int k = 0; k < n_models; k++) seq2seq_decode_setup(models[k], batch, G, T);
    for (int r = 0; r < G * B; r++) {
        s.prev[r] = NMT_BOS_ID;
        s.logp[r] = r < B ? 0.0 : -INFINITY; /* all rows start alike: keep one per sentence */
    }
    for (int b = 0; b < B; b++) {
        out_count[b] = 0;
        s.sent[b] = b;
    }
    int cols = B; /* sentences still searching */
    for (int t = 0; t < T && cols > 0; t++) {
        int R = G * cols;
        for (int k = 0; k < n_models; k++) seq2seq_decode_step(models[k], t, s.prev, true);
        if (n_models > 1) { /* the ensemble: log-probabilities averaged */
            int V = seq2seq_decode_vocab(m);
            float *sum = seq2seq_decode_scores(m);
            for (int k = 1; k < n_models; k++) be->add_cols(be, sum, V, seq2seq_decode_scores(models[k]), V, R, V);
            be->scale(be, sum, (size_t)R * V, 1.0f / n_models);
        }
        seq2seq_decode_topk(m, G, s.vals, s.ids);
        if (cov_on || rec) {
            seq2seq_decode_attention(m, t, s.attn);
            for (int r = 0; r < R; r++)
                for (int x = 0; x < S; x++) {
                    float sum = 0;
                    for (int j = 0; j < heads; j++) sum += s.attn[((size_t)j * R + r) * S + x];
                    if (cov_on) s.cov[(size_t)r * S + x] += sum / heads;
                    if (rec) s.hattn[((size_t)r * T + t) * S + x] = sum / heads;
                }
        }
        int live = 0;
        for (int j = 0; j < cols; j++) {
            int b = s.sent[j];
            if (b < 0) { /* a dead column */
                empty_rows(&s, cols, j, 0, G);
                continue;
            }
            int limit = (int)(spec->max_len_a * batch->src_len[b]) + spec->max_len_b;
            if (limit > T) limit = T;
            int n = 0;
            for (int g = 0; g < G; g++) {
                int r = g * cols + j;
                if (s.logp[r] == -INFINITY) continue;
                for (int i = 0; i < G; i++) {
                    float v = s.vals[(size_t)r * G + i];
                    if (!(v > -INFINITY) || s.ids[(size_t)r * G + i] < 0) continue;
                    s.cands[n++] = (BeamCand){r, s.ids[(size_t)r * G + i], s.logp[r] + v};
                }
            }
            qsort(s.cands, (size_t)n, sizeof *s.cands, cand_cmp);
            int alive = 0;
            for (int i = 0; i < n && alive < G; i++) {
                BeamCand *c = &s.cands[i];
                bool eos = c->token == NMT_EOS_ID;
                if (eos || t + 1 >= limit) {
                    /* finished: by EOS, or cut at the length limit */
                    int len = eos ? t : t + 1;
                    int32_t *toks = s.hist + (size_t)c->row * T;
                    toks[t] = c->token; /* scratch slot: the history is rebuilt below */
                    double score = c->logp / length_penalty(spec->length_penalty, t + 1) +
                                   (cov_on ? coverage_penalty(spec->coverage_penalty, s.cov + (size_t)c->row * S,
                                                              batch->src_len[b]) : 0);
                    add_finished(&bo, b, toks, len, score, rec ? s.hattn + (size_t)c->row * T * S : NULL);
                    continue;
                }
                int r = alive * cols + j;
                s.parent[r] = c->row;
                s.next_logp[r] = c->logp;
                s.next_tok[r] = c->token;
                alive++;
            }
            empty_rows(&s, cols, j, alive, G);
            /* stop when no alive hypothesis can still beat the nbest-th finished one:
             * log p only falls and the length penalty is largest at the limit */
            double bound = -INFINITY;
            for (int g = 0; g < alive; g++) {
                double lp_best = s.next_logp[g * cols + j] / length_penalty(spec->length_penalty, limit);
                if (lp_best > bound) bound = lp_best;
            }
            bool done = alive == 0 ||
                        (out_count[b] >= spec->nbest && out_score[b * spec->nbest + spec->nbest - 1] >= bound);
            if (done) s.sent[j] = -1;
            else live++;
        }
        if (live == 0) {
            cols = 0;
            break;
        }
        int n_keep = seq2seq_decode_kept_columns(be, cols, live);
        if (n_keep < cols) choose_columns(s.sent, cols, live, n_keep, s.keep);
        else
            for (int j = 0; j < cols; j++) s.keep[j] = j;
        /* next step's row g*n_keep + i continues row parent[g*cols + keep[i]]: host
         * histories, coverage and attention follow; the models move their states */
        for (int g = 0; g < G; g++)
            for (int i = 0; i < n_keep; i++) {
                int rc = g * cols + s.keep[i], rn = g * n_keep + i, from = s.parent[rc];
                s.rows[rn] = from;
                memcpy(s.new_hist + (size_t)rn * T, s.hist + (size_t)from * T, (size_t)t * 4);
                s.new_hist[(size_t)rn * T + t] = s.next_tok[rc];
                s.logp[rn] = s.next_logp[rc];
                s.prev[rn] = s.next_tok[rc];
                if (cov_on) memcpy(s.new_cov + (size_t)rn * S, s.cov + (size_t)from * S, (size_t)S * sizeof(float));
                if (rec)
                    memcpy(s.new_hattn + (size_t)rn * T * S, s.hattn + (size_t)from * T * S,
                           (size_t)(t + 1) * S * sizeof(float));
            }
        SWAP(int32_t *, s.hist, s.new_hist);
        if (cov_on) SWAP(float *, s.cov, s.new_cov);
        if (rec) SWAP(float *, s.hattn, s.new_hattn);
        for (int i = 0; i < n_keep; i++) s.sent[i] = s.sent[s.keep[i]];
        for (int k = 0; k < n_models; k++) seq2seq_decode_reorder(models[k], t, s.rows, s.keep, n_keep);
        cols = n_keep;
    }
    /* sentences cut by max_decode_T: their alive hypotheses count as finished */
    for (int j = 0; j < cols; j++) {
        int b = s.sent[j];
        if (b < 0) continue; /* dead */
        for (int g = 0; g < G; g++) {
            int r = g * cols + j;
            if (s.logp[r] == -INFINITY) continue;
            double score = s.logp[r] / length_penalty(spec->length_penalty, T) +
                           (cov_on ? coverage_penalty(spec->coverage_penalty, s.cov + (size_t)r * S, batch->src_len[b]) : 0);
            add_finished(&bo, b, s.hist + (size_t)r * T, T, score, rec ? s.hattn + (size_t)r * T * S : NULL);
        }
    }
    search_free(&s);
    for (int k = 0; k < n_models; k++) seq2seq_decode_end(models[k]);
    return NMT_OK;
}
