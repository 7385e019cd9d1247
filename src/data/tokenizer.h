/* tokenizer.h: the one interface to nmt's tokenizers, text <-> token ids.
 *
 *   TOKENIZER_SPM   SentencePiece (unigram or BPE), trained in memory through
 *                   the C++ library (src/data/spm.cc, the only C++ file)
 *   TOKENIZER_WORD  whitespace-separated words with a frequency vocabulary
 *                   (src/data/word_vocab.c)
 *
 * Special ids are the same for every tokenizer: NMT_PAD_ID = 0 "<pad>",
 * NMT_UNK_ID = 1 "<unk>", NMT_BOS_ID = 2 "<s>", NMT_EOS_ID = 3 "</s>".
 * tokenizer_encode never produces PAD, BOS or EOS (the batcher adds BOS/EOS);
 * text that spells "<s>" etc. is ordinary text, never a control id.
 * tokenizer_decode skips PAD, BOS and EOS; UNK decodes to " \u2047 " (" ⁇ ",
 * SentencePiece's convention) for spm and to the word "<unk>" for words.
 *
 * Round trip: decode(encode(s)) == s for SentencePiece when s is already
 * normalized (with the default "nmt_nfkc" rule: NFKC, single spaces, no
 * leading or trailing space) and holds no character outside the model
 * (those become UNK unless spm_byte_fallback is on); for words when every
 * word of s is in the vocabulary and words are separated by single spaces
 * (decode joins words with one ASCII space).
 *
 * Serialized form (tokenizer_serialize, embedded in checkpoints): 8 bytes
 * "NMTTOK" 0x01 KIND (KIND 0 = spm, 1 = word), then for spm the serialized
 * SentencePiece ModelProto (the bytes of a standard .model file), for words
 * the text of the vocabulary file below.
 *
 * Files (tokenizer_save / tokenizer_load): spm writes the standard .model
 * file, usable with the spm_encode / spm_decode tools; words write a text
 * file with one "token<TAB>count\n" line per id, in id order, starting with
 * the four specials (count 0): "<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\n...".
 * tokenizer_load tells the two apart by content (a word vocabulary starts
 * with "<pad>\t"). Saves are atomic (temporary file, fsync, rename).
 *
 * Thread safety: encode, decode, piece lookups and serialize may be called
 * from several threads on one Tokenizer. Training is not thread-safe (the
 * SentencePiece trainer uses process-wide settings: log level, random seed).
 *
 * Memory: every buffer handed to the caller comes from nmt_malloc and is
 * freed with nmt_free. (SentencePiece's own internals allocate with C++ new.) */
#ifndef NMT_DATA_TOKENIZER_H
#define NMT_DATA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common.h"

typedef enum { TOKENIZER_SPM = 0, TOKENIZER_WORD = 1 } TokenizerKind;

/* Training options. Fill with tokenizer_spec_init, then change fields. */
typedef struct {
    TokenizerKind kind;
    /* Size of the vocabulary including the 4 specials.
     * spm: exact (an error if the corpus cannot give that many pieces and
     *      spm_hard_vocab_limit is 1); must be > 4.
     * word: an upper bound (fewer when the corpus has fewer words with
     *      count >= min_freq); <= 0 means no limit. Default 8000. */
    int vocab_size;
    /* Config key named in error messages about vocab_size; NULL gives
     * "data.spm_vocab_size" (spm) or "data.word_vocab_size" (word). */
    const char *vocab_size_key;
    /* spm: seeds the sampling of spm_max_sentences (and the library's
     * random generator). SentencePiece 0.1.97's trainer is otherwise
     * deterministic: the same sentences and spm_threads give the same model
     * whatever the seed. Unused for words. */
    uint64_t seed;

    /* --- SentencePiece only --- */
    const char *spm_model_type;    /* "unigram" (default) or "bpe" */
    /* Fraction of characters the model must cover; the rest become UNK.
     * Default 1.0: every character of the corpus gets a piece, right for
     * alphabetic European languages (SentencePiece advises 0.9995 for
     * languages with large character sets such as Chinese or Japanese). */
    double character_coverage;
    /* Normalization rule: "nmt_nfkc" (default: NFKC plus NMT-specific
     * cleanup, and extra whitespace removed), "nfkc", "nmt_nfkc_cf",
     * "nfkc_cf" (case folded) or "identity" (no change). */
    const char *spm_normalization;
    /* 1 (default): vocab_size too large for the corpus is an error naming
     * the config key. 0: the model may come out smaller than vocab_size
     * (SentencePiece's hard_vocab_limit=false). */
    int spm_hard_vocab_limit;
    /* 1: characters outside the model are encoded as UTF-8 byte pieces
     * (256 pieces <0x00>..<0xFF> are reserved in the vocabulary) instead of
     * UNK. Default 0. */
    int spm_byte_fallback;
    /* Trainer threads. The trained model depends on this number (the EM
     * sums run per thread), but is identical for the same corpus, seed and
     * thread count on any machine. Default 1. */
    int spm_threads;
    /* Train on at most this many sentences, a uniform sample drawn with
     * the seed (reservoir sampling in spm.cc, because the library's own
     * input_sentence_size sampler has a fixed seed); 0 (default) uses all. */
    int64_t spm_max_sentences;
    /* A piece kept whole wherever it occurs in the text (SentencePiece's
     * user_defined_symbols: data.extra_tag), or NULL. It must have no
     * comma. */
    const char *spm_user_symbol;

    /* --- words only --- */
    int min_freq; /* keep words seen at least this often; default 1 */
} TokenizerSpec;

