/* subword_sampling.c: the SubwordSampler (subword_sampling.h): the training
 * sentences of the prepared pairs held as text, checked against the cache,
 * and each epoch's keyed random segmentation of them, drawn in parallel
 * (OpenMP) in blocks of pairs and appended in pair order; under guided
 * alignment also each pair's word alignment, mapped onto every epoch's
 * segmentation through the drawn tokens' bytes. */
#include "data/subword_sampling.h"

#include <string.h>
#include <time.h>

#include "data/corpus.h"
#include "data/extra_corpora.h"
#include "data/guided_align.h"
#include "data/rng.h"

/* Pairs drawn together before they are appended to the epoch's dataset:
 * this many, or fewer where the longest sentence would make a side's block
 * hold more than SAMPLE_BLOCK_IDS ids (64 MB). */
#define SAMPLE_BLOCK_PAIRS 4096
#define SAMPLE_BLOCK_IDS (1 << 24)
/* ... or SAMPLE_BLOCK_IDS / 4 ids under guided alignment, whose spans take
 * 16 bytes a token (64 MB a side) */
#define SAMPLE_BLOCK_IDS_GUIDED (SAMPLE_BLOCK_IDS / 4)

enum { SIDE_SRC = 0, SIDE_TGT = 1 };

/* The sentences of one side: text of pair i is text[offset[i], offset[i+1]). */
typedef struct {
    char *text;
    int64_t *offset; /* (n_pairs + 1) */
    int64_t size, capacity;
} SideText;

