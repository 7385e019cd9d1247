/* test_tokenizer.c: the tokenizers of tokenizer.h: SentencePiece (unigram
 * and BPE, trained on a generated corpus) and word vocabularies: round trips,
 * special ids, serialize/deserialize, save/load (checked against the
 * spm_encode / spm_decode tools when they are on PATH), determinism, errors,
 * allocation failures, and a unigram-8000 model on Multi30k when present. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "common.h"
#include "data/tokenizer.h"
#include "data/word_vocab.h"
#include "test_util.h"

/* ---- sentence sources ------------------------------------------------------- */

typedef struct {
    char **lines;
    int n, next;
    int fail_after;       /* > 0: fail when asked for line number fail_after */
    int fail_code;        /* the negative value returned then */
} ArraySource;

static int array_next(void *ctx, const char **line, size_t *len) {
    ArraySource *a = ctx;
    if (a->fail_after > 0 && a->next + 1 == a->fail_after) {
        nmt_fail(a->fail_code == -1 ? NMT_ERR_IO : (NmtStatus)-a->fail_code,
                 "corpus.txt:%d: injected failure", a->next + 1);
        return a->fail_code;
    }
    if (a->next >= a->n) return 0;
    *line = a->lines[a->next];
    *len = strlen(a->lines[a->next]);
    a->next++;
    return 1;
}

static ArraySource source_of(char **lines, int n) {
    ArraySource a = {lines, n, 0, 0, 0};
    return a;
}

/* ---- the generated corpus --------------------------------------------------- */

#define N_WORDS 240
#define N_SENT 3000

static uint64_t lcg_state;
static uint32_t lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static char *words[N_WORDS];
static char *corpus[N_SENT];

/* Words of 1-4 syllables (ASCII and German letters that NFKC keeps), and
 * sentences of 3-12 words with a skewed word distribution, single spaces,
 * sometimes a final " ." or a capitalised first word. */
static void make_corpus(void) {
    static const char *syl[] = {"ka", "to", "mi", "ne", "ru", "sa", "ber", "stein", "ä", "ö",
                                "ü", "ß", "sch", "lin", "gen", "au", "ei", "ch", "tt", "pf",
                                "wald", "haus", "ung", "keit", "er", "en", "al", "or", "di", "mo"};
    lcg_state = 20240601;
    for (int w = 0; w < N_WORDS; w++) {
        char buf[64] = "";
        int n = 1 + (int)(lcg() % 4);
        for (int k = 0; k < n; k++) strcat(buf, syl[lcg() % NMT_ARRAY_LEN(syl)]);
        words[w] = strdup(buf);
    }
    for (int s = 0; s < N_SENT; s++) {
        char buf[1024] = "";
        int n = 3 + (int)(lcg() % 10);
        for (int k = 0; k < n; k++) {
            uint32_t a = lcg() % N_WORDS, b = lcg() % N_WORDS;
            const char *w = words[(a * b) / N_WORDS];
            if (k) strcat(buf, " ");
            size_t at = strlen(buf);
            strcat(buf, w);
            if (k == 0 && lcg() % 3 == 0 && buf[at] >= 'a' && buf[at] <= 'z') buf[at] -= 32;
        }
        if (lcg() % 2) strcat(buf, " .");
        corpus[s] = strdup(buf);
    }
}

static void free_corpus(void) {
    for (int i = 0; i < N_WORDS; i++) free(words[i]);
    for (int i = 0; i < N_SENT; i++) free(corpus[i]);
}

/* ---- helpers ---------------------------------------------------------------- */

static Tokenizer *train_spm(const char *type, int vocab, uint64_t seed, NmtStatus *status) {
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_SPM);
    spec.spm_model_type = type;
    spec.vocab_size = vocab;
    spec.seed = seed;
    ArraySource src = source_of(corpus, N_SENT);
    Tokenizer *t = NULL;
    NmtStatus s = tokenizer_train(&spec, array_next, &src, &t);
    if (status) *status = s;
    if (s != NMT_OK) fprintf(stderr, "train %s %d: %s\n", type, vocab, nmt_error_message());
    return t;
}

