/* test_bleu.c: BLEU, chrF and the bootstrap of src/data/ against numbers
 * computed by sacreBLEU 2.6.0 itself (tests/fixtures/bleu/expected.txt,
 * written by scripts/sacrebleu_expected.py): the 13a tokenizer and
 * lowercasing on tricky strings, corpus scores of the fixture files (one and
 * several references, lowercase, tokenize none, empty lines, an all-empty
 * hypothesis, a perfect match, no match, CRLF), the formatted lines,
 * segment statistics and sentence scores, NumPy's RNG draws, paired
 * bootstrap and confidence intervals, chrF++ (word orders 1..4: corpus
 * scores, lines, segment statistics, bootstrap; punctuation-heavy text in
 * hyp_punct.txt), chrF's other options (character order, beta,
 * whitespace, eps smoothing, with lowercase and word orders: the same
 * checks; whitespace-heavy text in hyp_space.txt), and, when Multi30k is
 * present, a derived real-text hypothesis. Runs from the repository root. */
#include <stdint.h>
#include <zlib.h>

#include "common.h"
#include "data/bleu.h"
#include "data/bootstrap.h"
#include "data/chrf.h"
#include "data/chrf_words.h"
#include "test_util.h"
#include "fixture_records.h"

#define FIX "tests/fixtures/bleu/"

/* ---- record checks (fixture_records.h reads the files, independent of cmd_eval.c) ---- */

static void check_tok13a(char **f) {
    char *in = unescape(f[1]), *want = unescape(f[2]), *got = NULL;
    CHECK_EQ_INT(bleu_tokenize_13a(in, &got), NMT_OK);
    CHECK(got && !strcmp(got, want), "13a(\"%s\") = \"%s\", sacreBLEU \"%s\"", in,
          got ? got : "(null)", want);
    nmt_free(got);
}

static void check_lower(char **f) {
    char *in = unescape(f[1]), *want = unescape(f[2]), *got = NULL;
    CHECK_EQ_INT(bleu_lower(in, strlen(in), &got), NMT_OK);
    CHECK(got && !strcmp(got, want), "lower(\"%s\") = \"%s\", Python \"%s\"", in,
          got ? got : "(null)", want);
    nmt_free(got);
}

/* chrF scores agree with sacreBLEU's to 12 significant digits, also where
 * they are tiny: with eps smoothing a segment or corpus without a match
 * scores about 1e-14, not 0 (the same float64 operations in the same order,
 * so in practice bit for bit). */
static int chrf_same(double got, double want) { return fabs(got - want) <= 1e-12 * fabs(want); }

/* Python's line.rstrip() on every line, as the script's read_lines (the
 * sacreBLEU CLI) reads the fixtures: it shows with chrF's whitespace. */
static void rstrip_lines(Lines *l) {
    for (int i = 0; i < l->n; i++) bleu_rstrip(l->lines[i]);
}

/* corpus_load, then the lines as the script reads them. */
static void load_corpus(Corpus *c, const char *hyp, const char *refs) {
    corpus_load(c, FIX, hyp, refs);
    rstrip_lines(&c->hyp);
    for (int k = 0; k < c->n_refs; k++) rstrip_lines(&c->refs[k]);
}

/* OPTS "LC NC NW BETA SPACE EPS" of the chrfopt records (sep ' '), or of
 * the m30k names (sep '-'), into *o; 0 when it does not parse. */
