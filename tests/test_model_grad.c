/* test_model_grad.c: gradient checks of the whole model by central
 * differences, for every attention style x score x mode, heads 1 and 2,
 * input feeding on and off, bidirectional on and off, with padding in the
 * batch; plus deeper models, dropout, tied embeddings, the zero bridge and
 * residual connections. */
#include "backend.h"
#include "config.h"
#include "model/gradcheck.h"
#include "kernels/align_math.h"
#include "model/seq2seq.h"
#include "model/seq2seq_score.h"
#include "test_util.h"

static Backend *be;

/* Builds dims from config overrides on a tiny base model. */
static int dims_for(const char *const *sets, int n_sets, ModelDims *d) {
    const char *base =
        "{\"model\": {\"emb_dim\": 5, \"hidden\": 6, \"enc_layers\": 1, \"dec_layers\": 1,"
        " \"dropout\": 0.0, \"init_range\": 0.3, \"attention\": {\"window\": 2}},"
        " \"train\": {\"label_smoothing\": 0.1}}";
    Config cfg;
    NmtStatus st = config_load_string(base, "test", "/", sets, n_sets, &cfg);
    if (st) {
        CHECK(0, "config: %s", nmt_error_message());
        return 0;
    }
    st = model_dims_from_config(&cfg, cfg.model.share_embeddings ? 11 : 13, 11, d); /* one vocabulary when shared */
    config_free(&cfg);
    CHECK(st == NMT_OK, "dims: %s", nmt_error_message());
    return st == NMT_OK;
}

/* output_rows: rows of logits the output layer holds at once (0: the
 * default, which holds the whole test batch). align_weight > 0: with
 * guided alignment of that weight and cost against the batch's alignment. */
static void check_config_full(const char *label, const char *const *sets, int n_sets, int samples,
                              int output_rows, float align_weight, int align_cost) {
    ModelDims d;
    if (!dims_for(sets, n_sets, &d)) return;
    Batch batch;
    gradcheck_make_batch(3, 5, 4, d.V_s, d.V_t, 3, &batch);
    GradcheckSpec spec;
    gradcheck_spec_default(&spec);
    spec.samples_per_param = samples;
    spec.output_chunk = (size_t)output_rows * d.V_t;
    spec.align_weight = align_weight;
    spec.align_cost = align_cost;
    GradcheckResult r;
    NmtStatus st = model_gradcheck(be, &d, &batch, &spec, &r);
    CHECK(st == NMT_OK, "%s: %s", label, nmt_error_message());
    if (st) return;
    CHECK(r.failed == 0, "%s: %d of %d coordinates wrong; worst %s[%zu]: analytic %.6g numeric %.6g",
          label, r.failed, r.checked, r.worst_name, r.worst_index, r.worst_analytic, r.worst_numeric);
    CHECK(r.checked > 0 && r.skipped * 10 <= r.checked + r.skipped,
          "%s: %d checked, %d skipped as non-smooth", label, r.checked, r.skipped);
    CHECK(r.loss > 0 && r.loss < 20, "%s: loss %g", label, r.loss);
    if (getenv("NMT_TEST_VERBOSE"))
        printf("%-60s loss %.4f checked %3d skipped %2d worst %.3f (%s)\n", label, r.loss, r.checked,
               r.skipped, r.worst_excess, r.worst_name);
}

static void check_config_chunked(const char *label, const char *const *sets, int n_sets, int samples,
                                 int output_rows) {
    check_config_full(label, sets, n_sets, samples, output_rows, 0.0f, 0);
}

static void check_config(const char *label, const char *const *sets, int n_sets, int samples) {
    check_config_chunked(label, sets, n_sets, samples, 0);
}

/* Largest |a - b| over n floats, relative to the largest |a|. */
static double max_rel_diff(const float *a, const float *b, size_t n) {
    double diff = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)a[i]));
    }
    return diff / scale;
}

/* One training step (loss, every gradient) and the logits, with the output
 * layer holding `rows` rows at a time; host copies out. */
