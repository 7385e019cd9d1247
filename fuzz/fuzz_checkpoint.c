/* fuzz_checkpoint.c: libFuzzer target for checkpoint_load and
 * checkpoint_load_weights (src/train/checkpoint.c) and what `nmt translate` does next with a loaded file (the
 * embedded config and tokenizers).
 *
 * Each input is loaded twice from an in-memory file (memfd):
 *   raw      the bytes as they are: magic, version, length and CRC checks;
 *   fixed    a copy whose header (magic, version 1, flags 0, content length)
 *            and trailing CRC32 are made valid, so that the section parser
 *            behind the checksum is fuzzed too (a fuzzer cannot forge CRCs).
 * Properties:
 *   - no crash, leak or undefined behaviour; a refusal has a message that
 *     names the file;
 *   - a checkpoint that loads saves again (checkpoint_save accepts whatever
 *     checkpoint_load accepts), the saved file loads to the same contents,
 *     and saving that gives the same bytes (round trip);
 *   - the embedded config either loads or is refused with a message, the
 *     embedded tokenizers either deserialize (then encode/decode a line) or
 *     are refused with a message;
 *   - with one allocation failing (fuzz_with_alloc_failure) the loader
 *     returns NMT_ERR_NOMEM (or its normal status) and frees everything.
 * Saved files go to a folder under /dev/shm (or /tmp), removed at exit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "config.h"
#include "data/tokenizer.h"
#include "fuzz_util.h"
#include "train/checkpoint.h"

enum { HEADER = 24, CRC = 4 };

static char tmp_dir[256];

static void remove_tmp(void) {
    char p[300];
    snprintf(p, sizeof p, "%s/a.nmt", tmp_dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/b.nmt", tmp_dir);
    unlink(p);
    rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    nmt_log_quiet(1);
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(tmp_dir, sizeof tmp_dir, "%s/nmt-fuzz-ck-XXXXXX", base);
    if (!mkdtemp(tmp_dir)) abort();
    atexit(remove_tmp);
    return 0;
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

static int same_checkpoint(const Checkpoint *a, const Checkpoint *b) {
    if (strcmp(a->config_json, b->config_json) != 0) return 0;
    if (a->src_tok_len != b->src_tok_len || a->tgt_tok_len != b->tgt_tok_len) return 0;
    if (a->src_tok_len && memcmp(a->src_tok, b->src_tok, a->src_tok_len)) return 0;
    if (a->tgt_tok_len && memcmp(a->tgt_tok, b->tgt_tok, a->tgt_tok_len)) return 0;
    if (a->n_tensors != b->n_tensors || a->n_floats != b->n_floats) return 0;
    for (int i = 0; i < a->n_tensors; i++) {
        const CheckpointTensor *x = &a->tensors[i], *y = &b->tensors[i];
        if (strcmp(x->name, y->name) || x->count != y->count || x->rows != y->rows ||
            x->cols != y->cols)
            return 0;
    }
    size_t fb = a->n_floats * sizeof(float);
    if (fb && memcmp(a->params, b->params, fb)) return 0;
    if (a->optimizer != b->optimizer || !a->adam_m != !b->adam_m || !a->adam_v != !b->adam_v)
        return 0;
    if (a->adam_m && fb && (memcmp(a->adam_m, b->adam_m, fb) || memcmp(a->adam_v, b->adam_v, fb)))
        return 0;
    if (memcmp(&a->state, &b->state, sizeof a->state)) return 0;
    if (a->n_history != b->n_history) return 0;
    if (a->n_history && memcmp(a->history, b->history, (size_t)a->n_history * sizeof *a->history))
        return 0;
    return 1;
}

/* What translate does with a loaded checkpoint's config and tokenizers. */
static void use_contents(const Checkpoint *ck) {
    Config cfg;
    NmtStatus st = config_load_string(ck->config_json, "checkpoint config", "/fuzz", NULL, 0, &cfg);
    if (st == NMT_OK)
        config_free(&cfg);
    else
        FUZZ_CHECK(nmt_error_message()[0] != '\0', "config refused without a message");
    const uint8_t *blobs[2] = {ck->src_tok, ck->tgt_tok};
    size_t lens[2] = {ck->src_tok_len, ck->tgt_tok_len};
    for (int i = 0; i < 2; i++) {
        Tokenizer *t = NULL;
        static const uint8_t empty[1];
        st = tokenizer_deserialize(blobs[i] ? blobs[i] : empty, lens[i], &t);
        if (st != NMT_OK) {
            FUZZ_CHECK(t == NULL, "a refused tokenizer was returned");
            FUZZ_CHECK(nmt_error_message()[0] != '\0', "tokenizer refused without a message");
            continue;
        }
        int32_t *ids = NULL;
        int n = 0;
        const char *line = "ein kleiner Test . a small test";
        if (tokenizer_encode(t, line, strlen(line), &ids, &n) == NMT_OK) {
            for (int k = 0; k < n; k++)
                FUZZ_CHECK(ids[k] >= 0 && ids[k] < tokenizer_vocab_size(t), "id %d out of range",
                           ids[k]);
            char *text = NULL;
            if (tokenizer_decode(t, ids, n, &text) == NMT_OK) nmt_free(text);
        }
        nmt_free(ids);
        tokenizer_free(t);
    }
}