/* Defaults as documented above for the given kind. */
void tokenizer_spec_init(TokenizerSpec *spec, TokenizerKind kind);

/* A sentence source for training: returns 1 and sets *line (not necessarily
 * '\0'-terminated) and *len for each sentence; 0 at the end; a negative value
 * on error after recording the message with nmt_fail: -1 means NMT_ERR_IO,
 * in general -S means status S (e.g. -NMT_ERR_FORMAT). The line must stay
 * valid until the next call. For a joint vocabulary the caller passes a
 * source that yields the sentences of both sides. */
typedef int (*SentenceSourceFn)(void *ctx, const char **line, size_t *len);

typedef struct Tokenizer Tokenizer;

/* Trains a tokenizer on the sentences of `next`. Errors: NMT_ERR_CONFIG for
 * bad options or a vocab_size the corpus cannot fill (message names the
 * key, e.g. "data.spm_vocab_size = 50000 is too large for this corpus:
 * ... <= 166"), the source's own status when it fails (its message kept),
 * NMT_ERR_RUNTIME for an empty corpus or other trainer failures,
 * NMT_ERR_NOMEM. On failure *out is NULL. Free with tokenizer_free. */
NmtStatus tokenizer_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                          Tokenizer **out);
void tokenizer_free(Tokenizer *t); /* NULL is a no-op */

TokenizerKind tokenizer_kind(const Tokenizer *t);
/* A SentencePiece tokenizer's model type (spm_model_type: "unigram",
 * "bpe", "word", "char" or "unknown"); NULL for words. */
const char *tokenizer_spm_type(const Tokenizer *t);
/* A SentencePiece model whose special pieces were not at nmt's ids 0..3
 * is loaded with them moved there (spm_load_proto): then 1, and
 * given_ids[k] the id special k (pad, unk, bos, eos) had in the model as
 * given (-1: none; a control piece was added). 0 for other models and
 * for words. */
int tokenizer_spm_moved_specials(const Tokenizer *t, int given_ids[NMT_N_SPECIAL]);
/* Number of ids: valid ids are 0 .. tokenizer_vocab_size() - 1. */
int tokenizer_vocab_size(const Tokenizer *t);
/* The piece (spm, with U+2581 "▁" marking a word start) or word of `id`;
 * NULL when id is out of range. Owned by the tokenizer. */
const char *tokenizer_piece(const Tokenizer *t, int id);
/* The id of a piece or word; NMT_UNK_ID when it is not in the vocabulary. */
int tokenizer_piece_to_id(const Tokenizer *t, const char *piece);

/* A lower bound on the number of ids tokenizer_encode gives for
 * text[0..len), counted only up to `cap` (the result is at most cap; the
 * scan stops there, so a huge line costs no more than its first cap words).
 * One pass over the bytes, no allocation: it lets a caller drop a line that
 * cannot fit a length limit without encoding it (`nmt prepare`).
 *   words: the number of words, exact.
 *   spm:   the words between ASCII spaces that hold a character no
 *          normalization rule deletes or maps to whitespace: each gives its
 *          own U+2581-started run, and no piece crosses a U+2581 (see
 *          spm_pieces_within_words; a model where that fails gives 0). */
int tokenizer_min_ids(const Tokenizer *t, const char *text, size_t len, int cap);
/* The same, and in *prefix_len the length of the shortest prefix whose own
 * bound is cap when the bound reaches cap (else len). Since no id spans two
 * words, encoding that prefix gives the first ids of the whole text, at
 * least cap of them (`nmt translate` truncating a huge line). */
int tokenizer_min_ids_prefix(const Tokenizer *t, const char *text, size_t len, int cap,
                             size_t *prefix_len);
/* The same bound before training, for a tokenizer of `kind` trained by
 * tokenizer_train (the SentencePiece trainer's default split_by_whitespace,
 * which nmt never changes, keeps every piece within a word). */
int tokenizer_kind_min_ids(TokenizerKind kind, const char *text, size_t len, int cap);

/* The most bytes a SentencePiece piece holds: 16 characters (the trainer's
 * default max_piece_length, which nmt keeps) of at most 4 bytes. */
