/* test_decode.c: greedy decoding and beam search. What the decoder emits
 * step by step must be the argmax of the teacher-forced logits when its own
 * output is fed back (one decoding loop, two code paths); lengths respect
 * the limit a * source length + b; PAD and BOS are never emitted; every
 * attention style decodes; beam 1 is greedy; beam search finds the
 * exhaustive optimum; a batch decodes as its sentences do alone while
 * finished sentences leave it; the output shortlist restricts the output
 * and, holding the whole vocabulary, changes nothing. */
#include "backend.h"
#include "config.h"
#include "model/decode_step.h"
#include "model/gradcheck.h"
#include "model/seq2seq.h"
#include "test_util.h"
#include <math.h>

static Backend *be;

/* One beam search's n-best lists: out (B * nbest rows of stride T), len and
 * score (B * nbest), count (B). */
typedef struct {
    const int32_t *out;
    const int *len, *count;
    const double *score;
} NBest;

/* Whether b holds a's hypotheses (counts, lengths, tokens) with scores
 * within tol. */
static bool nbest_same(NBest a, NBest b, int B, int nbest, int T, double tol) {
    bool same = true;
    for (int s = 0; s < B; s++)
        for (int i = 0; i < a.count[s]; i++) {
            int k = s * nbest + i;
            same &= b.count[s] == a.count[s] && b.len[k] == a.len[k] && fabs(b.score[k] - a.score[k]) < tol &&
                    !memcmp(b.out + (size_t)k * T, a.out + (size_t)k * T, (size_t)a.len[k] * 4);
        }
    return same;
}

/* The model sizes of a config text with settings, for vocabularies V_s, V_t. */
static ModelDims dims_of(const char *base, const char *const *sets, int n_sets, int V_s, int V_t) {
    Config cfg;
    ModelDims d;
    memset(&d, 0, sizeof d);
    CHECK_EQ_INT(config_load_string(base, "test", "/", sets, n_sets, &cfg), NMT_OK);
    CHECK_EQ_INT(model_dims_from_config(&cfg, V_s, V_t, &d), NMT_OK);
    config_free(&cfg);
    return d;
}

static void check_style(const char *const *sets, int n_sets, const char *label) {
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"dropout\": 0.3, \"attention\": {\"window\": 2}}}";
    ModelDims d = dims_of(base, sets, n_sets, 17, 9);
    enum { B = 4, S = 6, MAXT = 20 };
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 5, &src);
    Seq2Seq *m;
    ModelLimits lim = {B, S, MAXT + 1, MAXT, 0, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    /* large weights: confident, varied outputs rather than one token */
    CHECK_EQ_INT(seq2seq_init_params(m, 0.8f, 3), NMT_OK);
    int32_t out[B * MAXT];
    int len[B];
    memset(out, 0, sizeof out);
    double a = 1.5;
    int b_len = 2;
    CHECK_EQ_INT(seq2seq_greedy(m, &src, a, b_len, out, MAXT, len), NMT_OK);
    int src_len[B];
    for (int b = 0; b < B; b++) src_len[b] = src.src_len[b];
    for (int b = 0; b < B; b++) {
        int limit = (int)(a * src_len[b]) + b_len;
        CHECK(len[b] >= 0 && len[b] <= limit, "%s: sentence %d length %d, limit %d", label, b, len[b], limit);
        for (int t = 0; t < len[b]; t++)
            CHECK(out[b * MAXT + t] >= NMT_N_SPECIAL || out[b * MAXT + t] == NMT_UNK_ID,
                  "%s: special id %d emitted", label, out[b * MAXT + t]);
    }
    /* teacher-force the decoded outputs: argmax of each step must be what was emitted */
    int T = 1;
    for (int b = 0; b < B; b++)
        if (len[b] + 1 > T) T = len[b] + 1;
    int32_t tgt_in[(MAXT + 1) * B], tgt_out[(MAXT + 1) * B];
    int tgt_len[B];
    for (int b = 0; b < B; b++) {
        tgt_len[b] = len[b] + 1;
        for (int t = 0; t < T; t++) {
            tgt_in[t * B + b] = t == 0 ? NMT_BOS_ID : (t <= len[b] ? out[b * MAXT + t - 1] : NMT_PAD_ID);
            tgt_out[t * B + b] = t < len[b] ? out[b * MAXT + t] : (t == len[b] ? NMT_EOS_ID : NMT_PAD_ID);
        }
    }
    Batch forced = src;
    forced.T = T;
    forced.tgt_in = tgt_in;
    forced.tgt_out = tgt_out;
    forced.tgt_len = tgt_len;
    ModelLoss loss;
    seq2seq_forward(m, &forced, false, 0, &loss);
    int V = d.V_t;
    float *logits = malloc((size_t)T * B * V * sizeof(float));
    seq2seq_download_logits(m, logits);
    int agree = 0, total = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= len[b] && t < T; t++) {
            int limit = (int)(a * src_len[b]) + b_len;
            if (t == len[b] && len[b] == limit) break; /* cut by the limit, no EOS chosen */
            const float *row = logits + ((size_t)t * B + b) * V;
            int best = NMT_UNK_ID; /* PAD and BOS are never output */
            for (int v = 0; v < V; v++)
                if (v != NMT_PAD_ID && v != NMT_BOS_ID && row[v] > row[best]) best = v;
            total++;
            agree += best == tgt_out[t * B + b];
        }
    CHECK(total > 0 && agree == total, "%s: greedy output is the argmax at %d of %d steps", label, agree, total);
    free(logits);
    seq2seq_free(m);
}

/* Attention statistics: near-uniform attention for tiny weights, peaked
 * attention bounded by the uniform entropy for large ones. */
static void check_attention_stats(void) {
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 1, \"dec_layers\": 1,"
                       " \"dropout\": 0.0, \"attention\": {\"window\": 2}}}";
    const char *modes[] = {"model.attention.mode=global", "model.attention.mode=local-p"};
    for (int k = 0; k < 2; k++) {
        ModelDims d = dims_of(base, modes + k, 1, 17, 9);
        Batch batch;
        gradcheck_make_batch(4, 6, 5, d.V_s, d.V_t, 5, &batch);
        Seq2Seq *m;
        ModelLimits lim = {4, 6, 5, 0, 0, 0, 0};
        CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
        ModelLoss loss;
        AttnStats a;
        CHECK_EQ_INT(seq2seq_init_params(m, 1e-4f, 3), NMT_OK);
        seq2seq_forward(m, &batch, false, 0, &loss);
        CHECK(seq2seq_attention_stats(m, &batch, &a), "stats computed");
        int rows = 0;
        for (int b = 0; b < 4; b++) rows += batch.tgt_len[b];
        CHECK_EQ_INT(a.rows, rows);
        if (k == 0) { /* global, tiny weights: uniform rows */
            CHECK_NEAR(a.mean_entropy, a.mean_uniform_entropy, 1e-3);
            CHECK(a.mean_max < 0.5 && a.mean_min > 0.1, "uniform rows: max %g min %g", a.mean_max, a.mean_min);
            CHECK(isnan(a.local_p_offset), "no local-p offset for global attention");
        } else { /* local-p: the centre starts at S_b / 2 */
            CHECK(a.local_p_offset >= 0 && a.local_p_offset <= 1, "local-p offset %g", a.local_p_offset);
        }
        CHECK_EQ_INT(seq2seq_init_params(m, 3.0f, 3), NMT_OK);
        seq2seq_forward(m, &batch, false, 0, &loss);
        CHECK(seq2seq_attention_stats(m, &batch, &a), "stats computed");
        CHECK(a.mean_entropy <= a.mean_uniform_entropy + 1e-9 && a.mean_max <= 1 + 1e-6 && a.mean_max > a.mean_min,
              "entropy %g uniform %g max %g min %g", a.mean_entropy, a.mean_uniform_entropy, a.mean_max, a.mean_min);
        seq2seq_free(m);
    }
}

