/* chrf.c: sacreBLEU 2.6.0-exact chrF with every CHRF setting (character
 * and word orders, beta, whitespace, eps smoothing; see chrf.h), its
 * statistics with several references, its score in float64 and in NumPy
 * float32 arithmetic (the bootstrap's), and its name/signature/line.
 * chrF++'s words come from chrf_words.c; the Unicode helpers (lowercasing,
 * whitespace) and n-gram multisets from bleu.c. */
#include "data/chrf.h"

#include <stdio.h>
#include <string.h>

#include "data/bleu.h"
#include "data/chrf_words.h"

/* CHRF._compute_f_score's eps */
#define CHRF_EPS 1e-16

/* char_order and beta as stored: 0 stands for the default, and a number
 * v <= 0 is kept as v - 1 (0 as CHRF_ZERO, -1 as -2: a bad value stays bad) */
static int stored_value(int v, int dflt) { return v == 0 ? dflt : v < 0 ? v + 1 : v; }
static int stored_form(int v, int dflt) { return v == dflt ? 0 : v <= 0 ? v - 1 : v; }

int chrf_char_order(const ChrfOptions *opt) { return stored_value(opt->char_order, CHRF_CHAR_ORDER); }
int chrf_beta(const ChrfOptions *opt) { return stored_value(opt->beta, CHRF_BETA); }
void chrf_set_char_order(ChrfOptions *opt, int char_order) {
    opt->char_order = stored_form(char_order, CHRF_CHAR_ORDER);
}
void chrf_set_beta(ChrfOptions *opt, int beta) { opt->beta = stored_form(beta, CHRF_BETA); }

NmtStatus chrf_options_check(const ChrfOptions *opt) {
    int nc = chrf_char_order(opt), beta = chrf_beta(opt);
    if (opt->word_order < 0 || opt->word_order > CHRF_MAX_WORD_ORDER)
        return nmt_fail(NMT_ERR_USAGE, "chrF word order %d is outside 0..%d", opt->word_order,
                        CHRF_MAX_WORD_ORDER);
    if (nc < 0 || nc > CHRF_MAX_CHAR_ORDER)
        return nmt_fail(NMT_ERR_USAGE, "chrF character order %d is outside 0..%d", nc, CHRF_MAX_CHAR_ORDER);
    if (nc == 0 && opt->word_order == 0)
        return nmt_fail(NMT_ERR_USAGE, "chrF with character order 0 needs a word order of 1 or more "
                        "(no n-grams to count)");
    if (beta < 0 || beta > CHRF_MAX_BETA)
        return nmt_fail(NMT_ERR_USAGE, "chrF beta %d is outside 0..%d", beta, CHRF_MAX_BETA);
    return NMT_OK;
}

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

/* The n-grams of one segment, lowercased if asked: those of 1..nc code
 * points (whitespace removed, ''.join(line.split()), unless opt->whitespace),
 * key n for order n, then with a word order those of 1..word_order words
 * (chrf_words.h), key nc + n, so that the two kinds never compare equal and
 * key - 1 is the index of the order in ChrfStats. */
