/* test_batch.c: the seeded Rng (rng.h) and the Batcher (batch.h): coverage
 * per epoch, budgets, determinism, length homogeneity, exact seeking,
 * layout, over-budget pairs, no allocation per batch. */
#include <stdint.h>

#include "common.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/rng.h"
#include "test_util.h"

/* ---- Rng -------------------------------------------------------------- */

static void test_rng(void) {
    /* PCG32 reference: pcg32_srandom_r(&rng, 42, 54) in pcg-c-basic prints
     * 0xa15c02b7 0x7b47f409 0xba1d3330 0x83d2f293 0xbfa4784b 0xcbed606e */
    Rng r = {0, (54u << 1) | 1u};
    (void)rng_u32(&r);
    r.state += 42;
    (void)rng_u32(&r);
    const uint32_t want[] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u, 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    for (size_t i = 0; i < NMT_ARRAY_LEN(want); i++) CHECK_EQ_INT(rng_u32(&r), want[i]);

    /* same (seed, stream) same sequence; a saved state continues exactly */
    Rng a, b;
    rng_seed(&a, 7, 3);
    rng_seed(&b, 7, 3);
    int same = 1;
    for (int i = 0; i < 100; i++) same &= rng_u32(&a) == rng_u32(&b);
    CHECK(same, "same seed and stream must give the same sequence");
    Rng saved = {a.state, a.inc}; /* plain integers */
    uint32_t x1 = rng_u32(&a), x2 = rng_u32(&a);
    CHECK(rng_u32(&saved) == x1 && rng_u32(&saved) == x2, "restored state continues the sequence");
    Rng c, e;
    rng_seed(&c, 7, 4);
    rng_seed(&e, 8, 3);
    rng_seed(&a, 7, 3);
    int diff_stream = 0, diff_seed = 0;
    for (int i = 0; i < 20; i++) {
        uint32_t va = rng_u32(&a);
        diff_stream += va != rng_u32(&c);
        diff_seed += va != rng_u32(&e);
    }
    CHECK(diff_stream >= 18 && diff_seed >= 18, "streams/seeds differ (%d, %d of 20)", diff_stream, diff_seed);

    /* rng_below: range and uniformity (chi-square, 6 dof, 70000 draws) */
    int counts[7] = {0};
    int in_range = 1;
    for (int i = 0; i < 70000; i++) {
        uint32_t v = rng_below(&a, 7);
        if (v >= 7) in_range = 0; else counts[v]++;
    }
    CHECK(in_range, "rng_below(7) out of range");
    double chi = 0;
    for (int i = 0; i < 7; i++) chi += (counts[i] - 10000.0) * (counts[i] - 10000.0) / 10000.0;
    CHECK(chi < 22.5, "rng_below chi-square %.2f (p < 0.001 at 22.46)", chi);
    /* a bound that is not a power of two and near 2^32: values stay below it */
    uint32_t big = 3000000019u;
    int ok = 1;
    for (int i = 0; i < 1000; i++) ok &= rng_below(&a, big) < big;
    CHECK(ok, "rng_below(3e9) out of range");
    ok = 1;
    for (int i = 0; i < 1000; i++) ok &= rng_below64(&a, 10000000000ULL) < 10000000000ULL;
    CHECK(ok, "rng_below64(1e10) out of range");
    CHECK_EQ_INT(rng_below(&a, 1), 0);

    /* uniform floats: [0, 1), mean 1/2; normals: mean 0, variance 1 */
    double sum = 0, sum_n = 0, sum_n2 = 0;
    int unit = 1;
    for (int i = 0; i < 100000; i++) {
        float u = rng_uniform(&a);
        double ud = rng_uniform_double(&a);
        unit &= u >= 0.0f && u < 1.0f && ud >= 0.0 && ud < 1.0;
        sum += u;
        double z = rng_normal(&a);
        sum_n += z;
        sum_n2 += z * z;
    }
    CHECK(unit, "uniform values must lie in [0, 1)");
    CHECK_NEAR(sum / 100000, 0.5, 0.005);
    CHECK_NEAR(sum_n / 100000, 0.0, 0.02);
    CHECK_NEAR(sum_n2 / 100000, 1.0, 0.03);

    /* Fisher-Yates: a permutation; each value reaches each slot evenly */
    int64_t perm[10];
    int slot0[10] = {0};
    int is_perm = 1;
    for (int rep = 0; rep < 20000; rep++) {
        for (int i = 0; i < 10; i++) perm[i] = i;
        rng_shuffle_i64(&a, perm, 10);
        int seen[10] = {0};
        for (int i = 0; i < 10; i++) seen[perm[i]]++;
        for (int i = 0; i < 10; i++) is_perm &= seen[i] == 1;
        slot0[perm[0]]++;
    }
    CHECK(is_perm, "shuffle must permute");
    int even = 1;
    for (int i = 0; i < 10; i++) even &= slot0[i] > 1750 && slot0[i] < 2250;
    CHECK(even, "shuffle: first slot counts not even");
    int32_t p32[5] = {0, 1, 2, 3, 4};
    rng_shuffle_i32(&a, p32, 5);
    CHECK_EQ_INT(p32[0] + p32[1] + p32[2] + p32[3] + p32[4], 10);
}

/* ---- helpers ---------------------------------------------------------- */

/* n pairs with source lengths 1..80 and target lengths 1..80; token ids
 * encode (pair, position) so the layout check can recompute them. */
static Dataset *make_dataset(int64_t n, uint64_t seed, int correlated) {
    Dataset *d;
    NMT_ASSERT(dataset_create(&d) == NMT_OK);
    Rng r;
    rng_seed(&r, seed, 99);
    int32_t src[200], tgt[200];
    for (int64_t i = 0; i < n; i++) {
        int s = 1 + (int)rng_below(&r, 80);
        int t = correlated ? s - 8 + (int)rng_below(&r, 17) : 1 + (int)rng_below(&r, 80);
        if (t < 1) t = 1;
        if (t > 80) t = 80;
        for (int j = 0; j < s; j++) src[j] = NMT_N_SPECIAL + (int32_t)((i * 31 + j) % 5000);
        for (int j = 0; j < t; j++) tgt[j] = NMT_N_SPECIAL + (int32_t)((i * 17 + j * 3) % 7000);
        NMT_ASSERT(dataset_add(d, src, s, tgt, t, i + 1) == NMT_OK);
    }
    return d;
}

