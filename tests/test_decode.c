/* test_decode.c: greedy decoding. What the decoder emits step by step must
 * be the argmax of the teacher-forced logits when its own output is fed
 * back (one decoding loop, two code paths); lengths respect the limit
 * a * source length + b; PAD and BOS are never emitted; every attention
 * style decodes. */
#include "backend.h"
#include "config.h"
#include "model/gradcheck.h"
#include "model/seq2seq.h"
#include "test_util.h"
#include <math.h>

static Backend *be;

static void check_style(const char *const *sets, int n_sets, const char *label) {
    const char *base = "{\"model\": {\"emb_dim\": 8, \"hidden\": 10, \"enc_layers\": 2, \"dec_layers\": 2,"
                       " \"dropout\": 0.3, \"attention\": {\"window\": 2}}}";
    Config cfg;
    CHECK_EQ_INT(config_load_string(base, "test", "/", sets, n_sets, &cfg), NMT_OK);
    ModelDims d;
    CHECK_EQ_INT(model_dims_from_config(&cfg, 17, 9, &d), NMT_OK);
    config_free(&cfg);
    enum { B = 4, S = 6, MAXT = 20 };
    Batch src;
    gradcheck_make_batch(B, S, 3, d.V_s, d.V_t, 5, &src);
    Seq2Seq *m;
    ModelLimits lim = {B, S, MAXT + 1, MAXT};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    /* large weights: confident, varied outputs rather than one token */
    CHECK_EQ_INT(seq2seq_init_params(m, 0.8f, 3), NMT_OK);
    int32_t out[B * MAXT];
    int len[B];
    memset(out, 0, sizeof out);
    double a = 1.5;
    int b_len = 2;
    seq2seq_greedy(m, &src, a, b_len, out, MAXT, len);
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
        Config cfg;
        CHECK_EQ_INT(config_load_string(base, "test", "/", modes + k, 1, &cfg), NMT_OK);
        ModelDims d;
        CHECK_EQ_INT(model_dims_from_config(&cfg, 17, 9, &d), NMT_OK);
        config_free(&cfg);
        Batch batch;
        gradcheck_make_batch(4, 6, 5, d.V_s, d.V_t, 5, &batch);
        Seq2Seq *m;
        ModelLimits lim = {4, 6, 5, 0};
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

int main(void) {
    be = cpu_backend_create(1);
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
    be->destroy(be);
    return test_summary("test_decode");
}
