/* tokenizer.c: the Tokenizer interface (tokenizer.h): dispatch to the
 * SentencePiece wrapper (spm.cc) or the word vocabulary (word_vocab.c), the
 * serialized form with its kind tag, and the file I/O of save/load (atomic
 * write through fileio.h). */
#include "data/tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/corpus.h"
#include "data/spm.h"
#include "fileio.h"
#include "data/word_vocab.h"

struct Tokenizer {
    TokenizerKind kind;
    SpmModel *spm;   /* TOKENIZER_SPM */
    WordVocab *word; /* TOKENIZER_WORD */
};

/* "NMTTOK" 0x01 KIND */
#define TOKENIZER_TAG_LEN 8
static const char tokenizer_magic[6] = {'N', 'M', 'T', 'T', 'O', 'K'};
enum { TOKENIZER_FORMAT_VERSION = 1 };

void tokenizer_spec_init(TokenizerSpec *spec, TokenizerKind kind) {
    memset(spec, 0, sizeof *spec);
    spec->kind = kind;
    spec->vocab_size = 8000;
    spec->vocab_size_key = NULL;
    spec->seed = 1;
    spec->spm_model_type = "unigram";
    spec->character_coverage = 1.0;
    spec->spm_normalization = "nmt_nfkc";
    spec->spm_hard_vocab_limit = 1;
    spec->spm_byte_fallback = 0;
    spec->spm_threads = 1;
    spec->spm_max_sentences = 0;
    spec->min_freq = 1;
}

static NmtStatus wrap(TokenizerKind kind, SpmModel *spm, WordVocab *word, Tokenizer **out) {
    Tokenizer *t = nmt_calloc(1, sizeof *t);
    if (!t) {
        spm_free(spm);
        word_vocab_free(word);
        return nmt_fail_nomem("tokenizer");
    }
    t->kind = kind;
    t->spm = spm;
    t->word = word;
    *out = t;
    return NMT_OK;
}

NmtStatus tokenizer_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                          Tokenizer **out) {
    *out = NULL;
    if (spec->kind == TOKENIZER_SPM) {
        SpmModel *m;
        NmtStatus s = spm_train(spec, next, ctx, &m);
        if (s != NMT_OK) return s;
        return wrap(TOKENIZER_SPM, m, NULL, out);
    }
    if (spec->kind == TOKENIZER_WORD) {
        WordVocab *v;
        NmtStatus s = word_vocab_train(spec, next, ctx, &v);
        if (s != NMT_OK) return s;
        return wrap(TOKENIZER_WORD, NULL, v, out);
    }
    return nmt_fail(NMT_ERR_CONFIG, "unknown tokenizer kind %d", (int)spec->kind);
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    spm_free(t->spm);
    word_vocab_free(t->word);
    nmt_free(t);
}

TokenizerKind tokenizer_kind(const Tokenizer *t) { return t->kind; }

const char *tokenizer_spm_type(const Tokenizer *t) { return t->kind == TOKENIZER_SPM ? spm_model_type(t->spm) : NULL; }

int tokenizer_spm_moved_specials(const Tokenizer *t, int given_ids[NMT_N_SPECIAL]) {
    if (t->kind == TOKENIZER_SPM) return spm_moved_specials(t->spm, given_ids);
    for (int k = 0; k < NMT_N_SPECIAL; k++) given_ids[k] = k;
    return 0;
}

int tokenizer_vocab_size(const Tokenizer *t) {
    return t->kind == TOKENIZER_SPM ? spm_vocab_size(t->spm) : word_vocab_size(t->word);
}

const char *tokenizer_piece(const Tokenizer *t, int id) {
    return t->kind == TOKENIZER_SPM ? spm_piece(t->spm, id) : word_vocab_piece(t->word, id);
}

int tokenizer_piece_to_id(const Tokenizer *t, const char *piece) {
    if (t->kind == TOKENIZER_SPM) return spm_piece_to_id(t->spm, piece);
    return word_vocab_lookup(t->word, piece, strlen(piece));
}