/* Beam 1 gives exactly the greedy output. */
static void check_beam1_is_greedy(const char *const *sets, int n_sets, const char *label) {
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"attention\": {\"window\": 2}}}";
    ModelDims d = dims_of(base, sets, n_sets, 17, 9);
    enum { B = 5, S = 7, MAXT = 16 };
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 11, &src);
    Seq2Seq *m;
    ModelLimits lim = {B, S, 2, MAXT, 4, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(m, 0.8f, 5), NMT_OK);
    int32_t greedy[B * MAXT], beam[B * MAXT];
    int glen[B], blen[B], count[B];
    double score[B];
    CHECK_EQ_INT(seq2seq_greedy(m, &src, 2.0, 2, greedy, MAXT, glen), NMT_OK);
    BeamSpec spec = {1, 1, 0.6, 0.0, 2.0, 2};
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, beam, MAXT, blen, score, count, NULL), NMT_OK);
    for (int b = 0; b < B; b++) {
        CHECK(count[b] == 1 && blen[b] == glen[b] && !memcmp(beam + b * MAXT, greedy + b * MAXT, (size_t)glen[b] * 4),
              "%s: sentence %d: beam 1 (%d tokens) differs from greedy (%d tokens)", label, b, blen[b], glen[b]);
    }
    /* the attention of each output token: rows over the source sum to 1 */
    float *attn = calloc((size_t)B * MAXT * S, sizeof(float));
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, beam, MAXT, blen, score, count, attn), NMT_OK);
    if (d.style != ATTN_STYLE_NONE)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < blen[b]; t++) {
                double sum = 0, outside = 0;
                for (int s = 0; s < S; s++) {
                    float a = attn[((size_t)b * MAXT + t) * S + s];
                    if (s < src.src_len[b]) sum += a;
                    else outside += fabs(a);
                }
                bool gaussian = d.mode == ATTN_MODE_LOCAL_P; /* the Gaussian leaves rows below 1 */
                CHECK((gaussian ? sum > 0 && sum <= 1 + 1e-5 : fabs(sum - 1) < 1e-4) && outside == 0,
                      "%s: sentence %d step %d: attention sums to %g (%g outside the sentence)", label, b, t, sum, outside);
            }
    free(attn);
    /* a wider beam with n-best: sorted lists of the asked size */
    int32_t nb[B * 3 * MAXT];
    int nlen[B * 3], ncount[B];
    double nscore[B * 3];
    BeamSpec wide = {4, 3, 1.0, 0.2, 2.0, 2};
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &wide, nb, MAXT, nlen, nscore, ncount, NULL), NMT_OK);
    for (int b = 0; b < B; b++) {
        CHECK(ncount[b] == 3, "%s: sentence %d has %d of 3 hypotheses", label, b, ncount[b]);
        for (int i = 1; i < ncount[b]; i++)
            CHECK(nscore[b * 3 + i] <= nscore[b * 3 + i - 1], "%s: n-best not sorted", label);
    }
    /* an ensemble of one model twice equals that model; with a different
     * second model the result changes */
    Seq2Seq *twin, *other;
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &twin), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(twin, 0.8f, 5), NMT_OK);
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &other), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(other, 0.8f, 6), NMT_OK);
    int32_t eb[B * 3 * MAXT];
    int elen[B * 3], ecount[B];
    double escore[B * 3];
    Seq2Seq *pair[2] = {m, twin};
    CHECK_EQ_INT(seq2seq_ensemble_search(pair, 2, &src, &wide, eb, MAXT, elen, escore, ecount, NULL), NMT_OK);
    NBest single = {nb, nlen, ncount, nscore}, ensemble = {eb, elen, ecount, escore};
    CHECK(nbest_same(single, ensemble, B, 3, MAXT, 1e-5), "%s: an ensemble of a model with itself differs from the model",
          label);
    pair[1] = other;
    CHECK_EQ_INT(seq2seq_ensemble_search(pair, 2, &src, &wide, eb, MAXT, elen, escore, ecount, NULL), NMT_OK);
    double diff = 0;
    for (int b = 0; b < B; b++) diff += fabs(escore[b * 3] - nscore[b * 3]);
    CHECK(diff > 1e-3, "%s: an ensemble with a different model gave the same scores", label);
    seq2seq_free(twin);
    seq2seq_free(other);
    seq2seq_free(m);
}

/* On a tiny vocabulary (6 ids: 3 words and EOS can be output) with at most
 * L = 3 output tokens, a beam of 9 holds every prefix, so beam search must
 * find the best of all 40 possible outputs, scored independently here by
 * teacher forcing. With a strong length penalty (alpha 2) the best output
 * is long: stopping at the first finished hypothesis would miss it. */
static const char *const EXHAUSTIVE_BASE =
    "{\"model\": {\"emb_dim\": 6, \"hidden\": 8, \"enc_layers\": 1, \"dec_layers\": 1}}";
/* base: the model's config (EXHAUSTIVE_BASE, or deeper ones whose beam
 * reorders carry more state) */
