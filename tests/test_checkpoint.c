/* test_checkpoint.c: tests of src/train/checkpoint.c: exact round trips
 * (Adam with moments, SGD without, empty, a few MB), the byte layout of
 * docs/checkpoint-format.md read back by an independent walker here, every
 * truncation and every flipped byte of a small file refused, newer / older
 * versions, bad magic, trailing bytes, checksum-valid structural damage,
 * allocation-failure walks over load and save (no crash, no leak: glibc's
 * mallinfo2 balance), saves that fail (missing folder, /proc, a folder in
 * the way, a file-size limit, a full tmpfs when one can be mounted) leaving
 * the previous file intact, checkpoint_free on a zeroed struct, and
 * checkpoint_check_finite (NaN or Inf weights or moments named). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare, CLONE_NEWNS, mallinfo2 */
#endif
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include "config.h"
#include "test_util.h"
#include "train/checkpoint.h"

/* ---- helpers ----------------------------------------------------------------- */

static char g_path[1024];
static const char *path_in(const char *name) {
    snprintf(g_path, sizeof g_path, "%s/%s", test_tmpdir(), name);
    return g_path;
}

static uint8_t *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    size_t cap = 1 << 16;
    uint8_t *b = malloc(cap);
    size_t got;
    while ((got = fread(b + *n, 1, cap - *n, f)) > 0) {
        *n += got;
        if (*n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    return b;
}

static void write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(b, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }
static void set32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void set64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Stores the CRC32 of everything before the last 4 bytes into them. */
static void fix_crc(uint8_t *b, size_t n) {
    set32(b + n - 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(n - 4)));
}

/* Offset of the header of section `tag` (4 ASCII bytes) or 0 when absent;
 * an independent reading of docs/checkpoint-format.md. */
static size_t find_section(const uint8_t *b, size_t n, const char *tag, uint64_t *len) {
    size_t pos = 24, end = 24 + (size_t)le64(b + 16);
    if (end > n) return 0;
    while (pos + 12 <= end) {
        uint64_t l = le64(b + pos + 4);
        if (memcmp(b + pos, tag, 4) == 0) {
            if (len) *len = l;
            return pos;
        }
        pos += 12 + (size_t)l;
    }
    return 0;
}

static int is_zeroed(const Checkpoint *ck) {
    Checkpoint z;
    memset(&z, 0, sizeof z);
    return memcmp(&z, ck, sizeof z) == 0;
}

static int same_bits64(double a, double b) { return memcmp(&a, &b, 8) == 0; }

/* Number of "*.tmp.*" files left in the test folder. */
static int tmp_files_left(void) {
    DIR *d = opendir(test_tmpdir());
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

/* Set when glibc's per-thread cache is off (main re-executes the binary
 * with GLIBC_TUNABLES for that): freed chunks parked in the cache still
 * count as in use for mallinfo2, which would make leak checks inexact. */
static int heap_exact;
#define TCACHE_OFF "glibc.malloc.tcache_count=0"

/* Bytes in use by malloc (glibc), for leak checks; -1 when unknown. */
static long long heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    if (!heap_exact) return -1;
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
#else
    return -1;
#endif
}

/* ---- the example checkpoint ------------------------------------------------------ */

enum { EX_FLOATS = 4 * 3 + 2 * 3 * 5 + 7, EX_HIST = 3 };
static const char ex_config[] = "{\"model\": {\"hidden\": 8}, \"note\": \"Gr\xc3\xbc\xc3\x9f" "e \xe6\x97\xa5\"}";
static const uint8_t ex_src_tok[] = {0x00, 0x01, 0xff, 'a', 0x00, 0x80};
static const uint8_t ex_tgt_tok[] = {'W', 'O', 'R', 'D', 0, 0, 0, 0, 0xfe, 0xed, 0x42};
static CheckpointTensor ex_tensors[3] = {
    {"src_emb", 1, 4, 3}, {"enc.W_ih", 2, 3, 5}, {"out_b", 1, 1, 7}};
static float ex_params[EX_FLOATS], ex_m[EX_FLOATS], ex_v[EX_FLOATS];
static ValidRecord ex_hist[EX_HIST];

static Checkpoint example(int adam) {
    for (int i = 0; i < EX_FLOATS; i++) {
        ex_params[i] = (float)(sin(i * 0.7) * (i + 1));
        ex_m[i] = i * 0.001f - 0.02f;
        ex_v[i] = 1e-8f * (float)(i + 1);
    }
    ex_params[5] = NAN; /* non-finite weights are stored as they are */
    ex_params[6] = INFINITY;
    ex_params[7] = -0.0f;
    ex_params[8] = 1e-45f; /* denormal */
    ex_params[9] = -INFINITY;
    ex_hist[0] = (ValidRecord){1000, 123.456789, -1.0, NAN}; /* no chrF: format 1 (test_chrf_history) */
    ex_hist[1] = (ValidRecord){2000, 45.6789012345, 12.3456789, NAN};
    ex_hist[2] = (ValidRecord){3000, 1e300, 0x1p-1074, NAN};
    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.config_json = (char *)ex_config;
    ck.src_tok = (uint8_t *)ex_src_tok;
    ck.src_tok_len = sizeof ex_src_tok;
    ck.tgt_tok = (uint8_t *)ex_tgt_tok;
    ck.tgt_tok_len = sizeof ex_tgt_tok;
    ck.n_tensors = 3;
    ck.tensors = ex_tensors;
    ck.n_floats = EX_FLOATS;
    ck.params = ex_params;
    ck.optimizer = adam ? CFG_OPT_ADAM : CFG_OPT_SGD;
    ck.adam_m = adam ? ex_m : NULL;
    ck.adam_v = adam ? ex_v : NULL;
    ck.state = (TrainState){
        .step = 123456789012LL,
        .epoch = 7,
        .batch_index = 345,
        .rng_state = 0xfedcba9876543210ULL,
        .rng_inc = 0x0123456789abcdefULL,
        .lr_scale = 1.0 / 3.0,
        .bad_steps = 2,
        .evals_since_best = 1,
        .best_metric = 27.123456789012345,
        .best_step = 120000000000LL,
        .tokens_seen = 1.5e12 + 0.25,
        .seconds = 86400.123456789,
    };
    ck.n_history = EX_HIST;
    ck.history = ex_hist;
    return ck;
}