/* 1 when a and b encode every corpus sentence identically. */
static int same_encodings(const Tokenizer *a, const Tokenizer *b, int n_sent) {
    int same = 1;
    for (int i = 0; i < n_sent && same; i++) {
        int32_t *x = NULL, *y = NULL;
        int nx = 0, ny = 0;
        if (tokenizer_encode(a, corpus[i], strlen(corpus[i]), &x, &nx) != NMT_OK ||
            tokenizer_encode(b, corpus[i], strlen(corpus[i]), &y, &ny) != NMT_OK || nx != ny ||
            memcmp(x, y, (size_t)nx * sizeof *x) != 0)
            same = 0;
        nmt_free(x);
        nmt_free(y);
    }
    return same;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static int have_tool(const char *name) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

/* ---- SentencePiece ---------------------------------------------------------- */

static void check_spm_model(const char *type, int vocab) {
    NmtStatus s;
    Tokenizer *t = train_spm(type, vocab, 7, &s);
    CHECK(s == NMT_OK && t, "%s training", type);
    if (!t) return;
    CHECK_EQ_INT(tokenizer_kind(t), TOKENIZER_SPM);
    CHECK_EQ_INT(tokenizer_vocab_size(t), vocab);
    CHECK_EQ_STR(tokenizer_spm_type(t), type); /* read back from the serialized trainer spec */
    CHECK_EQ_STR(tokenizer_piece(t, NMT_PAD_ID), "<pad>");
    CHECK_EQ_STR(tokenizer_piece(t, NMT_UNK_ID), "<unk>");
    CHECK_EQ_STR(tokenizer_piece(t, NMT_BOS_ID), "<s>");
    CHECK_EQ_STR(tokenizer_piece(t, NMT_EOS_ID), "</s>");
    CHECK(tokenizer_piece(t, vocab) == NULL && tokenizer_piece(t, -1) == NULL, "out of range");
    CHECK_EQ_INT(tokenizer_piece_to_id(t, "</s>"), NMT_EOS_ID);
    CHECK_EQ_INT(tokenizer_piece_to_id(t, "no-such-piece-xyz"), NMT_UNK_ID);

    /* Round trip, id range, the pieces themselves ("▁" marks a space), and
     * the growable-buffer variant against the allocating one. */
    int bad_round = 0, bad_range = 0, bad_pieces = 0, bad_buf = 0, total = 0;
    int32_t *buf = NULL;
    int cap = 0;
    for (int i = 0; i < N_SENT; i++) {
        const char *line = corpus[i];
        int32_t *ids = NULL;
        int n = 0, nb = 0;
        if (tokenizer_encode(t, line, strlen(line), &ids, &n) != NMT_OK) {
            bad_round++;
            continue;
        }
        if (tokenizer_encode_buf(t, line, strlen(line), &buf, &nb, &cap) != NMT_OK || nb != n ||
            memcmp(buf, ids, (size_t)n * sizeof *ids) != 0)
            bad_buf++;
        total += n;
        char joined[2048] = "";
        for (int k = 0; k < n; k++) {
            if (ids[k] < NMT_N_SPECIAL || ids[k] >= vocab) bad_range++;
            const char *p = tokenizer_piece(t, ids[k]);
            if (p) strncat(joined, p, sizeof joined - strlen(joined) - 1);
        }
        /* replace each U+2581 (e2 96 81) by a space */
        char plain[2048];
        size_t o = 0;
        for (size_t k = 0; joined[k];) {
            if (!strncmp(joined + k, "\xe2\x96\x81", 3)) {
                plain[o++] = ' ';
                k += 3;
            } else {
                plain[o++] = joined[k++];
            }
        }
        plain[o] = '\0';
        if (plain[0] != ' ' || strcmp(plain + 1, line) != 0) bad_pieces++;
        char *text = NULL;
        if (tokenizer_decode(t, ids, n, &text) != NMT_OK || strcmp(text, line) != 0) {
            if (bad_round++ < 3) fprintf(stderr, "round trip: [%s] -> [%s]\n", line, text);
        }
        nmt_free(text);
        nmt_free(ids);
    }
    nmt_free(buf);
    CHECK(bad_round == 0, "%s: %d of %d sentences do not round-trip", type, bad_round, N_SENT);
    CHECK(bad_range == 0, "%s: %d ids outside [4, %d)", type, bad_range, vocab);
    CHECK(bad_pieces == 0, "%s: %d sentences whose pieces do not spell them", type, bad_pieces);
    CHECK(bad_buf == 0, "%s: %d encode_buf mismatches", type, bad_buf);
    CHECK(total > N_SENT * 3, "%s: %d tokens", type, total);
    printf("spm %s %d: %.2f tokens per sentence\n", type, vocab, (double)total / N_SENT);

    /* Specials are skipped by decode; UNK; out-of-range ids; empty text. */
    int32_t *ids = NULL;
    int n = 0;
    CHECK(tokenizer_encode(t, corpus[0], strlen(corpus[0]), &ids, &n) == NMT_OK, "encode");
    int32_t framed[256];
    int m = 0;
    framed[m++] = NMT_BOS_ID;
    for (int k = 0; k < n && m < 250; k++) framed[m++] = ids[k];
    framed[m++] = NMT_EOS_ID;
    framed[m++] = NMT_PAD_ID;
    framed[m++] = NMT_PAD_ID;
    char *text = NULL;
    CHECK(tokenizer_decode(t, framed, m, &text) == NMT_OK, "decode framed");
    CHECK_EQ_STR(text, corpus[0]);
    nmt_free(text);
    nmt_free(ids);
    int32_t bad_id[2] = {5, vocab};
    text = NULL;
    CHECK_EQ_INT(tokenizer_decode(t, bad_id, 2, &text), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "outside the vocabulary");
    CHECK(text == NULL, "no text on error");
    ids = NULL;
    CHECK(tokenizer_encode(t, "", 0, &ids, &n) == NMT_OK && n == 0 && ids, "empty encode");
    nmt_free(ids);
    const char *euro = "ka \xe2\x82\xac to"; /* "€" is not in the corpus */
    CHECK(tokenizer_encode(t, euro, strlen(euro), &ids, &n) == NMT_OK, "encode euro");
    int has_unk = 0;
    for (int k = 0; k < n; k++) has_unk |= ids[k] == NMT_UNK_ID;
    CHECK(has_unk, "an unseen character encodes to UNK");
    CHECK(tokenizer_decode(t, ids, n, &text) == NMT_OK, "decode unk");
    CHECK_CONTAINS(text, " \xe2\x81\x87 "); /* " ⁇ " */
    nmt_free(text);
    nmt_free(ids);

    /* serialize / deserialize */
    uint8_t *bytes = NULL;
    size_t nbytes = 0;
    CHECK(tokenizer_serialize(t, &bytes, &nbytes) == NMT_OK && nbytes > 8, "serialize");
    CHECK(bytes && memcmp(bytes, "NMTTOK\x01\x00", 8) == 0, "serialized tag");
    Tokenizer *t2 = NULL;
    CHECK(tokenizer_deserialize(bytes, nbytes, &t2) == NMT_OK && t2, "deserialize: %s",
          nmt_error_message());
    if (t2) {
        CHECK_EQ_INT(tokenizer_vocab_size(t2), vocab);
        CHECK(same_encodings(t, t2, N_SENT), "deserialized model encodes the same");
        uint8_t *bytes2 = NULL;
        size_t nbytes2 = 0;
        CHECK(tokenizer_serialize(t2, &bytes2, &nbytes2) == NMT_OK && nbytes2 == nbytes &&
                  memcmp(bytes, bytes2, nbytes) == 0,
              "re-serialized bytes are identical");
        nmt_free(bytes2);
        tokenizer_free(t2);
    }
    /* truncated payload, bad tag */
    t2 = NULL;
    CHECK_EQ_INT(tokenizer_deserialize(bytes, nbytes / 2, &t2), NMT_ERR_FORMAT);
    CHECK(t2 == NULL, "no tokenizer from truncated bytes");
    bytes[0] = 'X';
    CHECK_EQ_INT(tokenizer_deserialize(bytes, nbytes, &t2), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "NMTTOK");
    nmt_free(bytes);

    /* save / load the .model file */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.model", test_tmpdir(), type);
    CHECK(tokenizer_save(t, path) == NMT_OK, "save: %s", nmt_error_message());
    Tokenizer *t3 = NULL;
    CHECK(tokenizer_load(path, &t3) == NMT_OK && t3, "load: %s", nmt_error_message());
    if (t3) {
        CHECK_EQ_INT(tokenizer_kind(t3), TOKENIZER_SPM);
        CHECK(same_encodings(t, t3, N_SENT), "loaded model encodes the same");
        tokenizer_free(t3);
    }

    /* The command-line tools agree on ids, pieces and decoding. */
    if (!have_tool("spm_encode") || !have_tool("spm_decode")) {
        printf("SKIP spm_encode/spm_decode not on PATH: command-line check of %s\n", type);
    } else {
        enum { N_CLI = 200 };
        char in_path[1024], cmd[8192];
        snprintf(in_path, sizeof in_path, "%s/cli_in.txt", test_tmpdir());
        FILE *f = fopen(in_path, "w");
        for (int i = 0; i < N_CLI; i++) fprintf(f, "%s\n", corpus[i]);
        fclose(f);
        const char *dir = test_tmpdir();
        snprintf(cmd, sizeof cmd,
                 "spm_encode --model=%s --output_format=id < %s > %s/cli_id.txt 2>/dev/null && "
                 "spm_encode --model=%s --output_format=piece < %s > %s/cli_piece.txt "
                 "2>/dev/null && spm_decode --model=%s --input_format=id < %s/cli_id.txt > "
                 "%s/cli_dec.txt 2>/dev/null",
                 path, in_path, dir, path, in_path, dir, path, dir, dir);
        CHECK(system(cmd) == 0, "running %s", cmd);
        char p_id[1100], p_piece[1100], p_dec[1100];
        snprintf(p_id, sizeof p_id, "%s/cli_id.txt", dir);
        snprintf(p_piece, sizeof p_piece, "%s/cli_piece.txt", dir);
        snprintf(p_dec, sizeof p_dec, "%s/cli_dec.txt", dir);
        FILE *fi = fopen(p_id, "r"), *fp = fopen(p_piece, "r"), *fd = fopen(p_dec, "r");
        int bad_ids = 0, bad_p = 0, bad_dec = 0, lines = 0;
        char li[8192], lp[8192], ld[8192];
        while (fi && fp && fd && fgets(li, sizeof li, fi) && fgets(lp, sizeof lp, fp) &&
               fgets(ld, sizeof ld, fd)) {
            li[strcspn(li, "\n")] = lp[strcspn(lp, "\n")] = ld[strcspn(ld, "\n")] = '\0';
            int32_t *x = NULL;
            int nx = 0;
            tokenizer_encode(t, corpus[lines], strlen(corpus[lines]), &x, &nx);
            char want_ids[8192] = "", want_p[8192] = "";
            for (int k = 0; k < nx; k++) {
                char num[16];
                snprintf(num, sizeof num, "%s%d", k ? " " : "", x[k]);
                strcat(want_ids, num);
                if (k) strcat(want_p, " ");
                strcat(want_p, tokenizer_piece(t, x[k]));
            }
            bad_ids += strcmp(li, want_ids) != 0;
            bad_p += strcmp(lp, want_p) != 0;
            bad_dec += strcmp(ld, corpus[lines]) != 0;
            nmt_free(x);
            lines++;
        }
        if (fi) fclose(fi);
        if (fp) fclose(fp);
        if (fd) fclose(fd);
        CHECK_EQ_INT(lines, N_CLI);
        CHECK(bad_ids == 0, "%s: spm_encode ids differ on %d lines", type, bad_ids);
        CHECK(bad_p == 0, "%s: spm_encode pieces differ on %d lines", type, bad_p);
        CHECK(bad_dec == 0, "%s: spm_decode differs on %d lines", type, bad_dec);
    }

    /* Same seed, same corpus: the same model, byte for byte. */
    Tokenizer *again = train_spm(type, vocab, 7, NULL);
    CHECK(again, "second training");
    if (again) {
        uint8_t *b1 = NULL, *b2 = NULL;
        size_t n1 = 0, n2 = 0;
        tokenizer_serialize(t, &b1, &n1);
        tokenizer_serialize(again, &b2, &n2);
        CHECK(n1 == n2 && b1 && b2 && memcmp(b1, b2, n1) == 0,
              "%s: same seed gives an identical model", type);
        nmt_free(b1);
        nmt_free(b2);
        tokenizer_free(again);
    }
    tokenizer_free(t);
}

static void check_spm_errors(void) {
    NmtStatus s;
    /* vocab_size beyond what the corpus gives */
    Tokenizer *t = train_spm("unigram", 50000, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK(t == NULL, "no model");
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size = 50000");
    CHECK_CONTAINS(nmt_error_message(), "Please set it to a value <=");
    t = train_spm("bpe", 50000, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size = 50000");
    /* smaller than the alphabet */
    t = train_spm("unigram", 12, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size = 12");
    /* no room for the specials; a bad model type */
    t = train_spm("unigram", 4, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_vocab_size = 4");
    t = train_spm("char", 100, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "char");

    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_SPM);
    /* a custom key in the message; the soft limit */
    spec.vocab_size = 50000;
    spec.vocab_size_key = "data.joint_vocab_size";
    ArraySource src = source_of(corpus, N_SENT);
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "data.joint_vocab_size = 50000");
    spec.spm_hard_vocab_limit = 0;
    src = source_of(corpus, N_SENT);
    CHECK(tokenizer_train(&spec, array_next, &src, &t) == NMT_OK, "soft limit: %s",
          nmt_error_message());
    if (t) {
        int v = tokenizer_vocab_size(t);
        CHECK(v > 100 && v < 50000, "soft-limit vocabulary %d", v);
        printf("spm unigram with vocab_size 50000 and a soft limit: %d pieces\n", v);
        tokenizer_free(t);
    }

    /* byte fallback: unseen characters become byte pieces, not UNK */
    tokenizer_spec_init(&spec, TOKENIZER_SPM);
    spec.vocab_size = 400;
    spec.spm_byte_fallback = 1;
    src = source_of(corpus, N_SENT);
    t = NULL;
    CHECK(tokenizer_train(&spec, array_next, &src, &t) == NMT_OK, "byte fallback: %s",
          nmt_error_message());
    if (t) {
        const char *euro = "ka \xe2\x82\xac to";
        int32_t *ids = NULL;
        int n = 0;
        char *text = NULL;
        CHECK(tokenizer_encode(t, euro, strlen(euro), &ids, &n) == NMT_OK, "encode");
        int unk = 0;
        for (int k = 0; k < n; k++) unk |= ids[k] == NMT_UNK_ID;
        CHECK(!unk, "byte fallback gives no UNK");
        CHECK(tokenizer_decode(t, ids, n, &text) == NMT_OK, "decode");
        CHECK_EQ_STR(text, euro);
        CHECK(tokenizer_piece_to_id(t, "<0xE2>") > NMT_EOS_ID, "byte piece <0xE2>");
        nmt_free(text);
        nmt_free(ids);
        tokenizer_free(t);
    }

    /* The seed drives sentence sampling (spm_max_sentences): the same seed
     * gives the same model, another seed another sample and model. */
    {
        uint8_t *b[3] = {NULL, NULL, NULL};
        size_t nb[3] = {0, 0, 0};
        const uint64_t seeds[3] = {11, 11, 12};
        for (int k = 0; k < 3; k++) {
            tokenizer_spec_init(&spec, TOKENIZER_SPM);
            spec.vocab_size = 200;
            spec.spm_max_sentences = 1000;
            spec.seed = seeds[k];
            src = source_of(corpus, N_SENT);
            t = NULL;
            CHECK(tokenizer_train(&spec, array_next, &src, &t) == NMT_OK, "sampled: %s",
                  nmt_error_message());
            if (t) tokenizer_serialize(t, &b[k], &nb[k]);
            tokenizer_free(t);
        }
        CHECK(b[0] && b[1] && nb[0] == nb[1] && memcmp(b[0], b[1], nb[0]) == 0,
              "sampled training with the same seed is identical");
        CHECK(b[0] && b[2] && (nb[0] != nb[2] || memcmp(b[0], b[2], nb[0]) != 0),
              "another seed samples other sentences");
        for (int k = 0; k < 3; k++) nmt_free(b[k]);
    }

    /* the source's failure and message come back unchanged */
    tokenizer_spec_init(&spec, TOKENIZER_SPM);
    spec.vocab_size = 200;
    src = source_of(corpus, N_SENT);
    src.fail_after = 100;
    src.fail_code = -NMT_ERR_FORMAT;
    t = NULL;
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "corpus.txt:100: injected failure");
    CHECK(t == NULL, "no model after a source failure");
    src = source_of(corpus, N_SENT);
    src.fail_after = 5;
    src.fail_code = -1;
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_IO);
    /* an empty corpus */
    src = source_of(corpus, 0);
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "no non-empty sentences");

    /* bad files */
    const char *dir = test_tmpdir();
    char path[1024];
    const char junk[] = "this is not a sentencepiece model\n";
    snprintf(path, sizeof path, "%s", test_write_file(dir, "junk.model", junk, sizeof junk - 1));
    t = NULL;
    s = tokenizer_load(path, &t);
    CHECK(s == NMT_ERR_FORMAT, "junk model: %s", nmt_status_name(s));
    CHECK_CONTAINS(nmt_error_message(), path);
    CHECK(t == NULL, "no model from junk");
    snprintf(path, sizeof path, "%s", test_write_file(dir, "empty.model", "", 0));
    CHECK_EQ_INT(tokenizer_load(path, &t), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), path);
    snprintf(path, sizeof path, "%s/does-not-exist.model", dir);
    CHECK_EQ_INT(tokenizer_load(path, &t), NMT_ERR_IO);
    CHECK_CONTAINS(nmt_error_message(), path);
    /* a model trained with SentencePiece's default ids (no pad, unk=0
     * bos=1 eos=2): loaded with <pad> added at 0 and every other id one
     * higher: each sentence's ids are spm_encode's with the original
     * model plus one (unk too); a serialized copy is the moved model, in
     * place */
    if (have_tool("spm_train") && have_tool("spm_encode")) {
        char in_path[1024], cmd[8192], out_path[1100];
        snprintf(in_path, sizeof in_path, "%s/spm_train_in.txt", dir);
        snprintf(out_path, sizeof out_path, "%s/default_ids.ids", dir);
        FILE *f = fopen(in_path, "w");
        for (int i = 0; i < N_SENT; i++) fprintf(f, "%s\n", corpus[i]);
        fclose(f);
        snprintf(cmd, sizeof cmd,
                 "spm_train --input=%s --model_prefix=%s/default_ids --vocab_size=100 "
                 "--minloglevel=2 >/dev/null 2>&1 && spm_encode --model=%s/default_ids.model --output_format=id < %s > %s",
                 in_path, dir, dir, in_path, out_path);
        CHECK(system(cmd) == 0, "spm_train, spm_encode");
        snprintf(path, sizeof path, "%s/default_ids.model", dir);
        CHECK_EQ_INT(tokenizer_load(path, &t), NMT_OK);
        int given[NMT_N_SPECIAL];
        CHECK(t && tokenizer_spm_moved_specials(t, given), "the default ids are moved");
        CHECK(given[0] == -1 && given[1] == 0 && given[2] == 1 && given[3] == 2, "given ids %d %d %d %d", given[0],
              given[1], given[2], given[3]);
        CHECK_EQ_INT(tokenizer_vocab_size(t), 101);
        const char *want[NMT_N_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};
        for (int k = 0; k < NMT_N_SPECIAL; k++) CHECK_EQ_STR(tokenizer_piece(t, k), want[k]);
        FILE *fp = fopen(out_path, "r");
        char line[8192];
        int lines = 0, bad = 0;
        while (fp && lines < N_SENT && fgets(line, sizeof line, fp)) {
            line[strcspn(line, "\n")] = '\0';
            int32_t *x = NULL;
            int nx = 0;
            tokenizer_encode(t, corpus[lines], strlen(corpus[lines]), &x, &nx);
            char got[8192] = "";
            for (int k = 0; k < nx; k++) {
                char num[16];
                snprintf(num, sizeof num, "%s%d", k ? " " : "", x[k] - 1);
                strcat(got, num);
            }
            bad += strcmp(got, line) != 0;
            nmt_free(x);
            lines++;
        }
        if (fp) fclose(fp);
        CHECK(lines == N_SENT && bad == 0, "moved model's ids - 1 differ from spm_encode's on %d of %d lines", bad,
              lines);
        uint8_t *bytes = NULL;
        size_t n = 0;
        Tokenizer *again = NULL;
        CHECK_EQ_INT(tokenizer_serialize(t, &bytes, &n), NMT_OK);
        CHECK_EQ_INT(tokenizer_deserialize(bytes, n, &again), NMT_OK);
        CHECK(again && !tokenizer_spm_moved_specials(again, given) && same_encodings(t, again, N_SENT),
              "the serialized moved model has its specials in place and encodes the same");
        tokenizer_free(again);
        nmt_free(bytes);
        tokenizer_free(t);
        t = NULL;
    } else {
        printf("SKIP spm_train not on PATH: model with foreign special ids\n");
    }
}