static void check_exhaustive(double alpha, const char *base, const char *label) {
    ModelDims d = dims_of(base, NULL, 0, 9, 6);
    enum { L = 3, N = 40, S = 4 };
    const int words[3] = {NMT_UNK_ID, 4, 5};
    /* all outputs: [EOS], [x EOS], [x y EOS], [x y z] (cut at L) */
    int32_t seqs[N][L + 1];
    int lens[N], n = 0;
    seqs[n][0] = NMT_EOS_ID, lens[n++] = 1;
    for (int x = 0; x < 3; x++) {
        seqs[n][0] = words[x], seqs[n][1] = NMT_EOS_ID, lens[n++] = 2;
        for (int y = 0; y < 3; y++) {
            seqs[n][0] = words[x], seqs[n][1] = words[y], seqs[n][2] = NMT_EOS_ID, lens[n++] = 3;
            for (int z = 0; z < 3; z++)
                seqs[n][0] = words[x], seqs[n][1] = words[y], seqs[n][2] = words[z], lens[n++] = 3;
        }
    }
    CHECK_EQ_INT(n, N);
    static int32_t src[S * N], tin[L * N], tout[L * N];
    static int src_len[N], tgt_len[N];
    static int64_t pair[N];
    for (int b = 0; b < N; b++) {
        src_len[b] = S;
        tgt_len[b] = lens[b];
        pair[b] = b;
        for (int s = 0; s < S; s++) src[s * N + b] = 4 + (s * 3) % 5;
        for (int t = 0; t < L; t++) {
            tin[t * N + b] = t == 0 ? NMT_BOS_ID : (t < lens[b] ? seqs[b][t - 1] : NMT_PAD_ID);
            tout[t * N + b] = t < lens[b] ? seqs[b][t] : NMT_PAD_ID;
        }
    }
    Batch all = {N, S, L, src, src_len, tin, tout, tgt_len, pair, 0, 0, NULL};
    Seq2Seq *m;
    ModelLimits lim = {N, S, L, L, 9, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(m, 1.5f, 21), NMT_OK);
    ModelLoss loss;
    seq2seq_forward(m, &all, false, 0, &loss);
    int V = d.V_t;
    float *logits = malloc((size_t)L * N * V * sizeof(float));
    seq2seq_download_logits(m, logits);
    double best = -INFINITY, scores[N];
    int best_b = -1;
    for (int b = 0; b < N; b++) {
        double lp = 0;
        for (int t = 0; t < lens[b]; t++) {
            const float *row = logits + ((size_t)t * N + b) * V;
            double mx = -INFINITY, sum = 0; /* log-softmax over the tokens that can be output */
            for (int v = 0; v < V; v++)
                if (v != NMT_PAD_ID && v != NMT_BOS_ID) mx = fmax(mx, row[v]);
            for (int v = 0; v < V; v++)
                if (v != NMT_PAD_ID && v != NMT_BOS_ID) sum += exp(row[v] - mx);
            lp += row[seqs[b][t]] - mx - log(sum);
        }
        double score = lp / pow((5.0 + lens[b]) / 6.0, alpha);
        scores[b] = score;
        if (score > best) best = score, best_b = b;
    }
    /* beam search on one copy of the source */
    Batch one = {1, S, 1, src, src_len, tin, tout, tgt_len, pair, 0, 0, NULL};
    static int32_t src1[S];
    for (int s = 0; s < S; s++) src1[s] = src[s * N];
    one.src = src1;
    int32_t out[9 * 8];
    int out_len[9], count;
    double score[9];
    BeamSpec spec = {9, 9, alpha, 0.0, 0.0, L};
    CHECK_EQ_INT(seq2seq_beam_search(m, &one, &spec, out, 8, out_len, score, &count, NULL), NMT_OK);
    /* every hypothesis of the n-best list scores as teacher forcing scores
     * it: the long ones went through beam reorders */
    double worst = 0;
    int matched = 0;
    for (int i = 0; i < count; i++)
        for (int b = 0; b < N; b++) {
            int n_out = seqs[b][lens[b] - 1] == NMT_EOS_ID ? lens[b] - 1 : lens[b];
            if (n_out != out_len[i] || memcmp(out + (size_t)i * 8, seqs[b], (size_t)n_out * 4)) continue;
            worst = fmax(worst, fabs(score[i] - scores[b]) / fabs(scores[b]));
            matched++;
        }
    CHECK(count >= 2 && matched == count && worst < 1e-6,
          "%s, alpha %g: %d of %d n-best hypotheses found among all outputs, worst relative score error %.3g",
          label, alpha, matched, count, worst);
    int want_len = seqs[best_b][lens[best_b] - 1] == NMT_EOS_ID ? lens[best_b] - 1 : lens[best_b];
    CHECK(count >= 1 && fabs(score[0] - best) < 1e-4 * fabs(best), "%s, alpha %g: beam score %.6f, exhaustive best %.6f",
          label, alpha, count ? score[0] : NAN, best);
    CHECK(out_len[0] == want_len && !memcmp(out, seqs[best_b], (size_t)want_len * 4),
          "%s, alpha %g: beam output differs from the exhaustive optimum (length %d vs %d)", label, alpha, out_len[0],
          want_len);
    /* the base model's optimum at alpha 2 is long (a check on the test
     * itself); the deeper models' optima are whatever they are */
    if (alpha >= 2 && base == EXHAUSTIVE_BASE)
        CHECK(want_len >= 2, "alpha %g: the optimum should be long, got %d tokens", alpha, want_len);
    free(logits);
    seq2seq_free(m);
}


/* The sentence column b of a time-major batch, as a batch of one. */
static void column_batch(const Batch *all, int b, int32_t *src, int *src_len, Batch *one) {
    for (int s = 0; s < all->S; s++) src[s] = all->src[s * all->B + b];
    *src_len = all->src_len[b];
    *one = *all;
    one->B = 1;
    one->src = src;
    one->src_len = src_len;
}

static Seq2Seq *decode_model(const char *const *sets, int n_sets, int B, int S, int maxT, int beam, float range,
                             uint64_t seed, ModelDims *d) {
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"attention\": {\"window\": 2}}}";
    *d = dims_of(base, sets, n_sets, 17, 9);
    Seq2Seq *m;
    ModelLimits lim = {B, S, 2, maxT, beam, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, d, lim, &m), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(m, range, seed), NMT_OK);
    return m;
}

/* Sampling (seq2seq_sample): k 1 is greedy and so is a temperature near 0;
 * a sentence's sample does not depend on its batch (alone equals in the
 * batch, which shrinks as sentences finish); other keys give other
 * samples; and the first token's frequencies over 4000 keys are the
 * model's top-k probabilities, renormalised (temperatures 1 and 0.5), to
 * 5 standard deviations, with no token from outside the top k. */