/* Everything of `got` equals `want`, bit for bit. */
static void check_same(const Checkpoint *got, const Checkpoint *want, const char *what) {
    CHECK_EQ_STR(got->config_json, want->config_json ? want->config_json : "");
    CHECK(got->src_tok_len == want->src_tok_len &&
              (!want->src_tok_len || memcmp(got->src_tok, want->src_tok, want->src_tok_len) == 0),
          "%s: source tokenizer bytes", what);
    CHECK(got->tgt_tok_len == want->tgt_tok_len &&
              (!want->tgt_tok_len || memcmp(got->tgt_tok, want->tgt_tok, want->tgt_tok_len) == 0),
          "%s: target tokenizer bytes", what);
    CHECK_EQ_INT(got->n_tensors, want->n_tensors);
    for (int i = 0; i < got->n_tensors && i < want->n_tensors; i++) {
        CHECK_EQ_STR(got->tensors[i].name, want->tensors[i].name);
        CHECK(got->tensors[i].count == want->tensors[i].count &&
                  got->tensors[i].rows == want->tensors[i].rows &&
                  got->tensors[i].cols == want->tensors[i].cols,
              "%s: shape of tensor %d", what, i);
    }
    CHECK_EQ_INT(got->n_floats, want->n_floats);
    size_t fb = want->n_floats * sizeof(float);
    CHECK(got->n_floats == want->n_floats && (!fb || memcmp(got->params, want->params, fb) == 0),
          "%s: weights differ", what);
    CHECK_EQ_INT(got->optimizer, want->optimizer);
    if (want->adam_m) {
        CHECK(got->adam_m && memcmp(got->adam_m, want->adam_m, fb) == 0, "%s: adam_m", what);
        CHECK(got->adam_v && memcmp(got->adam_v, want->adam_v, fb) == 0, "%s: adam_v", what);
    } else {
        CHECK(got->adam_m == NULL && got->adam_v == NULL, "%s: moments should be absent", what);
    }
    const TrainState *a = &got->state, *b = &want->state;
    CHECK(a->step == b->step && a->epoch == b->epoch && a->batch_index == b->batch_index &&
              a->rng_state == b->rng_state && a->rng_inc == b->rng_inc &&
              a->bad_steps == b->bad_steps && a->evals_since_best == b->evals_since_best &&
              a->best_step == b->best_step,
          "%s: integer fields of the training state", what);
    CHECK(same_bits64(a->lr_scale, b->lr_scale) && same_bits64(a->best_metric, b->best_metric) &&
              same_bits64(a->tokens_seen, b->tokens_seen) && same_bits64(a->seconds, b->seconds),
          "%s: double fields of the training state", what);
    CHECK_EQ_INT(got->n_history, want->n_history);
    for (int i = 0; i < got->n_history && i < want->n_history; i++)
        CHECK(got->history[i].step == want->history[i].step &&
                  same_bits64(got->history[i].ppl, want->history[i].ppl) &&
                  same_bits64(got->history[i].bleu, want->history[i].bleu) &&
                  same_bits64(got->history[i].chrf, want->history[i].chrf),
              "%s: history record %d", what, i);
}

