/* test_checkpoint_average.c: tests of src/train/checkpoint_average.c: the
 * weights are the element-wise mean (checked against a double-precision sum
 * of values that are not exact in float), one input gives its own weights
 * bit for bit, everything else comes from the input with the highest step
 * (not the first or the last given), optimizer moments are left out, and
 * inputs whose tensor names, shapes, parameter count or tokenizers differ are
 * refused naming the file and the tensor. */
#include <stdint.h>

#include "config.h"
#include "test_util.h"
#include "train/checkpoint_average.h"

enum { N_FLOATS = 2 * 3 + 4 };

static CheckpointTensor g_tensors[2] = {{"enc.w", 1, 2, 3}, {"dec.b", 1, 1, 4}};
static uint8_t g_src_tok[] = {1, 2, 3}, g_tgt_tok[] = {4, 5, 6, 7};

/* A checkpoint of the example model with weights base + i * scale; its own
 * arrays (free with free_example). */
static Checkpoint example(int64_t step, float base, float scale) {
    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    char json[64];
    snprintf(json, sizeof json, "{\"step\": %lld}", (long long)step);
    ck.config_json = strdup(json);
    ck.src_tok = g_src_tok;
    ck.src_tok_len = sizeof g_src_tok;
    ck.tgt_tok = g_tgt_tok;
    ck.tgt_tok_len = sizeof g_tgt_tok;
    ck.n_tensors = 2;
    ck.tensors = malloc(sizeof g_tensors);
    memcpy(ck.tensors, g_tensors, sizeof g_tensors);
    ck.n_floats = N_FLOATS;
    ck.params = malloc(N_FLOATS * sizeof(float));
    ck.adam_m = calloc(N_FLOATS, sizeof(float));
    ck.adam_v = calloc(N_FLOATS, sizeof(float));
    for (int i = 0; i < N_FLOATS; i++) ck.params[i] = base + (float)i * scale;
    ck.optimizer = CFG_OPT_ADAM;
    ck.state.step = step;
    ck.state.lr_scale = 1.0 / (double)(step + 1);
    ck.n_history = 1;
    ck.history = malloc(sizeof *ck.history);
    ck.history[0] = (ValidRecord){step, 10.0 + (double)step, 20.0, 30.0};
    return ck;
}

static void free_example(Checkpoint *ck) {
    free(ck->config_json);
    free(ck->tensors);
    free(ck->params);
    free(ck->adam_m);
    free(ck->adam_v);
    free(ck->history);
}

static const char *const g_paths[] = {"a.nmt", "b.nmt", "c.nmt"};

static void test_mean_and_newest(void) {
    Checkpoint in[3] = {example(200, 0.1f, 0.3f), example(300, -1.7f, 0.01f), example(100, 3.3f, -0.7f)};
    Checkpoint out;
    NmtStatus st = checkpoint_average(in, g_paths, 3, &out);
    CHECK(st == NMT_OK, "average: %s", nmt_error_message());
    if (st) return;
    CHECK_EQ_INT(out.n_floats, N_FLOATS);
    int exact = 1;
    for (int i = 0; i < N_FLOATS; i++) {
        double want = ((double)in[0].params[i] + in[1].params[i] + in[2].params[i]) / 3.0;
        if (out.params[i] != (float)want) exact = 0;
    }
    CHECK(exact, "weights are not the mean of the three (rounded once to float)");
    CHECK_EQ_STR(out.config_json, "{\"step\": 300}");
    CHECK_EQ_INT(out.state.step, 300);
    CHECK(out.state.lr_scale == 1.0 / 301.0, "training state should be the newest input's");
    CHECK(out.n_history == 1 && out.history[0].step == 300, "history should be the newest input's");
    CHECK(out.adam_m == NULL && out.adam_v == NULL, "optimizer moments should be left out");
    CHECK_EQ_INT(out.optimizer, CFG_OPT_ADAM);
    CHECK(out.n_tensors == 2 && !strcmp(out.tensors[1].name, "dec.b") && out.tensors[1].cols == 4,
          "tensor table copied");
    CHECK(out.src_tok_len == 3 && out.src_tok != g_src_tok && !memcmp(out.src_tok, g_src_tok, 3),
          "source tokenizer copied (own memory)");
    CHECK(out.tgt_tok_len == 4 && !memcmp(out.tgt_tok, g_tgt_tok, 4), "target tokenizer copied");
    checkpoint_free(&out);
    for (int k = 0; k < 3; k++) free_example(&in[k]);
}

