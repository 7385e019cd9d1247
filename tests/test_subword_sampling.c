/* test_subword_sampling.c: subword regularization (data.spm_sample_alpha,
 * src/data/subword_sampling.c) on a generated corpus with SentencePiece
 * unigram and BPE tokenizers: every epoch's draw keeps each sentence's text
 * and the pairs' order and line numbers, stays within the corpus's length
 * range, is the same when drawn again, with other thread counts and after
 * other epochs, and changes with the epoch, the seed and alpha; the sides
 * setting leaves the other side at its best segmentation; a cache that
 * does not match the corpus and the keys' contradictions are refused with
 * messages naming the line or the key. Under guided alignment every epoch's
 * token links are the word alignment through the drawn pieces (checked
 * against the pieces' own word starts), drawn again alike, and an
 * alignment file changed since the cache is refused naming its line. The
 * training loop's use of it (resume, logs): tests/test_subword_sampling.sh
 * and tests/test_guided_alignment.sh. */
#include <omp.h>

#include "config.h"
#include "data/prepare.h"
#include "data/subword_sampling.h"
#include "test_util.h"

/* Words of 1-4 syllables from a small set, so that a unigram model has many
 * segmentations of each; line 5's target is empty and line 9's source is
 * over max_len (so pair index and corpus line differ after them). */
static void write_corpus(const char *dir, int n) {
    static const char *const syl[] = {"ka", "to", "ri", "ne", "su", "mo", "la", "pi", "de", "gu"};
    char src_path[1024], tgt_path[1024];
    snprintf(src_path, sizeof src_path, "%s/train.src", dir);
    snprintf(tgt_path, sizeof tgt_path, "%s/train.tgt", dir);
    FILE *f[2] = {fopen(src_path, "w"), fopen(tgt_path, "w")};
    uint64_t r = 12345;
    for (int i = 0; i < n; i++) {
        for (int side = 0; side < 2; side++) {
            int words = i == 8 && side == 0 ? 70 : 2 + (int)(i % 9);
            if (i == 4 && side == 1) words = 0;
            for (int w = 0; w < words; w++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                int n_syl = 1 + (int)((r >> 33) % 4);
                if (w) fputc(' ', f[side]);
                for (int k = 0; k < n_syl; k++) fputs(syl[(r >> (40 + 3 * k)) % 10], f[side]);
            }
            fputc('\n', f[side]);
        }
    }
    fclose(f[0]);
    fclose(f[1]);
}

static NmtStatus load_cfg(const char *dir, const char *extra, Config *cfg) {
    char json[2048], path[1024];
    snprintf(json, sizeof json,
             "{\"data\": {\"train_src\": \"train.src\", \"train_tgt\": \"train.tgt\", \"max_len\": 50,"
             " \"spm_vocab_size\": 60 %s}}",
             extra);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs(json, f);
    fclose(f);
    return config_load(path, NULL, 0, cfg);
}

/* A copy of a dataset's ids (both sides, offsets included) to compare epochs. */
typedef struct {
    int64_t n;
    int64_t *src_offset, *tgt_offset;
    int32_t *src, *tgt;
} Snapshot;

static Snapshot snap(const Dataset *d) {
    Snapshot s = {d->n_pairs, NULL, NULL, NULL, NULL};
    size_t no = (size_t)(d->n_pairs + 1) * sizeof(int64_t);
    s.src_offset = malloc(no);
    s.tgt_offset = malloc(no);
    memcpy(s.src_offset, d->src_offset, no);
    memcpy(s.tgt_offset, d->tgt_offset, no);
    size_t ns = (size_t)d->src_offset[d->n_pairs] * 4, nt = (size_t)d->tgt_offset[d->n_pairs] * 4;
    s.src = malloc(ns ? ns : 1);
    s.tgt = malloc(nt ? nt : 1);
    memcpy(s.src, d->src_ids, ns);
    memcpy(s.tgt, d->tgt_ids, nt);
    return s;
}

static void snap_free(Snapshot *s) {
    free(s->src_offset);
    free(s->tgt_offset);
    free(s->src);
    free(s->tgt);
}

/* Pairs whose side (0 source, 1 target) differs between a and the dataset. */
static int64_t pairs_differing(const Snapshot *a, const Dataset *d, int side) {
    int64_t diff = 0;
    for (int64_t i = 0; i < a->n; i++) {
        const int64_t *ao = side ? a->tgt_offset : a->src_offset, *bo = side ? d->tgt_offset : d->src_offset;
        const int32_t *ai = side ? a->tgt : a->src, *bi = side ? d->tgt_ids : d->src_ids;
        int64_t la = ao[i + 1] - ao[i], lb = bo[i + 1] - bo[i];
        if (la != lb || memcmp(ai + ao[i], bi + bo[i], (size_t)la * 4)) diff++;
    }
    return diff;
}