/* Checks one batch against the dataset and the spec; returns 1 if fine. */
static int batch_ok(const Dataset *d, const Batch *bt, const BatchSpec *sp, const BatchLimits *lim) {
    int ok = 1, B = bt->B, S = bt->S, T = bt->T;
    if (B < 1 || B > lim->max_B) return 0;
    if ((int64_t)S * B > lim->max_src_cells || (int64_t)T * B > lim->max_tgt_cells) return 0;
    if (sp->batch_sentences > 0 && B > sp->batch_sentences) return 0;
    if (sp->batch_tokens > 0 && B > 1 &&
        ((int64_t)S * B > sp->batch_tokens || (int64_t)T * B > sp->batch_tokens))
        return 0;
    int max_s = 0, max_t = 0;
    int64_t ns = 0, nt = 0;
    for (int b = 0; b < B; b++) {
        int64_t p = bt->pair_index[b];
        if (p < 0 || p >= d->n_pairs) return 0;
        int s = dataset_src_len(d, p), t = dataset_tgt_len(d, p);
        ok &= bt->src_len[b] == s && bt->tgt_len[b] == t + 1;
        if (b > 0) ok &= bt->src_len[b] <= bt->src_len[b - 1];
        if (s > max_s) max_s = s;
        if (t + 1 > max_t) max_t = t + 1;
        ns += s;
        nt += t + 1;
        const int32_t *si = dataset_src(d, p), *ti = dataset_tgt(d, p);
        for (int j = 0; j < S; j++) ok &= bt->src[j * B + b] == (j < s ? si[j] : NMT_PAD_ID);
        for (int j = 0; j < T; j++) {
            int32_t in = j == 0 ? NMT_BOS_ID : j <= t ? ti[j - 1] : NMT_PAD_ID;
            int32_t outv = j < t ? ti[j] : j == t ? NMT_EOS_ID : NMT_PAD_ID;
            ok &= bt->tgt_in[j * B + b] == in && bt->tgt_out[j * B + b] == outv;
        }
    }
    ok &= S == max_s && T == max_t && ns == bt->n_src_tokens && nt == bt->n_tgt_tokens;
    return ok;
}

static uint64_t batch_hash(const Batch *bt) {
    uint64_t h = 1469598103934665603ULL;
    for (int b = 0; b < bt->B; b++) h = (h ^ (uint64_t)bt->pair_index[b]) * 1099511628211ULL;
    return h ^ (uint64_t)bt->B << 40;
}

/* ---- tests ------------------------------------------------------------ */

/* check_tgt: also require homogeneous target lengths (only meaningful when
 * target lengths follow source lengths, as in real corpora; with independent
 * lengths a sort by source cannot group targets). */
static void test_epochs_budgets(const Dataset *d, BatchSpec sp, const char *what, int check_tgt) {
    Batcher *b;
    CHECK(batcher_create(d, &sp, &b) == NMT_OK, "%s: create: %s", what, nmt_error_message());
    BatchLimits lim = batcher_limits(b);
    int64_t n = d->n_pairs;
    int *seen = calloc((size_t)n, sizeof *seen);
    int all_ok = 1, coverage = 1, counts_ok = 1;
    double pad_src = 0, cells_src = 0, pad_tgt = 0, cells_tgt = 0;
    for (int epoch = 0; epoch < 3; epoch++) {
        memset(seen, 0, (size_t)n * sizeof *seen);
        BatchPosition start = batcher_position(b);
        CHECK(start.epoch == epoch && start.batch_index == 0, "%s: epoch %d starts at (%lld, %lld)",
              what, epoch, (long long)start.epoch, (long long)start.batch_index);
        int64_t nb = batcher_batches_in_epoch(b), count = 0;
        Batch bt;
        int got;
        for (;;) {
            batcher_next(b, &bt, &got);
            if (!got) break;
            count++;
            all_ok &= batch_ok(d, &bt, &sp, &lim);
            for (int i = 0; i < bt.B; i++) seen[bt.pair_index[i]]++;
            cells_src += (double)bt.S * bt.B;
            pad_src += (double)bt.S * bt.B - (double)bt.n_src_tokens;
            cells_tgt += (double)bt.T * bt.B;
            pad_tgt += (double)bt.T * bt.B - (double)bt.n_tgt_tokens;
        }
        counts_ok &= count == nb;
        for (int64_t i = 0; i < n; i++) coverage &= seen[i] == 1;
    }
    CHECK(all_ok, "%s: a batch broke the budgets or the layout", what);
    CHECK(coverage, "%s: every pair must appear exactly once per epoch", what);
    CHECK(counts_ok, "%s: batcher_batches_in_epoch must match the batches returned", what);

    if (sp.shuffle) {
        /* baseline: shuffled, unsorted, cut greedily by the same budgets */
        Rng r;
        rng_seed(&r, 12345, 0);
        int64_t *perm = malloc((size_t)n * sizeof *perm);
        for (int64_t i = 0; i < n; i++) perm[i] = i;
        rng_shuffle_i64(&r, perm, n);
        double bpad_src = 0, bcells_src = 0, bpad_tgt = 0, bcells_tgt = 0;
        int64_t i = 0;
        while (i < n) {
            int64_t B = 0, S = 0, T = 0, ns = 0, nt = 0;
            while (i < n) {
                int64_t s = dataset_src_len(d, perm[i]), t = dataset_tgt_len(d, perm[i]) + 1;
                int64_t s2 = s > S ? s : S, t2 = t > T ? t : T;
                if (B > 0 && ((sp.batch_sentences > 0 && B + 1 > sp.batch_sentences) ||
                              (sp.batch_tokens > 0 && (s2 * (B + 1) > sp.batch_tokens ||
                                                       t2 * (B + 1) > sp.batch_tokens))))
                    break;
                B++, S = s2, T = t2, ns += s, nt += t, i++;
            }
            bcells_src += (double)S * B;
            bpad_src += (double)(S * B - ns);
            bcells_tgt += (double)T * B;
            bpad_tgt += (double)(T * B - nt);
        }
        free(perm);
        double f = pad_src / cells_src, bf = bpad_src / bcells_src;
        double ft = pad_tgt / cells_tgt, bft = bpad_tgt / bcells_tgt;
        printf("%s: padding src %.3f (random %.3f), tgt %.3f (random %.3f)\n", what, f, bf, ft, bft);
        CHECK(f < 0.25 * bf, "%s: source padding %.3f not well below random batching %.3f", what, f, bf);
        if (check_tgt)
            CHECK(ft < 0.5 * bft, "%s: target padding %.3f not well below random batching %.3f", what, ft, bft);
    }
    free(seen);
    batcher_free(b);
}

