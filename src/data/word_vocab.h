/* word_vocab.h: the word-level tokenizer: whitespace-separated words and a
 * frequency vocabulary (used through tokenizer.h; this header is for
 * tokenizer.c and tests).
 *
 * Words are maximal runs of bytes between whitespace: ASCII space, \t, \n,
 * \v, \f, \r and the Unicode White_Space characters U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, plus the invisible
 * U+200B and U+FEFF (the same set as corpus_line_is_blank).
 *
 * Training counts every word, drops the words spelled like the specials
 * ("<pad>", "<unk>", "<s>", "</s>": such text always encodes to UNK) and
 * those seen fewer than min_freq times, sorts by descending count with ties
 * broken by byte order (memcmp, shorter first on a common prefix) and keeps
 * the first vocab_size - 4 (all when vocab_size <= 0). Ids: 0..3 the
 * specials, then the kept words in that order. Deterministic.
 *
 * Text form (the vocabulary file and the serialized payload): one line
 * "word<TAB>count\n" per id in id order, the first four being
 * "<pad>\t0", "<unk>\t0", "<s>\t0", "</s>\t0". */
#ifndef NMT_DATA_WORD_VOCAB_H
#define NMT_DATA_WORD_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include "common.h"
#include "data/tokenizer.h"

typedef struct WordVocab WordVocab;

/* Uses spec->vocab_size, spec->vocab_size_key and spec->min_freq. Errors:
 * NMT_ERR_CONFIG (vocab_size 1..4, min_freq < 1), the source's status,
 * NMT_ERR_RUNTIME when the corpus has no words, NMT_ERR_NOMEM. */
NmtStatus word_vocab_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                           WordVocab **out);
/* Parses the text form; `name` (file name or "checkpoint") prefixes error
 * messages as "NAME:LINE: ...". */
NmtStatus word_vocab_parse(const char *text, size_t len, const char *name, WordVocab **out);
/* The text form in a new buffer (nmt_free it), '\0'-terminated; *len
 * excludes the terminator. */
NmtStatus word_vocab_to_text(const WordVocab *v, char **text, size_t *len);
void word_vocab_free(WordVocab *v); /* NULL is a no-op */

int word_vocab_size(const WordVocab *v);
const char *word_vocab_piece(const WordVocab *v, int id); /* NULL out of range */
/* Training count of `id` (0 for the specials and out of range). */
int64_t word_vocab_count(const WordVocab *v, int id);
/* Id of word[0..len), NMT_UNK_ID when absent. */
int word_vocab_lookup(const WordVocab *v, const char *word, size_t len);

/* As tokenizer_encode_buf / tokenizer_decode. */
NmtStatus word_vocab_encode(const WordVocab *v, const char *text, size_t len,
                            int32_t **ids, int *n_ids, int *capacity);
NmtStatus word_vocab_decode(const WordVocab *v, const int32_t *ids, int n, char **text);

/* Byte length of the whitespace character at s[0..len), 0 when s does not
 * start with one. */
size_t word_space_len(const char *s, size_t len);
/* Byte length of the word starting at s (up to the next whitespace
 * character, as word_space_len, or the end). */
size_t word_len(const char *s, size_t len);
/* The words of a text one at a time: the first word of text[*pos..len)
 * (a maximal run of bytes that are not whitespace, as word_space_len
 * tells): 1 with its bytes in [*begin, *end) and *pos = *end; 0 when only
 * whitespace is left (then *pos = len). The one splitting rule of the word
 * tokenizer, `--alignment`'s word positions and data.train_align's. */
int word_next(const char *text, size_t len, size_t *pos, size_t *begin, size_t *end);

#endif
