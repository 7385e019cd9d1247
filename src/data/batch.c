/* batch.c: the Batcher (batch.h): epoch plans built from (seed, epoch),
 * length-sorted pools cut greedily by the budgets, time-major padded batches,
 * and seeking to a saved (epoch, batch index). All memory is taken in
 * batcher_create. */
#include "data/batch.h"

#include <stdbool.h>
#include <string.h>

#include "data/rng.h"

/* Pools hold about this many batches' worth of pairs before sorting. */
#define BATCH_POOL_BATCHES 100

struct Batcher {
    const Dataset *d; /* borrowed */
    BatchSpec spec;
    int64_t n;          /* pairs of the dataset now */
    int64_t cap_n;      /* most pairs of any dataset (the arrays' size) */
    double pool;        /* pairs per sorting pool before the cap by n (the first dataset's) */
    int64_t pool_pairs; /* pairs per sorting pool (shuffle mode) */
    BatchLimits lim;
    int min_src, min_tgt_cells; /* shortest source and target (cells) of any dataset */

    /* plan of epoch plan_epoch */
    int64_t plan_epoch;  /* -1: none built */
    int64_t *order;      /* (cap_n) pair indices, each batch a contiguous range */
    int64_t *scratch;    /* (cap_n) merge sort scratch */
    int64_t *batch_start; /* (cap_n + 1) range of batch k: [start[k], start[k+1]) */
    int64_t *batch_order; /* (cap_n) batch k of the epoch is batch_order[k] */
    int64_t n_batches;

    BatchPosition pos;

    /* the batch handed out (sized to lim) */
    Batch batch;
    int64_t *members; /* (max_B) pairs of the current batch */
    const GuidedAlignments *align; /* borrowed; NULL: batches carry no alignment rows */
};

/* A pair's target cells: its target tokens and the BOS/EOS position (the
 * T of a batch, Batch.tgt_len, the tokens of n_tgt_tokens). */
static int pair_tgt_cells(const Dataset *d, int64_t p) { return dataset_tgt_len(d, p) + 1; }

/* ---- stable merge sort of pair indices ------------------------------- */

typedef int (*PairBefore)(const Dataset *d, int64_t x, int64_t y);

/* strictly shorter by (source length, target length) */
static int before_shorter(const Dataset *d, int64_t x, int64_t y) {
    int sx = dataset_src_len(d, x), sy = dataset_src_len(d, y);
    if (sx != sy) return sx < sy;
    return dataset_tgt_len(d, x) < dataset_tgt_len(d, y);
}

/* strictly longer source */
static int before_longer_src(const Dataset *d, int64_t x, int64_t y) {
    return dataset_src_len(d, x) > dataset_src_len(d, y);
}