/* ---- words ------------------------------------------------------------------ */

static char *word_lines[] = {
    "the cat sat on the mat",
    "the dog sat  on\tthe\xc2\xa0log",            /* double space, tab, U+00A0 */
    "a cat saw a dog <unk> <s>",                  /* specials are not words */
    "zebra\xe3\x80\x80gr\xc3\xbcn ba b\r\n",      /* U+3000, "grün", CRLF */
    "",
};
static const char *word_file =
    "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nthe\t4\na\t2\ncat\t2\ndog\t2\non\t2\nsat\t2\n"
    "b\t1\nba\t1\ngr\xc3\xbcn\t1\nlog\t1\nmat\t1\nsaw\t1\nzebra\t1\n";

static Tokenizer *train_words(int vocab, int min_freq, NmtStatus *status) {
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_WORD);
    spec.vocab_size = vocab;
    spec.min_freq = min_freq;
    ArraySource src = source_of(word_lines, (int)NMT_ARRAY_LEN(word_lines));
    Tokenizer *t = NULL;
    *status = tokenizer_train(&spec, array_next, &src, &t);
    return t;
}

static void check_encode(const Tokenizer *t, const char *text, const int32_t *want, int n_want) {
    int32_t *ids = NULL;
    int n = -1;
    CHECK(tokenizer_encode(t, text, strlen(text), &ids, &n) == NMT_OK, "encode %s", text);
    int same = n == n_want;
    for (int i = 0; same && i < n; i++) same = ids[i] == want[i];
    CHECK(same, "encode \"%s\": %d ids, want %d", text, n, n_want);
    nmt_free(ids);
}

