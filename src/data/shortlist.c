/* shortlist.c: building, storing and applying the output-vocabulary
 * shortlist (shortlist.h). Co-occurrences are counted by sorting one
 * 64-bit key (s * V_t + t) per distinct pair of tokens in each sentence
 * pair: no V_s x V_t matrix. */
#include "data/shortlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

struct Shortlist {
    int V_s, V_t;
    int n_frequent;        /* target ids by frequency, most frequent first */
    int32_t *frequent;     /* (n_frequent) */
    int64_t *freq_count;   /* (n_frequent) pairs containing each */
    int64_t *lex_offset;   /* (V_s + 1) partners of source id s: lex_*[lex_offset[s] .. lex_offset[s+1]) */
    int32_t *lex_ids;      /* target ids, best first */
    float *lex_score;      /* their Dice coefficients */
};

void shortlist_free(Shortlist *sl) {
    if (!sl) return;
    nmt_free(sl->frequent), nmt_free(sl->freq_count), nmt_free(sl->lex_offset);
    nmt_free(sl->lex_ids), nmt_free(sl->lex_score), nmt_free(sl);
}

int shortlist_n_frequent(const Shortlist *sl) { return sl->n_frequent; }

int shortlist_max_per_source(const Shortlist *sl) {
    int64_t most = 0;
    for (int s = 0; s < sl->V_s; s++)
        if (sl->lex_offset[s + 1] - sl->lex_offset[s] > most) most = sl->lex_offset[s + 1] - sl->lex_offset[s];
    return (int)most;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int32_t id;
    double score;
} Ranked;

static int cmp_ranked(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id - y->id;
}

static Shortlist *shortlist_alloc(int V_s, int V_t, int n_frequent, int64_t n_lex) {
    Shortlist *sl = nmt_calloc(1, sizeof *sl);
    if (!sl) return NULL;
    sl->V_s = V_s, sl->V_t = V_t, sl->n_frequent = n_frequent;
    sl->frequent = nmt_malloc((size_t)(n_frequent ? n_frequent : 1) * sizeof(int32_t));
    sl->freq_count = nmt_malloc((size_t)(n_frequent ? n_frequent : 1) * sizeof(int64_t));
    sl->lex_offset = nmt_calloc((size_t)V_s + 1, sizeof(int64_t));
    sl->lex_ids = nmt_malloc((size_t)(n_lex ? n_lex : 1) * sizeof(int32_t));
    sl->lex_score = nmt_malloc((size_t)(n_lex ? n_lex : 1) * sizeof(float));
    if (!sl->frequent || !sl->freq_count || !sl->lex_offset || !sl->lex_ids || !sl->lex_score) {
        shortlist_free(sl);
        return NULL;
    }
    return sl;
}

/* Distinct ids of ids[0..n) into out (sorted); returns their count. */
static int distinct(const int32_t *ids, int n, int32_t *out, uint8_t *seen) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!seen[ids[i]]) seen[ids[i]] = 1, out[k++] = ids[i];
    for (int i = 0; i < k; i++) seen[out[i]] = 0;
    return k;
}