static int same_snapshot(const Snapshot *a, const Dataset *d) {
    return a->n == d->n_pairs && pairs_differing(a, d, 0) == 0 && pairs_differing(a, d, 1) == 0;
}

/* Every pair of e: the text of the best segmentation, its line, within the
 * best dataset's length range on both sides. */
static void check_epoch_shape(const PreparedData *p, const Dataset *e, const char *what) {
    const Dataset *b = p->train;
    CHECK_EQ_INT(e->n_pairs, b->n_pairs);
    int lo[2] = {1 << 30, 1 << 30}, hi[2] = {0, 0};
    for (int64_t i = 0; i < b->n_pairs; i++) {
        int len[2] = {dataset_src_len(b, i), dataset_tgt_len(b, i)};
        for (int s = 0; s < 2; s++) {
            if (len[s] < lo[s]) lo[s] = len[s];
            if (len[s] > hi[s]) hi[s] = len[s];
        }
    }
    int64_t bad_text = 0, bad_line = 0, bad_len = 0;
    for (int64_t i = 0; i < b->n_pairs && i < e->n_pairs; i++) {
        if (e->line_no[i] != b->line_no[i]) bad_line++;
        int el[2] = {dataset_src_len(e, i), dataset_tgt_len(e, i)};
        for (int s = 0; s < 2; s++)
            if (el[s] < lo[s] || el[s] > hi[s]) bad_len++;
        char *t1 = NULL, *t2 = NULL, *u1 = NULL, *u2 = NULL;
        tokenizer_decode(p->src_tok, dataset_src(e, i), el[0], &t1);
        tokenizer_decode(p->src_tok, dataset_src(b, i), dataset_src_len(b, i), &t2);
        tokenizer_decode(p->tgt_tok, dataset_tgt(e, i), el[1], &u1);
        tokenizer_decode(p->tgt_tok, dataset_tgt(b, i), dataset_tgt_len(b, i), &u2);
        if (!t1 || !t2 || !u1 || !u2 || strcmp(t1, t2) || strcmp(u1, u2)) bad_text++;
        nmt_free(t1);
        nmt_free(t2);
        nmt_free(u1);
        nmt_free(u2);
    }
    CHECK(bad_text == 0, "%s: %lld pairs decode to another text than their best segmentation", what,
          (long long)bad_text);
    CHECK(bad_line == 0, "%s: %lld pairs with another line number", what, (long long)bad_line);
    CHECK(bad_len == 0, "%s: %lld sides outside the corpus's length range", what, (long long)bad_len);
}

/* Prepares the corpus in dir with `extra` config keys; *ok = 0 on failure. */
static int prepare(const char *dir, const char *extra, Config *cfg, PreparedData *p) {
    NmtStatus st = load_cfg(dir, extra, cfg);
    CHECK(st == NMT_OK, "config %s: %s", extra, nmt_error_message());
    if (st) return 0;
    st = prepare_data(cfg, 0, p);
    CHECK(st == NMT_OK, "prepare %s: %s", extra, nmt_error_message());
    if (st) config_free(cfg);
    return st == NMT_OK;
}

/* A copy of dataset b with the first id of pair 7's side `side` (0
 * source, 1 target) changed: a cache that does not belong to the corpus. */
static Dataset *pair7_changed(const Dataset *b, int side) {
    Dataset *d = NULL;
    NMT_ASSERT(dataset_create(&d) == NMT_OK);
    for (int64_t i = 0; i < b->n_pairs; i++) {
        int32_t ids[2][128];
        int n[2] = {dataset_src_len(b, i), dataset_tgt_len(b, i)};
        memcpy(ids[0], dataset_src(b, i), (size_t)n[0] * 4);
        memcpy(ids[1], dataset_tgt(b, i), (size_t)n[1] * 4);
        if (i == 7) ids[side][0] = ids[side][0] == 5 ? 6 : 5;
        NMT_ASSERT(dataset_add(d, ids[0], n[0], ids[1], n[1], b->line_no[i]) == NMT_OK);
    }
    return d;
}