/* The file size docs/checkpoint-format.md gives for `ck`. */
static size_t expected_size(const Checkpoint *ck) {
    size_t table = 4;
    for (int i = 0; i < ck->n_tensors; i++) table += 16 + strlen(ck->tensors[i].name);
    return 24 + 8 * 12 + (ck->config_json ? strlen(ck->config_json) : 0) + ck->src_tok_len +
           ck->tgt_tok_len + table + 4 * ck->n_floats + 8 + (ck->adam_m ? 8 * ck->n_floats : 0) +
           96 + 4 + 24 * (size_t)ck->n_history + 4;
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_round_trip(void) {
    Checkpoint ck = example(1), back;
    const char *path = path_in("adam.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save: %s", nmt_error_message());
    CHECK_EQ_INT(tmp_files_left(), 0);

    /* the bytes, read independently of checkpoint.c */
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    CHECK(b != NULL, "read back %s", path);
    if (!b) return;
    CHECK_EQ_INT(n, expected_size(&ck));
    CHECK(memcmp(b, "NMTCKPT\0", 8) == 0, "magic");
    CHECK_EQ_INT(le32(b + 8), 1);
    CHECK_EQ_INT(le32(b + 12), 0);
    CHECK_EQ_INT(le64(b + 16), n - 28);
    CHECK_EQ_INT(le32(b + n - 4), crc32(crc32(0L, Z_NULL, 0), b, (uInt)(n - 4)));
    CHECK(memcmp(b + 24, "CONF", 4) == 0, "the first section is CONF");
    CHECK_EQ_INT(le64(b + 28), strlen(ex_config));
    CHECK(memcmp(b + 36, ex_config, strlen(ex_config)) == 0, "config text right after its header");
    static const char *order[] = {"CONF", "STOK", "TTOK", "TENS", "PARM", "OPTM", "STAT", "HIST"};
    size_t prev = 0;
    for (int i = 0; i < 8; i++) {
        size_t at = find_section(b, n, order[i], NULL);
        CHECK(at > prev || (i == 0 && at == 24), "section %s in order (at %zu)", order[i], at);
        prev = at;
    }
    uint64_t len = 0;
    size_t at = find_section(b, n, "STOK", &len);
    CHECK(at && len == sizeof ex_src_tok && memcmp(b + at + 12, ex_src_tok, len) == 0, "STOK bytes");
    at = find_section(b, n, "TENS", &len);
    CHECK(at && le32(b + at + 12) == 3, "TENS count");
    CHECK(at && le32(b + at + 16) == 7 && memcmp(b + at + 20, "src_emb", 7) == 0 &&
              le32(b + at + 27) == 1 && le32(b + at + 31) == 4 && le32(b + at + 35) == 3,
          "TENS first entry: name length, name, count, rows, cols");
    at = find_section(b, n, "PARM", &len);
    CHECK(at && len == 4 * EX_FLOATS, "PARM length %llu", (unsigned long long)len);
    int bad = 0;
    for (int i = 0; at && i < EX_FLOATS; i++) {
        uint32_t u;
        memcpy(&u, &ex_params[i], 4);
        bad += le32(b + at + 12 + 4 * i) != u;
    }
    CHECK(bad == 0, "%d weights not stored as little-endian float32", bad);
    at = find_section(b, n, "OPTM", &len);
    CHECK(at && len == 8 + 8 * EX_FLOATS && le32(b + at + 12) == CFG_OPT_ADAM &&
              le32(b + at + 16) == 1,
          "OPTM: kind, moments flag, length");
    uint32_t u;
    memcpy(&u, &ex_v[0], 4);
    CHECK(at && le32(b + at + 20 + 4 * EX_FLOATS) == u, "v follows m");
    at = find_section(b, n, "STAT", &len);
    CHECK(at && len == 96 && le64(b + at + 12) == 123456789012ULL &&
              le64(b + at + 12 + 3 * 8) == 0xfedcba9876543210ULL,
          "STAT: step first, rng_state fourth");
    double d;
    uint64_t bits = at ? le64(b + at + 12 + 11 * 8) : 0;
    memcpy(&d, &bits, 8);
    CHECK(same_bits64(d, 86400.123456789), "STAT: seconds last");
    at = find_section(b, n, "HIST", &len);
    CHECK(at && len == 4 + 24 * EX_HIST && le32(b + at + 12) == EX_HIST &&
              le64(b + at + 16) == 1000 && le64(b + at + 16 + 48) == 3000,
          "HIST: count and steps");
    free(b);

    NmtStatus st = checkpoint_load(path, &back);
    CHECK(st == NMT_OK, "load: %s", nmt_error_message());
    if (st == NMT_OK) check_same(&back, &ck, "adam round trip");
    CHECK(back.format == 1 && back.moments_stored && !back.train_params_stored,
          "a format-1 file with moments: format %u", back.format);
    CHECK(isnan(back.params ? back.params[5] : 0.0f), "NaN weight kept");
    checkpoint_free(&back);
    CHECK(is_zeroed(&back), "checkpoint_free zeroes the struct");
    checkpoint_free(&back); /* twice is fine */

    /* sections in another order load the same (HIST moved to the front) */
    b = read_bytes(path, &n);
    at = find_section(b, n, "HIST", &len);
    size_t hist_bytes = 12 + (size_t)len;
    uint8_t *moved = malloc(n);
    memcpy(moved, b, 24);
    memcpy(moved + 24, b + at, hist_bytes);
    memcpy(moved + 24 + hist_bytes, b + 24, at - 24);
    memcpy(moved + 24 + hist_bytes + (at - 24), b + at + hist_bytes, n - at - hist_bytes);
    fix_crc(moved, n);
    write_bytes(path_in("moved.nmt"), moved, n);
    st = checkpoint_load(path_in("moved.nmt"), &back);
    CHECK(st == NMT_OK, "sections in any order: %s", nmt_error_message());
    if (st == NMT_OK) check_same(&back, &ck, "reordered sections");
    checkpoint_free(&back);
    free(moved);
    free(b);

    /* weights only: everything but the moments, the moments still checked */
    st = checkpoint_load_weights(path, &back);
    CHECK(st == NMT_OK, "load weights: %s", nmt_error_message());
    CHECK(back.adam_m == NULL && back.adam_v == NULL, "load weights: no moments");
    CHECK(back.n_floats == ck.n_floats && back.params &&
              memcmp(back.params, ck.params, ck.n_floats * sizeof(float)) == 0 &&
              back.config_json && strcmp(back.config_json, ck.config_json) == 0 &&
              back.state.step == ck.state.step && back.n_history == ck.n_history,
          "load weights: the weights, config, state and history as saved");
    checkpoint_free(&back);
    b = read_bytes(path, &n);
    at = find_section(b, n, "OPTM", &len);
    CHECK(at != 0 && len > 8, "OPTM section found");
    if (at && len > 8) {
        b[at + 12 + len - 1] ^= 0x40; /* the last byte of the second moment */
        write_bytes(path_in("bad-moment.nmt"), b, n);
        memset(&back, 0, sizeof back);
        st = checkpoint_load_weights(path_in("bad-moment.nmt"), &back);
        CHECK(st == NMT_ERR_FORMAT && strstr(nmt_error_message(), "checksum"),
              "a corrupt moment is refused by the weights-only load too: %s", nmt_error_message());
        if (st == NMT_OK) checkpoint_free(&back);
    }
    free(b);
}

/* The example of docs/checkpoint-format.md, byte for byte (CRC included). */
static void test_golden_bytes(void) {
    static const uint8_t want[266] = {
        0x4e, 0x4d, 0x54, 0x43, 0x4b, 0x50, 0x54, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0xee, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* header */
        'C', 'O', 'N', 'F', 0x02, 0, 0, 0, 0, 0, 0, 0, '{', '}',
        'S', 'T', 'O', 'K', 0x03, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc,
        'T', 'T', 'O', 'K', 0x00, 0, 0, 0, 0, 0, 0, 0,
        'T', 'E', 'N', 'S', 0x15, 0, 0, 0, 0, 0, 0, 0,
        0x01, 0, 0, 0, 0x01, 0, 0, 0, 'b', 0x01, 0, 0, 0, 0x01, 0, 0, 0, 0x02, 0, 0, 0,
        'P', 'A', 'R', 'M', 0x08, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,
        'O', 'P', 'T', 'M', 0x08, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0x00, 0, 0, 0,
        'S', 'T', 'A', 'T', 0x60, 0, 0, 0, 0, 0, 0, 0, /* 96 zero bytes follow */
        [246] = 'H', 'I', 'S', 'T', 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        /* the CRC-32 is checked separately below */
    };
    Checkpoint ck, back;
    memset(&ck, 0, sizeof ck);
    static const uint8_t tok[3] = {0xaa, 0xbb, 0xcc};
    CheckpointTensor t = {"b", 1, 1, 2};
    float p[2] = {1.0f, -2.0f};
    ck.config_json = "{}";
    ck.src_tok = (uint8_t *)tok;
    ck.src_tok_len = 3;
    ck.n_tensors = 1;
    ck.tensors = &t;
    ck.n_floats = 2;
    ck.params = p;
    ck.optimizer = CFG_OPT_SGD;
    const char *path = path_in("golden.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    CHECK_EQ_INT(n, 266);
    long first = -1;
    for (size_t i = 0; b && i < 262 && i < n; i++)
        if (b[i] != want[i]) {
            first = (long)i;
            break;
        }
    CHECK(first < 0, "byte %ld differs from docs/checkpoint-format.md", first);
    CHECK(b && n == 266 && le32(b + 262) == 0x17a925c1u, "the documented CRC-32 0x17a925c1");
    free(b);
    CHECK(checkpoint_load(path, &back) == NMT_OK, "load: %s", nmt_error_message());
    check_same(&back, &ck, "golden");
    checkpoint_free(&back);
}

static void test_sgd(void) {
    Checkpoint ck = example(0), back;
    const char *path = path_in("sgd.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save sgd: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    CHECK_EQ_INT(n, expected_size(&ck));
    uint64_t len = 0;
    size_t at = find_section(b, n, "OPTM", &len);
    CHECK(at && len == 8 && le32(b + at + 12) == CFG_OPT_SGD && le32(b + at + 16) == 0,
          "OPTM of sgd: kind 1, no moments");
    free(b);
    NmtStatus st = checkpoint_load(path, &back);
    CHECK(st == NMT_OK, "load sgd: %s", nmt_error_message());
    if (st == NMT_OK) check_same(&back, &ck, "sgd round trip");
    CHECK(back.adam_m == NULL && back.adam_v == NULL, "no moments for sgd");
    checkpoint_free(&back);
}

static void test_empty(void) {
    Checkpoint ck, back;
    memset(&ck, 0, sizeof ck);
    const char *path = path_in("empty.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save empty: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    CHECK_EQ_INT(n, expected_size(&ck));
    free(b);
    NmtStatus st = checkpoint_load(path, &back);
    CHECK(st == NMT_OK, "load empty: %s", nmt_error_message());
    CHECK_EQ_STR(back.config_json, "");
    CHECK(back.n_tensors == 0 && back.tensors == NULL && back.n_floats == 0 &&
              back.params == NULL && back.adam_m == NULL && back.n_history == 0 &&
              back.history == NULL && back.src_tok == NULL && back.src_tok_len == 0,
          "an empty checkpoint loads with no arrays");
    checkpoint_free(&back);
}

/* A few MB of weights (the direct-write path, bigger than the buffer). */
enum { BIG_FLOATS = 600001 };
static float *big_params, *big_m, *big_v;
static CheckpointTensor big_tensor = {"big", 1, BIG_FLOATS, 1};

static Checkpoint big_example(void) {
    if (!big_params) {
        big_params = malloc(BIG_FLOATS * sizeof(float));
        big_m = malloc(BIG_FLOATS * sizeof(float));
        big_v = malloc(BIG_FLOATS * sizeof(float));
        uint32_t x = 12345;
        for (int i = 0; i < BIG_FLOATS; i++) {
            x = x * 1664525u + 1013904223u;
            big_params[i] = (float)((int32_t)x) * 1e-9f;
            big_m[i] = -big_params[i];
            big_v[i] = big_params[i] * big_params[i];
        }
    }
    Checkpoint ck = example(1);
    ck.n_tensors = 1;
    ck.tensors = &big_tensor;
    ck.n_floats = BIG_FLOATS;
    ck.params = big_params;
    ck.adam_m = big_m;
    ck.adam_v = big_v;
    return ck;
}

static void test_large(void) {
    Checkpoint ck = big_example(), back;
    const char *path = path_in("big.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save big: %s", nmt_error_message());
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (size_t)sb.st_size == expected_size(&ck), "big file size");
    NmtStatus st = checkpoint_load(path, &back);
    CHECK(st == NMT_OK, "load big: %s", nmt_error_message());
    if (st == NMT_OK) check_same(&back, &ck, "big round trip");
    checkpoint_free(&back);
}

/* ---- refused files ---------------------------------------------------------------- */

/* Loads `path`, expects NMT_ERR_FORMAT, a message naming the file and
 * containing `want`, and a zeroed struct. Returns 1 when all holds. */
static int refused(const char *path, const char *want) {
    Checkpoint ck;
    memset(&ck, 0xab, sizeof ck); /* garbage in: must come back zeroed */
    NmtStatus st = checkpoint_load(path, &ck);
    const char *msg = nmt_error_message();
    int ok = st == NMT_ERR_FORMAT && strstr(msg, path) && (!want || strstr(msg, want)) &&
             is_zeroed(&ck);
    if (!ok) {
        fprintf(stderr, "  %s: status %s, message \"%s\" (wanted \"%s\")\n", path,
                nmt_status_name(st), msg, want ? want : "");
        if (st == NMT_OK) checkpoint_free(&ck);
    }
    return ok;
}

/* Writes `b` (n bytes) after `mutate` to a file and expects `want`. */
static void check_mutant(const uint8_t *orig, size_t n, const char *name, const char *want,
                         void (*mutate)(uint8_t *b, size_t *n), int fix) {
    uint8_t *b = malloc(n + 64);
    memcpy(b, orig, n);
    size_t m = n;
    mutate(b, &m);
    if (fix) fix_crc(b, m);
    const char *path = path_in(name);
    write_bytes(path, b, m);
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", path);
    CHECK(refused(copy, want), "%s is refused with \"%s\"", name, want);
    free(b);
}

static void test_truncated_and_flipped(void) {
    Checkpoint ck = example(1);
    char path[1024], tpath[1024];
    snprintf(path, sizeof path, "%s", path_in("small.nmt"));
    snprintf(tpath, sizeof tpath, "%s", path_in("damaged.nmt"));
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    CHECK(n > 500, "the small file has %zu bytes", n);

    /* every truncation */
    int bad = 0;
    long first_bad = -1;
    for (size_t k = 0; k < n; k++) {
        write_bytes(tpath, b, k);
        if (!refused(tpath, k == 0 ? "empty" : "truncated")) {
            bad++;
            if (first_bad < 0) first_bad = (long)k;
        }
    }
    CHECK(bad == 0, "%d of %zu truncations not refused as truncated (first at %ld)", bad, n,
          first_bad);

    /* every byte flipped, three ways; the message says what tripped */
    static const uint8_t patterns[] = {0x01, 0x80, 0xff};
    bad = 0;
    first_bad = -1;
    for (size_t i = 0; i < n; i++) {
        const char *want = i < 8 ? "not an nmt checkpoint"
                           : i < 12 ? "format"
                           : i < 16 ? "unknown flags"
                           : i < 24 ? NULL /* truncated or trailing bytes */
                                    : "corrupt (checksum mismatch";
        for (size_t p = 0; p < sizeof patterns; p++) {
            b[i] ^= patterns[p];
            write_bytes(tpath, b, n);
            b[i] ^= patterns[p];
            int ok = refused(tpath, want);
            if (ok && i >= 16 && i < 24) {
                const char *msg = nmt_error_message();
                ok = strstr(msg, "truncated") || strstr(msg, "trailing bytes");
            }
            if (!ok) {
                bad++;
                if (first_bad < 0) first_bad = (long)i;
            }
        }
    }
    CHECK(bad == 0, "%d of %zu flipped bytes not refused (first at %ld)", bad, 3 * n, first_bad);

    /* the untouched file still loads (the loop restored every byte) */
    write_bytes(tpath, b, n);
    Checkpoint back;
    CHECK(checkpoint_load(tpath, &back) == NMT_OK, "restored copy loads: %s", nmt_error_message());
    checkpoint_free(&back);
    free(b);
}

static void set_version_2(uint8_t *b, size_t *n) { set32(b + 8, 2); }
static void set_version_3(uint8_t *b, size_t *n) { set32(b + 8, 3); }
static void set_version_4(uint8_t *b, size_t *n) { set32(b + 8, 4); }
static void set_version_max(uint8_t *b, size_t *n) { set32(b + 8, 0xffffffffu); }
static void set_version_0(uint8_t *b, size_t *n) { set32(b + 8, 0); }
static void bad_magic(uint8_t *b, size_t *n) { b[3] = 'X'; }
static void set_flags(uint8_t *b, size_t *n) { set32(b + 12, 1); }
static void add_one_byte(uint8_t *b, size_t *n) { b[(*n)++] = 'x'; }
static void add_zeros(uint8_t *b, size_t *n) {
    memset(b + *n, 0, 40);
    *n += 40;
}

static void test_versions_magic_trailing(void) {
    size_t n;
    uint8_t *b = read_bytes(path_in("small.nmt"), &n);
    if (!b) return;
    check_mutant(b, n, "v4.nmt", "written by a newer nmt (format 4); this nmt reads formats 1 to 3",
                 set_version_4, 1);
    /* format 3's records are 32 bytes: a format-1 file called format 3 */
    check_mutant(b, n, "v3.nmt", "section HISTORY: 72 bytes for 3 records of 32 bytes (format 3), expected 96",
                 set_version_3, 1);
    check_mutant(b, n, "v2.nmt", "format 2 without its section TRAIN_PARAMS", set_version_2, 1);
    check_mutant(b, n, "vmax.nmt", "newer nmt (format 4294967295)", set_version_max, 1);
    check_mutant(b, n, "vmax-nocrc.nmt", "newer nmt (format 4294967295)", set_version_max, 0);
    check_mutant(b, n, "v0.nmt", "format 0 is no longer supported; this nmt reads formats 1 to 3",
                 set_version_0, 1);
    check_mutant(b, n, "magic.nmt", "not an nmt checkpoint", bad_magic, 1);
    check_mutant(b, n, "flags.nmt", "unknown flags 0x00000001", set_flags, 1);
    check_mutant(b, n, "trail1.nmt", "1 trailing bytes", add_one_byte, 0);
    check_mutant(b, n, "trail40.nmt", "40 trailing bytes", add_zeros, 0);
    free(b);

    const char *text = "{\"model\": {}}\n";
    char p[1024];
    snprintf(p, sizeof p, "%s", test_write_file(test_tmpdir(), "text.json", text, strlen(text)));
    CHECK(refused(p, "not an nmt checkpoint"), "a JSON file is not a checkpoint");

    Checkpoint ck;
    memset(&ck, 0x5a, sizeof ck);
    snprintf(p, sizeof p, "%s", path_in("does-not-exist.nmt"));
    NmtStatus st = checkpoint_load(p, &ck);
    CHECK(st == NMT_ERR_IO && is_zeroed(&ck), "missing file: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), p);
}

/* ---- checksum-valid structural damage ---------------------------------------------- */

static uint8_t *g_file;
static size_t g_n;

/* Offset of the data of section `tag` in b (whose layout matches g_file). */
static size_t data_of(const uint8_t *b, size_t n, const char *tag) {
    uint64_t len;
    size_t at = find_section(b, n, tag, &len);
    if (!at) {
        fprintf(stderr, "section %s not found\n", tag);
        exit(2);
    }
    return at + 12;
}

static void dup_stok(uint8_t *b, size_t *n) { memcpy(b + data_of(b, *n, "TTOK") - 12, "STOK", 4); }
static void unknown_tag(uint8_t *b, size_t *n) { memcpy(b + data_of(b, *n, "HIST") - 12, "HISX", 4); }
static void drop_hist(uint8_t *b, size_t *n) {
    size_t at = data_of(b, *n, "HIST") - 12; /* the last section */
    memmove(b + at, b + *n - 4, 4);
    *n = at + 4;
    set64(b + 16, *n - 28);
}
static void overrun_conf(uint8_t *b, size_t *n) { set64(b + 28, 0xffffffffffffULL); }
static void overrun_hist(uint8_t *b, size_t *n) {
    size_t at = data_of(b, *n, "HIST");
    set64(b + at - 8, le64(b + at - 8) + 1);
}
static void short_header(uint8_t *b, size_t *n) {
    memmove(b + *n - 4 + 5, b + *n - 4, 4);
    memset(b + *n - 4, 0, 5);
    *n += 5;
    set64(b + 16, *n - 28);
}
static void tensor_rows(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "TENS") + 4 + 4 + 7 + 4, 5); }
static void tensor_count_neg(uint8_t *b, size_t *n) {
    set32(b + data_of(b, *n, "TENS") + 4 + 4 + 7, 0xffffffffu);
}
static void tensor_n_huge(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "TENS"), 0xffffffffu); }
static void tensor_name_long(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "TENS") + 4, 40); }
static void tensor_name_space(uint8_t *b, size_t *n) { b[data_of(b, *n, "TENS") + 8 + 3] = ' '; }
static void tensor_extra_byte(uint8_t *b, size_t *n) {
    /* one more byte at the end of TENS: shift the rest, fix both lengths */
    size_t at = data_of(b, *n, "TENS");
    uint64_t len = le64(b + at - 8);
    size_t end = at + (size_t)len;
    memmove(b + end + 1, b + end, *n - end);
    b[end] = 0;
    *n += 1;
    set64(b + at - 8, len + 1);
    set64(b + 16, *n - 28);
}
static void moments_flag_0(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "OPTM") + 4, 0); }
static void moments_flag_2(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "OPTM") + 4, 2); }
static void optimizer_7(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "OPTM"), 7); }
static void step_negative(uint8_t *b, size_t *n) { set64(b + data_of(b, *n, "STAT"), (uint64_t)-1); }
static void hist_n_huge(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "HIST"), 0x7fffffffu); }
static void hist_n_short(uint8_t *b, size_t *n) { set32(b + data_of(b, *n, "HIST"), 2); }
static void config_bad_utf8(uint8_t *b, size_t *n) { b[data_of(b, *n, "CONF") + 3] = 0xff; }
static void config_nul(uint8_t *b, size_t *n) { b[data_of(b, *n, "CONF") + 3] = 0; }

