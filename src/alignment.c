/* alignment.c: word alignments from attention (alignment.h). */
#include "alignment.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data/word_vocab.h"

int alignment_parse(const char *value, AlignSpec *spec) {
    if (!strcmp(value, "hard") || !strcmp(value, "soft")) {
        spec->threshold = 0;
        spec->soft = value[0] == 's';
        return 0;
    }
    char *end;
    double x = strtod(value, &end);
    if (end == value || *end || !(x > 0 && x <= 1)) return -1;
    spec->threshold = x;
    spec->soft = 0;
    return 0;
}

int alignment_take_option(int argc, char **argv, int *i, AlignOptions *o) {
    const char *value;
    int r = cli_take_string(argc, argv, i, "--alignment", &value);
    if (r > 0 && alignment_parse(value, &o->spec) < 0) {
        nmt_fail(NMT_ERR_USAGE, "--alignment must be hard, soft or a threshold in (0, 1], got '%s'", value);
        return -1;
    }
    if (r) return r > 0 ? (o->on = 1) : r;
    static const char *const units[] = {"words", "tokens", NULL};
    r = cli_take_choice(argc, argv, i, "--alignment-units", units, &o->spec.tokens);
    if (r > 0) o->units_given = 1;
    return r;
}

NmtStatus alignment_check_options(const AlignOptions *o) {
    if (o->units_given && !o->on)
        return nmt_fail(NMT_ERR_USAGE, "--alignment-units sets what --alignment counts: give --alignment hard "
                        "(or soft, or a threshold) too");
    return NMT_OK;
}

int alignment_token_words(const char *text, size_t len, const TokenSpan *spans, int n, WordRange *words) {
    /* word_at[i]: the word of byte i, -1 for a space byte */
    int *word_at = nmt_malloc((len ? len : 1) * sizeof *word_at);
    int n_words = 0;
    if (word_at) {
        for (size_t i = 0; i < len; i++) word_at[i] = -1;
        for (size_t pos = 0, b, e; word_next(text, len, &pos, &b, &e); n_words++)
            for (size_t i = b; i < e; i++) word_at[i] = n_words;
    }
    for (int t = 0; t < n; t++) {
        words[t].first = -1, words[t].last = -2;
        size_t b = spans[t].begin, e = spans[t].end < len ? spans[t].end : len;
        for (size_t i = b; word_at && i < e; i++) {
            if (word_at[i] < 0) continue;
            if (words[t].first < 0) words[t].first = word_at[i];
            words[t].last = word_at[i];
        }
    }
    nmt_free(word_at);
    /* tokens without a word of their own: the next token's first, else the previous one's last */
    int next = -1;
    for (int t = n - 1; t >= 0; t--) {
        if (words[t].first >= 0) next = words[t].first;
        else if (next >= 0) words[t].first = words[t].last = next;
    }
    int prev = 0;
    for (int t = 0; t < n; t++) {
        if (words[t].first < 0) words[t].first = words[t].last = prev;
        prev = words[t].last;
    }
    return n_words;
}

/* Marks in row (ns source units) the source units of the tokens chosen in attention row a. */
static void mark_row(const AlignSpec *spec, const float *a, int src_n, const WordRange *src_words,
                     unsigned char *row) {
    if (src_n <= 0) return;
    int best = 0;
    for (int s = 0; s < src_n; s++) {
        bool chosen;
        if (spec->threshold > 0) {
            chosen = a[s] >= spec->threshold;
        } else {
            if (a[s] > a[best]) best = s;
            chosen = false;
        }
        if (chosen)
            for (int w = src_words[s].first; w <= src_words[s].last; w++) row[w] = 1;
    }
    if (spec->threshold <= 0)
        for (int w = src_words[best].first; w <= src_words[best].last; w++) row[w] = 1;
}

/* Soft: output word j's row of weights over the n_src_words source words
 * into f (alignment.h): its tokens' rows summed into words, averaged. */