static void check_sampling(const char *const *sets, int n_sets, const char *label) {
    enum { B = 6, S = 7, MAXT = 12, K = 4, DRAWS = 4000 };
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"attention\": {\"window\": 2}}}";
    ModelDims d = dims_of(base, sets, n_sets, 17, 9);
    Seq2Seq *m;
    ModelLimits lim = {B, S, 2, MAXT, 0, 0, K};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(m, 0.4f, 11), NMT_OK);
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 7, &src);
    int32_t greedy[B * MAXT], out[B * MAXT], other[B * MAXT], alone[MAXT];
    int greedy_len[B], len[B], other_len[B], alone_len;
    uint64_t keys[B], keys2[B];
    for (int b = 0; b < B; b++) keys[b] = 1000 + b, keys2[b] = 2000 + b;
    double a = 1.0;
    int bl = 3;
    CHECK_EQ_INT(seq2seq_greedy(m, &src, a, bl, greedy, MAXT, greedy_len), NMT_OK);
    SampleSpec one = {1, 1.0, keys}, cold = {K, 1e-4, keys}, warm = {K, 1.0, keys}, warm2 = {K, 1.0, keys2};
    const SampleSpec *as_greedy[] = {&one, &cold};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(seq2seq_sample(m, &src, a, bl, as_greedy[i], out, MAXT, len), NMT_OK);
        bool same = true;
        for (int b = 0; b < B; b++)
            same &= len[b] == greedy_len[b] && !memcmp(out + b * MAXT, greedy + b * MAXT, (size_t)len[b] * 4);
        CHECK(same, "%s: sampling with %s should be greedy", label, i ? "temperature 1e-4" : "k 1");
    }
    CHECK_EQ_INT(seq2seq_sample(m, &src, a, bl, &warm, out, MAXT, len), NMT_OK);
    CHECK_EQ_INT(seq2seq_sample(m, &src, a, bl, &warm2, other, MAXT, other_len), NMT_OK);
    int differ = 0, from_greedy = 0;
    for (int b = 0; b < B; b++) {
        int32_t one_src[S];
        int one_len;
        Batch single;
        column_batch(&src, b, one_src, &one_len, &single);
        SampleSpec mine = {K, 1.0, &keys[b]};
        CHECK_EQ_INT(seq2seq_sample(m, &single, a, bl, &mine, alone, MAXT, &alone_len), NMT_OK);
        CHECK(alone_len == len[b] && !memcmp(alone, out + b * MAXT, (size_t)len[b] * 4),
              "%s: sentence %d sampled alone differs from its sample in the batch", label, b);
        differ += other_len[b] != len[b] || memcmp(other + b * MAXT, out + b * MAXT, (size_t)len[b] * 4);
        from_greedy += greedy_len[b] != len[b] || memcmp(greedy + b * MAXT, out + b * MAXT, (size_t)len[b] * 4);
    }
    CHECK(differ >= B / 2 && from_greedy >= B / 2, "%s: other keys changed %d of %d samples, %d differ from greedy",
          label, differ, B, from_greedy);
    /* the first token's distribution, sentence 0, of larger weights (a
     * distribution far from uniform, where the temperature shows) */
    CHECK_EQ_INT(seq2seq_init_params(m, 1.2f, 12), NMT_OK);
    int32_t one_src[S];
    int one_len;
    Batch single;
    column_batch(&src, 0, one_src, &one_len, &single);
    float lp[K];
    int32_t ids[K], bos = NMT_BOS_ID;
    seq2seq_decode_setup(m, &single, 1, 1);
    seq2seq_decode_step(m, 0, &bos, true);
    seq2seq_decode_topk(m, K, lp, ids);
    seq2seq_decode_end(m);
    const double temps[] = {1.0, 0.5};
    for (int ti = 0; ti < 2; ti++) {
        double p[K], total = 0;
        for (int i = 0; i < K; i++) total += p[i] = exp((lp[i] - lp[0]) / temps[ti]);
        int count[K] = {0}, outside = 0;
        for (int n = 0; n < DRAWS; n++) {
            uint64_t key = 77 + (uint64_t)n;
            SampleSpec spec = {K, temps[ti], &key};
            int32_t tok[MAXT];
            int tok_len;
            CHECK_EQ_INT(seq2seq_sample(m, &single, 0.0, 1, &spec, tok, MAXT, &tok_len), NMT_OK);
            int32_t first = tok_len ? tok[0] : NMT_EOS_ID;
            int at = -1;
            for (int i = 0; i < K; i++)
                if (ids[i] == first) at = i;
            if (at < 0) outside++;
            else count[at]++;
        }
        /* and the other temperature's probabilities are told apart (the check can fail) */
        double worst = 0, other_worst = 0;
        for (int i = 0; i < K; i++) {
            double q = p[i] / total, sigma = sqrt(q * (1 - q) / DRAWS) + 1e-9;
            double z = fabs((double)count[i] / DRAWS - q) / sigma;
            if (z > worst) worst = z;
            double other_total = 0;
            for (int j = 0; j < K; j++) other_total += exp((lp[j] - lp[0]) / temps[1 - ti]);
            double q2 = exp((lp[i] - lp[0]) / temps[1 - ti]) / other_total;
            double z2 = fabs((double)count[i] / DRAWS - q2) / (sqrt(q2 * (1 - q2) / DRAWS) + 1e-9);
            if (z2 > other_worst) other_worst = z2;
        }
        CHECK(outside == 0 && worst < 5 && other_worst > 8,
              "%s, temperature %g: %d draws outside the top %d; worst deviation %.2f sigma (%.2f from temperature %g's)",
              label, temps[ti], outside, K, worst, other_worst, temps[1 - ti]);
        if (getenv("NMT_TEST_VERBOSE"))
            printf("%s, temperature %g: counts %d %d %d %d, worst %.2f sigma (%.2f from the other)\n", label,
                   temps[ti], count[0], count[1], count[2], count[3], worst, other_worst);
    }
    seq2seq_free(m);
}

/* Greedy row-steps of a batch whose sentences need steps[b] steps (of at
 * most limit[b], the batch at most T) when the batch shrinks only to
 * multiples of q (Backend.decode_quantum), and, when `pipelined`
 * (Backend.overlap_downloads), step t+1 is queued before step t is read
 * unless the batch is to shrink first or no sentence may need it: the
 * columns computed each step, summed, wasted steps included. */
static int64_t greedy_rows_with_policy(const int64_t *steps, const int *limit, int B, int T, int q,
                                       bool pipelined) {
    int64_t rows = B; /* step 0 */
    int cols = B, horizon = T;
    bool shrink_due = false;
    for (int t = 0;; t++) {
        bool ahead = pipelined && !shrink_due && t + 1 < horizon;
        if (ahead) rows += cols; /* step t+1, on every column */
        int live = 0; /* sentences still searching after step t */
        horizon = 0;
        for (int b = 0; b < B; b++)
            if (steps[b] > t + 1) {
                live++;
                if (limit[b] > horizon) horizon = limit[b] < T ? limit[b] : T;
            }
        if (live == 0) return rows;
        int want = (live + q - 1) / q * q;
        if (ahead) {
            shrink_due = want < cols;
            continue;
        }
        shrink_due = false;
        if (want < cols) cols = want;
        rows += cols; /* step t+1 */
    }
}

/* A batch decodes exactly as each of its sentences does alone, although
 * finished sentences leave the batch (checked: greedy computes one row per
 * sentence and step, no more); with n-best, coverage and attention. With a
 * decode quantum q > 1 (Backend.decode_quantum: the batch shrinks only to
 * multiples of q, finished sentences kept as dead columns until then) the
 * output is the same, and greedy computes the rows that policy gives. */
