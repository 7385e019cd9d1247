/* test_prepare.c: the data pipeline of `nmt prepare`: word and SentencePiece
 * caches built from generated corpora, empty and over-long pairs counted,
 * the cache reused when up to date and rebuilt when a corpus file or a
 * tokenizer setting changes, corrupt cache files refused or rebuilt, the
 * manifest written last and a cache without one rebuilt, mismatched
 * corpora reported, the dataset file round trip, the extra training corpus
 * (data.extra_src/tgt with data.extra_tag: its pairs, tag, summary and
 * manifest lines, cache). (Two processes building one cache at once:
 * tests/test_cache_lock.sh.) */
#include <sys/stat.h>
#include <utime.h>

#include "config.h"
#include "data/prepare.h"
#include "fileio.h"
#include "test_util.h"

/* A small generated corpus: line i of the source has (i % 7) + 1 words,
 * the target the same words reversed; line 5 is empty on the target side,
 * line 9 has 60 words on the source side (over max_len 50). */
static void write_corpus(const char *dir, const char *prefix, int n) {
    char src_path[1024], tgt_path[1024];
    snprintf(src_path, sizeof src_path, "%s/%s.src", dir, prefix);
    snprintf(tgt_path, sizeof tgt_path, "%s/%s.tgt", dir, prefix);
    FILE *s = fopen(src_path, "w"), *t = fopen(tgt_path, "w");
    for (int i = 0; i < n; i++) {
        int words = i == 9 ? 60 : (i % 7) + 1;
        for (int w = 0; w < words; w++) fprintf(s, "%sw%d", w ? " " : "", (i + w) % 23);
        if (i != 5)
            for (int w = words - 1; w >= 0; w--) fprintf(t, "%sv%d", w != words - 1 ? " " : "", (i + w) % 23);
        fputc('\n', s);
        fputc('\n', t);
    }
    fclose(s);
    fclose(t);
}

/* A config in dir with the given corpus files and cache folder. */
static NmtStatus load_cfg_files(const char *dir, const char *train_src, const char *train_tgt,
                                const char *cache, const char *json_extra, Config *cfg) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"data\": {\"train_src\": \"%s\", \"train_tgt\": \"%s\","
             " \"valid_src\": \"valid.src\", \"valid_tgt\": \"valid.tgt\", \"max_len\": 50,"
             " \"cache_dir\": \"%s\" %s}}",
             train_src, train_tgt, cache, json_extra);
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs(json, f);
    fclose(f);
    return config_load(path, NULL, 0, cfg);
}

static NmtStatus load_cfg(const char *dir, const char *json_extra, Config *cfg) {
    return load_cfg_files(dir, "train.src", "train.tgt", "cache", json_extra, cfg);
}

static void test_word_cache(void) {
    const char *dir = test_tmpdir();
    write_corpus(dir, "train", 200);
    write_corpus(dir, "valid", 20);
    Config cfg;
    CHECK_EQ_INT(load_cfg(dir, ", \"tokenizer\": \"word\"", &cfg), NMT_OK);
    PreparedData p;
    NmtStatus st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_OK, "prepare: %s", nmt_error_message());
    if (st) return;
    CHECK(!p.from_cache, "first build is not from the cache");
    CHECK_EQ_INT(p.train_stats.pairs_read, 200);
    CHECK_EQ_INT(p.train_stats.skipped_empty, 1);
    CHECK_EQ_INT(p.train_stats.skipped_too_long, 1);
    CHECK_EQ_INT(p.train_stats.kept, 198);
    CHECK_EQ_INT(p.train->n_pairs, 198);
    CHECK_CONTAINS(p.summary, "train: 200 pairs read, 198 kept, 1 skipped (empty), 1 skipped (longer than 50 tokens)");
    /* validation is not length-filtered, only empty pairs go */
    CHECK_EQ_INT(p.valid->n_pairs, 19);
    /* 23 words + 4 specials per side */
    CHECK_EQ_INT(tokenizer_vocab_size(p.src_tok), 27);
    /* pair 0 of the training data is line 1: "w0" -> "v0" */
    CHECK_EQ_INT(p.train->line_no[0], 1);
    CHECK_EQ_INT(dataset_src_len(p.train, 0), 1);
    CHECK_EQ_STR(tokenizer_piece(p.src_tok, dataset_src(p.train, 0)[0]), "w0");
    CHECK_EQ_STR(tokenizer_piece(p.tgt_tok, dataset_tgt(p.train, 0)[0]), "v0");
    /* line 7 (i = 6) has 7 words; its target is reversed */
    /* lines 1..5 are pairs 0..4; line 6 (i = 5) is empty; line 7 is pair 5 */
    CHECK_EQ_INT(p.train->line_no[5], 7);
    CHECK_EQ_INT(dataset_src_len(p.train, 5), 7);
    CHECK_EQ_STR(tokenizer_piece(p.tgt_tok, dataset_tgt(p.train, 5)[0]), "v12");
    prepared_data_free(&p);

    /* second run: from the cache, same content */
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(p.from_cache, "second run uses the cache");
    CHECK_EQ_INT(p.train->n_pairs, 198);
    CHECK_CONTAINS(p.summary, "1 skipped (empty), 1 skipped (longer than 50 tokens)");
    prepared_data_free(&p);

    /* a changed corpus file (new mtime and size) makes the cache stale */
    char path[1024];
    snprintf(path, sizeof path, "%s/train.src", dir);
    FILE *f = fopen(path, "a");
    fputs("w1 w2\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/train.tgt", dir);
    f = fopen(path, "a");
    fputs("v2 v1\n", f);
    fclose(f);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(!p.from_cache, "changed corpus rebuilds");
    CHECK_EQ_INT(p.train->n_pairs, 199);
    prepared_data_free(&p);

    /* touching a file (same size, new mtime) also counts as a change */
    struct utimbuf times = {1000000000, 1000000000};
    utime(path, &times);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(!p.from_cache, "new mtime rebuilds");
    prepared_data_free(&p);
    config_free(&cfg);

    /* a changed tokenizer setting makes it stale */
    CHECK_EQ_INT(load_cfg(dir, ", \"tokenizer\": \"word\", \"word_min_freq\": 2", &cfg), NMT_OK);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(!p.from_cache, "changed setting rebuilds");
    prepared_data_free(&p);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(p.from_cache, "unchanged again: cached");
    prepared_data_free(&p);
    /* --force rebuilds anyway */
    CHECK_EQ_INT(prepare_data(&cfg, 1, &p), NMT_OK);
    CHECK(!p.from_cache, "force rebuilds");
    prepared_data_free(&p);

    /* a corrupt cache file is detected (checksum) and the cache rebuilt */
    snprintf(path, sizeof path, "%s/cache/train.bin", dir);
    f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    Dataset *d = NULL;
    CHECK_EQ_INT(dataset_load(path, &d), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "checksum mismatch");
    CHECK_CONTAINS(nmt_error_message(), "train.bin");
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(!p.from_cache, "corrupt cache rebuilt");
    prepared_data_free(&p);
    /* a truncated dataset file is refused */
    CHECK_EQ_INT(truncate(path, 50), 0);
    CHECK_EQ_INT(dataset_load(path, &d), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "truncated or corrupt");
    config_free(&cfg);
}