static int parse_chrf_opts(const char *s, char sep, ChrfOptions *o) {
    int v[6];
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%%d%c%%d%c%%d%c%%d%c%%d%c%%d", sep, sep, sep, sep, sep);
    if (sscanf(s, fmt, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return 0;
    memset(o, 0, sizeof *o);
    o->lowercase = v[0];
    chrf_set_char_order(o, v[1]);
    o->word_order = v[2];
    chrf_set_beta(o, v[3]);
    o->whitespace = v[4];
    o->eps_smoothing = v[5];
    return 1;
}

/* A segment record's corpus (HYP and REFS files) and its line LINENO
 * (from 1) with r[] its references: the line's index, or -1 after a
 * failed check (c freed) when the files or the line are not there. */
static int load_segment(Corpus *c, const char *hyp, const char *refs, const char *lineno, const char *kind,
                        const char *r[8]) {
    load_corpus(c, hyp, refs);
    int i = atoi(lineno) - 1;
    if (!c->ok || i < 0 || i >= c->hyp.n) {
        CHECK(0, "bad %s record line %s", kind, lineno);
        corpus_free(c);
        return -1;
    }
    corpus_refs(c, i, r);
    return i;
}

static void check_bleu(char **f) {
    /* bleu CASE HYP REFS LC TOK SCORE P1 P2 P3 P4 BP RATIO HYP_LEN REF_LEN LINE */
    Corpus c;
    const char *name = f[1];
    load_corpus(&c, f[2], f[3]);
    if (!c.ok) {
        corpus_free(&c);
        return;
    }
    BleuOptions opt;
    bleu_options_default(&opt);
    opt.lowercase = atoi(f[4]);
    CHECK_EQ_INT(bleu_tokenize_parse(f[5], &opt.tokenize), NMT_OK);
    BleuStats st;
    bleu_stats_clear(&st);
    const char *r[8];
    for (int i = 0; i < c.hyp.n; i++) {
        corpus_refs(&c, i, r);
        CHECK_EQ_INT(bleu_add_sentence(&st, c.hyp.lines[i], r, c.n_refs, &opt), NMT_OK);
    }
    BleuResult res;
    bleu_score(&st, &res);
    CHECK(fabs(res.score - atof(f[6])) < 1e-9, "%s: BLEU %.12g, sacreBLEU %s", name, res.score, f[6]);
    for (int n = 0; n < 4; n++)
        CHECK(fabs(res.precisions[n] - atof(f[7 + n])) < 1e-9, "%s: p%d %.12g, sacreBLEU %s", name,
              n + 1, res.precisions[n], f[7 + n]);
    CHECK(fabs(res.bp - atof(f[11])) < 1e-12, "%s: BP %.12g vs %s", name, res.bp, f[11]);
    CHECK(fabs(res.ratio - atof(f[12])) < 1e-12, "%s: ratio %.12g vs %s", name, res.ratio, f[12]);
    CHECK(res.hyp_len == atoll(f[13]), "%s: hyp_len %lld vs %s", name, (long long)res.hyp_len, f[13]);
    CHECK(res.ref_len == atoll(f[14]), "%s: ref_len %lld vs %s", name, (long long)res.ref_len, f[14]);
    char sig[256], line[1024];
    bleu_signature(&opt, c.n_refs, 0, NULL, sig, sizeof sig);
    bleu_format_line(&res, sig, 1, line, sizeof line);
    CHECK(!strcmp(line, unescape(f[15])), "%s:\n  nmt       %s\n  sacreBLEU %s", name, line, f[15]);
    corpus_free(&c);
}

/* A corpus chrF record: the score and line of files f[2], f[3] with the
 * options *opt, against sacreBLEU's score_f and line_f. */
static void check_chrf_corpus(char **f, const ChrfOptions *o, const char *score_f, char *line_f) {
    Corpus c;
    const char *name = f[1];
    load_corpus(&c, f[2], f[3]);
    if (!c.ok) {
        corpus_free(&c);
        return;
    }
    const ChrfOptions opt = *o;
    char cname[CHRF_NAME_CAP];
    ChrfStats st;
    chrf_stats_clear(&st);
    const char *r[8];
    for (int i = 0; i < c.hyp.n; i++) {
        corpus_refs(&c, i, r);
        CHECK_EQ_INT(chrf_add_sentence(&st, c.hyp.lines[i], r, c.n_refs, &opt), NMT_OK);
    }
    double score = chrf_score_opt(&st, &opt);
    CHECK(chrf_same(score, atof(score_f)), "%s: %s %.17g, sacreBLEU %s", name, chrf_name(&opt, cname), score,
          score_f);
    /* beta 2 with the effective order: the score without options is the same */
    if (chrf_beta(&opt) == CHRF_BETA && !opt.eps_smoothing) CHECK_NEAR(chrf_score(&st), score, 0);
    char sig[256], line[512];
    chrf_signature(&opt, c.n_refs, 0, NULL, sig, sizeof sig);
    chrf_format_line(&opt, score, sig, 1, line, sizeof line);
    CHECK(!strcmp(line, unescape(line_f)), "%s:\n  nmt       %s\n  sacreBLEU %s", name, line, line_f);
    corpus_free(&c);
}

/* chrf CASE HYP REFS LC SCORE LINE */
static void check_chrf(char **f) {
    ChrfOptions opt = {.lowercase = atoi(f[4]), .word_order = 0};
    check_chrf_corpus(f, &opt, f[5], f[6]);
}

/* chrfpp CASE HYP REFS LC NW SCORE LINE */
static void check_chrfpp(char **f) {
    ChrfOptions opt = {.lowercase = atoi(f[4]), .word_order = atoi(f[5])};
    check_chrf_corpus(f, &opt, f[6], f[7]);
}

/* chrfopt CASE HYP REFS OPTS SCORE LINE */
static void check_chrfopt(char **f) {
    ChrfOptions opt;
    CHECK(parse_chrf_opts(f[4], ' ', &opt), "%s: bad OPTS '%s'", f[1], f[4]);
    check_chrf_corpus(f, &opt, f[5], f[6]);
}

/* A segment statistics record: the statistics and sentence chrF of line
 * `lineno` of files hyp, refs with options *opt, against sacreBLEU's
 * `stats` ("HYP_1 REF_1 MATCH_1 ...", character orders then word orders)
 * and `score`. */
static void check_chrf_segment(const char *hyp, const char *refs, const char *lineno, const ChrfOptions *opt,
                               char *stats, const char *score) {
    Corpus c;
    const char *r[8];
    int i = load_segment(&c, hyp, refs, lineno, "chrF segment", r);
    if (i < 0) return;
    ChrfStats s;
    CHECK_EQ_INT(chrf_sentence_stats(c.hyp.lines[i], r, c.n_refs, opt, &s), NMT_OK);
    int64_t got[CHRF_N_STATS];
    chrf_stats_to_array(&s, got);
    int n_want = 3 * (chrf_char_order(opt) + opt->word_order);
    char *p = stats;
    for (int k = 0; k < CHRF_N_STATS; k++) {
        long long want = k < n_want ? strtoll(p, &p, 10) : 0; /* zero past the orders */
        CHECK(got[k] == want, "%s line %d nc %d nw %d: stat %d = %lld, sacreBLEU %lld", hyp, i + 1,
              chrf_char_order(opt), opt->word_order, k, (long long)got[k], want);
    }
    double got_score = chrf_score_opt(&s, opt);
    CHECK(chrf_same(got_score, atof(score)), "%s line %d: sentence chrF %.17g vs %s", hyp, i + 1, got_score,
          score);
    corpus_free(&c);
}

/* chrfpp_sent HYP REFS LC NW LINENO "HYP_1 REF_1 MATCH_1 ..." SENT_CHRF */
static void check_chrfpp_sent(char **f) {
    ChrfOptions opt = {.lowercase = atoi(f[3]), .word_order = atoi(f[4])};
    check_chrf_segment(f[1], f[2], f[5], &opt, f[6], f[7]);
}

/* chrfopt_sent HYP REFS OPTS LINENO "HYP_1 REF_1 MATCH_1 ..." SENT_CHRF */
static void check_chrfopt_sent(char **f) {
    ChrfOptions opt;
    CHECK(parse_chrf_opts(f[3], ' ', &opt), "chrfopt_sent: bad OPTS '%s'", f[3]);
    check_chrf_segment(f[1], f[2], f[4], &opt, f[5], f[6]);
}

static void check_sent(char **f) {
    /* sent HYP REFS LINENO "HYP_LEN REF_LEN C1..C4 T1..T4" SENT_BLEU SENT_CHRF */
    Corpus c;
    const char *r[8];
    int i = load_segment(&c, f[1], f[2], f[3], "sent", r);
    if (i < 0) return;
    BleuOptions opt;
    bleu_options_default(&opt);
    BleuStats s;
    CHECK_EQ_INT(bleu_sentence_stats(c.hyp.lines[i], r, c.n_refs, &opt, &s), NMT_OK);
    int64_t got[BLEU_N_STATS];
    bleu_stats_to_array(&s, got);
    char *p = f[4];
    for (int k = 0; k < BLEU_N_STATS; k++) {
        long long want = strtoll(p, &p, 10);
        CHECK(got[k] == want, "%s line %d: stat %d = %lld, sacreBLEU %lld", f[1], i + 1, k,
              (long long)got[k], want);
    }
    BleuResult res;
    bleu_score(&s, &res);
    CHECK(fabs(res.score - atof(f[5])) < 1e-9, "%s line %d: sentence BLEU %.12g vs %s", f[1], i + 1,
          res.score, f[5]);
    ChrfOptions copt = {0};
    ChrfStats cs;
    CHECK_EQ_INT(chrf_sentence_stats(c.hyp.lines[i], r, c.n_refs, &copt, &cs), NMT_OK);
    CHECK(fabs(chrf_score(&cs) - atof(f[6])) < 1e-9, "%s line %d: sentence chrF %.12g vs %s", f[1],
          i + 1, chrf_score(&cs), f[6]);
    corpus_free(&c);
}

static void check_rng(char **f) {
    /* rng SEED N COUNT VALUES */
    BootstrapRng rng;
    bootstrap_rng_seed(&rng, strtoull(f[1], NULL, 10));
    uint32_t n = (uint32_t)atol(f[2]);
    int count = atoi(f[3]);
    char *p = f[4];
    int same = 1;
    for (int i = 0; i < count; i++) {
        long want = strtol(p, &p, 10);
        uint32_t got = bootstrap_rng_below(&rng, n);
        if ((long)got != want) {
            CHECK(0, "default_rng(%s).choice(%s) draw %d = %u, NumPy %ld", f[1], f[2], i, got, want);
            same = 0;
            break;
        }
    }
    CHECK(same, "rng seed %s n %s", f[1], f[2]);
}

/* Per-segment statistics of one system for the bootstrap: chrF with the
 * options *chrf, or BLEU when chrf is NULL. */
static int64_t *segment_stats(const Corpus *c, const Lines *hyp, const ChrfOptions *chrf) {
    int K = chrf ? CHRF_N_STATS : BLEU_N_STATS;
    int64_t *out = calloc((size_t)hyp->n * K, sizeof *out);
    BleuOptions bo;
    bleu_options_default(&bo);
    const char *r[8];
    for (int i = 0; i < hyp->n; i++) {
        corpus_refs(c, i, r);
        if (chrf) {
            ChrfStats s;
            CHECK_EQ_INT(chrf_sentence_stats(hyp->lines[i], r, c->n_refs, chrf, &s), NMT_OK);
            chrf_stats_to_array(&s, out + (size_t)i * K);
        } else {
            BleuStats s;
            CHECK_EQ_INT(bleu_sentence_stats(hyp->lines[i], r, c->n_refs, &bo, &s), NMT_OK);
            bleu_stats_to_array(&s, out + (size_t)i * K);
        }
    }
    return out;
}

/* The corpus score of n segments' statistics (segment_stats). */
static double corpus_score_of(const int64_t *seg, int n, const ChrfOptions *chrf) {
    if (chrf) {
        ChrfStats s;
        chrf_stats_clear(&s);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < CHRF_MAX_ORDER; k++) {
                s.hyp[k] += seg[i * CHRF_N_STATS + 3 * k];
                s.ref[k] += seg[i * CHRF_N_STATS + 3 * k + 1];
                s.match[k] += seg[i * CHRF_N_STATS + 3 * k + 2];
            }
        return chrf_score_opt(&s, chrf);
    }
    BleuStats s;
    bleu_stats_clear(&s);
    for (int i = 0; i < n; i++) {
        const int64_t *v = seg + (size_t)i * BLEU_N_STATS;
        s.hyp_len += v[0];
        s.ref_len += v[1];
        for (int k = 0; k < 4; k++) {
            s.correct[k] += v[2 + k];
            s.total[k] += v[6 + k];
        }
    }
    BleuResult r;
    bleu_score(&s, &r);
    return r.score;
}

/* The chrF options of a paired or conf record (*out): given (a chrfopt_*
 * record: `given`, and the record's METRIC must be their name) or from the
 * METRIC "chrF2", "chrF2+", "chrF2++", ...; NULL for BLEU. */
static const ChrfOptions *record_chrf(const char *metric, const ChrfOptions *given, ChrfOptions *out) {
    char name[CHRF_NAME_CAP];
    if (given) {
        *out = *given;
        CHECK(!strcmp(chrf_name(out, name), metric), "record metric %s, nmt names its options %s", metric, name);
        return out;
    }
    if (strncmp(metric, "chrF2", 5)) return NULL;
    memset(out, 0, sizeof *out);
    out->word_order = (int)strlen(metric + 5);
    return out;
}

static int n_chrfpp_bootstrap;  /* paired and conf records of chrF++ */
static int n_chrfopt_bootstrap; /* chrfopt_paired and chrfopt_conf records */

/* paired CASE METRIC HYPS REFS N SEED then per system "SCORE MEAN CI P";
 * given: the options of a chrfopt_paired record (else NULL) */
static void check_paired(char **f, int nf, const ChrfOptions *given) {
    ChrfOptions opt;
    const ChrfOptions *chrf = record_chrf(f[2], given, &opt);
    n_chrfpp_bootstrap += !given && chrf && chrf->word_order > 0;
    n_chrfopt_bootstrap += given != NULL;
    char *hyp_names[8];
    char hyps_csv[256];
    snprintf(hyps_csv, sizeof hyps_csv, "%s", f[3]);
    int n_sys = split_commas(hyps_csv, hyp_names);
    Corpus c;
    load_corpus(&c, hyp_names[0], f[4]);
    if (!c.ok || nf != 7 + n_sys) {
        CHECK(0, "bad paired record %s", f[1]);
        corpus_free(&c);
        return;
    }
    Lines hyps[8];
    const int64_t *seg[8];
    double scores[8];
    for (int s = 0; s < n_sys; s++) {
        fixture_read(FIX, hyp_names[s], &hyps[s]);
        rstrip_lines(&hyps[s]);
        seg[s] = segment_stats(&c, &hyps[s], chrf);
        scores[s] = corpus_score_of(seg[s], hyps[s].n, chrf);
    }
    BootstrapMetric m = chrf ? bootstrap_metric_chrf(chrf) : bootstrap_metric_bleu();
    BootstrapResult res[8];
    CHECK_EQ_INT(bootstrap_paired(&m, seg, scores, n_sys, c.hyp.n, atoi(f[5]),
                                  strtoull(f[6], NULL, 10), res),
                 NMT_OK);
    for (int s = 0; s < n_sys; s++) {
        double want[4];
        sscanf(f[7 + s], "%lf %lf %lf %lf", &want[0], &want[1], &want[2], &want[3]);
        CHECK(fabs(res[s].score - want[0]) < 1e-9, "%s %s sys %d: score %.12g vs %.12g", f[1], f[2],
              s, res[s].score, want[0]);
        CHECK(fabs(res[s].mean - want[1]) < 1e-9, "%s %s sys %d: mean %.12g vs %.12g", f[1], f[2], s,
              res[s].mean, want[1]);
        CHECK(fabs(res[s].ci - want[2]) < 1e-9, "%s %s sys %d: ci %.12g vs %.12g", f[1], f[2], s,
              res[s].ci, want[2]);
        CHECK(fabs(res[s].p_value - want[3]) < 1e-12, "%s %s sys %d: p %.12g vs %.12g", f[1], f[2],
              s, res[s].p_value, want[3]);
    }
    for (int s = 0; s < n_sys; s++) {
        lines_free(&hyps[s]);
        free((void *)seg[s]);
    }
    corpus_free(&c);
}

/* conf CASE METRIC HYP REFS N SEED MEAN CI; given: as check_paired's */
static void check_conf(char **f, const ChrfOptions *given) {
    ChrfOptions opt;
    const ChrfOptions *chrf = record_chrf(f[2], given, &opt);
    n_chrfpp_bootstrap += !given && chrf && chrf->word_order > 0;
    n_chrfopt_bootstrap += given != NULL;
    Corpus c;
    load_corpus(&c, f[3], f[4]);
    if (!c.ok) {
        corpus_free(&c);
        return;
    }
    int64_t *seg = segment_stats(&c, &c.hyp, chrf);
    BootstrapMetric m = chrf ? bootstrap_metric_chrf(chrf) : bootstrap_metric_bleu();
    double mean = 0, ci = 0;
    CHECK_EQ_INT(bootstrap_confidence(&m, seg, c.hyp.n, atoi(f[5]), strtoull(f[6], NULL, 10), &mean,
                                      &ci),
                 NMT_OK);
    CHECK(fabs(mean - atof(f[7])) < 1e-9, "%s %s: mean %.12g vs %s", f[1], f[2], mean, f[7]);
    CHECK(fabs(ci - atof(f[8])) < 1e-9, "%s %s: ci %.12g vs %s", f[1], f[2], ci, f[8]);
    free(seg);
    corpus_free(&c);
}

/* ---- checks that do not need the expected file ---- */

/* chrF's options: defaults in a zeroed ChrfOptions, what the setters keep,
 * the limits, names and signatures, and small cases worked by hand. */
static void test_chrf_options(void) {
    ChrfOptions o = {0};
    CHECK_EQ_INT(chrf_char_order(&o), 6);
    CHECK_EQ_INT(chrf_beta(&o), 2);
    for (int v = -3; v <= 1001; v += v < 12 ? 1 : 989) { /* every small value survives a set and a get */
        chrf_set_char_order(&o, v);
        chrf_set_beta(&o, v);
        CHECK_EQ_INT(chrf_char_order(&o), v);
        CHECK_EQ_INT(chrf_beta(&o), v);
    }
    chrf_set_char_order(&o, CHRF_CHAR_ORDER);
    chrf_set_beta(&o, CHRF_BETA);
    CHECK(o.char_order == 0 && o.beta == 0, "the defaults are stored as 0 (%d, %d)", o.char_order, o.beta);
    const char *ref[1] = {"a b"};
    ChrfStats cs;
    struct { int nc, nw, beta; } bad[] = {{-1, 0, 2}, {CHRF_MAX_CHAR_ORDER + 1, 0, 2}, {0, 0, 2}, {6, 0, -1},
                                         {6, 0, CHRF_MAX_BETA + 1}};
    const char *why[] = {"character order -1", "character order 11", "character order 0 needs a word order",
                         "beta -1", "beta 1001"};
    for (int k = 0; k < 5; k++) {
        ChrfOptions b = {.lowercase = 0, .word_order = bad[k].nw};
        chrf_set_char_order(&b, bad[k].nc);
        chrf_set_beta(&b, bad[k].beta);
        CHECK_EQ_INT(chrf_sentence_stats("a", ref, 1, &b, &cs), NMT_ERR_USAGE);
        CHECK_CONTAINS(nmt_error_message(), why[k]);
    }
    /* the extremes are taken */
    ChrfOptions e = {.lowercase = 1, .word_order = CHRF_MAX_WORD_ORDER};
    chrf_set_char_order(&e, CHRF_MAX_CHAR_ORDER);
    chrf_set_beta(&e, CHRF_MAX_BETA);
    e.whitespace = e.eps_smoothing = 1;
    CHECK_EQ_INT(chrf_sentence_stats("a b", ref, 1, &e, &cs), NMT_OK);
    char name[CHRF_NAME_CAP], sig[256];
    CHECK_EQ_STR(chrf_name(&e, name), "chrF1000++++");
    chrf_signature(&e, 3, 500, "7", sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:3|bs:500|seed:7|case:lc|eff:no|nc:10|nw:4|space:yes|version:2.6.0");
    ChrfOptions z = {.lowercase = 0, .word_order = 2};
    chrf_set_char_order(&z, 0);
    chrf_set_beta(&z, 0);
    CHECK_EQ_STR(chrf_name(&z, name), "chrF0++");
    chrf_signature(&z, 1, 0, NULL, sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:1|case:mixed|eff:yes|nc:0|nw:2|space:no|version:2.6.0");
    /* whitespace: "a b" against "a b" has 3 character unigrams with it, 2 without */
    ChrfOptions sp = {0};
    sp.whitespace = 1;
    CHECK_EQ_INT(chrf_sentence_stats("a  b", ref, 1, &sp, &cs), NMT_OK);
    CHECK_EQ_INT(cs.hyp[0], 4);
    CHECK_EQ_INT(cs.ref[0], 3);
    CHECK_EQ_INT(cs.match[0], 3); /* a, b and one of the two spaces */
    CHECK_EQ_INT(cs.match[1], 2); /* "a " and " b" */
    /* character order 2 with word order 1: the word unigrams follow the
     * character bigrams (sacreBLEU's order) */
    ChrfOptions c2 = {.lowercase = 0, .word_order = 1};
    chrf_set_char_order(&c2, 2);
    CHECK_EQ_INT(chrf_sentence_stats("a b", ref, 1, &c2, &cs), NMT_OK);
    CHECK_EQ_INT(cs.hyp[2], 2);
    CHECK_EQ_INT(cs.match[2], 2);
    CHECK_EQ_INT(cs.hyp[3], 0);
    /* precision 1/2, recall 1/4 in both orders: chrF_beta = (1 + b^2) p r / (b^2 p + r)
     * (beta 1: 1/3, beta 0: 1/2, beta 2: 5/18); eps smoothing: the mean F of
     * the orders, here equal; with an order without n-grams it counts as eps */
    ChrfStats h;
    chrf_stats_clear(&h);
    for (int n = 0; n < 2; n++) h.hyp[n] = 2, h.ref[n] = 4, h.match[n] = 1;
    ChrfOptions b = {0};
    chrf_set_char_order(&b, 2);
    const int betas[3] = {1, 0, 2};
    const double want[3] = {100.0 / 3, 50.0, 500.0 / 18};
    for (int k = 0; k < 3; k++) {
        chrf_set_beta(&b, betas[k]);
        b.eps_smoothing = 0;
        CHECK_NEAR(chrf_score_opt(&h, &b), want[k], 1e-12);
        b.eps_smoothing = 1;
        CHECK_NEAR(chrf_score_opt(&h, &b), want[k], 1e-12);
    }
    chrf_set_char_order(&b, 3); /* order 3 has no n-grams: eff skips it, eps adds eps to the sum */
    CHECK_NEAR(chrf_score_opt(&h, &b), (2 * want[2] / 100 + 1e-16) / 3 * 100, 1e-12);
    b.eps_smoothing = 0;
    CHECK_NEAR(chrf_score_opt(&h, &b), want[2], 1e-12);
    /* the float32 scores of the bootstrap: the same numbers; a Python float
     * only where no float32 took part */
    float f[CHRF_N_STATS] = {0};
    for (int n = 0; n < 2; n++) f[3 * n] = 2, f[3 * n + 1] = 4, f[3 * n + 2] = 1;
    int pyf = -1;
    b.eps_smoothing = 1;
    CHECK_NEAR(chrf_score_numpy_f32(f, &b, &pyf), (2 * want[2] / 100 + 1e-16) / 3 * 100, 1e-5);
    CHECK_EQ_INT(pyf, 0);
    float none[CHRF_N_STATS] = {0};
    CHECK_NEAR(chrf_score_numpy_f32(none, &b, &pyf), 1e-14, 1e-20); /* 100 * 3 eps / 3 */
    CHECK_EQ_INT(pyf, 1);
    b.eps_smoothing = 0;
    CHECK_NEAR(chrf_score_numpy_f32(none, &b, &pyf), 0, 0);
    CHECK_EQ_INT(pyf, 1);
    CHECK_NEAR(chrf_score_numpy_f32(f, &b, &pyf), want[2], 1e-5);
    CHECK_EQ_INT(pyf, 0);
}

static void test_api_edges(void) {
    BleuOptions opt;
    bleu_options_default(&opt);
    BleuStats s;
    const char *empty_ref[1] = {""};
    /* n_refs must be >= 1 */
    CHECK_EQ_INT(bleu_sentence_stats("a", empty_ref, 0, &opt, &s), NMT_ERR_USAGE);
    ChrfOptions co = {0};
    ChrfStats cs;
    CHECK_EQ_INT(chrf_sentence_stats("a", empty_ref, 0, &co, &cs), NMT_ERR_USAGE);
    BleuTokenize tok;
    CHECK_EQ_INT(bleu_tokenize_parse("intl", &tok), NMT_ERR_USAGE);
    CHECK_CONTAINS(nmt_error_message(), "intl");
    /* An empty reference: ref_len 0, ratio printed as 0 (sacreBLEU's `if ref_len else 0`). */
    CHECK_EQ_INT(bleu_sentence_stats("a b", empty_ref, 1, &opt, &s), NMT_OK);
    CHECK_EQ_INT(s.hyp_len, 2);
    CHECK_EQ_INT(s.ref_len, 0);
    BleuResult r;
    bleu_score(&s, &r);
    char v[256];
    bleu_format_verbose(&r, v, sizeof v);
    CHECK_EQ_STR(v, "0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 2 ref_len = 0)");
    /* Closest reference length: ties go to the shorter reference. */
    const char *refs[3] = {"a b c d e", "a b c", "a b c d e f g"};
    CHECK_EQ_INT(bleu_sentence_stats("a b c d", refs, 3, &opt, &s), NMT_OK);
    CHECK_EQ_INT(s.ref_len, 3);
    /* Clipping: "the the the" against "the cat": 1 of 3 unigrams. */
    const char *one[1] = {"the cat"};
    CHECK_EQ_INT(bleu_sentence_stats("the the the", one, 1, &opt, &s), NMT_OK);
    CHECK_EQ_INT(s.correct[0], 1);
    CHECK_EQ_INT(s.total[0], 3);
    CHECK_EQ_INT(s.total[1], 2);
    /* Accumulation equals the sum of the segments. */
    BleuStats acc, a, b;
    bleu_stats_clear(&acc);
    CHECK_EQ_INT(bleu_add_sentence(&acc, "the cat sat", one, 1, &opt), NMT_OK);
    CHECK_EQ_INT(bleu_add_sentence(&acc, "a cat", one, 1, &opt), NMT_OK);
    bleu_sentence_stats("the cat sat", one, 1, &opt, &a);
    bleu_sentence_stats("a cat", one, 1, &opt, &b);
    bleu_stats_add(&a, &b);
    CHECK(!memcmp(&a, &acc, sizeof a), "accumulated stats differ from the summed segments");
    /* The signature with bootstrap fields, in sacreBLEU's order. */
    char sig[256];
    opt.lowercase = 1;
    opt.tokenize = BLEU_TOKENIZE_NONE;
    bleu_signature(&opt, 2, 1000, "12345", sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:2|bs:1000|seed:12345|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");
    co.lowercase = 1;
    chrf_signature(&co, 1, 0, NULL, sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:1|case:lc|eff:yes|nc:6|nw:0|space:no|version:2.6.0");
    char cname[CHRF_NAME_CAP];
    CHECK_EQ_STR(chrf_name(&co, cname), "chrF2");
    ChrfOptions pp = {.lowercase = 0, .word_order = 2};
    chrf_signature(&pp, 2, 1000, "12345", sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:2|bs:1000|seed:12345|case:mixed|eff:yes|nc:6|nw:2|space:no|version:2.6.0");
    CHECK_EQ_STR(chrf_name(&pp, cname), "chrF2++");
    /* word orders past CHRF_MAX_WORD_ORDER (and negative ones) are refused */
    for (int wo = -1; wo <= CHRF_MAX_WORD_ORDER + 1; wo += CHRF_MAX_WORD_ORDER + 2) {
        ChrfOptions bad = {.lowercase = 0, .word_order = wo};
        CHECK_EQ_INT(chrf_sentence_stats("a", empty_ref, 1, &bad, &cs), NMT_ERR_USAGE);
    }
    test_chrf_options();
    /* chrF++'s words (CHRF._remove_punctuation, checked in Python) */
    ChrfWords words;
    const char *text = "(hi) \xc2\xabHaus\xc2\xbb, \xc3\xa4. . $5 ... \xf0\x9f\x98\x80! x\xc2\xa0\"y\" "
                       "\xe2\x80\x99" "a\xe2\x80\x99 ,,";
    CHECK_EQ_INT(chrf_words_split(text, strlen(text), &words), NMT_OK);
    CHECK_EQ_STR(words.text, "(hi ) \xc2\xabHaus\xc2\xbb , \xc3\xa4 . . $ 5 .. . \xf0\x9f\x98\x80 ! x \"y \" "
                             "\xe2\x80\x99" "a\xe2\x80\x99 , ,");
    CHECK_EQ_INT(words.n_words, 19);
    if (words.n_words == 19) CHECK_EQ_INT(chrf_words_span(&words, 1, 3), strlen(") \xc2\xabHaus\xc2\xbb ,"));
    chrf_words_free(&words);
    CHECK_EQ_INT(chrf_words_split(" \t ", 3, &words), NMT_OK);
    CHECK_EQ_INT(words.n_words, 0);
    chrf_words_free(&words);
    /* word n-grams never match character n-grams: "ab" against "a b" has
     * the bigram "ab" in neither kind, so only the unigrams match */
    const char *ab[1] = {"a b"};
    ChrfOptions nw1 = {.lowercase = 0, .word_order = 1};
    CHECK_EQ_INT(chrf_sentence_stats("ab", ab, 1, &nw1, &cs), NMT_OK);
    CHECK_EQ_INT(cs.match[1], 1);
    CHECK_EQ_INT(cs.hyp[CHRF_CHAR_ORDER], 1);
    CHECK_EQ_INT(cs.ref[CHRF_CHAR_ORDER], 2);
    CHECK_EQ_INT(cs.match[CHRF_CHAR_ORDER], 0);
    double mc[2] = {34.04, 1.25};
    char line[512];
    bleu_format_score("chrF2", "nrefs:1", 34.05, 1, mc, NULL, line, sizeof line);
    CHECK_EQ_STR(line, "chrF2|nrefs:1 = 34.0 (\xce\xbc = 34.0 \xc2\xb1 1.2)");
    /* Python's whitespace: NBSP and U+3000 split words, U+200B does not. */
    char buf[64];
    bleu_collapse_spaces("a\xc2\xa0" "b\xe3\x80\x80" "c\xe2\x80\x8b" "d", 13, buf);
    CHECK_EQ_STR(buf, "a b c\xe2\x80\x8b" "d");
}

/* Every allocation failure is reported as NMT_ERR_NOMEM and leaves the
 * accumulator untouched. */
static void test_alloc_failures(void) {
    BleuOptions opt;
    bleu_options_default(&opt);
    opt.lowercase = 1;
    ChrfOptions co = {.lowercase = 1, .word_order = 0};
    const char *refs[2] = {"Die Straße ist grün.", "ΟΔΟΣ &amp; U.S.A."};
    int bleu_ok = 0, chrf_ok = 0;
    for (long k = 1; k < 200 && !(bleu_ok && chrf_ok); k++) {
        BleuStats bs;
        ChrfStats cs;
        bleu_stats_clear(&bs);
        chrf_stats_clear(&cs);
        if (!bleu_ok) {
            nmt_alloc_fail_at(k);
            NmtStatus st = bleu_add_sentence(&bs, "Die STRASSE ist grün .", refs, 2, &opt);
            nmt_alloc_fail_at(0);
            CHECK(st == NMT_OK || st == NMT_ERR_NOMEM, "bleu fail_at %ld: status %d", k, (int)st);
            if (st == NMT_OK) bleu_ok = 1;
            else CHECK(bs.hyp_len == 0 && bs.total[0] == 0, "bleu fail_at %ld changed stats", k);
        }
        if (!chrf_ok) {
            nmt_alloc_fail_at(k);
            NmtStatus st = chrf_add_sentence(&cs, "Die STRASSE ist grün .", refs, 2, &co);
            nmt_alloc_fail_at(0);
            CHECK(st == NMT_OK || st == NMT_ERR_NOMEM, "chrf fail_at %ld: status %d", k, (int)st);
            if (st == NMT_OK) chrf_ok = 1;
            else CHECK(cs.hyp[0] == 0 && cs.ref[0] == 0, "chrf fail_at %ld changed stats", k);
        }
    }
    CHECK(bleu_ok && chrf_ok, "never succeeded");
    /* chrF++ alone, every allocation */
    co.word_order = 2;
    int pp_ok = 0;
    for (long k = 1; k < 200 && !pp_ok; k++) {
        ChrfStats cs;
        chrf_stats_clear(&cs);
        nmt_alloc_fail_at(k);
        NmtStatus st = chrf_add_sentence(&cs, "(Die) STRASSE, ist grün .", refs, 2, &co);
        nmt_alloc_fail_at(0);
        CHECK(st == NMT_OK || st == NMT_ERR_NOMEM, "chrF++ fail_at %ld: status %d", k, (int)st);
        if (st == NMT_OK) pp_ok = 1;
        else CHECK(cs.hyp[0] == 0 && cs.ref[CHRF_CHAR_ORDER] == 0, "chrF++ fail_at %ld changed stats", k);
    }
    CHECK(pp_ok, "chrF++ never succeeded");
}

/* ---- Multi30k: a derived hypothesis scored against the reference ---- */

/* Python's ' '.join(w for i, w in enumerate(line.split()) if i % k != k - 1) */
static char *drop_every(const char *line, int k) {
    size_t len = strlen(line);
    char *tmp = malloc(len + 1), *out = malloc(len + 1);
    bleu_collapse_spaces(line, len, tmp);
    size_t w = 0;
    int i = 0;
    for (char *tokp = strtok(tmp, " "); tokp; tokp = strtok(NULL, " "), i++) {
        if (i % k == k - 1) continue;
        if (w) out[w++] = ' ';
        size_t l = strlen(tokp);
        memcpy(out + w, tokp, l);
        w += l;
    }
    out[w] = '\0';
    free(tmp);
    return out;
}

/* chrF with options *opt of the derived hypotheses h3 and h4 (n segments)
 * against sacreBLEU's m30k numbers: the corpus score of h3 (the record
 * score_key) and, when paired_prefix is given and its records are there,
 * the paired bootstrap of h3 and h4 (paired_prefix + "_sys%d_%s"). Returns
 * how many numbers were compared; *score3: h3's score. */
static int multi30k_chrf(const Named *want, int n_want, const Lines *ref, char **h3, char **h4,
                         const ChrfOptions *opt, const char *score_key, const char *paired_prefix, double *score3) {
    int n = ref->n, found = 0;
    char key[64];
    double v;
    snprintf(key, sizeof key, "%s_sys0_score", paired_prefix ? paired_prefix : "");
    int n_sys = paired_prefix && named_get(want, n_want, key, &v) ? 2 : 1;
    int64_t *seg[2] = {NULL, NULL};
    for (int s = 0; s < n_sys; s++) {
        seg[s] = malloc(sizeof(int64_t) * CHRF_N_STATS * (size_t)n);
        for (int i = 0; i < n; i++) {
            const char *r[1] = {ref->lines[i]};
            ChrfStats cs;
            CHECK_EQ_INT(chrf_sentence_stats(s == 0 ? h3[i] : h4[i], r, 1, opt, &cs), NMT_OK);
            chrf_stats_to_array(&cs, seg[s] + (size_t)i * CHRF_N_STATS);
        }
    }
    double scores[2] = {corpus_score_of(seg[0], n, opt), n_sys > 1 ? corpus_score_of(seg[1], n, opt) : 0};
    if (score3) *score3 = scores[0];
    if (named_get(want, n_want, score_key, &v)) {
        found++;
        CHECK(chrf_same(scores[0], v), "multi30k %s = %.17g, sacreBLEU %.17g", score_key, scores[0], v);
    }
    if (n_sys > 1) {
        BootstrapMetric m = bootstrap_metric_chrf(opt);
        BootstrapResult res[2];
        const int64_t *segs[2] = {seg[0], seg[1]};
        CHECK_EQ_INT(bootstrap_paired(&m, segs, scores, 2, n, 1000, BOOTSTRAP_DEFAULT_SEED, res), NMT_OK);
        for (int s = 0; s < 2; s++) {
            const char *fields[4] = {"score", "mean", "ci", "p_value"};
            double got[4] = {res[s].score, res[s].mean, res[s].ci, res[s].p_value};
            for (int k = 0; k < 4; k++) {
                snprintf(key, sizeof key, "%s_sys%d_%s", paired_prefix, s, fields[k]);
                if (named_get(want, n_want, key, &v)) {
                    found++;
                    CHECK(fabs(got[k] - v) < 1e-9, "multi30k %s = %.12g, sacreBLEU %.12g", key, got[k], v);
                }
            }
        }
    }
    free(seg[0]);
    free(seg[1]);
    return found;
}

/* chrF++ (word order 2: corpus scores mixed and lowercased, the paired
 * bootstrap) and chrF's other options (the settings in the record names,
 * val_drop3_chrfopt_OPTS and paired_chrfopt_OPTS_*) of the derived
 * hypotheses h3 and h4. */
static void test_multi30k_chrf_options(const Named *want, int n_want, const Lines *ref, char **h3, char **h4) {
    ChrfOptions co = {.lowercase = 0, .word_order = 2}, co_lc = {.lowercase = 1, .word_order = 2};
    double score;
    int found = multi30k_chrf(want, n_want, ref, h3, h4, &co, "val_drop3_chrfpp", "paired_chrF2++", &score);
    found += multi30k_chrf(want, n_want, ref, h3, h4, &co_lc, "val_drop3_chrfpp_lc", NULL, NULL);
    if (found < 10) printf("SKIP test_bleu multi30k chrF++: %d of its 10 records in " FIX "expected.txt\n", found);
    printf("test_bleu multi30k: chrF2++ %.2f\n", score);
    const char *prefix = "val_drop3_chrfopt_";
    int n_opt = 0, n_paired = 0;
    for (int k = 0; k < n_want; k++) {
        if (strncmp(want[k].name, prefix, strlen(prefix))) continue;
        const char *code = want[k].name + strlen(prefix);
        ChrfOptions o;
        if (!parse_chrf_opts(code, '-', &o)) {
            CHECK(0, "bad m30k record name %s", want[k].name);
            continue;
        }
        char paired[64], name[CHRF_NAME_CAP];
        snprintf(paired, sizeof paired, "paired_chrfopt_%s", code);
        int got = multi30k_chrf(want, n_want, ref, h3, h4, &o, want[k].name, paired, &score);
        n_opt++;
        n_paired += got == 9;
        printf("test_bleu multi30k: %s (%s) %.2f%s\n", chrf_name(&o, name), code, score, got == 9 ? ", paired" : "");
    }
    CHECK(n_opt >= 6 && n_paired >= 2, "expected 6 m30k records of chrF's options, 2 with the paired "
          "bootstrap, got %d/%d", n_opt, n_paired);
}

static void test_multi30k(const Named *want, int n_want) {
    const char *dir = test_multi30k_dir();
    if (!dir) {
        printf("SKIP test_bleu multi30k: corpus not found (../shared/data/multi30k or $NMT_MULTI30K)\n");
        return;
    }
    double v;
    if (!named_get(want, n_want, "val_drop3_bleu", &v)) {
        printf("SKIP test_bleu multi30k: no m30k records in " FIX "expected.txt\n");
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/val.en.gz", dir);
    Lines ref;
    if (!lines_read(path, &ref)) return; /* counts the check */
    int n = ref.n;
    char **h3 = malloc(sizeof *h3 * (size_t)(n + 1)), **h4 = malloc(sizeof *h4 * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        h3[i] = drop_every(ref.lines[i], 3);
        h4[i] = drop_every(ref.lines[i], 4);
    }
    BleuOptions bo, bo_lc;
    bleu_options_default(&bo);
    bleu_options_default(&bo_lc);
    bo_lc.lowercase = 1;
    bo_lc.tokenize = BLEU_TOKENIZE_NONE;
    ChrfOptions co = {.lowercase = 0, .word_order = 0}, co_lc = {.lowercase = 1, .word_order = 0};
    BleuStats b3, b3lc;
    ChrfStats c3, c3lc;
    bleu_stats_clear(&b3);
    bleu_stats_clear(&b3lc);
    chrf_stats_clear(&c3);
    chrf_stats_clear(&c3lc);
    int64_t *seg_b[2], *seg_c[2];
    for (int s = 0; s < 2; s++) {
        seg_b[s] = malloc(sizeof(int64_t) * BLEU_N_STATS * (size_t)n);
        seg_c[s] = malloc(sizeof(int64_t) * CHRF_N_STATS * (size_t)n);
    }
    for (int i = 0; i < n; i++) {
        const char *r[1] = {ref.lines[i]};
        BleuStats bs;
        ChrfStats cs;
        for (int s = 0; s < 2; s++) {
            const char *h = s == 0 ? h3[i] : h4[i];
            bleu_sentence_stats(h, r, 1, &bo, &bs);
            bleu_stats_to_array(&bs, seg_b[s] + (size_t)i * BLEU_N_STATS);
            chrf_sentence_stats(h, r, 1, &co, &cs);
            chrf_stats_to_array(&cs, seg_c[s] + (size_t)i * CHRF_N_STATS);
            if (s == 0) {
                bleu_stats_add(&b3, &bs);
                chrf_stats_add(&c3, &cs);
            }
        }
        CHECK_EQ_INT(bleu_add_sentence(&b3lc, h3[i], r, 1, &bo_lc), NMT_OK);
        CHECK_EQ_INT(chrf_add_sentence(&c3lc, h3[i], r, 1, &co_lc), NMT_OK);
    }
    BleuResult br, brlc;
    bleu_score(&b3, &br);
    bleu_score(&b3lc, &brlc);
    if (named_get(want, n_want, "val_drop3_bleu", &v)) CHECK_NEAR(br.score, v, 0.01);
    if (named_get(want, n_want, "val_drop3_hyp_len", &v)) CHECK_EQ_INT(br.hyp_len, (int64_t)v);
    if (named_get(want, n_want, "val_drop3_ref_len", &v)) CHECK_EQ_INT(br.ref_len, (int64_t)v);
    if (named_get(want, n_want, "val_drop3_chrf", &v)) CHECK_NEAR(chrf_score(&c3), v, 0.01);
    if (named_get(want, n_want, "val_drop3_bleu_lc_none", &v)) CHECK_NEAR(brlc.score, v, 0.01);
    if (named_get(want, n_want, "val_drop3_chrf_lc", &v)) CHECK_NEAR(chrf_score(&c3lc), v, 0.01);
    /* Paired bootstrap of the two derived systems, as sacreBLEU --paired-bs. */
    for (int metric = 0; metric < 2; metric++) {
        const ChrfOptions *chrf = metric == 1 ? &co : NULL;
        const int64_t *seg[2] = {chrf ? seg_c[0] : seg_b[0], chrf ? seg_c[1] : seg_b[1]};
        double scores[2] = {corpus_score_of(seg[0], n, chrf), corpus_score_of(seg[1], n, chrf)};
        BootstrapMetric m = chrf ? bootstrap_metric_chrf(chrf) : bootstrap_metric_bleu();
        BootstrapResult res[2];
        CHECK_EQ_INT(bootstrap_paired(&m, seg, scores, 2, n, 1000, BOOTSTRAP_DEFAULT_SEED, res),
                     NMT_OK);
        for (int s = 0; s < 2; s++) {
            const char *fields[4] = {"score", "mean", "ci", "p_value"};
            double got[4] = {res[s].score, res[s].mean, res[s].ci, res[s].p_value};
            for (int k = 0; k < 4; k++) {
                char key[64];
                snprintf(key, sizeof key, "paired_%s_sys%d_%s", chrf ? "chrF2" : "BLEU", s, fields[k]);
                if (named_get(want, n_want, key, &v))
                    CHECK(fabs(got[k] - v) < 1e-6, "multi30k %s = %.12g, sacreBLEU %.12g", key,
                          got[k], v);
            }
        }
    }
    printf("test_bleu multi30k: %d segments, BLEU %.2f chrF2 %.2f\n", n, br.score, chrf_score(&c3));
    test_multi30k_chrf_options(want, n_want, &ref, h3, h4);
    for (int i = 0; i < n; i++) {
        free(h3[i]);
        free(h4[i]);
    }
    for (int s = 0; s < 2; s++) {
        free(seg_b[s]);
        free(seg_c[s]);
    }
    free(h3);
    free(h4);
    lines_free(&ref);
}

int main(void) {
    nmt_log_quiet(1);
    test_api_edges();
    test_alloc_failures();

    FILE *f = fopen(FIX "expected.txt", "r");
    CHECK(f != NULL, "cannot open " FIX "expected.txt (run from the repository root)");
    if (!f) return test_summary("test_bleu");
    static char line[1 << 16];
    Named *m30k = calloc(256, sizeof *m30k);
    enum { N_KINDS = 15 };
    int n_m30k = 0, counts[N_KINDS] = {0};
    const char *kinds[N_KINDS] = {"tok13a", "lower", "bleu", "chrf", "sent", "rng", "paired", "conf", "m30k",
                                  "chrfpp", "chrfpp_sent", "chrfopt", "chrfopt_sent", "chrfopt_paired",
                                  "chrfopt_conf"};
    while (fgets(line, sizeof line, f)) {
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n') line[--l] = '\0';
        if (!l || line[0] == '#') continue;
        char *fl[MAX_FIELDS];
        int nf = split_tabs(line, fl);
        int kind = -1;
        for (int k = 0; k < N_KINDS; k++)
            if (!strcmp(fl[0], kinds[k])) kind = k;
        CHECK(kind >= 0, "unknown record '%s'", fl[0]);
        if (kind < 0) continue;
        counts[kind]++;
        switch (kind) {
        case 0: if (nf == 3) check_tok13a(fl); break;
        case 1: if (nf == 3) check_lower(fl); break;
        case 2: CHECK_EQ_INT(nf, 16); if (nf == 16) check_bleu(fl); break;
        case 3: CHECK_EQ_INT(nf, 7); if (nf == 7) check_chrf(fl); break;
        case 4: CHECK_EQ_INT(nf, 7); if (nf == 7) check_sent(fl); break;
        case 5: CHECK_EQ_INT(nf, 5); if (nf == 5) check_rng(fl); break;
        case 6: check_paired(fl, nf, NULL); break;
        case 7: CHECK_EQ_INT(nf, 9); if (nf == 9) check_conf(fl, NULL); break;
        case 9: CHECK_EQ_INT(nf, 8); if (nf == 8) check_chrfpp(fl); break;
        case 10: CHECK_EQ_INT(nf, 8); if (nf == 8) check_chrfpp_sent(fl); break;
        case 11: CHECK_EQ_INT(nf, 7); if (nf == 7) check_chrfopt(fl); break;
        case 12: CHECK_EQ_INT(nf, 7); if (nf == 7) check_chrfopt_sent(fl); break;
        case 13: case 14: { /* OPTS, then a whole paired / conf record */
            ChrfOptions opt;
            int ok = nf > 2 && parse_chrf_opts(fl[1], ' ', &opt) && !strcmp(fl[2], kind == 13 ? "paired" : "conf");
            CHECK(ok, "bad %s record", kinds[kind]);
            if (ok && kind == 13) check_paired(fl + 2, nf - 2, &opt);
            if (ok && kind == 14) CHECK_EQ_INT(nf, 11);
            if (ok && kind == 14 && nf == 11) check_conf(fl + 2, &opt);
            break;
        }
        case 8:
            if (nf == 3 && n_m30k < 256) {
                snprintf(m30k[n_m30k].name, sizeof m30k[n_m30k].name, "%s", fl[1]);
                m30k[n_m30k++].value = atof(fl[2]);
            }
            break;
        }
    }
    fclose(f);
    /* The file must hold every kind of record (a truncated file fails). */
    for (int k = 0; k < N_KINDS; k++)
        if (k != 8) CHECK(counts[k] > 0, "no '%s' records in expected.txt", kinds[k]);
    CHECK(counts[9] >= 31 && n_chrfpp_bootstrap >= 5, "expected 31 chrF++ corpus cases and 5 chrF++ "
          "bootstrap records, got %d/%d", counts[9], n_chrfpp_bootstrap);
    CHECK(counts[2] >= 16 && counts[3] >= 16, "expected 16 corpus cases, got %d/%d", counts[2],
          counts[3]);
    CHECK(counts[11] >= 187 && counts[12] >= 92 && n_chrfopt_bootstrap >= 8, "expected 187 corpus cases, "
          "92 segments and 8 bootstrap records of chrF's options, got %d/%d/%d", counts[11], counts[12],
          n_chrfopt_bootstrap);
    test_multi30k(m30k, n_m30k);
    free(m30k);
    return test_summary("test_bleu");
}
