/* test_demo_corpus.c: the generated demo corpus (demo_corpus.h):
 * hand-derived translations, determinism, line counts, disjoint splits,
 * target = function of source, reordering, lengths, vocabulary, files. */
#include <stdint.h>
#include <sys/stat.h>
#include <zlib.h>

#include "common.h"
#include "data/demo_corpus.h"
#include "test_util.h"

static const char *line_at(const char *text, const int64_t *off, int64_t i, char *buf, size_t cap) {
    size_t len = (size_t)(off[i + 1] - off[i] - 1);
    if (len >= cap) len = cap - 1;
    memcpy(buf, text + off[i], len);
    buf[len] = '\0';
    return buf;
}

static int count_words(const char *s) {
    int n = 0, in = 0;
    for (; *s; s++) {
        if (*s != ' ' && !in) n++;
        in = *s != ' ';
    }
    return n;
}

/* Rules applied by hand (source words from the documented formula). */
static void test_hand_examples(void) {
    static const char *const cases[][2] = {
        {"bodi na dubun", "the dog sleeps"},
        {"bodi ri ki dubun te mu", "dogs did not sleep"},
        {"fuma ri na dubun mu", "the cats do not sleep"},
        {"laso ki dubun mu", "a man does not sleep"},
        {"fuma ri na dubun", "the cats sleep"},
        {"fuma tizul dabel ki zabo menal na bifer", "a big red cat sees the old owl"},
        {"zabo menal ki dubun", "an old owl sleeps"},
        {"zabo dabel ki dubun", "a big owl sleeps"},
        {"zabo ki dubun", "an owl sleeps"},
        {"fuma rilul ki dubun te", "an empty cat slept"},
        {"17 bodi na tizu na kan 42 fuma ki zabur te",
         "the 17 dogs painted 42 cats in front of the city"},
        {"fuma na dubun zum laso ki voni ri na dedosh dezar",
         "a man looks at the fire trucks quickly because the cat sleeps"},
        {"laso ri ki nivesh vizan", "men sit down every day"},
        {"3 laso rilul na vizan", "the 3 empty men sit down"},
        {"laso na tizu ki pa bodi na bifer te", "the man saw the dog near a city"},
    };
    char out[512];
    for (size_t i = 0; i < NMT_ARRAY_LEN(cases); i++) {
        NmtStatus st = demo_corpus_translate(cases[i][0], out, sizeof out);
        CHECK(st == NMT_OK, "translate '%s': %s", cases[i][0], nmt_error_message());
        if (st == NMT_OK) CHECK_EQ_STR(out, cases[i][1]);
    }
    /* ungrammatical sources are refused with the word at fault */
    CHECK(demo_corpus_translate("bodi dubun", out, sizeof out) == NMT_ERR_FORMAT, "missing determiner");
    CHECK_CONTAINS(nmt_error_message(), "word 2 ('dubun')");
    CHECK(demo_corpus_translate("bodi na bifer", out, sizeof out) == NMT_ERR_FORMAT, "object missing");
    CHECK(demo_corpus_translate("bodi na fuma na dubun", out, sizeof out) == NMT_ERR_FORMAT, "object not taken");
    CHECK(demo_corpus_translate("bodi na xylo dubun", out, sizeof out) == NMT_ERR_FORMAT, "unknown word");
    CHECK_CONTAINS(nmt_error_message(), "xylo");
    CHECK(demo_corpus_translate("bodi na dubun zum", out, sizeof out) == NMT_ERR_FORMAT, "dangling conjunction");
    CHECK(demo_corpus_translate("17 bodi ri na dubun", out, sizeof out) == NMT_ERR_FORMAT, "number and plural");
    CHECK(demo_corpus_translate("bodi na dubun", out, 5) == NMT_ERR_RUNTIME, "small buffer refused");

    /* concepts: forms and multi-word entries map to one id on both sides */
    int32_t a[32], b[32];
    int na = demo_corpus_concepts("fuma na dubun zum laso ki voni ri na dedosh dezar", 0, a, 32);
    int nb = demo_corpus_concepts("a man looks at the fire trucks quickly because the cat sleeps", 1, b, 32);
    CHECK(na == 7 && nb == 7, "concept counts %d %d", na, nb);
    if (na == 7 && nb == 7) {
        /* source order: cat sleep because man fire-truck quickly look-at */
        CHECK(a[0] == b[5] && a[1] == b[6] && a[2] == b[4] && a[3] == b[0] && a[4] == b[2] &&
                  a[5] == b[3] && a[6] == b[1],
              "concepts must align by the rules");
        CHECK_EQ_INT(a[0], 1001); /* cat */
        CHECK_EQ_INT(b[1], 3026); /* look at */
    }
    CHECK_EQ_INT(demo_corpus_concepts("the 42 dogs", 1, b, 32), 2);
    CHECK_EQ_INT(b[1], 1000);
    CHECK_EQ_INT(b[0], 8042);
    CHECK_EQ_INT(demo_corpus_concepts("the qqq", 1, b, 32), -1);
}

