/* prepare.c: tokenizer training, corpus encoding and the cache folder
 * (prepare.h). */
#include "data/prepare.h"

#include <errno.h>
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/extra_corpora.h"
#include "data/given_tokenizers.h"
#include "data/word_vocab.h"
#include "fileio.h"
#include "train/init_from.h" /* the tokenizers of train.init_from */

/* Fixed seed of tokenizer training: the tokenizers do not change with
 * train.seed, so runs that differ only in seed share one cache. */
enum { TOKENIZER_SEED = 1 };

/* data.train_align, or NULL when not given */
static const char *train_align(const Config *cfg) {
    return cfg->data.train_align && cfg->data.train_align[0] ? cfg->data.train_align : NULL;
}

/* How many data.extra_src corpora are given (0: none). */
static int n_extra(const Config *cfg) { return extra_corpora_count(cfg); }

/* The cache file of extra corpus k: extra.bin, extra-2.bin, ... */
static void extra_cache_name(int k, char *buf, size_t n) {
    if (k == 0)
        snprintf(buf, n, "extra.bin");
    else
        snprintf(buf, n, "extra-%d.bin", k + 1);
}

static char *cache_path(const Config *cfg, const char *name) {
    return nmt_asprintf("%s/%s", cfg->data.cache_dir, name);
}

/* train.init_from's checkpoint, whose tokenizers the cache then holds, or
 * NULL (the tokenizers are trained on the corpus). */
static const char *init_from_path(const Config *cfg) {
    return cfg->train.init_from && cfg->train.init_from[0] ? cfg->train.init_from : NULL;
}

/* The manifest's line of one corpus file: its path, size and mtime. */
static void manifest_file_line(FILE *out, const char *key, const char *path) {
    struct stat st;
    if (!path || !path[0])
        fprintf(out, "%s = (none)\n", key);
    else if (stat(path, &st) == 0)
        fprintf(out, "%s = %s size %lld mtime %lld.%09ld\n", key, path, (long long)st.st_size,
                (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    else
        fprintf(out, "%s = %s (missing)\n", key, path);
}

/* "key = value" lines of every setting the cache depends on, then one line
 * per corpus file with its size and modification time. */
char *prepare_manifest(const Config *cfg) {
    const DataConfig *d = &cfg->data;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return NULL;
    fprintf(out, "nmt cache 1\n");
    fprintf(out, "data.tokenizer = %s\n", tokenizer_kind_names[d->tokenizer]);
    if (given_tokenizers(cfg)) {
        /* the files' lines below say it all: the training keys are not used */
    } else if (d->tokenizer == CFG_TOKENIZER_SPM) {
        fprintf(out, "data.spm_vocab_size = %d\n", d->spm_vocab_size);
        fprintf(out, "data.spm_model_type = %s\n", spm_model_type_names[d->spm_model_type]);
        fprintf(out, "data.spm_joint = %s\n", d->spm_joint ? "true" : "false");
        fprintf(out, "data.spm_character_coverage = %.17g\n", d->spm_character_coverage);
        fprintf(out, "data.spm_max_sentences = %d\n", d->spm_max_sentences);
        fprintf(out, "data.spm_threads = %d\n", d->spm_threads);
    } else {
        fprintf(out, "data.word_vocab_size = %d\n", d->word_vocab_size);
        fprintf(out, "data.word_min_freq = %d\n", d->word_min_freq);
    }
    fprintf(out, "data.max_len = %d\n", d->max_len);
    if (n_extra(cfg)) { /* one tag: the line of the caches before lists */
        fprintf(out, "data.extra_tag = ");
        for (int k = 0; k < n_extra(cfg); k++) {
            char *tag = k < config_list_len(d->extra_tag) ? config_list_item(d->extra_tag, k) : NULL;
            fprintf(out, "%s%s", k ? ", " : "", tag && tag[0] ? tag : "(none)");
            nmt_free(tag);
        }
        fprintf(out, "\n");
    }
    /* with train.init_from, the tokenizers are that checkpoint's (the keys
     * above were copied from it): its file is a source of the cache */
    const char *init_from = init_from_path(cfg);
    const char *align = train_align(cfg);
    const char *keys[] = {"data.train_src", "data.train_tgt", "data.valid_src", "data.valid_tgt", "train.init_from",
                          "data.train_align", "data.spm_src_model", "data.spm_tgt_model"};
    const char *paths[] = {d->train_src, d->train_tgt, d->valid_src, d->valid_tgt, init_from, align,
                           d->spm_src_model, d->spm_tgt_model};
    int ok = 1;
    for (size_t i = 0; i < NMT_ARRAY_LEN(keys); i++) {
        /* manifests of runs without these stay as they were */
        if ((i == 4 && !init_from) || (i == 5 && !align) || ((i == 6 || i == 7) && !given_tokenizers(cfg)))
            continue;
        manifest_file_line(out, keys[i], paths[i]);
    }
    /* the extra corpora's files: "data.extra_src" for the first (the line
     * of the caches before lists), "data.extra_src[2]" for the second ... */
    for (int k = 0; ok && k < n_extra(cfg); k++) {
        ExtraCorpus c;
        ok = extra_corpus_get(cfg, k, &c) == NMT_OK;
        char src_key[40], tgt_key[40];
        snprintf(src_key, sizeof src_key, k ? "data.extra_src[%d]" : "data.extra_src", k + 1);
        snprintf(tgt_key, sizeof tgt_key, k ? "data.extra_tgt[%d]" : "data.extra_tgt", k + 1);
        if (ok) manifest_file_line(out, src_key, c.src);
        if (ok) manifest_file_line(out, tgt_key, c.tgt);
        extra_corpus_free(&c);
    }
    if (fclose(out) != 0 || !ok) {
        free(text);
        return NULL;
    }
    /* hand back memory from the nmt allocator, like every other function */
    char *copy = nmt_strndup(text, len);
    free(text);
    return copy;
}

/* The first line of `expected` that `found` lacks, as "key" (for messages). */
static void first_changed_setting(const char *expected, const char *found, char *buf, size_t n) {
    snprintf(buf, n, "the cache format");
    const char *line = expected;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        char probe[4096];
        snprintf(probe, sizeof probe, "%.*s", (int)len, line);
        if (!strstr(found, probe)) {
            const char *eq = strstr(probe, " = ");
            snprintf(buf, n, "%.*s", eq ? (int)(eq - probe) : (int)strcspn(probe, "\n"), probe);
            return;
        }
        line += len;
    }
}

/* ---- the training corpora --------------------------------------------- */

/* A training corpus: data.train_src/tgt, or one of data.extra_src/tgt,
 * whose source lines are read with its data.extra_tag and a space before
 * them. */
typedef struct {
    const char *src_path, *tgt_path;
    const char *src_prefix; /* NULL: none */
} TrainCorpus;

enum { MAX_TRAIN_CORPORA = 1 + CFG_MAX_LIST };

/* Every training corpus of cfg: c[0] data.train_*, c[1 + k] extra corpus
 * k (whose strings `extra` and `prefix` own). */
typedef struct {
    TrainCorpus c[MAX_TRAIN_CORPORA];
    int n;
    ExtraCorpus extra[CFG_MAX_LIST];
    char *prefix[CFG_MAX_LIST]; /* "tag " or NULL */
} TrainCorpora;

static void train_corpora_free(TrainCorpora *tc) {
    for (int k = 0; k < CFG_MAX_LIST; k++) {
        extra_corpus_free(&tc->extra[k]);
        nmt_free(tc->prefix[k]);
    }
    memset(tc, 0, sizeof *tc);
}

static NmtStatus train_corpora_get(const Config *cfg, TrainCorpora *tc) {
    memset(tc, 0, sizeof *tc);
    tc->c[0] = (TrainCorpus){cfg->data.train_src, cfg->data.train_tgt, NULL};
    tc->n = 1;
    for (int k = 0; k < n_extra(cfg); k++) {
        NmtStatus st = extra_corpus_get(cfg, k, &tc->extra[k]);
        if (!st && tc->extra[k].tag) {
            tc->prefix[k] = nmt_asprintf("%s ", tc->extra[k].tag);
            if (!tc->prefix[k]) st = nmt_fail_nomem("reading data.extra_tag");
        }
        if (st) {
            train_corpora_free(tc);
            return st;
        }
        tc->c[tc->n++] = (TrainCorpus){tc->extra[k].src, tc->extra[k].tgt, tc->prefix[k]};
    }
    return NMT_OK;
}

/* text[0..len) with `prefix` before it (NULL: none) in *out, *out_len:
 * text itself, or the joined text in the growing buffer *buf of *cap. */
static NmtStatus with_prefix(const char *prefix, const char *text, size_t len, char **buf, size_t *cap,
                             const char **out, size_t *out_len) {
    *out = text;
    *out_len = len;
    if (!prefix) return NMT_OK;
    size_t plen = strlen(prefix), need = plen + len + 1;
    if (need > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < need) c *= 2;
        char *p = nmt_realloc(*buf, c);
        if (!p) return nmt_fail_nomem("reading data.extra_src");
        *buf = p;
        *cap = c;
    }
    memcpy(*buf, prefix, plen);
    memcpy(*buf + plen, text, len);
    (*buf)[plen + len] = '\0';
    *out = *buf;
    *out_len = plen + len;
    return NMT_OK;
}

