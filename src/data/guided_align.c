/* guided_align.c: word alignments for guided alignment training: parsing,
 * word-to-token mapping, the cache file and a batch's rows
 * (guided_align.h). */
#include "data/guided_align.h"

#include <string.h>

#include "alignment.h" /* alignment_token_words: the words a token covers */
#include "data/word_vocab.h"
#include "fileio.h"

NmtStatus guided_alignments_create(GuidedAlignments **out) {
    *out = NULL;
    GuidedAlignments *g = nmt_calloc(1, sizeof *g);
    if (g) g->offset = nmt_calloc(1, sizeof *g->offset);
    if (!g || !g->offset) {
        guided_alignments_free(g);
        return nmt_fail_nomem("creating the guided alignments");
    }
    *out = g;
    return NMT_OK;
}

void guided_alignments_free(GuidedAlignments *g) {
    if (!g) return;
    nmt_free(g->offset);
    nmt_free(g->links);
    nmt_free(g);
}

NmtStatus guided_alignments_add(GuidedAlignments *g, const int32_t *pairs, int n) {
    int64_t at = g->offset[g->n_pairs], need = at + n;
    int64_t *off = nmt_realloc(g->offset, (size_t)(g->n_pairs + 2) * sizeof *off);
    if (!off) return nmt_fail_nomem("growing the guided alignments");
    g->offset = off;
    if (need > g->capacity_links) {
        int64_t cap = g->capacity_links ? g->capacity_links : 256;
        while (cap < need) cap *= 2;
        int32_t *links = nmt_realloc(g->links, (size_t)cap * 2 * sizeof *links);
        if (!links) return nmt_fail_nomem("growing the guided alignments");
        g->links = links;
        g->capacity_links = cap;
    }
    if (n) memcpy(g->links + 2 * at, pairs, (size_t)n * 2 * sizeof *pairs);
    g->offset[++g->n_pairs] = need;
    return NMT_OK;
}

/* ---- the cache file ----------------------------------------------------- */

static const char align_magic[8] = {'N', 'M', 'T', 'A', 'L', 'N', 0, 1};

NmtStatus guided_alignments_save(const GuidedAlignments *g, const char *path) {
    AtomicFile *f;
    NmtStatus st = atomic_file_open(path, &f);
    if (st) return st;
    int64_t n = g->n_pairs, header[2] = {n, g->offset[n]};
    const void *parts[] = {align_magic, header, g->offset, g->links};
    size_t sizes[] = {sizeof align_magic, sizeof header, (size_t)(n + 1) * sizeof(int64_t),
                      (size_t)header[1] * 2 * sizeof(int32_t)};
    uint32_t c = 0;
    for (size_t i = 0; i < NMT_ARRAY_LEN(parts) && !st; i++) {
        c = file_crc32(c, parts[i], sizes[i]);
        st = atomic_file_write(f, parts[i], sizes[i]);
    }
    if (!st) st = atomic_file_write(f, &c, sizeof c);
    if (st) {
        atomic_file_abort(f);
        return st;
    }
    return atomic_file_commit(f);
}