static void test_unigram(const char *dir) {
    Config cfg;
    PreparedData p;
    if (!prepare(dir, ", \"cache_dir\": \"cache\", \"spm_sample_alpha\": 0.3", &cfg, &p)) return;
    CHECK(p.train->line_no[4] == 6 && p.train->n_pairs == 298, "the corpus skips lines 5 and 9: pair 4 is line %lld, %lld pairs",
          (long long)p.train->line_no[4], (long long)p.train->n_pairs);
    SubwordSampler *s = NULL;
    NmtStatus st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s);
    CHECK(st == NMT_OK, "sampler: %s", nmt_error_message());
    if (st) goto done;
    const Dataset *e;
    SubwordEpochStats es;
    omp_set_num_threads(4);
    CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, &es), NMT_OK);
    check_epoch_shape(&p, e, "epoch 0");
    Snapshot best = snap(p.train), e0 = snap(e);
    /* the draw changes most pairs and lengthens them (alpha 0.3 spreads the
     * probability over finer segmentations) */
    CHECK(pairs_differing(&best, e, 0) > p.train->n_pairs / 3 && pairs_differing(&best, e, 1) > p.train->n_pairs / 3,
          "alpha 0.3 left most pairs at their best segmentation: %lld and %lld of %lld differ",
          (long long)pairs_differing(&best, e, 0), (long long)pairs_differing(&best, e, 1), (long long)p.train->n_pairs);
    CHECK(es.src_tokens > es.best_src_tokens && es.tgt_tokens > es.best_tgt_tokens,
          "tokens %lld / %lld against the best %lld / %lld", (long long)es.src_tokens, (long long)es.tgt_tokens,
          (long long)es.best_src_tokens, (long long)es.best_tgt_tokens);
    CHECK_EQ_INT(es.best_src_tokens, p.train->src_offset[p.train->n_pairs]);
    int64_t tokens_03 = es.src_tokens;
    /* another epoch differs; drawing epoch 0 again after it, or with one
     * thread, gives epoch 0 again */
    CHECK_EQ_INT(subword_sampler_epoch(s, 1, &e, NULL), NMT_OK);
    check_epoch_shape(&p, e, "epoch 1");
    CHECK(pairs_differing(&e0, e, 0) > p.train->n_pairs / 4, "epoch 1 repeats epoch 0: %lld pairs differ",
          (long long)pairs_differing(&e0, e, 0));
    CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_OK);
    CHECK(same_snapshot(&e0, e), "epoch 0 drawn again differs: %lld / %lld pairs",
          (long long)pairs_differing(&e0, e, 0), (long long)pairs_differing(&e0, e, 1));
    omp_set_num_threads(1);
    CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_OK);
    CHECK(same_snapshot(&e0, e), "epoch 0 on one thread differs: %lld / %lld pairs",
          (long long)pairs_differing(&e0, e, 0), (long long)pairs_differing(&e0, e, 1));
    omp_set_num_threads(4);
    subword_sampler_free(s);
    s = NULL;

    /* a signal's flag: set before the check, the sampler is not made; set
     * before a draw, the draw stops (NMT_STOPPED) instead of running over
     * the whole corpus, and a later draw is whole again */
    volatile sig_atomic_t stop = 1;
    st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, &stop, &s);
    CHECK(st == NMT_STOPPED && !s, "a stop flag set at creation: status %d", st);
    subword_sampler_free(s);
    s = NULL;
    stop = 0;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, &stop, &s), NMT_OK);
    if (s) {
        stop = 1;
        CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_STOPPED);
        stop = 0;
        CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_OK);
        CHECK(same_snapshot(&e0, e), "epoch 0 drawn after a stopped draw differs: %lld / %lld pairs",
              (long long)pairs_differing(&e0, e, 0), (long long)pairs_differing(&e0, e, 1));
    }
    subword_sampler_free(s);
    s = NULL;

    /* another seed: another draw */
    cfg.train.seed = 2;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, NULL) == NMT_OK)
        CHECK(pairs_differing(&e0, e, 0) > p.train->n_pairs / 4, "seed 2 repeats seed 1: %lld pairs differ",
              (long long)pairs_differing(&e0, e, 0));
    subword_sampler_free(s);
    s = NULL;
    cfg.train.seed = 1;

    /* sides: src leaves the target at its best segmentation */
    cfg.data.spm_sample_sides = CFG_SAMPLE_SRC;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, &es) == NMT_OK) {
        CHECK(pairs_differing(&best, e, 1) == 0 && es.tgt_tokens == es.best_tgt_tokens,
              "sides src changed %lld targets", (long long)pairs_differing(&best, e, 1));
        CHECK(pairs_differing(&e0, e, 0) == 0, "sides src drew other sources than both: %lld",
              (long long)pairs_differing(&e0, e, 0));
    }
    subword_sampler_free(s);
    s = NULL;
    cfg.data.spm_sample_sides = CFG_SAMPLE_TGT;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, NULL) == NMT_OK)
        CHECK(pairs_differing(&best, e, 0) == 0 && pairs_differing(&best, e, 1) > 0,
              "sides tgt: %lld sources changed, %lld targets", (long long)pairs_differing(&best, e, 0),
              (long long)pairs_differing(&best, e, 1));
    subword_sampler_free(s);
    s = NULL;
    cfg.data.spm_sample_sides = CFG_SAMPLE_BOTH;

    /* a large alpha (a low temperature) keeps nearly every best segmentation;
     * a small one breaks words up more and overruns the longest sentences,
     * which then keep theirs (counted) */
    cfg.data.spm_sample_alpha = 10;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, NULL) == NMT_OK)
        CHECK(pairs_differing(&best, e, 0) < p.train->n_pairs / 10, "alpha 10 changed %lld of %lld sources",
              (long long)pairs_differing(&best, e, 0), (long long)p.train->n_pairs);
    subword_sampler_free(s);
    s = NULL;
    cfg.data.spm_sample_alpha = 0.01;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, &es) == NMT_OK) {
        check_epoch_shape(&p, e, "alpha 0.01");
        CHECK(es.kept_best > 0, "alpha 0.01 should overrun the longest sentences: %lld kept", (long long)es.kept_best);
        CHECK(es.src_tokens > tokens_03, "alpha 0.01: %lld tokens, alpha 0.3: %lld", (long long)es.src_tokens,
              (long long)tokens_03);
    }
    subword_sampler_free(s);
    s = NULL;
    cfg.data.spm_sample_alpha = 0.3;

    /* a cache that does not belong to the corpus: pair 7 (line 9 + 1 = 10) */
    Dataset *d = pair7_changed(p.train, 0);
    st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, d, NULL, NULL, &s);
    CHECK(st == NMT_ERR_FORMAT && !s, "a cache that differs from the corpus: status %d", st);
    char want[1100];
    snprintf(want, sizeof want, "%s:%lld: the line encodes to other ids", cfg.data.train_src,
             (long long)p.train->line_no[7]);
    CHECK_CONTAINS(nmt_error_message(), want);
    subword_sampler_free(s);
    dataset_free(d);
    snap_free(&best);
    snap_free(&e0);