struct SubwordSampler {
    const Dataset *best; /* the prepared dataset (borrowed) */
    const Tokenizer *tok[2];
    char *path[2];          /* the corpus files (copies) */
    char *src_prefix;       /* data.extra_tag and a space before every source sentence, or NULL */
    uint64_t corpus_key;    /* 0 for data.train_src; mixed into the draws' keys of another corpus */
    double alpha;
    int sampled[2]; /* which sides are drawn */
    uint64_t seed;
    int lo[2], hi[2]; /* each side's shortest and longest length in `best` */
    int64_t block_pairs; /* pairs a block holds */
    SideText side[2];
    Dataset *epoch; /* the last epoch's segmentation */
    /* a block of draws: ids of pair j of the block at block_ids[side] + j * hi[side] */
    int32_t *block_ids[2];
    int *block_len[2];
    const volatile sig_atomic_t *stop; /* a signal's flag (NULL: none) */
    /* guided alignment (best_align not NULL; both sides' text is held) */
    const GuidedAlignments *best_align; /* the cache's links of the best segmentation (borrowed) */
    const char *align_path;             /* data.train_align, for messages */
    int64_t *word_offset;               /* (n_pairs + 1): pair i's word pairs are */
    int32_t *word_pairs;                /* word_pairs[2k], [2k + 1] (source, target word) for
                                           word_offset[i] <= k < word_offset[i + 1] */
    int64_t word_pairs_cap;             /* in pairs */
    TokenSpan *block_spans[2];          /* the block's tokens' bytes, as block_ids */
    int32_t **block_links;              /* (block_pairs) pair j's token links, grown as needed */
    int *block_n_links, *block_links_cap;
    GuidedAlignments *epoch_align;      /* the last epoch's links */
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A signal asked to stop (polled between pairs, also by the workers). */
static int stopped(const SubwordSampler *s) { return s->stop && *s->stop; }

static NmtStatus stop_fail(void) {
    return nmt_fail(NMT_STOPPED, "subword sampling: stopped by a signal");
}

static const int32_t *best_ids(const Dataset *d, int side, int64_t i) {
    return side == SIDE_SRC ? dataset_src(d, i) : dataset_tgt(d, i);
}

static int best_len(const Dataset *d, int side, int64_t i) {
    return side == SIDE_SRC ? dataset_src_len(d, i) : dataset_tgt_len(d, i);
}

/* Both sides' text is held under guided alignment (its words' bytes). */
static int held(const SubwordSampler *s, int side) { return s->sampled[side] || s->best_align; }

static const char *side_text(const SubwordSampler *s, int side, int64_t i, size_t *len) {
    const SideText *t = &s->side[side];
    *len = (size_t)(t->offset[i + 1] - t->offset[i]);
    return t->text + t->offset[i];
}

/* The key of one draw: (seed, corpus, epoch, corpus line, side) mixed into
 * 64 bits (corpus_key 0, data.train_src, mixes nothing in: its keys are
 * those of the runs before data.extra_src). */
static uint64_t draw_key(uint64_t seed, uint64_t corpus_key, int64_t epoch, int64_t line_no, int side) {
    uint64_t k = rng_mix64(seed ^ 0x73756277u); /* "subw" */
    if (corpus_key) k = rng_mix64(k ^ corpus_key);
    k = rng_mix64(k ^ (uint64_t)epoch);
    return rng_mix64(k ^ ((uint64_t)line_no << 1 | (uint64_t)side));
}

void subword_sampler_free(SubwordSampler *s) {
    if (!s) return;
    for (int side = 0; side < 2; side++) {
        nmt_free(s->side[side].text);
        nmt_free(s->side[side].offset);
        nmt_free(s->block_ids[side]);
        nmt_free(s->block_len[side]);
        nmt_free(s->block_spans[side]);
    }
    if (s->block_links)
        for (int64_t j = 0; j < s->block_pairs; j++) nmt_free(s->block_links[j]);
    nmt_free(s->block_links);
    nmt_free(s->block_n_links);
    nmt_free(s->block_links_cap);
    nmt_free(s->word_offset);
    nmt_free(s->word_pairs);
    nmt_free(s->src_prefix);
    nmt_free(s->path[SIDE_SRC]);
    nmt_free(s->path[SIDE_TGT]);
    guided_alignments_free(s->epoch_align);
    dataset_free(s->epoch);
    nmt_free(s);
}

/* Appends pair i's sentence: prefix (NULL: none) and text[0..len). */
static NmtStatus side_text_add(SideText *t, int64_t i, const char *prefix, const char *text, size_t len) {
    size_t plen = prefix ? strlen(prefix) : 0;
    int64_t need = t->size + (int64_t)(plen + len);
    if (need > t->capacity) {
        int64_t cap = t->capacity ? t->capacity : 1 << 16;
        while (cap < need) cap *= 2;
        char *p = nmt_realloc(t->text, (size_t)cap);
        if (!p) return nmt_fail_nomem("subword sampling: holding the training sentences");
        t->text = p;
        t->capacity = cap;
    }
    if (plen) memcpy(t->text + t->size, prefix, plen);
    memcpy(t->text + t->size + plen, text, len);
    t->size = need;
    t->offset[i + 1] = t->size;
    return NMT_OK;
}

/* Appends pair k's word alignment, line `line` of data.train_align (text
 * the pair's sentences, for their word counts), to the held word pairs. */
static NmtStatus add_word_pairs(SubwordSampler *s, int64_t k, const char *line, size_t len, int64_t line_no,
                                const char *const text[2], const size_t text_len[2]) {
    int32_t *pairs = NULL;
    int n = 0, cap = 0;
    NmtStatus st = guided_align_parse_line(line, len, guided_align_count_words(text[SIDE_SRC], text_len[SIDE_SRC]),
                                           guided_align_count_words(text[SIDE_TGT], text_len[SIDE_TGT]), &pairs,
                                           &n, &cap);
    if (st) nmt_error_prefix("%s:%lld", s->align_path, (long long)line_no);
    int64_t at = s->word_offset[k];
    if (!st && at + n > s->word_pairs_cap) {
        int64_t c = s->word_pairs_cap ? s->word_pairs_cap : 4096;
        while (c < at + n) c *= 2;
        int32_t *p = nmt_realloc(s->word_pairs, (size_t)c * 2 * sizeof *p);
        if (p) {
            s->word_pairs = p;
            s->word_pairs_cap = c;
        } else {
            st = nmt_fail_nomem("subword sampling: holding the word alignments");
        }
    }
    if (!st) {
        if (n) memcpy(s->word_pairs + 2 * at, pairs, (size_t)n * 2 * sizeof *pairs);
        s->word_offset[k + 1] = at + n;
    }
    nmt_free(pairs);
    return st;
}

/* The line of data.train_align for corpus line line_no (lines rising). */
static NmtStatus align_line(SubwordSampler *s, LineReader *r, int64_t line_no, const char **line, size_t *len) {
    while (line_reader_line_no(r) < line_no) {
        int got = 0;
        NmtStatus st = line_reader_next(r, line, len, &got);
        if (st) return st;
        if (!got)
            return nmt_fail(NMT_ERR_FORMAT, "%s: has no line %lld, a pair of the prepared cache (data.cache_dir); "
                            "the alignment file changed since `nmt prepare`: run it again with --force",
                            s->align_path, (long long)line_no);
    }
    return NMT_OK;
}

/* Reads the corpus lines of the prepared pairs (Dataset.line_no, rising),
 * and under guided alignment their lines of data.train_align. */
static NmtStatus read_sentences(SubwordSampler *s) {
    const Dataset *d = s->best;
    for (int side = 0; side < 2; side++) {
        if (!held(s, side)) continue;
        s->side[side].offset = nmt_calloc((size_t)d->n_pairs + 1, sizeof(int64_t));
        if (!s->side[side].offset) return nmt_fail_nomem("subword sampling: holding the training sentences");
    }
    ParallelReader *r = NULL;
    LineReader *ar = NULL;
    NmtStatus st = parallel_reader_open(s->path[SIDE_SRC], s->path[SIDE_TGT], &r);
    if (!st && s->best_align) {
        s->word_offset = nmt_calloc((size_t)d->n_pairs + 1, sizeof(int64_t));
        st = s->word_offset ? line_reader_open(s->align_path, &ar)
                            : nmt_fail_nomem("subword sampling: holding the word alignments");
    }
    int64_t k = 0;
    while (!st && k < d->n_pairs) {
        const char *text[2];
        size_t len[2];
        int got = 0;
        st = parallel_reader_next(r, &text[SIDE_SRC], &len[SIDE_SRC], &text[SIDE_TGT], &len[SIDE_TGT], &got);
        if (st || !got) break;
        if (stopped(s)) {
            st = stop_fail();
            break;
        }
        if (parallel_reader_line_no(r) != d->line_no[k]) continue;
        for (int side = 0; side < 2 && !st; side++)
            if (held(s, side))
                st = side_text_add(&s->side[side], k, side == SIDE_SRC ? s->src_prefix : NULL, text[side], len[side]);
        if (!st && ar) {
            const char *line = NULL;
            size_t line_len = 0;
            st = align_line(s, ar, d->line_no[k], &line, &line_len);
            if (!st) st = add_word_pairs(s, k, line, line_len, d->line_no[k], text, len);
        }
        k++;
    }
    parallel_reader_close(r);
    line_reader_close(ar);
    if (!st && k < d->n_pairs)
        st = nmt_fail(NMT_ERR_FORMAT,
                      "%s: has no line %lld, a pair of the prepared cache (data.cache_dir); the corpus "
                      "changed since `nmt prepare`: run it again with --force",
                      s->path[SIDE_SRC], (long long)d->line_no[k]);
    return st;
}

/* The error for pair i, whose `side` does not encode to the cache's ids
 * (or fails to encode): encoded again here, in the calling thread, for
 * the message (nmt_fail's message is per thread). */
static NmtStatus ids_mismatch(const SubwordSampler *s, int side, int64_t i) {
    const Dataset *d = s->best;
    size_t len;
    const char *text = side_text(s, side, i, &len);
    int32_t *ids = NULL;
    int n = 0, cap = 0;
    NmtStatus st = tokenizer_encode_buf(s->tok[side], text, len, &ids, &n, &cap);
    nmt_free(ids);
    if (st) {
        nmt_error_prefix("%s:%lld", s->path[side], (long long)d->line_no[i]);
        return st;
    }
    return nmt_fail(NMT_ERR_FORMAT,
                    "%s:%lld: the line encodes to other ids than the prepared cache (data.cache_dir) "
                    "holds; the corpus or tokenizer changed since `nmt prepare`: run it again with --force",
                    s->path[side], (long long)d->line_no[i]);
}

/* Each sampled sentence's best segmentation must be the cache's ids. The
 * first pair that differs (or fails) is found in parallel and reported
 * from this thread. (Under guided alignment check_alignments checks both
 * sides in its own pass instead.) */
static NmtStatus check_sentences(SubwordSampler *s) {
    const Dataset *d = s->best;
    for (int side = 0; side < 2; side++) {
        if (!s->sampled[side]) continue;
        int64_t first_bad = d->n_pairs;
#pragma omp parallel
        {
            int32_t *ids = NULL;
            int n = 0, cap = 0;
#pragma omp for schedule(dynamic, 256)
            for (int64_t i = 0; i < d->n_pairs; i++) {
                if (stopped(s)) continue; /* the rest is passed over: no break out of an omp for */
                size_t len;
                const char *text = side_text(s, side, i, &len);
                int ok = tokenizer_encode_buf(s->tok[side], text, len, &ids, &n, &cap) == NMT_OK &&
                         n == best_len(d, side, i) &&
                         !memcmp(ids, best_ids(d, side, i), (size_t)n * sizeof *ids);
                if (!ok) {
#pragma omp critical(subword_first_bad)
                    if (i < first_bad) first_bad = i;
                }
            }
            nmt_free(ids);
        }
        if (stopped(s)) return stop_fail();
        if (first_bad < d->n_pairs) return ids_mismatch(s, side, first_bad);
    }
    return NMT_OK;
}

/* Pair i's best segmentation of `side` with its tokens' bytes, in new
 * arrays *spans (nmt_free it) of *n: NMT_ERR_FORMAT unless the ids are the
 * cache's. */
static NmtStatus best_spans(const SubwordSampler *s, int side, int64_t i, TokenSpan **spans, int *n) {
    size_t len;
    const char *text = side_text(s, side, i, &len);
    int32_t *ids = NULL;
    NmtStatus st = tokenizer_encode_spans(s->tok[side], text, len, &ids, spans, n);
    if (!st && (*n != best_len(s->best, side, i) || memcmp(ids, best_ids(s->best, side, i), (size_t)*n * sizeof *ids)))
        st = NMT_ERR_FORMAT;
    nmt_free(ids);
    return st;
}

/* Pair i's token links (word pairs through both sides' spans) into the
 * caller's buffer. */
static NmtStatus pair_links(const SubwordSampler *s, int64_t i, const TokenSpan *src_spans, int n_src,
                            const TokenSpan *tgt_spans, int n_tgt, int32_t **links, int *n_links, int *cap) {
    size_t src_len, tgt_len;
    const char *src = side_text(s, SIDE_SRC, i, &src_len), *tgt = side_text(s, SIDE_TGT, i, &tgt_len);
    int64_t w = s->word_offset[i];
    return guided_align_token_links(s->word_pairs + 2 * w, (int)(s->word_offset[i + 1] - w), src, src_len, src_spans,
                                    n_src, tgt, tgt_len, tgt_spans, n_tgt, links, n_links, cap);
}

/* Guided alignment, in one pass over the pairs (each side encoded once,
 * with its spans): both sides' best segmentations must be the cache's ids
 * (reported as check_sentences does: the source side's first mismatch,
 * else the target's), and each pair's word alignment mapped onto them
 * must give the cache's token links (train.aln), else the alignment file,
 * corpus or tokenizers changed since it was made. */
static NmtStatus check_alignments(SubwordSampler *s) {
    const Dataset *d = s->best;
    const GuidedAlignments *g = s->best_align;
    if (g->n_pairs != d->n_pairs)
        return nmt_fail(NMT_ERR_FORMAT, "%s: alignments of %lld pairs in the prepared cache (data.cache_dir) for "
                        "%lld pairs: run `nmt prepare` again with --force", s->align_path, (long long)g->n_pairs,
                        (long long)d->n_pairs);
    /* the first pair whose source ids, target ids or links differ */
    int64_t first_bad[3] = {d->n_pairs, d->n_pairs, d->n_pairs};
#pragma omp parallel
    {
        int32_t *links = NULL;
        int n_links = 0, cap = 0;
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < d->n_pairs; i++) {
            if (stopped(s)) continue;
            TokenSpan *spans[2] = {NULL, NULL};
            int n[2] = {0, 0}, bad = -1;
            for (int side = 0; side < 2 && bad < 0; side++)
                if (best_spans(s, side, i, &spans[side], &n[side])) bad = side;
            if (bad < 0) {
                int64_t at = g->offset[i];
                if (pair_links(s, i, spans[SIDE_SRC], n[SIDE_SRC], spans[SIDE_TGT], n[SIDE_TGT], &links, &n_links,
                               &cap) ||
                    n_links != g->offset[i + 1] - at ||
                    (n_links && memcmp(links, g->links + 2 * at, (size_t)n_links * 2 * sizeof *links)))
                    bad = 2;
            }
            if (bad >= 0) {
#pragma omp critical(subword_first_bad)
                if (i < first_bad[bad]) first_bad[bad] = i;
            }
            nmt_free(spans[SIDE_SRC]);
            nmt_free(spans[SIDE_TGT]);
        }
        nmt_free(links);
    }
    if (stopped(s)) return stop_fail();
    for (int side = 0; side < 2; side++)
        if (first_bad[side] < d->n_pairs) return ids_mismatch(s, side, first_bad[side]);
    if (first_bad[2] == d->n_pairs) return NMT_OK;
    return nmt_fail(NMT_ERR_FORMAT,
                    "%s:%lld: the pair's word alignment maps onto other token links than the prepared cache "
                    "(data.cache_dir) holds; the alignment file, corpus or tokenizers changed since `nmt prepare`: "
                    "run it again with --force", s->align_path, (long long)d->line_no[first_bad[2]]);
}