/* ---- a cheap lower bound on the number of ids ------------------------------ */

/* 1 for a code point that one of SentencePiece's normalization rules may
 * delete or turn into whitespace, so that a word made only of such
 * characters can give no id. A superset, checked against nmt_nfkc for every
 * code point (spm_normalize): C0 and C1 controls, DEL, the Unicode
 * whitespace, the invisible format characters (U+00AD, U+034F, U+180B..E,
 * U+200B..F, U+2060..6F, U+FEFF, variation selectors, tags), U+2581 (the
 * word-start mark itself) and U+FFF0..U+FFFF. */
static int spm_may_vanish(uint32_t cp) {
    return cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x34F ||
           cp == 0x1680 || (cp >= 0x180B && cp <= 0x180E) || (cp >= 0x2000 && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x2581 ||
           cp == 0x3000 || (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0xFEFF ||
           (cp >= 0xFFF0 && cp <= 0xFFFF) || (cp >= 0xE0000 && cp <= 0xE0FFF);
}

/* The bound; *end: the byte offset just past the cap-th counted word when
 * the count reaches cap, else len. */
static int min_ids(TokenizerKind kind, const char *text, size_t len, int cap, size_t *end) {
    const unsigned char *s = (const unsigned char *)text;
    *end = len;
    int count = 0;
    size_t i = 0;
    if (kind == TOKENIZER_WORD) {
        /* exact: one id per word */
        for (size_t b, e; count < cap && word_next(text, len, &i, &b, &e);)
            if (++count == cap) *end = e;
        return count;
    }
    /* spm: words between ASCII spaces (every normalization rule keeps those
     * as word boundaries) that hold a character no rule removes; each
     * starts with U+2581 after normalization, and no piece crosses it. */
    int visible = 0;
    while (i < len && count < cap) {
        if (s[i] == ' ') {
            count += visible;
            if (visible && count == cap) *end = i;
            visible = 0;
            i++;
            continue;
        }
        uint32_t cp;
        i += utf8_decode(s + i, len - i, &cp);
        if (!(cp & UTF8_INVALID) && !spm_may_vanish(cp)) visible = 1;
    }
    count += visible;
    return count < cap ? count : cap;
}

int tokenizer_kind_min_ids(TokenizerKind kind, const char *text, size_t len, int cap) {
    size_t end;
    return min_ids(kind, text, len, cap, &end);
}

int tokenizer_min_ids_prefix(const Tokenizer *t, const char *text, size_t len, int cap,
                             size_t *prefix_len) {
    *prefix_len = len;
    if (t->kind == TOKENIZER_SPM && !spm_pieces_within_words(t->spm)) return 0;
    return min_ids(t->kind, text, len, cap, prefix_len);
}

size_t tokenizer_kind_bytes_cap(TokenizerKind kind, int max_ids) {
    if (kind != TOKENIZER_SPM) return SIZE_MAX;
    return (size_t)(max_ids > 0 ? max_ids : 0) * TOKENIZER_SPM_PIECE_BYTES;
}

size_t tokenizer_bytes_cap(const Tokenizer *t, int max_ids) { return tokenizer_kind_bytes_cap(t->kind, max_ids); }

int tokenizer_min_ids(const Tokenizer *t, const char *text, size_t len, int cap) {
    size_t end;
    return tokenizer_min_ids_prefix(t, text, len, cap, &end);
}

NmtStatus tokenizer_encode_buf(const Tokenizer *t, const char *text, size_t len,
                               int32_t **ids, int *n_ids, int *capacity) {
    if (t->kind == TOKENIZER_SPM) return spm_encode(t->spm, text, len, ids, n_ids, capacity);
    return word_vocab_encode(t->word, text, len, ids, n_ids, capacity);
}

NmtStatus tokenizer_sample_encode_buf(const Tokenizer *t, const char *text, size_t len, double alpha,
                                      uint64_t key, int32_t **ids, int *n_ids, int *capacity) {
    if (t->kind != TOKENIZER_SPM)
        return nmt_fail(NMT_ERR_CONFIG, "subword sampling needs a SentencePiece tokenizer, not words");
    return spm_sample_encode(t->spm, text, len, alpha, key, ids, n_ids, capacity);
}

NmtStatus tokenizer_sample_encode_spans_buf(const Tokenizer *t, const char *text, size_t len, double alpha,
                                            uint64_t key, int32_t **ids, TokenSpan **spans, int *n_ids,
                                            int *capacity) {
    if (t->kind != TOKENIZER_SPM)
        return nmt_fail(NMT_ERR_CONFIG, "subword sampling needs a SentencePiece tokenizer, not words");
    return spm_sample_encode_spans(t->spm, text, len, alpha, key, ids, spans, n_ids, capacity);
}

NmtStatus tokenizer_encode(const Tokenizer *t, const char *text, size_t len,
                           int32_t **ids, int *n_ids) {
    *ids = NULL;
    int cap = 0;
    NmtStatus s = tokenizer_encode_buf(t, text, len, ids, n_ids, &cap);
    if (s != NMT_OK) {
        nmt_free(*ids);
        *ids = NULL;
        *n_ids = 0;
    }
    return s;
}

NmtStatus tokenizer_decode(const Tokenizer *t, const int32_t *ids, int n, char **text) {
    if (t->kind == TOKENIZER_SPM) return spm_decode(t->spm, ids, n, text);
    return word_vocab_decode(t->word, ids, n, text);
}

NmtStatus tokenizer_encode_spans(const Tokenizer *t, const char *text, size_t len, int32_t **ids,
                                 TokenSpan **spans, int *n_ids) {
    if (t->kind == TOKENIZER_SPM) return spm_encode_spans(t->spm, text, len, ids, spans, n_ids);
    *spans = NULL;
    NmtStatus s = tokenizer_encode(t, text, len, ids, n_ids);
    if (s != NMT_OK) return s;
    *spans = nmt_malloc((size_t)(*n_ids ? *n_ids : 1) * sizeof **spans);
    if (!*spans) {
        nmt_free(*ids);
        *ids = NULL;
        *n_ids = 0;
        return nmt_fail_nomem("word encode");
    }
    /* the words as word_vocab_encode splits them, one id each */
    size_t pos = 0;
    for (int k = 0; k < *n_ids; k++)
        if (!word_next(text, len, &pos, &(*spans)[k].begin, &(*spans)[k].end)) break;
    return NMT_OK;
}

NmtStatus tokenizer_decode_spans(const Tokenizer *t, const int32_t *ids, int n, char **text, TokenSpan *spans) {
    if (t->kind == TOKENIZER_SPM) return spm_decode_spans(t->spm, ids, n, text, spans);
    NmtStatus s = word_vocab_decode(t->word, ids, n, text);
    if (s != NMT_OK) return s;
    /* word_vocab_decode joins the words with one space */
    size_t pos = 0;
    for (int k = 0; k < n; k++) {
        if (ids[k] == NMT_PAD_ID || ids[k] == NMT_BOS_ID || ids[k] == NMT_EOS_ID) {
            spans[k].begin = spans[k].end = pos;
            continue;
        }
        if (pos) pos++;
        spans[k].begin = pos;
        pos += strlen(word_vocab_piece(t->word, ids[k]));
        spans[k].end = pos;
    }
    return NMT_OK;
}

/* ---- serialized form -------------------------------------------------------- */

/* The payload (spm proto or word text) in a new buffer. */
static NmtStatus payload(const Tokenizer *t, uint8_t **bytes, size_t *n) {
    if (t->kind == TOKENIZER_SPM) return spm_serialize(t->spm, bytes, n);
    char *text;
    NmtStatus s = word_vocab_to_text(t->word, &text, n);
    *bytes = (uint8_t *)text;
    return s;
}

NmtStatus tokenizer_serialize(const Tokenizer *t, uint8_t **bytes, size_t *n) {
    *bytes = NULL;
    *n = 0;
    uint8_t *body;
    size_t body_n;
    NmtStatus s = payload(t, &body, &body_n);
    if (s != NMT_OK) return s;
    uint8_t *out = nmt_malloc(TOKENIZER_TAG_LEN + body_n);
    if (!out) {
        nmt_free(body);
        return nmt_fail_nomem("serializing a tokenizer");
    }
    memcpy(out, tokenizer_magic, sizeof tokenizer_magic);
    out[6] = TOKENIZER_FORMAT_VERSION;
    out[7] = (uint8_t)t->kind;
    memcpy(out + TOKENIZER_TAG_LEN, body, body_n);
    nmt_free(body);
    *bytes = out;
    *n = TOKENIZER_TAG_LEN + body_n;
    return NMT_OK;
}

/* Builds a tokenizer of `kind` from its payload; `name` names it in messages. */
static NmtStatus from_payload(TokenizerKind kind, const uint8_t *body, size_t n,
                              const char *name, Tokenizer **out) {
    if (kind == TOKENIZER_SPM) {
        SpmModel *m;
        NmtStatus s = spm_load_proto(body, n, name, &m);
        if (s != NMT_OK) return s;
        return wrap(TOKENIZER_SPM, m, NULL, out);
    }
    WordVocab *v;
    NmtStatus s = word_vocab_parse((const char *)body, n, name, &v);
    if (s != NMT_OK) return s;
    return wrap(TOKENIZER_WORD, NULL, v, out);
}

NmtStatus tokenizer_same_as_serialized(const Tokenizer *t, const uint8_t *bytes, size_t n, int *same) {
    uint8_t *mine = NULL;
    size_t len = 0;
    *same = 0;
    NmtStatus st = tokenizer_serialize(t, &mine, &len);
    if (st) return st;
    *same = len == n && (n == 0 || memcmp(mine, bytes, n) == 0);
    nmt_free(mine);
    return NMT_OK;
}

NmtStatus tokenizer_deserialize(const uint8_t *bytes, size_t n, Tokenizer **out) {
    *out = NULL;
    if (n < TOKENIZER_TAG_LEN || memcmp(bytes, tokenizer_magic, sizeof tokenizer_magic) != 0)
        return nmt_fail(NMT_ERR_FORMAT, "serialized tokenizer: missing the NMTTOK tag");
    if (bytes[6] != TOKENIZER_FORMAT_VERSION)
        return nmt_fail(NMT_ERR_FORMAT, "serialized tokenizer: format version %d, expected %d",
                        bytes[6], TOKENIZER_FORMAT_VERSION);
    if (bytes[7] != TOKENIZER_SPM && bytes[7] != TOKENIZER_WORD)
        return nmt_fail(NMT_ERR_FORMAT, "serialized tokenizer: unknown kind %d", bytes[7]);
    return from_payload((TokenizerKind)bytes[7], bytes + TOKENIZER_TAG_LEN,
                        n - TOKENIZER_TAG_LEN, "serialized tokenizer", out);
}

/* ---- files ------------------------------------------------------------------ */

NmtStatus tokenizer_save(const Tokenizer *t, const char *path) {
    uint8_t *body;
    size_t n;
    NmtStatus s = payload(t, &body, &n);
    if (s != NMT_OK) return s;
    s = file_write_atomic(path, body, n);
    nmt_free(body);
    return s;
}

NmtStatus tokenizer_load(const char *path, Tokenizer **out) {
    *out = NULL;
    uint8_t *bytes;
    size_t n;
    NmtStatus s = file_read_all(path, (char **)&bytes, &n);
    if (s != NMT_OK) return s;
    static const char word_start[] = "<pad>\t";
    TokenizerKind kind = n >= sizeof word_start - 1 &&
                                 memcmp(bytes, word_start, sizeof word_start - 1) == 0
                             ? TOKENIZER_WORD
                             : TOKENIZER_SPM;
    if (n == 0)
        s = nmt_fail(NMT_ERR_FORMAT, "%s: empty file, not a SentencePiece model or word vocabulary",
                     path);
    else
        s = from_payload(kind, bytes, n, path, out);
    nmt_free(bytes);
    return s;
}
