/* test_ter.c: TER of src/data/ter.c against numbers computed by sacreBLEU
 * 2.6.0 itself (tests/fixtures/ter/expected.txt, written by
 * scripts/sacrebleu_expected.py): the tercom tokenizer under every option
 * set, lib_ter's edit distance with shifts on word lists (pure shifts,
 * repeated words, pairs where the beam rather than the plain Levenshtein
 * distance decides, one that reaches the 1000-candidate limit), corpus
 * scores and lines of the fixture files (one and two references, each
 * option, empty hypotheses and references), segment statistics, the paired
 * bootstrap and the confidence interval, and, when Multi30k is present, two
 * derived real-text hypotheses. Also a few cases checked by hand, the
 * signature, and allocation failures. Runs from the repository root. */
#include <stdint.h>
#include <zlib.h>

#include "common.h"
#include "data/bootstrap.h"
#include "data/ter.h"
#include "test_util.h"
#include "fixture_records.h"

#define FIX "tests/fixtures/ter/"
/* The records name their files by path from the repository root (the
 * working directory): the prefix corpus_load and fixture_read put before them. */
#define REPO_ROOT ""

/* ---- fixture reading (plain stdio, independent of cmd_eval.c) ---- */

/* FLAGS "CNPA": case_sensitive, normalized, no_punct, asian_support. */
static TerOptions flags_opt(const char *f) {
    TerOptions o = {f[0] == '1', f[1] == '1', f[2] == '1', f[3] == '1'};
    return o;
}

/* Per-segment statistics (n_seg, TER_N_STATS) and the corpus score. */
static int64_t *segment_stats(const Corpus *c, const Lines *hyp, const TerOptions *opt, double *score) {
    int64_t *out = calloc((size_t)hyp->n * TER_N_STATS, sizeof *out);
    TerStats acc;
    ter_stats_clear(&acc);
    const char *r[8];
    for (int i = 0; i < hyp->n; i++) {
        corpus_refs(c, i, r);
        TerStats s;
        CHECK_EQ_INT(ter_sentence_stats(hyp->lines[i], r, c->n_refs, opt, &s), NMT_OK);
        ter_stats_to_array(&s, out + (size_t)i * TER_N_STATS);
        ter_stats_add(&acc, &s);
    }
    *score = ter_score(&acc);
    return out;
}

/* ---- record checks ---- */

static void check_tok(char **f) {
    /* tok FLAGS INPUT TOKENIZED */
    TerOptions o = flags_opt(f[1]);
    char *in = unescape(f[2]), *want = unescape(f[3]), *got = NULL;
    CHECK_EQ_INT(ter_tokenize(in, &o, &got), NMT_OK);
    CHECK(got && !strcmp(got, want), "tercom[%s](\"%s\") = \"%s\", sacreBLEU \"%s\"", f[1], in,
          got ? got : "(null)", want);
    nmt_free(got);
}

static void check_edits(char **f) {
    /* edits HYP_WORDS REF_WORDS EDITS REF_LEN */
    int64_t e = -1, n = -1;
    CHECK_EQ_INT(ter_edits(f[1], f[2], &e, &n), NMT_OK);
    CHECK(e == atoll(f[3]) && n == atoll(f[4]), "edits(\"%s\", \"%s\") = %lld/%lld, sacreBLEU %s/%s",
          f[1], f[2], (long long)e, (long long)n, f[3], f[4]);
}

static void check_corpus(char **f) {
    /* corpus CASE FLAGS HYP REFS SCORE EDITS REF_LEN LINE */
    Corpus c;
    corpus_load(&c, REPO_ROOT, f[3], f[4]);
    if (!c.ok) {
        corpus_free(&c);
        return;
    }
    TerOptions opt = flags_opt(f[2]);
    TerStats st;
    ter_stats_clear(&st);
    const char *r[8];
    for (int i = 0; i < c.hyp.n; i++) {
        corpus_refs(&c, i, r);
        CHECK_EQ_INT(ter_add_sentence(&st, c.hyp.lines[i], r, c.n_refs, &opt), NMT_OK);
    }
    double score = ter_score(&st);
    CHECK(fabs(score - atof(f[5])) < 1e-9, "%s: TER %.12g, sacreBLEU %s", f[1], score, f[5]);
    CHECK(st.edits == atoll(f[6]), "%s: edits %lld, sacreBLEU %s", f[1], (long long)st.edits, f[6]);
    CHECK(st.ref_len == atof(f[7]), "%s: ref_len %.17g, sacreBLEU %s", f[1], st.ref_len, f[7]);
    char sig[256], line[512];
    ter_signature(&opt, c.n_refs, 0, NULL, sig, sizeof sig);
    ter_format_line(score, sig, 1, line, sizeof line);
    CHECK(!strcmp(line, unescape(f[8])), "%s:\n  nmt       %s\n  sacreBLEU %s", f[1], line, f[8]);
    corpus_free(&c);
}

