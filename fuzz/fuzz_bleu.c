/* fuzz_bleu.c: libFuzzer target for BLEU and chrF (src/data/bleu.c,
 * src/data/chrf.c): the 13a tokenizer, Python-style lowercasing and
 * whitespace on arbitrary bytes (invalid UTF-8 included).
 *
 * Input: the hypothesis, then up to 4 references, separated by NUL bytes
 * (so segments may hold '\n', "-\n", entities, anything); no reference
 * means one empty reference. tok:13a/none, case:mixed/lc and chrF's
 * settings (word order 0-2, character order 0-10, beta 0/1/2/3/1000,
 * whitespace, eps smoothing) are chosen by a hash of the input.
 *
 * Properties (from the definitions, not from the code):
 *   - bleu_preprocess gives tokens joined by single ASCII spaces, with no
 *     whitespace inside a token and none at either end;
 *   - BLEU statistics: total_n = max(0, hyp_len - n + 1), 0 <= correct_n <=
 *     total_n, ref_len is the length of one of the references; adding a
 *     reference never lowers a match count (counts merge by maximum);
 *     bleu_add_sentence adds exactly bleu_sentence_stats;
 *   - a hypothesis scored against itself matches every n-gram (BLEU 100 once
 *     it has 4 tokens); the same for chrF (100 once it has a character or,
 *     with eps smoothing, n-grams of every order), whatever beta;
 *   - chrF keeps the statistics of one of the references; matches never
 *     exceed the hypothesis or reference n-gram counts; orders past
 *     character order + word order stay 0; keeping whitespace never lowers
 *     the character unigram count;
 *   - the bootstrap's float32 chrF is the float64 one give or take float32
 *     rounding;
 *   - scores are finite and within [0, 100] (give or take rounding); the
 *     formatted lines fit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bleu.h"
#include "data/chrf.h"
#include "fuzz_util.h"

enum { MAX_REFS = 4 };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    nmt_log_quiet(1);
    return 0;
}

/* Number of tokens of a preprocessed segment, checking its shape. */
static int64_t check_tokens(const char *s) {
    size_t len = strlen(s);
    if (len == 0) return 0;
    FUZZ_CHECK(s[0] != ' ' && s[len - 1] != ' ', "spaces at an end of \"%s\"", s);
    int64_t n = 1;
    for (size_t i = 0; i < len;) {
        if (s[i] == ' ') {
            FUZZ_CHECK(s[i + 1] != ' ', "two spaces in \"%s\"", s);
            n++;
            i++;
            continue;
        }
        FUZZ_CHECK(bleu_space_len(s + i, len - i) == 0, "whitespace inside a token of \"%s\"", s);
        size_t c = bleu_char_len(s + i, len - i);
        FUZZ_CHECK(c >= 1 && c <= len - i, "character length %zu at %zu of %zu", c, i, len);
        i += c;
    }
    return n;
}