NmtStatus shortlist_build(const Dataset *train, int V_s, int V_t, int keep_per_source, Shortlist **out) {
    *out = NULL;
    int64_t *c_src = nmt_calloc((size_t)V_s, sizeof(int64_t)), *c_tgt = nmt_calloc((size_t)V_t, sizeof(int64_t));
    uint8_t *seen = nmt_calloc((size_t)(V_s > V_t ? V_s : V_t), 1);
    int longest = 1;
    int64_t n_keys = 0;
    for (int64_t i = 0; i < train->n_pairs; i++) {
        int ls = dataset_src_len(train, i), lt = dataset_tgt_len(train, i);
        if (ls > longest) longest = ls;
        if (lt > longest) longest = lt;
        n_keys += (int64_t)ls * lt;
    }
    int32_t *ds = nmt_malloc((size_t)longest * 4), *dt = nmt_malloc((size_t)longest * 4);
    uint64_t *keys = nmt_malloc((size_t)(n_keys ? n_keys : 1) * sizeof(uint64_t));
    Ranked *rank = nmt_malloc((size_t)(V_s > V_t ? V_s : V_t) * sizeof(Ranked));
    if (!c_src || !c_tgt || !seen || !ds || !dt || !keys || !rank) {
        nmt_free(c_src), nmt_free(c_tgt), nmt_free(seen), nmt_free(ds), nmt_free(dt), nmt_free(keys), nmt_free(rank);
        return nmt_fail_nomem("building the shortlist");
    }
    NmtStatus st = NMT_OK;
    int64_t k = 0;
    for (int64_t i = 0; i < train->n_pairs && !st; i++) {
        int ns = distinct(dataset_src(train, i), dataset_src_len(train, i), ds, seen);
        int nt = distinct(dataset_tgt(train, i), dataset_tgt_len(train, i), dt, seen);
        for (int a = 0; a < ns; a++) {
            if (ds[a] < 0 || ds[a] >= V_s) st = nmt_fail(NMT_ERR_FORMAT, "shortlist: source id %d out of range", ds[a]);
            else c_src[ds[a]]++;
        }
        for (int b = 0; b < nt; b++) {
            if (dt[b] < 0 || dt[b] >= V_t) st = nmt_fail(NMT_ERR_FORMAT, "shortlist: target id %d out of range", dt[b]);
            else c_tgt[dt[b]]++;
        }
        for (int a = 0; a < ns && !st; a++)
            for (int b = 0; b < nt; b++) keys[k++] = (uint64_t)ds[a] * (uint64_t)V_t + (uint64_t)dt[b];
    }
    Shortlist *sl = NULL;
    if (!st) {
        qsort(keys, (size_t)k, sizeof *keys, cmp_u64);
        /* count the kept partners per source first, then fill */
        int n_freq = 0;
        for (int t = 0; t < V_t; t++)
            if (c_tgt[t] > 0 && t != NMT_PAD_ID && t != NMT_BOS_ID) rank[n_freq++] = (Ranked){t, (double)c_tgt[t]};
        qsort(rank, (size_t)n_freq, sizeof *rank, cmp_ranked);
        int64_t n_lex_max = (int64_t)V_s * keep_per_source;
        if (n_lex_max > k) n_lex_max = k;
        sl = shortlist_alloc(V_s, V_t, n_freq, n_lex_max);
        if (!sl) st = nmt_fail_nomem("building the shortlist");
        for (int i = 0; !st && i < n_freq; i++) sl->frequent[i] = rank[i].id, sl->freq_count[i] = (int64_t)rank[i].score;
        int64_t at = 0, n_lex = 0;
        for (int s = 0; !st && s < V_s; s++) {
            sl->lex_offset[s] = n_lex;
            int n = 0;
            while (at < k && (int64_t)(keys[at] / (uint64_t)V_t) == s) {
                uint64_t key = keys[at];
                int64_t c = 0;
                while (at < k && keys[at] == key) at++, c++;
                int t = (int)(key % (uint64_t)V_t);
                if (c >= 2 && t != NMT_PAD_ID && t != NMT_BOS_ID)
                    rank[n++] = (Ranked){t, 2.0 * (double)c / (double)(c_src[s] + c_tgt[t])};
            }
            qsort(rank, (size_t)n, sizeof *rank, cmp_ranked);
            for (int i = 0; i < n && i < keep_per_source; i++) {
                sl->lex_ids[n_lex] = rank[i].id;
                sl->lex_score[n_lex++] = (float)rank[i].score;
            }
        }
        if (!st) sl->lex_offset[V_s] = n_lex;
    }
    nmt_free(c_src), nmt_free(c_tgt), nmt_free(seen), nmt_free(ds), nmt_free(dt), nmt_free(keys), nmt_free(rank);
    if (st) {
        shortlist_free(sl);
        return st;
    }
    *out = sl;
    return NMT_OK;
}