done:
    prepared_data_free(&p);
    config_free(&cfg);
}

/* Words of each line of a file (split at spaces), up to n lines. */
static void count_words(const char *path, int *words, int n) {
    FILE *f = fopen(path, "r");
    char line[4096];
    for (int i = 0; i < n && f && fgets(line, sizeof line, f); i++) {
        words[i] = 0;
        for (char *c = line, prev = ' '; *c; prev = *c++)
            if (*c != ' ' && *c != '\n' && prev == ' ') words[i]++;
    }
    if (f) fclose(f);
}

/* train.aln for the corpus: target word j of line i aligned to source
 * word (3j + i) % ns, and every third one also to source word 0. */
static void write_alignment(const char *dir, int n, const char *name) {
    char path[1024];
    int *ns = calloc((size_t)n, sizeof *ns), *nt = calloc((size_t)n, sizeof *nt);
    snprintf(path, sizeof path, "%s/train.src", dir);
    count_words(path, ns, n);
    snprintf(path, sizeof path, "%s/train.tgt", dir);
    count_words(path, nt, n);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < n; i++) {
        for (int j = 0; ns[i] && j < nt[i]; j++) {
            fprintf(f, "%s%d-%d", j ? " " : "", (3 * j + i) % ns[i], j);
            if (j % 3 == 0 && (3 * j + i) % ns[i]) fprintf(f, " 0-%d", j);
        }
        fputc('\n', f);
    }
    fclose(f);
    free(ns);
    free(nt);
}

/* The word of each token from the pieces alone: a piece that starts with
 * U+2581 starts the next word (the reference for the sampler's spans). */
static void piece_words(const Tokenizer *t, const int32_t *ids, int n, int *word) {
    int w = -1;
    for (int k = 0; k < n; k++) {
        if (!strncmp(tokenizer_piece(t, ids[k]), "\xe2\x96\x81", 3) || w < 0) w++;
        word[k] = w;
    }
}

/* Pairs whose links in g are not those of the word pairs (read from the
 * alignment file's lines) through e's pieces: target token t linked to
 * source token s exactly when their words are aligned, t then s rising. */
static int64_t links_wrong(const PreparedData *p, const Dataset *e, const GuidedAlignments *g, const char *aln) {
    FILE *f = fopen(aln, "r");
    char line[8192];
    int64_t wrong = 0, line_no = 0;
    for (int64_t i = 0; i < e->n_pairs; i++) {
        while (line_no < e->line_no[i] && fgets(line, sizeof line, f)) line_no++;
        int ns = dataset_src_len(e, i), nt = dataset_tgt_len(e, i), sw[200], tw[200];
        piece_words(p->src_tok, dataset_src(e, i), ns, sw);
        piece_words(p->tgt_tok, dataset_tgt(e, i), nt, tw);
        static unsigned char aligned[200][200]; /* (source word, target word) */
        memset(aligned, 0, sizeof aligned);
        for (char *c = line; *c && *c != '\n';) {
            int a, b, used;
            if (sscanf(c, "%d-%d%n", &a, &b, &used) != 2) break;
            aligned[a][b] = 1;
            c += used;
            while (*c == ' ') c++;
        }
        int64_t k = g->offset[i], end = g->offset[i + 1];
        int ok = 1;
        for (int t = 0; t < nt; t++)
            for (int s = 0; s < ns; s++) {
                if (!aligned[sw[s]][tw[t]]) continue;
                ok &= k < end && g->links[2 * k] == s && g->links[2 * k + 1] == t;
                k++;
            }
        if (!ok || k != end) wrong++;
    }
    fclose(f);
    return wrong;
}