static int step_with_chunk(const ModelDims *d, const Batch *batch, int rows, double *loss,
                           float *grads, float *logits) {
    ModelLimits lim = {batch->B, batch->S, batch->T, 0, 0, (size_t)rows * d->V_t, 0};
    Seq2Seq *m;
    if (seq2seq_create(be, d, lim, &m)) {
        CHECK(0, "create: %s", nmt_error_message());
        return 0;
    }
    size_t n = seq2seq_layout(m)->total;
    CHECK(seq2seq_init_params(m, 0.5f, 3) == NMT_OK, "init");
    ModelLoss l;
    seq2seq_zero_grads(m);
    seq2seq_forward(m, batch, true, 5, &l);
    seq2seq_backward(m);
    *loss = l.loss;
    be->download(be, grads, seq2seq_grads(m), n * sizeof(float));
    seq2seq_forward(m, batch, false, 0, &l);
    seq2seq_download_logits(m, logits);
    seq2seq_free(m);
    return 1;
}

/* The output layer in chunks (every size from one row to the whole batch,
 * including sizes that leave a short last chunk) gives the loss, every
 * gradient and the logits of the whole; plus gradient checks with chunks. */
static void output_chunks(void) {
    const char *sets[] = {"model.dropout=0.3", "model.tie_embeddings=true", "model.emb_dim=6",
                          "model.attention.heads=2"};
    ModelDims d;
    if (!dims_for(sets, 4, &d)) return;
    Batch batch;
    gradcheck_make_batch(3, 5, 4, d.V_s, d.V_t, 3, &batch);
    int N = batch.B * batch.T;
    ParamLayout layout;
    param_layout_build(&d, &layout);
    float *g_whole = malloc(layout.total * sizeof(float)), *g = malloc(layout.total * sizeof(float));
    float *z_whole = malloc((size_t)N * d.V_t * sizeof(float)), *z = malloc((size_t)N * d.V_t * sizeof(float));
    double loss_whole, loss;
    if (step_with_chunk(&d, &batch, 0, &loss_whole, g_whole, z_whole)) {
        for (int rows = 1; rows <= N; rows += rows < 5 ? 1 : 3) {
            if (!step_with_chunk(&d, &batch, rows, &loss, g, z)) break;
            CHECK(fabs(loss - loss_whole) <= 1e-6 * loss_whole, "chunks of %d rows: loss %.9g, whole %.9g",
                  rows, loss, loss_whole);
            double eg = max_rel_diff(g_whole, g, layout.total), ez = max_rel_diff(z_whole, z, (size_t)N * d.V_t);
            CHECK(eg <= 1e-5, "chunks of %d rows: gradients differ by %.3g of the largest", rows, eg);
            CHECK(ez <= 1e-6, "chunks of %d rows: logits differ by %.3g of the largest", rows, ez);
        }
    }
    free(g_whole);
    free(g);
    free(z_whole);
    free(z);
    check_config_chunked("output layer in chunks of 5 rows, tied, dropout", sets, 4, 16, 5);
    const char *plain[] = {"model.attention.score=additive"};
    check_config_chunked("output layer one row at a time", plain, 1, 12, 1);
}

/* Columns [from, from + n) of `whole` as a batch of their own (S and T cut
 * to the longest of them), in the caller's arrays of whole's sizes. */
enum { STORE_B = 8, STORE_S = 8, STORE_T = 8 };
typedef struct {
    int32_t src[STORE_S * STORE_B], tgt_in[STORE_T * STORE_B], tgt_out[STORE_T * STORE_B];
    int src_len[STORE_B], tgt_len[STORE_B];
    int64_t pair[STORE_B];
    float align[STORE_T * STORE_B * STORE_S];
} BatchStore;