static void check_bleu(const char *hyp, const char *const *refs, int n_refs, const BleuOptions *opt) {
    char *pre = NULL;
    FUZZ_CHECK(bleu_preprocess(hyp, opt, &pre) == NMT_OK, "preprocess: %s", nmt_error_message());
    int64_t hyp_tokens = check_tokens(pre);
    nmt_free(pre);
    int64_t ref_tokens[MAX_REFS];
    for (int k = 0; k < n_refs; k++) {
        FUZZ_CHECK(bleu_preprocess(refs[k], opt, &pre) == NMT_OK, "preprocess ref");
        ref_tokens[k] = check_tokens(pre);
        nmt_free(pre);
    }

    BleuStats prev;
    for (int k = 1; k <= n_refs; k++) {
        BleuStats s;
        FUZZ_CHECK(bleu_sentence_stats(hyp, refs, k, opt, &s) == NMT_OK, "stats: %s",
                   nmt_error_message());
        FUZZ_CHECK(s.hyp_len == hyp_tokens, "hyp_len %lld, %lld tokens", (long long)s.hyp_len,
                   (long long)hyp_tokens);
        int ref_ok = 0;
        for (int j = 0; j < k; j++) ref_ok |= s.ref_len == ref_tokens[j];
        FUZZ_CHECK(ref_ok, "ref_len %lld is no reference's length", (long long)s.ref_len);
        for (int n = 1; n <= BLEU_MAX_ORDER; n++) {
            int64_t want = s.hyp_len - n + 1 > 0 ? s.hyp_len - n + 1 : 0;
            FUZZ_CHECK(s.total[n - 1] == want, "total_%d = %lld for %lld tokens", n,
                       (long long)s.total[n - 1], (long long)s.hyp_len);
            FUZZ_CHECK(s.correct[n - 1] >= 0 && s.correct[n - 1] <= s.total[n - 1],
                       "correct_%d = %lld of %lld", n, (long long)s.correct[n - 1],
                       (long long)s.total[n - 1]);
            if (k > 1)
                FUZZ_CHECK(s.correct[n - 1] >= prev.correct[n - 1],
                           "adding reference %d lowered correct_%d", k, n);
        }
        BleuResult r;
        bleu_score(&s, &r);
        /* exp(mean(log p)) of four 100s may round a few ulps above 100, as in sacreBLEU */
        FUZZ_CHECK(isfinite(r.score) && r.score >= 0 && r.score <= 100 + 1e-9, "BLEU %.17g",
                   r.score);
        char sig[256], line[512];
        int need = bleu_signature(opt, k, 0, NULL, sig, sizeof sig);
        FUZZ_CHECK(need > 0 && need < (int)sizeof sig, "signature length %d", need);
        need = bleu_format_line(&r, sig, 1, line, sizeof line);
        FUZZ_CHECK(need > 0 && need < (int)sizeof line, "BLEU line length %d", need);
        if (k == n_refs) {
            BleuStats acc;
            bleu_stats_clear(&acc);
            FUZZ_CHECK(bleu_add_sentence(&acc, hyp, refs, k, opt) == NMT_OK, "add");
            FUZZ_CHECK(memcmp(&acc, &s, sizeof s) == 0, "bleu_add_sentence differs from the stats");
        }
        prev = s;
    }

    /* against itself */
    BleuStats self;
    FUZZ_CHECK(bleu_sentence_stats(hyp, &hyp, 1, opt, &self) == NMT_OK, "self stats");
    FUZZ_CHECK(self.ref_len == self.hyp_len, "self ref_len");
    for (int n = 0; n < BLEU_MAX_ORDER; n++)
        FUZZ_CHECK(self.correct[n] == self.total[n], "self correct_%d = %lld of %lld", n + 1,
                   (long long)self.correct[n], (long long)self.total[n]);
    BleuResult r;
    bleu_score(&self, &r);
    if (self.hyp_len >= BLEU_MAX_ORDER)
        FUZZ_CHECK(fabs(r.score - 100) < 1e-9, "self BLEU %.17g", r.score);
}

static void check_chrf(const char *hyp, const char *const *refs, int n_refs, const ChrfOptions *opt) {
    ChrfStats s;
    FUZZ_CHECK(chrf_sentence_stats(hyp, refs, n_refs, opt, &s) == NMT_OK, "chrF stats: %s",
               nmt_error_message());
    int found = 0;
    for (int k = 0; k < n_refs && !found; k++) {
        ChrfStats one;
        FUZZ_CHECK(chrf_sentence_stats(hyp, &refs[k], 1, opt, &one) == NMT_OK, "chrF one ref");
        found = memcmp(&one, &s, sizeof s) == 0;
    }
    FUZZ_CHECK(found, "the chrF statistics are no single reference's");
    for (int n = 0; n < CHRF_MAX_ORDER; n++) /* character orders, then word orders */
        FUZZ_CHECK(s.match[n] >= 0 && s.match[n] <= s.hyp[n] && s.match[n] <= s.ref[n],
                   "order %d: match %lld hyp %lld ref %lld", n + 1, (long long)s.match[n],
                   (long long)s.hyp[n], (long long)s.ref[n]);
    const int order = chrf_char_order(opt) + opt->word_order;
    for (int n = order; n < CHRF_MAX_ORDER; n++)
        FUZZ_CHECK(s.hyp[n] == 0 && s.ref[n] == 0 && s.match[n] == 0, "order %d past %d is not 0", n + 1, order);
    double score = chrf_score_opt(&s, opt);
    FUZZ_CHECK(isfinite(score) && score >= 0 && score <= 100 + 1e-9, "chrF %.17g", score);
    if (chrf_beta(opt) == CHRF_BETA && !opt->eps_smoothing)
        FUZZ_CHECK(chrf_score(&s) == score, "chrf_score %.17g, chrf_score_opt %.17g", chrf_score(&s), score);
    float f32[CHRF_N_STATS];
    int64_t flat[CHRF_N_STATS];
    chrf_stats_to_array(&s, flat);
    for (int k = 0; k < CHRF_N_STATS; k++) f32[k] = (float)flat[k];
    int python_float;
    double score32 = chrf_score_numpy_f32(f32, opt, &python_float);
    FUZZ_CHECK(fabs(score32 - score) < 1e-3, "float32 chrF %.17g, float64 %.17g", score32, score);
    ChrfStats acc;
    chrf_stats_clear(&acc);
    FUZZ_CHECK(chrf_add_sentence(&acc, hyp, refs, n_refs, opt) == NMT_OK, "chrF add");
    FUZZ_CHECK(memcmp(&acc, &s, sizeof s) == 0, "chrf_add_sentence differs from the stats");

    ChrfStats self;
    FUZZ_CHECK(chrf_sentence_stats(hyp, &hyp, 1, opt, &self) == NMT_OK, "chrF self");
    for (int n = 0; n < CHRF_MAX_ORDER; n++)
        FUZZ_CHECK(self.match[n] == self.hyp[n] && self.hyp[n] == self.ref[n],
                   "self order %d: match %lld hyp %lld ref %lld", n + 1, (long long)self.match[n],
                   (long long)self.hyp[n], (long long)self.ref[n]);
    int full = 1; /* n-grams of every order */
    for (int n = 0; n < order; n++) full &= self.hyp[n] > 0;
    if (opt->eps_smoothing ? full : self.hyp[0] > 0)
        FUZZ_CHECK(fabs(chrf_score_opt(&self, opt) - 100) < 1e-9, "self chrF %.17g", chrf_score_opt(&self, opt));
    ChrfOptions other = *opt;
    other.whitespace = !opt->whitespace;
    ChrfStats self_other;
    FUZZ_CHECK(chrf_sentence_stats(hyp, &hyp, 1, &other, &self_other) == NMT_OK, "chrF self, whitespace toggled");
    if (chrf_char_order(opt) > 0)
        FUZZ_CHECK(opt->whitespace ? self.hyp[0] >= self_other.hyp[0] : self.hyp[0] <= self_other.hyp[0],
                   "whitespace lowered the character unigrams: %lld with, %lld without",
                   (long long)(opt->whitespace ? self.hyp[0] : self_other.hyp[0]),
                   (long long)(opt->whitespace ? self_other.hyp[0] : self.hyp[0]));
    char sig[256], line[512];
    int need = chrf_signature(opt, n_refs, 0, NULL, sig, sizeof sig);
    FUZZ_CHECK(need > 0 && need < (int)sizeof sig, "chrF signature length %d", need);
    need = chrf_format_line(opt, score, sig, 1, line, sizeof line);
    FUZZ_CHECK(need > 0 && need < (int)sizeof line, "chrF line length %d", need);
}

