/* test_alignment.c: what `nmt translate --alignment` is built from: the
 * token spans of tokenizer_encode_spans / tokenizer_decode_spans
 * (SentencePiece, trained here on generated sentences, and words), and
 * alignment.h: parsing the option, tokens to words, hard and threshold
 * pairs in word and token units. The command itself:
 * tests/test_alignment_cli.sh. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alignment.h"
#include "common.h"
#include "data/tokenizer.h"
#include "data/word_vocab.h"
#include "test_util.h"

/* ---- a generated corpus ---------------------------------------------------- */

enum { N_SENT = 400 };
static char *corpus[N_SENT];

static uint64_t lcg_state = 99;
static uint32_t lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static void make_corpus(void) {
    static const char *syl[] = {"ka", "to", "mi", "ne", "ru", "sa", "ber", "stein", "\xc3\xa4", "\xc3\xb6",
                                "sch", "lin", "gen", "au", "ei", "wald", "haus", "ung", "er", "en"};
    for (int s = 0; s < N_SENT; s++) {
        char buf[512] = "";
        int n = 2 + (int)(lcg() % 9);
        for (int k = 0; k < n; k++) {
            if (k) strcat(buf, " ");
            int m = 1 + (int)(lcg() % 3);
            for (int j = 0; j < m; j++) strcat(buf, syl[lcg() % NMT_ARRAY_LEN(syl)]);
        }
        if (lcg() % 2) strcat(buf, " .");
        corpus[s] = strdup(buf);
    }
}

typedef struct {
    char **lines;
    int n, next;
} Lines;

static int lines_next(void *ctx, const char **line, size_t *len) {
    Lines *l = ctx;
    if (l->next >= l->n) return 0;
    *line = l->lines[l->next++];
    *len = strlen(*line);
    return 1;
}

static Tokenizer *train(TokenizerKind kind, int vocab) {
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, kind);
    spec.vocab_size = vocab;
    Lines src = {corpus, N_SENT, 0};
    Tokenizer *t = NULL;
    NmtStatus s = tokenizer_train(&spec, lines_next, &src, &t);
    CHECK(s == NMT_OK && t, "training: %s", nmt_error_message());
    return t;
}

static bool is_space_byte(char c) {
    return c == ' ' || c == '\t';
}

/* ---- spans ------------------------------------------------------------------ */

/* Encoding: spans ascend without overlap, and every non-space byte of the
 * text lies in exactly one of them. */
static void check_encode_spans(const Tokenizer *t, const char *text, const char *what) {
    size_t len = strlen(text);
    int32_t *ids = NULL, *plain = NULL;
    TokenSpan *spans = NULL;
    int n = -1, n_plain = -1;
    NmtStatus s = tokenizer_encode_spans(t, text, len, &ids, &spans, &n);
    CHECK(s == NMT_OK, "%s: encode_spans of [%s]: %s", what, text, nmt_error_message());
    if (s) return;
    CHECK(tokenizer_encode(t, text, len, &plain, &n_plain) == NMT_OK && n_plain == n &&
              (n == 0 || !memcmp(plain, ids, (size_t)n * sizeof *ids)),
          "%s: encode_spans gives other ids than encode for [%s]", what, text);
    int *owner = calloc(len + 1, sizeof *owner);
    bool ordered = true;
    for (int k = 0; k < n; k++) {
        if (spans[k].begin > spans[k].end || spans[k].end > len || (k && spans[k].begin < spans[k - 1].end))
            ordered = false;
        for (size_t i = spans[k].begin; i < spans[k].end && i < len; i++) owner[i]++;
    }
    CHECK(ordered, "%s: spans of [%s] not in order", what, text);
    bool covered = true;
    for (size_t i = 0; i < len; i++)
        if (!is_space_byte(text[i]) && owner[i] != 1) covered = false;
    CHECK(covered, "%s: the spans of [%s] do not cover each non-space byte once", what, text);
    free(owner);
    nmt_free(ids);
    nmt_free(plain);
    nmt_free(spans);
}

/* Decoding: the same text as tokenizer_decode, spans tile it in order, and
 * a token's span shows its piece (U+2581 as a space; the first piece loses
 * its space) or the word. */