static void check_words(void) {
    NmtStatus s;
    Tokenizer *t = train_words(0, 1, &s);
    CHECK(s == NMT_OK && t, "word training: %s", nmt_error_message());
    if (!t) return;
    static const char *order[] = {"<pad>", "<unk>", "<s>", "</s>", "the", "a", "cat", "dog",
                                  "on", "sat", "b", "ba", "gr\xc3\xbcn", "log", "mat", "saw",
                                  "zebra"};
    static const int counts[] = {0, 0, 0, 0, 4, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(tokenizer_kind(t), TOKENIZER_WORD);
    CHECK(tokenizer_spm_type(t) == NULL, "a word tokenizer has no SentencePiece type");
    CHECK_EQ_INT(tokenizer_vocab_size(t), (int)NMT_ARRAY_LEN(order));
    uint8_t *ser = NULL;
    size_t nser = 0;
    CHECK(tokenizer_serialize(t, &ser, &nser) == NMT_OK, "serialize words");
    for (int i = 0; i < (int)NMT_ARRAY_LEN(order); i++) {
        CHECK_EQ_STR(tokenizer_piece(t, i), order[i]);
        CHECK_EQ_INT(tokenizer_piece_to_id(t, order[i]), i < 4 ? NMT_UNK_ID : i);
    }
    CHECK(tokenizer_piece(t, 17) == NULL, "out of range piece");
    {
        int32_t w1[] = {4, 6, 9, 8, 4, 14};
        check_encode(t, "the cat sat on the mat", w1, 6);
        int32_t w2[] = {4, 16, 1, 12};
        check_encode(t, "the zebra eats gr\xc3\xbcn", w2, 4);
        int32_t w3[] = {4, 6};
        check_encode(t, "  the\t\tcat \xe2\x80\x83 ", w3, 2); /* U+2003 em space */
        int32_t w4[] = {1, 1, 1, 1};
        check_encode(t, "<s> </s> <pad> <unk>", w4, 4);
        check_encode(t, " \t ", NULL, 0);
        int32_t w5[] = {11, 10}; /* "ba" and "b" must not be confused */
        check_encode(t, "ba b", w5, 2);
    }
    {
        int32_t ids[] = {2, 4, 16, 1, 12, 3, 0, 0};
        char *text = NULL;
        CHECK(tokenizer_decode(t, ids, 8, &text) == NMT_OK, "decode");
        CHECK_EQ_STR(text, "the zebra <unk> gr\xc3\xbcn");
        nmt_free(text);
        int32_t bad[] = {4, 17};
        CHECK_EQ_INT(tokenizer_decode(t, bad, 2, &text), NMT_ERR_RUNTIME);
        CHECK(tokenizer_decode(t, ids, 0, &text) == NMT_OK && text && text[0] == '\0',
              "empty decode");
        nmt_free(text);
        const char *in = "a dog saw the cat on the log";
        int32_t *enc = NULL;
        int n = 0;
        CHECK(tokenizer_encode(t, in, strlen(in), &enc, &n) == NMT_OK, "encode");
        CHECK(tokenizer_decode(t, enc, n, &text) == NMT_OK, "decode");
        CHECK_EQ_STR(text, in);
        nmt_free(text);
        nmt_free(enc);
    }

    /* the file: exact content, then load */
    char path[1024];
    snprintf(path, sizeof path, "%s/words.vocab", test_tmpdir());
    CHECK(tokenizer_save(t, path) == NMT_OK, "save words: %s", nmt_error_message());
    char *content = slurp(path);
    CHECK_EQ_STR(content, word_file);
    free(content);
    Tokenizer *t2 = NULL;
    CHECK(tokenizer_load(path, &t2) == NMT_OK && t2, "load words: %s", nmt_error_message());
    if (t2) {
        CHECK_EQ_INT(tokenizer_kind(t2), TOKENIZER_WORD);
        CHECK_EQ_INT(tokenizer_vocab_size(t2), 17);
        int32_t w[] = {4, 16, 1, 12};
        check_encode(t2, "the zebra eats gr\xc3\xbcn", w, 4);
        tokenizer_free(t2);
    }
    /* the counts, through the word module */
    {
        WordVocab *v = NULL;
        CHECK(word_vocab_parse(word_file, strlen(word_file), "mem", &v) == NMT_OK, "parse");
        for (int i = 0; v && i < (int)NMT_ARRAY_LEN(counts); i++)
            CHECK_EQ_INT(word_vocab_count(v, i), counts[i]);
        word_vocab_free(v);
    }
    /* serialize / deserialize */
    CHECK(ser && nser == 8 + strlen(word_file) && memcmp(ser, "NMTTOK\x01\x01", 8) == 0 &&
              memcmp(ser + 8, word_file, nser - 8) == 0,
          "serialized words");
    t2 = NULL;
    CHECK(tokenizer_deserialize(ser, nser, &t2) == NMT_OK && t2, "deserialize words");
    if (t2) {
        int32_t w[] = {5, 7, 15};
        check_encode(t2, "a dog saw", w, 3);
        tokenizer_free(t2);
    }
    nmt_free(ser);
    tokenizer_free(t);

    /* vocab_size and min_freq cut the list */
    t = train_words(8, 1, &s);
    CHECK(s == NMT_OK && t && tokenizer_vocab_size(t) == 8, "vocab_size 8");
    if (t) {
        CHECK_EQ_STR(tokenizer_piece(t, 7), "dog");
        int32_t w[] = {4, 6, 1, 1, 4, 1};
        check_encode(t, "the cat sat on the mat", w, 6);
        tokenizer_free(t);
    }
    t = train_words(0, 2, &s);
    CHECK(s == NMT_OK && t && tokenizer_vocab_size(t) == 10, "min_freq 2");
    if (t) {
        CHECK_EQ_STR(tokenizer_piece(t, 9), "sat");
        tokenizer_free(t);
    }
    t = train_words(1000, 5, &s); /* nothing survives: only the specials, refused */
    CHECK(s == NMT_ERR_CONFIG && !t, "min_freq 5 leaves no word: status %d", (int)s);
    CHECK_CONTAINS(nmt_error_message(), "data.word_min_freq = 5: no word of the training corpus occurs that often");
    tokenizer_free(t);

    /* errors */
    t = train_words(3, 1, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "data.word_vocab_size = 3");
    t = train_words(100, 0, &s);
    CHECK_EQ_INT(s, NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "min_freq");
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_WORD);
    ArraySource src = source_of(word_lines, 5);
    src.fail_after = 3;
    src.fail_code = -NMT_ERR_FORMAT;
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "corpus.txt:3: injected failure");
    char *blank[] = {"", " \t "};
    src = source_of(blank, 2);
    CHECK_EQ_INT(tokenizer_train(&spec, array_next, &src, &t), NMT_ERR_RUNTIME);
    CHECK_CONTAINS(nmt_error_message(), "no words");

    static const struct { const char *name, *text, *needle; } bad_files[] = {
        {"count.vocab", "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nfoo\tx\n", "count.vocab:5: bad count"},
        {"dup.vocab", "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nfoo\t2\nbar\t1\nfoo\t1\n",
         "dup.vocab:7: duplicate word \"foo\""},
        {"specials.vocab", "<pad>\t0\nfoo\t1\n", "specials.vocab:2: expected the special token"},
        {"notab.vocab", "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nfoo 3\n", "notab.vocab:5"},
        {"space.vocab", "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nfo o\t3\n", "space.vocab:5"},
        {"short.vocab", "<pad>\t0\n<unk>\t0\n", "short.vocab: a word vocabulary needs"},
        {"special2.vocab", "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\n<s>\t4\n", "special2.vocab:5"},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad_files); i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s",
                 test_write_file(test_tmpdir(), bad_files[i].name, bad_files[i].text,
                                 strlen(bad_files[i].text)));
        t = NULL;
        CHECK_EQ_INT(tokenizer_load(p, &t), NMT_ERR_FORMAT);
        CHECK_CONTAINS(nmt_error_message(), bad_files[i].needle);
        CHECK(t == NULL, "no tokenizer from %s", bad_files[i].name);
    }
}