/* Sorts a (n) stably with `before`; tmp is (n) scratch. Bottom-up. */
static void merge_sort(int64_t *a, int64_t n, int64_t *tmp, const Dataset *d, PairBefore before) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = before(d, a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* ---- plans ------------------------------------------------------------ */

/* Cuts order[from, to) greedily into batches by the budgets, appending their
 * starts to batch_start. The first pair of a batch is always taken. */
static void plan_cut(Batcher *b, int64_t from, int64_t to) {
    const Dataset *d = b->d;
    int64_t sent = b->spec.batch_sentences, tok = b->spec.batch_tokens;
    int64_t count = 0, max_s = 0, max_t = 0;
    for (int64_t i = from; i < to; i++) {
        int64_t p = b->order[i];
        int64_t s = dataset_src_len(d, p), t = pair_tgt_cells(d, p);
        int64_t nb = count + 1;
        int64_t ns = s > max_s ? s : max_s, nt = t > max_t ? t : max_t;
        int fits = count == 0 || ((sent <= 0 || nb <= sent) &&
                                  (tok <= 0 || (ns * nb <= tok && nt * nb <= tok)));
        if (!fits) {
            count = 0;
            ns = s;
            nt = t;
            nb = 1;
        }
        if (count == 0) b->batch_start[b->n_batches++] = i;
        count = nb;
        max_s = ns;
        max_t = nt;
    }
}

static void plan_build(Batcher *b, int64_t epoch) {
    if (b->plan_epoch == epoch) return;
    int64_t n = b->n;
    for (int64_t i = 0; i < n; i++) b->order[i] = i;
    b->n_batches = 0;
    if (b->spec.shuffle) {
        Rng rng;
        rng_seed(&rng, b->spec.seed, (uint64_t)epoch);
        rng_shuffle_i64(&rng, b->order, n);
        for (int64_t from = 0; from < n; from += b->pool_pairs) {
            int64_t to = from + b->pool_pairs < n ? from + b->pool_pairs : n;
            merge_sort(b->order + from, to - from, b->scratch, b->d, before_shorter);
            plan_cut(b, from, to);
        }
        b->batch_start[b->n_batches] = n;
        for (int64_t k = 0; k < b->n_batches; k++) b->batch_order[k] = k;
        rng_shuffle_i64(&rng, b->batch_order, b->n_batches);
    } else {
        plan_cut(b, 0, n);
        b->batch_start[b->n_batches] = n;
        for (int64_t k = 0; k < b->n_batches; k++) b->batch_order[k] = k;
    }
    b->plan_epoch = epoch;
}

/* ---- create / free ---------------------------------------------------- */

void batcher_free(Batcher *b) {
    if (!b) return;
    nmt_free(b->order);
    nmt_free(b->scratch);
    nmt_free(b->batch_start);
    nmt_free(b->batch_order);
    nmt_free(b->members);
    nmt_free(b->batch.src);
    nmt_free(b->batch.src_len);
    nmt_free(b->batch.tgt_in);
    nmt_free(b->batch.tgt_out);
    nmt_free(b->batch.tgt_len);
    nmt_free(b->batch.pair_index);
    nmt_free(b->batch.align);
    nmt_free(b);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void batch_range_add(BatchRange *r, const Dataset *d) {
    for (int64_t i = 0; i < d->n_pairs; i++) {
        int s = dataset_src_len(d, i), t = dataset_tgt_len(d, i);
        if (r->max_src == 0 || s < r->min_src) r->min_src = s; /* max_src 0: nothing added yet */
        if (r->max_src == 0 || t < r->min_tgt) r->min_tgt = t;
        if (s > r->max_src) r->max_src = s;
        if (t > r->max_tgt) r->max_tgt = t;
    }
}

/* pool_pairs of a dataset of n pairs */
static int64_t pool_pairs_for(double pool, int64_t n) {
    return pool >= (double)n ? n : (pool < 1 ? 1 : (int64_t)pool);
}

NmtStatus batcher_create(const Dataset *d, const BatchSpec *spec, Batcher **out) {
    return batcher_create_ranged(d, spec, NULL, out);
}

NmtStatus batcher_create_ranged(const Dataset *d, const BatchSpec *spec, const BatchRange *range, Batcher **out) {
    *out = NULL;
    if (spec->batch_sentences < 0)
        return nmt_fail(NMT_ERR_CONFIG, "batch_sentences: must be >= 0 (got %d)", spec->batch_sentences);
    if (spec->batch_tokens < 0)
        return nmt_fail(NMT_ERR_CONFIG, "batch_tokens: must be >= 0 (got %d)", spec->batch_tokens);
    if (spec->batch_sentences == 0 && spec->batch_tokens == 0)
        return nmt_fail(NMT_ERR_CONFIG, "batch_sentences, batch_tokens: at least one must be > 0");
    if (d->n_pairs <= 0) return nmt_fail(NMT_ERR_FORMAT, "batcher: the dataset has no pairs");

    int64_t n = d->n_pairs;
    int64_t max_s = 0, max_t = 0, min_s = INT64_MAX, min_t = INT64_MAX;
    double cost_sum = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = dataset_src_len(d, i), t = pair_tgt_cells(d, i);
        if (s <= 0)
            return nmt_fail(NMT_ERR_FORMAT, "batcher: pair %lld (line %lld) has an empty source",
                            (long long)i, (long long)(d->line_no ? d->line_no[i] : i + 1));
        max_s = max64(max_s, s);
        max_t = max64(max_t, t);
        min_s = min64(min_s, s);
        min_t = min64(min_t, t);
        cost_sum += (double)max64(s, t);
    }

    int64_t cap_n = n;
    if (range) { /* every later dataset's lengths too */
        NMT_ASSERT(range->max_pairs >= n && range->min_src >= 1 && range->min_src <= min_s &&
                   range->max_src >= max_s && range->min_tgt + 1 <= min_t && range->max_tgt + 1 >= max_t);
        cap_n = range->max_pairs;
        min_s = range->min_src, max_s = range->max_src;
        min_t = range->min_tgt + 1, max_t = range->max_tgt + 1;
    }

    Batcher *b = nmt_calloc(1, sizeof *b);
    if (!b) return nmt_fail_nomem("creating a batcher");
    b->d = d;
    b->spec = *spec;
    b->n = n;
    b->cap_n = cap_n;
    b->plan_epoch = -1;

    /* limits: B*S <= tok and S >= min_s, so B <= tok / min_s (same for T) */
    int64_t tok = spec->batch_tokens, sent = spec->batch_sentences;
    int64_t max_b = sent > 0 ? min64(sent, cap_n) : cap_n;
    if (tok > 0) max_b = min64(max_b, max64(1, tok / max64(min_s, min_t)));
    b->min_src = (int)min_s;
    b->min_tgt_cells = (int)min_t;
    b->lim.max_B = (int)max_b;
    b->lim.max_S = (int)max_s;
    b->lim.max_T = (int)max_t;
    b->lim.max_src_cells = max_b * max_s;
    b->lim.max_tgt_cells = max_b * max_t;
    if (tok > 0) { /* B >= 2 stays within tok; B = 1 is at most max_s / max_t */
        b->lim.max_src_cells = min64(b->lim.max_src_cells, max64(tok, max_s));
        b->lim.max_tgt_cells = min64(b->lim.max_tgt_cells, max64(tok, max_t));
    }

    /* pools of about BATCH_POOL_BATCHES batches */
    double per_batch = sent > 0 ? (double)sent : (double)n;
    if (tok > 0) {
        double by_tokens = (double)tok / (cost_sum / (double)n);
        if (by_tokens < per_batch) per_batch = by_tokens;
    }
    if (per_batch < 1) per_batch = 1;
    b->pool = per_batch * BATCH_POOL_BATCHES;
    b->pool_pairs = pool_pairs_for(b->pool, n);

    b->order = nmt_malloc((size_t)cap_n * sizeof *b->order);
    b->scratch = nmt_malloc((size_t)cap_n * sizeof *b->scratch);
    b->batch_start = nmt_malloc((size_t)(cap_n + 1) * sizeof *b->batch_start);
    b->batch_order = nmt_malloc((size_t)cap_n * sizeof *b->batch_order);
    b->members = nmt_malloc((size_t)max_b * sizeof *b->members);
    b->batch.src = nmt_malloc((size_t)b->lim.max_src_cells * sizeof *b->batch.src);
    b->batch.src_len = nmt_malloc((size_t)max_b * sizeof *b->batch.src_len);
    b->batch.tgt_in = nmt_malloc((size_t)b->lim.max_tgt_cells * sizeof *b->batch.tgt_in);
    b->batch.tgt_out = nmt_malloc((size_t)b->lim.max_tgt_cells * sizeof *b->batch.tgt_out);
    b->batch.tgt_len = nmt_malloc((size_t)max_b * sizeof *b->batch.tgt_len);
    b->batch.pair_index = nmt_malloc((size_t)max_b * sizeof *b->batch.pair_index);
    if (!b->order || !b->scratch || !b->batch_start || !b->batch_order || !b->members ||
        !b->batch.src || !b->batch.src_len || !b->batch.tgt_in || !b->batch.tgt_out ||
        !b->batch.tgt_len || !b->batch.pair_index) {
        batcher_free(b);
        return nmt_fail_nomem("creating a batcher");
    }
    plan_build(b, 0);
    *out = b;
    return NMT_OK;
}

NmtStatus batcher_set_alignments(Batcher *b, const GuidedAlignments *g) {
    if (g->n_pairs != b->n)
        return nmt_fail(NMT_ERR_RUNTIME, "batcher: alignments of %lld pairs for a dataset of %lld",
                        (long long)g->n_pairs, (long long)b->n);
    size_t floats = (size_t)b->lim.max_tgt_cells * (size_t)b->lim.max_S;
    float *rows = nmt_realloc(b->batch.align, (floats ? floats : 1) * sizeof(float));
    if (!rows) return nmt_fail_nomem("the alignment rows of a batch");
    b->batch.align = rows;
    b->align = g;
    return NMT_OK;
}

NmtStatus batcher_set_dataset(Batcher *b, const Dataset *d, const GuidedAlignments *g) {
    if (!b->align != !g)
        return nmt_fail(NMT_ERR_RUNTIME, "batcher: a new dataset %s alignments for one %s", g ? "with" : "without",
                        b->align ? "with" : "without");
    if (d->n_pairs < 1 || d->n_pairs > b->cap_n)
        return nmt_fail(NMT_ERR_RUNTIME, "batcher: a new dataset of %lld pairs for a batcher of 1 to %lld",
                        (long long)d->n_pairs, (long long)b->cap_n);
    for (int64_t i = 0; i < d->n_pairs; i++) {
        int s = dataset_src_len(d, i), t = pair_tgt_cells(d, i);
        if (s < b->min_src || s > b->lim.max_S || t < b->min_tgt_cells || t > b->lim.max_T)
            return nmt_fail(NMT_ERR_RUNTIME,
                            "batcher: pair %lld of the new dataset has lengths %d and %d, outside the "
                            "batcher's [%d, %d] and [%d, %d]",
                            (long long)i, s, t - 1, b->min_src, b->lim.max_S, b->min_tgt_cells - 1,
                            b->lim.max_T - 1);
    }
    if (g) {
        NmtStatus st = guided_alignments_check(g, d, "batcher: the new dataset's alignments");
        if (st) return st == NMT_ERR_FORMAT ? NMT_ERR_RUNTIME : st;
        b->align = g;
    }
    b->d = d;
    b->n = d->n_pairs;
    b->pool_pairs = pool_pairs_for(b->pool, b->n);
    b->plan_epoch = -1;
    plan_build(b, b->pos.epoch);
    return NMT_OK;
}

/* ---- batches ---------------------------------------------------------- */

/* Fills b->batch with plan batch k (an index into batch_start). */
static void batch_fill(Batcher *b, int64_t k) {
    const Dataset *d = b->d;
    Batch *o = &b->batch;
    int64_t from = b->batch_start[k], count = b->batch_start[k + 1] - from;
    NMT_ASSERT(count >= 1 && count <= b->lim.max_B);
    memcpy(b->members, b->order + from, (size_t)count * sizeof *b->members);
    merge_sort(b->members, count, b->scratch, d, before_longer_src);

    int B = (int)count, S = 0, T = 0;
    o->n_src_tokens = 0;
    o->n_tgt_tokens = 0;
    for (int i = 0; i < B; i++) {
        int64_t p = b->members[i];
        int s = dataset_src_len(d, p), t = pair_tgt_cells(d, p);
        o->pair_index[i] = p;
        o->src_len[i] = s;
        o->tgt_len[i] = t;
        if (s > S) S = s;
        if (t > T) T = t;
        o->n_src_tokens += s;
        o->n_tgt_tokens += t;
    }
    NMT_ASSERT((int64_t)S * B <= b->lim.max_src_cells && (int64_t)T * B <= b->lim.max_tgt_cells);
    o->B = B;
    o->S = S;
    o->T = T;
    for (int i = 0; i < B; i++) {
        int64_t p = b->members[i];
        const int32_t *src = dataset_src(d, p), *tgt = dataset_tgt(d, p);
        int s = o->src_len[i], t = o->tgt_len[i] - 1; /* t: target ids */
        for (int j = 0; j < S; j++) o->src[(size_t)j * B + i] = j < s ? src[j] : NMT_PAD_ID;
        /* target position j holds token j, or token t - 1 - j right to left */
        bool rev = b->spec.reverse_tgt;
        o->tgt_in[i] = NMT_BOS_ID;
        for (int j = 1; j < T; j++) o->tgt_in[(size_t)j * B + i] = j <= t ? tgt[rev ? t - j : j - 1] : NMT_PAD_ID;
        for (int j = 0; j < T; j++)
            o->tgt_out[(size_t)j * B + i] = j < t ? tgt[rev ? t - 1 - j : j] : j == t ? NMT_EOS_ID : NMT_PAD_ID;
    }
    if (b->align) {
        memset(o->align, 0, (size_t)T * B * S * sizeof(float));
        for (int i = 0; i < B; i++)
            guided_align_fill_column(b->align, b->members[i], i, B, S, o->tgt_len[i] - 1, b->spec.reverse_tgt,
                                     o->align);
    }
}

void batch_reverse_ids(int32_t *ids, int n) {
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        int32_t x = ids[i];
        ids[i] = ids[j];
        ids[j] = x;
    }
}