static void check_decode_spans(const Tokenizer *t, const int32_t *ids, int n, const char *what) {
    TokenSpan spans[64];
    char *text = NULL, *plain = NULL;
    NMT_ASSERT(n <= 64);
    NmtStatus s = tokenizer_decode_spans(t, ids, n, &text, spans);
    CHECK(s == NMT_OK, "%s: decode_spans: %s", what, nmt_error_message());
    if (s) return;
    CHECK(tokenizer_decode(t, ids, n, &plain) == NMT_OK && !strcmp(plain, text), "%s: decode_spans text [%s] vs [%s]",
          what, text, plain ? plain : "");
    size_t at = 0, len = strlen(text);
    bool tiles = true, shows = true;
    for (int k = 0; k < n; k++) {
        bool special = ids[k] == NMT_PAD_ID || ids[k] == NMT_BOS_ID || ids[k] == NMT_EOS_ID;
        if (special) {
            if (spans[k].begin != spans[k].end) tiles = false;
            continue;
        }
        /* words: one space between spans; spm: none */
        if (tokenizer_kind(t) == TOKENIZER_WORD && at && spans[k].begin == at + 1) at++;
        if (spans[k].begin != at || spans[k].end < at) tiles = false;
        at = spans[k].end;
        if (ids[k] == NMT_UNK_ID) continue;
        char want[256] = "";
        const char *p = tokenizer_piece(t, ids[k]);
        for (size_t i = 0, o = 0; p[i] && o + 1 < sizeof want; o++) {
            if (!strncmp(p + i, "\xe2\x96\x81", 3)) {
                want[o] = ' ';
                i += 3;
            } else {
                want[o] = p[i++];
            }
            want[o + 1] = '\0';
        }
        const char *w = want;
        if (spans[k].begin == 0 && w[0] == ' ') w++;
        size_t wl = strlen(w);
        if (spans[k].end - spans[k].begin != wl || memcmp(text + spans[k].begin, w, wl)) {
            if (shows) fprintf(stderr, "%s: token %d span [%zu,%zu) of [%s] is not [%s]\n", what, k, spans[k].begin,
                               spans[k].end, text, w);
            shows = false;
        }
    }
    CHECK(tiles && at == len, "%s: decode spans do not tile [%s]", what, text);
    CHECK(shows, "%s: a decode span does not show its piece", what);
    nmt_free(text);
    nmt_free(plain);
}

static void check_spans(const Tokenizer *t, const char *what) {
    for (int i = 0; i < N_SENT; i += 7) check_encode_spans(t, corpus[i], what);
    /* spaces around and between, a tab, an unknown character, an empty line */
    check_encode_spans(t, "  kato  mi\tne \xe4\xb8\x96 ru  ", what);
    check_encode_spans(t, "", what);
    check_encode_spans(t, "   ", what);
    for (int i = 0; i < N_SENT; i += 11) {
        int32_t *ids = NULL;
        int n = 0;
        CHECK(tokenizer_encode(t, corpus[i], strlen(corpus[i]), &ids, &n) == NMT_OK, "encode");
        if (n > 60) n = 60;
        check_decode_spans(t, ids, n, what);
        /* with specials and UNK among the ids */
        int32_t mixed[64];
        int m = 0;
        mixed[m++] = NMT_BOS_ID;
        for (int k = 0; k < n && m < 61; k++) {
            mixed[m++] = ids[k];
            if (k == 1) mixed[m++] = NMT_UNK_ID;
        }
        mixed[m++] = NMT_EOS_ID;
        mixed[m++] = NMT_PAD_ID;
        check_decode_spans(t, mixed, m, what);
        nmt_free(ids);
    }
    int32_t none[1];
    check_decode_spans(t, none, 0, what);
}

/* An spm UNK decodes to " \u2047 ": its span holds that, so it is a word of its own. */
static void check_spm_unk_span(const Tokenizer *t) {
    int32_t *ids = NULL;
    int n = 0;
    CHECK(tokenizer_encode(t, "kato mi", 7, &ids, &n) == NMT_OK && n >= 2, "encode");
    int32_t with_unk[16] = {ids[0], NMT_UNK_ID};
    int m = 2;
    for (int k = 1; k < n && m < 16; k++) with_unk[m++] = ids[k];
    TokenSpan spans[16];
    char *text = NULL;
    CHECK(tokenizer_decode_spans(t, with_unk, m, &text, spans) == NMT_OK, "decode");
    CHECK(!strncmp(text + spans[1].begin, " \xe2\x81\x87 ", 5) && spans[1].end - spans[1].begin == 5,
          "UNK span of [%s]: [%zu,%zu)", text, spans[1].begin, spans[1].end);
    WordRange w[16];
    int words = alignment_token_words(text, strlen(text), spans, m, w);
    CHECK(w[1].first == 1 && w[1].last == 1 && w[0].last == 0 && words >= 3,
          "UNK is word 1 of [%s]: %d..%d of %d words", text, w[1].first, w[1].last, words);
    nmt_free(text);
    nmt_free(ids);
}

/* ---- alignment.h ------------------------------------------------------------ */