/* Every allocation failure is reported as NMT_ERR_NOMEM and nothing crashes. */
static void check_alloc_failures(void) {
    int ok = 0, bad = 0;
    for (long k = 1; k < 400 && !ok; k++) {
        TokenizerSpec spec;
        tokenizer_spec_init(&spec, TOKENIZER_WORD);
        ArraySource src = source_of(word_lines, 5);
        Tokenizer *t = NULL;
        nmt_alloc_fail_at(k);
        NmtStatus s = tokenizer_train(&spec, array_next, &src, &t);
        nmt_alloc_fail_at(0);
        if (s == NMT_OK) {
            ok = 1;
            uint8_t *b = NULL;
            size_t n = 0;
            for (long j = 1; j <= 3; j++) {
                Tokenizer *t2 = NULL;
                tokenizer_serialize(t, &b, &n);
                nmt_alloc_fail_at(j);
                NmtStatus s2 = tokenizer_deserialize(b, n, &t2);
                nmt_alloc_fail_at(0);
                bad += s2 != NMT_ERR_NOMEM || t2 != NULL;
                nmt_free(b);
            }
            int32_t *ids = NULL;
            int nid = 0;
            nmt_alloc_fail_at(1);
            s = tokenizer_encode(t, "the cat", 7, &ids, &nid);
            nmt_alloc_fail_at(0);
            bad += s != NMT_ERR_NOMEM || ids != NULL;
            tokenizer_free(t);
        } else {
            bad += s != NMT_ERR_NOMEM || t != NULL;
        }
    }
    CHECK(ok, "word training eventually succeeds");
    CHECK(bad == 0, "%d allocation failures not reported as NMT_ERR_NOMEM", bad);

    /* spm: the model object, encode buffers and decode output */
    NmtStatus s;
    Tokenizer *t = train_spm("unigram", 200, 3, &s);
    if (!t) return;
    uint8_t *b = NULL;
    size_t n = 0;
    CHECK(tokenizer_serialize(t, &b, &n) == NMT_OK, "serialize");
    for (long j = 1; j <= 2; j++) {
        Tokenizer *t2 = NULL;
        nmt_alloc_fail_at(j);
        s = tokenizer_deserialize(b, n, &t2);
        nmt_alloc_fail_at(0);
        CHECK(s == NMT_ERR_NOMEM && t2 == NULL, "spm deserialize, failure %ld: %s", j,
              nmt_status_name(s));
        tokenizer_free(t2);
    }
    nmt_free(b);
    int32_t *ids = NULL;
    int nid = 0;
    nmt_alloc_fail_at(1);
    s = tokenizer_encode(t, corpus[0], strlen(corpus[0]), &ids, &nid);
    nmt_alloc_fail_at(0);
    CHECK(s == NMT_ERR_NOMEM && ids == NULL, "spm encode: %s", nmt_status_name(s));
    CHECK(tokenizer_encode(t, corpus[0], strlen(corpus[0]), &ids, &nid) == NMT_OK, "encode");
    char *text = NULL;
    nmt_alloc_fail_at(1);
    s = tokenizer_decode(t, ids, nid, &text);
    nmt_alloc_fail_at(0);
    CHECK(s == NMT_ERR_NOMEM && text == NULL, "spm decode: %s", nmt_status_name(s));
    nmt_free(ids);
    tokenizer_free(t);
}

