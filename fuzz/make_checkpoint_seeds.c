/* make_checkpoint_seeds.c: writes the seed corpus of fuzz/fuzz_checkpoint.c
 * into the folder given as argv[1] (`make fuzz-seeds` puts them in
 * tests/fuzz/fuzz_checkpoint/): four tiny valid checkpoints (word tokenizers
 * and SGD; SentencePiece tokenizers and Adam moments; the same with training
 * weights beside their moving average, format 2; and with chrF in the
 * validation records too, format 3) and a few broken ones
 * (empty, bad magic, newer version, truncated, checksum mismatch). Each is a
 * few kilobytes at most. The sentences are made up here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "data/tokenizer.h"
#include "train/checkpoint.h"

static const char *const sentences[] = {
    "a small red house stands by the river .",
    "two dogs run across the green field .",
    "the old man reads a book in the park .",
    "ein kleines rotes Haus steht am Fluss .",
    "zwei Hunde laufen über die grüne Wiese .",
    "der alte Mann liest ein Buch im Park .",
};

typedef struct {
    int next;
} Source;

static int next_sentence(void *ctx, const char **line, size_t *len) {
    Source *s = ctx;
    if (s->next >= (int)(sizeof sentences / sizeof *sentences)) return 0;
    *line = sentences[s->next++];
    *len = strlen(*line);
    return 1;
}

static void die(const char *what) {
    fprintf(stderr, "make_checkpoint_seeds: %s: %s\n", what, nmt_error_message());
    exit(1);
}

static void tokenizer_bytes(TokenizerKind kind, uint8_t **bytes, size_t *n) {
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, kind);
    if (kind == TOKENIZER_SPM) {
        spec.vocab_size = 40;
        spec.spm_hard_vocab_limit = 0;
        spec.spm_normalization = "identity"; /* no 240 KB charsmap in the seed */
    }
    Source src = {0};
    Tokenizer *t = NULL;
    if (tokenizer_train(&spec, next_sentence, &src, &t) != NMT_OK) die("training a tokenizer");
    if (tokenizer_serialize(t, bytes, n) != NMT_OK) die("serializing a tokenizer");
    tokenizer_free(t);
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) die(path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n + 1);
    if (!b || fread(b, 1, *n, f) != *n) die(path);
    fclose(f);
    return b;
}

static void write_bytes(const char *dir, const char *name, const uint8_t *b, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) die(path);
    printf("%s: %zu bytes\n", path, n);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_checkpoint_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    nmt_log_quiet(1);

    Config cfg;
    const char *json = "{\"data\": {\"tokenizer\": \"word\"}, \"model\": {\"emb_dim\": 2, "
                       "\"hidden\": 4, \"enc_layers\": 1, \"dec_layers\": 1}}";
    if (config_load_string(json, "seed.json", "/data", NULL, 0, &cfg) != NMT_OK) die("config");
    char *config_text = config_to_json(&cfg);
    config_free(&cfg);

    CheckpointTensor tensors[3] = {{"src_emb", 1, 3, 2}, {"enc.W_ih", 2, 2, 3}, {"out_b", 1, 1, 4}};
    enum { N_FLOATS = 6 + 12 + 4 };
    float params[N_FLOATS], m[N_FLOATS], v[N_FLOATS];
    for (int i = 0; i < N_FLOATS; i++) {
        params[i] = (float)(i % 7) * 0.125f - 0.25f;
        m[i] = (float)i * 0.001f;
        v[i] = (float)(i + 1) * 1e-6f;
    }
    ValidRecord history[2] = {{100, 55.5, -1.0, NAN}, {200, 31.25, 4.5, NAN}}; /* no chrF: format 1 */

    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.config_json = config_text;
    tokenizer_bytes(TOKENIZER_WORD, &ck.src_tok, &ck.src_tok_len);
    tokenizer_bytes(TOKENIZER_WORD, &ck.tgt_tok, &ck.tgt_tok_len);
    ck.n_tensors = 3;
    ck.tensors = tensors;
    ck.n_floats = N_FLOATS;
    ck.params = params;
    ck.optimizer = CFG_OPT_SGD;
    ck.state = (TrainState){.step = 200, .epoch = 1, .batch_index = 7, .rng_state = 12345,
                            .rng_inc = 777, .lr_scale = 0.5, .best_metric = 31.25,
                            .best_step = 200, .tokens_seen = 4096, .seconds = 1.5};
    ck.n_history = 2;
    ck.history = history;

    char path[1024];
    snprintf(path, sizeof path, "%s/valid-word-sgd.nmt", dir);
    if (checkpoint_save(&ck, path) != NMT_OK) die(path);
    size_t n;
    uint8_t *valid = read_all(path, &n);
    printf("%s: %zu bytes\n", path, n);

    /* SentencePiece tokenizers and Adam moments */
    nmt_free(ck.src_tok);
    nmt_free(ck.tgt_tok);
    tokenizer_bytes(TOKENIZER_SPM, &ck.src_tok, &ck.src_tok_len);
    tokenizer_bytes(TOKENIZER_SPM, &ck.tgt_tok, &ck.tgt_tok_len);
    ck.optimizer = CFG_OPT_ADAM;
    ck.adam_m = m;
    ck.adam_v = v;
    snprintf(path, sizeof path, "%s/valid-spm-adam.nmt", dir);
    if (checkpoint_save(&ck, path) != NMT_OK) die(path);
    size_t n2;
    free(read_all(path, &n2));
    printf("%s: %zu bytes\n", path, n2);

    /* format 2: the training weights too (train.ema_decay) */
    float train_params[N_FLOATS];
    for (int i = 0; i < N_FLOATS; i++) train_params[i] = params[i] * 0.75f + 0.01f;
    ck.train_params = train_params;
    snprintf(path, sizeof path, "%s/valid-spm-adam-ema.nmt", dir);
    if (checkpoint_save(&ck, path) != NMT_OK) die(path);
    free(read_all(path, &n2));
    printf("%s: %zu bytes\n", path, n2);

    /* format 3: validation records with chrF (and the training weights) */
    history[0].chrf = 38.5;
    history[1].chrf = 51.25;
    snprintf(path, sizeof path, "%s/valid-spm-adam-ema-chrf.nmt", dir);
    if (checkpoint_save(&ck, path) != NMT_OK) die(path);
    free(read_all(path, &n2));
    printf("%s: %zu bytes\n", path, n2);
    ck.train_params = NULL;

    /* broken ones, from the first */
    write_bytes(dir, "invalid-empty.nmt", valid, 0);
    uint8_t *b = malloc(n);
    memcpy(b, valid, n);
    b[0] = 'X';
    write_bytes(dir, "invalid-magic.nmt", b, n);
    memcpy(b, valid, n);
    b[8] = CHECKPOINT_VERSION + 1; /* a format newer than this nmt reads */
    write_bytes(dir, "invalid-newer.nmt", b, n);
    write_bytes(dir, "invalid-truncated.nmt", valid, n - 100);
    memcpy(b, valid, n);
    b[n / 2] ^= 0x40;
    write_bytes(dir, "invalid-checksum.nmt", b, n);
    free(b);
    free(valid);

    nmt_free(ck.src_tok);
    nmt_free(ck.tgt_tok);
    nmt_free(config_text);
    return 0;
}