/* The sampler of one training corpus: data.train_src/tgt (extra -1, with
 * train_align under guided alignment) or data.extra_src/tgt's corpus
 * `extra` (from 0; its source lines with its data.extra_tag before them). */
static NmtStatus create_for(const Config *cfg, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                            const Dataset *train, const GuidedAlignments *train_align, int extra,
                            const volatile sig_atomic_t *stop, SubwordSampler **out) {
    *out = NULL;
    const DataConfig *dc = &cfg->data;
    NMT_ASSERT(!(extra >= 0 && train_align));
    NMT_ASSERT(dc->spm_sample_alpha > 0 && train->n_pairs > 0 && train->line_no);
    NmtStatus st = config_check_subword_sampling(cfg);
    if (st) return st;
    SubwordSampler *s = nmt_calloc(1, sizeof *s);
    if (!s) return nmt_fail_nomem("subword sampling");
    s->best = train;
    s->stop = stop;
    s->tok[SIDE_SRC] = src_tok;
    s->tok[SIDE_TGT] = tgt_tok;
    ExtraCorpus c = {NULL, NULL, NULL};
    st = extra >= 0 ? extra_corpus_get(cfg, extra, &c) : NMT_OK;
    if (!st) {
        s->path[SIDE_SRC] = nmt_strdup(extra >= 0 ? c.src : dc->train_src);
        s->path[SIDE_TGT] = nmt_strdup(extra >= 0 ? c.tgt : dc->train_tgt);
        if (c.tag) s->src_prefix = nmt_asprintf("%s ", c.tag);
        if (!s->path[SIDE_SRC] || !s->path[SIDE_TGT] || (c.tag && !s->src_prefix))
            st = nmt_fail_nomem("subword sampling");
    }
    extra_corpus_free(&c);
    if (st) {
        subword_sampler_free(s);
        return st;
    }
    /* "extra" for the first extra corpus (its keys from before the lists),
     * then "extra" and the corpus's number */
    s->corpus_key = extra < 0 ? 0 : extra == 0 ? 0x6578747261u : 0x6578747261u ^ ((uint64_t)(extra + 1) << 40);
    s->alpha = dc->spm_sample_alpha;
    s->sampled[SIDE_SRC] = dc->spm_sample_sides != CFG_SAMPLE_TGT;
    s->sampled[SIDE_TGT] = dc->spm_sample_sides != CFG_SAMPLE_SRC;
    s->seed = (uint64_t)cfg->train.seed;
    s->best_align = train_align;
    s->align_path = dc->train_align;
    NMT_ASSERT(!train_align || (dc->train_align && dc->train_align[0]));
    for (int side = 0; side < 2; side++) {
        if (s->sampled[side] && tokenizer_kind(s->tok[side]) != TOKENIZER_SPM) {
            subword_sampler_free(s);
            return nmt_fail(NMT_ERR_CONFIG, "data.spm_sample_alpha: subword sampling needs SentencePiece "
                                            "tokenizers, the %s side has words",
                            side == SIDE_SRC ? "source" : "target");
        }
        s->lo[side] = INT32_MAX;
        s->hi[side] = 0;
        for (int64_t i = 0; i < train->n_pairs; i++) {
            int n = best_len(train, side, i);
            if (n < s->lo[side]) s->lo[side] = n;
            if (n > s->hi[side]) s->hi[side] = n;
        }
    }
    int longest = s->hi[SIDE_SRC] > s->hi[SIDE_TGT] ? s->hi[SIDE_SRC] : s->hi[SIDE_TGT];
    s->block_pairs = (train_align ? SAMPLE_BLOCK_IDS_GUIDED : SAMPLE_BLOCK_IDS) / (longest > 0 ? longest : 1);
    if (s->block_pairs > SAMPLE_BLOCK_PAIRS) s->block_pairs = SAMPLE_BLOCK_PAIRS;
    if (s->block_pairs < 1) s->block_pairs = 1;
    for (int side = 0; side < 2; side++) {
        s->block_ids[side] = nmt_malloc((size_t)s->block_pairs * (size_t)s->hi[side] * sizeof(int32_t));
        s->block_len[side] = nmt_malloc((size_t)s->block_pairs * sizeof(int));
        if (train_align)
            s->block_spans[side] = nmt_malloc((size_t)s->block_pairs * (size_t)s->hi[side] * sizeof(TokenSpan));
        if (!s->block_ids[side] || !s->block_len[side] || (train_align && !s->block_spans[side])) {
            subword_sampler_free(s);
            return nmt_fail_nomem("subword sampling");
        }
    }
    if (train_align) {
        s->block_links = nmt_calloc((size_t)s->block_pairs, sizeof *s->block_links);
        s->block_n_links = nmt_calloc((size_t)s->block_pairs, sizeof *s->block_n_links);
        s->block_links_cap = nmt_calloc((size_t)s->block_pairs, sizeof *s->block_links_cap);
        if (!s->block_links || !s->block_n_links || !s->block_links_cap) {
            subword_sampler_free(s);
            return nmt_fail_nomem("subword sampling");
        }
        st = guided_alignments_create(&s->epoch_align);
    }
    if (!st) st = dataset_create(&s->epoch);
    if (!st) st = read_sentences(s);
    if (!st) st = train_align ? check_alignments(s) : check_sentences(s);
    if (st) {
        subword_sampler_free(s);
        return st;
    }
    *out = s;
    return NMT_OK;
}