/* batcher_peek_tgt_tokens: at every position of two epochs, the tokens and
 * count of the next n batches are those batcher_next then returns, and the
 * look-ahead moves nothing (the batches equal a batcher never peeked). */
static void test_peek(const Dataset *d, BatchSpec sp) {
    Batcher *b, *plain;
    CHECK(batcher_create(d, &sp, &b) == NMT_OK && batcher_create(d, &sp, &plain) == NMT_OK, "peek: create");
    for (int epoch = 0; epoch < 2; epoch++) {
        int64_t nb = batcher_batches_in_epoch(b);
        int64_t *tokens = calloc((size_t)nb + 1, sizeof *tokens);
        int64_t (*peeked)[2] = calloc((size_t)nb + 1, sizeof *peeked); /* per position: count, tokens of 3 */
        int same = 1;
        for (int64_t i = 0;; i++) {
            BatchPosition before = batcher_position(b);
            int count = batcher_peek_tgt_tokens(b, 3, &peeked[i][1]);
            peeked[i][0] = count;
            int64_t one = -1;
            int one_count = batcher_peek_tgt_tokens(b, 1, &one);
            BatchPosition after = batcher_position(b);
            same &= before.epoch == after.epoch && before.batch_index == after.batch_index;
            Batch bt, bp;
            int got, got_plain;
            batcher_next(b, &bt, &got);
            batcher_next(plain, &bp, &got_plain);
            same &= got == got_plain && (!got || batch_hash(&bt) == batch_hash(&bp));
            if (!got) {
                CHECK(count == 0 && peeked[i][1] == 0 && one_count == 0, "peek at the epoch's end: %d batches", count);
                break;
            }
            tokens[i] = bt.n_tgt_tokens;
            CHECK(one_count == 1 && one == bt.n_tgt_tokens, "peek 1 at batch %lld: %lld tokens, the batch has %lld",
                  (long long)i, (long long)one, (long long)bt.n_tgt_tokens);
        }
        int sums_ok = 1;
        for (int64_t i = 0; i < nb; i++) {
            int64_t want_count = nb - i < 3 ? nb - i : 3, want = 0;
            for (int64_t j = i; j < i + want_count; j++) want += tokens[j];
            sums_ok &= peeked[i][0] == want_count && peeked[i][1] == want;
        }
        CHECK(sums_ok, "peek 3: counts and tokens must be those of the next batches (epoch %d)", epoch);
        CHECK(same, "peeking must not move the position or change the batches (epoch %d)", epoch);
        free(tokens);
        free(peeked);
    }
    batcher_free(b);
    batcher_free(plain);
}

/* Records `calls` calls of batcher_next: the position before each call and
 * a hash of the result (0 for the end-of-epoch call). */
static void record(Batcher *b, int calls, BatchPosition *pos, uint64_t *ev) {
    for (int c = 0; c < calls; c++) {
        Batch bt;
        int got;
        pos[c] = batcher_position(b);
        batcher_next(b, &bt, &got);
        ev[c] = got ? batch_hash(&bt) : 0;
    }
}