NmtStatus shortlist_save(const Shortlist *sl, const Tokenizer *src_tok, const Tokenizer *tgt_tok, const char *path) {
    size_t cap = 1 << 16, n = 0;
    char *buf = nmt_malloc(cap);
    if (!buf) return nmt_fail_nomem("writing the shortlist");
    NmtStatus st = NMT_OK;
#define EMIT(...)                                                              \
    do {                                                                       \
        int w_ = snprintf(buf + n, cap - n, __VA_ARGS__);                      \
        if (w_ >= 0 && (size_t)w_ >= cap - n) {                                \
            char *grown_ = nmt_realloc(buf, cap * 2 + (size_t)w_);             \
            if (!grown_) { st = nmt_fail_nomem("writing the shortlist"); break; } \
            buf = grown_, cap = cap * 2 + (size_t)w_;                          \
            w_ = snprintf(buf + n, cap - n, __VA_ARGS__);                      \
        }                                                                      \
        n += (size_t)w_;                                                       \
    } while (0)
    /* version 2: the header counts the lines that follow, so that a file
     * cut off at a line boundary is caught too */
    EMIT("nmt-shortlist 2 F=%d L=%lld\n", sl->n_frequent, (long long)sl->lex_offset[sl->V_s]);
    for (int i = 0; !st && i < sl->n_frequent; i++)
        EMIT("F\t%s\t%lld\n", tokenizer_piece(tgt_tok, sl->frequent[i]), (long long)sl->freq_count[i]);
    for (int s = 0; !st && s < sl->V_s; s++)
        for (int64_t j = sl->lex_offset[s]; !st && j < sl->lex_offset[s + 1]; j++)
            EMIT("L\t%s\t%s\t%.6g\n", tokenizer_piece(src_tok, s), tokenizer_piece(tgt_tok, sl->lex_ids[j]),
                 (double)sl->lex_score[j]);
#undef EMIT
    if (!st) st = file_write_atomic(path, buf, n);
    nmt_free(buf);
    return st;
}

/* The id of `piece` in tok; -1 when the vocabulary lacks it. */
static int piece_id(const Tokenizer *tok, const char *piece) {
    int id = tokenizer_piece_to_id(tok, piece);
    if (id == NMT_UNK_ID && strcmp(piece, tokenizer_piece(tok, NMT_UNK_ID)) != 0) return -1;
    return id;
}

/* Line 1 of a shortlist file: version 1 ("nmt-shortlist 1", no counts) or
 * 2 ("nmt-shortlist 2 F=<lines> L=<lines>"); -1 counts for version 1.
 * Fails naming the file for anything else. */
static NmtStatus parse_header(const char *path, const char *line, int64_t *want_f, int64_t *want_l) {
    *want_f = *want_l = -1;
    if (!strcmp(line, "nmt-shortlist 1")) return NMT_OK;
    long long f = -1, l = -1;
    int end = -1, version = 0;
    if (sscanf(line, "nmt-shortlist 2 F=%lld L=%lld%n", &f, &l, &end) == 2 && end >= 0 && line[end] == '\0' &&
        f >= 0 && l >= 0) {
        *want_f = f, *want_l = l;
        return NMT_OK;
    }
    if (sscanf(line, "nmt-shortlist %d", &version) == 1 && version != 1 && version != 2)
        return nmt_fail(NMT_ERR_FORMAT, "%s:1: shortlist format version %d; this nmt reads versions 1 and 2 (make "
                        "the file again with this `nmt shortlist`)", path, version);
    return nmt_fail(NMT_ERR_FORMAT, "%s:1: not a shortlist file (want the header 'nmt-shortlist 2 F=<count> "
                    "L=<count>' or 'nmt-shortlist 1', made by `nmt shortlist`)", path);
}

