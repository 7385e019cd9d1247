/* chrf.c: sacreBLEU 2.6.0-exact chrF2 (character orders 1..6, beta 2,
 * whitespace removed, effective-order averaging) and chrF++ (word orders
 * too, over the words of chrf_words.c), its statistics with several
 * references, and its signature/line. The Unicode helpers (lowercasing,
 * whitespace) and n-gram multisets come from bleu.c. */
#include "data/chrf.h"

#include <stdio.h>
#include <string.h>

#include "data/bleu.h"
#include "data/chrf_words.h"

void chrf_stats_clear(ChrfStats *s) { memset(s, 0, sizeof *s); }

void chrf_stats_add(ChrfStats *acc, const ChrfStats *s) {
    for (int n = 0; n < CHRF_MAX_ORDER; n++) {
        acc->hyp[n] += s->hyp[n];
        acc->ref[n] += s->ref[n];
        acc->match[n] += s->match[n];
    }
}

void chrf_stats_to_array(const ChrfStats *s, int64_t out[CHRF_N_STATS]) {
    for (int n = 0; n < CHRF_MAX_ORDER; n++) {
        out[3 * n] = s->hyp[n];
        out[3 * n + 1] = s->ref[n];
        out[3 * n + 2] = s->match[n];
    }
}

/* The n-grams of one segment, lowercased if asked: those of 1..6 code
 * points with whitespace removed (''.join(line.split())), order n, then
 * with a word order those of 1..word_order words (chrf_words.h), order
 * CHRF_CHAR_ORDER + n, so that the two kinds never compare equal. */
typedef struct {
    char *text;                     /* whitespace-free UTF-8 */
    ChrfWords words;                /* with a word order */
    BleuNgram *v;                   /* merged n-grams with counts */
    size_t n_v;
    int64_t total[CHRF_MAX_ORDER];  /* n-grams of each order (with repeats) */
} SegmentNgrams;

static void segment_ngrams_free(SegmentNgrams *c) {
    nmt_free(c->text);
    chrf_words_free(&c->words);
    nmt_free(c->v);
    memset(c, 0, sizeof *c);
}

static void ngram_set(BleuNgram *g, const char *p, size_t len, uint32_t n) {
    g->p = p;
    g->len = (uint32_t)len;
    g->n = n;
    g->count = 1;
    bleu_ngram_hash(g);
}

static NmtStatus segment_ngrams(const char *line, const ChrfOptions *opt, SegmentNgrams *c) {
    memset(c, 0, sizeof *c);
    size_t len = strlen(line), w = 0, L = 0;
    NmtStatus st;
    if (opt->lowercase) {
        if ((st = bleu_lower(line, len, &c->text)) != NMT_OK) return st;
        len = strlen(c->text);
    } else if (!(c->text = nmt_strndup(line, len))) {
        return nmt_fail_nomem("chrF segment");
    }
    if (opt->word_order > 0 && (st = chrf_words_split(c->text, len, &c->words)) != NMT_OK) return st;
    char *s = c->text;
    for (size_t i = 0; i < len;) { /* drop whitespace in place */
        size_t k = bleu_space_len(s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        s[w++] = s[i++];
    }
    s[w] = '\0';
    uint32_t *pos = nmt_malloc((w + 1) * sizeof *pos);
    if (!pos) return nmt_fail_nomem("chrF offsets");
    for (size_t i = 0; i < w; i += bleu_char_len(s + i, w - i)) pos[L++] = (uint32_t)i;
    pos[L] = (uint32_t)w;
    size_t cap = 0, n_words = c->words.n_words;
    for (size_t n = 1; n <= CHRF_CHAR_ORDER; n++) {
        c->total[n - 1] = L >= n ? (int64_t)(L - n + 1) : 0;
        cap += (size_t)c->total[n - 1];
    }
    for (size_t n = 1; n <= (size_t)opt->word_order; n++) {
        c->total[CHRF_CHAR_ORDER + n - 1] = n_words >= n ? (int64_t)(n_words - n + 1) : 0;
        cap += (size_t)c->total[CHRF_CHAR_ORDER + n - 1];
    }
    c->v = nmt_malloc((cap ? cap : 1) * sizeof *c->v);
    if (!c->v) {
        nmt_free(pos);
        return nmt_fail_nomem("chrF n-grams");
    }
    size_t m = 0;
    for (uint32_t n = 1; n <= CHRF_CHAR_ORDER; n++)
        for (size_t i = 0; i + n <= L; i++) ngram_set(&c->v[m++], s + pos[i], pos[i + n] - pos[i], n);
    nmt_free(pos);
    const ChrfWords *ws = &c->words;
    for (uint32_t n = 1; n <= (uint32_t)opt->word_order; n++)
        for (size_t i = 0; i + n <= n_words; i++)
            ngram_set(&c->v[m++], ws->text + ws->start[i], chrf_words_span(ws, i, n), CHRF_CHAR_ORDER + n);
    c->n_v = bleu_ngrams_merge(c->v, m, 0);
    return NMT_OK;
}

/* CHRF._get_match_statistics for every order. */
static void match_stats(const SegmentNgrams *h, const SegmentNgrams *r, ChrfStats *out) {
    chrf_stats_clear(out);
    for (int n = 0; n < CHRF_MAX_ORDER; n++) {
        out->hyp[n] = r->total[n] > 0 ? h->total[n] : 0;
        out->ref[n] = r->total[n];
    }
    for (size_t i = 0; i < h->n_v; i++) {
        int64_t c = h->v[i].count, in_ref = bleu_ngrams_lookup(r->v, r->n_v, &h->v[i]);
        out->match[h->v[i].n - 1] += c < in_ref ? c : in_ref;
    }
}

NmtStatus chrf_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                              const ChrfOptions *opt, ChrfStats *out) {
    if (n_refs < 1) return nmt_fail(NMT_ERR_USAGE, "chrF needs at least one reference");
    if (opt->word_order < 0 || opt->word_order > CHRF_MAX_WORD_ORDER)
        return nmt_fail(NMT_ERR_USAGE, "chrF word order %d is outside 0..%d", opt->word_order,
                        CHRF_MAX_WORD_ORDER);
    SegmentNgrams h, r;
    NmtStatus st = segment_ngrams(hyp, opt, &h);
    if (st != NMT_OK) {
        segment_ngrams_free(&h);
        return st;
    }
    double best = -1.0;
    for (int k = 0; k < n_refs; k++) {
        if ((st = segment_ngrams(refs[k] ? refs[k] : "", opt, &r)) != NMT_OK) {
            segment_ngrams_free(&r);
            break;
        }
        ChrfStats s;
        match_stats(&h, &r, &s);
        double f = chrf_score(&s);
        if (f > best) {
            best = f;
            *out = s;
        }
        segment_ngrams_free(&r);
    }
    segment_ngrams_free(&h);
    return st;
}