/* Guided alignment under sampling (data.train_align with
 * data.spm_sample_alpha): each epoch's links follow its pieces. */
static void test_guided(const char *dir) {
    Config cfg;
    PreparedData p;
    write_alignment(dir, 300, "train.aln");
    if (!prepare(dir, ", \"cache_dir\": \"guided-cache\", \"spm_sample_alpha\": 0.3, \"train_align\": \"train.aln\"",
                 &cfg, &p))
        return;
    char aln[1100];
    snprintf(aln, sizeof aln, "%s/train.aln", dir);
    SubwordSampler *s = NULL;
    const Dataset *e;
    SubwordEpochStats es;
    CHECK(p.train_align != NULL, "prepare made no alignments");
    if (!p.train_align) goto done;
    CHECK_EQ_INT(links_wrong(&p, p.train, p.train_align, aln), 0); /* the reference agrees with prepare */
    NmtStatus st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, p.train_align, NULL, &s);
    CHECK(st == NMT_OK, "guided sampler: %s", nmt_error_message());
    if (st) goto done;
    CHECK(subword_sampler_alignments(s) == NULL, "alignments before the first epoch");
    omp_set_num_threads(4);
    CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, &es), NMT_OK);
    const GuidedAlignments *g = subword_sampler_alignments(s);
    CHECK(g && g->n_pairs == e->n_pairs, "epoch 0's alignments: %lld pairs", g ? (long long)g->n_pairs : -1LL);
    if (!g) goto done;
    Snapshot best = snap(p.train), e0 = snap(e);
    CHECK(pairs_differing(&best, e, 0) > p.train->n_pairs / 3, "alpha 0.3 drew %lld other sources",
          (long long)pairs_differing(&best, e, 0));
    CHECK_EQ_INT(links_wrong(&p, e, g, aln), 0);
    CHECK(es.links > es.best_links && es.best_links == p.train_align->offset[p.train_align->n_pairs],
          "a finer segmentation has more links: %lld against the best's %lld", (long long)es.links,
          (long long)es.best_links);
    int64_t n0 = g->offset[g->n_pairs];
    int32_t *links0 = malloc((size_t)n0 * 2 * sizeof *links0);
    memcpy(links0, g->links, (size_t)n0 * 2 * sizeof *links0);
    /* another epoch: other links, still right; epoch 0 again on one thread: the same */
    CHECK_EQ_INT(subword_sampler_epoch(s, 1, &e, NULL), NMT_OK);
    g = subword_sampler_alignments(s);
    CHECK_EQ_INT(links_wrong(&p, e, g, aln), 0);
    CHECK(g->offset[g->n_pairs] != n0 || memcmp(g->links, links0, (size_t)n0 * 2 * sizeof *links0),
          "epoch 1 has epoch 0's links");
    omp_set_num_threads(1);
    CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_OK);
    g = subword_sampler_alignments(s);
    CHECK(same_snapshot(&e0, e) && g->offset[g->n_pairs] == n0 && !memcmp(g->links, links0, (size_t)n0 * 2 * sizeof *links0),
          "epoch 0 drawn again on one thread: other ids or links");
    omp_set_num_threads(4);
    subword_sampler_free(s);
    s = NULL;
    /* one side sampled: the other keeps its best segmentation, links still right */
    cfg.data.spm_sample_sides = CFG_SAMPLE_TGT;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, p.train_align, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, NULL) == NMT_OK) {
        CHECK(pairs_differing(&best, e, 0) == 0 && pairs_differing(&best, e, 1) > 0, "sides tgt: %lld sources changed",
              (long long)pairs_differing(&best, e, 0));
        CHECK_EQ_INT(links_wrong(&p, e, subword_sampler_alignments(s), aln), 0);
    }
    subword_sampler_free(s);
    s = NULL;
    /* overrunning draws keep the best segmentation, and its links */
    cfg.data.spm_sample_sides = CFG_SAMPLE_BOTH;
    cfg.data.spm_sample_alpha = 0.01;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, p.train_align, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, &es) == NMT_OK) {
        CHECK(es.kept_best > 0, "alpha 0.01 kept no best segmentation");
        CHECK_EQ_INT(links_wrong(&p, e, subword_sampler_alignments(s), aln), 0);
    }
    subword_sampler_free(s);
    s = NULL;
    cfg.data.spm_sample_alpha = 0.3;
    /* with only the source sampled, a target that differs from the cache
     * is still found (its links come from it): pair 7, line 10 */
    Dataset *d = pair7_changed(p.train, 1);
    cfg.data.spm_sample_sides = CFG_SAMPLE_SRC;
    st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, d, p.train_align, NULL, &s);
    cfg.data.spm_sample_sides = CFG_SAMPLE_BOTH;
    CHECK(st == NMT_ERR_FORMAT && !s, "an unsampled target that differs from the cache: status %d", st);
    char want_tgt[1100];
    snprintf(want_tgt, sizeof want_tgt, "%s:%lld: the line encodes to other ids", cfg.data.train_tgt,
             (long long)p.train->line_no[7]);
    CHECK_CONTAINS(nmt_error_message(), want_tgt);
    subword_sampler_free(s);
    s = NULL;
    dataset_free(d);
    /* an alignment file changed since the cache: its line is named */
    char changed[1100];
    snprintf(changed, sizeof changed, "%s/changed.aln", dir);
    FILE *in = fopen(aln, "r"), *out = fopen(changed, "w");
    char line[8192];
    for (int k = 1; fgets(line, sizeof line, in); k++) fputs(k == 12 ? "0-0\n" : line, out);
    fclose(in);
    fclose(out);
    char *given = cfg.data.train_align;
    cfg.data.train_align = changed; /* for the check only: config_free frees the given one */
    st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, p.train_align, NULL, &s);
    cfg.data.train_align = given;
    CHECK(st == NMT_ERR_FORMAT && !s, "a changed alignment file: status %d", st);
    char want[1200];
    snprintf(want, sizeof want, "%s:12: the pair's word alignment maps onto other token links", changed);
    CHECK_CONTAINS(nmt_error_message(), want);
    subword_sampler_free(s);
    s = NULL;
    free(links0);
    snap_free(&best);
    snap_free(&e0);