static void sub_batch(const Batch *whole, int from, int n, BatchStore *m, Batch *out) {
    int S = 0, T = 0, B = whole->B;
    NMT_ASSERT(n <= STORE_B && whole->S <= STORE_S && whole->T <= STORE_T);
    for (int i = 0; i < n; i++) {
        if (whole->src_len[from + i] > S) S = whole->src_len[from + i];
        if (whole->tgt_len[from + i] > T) T = whole->tgt_len[from + i];
    }
    *out = (Batch){n, S, T, m->src, m->src_len, m->tgt_in, m->tgt_out, m->tgt_len, m->pair, 0, 0,
                   whole->align ? m->align : NULL};
    for (int i = 0; i < n; i++) {
        m->src_len[i] = whole->src_len[from + i];
        m->tgt_len[i] = whole->tgt_len[from + i];
        m->pair[i] = i;
        out->n_src_tokens += m->src_len[i];
        out->n_tgt_tokens += m->tgt_len[i];
        for (int s = 0; s < S; s++) m->src[s * n + i] = whole->src[s * B + from + i];
        for (int t = 0; t < T; t++) {
            m->tgt_in[t * n + i] = whole->tgt_in[t * B + from + i];
            m->tgt_out[t * n + i] = whole->tgt_out[t * B + from + i];
            for (int s = 0; whole->align && s < S; s++)
                m->align[((size_t)t * n + i) * S + s] = whole->align[((size_t)t * B + from + i) * whole->S + s];
        }
    }
}

/* Gradient accumulation (seq2seq_set_grad_tokens): two parts of a batch,
 * their gradients added with the whole batch's token count as divisor,
 * give the whole batch's gradient; each part's reported loss stays its own
 * mean. Without the divisor the sum of the two means is not that gradient
 * (the check can tell the two apart). No dropout: the parts draw other
 * masks than the whole would. */
static void accumulation(const char *label, const char *const *sets, int n_sets, float align_weight) {
    ModelDims d;
    if (!dims_for(sets, n_sets, &d)) return;
    Batch gc, whole, part1, part2;
    gradcheck_make_batch(5, 6, 5, d.V_s, d.V_t, 11, &gc);
    static BatchStore whole_store, store1, store2;
    sub_batch(&gc, 0, 5, &whole_store, &whole); /* own copy: gc's arrays are gradcheck's */
    sub_batch(&whole, 0, 2, &store1, &part1);
    sub_batch(&whole, 2, 3, &store2, &part2);
    CHECK(part1.S < whole.S || part2.S < whole.S || part1.T < whole.T || part2.T < whole.T,
          "%s: a part should be shorter than the whole", label);
    ModelLimits lim = {whole.B, whole.S, whole.T, 0, 0, 0, 0};
    Seq2Seq *m;
    if (seq2seq_create(be, &d, lim, &m)) {
        CHECK(0, "%s: create: %s", label, nmt_error_message());
        return;
    }
    if (align_weight > 0)
        CHECK(seq2seq_set_guided_alignment(m, ALIGN_COST_CE, align_weight) == NMT_OK, "%s: guided", label);
    size_t n = seq2seq_layout(m)->total;
    float *g_whole = malloc(n * sizeof(float)), *g_acc = malloc(n * sizeof(float)), *g_means = malloc(n * sizeof(float));
    CHECK(seq2seq_init_params(m, 0.5f, 3) == NMT_OK, "init");
    ModelLoss lw, l1, l2;
    seq2seq_zero_grads(m);
    seq2seq_forward(m, &whole, true, 5, &lw);
    seq2seq_backward(m);
    be->download(be, g_whole, seq2seq_grads(m), n * sizeof(float));
    for (int divided = 1; divided >= 0; divided--) {
        seq2seq_zero_grads(m);
        seq2seq_set_grad_tokens(m, divided ? part1.n_tgt_tokens + part2.n_tgt_tokens : 0);
        seq2seq_forward(m, &part1, true, 5, &l1);
        seq2seq_backward(m);
        seq2seq_forward(m, &part2, true, 6, &l2);
        seq2seq_backward(m);
        be->download(be, divided ? g_acc : g_means, seq2seq_grads(m), n * sizeof(float));
    }
    seq2seq_set_grad_tokens(m, 0);
    CHECK(l1.n_tokens == part1.n_tgt_tokens && l2.n_tokens == part2.n_tgt_tokens &&
              fabs(l1.loss - (l1.loss_sum + l1.align_sum) / l1.n_tokens) <= 1e-12,
          "%s: a part's loss must be its own mean", label);
    CHECK((align_weight > 0) == (lw.align_sum > 0) &&
              fabs(l1.align_sum + l2.align_sum - lw.align_sum) <= 1e-6 * lw.align_sum,
          "%s: parts' guided alignment loss %.9g, whole %.9g", label, l1.align_sum + l2.align_sum, lw.align_sum);
    double joined = (l1.loss_sum + l1.align_sum + l2.loss_sum + l2.align_sum) / (double)(l1.n_tokens + l2.n_tokens);
    CHECK(fabs(joined - lw.loss) <= 1e-6 * lw.loss, "%s: parts' loss %.9g, whole %.9g", label, joined, lw.loss);
    double e = max_rel_diff(g_whole, g_acc, n), e_means = max_rel_diff(g_whole, g_means, n);
    CHECK(e <= 1e-5, "%s: accumulated gradients differ from the whole batch's by %.3g of the largest", label, e);
    CHECK(e_means > 1e-2, "%s: the sum of the parts' mean gradients should differ from the whole's (%.3g)",
          label, e_means);
    free(g_whole);
    free(g_acc);
    free(g_means);
    seq2seq_free(m);
}