/* ---- Multi30k --------------------------------------------------------------- */

typedef struct {
    gzFile f;
    char line[1 << 16];
    long n, limit;
} GzSource;

static int gz_next(void *ctx, const char **line, size_t *len) {
    GzSource *g = ctx;
    if (g->limit > 0 && g->n >= g->limit) return 0;
    if (!gzgets(g->f, g->line, sizeof g->line)) return 0;
    size_t l = strlen(g->line);
    while (l > 0 && (g->line[l - 1] == '\n' || g->line[l - 1] == '\r')) l--;
    g->line[l] = '\0';
    g->n++;
    *line = g->line;
    *len = l;
    return 1;
}

static void check_multi30k(void) {
    const char *dir = test_multi30k_dir();
    if (!dir) {
        printf("SKIP Multi30k not found: unigram 8000 on train.de.gz\n");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/train.de.gz", dir);
    static GzSource g;
    g.f = gzopen(path, "rb");
    g.n = 0;
    g.limit = 0;
    CHECK(g.f != NULL, "open %s", path);
    if (!g.f) return;
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_SPM);
    spec.vocab_size = 8000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    Tokenizer *t = NULL;
    NmtStatus s = tokenizer_train(&spec, gz_next, &g, &t);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    gzclose(g.f);
    CHECK(s == NMT_OK && t, "Multi30k training: %s", nmt_error_message());
    if (!t) return;
    printf("Multi30k train.de (%ld sentences): unigram 8000 trained in %.2f s (1 thread)\n", g.n,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    CHECK_EQ_INT(g.n, 29000);
    CHECK_EQ_INT(tokenizer_vocab_size(t), 8000);

    g.f = gzopen(path, "rb");
    g.n = 0;
    g.limit = 1000;
    const char *line;
    size_t len;
    int bad = 0, tokens = 0, unk = 0, spaced = 0;
    int32_t *ids = NULL;
    int cap = 0, n = 0;
    while (g.f && gz_next(&g, &line, &len) == 1) {
        /* nmt_nfkc collapses runs of spaces (a few Multi30k lines have
         * double spaces): the round trip gives the collapsed line */
        char want[1 << 16];
        size_t o = 0;
        for (size_t k = 0; k < len; k++)
            if (line[k] != ' ' || (o > 0 && want[o - 1] != ' ')) want[o++] = line[k];
        while (o > 0 && want[o - 1] == ' ') o--;
        want[o] = '\0';
        spaced += o != len;
        char *text = NULL;
        if (tokenizer_encode_buf(t, line, len, &ids, &n, &cap) != NMT_OK ||
            tokenizer_decode(t, ids, n, &text) != NMT_OK || strcmp(text, want) != 0) {
            if (bad++ < 3) fprintf(stderr, "Multi30k line %ld does not round-trip\n", g.n);
        }
        tokens += n;
        for (int k = 0; k < n; k++) unk += ids[k] == NMT_UNK_ID;
        nmt_free(text);
    }
    if (g.f) gzclose(g.f);
    nmt_free(ids);
    CHECK_EQ_INT(g.n, 1000);
    CHECK(bad == 0, "%d of the first 1000 Multi30k lines do not round-trip", bad);
    CHECK_EQ_INT(unk, 0);
    printf("Multi30k: first 1000 lines round-trip (%d with extra spaces, collapsed), %.2f "
           "pieces per line\n", spaced, tokens / 1000.0);
    tokenizer_free(t);
}

int main(void) {
    nmt_log_quiet(1);
    make_corpus();
    check_spm_model("unigram", 400);
    check_spm_model("bpe", 300);
    check_spm_errors();
    check_words();
    check_alloc_failures();
    check_multi30k();
    free_corpus();
    return test_summary("test_tokenizer");
}