NmtStatus guided_alignments_load(const char *path, GuidedAlignments **out) {
    *out = NULL;
    char *bytes;
    size_t size;
    NmtStatus st = file_read_all(path, &bytes, &size);
    if (st) return st;
    const size_t head = sizeof align_magic + 2 * sizeof(int64_t);
    int64_t header[2] = {0, 0};
    if (size >= head) memcpy(header, bytes + sizeof align_magic, sizeof header);
    int64_t n = header[0], links = header[1];
    bool ok = size >= head + 4 && !memcmp(bytes, align_magic, sizeof align_magic) && n >= 0 && links >= 0 &&
              n < (int64_t)size && links < (int64_t)size &&
              head + (uint64_t)(n + 1) * 8 + (uint64_t)links * 8 + 4 == size;
    if (ok) {
        uint32_t stored;
        memcpy(&stored, bytes + size - 4, 4);
        ok = file_crc32(0, bytes, size - 4) == stored;
    }
    GuidedAlignments *g = NULL;
    if (ok) {
        g = nmt_calloc(1, sizeof *g);
        if (g) {
            g->offset = nmt_malloc((size_t)(n + 1) * 8);
            g->links = nmt_malloc((size_t)(links ? links : 1) * 8);
        }
        if (!g || !g->offset || !g->links) {
            guided_alignments_free(g);
            nmt_free(bytes);
            return nmt_fail_nomem("loading the guided alignments");
        }
        g->n_pairs = n;
        g->capacity_links = links;
        memcpy(g->offset, bytes + head, (size_t)(n + 1) * 8);
        memcpy(g->links, bytes + head + (size_t)(n + 1) * 8, (size_t)links * 8);
        ok = g->offset[0] == 0 && g->offset[n] == links;
        for (int64_t i = 0; ok && i < n; i++) ok = g->offset[i + 1] >= g->offset[i];
        for (int64_t k = 0; ok && k < 2 * links; k++) ok = g->links[k] >= 0;
    }
    nmt_free(bytes);
    if (!ok) {
        guided_alignments_free(g);
        return nmt_fail(NMT_ERR_FORMAT, "%s: not a complete nmt alignment file (bad magic, size, checksum or "
                        "offsets)", path);
    }
    *out = g;
    return NMT_OK;
}

int64_t guided_alignments_aligned_targets(const GuidedAlignments *g) {
    int64_t n = 0;
    for (int64_t i = 0; i < g->n_pairs; i++) /* a pair's links come in target order */
        for (int64_t k = g->offset[i]; k < g->offset[i + 1]; k++)
            n += k == g->offset[i] || g->links[2 * k + 1] != g->links[2 * k - 1];
    return n;
}

NmtStatus guided_alignments_check(const GuidedAlignments *g, const Dataset *d, const char *path) {
    if (g->n_pairs != d->n_pairs)
        return nmt_fail(NMT_ERR_FORMAT, "%s: alignments of %lld pairs, but the training data has %lld", path,
                        (long long)g->n_pairs, (long long)d->n_pairs);
    for (int64_t i = 0; i < g->n_pairs; i++)
        for (int64_t k = g->offset[i]; k < g->offset[i + 1]; k++)
            if (g->links[2 * k] >= dataset_src_len(d, i) || g->links[2 * k + 1] >= dataset_tgt_len(d, i))
                return nmt_fail(NMT_ERR_FORMAT, "%s: pair %lld links token %d-%d, past its %d source or %d target "
                                "tokens", path, (long long)i, g->links[2 * k], g->links[2 * k + 1],
                                dataset_src_len(d, i), dataset_tgt_len(d, i));
    return NMT_OK;
}

/* ---- parsing and mapping ------------------------------------------------ */

static bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

/* A decimal number of at most 9 digits at s[*i..len): its value, or -1. */
static int parse_index(const char *s, size_t len, size_t *i) {
    size_t start = *i;
    int v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - start < 9) v = v * 10 + (s[(*i)++] - '0');
    return *i > start && !(*i < len && s[*i] >= '0' && s[*i] <= '9') ? v : -1;
}

NmtStatus guided_align_parse_line(const char *line, size_t len, int n_src_words, int n_tgt_words,
                                  int32_t **pairs, int *n, int *cap) {
    *n = 0;
    size_t i = 0;
    for (;;) {
        while (i < len && is_ascii_space(line[i])) i++;
        if (i >= len) return NMT_OK;
        size_t start = i, end = i;
        while (end < len && !is_ascii_space(line[end])) end++;
        int s = parse_index(line, end, &i), t = -1;
        if (s >= 0 && i < end && line[i] == '-') {
            i++;
            t = parse_index(line, end, &i);
        }
        int shown = end - start > 40 ? 40 : (int)(end - start);
        if (s < 0 || t < 0 || i != end)
            return nmt_fail(NMT_ERR_FORMAT, "'%.*s' is not a pair i-j of word positions (Pharaoh format, as "
                            "fast_align writes)", shown, line + start);
        if (s >= n_src_words || t >= n_tgt_words)
            return nmt_fail(NMT_ERR_FORMAT, "pair %d-%d: the pair's %s side has %d word%s (counted from 0, split "
                            "at spaces)", s, t, s >= n_src_words ? "source" : "target",
                            s >= n_src_words ? n_src_words : n_tgt_words,
                            (s >= n_src_words ? n_src_words : n_tgt_words) == 1 ? "" : "s");
        if (*n >= *cap) {
            int c = *cap ? *cap * 2 : 64;
            int32_t *p = nmt_realloc(*pairs, (size_t)c * 2 * sizeof *p);
            if (!p) return nmt_fail_nomem("reading an alignment");
            *pairs = p;
            *cap = c;
        }
        (*pairs)[2 * *n] = s;
        (*pairs)[2 * *n + 1] = t;
        (*n)++;
    }
}