static void check_batch_equals_alone(const char *const *sets, int n_sets, const char *label, int quantum,
                                     bool pipelined) {
    enum { B = 6, S = 7, MAXT = 16, K = 3, NB = 2 };
    char buf[160];
    if (quantum > 1 || pipelined) {
        snprintf(buf, sizeof buf, "%s, decode quantum %d%s", label, quantum, pipelined ? ", pipelined" : "");
        label = buf;
    }
    ModelDims d;
    Seq2Seq *m = decode_model(sets, n_sets, B, S, MAXT, K, 0.8f, 7, &d);
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 13, &src);
    /* greedy */
    int32_t out[B * MAXT], one_out[MAXT];
    int len[B], one_len;
    be->decode_quantum = quantum;
    be->overlap_downloads = pipelined;
    CHECK_EQ_INT(seq2seq_greedy(m, &src, 2.0, 1, out, MAXT, len), NMT_OK);
    be->overlap_downloads = false;
    int64_t expect_rows = 0, max_steps = 0, steps[B];
    int limit[B], T = 1;
    for (int b = 0; b < B; b++) {
        limit[b] = (int)(2.0 * src.src_len[b]) + 1;
        if (limit[b] > T) T = limit[b] < MAXT ? limit[b] : MAXT;
        steps[b] = len[b] == limit[b] ? len[b] : len[b] + 1; /* the EOS step counts */
        expect_rows += steps[b];
        if (steps[b] > max_steps) max_steps = steps[b];
    }
    CHECK(expect_rows < B * max_steps, "%s: the sentences should finish at different steps", label);
    int64_t policy_rows = greedy_rows_with_policy(steps, limit, B, T, quantum, pipelined);
    CHECK(quantum > 1 || pipelined || policy_rows == expect_rows, "%s: the policy's rows %lld, the sentences' %lld",
          label, (long long)policy_rows, (long long)expect_rows);
    /* (pipelined, a step after the last sentence ended may be wasted) */
    CHECK(quantum < B || policy_rows == B * max_steps || (pipelined && policy_rows == B * (max_steps + 1)),
          "%s: quantum %d keeps every column: %lld rows, not %lld", label, quantum, (long long)policy_rows,
          (long long)(B * max_steps));
    CHECK(seq2seq_decode_row_steps(m) == policy_rows, "%s: greedy computed %lld row-steps, %lld wanted (its sentences "
          "need %lld)", label, (long long)seq2seq_decode_row_steps(m), (long long)policy_rows, (long long)expect_rows);
    be->decode_quantum = 1; /* the sentences alone: one column each */
    int32_t col_src[S];
    int col_len;
    Batch one;
    for (int b = 0; b < B; b++) {
        column_batch(&src, b, col_src, &col_len, &one);
        CHECK_EQ_INT(seq2seq_greedy(m, &one, 2.0, 1, one_out, MAXT, &one_len), NMT_OK);
        CHECK(one_len == len[b] && !memcmp(one_out, out + b * MAXT, (size_t)len[b] * 4),
              "%s: greedy sentence %d decodes differently in the batch", label, b);
    }
    if (pipelined) { /* beam search is never pipelined */
        seq2seq_free(m);
        return;
    }
    /* beam search */
    static int32_t bout[B * NB * MAXT], oout[NB * MAXT];
    static float battn[B * NB * MAXT * S], oattn[NB * MAXT * S];
    int blen[B * NB], bcount[B], olen[NB], ocount;
    double bscore[B * NB], oscore[NB];
    BeamSpec spec = {K, NB, 0.8, 0.3, 2.0, 1};
    be->decode_quantum = quantum;
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, bout, MAXT, blen, bscore, bcount, battn), NMT_OK);
    be->decode_quantum = 1;
    int64_t batch_rows = seq2seq_decode_row_steps(m), alone_rows = 0;
    for (int b = 0; b < B; b++) {
        column_batch(&src, b, col_src, &col_len, &one);
        CHECK_EQ_INT(seq2seq_beam_search(m, &one, &spec, oout, MAXT, olen, oscore, &ocount, oattn), NMT_OK);
        alone_rows += seq2seq_decode_row_steps(m);
        bool same = ocount == bcount[b];
        double attn_diff = 0;
        for (int i = 0; same && i < ocount; i++) {
            int k = b * NB + i;
            same = olen[i] == blen[k] && fabs(oscore[i] - bscore[k]) <= 1e-4 * (1 + fabs(bscore[k])) &&
                   !memcmp(oout + i * MAXT, bout + (size_t)k * MAXT, (size_t)olen[i] * 4);
            for (int t = 0; same && t < olen[i]; t++)
                for (int x = 0; x < S; x++) {
                    float want = x < col_len ? battn[((size_t)k * MAXT + t) * S + x] : 0;
                    attn_diff = fmax(attn_diff, fabs(oattn[((size_t)i * MAXT + t) * S + x] - want));
                }
        }
        CHECK(same && attn_diff < 1e-4, "%s: beam sentence %d differs alone from in the batch (attention %g)", label,
              b, attn_diff);
    }
    /* each sentence keeps its K rows exactly as long as it searches alone
     * (with a quantum, finished ones may stay a while) */
    CHECK(quantum > 1 ? batch_rows >= alone_rows : batch_rows == alone_rows,
          "%s: the batch's beam search computed %lld row-steps, its sentences alone %lld", label,
          (long long)batch_rows, (long long)alone_rows);
    seq2seq_free(m);
}

/* The output shortlist: holding every id but PAD and BOS it changes
 * nothing; a small one confines the output to it, greedy and beam alike;
 * bad lists are refused. */
static void check_shortlist(const char *const *sets, int n_sets, const char *label) {
    enum { B = 5, S = 7, MAXT = 16, K = 4 };
    ModelDims d;
    Seq2Seq *m = decode_model(sets, n_sets, B, S, MAXT, K, 0.8f, 9, &d);
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 17, &src);
    int32_t full[B * 2 * MAXT], listed[B * 2 * MAXT];
    int flen[B * 2], llen[B * 2], fcount[B], lcount[B];
    double fscore[B * 2], lscore[B * 2];
    BeamSpec spec = {K, 2, 0.6, 0.0, 2.0, 2};
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, full, MAXT, flen, fscore, fcount, NULL), NMT_OK);
    int32_t ids[64];
    int n = 0;
    for (int v = 0; v < d.V_t; v++)
        if (v != NMT_PAD_ID && v != NMT_BOS_ID) ids[n++] = v;
    CHECK_EQ_INT(seq2seq_set_shortlist(m, ids, n), NMT_OK);
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, listed, MAXT, llen, lscore, lcount, NULL), NMT_OK);
    NBest all = {full, flen, fcount, fscore}, whole = {listed, llen, lcount, lscore};
    CHECK(nbest_same(all, whole, B, 2, MAXT, 1e-5), "%s: a shortlist of the whole vocabulary changed the beam output",
          label);
    bool same;
    /* a few ids: the output uses only them, and beam 1 is still greedy */
    bool used[64] = {false};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < flen[b * 2]; t++) used[full[(size_t)b * 2 * MAXT + t]] = true;
    n = 0;
    int dropped = -1;
    for (int v = 0; v < d.V_t; v++) {
        if (v == NMT_PAD_ID || v == NMT_BOS_ID) continue;
        if (used[v] && dropped < 0 && v != NMT_EOS_ID) {
            dropped = v; /* a token the full search used is left out */
            continue;
        }
        if (v == NMT_EOS_ID || v % 2 == 0) ids[n++] = v;
    }
    if (dropped < 0) { /* the full search output no word: leave out the first one */
        dropped = NMT_N_SPECIAL;
        n = 0;
        for (int v = 0; v < d.V_t; v++)
            if (v == NMT_EOS_ID || (v % 2 == 0 && v != dropped && v != NMT_PAD_ID && v != NMT_BOS_ID)) ids[n++] = v;
    }
    CHECK_EQ_INT(seq2seq_set_shortlist(m, ids, n), NMT_OK);
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, listed, MAXT, llen, lscore, lcount, NULL), NMT_OK);
    int outside = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < lcount[b]; i++)
            for (int t = 0; t < llen[b * 2 + i]; t++) {
                int32_t tok = listed[(size_t)(b * 2 + i) * MAXT + t];
                bool in = false;
                for (int j = 0; j < n; j++) in |= ids[j] == tok;
                outside += !in;
            }
    CHECK(outside == 0, "%s: %d output tokens are not in the shortlist", label, outside);
    int32_t greedy[B * MAXT], beam1[B * MAXT];
    int glen[B], b1len[B], b1count[B];
    double b1score[B];
    CHECK_EQ_INT(seq2seq_greedy(m, &src, 2.0, 2, greedy, MAXT, glen), NMT_OK);
    BeamSpec one = {1, 1, 0.6, 0.0, 2.0, 2};
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &one, beam1, MAXT, b1len, b1score, b1count, NULL), NMT_OK);
    same = true;
    for (int b = 0; b < B; b++) {
        same &= glen[b] == b1len[b] && !memcmp(greedy + b * MAXT, beam1 + b * MAXT, (size_t)glen[b] * 4);
        for (int t = 0; t < glen[b]; t++) same &= greedy[b * MAXT + t] != dropped;
    }
    CHECK(same, "%s: with a shortlist, beam 1 differs from greedy or outputs a left-out id", label);
    /* refused: PAD, BOS, out of range, not ascending */
    int32_t bad1[] = {NMT_PAD_ID, NMT_EOS_ID}, bad2[] = {NMT_EOS_ID, 5, 4}, bad3[] = {NMT_EOS_ID, 999};
    CHECK_EQ_INT(seq2seq_set_shortlist(m, bad1, 2), NMT_ERR_USAGE);
    CHECK_EQ_INT(seq2seq_set_shortlist(m, bad2, 3), NMT_ERR_USAGE);
    CHECK_EQ_INT(seq2seq_set_shortlist(m, bad3, 2), NMT_ERR_USAGE);
    CHECK_EQ_INT(seq2seq_decode_vocab(m), d.V_t); /* a refused list leaves the full vocabulary */
    seq2seq_free(m);
}