static void test_structure(void) {
    g_file = read_bytes(path_in("small.nmt"), &g_n);
    if (!g_file) return;
    static const struct {
        const char *name, *want;
        void (*mutate)(uint8_t *, size_t *);
    } cases[] = {
        {"dup.nmt", "section SRC_TOKENIZER appears twice", dup_stok},
        {"unknown.nmt", "unknown section tag 0x58534948", unknown_tag},
        {"missing.nmt", "missing section HISTORY", drop_hist},
        {"overrun-conf.nmt", "section CONFIG at byte 24: length 281474976710655 overruns", overrun_conf},
        {"overrun-hist.nmt", "section HISTORY at byte", overrun_hist},
        {"short-header.nmt", "truncated section header (5 bytes left)", short_header},
        {"rows.nmt", "section PARAMS: 196 bytes, but the tensor shapes need 52 floats", tensor_rows},
        {"count-neg.nmt", "tensor src_emb: shape (-1, 4, 3) has a size below 1", tensor_count_neg},
        {"tensors-huge.nmt", "4294967295 tensors cannot fit", tensor_n_huge},
        {"name-long.nmt", "name length 40 (1 to 31)", tensor_name_long},
        {"name-space.nmt", "not printable ASCII", tensor_name_space},
        {"tens-extra.nmt", "section TENSORS: 1 unexpected bytes", tensor_extra_byte},
        {"flag0.nmt", "section OPTIMIZER: 392 bytes of moments, expected 0", moments_flag_0},
        {"flag2.nmt", "moments flag 2 (0 or 1)", moments_flag_2},
        {"opt7.nmt", "unknown optimizer kind 7", optimizer_7},
        {"step.nmt", "section STATE: negative step", step_negative},
        {"hist-huge.nmt", "2147483647 records (at most 100000)", hist_n_huge},
        {"hist-short.nmt", "72 bytes for 2 records of 24 bytes (format 1), expected 48", hist_n_short},
        {"utf8.nmt", "section CONFIG: invalid UTF-8 at byte 3", config_bad_utf8},
        {"nul.nmt", "section CONFIG: NUL byte at byte 3", config_nul},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(cases); i++)
        check_mutant(g_file, g_n, cases[i].name, cases[i].want, cases[i].mutate, 1);
    free(g_file);
}