static void test_order_and_seek(const Dataset *d) {
    BatchSpec sp = {64, 2500, 42, 1, 0};
    Batcher *b1, *b2, *b3;
    NMT_ASSERT(batcher_create(d, &sp, &b1) == NMT_OK);
    NMT_ASSERT(batcher_create(d, &sp, &b2) == NMT_OK);
    BatchSpec sp3 = sp;
    sp3.seed = 43;
    NMT_ASSERT(batcher_create(d, &sp3, &b3) == NMT_OK);
    int64_t nb0 = batcher_batches_in_epoch(b1);
    int calls = (int)(3 * nb0 + 20);
    BatchPosition *pos = malloc((size_t)calls * sizeof *pos), *pos2 = malloc((size_t)calls * sizeof *pos2);
    uint64_t *ev = malloc((size_t)calls * sizeof *ev), *ev2 = malloc((size_t)calls * sizeof *ev2);
    uint64_t *ev3 = malloc((size_t)calls * sizeof *ev3);
    record(b1, calls, pos, ev);
    record(b2, calls, pos2, ev2);
    record(b3, calls, pos2, ev3);
    CHECK(memcmp(ev, ev2, (size_t)calls * sizeof *ev) == 0, "same seed must give the same batches");
    int diff_seed = 0, diff_epoch = 0, ends = 0;
    for (int c = 0; c < nb0; c++) diff_seed += ev[c] != ev3[c];
    CHECK(diff_seed > nb0 * 9 / 10, "a different seed must reorder (%d of %lld differ)", diff_seed, (long long)nb0);
    /* epoch 1 starts at call nb0 + 1 (call nb0 is the end-of-epoch call) */
    CHECK(ev[nb0] == 0 && pos[nb0 + 1].epoch == 1 && pos[nb0 + 1].batch_index == 0,
          "end of epoch 0 at call %lld", (long long)nb0);
    for (int c = 0; c < nb0; c++) diff_epoch += ev[c] != ev[nb0 + 1 + c];
    CHECK(diff_epoch > nb0 * 9 / 10, "epochs must differ (%d of %lld differ)", diff_epoch, (long long)nb0);
    for (int c = 0; c < calls; c++) ends += ev[c] == 0;
    CHECK(ends == 3, "3 end-of-epoch calls expected, got %d", ends);

    /* seek: a fresh batcher and the used one both continue exactly */
    const int starts[] = {0, 1, 17, (int)nb0 - 1, (int)nb0, (int)nb0 + 1, (int)nb0 + 5,
                          (int)(2 * nb0 - 3), calls - 30};
    const int span = 25;
    int seek_ok = 1, seek_used_ok = 1;
    for (size_t i = 0; i < NMT_ARRAY_LEN(starts); i++) {
        int c0 = starts[i];
        Batcher *f;
        NMT_ASSERT(batcher_create(d, &sp, &f) == NMT_OK);
        CHECK(batcher_seek(f, pos[c0]) == NMT_OK, "seek: %s", nmt_error_message());
        record(f, span, pos2, ev2);
        for (int k = 0; k < span && c0 + k < calls; k++)
            seek_ok &= ev2[k] == ev[c0 + k] && pos2[k].epoch == pos[c0 + k].epoch &&
                       pos2[k].batch_index == pos[c0 + k].batch_index;
        batcher_free(f);
        CHECK(batcher_seek(b1, pos[c0]) == NMT_OK, "seek back: %s", nmt_error_message());
        record(b1, span, pos2, ev2);
        for (int k = 0; k < span && c0 + k < calls; k++) seek_used_ok &= ev2[k] == ev[c0 + k];
    }
    CHECK(seek_ok, "a fresh batcher seeked to a saved position must continue the same sequence");
    CHECK(seek_used_ok, "seeking a used batcher must continue the same sequence");

    /* the end-of-epoch state is a valid position; past it is refused */
    NMT_ASSERT(batcher_seek(b2, (BatchPosition){2, 0}) == NMT_OK);
    int64_t nb2 = batcher_batches_in_epoch(b2);
    BatchPosition end = {2, nb2};
    CHECK(batcher_seek(b2, end) == NMT_OK, "seek to the end of epoch 2: %s", nmt_error_message());
    Batch bt;
    int got = 1;
    batcher_next(b2, &bt, &got);
    CHECK(got == 0, "at the end of an epoch batcher_next must return got = 0");
    BatchPosition p = batcher_position(b2);
    CHECK(p.epoch == 3 && p.batch_index == 0, "after the end, position (3, 0), got (%lld, %lld)",
          (long long)p.epoch, (long long)p.batch_index);
    NmtStatus st = batcher_seek(b2, (BatchPosition){2, nb2 + 1});
    CHECK(st == NMT_ERR_FORMAT, "seek past the end must fail");
    CHECK_CONTAINS(nmt_error_message(), "epoch 2");
    p = batcher_position(b2);
    CHECK(p.epoch == 3 && p.batch_index == 0, "a failed seek keeps the position");
    CHECK(batcher_seek(b2, (BatchPosition){-1, 0}) == NMT_ERR_FORMAT, "negative epoch must fail");
    batcher_next(b2, &bt, &got);
    CHECK(got == 1, "the batcher still works after a failed seek");

    /* allocation count stays constant across batcher_next and seek */
    long before = nmt_alloc_count();
    for (int c = 0; c < 2 * nb0 + 5; c++) batcher_next(b2, &bt, &got);
    NMT_ASSERT(batcher_seek(b2, (BatchPosition){7, 3}) == NMT_OK);
    batcher_next(b2, &bt, &got);
    CHECK_EQ_INT(nmt_alloc_count(), before);

    free(pos), free(pos2), free(ev), free(ev2), free(ev3);
    batcher_free(b1), batcher_free(b2), batcher_free(b3);
}