done:
    subword_sampler_free(s);
    prepared_data_free(&p);
    config_free(&cfg);
}

/* tokenizer_sample_encode_spans_buf draws what tokenizer_sample_encode_buf
 * draws for a key, with spans that cover the text in order. */
static void test_sample_spans(const char *dir) {
    Config cfg;
    PreparedData p;
    if (!prepare(dir, ", \"cache_dir\": \"cache\", \"spm_sample_alpha\": 0.3", &cfg, &p)) return;
    static const char text[] = "kato rine  sumola pidegu kakaka";
    int32_t *a = NULL, *b = NULL;
    TokenSpan *spans = NULL;
    int na = 0, nb = 0, ca = 0, cb = 0, same = 1, ordered = 1;
    for (uint64_t key = 1; key <= 200; key++) {
        NmtStatus st = tokenizer_sample_encode_buf(p.src_tok, text, strlen(text), 0.3, key, &a, &na, &ca);
        if (!st) st = tokenizer_sample_encode_spans_buf(p.src_tok, text, strlen(text), 0.3, key, &b, &spans, &nb, &cb);
        same &= !st && na == nb && !memcmp(a, b, (size_t)na * sizeof *a);
        for (int k = 0; !st && k < nb; k++)
            ordered &= spans[k].begin <= spans[k].end && spans[k].end <= strlen(text) &&
                       (k == 0 || spans[k].begin == spans[k - 1].end);
    }
    CHECK(same, "the draw with spans is not the draw without them");
    CHECK(ordered, "spans out of order or past the text");
    nmt_free(a);
    nmt_free(b);
    nmt_free(spans);
    prepared_data_free(&p);
    config_free(&cfg);
}

static void test_bpe(const char *dir) {
    Config cfg;
    PreparedData p;
    if (!prepare(dir, ", \"spm_model_type\": \"bpe\", \"cache_dir\": \"bpe-cache\", \"spm_sample_alpha\": 0.2", &cfg, &p))
        return;
    SubwordSampler *s = NULL;
    const Dataset *e;
    SubwordEpochStats es;
    CHECK_EQ_INT(subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s), NMT_OK);
    if (s && subword_sampler_epoch(s, 0, &e, &es) == NMT_OK) {
        check_epoch_shape(&p, e, "bpe");
        Snapshot e0 = snap(e);
        CHECK(es.src_tokens > es.best_src_tokens, "BPE-dropout 0.2: %lld tokens for %lld", (long long)es.src_tokens,
              (long long)es.best_src_tokens);
        CHECK_EQ_INT(subword_sampler_epoch(s, 3, &e, NULL), NMT_OK);
        CHECK(pairs_differing(&e0, e, 0) > 0, "BPE epoch 3 repeats epoch 0");
        CHECK_EQ_INT(subword_sampler_epoch(s, 0, &e, NULL), NMT_OK);
        CHECK(same_snapshot(&e0, e), "BPE epoch 0 drawn again differs");
        snap_free(&e0);
    }
    subword_sampler_free(s);
    prepared_data_free(&p);
    config_free(&cfg);
}