static void check_text(const char *s) {
    size_t len = strlen(s);
    char *tok = NULL, *low = NULL;
    FUZZ_CHECK(bleu_tokenize_13a(s, &tok) == NMT_OK, "13a: %s", nmt_error_message());
    nmt_free(tok);
    FUZZ_CHECK(bleu_lower(s, len, &low) == NMT_OK, "lower: %s", nmt_error_message());
    nmt_free(low);
    char *copy = malloc(len + 1);
    if (!copy) return;
    memcpy(copy, s, len + 1);
    size_t n = bleu_collapse_spaces(copy, len, copy);
    FUZZ_CHECK(n <= len, "collapse grew %zu -> %zu", len, n);
    copy[n] = '\0';
    check_tokens(copy);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *parts[1 + MAX_REFS];
    int n_parts = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n_parts < 1 + MAX_REFS; i++) {
        if (i == size || buf[i] == '\0') {
            parts[n_parts++] = buf + start;
            start = i + 1;
        }
    }
    const char *hyp = parts[0];
    static const char *const no_ref[1] = {""};
    const char *const *refs = n_parts > 1 ? parts + 1 : no_ref;
    int n_refs = n_parts > 1 ? n_parts - 1 : 1;

    for (int i = 0; i < n_parts; i++) check_text(parts[i]);
    /* one combination per input (all four cost 4x the time) */
    uint64_t h = fuzz_hash(data, size);
    int lc = (int)(h & 1), tok = (int)(h >> 1 & 1);
    BleuOptions opt = {lc, tok ? BLEU_TOKENIZE_NONE : BLEU_TOKENIZE_13A};
    check_bleu(hyp, refs, n_refs, &opt);
    ChrfOptions copt = {.lowercase = lc, .word_order = (int)(h >> 2 & 3) % 3}; /* chrF2, chrF2+ or chrF2++ */
    int nc = (int)(h >> 4 & 15); /* 0..10, or the default 6 (11..15) */
    chrf_set_char_order(&copt, nc <= CHRF_MAX_CHAR_ORDER && (nc > 0 || copt.word_order > 0) ? nc : CHRF_CHAR_ORDER);
    static const int betas[5] = {CHRF_BETA, 0, 1, 3, CHRF_MAX_BETA};
    chrf_set_beta(&copt, betas[(h >> 8) % 5]);
    copt.whitespace = (int)(h >> 16 & 1);
    copt.eps_smoothing = (int)(h >> 17 & 1);
    check_chrf(hyp, refs, n_refs, &copt);
    free(buf);
    return 0;
}