static void accumulations(void) {
    accumulation("accumulation, luong general", NULL, 0, 0.0f);
    const char *bahdanau[] = {"model.attention.style=bahdanau", "model.attention.score=additive",
                              "model.enc_layers=2", "model.dec_layers=2"};
    accumulation("accumulation, bahdanau additive, 2+2 layers", bahdanau, 4, 0.0f);
    const char *local[] = {"model.attention.mode=local-p", "model.attention.heads=2", "model.tie_embeddings=true",
                           "model.emb_dim=6"};
    accumulation("accumulation, local-p, 2 heads, tied", local, 4, 0.0f);
    accumulation("accumulation, guided alignment, local-p, 2 heads, tied", local, 4, 1.0f);
}

/* Training arena bytes of a model of `sets` with target vocabulary V_t for
 * batches up to B x S x T (0 on failure). */
static size_t train_arena(const char *const *sets, int n_sets, int V_t, int B, int S, int T) {
    ModelDims d;
    if (!dims_for(sets, n_sets, &d)) return 0;
    d.V_t = V_t;
    ModelLimits lim = {B, S, T, 0, 0, 0, 0};
    Seq2Seq *m;
    if (seq2seq_create(be, &d, lim, &m)) {
        CHECK(0, "create: %s", nmt_error_message());
        return 0;
    }
    size_t bytes = seq2seq_arena_bytes(m);
    seq2seq_free(m);
    return bytes;
}

/* The output layer's logits are chunked: a ten times larger vocabulary
 * costs no more arena (whole, the logits of this batch would take 20 MB
 * for V_t 2000 and 205 MB for 20000). */
static void memory_bounds(void) {
    enum { B = 64, S = 30, T = 40 };
    const char *plain[] = {"model.enc_layers=2", "model.dec_layers=2"};
    size_t v_small = train_arena(plain, 2, 2000, B, S, T), v_large = train_arena(plain, 2, 20000, B, S, T);
    printf("  training arena: %zu bytes for V_t 2000, %zu for 20000\n", v_small, v_large);
    CHECK(v_small && v_large && v_large <= v_small + (1u << 20),
          "V_t 20000 takes %zu bytes more arena than V_t 2000 (want the same: logits in chunks)",
          v_large - v_small);
}

/* Guided alignment's loss against an independent computation: the
 * training forward's ModelLoss.align_sum (no dropout) equals weight times
 * the cost summed over target tokens, computed here from the head-averaged
 * attention that teacher-forced scoring (seq2seq_score.h: the
 * step-by-step decoder, another code path) gives for the same batch, and
 * the loss differentiated is (loss_sum + align_sum) / tokens. */