/* ---- the training weights of a moving-average run (format 2) ------------------------ */

static float ex_train[EX_FLOATS];

static void set_version_1(uint8_t *b, size_t *n) { set32(b + 8, 1); }
static void tprm_short(uint8_t *b, size_t *n) {
    size_t at = data_of(b, *n, "TPRM"); /* the last section: drop its last float */
    set64(b + at - 8, le64(b + at - 8) - 4);
    memmove(b + *n - 8, b + *n - 4, 4);
    *n -= 4;
    set64(b + 16, *n - 28);
}

/* A checkpoint with train_params is format 2 with a TRAIN_PARAMS section
 * after HISTORY; it loads back bit for bit; the weights-only load leaves
 * the section out; a file without it stays format 1 (test_round_trip);
 * the section in a format-1 file, or cut short, is refused. */
static void test_train_params(void) {
    for (int i = 0; i < EX_FLOATS; i++) ex_train[i] = (float)(cos(i * 0.3) * (i + 2));
    Checkpoint ck = example(1), back, weights;
    ck.train_params = ex_train;
    const char *path = path_in("ema.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save with training weights: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    if (!b) return;
    uint64_t len = 0;
    size_t at = find_section(b, n, "TPRM", &len);
    CHECK_EQ_INT(le32(b + 8), 2);
    CHECK_EQ_INT(n, expected_size(&ck) + 12 + 4 * EX_FLOATS);
    CHECK(at + 12 + len + 4 == n && len == 4 * EX_FLOATS && memcmp(b + at + 12, ex_train, len) == 0,
          "TRAIN_PARAMS: the last section, the floats as they are (at %zu, %llu bytes)", at,
          (unsigned long long)len);
    CHECK(checkpoint_load(path, &back) == NMT_OK, "load: %s", nmt_error_message());
    check_same(&back, &ck, "format 2");
    CHECK(back.train_params && memcmp(back.train_params, ex_train, sizeof ex_train) == 0, "training weights back");
    checkpoint_free(&back);
    CHECK(checkpoint_load_weights(path, &weights) == NMT_OK, "load weights: %s", nmt_error_message());
    CHECK(weights.train_params == NULL && weights.adam_m == NULL && memcmp(weights.params, ex_params, sizeof ex_params) == 0,
          "the weights-only load: the moving average, no training weights");
    checkpoint_free(&weights);
    check_mutant(b, n, "tprm-v1.nmt", "unknown section tag 0x4d525054 in format 1", set_version_1, 1);
    check_mutant(b, n, "tprm-short.nmt", "section TRAIN_PARAMS: 192 bytes, but the tensor shapes need 49 floats",
                 tprm_short, 1);
    /* a non-finite training weight is named as such */
    ex_train[3] = NAN;
    Checkpoint finite = example(1);
    for (int i = 5; i <= 9; i++) ex_params[i] = 1.0f; /* example() put non-finite weights there */
    finite.train_params = ex_train;
    NmtStatus st = checkpoint_check_finite(&finite, "x.nmt");
    CHECK(st == NMT_ERR_FORMAT && strstr(nmt_error_message(), "1 of its 49 training weights"),
          "non-finite training weights: %s", nmt_error_message());
    free(b);
}

/* ---- chrF in the validation records (format 3) ------------------------------------ */

/* A history with a chrF is format 3: its records are 32 bytes (step, ppl,
 * BLEU, chrF) and load back bit for bit, with or without TRAIN_PARAMS; the
 * same bytes called format 1 or 2 are refused by their record size; a
 * format-1 file reads its records' chrF as NaN (test_round_trip: the
 * example's history has none and stays format 1). */
static void test_chrf_history(void) {
    Checkpoint ck = example(1), back;
    ex_hist[0].chrf = 41.25;
    ex_hist[1].chrf = -0.0;
    ex_hist[2].chrf = NAN; /* one record without: the others still make it format 3 */
    const char *path = path_in("chrf.nmt");
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save with chrF: %s", nmt_error_message());
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    if (!b) return;
    uint64_t len = 0;
    size_t at = find_section(b, n, "HIST", &len);
    CHECK_EQ_INT(le32(b + 8), 3);
    CHECK_EQ_INT(n, expected_size(&ck) + 8 * EX_HIST);
    CHECK(at && len == 4 + 32 * EX_HIST && le64(b + at + 12 + 4 + 32 + 24) == 0x8000000000000000ull,
          "HIST: 32-byte records, the second one's chrF -0.0 at byte 24 (%llu bytes)", (unsigned long long)len);
    CHECK(checkpoint_load(path, &back) == NMT_OK, "load: %s", nmt_error_message());
    check_same(&back, &ck, "format 3");
    CHECK(back.history && back.history[0].chrf == 41.25 && isnan(back.history[2].chrf), "chrF back");
    checkpoint_free(&back);
    check_mutant(b, n, "chrf-v1.nmt", "96 bytes for 3 records of 24 bytes (format 1), expected 72", set_version_1, 1);
    free(b);

    /* with the training weights: still format 3, TRAIN_PARAMS loads too */
    ck.train_params = ex_train;
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save with chrF and training weights: %s", nmt_error_message());
    b = read_bytes(path, &n);
    if (!b) return;
    CHECK_EQ_INT(le32(b + 8), 3);
    CHECK(checkpoint_load(path, &back) == NMT_OK, "load: %s", nmt_error_message());
    check_same(&back, &ck, "format 3 with TRAIN_PARAMS");
    CHECK(back.train_params && memcmp(back.train_params, ex_train, sizeof ex_train) == 0, "training weights back");
    CHECK(back.format == 3 && back.moments_stored && back.train_params_stored, "what the file holds: format %u",
          back.format);
    checkpoint_free(&back);
    /* the weights-only load says what it left out */
    CHECK(checkpoint_load_weights(path, &back) == NMT_OK, "load weights: %s", nmt_error_message());
    CHECK(back.format == 3 && back.moments_stored && back.train_params_stored && !back.adam_m && !back.train_params,
          "the weights-only load: format %u, moments and training weights stored but not loaded", back.format);
    checkpoint_free(&back);
    check_mutant(b, n, "chrf-v2.nmt", "96 bytes for 3 records of 24 bytes (format 2), expected 72", set_version_2, 1);
    free(b);
    for (int i = 0; i < EX_HIST; i++) ex_hist[i].chrf = NAN;
}

/* valid_history_best: the highest BLEU or chrF, the lowest perplexity,
 * the first of equal ones, NaN skipped, -1 for none. */
static void test_history_best(void) {
    ValidRecord h[4] = {{10, 50.0, 20.0, NAN}, {20, 40.0, 25.0, 30.0}, {30, 45.0, 25.0, 28.0}, {40, 60.0, 10.0, NAN}};
    CHECK_EQ_INT(valid_history_best(h, 4, CFG_METRIC_BLEU), 1);
    CHECK_EQ_INT(valid_history_best(h, 4, CFG_METRIC_CHRF), 1);
    CHECK_EQ_INT(valid_history_best(h, 4, CFG_METRIC_PPL), 1);
    CHECK_EQ_INT(valid_history_best(h + 2, 2, CFG_METRIC_CHRF), 0);
    CHECK_EQ_INT(valid_history_best(h + 3, 1, CFG_METRIC_CHRF), -1);
    CHECK_EQ_INT(valid_history_best(h, 0, CFG_METRIC_BLEU), -1);
}

/* ---- allocation failures ------------------------------------------------------------ */

static void test_alloc_walk(void) {
    Checkpoint ck = example(1), back;
    char path[1024];
    snprintf(path, sizeof path, "%s", path_in("walk.nmt"));
    CHECK(checkpoint_save(&ck, path) == NMT_OK, "save: %s", nmt_error_message());
    CHECK(checkpoint_load(path, &back) == NMT_OK, "warm-up load");
    checkpoint_free(&back);

    /* load: every allocation failure is NMT_ERR_NOMEM with a zeroed struct */
    long long before = heap_in_use();
    long k, bad = 0;
    NmtStatus st = NMT_OK;
    for (k = 1; k < 10000; k++) {
        memset(&back, 0x77, sizeof back);
        nmt_alloc_fail_at(k);
        st = checkpoint_load(path, &back);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) break;
        if (st != NMT_ERR_NOMEM || !is_zeroed(&back) ||
            !strstr(nmt_error_message(), "out of memory")) {
            if (!bad) fprintf(stderr, "  load failure %ld: %s: %s\n", k, nmt_status_name(st),
                              nmt_error_message());
            bad++;
        }
    }
    CHECK(st == NMT_OK, "load succeeds once allocations stop failing");
    CHECK(k >= 10, "load has %ld allocations, expected at least 10", k);
    CHECK(bad == 0, "%ld load failures were not clean NMT_ERR_NOMEM", bad);
    if (st == NMT_OK) check_same(&back, &ck, "load after the walk");
    checkpoint_free(&back);
    long long after = heap_in_use();
    if (before >= 0)
        CHECK(after == before, "load walk leaks %lld bytes", after - before);
    else
        printf("SKIP: no exact heap count (mallinfo2 with tcache off), leak checks skipped\n");

    /* save over a previous file (sgd): failures leave it as it was */
    Checkpoint old = example(0);
    CHECK(checkpoint_save(&old, path) == NMT_OK, "save old: %s", nmt_error_message());
    size_t old_n;
    uint8_t *old_bytes = read_bytes(path, &old_n);
    before = heap_in_use();
    bad = 0;
    for (k = 1; k < 1000; k++) {
        nmt_alloc_fail_at(k);
        st = checkpoint_save(&ck, path);
        nmt_alloc_fail_at(0);
        if (st == NMT_OK) break;
        size_t n;
        uint8_t *now = read_bytes(path, &n);
        int same = now && n == old_n && memcmp(now, old_bytes, n) == 0;
        free(now);
        if (st != NMT_ERR_NOMEM || !same || tmp_files_left() != 0) {
            if (!bad) fprintf(stderr, "  save failure %ld: %s: %s (previous file %s)\n", k,
                              nmt_status_name(st), nmt_error_message(), same ? "intact" : "CHANGED");
            bad++;
        }
    }
    after = heap_in_use();
    CHECK(st == NMT_OK, "save succeeds once allocations stop failing");
    CHECK(k >= 2, "save has %ld allocations", k);
    CHECK(bad == 0, "%ld save failures were not clean", bad);
    if (before >= 0) CHECK(after == before, "save walk leaks %lld bytes", after - before);
    CHECK(checkpoint_load(path, &back) == NMT_OK && back.optimizer == CFG_OPT_ADAM,
          "the new file replaced the old one");
    checkpoint_free(&back);
    free(old_bytes);
}

