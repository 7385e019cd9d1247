/* test_shortlist.c: the output-vocabulary shortlist (src/data/shortlist.h).
 * On a small word corpus where each source word has one clear translation,
 * the lexical table must rank that translation first; frequencies must be
 * in order; a saved file must load back to the same selections; loading
 * must name the file and line of a bad line, and refuse the saved file cut
 * off at any byte (its header counts the lines); a version 1 file (no
 * counts) must still load; a batch's selection must hold
 * EOS, UNK, the frequent words and the partners of its source words, in
 * ascending order, without PAD or BOS. */
#include "data/shortlist.h"
#include "fileio.h"
#include "test_util.h"
#include <stdbool.h>

typedef struct {
    const char *const *lines;
    int n, next;
} Lines;

static int next_line(void *ctx, const char **line, size_t *len) {
    Lines *l = ctx;
    if (l->next >= l->n) return 0;
    *line = l->lines[l->next++];
    *len = strlen(*line);
    return 1;
}

static Tokenizer *words(const char *const *lines, int n) {
    TokenizerSpec spec;
    tokenizer_spec_init(&spec, TOKENIZER_WORD);
    spec.vocab_size = 100;
    Lines src = {lines, n, 0};
    Tokenizer *t = NULL;
    CHECK_EQ_INT(tokenizer_train(&spec, next_line, &src, &t), NMT_OK);
    return t;
}

/* German-like source, English-like target: Hund <-> dog, Katze <-> cat,
 * rennt <-> runs, schlaeft <-> sleeps; "the" is in every target. */
static const char *const src_lines[] = {
    "Hund rennt", "Katze rennt", "Hund schlaeft", "Katze schlaeft", "Hund rennt", "Katze schlaeft",
    "Hund Katze", "Hund rennt", "Katze rennt",
};
static const char *const tgt_lines[] = {
    "the dog runs", "the cat runs", "the dog sleeps", "the cat sleeps", "the dog runs", "the cat sleeps",
    "the dog the cat", "the dog runs", "the cat runs",
};
enum { N = 9 };

static int id_of(const Tokenizer *t, const char *w) { return tokenizer_piece_to_id(t, w); }