static void guided_loss_value(const char *label, const char *const *sets, int n_sets, int cost) {
    ModelDims d;
    if (!dims_for(sets, n_sets, &d)) return;
    Batch batch;
    gradcheck_make_batch(4, 6, 5, d.V_s, d.V_t, 21, &batch);
    ModelLimits lim = {batch.B, batch.S, batch.T, 0, 0, 0, 0};
    Seq2Seq *m;
    if (seq2seq_create(be, &d, lim, &m)) {
        CHECK(0, "%s: create: %s", label, nmt_error_message());
        return;
    }
    const float weight = 0.7f;
    CHECK(seq2seq_init_params(m, 0.5f, 3) == NMT_OK, "init");
    ModelLoss plain, guided;
    seq2seq_forward(m, &batch, true, 5, &plain);
    CHECK(seq2seq_set_guided_alignment(m, cost, weight) == NMT_OK, "%s: set: %s", label, nmt_error_message());
    seq2seq_forward(m, &batch, true, 5, &guided);
    size_t n = seq2seq_layout(m)->total;
    float *w = malloc(n * sizeof(float));
    be->download(be, w, seq2seq_params(m), n * sizeof(float));
    const ModelDims *dims[1] = {&d};
    const float *weights[1] = {w};
    Seq2SeqScorer *sc = NULL;
    ScoreShape shape = {batch.B, batch.S, batch.T};
    float *logp = malloc((size_t)batch.T * batch.B * sizeof(float));
    float *attn = malloc((size_t)batch.B * batch.T * batch.S * sizeof(float));
    NmtStatus st = seq2seq_scorer_create(be, dims, weights, 1, shape, true, &sc);
    if (!st) st = seq2seq_score_batch(sc, &batch, logp, attn);
    CHECK(st == NMT_OK, "%s: scoring: %s", label, nmt_error_message());
    double want = 0;
    int B = batch.B, S = batch.S, rows = 0;
    for (int b = 0; b < B && !st; b++)
        for (int t = 0; t < batch.tgt_len[b]; t++) {
            const float *q = batch.align + ((size_t)t * B + b) * S, *a = attn + ((size_t)b * batch.T + t) * S;
            double any = 0, row = 0;
            for (int s = 0; s < S; s++) any += q[s];
            if (any == 0) continue;
            rows++;
            for (int s = 0; s < S; s++)
                row += cost == ALIGN_COST_MSE ? 0.5 * ((double)a[s] - q[s]) * ((double)a[s] - q[s])
                       : q[s] > 0 ? -(double)q[s] * log((double)a[s] + 1e-6) : 0.0;
            want += weight * row;
        }
    CHECK(rows > 0 && want > 0, "%s: the batch should have aligned rows", label);
    CHECK(fabs(guided.align_sum - want) <= 1e-4 * want, "%s: align_sum %.9g, from the scorer's attention %.9g",
          label, guided.align_sum, want);
    CHECK(plain.align_sum == 0 && fabs(guided.loss_sum - plain.loss_sum) <= 1e-9 * plain.loss_sum,
          "%s: the cross-entropy must not change (%.9g, %.9g)", label, plain.loss_sum, guided.loss_sum);
    CHECK(fabs(guided.loss - (guided.loss_sum + guided.align_sum) / guided.n_tokens) <= 1e-12,
          "%s: loss is not (loss_sum + align_sum) / tokens", label);
    seq2seq_scorer_free(sc);
    free(w);
    free(logp);
    free(attn);
    seq2seq_free(m);
}

/* Guided alignment (seq2seq_set_guided_alignment): gradient checks with the
 * alignment loss at a weight where it matters, both costs, every window
 * mode, several heads, attention dropout; and its value. */