/* Draws side `side` of pairs [from, from + count) into the block, with
 * the tokens' bytes under guided alignment. Returns the first pair whose
 * draw failed (from + count when none) and adds the sides kept at their
 * best segmentation to *kept_best. */
static int64_t draw_block(SubwordSampler *s, int side, int64_t epoch, int64_t from, int64_t count,
                          int64_t *kept_best) {
    const Dataset *d = s->best;
    int64_t first_bad = from + count, kept = 0;
#pragma omp parallel reduction(+ : kept)
    {
        int32_t *ids = NULL;
        TokenSpan *spans = NULL;
        int n = 0, cap = 0;
        int guided = s->best_align != NULL;
#pragma omp for schedule(dynamic, 64)
        for (int64_t j = 0; j < count; j++) {
            if (stopped(s)) continue; /* the block is thrown away */
            int64_t i = from + j;
            const int32_t *take = best_ids(d, side, i);
            const TokenSpan *take_spans = NULL;
            int len = best_len(d, side, i);
            NmtStatus st = NMT_OK;
            if (s->sampled[side]) {
                size_t text_len;
                const char *text = side_text(s, side, i, &text_len);
                uint64_t key = draw_key(s->seed, s->corpus_key, epoch, d->line_no[i], side);
                st = tokenizer_sample_encode_spans_buf(s->tok[side], text, text_len, s->alpha, key, &ids,
                                                       guided ? &spans : NULL, &n, &cap);
                if (!st && n >= s->lo[side] && n <= s->hi[side]) {
                    take = ids;
                    take_spans = spans;
                    len = n;
                } else if (!st) {
                    kept++;
                }
            }
            TokenSpan *best = NULL;
            int n_best = 0;
            if (!st && guided && !take_spans) {
                st = best_spans(s, side, i, &best, &n_best);
                take_spans = best;
            }
            if (st) {
#pragma omp critical(subword_first_bad)
                if (i < first_bad) first_bad = i;
                nmt_free(best);
                continue;
            }
            size_t at = (size_t)j * (size_t)s->hi[side];
            memcpy(s->block_ids[side] + at, take, (size_t)len * sizeof *take);
            if (guided) memcpy(s->block_spans[side] + at, take_spans, (size_t)len * sizeof *take_spans);
            s->block_len[side][j] = len;
            nmt_free(best);
        }
        nmt_free(ids);
        nmt_free(spans);
    }
    *kept_best += kept;
    return first_bad;
}