int guided_align_count_words(const char *text, size_t len) {
    int words = 0;
    for (size_t pos = 0, b, e; word_next(text, len, &pos, &b, &e);) words++;
    return words;
}

NmtStatus guided_align_token_links(const int32_t *word_pairs, int n_word_pairs, const char *src, size_t src_len,
                                   const TokenSpan *src_spans, int n_src, const char *tgt, size_t tgt_len,
                                   const TokenSpan *tgt_spans, int n_tgt, int32_t **links, int *n_links,
                                   int *cap) {
    *n_links = 0;
    if (n_word_pairs == 0 || n_src == 0 || n_tgt == 0) return NMT_OK;
    WordRange *sw = nmt_malloc((size_t)n_src * sizeof *sw), *tw = nmt_malloc((size_t)n_tgt * sizeof *tw);
    uint8_t *linked = nmt_calloc((size_t)n_src * n_tgt, 1); /* (target token, source token) */
    NmtStatus st = sw && tw && linked ? NMT_OK : nmt_fail_nomem("mapping an alignment onto tokens");
    if (!st) {
        alignment_token_words(src, src_len, src_spans, n_src, sw);
        alignment_token_words(tgt, tgt_len, tgt_spans, n_tgt, tw);
        for (int k = 0; k < n_word_pairs; k++) {
            int i = word_pairs[2 * k], j = word_pairs[2 * k + 1];
            for (int t = 0; t < n_tgt; t++) {
                if (j < tw[t].first || j > tw[t].last) continue;
                for (int s = 0; s < n_src; s++)
                    if (i >= sw[s].first && i <= sw[s].last) linked[(size_t)t * n_src + s] = 1;
            }
        }
    }
    for (int t = 0; !st && t < n_tgt; t++)
        for (int s = 0; !st && s < n_src; s++) {
            if (!linked[(size_t)t * n_src + s]) continue;
            if (*n_links >= *cap) {
                int c = *cap ? *cap * 2 : 64;
                int32_t *p = nmt_realloc(*links, (size_t)c * 2 * sizeof *p);
                if (!p) {
                    st = nmt_fail_nomem("mapping an alignment onto tokens");
                    break;
                }
                *links = p;
                *cap = c;
            }
            (*links)[2 * *n_links] = s;
            (*links)[2 * *n_links + 1] = t;
            (*n_links)++;
        }
    nmt_free(sw);
    nmt_free(tw);
    nmt_free(linked);
    return st;
}

void guided_align_fill_column(const GuidedAlignments *g, int64_t pair, int b, int B, int S, int tgt_tokens,
                              bool reverse, float *rows) {
    const int32_t *l = g->links + 2 * g->offset[pair];
    int64_t n = g->offset[pair + 1] - g->offset[pair];
    for (int64_t k = 0; k < n;) {
        int t = l[2 * k + 1];
        int64_t end = k;
        while (end < n && l[2 * end + 1] == t) end++; /* target t's links: k..end */
        NMT_ASSERT(t < tgt_tokens);
        int pos = reverse ? tgt_tokens - 1 - t : t;
        float *row = rows + ((size_t)pos * B + b) * S, share = 1.0f / (float)(end - k);
        for (; k < end; k++) {
            NMT_ASSERT(l[2 * k] < S);
            row[l[2 * k]] = share;
        }
    }
}