static void test_contradictions(const char *dir) {
    Config cfg;
    NmtStatus st = load_cfg(dir, ", \"tokenizer\": \"word\", \"spm_sample_alpha\": 0.1", &cfg);
    CHECK(st == NMT_ERR_CONFIG, "word tokenizer with sampling: status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_sample_alpha: subword sampling needs data.tokenizer spm, got word");
    if (!st) config_free(&cfg);
    st = load_cfg(dir, ", \"spm_model_type\": \"bpe\", \"spm_sample_alpha\": 1", &cfg);
    CHECK(st == NMT_ERR_CONFIG, "bpe with alpha 1: status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_sample_alpha: with data.spm_model_type bpe it is the merge dropout");
    if (!st) config_free(&cfg);
    st = load_cfg(dir, ", \"spm_sample_alpha\": 2, \"spm_sample_sides\": \"left\"", &cfg);
    CHECK(st == NMT_ERR_CONFIG, "sides left: status %d", st);
    CHECK_CONTAINS(nmt_error_message(), "data.spm_sample_sides");
    if (!st) config_free(&cfg);
    /* the word check also holds when the config says spm but the tokenizer
     * is words (train.init_from's checkpoint decides the tokenizer) */
    CHECK_EQ_INT(load_cfg(dir, ", \"tokenizer\": \"word\", \"cache_dir\": \"word-cache\"", &cfg), NMT_OK);
    PreparedData p;
    if (prepare_data(&cfg, 0, &p) == NMT_OK) {
        cfg.data.tokenizer = CFG_TOKENIZER_SPM;
        cfg.data.spm_sample_alpha = 0.2;
        SubwordSampler *s = NULL;
        st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s);
        CHECK(st == NMT_ERR_CONFIG && !s, "word tokenizers: status %d", st);
        CHECK_CONTAINS(nmt_error_message(), "data.spm_sample_alpha: subword sampling needs SentencePiece");
        subword_sampler_free(s);
        s = NULL;
        /* with train.init_from, the message says whose tokenizers they are
         * (the config file's tokenizer keys were replaced by its) */
        char *init_from = cfg.train.init_from;
        cfg.train.init_from = (char *)"/runs/words/best.nmt";
        cfg.data.tokenizer = CFG_TOKENIZER_WORD;
        st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &s);
        CHECK(st == NMT_ERR_CONFIG && !s, "data.tokenizer word of train.init_from: status %d", st);
        CHECK_CONTAINS(nmt_error_message(), "got word (the tokenizers and their keys are those of train.init_from");
        cfg.train.init_from = init_from;
        subword_sampler_free(s);
        prepared_data_free(&p);
    } else {
        CHECK(0, "word prepare: %s", nmt_error_message());
    }
    config_free(&cfg);
}

/* The extra corpora (data.extra_src/tgt, here twice the same files as the
 * first, with data.extra_tag "<T>" and "<U>"): its sampler reads the sources with the tag
 * before them, as the cache encoded them, never splits the tag, and draws
 * its own segmentations: the same text on the same line gets other draws
 * than in the first corpus (its keys differ). */
