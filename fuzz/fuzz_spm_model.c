/* fuzz_spm_model.c: libFuzzer target for SentencePiece models as nmt reads
 * them (src/data/spm_proto.c, src/data/spm.cc): the wire-format rewrite
 * that moves a model's special pieces to nmt's ids 0..3, on arbitrary
 * bytes, and the whole load of a model file (the protobuf parse, the move,
 * encoding and serializing).
 *
 * Input: the bytes of a .model file (seeds in tests/fuzz/fuzz_spm_model/:
 * spm_train models with SentencePiece's default ids, bos and eos off, pad
 * at 3, nmt's ids, byte fallback, user-defined symbols with unk at 5).
 *
 * Properties (from the definitions, not from the code):
 *   - spm_proto_move_specials, given four distinct ids (each -1 or below
 *     the piece count), writes the input's pieces once each plus one per
 *     -1, the four specials first in the order asked; it fails only on a
 *     malformed proto (never crashes), and fails when an id is past the
 *     pieces;
 *   - a model that loads has pad, unk, bos, eos at 0..3, encodes a text
 *     into ids of its vocabulary that are none of pad, bos and eos, and
 *     serializes into a model that loads with its specials in place, the
 *     same size and the same pieces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/spm.h"
#include "data/spm_proto.h"
#include "data/tokenizer.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    nmt_log_quiet(1);
    return 0;
}

/* The piece fields of a wire-format ModelProto p[0..n), or -1 when it is
 * malformed; the bytes of piece `index` in *at, *len when asked. */
static int count_pieces(const uint8_t *p, size_t n, int index, const uint8_t **at, size_t *len) {
    size_t i = 0;
    int pieces = 0;
    while (i < n) {
        size_t start = i;
        uint64_t tag;
        if (!spm_proto_read_varint(p, n, &i, &tag) || !spm_proto_skip_field(p, n, &i, (unsigned)(tag & 7)))
            return -1;
        if ((tag >> 3) == SPM_PROTO_PIECES && (tag & 7) == 2) {
            if (pieces == index && at) {
                *at = p + start;
                *len = i - start;
            }
            pieces++;
        }
    }
    return pieces;
}

/* Every trainer spec field of the well-formed ModelProto p[0..n) holds
 * well-formed fields. */
static bool specs_well_formed(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t tag, len;
        size_t at = i;
        if (!spm_proto_read_varint(p, n, &i, &tag)) return false;
        if ((tag >> 3) == SPM_PROTO_TRAINER_SPEC && (tag & 7) == 2) {
            if (!spm_proto_read_varint(p, n, &i, &len) || len > n - i) return false;
            const uint8_t *spec = p + i;
            size_t j = 0;
            while (j < len) {
                uint64_t t;
                if (!spm_proto_read_varint(spec, len, &j, &t) || !spm_proto_skip_field(spec, len, &j, (unsigned)(t & 7)))
                    return false;
            }
            i += len;
        } else {
            i = at;
            if (!spm_proto_read_varint(p, n, &i, &tag) || !spm_proto_skip_field(p, n, &i, (unsigned)(tag & 7)))
                return false;
        }
    }
    return true;
}

static void check_move(const uint8_t *data, size_t size) {
    int pieces = count_pieces(data, size, -1, NULL, NULL);
    uint64_t h = fuzz_hash(data, size);
    /* four ids from the hash, distinct unless -1: -1, a piece or one past
     * the pieces */
    int ids[4], limit = pieces > 0 ? pieces + 1 : 2;
    for (int k = 0; k < 4; k++) {
        bool taken;
        do {
            ids[k] = (int)(h % (uint64_t)(limit + 1)) - 1;
            h = h * 6364136223846793005ULL + 1442695040888963407ULL;
            taken = false;
            for (int j = 0; j < k; j++) taken |= ids[k] >= 0 && ids[j] == ids[k];
        } while (taken);
    }
    static const char *const names[4] = {"<pad>", "<unk>", "<s>", "</s>"};
    uint8_t *out = NULL;
    size_t out_n = 0;
    NmtStatus st = spm_proto_move_specials(data, size, ids, names, &out, &out_n);
    if (pieces < 0 || !specs_well_formed(data, size)) {
        FUZZ_CHECK(st != NMT_OK && out == NULL, "a malformed proto must fail");
        return;
    }
    bool past = false;
    int added = 0;
    for (int k = 0; k < 4; k++) {
        past |= ids[k] >= pieces;
        added += ids[k] < 0;
    }
    if (past) {
        FUZZ_CHECK(st != NMT_OK && out == NULL, "an id past the %d pieces must fail", pieces);
        return;
    }
    FUZZ_CHECK(st == NMT_OK, "a well-formed proto with ids in range is rewritten");
    int got = count_pieces(out, out_n, -1, NULL, NULL);
    FUZZ_CHECK(got == pieces + added, "%d pieces out, want %d + %d", got, pieces, added);
    for (int k = 0; k < 4; k++) {
        if (ids[k] < 0) continue;
        const uint8_t *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        count_pieces(data, size, ids[k], &a, &la);
        count_pieces(out, out_n, k, &b, &lb);
        FUZZ_CHECK(a && b && la == lb && memcmp(a, b, la) == 0, "special %d is piece %d of the input", k, ids[k]);
    }
    nmt_free(out);
}

static void check_load(const uint8_t *data, size_t size) {
    SpmModel *m = NULL;
    if (spm_load_proto(data, size, "fuzz", &m) != NMT_OK) {
        FUZZ_CHECK(m == NULL, "a failed load leaves no model");
        return;
    }
    int n = spm_vocab_size(m);
    FUZZ_CHECK(n >= NMT_N_SPECIAL, "vocabulary %d", n);
    static const char text[] = "ein Hund l\xc3\xa4uft \xe2\x96\x81 <s> </s> <pad> 123 \xff";
    int32_t *ids = NULL;
    int n_ids = 0, cap = 0;
    if (spm_encode(m, text, sizeof text - 1, &ids, &n_ids, &cap) == NMT_OK)
        for (int i = 0; i < n_ids; i++)
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < n && ids[i] != NMT_PAD_ID && ids[i] != NMT_BOS_ID &&
                           ids[i] != NMT_EOS_ID,
                       "id %d of %d", ids[i], n);
    nmt_free(ids);
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (spm_serialize(m, &bytes, &len) == NMT_OK) {
        SpmModel *again = NULL;
        FUZZ_CHECK(spm_load_proto(bytes, len, "fuzz again", &again) == NMT_OK, "a serialized model loads");
        int given[NMT_N_SPECIAL];
        FUZZ_CHECK(!spm_moved_specials(again, given), "a serialized model has its specials in place");
        FUZZ_CHECK(spm_vocab_size(again) == n, "size %d, then %d", n, spm_vocab_size(again));
        for (int id = 0; id < n; id++) {
            const char *a = spm_piece(m, id), *b = spm_piece(again, id);
            FUZZ_CHECK(a && b && strcmp(a, b) == 0, "piece %d", id);
        }
        spm_free(again);
    }
    nmt_free(bytes);
    spm_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_move(data, size);
    check_load(data, size);
    return 0;
}