static void guided_alignment_models(void) {
    const char *luong_dot[] = {"model.attention.score=dot"};
    check_config_full("guided ce, luong dot", luong_dot, 1, 12, 0, 1.0f, ALIGN_COST_CE);
    check_config_full("guided mse, luong dot", luong_dot, 1, 12, 0, 2.0f, ALIGN_COST_MSE);
    const char *local_p[] = {"model.attention.score=general", "model.attention.mode=local-p",
                             "model.attention.heads=2", "model.attention.dropout=0.3", "model.dropout=0.2"};
    check_config_full("guided ce, general local-p, 2 heads, attention dropout", local_p, 5, 12, 0, 1.0f,
                      ALIGN_COST_CE);
    const char *local_m[] = {"model.attention.style=bahdanau", "model.attention.score=additive",
                             "model.attention.mode=local-m", "model.attention.heads=3", "model.enc_hidden=4"};
    check_config_full("guided mse, bahdanau additive local-m, 3 heads", local_m, 5, 12, 0, 2.0f, ALIGN_COST_MSE);
    check_config_full("guided ce, bahdanau additive local-m, 3 heads", local_m, 5, 12, 0, 1.0f, ALIGN_COST_CE);
    const char *scaled[] = {"model.attention.score=scaled_dot", "model.attention.heads=2", "model.enc_layers=2",
                            "model.dec_layers=2", "model.residual=true"};
    check_config_full("guided mse, scaled dot, 2 heads, 2+2 residual", scaled, 5, 12, 0, 2.0f, ALIGN_COST_MSE);
    const char *concat[] = {"model.attention.score=additive", "model.attention.mode=local-p",
                            "model.bidirectional=false"};
    check_config_full("guided ce, concat local-p, unidirectional", concat, 3, 12, 0, 1.0f, ALIGN_COST_CE);

    guided_loss_value("guided ce value, luong dot", luong_dot, 1, ALIGN_COST_CE);
    guided_loss_value("guided mse value, luong dot", luong_dot, 1, ALIGN_COST_MSE);
    const char *heads[] = {"model.attention.score=general", "model.attention.heads=2"};
    guided_loss_value("guided ce value, general, 2 heads", heads, 2, ALIGN_COST_CE);
    const char *bahdanau[] = {"model.attention.style=bahdanau", "model.attention.score=additive",
                              "model.attention.mode=local-p", "model.attention.heads=3", "model.enc_hidden=4"};
    guided_loss_value("guided ce value, bahdanau local-p, 3 heads", bahdanau, 5, ALIGN_COST_CE);

    const char *none[] = {"model.attention.style=none"};
    ModelDims d;
    if (dims_for(none, 1, &d)) {
        ModelLimits lim = {2, 3, 3, 0, 0, 0, 0};
        Seq2Seq *m;
        if (seq2seq_create(be, &d, lim, &m) == NMT_OK) {
            CHECK(seq2seq_set_guided_alignment(m, ALIGN_COST_CE, 0.1f) == NMT_ERR_CONFIG,
                  "guided alignment without attention must be refused");
            seq2seq_free(m);
        }
    }
}

static void sweep(void) {
    const char *styles[] = {"luong", "bahdanau"};
    const char *scores[] = {"dot", "scaled_dot", "general", "additive"};
    const char *modes[] = {"global", "local-m", "local-p"};
    int count = 0;
    for (int st = 0; st < 2; st++)
        for (int sc = 0; sc < 4; sc++)
            for (int mo = 0; mo < 3; mo++)
                for (int heads = 1; heads <= 2; heads++)
                    for (int feed = 0; feed <= (st == 0); feed++)
                        for (int bidir = 0; bidir <= 1; bidir++) {
                            char s1[64], s2[64], s3[64], s4[64], s5[64], s6[64], s7[64], label[160];
                            snprintf(s1, sizeof s1, "model.attention.style=%s", styles[st]);
                            snprintf(s2, sizeof s2, "model.attention.score=%s", scores[sc]);
                            snprintf(s3, sizeof s3, "model.attention.mode=%s", modes[mo]);
                            snprintf(s4, sizeof s4, "model.attention.heads=%d", heads);
                            snprintf(s5, sizeof s5, "model.input_feed=%s", feed ? "true" : "false");
                            snprintf(s6, sizeof s6, "model.bidirectional=%s", bidir ? "true" : "false");
                            /* dot scores need equal query and key sizes; the others get K != H */
                            snprintf(s7, sizeof s7, "model.enc_hidden=%d", sc < 2 ? 6 : 4);
                            const char *sets[] = {s1, s2, s3, s4, s5, s6, s7};
                            snprintf(label, sizeof label, "%s %s %s heads=%d feed=%d bidir=%d", styles[st],
                                     scores[sc], modes[mo], heads, feed, bidir);
                            /* style bahdanau must not set input_feed explicitly */
                            int n = 7;
                            if (st == 1) {
                                sets[4] = s7;
                                n = 6;
                            }
                            check_config(label, sets, n, 6);
                            count++;
                        }
    CHECK_EQ_INT(count, 2 * 4 * 3 * 2 * 2 + 4 * 3 * 2 * 2);
}