static void check_sent(char **f) {
    /* sent FLAGS HYP REFS LINENO EDITS REF_LEN */
    Corpus c;
    corpus_load(&c, REPO_ROOT, f[2], f[3]);
    int i = atoi(f[4]) - 1;
    if (!c.ok || i < 0 || i >= c.hyp.n) {
        CHECK(0, "bad sent record line %s", f[4]);
        corpus_free(&c);
        return;
    }
    TerOptions opt = flags_opt(f[1]);
    const char *r[8];
    corpus_refs(&c, i, r);
    TerStats s;
    CHECK_EQ_INT(ter_sentence_stats(c.hyp.lines[i], r, c.n_refs, &opt, &s), NMT_OK);
    CHECK(s.edits == atoll(f[5]) && s.ref_len == atof(f[6]),
          "%s line %d [%s]: %lld edits, ref_len %.17g; sacreBLEU %s, %s", f[2], i + 1, f[1],
          (long long)s.edits, s.ref_len, f[5], f[6]);
    corpus_free(&c);
}

static void check_paired(char **f, int nf) {
    /* paired CASE FLAGS HYPS REFS N SEED then per system "SCORE MEAN CI P" */
    char hyps_csv[1024], *hyp_names[8];
    snprintf(hyps_csv, sizeof hyps_csv, "%s", f[3]);
    int n_sys = split_commas(hyps_csv, hyp_names);
    Corpus c;
    corpus_load(&c, REPO_ROOT, hyp_names[0], f[4]);
    if (!c.ok || nf != 7 + n_sys) {
        CHECK(0, "bad paired record %s", f[1]);
        corpus_free(&c);
        return;
    }
    TerOptions opt = flags_opt(f[2]);
    Lines hyps[8];
    const int64_t *seg[8];
    double scores[8];
    for (int s = 0; s < n_sys; s++) {
        fixture_read(REPO_ROOT, hyp_names[s], &hyps[s]);
        seg[s] = segment_stats(&c, &hyps[s], &opt, &scores[s]);
    }
    BootstrapMetric m = bootstrap_metric_ter(c.n_refs);
    BootstrapResult res[8];
    CHECK_EQ_INT(bootstrap_paired(&m, seg, scores, n_sys, c.hyp.n, atoi(f[5]), strtoull(f[6], NULL, 10), res),
                 NMT_OK);
    for (int s = 0; s < n_sys; s++) {
        double want[4];
        sscanf(f[7 + s], "%lf %lf %lf %lf", &want[0], &want[1], &want[2], &want[3]);
        double got[4] = {res[s].score, res[s].mean, res[s].ci, res[s].p_value};
        for (int k = 0; k < 4; k++)
            CHECK(fabs(got[k] - want[k]) < 1e-9, "paired %s sys %d field %d: %.12g, sacreBLEU %.12g", f[1], s, k,
                  got[k], want[k]);
    }
    for (int s = 0; s < n_sys; s++) {
        lines_free(&hyps[s]);
        free((void *)seg[s]);
    }
    corpus_free(&c);
}

