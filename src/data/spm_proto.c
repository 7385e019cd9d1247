/* spm_proto.c: SentencePiece's ModelProto as protobuf wire bytes
 * (spm_proto.h): reading fields, and moving the special pieces to nmt's
 * ids. */
#include "data/spm_proto.h"

#include <string.h>

bool spm_proto_read_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *i < n && shift < 64; shift += 7) {
        uint8_t b = p[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

bool spm_proto_skip_field(const uint8_t *p, size_t n, size_t *i, unsigned wire) {
    uint64_t v;
    switch (wire) {
    case 0: return spm_proto_read_varint(p, n, i, &v);
    case 1: *i += 8; return *i <= n;
    case 2:
        if (!spm_proto_read_varint(p, n, i, &v) || v > n - *i) return false;
        *i += v;
        return true;
    case 5: *i += 4; return *i <= n;
    default: return false;
    }
}

bool spm_proto_find_message(const uint8_t *p, size_t n, unsigned field, const uint8_t **sub,
                            size_t *sub_n) {
    size_t i = 0;
    uint64_t tag, len;
    while (i < n && spm_proto_read_varint(p, n, &i, &tag)) {
        if ((tag >> 3) == field && (tag & 7) == 2) {
            if (!spm_proto_read_varint(p, n, &i, &len) || len > n - i) return false;
            *sub = p + i;
            *sub_n = (size_t)len;
            return true;
        }
        if (!spm_proto_skip_field(p, n, &i, (unsigned)(tag & 7))) return false;
    }
    return false;
}

/* ---- writing ---------------------------------------------------------------- */

/* The bytes written so far; `failed` once a write could not grow it. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool failed;
} Out;

static void put(Out *o, const void *bytes, size_t n) {
    if (o->failed) return;
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->n + n) cap *= 2;
        uint8_t *p = nmt_realloc(o->p, cap);
        if (!p) {
            o->failed = true;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, bytes, n);
    o->n += n;
}

static void put_varint(Out *o, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    put(o, b, n);
}

static void put_tag(Out *o, unsigned field, unsigned wire) { put_varint(o, (uint64_t)field << 3 | wire); }

static void put_bytes_field(Out *o, unsigned field, const void *bytes, size_t n) {
    put_tag(o, field, 2);
    put_varint(o, n);
    put(o, bytes, n);
}

/* SentencePiece {piece: name, score: 0, type: CONTROL} as a field of ModelProto */
static void put_control_piece(Out *o, const char *name) {
    Out piece = {0};
    put_bytes_field(&piece, 1, name, strlen(name));
    static const uint8_t zero_score[4] = {0, 0, 0, 0};
    put_tag(&piece, 2, 5);
    put(&piece, zero_score, 4);
    put_tag(&piece, 3, 0);
    put_varint(&piece, SPM_PIECE_CONTROL);
    if (piece.failed) o->failed = true;
    else put_bytes_field(o, SPM_PROTO_PIECES, piece.p, piece.n);
    nmt_free(piece.p);
}

/* TrainerSpec's special ids (40..43: unk, bos, eos, pad) and pieces
 * (45..48, the same order); nmt's special k (pad, unk, bos, eos) is
 * field kSpecialIdField[k] and kSpecialPieceField[k] */
static const unsigned kSpecialIdField[4] = {43, 40, 41, 42};
static const unsigned kSpecialPieceField[4] = {48, 45, 46, 47};

static bool special_field(unsigned field) { return (field >= 40 && field <= 43) || (field >= 45 && field <= 48); }

/* The trainer spec spec[0..n) without its special ids and pieces, then
 * those of nmt (special k at id k, named names[k]); false when malformed. */
static bool put_trainer_spec(Out *o, const uint8_t *spec, size_t n, const char *const names[4]) {
    Out body = {0};
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        uint64_t tag;
        if (!spm_proto_read_varint(spec, n, &i, &tag) || !spm_proto_skip_field(spec, n, &i, (unsigned)(tag & 7))) {
            nmt_free(body.p);
            return false;
        }
        if (!special_field((unsigned)(tag >> 3))) put(&body, spec + start, i - start);
    }
    for (int k = 0; k < 4; k++) {
        put_tag(&body, kSpecialIdField[k], 0);
        put_varint(&body, (uint64_t)k);
        put_bytes_field(&body, kSpecialPieceField[k], names[k], strlen(names[k]));
    }
    if (body.failed) o->failed = true;
    else put_bytes_field(o, SPM_PROTO_TRAINER_SPEC, body.p, body.n);
    nmt_free(body.p);
    return true;
}

/* The bytes of piece field number `index` (0-based among the pieces) of
 * proto[0..n), tag and length included: *at, *len; false when absent. */
static bool piece_field(const uint8_t *p, size_t n, int index, size_t *at, size_t *len) {
    size_t i = 0;
    int seen = 0;
    while (i < n) {
        size_t start = i;
        uint64_t tag;
        if (!spm_proto_read_varint(p, n, &i, &tag) || !spm_proto_skip_field(p, n, &i, (unsigned)(tag & 7)))
            return false;
        if ((tag >> 3) == SPM_PROTO_PIECES && (tag & 7) == 2 && seen++ == index) {
            *at = start;
            *len = i - start;
            return true;
        }
    }
    return false;
}

NmtStatus spm_proto_move_specials(const uint8_t *proto, size_t n, const int ids[4],
                                  const char *const names[4], uint8_t **out, size_t *out_n) {
    *out = NULL;
    *out_n = 0;
    Out o = {0};
    bool ok = true;
    /* the four specials first, at ids 0..3 */
    for (int k = 0; k < 4 && ok; k++) {
        size_t at, len;
        if (ids[k] < 0) put_control_piece(&o, names[k]);
        else if ((ok = piece_field(proto, n, ids[k], &at, &len))) put(&o, proto + at, len);
    }
    /* then every field in its order: the other pieces, the trainer spec
     * rewritten, the rest as it is */
    size_t i = 0;
    int piece = 0;
    bool spec_seen = false;
    while (ok && i < n) {
        size_t start = i;
        uint64_t tag;
        if (!spm_proto_read_varint(proto, n, &i, &tag) ||
            !spm_proto_skip_field(proto, n, &i, (unsigned)(tag & 7))) {
            ok = false;
            break;
        }
        unsigned field = (unsigned)(tag >> 3);
        if (field == SPM_PROTO_PIECES && (tag & 7) == 2) {
            bool special = false;
            for (int k = 0; k < 4; k++) special |= ids[k] == piece;
            if (!special) put(&o, proto + start, i - start);
            piece++;
        } else if (field == SPM_PROTO_TRAINER_SPEC && (tag & 7) == 2) { /* (protobuf merges repeats) */
            size_t j = start;
            uint64_t t, len;
            spm_proto_read_varint(proto, n, &j, &t);
            spm_proto_read_varint(proto, n, &j, &len);
            ok = put_trainer_spec(&o, proto + j, (size_t)len, names);
            spec_seen = true;
        } else {
            put(&o, proto + start, i - start);
        }
    }
    if (ok && !spec_seen) ok = put_trainer_spec(&o, NULL, 0, names);
    if (!ok) {
        nmt_free(o.p);
        return nmt_fail(NMT_ERR_FORMAT, "a malformed SentencePiece model proto");
    }
    if (o.failed) {
        nmt_free(o.p);
        return nmt_fail_nomem("rewriting a SentencePiece model");
    }
    *out = o.p;
    *out_n = o.n;
    return NMT_OK;
}
