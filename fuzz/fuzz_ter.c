/* fuzz_ter.c: libFuzzer target for TER (src/data/ter.c): the tercom
 * tokenizer and normalizer, the beamed edit distance and the shift search
 * on arbitrary bytes (invalid UTF-8, CJK, entities, long repetitive lines).
 *
 * Input: the hypothesis, then up to 3 references, separated by NUL bytes;
 * no reference means one empty reference. The four options are chosen by a
 * hash of the input.
 *
 * Properties (from the definitions, not from the code):
 *   - ter_tokenize gives tokens joined by single ASCII spaces, none at
 *     either end, and is idempotent without normalization on valid UTF-8
 *     (which references rely on: removing punctuation from invalid UTF-8
 *     can join bytes into a character that lowercases);
 *   - one reference: |hyp words - ref words| <= edits <= max(hyp, ref words)
 *     (shifts keep the length and each one applied saves at least one
 *     edit, so TER never exceeds the plain word edit distance); edits are 0
 *     exactly when the token sequences are equal;
 *   - several references: the fewest edits of the references one by one, the
 *     average of their lengths; ter_add_sentence adds exactly that;
 *   - a hypothesis against itself has no edits; scores are finite, >= 0,
 *     and the formatted line fits. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bleu.h"
#include "data/corpus.h"
#include "data/ter.h"
#include "fuzz_util.h"

enum { MAX_REFS = 3 };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    nmt_log_quiet(1);
    return 0;
}

/* Number of words of a tokenized segment, checking its shape. */
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
        FUZZ_CHECK(bleu_space_len(s + i, len - i) == 0, "whitespace inside a word of \"%s\"", s);
        i += bleu_char_len(s + i, len - i);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0; /* the shift search is quadratic in the words */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *parts[1 + MAX_REFS];
    int n_parts = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n_parts < 1 + MAX_REFS; i++)
        if (i == size || buf[i] == '\0') {
            parts[n_parts++] = buf + start;
            start = i + 1;
        }
    static const char *const no_ref[1] = {""};
    const char *hyp = parts[0];
    const char *const *refs = n_parts > 1 ? parts + 1 : no_ref;
    int n_refs = n_parts > 1 ? n_parts - 1 : 1;
    uint64_t h = fuzz_hash(data, size);
    TerOptions opt = {(int)(h & 1), (int)(h >> 1 & 1), (int)(h >> 2 & 1), (int)(h >> 3 & 1)};

    char *ht = NULL;
    FUZZ_CHECK(ter_tokenize(hyp, &opt, &ht) == NMT_OK, "tokenize: %s", nmt_error_message());
    int64_t hyp_words = check_tokens(ht);
    if (!opt.normalized && utf8_validate(hyp, strlen(hyp), NULL)) {
        char *again = NULL;
        FUZZ_CHECK(ter_tokenize(ht, &opt, &again) == NMT_OK, "tokenize again");
        FUZZ_CHECK(!strcmp(again, ht), "not idempotent: \"%s\" -> \"%s\"", ht, again);
        nmt_free(again);
    }

    int64_t best = INT64_MAX, words = 0;
    for (int k = 0; k < n_refs; k++) {
        TerStats one;
        FUZZ_CHECK(ter_sentence_stats(hyp, &refs[k], 1, &opt, &one) == NMT_OK, "stats: %s", nmt_error_message());
        int64_t n = one.ref_words, lo = hyp_words > n ? hyp_words - n : n - hyp_words;
        int64_t hi = hyp_words > n ? hyp_words : n;
        FUZZ_CHECK(one.edits >= lo && one.edits <= hi, "%lld edits for %lld and %lld words",
                   (long long)one.edits, (long long)hyp_words, (long long)n);
        FUZZ_CHECK(one.ref_len == (double)n, "ref_len %g for %lld words", one.ref_len, (long long)n);
        /* no edits exactly when the words are the same: the reference as
         * the hypothesis sees it (tokenized twice when normalized) */
        char *rt = NULL, *rt2 = NULL;
        FUZZ_CHECK(ter_tokenize(refs[k], &opt, &rt) == NMT_OK, "tokenize ref");
        if (opt.normalized) FUZZ_CHECK(ter_tokenize(rt, &opt, &rt2) == NMT_OK, "tokenize ref twice");
        FUZZ_CHECK((one.edits == 0) == !strcmp(ht, rt2 ? rt2 : rt), "%lld edits: \"%s\" vs \"%s\"",
                   (long long)one.edits, ht, rt2 ? rt2 : rt);
        nmt_free(rt);
        nmt_free(rt2);
        if (one.edits < best) best = one.edits;
        words += n;
    }
    TerStats s, acc;
    FUZZ_CHECK(ter_sentence_stats(hyp, refs, n_refs, &opt, &s) == NMT_OK, "stats");
    FUZZ_CHECK(s.edits == best && s.ref_words == words && s.ref_len == (double)words / n_refs,
               "several references: %lld edits, %lld words", (long long)s.edits, (long long)s.ref_words);
    ter_stats_clear(&acc);
    FUZZ_CHECK(ter_add_sentence(&acc, hyp, refs, n_refs, &opt) == NMT_OK, "add");
    FUZZ_CHECK(memcmp(&acc, &s, sizeof s) == 0, "ter_add_sentence differs from the stats");
    double score = ter_score(&s);
    FUZZ_CHECK(isfinite(score) && score >= 0, "TER %.17g", score);
    char sig[256], line[512];
    int need = ter_signature(&opt, n_refs, 0, NULL, sig, sizeof sig);
    FUZZ_CHECK(need > 0 && need < (int)sizeof sig, "signature length %d", need);
    need = ter_format_line(score, sig, 1, line, sizeof line);
    FUZZ_CHECK(need > 0 && need < (int)sizeof line, "TER line length %d", need);

    /* against itself (as tokenized: normalization is not idempotent) */
    int64_t e = -1, n = -1;
    FUZZ_CHECK(ter_edits(ht, ht, &e, &n) == NMT_OK && e == 0 && n == hyp_words, "self: %lld edits",
               (long long)e);
    nmt_free(ht);
    free(buf);
    return 0;
}