typedef struct {
    char *text;                     /* UTF-8, whitespace-free unless opt->whitespace */
    ChrfWords words;                /* with a word order */
    BleuNgram *v;                   /* merged n-grams with counts */
    size_t n_v;
    int64_t total[CHRF_MAX_ORDER];  /* n-grams of each order (with repeats), ChrfStats' index */
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
    const size_t nc = (size_t)chrf_char_order(opt), nw = (size_t)opt->word_order;
    size_t len = strlen(line), w = 0, L = 0;
    NmtStatus st;
    if (opt->lowercase) {
        if ((st = bleu_lower(line, len, &c->text)) != NMT_OK) return st;
        len = strlen(c->text);
    } else if (!(c->text = nmt_strndup(line, len))) {
        return nmt_fail_nomem("chrF segment");
    }
    if (nw > 0 && (st = chrf_words_split(c->text, len, &c->words)) != NMT_OK) return st;
    char *s = c->text;
    for (size_t i = 0; i < len;) { /* drop whitespace in place */
        size_t k = opt->whitespace ? 0 : bleu_space_len(s + i, len - i);
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
    for (size_t n = 1; n <= nc; n++) {
        c->total[n - 1] = L >= n ? (int64_t)(L - n + 1) : 0;
        cap += (size_t)c->total[n - 1];
    }
    for (size_t n = 1; n <= nw; n++) {
        c->total[nc + n - 1] = n_words >= n ? (int64_t)(n_words - n + 1) : 0;
        cap += (size_t)c->total[nc + n - 1];
    }
    c->v = nmt_malloc((cap ? cap : 1) * sizeof *c->v);
    if (!c->v) {
        nmt_free(pos);
        return nmt_fail_nomem("chrF n-grams");
    }
    size_t m = 0;
    for (size_t n = 1; n <= nc; n++)
        for (size_t i = 0; i + n <= L; i++) ngram_set(&c->v[m++], s + pos[i], pos[i + n] - pos[i], (uint32_t)n);
    nmt_free(pos);
    const ChrfWords *ws = &c->words;
    for (size_t n = 1; n <= nw; n++)
        for (size_t i = 0; i + n <= n_words; i++)
            ngram_set(&c->v[m++], ws->text + ws->start[i], chrf_words_span(ws, i, n), (uint32_t)(nc + n));
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
    NmtStatus st = chrf_options_check(opt);
    if (st != NMT_OK) return st;
    SegmentNgrams h, r;
    if ((st = segment_ngrams(hyp, opt, &h)) != NMT_OK) {
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
        double f = chrf_score_opt(&s, opt);
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

/* ------------------------------------------------------------------ */
/* Scores                                                              */
/* ------------------------------------------------------------------ */

/* CHRF._compute_f_score on Python ints (float64 arithmetic) over the
 * first `order` orders of s. */
static double f_score(const ChrfStats *s, int order, int beta, int eps_smoothing) {
    const double eps = CHRF_EPS, factor = (double)beta * beta;
    double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
    int effective_order = 0;
    for (int n = 0; n < order; n++) {
        double prec = s->hyp[n] > 0 ? (double)s->match[n] / (double)s->hyp[n] : eps;
        double rec = s->ref[n] > 0 ? (double)s->match[n] / (double)s->ref[n] : eps;
        if (eps_smoothing) { /* each order's F-score, eps for a zero one */
            double denom = factor * prec + rec;
            score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        }
        if (s->hyp[n] > 0 && s->ref[n] > 0) {
            avg_prec += prec;
            avg_rec += rec;
            effective_order++;
        }
    }
    if (eps_smoothing) return 100 * score / order;
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec == 0.0) return 0.0;
    score = (1 + factor) * avg_prec * avg_rec;
    score /= ((factor * avg_prec) + avg_rec);
    return 100 * score;
}

double chrf_score_opt(const ChrfStats *s, const ChrfOptions *opt) {
    return f_score(s, chrf_char_order(opt) + opt->word_order, chrf_beta(opt), opt->eps_smoothing);
}

double chrf_score(const ChrfStats *s) {
    /* the effective order skips the orders without n-grams, so all of them may be taken */
    return f_score(s, CHRF_MAX_ORDER, CHRF_BETA, 0);
}

/* A number of _compute_f_score on NumPy float32 statistics: an np.float32
 * or a Python float (a Python int is one too: it is exact in both). NumPy
 * 2 makes the Python operand weak: float32 op Python float converts the
 * Python float to float32 and computes in float32. */
typedef struct {
    double v;
    int f32; /* 1: np.float32 (v holds a float32 value) */
} PyNum;

static PyNum py_float(double v) { return (PyNum){v, 0}; }
static PyNum py_f32(float v) { return (PyNum){v, 1}; }
static PyNum py_add(PyNum a, PyNum b) {
    return a.f32 || b.f32 ? py_f32((float)a.v + (float)b.v) : py_float(a.v + b.v);
}
static PyNum py_mul(PyNum a, PyNum b) {
    return a.f32 || b.f32 ? py_f32((float)a.v * (float)b.v) : py_float(a.v * b.v);
}
static PyNum py_div(PyNum a, PyNum b) {
    return a.f32 || b.f32 ? py_f32((float)a.v / (float)b.v) : py_float(a.v / b.v);
}

double chrf_score_numpy_f32(const float *st, const ChrfOptions *opt, int *python_float) {
    const int order = chrf_char_order(opt) + opt->word_order, beta = chrf_beta(opt);
    const PyNum eps = py_float(CHRF_EPS), factor = py_float((double)beta * beta),
                one_plus = py_float(1.0 + (double)beta * beta);
    PyNum score = py_float(0.0), avg_prec = py_float(0.0), avg_rec = py_float(0.0);
    int effective_order = 0;
    for (int n = 0; n < order; n++) {
        float h = st[3 * n], r = st[3 * n + 1], m = st[3 * n + 2];
        PyNum prec = h > 0 ? py_f32(m / h) : eps;
        PyNum rec = r > 0 ? py_f32(m / r) : eps;
        if (opt->eps_smoothing) { /* each order's F-score, eps for a zero one */
            PyNum denom = py_add(py_mul(factor, prec), rec);
            score = py_add(score, denom.v > 0 ? py_div(py_mul(py_mul(one_plus, prec), rec), denom) : eps);
        }
        if (h > 0 && r > 0) {
            avg_prec = py_add(avg_prec, prec);
            avg_rec = py_add(avg_rec, rec);
            effective_order++;
        }
    }
    if (opt->eps_smoothing) {
        score = py_div(py_mul(py_float(100), score), py_float(order));
        *python_float = !score.f32;
        return score.v;
    }
    *python_float = 1; /* the literal 0.0 unless a float32 score comes */
    if (effective_order == 0) return 0.0;
    avg_prec = py_div(avg_prec, py_float(effective_order));
    avg_rec = py_div(avg_rec, py_float(effective_order));
    if (py_add(avg_prec, avg_rec).v == 0.0) return 0.0;
    score = py_mul(py_mul(one_plus, avg_prec), avg_rec);
    score = py_div(score, py_add(py_mul(factor, avg_prec), avg_rec));
    score = py_mul(py_float(100), score);
    *python_float = !score.f32;
    return score.v;
}

/* ------------------------------------------------------------------ */
/* Name, signature, line                                               */
/* ------------------------------------------------------------------ */

const char *chrf_name(const ChrfOptions *opt, char buf[CHRF_NAME_CAP]) {
    int k = opt->word_order < 0 ? 0 : opt->word_order > CHRF_MAX_WORD_ORDER ? CHRF_MAX_WORD_ORDER : opt->word_order;
    snprintf(buf, CHRF_NAME_CAP, "chrF%d%.*s", chrf_beta(opt), k, "++++");
    return buf;
}

int chrf_signature(const ChrfOptions *opt, int n_refs, int n_bootstrap, const char *seed,
                   char *buf, size_t cap) {
    char bs[32] = "", sd[64] = "";
    if (n_bootstrap > 0) snprintf(bs, sizeof bs, "bs:%d|", n_bootstrap);
    if (seed) snprintf(sd, sizeof sd, "seed:%s|", seed);
    return snprintf(buf, cap, "nrefs:%d|%s%scase:%s|eff:%s|nc:%d|nw:%d|space:%s|version:%s", n_refs, bs, sd,
                    opt->lowercase ? "lc" : "mixed", opt->eps_smoothing ? "no" : "yes", chrf_char_order(opt),
                    opt->word_order, opt->whitespace ? "yes" : "no", NMT_SACREBLEU_VERSION);
}

int chrf_format_line(const ChrfOptions *opt, double score, const char *signature, int width,
                     char *buf, size_t cap) {
    char name[CHRF_NAME_CAP];
    return bleu_format_score(chrf_name(opt, name), signature, score, width, NULL, NULL, buf, cap);
}