static int same_text(const DemoCorpus *x, const DemoCorpus *y) {
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        const DemoText *a = &x->split[s], *b = &y->split[s];
        if (a->n != b->n || a->src_off[a->n] != b->src_off[b->n] || a->tgt_off[a->n] != b->tgt_off[b->n])
            return 0;
        if (a->n && (memcmp(a->src, b->src, (size_t)a->src_off[a->n]) ||
                     memcmp(a->tgt, b->tgt, (size_t)a->tgt_off[a->n])))
            return 0;
    }
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void test_corpus(void) {
    DemoCorpusSpec spec;
    demo_corpus_spec_default(&spec);
    CHECK(spec.n_pairs[DEMO_TRAIN] == 20000 && spec.n_pairs[DEMO_VALID] == 500 &&
              spec.n_pairs[DEMO_TEST] == 500 && spec.min_words == 3 && spec.max_words == 25,
          "default spec");
    DemoCorpus *c1 = NULL, *c2 = NULL, *c3 = NULL;
    CHECK(demo_corpus_generate(&spec, &c1) == NMT_OK, "generate: %s", nmt_error_message());
    CHECK(demo_corpus_generate(&spec, &c2) == NMT_OK, "generate: %s", nmt_error_message());
    if (!c1 || !c2) return;
    CHECK(same_text(c1, c2), "same seed must give identical text");
    spec.seed = 2;
    NMT_ASSERT(demo_corpus_generate(&spec, &c3) == NMT_OK);
    CHECK(!same_text(c1, c3), "a different seed must give different text");
    CHECK(memcmp(c1->split[DEMO_TEST].src, c3->split[DEMO_TEST].src, 200) != 0, "seed changes the test set");
    demo_corpus_free(c3);
    demo_corpus_free(c2);

    /* line counts: n lines, each ended by '\n', none empty */
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        const DemoText *t = &c1->split[s];
        int64_t nl_src = 0, nl_tgt = 0;
        for (int64_t i = 0; i < t->src_off[t->n]; i++) nl_src += t->src[i] == '\n';
        for (int64_t i = 0; i < t->tgt_off[t->n]; i++) nl_tgt += t->tgt[i] == '\n';
        CHECK_EQ_INT(nl_src, spec.n_pairs[s]);
        CHECK_EQ_INT(nl_tgt, spec.n_pairs[s]);
        CHECK_EQ_INT(t->n, spec.n_pairs[s]);
    }

    /* splits share no sentence (and no sentence repeats) */
    int64_t total = 0;
    for (int s = 0; s < DEMO_N_SPLITS; s++) total += c1->split[s].n;
    char **lines = malloc((size_t)total * sizeof *lines);
    int64_t k = 0;
    char buf[1024], tb[1024], out[1024];
    for (int s = 0; s < DEMO_N_SPLITS; s++)
        for (int64_t i = 0; i < c1->split[s].n; i++)
            lines[k++] = strdup(line_at(c1->split[s].src, c1->split[s].src_off, i, buf, sizeof buf));
    qsort(lines, (size_t)total, sizeof *lines, cmp_str);
    int64_t dups = 0;
    for (int64_t i = 1; i < total; i++) dups += strcmp(lines[i - 1], lines[i]) == 0;
    CHECK_EQ_INT(dups, 0);
    for (int64_t i = 0; i < total; i++) free(lines[i]);
    free(lines);

    /* target = translate(source) for every pair; concepts are the same
     * multiset on both sides; word order differs for many; lengths */
    int64_t mismatches = 0, bad_concepts = 0, reordered = 0, checked = 0, short_n = 0, long_n = 0;
    int64_t too_short = 0, too_long = 0, sum_len = 0, hist[6] = {0};
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        const DemoText *t = &c1->split[s];
        for (int64_t i = 0; i < t->n; i++) {
            const char *src = line_at(t->src, t->src_off, i, buf, sizeof buf);
            const char *tgt = line_at(t->tgt, t->tgt_off, i, tb, sizeof tb);
            if (demo_corpus_translate(src, out, sizeof out) != NMT_OK || strcmp(out, tgt)) {
                if (mismatches++ < 3) fprintf(stderr, "mismatch: '%s' -> '%s' vs '%s'\n", src, out, tgt);
            }
            int ns = count_words(src), nt = count_words(tgt);
            too_short += ns < 3 || nt < 3;
            too_long += ns > 25 || nt > 25;
            short_n += ns <= 6;
            long_n += ns >= 18;
            sum_len += ns;
            hist[ns / 5 < 5 ? ns / 5 : 5]++;
            int32_t a[64], b[64];
            int na = demo_corpus_concepts(src, 0, a, 64), nb = demo_corpus_concepts(tgt, 1, b, 64);
            if (na < 1 || na != nb) {
                bad_concepts++;
                continue;
            }
            reordered += memcmp(a, b, (size_t)na * sizeof *a) != 0;
            qsort(a, (size_t)na, sizeof *a, cmp_i32);
            qsort(b, (size_t)nb, sizeof *b, cmp_i32);
            bad_concepts += memcmp(a, b, (size_t)na * sizeof *a) != 0;
            checked++;
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(bad_concepts, 0);
    CHECK_EQ_INT(too_short, 0);
    CHECK_EQ_INT(too_long, 0);
    double fr = (double)reordered / (double)(checked ? checked : 1);
    double mean = (double)sum_len / (double)total;
    printf("reordered %.3f, short (<=6) %.3f, long (>=18) %.3f, mean source length %.2f\n", fr,
           (double)short_n / (double)total, (double)long_n / (double)total, mean);
    printf("source length histogram 0-4 %lld, 5-9 %lld, 10-14 %lld, 15-19 %lld, 20-24 %lld, 25 %lld\n",
           (long long)hist[0], (long long)hist[1], (long long)hist[2], (long long)hist[3],
           (long long)hist[4], (long long)hist[5]);
    CHECK(fr > 0.5, "target order must differ from a monotone mapping for most sentences (%.3f)", fr);
    CHECK((double)short_n / (double)total > 0.05, "short sentences must occur");
    CHECK((double)long_n / (double)total > 0.10, "long sentences must occur");
    CHECK(mean > 8 && mean < 16, "mean source length %.2f", mean);

    /* vocabulary: a few hundred words on each side */
    for (int side = 0; side < 2; side++) {
        const DemoText *t = &c1->split[DEMO_TRAIN];
        const char *text = side ? t->tgt : t->src;
        int64_t len = side ? t->tgt_off[t->n] : t->src_off[t->n];
        char *copy = malloc((size_t)len + 1);
        memcpy(copy, text, (size_t)len);
        copy[len] = '\0';
        char **words = malloc((size_t)len * sizeof *words);
        int64_t nw = 0;
        char *save = NULL;
        for (char *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) words[nw++] = w;
        qsort(words, (size_t)nw, sizeof *words, cmp_str);
        int64_t distinct = nw > 0;
        for (int64_t i = 1; i < nw; i++) distinct += strcmp(words[i - 1], words[i]) != 0;
        printf("%s vocabulary: %lld words\n", side ? "target" : "source", (long long)distinct);
        CHECK(distinct >= 200 && distinct <= 600, "vocabulary size %lld", (long long)distinct);
        free(words);
        free(copy);
    }
    demo_corpus_free(c1);
}