/* The modification time of dir/cache-order/name in nanoseconds (0 when
 * missing). */
static long long mtime_ns(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cache-order/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* The manifest is written after every other file of the cache (each save
 * slowed by NMT_TEST_SLOW_SAVE, src/fileio.c, so that their times differ),
 * and a cache whose manifest is missing, as after a build killed before
 * its end, is rebuilt rather than taken for a complete one. */
static void test_manifest_last(void) {
    const char *dir = test_tmpdir();
    Config cfg;
    CHECK_EQ_INT(load_cfg_files(dir, "train.src", "train.tgt", "cache-order", ", \"tokenizer\": \"word\"", &cfg),
                 NMT_OK);
    PreparedData p;
    setenv("NMT_TEST_SLOW_SAVE", "20000", 1);
    NmtStatus st = prepare_data(&cfg, 0, &p);
    unsetenv("NMT_TEST_SLOW_SAVE");
    CHECK(st == NMT_OK, "prepare: %s", nmt_error_message());
    prepared_data_free(&p);
    long long manifest = mtime_ns(dir, "manifest.txt");
    const char *names[] = {"src.tok", "tgt.tok", "train.bin", "valid.bin", "summary.txt"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(names); i++) {
        long long t = mtime_ns(dir, names[i]);
        CHECK(t > 0 && t < manifest, "%s (mtime %lld) written after manifest.txt (%lld)", names[i], t, manifest);
    }
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(p.from_cache, "complete cache reused");
    prepared_data_free(&p);
    char path[1024];
    snprintf(path, sizeof path, "%s/cache-order/manifest.txt", dir);
    CHECK_EQ_INT(unlink(path), 0);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(!p.from_cache, "a cache without its manifest is rebuilt");
    CHECK(access(path, F_OK) == 0, "the rebuild writes the manifest again");
    prepared_data_free(&p);
    config_free(&cfg);
}

static void test_spm_cache(void) {
    const char *dir = test_tmpdir();
    Config cfg;
    CHECK_EQ_INT(load_cfg_files(dir, "train.src", "train.tgt", "spm-cache",
                                     ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30, \"spm_joint\": true", &cfg), NMT_OK);
    PreparedData p;
    NmtStatus st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_OK, "spm prepare: %s", nmt_error_message());
    if (st) {
        config_free(&cfg);
        return;
    }
    CHECK_EQ_INT(tokenizer_vocab_size(p.src_tok), 30);
    CHECK_EQ_INT(tokenizer_vocab_size(p.tgt_tok), 30);
    /* joint: one model, so a target word encodes the same on both sides */
    int32_t *a = NULL, *b = NULL;
    int na = 0, nb = 0;
    CHECK_EQ_INT(tokenizer_encode(p.src_tok, "v3 w4", 5, &a, &na), NMT_OK);
    CHECK_EQ_INT(tokenizer_encode(p.tgt_tok, "v3 w4", 5, &b, &nb), NMT_OK);
    CHECK(na == nb && na > 0 && !memcmp(a, b, (size_t)na * 4), "joint model encodes alike");
    nmt_free(a);
    nmt_free(b);
    prepared_data_free(&p);
    CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_OK);
    CHECK(p.from_cache, "spm cache reused");
    uint8_t *all_bytes = NULL;
    size_t all_len = 0;
    tokenizer_serialize(p.src_tok, &all_bytes, &all_len);
    prepared_data_free(&p);
    config_free(&cfg);
    /* data.spm_max_sentences and data.spm_threads shape the model: a
     * changed value rebuilds the cache; a sample smaller than the corpus
     * (the 399 non-empty sentences of both sides, for the joint model) trains
     * another model */
    const char *sampled[] = {", \"spm_max_sentences\": 200", ", \"spm_max_sentences\": 0",
                             ", \"spm_threads\": 2"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(sampled); i++) {
        char extra[256];
        snprintf(extra, sizeof extra, ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30, \"spm_joint\": true%s",
                 sampled[i]);
        CHECK_EQ_INT(load_cfg_files(dir, "train.src", "train.tgt", "spm-cache", extra, &cfg), NMT_OK);
        st = prepare_data(&cfg, 0, &p);
        CHECK(st == NMT_OK && !p.from_cache, "%s rebuilds the cache: %s", sampled[i], nmt_error_message());
        if (!st) {
            uint8_t *bytes = NULL;
            size_t len = 0;
            tokenizer_serialize(p.src_tok, &bytes, &len);
            bool same = bytes && all_bytes && len == all_len && !memcmp(bytes, all_bytes, len);
            /* all sentences (0, or a cap above the count) train the same
             * model; the thread count may change it (not checked) */
            if (i < 2)
                CHECK(same == (i == 1), "%s: the model should %sbe the one of every sentence", sampled[i],
                      i == 1 ? "" : "not ");
            nmt_free(bytes);
            prepared_data_free(&p);
        }
        config_free(&cfg);
    }
    nmt_free(all_bytes);
    /* a sample too small for the vocabulary says so */
    CHECK_EQ_INT(load_cfg_files(dir, "train.src", "train.tgt", "spm-cache3",
                                ", \"spm_vocab_size\": 30, \"spm_joint\": true, \"spm_max_sentences\": 3", &cfg),
                 NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_CONFIG, "3 sentences for 30 pieces: status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size = 30 does not fit");
    CHECK_CONTAINS(nmt_error_message(), "(it saw a sample of 3 of the 399 sentences: data.spm_max_sentences)");
    config_free(&cfg);
    /* a vocabulary the corpus cannot fill names the key */
    CHECK_EQ_INT(load_cfg_files(dir, "train.src", "train.tgt", "spm-cache2", ", \"spm_vocab_size\": 5000", &cfg), NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_CONFIG, "too large vocab: status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size");
    config_free(&cfg);
}

/* A corpus of 120 pairs (line i: (i % 7) + 1 words "w.." -> "v..") with three
 * pairs that cannot fit max_len 50 by their word count:
 *   line 31: 60 words "qx" (180 bytes, short enough for SentencePiece's
 *            trainer, which skips lines over 4192 bytes itself) -> "v1 Zz"
 *   line 41: 100000 words "qx" -> "v2 Kk"
 *   line 51: "\x01" (a control character nmt_nfkc deletes: no SentencePiece
 *            id, one word) -> 60 words "v3"
 * q, x, Z and K appear nowhere else. */
