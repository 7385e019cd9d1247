/* spm_proto.h: SentencePiece's ModelProto read and rewritten as protobuf
 * wire bytes. libsentencepiece-dev installs no header for the model proto
 * (sentencepiece_model.proto), so spm.cc reads the few fields it needs
 * here, and a model whose special pieces are not at nmt's ids is rewritten
 * here into one that has them there (spm_proto_move_specials).
 *
 * The fields used (sentencepiece_model.proto):
 *   ModelProto:   1 pieces (repeated SentencePiece), 2 trainer_spec
 *   SentencePiece: 1 piece (string), 2 score (float), 3 type (NORMAL 1,
 *                  UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6)
 *   TrainerSpec:  3 model_type, 40 unk_id, 41 bos_id, 42 eos_id,
 *                 43 pad_id, 45 unk_piece, 46 bos_piece, 47 eos_piece,
 *                 48 pad_piece */
#ifndef NMT_DATA_SPM_PROTO_H
#define NMT_DATA_SPM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common.h"

enum {
    SPM_PROTO_PIECES = 1,       /* ModelProto.pieces */
    SPM_PROTO_TRAINER_SPEC = 2, /* ModelProto.trainer_spec */
    SPM_PROTO_MODEL_TYPE = 3,   /* TrainerSpec.model_type */
    SPM_PIECE_CONTROL = 3       /* SentencePiece.Type CONTROL */
};

/* A varint at p[*i..n) into *v, *i past it: false when it runs past n. */
bool spm_proto_read_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v);
/* Skips a field of wire type `wire` at p[*i..n): false when malformed. */
bool spm_proto_skip_field(const uint8_t *p, size_t n, size_t *i, unsigned wire);
/* The first length-delimited field `field` of the message p[0..n): its
 * bytes in *sub, *sub_n; false when there is none. */
bool spm_proto_find_message(const uint8_t *p, size_t n, unsigned field, const uint8_t **sub,
                            size_t *sub_n);

/* The model proto[0..n) with its special pieces moved to ids 0..3 in nmt's
 * order (pad, unk, bos, eos), into a new buffer *out (nmt_free it), *out_n
 * bytes. ids[k] is the id special k has in proto (-1: none, a CONTROL
 * piece named names[k] is added with score 0); names[k] is its piece. The
 * other pieces follow in their order, so a piece's new id is its old one
 * plus the number of specials moved or added before it. The trainer spec's
 * special ids and piece names are set to match; every other field is kept
 * as it is. NMT_ERR_FORMAT when the proto is malformed. */
NmtStatus spm_proto_move_specials(const uint8_t *proto, size_t n, const int ids[4],
                                  const char *const names[4], uint8_t **out, size_t *out_n);

#ifdef __cplusplus
}
#endif

#endif