#define TOKENIZER_SPM_PIECE_BYTES 64
/* The most bytes of a text that the first max_ids ids of a SentencePiece
 * tokenizer can come from (max_ids pieces of TOKENIZER_SPM_PIECE_BYTES),
 * or SIZE_MAX for the word tokenizer (one id a word, however long): a text
 * longer than that has more ids, but for runs of characters the model does
 * not know, which SentencePiece merges into one unknown piece (junk, such as
 * a blob of binary or base64 without spaces). Encoding such a text costs
 * SentencePiece hundreds of bytes of memory per byte, so callers treat it
 * as over max_ids ids without encoding all of it. */
size_t tokenizer_bytes_cap(const Tokenizer *t, int max_ids);
/* The same by kind, before a tokenizer exists (its training) */
size_t tokenizer_kind_bytes_cap(TokenizerKind kind, int max_ids);

/* Encodes text[0..len) into a new array *ids (nmt_free it) of *n_ids ids
 * (no BOS/EOS). Empty or all-whitespace text gives *n_ids = 0 and a valid,
 * freeable *ids. */
NmtStatus tokenizer_encode(const Tokenizer *t, const char *text, size_t len,
                           int32_t **ids, int *n_ids);
/* The same into a caller-owned growable buffer: *ids (may be NULL) holds
 * *capacity ids and is grown with nmt_realloc when needed; on return it holds
 * *n_ids ids. Reuse the buffer across calls to avoid allocations; nmt_free it
 * at the end (also after an error). */
NmtStatus tokenizer_encode_buf(const Tokenizer *t, const char *text, size_t len,
                               int32_t **ids, int *n_ids, int *capacity);
/* The bytes of a text that a token stands for: text[begin..end). */
typedef struct {
    size_t begin, end;
} TokenSpan;
/* As tokenizer_encode_buf, but a segmentation drawn at random for subword
 * regularization (spm_sample_encode: unigram lattice sampling with inverse
 * temperature alpha, or BPE-dropout with probability alpha), a function of
 * (tokenizer, text, alpha, key) only. SentencePiece tokenizers only: a word
 * tokenizer is an NMT_ERR_CONFIG error. */
NmtStatus tokenizer_sample_encode_buf(const Tokenizer *t, const char *text, size_t len, double alpha,
                                      uint64_t key, int32_t **ids, int *n_ids, int *capacity);
/* As tokenizer_sample_encode_buf (the same draw for the same key), with
 * each token's bytes in text in *spans (guided alignment maps words onto a
 * drawn segmentation with them): *ids and *spans are grown together, to
 * *capacity entries each; pass the same two buffers every call. */
NmtStatus tokenizer_sample_encode_spans_buf(const Tokenizer *t, const char *text, size_t len, double alpha,
                                            uint64_t key, int32_t **ids, TokenSpan **spans, int *n_ids,
                                            int *capacity);
/* Decodes n ids into a new '\0'-terminated string *text (nmt_free it).
 * PAD, BOS and EOS are skipped. An id outside [0, vocab_size) is an
 * NMT_ERR_RUNTIME error. */
NmtStatus tokenizer_decode(const Tokenizer *t, const int32_t *ids, int n, char **text);

/* As tokenizer_encode (new arrays *ids and *spans of *n_ids; nmt_free
 * both), and where each id came from in text[0..len): spm: the bytes of
 * the input (before normalization) that SentencePiece aligns to the piece,
 * the space before a word included; words: the word. Spans follow one
 * another, in order. (`nmt translate --alignment` maps tokens to words.) */
NmtStatus tokenizer_encode_spans(const Tokenizer *t, const char *text, size_t len, int32_t **ids,
                                 TokenSpan **spans, int *n_ids);
/* As tokenizer_decode, and spans[k] (the caller's array of n) the bytes of
 * *text that ids[k] became: spm: SentencePiece's alignment (the space
 * before a word and UNK's " \u2047 " included); words: the word. PAD, BOS
 * and EOS get an empty span where they stand. */
NmtStatus tokenizer_decode_spans(const Tokenizer *t, const int32_t *ids, int n, char **text, TokenSpan *spans);

/* The serialized form described above, in a new buffer (nmt_free it). */
NmtStatus tokenizer_serialize(const Tokenizer *t, uint8_t **bytes, size_t *n);
/* *same = 1 when t serializes to exactly bytes[0..n) (a checkpoint's
 * tokenizer), else 0. */
NmtStatus tokenizer_same_as_serialized(const Tokenizer *t, const uint8_t *bytes, size_t n, int *same);
/* Rebuilds a tokenizer from tokenizer_serialize's bytes. NMT_ERR_FORMAT for
 * a bad tag or payload. */
NmtStatus tokenizer_deserialize(const uint8_t *bytes, size_t n, Tokenizer **out);

/* Writes the .model file (spm) or the vocabulary text file (word). */
NmtStatus tokenizer_save(const Tokenizer *t, const char *path);
/* Reads either kind of file. NMT_ERR_IO when it cannot be read,
 * NMT_ERR_FORMAT when it is neither a valid SentencePiece model nor a valid
 * word vocabulary; messages name the file (and the line for words). */
NmtStatus tokenizer_load(const char *path, Tokenizer **out);

#ifdef __cplusplus
}
#endif

#endif