static void write_long_corpus(const char *dir) {
    char src_path[1024], tgt_path[1024];
    snprintf(src_path, sizeof src_path, "%s/long.src", dir);
    snprintf(tgt_path, sizeof tgt_path, "%s/long.tgt", dir);
    FILE *s = fopen(src_path, "w"), *t = fopen(tgt_path, "w");
    for (int i = 0; i < 120; i++) {
        if (i == 30 || i == 40) {
            for (int w = 0; w < (i == 30 ? 60 : 100000); w++) fprintf(s, "%sqx", w ? " " : "");
            fprintf(t, "%s", i == 30 ? "v1 Zz" : "v2 Kk");
        } else if (i == 50) {
            fputc('\x01', s);
            for (int w = 0; w < 60; w++) fprintf(t, "%sv3", w ? " " : "");
        } else {
            int words = (i % 7) + 1;
            for (int w = 0; w < words; w++) fprintf(s, "%sw%d", w ? " " : "", (i + w) % 23);
            for (int w = words - 1; w >= 0; w--) fprintf(t, "%sv%d", w != words - 1 ? " " : "", (i + w) % 23);
        }
        fputc('\n', s);
        fputc('\n', t);
    }
    fclose(s);
    fclose(t);
}

/* 1 when some piece of t holds one of the bytes of `chars`. */
static int vocab_has_char(const Tokenizer *t, const char *chars) {
    for (int id = NMT_N_SPECIAL; id < tokenizer_vocab_size(t); id++)
        if (strpbrk(tokenizer_piece(t, id), chars)) return 1;
    return 0;
}

/* Prepares the corpus NAME.src / NAME.tgt of dir with the data keys
 * `extra` (tokenizer kind k of a test's list) into the cache NAME-cacheK:
 * true and *cfg, *p to free; false (checked, cfg freed) when it fails. */
static bool prepare_kind(const char *dir, const char *name, int k, const char *extra, Config *cfg,
                         PreparedData *p) {
    char src[32], tgt[32], cache[48];
    snprintf(src, sizeof src, "%s.src", name);
    snprintf(tgt, sizeof tgt, "%s.tgt", name);
    snprintf(cache, sizeof cache, "%s-cache%d", name, k);
    CHECK_EQ_INT(load_cfg_files(dir, src, tgt, cache, extra, cfg), NMT_OK);
    NmtStatus st = prepare_data(cfg, 0, p);
    CHECK(st == NMT_OK, "%s, kind %d: prepare: %s", name, k, nmt_error_message());
    if (st) config_free(cfg);
    return st == NMT_OK;
}

/* tokenizer_min_ids never exceeds the ids that encoding gives. */
static void check_min_ids_bound(const Tokenizer *t) {
    static const char *const texts[] = {
        "w1 w2", "  w1   w2  ", "w1\tw2 w3", "\x01 w1 \x01", "w1 \xc2\xa0 w2", "\xe2\x80\x8b w1",
        "w1\xe2\x80\x8bw2 w3", "\xef\xb7\xba w1", "q \xe2\x96\x81 x", "\xe2\x96\x81\xe2\x96\x81 w1",
        "w1 \xcc\x81 w2", "\xc2\xb4 w1", "\xf0\x9f\x98\x80 \xe4\xb8\xad", "w1 \xef\xbf\xbd w2", ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *ids = NULL;
        int n = 0;
        CHECK_EQ_INT(tokenizer_encode(t, texts[i], strlen(texts[i]), &ids, &n), NMT_OK);
        int bound = tokenizer_min_ids(t, texts[i], strlen(texts[i]), 1000);
        CHECK(bound <= n, "text %zu: bound %d > %d ids", i, bound, n);
        /* the prefix with a bound of 1 encodes to the first ids */
        size_t prefix;
        if (tokenizer_min_ids_prefix(t, texts[i], strlen(texts[i]), 1, &prefix) == 1) {
            int32_t *pre = NULL;
            int np = 0;
            CHECK_EQ_INT(tokenizer_encode(t, texts[i], prefix, &pre, &np), NMT_OK);
            CHECK(np >= 1 && np <= n && !memcmp(pre, ids, (size_t)np * 4), "text %zu: prefix ids", i);
            nmt_free(pre);
        }
        nmt_free(ids);
    }
}

/* Pairs whose word count exceeds max_len are dropped, on both sides, before
 * the tokenizers are trained and without being encoded. */
static void test_long_lines(void) {
    const char *dir = test_tmpdir();
    write_long_corpus(dir);
    write_corpus(dir, "valid", 20);
    /* the bound itself: exact for words, early stop at cap */
#define MIN_IDS(kind, text, cap) tokenizer_kind_min_ids(kind, text, strlen(text), cap)
    CHECK_EQ_INT(MIN_IDS(TOKENIZER_WORD, " a\tb \xc2\xa0 c ", 10), 3);
    CHECK_EQ_INT(MIN_IDS(TOKENIZER_WORD, "a b c d", 2), 2);
    CHECK_EQ_INT(MIN_IDS(TOKENIZER_SPM, "a\tb \x01 c\xe2\x80\x8b \xe2\x80\x8b", 10), 2);
    CHECK_EQ_INT(MIN_IDS(TOKENIZER_SPM, "a b c d", 3), 3);
#undef MIN_IDS
    const char *kinds[] = {", \"tokenizer\": \"word\"",
                           ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30",
                           ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30, \"spm_joint\": true"};
    for (int k = 0; k < 3; k++) {
        Config cfg;
        PreparedData p;
        if (!prepare_kind(dir, "long", k, kinds[k], &cfg, &p)) continue;
        CHECK_EQ_INT(p.train_stats.pairs_read, 120);
        /* "\x01": one word (too long, with its 60-word target), but no
         * SentencePiece id (empty, as it always was) */
        CHECK_EQ_INT(p.train_stats.skipped_empty, k == 0 ? 0 : 1);
        CHECK_EQ_INT(p.train_stats.skipped_too_long, k == 0 ? 3 : 2);
        CHECK_EQ_INT(p.train_stats.kept, 117);
        CHECK_EQ_INT(p.train->n_pairs, 117);
        for (int i = 0; i < p.train->n_pairs; i++)
            CHECK(p.train->line_no[i] != 31 && p.train->line_no[i] != 41 && p.train->line_no[i] != 51,
                  "kind %d: pair %d is line %lld", k, i, (long long)p.train->line_no[i]);
        CHECK_CONTAINS(p.summary, k == 0 ? "117 kept, 0 skipped (empty), 3 skipped (longer than 50 tokens)"
                                         : "117 kept, 1 skipped (empty), 2 skipped (longer than 50 tokens)");
        /* the tokenizers never saw the dropped pairs, on either side */
        if (k == 0) {
            CHECK_EQ_INT(tokenizer_piece_to_id(p.src_tok, "qx"), NMT_UNK_ID);
            CHECK_EQ_INT(tokenizer_piece_to_id(p.tgt_tok, "Zz"), NMT_UNK_ID);
            CHECK_EQ_INT(tokenizer_piece_to_id(p.tgt_tok, "Kk"), NMT_UNK_ID);
            CHECK(tokenizer_piece_to_id(p.tgt_tok, "v1") != NMT_UNK_ID, "v1 is in the vocabulary");
        } else {
            CHECK(!vocab_has_char(p.src_tok, "qx"), "kind %d: source vocabulary has q or x", k);
            CHECK(!vocab_has_char(p.tgt_tok, "ZK"), "kind %d: target vocabulary has Z or K", k);
            check_min_ids_bound(p.src_tok);
        }
        prepared_data_free(&p);
        config_free(&cfg);
    }
}

