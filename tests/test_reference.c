/* test_reference.c: the C model against the PyTorch reference. Each JSON
 * file of tests/fixtures/reference (written by scripts/reference.py, see
 * docs/reference.md) holds a tiny model's weights, one padded batch, the
 * logits, the loss, every gradient and the losses of 5 Adam steps, computed
 * in float64 by PyTorch autograd. The C float32 model must agree within a
 * relative error of 1e-4. */
#include <cJSON.h>
#include <glob.h>
#include <math.h>

#include "backend.h"
#include "config.h"
#include "fileio.h"
#include "model/seq2seq.h"
#include "test_util.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures/reference"
#endif

static Backend *be;

/* Reads a JSON number array into a new float (or int) array of n values. */
static float *floats(const cJSON *arr, int *n) {
    *n = cJSON_GetArraySize(arr);
    float *out = nmt_malloc((size_t)(*n ? *n : 1) * sizeof(float));
    int i = 0;
    for (const cJSON *x = arr ? arr->child : NULL; x; x = x->next) out[i++] = (float)x->valuedouble;
    return out;
}
static int32_t *ints(const cJSON *arr, int *n) {
    *n = cJSON_GetArraySize(arr);
    int32_t *out = nmt_malloc((size_t)(*n ? *n : 1) * sizeof(int32_t));
    int i = 0;
    for (const cJSON *x = arr ? arr->child : NULL; x; x = x->next) out[i++] = (int32_t)x->valuedouble;
    return out;
}
static double num(const cJSON *obj, const char *key) {
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* Relative error of a against reference b: ||a - b|| / ||b|| (max-norm). */
static double rel_err(const float *a, const double *b, int n) {
    double diff = 0, scale = 0;
    for (int i = 0; i < n; i++) {
        diff = fmax(diff, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? diff / scale : diff;
}
static double *doubles(const cJSON *arr, int *n) {
    *n = cJSON_GetArraySize(arr);
    double *out = nmt_malloc((size_t)(*n ? *n : 1) * sizeof(double));
    int i = 0;
    for (const cJSON *x = arr ? arr->child : NULL; x; x = x->next) out[i++] = x->valuedouble;
    return out;
}

static void check_fixture(const char *path) {
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len)) {
        CHECK(0, "%s", nmt_error_message());
        return;
    }
    cJSON *root = cJSON_Parse(text);
    nmt_free(text);
    CHECK(root != NULL, "%s: not JSON", path);
    if (!root) return;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    CHECK_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(root, "format")), "nmt-reference");
    CHECK_EQ_INT((int)num(root, "version"), 1);
    char *cfg_json = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "config"));
    Config cfg;
    NmtStatus st = config_load_string(cfg_json, name, "/", NULL, 0, &cfg);
    free(cfg_json);
    CHECK(st == NMT_OK, "%s: config: %s", name, nmt_error_message());
    ModelDims d;
    if (!st) st = model_dims_from_config(&cfg, (int)num(root, "src_vocab"), (int)num(root, "tgt_vocab"), &d);
    if (st) {
        cJSON_Delete(root);
        return;
    }
    const cJSON *jb = cJSON_GetObjectItem(root, "batch");
    int B = (int)num(jb, "B"), S = (int)num(jb, "S"), T = (int)num(jb, "T"), n;
    int32_t *src = ints(cJSON_GetObjectItem(jb, "src"), &n);
    int32_t *tgt_in = ints(cJSON_GetObjectItem(jb, "tgt_in"), &n);
    int32_t *tgt_out = ints(cJSON_GetObjectItem(jb, "tgt_out"), &n);
    int32_t *src_len32 = ints(cJSON_GetObjectItem(jb, "src_len"), &n);
    int src_len[64], tgt_len[64];
    int64_t pair[64];
    for (int b = 0; b < B; b++) {
        src_len[b] = src_len32[b];
        pair[b] = b;
        tgt_len[b] = 0;
        for (int t = 0; t < T; t++) tgt_len[b] += tgt_out[t * B + b] != NMT_PAD_ID;
    }
    Batch batch = {B, S, T, src, src_len, tgt_in, tgt_out, tgt_len, pair, 0, 0, NULL};

    Seq2Seq *m;
    ModelLimits lim = {B, S, T, 0, 0, 0, 0};
    CHECK_EQ_INT(seq2seq_create(be, &d, lim, &m), NMT_OK);
    const ParamLayout *layout = seq2seq_layout(m);
    const cJSON *params = cJSON_GetObjectItem(root, "params");
    CHECK(cJSON_GetArraySize(params) == layout->n, "%s: fixture has %d parameters, the model %d", name,
          cJSON_GetArraySize(params), layout->n);
    float *host = nmt_calloc(layout->total, sizeof(float));
    int i = 0;
    for (const cJSON *p = params ? params->child : NULL; p && i < layout->n; p = p->next, i++) {
        const ParamInfo *info = &layout->info[i];
        const char *pname = cJSON_GetStringValue(cJSON_GetObjectItem(p, "name"));
        CHECK(pname && !strcmp(pname, info->name), "%s: parameter %d is %s in the fixture, %s in the model",
              name, i, pname ? pname : "?", info->name);
        float *data = floats(cJSON_GetObjectItem(p, "data"), &n);
        CHECK(n == (int)info->size, "%s: %s has %d values, the model %zu", name, info->name, n, info->size);
        if (n == (int)info->size) memcpy(host + info->offset, data, info->size * sizeof(float));
        nmt_free(data);
    }
    be->upload(be, seq2seq_params(m), host, layout->total * sizeof(float));

    /* logits and loss (no gradient) */
    ModelLoss loss;
    seq2seq_forward(m, &batch, false, 0, &loss);
    int V = d.V_t;
    float *logits = nmt_malloc((size_t)T * B * V * sizeof(float));
    seq2seq_download_logits(m, logits);
    double *ref_logits = doubles(cJSON_GetObjectItem(root, "logits"), &n);
    CHECK_EQ_INT(n, T * B * V);
    if (n == T * B * V) {
        double e = rel_err(logits, ref_logits, n);
        CHECK(e < 1e-4, "%s: logits relative error %.3g", name, e);
    }
    double ref_loss = num(root, "loss");
    CHECK(fabs(loss.loss - ref_loss) < 1e-4 * fabs(ref_loss), "%s: loss %.8f, reference %.8f", name, loss.loss, ref_loss);
    CHECK_EQ_INT(loss.n_tokens, (int64_t)num(root, "n_tokens"));

    /* every gradient */
    seq2seq_zero_grads(m);
    seq2seq_forward(m, &batch, true, 0, &loss);
    seq2seq_backward(m);
    float *grads = nmt_malloc(layout->total * sizeof(float));
    be->download(be, grads, seq2seq_grads(m), layout->total * sizeof(float));
    const cJSON *jg = cJSON_GetObjectItem(root, "grads");
    i = 0;
    double worst = 0;
    const char *worst_name = "";
    for (const cJSON *g = jg ? jg->child : NULL; g && i < layout->n; g = g->next, i++) {
        const ParamInfo *info = &layout->info[i];
        double *ref = doubles(cJSON_GetObjectItem(g, "data"), &n);
        if (n == (int)info->size) {
            double e = rel_err(grads + info->offset, ref, n);
            CHECK(e < 1e-4, "%s: gradient of %s: relative error %.3g", name, info->name, e);
            if (e > worst) worst = e, worst_name = info->name;
        } else {
            CHECK(0, "%s: gradient of %s has %d values", name, info->name, n);
        }
        nmt_free(ref);
    }
    CHECK_EQ_INT(i, layout->n);

    /* five Adam steps on the same batch */
    const cJSON *jt = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "config"), "train");
    float lr = (float)num(jt, "lr"), b1 = (float)num(jt, "adam_beta1"), b2 = (float)num(jt, "adam_beta2"),
          eps = (float)num(jt, "adam_eps");
    float *mom = be->alloc(be, layout->total * sizeof(float)), *vel = be->alloc(be, layout->total * sizeof(float));
    be->upload(be, seq2seq_params(m), host, layout->total * sizeof(float));
    double *ref_steps = doubles(cJSON_GetObjectItem(root, "adam_losses"), &n);
    /* the loss before the first update, then after each of 5 updates */
    CHECK_EQ_INT(n, 6);
    for (int k = 0; k < n; k++) {
        seq2seq_zero_grads(m);
        seq2seq_forward(m, &batch, true, 0, &loss);
        CHECK(fabs(loss.loss - ref_steps[k]) < 1e-4 * fabs(ref_steps[k]), "%s: loss after %d Adam steps %.8f, reference %.8f",
              name, k, loss.loss, ref_steps[k]);
        if (k + 1 == n) break;
        seq2seq_backward(m);
        be->adam_update(be, seq2seq_params(m), seq2seq_grads(m), mom, vel, layout->total, lr, b1, b2, eps, k + 1);
    }
    printf("%s: loss %.6f, after 5 Adam steps %.6f (reference %.6f); worst gradient error %.2g (%s)\n", name,
           ref_loss, loss.loss, ref_steps[n - 1], worst, worst_name);
    be->release(be, mom);
    be->release(be, vel);
    nmt_free(ref_steps);
    nmt_free(grads);
    nmt_free(ref_logits);
    nmt_free(logits);
    nmt_free(host);
    seq2seq_free(m);
    nmt_free(src);
    nmt_free(tgt_in);
    nmt_free(tgt_out);
    nmt_free(src_len32);
    config_free(&cfg);
    cJSON_Delete(root);
}

int main(void) {
    be = cpu_backend_create(1);
    glob_t g;
    int found = glob(FIXTURE_DIR "/*.json", 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    CHECK(found >= 3, "expected at least 3 fixtures in " FIXTURE_DIR ", found %d", found);
    for (int i = 0; i < found; i++) check_fixture(g.gl_pathv[i]);
    if (found) globfree(&g);
    be->destroy(be);
    return test_summary("test_reference");
}