static void check_conf(char **f) {
    /* conf CASE FLAGS HYP REFS N SEED MEAN CI */
    Corpus c;
    corpus_load(&c, REPO_ROOT, f[3], f[4]);
    if (!c.ok) {
        corpus_free(&c);
        return;
    }
    TerOptions opt = flags_opt(f[2]);
    double score, mean = 0, ci = 0;
    int64_t *seg = segment_stats(&c, &c.hyp, &opt, &score);
    BootstrapMetric m = bootstrap_metric_ter(c.n_refs);
    CHECK_EQ_INT(bootstrap_confidence(&m, seg, c.hyp.n, atoi(f[5]), strtoull(f[6], NULL, 10), &mean, &ci), NMT_OK);
    CHECK(fabs(mean - atof(f[7])) < 1e-9, "conf %s: mean %.12g, sacreBLEU %s", f[1], mean, f[7]);
    CHECK(fabs(ci - atof(f[8])) < 1e-9, "conf %s: ci %.12g, sacreBLEU %s", f[1], ci, f[8]);
    free(seg);
    corpus_free(&c);
}

/* ---- cases checked by hand ---- */

static void one(const char *hyp, const char *ref, const TerOptions *opt, int64_t edits, double ref_len,
                double score) {
    TerStats s;
    CHECK_EQ_INT(ter_sentence_stats(hyp, &ref, 1, opt, &s), NMT_OK);
    CHECK(s.edits == edits && s.ref_len == ref_len && fabs(ter_score(&s) - score) < 1e-9,
          "TER(\"%s\", \"%s\") = %lld edits / %g words = %.6f; by hand %lld / %g = %.6f", hyp, ref,
          (long long)s.edits, s.ref_len, ter_score(&s), (long long)edits, ref_len, score);
}

static void test_by_hand(void) {
    TerOptions lc = {0}, cs = {1, 0, 0, 0};
    /* A pure shift: "on the mat" moved behind "sat" gives the reference, so
     * one shift and no other edit (without shifts: 6 substitutions). */
    one("on the mat the cat sat", "the cat sat on the mat", &lc, 1, 6, 100.0 / 6);
    /* An insertion: "big" is one word too many (hypothesis 4 words,
     * reference 3: 1 edit of 3). */
    one("the big cat sat", "the cat sat", &lc, 1, 3, 100.0 / 3);
    /* A deletion: "cat" is missing. */
    one("the sat", "the cat sat", &lc, 1, 3, 100.0 / 3);
    /* A substitution and a shift: "dog" for "cat" (1), and "quickly" moved
     * from the front to the end (1): 2 of 4. */
    one("quickly the dog ran", "the cat ran quickly", &lc, 2, 4, 50.0);
    /* Case: ignored by default, two substitutions when case-sensitive. */
    one("The Cat", "the cat", &lc, 0, 2, 0.0);
    one("The Cat", "the cat", &cs, 2, 2, 100.0);
    /* Empty reference: every hypothesis word is an edit, no reference
     * words, so 100; empty hypothesis: every reference word is inserted;
     * both empty: 0. */
    one("a b", "", &lc, 2, 0, 100.0);
    one("", "a b c", &lc, 3, 3, 100.0);
    one("", "", &lc, 0, 0, 0.0);
    /* Two references: the fewest edits (1, against the first), over the
     * average reference length (4 + 1) / 2 = 2.5: 40. */
    const char *refs[2] = {"a b c d", "x"};
    TerStats s;
    CHECK_EQ_INT(ter_sentence_stats("a b c", refs, 2, &lc, &s), NMT_OK);
    CHECK(s.edits == 1 && s.ref_len == 2.5 && s.ref_words == 5 && fabs(ter_score(&s) - 40.0) < 1e-12,
          "two references: %lld edits, ref_len %g, %lld words, TER %g", (long long)s.edits, s.ref_len,
          (long long)s.ref_words, ter_score(&s));
    /* Punctuation is a word unless removed: "a b ." against "a b" is one
     * edit, none with --ter-no-punct. */
    TerOptions np = {0, 0, 1, 0};
    one("a b .", "a b", &lc, 1, 2, 50.0);
    one("a b .", "a b", &np, 0, 2, 0.0);
    /* The corpus score: 100 * (sum of edits) / (sum of reference lengths). */
    TerStats acc;
    ter_stats_clear(&acc);
    const char *r1 = "the cat sat", *r2 = "a b";
    CHECK_EQ_INT(ter_add_sentence(&acc, "the sat", &r1, 1, &lc), NMT_OK);
    CHECK_EQ_INT(ter_add_sentence(&acc, "a b c d", &r2, 1, &lc), NMT_OK);
    CHECK(acc.edits == 3 && acc.ref_len == 5 && fabs(ter_score(&acc) - 60.0) < 1e-12,
          "corpus: %lld edits / %g = %g, by hand 3 / 5 = 60", (long long)acc.edits, acc.ref_len, ter_score(&acc));
    /* The bootstrap's float32 score, and sacreBLEU's Python floats for no
     * reference words. */
    int pf = -1;
    float st[2] = {3, 5};
    CHECK(ter_score_numpy_f32(st, &pf) == (float)(100.0f * (3.0f / 5.0f)) && pf == 0, "float32 TER");
    float st0[2] = {2, 0}, st00[2] = {0, 0};
    CHECK(ter_score_numpy_f32(st0, &pf) == 100.0 && pf == 1, "float32 TER without reference words");
    CHECK(ter_score_numpy_f32(st00, &pf) == 0.0 && pf == 1, "float32 TER of nothing");
    /* The signature in sacreBLEU's order, with the bootstrap fields. */
    char sig[256], line[512];
    TerOptions all = {1, 1, 1, 1};
    ter_signature(&all, 2, 1000, "12345", sig, sizeof sig);
    CHECK_EQ_STR(sig, "nrefs:2|bs:1000|seed:12345|case:mixed|tok:tercom|norm:yes|punct:no|asian:yes|version:2.6.0");
    ter_signature(&lc, 1, 0, NULL, sig, sizeof sig);
    ter_format_line(100.0 / 3, sig, 1, line, sizeof line);
    CHECK_EQ_STR(line, "TER|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0 = 33.3");
    CHECK_EQ_INT(ter_sentence_stats("a", refs, 0, &lc, &s), NMT_ERR_USAGE);
}