/* Parses the fields of one tab-separated line in place. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max + 1; p++)
        if (*p == '\t') *p = '\0', fields[n++] = p + 1;
    return n;
}

NmtStatus shortlist_load(const char *path, const Tokenizer *src_tok, const Tokenizer *tgt_tok, Shortlist **out) {
    *out = NULL;
    char *text;
    size_t size;
    NmtStatus st = file_read_all(path, &text, &size);
    if (st) return st;
    int V_s = tokenizer_vocab_size(src_tok), V_t = tokenizer_vocab_size(tgt_tok);
    int64_t n_f = 0, n_l = 0;
    for (size_t i = 0; i < size; i++)
        if (text[i] == '\n' && i + 1 < size) n_f += text[i + 1] == 'F', n_l += text[i + 1] == 'L';
    Shortlist *sl = shortlist_alloc(V_s, V_t, (int)n_f, n_l);
    int64_t *lex_src = nmt_malloc((size_t)(n_l ? n_l : 1) * sizeof(int64_t));
    if (!sl || !lex_src) {
        nmt_free(text), shortlist_free(sl), nmt_free(lex_src);
        return nmt_fail_nomem("loading the shortlist");
    }
    sl->n_frequent = 0;
    int64_t line_no = 0, k = 0, want_f = -1, want_l = -1;
    char *p = text, *end = text + size;
    while (!st && p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        line_no++;
        if (!nl) { /* every line that `nmt shortlist` writes ends with one */
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: the last line has no newline: the file is cut off (make it "
                          "again with `nmt shortlist`)", path, (long long)line_no);
            break;
        }
        *nl = '\0';
        char *f[5];
        int nf = split_tabs(p, f, 4);
        char *tail = NULL;
        if (line_no == 1) {
            st = parse_header(path, p, &want_f, &want_l);
        } else if (nf == 3 && !strcmp(f[0], "F")) {
            int t = piece_id(tgt_tok, f[1]);
            errno = 0;
            long long c = strtoll(f[2], &tail, 10);
            if (t < 0) st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: target piece '%s' is not in the model's vocabulary "
                                     "(a shortlist of another model?)", path, (long long)line_no, f[1]);
            else if (errno || *tail || tail == f[2] || c < 0)
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: bad count '%s'", path, (long long)line_no, f[2]);
            else sl->frequent[sl->n_frequent] = t, sl->freq_count[sl->n_frequent++] = c;
        } else if (nf == 4 && !strcmp(f[0], "L")) {
            int s = piece_id(src_tok, f[1]), t = piece_id(tgt_tok, f[2]);
            float score = strtof(f[3], &tail);
            if (s < 0 || t < 0)
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: %s piece '%s' is not in the model's vocabulary "
                              "(a shortlist of another model?)", path, (long long)line_no,
                              s < 0 ? "source" : "target", s < 0 ? f[1] : f[2]);
            else if (*tail || tail == f[3] || !(score >= 0))
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: bad score '%s'", path, (long long)line_no, f[3]);
            else if (k > 0 && s < lex_src[k - 1])
                st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: source piece '%s' out of order (entries of one source "
                              "piece must be together, sources in vocabulary order)", path, (long long)line_no, f[1]);
            else lex_src[k] = s, sl->lex_ids[k] = t, sl->lex_score[k++] = score;
        } else {
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: want 'F<TAB>piece<TAB>count' or "
                          "'L<TAB>source<TAB>target<TAB>score'", path, (long long)line_no);
        }
        p = nl + 1;
    }
    if (!st && line_no == 0) st = nmt_fail(NMT_ERR_FORMAT, "%s: empty file, not a shortlist", path);
    if (!st && want_f >= 0 && (sl->n_frequent != want_f || k != want_l))
        st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: the file ends after %d F and %lld L lines, its header (line 1) "
                      "promises %lld and %lld: it is cut off or was edited (make it again with `nmt shortlist`)",
                      path, (long long)line_no, sl->n_frequent, (long long)k, (long long)want_f, (long long)want_l);
    if (!st) { /* offsets from the (sorted) sources */
        int64_t j = 0;
        for (int s = 0; s <= V_s; s++) {
            while (j < k && lex_src[j] < s) j++;
            sl->lex_offset[s] = j;
        }
    }
    nmt_free(text), nmt_free(lex_src);
    if (st) {
        shortlist_free(sl);
        return st;
    }
    *out = sl;
    return NMT_OK;
}

int shortlist_select(const Shortlist *sl, int n_frequent, int per_source, const int32_t *src, int64_t n,
                     int32_t *out) {
    /* mark in out's tail would alias: a bitmap on the stack for small vocabularies, else the heap */
    uint8_t small[8192], *mark = sl->V_t <= (int)sizeof small ? small : nmt_calloc((size_t)sl->V_t, 1);
    if (mark == small) memset(mark, 0, (size_t)sl->V_t);
    if (!mark) { /* no memory: the whole vocabulary is always a correct shortlist */
        int k = 0;
        for (int t = 0; t < sl->V_t; t++)
            if (t != NMT_PAD_ID && t != NMT_BOS_ID) out[k++] = t;
        return k;
    }
    mark[NMT_EOS_ID] = mark[NMT_UNK_ID] = 1;
    for (int i = 0; i < n_frequent && i < sl->n_frequent; i++) mark[sl->frequent[i]] = 1;
    for (int64_t i = 0; i < n; i++) {
        int s = src[i];
        if (s < 0 || s >= sl->V_s) continue;
        int64_t from = sl->lex_offset[s], to = sl->lex_offset[s + 1];
        if (to - from > per_source) to = from + per_source;
        for (int64_t j = from; j < to; j++) mark[sl->lex_ids[j]] = 1;
    }
    int k = 0;
    for (int t = 0; t < sl->V_t; t++)
        if (mark[t] && t != NMT_PAD_ID && t != NMT_BOS_ID) out[k++] = t;
    if (mark != small) nmt_free(mark);
    return k;
}