/* ---- failed saves ------------------------------------------------------------------ */

static int same_file(const char *path, const uint8_t *bytes, size_t n) {
    size_t m;
    uint8_t *now = read_bytes(path, &m);
    int same = now && m == n && memcmp(now, bytes, n) == 0;
    free(now);
    return same;
}

static void test_unwritable(void) {
    Checkpoint ck = example(1);
    char p[1024];
    snprintf(p, sizeof p, "%s/no-such-folder/ck.nmt", test_tmpdir());
    NmtStatus st = checkpoint_save(&ck, p);
    CHECK(st == NMT_ERR_IO, "save into a missing folder: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), p);
    struct stat sb;
    CHECK(stat(path_in("no-such-folder"), &sb) != 0, "no folder was created");

    snprintf(p, sizeof p, "/proc/nmt-checkpoint-test-%ld.nmt", (long)getpid());
    st = checkpoint_save(&ck, p);
    CHECK(st == NMT_ERR_IO, "save into /proc: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), p);
    CHECK(access(p, F_OK) != 0, "nothing left in /proc");

    /* a folder in the way: the temporary file is written, the rename fails */
    snprintf(p, sizeof p, "%s", path_in("a-folder.nmt"));
    mkdir(p, 0755);
    st = checkpoint_save(&ck, p);
    CHECK(st == NMT_ERR_IO, "save over a folder: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), p);
    CHECK(stat(p, &sb) == 0 && S_ISDIR(sb.st_mode), "the folder is still there");
    CHECK_EQ_INT(tmp_files_left(), 0);
    rmdir(p);

    if (geteuid() == 0) {
        printf("SKIP: running as root, a read-only folder would not stop the write\n");
    } else {
        snprintf(p, sizeof p, "%s", path_in("ro"));
        mkdir(p, 0555);
        char f[1100];
        snprintf(f, sizeof f, "%s/ck.nmt", p);
        st = checkpoint_save(&ck, f);
        CHECK(st == NMT_ERR_IO, "save into a read-only folder: %s", nmt_status_name(st));
        CHECK_CONTAINS(nmt_error_message(), f);
        rmdir(p);
    }
}

/* After a failed save over `path`, which held `old` (an empty checkpoint):
 * the old file is intact and loadable and no temporary file is left. */
static void check_previous_intact(const char *path, const uint8_t *old, size_t old_n,
                                  const char *what) {
    Checkpoint back, empty;
    memset(&empty, 0, sizeof empty);
    CHECK(same_file(path, old, old_n), "%s: the previous file is unchanged", what);
    NmtStatus st = checkpoint_load(path, &back);
    CHECK(st == NMT_OK, "%s: the previous file still loads: %s", what, nmt_error_message());
    if (st == NMT_OK) check_same(&back, &empty, what);
    checkpoint_free(&back);
    CHECK(tmp_files_left() == 0, "%s: no temporary file left", what);
}

static void test_failed_save_keeps_previous(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s", path_in("keep.nmt"));
    Checkpoint small;
    memset(&small, 0, sizeof small); /* check_previous_intact compares with an empty one */
    CHECK(checkpoint_save(&small, path) == NMT_OK, "save previous: %s", nmt_error_message());
    size_t old_n;
    uint8_t *old = read_bytes(path, &old_n);

    /* a save refused before writing */
    Checkpoint bad = example(1);
    bad.n_floats = 48;
    NmtStatus st = checkpoint_save(&bad, path);
    CHECK(st == NMT_ERR_RUNTIME, "inconsistent n_floats refused: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), "n_floats is 48 but the tensor shapes add up to 49");
    CHECK(same_file(path, old, old_n), "previous file unchanged after a refused save");

    /* a disk that fills up, simulated by a file-size limit */
    struct rlimit saved;
    if (getrlimit(RLIMIT_FSIZE, &saved) == 0) {
        struct rlimit lim = saved;
        lim.rlim_cur = 64 * 1024;
        void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            Checkpoint big = big_example();
            st = checkpoint_save(&big, path);
            setrlimit(RLIMIT_FSIZE, &saved);
            CHECK(st == NMT_ERR_IO, "save over the file-size limit: %s", nmt_status_name(st));
            CHECK_CONTAINS(nmt_error_message(), "write failed");
            CHECK_CONTAINS(nmt_error_message(), path);
            check_previous_intact(path, old, old_n, "file-size limit");
        } else {
            printf("SKIP: cannot set RLIMIT_FSIZE: %s\n", strerror(errno));
        }
        signal(SIGXFSZ, old_handler);
    }
    free(old);
}

/* A full tmpfs in a private mount namespace (a child process, so nothing
 * stays mounted); skipped when mounting is not allowed. */
static void test_full_tmpfs(void) {
    char mnt[1024];
    snprintf(mnt, sizeof mnt, "%s", path_in("tmpfs"));
    mkdir(mnt, 0755);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", mnt, "tmpfs", 0, "size=256k") != 0)
            _exit(77);
        int failed_before = test_failed;
        char path[1100];
        snprintf(path, sizeof path, "%s/ck.nmt", mnt);
        Checkpoint ck;
        memset(&ck, 0, sizeof ck);
        CHECK(checkpoint_save(&ck, path) == NMT_OK, "save on tmpfs: %s", nmt_error_message());
        size_t old_n;
        uint8_t *old = read_bytes(path, &old_n);
        Checkpoint big = big_example(), back;
        NmtStatus st = checkpoint_save(&big, path);
        CHECK(st == NMT_ERR_IO, "save onto a full tmpfs: %s", nmt_status_name(st));
        CHECK_CONTAINS(nmt_error_message(), path);
        CHECK(same_file(path, old, old_n), "full tmpfs: previous file unchanged");
        CHECK(checkpoint_load(path, &back) == NMT_OK, "full tmpfs: previous file loads: %s",
              nmt_error_message());
        checkpoint_free(&back);
        DIR *d = opendir(mnt);
        int entries = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) entries += e->d_name[0] != '.';
        if (d) closedir(d);
        CHECK(entries == 1, "full tmpfs: %d files left, expected only ck.nmt", entries);
        free(old);
        umount(mnt);
        _exit(test_failed - failed_before > 0 ? 1 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork / wait");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        printf("SKIP: cannot mount a tmpfs here (needs CAP_SYS_ADMIN); full-disk test skipped\n");
    else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "full tmpfs checks in the child (status %d)", status);
    rmdir(mnt);
}

/* ---- saves refused for an inconsistent struct --------------------------------------- */

static void test_save_refuses(void) {
    char p[1024];
    snprintf(p, sizeof p, "%s", path_in("refused.nmt"));
    CheckpointTensor bad_name[3] = {{"", 1, 4, 3}, {"enc.W_ih", 2, 3, 5}, {"out_b", 1, 1, 7}};
    CheckpointTensor space[3] = {{"src emb", 1, 4, 3}, {"enc.W_ih", 2, 3, 5}, {"out_b", 1, 1, 7}};
    CheckpointTensor zero[3] = {{"src_emb", 1, 0, 3}, {"enc.W_ih", 2, 3, 5}, {"out_b", 1, 1, 7}};
    for (int c = 0; c < 9; c++) {
        Checkpoint ck = example(1);
        const char *want = "";
        switch (c) {
        case 0: ck.n_floats = 50; want = "n_floats is 50"; break;
        case 1: ck.adam_v = NULL; want = "only one of the two optimizer moments"; break;
        case 2: ck.tensors = bad_name; want = "tensor 0 has a bad name"; break;
        case 3: ck.tensors = space; want = "tensor 0 has a bad name"; break;
        case 4: ck.tensors = zero; want = "tensor src_emb has shape (1, 0, 3)"; break;
        case 5: ck.n_history = CHECKPOINT_MAX_HISTORY + 1; want = "bad history (100001 records"; break;
        case 6: ck.optimizer = 5; want = "unknown optimizer kind 5"; break;
        case 7: ck.config_json = "{\"a\": \"\xc3\"}"; want = "not valid UTF-8 (byte 7)"; break;
        case 8: ck.state.epoch = -1; want = "negative step, epoch or batch"; break;
        }
        NmtStatus st = checkpoint_save(&ck, p);
        CHECK(st == NMT_ERR_RUNTIME, "case %d: %s", c, nmt_status_name(st));
        CHECK_CONTAINS(nmt_error_message(), p);
        CHECK_CONTAINS(nmt_error_message(), want);
        CHECK(access(p, F_OK) != 0, "case %d: no file written", c);
    }
    CHECK_EQ_INT(tmp_files_left(), 0);
}

static void test_free(void) {
    Checkpoint z;
    memset(&z, 0, sizeof z);
    checkpoint_free(&z);
    checkpoint_free(NULL);
    CHECK(is_zeroed(&z), "checkpoint_free on a zeroed struct");
}

/* Removes the files this binary left in its folder. */
static void cleanup(void) {
    DIR *d = opendir(test_tmpdir());
    struct dirent *e;
    char p[2048];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", test_tmpdir(), e->d_name);
        if (unlink(p) != 0) rmdir(p);
    }
    if (d) closedir(d);
    rmdir(test_tmpdir());
}

/* checkpoint_check_finite: the example's NaN, +Inf and -Inf weights (in
 * src_emb from element 5) are counted and named; finite weights pass; a
 * non-finite moment is named as one. The format itself stores them all
 * (test_round_trip). */
static void test_check_finite(void) {
    Checkpoint ck = example(1);
    CHECK_EQ_INT(checkpoint_check_finite(&ck, "ex.nmt"), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "ex.nmt: 3 of its 49 weights are not finite (NaN or Inf), the first in "
                                        "tensor src_emb (element 5, value nan)");
    float saved[3] = {ex_params[5], ex_params[6], ex_params[9]};
    ex_params[5] = ex_params[6] = ex_params[9] = 1.0f;
    CHECK_EQ_INT(checkpoint_check_finite(&ck, "ex.nmt"), NMT_OK);
    ex_params[EX_FLOATS - 1] = -INFINITY; /* the last weight: the last tensor */
    CHECK_EQ_INT(checkpoint_check_finite(&ck, "ex.nmt"), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "1 of its 49 weights are not finite (NaN or Inf), the first in tensor out_b "
                                        "(element 6, value -inf)");
    ex_params[EX_FLOATS - 1] = 0.5f;
    ex_v[20] = NAN; /* enc.W_ih, element 8 */
    CHECK_EQ_INT(checkpoint_check_finite(&ck, "ex.nmt"), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "1 of its 49 Adam second moments are not finite (NaN or Inf), the first in "
                                        "tensor enc.W_ih (element 8");
    ck.adam_m = ck.adam_v = NULL; /* not loaded (translate, average): not checked */
    CHECK_EQ_INT(checkpoint_check_finite(&ck, "ex.nmt"), NMT_OK);
    ex_params[5] = saved[0], ex_params[6] = saved[1], ex_params[9] = saved[2];
    example(1); /* the example arrays as they were */
}

int main(int argc, char **argv) {
    const char *tunables = getenv("GLIBC_TUNABLES");
    heap_exact = tunables && strstr(tunables, TCACHE_OFF);
    if (!heap_exact && !getenv("NMT_TEST_REEXEC") && argc >= 1) {
        char env[2048];
        snprintf(env, sizeof env, "%s%s" TCACHE_OFF, tunables ? tunables : "", tunables ? ":" : "");
        setenv("GLIBC_TUNABLES", env, 1);
        setenv("NMT_TEST_REEXEC", "1", 1);
        execv("/proc/self/exe", argv); /* on failure, carry on without exact leak checks */
    }
    nmt_log_quiet(1);
    test_free();
    test_round_trip();
    test_golden_bytes();
    test_sgd();
    test_empty();
    test_large();
    test_truncated_and_flipped();
    test_versions_magic_trailing();
    test_structure();
    test_train_params();
    test_chrf_history();
    test_history_best();
    test_alloc_walk();
    test_unwritable();
    test_failed_save_keeps_previous();
    test_full_tmpfs();
    test_save_refuses();
    test_check_finite();
    free(big_params);
    free(big_m);
    free(big_v);
    cleanup();
    return test_summary("test_checkpoint");
}