/* Every allocation failure is NMT_ERR_NOMEM and leaves the accumulator alone. */
static void test_alloc_failures(void) {
    TerOptions opt = {0, 1, 1, 1};
    const char *refs[2] = {"It's a test of the Straße, isn't it?", "東京は日本の首都です。 a b c"};
    int done = 0;
    for (long k = 1; k < 400 && !done; k++) {
        TerStats acc;
        ter_stats_clear(&acc);
        nmt_alloc_fail_at(k);
        NmtStatus st = ter_add_sentence(&acc, "a test it's of the STRASSE isn't it", refs, 2, &opt);
        nmt_alloc_fail_at(0);
        CHECK(st == NMT_OK || st == NMT_ERR_NOMEM, "fail_at %ld: status %d", k, (int)st);
        if (st == NMT_OK) done = 1;
        else CHECK(acc.edits == 0 && acc.ref_len == 0 && acc.ref_words == 0, "fail_at %ld changed stats", k);
    }
    CHECK(done, "never succeeded");
}

/* ---- Multi30k: derived hypotheses scored against the reference ---- */

/* ' '.join(w for i, w in enumerate(line.split()) if i % k != k - 1), or with
 * k = 0 the first two words moved to the end (the script's rotate2); ASCII
 * whitespace (val.en has no other). */
static char *derive(const char *line, int k) {
    size_t len = strlen(line);
    char *tmp = malloc(len + 1), *out = malloc(len + 2), *words[512];
    memcpy(tmp, line, len + 1);
    int n = 0;
    for (char *t = strtok(tmp, " \t\r\n\v\f"); t && n < 512; t = strtok(NULL, " \t\r\n\v\f")) words[n++] = t;
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        int src = k ? i : (i + 2) % n;
        if (k && i % k == k - 1) continue;
        if (w) out[w++] = ' ';
        size_t l = strlen(words[src]);
        memcpy(out + w, words[src], l);
        w += l;
    }
    out[w] = '\0';
    free(tmp);
    return out;
}