/* A SentencePiece side of more bytes than max_len pieces hold (tokenizer_
 * bytes_cap: 64 a piece) is too long without being encoded: here a
 * 20000-byte run of CJK characters no piece knows, with no space, which
 * SentencePiece would merge into one unknown piece (so it was kept, and
 * encoding a few MB of it took a minute). And the tokenizer never learns
 * from such a side: line 122 is 3500 bytes of 'Q' (over max_len 50's 3200,
 * under the 4192 bytes SentencePiece's trainer takes). The word tokenizer
 * (one id a word) keeps both pairs. */
static void test_junk_blob(void) {
    const char *dir = test_tmpdir();
    char path[1024];
    write_corpus(dir, "blob", 120);
    write_corpus(dir, "valid", 20);
    snprintf(path, sizeof path, "%s/blob.src", dir);
    FILE *f = fopen(path, "a");
    for (int i = 0; i < 20000 / 3; i++) fprintf(f, "\xe4\xb8%c", (char)(0x80 + i % 64)); /* U+4E00.. */
    fputc('\n', f);
    for (int i = 0; i < 3500; i++) fputc('Q', f);
    fputc('\n', f);
    fclose(f);
    snprintf(path, sizeof path, "%s/blob.tgt", dir);
    f = fopen(path, "a");
    fputs("v1 v2\nv2 v3\n", f);
    fclose(f);
    const char *kinds[] = {", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30", ", \"tokenizer\": \"word\""};
    for (int k = 0; k < 2; k++) {
        Config cfg;
        PreparedData p;
        if (!prepare_kind(dir, "blob", k, kinds[k], &cfg, &p)) continue;
        CHECK_EQ_INT(p.train_stats.pairs_read, 122);
        /* the corpus's own: line 10 (60 words) too long, line 6 empty */
        CHECK_EQ_INT(p.train_stats.skipped_too_long, k == 0 ? 3 : 1);
        bool kept[2] = {false, false};
        for (int i = 0; i < p.train->n_pairs; i++)
            for (int b = 0; b < 2; b++) kept[b] |= p.train->line_no[i] == 121 + b;
        for (int b = 0; b < 2; b++)
            CHECK(kept[b] == (k == 1), "kind %d: line %d's pair %s", k, 121 + b, kept[b] ? "kept" : "dropped");
        if (k == 0) CHECK(!vocab_has_char(p.src_tok, "Q"), "the source vocabulary has Q, of a dropped line");
        prepared_data_free(&p);
        config_free(&cfg);
    }
}

