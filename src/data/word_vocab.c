/* word_vocab.c: the word-level tokenizer (word_vocab.h): whitespace
 * splitting, frequency counting, the ordered vocabulary with its hash index,
 * encode/decode and the "word<TAB>count" text form. */
#include "data/word_vocab.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const special_pieces[NMT_N_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};

struct WordVocab {
    int n;            /* ids 0 .. n-1, the first NMT_N_SPECIAL are the specials */
    char **pieces;    /* (n) '\0'-terminated, owned */
    uint32_t *lens;   /* (n) byte lengths of pieces */
    int64_t *counts;  /* (n) training counts */
    int32_t *slots;   /* (mask + 1) open-addressing index: id or -1 */
    size_t mask;
};

/* ---- whitespace and hashing ------------------------------------------------ */

size_t word_space_len(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0) return 0;
    unsigned char c = s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
    if (c == 0xC2 && len >= 2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (len < 3) return 0;
    if (c == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3; /* U+1680 */
    if (c == 0xE2 && s[1] == 0x80) {
        unsigned char d = s[2];
        /* U+2000..U+200B, U+2028, U+2029, U+202F */
        if ((d >= 0x80 && d <= 0x8B) || d == 0xA8 || d == 0xA9 || d == 0xAF) return 3;
    }
    if (c == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3; /* U+205F */
    if (c == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3; /* U+3000 */
    if (c == 0xEF && s[1] == 0xBB && s[2] == 0xBF) return 3; /* U+FEFF */
    return 0;
}

size_t word_len(const char *s, size_t len) {
    size_t i = 0;
    while (i < len && word_space_len(s + i, len - i) == 0) i++;
    return i;
}

int word_next(const char *text, size_t len, size_t *pos, size_t *begin, size_t *end) {
    size_t i = *pos;
    for (size_t sp; i < len && (sp = word_space_len(text + i, len - i)) > 0;) i += sp;
    if (i >= len) {
        *pos = len;
        return 0;
    }
    *begin = i;
    *end = *pos = i + word_len(text + i, len - i);
    return 1;
}

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static int is_special_name(const char *s, size_t len) {
    for (int i = 0; i < NMT_N_SPECIAL; i++)
        if (strlen(special_pieces[i]) == len && memcmp(special_pieces[i], s, len) == 0) return 1;
    return 0;
}

/* ---- the vocabulary --------------------------------------------------------- */

void word_vocab_free(WordVocab *v) {
    if (!v) return;
    if (v->pieces)
        for (int i = 0; i < v->n; i++) nmt_free(v->pieces[i]);
    nmt_free(v->pieces);
    nmt_free(v->lens);
    nmt_free(v->counts);
    nmt_free(v->slots);
    nmt_free(v);
}

/* An empty vocabulary with room for `cap` pieces (the specials not added). */
static NmtStatus vocab_alloc(int cap, WordVocab **out) {
    *out = NULL;
    WordVocab *v = nmt_calloc(1, sizeof *v);
    if (!v) return nmt_fail_nomem("word vocabulary");
    v->pieces = nmt_calloc((size_t)cap, sizeof *v->pieces);
    v->lens = nmt_calloc((size_t)cap, sizeof *v->lens);
    v->counts = nmt_calloc((size_t)cap, sizeof *v->counts);
    if (!v->pieces || !v->lens || !v->counts) {
        word_vocab_free(v);
        return nmt_fail_nomem("word vocabulary");
    }
    *out = v;
    return NMT_OK;
}

/* Appends a copy of word[0..len) (the caller checked capacity). */
static NmtStatus vocab_push(WordVocab *v, const char *word, size_t len, int64_t count) {
    char *p = nmt_strndup(word, len);
    if (!p) return nmt_fail_nomem("word vocabulary");
    v->pieces[v->n] = p;
    v->lens[v->n] = (uint32_t)len;
    v->counts[v->n] = count;
    v->n++;
    return NMT_OK;
}

/* Slot of word in the index: the slot holding its id, or the empty slot
 * where it would go. */
static size_t index_find(const WordVocab *v, const char *word, size_t len) {
    size_t i = (size_t)hash_bytes(word, len) & v->mask;
    for (;;) {
        int32_t id = v->slots[i];
        if (id < 0) return i;
        if (v->lens[id] == len && memcmp(v->pieces[id], word, len) == 0) return i;
        i = (i + 1) & v->mask;
    }
}

/* Builds the hash index over the non-special pieces. A duplicate piece sets
 * *dup_id to its second id (and returns NMT_OK); else *dup_id = -1. */
static NmtStatus vocab_index(WordVocab *v, int *dup_id) {
    *dup_id = -1;
    size_t cap = 16;
    while (cap < (size_t)v->n * 2) cap *= 2;
    v->slots = nmt_malloc(cap * sizeof *v->slots);
    if (!v->slots) return nmt_fail_nomem("word vocabulary index");
    memset(v->slots, 0xff, cap * sizeof *v->slots);
    v->mask = cap - 1;
    for (int id = NMT_N_SPECIAL; id < v->n; id++) {
        size_t s = index_find(v, v->pieces[id], v->lens[id]);
        if (v->slots[s] >= 0) {
            *dup_id = id;
            return NMT_OK;
        }
        v->slots[s] = id;
    }
    return NMT_OK;
}

int word_vocab_size(const WordVocab *v) { return v->n; }

const char *word_vocab_piece(const WordVocab *v, int id) {
    return id >= 0 && id < v->n ? v->pieces[id] : NULL;
}

int64_t word_vocab_count(const WordVocab *v, int id) {
    return id >= 0 && id < v->n ? v->counts[id] : 0;
}

int word_vocab_lookup(const WordVocab *v, const char *word, size_t len) {
    int32_t id = v->slots[index_find(v, word, len)];
    return id >= 0 ? id : NMT_UNK_ID;
}

/* ---- training --------------------------------------------------------------- */

typedef struct {
    char *word; /* owned; NULL for an empty slot */
    uint32_t len;
    uint64_t hash;
    int64_t count;
} CountEntry;

typedef struct {
    CountEntry *slots;
    size_t mask, used;
} CountTable;

static void count_table_free(CountTable *t) {
    if (t->slots)
        for (size_t i = 0; i <= t->mask; i++) nmt_free(t->slots[i].word);
    nmt_free(t->slots);
    t->slots = NULL;
}

static NmtStatus count_table_grow(CountTable *t) {
    size_t cap = t->slots ? (t->mask + 1) * 2 : 1024;
    CountEntry *slots = nmt_calloc(cap, sizeof *slots);
    if (!slots) return nmt_fail_nomem("counting words");
    if (t->slots) {
        for (size_t i = 0; i <= t->mask; i++) {
            if (!t->slots[i].word) continue;
            size_t j = (size_t)t->slots[i].hash & (cap - 1);
            while (slots[j].word) j = (j + 1) & (cap - 1);
            slots[j] = t->slots[i];
        }
        nmt_free(t->slots);
    }
    t->slots = slots;
    t->mask = cap - 1;
    return NMT_OK;
}

static NmtStatus count_table_add(CountTable *t, const char *word, size_t len) {
    if (len > UINT32_MAX) return nmt_fail(NMT_ERR_RUNTIME, "counting words: a word of %zu bytes", len);
    if (!t->slots || (t->used + 1) * 2 > t->mask + 1) {
        NmtStatus s = count_table_grow(t);
        if (s != NMT_OK) return s;
    }
    uint64_t h = hash_bytes(word, len);
    size_t i = (size_t)h & t->mask;
    while (t->slots[i].word) {
        CountEntry *e = &t->slots[i];
        if (e->hash == h && e->len == len && memcmp(e->word, word, len) == 0) {
            e->count++;
            return NMT_OK;
        }
        i = (i + 1) & t->mask;
    }
    char *copy = nmt_strndup(word, len);
    if (!copy) return nmt_fail_nomem("counting words");
    t->slots[i] = (CountEntry){copy, (uint32_t)len, h, 1};
    t->used++;
    return NMT_OK;
}

/* Descending count, then byte order (a prefix sorts first). */
static int count_entry_cmp(const void *pa, const void *pb) {
    const CountEntry *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->word, b->word, n);
    if (c != 0) return c;
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

NmtStatus word_vocab_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                           WordVocab **out) {
    *out = NULL;
    const char *key = spec->vocab_size_key ? spec->vocab_size_key : "data.word_vocab_size";
    if (spec->vocab_size > 0 && spec->vocab_size <= NMT_N_SPECIAL)
        return nmt_fail(NMT_ERR_CONFIG,
                        "%s = %d: must be larger than %d (the special tokens), or 0 for no limit",
                        key, spec->vocab_size, NMT_N_SPECIAL);
    if (spec->min_freq < 1)
        return nmt_fail(NMT_ERR_CONFIG, "word min_freq = %d: must be at least 1", spec->min_freq);

    CountTable table = {0};
    CountEntry *entries = NULL;
    WordVocab *v = NULL;
    NmtStatus s = NMT_OK;
    for (;;) {
        const char *line = NULL;
        size_t len = 0;
        int r = next(ctx, &line, &len);
        if (r == 0) break;
        if (r < 0) {
            s = r >= -(int)NMT_ERR_RUNTIME ? (NmtStatus)(-r) : NMT_ERR_IO; /* message set */
            goto done;
        }
        for (size_t pos = 0, b, e; word_next(line, len, &pos, &b, &e);) {
            if (!is_special_name(line + b, e - b)) {
                s = count_table_add(&table, line + b, e - b);
                if (s != NMT_OK) goto done;
            }
        }
    }
    if (table.used == 0) {
        s = nmt_fail(NMT_ERR_RUNTIME, "word vocabulary: the training corpus has no words");
        goto done;
    }

    /* Move the entries out of the table (the table keeps no ownership). */
    entries = nmt_malloc(table.used * sizeof *entries);
    if (!entries) {
        s = nmt_fail_nomem("word vocabulary");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i <= table.mask; i++)
        if (table.slots[i].word && table.slots[i].count >= spec->min_freq) entries[n++] = table.slots[i];
    if (n == 0) { /* only the special tokens would be left: every translation empty */
        int64_t most = 0;
        for (size_t i = 0; i <= table.mask; i++)
            if (table.slots[i].word && table.slots[i].count > most) most = table.slots[i].count;
        s = nmt_fail(NMT_ERR_CONFIG, "data.word_min_freq = %d: no word of the training corpus occurs that often "
                     "(the most frequent, %lld time%s), so the vocabulary would hold only the special tokens",
                     spec->min_freq, (long long)most, most == 1 ? "" : "s");
        goto done;
    }
    qsort(entries, n, sizeof *entries, count_entry_cmp);
    size_t keep = n;
    if (spec->vocab_size > 0 && keep > (size_t)(spec->vocab_size - NMT_N_SPECIAL))
        keep = (size_t)(spec->vocab_size - NMT_N_SPECIAL);
    if (keep > (size_t)(INT_MAX / 2 - NMT_N_SPECIAL)) keep = (size_t)(INT_MAX / 2 - NMT_N_SPECIAL);

    s = vocab_alloc((int)keep + NMT_N_SPECIAL, &v);
    if (s != NMT_OK) goto done;
    for (int i = 0; i < NMT_N_SPECIAL && s == NMT_OK; i++)
        s = vocab_push(v, special_pieces[i], strlen(special_pieces[i]), 0);
    for (size_t i = 0; i < keep && s == NMT_OK; i++)
        s = vocab_push(v, entries[i].word, entries[i].len, entries[i].count);
    if (s != NMT_OK) goto done;
    int dup;
    s = vocab_index(v, &dup);
    NMT_ASSERT(s != NMT_OK || dup < 0);

done:
    nmt_free(entries);
    count_table_free(&table);
    if (s != NMT_OK) {
        word_vocab_free(v);
        return s;
    }
    *out = v;
    return NMT_OK;
}

/* ---- encode / decode -------------------------------------------------------- */

NmtStatus word_vocab_encode(const WordVocab *v, const char *text, size_t len,
                            int32_t **ids, int *n_ids, int *capacity) {
    *n_ids = 0;
    int n = 0;
    for (size_t pos = 0, b, e; word_next(text, len, &pos, &b, &e);) {
        if (n >= *capacity || !*ids) {
            if (*capacity >= INT_MAX / 2) return nmt_fail(NMT_ERR_RUNTIME, "word encode: too many words");
            int cap = *capacity > 0 ? *capacity * 2 : 64;
            if (cap < n + 1) cap = n + 1;
            int32_t *p = nmt_realloc(*ids, (size_t)cap * sizeof *p);
            if (!p) return nmt_fail_nomem("word encode");
            *ids = p;
            *capacity = cap;
        }
        (*ids)[n++] = word_vocab_lookup(v, text + b, e - b);
    }
    if (!*ids) { /* always hand back a freeable buffer */
        *ids = nmt_malloc(64 * sizeof **ids);
        if (!*ids) return nmt_fail_nomem("word encode");
        *capacity = 64;
    }
    *n_ids = n;
    return NMT_OK;
}

NmtStatus word_vocab_decode(const WordVocab *v, const int32_t *ids, int n, char **text) {
    *text = NULL;
    size_t total = 1;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v->n)
            return nmt_fail(NMT_ERR_RUNTIME,
                            "word decode: id %d at position %d is outside the vocabulary [0, %d)",
                            (int)ids[i], i, v->n);
        if (ids[i] == NMT_PAD_ID || ids[i] == NMT_BOS_ID || ids[i] == NMT_EOS_ID) continue;
        total += v->lens[ids[i]] + 1;
    }
    char *out = nmt_malloc(total);
    if (!out) return nmt_fail_nomem("word decode");
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id == NMT_PAD_ID || id == NMT_BOS_ID || id == NMT_EOS_ID) continue;
        if (pos) out[pos++] = ' ';
        memcpy(out + pos, v->pieces[id], v->lens[id]);
        pos += v->lens[id];
    }
    out[pos] = '\0';
    *text = out;
    return NMT_OK;
}