static void test_spec_and_stability(void) {
    DemoCorpusSpec spec;
    demo_corpus_spec_default(&spec);
    spec.n_pairs[DEMO_TRAIN] = 100;
    DemoCorpus *a = NULL, *b = NULL;
    NMT_ASSERT(demo_corpus_generate(&spec, &a) == NMT_OK);
    spec.n_pairs[DEMO_TRAIN] = 300;
    NMT_ASSERT(demo_corpus_generate(&spec, &b) == NMT_OK);
    int held_same = 1;
    for (int s = DEMO_VALID; s <= DEMO_TEST; s++)
        held_same &= a->split[s].src_off[a->split[s].n] == b->split[s].src_off[b->split[s].n] &&
                     !memcmp(a->split[s].src, b->split[s].src, (size_t)a->split[s].src_off[a->split[s].n]);
    CHECK(held_same, "valid and test must not depend on the train size");
    CHECK(!memcmp(a->split[DEMO_TRAIN].src, b->split[DEMO_TRAIN].src, (size_t)a->split[DEMO_TRAIN].src_off[100]),
          "a larger train set extends the smaller one");
    demo_corpus_free(a);
    demo_corpus_free(b);

    DemoCorpus *c = (DemoCorpus *)1;
    DemoCorpusSpec bad = spec;
    bad.min_words = 0;
    CHECK(demo_corpus_generate(&bad, &c) == NMT_ERR_CONFIG && c == NULL, "min_words 0 refused");
    bad = spec;
    bad.n_pairs[DEMO_VALID] = -1;
    CHECK(demo_corpus_generate(&bad, &c) == NMT_ERR_CONFIG, "negative size refused");
    CHECK_CONTAINS(nmt_error_message(), "valid");
    bad = spec;
    bad.max_words = 3;
    bad.n_pairs[DEMO_TRAIN] = 5000; /* fewer than 2000 distinct 3-word sentences exist */
    CHECK(demo_corpus_generate(&bad, &c) == NMT_ERR_RUNTIME, "impossible request refused");
    bad = spec;
    bad.min_words = 20;
    bad.max_words = 22;
    bad.n_pairs[DEMO_TRAIN] = 200;
    CHECK(demo_corpus_generate(&bad, &c) == NMT_OK, "length window: %s", nmt_error_message());
    if (c) {
        int in_range = 1;
        char buf[1024];
        for (int64_t i = 0; i < c->split[DEMO_TRAIN].n; i++) {
            int n = count_words(line_at(c->split[DEMO_TRAIN].tgt, c->split[DEMO_TRAIN].tgt_off, i, buf, sizeof buf));
            in_range &= n >= 20 && n <= 22;
        }
        CHECK(in_range, "targets must respect the word range");
        demo_corpus_free(c);
    }
    demo_corpus_free(NULL);

    /* allocation failures are reported, never a crash */
    spec.n_pairs[DEMO_TRAIN] = 50;
    spec.n_pairs[DEMO_VALID] = spec.n_pairs[DEMO_TEST] = 5;
    int nomem_ok = 1;
    for (long k = 1; k <= 30; k++) {
        nmt_alloc_fail_at(k);
        NmtStatus st = demo_corpus_generate(&spec, &c);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) demo_corpus_free(c);
        else nomem_ok &= st == NMT_ERR_NOMEM && c == NULL;
    }
    CHECK(nomem_ok, "allocation failures give NMT_ERR_NOMEM");
}