static void test_bad_corpora(void) {
    const char *dir = test_tmpdir();
    Config cfg;
    PreparedData p;
    /* different line counts: both counts in the message, nothing cut */
    char path[1024];
    snprintf(path, sizeof path, "%s/short.tgt", dir);
    FILE *f = fopen(path, "w");
    fputs("v1\nv2\n", f);
    fclose(f);
    CHECK_EQ_INT(load_cfg_files(dir, "train.src", "short.tgt", "c2", ", \"tokenizer\": \"word\"", &cfg), NMT_OK);
    NmtStatus st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_FORMAT, "mismatch status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "has 201 lines");
    CHECK_CONTAINS(nmt_error_message(), "has 2 lines");
    config_free(&cfg);
    /* invalid UTF-8 names file and line */
    snprintf(path, sizeof path, "%s/bad.src", dir);
    f = fopen(path, "w");
    fputs("ok\nbad \xC3\x28 here\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/bad.tgt", dir);
    f = fopen(path, "w");
    fputs("ok\nfine\n", f);
    fclose(f);
    CHECK_EQ_INT(load_cfg_files(dir, "bad.src", "bad.tgt", "c3", ", \"tokenizer\": \"word\"", &cfg), NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_FORMAT, "invalid utf-8 status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "bad.src:2: invalid UTF-8");
    /* nothing was cached: the manifest is not there */
    snprintf(path, sizeof path, "%s/c3/manifest.txt", dir);
    CHECK(access(path, F_OK) != 0, "no manifest after a failed build");
    config_free(&cfg);
    /* a missing corpus names the file */
    CHECK_EQ_INT(load_cfg_files(dir, "nope.src", "train.tgt", "c4", ", \"tokenizer\": \"word\"", &cfg), NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_IO, "missing status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "nope.src: cannot open");
    config_free(&cfg);
    /* no training corpus at all names the key */
    CHECK_EQ_INT(config_load_string("{}", "inline", "/", NULL, 0, &cfg), NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_CONFIG, "no corpus status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.train_src");
    config_free(&cfg);
}

/* ---- the extra corpus (data.extra_src/tgt, data.extra_tag) ------------ */

/* Line i (0-based) of the extra corpus of EXTRA_N lines, one side (0
 * source, 1 target), into buf: source (i % 5) + 1 words "e.." (and
 * "eonly" on every fourth line from line 2), target (i % 4) + 1 words
 * "u.." (and "zzonly" on every other line). Blank: the source of lines 8
 * (empty) and 15 (white space only), the target of line 22. "eonly" and
 * "zzonly" appear in no other corpus. */
enum { EXTRA_N = 40, EXTRA_BLANK = 3 };

static const char *extra_line(int i, int side, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = '\0';
    if (side == 0 && i == 7) return buf;
    if (side == 0 && i == 14) return snprintf(buf, cap, "  \t "), buf;
    if (side == 1 && i == 21) return buf;
    int words = side == 0 ? (i % 5) + 1 : (i % 4) + 1;
    for (int w = 0; w < words; w++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%c%d", w ? " " : "", side == 0 ? 'e' : 'u',
                               side == 0 ? (i * 3 + w) % 13 : (i + 2 * w) % 11);
    if (side == 0 && i % 4 == 1) at += (size_t)snprintf(buf + at, cap - at, " eonly");
    if (side == 1 && i % 2 == 0) at += (size_t)snprintf(buf + at, cap - at, " zzonly");
    return buf;
}

/* Writes dir/NAME.src and dir/NAME.tgt: the first n lines of extra_line. */
static void write_extra(const char *dir, const char *name, int n) {
    char path[1024], line[256];
    for (int side = 0; side < 2; side++) {
        snprintf(path, sizeof path, "%s/%s.%s", dir, name, side ? "tgt" : "src");
        FILE *f = fopen(path, "w");
        for (int i = 0; i < n; i++) fprintf(f, "%s\n", extra_line(i, side, line, sizeof line));
        fclose(f);
    }
}

/* The number of times id occurs in ids[0..n). */
static int count_id(const int32_t *ids, int n, int32_t id) {
    int c = 0;
    for (int i = 0; i < n; i++) c += ids[i] == id;
    return c;
}

/* Checks p->extra against the extra corpus as written by write_extra:
 * one pair per non-blank line, in order, each source the tag's piece
 * (after a lone "▁" with SentencePiece) then exactly the ids of its line
 * encoded alone, each target exactly its line's ids (no tag); the tag's
 * id nowhere in the training pairs nor on any target side. tag NULL: the
 * sources are their lines' ids alone. */
static void check_extra_pairs(const char *what, const PreparedData *p, const char *tag) {
    const Dataset *x = p->extra[0];
    CHECK(x != NULL, "%s: no extra dataset", what);
    if (!x) return;
    CHECK_EQ_INT(x->n_pairs, EXTRA_N - EXTRA_BLANK);
    CHECK_EQ_INT(p->extra_stats[0].pairs_read, p->from_cache ? 0 : EXTRA_N);
    CHECK_EQ_INT(p->extra_stats[0].skipped_empty, p->from_cache ? 0 : EXTRA_BLANK);
    CHECK_EQ_INT(p->extra_stats[0].kept, p->from_cache ? 0 : EXTRA_N - EXTRA_BLANK);
    int32_t tag_id = tag ? tokenizer_piece_to_id(p->src_tok, tag) : -1;
    if (tag) CHECK(tag_id != NMT_UNK_ID && tag_id >= NMT_N_SPECIAL, "%s: %s is not a source piece (%d)", what, tag,
                   tag_id);
    int32_t tgt_tag = tag ? tokenizer_piece_to_id(p->tgt_tok, tag) : -1;
    /* the pairs in order: line numbers of the non-blank lines */
    int64_t k = 0;
    int bad = 0;
    char src[256], tgt[256];
    for (int i = 0; i < EXTRA_N && k < x->n_pairs; i++) {
        extra_line(i, 0, src, sizeof src);
        extra_line(i, 1, tgt, sizeof tgt);
        if (!src[strspn(src, " \t")] || !tgt[0]) continue; /* blank: no pair */
        if (x->line_no[k] != i + 1) {
            if (bad++ < 3) CHECK(0, "%s: extra pair %lld is line %lld, expected %d", what, (long long)k,
                                 (long long)x->line_no[k], i + 1);
            k++;
            continue;
        }
        int32_t *ids = NULL, *tids = NULL;
        int n = 0, nt = 0;
        CHECK_EQ_INT(tokenizer_encode(p->src_tok, src, strlen(src), &ids, &n), NMT_OK);
        CHECK_EQ_INT(tokenizer_encode(p->tgt_tok, tgt, strlen(tgt), &tids, &nt), NMT_OK);
        const int32_t *s = dataset_src(x, k);
        int ns = dataset_src_len(x, k);
        int skip = 0; /* the tag's ids before the line's */
        if (tag) {
            if (ns >= 1 && s[0] == tag_id) skip = 1;
            else if (ns >= 2 && s[1] == tag_id && !strcmp(tokenizer_piece(p->src_tok, s[0]), "\xe2\x96\x81")) skip = 2;
        }
        int ok = (!tag || skip > 0) && ns == skip + n && !memcmp(s + skip, ids, (size_t)n * 4) &&
                 (!tag || count_id(s, ns, tag_id) == 1);
        ok &= dataset_tgt_len(x, k) == nt && !memcmp(dataset_tgt(x, k), tids, (size_t)nt * 4);
        if (tag && tgt_tag != NMT_UNK_ID) ok &= count_id(dataset_tgt(x, k), dataset_tgt_len(x, k), tgt_tag) == 0;
        if (!ok && bad++ < 3)
            CHECK(0, "%s: extra pair %lld (line %d, \"%s\" -> \"%s\"): %d source ids (first %s), expected %s%d", what,
                  (long long)k, i + 1, src, tgt, ns, ns ? tokenizer_piece(p->src_tok, s[0]) : "-",
                  tag ? "the tag and " : "", n);
        nmt_free(ids);
        nmt_free(tids);
        k++;
    }
    CHECK(bad == 0, "%s: %d extra pairs differ", what, bad);
    CHECK_EQ_INT(k, x->n_pairs);
    if (!tag) return;
    /* the tag is the extra corpus's alone: never in the training pairs */
    const Dataset *t = p->train;
    int in_train = count_id(t->src_ids, (int)t->src_offset[t->n_pairs], tag_id);
    CHECK(in_train == 0, "%s: the tag's id in the training sources %d times", what, in_train);
    if (tgt_tag != NMT_UNK_ID) {
        int in_tgt = count_id(t->tgt_ids, (int)t->tgt_offset[t->n_pairs], tgt_tag);
        CHECK(in_tgt == 0, "%s: the tag's id in the training targets %d times", what, in_tgt);
    }
}

/* 1 when d and e hold the same pairs (ids, lengths, lines). */
static int same_dataset(const Dataset *d, const Dataset *e) {
    if (!d || !e || d->n_pairs != e->n_pairs) return 0;
    int64_t n = d->n_pairs;
    return !memcmp(d->src_offset, e->src_offset, (size_t)(n + 1) * 8) &&
           !memcmp(d->tgt_offset, e->tgt_offset, (size_t)(n + 1) * 8) &&
           !memcmp(d->src_ids, e->src_ids, (size_t)d->src_offset[n] * 4) &&
           !memcmp(d->tgt_ids, e->tgt_ids, (size_t)d->tgt_offset[n] * 4) &&
           !memcmp(d->line_no, e->line_no, (size_t)n * 8);
}

/* A copy of d (to compare after its PreparedData is freed). */
static Dataset *copy_dataset(const Dataset *d) {
    Dataset *c = NULL;
    if (dataset_create(&c)) return NULL;
    for (int64_t i = 0; i < d->n_pairs; i++)
        if (dataset_add(c, dataset_src(d, i), dataset_src_len(d, i), dataset_tgt(d, i), dataset_tgt_len(d, i),
                        d->line_no[i])) {
            dataset_free(c);
            return NULL;
        }
    return c;
}

/* The extra corpus with each tokenizer: its pairs (blank lines skipped,
 * not made tag-only sentences), the tag before every source, the summary
 * and manifest lines, the cache reused and made stale by the tag, the
 * tokenizers trained on it too. */
static void test_extra_corpus(void) {
    const char *dir = test_tmpdir();
    write_corpus(dir, "xtrain", 120);
    write_corpus(dir, "valid", 20);
    write_extra(dir, "extra", EXTRA_N);
    const char *extra_keys = ", \"extra_src\": \"extra.src\", \"extra_tgt\": \"extra.tgt\", \"extra_tag\": \"<BT>\"";
    const char *kinds[] = {"\"tokenizer\": \"word\"", "\"tokenizer\": \"spm\", \"spm_vocab_size\": 30"};
    for (int k = 0; k < 2; k++) {
        char json[512], cache[64], what[64];
        snprintf(cache, sizeof cache, "xcache%d", k);
        snprintf(what, sizeof what, "%s", k == 0 ? "word" : "spm");
        Config cfg, plain;
        PreparedData p;
        /* the same cache without the extra corpus first: its manifest has
         * no line of the extra keys (as before them: old caches stay
         * valid), and adding the extra corpus makes it stale */
        snprintf(json, sizeof json, ", %s", kinds[k]);
        CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", cache, json, &plain), NMT_OK);
        char *m = prepare_manifest(&plain);
        CHECK(m && !strstr(m, "data.extra_tag") && !strstr(m, "data.extra_src") && !strstr(m, "data.extra_tgt"),
              "%s: a manifest without the extra corpus names its keys:\n%s", what, m ? m : "(null)");
        nmt_free(m);
        NmtStatus st = prepare_data(&plain, 0, &p);
        CHECK(st == NMT_OK, "%s: prepare without extra: %s", what, nmt_error_message());
        if (!st) {
            CHECK(p.n_extra == 0, "%s: an extra dataset without data.extra_src", what);
            CHECK(!strstr(p.summary, "extra:"), "%s: an extra line in the summary without data.extra_src:\n%s",
                  what, p.summary);
            if (k == 0) CHECK_EQ_INT(tokenizer_piece_to_id(p.src_tok, "<BT>"), NMT_UNK_ID);
            prepared_data_free(&p);
        }
        config_free(&plain);

        snprintf(json, sizeof json, ", %s%s", kinds[k], extra_keys);
        CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", cache, json, &cfg), NMT_OK);
        m = prepare_manifest(&cfg);
        CHECK_CONTAINS(m, "\ndata.extra_tag = <BT>\n");
        CHECK_CONTAINS(m, "\ndata.extra_src = ");
        CHECK_CONTAINS(m, "\ndata.extra_tgt = ");
        CHECK_CONTAINS(m, "/extra.src size ");
        nmt_free(m);
        st = prepare_data(&cfg, 0, &p);
        CHECK(st == NMT_OK, "%s: prepare with extra: %s", what, nmt_error_message());
        if (st) {
            config_free(&cfg);
            continue;
        }
        CHECK(!p.from_cache, "%s: adding the extra corpus rebuilds the cache", what);
        check_extra_pairs(what, &p, "<BT>");
        /* the training corpus is as without the extra one: 120 read, line
         * 6 empty, line 10 too long */
        CHECK_EQ_INT(p.train->n_pairs, 118);
        char want[160];
        snprintf(want, sizeof want, "\nextra: %d pairs read, %d kept, %d skipped (empty), 0 skipped (longer than 50 "
                 "tokens)\n", EXTRA_N, EXTRA_N - EXTRA_BLANK, EXTRA_BLANK);
        CHECK_CONTAINS(p.summary, want);
        CHECK(!strncmp(p.summary, "train: ", 7), "%s: the summary starts with %.20s", what, p.summary);
        /* the tokenizers learned from the extra corpus, both sides */
        if (k == 0) {
            CHECK(tokenizer_piece_to_id(p.tgt_tok, "zzonly") != NMT_UNK_ID, "zzonly (extra target only) not learned");
            CHECK(tokenizer_piece_to_id(p.src_tok, "eonly") != NMT_UNK_ID, "eonly (extra source only) not learned");
            CHECK(tokenizer_piece_to_id(p.tgt_tok, "u3") != NMT_UNK_ID, "u3 (extra target) not learned");
            /* the tag is a source word, not a target one */
            CHECK_EQ_INT(tokenizer_piece_to_id(p.tgt_tok, "<BT>"), NMT_UNK_ID);
        } else {
            CHECK(vocab_has_char(p.tgt_tok, "z"), "spm: no target piece has z (extra target only)");
            CHECK(vocab_has_char(p.src_tok, "e"), "spm: no source piece has e (extra source only)");
            /* a source piece only: the target model (not joint) spends no piece on it */
            CHECK_EQ_INT(tokenizer_piece_to_id(p.tgt_tok, "<BT>"), NMT_UNK_ID);
        }
        Dataset *first = copy_dataset(p.extra[0]);
        prepared_data_free(&p);

        /* the same config again: from the cache, the same pairs */
        st = prepare_data(&cfg, 0, &p);
        CHECK(st == NMT_OK, "%s: second prepare: %s", what, nmt_error_message());
        if (!st) {
            CHECK(p.from_cache, "%s: an unchanged config reuses the cache", what);
            CHECK(same_dataset(first, p.extra[0]), "%s: the cached extra pairs differ from the built ones", what);
            check_extra_pairs(what, &p, "<BT>");
            CHECK_CONTAINS(p.summary, want);
            prepared_data_free(&p);
        }
        dataset_free(first);
        config_free(&cfg);

        /* another tag: the cache is stale, the sources carry the new tag */
        snprintf(json, sizeof json, ", %s, \"extra_src\": \"extra.src\", \"extra_tgt\": \"extra.tgt\","
                 " \"extra_tag\": \"<XX>\"", kinds[k]);
        CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", cache, json, &cfg), NMT_OK);
        st = prepare_data(&cfg, 0, &p);
        CHECK(st == NMT_OK, "%s: prepare with <XX>: %s", what, nmt_error_message());
        if (!st) {
            CHECK(!p.from_cache, "%s: a changed data.extra_tag rebuilds the cache", what);
            check_extra_pairs(what, &p, "<XX>");
            if (k == 0) CHECK_EQ_INT(tokenizer_piece_to_id(p.src_tok, "<BT>"), NMT_UNK_ID);
            prepared_data_free(&p);
        }
        config_free(&cfg);
    }

    /* the extra corpus without a tag: its sources are their lines alone */
    Config cfg;
    PreparedData p;
    CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", "xcache-notag",
                                ", \"tokenizer\": \"word\", \"extra_src\": \"extra.src\", \"extra_tgt\": \"extra.tgt\"",
                                &cfg), NMT_OK);
    char *m = prepare_manifest(&cfg);
    CHECK_CONTAINS(m, "\ndata.extra_tag = (none)\n");
    nmt_free(m);
    NmtStatus st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_OK, "prepare without a tag: %s", nmt_error_message());
    if (!st) {
        check_extra_pairs("no tag", &p, NULL);
        prepared_data_free(&p);
    }
    config_free(&cfg);

    /* a word vocabulary too small for the tag: the tag would be unknown */
    write_extra(dir, "extra5", 5);
    CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", "xcache-small",
                                ", \"tokenizer\": \"word\", \"word_vocab_size\": 8, \"extra_src\": \"extra5.src\","
                                " \"extra_tgt\": \"extra5.tgt\", \"extra_tag\": \"<BT>\"", &cfg), NMT_OK);
    st = prepare_data(&cfg, 0, &p);
    CHECK(st == NMT_ERR_CONFIG, "a vocabulary without the tag: status %d (%s)", st, nmt_error_message());
    CHECK(!strncmp(nmt_error_message(), "data.extra_tag:", 15), "message: %s", nmt_error_message());
    CHECK_CONTAINS(nmt_error_message(), "data.word_vocab_size 8");
    config_free(&cfg);

    /* given SentencePiece models (data.spm_src_model) trained without the
     * tag: refused, saying how to train them; those trained with it (the
     * cache's of the spm case above, last built with the tag <XX>) are
     * taken */
    const char *given[] = {"xcache-plain", "xcache1"};
    for (int g = 0; g < 2; g++) {
        char json[512];
        if (g == 0) {
            CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", given[g],
                                        ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 30", &cfg), NMT_OK);
            st = prepare_data(&cfg, 0, &p);
            CHECK(st == NMT_OK, "plain spm: %s", nmt_error_message());
            if (!st) {
                CHECK(tokenizer_piece_to_id(p.src_tok, "<BT>") == NMT_UNK_ID, "plain spm has the tag");
                prepared_data_free(&p);
            }
            config_free(&cfg);
        }
        snprintf(json, sizeof json, ", \"tokenizer\": \"spm\", \"spm_src_model\": \"%s/src.tok\","
                 " \"spm_tgt_model\": \"%s/tgt.tok\", \"extra_src\": \"extra.src\", \"extra_tgt\": \"extra.tgt\","
                 " \"extra_tag\": \"%s\"", given[g], given[g], g == 0 ? "<BT>" : "<XX>");
        char cache[64];
        snprintf(cache, sizeof cache, "xcache-given%d", g);
        CHECK_EQ_INT(load_cfg_files(dir, "xtrain.src", "xtrain.tgt", cache, json, &cfg), NMT_OK);
        st = prepare_data(&cfg, 0, &p);
        if (g == 0) {
            CHECK(st == NMT_ERR_CONFIG, "given models without the tag: status %d (%s)", st, nmt_error_message());
            CHECK(!strncmp(nmt_error_message(), "data.extra_tag:", 15), "message: %s", nmt_error_message());
            CHECK_CONTAINS(nmt_error_message(), "--user_defined_symbols=<BT>");
            CHECK_CONTAINS(nmt_error_message(), "xcache-plain/src.tok");
            char path[1024];
            snprintf(path, sizeof path, "%s/%s/manifest.txt", dir, cache);
            CHECK(access(path, F_OK) != 0, "a manifest after a refused build");
        } else {
            CHECK(st == NMT_OK, "given models with the tag: %s", nmt_error_message());
            if (!st) {
                check_extra_pairs("given", &p, "<XX>");
                prepared_data_free(&p);
            }
        }
        config_free(&cfg);
    }
}