NmtStatus chrf_add_sentence(ChrfStats *acc, const char *hyp, const char *const *refs, int n_refs,
                            const ChrfOptions *opt) {
    ChrfStats s;
    NmtStatus st = chrf_sentence_stats(hyp, refs, n_refs, opt, &s);
    if (st == NMT_OK) chrf_stats_add(acc, &s);
    return st;
}

double chrf_score(const ChrfStats *s) {
    const double eps = 1e-16, factor = CHRF_BETA * CHRF_BETA;
    double avg_prec = 0.0, avg_rec = 0.0;
    int effective_order = 0;
    for (int n = 0; n < CHRF_MAX_ORDER; n++) {
        double prec = s->hyp[n] > 0 ? (double)s->match[n] / (double)s->hyp[n] : eps;
        double rec = s->ref[n] > 0 ? (double)s->match[n] / (double)s->ref[n] : eps;
        if (s->hyp[n] > 0 && s->ref[n] > 0) {
            avg_prec += prec;
            avg_rec += rec;
            effective_order++;
        }
    }
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec == 0.0) return 0.0;
    double score = (1 + factor) * avg_prec * avg_rec;
    score /= ((factor * avg_prec) + avg_rec);
    return 100 * score;
}

float chrf_score_numpy_f32(const float *st) {
    const float factor = CHRF_BETA * CHRF_BETA;
    float avg_prec = 0.0f, avg_rec = 0.0f;
    int effective_order = 0;
    for (int n = 0; n < CHRF_MAX_ORDER; n++) {
        float h = st[3 * n], r = st[3 * n + 1], m = st[3 * n + 2];
        if (h > 0 && r > 0) {
            avg_prec += m / h;
            avg_rec += m / r;
            effective_order++;
        }
    }
    if (effective_order == 0) return 0.0f;
    avg_prec /= (float)effective_order;
    avg_rec /= (float)effective_order;
    if (avg_prec + avg_rec == 0.0f) return 0.0f;
    float score = (1 + factor) * avg_prec * avg_rec;
    score /= ((factor * avg_prec) + avg_rec);
    return 100 * score;
}

const char *chrf_name(const ChrfOptions *opt) {
    static const char *const names[CHRF_MAX_WORD_ORDER + 1] = {"chrF2", "chrF2+", "chrF2++",
                                                                 "chrF2+++", "chrF2++++"};
    int k = opt->word_order;
    return names[k < 0 ? 0 : k > CHRF_MAX_WORD_ORDER ? CHRF_MAX_WORD_ORDER : k];
}

int chrf_signature(const ChrfOptions *opt, int n_refs, int n_bootstrap, const char *seed,
                   char *buf, size_t cap) {
    char bs[32] = "", sd[64] = "";
    if (n_bootstrap > 0) snprintf(bs, sizeof bs, "bs:%d|", n_bootstrap);
    if (seed) snprintf(sd, sizeof sd, "seed:%s|", seed);
    return snprintf(buf, cap, "nrefs:%d|%s%scase:%s|eff:yes|nc:%d|nw:%d|space:no|version:%s", n_refs,
                    bs, sd, opt->lowercase ? "lc" : "mixed", CHRF_CHAR_ORDER, opt->word_order,
                    NMT_SACREBLEU_VERSION);
}

int chrf_format_line(const ChrfOptions *opt, double score, const char *signature, int width,
                     char *buf, size_t cap) {
    return bleu_format_score(chrf_name(opt), signature, score, width, NULL, NULL, buf, cap);
}