static void check_parse(void) {
    AlignSpec x = {-1, 0, 7};
    CHECK(alignment_parse("hard", &x) == 0 && x.threshold == 0 && !x.soft, "hard");
    CHECK(alignment_parse("soft", &x) == 0 && x.threshold == 0 && x.soft == 1, "soft");
    CHECK(alignment_parse("0.5", &x) == 0 && x.threshold == 0.5 && !x.soft, "0.5");
    CHECK(alignment_parse("1", &x) == 0 && x.threshold == 1, "1");
    const char *bad[] = {"0", "1.5", "-0.2", "Soft", "", "0.5x", "nan", "HARD", "inf", "softer"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad); i++) {
        x = (AlignSpec){7, 0, 3};
        CHECK(alignment_parse(bad[i], &x) == -1 && x.threshold == 7 && x.soft == 3, "'%s' must be refused", bad[i]);
    }
}

static void check_token_words(void) {
    /* "Ein  ⁇  Mann" as SentencePiece decodes Ein, ▁, <unk>, ▁Mann, and an EOS at the end */
    const char *text = "Ein  \xe2\x81\x87  Mann";
    TokenSpan spans[] = {{0, 3}, {3, 4}, {4, 9}, {9, 14}, {14, 14}};
    WordRange w[5];
    int n = alignment_token_words(text, strlen(text), spans, 5, w);
    CHECK_EQ_INT(n, 3);
    int want[5] = {0, 1, 1, 2, 2}; /* the lone space takes the next token's word; the empty span the previous */
    for (int k = 0; k < 5; k++)
        CHECK(w[k].first == want[k] && w[k].last == want[k], "token %d: words %d..%d, want %d", k, w[k].first,
              w[k].last, want[k]);
    /* a token over two words (an --unk-dict entry "New York"), and a U+3000 between words */
    const char *t2 = "in New York\xe3\x80\x80today";
    TokenSpan s2[] = {{0, 2}, {2, 11}, {11, 19}};
    n = alignment_token_words(t2, strlen(t2), s2, 3, w);
    CHECK_EQ_INT(n, 4);
    CHECK(w[0].first == 0 && w[0].last == 0 && w[1].first == 1 && w[1].last == 2 && w[2].first == 3 &&
              w[2].last == 3,
          "New York: %d..%d %d..%d %d..%d", w[0].first, w[0].last, w[1].first, w[1].last, w[2].first, w[2].last);
    /* a piece inside a word: "Fahr" + "rad" */
    TokenSpan s3[] = {{0, 4}, {4, 7}};
    n = alignment_token_words("Fahrrad", 7, s3, 2, w);
    CHECK(n == 1 && w[0].first == 0 && w[1].first == 0 && w[1].last == 0, "pieces of one word");
    /* no words at all */
    TokenSpan s4[] = {{0, 1}, {1, 1}};
    n = alignment_token_words(" ", 1, s4, 2, w);
    CHECK(n == 0 && w[0].first == 0 && w[1].first == 0, "no words: %d", n);
}

static void check_render(const AlignSpec *spec, const float *attn, int T, int S, int src_n, const WordRange *sw,
                         int nsw, const WordRange *tw, int ntw, const char *want) {
    char *got = NULL;
    NmtStatus s = alignment_render(spec, attn, T, S, src_n, sw, nsw, tw, ntw, &got);
    CHECK(s == NMT_OK && got && !strcmp(got, want), "threshold %g tokens %d: got [%s], want [%s]", spec->threshold,
          spec->tokens, got ? got : "(null)", want);
    nmt_free(got);
}