static void special_models(void) {
    const char *none[] = {"model.attention.style=none", "model.enc_layers=2", "model.dec_layers=2"};
    check_config("none, 2+2 layers", none, 3, 12);
    const char *deep[] = {"model.enc_layers=2", "model.dec_layers=2", "model.bidirectional=true",
                          "model.attention.score=general", "model.enc_hidden=4"};
    check_config("luong general, 2+2 layers, bidirectional", deep, 5, 16);
    const char *deep_b[] = {"model.attention.style=bahdanau", "model.attention.score=additive",
                            "model.enc_layers=3", "model.dec_layers=2"};
    check_config("bahdanau additive, 3+2 layers", deep_b, 4, 12);
    const char *drop[] = {"model.dropout=0.3", "model.attention.dropout=0.2", "model.enc_layers=2",
                          "model.dec_layers=2", "model.attention.mode=local-p", "model.attention.heads=2"};
    check_config("dropout everywhere, local-p, 2 heads", drop, 6, 12);
    const char *drop_b[] = {"model.dropout=0.3", "model.attention.style=bahdanau",
                            "model.attention.score=additive", "model.dec_layers=2"};
    check_config("dropout, bahdanau", drop_b, 4, 12);
    const char *tied[] = {"model.emb_dim=6", "model.tie_embeddings=true", "model.bridge=zero"};
    check_config("tied embeddings, zero bridge", tied, 3, 16);
    /* word dropout: whole source and target embeddings dropped (and the
     * rest scaled); Bahdanau, whose W_c input holds w_t too; tied
     * embeddings, whose target table is also the output layer */
    const char *words[] = {"model.word_dropout_src=0.3", "model.word_dropout_tgt=0.3", "model.dropout=0.2"};
    check_config("word dropout, luong general", words, 3, 12);
    const char *words_b[] = {"model.word_dropout_src=0.4", "model.word_dropout_tgt=0.4",
                             "model.attention.style=bahdanau", "model.attention.score=additive"};
    check_config("word dropout, bahdanau", words_b, 4, 12);
    const char *words_tied[] = {"model.word_dropout_tgt=0.5", "model.emb_dim=6", "model.tie_embeddings=true"};
    check_config("target word dropout, tied embeddings", words_tied, 3, 12);
    /* shared embeddings: one matrix that the source, the decoder's input
     * and (tied) the output layer read, its gradient the sum of all */
    const char *shared[] = {"model.share_embeddings=true", "model.attention.score=general"};
    check_config("shared embeddings, luong general", shared, 2, 16);
    const char *shared_all[] = {"model.share_embeddings=true", "model.tie_embeddings=true", "model.emb_dim=6",
                                "model.attention.style=bahdanau", "model.attention.score=additive",
                                "model.word_dropout_src=0.3", "model.dropout=0.2"};
    check_config("shared and tied embeddings, bahdanau, word dropout", shared_all, 7, 16);
    const char *smooth0[] = {"train.label_smoothing=0", "model.attention.score=additive"};
    check_config("no label smoothing", smooth0, 2, 12);
}