static void test_single_is_identity(void) {
    Checkpoint in = example(7, 0.123456789f, 1e-3f);
    Checkpoint out;
    CHECK(checkpoint_average(&in, g_paths, 1, &out) == NMT_OK, "average of one: %s", nmt_error_message());
    CHECK(out.params && !memcmp(out.params, in.params, N_FLOATS * sizeof(float)),
          "the average of one checkpoint must be its weights bit for bit");
    checkpoint_free(&out);
    free_example(&in);
}

static void expect_refused(Checkpoint *b, const char *needle, const char *what) {
    Checkpoint in[2] = {example(1, 0, 1), *b};
    Checkpoint out;
    NmtStatus st = checkpoint_average(in, g_paths, 2, &out);
    CHECK(st == NMT_ERR_FORMAT, "%s: should be refused", what);
    if (st) {
        CHECK_CONTAINS(nmt_error_message(), "b.nmt");
        CHECK_CONTAINS(nmt_error_message(), needle);
    }
    CHECK(out.params == NULL && out.config_json == NULL, "%s: out should stay zeroed", what);
    free_example(&in[0]);
}

static void test_refusals(void) {
    Checkpoint b = example(2, 0, 1);
    strcpy(b.tensors[1].name, "dec.c");
    expect_refused(&b, "tensor 1 (dec.c)", "another tensor name");
    free_example(&b);
    b = example(2, 0, 1);
    b.tensors[0].rows = 3, b.tensors[0].cols = 2;
    expect_refused(&b, "tensor 0 (enc.w)", "another shape");
    free_example(&b);
    b = example(2, 0, 1);
    b.n_floats = N_FLOATS - 1;
    expect_refused(&b, "parameter layout", "another parameter count");
    free_example(&b);
    b = example(2, 0, 1);
    static uint8_t other_tok[] = {4, 5, 6, 8};
    b.tgt_tok = other_tok;
    expect_refused(&b, "target tokenizer", "another target tokenizer");
    free_example(&b);
    Checkpoint out;
    CHECK(checkpoint_average(NULL, g_paths, 0, &out) == NMT_ERR_USAGE, "no input should be a usage error");
}

/* A checkpoint given twice (best.nmt and step-N.nmt of one step) is refused
 * naming both; the same step with other weights, or the same weights at
 * another step, is not a repeat. */
static void test_repeats(void) {
    Checkpoint in[3] = {example(100, 0.5f, 1.0f), example(200, 0.25f, 2.0f), example(200, 0.25f, 2.0f)};
    Checkpoint out;
    NmtStatus st = checkpoint_average(in, g_paths, 3, &out);
    CHECK(st == NMT_ERR_USAGE, "c.nmt repeats b.nmt: status %d", st);
    if (st) CHECK_CONTAINS(nmt_error_message(), "c.nmt: the same checkpoint as b.nmt (step 200");
    CHECK(out.params == NULL, "out should stay zeroed");
    in[2].params[N_FLOATS - 1] += 1.0f; /* the same step, another weight */
    st = checkpoint_average(in, g_paths, 3, &out);
    CHECK(st == NMT_OK, "the same step with other weights: %s", nmt_error_message());
    checkpoint_free(&out);
    in[2].params[N_FLOATS - 1] -= 1.0f;
    in[2].state.step = 300; /* the same weights, another step */
    st = checkpoint_average(in, g_paths, 3, &out);
    CHECK(st == NMT_OK, "the same weights at another step: %s", nmt_error_message());
    checkpoint_free(&out);
    for (int k = 0; k < 3; k++) free_example(&in[k]);
}

int main(void) {
    test_mean_and_newest();
    test_single_is_identity();
    test_refusals();
    test_repeats();
    return test_summary("test_checkpoint_average");
}