static void test_layout_small(void) {
    Dataset *d;
    NMT_ASSERT(dataset_create(&d) == NMT_OK);
    const int32_t s0[] = {5, 6, 7}, t0[] = {8, 9};
    const int32_t s1[] = {10}, t1[] = {11, 12, 13};
    const int32_t s2[] = {14, 15}, t2[] = {16};
    NMT_ASSERT(dataset_add(d, s0, 3, t0, 2, 1) == NMT_OK);
    NMT_ASSERT(dataset_add(d, s1, 1, t1, 3, 2) == NMT_OK);
    NMT_ASSERT(dataset_add(d, s2, 2, t2, 1, 3) == NMT_OK);

    BatchSpec sp = {3, 0, 1, 0, 0};
    Batcher *b;
    NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
    for (int epoch = 0; epoch < 2; epoch++) {
        Batch bt;
        int got;
        batcher_next(b, &bt, &got);
        CHECK(got == 1 && bt.B == 3 && bt.S == 3 && bt.T == 4, "small batch shape B=%d S=%d T=%d",
              bt.B, bt.S, bt.T);
        if (got && bt.B == 3 && bt.S == 3 && bt.T == 4) {
            /* columns by decreasing source length: pairs 0, 2, 1 */
            const int64_t pi[] = {0, 2, 1};
            const int sl[] = {3, 2, 1}, tl[] = {3, 2, 4};
            const int32_t src[] = {5, 14, 10, /**/ 6, 15, 0, /**/ 7, 0, 0};
            const int32_t tin[] = {2, 2, 2, /**/ 8, 16, 11, /**/ 9, 0, 12, /**/ 0, 0, 13};
            const int32_t tout[] = {8, 16, 11, /**/ 9, 3, 12, /**/ 3, 0, 13, /**/ 0, 0, 3};
            for (int i = 0; i < 3; i++) {
                CHECK_EQ_INT(bt.pair_index[i], pi[i]);
                CHECK_EQ_INT(bt.src_len[i], sl[i]);
                CHECK_EQ_INT(bt.tgt_len[i], tl[i]);
            }
            for (int i = 0; i < 9; i++) CHECK_EQ_INT(bt.src[i], src[i]);
            for (int i = 0; i < 12; i++) {
                CHECK_EQ_INT(bt.tgt_in[i], tin[i]);
                CHECK_EQ_INT(bt.tgt_out[i], tout[i]);
            }
            CHECK_EQ_INT(bt.n_src_tokens, 6);
            CHECK_EQ_INT(bt.n_tgt_tokens, 9);
        }
        batcher_next(b, &bt, &got);
        CHECK(got == 0, "one batch per epoch");
    }
    batcher_free(b);

    /* reverse_tgt (model.right_to_left): the same batch, each target backwards */
    sp.reverse_tgt = 1;
    NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
    {
        Batch bt;
        int got;
        batcher_next(b, &bt, &got);
        CHECK(got == 1 && bt.B == 3 && bt.T == 4, "reversed batch shape");
        if (got && bt.B == 3 && bt.T == 4) {
            const int32_t tin[] = {2, 2, 2, /**/ 9, 16, 13, /**/ 8, 0, 12, /**/ 0, 0, 11};
            const int32_t tout[] = {9, 16, 13, /**/ 8, 3, 12, /**/ 3, 0, 11, /**/ 0, 0, 3};
            for (int i = 0; i < 12; i++) {
                CHECK_EQ_INT(bt.tgt_in[i], tin[i]);
                CHECK_EQ_INT(bt.tgt_out[i], tout[i]);
            }
            CHECK_EQ_INT(bt.src[0], 5);
            CHECK_EQ_INT(bt.tgt_len[2], 4);
        }
    }
    batcher_free(b);
    sp.reverse_tgt = 0;
    int32_t ids[] = {1, 2, 3, 4, 5}, none[1] = {7};
    batch_reverse_ids(ids, 5);
    batch_reverse_ids(none, 0);
    CHECK(ids[0] == 5 && ids[1] == 4 && ids[2] == 3 && ids[3] == 2 && ids[4] == 1 && none[0] == 7, "batch_reverse_ids");
    batch_reverse_ids(ids, 4);
    CHECK(ids[0] == 2 && ids[3] == 5 && ids[4] == 1, "batch_reverse_ids of 4");

    /* sequential mode keeps corpus order across batches: {0, 1}, {2} */
    sp.batch_sentences = 2;
    NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
    CHECK_EQ_INT(batcher_batches_in_epoch(b), 2);
    Batch bt;
    int got;
    batcher_next(b, &bt, &got);
    CHECK(got && bt.B == 2 && bt.pair_index[0] == 0 && bt.pair_index[1] == 1, "sequential batch 1");
    CHECK(got && bt.B == 2 && bt.S == 3 && bt.T == 4 && bt.src[1] == 10 && bt.src[3] == NMT_PAD_ID,
          "sequential batch 1 layout");
    batcher_next(b, &bt, &got);
    CHECK(got && bt.B == 1 && bt.pair_index[0] == 2 && bt.S == 2 && bt.T == 2, "sequential batch 2");
    CHECK(got && bt.tgt_in[0] == NMT_BOS_ID && bt.tgt_in[1] == 16 && bt.tgt_out[0] == 16 &&
          bt.tgt_out[1] == NMT_EOS_ID, "sequential batch 2 layout");
    batcher_free(b);

    /* token budget 6 (sequential): {0, 1} would need T*B = 4*2 = 8 > 6, and
     * {1, 2} also T*B = 8, so three batches of one */
    sp.batch_sentences = 0;
    sp.batch_tokens = 6;
    NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
    CHECK_EQ_INT(batcher_batches_in_epoch(b), 3);
    BatchLimits lim = batcher_limits(b);
    CHECK_EQ_INT(lim.max_S, 3);
    CHECK_EQ_INT(lim.max_T, 4);
    batcher_free(b);
    dataset_free(d);
}

static void test_over_budget(void) {
    Dataset *d = make_dataset(500, 5, 1);
    int32_t big[300];
    for (int i = 0; i < 300; i++) big[i] = 4 + i;
    NMT_ASSERT(dataset_add(d, big, 300, big, 10, 501) == NMT_OK);  /* source alone > 200 */
    NMT_ASSERT(dataset_add(d, big, 5, big, 250, 502) == NMT_OK);   /* target alone > 200 */
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        BatchSpec sp = {0, 200, 9, shuffle, 0};
        Batcher *b;
        NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
        BatchLimits lim = batcher_limits(b);
        CHECK(lim.max_src_cells >= 300 && lim.max_tgt_cells >= 251, "limits cover the long pairs");
        int seen_big = 0, seen_long_tgt = 0, total = 0, ok = 1;
        Batch bt;
        int got;
        for (batcher_next(b, &bt, &got); got; batcher_next(b, &bt, &got)) {
            total += bt.B;
            ok &= batch_ok(d, &bt, &sp, &lim);
            for (int i = 0; i < bt.B; i++) {
                if (bt.pair_index[i] == 500) seen_big++, ok &= bt.B == 1 && bt.S == 300;
                if (bt.pair_index[i] == 501) seen_long_tgt++, ok &= bt.B == 1 && bt.T == 251;
            }
        }
        CHECK(seen_big == 1 && seen_long_tgt == 1, "over-budget pairs form batches of one (shuffle %d)", shuffle);
        CHECK(ok, "over-budget batches of one, others within budget (shuffle %d)", shuffle);
        CHECK_EQ_INT(total, 502);
        batcher_free(b);
    }
    dataset_free(d);
}