static char *read_all(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*len + 1);
    if (fread(b, 1, (size_t)*len, f) != (size_t)*len) *len = -1;
    fclose(f);
    return b;
}

static void test_files(void) {
    DemoCorpusSpec spec;
    demo_corpus_spec_default(&spec);
    spec.n_pairs[DEMO_TRAIN] = 300;
    spec.n_pairs[DEMO_VALID] = 20;
    spec.n_pairs[DEMO_TEST] = 0;
    DemoCorpus *c;
    NMT_ASSERT(demo_corpus_generate(&spec, &c) == NMT_OK);
    char dir[1024], dir2[1024];
    snprintf(dir, sizeof dir, "%s/plain/sub", test_tmpdir());
    snprintf(dir2, sizeof dir2, "%s/gz", test_tmpdir());
    CHECK(demo_corpus_write(c, dir, 0) == NMT_OK, "write: %s", nmt_error_message());
    CHECK(demo_corpus_write(c, dir2, 1) == NMT_OK, "write gz: %s", nmt_error_message());
    for (int s = 0; s < DEMO_N_SPLITS; s++)
        for (int side = 0; side < 2; side++) {
            const DemoText *t = &c->split[s];
            const char *want = side ? t->tgt : t->src;
            long want_len = (long)(side ? t->tgt_off[t->n] : t->src_off[t->n]);
            char path[1200];
            snprintf(path, sizeof path, "%s/%s.%s", dir, demo_corpus_split_name(s), side ? "tgt" : "src");
            long len = -1;
            char *got = read_all(path, &len);
            CHECK(got && len == want_len && (len == 0 || !memcmp(got, want, (size_t)len)), "file %s", path);
            free(got);
            snprintf(path, sizeof path, "%s/%s.%s.gz", dir2, demo_corpus_split_name(s), side ? "tgt" : "src");
            gzFile g = gzopen(path, "rb");
            CHECK(g != NULL, "open %s", path);
            if (g) {
                char *gb = malloc((size_t)want_len + 16);
                int n = gzread(g, gb, (unsigned)want_len + 16);
                gzclose(g);
                CHECK(n == want_len && (n == 0 || !memcmp(gb, want, (size_t)n)), "gz file %s", path);
                free(gb);
            }
        }
    /* the gzip bytes are reproducible */
    char dir3[1024], p1[1200], p3[1200];
    snprintf(dir3, sizeof dir3, "%s/gz2", test_tmpdir());
    NMT_ASSERT(demo_corpus_write(c, dir3, 1) == NMT_OK);
    snprintf(p1, sizeof p1, "%s/train.src.gz", dir2);
    snprintf(p3, sizeof p3, "%s/train.src.gz", dir3);
    long l1 = -1, l3 = -2;
    char *b1 = read_all(p1, &l1), *b3 = read_all(p3, &l3);
    CHECK(b1 && b3 && l1 == l3 && !memcmp(b1, b3, (size_t)l1), "gzip output must be byte-identical");
    free(b1);
    free(b3);

    /* an unwritable place is an I/O error naming the path */
    char blocker[1200];
    snprintf(blocker, sizeof blocker, "%s/a-file", test_tmpdir());
    test_write_file(test_tmpdir(), "a-file", "x", 1);
    char inside[1300];
    snprintf(inside, sizeof inside, "%s/out", blocker);
    CHECK(demo_corpus_write(c, inside, 0) == NMT_ERR_IO, "writing under a file must fail");
    CHECK_CONTAINS(nmt_error_message(), "a-file");
    demo_corpus_free(c);
}

int main(void) {
    nmt_log_quiet(1);
    test_hand_examples();
    test_corpus();
    test_spec_and_stability();
    test_files();
    return test_summary("test_demo_corpus");
}