/* ---- tokenizer training ------------------------------------------------ */

/* A SentenceSourceFn over one side of the training pairs, or both sides one
 * after the other (all source lines, then all target lines: a joint
 * vocabulary), of every training corpus (data.train_*, then data.extra_*,
 * its source lines with the tag). Pairs that cannot fit data.max_len by
 * their word count (tokenizer_kind_min_ids) or, with SentencePiece, by
 * their bytes (tokenizer_kind_bytes_cap) are left out on both sides, as
 * encode_corpus drops them: the tokenizers never see a line that is
 * dropped for its length, however long it is. */
typedef struct {
    const TrainCorpus *corpora;
    int n_corpora;
    int sides[2], n_sides; /* 0: source, 1: target */
    int pass;              /* passes begun: pass p (from 1) reads corpus (p - 1) % n_corpora,
                              side sides[(p - 1) / n_corpora] */
    TokenizerKind kind;
    int max_len;
    ParallelReader *reader;
    int64_t pairs, too_long; /* of the first side's passes: pairs read, left out for length */
    int64_t given;           /* lines handed to the tokenizer with a non-space character */
    bool failed;             /* the reader failed (its message is the error) */
    char *line_buf;          /* a source line with its corpus's prefix */
    size_t line_cap;
} PairSentences;

/* The one length rule of a side, before encoding: `min` ids at least (the
 * word bound, tokenizer_*min_ids), or max_len + 1 when the side has a word
 * and more bytes than max_len pieces hold (`cap`, tokenizer_*bytes_cap:
 * only a run of unknown characters could be fewer pieces). Over max_len:
 * too long, left out unencoded (tokenizer training and encode_corpus). */
static int side_min_ids(int min, size_t len, size_t cap, int max_len) {
    return min > 0 && len > cap ? max_len + 1 : min;
}

/* A side that encode_corpus finds too long without encoding it, by kind
 * (before the tokenizer exists). */
static bool side_too_long(TokenizerKind kind, const char *text, size_t len, int max_len) {
    int min = tokenizer_kind_min_ids(kind, text, len, max_len + 1);
    return side_min_ids(min, len, tokenizer_kind_bytes_cap(kind, max_len), max_len) > max_len;
}

static int pair_sentences_next(void *ctx, const char **line, size_t *len) {
    PairSentences *ps = ctx;
    for (;;) {
        if (!ps->reader) {
            if (ps->pass >= ps->n_sides * ps->n_corpora) return 0;
            ps->pass++;
            const TrainCorpus *open = &ps->corpora[(ps->pass - 1) % ps->n_corpora];
            NmtStatus st = parallel_reader_open(open->src_path, open->tgt_path, &ps->reader);
            if (st) {
                ps->failed = true;
                return -(int)st;
            }
        }
        const TrainCorpus *c = &ps->corpora[(ps->pass - 1) % ps->n_corpora];
        const char *src, *tgt;
        size_t src_len, tgt_len;
        int got = 0;
        NmtStatus st = parallel_reader_next(ps->reader, &src, &src_len, &tgt, &tgt_len, &got);
        /* a blank line stays blank (encode_corpus skips its pair) */
        if (!st && got && !corpus_line_is_blank(src, src_len))
            st = with_prefix(c->src_prefix, src, src_len, &ps->line_buf, &ps->line_cap, &src, &src_len);
        if (st) {
            ps->failed = true;
            return -(int)st;
        }
        if (!got) {
            parallel_reader_close(ps->reader);
            ps->reader = NULL;
            continue;
        }
        bool first_side = ps->pass <= ps->n_corpora;
        if (first_side) ps->pairs++;
        if (ps->max_len > 0 && (side_too_long(ps->kind, src, src_len, ps->max_len) ||
                                side_too_long(ps->kind, tgt, tgt_len, ps->max_len))) {
            if (first_side) ps->too_long++;
            continue;
        }
        int side = ps->sides[(ps->pass - 1) / ps->n_corpora];
        *line = side == 0 ? src : tgt;
        *len = side == 0 ? src_len : tgt_len;
        size_t pos = 0, b, e;
        if (word_next(*line, *len, &pos, &b, &e)) ps->given++; /* a word to learn from */
        return 1;
    }
}

/* items[0..n) joined into buf: "A", "A<last>B", "A<sep>B<last>C" (cut
 * short when buf is full). */