static void test_bad_input(void) {
    Dataset *d;
    NMT_ASSERT(dataset_create(&d) == NMT_OK);
    Batcher *b = (Batcher *)1;
    BatchSpec sp = {10, 0, 1, 1, 0};
    CHECK(batcher_create(d, &sp, &b) == NMT_ERR_FORMAT && b == NULL, "empty dataset refused");
    const int32_t x[] = {5, 6};
    NMT_ASSERT(dataset_add(d, x, 2, x, 2, 1) == NMT_OK);
    NMT_ASSERT(dataset_add(d, x, 0, x, 2, 7) == NMT_OK);
    CHECK(batcher_create(d, &sp, &b) == NMT_ERR_FORMAT, "empty source refused");
    CHECK_CONTAINS(nmt_error_message(), "line 7");
    BatchSpec none = {0, 0, 1, 1, 0}, neg = {-1, 100, 1, 1, 0}, negt = {10, -5, 1, 1, 0};
    CHECK(batcher_create(d, &none, &b) == NMT_ERR_CONFIG, "both budgets 0 refused");
    CHECK_CONTAINS(nmt_error_message(), "batch_tokens");
    CHECK(batcher_create(d, &neg, &b) == NMT_ERR_CONFIG, "negative batch_sentences refused");
    CHECK_CONTAINS(nmt_error_message(), "batch_sentences");
    CHECK(batcher_create(d, &negt, &b) == NMT_ERR_CONFIG, "negative batch_tokens refused");
    batcher_free(NULL);
    dataset_free(d);

    /* every allocation failure in create is reported, never a crash */
    Dataset *d2 = make_dataset(50, 3, 0);
    int nomem_ok = 1;
    for (long k = 1; k <= 20; k++) {
        nmt_alloc_fail_at(k);
        NmtStatus st = batcher_create(d2, &sp, &b);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) batcher_free(b);
        else nomem_ok &= st == NMT_ERR_NOMEM && b == NULL;
    }
    CHECK(nomem_ok, "allocation failures give NMT_ERR_NOMEM");
    dataset_free(d2);
}

/* batcher_set_dataset (subword sampling's epochs): another segmentation
 * of the same pairs is taken from the current epoch on, its batches are
 * those of the new lengths and ids within the first dataset's limits, the
 * position stays; other pair counts and lengths outside the first
 * dataset's range are refused and change nothing. */
static void test_set_dataset(void) {
    Dataset *d = make_dataset(600, 5, 1);
    /* the same pairs with other lengths in d's range: pair i takes pair
     * (i * 7 % 600)'s source and target */
    Dataset *e;
    NMT_ASSERT(dataset_create(&e) == NMT_OK);
    for (int64_t i = 0; i < d->n_pairs; i++) {
        int64_t k = i * 7 % d->n_pairs;
        NMT_ASSERT(dataset_add(e, dataset_src(d, k), dataset_src_len(d, k), dataset_tgt(d, k),
                               dataset_tgt_len(d, k), i + 1) == NMT_OK);
    }
    BatchSpec sp = {0, 1500, 3, 1, 0};
    Batcher *b, *ref;
    NMT_ASSERT(batcher_create(d, &sp, &b) == NMT_OK);
    NMT_ASSERT(batcher_create(e, &sp, &ref) == NMT_OK);
    BatchLimits lim = batcher_limits(b);
    Batch bt, rt;
    int got, rgot;
    batcher_next(b, &bt, &got); /* one batch of epoch 0 from d */
    CHECK(got && batch_ok(d, &bt, &sp, &lim), "epoch 0 batch from the first dataset");
    /* mid-epoch: the rest of epoch 0 is planned from e */
    CHECK_EQ_INT(batcher_set_dataset(b, e, NULL), NMT_OK);
    CHECK_EQ_INT(batcher_position(b).batch_index, 1);
    int64_t n0 = batcher_batches_in_epoch(b);
    CHECK_EQ_INT(n0, batcher_batches_in_epoch(ref));
    /* from here on b gives what a batcher made on e gives (e's plan) */
    batcher_next(ref, &rt, &rgot);
    int same = 1, fine = 1, count = 0;
    for (;;) {
        batcher_next(b, &bt, &got);
        batcher_next(ref, &rt, &rgot);
        if (got != rgot) {
            same = 0;
            break;
        }
        if (!got) break;
        count++;
        same &= batch_hash(&bt) == batch_hash(&rt);
        fine &= batch_ok(e, &bt, &sp, &lim);
    }
    CHECK(same && count == n0 - 1, "the rest of the epoch from the new dataset (%d batches of %lld)", count,
          (long long)n0);
    CHECK(fine, "batches of the new dataset within the first one's limits");
    /* refused: more pairs than the first, a length outside d's range */
    Dataset *small = make_dataset(601, 5, 1), *longer;
    NMT_ASSERT(dataset_create(&longer) == NMT_OK);
    int32_t ids[100];
    for (int j = 0; j < 100; j++) ids[j] = NMT_N_SPECIAL;
    for (int64_t i = 0; i < d->n_pairs; i++)
        NMT_ASSERT(dataset_add(longer, ids, i == 3 ? lim.max_S + 1 : 2, ids, 2, i + 1) == NMT_OK);
    CHECK_EQ_INT(batcher_set_dataset(b, small, NULL), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "a new dataset of 601 pairs for a batcher of 1 to 600");
    CHECK_EQ_INT(batcher_set_dataset(b, longer, NULL), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "pair 3 of the new dataset has lengths");
    batcher_next(b, &bt, &got);
    CHECK(got && batch_ok(e, &bt, &sp, &lim), "a refused dataset changes nothing");
    batcher_free(b);
    batcher_free(ref);
    dataset_free(d);
    dataset_free(e);
    dataset_free(small);
    dataset_free(longer);
}

/* Links of every pair of d: pair i's last source token to its last
 * target token, or (bad) one past the last source token for pair 5. */
/* Every batch of epoch `epoch` of b and of ref (made on the same dataset)
 * is the same batch (pairs, shape, ids) and within b's limits; counts the
 * pairs seen. 1 when so and every pair of d came exactly once. */