/* Guided alignment: the token links of the block's pairs [from, from +
 * count) as drawn (block_spans) into block_links. */
static NmtStatus link_block(SubwordSampler *s, int64_t from, int64_t count) {
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(| : failed)
    for (int64_t j = 0; j < count; j++) {
        size_t at[2] = {(size_t)j * (size_t)s->hi[SIDE_SRC], (size_t)j * (size_t)s->hi[SIDE_TGT]};
        if (pair_links(s, from + j, s->block_spans[SIDE_SRC] + at[SIDE_SRC], s->block_len[SIDE_SRC][j],
                       s->block_spans[SIDE_TGT] + at[SIDE_TGT], s->block_len[SIDE_TGT][j], &s->block_links[j],
                       &s->block_n_links[j], &s->block_links_cap[j]))
            failed = 1;
    }
    return failed ? nmt_fail_nomem("subword sampling: mapping the word alignments onto the tokens") : NMT_OK;
}

NmtStatus subword_sampler_create(const Config *cfg, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                                 const Dataset *train, const GuidedAlignments *train_align,
                                 const volatile sig_atomic_t *stop, SubwordSampler **out) {
    return create_for(cfg, src_tok, tgt_tok, train, train_align, -1, stop, out);
}

NmtStatus subword_sampler_create_extra(const Config *cfg, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                                       const Dataset *extra, int k, const volatile sig_atomic_t *stop,
                                       SubwordSampler **out) {
    NMT_ASSERT(k >= 0 && k < extra_corpora_count(cfg));
    return create_for(cfg, src_tok, tgt_tok, extra, NULL, k, stop, out);
}