static void join_strings(const char *const *items, int n, const char *sep, const char *last, char *buf,
                         size_t cap) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < cap; i++) {
        int w = snprintf(buf + at, cap - at, "%s%s", i == 0 ? "" : i == n - 1 ? last : sep, items[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
}

/* Every file of the corpora c[0..n) (source, target, next corpus ...),
 * joined as join_strings does with ", " and `last`. */
static void corpus_files(const TrainCorpus *c, int n, const char *last, char *buf, size_t cap) {
    const char *files[2 * MAX_TRAIN_CORPORA];
    NMT_ASSERT(n <= MAX_TRAIN_CORPORA);
    for (int k = 0; k < n; k++) {
        files[2 * k] = c[k].src_path;
        files[2 * k + 1] = c[k].tgt_path;
    }
    join_strings(files, 2 * n, ", ", last, buf, cap);
}

/* Trains the tokenizer of one side (0 source, 1 target) or, with side -1,
 * the joint one of both. */
static NmtStatus train_tokenizer(const Config *cfg, int side, Tokenizer **out) {
    const DataConfig *d = &cfg->data;
    TokenizerSpec spec;
    if (d->tokenizer == CFG_TOKENIZER_SPM) {
        tokenizer_spec_init(&spec, TOKENIZER_SPM);
        spec.vocab_size = d->spm_vocab_size;
        spec.vocab_size_key = "data.spm_vocab_size";
        spec.spm_model_type = spm_model_type_names[d->spm_model_type];
        spec.character_coverage = d->spm_character_coverage;
        spec.spm_max_sentences = d->spm_max_sentences;
        spec.spm_threads = d->spm_threads;
    } else {
        tokenizer_spec_init(&spec, TOKENIZER_WORD);
        spec.vocab_size = d->word_vocab_size;
        spec.vocab_size_key = "data.word_vocab_size";
        spec.min_freq = d->word_min_freq;
    }
    spec.seed = TOKENIZER_SEED;
    PairSentences ps = {.sides = {side < 0 ? 0 : side, 1}, .n_sides = side < 0 ? 2 : 1, .kind = spec.kind,
                        .max_len = d->max_len};
    TrainCorpora corpora;
    char *tags = NULL;
    NmtStatus st = train_corpora_get(cfg, &corpora);
    if (!st) st = extra_corpora_tags(cfg, &tags);
    if (st) {
        train_corpora_free(&corpora);
        return st;
    }
    ps.corpora = corpora.c;
    ps.n_corpora = corpora.n;
    spec.spm_user_symbol = side != 1 ? tags : NULL; /* source-side pieces (and joint) */
    st = tokenizer_train(&spec, pair_sentences_next, &ps, out);
    parallel_reader_close(ps.reader);
    nmt_free(ps.line_buf);
    nmt_free(tags);
    const char *which = side < 0 ? "joint" : side == 0 ? "source" : "target";
    /* for messages: the files the tokenizer read, and all of the corpora's */
    const char *read[2 * MAX_TRAIN_CORPORA];
    int n_read = 0;
    for (int k = 0; k < ps.n_sides; k++)
        for (int c = 0; c < ps.n_corpora; c++)
            read[n_read++] = ps.sides[k] == 0 ? ps.corpora[c].src_path : ps.corpora[c].tgt_path;
    char read_and[2048], read_comma[2048], all_comma[2048];
    join_strings(read, n_read, ", ", " and ", read_and, sizeof read_and);
    join_strings(read, n_read, ", ", ", ", read_comma, sizeof read_comma);
    corpus_files(ps.corpora, ps.n_corpora, ", ", all_comma, sizeof all_comma);
    train_corpora_free(&corpora); /* the messages below take the texts above */
    if (st == NMT_ERR_CONFIG && !ps.failed && !strncmp(nmt_error_message(), "data.word_min_freq", 18)) {
        /* which side ran out of words */
        nmt_error_suffix(" (the %s vocabulary, of %s)", which, read_and);
        return st;
    }
    /* the reader read every pair, and the tokenizer had nothing to learn
     * from: say why, naming the files or the key, instead of the
     * tokenizer's own "no words" (a reader's error stands as it is) */
    if (st != NMT_ERR_RUNTIME || ps.failed || ps.given > 0) return st;
    nmt_error_clear();
    int64_t kept = ps.pairs - ps.too_long;
    if (ps.pairs == 0)
        return nmt_fail(NMT_ERR_RUNTIME, "%s: no training pairs (the files are empty): nothing to train the %s "
                        "tokenizer on", all_comma, which);
    if (kept == 0)
        return nmt_fail(NMT_ERR_CONFIG, "data.max_len = %d: all %lld training pair%s (%s) %s longer, so no "
                        "sentence is left to train the %s tokenizer on", d->max_len, (long long)ps.pairs,
                        ps.pairs == 1 ? "" : "s", all_comma, ps.pairs == 1 ? "is" : "are", which);
    return nmt_fail(NMT_ERR_RUNTIME, "%s: every line of %s %lld training pair%s%s is empty: nothing to train the "
                    "%s tokenizer on", read_comma, n_read == 1 ? "its" : "their", (long long)kept,
                    kept == 1 ? "" : "s", ps.too_long ? " within data.max_len" : "", which);
}

/* ---- encoding ---------------------------------------------------------- */

/* Reading data.train_align beside the corpus: a line per pair, parsed and
 * mapped onto the tokens of the pairs kept (guided_align.h). */
typedef struct {
    const char *path;
    LineReader *reader;
    GuidedAlignments *out;
    int32_t *pairs, *links; /* scratch */
    int pairs_cap, links_cap;
    int n_pairs;      /* word pairs of the current pair's line, in pairs */
    TokenSpan *src_spans, *tgt_spans; /* the current pair's tokens' bytes (encode_pair) */
} AlignReader;

/* The alignment line of the pair just read (every pair has one, kept or
 * not), checked against the pair's words whether the pair is kept or not:
 * a bad line is an error, never dropped with its pair. */
static NmtStatus align_next_line(AlignReader *ar, const char *src, size_t src_len, const char *tgt, size_t tgt_len,
                                 int64_t pair_line) {
    const char *line;
    size_t len;
    int got = 0;
    NmtStatus st = line_reader_next(ar->reader, &line, &len, &got);
    if (!st && !got)
        st = nmt_fail(NMT_ERR_FORMAT, "%s: %lld line%s, but the training corpus has more pairs (data.train_align "
                      "needs one line per pair)", ar->path, (long long)(pair_line - 1), pair_line == 2 ? "" : "s");
    if (!st) {
        st = guided_align_parse_line(line, len, guided_align_count_words(src, src_len),
                                     guided_align_count_words(tgt, tgt_len), &ar->pairs, &ar->n_pairs,
                                     &ar->pairs_cap);
        if (st) nmt_error_prefix("%s:%lld", ar->path, (long long)pair_line);
    }
    return st;
}

/* Encodes both sides of a pair into the ids buffers (grown as needed);
 * when reading alignments, with each token's bytes into ar's spans too
 * (tokenizer_encode_spans: the same ids), for align_pair. */
static NmtStatus encode_pair(AlignReader *ar, const Tokenizer *src_tok, const char *src, size_t src_len,
                             const Tokenizer *tgt_tok, const char *tgt, size_t tgt_len, int32_t **src_ids, int *n_src,
                             int *src_cap, int32_t **tgt_ids, int *n_tgt, int *tgt_cap) {
    if (!ar->reader) {
        NmtStatus st = tokenizer_encode_buf(src_tok, src, src_len, src_ids, n_src, src_cap);
        return st ? st : tokenizer_encode_buf(tgt_tok, tgt, tgt_len, tgt_ids, n_tgt, tgt_cap);
    }
    /* new arrays of exactly the tokens: they replace the buffers */
    nmt_free(*src_ids), nmt_free(*tgt_ids), nmt_free(ar->src_spans), nmt_free(ar->tgt_spans);
    *src_ids = *tgt_ids = NULL;
    ar->src_spans = ar->tgt_spans = NULL;
    *src_cap = *tgt_cap = *n_src = *n_tgt = 0;
    NmtStatus st = tokenizer_encode_spans(src_tok, src, src_len, src_ids, &ar->src_spans, n_src);
    if (!st) st = tokenizer_encode_spans(tgt_tok, tgt, tgt_len, tgt_ids, &ar->tgt_spans, n_tgt);
    *src_cap = *src_ids ? *n_src : 0;
    *tgt_cap = *tgt_ids ? *n_tgt : 0;
    return st;
}

/* The token links of a kept pair from its word pairs (align_next_line)
 * and its tokens' spans (encode_pair). */
static NmtStatus align_pair(AlignReader *ar, const char *src, size_t src_len, int n_src, const char *tgt,
                            size_t tgt_len, int n_tgt) {
    int n_links = 0;
    NmtStatus st = guided_align_token_links(ar->pairs, ar->n_pairs, src, src_len, ar->src_spans, n_src, tgt, tgt_len,
                                            ar->tgt_spans, n_tgt, &ar->links, &n_links, &ar->links_cap);
    return st ? st : guided_alignments_add(ar->out, ar->links, n_links);
}

/* What becomes of a pair that is not blank. */
typedef enum { PAIR_KEEP, PAIR_EMPTY, PAIR_TOO_LONG } PairFate;

/* A pair's ids, in buffers grown as needed (encode_pair). */
typedef struct {
    int32_t *src, *tgt;
    int n_src, n_tgt, src_cap, tgt_cap;
} PairIds;

static void pair_ids_free(PairIds *p) {
    nmt_free(p->src);
    nmt_free(p->tgt);
    memset(p, 0, sizeof *p);
}

/* The fate of a pair that is not blank (its source with its prefix), and
 * for PAIR_KEEP its ids in *ids. A pair whose word count already exceeds
 * max_len (tokenizer_min_ids; max_len <= 0: no length filter) is too long
 * without being encoded, unless a side of it could encode to nothing. */
static NmtStatus encode_one(AlignReader *ar, const Tokenizer *src_tok, const Tokenizer *tgt_tok, int max_len,
                            const char *src, size_t src_len, const char *tgt, size_t tgt_len, PairIds *ids,
                            PairFate *fate) {
    ids->n_src = ids->n_tgt = 0;
    NmtStatus st;
    if (max_len > 0) {
        /* The skip is the same as after encoding: a side whose bound
         * exceeds max_len is not empty, so the pair is too long unless
         * the other side encodes to nothing (only a side with a bound
         * of 0 can). */
        int min_src = side_min_ids(tokenizer_min_ids(src_tok, src, src_len, max_len + 1), src_len,
                                   tokenizer_bytes_cap(src_tok, max_len), max_len);
        int min_tgt = side_min_ids(tokenizer_min_ids(tgt_tok, tgt, tgt_len, max_len + 1), tgt_len,
                                   tokenizer_bytes_cap(tgt_tok, max_len), max_len);
        if (min_src > max_len || min_tgt > max_len) {
            st = NMT_OK;
            if (min_src == 0)
                st = tokenizer_encode_buf(src_tok, src, src_len, &ids->src, &ids->n_src, &ids->src_cap);
            else if (min_tgt == 0)
                st = tokenizer_encode_buf(tgt_tok, tgt, tgt_len, &ids->tgt, &ids->n_tgt, &ids->tgt_cap);
            if (st) return st;
            *fate = (min_src == 0 && ids->n_src == 0) || (min_tgt == 0 && ids->n_tgt == 0) ? PAIR_EMPTY
                                                                                        : PAIR_TOO_LONG;
            return NMT_OK;
        }
    }
    st = encode_pair(ar, src_tok, src, src_len, tgt_tok, tgt, tgt_len, &ids->src, &ids->n_src, &ids->src_cap,
                     &ids->tgt, &ids->n_tgt, &ids->tgt_cap);
    if (st) return st;
    if (ids->n_src == 0 || ids->n_tgt == 0) *fate = PAIR_EMPTY;
    else if (max_len > 0 && (ids->n_src > max_len || ids->n_tgt > max_len)) *fate = PAIR_TOO_LONG;
    else *fate = PAIR_KEEP;
    return NMT_OK;
}

/* Counts a pair's fate; keeps it in d when PAIR_KEEP. */
static NmtStatus take_pair(PairFate fate, const int32_t *src, int n_src, const int32_t *tgt, int n_tgt,
                           int64_t line_no, CorpusStats *stats, Dataset *d) {
    if (fate == PAIR_EMPTY) stats->skipped_empty++;
    if (fate == PAIR_TOO_LONG) stats->skipped_too_long++;
    if (fate != PAIR_KEEP) return NMT_OK;
    NmtStatus st = dataset_add(d, src, n_src, tgt, n_tgt, line_no);
    if (!st) stats->kept++;
    return st;
}

/* The pairs of `reader` one by one into d, with their alignments (ar). */
static NmtStatus encode_in_order(ParallelReader *reader, const TrainCorpus *c, const Tokenizer *src_tok,
                                 const Tokenizer *tgt_tok, int max_len, AlignReader *ar, CorpusStats *stats,
                                 Dataset *d) {
    char *prefixed = NULL;
    size_t prefixed_cap = 0;
    PairIds ids = {0};
    NmtStatus st = NMT_OK;
    while (!st) {
        const char *src, *tgt;
        size_t src_len, tgt_len;
        int got = 0;
        st = parallel_reader_next(reader, &src, &src_len, &tgt, &tgt_len, &got);
        if (st || !got) break;
        stats->pairs_read++;
        int64_t line_no = parallel_reader_line_no(reader);
        if (ar->reader) {
            st = align_next_line(ar, src, src_len, tgt, tgt_len, line_no);
            if (st) break;
        }
        if (corpus_line_is_blank(src, src_len) || corpus_line_is_blank(tgt, tgt_len)) {
            stats->skipped_empty++;
            continue;
        }
        st = with_prefix(c->src_prefix, src, src_len, &prefixed, &prefixed_cap, &src, &src_len);
        if (st) break;
        PairFate fate;
        st = encode_one(ar, src_tok, tgt_tok, max_len, src, src_len, tgt, tgt_len, &ids, &fate);
        if (st) {
            nmt_error_prefix("%s:%lld", c->src_path, (long long)line_no);
            break;
        }
        if (fate == PAIR_KEEP && ar->reader) st = align_pair(ar, src, src_len, ids.n_src, tgt, tgt_len, ids.n_tgt);
        if (!st) st = take_pair(fate, ids.src, ids.n_src, ids.tgt, ids.n_tgt, line_no, stats, d);
    }
    pair_ids_free(&ids);
    nmt_free(prefixed);
    return st;
}

/* ---- encoding in parallel ---------------------------------------------- */

/* Pairs read and encoded at a time by encode_in_chunks. */
enum { ENCODE_CHUNK_PAIRS = 16384 };

/* A chunk of pairs as read (their texts one after the other, the sources
 * with their prefix) and what encoding made of them; the kept pairs' ids
 * are in the arena of the thread that encoded them. */
typedef struct {
    int n;
    char *text; /* (text_len) */
    size_t text_len, text_cap;
    size_t src_at[ENCODE_CHUNK_PAIRS], src_len[ENCODE_CHUNK_PAIRS];
    size_t tgt_at[ENCODE_CHUNK_PAIRS], tgt_len[ENCODE_CHUNK_PAIRS];
    int64_t line_no[ENCODE_CHUNK_PAIRS];
    signed char blank[ENCODE_CHUNK_PAIRS];
    signed char fate[ENCODE_CHUNK_PAIRS]; /* PairFate; -1: encoding failed (encoded again in order) */
    int owner[ENCODE_CHUNK_PAIRS];        /* the thread whose arena holds a kept pair's ids */
    int64_t ids_at[ENCODE_CHUNK_PAIRS];   /* its source ids there, its target ids right after them */
    int n_src[ENCODE_CHUNK_PAIRS], n_tgt[ENCODE_CHUNK_PAIRS];
} EncodeChunk;

typedef struct {
    int32_t *ids;
    int64_t len, cap;
} IdArena;

/* Appends the pair's text to the chunk. */
static NmtStatus chunk_add_text(EncodeChunk *ch, const char *text, size_t len, size_t *at) {
    *at = ch->text_len;
    if (!len) return NMT_OK; /* no prefix: nothing to copy (and no buffer yet, perhaps) */
    if (ch->text_len + len > ch->text_cap) {
        size_t cap = ch->text_cap ? ch->text_cap : 1 << 20;
        while (cap < ch->text_len + len) cap *= 2;
        char *t = nmt_realloc(ch->text, cap);
        if (!t) return nmt_fail_nomem("reading a training corpus");
        ch->text = t, ch->text_cap = cap;
    }
    memcpy(ch->text + ch->text_len, text, len);
    ch->text_len += len;
    return NMT_OK;
}

/* Reads up to ENCODE_CHUNK_PAIRS pairs (ch->n of them; 0 at the end). */
static NmtStatus chunk_read(EncodeChunk *ch, ParallelReader *reader, const char *prefix, CorpusStats *stats) {
    ch->n = 0;
    ch->text_len = 0;
    size_t plen = prefix ? strlen(prefix) : 0;
    NmtStatus st = NMT_OK;
    while (!st && ch->n < ENCODE_CHUNK_PAIRS) {
        const char *src, *tgt;
        size_t src_len, tgt_len, at;
        int got = 0;
        st = parallel_reader_next(reader, &src, &src_len, &tgt, &tgt_len, &got);
        if (st || !got) break;
        stats->pairs_read++;
        int i = ch->n++;
        ch->line_no[i] = parallel_reader_line_no(reader);
        ch->blank[i] = corpus_line_is_blank(src, src_len) || corpus_line_is_blank(tgt, tgt_len);
        if (ch->blank[i]) continue;
        ch->src_len[i] = plen + src_len;
        ch->tgt_len[i] = tgt_len;
        st = chunk_add_text(ch, prefix ? prefix : "", plen, &ch->src_at[i]);
        if (!st) st = chunk_add_text(ch, src, src_len, &at);
        if (!st) st = chunk_add_text(ch, tgt, tgt_len, &ch->tgt_at[i]);
        if (st) ch->n--; /* not taken */
    }
    return st;
}

/* The pairs of a chunk encoded on `threads` threads: each pair's fate, and
 * a kept pair's ids in its thread's arena. A pair whose encoding failed
 * (the message is that thread's) is marked -1 and encoded again in order. */
static void chunk_encode(EncodeChunk *ch, const Tokenizer *src_tok, const Tokenizer *tgt_tok, int max_len,
                         IdArena *arena, int threads) {
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        IdArena *a = &arena[t];
        PairIds ids = {0};
        AlignReader none = {0}; /* no alignments: encode_pair encodes the ids alone */
#pragma omp for schedule(dynamic, 64)
        for (int i = 0; i < ch->n; i++) {
            if (ch->blank[i]) continue;
            PairFate fate;
            const char *src = ch->text + ch->src_at[i], *tgt = ch->text + ch->tgt_at[i];
            if (encode_one(&none, src_tok, tgt_tok, max_len, src, ch->src_len[i], tgt, ch->tgt_len[i], &ids,
                           &fate)) {
                ch->fate[i] = -1;
                continue;
            }
            ch->fate[i] = (signed char)fate;
            if (fate != PAIR_KEEP) continue;
            int64_t need = a->len + ids.n_src + ids.n_tgt;
            if (need > a->cap) {
                int64_t cap = a->cap ? a->cap : 1 << 16;
                while (cap < need) cap *= 2;
                int32_t *grown = nmt_realloc(a->ids, (size_t)cap * sizeof *grown);
                if (!grown) {
                    ch->fate[i] = -1;
                    continue;
                }
                a->ids = grown, a->cap = cap;
            }
            ch->owner[i] = t;
            ch->ids_at[i] = a->len;
            ch->n_src[i] = ids.n_src;
            ch->n_tgt[i] = ids.n_tgt;
            memcpy(a->ids + a->len, ids.src, (size_t)ids.n_src * sizeof *ids.src);
            memcpy(a->ids + a->len + ids.n_src, ids.tgt, (size_t)ids.n_tgt * sizeof *ids.tgt);
            a->len = need;
        }
        pair_ids_free(&ids);
    }
}

/* The pairs of `reader` into d as encode_in_order puts them there (the
 * same dataset, statistics and first error), encoded ENCODE_CHUNK_PAIRS at
 * a time on `threads` threads (no alignments). */
static NmtStatus encode_in_chunks(ParallelReader *reader, const TrainCorpus *c, const Tokenizer *src_tok,
                                  const Tokenizer *tgt_tok, int max_len, int threads, CorpusStats *stats,
                                  Dataset *d) {
    EncodeChunk *ch = nmt_calloc(1, sizeof *ch);
    IdArena *arena = nmt_calloc((size_t)threads, sizeof *arena);
    NmtStatus st = ch && arena ? NMT_OK : nmt_fail_nomem("encoding a training corpus");
    PairIds again = {0};
    AlignReader none = {0};
    char *read_error = NULL; /* the reader's message, reported after the pairs read before it */
    NmtStatus read_st = NMT_OK;
    while (!st && !read_st) {
        read_st = chunk_read(ch, reader, c->src_prefix, stats);
        if (read_st) {
            read_error = nmt_strdup(nmt_error_message());
            if (!read_error) st = nmt_fail_nomem("reading a training corpus");
        }
        if (st || !ch->n) break;
        for (int t = 0; t < threads; t++) arena[t].len = 0;
        chunk_encode(ch, src_tok, tgt_tok, max_len, arena, threads);
        for (int i = 0; !st && i < ch->n; i++) {
            if (ch->blank[i]) {
                stats->skipped_empty++;
                continue;
            }
            if (ch->fate[i] >= 0) {
                const int32_t *ids = arena[ch->owner[i]].ids + ch->ids_at[i];
                st = take_pair((PairFate)ch->fate[i], ids, ch->n_src[i], ids + ch->n_src[i], ch->n_tgt[i],
                               ch->line_no[i], stats, d);
                continue;
            }
            PairFate fate; /* failed on a worker: again here, for this thread's message */
            const char *src = ch->text + ch->src_at[i], *tgt = ch->text + ch->tgt_at[i];
            st = encode_one(&none, src_tok, tgt_tok, max_len, src, ch->src_len[i], tgt, ch->tgt_len[i], &again,
                            &fate);
            if (st) nmt_error_prefix("%s:%lld", c->src_path, (long long)ch->line_no[i]);
            else st = take_pair(fate, again.src, again.n_src, again.tgt, again.n_tgt, ch->line_no[i], stats, d);
        }
    }
    if (!st && read_st) st = nmt_fail(read_st, "%s", read_error);
    nmt_free(read_error);
    pair_ids_free(&again);
    for (int t = 0; arena && t < threads; t++) nmt_free(arena[t].ids);
    nmt_free(arena);
    if (ch) nmt_free(ch->text);
    nmt_free(ch);
    return st;
}

/* Encodes a parallel corpus into a new dataset. max_len <= 0: no length
 * filter. Empty pairs and over-long pairs are skipped and counted. A pair
 * whose word count already exceeds max_len (tokenizer_min_ids) is counted
 * as too long without being encoded: encoding a line of millions of words
 * takes seconds and gigabytes only to drop it. align_path (NULL: none):
 * the pairs' word alignments, whose token links of the kept pairs go to
 * *align_out. c->src_prefix (data.extra_tag, NULL: none) goes before every
 * source line but a blank one (an empty pair stays empty). Without
 * alignments the pairs are encoded on `threads` threads (0: OpenMP's
 * default), a chunk at a time; the dataset is the same on any count. */
static NmtStatus encode_corpus(const TrainCorpus *c, const Tokenizer *src_tok, const Tokenizer *tgt_tok,
                               int max_len, const char *align_path, int threads, CorpusStats *stats, Dataset **out,
                               GuidedAlignments **align_out) {
    const char *src_path = c->src_path, *tgt_path = c->tgt_path;
    NMT_ASSERT(!(align_path && c->src_prefix)); /* the alignment's words are the lines' own */
    *out = NULL;
    ParallelReader *reader = NULL;
    Dataset *d = NULL;
    AlignReader ar = {align_path, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, NULL};
    NmtStatus st = parallel_reader_open(src_path, tgt_path, &reader);
    if (!st) st = dataset_create(&d);
    if (!st && align_path) st = line_reader_open(align_path, &ar.reader);
    if (!st && align_path) st = guided_alignments_create(&ar.out);
    if (!st && threads <= 0) threads = omp_get_max_threads();
    if (!st && align_path) st = encode_in_order(reader, c, src_tok, tgt_tok, max_len, &ar, stats, d);
    else if (!st) st = encode_in_chunks(reader, c, src_tok, tgt_tok, max_len, threads, stats, d);
    if (!st && ar.reader) { /* no line past the corpus's last pair */
        const char *line;
        size_t len;
        int got = 0;
        st = line_reader_next(ar.reader, &line, &len, &got);
        if (!st && got)
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: a line past the last pair of the training corpus (%lld pairs; "
                          "data.train_align needs one line per pair)", align_path,
                          (long long)line_reader_line_no(ar.reader), (long long)stats->pairs_read);
    }
    nmt_free(ar.pairs);
    nmt_free(ar.links);
    nmt_free(ar.src_spans);
    nmt_free(ar.tgt_spans);
    line_reader_close(ar.reader);
    parallel_reader_close(reader);
    if (!st && align_out) {
        *align_out = ar.out;
        ar.out = NULL;
    }
    guided_alignments_free(ar.out);
    if (!st && d->n_pairs == 0)
        st = nmt_fail(NMT_ERR_FORMAT, "%s, %s: no usable sentence pairs (%lld read)", src_path,
                      tgt_path, (long long)stats->pairs_read);
    if (st) {
        dataset_free(d);
        return st;
    }
    *out = d;
    return NMT_OK;
}

/* Every id of d must be below the vocabulary sizes (guards a cache that
 * does not belong to its tokenizers). */
static NmtStatus check_ids(const Dataset *d, int src_vocab, int tgt_vocab, const char *path) {
    for (int64_t i = 0; i < d->src_offset[d->n_pairs]; i++)
        if (d->src_ids[i] < 0 || d->src_ids[i] >= src_vocab)
            return nmt_fail(NMT_ERR_FORMAT, "%s: source id %d outside the vocabulary (%d)", path,
                            d->src_ids[i], src_vocab);
    for (int64_t i = 0; i < d->tgt_offset[d->n_pairs]; i++)
        if (d->tgt_ids[i] < 0 || d->tgt_ids[i] >= tgt_vocab)
            return nmt_fail(NMT_ERR_FORMAT, "%s: target id %d outside the vocabulary (%d)", path,
                            d->tgt_ids[i], tgt_vocab);
    return NMT_OK;
}

/* A tag of data.extra_tag must come out of the source tokenizer as one
 * piece (after a lone word-start piece of SentencePiece), neither unknown
 * nor split: else NMT_ERR_CONFIG naming the key, the pieces it gives and
 * where the tokenizer came from. */
static NmtStatus check_one_tag_piece(const Config *cfg, const Tokenizer *src_tok, const char *tag) {
    int32_t *ids = NULL;
    int n = 0, cap = 0;
    NmtStatus st = tokenizer_encode_buf(src_tok, tag, strlen(tag), &ids, &n, &cap);
    if (st) {
        nmt_error_prefix("data.extra_tag");
        return st;
    }
    int first = 0;
    while (first < n - 1 && !strcmp(tokenizer_piece(src_tok, ids[first]), "\xe2\x96\x81")) first++;
    if (n - first == 1 && ids[first] != NMT_UNK_ID) {
        nmt_free(ids);
        return NMT_OK;
    }
    char pieces[512];
    const char **piece = nmt_malloc((size_t)(n > 0 ? n : 1) * sizeof *piece);
    if (!piece) {
        nmt_free(ids);
        return nmt_fail_nomem("data.extra_tag");
    }
    for (int i = 0; i < n; i++) piece[i] = tokenizer_piece(src_tok, ids[i]);
    join_strings(piece, n, " ", " ", pieces, sizeof pieces);
    nmt_free(piece);
    nmt_free(ids);
    const DataConfig *d = &cfg->data;
    nmt_fail(NMT_ERR_CONFIG, "data.extra_tag: \"%s\" is not one piece of the source tokenizer (it encodes as: %s)",
             tag, pieces);
    if (init_from_path(cfg))
        nmt_error_suffix("; the tokenizers are those of train.init_from (%s), which was not trained with this tag",
                         init_from_path(cfg));
    else if (given_tokenizers(cfg))
        nmt_error_suffix("; data.spm_src_model (%s) needs it as a piece: spm_train --user_defined_symbols=%s",
                         d->spm_src_model, tag);
    else if (d->tokenizer == CFG_TOKENIZER_WORD)
        nmt_error_suffix("; the source word vocabulary has no room for it (data.word_vocab_size %d, "
                         "data.word_min_freq %d)", d->word_vocab_size, d->word_min_freq);
    return NMT_ERR_CONFIG;
}

/* check_one_tag_piece for every tag of data.extra_tag. */
static NmtStatus check_tag_piece(const Config *cfg, const Tokenizer *src_tok) {
    char *tags = NULL;
    NmtStatus st = extra_corpora_tags(cfg, &tags);
    for (char *tag = tags, *end; !st && tag && *tag; tag = end + (*end != 0)) {
        end = tag + strcspn(tag, ",");
        char keep = *end;
        *end = '\0';
        st = check_one_tag_piece(cfg, src_tok, tag);
        *end = keep;
    }
    nmt_free(tags);
    return st;
}

/* ---- the cache --------------------------------------------------------- */

/* Loads an up-to-date cache; NMT_ERR_FORMAT with a "stale" message when it
 * must be rebuilt (and logs why), other errors for a corrupt cache. */
static NmtStatus load_cache(const Config *cfg, const char *manifest, PreparedData *out) {
    char *path = cache_path(cfg, "manifest.txt");
    if (!path) return nmt_fail_nomem("reading the cache");
    char *found = NULL;
    size_t n;
    NmtStatus st = file_read_all(path, &found, &n);
    nmt_free(path);
    if (st) {
        nmt_log_info("prepare: no cache in %s yet", cfg->data.cache_dir);
        return NMT_ERR_FORMAT;
    }
    if (strcmp(found, manifest) != 0) {
        char what[256];
        first_changed_setting(manifest, found, what, sizeof what);
        nmt_log_info("prepare: the cache in %s is stale (%s changed); rebuilding",
                     cfg->data.cache_dir, what);
        nmt_free(found);
        return NMT_ERR_FORMAT;
    }
    nmt_free(found);
    const char *names[] = {"src.tok", "tgt.tok", "train.bin", "valid.bin", "train.aln"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(names) && !st; i++) {
        if (i == 3 && !(cfg->data.valid_src && cfg->data.valid_src[0])) continue;
        if (i == 4 && !train_align(cfg)) continue;
        char *p = cache_path(cfg, names[i]);
        if (!p) return nmt_fail_nomem("reading the cache");
        switch (i) {
        case 0: st = tokenizer_load(p, &out->src_tok); break;
        case 1: st = tokenizer_load(p, &out->tgt_tok); break;
        case 2: st = dataset_load(p, &out->train); break;
        case 3: st = dataset_load(p, &out->valid); break;
        case 4: st = guided_alignments_load(p, &out->train_align); break;
        }
        if (!st && i == 0) st = check_tag_piece(cfg, out->src_tok);
        if (!st && i == 4) st = guided_alignments_check(out->train_align, out->train, p);
        if (!st && i == 2)
            st = check_ids(out->train, tokenizer_vocab_size(out->src_tok),
                           tokenizer_vocab_size(out->tgt_tok), p);
        if (!st && i == 3)
            st = check_ids(out->valid, tokenizer_vocab_size(out->src_tok), tokenizer_vocab_size(out->tgt_tok), p);
        nmt_free(p);
    }
    for (int k = 0; !st && k < n_extra(cfg); k++) {
        char name[32];
        extra_cache_name(k, name, sizeof name);
        char *p = cache_path(cfg, name);
        if (!p) return nmt_fail_nomem("reading the cache");
        st = dataset_load(p, &out->extra[k]);
        if (!st) out->n_extra = k + 1;
        if (!st)
            st = check_ids(out->extra[k], tokenizer_vocab_size(out->src_tok), tokenizer_vocab_size(out->tgt_tok), p);
        nmt_free(p);
    }
    if (!st) {
        char *p = cache_path(cfg, "summary.txt");
        st = p ? file_read_all(p, &out->summary, &n) : nmt_fail_nomem("reading the cache");
        nmt_free(p);
    }
    if (!st) out->from_cache = 1;
    return st;
}

/* Writes one cache file with `save`. */
#define SAVE_CACHE_FILE(st, cfg, name, save_call_with_p)        \
    do {                                                        \
        if (st) break;                                          \
        char *p = cache_path(cfg, name);                        \
        st = p ? save_call_with_p : nmt_fail_nomem("saving the cache"); \
        nmt_free(p);                                            \
    } while (0)

static NmtStatus build_cache(const Config *cfg, const char *manifest, PreparedData *out) {
    const DataConfig *d = &cfg->data;
    int has_valid = d->valid_src && d->valid_src[0];
    TrainCorpora tc;
    NmtStatus st = train_corpora_get(cfg, &tc);
    if (st) return st;
    const TrainCorpus *corpora = tc.c;
    int n_corpora = tc.n;
    /* an interrupted rebuild must not leave an old manifest beside new files */
    char *manifest_path = cache_path(cfg, "manifest.txt");
    if (!manifest_path) {
        train_corpora_free(&tc);
        return nmt_fail_nomem("preparing the cache");
    }
    if (unlink(manifest_path) != 0 && errno != ENOENT)
        st = nmt_fail(NMT_ERR_IO, "%s: cannot remove: %s", manifest_path, strerror(errno));

    int joint = d->tokenizer == CFG_TOKENIZER_SPM && d->spm_joint;
    const char *init_from = init_from_path(cfg);
    if (!st && init_from) {
        nmt_log_info("prepare: the tokenizers of train.init_from (%s)", init_from);
        st = init_from_tokenizers(init_from, &out->src_tok, &out->tgt_tok);
    } else if (!st && given_tokenizers(cfg)) {
        nmt_log_info("prepare: the given SentencePiece models (data.spm_src_model %s, data.spm_tgt_model %s)",
                     d->spm_src_model, d->spm_tgt_model);
        st = given_tokenizers_load(cfg, &out->src_tok, &out->tgt_tok);
    } else if (!st) {
        char how[160] = ""; /* SentencePiece's sample and threads */
        if (d->tokenizer == CFG_TOKENIZER_SPM) {
            char sample[64] = "every sentence";
            if (d->spm_max_sentences > 0)
                snprintf(sample, sizeof sample, "a sample of at most %d sentences%s", d->spm_max_sentences,
                         joint ? "" : " a side");
            snprintf(how, sizeof how, " (%s, data.spm_max_sentences; %d thread%s, data.spm_threads)", sample,
                     d->spm_threads, d->spm_threads == 1 ? "" : "s");
        }
        char files[4200];
        corpus_files(corpora, n_corpora, " and ", files, sizeof files);
        nmt_log_info("prepare: training %s tokenizer%s on %s%s", tokenizer_kind_names[d->tokenizer],
                     joint ? " (joint)" : "s", files, how);
        st = train_tokenizer(cfg, joint ? -1 : 0, &out->src_tok);
    }
    if (!st && !init_from && !given_tokenizers(cfg)) {
        if (joint) {
            uint8_t *bytes;
            size_t n;
            st = tokenizer_serialize(out->src_tok, &bytes, &n);
            if (!st) st = tokenizer_deserialize(bytes, n, &out->tgt_tok);
            if (!st) nmt_free(bytes);
        } else {
            st = train_tokenizer(cfg, 1, &out->tgt_tok);
        }
    }
    if (!st) st = check_tag_piece(cfg, out->src_tok);
    if (!st) {
        corpus_stats_init(&out->train_stats, "train", d->max_len);
        st = encode_corpus(&corpora[0], out->src_tok, out->tgt_tok, d->max_len, train_align(cfg), cfg->train.threads,
                           &out->train_stats, &out->train, &out->train_align);
    }
    for (int k = 0; !st && k + 1 < n_corpora; k++) {
        if (k == 0)
            snprintf(out->extra_name[k], sizeof out->extra_name[k], "extra");
        else
            snprintf(out->extra_name[k], sizeof out->extra_name[k], "extra %d", k + 1);
        corpus_stats_init(&out->extra_stats[k], out->extra_name[k], d->max_len);
        st = encode_corpus(&corpora[1 + k], out->src_tok, out->tgt_tok, d->max_len, NULL, cfg->train.threads,
                           &out->extra_stats[k], &out->extra[k], NULL);
        if (!st) out->n_extra = k + 1;
    }
    if (!st && has_valid) {
        TrainCorpus valid = {d->valid_src, d->valid_tgt, NULL};
        corpus_stats_init(&out->valid_stats, "valid", 0);
        st = encode_corpus(&valid, out->src_tok, out->tgt_tok, 0, NULL, cfg->train.threads, &out->valid_stats,
                           &out->valid, NULL);
    }
    SAVE_CACHE_FILE(st, cfg, "src.tok", tokenizer_save(out->src_tok, p));
    SAVE_CACHE_FILE(st, cfg, "tgt.tok", tokenizer_save(out->tgt_tok, p));
    SAVE_CACHE_FILE(st, cfg, "train.bin", dataset_save(out->train, p));
    if (has_valid) SAVE_CACHE_FILE(st, cfg, "valid.bin", dataset_save(out->valid, p));
    if (out->train_align) SAVE_CACHE_FILE(st, cfg, "train.aln", guided_alignments_save(out->train_align, p));
    for (int k = 0; k < out->n_extra; k++) {
        char name[32];
        extra_cache_name(k, name, sizeof name);
        SAVE_CACHE_FILE(st, cfg, name, dataset_save(out->extra[k], p));
    }
    if (!st) { /* one line per corpus */
        char line[512];
        corpus_stats_summary(&out->train_stats, line, sizeof line);
        out->summary = nmt_asprintf("%s\n", line);
        for (int k = 0; out->summary && k <= out->n_extra; k++) {
            if (k == out->n_extra && !has_valid) break;
            corpus_stats_summary(k < out->n_extra ? &out->extra_stats[k] : &out->valid_stats, line, sizeof line);
            char *next = nmt_asprintf("%s%s\n", out->summary, line);
            nmt_free(out->summary);
            out->summary = next;
        }
        if (!out->summary) st = nmt_fail_nomem("preparing the data");
    }
    SAVE_CACHE_FILE(st, cfg, "summary.txt", file_write_atomic(p, out->summary, strlen(out->summary)));
    /* the manifest last: it is what makes the files above a cache */
    if (!st) st = file_write_atomic(manifest_path, manifest, strlen(manifest));
    nmt_free(manifest_path);
    train_corpora_free(&tc);
    return st;
}

void prepared_data_free(PreparedData *p) {
    if (!p) return;
    tokenizer_free(p->src_tok);
    tokenizer_free(p->tgt_tok);
    dataset_free(p->train);
    dataset_free(p->valid);
    for (int k = 0; k < p->n_extra; k++) dataset_free(p->extra[k]);
    guided_alignments_free(p->train_align);
    nmt_free(p->summary);
    memset(p, 0, sizeof *p);
}

/* Takes the lock of the cache folder dir, made first when missing, for the
 * whole of reading, building and writing the cache: two processes that
 * build one cache_dir at once would otherwise mix their files (one
 * config's manifest beside the other's tokenizers). While another process
 * holds it, says so and waits. A file system without locks is warned
 * about once and the cache built unlocked. *fd: for file_unlock_dir. */
static NmtStatus lock_cache(const char *dir, int *fd) {
    static int warned;
    *fd = -1;
    NmtStatus st = file_make_dirs(dir);
    FileLockState state = FILE_LOCK_HELD;
    int err = 0;
    if (!st) st = file_lock_dir(dir, fd, &state, &err);
    if (st) return st;
    if (state == FILE_LOCK_BUSY) {
        nmt_log_info("prepare: waiting for another nmt process building the cache %s", dir);
        st = file_lock_dir_wait(dir, *fd);
    } else if (state == FILE_LOCK_UNSUPPORTED && !warned) {
        warned = 1;
        nmt_log_warn("data.cache_dir: %s: cannot lock (%s), so nmt processes that build this cache at "
                     "the same time could mix their files", dir, strerror(err));
    } else if (state == FILE_LOCK_NO_DIR) {
        st = nmt_fail(NMT_ERR_IO, "data.cache_dir: %s: removed while being locked", dir);
    }
    if (st) {
        file_unlock_dir(*fd);
        *fd = -1;
    }
    return st;
}

/* prepare_data with the cache folder locked: reuse or (re)build. */
static NmtStatus prepare_locked(const Config *cfg, const char *manifest, int force, PreparedData *out) {
    NmtStatus st = NMT_ERR_FORMAT;
    if (!force) {
        st = load_cache(cfg, manifest, out);
        if (st && st != NMT_ERR_FORMAT && st != NMT_ERR_IO) return st;
        if (st) {
            if (out->src_tok) nmt_log_warn("prepare: cache unreadable (%s); rebuilding", nmt_error_message());
            prepared_data_free(out);
        }
    }
    if (st) st = build_cache(cfg, manifest, out);
    return st;
}

NmtStatus prepare_data(const Config *cfg, int force, PreparedData *out) {
    memset(out, 0, sizeof *out);
    const DataConfig *d = &cfg->data;
    if (!d->train_src || !d->train_src[0])
        return nmt_fail(NMT_ERR_CONFIG, "data.train_src: no training corpus given");
    char *manifest = prepare_manifest(cfg);
    if (!manifest) return nmt_fail_nomem("preparing the data");
    int lock = -1;
    NmtStatus st = lock_cache(d->cache_dir, &lock);
    if (!st) st = prepare_locked(cfg, manifest, force, out);
    file_unlock_dir(lock);
    nmt_free(manifest);
    if (st) {
        prepared_data_free(out);
        return st;
    }
    for (char *line = out->summary; *line;) {
        size_t len = strcspn(line, "\n");
        nmt_log_info("prepare: %.*s", (int)len, line);
        line += len + (line[len] == '\n');
    }
    nmt_log_info("prepare: vocabularies: source %d, target %d; cache %s %s",
                 tokenizer_vocab_size(out->src_tok), tokenizer_vocab_size(out->tgt_tok),
                 d->cache_dir, out->from_cache ? "is up to date" : "written");
    return NMT_OK;
}