static bool contains(const int32_t *ids, int n, int id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

int main(void) {
    Tokenizer *ts = words(src_lines, N), *tt = words(tgt_lines, N);
    int V_s = tokenizer_vocab_size(ts), V_t = tokenizer_vocab_size(tt);
    Dataset *d;
    CHECK_EQ_INT(dataset_create(&d), NMT_OK);
    for (int i = 0; i < N; i++) {
        int32_t *s = NULL, *t = NULL;
        int ns, nt;
        CHECK_EQ_INT(tokenizer_encode(ts, src_lines[i], strlen(src_lines[i]), &s, &ns), NMT_OK);
        CHECK_EQ_INT(tokenizer_encode(tt, tgt_lines[i], strlen(tgt_lines[i]), &t, &nt), NMT_OK);
        CHECK_EQ_INT(dataset_add(d, s, ns, t, nt, i + 1), NMT_OK);
        nmt_free(s);
        nmt_free(t);
    }
    Shortlist *sl;
    CHECK_EQ_INT(shortlist_build(d, V_s, V_t, 3, &sl), NMT_OK);
    CHECK_EQ_INT(shortlist_n_frequent(sl), 5); /* the dog cat runs sleeps */
    /* a single source word: its best partner is its translation */
    const char *pairs[][2] = {{"Hund", "dog"}, {"Katze", "cat"}, {"rennt", "runs"}, {"schlaeft", "sleeps"}};
    int32_t out[128];
    for (int i = 0; i < 4; i++) {
        int32_t s = id_of(ts, pairs[i][0]);
        int n = shortlist_select(sl, 0, 1, &s, 1, out);
        CHECK(n == 3 && contains(out, n, id_of(tt, pairs[i][1])) && contains(out, n, NMT_EOS_ID) &&
                  contains(out, n, NMT_UNK_ID),
              "%s: one partner should be '%s' (got %d ids)", pairs[i][0], pairs[i][1], n);
    }
    /* frequent words come first: "the" is in every pair */
    int32_t none = -1;
    int n = shortlist_select(sl, 1, 0, &none, 0, out);
    CHECK(n == 3 && contains(out, n, id_of(tt, "the")), "the most frequent target word is 'the' (%d ids)", n);
    /* a batch: ascending, no PAD/BOS, the frequent ones and the partners */
    int32_t batch[] = {id_of(ts, "Hund"), id_of(ts, "schlaeft")};
    n = shortlist_select(sl, 1, 1, batch, 2, out);
    bool ascending = true;
    for (int i = 1; i < n; i++) ascending &= out[i] > out[i - 1];
    CHECK(ascending && !contains(out, n, NMT_PAD_ID) && !contains(out, n, NMT_BOS_ID), "selection order");
    CHECK(n == 5 && contains(out, n, id_of(tt, "dog")) && contains(out, n, id_of(tt, "sleeps")) &&
              !contains(out, n, id_of(tt, "cat")),
          "batch selection has %d ids", n);
    /* save, load: the same selections */
    const char *dir = test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/sl.tsv", dir);
    CHECK_EQ_INT(shortlist_save(sl, ts, tt, path), NMT_OK);
    Shortlist *back;
    CHECK_EQ_INT(shortlist_load(path, ts, tt, &back), NMT_OK);
    for (int s = 0; s < V_s; s++)
        for (int k = 0; k <= 3; k++) {
            int32_t a[128], b[128];
            int32_t src = s;
            int na = shortlist_select(sl, k, k, &src, 1, a), nb = shortlist_select(back, k, k, &src, 1, b);
            CHECK(na == nb && !memcmp(a, b, (size_t)na * 4), "source %d, %d: the loaded shortlist differs", s, k);
        }
    CHECK_EQ_INT(shortlist_n_frequent(back), shortlist_n_frequent(sl));
    shortlist_free(back);
    /* the header counts the lines; every cut of the file, at any byte, is refused */
    char *saved;
    size_t saved_size;
    CHECK_EQ_INT(file_read_all(path, &saved, &saved_size), NMT_OK);
    int n_l = 0;
    for (size_t i = 0; i + 1 < saved_size; i++) n_l += saved[i] == '\n' && saved[i + 1] == 'L';
    char want_header[64];
    snprintf(want_header, sizeof want_header, "nmt-shortlist 2 F=5 L=%d\n", n_l);
    CHECK(n_l > 0 && !strncmp(saved, want_header, strlen(want_header)), "header: want '%s', got '%.40s'", want_header,
          saved);
    for (size_t cut = 1; cut < saved_size; cut++) {
        char *p = strdup(test_write_file(dir, "cut.tsv", saved, cut));
        Shortlist *x = NULL;
        NmtStatus st = shortlist_load(p, ts, tt, &x);
        CHECK(st == NMT_ERR_FORMAT && !x, "the file cut after %zu of %zu bytes loads (status %d)", cut, saved_size, st);
        if (st == NMT_ERR_FORMAT) CHECK_CONTAINS(nmt_error_message(), "cut.tsv:");
        shortlist_free(x);
        free(p);
    }
    /* a version 1 file (the same lines under "nmt-shortlist 1") still loads */
    const char *body = strchr(saved, '\n') + 1;
    char *v1 = nmt_asprintf("nmt-shortlist 1\n%s", body);
    char *v1_path = strdup(test_write_file(dir, "v1.tsv", v1, strlen(v1)));
    CHECK_EQ_INT(shortlist_load(v1_path, ts, tt, &back), NMT_OK);
    for (int s = 0; s < V_s; s++) {
        int32_t a[128], b[128], src = s;
        int na = shortlist_select(sl, 2, 2, &src, 1, a), nb = shortlist_select(back, 2, 2, &src, 1, b);
        CHECK(na == nb && !memcmp(a, b, (size_t)na * 4), "source %d: the version 1 file loads otherwise", s);
    }
    shortlist_free(back);
    free(v1_path), nmt_free(v1), nmt_free(saved);
    /* bad files name the file and line */
    const char *bad[][2] = {
        {"not a shortlist\n", ":1: not a shortlist"},
        {"nmt-shortlist 1\nF\tthe\t5\nF\tzebra\t2\n", ":3: target piece 'zebra' is not in the model's vocabulary"},
        {"nmt-shortlist 1\nF\tthe\tmany\n", ":2: bad count 'many'"},
        {"nmt-shortlist 1\nL\tHund\tdog\n", ":2: want"},
        {"nmt-shortlist 1\nL\tQuark\tdog\t0.5\n", ":2: source piece 'Quark'"},
        {"nmt-shortlist 1\nL\tschlaeft\tdog\t0.5\nL\tHund\tdog\t0.5\n", ":3: source piece 'Hund' out of order"},
        {"", "empty file"},
        {"nmt-shortlist 1\nF\tthe\t5", ":2: the last line has no newline: the file is cut off"},
        {"nmt-shortlist 2 F=2 L=0\nF\tthe\t5\n", ":2: the file ends after 1 F and 0 L lines, its header (line 1) promises 2 and 0"},
        {"nmt-shortlist 2 F=1 L=0\nF\tthe\t5\nF\tdog\t3\n", ":3: the file ends after 2 F and 0 L lines"},
        {"nmt-shortlist 2\nF\tthe\t5\n", ":1: not a shortlist file"},
        {"nmt-shortlist 3 F=1 L=0\nF\tthe\t5\n", ":1: shortlist format version 3; this nmt reads versions 1 and 2"},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad); i++) {
        char *p = strdup(test_write_file(dir, "bad.tsv", bad[i][0], strlen(bad[i][0])));
        Shortlist *x = NULL;
        CHECK_EQ_INT(shortlist_load(p, ts, tt, &x), NMT_ERR_FORMAT);
        CHECK(x == NULL, "a failed load returns no shortlist");
        CHECK_CONTAINS(nmt_error_message(), bad[i][1]);
        CHECK_CONTAINS(nmt_error_message(), "bad.tsv");
        free(p);
    }
    /* allocation failures: errors, never crashes */
    for (long k = 1;; k++) {
        Shortlist *x = NULL;
        nmt_alloc_fail_at(k);
        NmtStatus st = shortlist_load(path, ts, tt, &x);
        nmt_alloc_fail_at(0);
        shortlist_free(x);
        if (st == NMT_OK) break;
        CHECK_EQ_INT(st, NMT_ERR_NOMEM);
        if (k > 1000) break;
    }
    shortlist_free(sl);
    dataset_free(d);
    tokenizer_free(ts);
    tokenizer_free(tt);
    return test_summary("test_shortlist");
}