/* model.residual: layers above the first add their input to their output;
 * deep stacks with every style, the top decoder output feeding attention
 * (Luong's query, Bahdanau's next query from the start state on), the
 * output layer without attention, dropout on the layer inputs (the
 * residual path itself is not dropped), a learned bridge from the top
 * encoder states (not the residual output) and a bidirectional or not
 * first layer. */
static void residual_models(void) {
    const char *luong[] = {"model.residual=true", "model.enc_layers=3", "model.dec_layers=3",
                           "model.enc_hidden=4", "model.attention.score=general"};
    check_config("residual, luong general, 3+3 layers, bidirectional", luong, 5, 12);
    const char *bahdanau[] = {"model.residual=true", "model.attention.style=bahdanau",
                              "model.attention.score=additive", "model.enc_layers=2", "model.dec_layers=3",
                              "model.bidirectional=false"};
    check_config("residual, bahdanau additive, 2+3 layers, unidirectional", bahdanau, 6, 12);
    const char *none[] = {"model.residual=true", "model.attention.style=none", "model.enc_layers=2",
                          "model.dec_layers=2"};
    check_config("residual, none, 2+2 layers", none, 4, 12);
    const char *drop[] = {"model.residual=true", "model.dropout=0.3", "model.enc_layers=3",
                          "model.dec_layers=2", "model.attention.mode=local-p", "model.attention.heads=2"};
    check_config("residual, dropout, local-p, 2 heads, 3+2 layers", drop, 6, 12);
    const char *drop_b[] = {"model.residual=true", "model.dropout=0.3", "model.attention.style=bahdanau",
                            "model.attention.score=general", "model.enc_layers=2", "model.dec_layers=2",
                            "model.bridge=zero"};
    check_config("residual, dropout, bahdanau general, zero bridge", drop_b, 7, 12);
    /* one layer each: nothing to connect, the model of residual=false */
    const char *one[] = {"model.residual=true", "model.bidirectional=false"};
    check_config("residual, 1+1 layers", one, 2, 12);
}

/* model.layer_norm: every LSTM normalises its input and recurrent
 * products (with gains); the encoder's layers (both directions) run their
 * recurrence step by step in lstm.c, the decoder's layers step by step
 * with the products kept for backward; with residual connections, dropout
 * and each attention style. */
static void layer_norm_models(void) {
    const char *luong[] = {"model.layer_norm=true", "model.enc_layers=2", "model.dec_layers=2",
                           "model.enc_hidden=4", "model.attention.score=general"};
    check_config("layer norm, luong general, 2+2 layers, bidirectional", luong, 5, 12);
    const char *bahdanau[] = {"model.layer_norm=true", "model.attention.style=bahdanau",
                              "model.attention.score=additive", "model.enc_layers=2", "model.dec_layers=2",
                              "model.bidirectional=false", "model.residual=true"};
    check_config("layer norm, residual, bahdanau additive, 2+2 layers, unidirectional", bahdanau, 7, 12);
    const char *none[] = {"model.layer_norm=true", "model.attention.style=none"};
    check_config("layer norm, none, 1+1 layers", none, 2, 12);
    const char *drop[] = {"model.layer_norm=true", "model.dropout=0.3", "model.enc_layers=2",
                          "model.dec_layers=2", "model.attention.mode=local-p", "model.attention.heads=2",
                          "model.residual=true"};
    check_config("layer norm, residual, dropout, local-p, 2 heads, 2+2 layers", drop, 7, 12);
    const char *zero[] = {"model.layer_norm=true", "model.bridge=zero", "model.attention.score=dot",
                          "model.input_feed=false"};
    check_config("layer norm, zero bridge, luong dot, no input feeding", zero, 4, 12);
}

int main(void) {
    be = cpu_backend_create(1);
    if (!be) {
        CHECK(0, "no CPU backend");
        return test_summary("test_model_grad");
    }
    special_models();
    residual_models();
    layer_norm_models();
    guided_alignment_models();
    output_chunks();
    accumulations();
    memory_bounds();
    sweep();
    be->destroy(be);
    return test_summary("test_model_grad");
}