static void test_multi30k(const Named *want, int n_want) {
    const char *dir = test_multi30k_dir();
    double v;
    if (!dir) {
        printf("SKIP test_ter multi30k: corpus not found (../shared/data/multi30k or $NMT_MULTI30K)\n");
        return;
    }
    if (!named_get(want, n_want, "val_drop3_0000_score", &v)) {
        printf("SKIP test_ter multi30k: no m30k records in " FIX "expected.txt\n");
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/val.en.gz", dir);
    Lines ref;
    if (!lines_read(path, &ref)) return;
    const char *names[2] = {"val_drop3", "val_rotate2"}, *flags[2] = {"0000", "1110"};
    for (int h = 0; h < 2; h++)
        for (int f = 0; f < 2; f++) {
            TerOptions opt = flags_opt(flags[f]);
            TerStats st;
            ter_stats_clear(&st);
            for (int i = 0; i < ref.n; i++) {
                char *hyp = derive(ref.lines[i], h == 0 ? 3 : 0);
                const char *r = ref.lines[i];
                CHECK_EQ_INT(ter_add_sentence(&st, hyp, &r, 1, &opt), NMT_OK);
                free(hyp);
            }
            char key[96];
            snprintf(key, sizeof key, "%s_%s_score", names[h], flags[f]);
            if (named_get(want, n_want, key, &v)) CHECK_NEAR(ter_score(&st), v, 1e-9);
            snprintf(key, sizeof key, "%s_%s_edits", names[h], flags[f]);
            if (named_get(want, n_want, key, &v)) CHECK_EQ_INT(st.edits, (int64_t)v);
            snprintf(key, sizeof key, "%s_%s_ref_len", names[h], flags[f]);
            if (named_get(want, n_want, key, &v)) CHECK_NEAR(st.ref_len, v, 0);
            if (h == 0 && f == 0) printf("test_ter multi30k: %d segments, TER %.2f\n", ref.n, ter_score(&st));
        }
    lines_free(&ref);
}

int main(void) {
    nmt_log_quiet(1);
    test_by_hand();
    test_alloc_failures();

    FILE *f = fopen(FIX "expected.txt", "r");
    CHECK(f != NULL, "cannot open " FIX "expected.txt (run from the repository root)");
    if (!f) return test_summary("test_ter");
    static char line[1 << 16];
    Named *m30k = calloc(64, sizeof *m30k);
    int n_m30k = 0, counts[7] = {0};
    const char *kinds[7] = {"tok", "edits", "corpus", "sent", "paired", "conf", "m30k"};
    while (fgets(line, sizeof line, f)) {
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n') line[--l] = '\0';
        if (!l || line[0] == '#') continue;
        char *fl[MAX_FIELDS];
        int nf = split_tabs(line, fl), kind = -1;
        for (int k = 0; k < 7; k++)
            if (!strcmp(fl[0], kinds[k])) kind = k;
        CHECK(kind >= 0, "unknown record '%s'", fl[0]);
        if (kind < 0) continue;
        counts[kind]++;
        switch (kind) {
        case 0: CHECK_EQ_INT(nf, 4); if (nf == 4) check_tok(fl); break;
        case 1: CHECK_EQ_INT(nf, 5); if (nf == 5) check_edits(fl); break;
        case 2: CHECK_EQ_INT(nf, 9); if (nf == 9) check_corpus(fl); break;
        case 3: CHECK_EQ_INT(nf, 7); if (nf == 7) check_sent(fl); break;
        case 4: check_paired(fl, nf); break;
        case 5: CHECK_EQ_INT(nf, 9); if (nf == 9) check_conf(fl); break;
        case 6:
            if (nf == 3 && n_m30k < 64) {
                snprintf(m30k[n_m30k].name, sizeof m30k[n_m30k].name, "%s", fl[1]);
                m30k[n_m30k++].value = atof(fl[2]);
            }
            break;
        }
    }
    fclose(f);
    /* The file must hold every kind of record (a truncated file fails). */
    for (int k = 0; k < 6; k++) CHECK(counts[k] > 0, "no '%s' records in expected.txt", kinds[k]);
    CHECK(counts[0] >= 300 && counts[1] >= 15 && counts[2] >= 16,
          "expected >= 300 tokenizer, 15 edit and 16 corpus records, got %d/%d/%d", counts[0], counts[1], counts[2]);
    test_multi30k(m30k, n_m30k);
    free(m30k);
    return test_summary("test_ter");
}