static void test_extra(const char *dir) {
    Config cfg;
    PreparedData p;
    if (!prepare(dir, ", \"cache_dir\": \"cache_extra\", \"spm_sample_alpha\": 0.3, \"extra_src\": [\"train.src\","
                      " \"train.src\"], \"extra_tgt\": [\"train.tgt\", \"train.tgt\"], \"extra_tag\": [\"<T>\", \"<U>\"]",
                 &cfg, &p))
        return;
    CHECK(p.n_extra == 2 && p.extra[0]->n_pairs == p.train->n_pairs && p.extra[1]->n_pairs == p.train->n_pairs,
          "the extra corpora: %d, of %lld pairs", p.n_extra, p.n_extra ? (long long)p.extra[0]->n_pairs : -1LL);
    int tag = tokenizer_piece_to_id(p.src_tok, "<T>");
    CHECK(tag != NMT_UNK_ID, "the tag is not a piece");
    SubwordSampler *main_s = NULL, *extra_s = NULL, *extra2_s = NULL;
    NmtStatus st = subword_sampler_create(&cfg, p.src_tok, p.tgt_tok, p.train, NULL, NULL, &main_s);
    CHECK(st == NMT_OK, "sampler: %s", nmt_error_message());
    if (!st) st = subword_sampler_create_extra(&cfg, p.src_tok, p.tgt_tok, p.extra[0], 0, NULL, &extra_s);
    CHECK(st == NMT_OK, "extra sampler: %s", nmt_error_message());
    if (!st) st = subword_sampler_create_extra(&cfg, p.src_tok, p.tgt_tok, p.extra[1], 1, NULL, &extra2_s);
    CHECK(st == NMT_OK, "second extra sampler: %s", nmt_error_message());
    if (st || p.n_extra != 2) goto done;
    const Dataset *m, *e;
    CHECK_EQ_INT(subword_sampler_epoch(main_s, 0, &m, NULL), NMT_OK);
    Snapshot main0 = snap(m), best = snap(p.extra[0]);
    CHECK_EQ_INT(subword_sampler_epoch(extra_s, 0, &e, NULL), NMT_OK);
    CHECK_EQ_INT(e->n_pairs, p.extra[0]->n_pairs);
    int64_t untagged = 0, bad_text = 0;
    for (int64_t i = 0; i < e->n_pairs; i++) {
        const int32_t *ids = dataset_src(e, i);
        int n = dataset_src_len(e, i), k = 0;
        while (k < n - 1 && !strcmp(tokenizer_piece(p.src_tok, ids[k]), "\xe2\x96\x81")) k++;
        if (ids[k] != tag) untagged++;
        char *t1 = NULL, *t2 = NULL;
        tokenizer_decode(p.src_tok, ids, n, &t1);
        tokenizer_decode(p.src_tok, dataset_src(p.extra[0], i), dataset_src_len(p.extra[0], i), &t2);
        if (!t1 || !t2 || strcmp(t1, t2)) bad_text++;
        nmt_free(t1);
        nmt_free(t2);
    }
    CHECK(untagged == 0, "%lld drawn sources do not start with the tag's piece", (long long)untagged);
    CHECK(bad_text == 0, "%lld drawn sources decode to another text than the cache's", (long long)bad_text);
    CHECK(pairs_differing(&best, e, 0) > e->n_pairs / 3 && pairs_differing(&best, e, 1) > e->n_pairs / 3,
          "the extra corpus was hardly drawn: %lld and %lld of %lld pairs differ from the best",
          (long long)pairs_differing(&best, e, 0), (long long)pairs_differing(&best, e, 1), (long long)e->n_pairs);
    /* the targets are the same text on the same lines in both corpora */
    CHECK(pairs_differing(&main0, e, 1) > e->n_pairs / 4, "the extra corpus's draws repeat the first's: %lld of %lld "
          "targets differ", (long long)pairs_differing(&main0, e, 1), (long long)e->n_pairs);
    Snapshot e0 = snap(e);
    CHECK_EQ_INT(subword_sampler_epoch(extra_s, 1, &e, NULL), NMT_OK);
    CHECK(pairs_differing(&e0, e, 1) > e->n_pairs / 4, "epoch 1 of the extra corpus repeats epoch 0");
    CHECK_EQ_INT(subword_sampler_epoch(extra_s, 0, &e, NULL), NMT_OK);
    CHECK(same_snapshot(&e0, e), "epoch 0 of the extra corpus drawn again differs");
    /* the second extra corpus (the same files, tag <U>): its own tag, and
     * its own draws of the same lines */
    const Dataset *e2;
    int tag2 = tokenizer_piece_to_id(p.src_tok, "<U>");
    CHECK(tag2 != NMT_UNK_ID && tag2 != tag, "the second tag is not a piece of its own");
    CHECK_EQ_INT(subword_sampler_epoch(extra2_s, 0, &e2, NULL), NMT_OK);
    int64_t untagged2 = 0;
    for (int64_t i = 0; i < e2->n_pairs; i++) {
        const int32_t *ids = dataset_src(e2, i);
        int n = dataset_src_len(e2, i), k = 0;
        while (k < n - 1 && !strcmp(tokenizer_piece(p.src_tok, ids[k]), "\xe2\x96\x81")) k++;
        untagged2 += ids[k] != tag2;
    }
    CHECK(untagged2 == 0, "%lld drawn sources of the second extra corpus do not start with <U>", (long long)untagged2);
    CHECK(pairs_differing(&e0, e2, 1) > e2->n_pairs / 4, "the second extra corpus's draws repeat the first's: %lld "
          "of %lld targets differ", (long long)pairs_differing(&e0, e2, 1), (long long)e2->n_pairs);
    snap_free(&e0);
    snap_free(&main0);
    snap_free(&best);
done:
    subword_sampler_free(main_s);
    subword_sampler_free(extra_s);
    subword_sampler_free(extra2_s);
    prepared_data_free(&p);
    config_free(&cfg);
}

int main(void) {
    const char *dir = test_tmpdir();
    write_corpus(dir, 300);
    test_unigram(dir);
    test_bpe(dir);
    test_guided(dir);
    test_sample_spans(dir);
    test_contradictions(dir);
    test_extra(dir);
    return test_summary("test_subword_sampling");
}