static void test_dataset_round_trip(void) {
    Dataset *d;
    CHECK_EQ_INT(dataset_create(&d), NMT_OK);
    for (int i = 0; i < 1000; i++) {
        int32_t src[50], tgt[50];
        int ns = 1 + i % 50, nt = 1 + (i * 7) % 50;
        for (int k = 0; k < ns; k++) src[k] = (i + k) % 9000;
        for (int k = 0; k < nt; k++) tgt[k] = (i * 3 + k) % 7000;
        CHECK_EQ_INT(dataset_add(d, src, ns, tgt, nt, i + 1), NMT_OK);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/round.bin", test_tmpdir());
    CHECK_EQ_INT(dataset_save(d, path), NMT_OK);
    Dataset *e = NULL;
    CHECK_EQ_INT(dataset_load(path, &e), NMT_OK);
    CHECK(e && e->n_pairs == 1000, "loaded pairs");
    if (e) {
        CHECK(!memcmp(d->src_offset, e->src_offset, 1001 * 8) && !memcmp(d->tgt_offset, e->tgt_offset, 1001 * 8),
              "offsets equal");
        CHECK(!memcmp(d->src_ids, e->src_ids, (size_t)d->src_offset[1000] * 4), "source ids equal");
        CHECK(!memcmp(d->tgt_ids, e->tgt_ids, (size_t)d->tgt_offset[1000] * 4), "target ids equal");
        CHECK(!memcmp(d->line_no, e->line_no, 1000 * 8), "line numbers equal");
    }
    dataset_free(e);
    dataset_free(d);
    dataset_free(NULL);
}

/* ---- encoding on several threads ----------------------------------- */

/* A corpus of n pairs over more than one encoding chunk (16384 pairs),
 * with every kind of pair encode_corpus tells apart: line i has
 * (i % 9) + 1 words; every 97th source is blank, every 89th target white
 * space; every 101st source has 60 words (over max_len 50); every 103rd
 * source is "\x01" (no SentencePiece id: empty; one word: too long beside
 * its 60-word target). */
static void write_chunked_corpus(const char *dir, int n) {
    char src_path[1024], tgt_path[1024];
    snprintf(src_path, sizeof src_path, "%s/many.src", dir);
    snprintf(tgt_path, sizeof tgt_path, "%s/many.tgt", dir);
    FILE *s = fopen(src_path, "w"), *t = fopen(tgt_path, "w");
    for (int i = 0; i < n; i++) {
        int words = (i % 9) + 1, tgt_words = i % 103 == 7 ? 60 : words;
        if (i % 103 == 7) fputc('\x01', s);
        else if (i % 97 != 3)
            for (int w = 0; w < (i % 101 == 5 ? 60 : words); w++) fprintf(s, "%sw%d", w ? " " : "", (i * 7 + w) % 41);
        if (i % 89 == 4) fputs(" \t", t);
        else
            for (int w = 0; w < tgt_words; w++) fprintf(t, "%sv%d", w ? " " : "", (i * 3 + w) % 37);
        fputc('\n', s);
        fputc('\n', t);
    }
    fclose(s);
    fclose(t);
}

/* The cache of a corpus spanning three chunks is the same whatever the
 * thread count (train.threads 1, 2, 3, 8), for both tokenizers and for an
 * extra corpus with a tag: every pair, every id, the same statistics; and
 * a corpus whose sides differ in length fails with the same message. An
 * allocation failure on a worker is encoded again in order: the cache is
 * the same, or the failure is reported (never a different dataset).
 * Under the sanitizers (NMT_SAN=1, 20 times slower) the corpus spans two
 * chunks and the sweep tries every 5th allocation. */
static void test_threads(void) {
    const char *dir = test_tmpdir();
    int san = getenv("NMT_SAN") != NULL, sweep_step = san ? 5 : 1;
    const int N = san ? 20000 : 40000;
    write_chunked_corpus(dir, N);
    write_corpus(dir, "valid", 20);
    const char *kinds[] = {", \"tokenizer\": \"word\"", ", \"tokenizer\": \"spm\", \"spm_vocab_size\": 40"};
    const int threads[] = {1, 2, 3, 8};
    for (int k = 0; k < 2; k++) {
        Dataset *first = NULL, *first_extra = NULL;
        char *first_summary = NULL;
        for (int t = 0; t < 4; t++) {
            char extra[512], cache[64];
            snprintf(extra, sizeof extra, "%s, \"extra_src\": \"many.src\", \"extra_tgt\": \"many.tgt\", "
                                          "\"extra_tag\": \"<T>\"}, \"train\": {\"threads\": %d",
                     kinds[k], threads[t]);
            snprintf(cache, sizeof cache, "many-cache-%d-%d", k, t);
            Config cfg;
            PreparedData p;
            CHECK_EQ_INT(load_cfg_files(dir, "many.src", "many.tgt", cache, extra, &cfg), NMT_OK);
            NmtStatus st = prepare_data(&cfg, 0, &p);
            CHECK(st == NMT_OK, "kind %d, %d threads: %s", k, threads[t], nmt_error_message());
            if (st) {
                config_free(&cfg);
                continue;
            }
            CHECK_EQ_INT(p.train_stats.pairs_read, N);
            CHECK(p.train_stats.kept > N * 9 / 10 && p.train_stats.skipped_empty > N / 80 &&
                      p.train_stats.skipped_too_long > N / 200,
                  "kind %d: kept %lld, empty %lld, too long %lld", k, (long long)p.train_stats.kept,
                  (long long)p.train_stats.skipped_empty, (long long)p.train_stats.skipped_too_long);
            if (!first) {
                first = copy_dataset(p.train);
                first_extra = copy_dataset(p.extra[0]);
                first_summary = nmt_strdup(p.summary);
            } else {
                CHECK(same_dataset(first, p.train), "kind %d: %d threads encode another dataset than 1", k,
                      threads[t]);
                CHECK(same_dataset(first_extra, p.extra[0]), "kind %d: %d threads encode another extra dataset", k,
                      threads[t]);
                CHECK(first_summary && !strcmp(first_summary, p.summary), "kind %d, %d threads: summary %s, not %s",
                      k, threads[t], p.summary, first_summary);
            }
            prepared_data_free(&p);
            config_free(&cfg);
        }
        dataset_free(first);
        dataset_free(first_extra);
        nmt_free(first_summary);
    }
    /* sides of different lengths: the message names both counts, on any count */
    char path[1024];
    snprintf(path, sizeof path, "%s/few.tgt", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < N / 2; i++) fputs("v1 v2\n", f);
    fclose(f);
    char *messages[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
        char extra[128];
        snprintf(extra, sizeof extra, ", \"tokenizer\": \"word\"}, \"train\": {\"threads\": %d", t ? 3 : 1);
        Config cfg;
        PreparedData p;
        CHECK_EQ_INT(load_cfg_files(dir, "many.src", "few.tgt", t ? "few-cache-3" : "few-cache-1", extra, &cfg),
                     NMT_OK);
        CHECK_EQ_INT(prepare_data(&cfg, 0, &p), NMT_ERR_FORMAT);
        messages[t] = nmt_strdup(nmt_error_message());
        config_free(&cfg);
    }
    char want_src[64], want_tgt[64];
    snprintf(want_src, sizeof want_src, "has %d lines", N);
    snprintf(want_tgt, sizeof want_tgt, "has %d lines", N / 2);
    CHECK_CONTAINS(messages[0], want_src);
    CHECK_CONTAINS(messages[0], want_tgt);
    CHECK(messages[0] && messages[1] && !strcmp(messages[0], messages[1]), "1 thread: %s; 3 threads: %s",
          messages[0], messages[1]);
    nmt_free(messages[0]);
    nmt_free(messages[1]);
    /* allocation failures, one thread (the worker is this thread): the
     * n-th allocation of a small prepare fails, for n from 1 until one
     * run meets no failure */
    write_corpus(dir, "small", 60);
    Dataset *want = NULL;
    int failed_runs = 0, other = 0, n;
    for (n = 0; n < 20000; n += sweep_step) {
        char cache[64];
        snprintf(cache, sizeof cache, "nomem-%d", n);
        Config cfg;
        PreparedData p;
        NMT_ASSERT(load_cfg_files(dir, "small.src", "small.tgt", cache,
                                  ", \"tokenizer\": \"word\"}, \"train\": {\"threads\": 1", &cfg) == NMT_OK);
        long before = nmt_alloc_failures();
        nmt_alloc_fail_at(n);
        NmtStatus st = prepare_data(&cfg, 0, &p);
        nmt_alloc_fail_at(0);
        int hit = nmt_alloc_failures() != before;
        if (st == NMT_OK) {
            if (!want) want = copy_dataset(p.train);
            else other += !same_dataset(want, p.train);
            prepared_data_free(&p);
        } else {
            failed_runs++;
            other += st != NMT_ERR_NOMEM;
        }
        config_free(&cfg);
        if (n > 0 && !hit) break;
    }
    CHECK(want != NULL && n < 20000, "a run without an allocation failure (%d tried)", n);
    CHECK(failed_runs > 0, "some allocation failures are reported");
    CHECK(other == 0, "%d runs with an allocation failure gave another dataset or error than NMT_ERR_NOMEM", other);
    dataset_free(want);
}

int main(void) {
    nmt_log_quiet(1);
    test_dataset_round_trip();
    test_word_cache();
    test_manifest_last();
    test_spm_cache();
    test_bad_corpora();
    test_long_lines();
    test_junk_blob();
    test_extra_corpus();
    test_threads();
    return test_summary("test_prepare");
}