/* A checkpoint that loaded saves, loads back the same, and saves the same. */
static void round_trip(const Checkpoint *ck) {
    char pa[300], pb[300];
    snprintf(pa, sizeof pa, "%s/a.nmt", tmp_dir);
    snprintf(pb, sizeof pb, "%s/b.nmt", tmp_dir);
    NmtStatus st = checkpoint_save(ck, pa);
    FUZZ_CHECK(st == NMT_OK, "a loaded checkpoint does not save: %s", nmt_error_message());
    Checkpoint back;
    st = checkpoint_load(pa, &back);
    FUZZ_CHECK(st == NMT_OK, "a saved checkpoint does not load: %s", nmt_error_message());
    FUZZ_CHECK(same_checkpoint(ck, &back), "the contents changed in a save and load");
    st = checkpoint_save(&back, pb);
    FUZZ_CHECK(st == NMT_OK, "second save: %s", nmt_error_message());
    size_t na = 0, nb = 0;
    uint8_t *a = read_file(pa, &na), *b = read_file(pb, &nb);
    FUZZ_CHECK(a && b && na == nb && memcmp(a, b, na) == 0, "two saves of one checkpoint differ");
    free(a);
    free(b);
    checkpoint_free(&back);
}

typedef struct {
    const uint8_t *data;
    size_t size;
    int check; /* 1: round trip and contents (the first, normal run) */
} Bytes;

static NmtStatus load_bytes(void *ctx) {
    const Bytes *in = ctx;
    int fd = fuzz_memfd(in->data, in->size);
    if (fd < 0) abort();
    char path[64];
    fuzz_fd_path(fd, path, sizeof path);
    Checkpoint ck;
    NmtStatus st = checkpoint_load(path, &ck);
    if (in->check) {
        /* the weights-only load accepts and refuses alike, and gives the
         * same weights without the moments */
        Checkpoint w;
        NmtStatus sw = checkpoint_load_weights(path, &w);
        FUZZ_CHECK(sw == st, "checkpoint_load says %s, checkpoint_load_weights %s", nmt_status_name(st),
                   nmt_status_name(sw));
        if (sw == NMT_OK && st == NMT_OK)
            FUZZ_CHECK(w.adam_m == NULL && w.adam_v == NULL && w.n_floats == ck.n_floats &&
                           (!w.n_floats || memcmp(w.params, ck.params, w.n_floats * sizeof(float)) == 0),
                       "the weights-only load differs");
        checkpoint_free(&w);
    }
    close(fd);
    if (st != NMT_OK) {
        FUZZ_CHECK(ck.config_json == NULL && ck.params == NULL && ck.tensors == NULL,
                   "a refused checkpoint left contents");
        /* (out-of-memory messages name what was being done, not always the file) */
        FUZZ_CHECK(st == NMT_ERR_NOMEM || strstr(nmt_error_message(), path) != NULL,
                   "the message does not name %s: %s", path, nmt_error_message());
        return st;
    }
    FUZZ_CHECK(ck.config_json != NULL, "a loaded checkpoint without config text");
    if (in->check) {
        round_trip(&ck);
        use_contents(&ck);
    }
    checkpoint_free(&ck);
    return NMT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t h = fuzz_hash(data, size);
    Bytes raw = {data, size, 1};
    NmtStatus st = load_bytes(&raw);
    if (size >= HEADER + CRC) {
        uint8_t *fixed = malloc(size);
        if (!fixed) return 0;
        memcpy(fixed, data, size);
        memcpy(fixed, "NMTCKPT", 8);
        put_u32(fixed + 8, CHECKPOINT_VERSION);
        put_u32(fixed + 12, 0);
        put_u64(fixed + 16, size - HEADER - CRC);
        put_u32(fixed + size - CRC, (uint32_t)crc32(crc32(0L, Z_NULL, 0), fixed, (uInt)(size - CRC)));
        Bytes fx = {fixed, size, memcmp(fixed, data, size) != 0};
        if (fx.check)
            load_bytes(&fx);
        fx.check = 0;
        fuzz_with_alloc_failure(load_bytes, &fx, h);
        free(fixed);
    } else {
        raw.check = 0;
        fuzz_with_alloc_failure(load_bytes, &raw, h);
    }
    (void)st;
    return 0;
}