static int same_epoch(Batcher *b, Batcher *ref, const Dataset *d, const BatchSpec *sp, const BatchLimits *lim) {
    int64_t *seen = nmt_calloc((size_t)d->n_pairs, sizeof *seen);
    NMT_ASSERT(seen);
    int ok = 1;
    for (;;) {
        Batch bt, rt;
        int got, rgot;
        batcher_next(b, &bt, &got);
        batcher_next(ref, &rt, &rgot);
        if (got != rgot) {
            ok = 0;
            break;
        }
        if (!got) break;
        ok &= batch_hash(&bt) == batch_hash(&rt) && bt.S == rt.S && bt.T == rt.T && batch_ok(d, &bt, sp, lim);
        for (int i = 0; i < bt.B; i++) seen[bt.pair_index[i]]++;
    }
    for (int64_t i = 0; i < d->n_pairs; i++) ok &= seen[i] == 1;
    nmt_free(seen);
    return ok;
}

/* batcher_create_ranged (data.extra_weight's epochs): a batcher sized for
 * a range of datasets takes later datasets of more or fewer pairs and of
 * longer or shorter pairs within the range, and plans each as a batcher
 * made on it would; its limits hold for all of them; batch_range_add
 * finds the corpora's shortest and longest sides; datasets beyond the
 * range are refused. */
static void test_ranged(void) {
    Dataset *d = make_dataset(300, 11, 1), *more = make_dataset(900, 12, 1), *fewer = make_dataset(40, 13, 0);
    Dataset *tiny; /* pairs of length 1 and 90: outside d's own range */
    NMT_ASSERT(dataset_create(&tiny) == NMT_OK);
    int32_t ids[100];
    for (int j = 0; j < 100; j++) ids[j] = NMT_N_SPECIAL + j;
    NMT_ASSERT(dataset_add(tiny, ids, 90, ids, 1, 1) == NMT_OK && dataset_add(tiny, ids, 1, ids, 90, 2) == NMT_OK);
    BatchRange r = {1000, 0, 0, 0, 0};
    batch_range_add(&r, d);
    int d_min_src = r.min_src, d_max_src = r.max_src;
    int want_min_src = 1000, want_max_src = 0, want_min_tgt = 1000, want_max_tgt = 0;
    for (int k = 0; k < 4; k++) {
        const Dataset *x = k == 0 ? d : k == 1 ? more : k == 2 ? fewer : tiny;
        if (k) batch_range_add(&r, x);
        for (int64_t i = 0; i < x->n_pairs; i++) {
            int s = dataset_src_len(x, i), t = dataset_tgt_len(x, i);
            want_min_src = s < want_min_src ? s : want_min_src, want_max_src = s > want_max_src ? s : want_max_src;
            want_min_tgt = t < want_min_tgt ? t : want_min_tgt, want_max_tgt = t > want_max_tgt ? t : want_max_tgt;
        }
        if (k == 0)
            CHECK(r.min_src == want_min_src && r.max_src == want_max_src && r.min_tgt == want_min_tgt &&
                      r.max_tgt == want_max_tgt,
                  "batch_range_add of one corpus: [%d, %d] [%d, %d]", r.min_src, r.max_src, r.min_tgt, r.max_tgt);
    }
    CHECK(r.min_src == 1 && r.max_src == 90 && r.min_tgt == 1 && r.max_tgt == 90 && want_max_src == 90 &&
              want_min_tgt == 1,
          "batch_range_add of four corpora: [%d, %d] [%d, %d]", r.min_src, r.max_src, r.min_tgt, r.max_tgt);
    CHECK(d_min_src > 1 || d_max_src < 90, "the test needs tiny's pairs outside d's own range");
    for (int t = 0; t < 2; t++) {
        BatchSpec sp = t ? (BatchSpec){0, 1200, 5, 1, 0} : (BatchSpec){32, 0, 5, 1, 0};
        const char *what = t ? "tokens=1200" : "sentences=32";
        Batcher *b = NULL;
        CHECK_EQ_INT(batcher_create_ranged(d, &sp, &r, &b), NMT_OK);
        if (!b) continue;
        BatchLimits lim = batcher_limits(b);
        CHECK(lim.max_S == 90 && lim.max_T == 91, "%s: the range's limits, S %d T %d", what, lim.max_S, lim.max_T);
        /* epoch 0 on d itself, as a batcher made on d plans it */
        Batcher *ref = NULL;
        NMT_ASSERT(batcher_create(d, &sp, &ref) == NMT_OK);
        CHECK(same_epoch(b, ref, d, &sp, &lim), "%s: epoch 0 on the first dataset", what);
        batcher_free(ref);
        /* epochs 1, 2, 3 on the others: sentence budgets plan as a batcher
         * made on them would (the pools are sized alike); token budgets size
         * the pools by the first dataset, so only the limits and the pairs
         * are checked there */
        const Dataset *next[3] = {more, fewer, tiny};
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_INT(batcher_set_dataset(b, next[k], NULL), NMT_OK);
            CHECK_EQ_INT(batcher_position(b).epoch, k + 1);
            if (!t) {
                NMT_ASSERT(batcher_create(next[k], &sp, &ref) == NMT_OK);
                NMT_ASSERT(batcher_seek(ref, batcher_position(b)) == NMT_OK);
                CHECK(same_epoch(b, ref, next[k], &sp, &lim), "%s: epoch %d on dataset %d of %lld pairs", what,
                      k + 1, k + 1, (long long)next[k]->n_pairs);
                batcher_free(ref);
            } else {
                Batcher *own = NULL; /* a second ranged batcher: the same plan, so the same batches */
                NMT_ASSERT(batcher_create_ranged(d, &sp, &r, &own) == NMT_OK);
                NMT_ASSERT(batcher_set_dataset(own, next[k], NULL) == NMT_OK);
                NMT_ASSERT(batcher_seek(own, batcher_position(b)) == NMT_OK);
                CHECK(same_epoch(b, own, next[k], &sp, &lim), "%s: epoch %d on dataset %d of %lld pairs", what,
                      k + 1, k + 1, (long long)next[k]->n_pairs);
                batcher_free(own);
            }
        }
        /* refused: more pairs than the range, a pair longer than it */
        Dataset *too_many = make_dataset(1001, 14, 1), *too_long;
        NMT_ASSERT(dataset_create(&too_long) == NMT_OK);
        NMT_ASSERT(dataset_add(too_long, ids, 91, ids, 3, 1) == NMT_OK);
        CHECK_EQ_INT(batcher_set_dataset(b, too_many, NULL), NMT_ERR_RUNTIME);
        CHECK_CONTAINS(nmt_error_message(), "a new dataset of 1001 pairs for a batcher of 1 to 1000");
        CHECK_EQ_INT(batcher_set_dataset(b, too_long, NULL), NMT_ERR_RUNTIME);
        CHECK_CONTAINS(nmt_error_message(), "pair 0 of the new dataset has lengths 91 and 3, outside the batcher's "
                                            "[1, 90] and [1, 90]");
        dataset_free(too_many);
        dataset_free(too_long);
        batcher_free(b);
    }
    dataset_free(d);
    dataset_free(more);
    dataset_free(fewer);
    dataset_free(tiny);
}