/* ---- text form -------------------------------------------------------------- */

NmtStatus word_vocab_to_text(const WordVocab *v, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    size_t total = 1;
    for (int i = 0; i < v->n; i++) total += v->lens[i] + 24;
    char *out = nmt_malloc(total);
    if (!out) return nmt_fail_nomem("writing a word vocabulary");
    size_t pos = 0;
    for (int i = 0; i < v->n; i++) {
        memcpy(out + pos, v->pieces[i], v->lens[i]);
        pos += v->lens[i];
        pos += (size_t)snprintf(out + pos, total - pos, "\t%lld\n", (long long)v->counts[i]);
    }
    out[pos] = '\0';
    *text = out;
    *len = pos;
    return NMT_OK;
}

/* Parses a non-negative decimal count; 0 on a malformed or too large one. */
static int parse_count(const char *s, size_t len, int64_t *out) {
    if (len == 0 || len > 18) return 0;
    int64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        x = x * 10 + (s[i] - '0');
    }
    *out = x;
    return 1;
}

NmtStatus word_vocab_parse(const char *text, size_t len, const char *name, WordVocab **out) {
    *out = NULL;
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++) n_lines += text[i] == '\n';
    if (len > 0 && text[len - 1] != '\n') n_lines++;
    if (n_lines > (size_t)INT_MAX / 2)
        return nmt_fail(NMT_ERR_FORMAT, "%s: too many lines for a vocabulary", name);
    WordVocab *v = NULL;
    NmtStatus s = vocab_alloc(n_lines > 0 ? (int)n_lines : 1, &v);
    if (s != NMT_OK) return s;
    size_t pos = 0;
    int line_no = 0;
    while (pos < len) {
        line_no++;
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        const char *tab = memchr(line, '\t', ll);
        if (!tab) {
            s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: expected \"word<TAB>count\"", name, line_no);
            break;
        }
        size_t wl = (size_t)(tab - line);
        int64_t count;
        if (!parse_count(tab + 1, ll - wl - 1, &count)) {
            s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: bad count \"%.*s\"", name, line_no,
                         (int)(ll - wl - 1 > 40 ? 40 : ll - wl - 1), tab + 1);
            break;
        }
        if (wl == 0 || word_len(line, wl) != wl) {
            s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: the word is empty or holds whitespace", name,
                         line_no);
            break;
        }
        int id = v->n;
        if (id < NMT_N_SPECIAL) {
            if (strlen(special_pieces[id]) != wl || memcmp(special_pieces[id], line, wl) != 0) {
                s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: expected the special token \"%s\" (ids 0-3 "
                             "are <pad> <unk> <s> </s>)", name, line_no, special_pieces[id]);
                break;
            }
        } else if (is_special_name(line, wl)) {
            s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: special token \"%.*s\" repeated", name, line_no,
                         (int)wl, line);
            break;
        }
        s = vocab_push(v, line, wl, id < NMT_N_SPECIAL ? 0 : count);
        if (s != NMT_OK) break;
    }
    if (s == NMT_OK && v->n < NMT_N_SPECIAL)
        s = nmt_fail(NMT_ERR_FORMAT, "%s: a word vocabulary needs at least the 4 special tokens",
                     name);
    int dup = -1;
    if (s == NMT_OK) s = vocab_index(v, &dup);
    if (s == NMT_OK && dup >= 0)
        s = nmt_fail(NMT_ERR_FORMAT, "%s:%d: duplicate word \"%s\"", name, dup + 1, v->pieces[dup]);
    if (s != NMT_OK) {
        word_vocab_free(v);
        return s;
    }
    *out = v;
    return NMT_OK;
}