static void render_soft(FILE *f, const float *attn, int T, int S, int src_n, const WordRange *src_words,
                        int n_src_words, const WordRange *tgt_words, int n_tgt_words, double *row) {
    int lo = 0;
    for (int j = 0; j < n_tgt_words; j++) {
        for (int w = 0; w < n_src_words; w++) row[w] = 0;
        while (lo < T && tgt_words[lo].last < j) lo++;
        int n_tok = 0;
        for (int t = lo; t < T && tgt_words[t].first <= j; t++, n_tok++)
            for (int s = 0; s < src_n; s++) {
                const WordRange *r = &src_words[s];
                double share = attn[(size_t)t * S + s] / (r->last - r->first + 1);
                for (int w = r->first; w <= r->last; w++) row[w] += share;
            }
        if (j) fputc(' ', f);
        for (int w = 0; w < n_src_words; w++) fprintf(f, "%s%.4f", w ? "," : "", n_tok ? row[w] / n_tok : 0.0);
    }
}

NmtStatus alignment_render(const AlignSpec *spec, const float *attn, int T, int S, int src_n,
                           const WordRange *src_words, int n_src_words, const WordRange *tgt_words,
                           int n_tgt_words, char **out) {
    *out = NULL;
    WordRange *ident = NULL;
    if (spec->tokens) { /* token units: every token its own "word" */
        int m = src_n > T ? src_n : T;
        ident = nmt_malloc((size_t)(m > 0 ? m : 1) * sizeof *ident);
        if (!ident) return nmt_fail_nomem("alignment");
        for (int k = 0; k < m; k++) ident[k].first = ident[k].last = k;
        src_words = tgt_words = ident;
        n_src_words = src_n;
        n_tgt_words = T;
    }
    /* soft: a row of weights (double), else of chosen marks */
    size_t row_size = spec->soft ? sizeof(double) : 1;
    void *row = nmt_malloc((size_t)(n_src_words > 0 ? n_src_words : 1) * row_size);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = row ? open_memstream(&buf, &blen) : NULL;
    if (!f) {
        nmt_free(row);
        nmt_free(ident);
        return nmt_fail_nomem("alignment");
    }
    if (spec->soft && src_n > 0)
        render_soft(f, attn, T, S, src_n, src_words, n_src_words, tgt_words, n_tgt_words, row);
    /* output word j: the tokens whose range holds it (ranges ascend with t) */
    int lo = 0;
    unsigned char *marks = row;
    for (int j = 0; !spec->soft && j < n_tgt_words; j++) {
        memset(marks, 0, (size_t)n_src_words);
        while (lo < T && tgt_words[lo].last < j) lo++;
        for (int t = lo; t < T && tgt_words[t].first <= j; t++)
            mark_row(spec, attn + (size_t)t * S, src_n, src_words, marks);
        for (int s = 0; s < n_src_words; s++)
            if (marks[s]) fprintf(f, "%s%d-%d", ftell(f) ? " " : "", s, j);
    }
    fclose(f);
    nmt_free(row);
    nmt_free(ident);
    *out = nmt_strdup(buf ? buf : "");
    free(buf);
    return *out ? NMT_OK : nmt_fail_nomem("alignment");
}

NmtStatus alignment_of_pair(const AlignSpec *spec, const float *attn, int T, int S, int src_n, const char *src_text,
                            const TokenSpan *src_spans, const char *tgt_text, const TokenSpan *tgt_spans,
                            char **out) {
    if (src_n == 0) T = 0; /* nothing to align to */
    if (spec->tokens || T == 0) return alignment_render(spec, attn, T, S, src_n, NULL, 0, NULL, 0, out);
    WordRange *sw = nmt_malloc((size_t)src_n * sizeof *sw), *tw = nmt_malloc((size_t)T * sizeof *tw);
    NmtStatus st = sw && tw ? NMT_OK : nmt_fail_nomem("alignment");
    if (!st) {
        int n_sw = alignment_token_words(src_text, strlen(src_text), src_spans, src_n, sw);
        int n_tw = alignment_token_words(tgt_text, strlen(tgt_text), tgt_spans, T, tw);
        st = alignment_render(spec, attn, T, S, src_n, sw, n_sw, tw, n_tw, out);
    }
    nmt_free(sw);
    nmt_free(tw);
    return st;
}