static void check_pairs(void) {
    /* 4 output tokens over 3 source tokens (stride S = 4: a padded column) */
    const float attn[] = {
        0.75f, 0.125f, 0.125f, 0.9f, /* the pad column is never read */
        0.125f, 0.125f, 0.75f, 0.0f,
        0.375f, 0.375f, 0.25f, 0.0f, /* a tie: the first */
        0.25f, 0.25f, 0.5f, 0.0f,    /* exactly the threshold: aligned */
    };
    AlignSpec hard = {0, 1, 0}, thr = {0.25, 1, 0};
    check_render(&hard, attn, 4, 4, 3, NULL, 0, NULL, 0, "0-0 2-1 0-2 2-3");
    check_render(&thr, attn, 4, 4, 3, NULL, 0, NULL, 0, "0-0 2-1 0-2 1-2 2-2 0-3 1-3 2-3");
    AlignSpec high = {0.95, 1, 0};
    check_render(&high, attn, 4, 4, 3, NULL, 0, NULL, 0, "");
    /* words: source tokens 0,1 are word 0, token 2 word 1; output tokens 0 and 1 word 0, 2 and 3 word 1 */
    WordRange sw[] = {{0, 0}, {0, 0}, {1, 1}}, tw[] = {{0, 0}, {0, 0}, {1, 1}, {1, 1}};
    AlignSpec hard_w = {0, 0, 0}, thr_w = {0.25, 0, 0};
    check_render(&hard_w, attn, 4, 4, 3, sw, 2, tw, 2, "0-0 1-0 0-1 1-1");
    check_render(&thr_w, attn, 4, 4, 3, sw, 2, tw, 2, "0-0 1-0 0-1 1-1");
    /* a source token over two words aligns both; an output word no token covers has no pair */
    WordRange sw2[] = {{0, 1}, {2, 2}, {3, 3}}, tw2[] = {{0, 0}, {2, 2}, {2, 2}, {3, 3}};
    check_render(&hard_w, attn, 4, 4, 3, sw2, 4, tw2, 4, "0-0 1-0 0-2 1-2 3-2 3-3");
    /* a sentence pair through its spans: source "ab cd" as "ab", " c", "d"; output "X YZ" as "X", " Y", "Z" */
    const float pair_attn[] = {0.6f, 0.3f, 0.1f, /**/ 0.1f, 0.2f, 0.7f, /**/ 0.5f, 0.25f, 0.25f};
    TokenSpan ps[] = {{0, 2}, {2, 4}, {4, 5}}, pt[] = {{0, 1}, {1, 3}, {3, 4}};
    char *got = NULL;
    CHECK(alignment_of_pair(&hard_w, pair_attn, 3, 3, 3, "ab cd", ps, "X YZ", pt, &got) == NMT_OK && got &&
              !strcmp(got, "0-0 0-1 1-1"),
          "alignment_of_pair words: [%s]", got ? got : "");
    nmt_free(got);
    CHECK(alignment_of_pair(&hard, pair_attn, 3, 3, 3, "ab cd", ps, "X YZ", pt, &got) == NMT_OK && got &&
              !strcmp(got, "0-0 2-1 0-2"),
          "alignment_of_pair tokens: [%s]", got ? got : "");
    nmt_free(got);
    CHECK(alignment_of_pair(&hard_w, pair_attn, 3, 3, 0, "", ps, "X YZ", pt, &got) == NMT_OK && got && !*got,
          "alignment_of_pair without a source: [%s]", got ? got : "");
    nmt_free(got);
    /* nothing to align */
    check_render(&hard, attn, 0, 4, 3, NULL, 0, NULL, 0, "");
    check_render(&hard, attn, 4, 4, 0, NULL, 0, NULL, 0, "");

    /* soft: the rows themselves in token units (the pad column left out) */
    AlignSpec soft = {0, 1, 1}, soft_w = {0, 0, 1};
    check_render(&soft, attn, 4, 4, 3, NULL, 0, NULL, 0,
                 "0.7500,0.1250,0.1250 0.1250,0.1250,0.7500 0.3750,0.3750,0.2500 0.2500,0.2500,0.5000");
    /* words: source word 0 sums tokens 0 and 1; output word 0 averages rows 0 and 1:
     * ((0.875 + 0.25) / 2, (0.125 + 0.75) / 2), word 1 rows 2 and 3: ((0.75 + 0.5) / 2, (0.25 + 0.5) / 2) */
    check_render(&soft_w, attn, 4, 4, 3, sw, 2, tw, 2, "0.5625,0.4375 0.6250,0.3750");
    /* a source token over two words gives each half; an output word no token covers is all 0 */
    check_render(&soft_w, attn, 4, 4, 3, sw2, 4, tw2, 4,
                 "0.3750,0.3750,0.1250,0.1250 0.0000,0.0000,0.0000,0.0000 0.1250,0.1250,0.2500,0.5000 "
                 "0.1250,0.1250,0.2500,0.5000");
    check_render(&soft, attn, 0, 4, 3, NULL, 0, NULL, 0, "");
    check_render(&soft_w, attn, 4, 4, 0, sw, 0, tw, 2, "");
    CHECK(alignment_of_pair(&soft_w, pair_attn, 3, 3, 3, "ab cd", ps, "X YZ", pt, &got) == NMT_OK && got &&
              !strcmp(got, "0.6000,0.4000 0.3000,0.7000"),
          "alignment_of_pair soft words: [%s]", got ? got : "");
    nmt_free(got);
}

int main(void) {
    nmt_log_quiet(1);
    make_corpus();
    Tokenizer *spm = train(TOKENIZER_SPM, 60);
    Tokenizer *words = train(TOKENIZER_WORD, 0);
    if (spm) {
        check_spans(spm, "spm");
        check_spm_unk_span(spm);
    }
    if (words) check_spans(words, "words");
    tokenizer_free(spm);
    tokenizer_free(words);
    check_parse();
    check_token_words();
    check_pairs();
    for (int s = 0; s < N_SENT; s++) free(corpus[s]);
    return test_summary("test_alignment");
}