void batcher_next(Batcher *b, Batch *out, int *got) {
    plan_build(b, b->pos.epoch);
    if (b->pos.batch_index >= b->n_batches) {
        *got = 0;
        b->pos.epoch++;
        b->pos.batch_index = 0;
        plan_build(b, b->pos.epoch);
        return;
    }
    batch_fill(b, b->batch_order[b->pos.batch_index]);
    b->pos.batch_index++;
    *out = b->batch;
    *got = 1;
}

BatchPosition batcher_position(const Batcher *b) { return b->pos; }

NmtStatus batcher_seek(Batcher *b, BatchPosition pos) {
    if (pos.epoch < 0 || pos.batch_index < 0)
        return nmt_fail(NMT_ERR_FORMAT, "batcher: position (epoch %lld, batch %lld) is negative",
                        (long long)pos.epoch, (long long)pos.batch_index);
    plan_build(b, pos.epoch);
    if (pos.batch_index > b->n_batches) {
        int64_t n_batches = b->n_batches;
        plan_build(b, b->pos.epoch); /* keep the old position usable */
        return nmt_fail(NMT_ERR_FORMAT,
                        "batcher: position (epoch %lld, batch %lld) is past the end of the "
                        "epoch (%lld batches); was the dataset or batch spec changed?",
                        (long long)pos.epoch, (long long)pos.batch_index, (long long)n_batches);
    }
    b->pos = pos;
    return NMT_OK;
}

int batcher_peek_tgt_tokens(Batcher *b, int n, int64_t *tgt_tokens) {
    plan_build(b, b->pos.epoch);
    int count = 0;
    *tgt_tokens = 0;
    for (int64_t k = b->pos.batch_index; k < b->n_batches && count < n; k++, count++) {
        int64_t plan_batch = b->batch_order[k];
        for (int64_t i = b->batch_start[plan_batch]; i < b->batch_start[plan_batch + 1]; i++)
            *tgt_tokens += pair_tgt_cells(b->d, b->order[i]);
    }
    return count;
}

int64_t batcher_batches_in_epoch(const Batcher *b) {
    NMT_ASSERT(b->plan_epoch == b->pos.epoch);
    return b->n_batches;
}

BatchLimits batcher_limits(const Batcher *b) { return b->lim; }