static GuidedAlignments *last_token_links(const Dataset *d, int bad) {
    GuidedAlignments *g;
    NMT_ASSERT(guided_alignments_create(&g) == NMT_OK);
    for (int64_t i = 0; i < d->n_pairs; i++) {
        int32_t link[2] = {dataset_src_len(d, i) - 1 + (bad && i == 5), dataset_tgt_len(d, i) - 1};
        NMT_ASSERT(guided_alignments_add(g, link, 1) == NMT_OK);
    }
    return g;
}

/* batcher_set_dataset with alignments (subword sampling under guided
 * alignment): a batcher with alignments takes a new dataset only with its
 * own, of its pairs and lengths; its batches then carry the new links. */
static void test_set_dataset_aligned(void) {
    Dataset *d = make_dataset(300, 8, 1), *e;
    NMT_ASSERT(dataset_create(&e) == NMT_OK);
    for (int64_t i = 0; i < d->n_pairs; i++) { /* other lengths in d's range */
        int64_t k = i * 7 % d->n_pairs;
        NMT_ASSERT(dataset_add(e, dataset_src(d, k), dataset_src_len(d, k), dataset_tgt(d, k), dataset_tgt_len(d, k),
                               i + 1) == NMT_OK);
    }
    GuidedAlignments *gd = last_token_links(d, 0), *ge = last_token_links(e, 0), *bad = last_token_links(e, 1);
    BatchSpec sp = {32, 0, 3, 1, 0};
    Batcher *plain, *b;
    NMT_ASSERT(batcher_create(d, &sp, &plain) == NMT_OK && batcher_create(d, &sp, &b) == NMT_OK);
    CHECK_EQ_INT(batcher_set_alignments(b, gd), NMT_OK);
    CHECK_EQ_INT(batcher_set_dataset(plain, e, ge), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "a new dataset with alignments for one without");
    CHECK_EQ_INT(batcher_set_dataset(b, e, NULL), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "a new dataset without alignments for one with");
    CHECK_EQ_INT(batcher_set_dataset(b, e, bad), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "pair 5 links token");
    CHECK_EQ_INT(batcher_set_dataset(b, e, ge), NMT_OK);
    /* every column's row at its last target token puts 1 on its last source token, and nothing else */
    int wrong = 0, batches = 0;
    for (;;) {
        Batch bt;
        int got;
        batcher_next(b, &bt, &got);
        if (!got) break;
        batches++;
        for (int col = 0; col < bt.B; col++) {
            int64_t i = bt.pair_index[col];
            int ls = dataset_src_len(e, i), lt = dataset_tgt_len(e, i);
            for (int t = 0; t < bt.T; t++)
                for (int s2 = 0; s2 < bt.S; s2++) {
                    float want = t == lt - 1 && s2 == ls - 1 ? 1.0f : 0.0f;
                    wrong += bt.align[((size_t)t * bt.B + col) * bt.S + s2] != want;
                }
        }
    }
    CHECK(batches > 0 && wrong == 0, "%d alignment cells differ from the new dataset's links in %d batches", wrong,
          batches);
    batcher_free(plain);
    batcher_free(b);
    guided_alignments_free(gd);
    guided_alignments_free(ge);
    guided_alignments_free(bad);
    dataset_free(d);
    dataset_free(e);
}

int main(void) {
    nmt_log_quiet(1);
    test_set_dataset_aligned();
    test_rng();
    Dataset *d = make_dataset(4000, 1, 0);
    Dataset *dc = make_dataset(3000, 2, 1);
    test_epochs_budgets(d, (BatchSpec){64, 0, 1, 1, 0}, "sentences=64", 0);
    test_epochs_budgets(d, (BatchSpec){0, 2000, 1, 1, 0}, "tokens=2000", 0);
    test_epochs_budgets(dc, (BatchSpec){50, 1500, 7, 1, 0}, "sentences=50,tokens=1500", 1);
    test_epochs_budgets(dc, (BatchSpec){0, 1000, 3, 1, 0}, "tokens=1000", 1);
    test_epochs_budgets(dc, (BatchSpec){32, 0, 7, 0, 0}, "sequential", 0);
    test_order_and_seek(d);
    test_peek(dc, (BatchSpec){50, 1500, 7, 1, 0});
    test_peek(dc, (BatchSpec){32, 0, 7, 0, 0});
    test_layout_small();
    test_over_budget();
    test_bad_input();
    test_set_dataset();
    test_ranged();
    dataset_free(d);
    dataset_free(dc);
    return test_summary("test_batch");
}