/* seq2seq_fold_embeddings: a folded model's step scores are those of the
 * same model unfolded (to float rounding: the input product is summed in
 * two parts), step by step on the same tokens; its greedy and beam output
 * is the same; Bahdanau is never folded; a training forward turns the
 * fold off (the output is the unfolded one again, bit for bit). */
static void check_folded(const char *const *sets, int n_sets, const char *label) {
    enum { B = 4, S = 6, MAXT = 12, K = 3, STEPS = 5 };
    ModelDims d;
    Seq2Seq *plain = decode_model(sets, n_sets, B, S, MAXT, K, 0.8f, 21, &d);
    Seq2Seq *m = decode_model(sets, n_sets, B, S, MAXT, K, 0.8f, 21, &d);
    bool folded = true;
    CHECK_EQ_INT(seq2seq_fold_embeddings(m, &folded), NMT_OK);
    CHECK(folded == (d.style != ATTN_STYLE_BAHDANAU), "%s: folded %d", label, folded);
    Batch src;
    gradcheck_make_batch(B, S, 2, d.V_s, d.V_t, 23, &src);
    /* step scores on the same tokens, beam rows K */
    seq2seq_decode_setup(plain, &src, K, MAXT);
    seq2seq_decode_setup(m, &src, K, MAXT);
    int R = seq2seq_decode_rows(m), V = seq2seq_decode_vocab(m);
    int32_t prev[K * B];
    float *a = malloc((size_t)R * V * sizeof *a), *b = malloc((size_t)R * V * sizeof *b);
    double worst = 0;
    for (int t = 0; t < STEPS; t++) {
        for (int r = 0; r < R; r++) prev[r] = t ? NMT_N_SPECIAL + (r * 7 + t * 3) % (d.V_t - NMT_N_SPECIAL) : NMT_BOS_ID;
        seq2seq_decode_step(plain, t, prev, true);
        seq2seq_decode_step(m, t, prev, true);
        be->download(be, a, seq2seq_decode_scores(plain), (size_t)R * V * sizeof *a);
        be->download(be, b, seq2seq_decode_scores(m), (size_t)R * V * sizeof *b);
        for (int i = 0; i < R * V; i++)
            if (isfinite(a[i]) || isfinite(b[i])) {
                double e = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)a[i]));
                if (!(e <= worst)) worst = e; /* NaN too */
            }
    }
    seq2seq_decode_end(plain);
    seq2seq_decode_end(m);
    CHECK(worst < 1e-5, "%s: folded step scores differ from the plain ones by %.3g", label, worst);
    free(a);
    free(b);
    /* greedy and beam output */
    int32_t out_p[B * 2 * MAXT], out_f[B * 2 * MAXT];
    int len_p[B * 2], len_f[B * 2], cnt_p[B], cnt_f[B];
    double sc_p[B * 2], sc_f[B * 2];
    BeamSpec spec = {K, 2, 0.6, 0.0, 2.0, 2};
    CHECK_EQ_INT(seq2seq_beam_search(plain, &src, &spec, out_p, MAXT, len_p, sc_p, cnt_p, NULL), NMT_OK);
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, out_f, MAXT, len_f, sc_f, cnt_f, NULL), NMT_OK);
    NBest plain_nb = {out_p, len_p, cnt_p, sc_p}, folded_nb = {out_f, len_f, cnt_f, sc_f};
    CHECK(nbest_same(plain_nb, folded_nb, B, 2, MAXT, 1e-4), "%s: folded beam output differs from the plain one", label);
    bool same, exact = true;
    CHECK_EQ_INT(seq2seq_greedy(plain, &src, 2.0, 2, out_p, MAXT, len_p), NMT_OK);
    CHECK_EQ_INT(seq2seq_greedy(m, &src, 2.0, 2, out_f, MAXT, len_f), NMT_OK);
    same = true;
    for (int i = 0; i < B; i++)
        same &= len_f[i] == len_p[i] && !memcmp(out_f + (size_t)i * MAXT, out_p + (size_t)i * MAXT, (size_t)len_p[i] * 4);
    CHECK(same, "%s: folded greedy output differs from the plain one", label);
    /* a training forward (the weights are about to change) turns it off */
    ModelLoss loss;
    seq2seq_forward(m, &src, true, 1, &loss);
    CHECK_EQ_INT(seq2seq_beam_search(plain, &src, &spec, out_p, MAXT, len_p, sc_p, cnt_p, NULL), NMT_OK);
    CHECK_EQ_INT(seq2seq_beam_search(m, &src, &spec, out_f, MAXT, len_f, sc_f, cnt_f, NULL), NMT_OK);
    for (int i = 0; i < B; i++)
        for (int j = 0; j < cnt_p[i]; j++) exact &= cnt_f[i] == cnt_p[i] && sc_f[i * 2 + j] == sc_p[i * 2 + j];
    CHECK(exact, "%s: after a training forward the model still decodes folded", label);
    seq2seq_free(plain);
    seq2seq_free(m);
}

/* gemm_batched calls counted (check_query_form) */
static int batched_calls;
static void (*real_gemm_batched)(Backend *, bool, bool, int, int, int, float, const float *, int, long,
                                 const float *, int, long, float, float *, int, long, int);
