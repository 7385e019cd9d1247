/* spm.h: the extern "C" wrapper around the SentencePiece C++ library
 * (SentencePieceTrainer, SentencePieceProcessor), implemented in spm.cc,
 * the only C++ file of nmt. No C++ exception crosses this interface: every
 * failure is an NmtStatus with a message set by nmt_fail.
 *
 * Used by tokenizer.c; other modules use tokenizer.h instead. Ownership and
 * semantics follow tokenizer.h (ids as there, buffers from nmt_malloc). */
#ifndef NMT_DATA_SPM_H
#define NMT_DATA_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common.h"
#include "data/tokenizer.h"

typedef struct SpmModel SpmModel;

/* Trains in memory from the sentence source (no temporary files), with
 * pad/unk/bos/eos ids 0..3 named <pad> <unk> <s> </s>. Uses spec's
 * vocab_size, vocab_size_key, seed and spm_* fields and
 * character_coverage. The trainer logs only errors unless the environment
 * variable NMT_VERBOSE is set (non-empty, not "0"). */
NmtStatus spm_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                    SpmModel **out);
/* Loads a serialized ModelProto (the bytes of a .model file); `name` (a file
 * name or "checkpoint") prefixes error messages. A model whose specials
 * are not at ids 0..3 (pad, unk, bos, eos: spm_train's defaults are -1, 0,
 * 1, 2) is rewritten so that they are, the missing ones added as control
 * pieces, the others' order kept (spm_moved_specials says so; the model
 * serializes as rewritten); NMT_ERR_FORMAT when that cannot be done. */
NmtStatus spm_load_proto(const uint8_t *bytes, size_t n, const char *name, SpmModel **out);
/* 1 when spm_load_proto moved m's specials; given_ids[k] then holds the
 * id special k (pad, unk, bos, eos) had (-1: none, added). 0 otherwise
 * (given_ids 0..3). */
int spm_moved_specials(const SpmModel *m, int given_ids[NMT_N_SPECIAL]);
void spm_free(SpmModel *m); /* NULL is a no-op */

/* The serialized ModelProto in a new buffer (nmt_free it). */
NmtStatus spm_serialize(const SpmModel *m, uint8_t **bytes, size_t *n);

int spm_vocab_size(const SpmModel *m);
const char *spm_piece(const SpmModel *m, int id); /* NULL out of range */
int spm_piece_to_id(const SpmModel *m, const char *piece);
/* 1 when every piece is within one word: U+2581 (the word start) is a piece
 * of its own and appears in no piece except as its first character, as for
 * every model trained with SentencePiece's default split_by_whitespace
 * (spm_train never changes it). Then each word of the normalized text gives
 * at least one id (tokenizer_min_ids relies on it). */
int spm_pieces_within_words(const SpmModel *m);

/* The model's type as its trainer spec says: "unigram", "bpe", "word",
 * "char", or "unknown" (a static string). */
const char *spm_model_type(const SpmModel *m);

/* As tokenizer_encode_buf / tokenizer_decode. */
NmtStatus spm_encode(const SpmModel *m, const char *text, size_t len,
                     int32_t **ids, int *n_ids, int *capacity);
NmtStatus spm_decode(const SpmModel *m, const int32_t *ids, int n, char **text);
/* As tokenizer_encode_spans / tokenizer_decode_spans (SentencePieceText:
 * each piece's bytes in the input, or in the decoded text). */
NmtStatus spm_encode_spans(const SpmModel *m, const char *text, size_t len, int32_t **ids, TokenSpan **spans,
                           int *n_ids);
NmtStatus spm_decode_spans(const SpmModel *m, const int32_t *ids, int n, char **text, TokenSpan *spans);
/* As spm_encode, but one segmentation drawn at random (subword
 * regularization): unigram models sample from the whole segmentation
 * lattice with inverse temperature alpha (Kudo 2018, l = infinity), BPE
 * models drop each merge with probability alpha (BPE-dropout). The draw is
 * a function of (model, text, alpha, key) only. */
NmtStatus spm_sample_encode(const SpmModel *m, const char *text, size_t len, double alpha,
                            uint64_t key, int32_t **ids, int *n_ids, int *capacity);
/* As spm_sample_encode (the same draw for the same key), with each piece's
 * bytes in the input in *spans when spans is not NULL: *ids and *spans are
 * grown together, both to *capacity entries. */
NmtStatus spm_sample_encode_spans(const SpmModel *m, const char *text, size_t len, double alpha,
                                  uint64_t key, int32_t **ids, TokenSpan **spans, int *n_ids, int *capacity);

#ifdef __cplusplus
}
#endif

#endif
