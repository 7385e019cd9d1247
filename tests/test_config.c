/* test_config.c: the JSON config loader: defaults, good files, every class
 * of bad input (syntax with line and column, unknown keys, wrong types,
 * ranges, contradictions), --set overrides, path resolution, the resolved
 * JSON round trip and the resume comparison. */
#include "config.h"
#include "test_util.h"

/* Loads `json` from a file in the temp dir; returns the status. */
static NmtStatus load_text(const char *json, const char *const *sets, int n_sets, Config *cfg) {
    const char *path = test_write_file(test_tmpdir(), "cfg.json", json, strlen(json));
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", path);
    return config_load(copy, sets, n_sets, cfg);
}

/* Expects loading to fail with `status` and a message containing `needle`. */
static void expect_error(const char *json, const char *const *sets, int n_sets, NmtStatus status,
                         const char *needle) {
    Config cfg;
    NmtStatus st = load_text(json, sets, n_sets, &cfg);
    CHECK(st == status, "loading %s: status %d, expected %d (%s)", json, st, status, nmt_error_message());
    CHECK_CONTAINS(nmt_error_message(), needle);
    if (st == NMT_OK) config_free(&cfg);
}

static void test_defaults(void) {
    Config cfg;
    CHECK_EQ_INT(load_text("{}", NULL, 0, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.model.hidden, 512);
    CHECK_EQ_INT(cfg.model.emb_dim, 256);
    CHECK_EQ_INT(cfg.model.enc_hidden, 512); /* 0 resolves to hidden */
    CHECK_EQ_INT(cfg.model.attention.style, ATTN_STYLE_LUONG);
    CHECK_EQ_INT(cfg.model.attention.score, ATTN_SCORE_GENERAL);
    CHECK_EQ_INT(cfg.model.attention.window, 10);
    CHECK_EQ_INT(cfg.data.spm_vocab_size, 8000);
    CHECK_EQ_INT(cfg.data.max_len, 80);
    CHECK_EQ_INT(cfg.data.tokenizer, CFG_TOKENIZER_SPM);
    CHECK_NEAR(cfg.train.lr, 0.001, 1e-12);
    CHECK_NEAR(cfg.model.attention.dropout, 0.0, 0);
    CHECK(cfg.model.input_feed, "input_feed defaults to true for luong");
    CHECK_EQ_STR(cfg.data.train_src, "");
    /* default relative paths resolve against the config's folder */
    char expected[1024];
    char *dir = realpath(test_tmpdir(), NULL);
    snprintf(expected, sizeof expected, "%s/cache", dir);
    CHECK_EQ_STR(cfg.data.cache_dir, expected);
    free(dir);
    config_free(&cfg);
}

static void test_good_file(void) {
    const char *json =
        "{\"data\": {\"train_src\": \"train.de.gz\", \"train_tgt\": \"/abs/train.en\",\n"
        "  \"tokenizer\": \"word\", \"max_len\": 50},\n"
        " \"model\": {\"hidden\": 64, \"emb_dim\": 32, \"enc_hidden\": 48, \"bidirectional\": true,\n"
        "  \"attention\": {\"style\": \"bahdanau\", \"score\": \"auto\", \"mode\": \"local-p\",\n"
        "                 \"window\": 3, \"heads\": 2, \"dropout\": 0.1}},\n"
        " \"train\": {\"optimizer\": \"sgd\", \"lr\": 1, \"batch_tokens\": 2000, \"seed\": 7},\n"
        " \"decode\": {\"beam\": 4, \"length_penalty\": 1.0}}";
    Config cfg;
    NmtStatus st = load_text(json, NULL, 0, &cfg);
    CHECK(st == NMT_OK, "good file: %s", nmt_error_message());
    if (st) return;
    CHECK_EQ_INT(cfg.data.tokenizer, CFG_TOKENIZER_WORD);
    CHECK_EQ_INT(cfg.data.max_len, 50);
    CHECK_EQ_INT(cfg.model.hidden, 64);
    CHECK_EQ_INT(cfg.model.enc_hidden, 48);
    CHECK_EQ_INT(cfg.model.attention.style, ATTN_STYLE_BAHDANAU);
    CHECK_EQ_INT(cfg.model.attention.score, ATTN_SCORE_ADDITIVE); /* auto, sizes differ */
    CHECK_EQ_INT(cfg.model.attention.mode, ATTN_MODE_LOCAL_P);
    CHECK_EQ_INT(cfg.model.attention.heads, 2);
    CHECK_NEAR(cfg.model.attention.dropout, 0.1, 1e-12);
    CHECK(!cfg.model.input_feed, "input feeding off by default for bahdanau");
    CHECK_EQ_INT(cfg.train.optimizer, CFG_OPT_SGD);
    CHECK_EQ_INT(cfg.train.batch_tokens, 2000);
    CHECK_EQ_INT(cfg.train.seed, 7);
    CHECK_EQ_INT(cfg.decode.beam, 4);
    CHECK_EQ_STR(cfg.data.train_tgt, "/abs/train.en");
    CHECK(strstr(cfg.data.train_src, "/train.de.gz") && cfg.data.train_src[0] == '/',
          "relative path resolved: %s", cfg.data.train_src);
    config_free(&cfg);

    /* auto with equal sizes is dot */
    CHECK_EQ_INT(load_text("{\"model\": {\"attention\": {\"score\": \"auto\"}}}", NULL, 0, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.model.attention.score, ATTN_SCORE_DOT);
    config_free(&cfg);
    /* a UTF-8 BOM in front of the file is accepted */
    CHECK_EQ_INT(load_text("\xEF\xBB\xBF{\"model\": {\"hidden\": 8}}", NULL, 0, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.model.hidden, 8);
    config_free(&cfg);
}

static void test_bad_files(void) {
    /* syntax errors give line and column */
    expect_error("{\"model\": {\n  \"hidden\": 256,\n  \"emb_dim\" 3}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json:3:13: JSON syntax error");
    expect_error("{\"model\": {\"hidden\": 256,}}", NULL, 0, NMT_ERR_CONFIG, ":1:");
    expect_error("", NULL, 0, NMT_ERR_CONFIG, "JSON syntax error");
    expect_error("[1, 2]", NULL, 0, NMT_ERR_CONFIG, "must be a JSON object");
    expect_error("{} {}", NULL, 0, NMT_ERR_CONFIG, ":1:4: JSON syntax error");
    /* unknown keys name the full path and suggest */
    expect_error("{\"model\": {\"atention\": {}}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.atention: unknown key (did you mean model.attention?)");
    expect_error("{\"model\": {\"attention\": {\"widnow\": 3}}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.attention.widnow: unknown key (did you mean model.attention.window?)");
    expect_error("{\"zzzzzzzzzz\": 1}", NULL, 0, NMT_ERR_CONFIG, "zzzzzzzzzz: unknown key");
    expect_error("{\"model\": {\"hidden\": 1, \"hidden\": 2}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.hidden: duplicate key");
    /* wrong types */
    expect_error("{\"model\": {\"hidden\": \"big\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.hidden: expected an integer, got a string");
    expect_error("{\"model\": {\"hidden\": 2.5}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.hidden: expected an integer, got 2.5");
    expect_error("{\"model\": {\"bidirectional\": 1}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.bidirectional: expected true or false, got a number");
    expect_error("{\"model\": 3}", NULL, 0, NMT_ERR_CONFIG, "model: expected an object, got a number");
    expect_error("{\"data\": {\"train_src\": null}}", NULL, 0, NMT_ERR_CONFIG,
                 "data.train_src: expected a string, got null");
    expect_error("{\"train\": {\"lr\": [1]}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.lr: expected a number, got an array");
    /* enum values */
    expect_error("{\"model\": {\"attention\": {\"style\": \"luong2\"}}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.attention.style: must be one of luong, bahdanau, none, got \"luong2\"");
    expect_error("{\"model\": {\"attention\": {\"mode\": \"local\"}}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.attention.mode: must be one of global, local-m, local-p");
    /* ranges */
    expect_error("{\"model\": {\"attention\": {\"window\": 0}}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.attention.window: must be >= 1, got 0");
    expect_error("{\"model\": {\"dropout\": 1.0}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.dropout: must be in [0, 1), got 1");
    expect_error("{\"train\": {\"lr\": 0}}", NULL, 0, NMT_ERR_CONFIG, "train.lr: must be in (0, 1000], got 0");
    expect_error("{\"train\": {\"label_smoothing\": -0.1}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.label_smoothing: must be in [0, 1), got -0.1");
    expect_error("{\"model\": {\"hidden\": -4}}", NULL, 0, NMT_ERR_CONFIG, "model.hidden: must be in [1, 65536], got -4");
    /* a whole number beyond an int is out of range, not "not an integer", and
     * is printed whole (not %g's 2.14748e+09) */
    expect_error("{\"train\": {\"seed\": 2147483648}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.seed: must be in [0, 2147483647], got 2147483648");
    expect_error("{\"train\": {\"max_steps\": -3000000000}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.max_steps: must be in [0, 2147483647], got -3000000000");
    expect_error("{\"model\": {\"hidden\": 1e20}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.hidden: must be in [1, 65536], got 1e+20");
    expect_error("{\"train\": {\"seed\": 2147483647}}", NULL, 0, NMT_OK, "");
    expect_error("{\"train\": {\"seed\": 2147483648.5}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.seed: expected an integer, got 2147483648.5");
    expect_error("{\"train\": {\"lr\": 1000.0001}}", NULL, 0, NMT_ERR_CONFIG,
                 "train.lr: must be in (0, 1000], got 1000.0001");
    /* contradictions */
    expect_error("{\"model\": {\"hidden\": 64, \"enc_hidden\": 32, \"attention\": {\"score\": \"dot\"}}}",
                 NULL, 0, NMT_ERR_CONFIG,
                 "model.attention.score: dot needs equal query and key sizes, got query 64 (model.hidden) and key 32 (model.enc_hidden)");
    expect_error("{\"model\": {\"hidden\": 64, \"enc_hidden\": 32, \"attention\": {\"score\": \"scaled_dot\"}}}",
                 NULL, 0, NMT_ERR_CONFIG, "scaled_dot needs equal query and key sizes");
    expect_error("{\"data\": {\"train_src\": \"a\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "data.train_tgt: must be given together with data.train_src");
    expect_error("{\"data\": {\"valid_tgt\": \"a\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "data.valid_src: must be given together with data.valid_tgt");
    expect_error("{\"train\": {\"batch_sentences\": 0}}", NULL, 0, NMT_ERR_CONFIG,
                 "batch_sentences and batch_tokens cannot both be 0");
    expect_error("{\"model\": {\"hidden\": 33}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.hidden: must be even with model.bidirectional");
    expect_error("{\"model\": {\"input_feed\": true, \"attention\": {\"style\": \"bahdanau\"}}}", NULL, 0,
                 NMT_ERR_CONFIG, "model.input_feed: input feeding needs model.attention.style luong, got bahdanau");
    expect_error("{\"model\": {\"tie_embeddings\": true}}", NULL, 0, NMT_ERR_CONFIG,
                 "model.tie_embeddings: needs model.emb_dim (256) equal to model.hidden (512)");
    expect_error("{\"decode\": {\"max_len_a\": 0, \"max_len_b\": 0}}", NULL, 0, NMT_ERR_CONFIG,
                 "max_len_a and max_len_b cannot both be 0");
    expect_error("{\"train\": {\"lr_schedule\": \"rsqrt\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: train.rsqrt_steps: train.lr_schedule rsqrt needs train.rsqrt_steps or "
                 "train.warmup_steps above 0");
    expect_error("{\"train\": {\"lr_schedule\": \"rsqrt\", \"warmup_steps\": 4}}", NULL, 0, NMT_OK, "");
    /* the file name leads every message */
    expect_error("{\"model\": {\"hidden\": 0}}", NULL, 0, NMT_ERR_CONFIG, "cfg.json: model.hidden:");

    Config cfg;
    CHECK_EQ_INT(config_load("/nonexistent/dir/x.json", NULL, 0, &cfg), NMT_ERR_IO);
    CHECK_CONTAINS(nmt_error_message(), "/nonexistent/dir/x.json: cannot open");
    /* a folder given as the config: the reason, not just "read error" */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    CHECK_EQ_INT(config_load(dir, NULL, 0, &cfg), NMT_ERR_IO);
    CHECK_CONTAINS(nmt_error_message(), ": read error: Is a directory");
}

static void test_overrides(void) {
    Config cfg;
    const char *sets[] = {"model.hidden=128", "model.attention.style=none", "train.lr=0.5",
                          "model.bidirectional=false", "data.tokenizer=word"};
    NmtStatus st = load_text("{\"model\": {\"hidden\": 64}}", sets, 5, &cfg);
    CHECK(st == NMT_OK, "overrides: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_INT(cfg.model.hidden, 128);
        CHECK_EQ_INT(cfg.model.attention.style, ATTN_STYLE_NONE);
        CHECK_NEAR(cfg.train.lr, 0.5, 0);
        CHECK(!cfg.model.bidirectional, "bidirectional overridden");
        CHECK_EQ_INT(cfg.data.tokenizer, CFG_TOKENIZER_WORD);
        config_free(&cfg);
    }
    /* an override replaces an invalid file value instead of tripping on it */
    const char *fix[] = {"model.attention.window=3"};
    CHECK_EQ_INT(load_text("{\"model\": {\"attention\": {\"window\": 0}}}", fix, 1, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.model.attention.window, 3);
    config_free(&cfg);
    /* override paths are relative to the current folder */
    const char *paths[] = {"data.train_src=x.src", "data.train_tgt=x.tgt"};
    CHECK_EQ_INT(load_text("{}", paths, 2, &cfg), NMT_OK);
    char *cwd = realpath(".", NULL);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s/x.src", cwd);
    CHECK_EQ_STR(cfg.data.train_src, expected);
    free(cwd);
    config_free(&cfg);

    const char *bad_type[] = {"model.hidden=abc"};
    expect_error("{}", bad_type, 1, NMT_ERR_CONFIG, "--set model.hidden=abc: model.hidden: expected an integer, got a string");
    const char *bad_key[] = {"model.hiden=3"};
    expect_error("{}", bad_key, 1, NMT_ERR_CONFIG, "--set model.hiden=3: model.hiden: unknown key (did you mean model.hidden?)");
    const char *section[] = {"model=3"};
    expect_error("{}", section, 1, NMT_ERR_CONFIG,
                 "--set model=3: model: is a section (an object), not a value; set model.KEY=VALUE");
    const char *subsection[] = {"model.attention=dot"};
    expect_error("{}", subsection, 1, NMT_ERR_CONFIG,
                 "model.attention: is a section (an object), not a value; set model.attention.KEY=VALUE");
    const char *seed[] = {"train.seed=2147483648"};
    expect_error("{}", seed, 1, NMT_ERR_CONFIG,
                 "--set train.seed=2147483648: train.seed: must be in [0, 2147483647], got 2147483648");
    /* the whole value is the value: a prefix that is a number is not taken
     * (a decimal comma gave 0.5 for "0.5,5", 3 for "3abc") */
    const char *trailing[][2] = {{"train.lr=0.5,5", "train.lr: expected a number"},
                                 {"train.epochs=3abc", "train.epochs: expected an integer"},
                                 {"model.bidirectional=false1", "model.bidirectional: expected true or false"},
                                 {"train.lr=0.1.2", "train.lr: expected a number"}};
    for (size_t i = 0; i < NMT_ARRAY_LEN(trailing); i++)
        expect_error("{}", trailing[i], 1, NMT_ERR_CONFIG, trailing[i][1]);
    const char *spaced[] = {"train.lr= 0.25 "};
    CHECK_EQ_INT(load_text("{}", spaced, 1, &cfg), NMT_OK);
    CHECK(cfg.train.lr == 0.25, "--set train.lr= 0.25 : lr %g", cfg.train.lr);
    config_free(&cfg);
    const char *no_eq[] = {"model.hidden"};
    expect_error("{}", no_eq, 1, NMT_ERR_USAGE, "expected KEY=VALUE");
    const char *range[] = {"model.attention.window=0"};
    expect_error("{}", range, 1, NMT_ERR_CONFIG, "model.attention.window: must be >= 1, got 0");
}

static void test_json_round_trip(void) {
    Config a, b;
    const char *sets[] = {"model.hidden=96", "model.attention.mode=local-m", "decode.beam=3",
                          "data.train_src=/x/a", "data.train_tgt=/x/b", "train.lr=0.25"};
    CHECK_EQ_INT(load_text("{}", sets, 6, &a), NMT_OK);
    char *json = config_to_json(&a);
    CHECK(json != NULL, "config_to_json");
    CHECK_CONTAINS(json, "\"hidden\":\t96");
    CHECK_CONTAINS(json, "\"mode\":\t\"local-m\"");
    /* the resolved JSON loads back to the same config */
    CHECK_EQ_INT(config_load_string(json, "resolved", "/", NULL, 0, &b), NMT_OK);
    CHECK(config_first_fixed_difference(&a, &b) == NULL, "round trip differs at %s",
          config_first_fixed_difference(&a, &b));
    CHECK_EQ_INT(b.decode.beam, 3);
    CHECK_NEAR(b.train.lr, 0.25, 0);
    config_free(&b);
    /* schedule keys may differ; model keys may not */
    const char *sched[] = {"train.max_steps=99", "train.patience=2"};
    CHECK_EQ_INT(config_load_string(json, "resolved", "/", sched, 2, &b), NMT_OK);
    CHECK(config_first_fixed_difference(&a, &b) == NULL, "schedule keys count as fixed");
    config_free(&b);
    const char *model[] = {"model.attention.window=4"};
    CHECK_EQ_INT(config_load_string(json, "resolved", "/", model, 1, &b), NMT_OK);
    CHECK_EQ_STR(config_first_fixed_difference(&a, &b), "model.attention.window");
    config_free(&b);
    nmt_free(json);
    config_free(&a);
}

/* train.init_from's rules: model keys must match but for those only
 * training uses; the tokenizer keys are copied over, the first that
 * differed named; nothing else is copied. */
static void test_init_from_keys(void) {
    Config ck, cfg;
    const char *ck_sets[] = {"data.tokenizer=word", "data.word_vocab_size=300", "model.hidden=24"};
    const char *cfg_sets[] = {"model.hidden=24", "model.dropout=0.5", "model.init_range=0.2",
                              "model.attention.dropout=0.1", "data.spm_vocab_size=500", "train.lr=0.5"};
    CHECK_EQ_INT(config_load_string("{}", "ck", "/", ck_sets, 3, &ck), NMT_OK);
    CHECK_EQ_INT(config_load_string("{}", "cfg", "/", cfg_sets, 6, &cfg), NMT_OK);
    CHECK(config_take_model_keys(&cfg, &ck) == NULL, "dropouts and init_range may differ, got %s",
          config_take_model_keys(&cfg, &ck));
    CHECK(cfg.model.dropout == 0.5 && cfg.model.hidden == 24, "stated keys stay the config's");
    CHECK_EQ_STR(config_take_tokenizer_keys(&cfg, &ck), "data.tokenizer");
    CHECK(cfg.data.tokenizer == CFG_TOKENIZER_WORD && cfg.data.word_vocab_size == 300 &&
              cfg.data.spm_vocab_size == 8000 && cfg.train.lr == 0.5 && cfg.model.dropout == 0.5,
          "tokenizer keys copied, nothing else");
    CHECK(config_take_tokenizer_keys(&cfg, &ck) == NULL, "a second copy changes nothing");
    config_free(&cfg);
    /* a stated key that differs is named; keys left out are the checkpoint's */
    const char *heads[] = {"model.hidden=24", "model.attention.heads=2"};
    CHECK_EQ_INT(config_load_string("{}", "cfg", "/", heads, 2, &cfg), NMT_OK);
    CHECK_EQ_STR(config_take_model_keys(&cfg, &ck), "model.attention.heads");
    config_free(&cfg);
    CHECK_EQ_INT(config_load_string("{}", "cfg", "/", NULL, 0, &cfg), NMT_OK);
    CHECK(config_take_model_keys(&cfg, &ck) == NULL && cfg.model.hidden == 24, "an unstated hidden is the checkpoint's");
    config_free(&cfg);
    /* global attention has no window: a stated one may differ */
    const char *window[] = {"model.hidden=24", "model.attention.window=3"};
    CHECK_EQ_INT(config_load_string("{}", "cfg", "/", window, 2, &cfg), NMT_OK);
    CHECK(config_take_model_keys(&cfg, &ck) == NULL, "the window of global attention is not compared");
    config_free(&cfg);
    config_free(&ck);
}

/* Regressions found by fuzz_config: the root path, and floats that need 17
 * digits to read back (a resumed run compares configs exactly). */
static void test_fuzz_regressions(void) {
    Config a, b;
    const char *root[] = {"data.cache_dir=/", "train.save_dir=//"};
    CHECK_EQ_INT(config_load_string("{}", "inline", "/", root, 2, &a), NMT_OK);
    CHECK_EQ_STR(a.data.cache_dir, "/");
    CHECK_EQ_STR(a.train.save_dir, "/");
    config_free(&a);
    const char *precise[] = {"model.dropout=0.30000000000000004", "train.lr=0.1"};
    CHECK_EQ_INT(config_load_string("{}", "inline", "/", precise, 2, &a), NMT_OK);
    char *json = config_to_json(&a);
    CHECK(json != NULL, "config_to_json");
    CHECK_EQ_INT(config_load_string(json, "resolved", "/", NULL, 0, &b), NMT_OK);
    CHECK(config_first_fixed_difference(&a, &b) == NULL, "round trip changed %s", config_first_fixed_difference(&a, &b));
    CHECK(b.model.dropout == 0.30000000000000004 && b.train.lr == 0.1, "floats read back exactly");
    config_free(&b);
    nmt_free(json);
    config_free(&a);
}

static void test_reference(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    config_write_reference(f);
    fclose(f);
    /* an integer key without an upper bound in the table has the int's */
    CHECK_CONTAINS(buf, "| `model.attention.window` | integer, in [1, 2147483647] | `10` |");
    CHECK_CONTAINS(buf, "| `train.seed` | integer, in [0, 2147483647] | `1` |");
    CHECK_CONTAINS(buf, "`luong` \\| `bahdanau` \\| `none`");
    CHECK_CONTAINS(buf, "| `train.max_steps` |");
    free(buf);
}

/* The extra training corpus's keys: data.extra_src and data.extra_tgt
 * together; data.extra_tag only with them, one token of at most 64 bytes,
 * neither a special token's name nor holding SentencePiece's word-start
 * mark; data.train_upsample in [1, 1000]. */
static void test_extra_corpus_keys(void) {
    expect_error("{\"data\": {\"extra_src\": \"x.src\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_tgt: must be given together with data.extra_src");
    expect_error("{\"data\": {\"extra_tgt\": \"x.tgt\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_src: must be given together with data.extra_tgt");
    expect_error("{\"data\": {\"extra_tag\": \"<BT>\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_tag: \"<BT>\" is put before the sentences of data.extra_src, "
                 "which is not given");
    /* a tag with only one of the pair: the pair's message */
    expect_error("{\"data\": {\"extra_tgt\": \"x.tgt\", \"extra_tag\": \"<BT>\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "data.extra_src: must be given together with data.extra_tgt");
    const char *bad[][2] = {{"a b", "white space"},
                            {"a\\tb", "white space"},
                            {"a,b", "a comma"},
                            {"<unk>", "a special token's name"},
                            {"<pad>", "a special token's name"},
                            {"</s>", "a special token's name"},
                            {"x\xe2\x96\x81y", "U+2581"}};
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad); i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"data\": {\"extra_src\": \"x.src\", \"extra_tgt\": \"x.tgt\", \"extra_tag\": \"%s\"}}", bad[i][0]);
        expect_error(json, NULL, 0, NMT_ERR_CONFIG, "cfg.json: data.extra_tag: \"");
        expect_error(json, NULL, 0, NMT_ERR_CONFIG, bad[i][1]);
    }
    /* at most 64 bytes (the prefix buffer of prepare.c) */
    for (int len = 64; len <= 65; len++) {
        char tag[80], json[256], want[64];
        memset(tag, 'a', (size_t)len);
        tag[len] = '\0';
        snprintf(json, sizeof json,
                 "{\"data\": {\"extra_src\": \"x.src\", \"extra_tgt\": \"x.tgt\", \"extra_tag\": \"%s\"}}", tag);
        snprintf(want, sizeof want, "data.extra_tag: at most 64 bytes, got %d", len);
        expect_error(json, NULL, 0, len == 64 ? NMT_OK : NMT_ERR_CONFIG, len == 64 ? "" : want);
    }
    /* through --set too */
    const char *set_bad[] = {"data.extra_src=x.src", "data.extra_tgt=x.tgt", "data.extra_tag=a,b"};
    expect_error("{}", set_bad, 3, NMT_ERR_CONFIG, "data.extra_tag: \"a,b\" must be one token, without a comma");
    /* accepted: the tag (kept as given), the paths resolved */
    Config cfg;
    const char *good = "{\"data\": {\"extra_src\": \"x.src\", \"extra_tgt\": \"x.tgt\", \"extra_tag\": \"<BT>\","
                       " \"train_upsample\": 1000}}";
    NmtStatus st = load_text(good, NULL, 0, &cfg);
    CHECK(st == NMT_OK, "extra keys: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_STR(cfg.data.extra_tag, "<BT>");
        CHECK_EQ_INT(cfg.data.train_upsample, 1000);
        CHECK(cfg.data.extra_src[0] == '/' && strstr(cfg.data.extra_src, "/x.src"), "extra_src resolved: %s",
              cfg.data.extra_src);
        config_free(&cfg);
    }
    /* no tag, and a tag with other characters SentencePiece may see */
    expect_error("{\"data\": {\"extra_src\": \"x.src\", \"extra_tgt\": \"x.tgt\"}}", NULL, 0, NMT_OK, "");
    expect_error("{\"data\": {\"extra_src\": \"x.src\", \"extra_tgt\": \"x.tgt\", \"extra_tag\": \"<unk2>\"}}", NULL, 0,
                 NMT_OK, "");
    /* the default upsample is 1; its range is [1, 1000] */
    CHECK_EQ_INT(load_text("{}", NULL, 0, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.data.train_upsample, 1);
    config_free(&cfg);
    expect_error("{\"data\": {\"train_upsample\": 0}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.train_upsample: must be in [1, 1000], got 0");
    expect_error("{\"data\": {\"train_upsample\": 1001}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.train_upsample: must be in [1, 1000], got 1001");
    expect_error("{\"data\": {\"train_upsample\": 1}}", NULL, 0, NMT_OK, "");
}

/* data.extra_src, data.extra_tgt and data.extra_tag as lists: each item
 * resolved and kept in order; --set takes a JSON array; the resolved JSON
 * prints a list as an array and loads back the same; every way the lists
 * can disagree is refused, naming the key. */
static void test_extra_corpus_lists(void) {
    Config cfg, back;
    const char *good = "{\"data\": {\"extra_src\": [\"a.src\", \"/abs/b.src\"], \"extra_tgt\": [\"a.tgt\", "
                       "\"/abs/b.tgt\"], \"extra_tag\": [\"<BT>\", \"\"]}}";
    NmtStatus st = load_text(good, NULL, 0, &cfg);
    CHECK(st == NMT_OK, "lists: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_INT(config_list_len(cfg.data.extra_src), 2);
        CHECK_EQ_INT(config_list_len(cfg.data.extra_tag), 2);
        char *a = config_list_item(cfg.data.extra_src, 0), *b = config_list_item(cfg.data.extra_src, 1);
        char *t0 = config_list_item(cfg.data.extra_tag, 0), *t1 = config_list_item(cfg.data.extra_tag, 1);
        CHECK(a && a[0] == '/' && strstr(a, "/a.src"), "item 1 resolved: %s", a ? a : "(null)");
        CHECK_EQ_STR(b, "/abs/b.src");
        CHECK_EQ_STR(t0, "<BT>");
        CHECK_EQ_STR(t1, "");
        nmt_free(a), nmt_free(b), nmt_free(t0), nmt_free(t1);
        char *json = config_to_json(&cfg);
        CHECK(json && strstr(json, "\"/abs/b.src\"]"), "the resolved JSON holds the list: %s", json ? json : "");
        CHECK_EQ_INT(config_load_string(json, "resolved", "/", NULL, 0, &back), NMT_OK);
        CHECK(config_first_fixed_difference(&cfg, &back) == NULL, "list round trip differs at %s",
              config_first_fixed_difference(&cfg, &back));
        config_free(&back);
        nmt_free(json);
        config_free(&cfg);
    }
    /* --set with a JSON array; a plain value is still one path */
    const char *sets[] = {"data.extra_src=[\"/x/1\", \"/x/2\", \"/x/3\"]", "data.extra_tgt=[\"/y/1\", \"/y/2\", \"/y/3\"]",
                          "data.extra_tag=[\"<a>\", \"<b>\", \"<a>\"]"};
    st = load_text("{}", sets, 3, &cfg);
    CHECK(st == NMT_OK, "--set lists: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_STR(cfg.data.extra_src, "/x/1\n/x/2\n/x/3");
        CHECK_EQ_STR(cfg.data.extra_tag, "<a>\n<b>\n<a>");
        config_free(&cfg);
    }
    const char *one[] = {"data.extra_src=[x", "data.extra_tgt=/y"};
    st = load_text("{}", one, 2, &cfg);
    CHECK(st == NMT_OK, "--set [x: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_INT(config_list_len(cfg.data.extra_src), 1);
        CHECK(strstr(cfg.data.extra_src, "/[x") != NULL, "[x is a path: %s", cfg.data.extra_src);
        config_free(&cfg);
    }
    /* disagreements and bad items */
    expect_error("{\"data\": {\"extra_src\": [\"a\", \"b\"], \"extra_tgt\": \"c\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_tgt: 1 path for the 2 corpora of data.extra_src: give one target side per "
                 "source side, in the same order");
    expect_error("{\"data\": {\"extra_src\": [\"a\", \"b\"], \"extra_tgt\": [\"c\", \"d\"], \"extra_tag\": \"<BT>\"}}",
                 NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_tag: 1 tag for the 2 corpora of data.extra_src: give a list of one per corpus");
    expect_error("{\"data\": {\"extra_src\": [\"a\"], \"extra_tgt\": [\"c\"], \"extra_tag\": [\"x\", \"y\"]}}", NULL, 0,
                 NMT_ERR_CONFIG, "cfg.json: data.extra_tag: 2 tags for the 1 corpus of data.extra_src");
    expect_error("{\"data\": {\"extra_src\": [\"a\", \"\"], \"extra_tgt\": [\"c\", \"d\"]}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_src: item 2: must not be empty");
    expect_error("{\"data\": {\"extra_src\": [\"a\", 3], \"extra_tgt\": [\"c\", \"d\"]}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_src: item 2: expected a string, got a number");
    expect_error("{\"data\": {\"extra_src\": [], \"extra_tgt\": []}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_src: a list of 1 to 32 items, got 0");
    expect_error("{\"data\": {\"extra_src\": [\"a\", \"b\"], \"extra_tgt\": [\"c\", \"d\"], \"extra_tag\": [\"ok\", "
                 "\"no way\"]}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_tag (item 2): \"no way\" must be one token, without white space");
    expect_error("{\"data\": {\"extra_src\": \"a\\nb\", \"extra_tgt\": \"c\"}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.extra_src: must not hold a line break");
    expect_error("{\"data\": {\"train_src\": [\"a\"]}}", NULL, 0, NMT_ERR_CONFIG,
                 "cfg.json: data.train_src: expected a string, got");
    char many[4096] = "{\"data\": {\"extra_src\": [";
    for (int i = 0; i < 33; i++) strcat(many, i ? ", \"f\"" : "\"f\"");
    strcat(many, "]}}");
    expect_error(many, NULL, 0, NMT_ERR_CONFIG, "cfg.json: data.extra_src: a list of 1 to 32 items, got 33");
}

/* Every allocation failure while loading is reported, never a crash. */
static void test_alloc_failures(void) {
    const char *json = "{\"model\": {\"hidden\": 64, \"attention\": {\"style\": \"bahdanau\"}},"
                       " \"data\": {\"train_src\": \"a\", \"train_tgt\": \"b\"}}";
    const char *path = test_write_file(test_tmpdir(), "alloc.json", json, strlen(json));
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", path);
    const char *sets[] = {"train.lr=0.5"};
    int failures = 0, n;
    for (n = 1; n < 2000; n++) {
        Config cfg;
        nmt_alloc_fail_at(n);
        NmtStatus st = config_load(copy, sets, 1, &cfg);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) {
            config_free(&cfg);
            break;
        }
        failures += st == NMT_ERR_NOMEM;
        if (st != NMT_ERR_NOMEM) CHECK(0, "allocation %d failed with status %d: %s", n, st, nmt_error_message());
    }
    CHECK(n > 10 && n < 2000, "the walk reached success after %d allocations", n);
    CHECK_EQ_INT(failures, n - 1);
}

int main(void) {
    test_init_from_keys();
    test_defaults();
    test_good_file();
    test_bad_files();
    test_overrides();
    test_json_round_trip();
    test_reference();
    test_fuzz_regressions();
    test_alloc_failures();
    test_extra_corpus_keys();
    test_extra_corpus_lists();
    return test_summary("test_config");
}