static void counting_gemm_batched(Backend *b, bool ta, bool tb, int m, int n, int k, float alpha, const float *A,
                                  int lda, long sa, const float *B, int ldb, long sb, float beta, float *C, int ldc,
                                  long sc, int count) {
    batched_calls++;
    real_gemm_batched(b, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}

/* attn_softmax_forward calls counted (check_query_form) */
static int softmax_calls;
static void (*real_softmax)(Backend *, int, int, const float *, const int32_t *, const float *, int, bool, float,
                            float *, float *);
static void counting_softmax(Backend *b, int rows, int S, const float *scores, const int32_t *src_len,
                             const float *center, int window, bool gaussian, float sigma, float *probs,
                             float *weights) {
    softmax_calls++;
    real_softmax(b, rows, S, scores, src_len, center, window, gaussian, sigma, probs, weights);
}

/* Several heads of general or dot scores decode in the query form
 * (attention_query_form): each step's scores come from (q Wa) k instead of
 * q (Wa k), all heads at once. Every decoding step's scores must be the
 * teacher-forced forward's logits, for every beam row (each row with its
 * own history: the forward's column g*B + b is sentence b with row g's
 * tokens), through reorders and after sentences leave the batch (two
 * shrinks). */
static void check_query_form(const char *const *sets, int n_sets, const char *label, int G, int knob) {
    enum { B = 4, S = 6, T = 6, GMAX = 3 };
    int saved_knob = be->decode_query_form;
    be->decode_query_form = knob; /* Backend.decode_query_form: 0 never, 1 greedy, 2 also beam */
    bool qform = knob == 2 || (knob == 1 && G == 1);
    NMT_ASSERT(G <= GMAX);
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"attention\": {\"window\": 2}}}";
    ModelDims d = dims_of(base, sets, n_sets, 17, 9);
    CHECK(attention_query_form(&d), "%s: no query form for these scores", label);
    int BB = G * B, V = d.V_t;
    Seq2Seq *m;
    ModelLimits lim = {BB, S, T, T, G, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    CHECK_EQ_INT(seq2seq_init_params(m, 0.8f, 31), NMT_OK);
    Batch src;
    gradcheck_make_batch(B, S, 2, d.V_s, d.V_t, 33, &src);
    int32_t fsrc[S * GMAX * B], tgt_in[T * GMAX * B], tgt_out[T * GMAX * B];
    int fsrc_len[GMAX * B], tgt_len[GMAX * B];
    for (int c = 0; c < BB; c++) {
        fsrc_len[c] = src.src_len[c % B];
        tgt_len[c] = T;
        for (int s = 0; s < S; s++) fsrc[s * BB + c] = src.src[s * B + c % B];
        for (int t = 0; t < T; t++) {
            tgt_in[t * BB + c] = t ? NMT_N_SPECIAL + (c * 7 + t * 3 + c * c * t) % (V - NMT_N_SPECIAL) : NMT_BOS_ID;
            tgt_out[t * BB + c] = NMT_EOS_ID;
        }
    }
    Batch fwd = src;
    fwd.B = BB;
    fwd.T = T;
    fwd.src = fsrc;
    fwd.src_len = fsrc_len;
    fwd.tgt_in = tgt_in;
    fwd.tgt_out = tgt_out;
    fwd.tgt_len = tgt_len;
    ModelLoss loss;
    seq2seq_forward(m, &fwd, false, 0, &loss);
    float *logits = malloc((size_t)T * BB * V * sizeof *logits), *scores = malloc((size_t)BB * V * sizeof *scores);
    seq2seq_download_logits(m, logits);
    /* decode the same: sentence column i is sentence orig[i] */
    int orig[B] = {0, 1, 2, 3}, n = B;
    int32_t prev[GMAX * B], rows[GMAX * B], keep[B];
    seq2seq_decode_setup(m, &src, G, T);
    double worst = 0;
    int compared = 0;
    for (int t = 0; t < T; t++) {
        for (int g = 0; g < G; g++)
            for (int i = 0; i < n; i++) prev[g * n + i] = tgt_in[t * BB + g * B + orig[i]];
        real_gemm_batched = be->gemm_batched;
        be->gemm_batched = counting_gemm_batched;
        real_softmax = be->attn_softmax_forward;
        be->attn_softmax_forward = counting_softmax;
        batched_calls = softmax_calls = 0;
        seq2seq_decode_step(m, t, prev, false);
        be->gemm_batched = real_gemm_batched;
        be->attn_softmax_forward = real_softmax;
        /* the query form: the queries through the key projections (dot: two),
         * the scores and the contexts, each once for all heads; else the
         * scores and contexts of each head */
        CHECK_EQ_INT(batched_calls, !qform ? 2 * d.heads : d.score == ATTN_SCORE_GENERAL ? 3 : 4);
        /* and global attention's softmax once for all heads (the row
         * lengths are there once per head); a window's centres once a head */
        CHECK_EQ_INT(softmax_calls, qform && d.mode == ATTN_MODE_GLOBAL ? 1 : d.heads);
        CHECK_EQ_INT(seq2seq_decode_rows(m), G * n);
        be->download(be, scores, seq2seq_decode_scores(m), (size_t)G * n * V * sizeof *scores);
        for (int g = 0; g < G; g++)
            for (int i = 0; i < n; i++) {
                const float *want = logits + ((size_t)t * BB + g * B + orig[i]) * V;
                const float *got = scores + ((size_t)g * n + i) * V;
                for (int v = 0; v < V; v++) {
                    if (v == NMT_PAD_ID || v == NMT_BOS_ID) continue; /* -infinity when decoding */
                    double e = fabs((double)got[v] - want[v]) / (1.0 + fabs((double)want[v]));
                    if (!(e <= worst)) worst = e; /* NaN too */
                    compared++;
                }
            }
        /* continue every row; sentence column 1 leaves after steps 1 and 3 */
        int n_keep = 0;
        for (int i = 0; i < n; i++)
            if (!(i == 1 && (t == 1 || t == 3))) keep[n_keep++] = i;
        for (int g = 0; g < G; g++)
            for (int i = 0; i < n_keep; i++) rows[g * n_keep + i] = g * n + keep[i];
        seq2seq_decode_reorder(m, t, rows, keep, n_keep);
        for (int i = 0; i < n_keep; i++) orig[i] = orig[keep[i]];
        n = n_keep;
    }
    seq2seq_decode_end(m);
    CHECK(compared == (G * B * 2 + G * (B - 1) * 2 + G * (B - 2) * 2) * (V - 2), "%s beam %d: %d scores compared",
          label, G, compared);
    CHECK(worst < 1e-5, "%s beam %d, decode_query_form %d: step scores differ from the forward's logits by %.3g",
          label, G, knob, worst);
    free(logits);
    free(scores);
    seq2seq_free(m);
    be->decode_query_form = saved_knob;
}

/* Decoding keeps a ring of two steps of its per-step buffers: the arena a
 * model needs for beam search does not grow with the longest output (only
 * the local-m centres, a float per step and row, remain). */
static void check_decode_memory(void) {
    const char *sets[] = {"model.attention.style=luong", "model.attention.mode=local-m",
                          "model.attention.heads=2"};
    const char *base = "{\"model\": {\"emb_dim\": 16, \"hidden\": 32, \"enc_layers\": 1,"
                       " \"dec_layers\": 2}}";
    ModelDims d = dims_of(base, sets, 3, 50, 60);
    size_t bytes[2];
    int longest[2] = {20, 2000};
    for (int i = 0; i < 2; i++) {
        /* a small training batch, so that decoding sizes the arena */
        ModelLimits lim = {32, 20, 4, longest[i], 8, 0, 0};
        Seq2Seq *m = NULL;
        CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
        bytes[i] = m ? seq2seq_arena_bytes(m) : 0;
        seq2seq_free(m);
    }
    /* per extra step: the local-m centres, a float per row (32 x 8 rows) */
    size_t allowed = (size_t)(longest[1] - longest[0]) * 32 * 8 * sizeof(float) + 4096;
    printf("  decode arena: %zu bytes for 20 steps, %zu for 2000\n", bytes[0], bytes[1]);
    CHECK(bytes[0] > 0 && bytes[1] - bytes[0] <= allowed,
          "decoding memory grows with the output length: %zu -> %zu bytes (allowed +%zu)",
          bytes[0], bytes[1], allowed);
}

int main(void) {
    be = cpu_backend_create(1);
    check_decode_memory();
    const char *luong1[] = {"model.attention.style=luong"};
    check_beam1_is_greedy(luong1, 1, "luong");
    const char *bahd1[] = {"model.attention.style=bahdanau", "model.attention.score=additive", "model.attention.heads=2"};
    check_beam1_is_greedy(bahd1, 3, "bahdanau additive 2 heads");
    const char *lm1[] = {"model.attention.mode=local-m", "model.attention.score=dot"};
    check_beam1_is_greedy(lm1, 2, "local-m dot");
    const char *lp1[] = {"model.attention.mode=local-p"};
    check_beam1_is_greedy(lp1, 1, "local-p");
    const char *none1[] = {"model.attention.style=none"};
    check_beam1_is_greedy(none1, 1, "none");
    const char *res_bahd[] = {"model.residual=true", "model.attention.style=bahdanau",
                              "model.attention.score=additive", "model.dec_layers=3"};
    check_beam1_is_greedy(res_bahd, 4, "residual bahdanau 2+3 layers");
    const char *res_none[] = {"model.residual=true", "model.attention.style=none"};
    check_beam1_is_greedy(res_none, 2, "residual none");
    /* layer normalisation: the decoder's input products (the folded
     * embeddings' rows too) and recurrent products normalised per step */
    const char *ln_luong[] = {"model.layer_norm=true", "model.dec_layers=2", "model.attention.heads=2"};
    check_beam1_is_greedy(ln_luong, 3, "layer norm luong 2 heads 1+2 layers");
    const char *ln_bahd[] = {"model.layer_norm=true", "model.residual=true", "model.attention.style=bahdanau",
                             "model.attention.score=additive", "model.enc_layers=2", "model.dec_layers=2"};
    check_beam1_is_greedy(ln_bahd, 6, "layer norm residual bahdanau 2+2 layers");
    const char *const *sets[] = {luong1, bahd1, lm1, lp1, none1, res_bahd, res_none, ln_luong, ln_bahd};
    const int n_sets[] = {1, 3, 2, 1, 1, 4, 2, 3, 6};
    const char *labels[] = {"luong", "bahdanau additive 2 heads", "local-m dot", "local-p", "none",
                            "residual bahdanau 2+3 layers", "residual none",
                            "layer norm luong 2 heads 1+2 layers", "layer norm residual bahdanau 2+2 layers"};
    for (int i = 0; i < 9; i++) {
        const int quanta[] = {1, 4, 6}; /* 6: the whole batch, never compacted */
        for (int k = 0; k < 3; k++)
            for (int pipelined = 0; pipelined < 2; pipelined++)
                check_batch_equals_alone(sets[i], n_sets[i], labels[i], quanta[k], pipelined);
        check_shortlist(sets[i], n_sets[i], labels[i]);
        check_folded(sets[i], n_sets[i], labels[i]);
    }
    const char *feed0[] = {"model.attention.style=luong", "model.input_feed=false"};
    check_folded(feed0, 2, "luong without input feeding");
    const char *qf_general[] = {"model.attention.heads=3"};
    const char *qf_dot[] = {"model.attention.score=dot", "model.attention.heads=2", "model.attention.mode=local-m"};
    const char *qf_scaled[] = {"model.attention.score=scaled_dot", "model.attention.heads=2",
                               "model.attention.mode=local-p"};
    for (int knob = 0; knob <= 2; knob++)
        for (int G = 1; G <= 3; G += 2) {
            check_query_form(qf_general, 1, "general 3 heads", G, knob);
            check_query_form(qf_dot, 3, "dot 2 heads local-m", G, knob);
            check_query_form(qf_scaled, 3, "scaled dot 2 heads local-p", G, knob);
        }
    check_sampling(luong1, 1, "sampling, luong");
    check_sampling(bahd1, 3, "sampling, bahdanau additive 2 heads");
    check_exhaustive(0.0, EXHAUSTIVE_BASE, "1+1 layers");
    check_exhaustive(1.0, EXHAUSTIVE_BASE, "1+1 layers");
    check_exhaustive(2.0, EXHAUSTIVE_BASE, "1+1 layers");
    /* residual connections: a beam reorder also carries the top layer's
     * output (Bahdanau's next query; hh without attention) */
    const char *residual_bases[] = {
        "{\"model\": {\"emb_dim\": 6, \"hidden\": 8, \"enc_layers\": 2, \"dec_layers\": 3, \"residual\": true,"
        " \"attention\": {\"style\": \"bahdanau\", \"score\": \"additive\"}}}",
        "{\"model\": {\"emb_dim\": 6, \"hidden\": 8, \"enc_layers\": 3, \"dec_layers\": 2, \"residual\": true}}",
        "{\"model\": {\"emb_dim\": 6, \"hidden\": 8, \"enc_layers\": 2, \"dec_layers\": 2, \"residual\": true,"
        " \"attention\": {\"style\": \"none\"}}}"};
    const char *residual_labels[] = {"residual bahdanau 2+3 layers", "residual luong 3+2 layers",
                                     "residual none 2+2 layers"};
    for (int i = 0; i < 3; i++) check_exhaustive(2.0, residual_bases[i], residual_labels[i]);
    check_exhaustive(1.0,
                     "{\"model\": {\"emb_dim\": 6, \"hidden\": 8, \"enc_layers\": 2, \"dec_layers\": 2,"
                     " \"layer_norm\": true, \"residual\": true}}",
                     "layer norm residual luong 2+2 layers");
    check_attention_stats();
    const char *luong[] = {"model.attention.style=luong"};
    check_style(luong, 1, "luong general");
    const char *bahdanau[] = {"model.attention.style=bahdanau", "model.attention.score=additive"};
    check_style(bahdanau, 2, "bahdanau additive");
    const char *none[] = {"model.attention.style=none"};
    check_style(none, 1, "none");
    const char *localp[] = {"model.attention.mode=local-p", "model.attention.heads=2"};
    check_style(localp, 2, "luong local-p heads 2");
    const char *localm[] = {"model.attention.mode=local-m", "model.attention.score=dot"};
    check_style(localm, 2, "luong dot local-m");
    const char *residual[] = {"model.residual=true", "model.dec_layers=3", "model.enc_layers=3"};
    check_style(residual, 3, "residual luong general 3+3 layers");
    check_style(res_bahd, 4, "residual bahdanau additive 2+3 layers");
    check_style(res_none, 2, "residual none");
    check_style(ln_luong, 3, "layer norm luong general 2 heads 1+2 layers");
    check_style(ln_bahd, 6, "layer norm residual bahdanau additive 2+2 layers");
    be->destroy(be);
    return test_summary("test_decode");
}