NmtStatus subword_sampler_epoch(SubwordSampler *s, int64_t epoch, const Dataset **out, SubwordEpochStats *stats) {
    *out = NULL;
    const Dataset *d = s->best;
    Dataset *e = s->epoch;
    double start = now_seconds();
    SubwordEpochStats sum = {0};
    e->n_pairs = 0; /* offsets[0] stays 0: the pairs are appended anew */
    if (s->epoch_align) s->epoch_align->n_pairs = 0; /* likewise */
    NmtStatus st = NMT_OK;
    for (int64_t from = 0; !st && from < d->n_pairs; from += s->block_pairs) {
        int64_t count = d->n_pairs - from < s->block_pairs ? d->n_pairs - from : s->block_pairs;
        for (int side = 0; side < 2 && !st; side++) {
            int64_t bad = draw_block(s, side, epoch, from, count, &sum.kept_best);
            if (stopped(s)) {
                st = stop_fail();
            } else if (bad < from + count) { /* again here, for the message */
                size_t text_len;
                const char *text = side_text(s, side, bad, &text_len);
                int32_t *ids = NULL;
                int n = 0, cap = 0;
                st = tokenizer_sample_encode_buf(s->tok[side], text, text_len, s->alpha,
                                                 draw_key(s->seed, s->corpus_key, epoch, d->line_no[bad], side), &ids, &n, &cap);
                nmt_free(ids);
                if (!st) st = nmt_fail(NMT_ERR_RUNTIME, "subword sampling failed on one thread only");
                nmt_error_prefix("%s:%lld", s->path[side], (long long)d->line_no[bad]);
            }
        }
        if (!st && s->best_align) st = link_block(s, from, count);
        for (int64_t j = 0; !st && j < count; j++) {
            const int32_t *src = s->block_ids[SIDE_SRC] + (size_t)j * (size_t)s->hi[SIDE_SRC];
            const int32_t *tgt = s->block_ids[SIDE_TGT] + (size_t)j * (size_t)s->hi[SIDE_TGT];
            st = dataset_add(e, src, s->block_len[SIDE_SRC][j], tgt, s->block_len[SIDE_TGT][j], d->line_no[from + j]);
            if (!st && s->best_align) st = guided_alignments_add(s->epoch_align, s->block_links[j], s->block_n_links[j]);
        }
    }
    if (st) return st;
    if (s->best_align) {
        sum.links = s->epoch_align->offset[s->epoch_align->n_pairs];
        sum.best_links = s->best_align->offset[s->best_align->n_pairs];
    }
    sum.src_tokens = e->src_offset[e->n_pairs];
    sum.tgt_tokens = e->tgt_offset[e->n_pairs];
    sum.best_src_tokens = d->src_offset[d->n_pairs];
    sum.best_tgt_tokens = d->tgt_offset[d->n_pairs];
    sum.seconds = now_seconds() - start;
    if (stats) *stats = sum;
    *out = e;
    return NMT_OK;
}

const GuidedAlignments *subword_sampler_alignments(const SubwordSampler *s) {
    return s->best_align && s->epoch_align->n_pairs == s->best->n_pairs ? s->epoch_align : NULL;
}
