/* checkpoint.c: the one-file checkpoint of checkpoint.h. Saving streams the
 * header and the sections straight into an AtomicFile (fileio.h) while
 * updating a running CRC32, so the weights are never copied into a second
 * buffer. Loading first streams the file through the checksum and checks
 * magic, version, flags, length and checksum before parsing anything, then
 * walks the sections, bounds-checking every length against the bytes that
 * remain before it allocates, and reads each section where it lies: the
 * weights and moments straight into their arrays (so a load holds each
 * byte once), the moments not at all for checkpoint_load_weights. A pipe is
 * read whole first. The byte layout is in docs/checkpoint-format.md.
 *
 * Every integer and float is written little endian byte by byte (put_u32 /
 * put_u64), so the code is correct on any host; on a little-endian host the
 * float arrays go to and from the file with a single write / memcpy. */
#include "train/checkpoint.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "config.h"
#include "data/corpus.h"
#include "fileio.h"

_Static_assert(sizeof(float) == 4 && FLT_MANT_DIG == 24, "float must be IEEE binary32");
_Static_assert(sizeof(double) == 8 && DBL_MANT_DIG == 53, "double must be IEEE binary64");

/* ---- layout constants ------------------------------------------------------ */

static const uint8_t CK_MAGIC[8] = {'N', 'M', 'T', 'C', 'K', 'P', 'T', '\0'};

enum {
    CK_HEADER_BYTES = 24,  /* magic 8, version 4, flags 4, content length 8 */
    CK_SECTION_HEAD = 12,  /* tag 4, length 8 */
    CK_CRC_BYTES = 4,
    CK_STATE_FIELDS = 12,  /* TrainState: twelve 8-byte fields */
    CK_STATE_BYTES = 8 * CK_STATE_FIELDS,
    CK_RECORD_BYTES = 24,  /* ValidRecord in formats 1 and 2: step i64, ppl f64, bleu f64 */
    CK_RECORD_CHRF_BYTES = 32, /* in format 3: and chrf f64 */
    CK_TENSOR_FIXED = 16,  /* name length 4, count 4, rows 4, cols 4 (+ name) */
    CK_NAME_MAX = 31,      /* CheckpointTensor.name holds 31 bytes and a NUL */
    CK_N_OPTIMIZERS = 0
#define CK_COUNT_ONE(name, text) +1
        OPTIMIZERS(CK_COUNT_ONE)
#undef CK_COUNT_ONE
};

#define CK_TAG(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* The sections, in the order they are written. The tag is four ASCII bytes
 * as they appear in the file ("CONF"), read as a little-endian u32. */
enum {
    SEC_CONFIG,
    SEC_SRC_TOKENIZER,
    SEC_TGT_TOKENIZER,
    SEC_TENSORS,
    SEC_PARAMS,
    SEC_OPTIMIZER,
    SEC_STATE,
    SEC_HISTORY,
    SEC_TRAIN_PARAMS, /* from format 2: written when PARAMS holds the moving average */
    SEC_COUNT
};

/* The format a checkpoint is written in: the oldest that holds it. 3 when a
 * validation record has a chrF (its records are 32 bytes; TRAIN_PARAMS is
 * optional), else 2 when it has TRAIN_PARAMS (which format 2 requires),
 * else 1 (its config may still hold keys an older nmt refuses). */
enum { CK_FIRST_VERSION = 1, CK_TRAIN_PARAMS_VERSION = 2, CK_CHRF_VERSION = 3 };

/* Bytes of one validation record in a file of `version`. */
static uint64_t record_bytes(uint32_t version) {
    return version >= CK_CHRF_VERSION ? CK_RECORD_CHRF_BYTES : CK_RECORD_BYTES;
}

/* The format `ck` is written in (above). */
static uint32_t save_version(const Checkpoint *ck) {
    for (int i = 0; i < ck->n_history; i++)
        if (!isnan(ck->history[i].chrf)) return CK_CHRF_VERSION;
    return ck->train_params ? CK_TRAIN_PARAMS_VERSION : CK_FIRST_VERSION;
}

static const struct {
    uint32_t tag;
    const char *name;
} ck_sections[SEC_COUNT] = {
    [SEC_CONFIG] = {CK_TAG('C', 'O', 'N', 'F'), "CONFIG"},
    [SEC_SRC_TOKENIZER] = {CK_TAG('S', 'T', 'O', 'K'), "SRC_TOKENIZER"},
    [SEC_TGT_TOKENIZER] = {CK_TAG('T', 'T', 'O', 'K'), "TGT_TOKENIZER"},
    [SEC_TENSORS] = {CK_TAG('T', 'E', 'N', 'S'), "TENSORS"},
    [SEC_PARAMS] = {CK_TAG('P', 'A', 'R', 'M'), "PARAMS"},
    [SEC_OPTIMIZER] = {CK_TAG('O', 'P', 'T', 'M'), "OPTIMIZER"},
    [SEC_STATE] = {CK_TAG('S', 'T', 'A', 'T'), "STATE"},
    [SEC_HISTORY] = {CK_TAG('H', 'I', 'S', 'T'), "HISTORY"},
    [SEC_TRAIN_PARAMS] = {CK_TAG('T', 'P', 'R', 'M'), "TRAIN_PARAMS"},
};

double valid_record_score(const ValidRecord *r, int metric) {
    switch (metric) {
    case CFG_METRIC_BLEU: return r->bleu;
    case CFG_METRIC_CHRF: return r->chrf;
    default: return -r->ppl;
    }
}

int valid_history_best(const ValidRecord *history, int n, int metric) {
    int best = -1;
    double best_score = 0;
    for (int i = 0; i < n; i++) {
        double score = valid_record_score(&history[i], metric);
        if (!isnan(score) && (best < 0 || score > best_score)) best = i, best_score = score;
    }
    return best;
}

/* ---- little-endian encoding ------------------------------------------------ */

static int host_is_little_endian(void) {
    const uint32_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t f64_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static double bits_f64(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}


/* ---- shared checks ----------------------------------------------------------- */

/* 1 when the name is 1..31 printable ASCII bytes without spaces. */
static int tensor_name_ok(const uint8_t *name, size_t len) {
    if (len < 1 || len > CK_NAME_MAX) return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] <= 0x20 || name[i] >= 0x7f) return 0;
    return 1;
}

/* count * rows * cols added to *total; 0 on overflow of uint64_t. */
static int add_tensor_size(uint64_t *total, int32_t count, int32_t rows, int32_t cols) {
    uint64_t c = (uint64_t)count, r = (uint64_t)rows, k = (uint64_t)cols;
    uint64_t cr = c * r; /* both < 2^31: fits */
    if (cr > UINT64_MAX / k) return 0;
    uint64_t size = cr * k;
    if (*total > UINT64_MAX - size) return 0;
    *total += size;
    return 1;
}

/* ---- saving ------------------------------------------------------------------ */

/* Buffered writer: small fields collect in buf, big arrays go straight to
 * the file; every byte passes through the running CRC. */
typedef struct {
    AtomicFile *f;
    uLong crc;
    uint64_t written; /* bytes so far, header included */
    size_t fill;
    uint8_t buf[1 << 14];
} Writer;

static NmtStatus w_flush(Writer *w) {
    if (w->fill == 0) return NMT_OK;
    NmtStatus st = atomic_file_write(w->f, w->buf, w->fill);
    w->fill = 0;
    return st;
}

static NmtStatus w_bytes(Writer *w, const void *bytes, size_t n) {
    if (n == 0) return NMT_OK;
    w->crc = file_crc32(w->crc, bytes, n);
    w->written += n;
    if (n > sizeof w->buf - w->fill) {
        NmtStatus st = w_flush(w);
        if (st) return st;
        if (n >= sizeof w->buf) return atomic_file_write(w->f, bytes, n);
    }
    memcpy(w->buf + w->fill, bytes, n);
    w->fill += n;
    return NMT_OK;
}

static NmtStatus w_u32(Writer *w, uint32_t v) {
    uint8_t b[4];
    put_u32(b, v);
    return w_bytes(w, b, 4);
}

static NmtStatus w_u64(Writer *w, uint64_t v) {
    uint8_t b[8];
    put_u64(b, v);
    return w_bytes(w, b, 8);
}

static NmtStatus w_f32s(Writer *w, const float *a, size_t n) {
    if (host_is_little_endian()) return w_bytes(w, a, n * 4);
    uint8_t tmp[4096];
    while (n > 0) {
        size_t m = n < sizeof tmp / 4 ? n : sizeof tmp / 4;
        for (size_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, &a[i], 4);
            put_u32(tmp + 4 * i, u);
        }
        NmtStatus st = w_bytes(w, tmp, m * 4);
        if (st) return st;
        a += m;
        n -= m;
    }
    return NMT_OK;
}

static NmtStatus w_section(Writer *w, int sec, uint64_t len) {
    NmtStatus st = w_u32(w, ck_sections[sec].tag);
    return st ? st : w_u64(w, len);
}

/* Byte lengths of the sections of `ck` (filled by check_for_save). */
typedef struct {
    size_t config_len;
    uint64_t len[SEC_COUNT];
    uint64_t content;
    int moments;
    uint32_t version;
} SaveSizes;

/* Refuses (NMT_ERR_RUNTIME) what checkpoint_load would refuse, so that a
 * save never produces a file that cannot be read back. */
static NmtStatus check_for_save(const Checkpoint *ck, const char *path, SaveSizes *sz) {
    memset(sz, 0, sizeof *sz);
    const char *config = ck->config_json ? ck->config_json : "";
    sz->config_len = strlen(config);
    size_t bad = 0;
    if (!utf8_validate(config, sz->config_len, &bad))
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: the config is not valid UTF-8 (byte %zu)",
                        path, bad);
    if ((ck->src_tok_len && !ck->src_tok) || (ck->tgt_tok_len && !ck->tgt_tok))
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: a tokenizer has a length but no bytes",
                        path);
    if (ck->n_tensors < 0 || (ck->n_tensors > 0 && !ck->tensors))
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: bad tensor table (%d tensors)", path,
                        ck->n_tensors);
    uint64_t total = 0, table = 4;
    for (int i = 0; i < ck->n_tensors; i++) {
        const CheckpointTensor *t = &ck->tensors[i];
        size_t name_len = strnlen(t->name, sizeof t->name);
        if (!tensor_name_ok((const uint8_t *)t->name, name_len))
            return nmt_fail(NMT_ERR_RUNTIME,
                            "%s: cannot save: tensor %d has a bad name (1 to %d printable "
                            "ASCII bytes, no spaces)",
                            path, i, CK_NAME_MAX);
        if (t->count < 1 || t->rows < 1 || t->cols < 1)
            return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: tensor %s has shape (%d, %d, %d)",
                            path, t->name, t->count, t->rows, t->cols);
        if (!add_tensor_size(&total, t->count, t->rows, t->cols))
            return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: the tensor sizes overflow", path);
        table += CK_TENSOR_FIXED + name_len;
    }
    if (total != (uint64_t)ck->n_floats)
        return nmt_fail(NMT_ERR_RUNTIME,
                        "%s: cannot save: n_floats is %zu but the tensor shapes add up to %llu",
                        path, ck->n_floats, (unsigned long long)total);
    if (ck->n_floats > SIZE_MAX / 8 || (ck->n_floats > 0 && !ck->params))
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: no weights for %zu floats", path,
                        ck->n_floats);
    if (ck->optimizer < 0 || ck->optimizer >= CK_N_OPTIMIZERS)
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: unknown optimizer kind %d", path,
                        (int)ck->optimizer);
    if (!ck->adam_m != !ck->adam_v)
        return nmt_fail(NMT_ERR_RUNTIME,
                        "%s: cannot save: only one of the two optimizer moments is set", path);
    sz->moments = ck->adam_m != NULL;
    const TrainState *s = &ck->state;
    if (s->step < 0 || s->epoch < 0 || s->batch_index < 0)
        return nmt_fail(NMT_ERR_RUNTIME,
                        "%s: cannot save: negative step, epoch or batch (%lld, %lld, %lld)", path,
                        (long long)s->step, (long long)s->epoch, (long long)s->batch_index);
    if (ck->n_history < 0 || ck->n_history > CHECKPOINT_MAX_HISTORY ||
        (ck->n_history > 0 && !ck->history))
        return nmt_fail(NMT_ERR_RUNTIME, "%s: cannot save: bad history (%d records, at most %d)",
                        path, ck->n_history, CHECKPOINT_MAX_HISTORY);

    sz->len[SEC_CONFIG] = sz->config_len;
    sz->len[SEC_SRC_TOKENIZER] = ck->src_tok_len;
    sz->len[SEC_TGT_TOKENIZER] = ck->tgt_tok_len;
    sz->len[SEC_TENSORS] = table;
    sz->len[SEC_PARAMS] = 4 * (uint64_t)ck->n_floats;
    sz->len[SEC_OPTIMIZER] = 8 + (sz->moments ? 8 * (uint64_t)ck->n_floats : 0);
    sz->len[SEC_STATE] = CK_STATE_BYTES;
    sz->version = save_version(ck);
    sz->len[SEC_HISTORY] = 4 + record_bytes(sz->version) * (uint64_t)ck->n_history;
    sz->len[SEC_TRAIN_PARAMS] = ck->train_params ? 4 * (uint64_t)ck->n_floats : 0;
    for (int i = 0; i < SEC_COUNT; i++)
        if (i != SEC_TRAIN_PARAMS || ck->train_params) sz->content += CK_SECTION_HEAD + sz->len[i];
    return NMT_OK;
}

/* Everything after atomic_file_open: header, sections, CRC. */
static NmtStatus write_all(Writer *w, const Checkpoint *ck, const SaveSizes *sz) {
    NmtStatus st;
#define W(call)                        \
    do {                               \
        if ((st = (call))) return st;  \
    } while (0)
    W(w_bytes(w, CK_MAGIC, sizeof CK_MAGIC));
    W(w_u32(w, sz->version));
    W(w_u32(w, 0)); /* flags */
    W(w_u64(w, sz->content));

    W(w_section(w, SEC_CONFIG, sz->len[SEC_CONFIG]));
    W(w_bytes(w, ck->config_json ? ck->config_json : "", sz->config_len));

    W(w_section(w, SEC_SRC_TOKENIZER, sz->len[SEC_SRC_TOKENIZER]));
    W(w_bytes(w, ck->src_tok, ck->src_tok_len));
    W(w_section(w, SEC_TGT_TOKENIZER, sz->len[SEC_TGT_TOKENIZER]));
    W(w_bytes(w, ck->tgt_tok, ck->tgt_tok_len));

    W(w_section(w, SEC_TENSORS, sz->len[SEC_TENSORS]));
    W(w_u32(w, (uint32_t)ck->n_tensors));
    for (int i = 0; i < ck->n_tensors; i++) {
        const CheckpointTensor *t = &ck->tensors[i];
        size_t name_len = strnlen(t->name, sizeof t->name);
        W(w_u32(w, (uint32_t)name_len));
        W(w_bytes(w, t->name, name_len));
        W(w_u32(w, (uint32_t)t->count));
        W(w_u32(w, (uint32_t)t->rows));
        W(w_u32(w, (uint32_t)t->cols));
    }

    W(w_section(w, SEC_PARAMS, sz->len[SEC_PARAMS]));
    W(w_f32s(w, ck->params, ck->n_floats));

    W(w_section(w, SEC_OPTIMIZER, sz->len[SEC_OPTIMIZER]));
    W(w_u32(w, (uint32_t)ck->optimizer));
    W(w_u32(w, (uint32_t)sz->moments));
    if (sz->moments) {
        W(w_f32s(w, ck->adam_m, ck->n_floats));
        W(w_f32s(w, ck->adam_v, ck->n_floats));
    }

    const TrainState *s = &ck->state;
    const uint64_t fields[CK_STATE_FIELDS] = {
        (uint64_t)s->step,         (uint64_t)s->epoch,      (uint64_t)s->batch_index,
        s->rng_state,              s->rng_inc,              f64_bits(s->lr_scale),
        (uint64_t)s->bad_steps,    (uint64_t)s->evals_since_best,
        f64_bits(s->best_metric),  (uint64_t)s->best_step,  f64_bits(s->tokens_seen),
        f64_bits(s->seconds),
    };
    W(w_section(w, SEC_STATE, sz->len[SEC_STATE]));
    for (int i = 0; i < CK_STATE_FIELDS; i++) W(w_u64(w, fields[i]));

    W(w_section(w, SEC_HISTORY, sz->len[SEC_HISTORY]));
    W(w_u32(w, (uint32_t)ck->n_history));
    for (int i = 0; i < ck->n_history; i++) {
        W(w_u64(w, (uint64_t)ck->history[i].step));
        W(w_u64(w, f64_bits(ck->history[i].ppl)));
        W(w_u64(w, f64_bits(ck->history[i].bleu)));
        if (sz->version >= CK_CHRF_VERSION) W(w_u64(w, f64_bits(ck->history[i].chrf)));
    }
    if (ck->train_params) {
        W(w_section(w, SEC_TRAIN_PARAMS, sz->len[SEC_TRAIN_PARAMS]));
        W(w_f32s(w, ck->train_params, ck->n_floats));
    }
    NMT_ASSERT(w->written == CK_HEADER_BYTES + sz->content);

    uint8_t crc[4];
    put_u32(crc, (uint32_t)w->crc);
    W(w_bytes(w, crc, sizeof crc));
    return w_flush(w);
#undef W
}

NmtStatus checkpoint_save(const Checkpoint *ck, const char *path) {
    NMT_ASSERT(ck != NULL && path != NULL);
    SaveSizes sz;
    NmtStatus st = check_for_save(ck, path, &sz);
    if (st) return st;
    Writer w; /* 16 KiB buffer on the stack; its bytes need no zeroing */
    w.fill = 0;
    w.written = 0;
    w.crc = crc32(0L, Z_NULL, 0);
    st = atomic_file_open(path, &w.f);
    if (st) return st;
    st = write_all(&w, ck, &sz);
    if (st) {
        atomic_file_abort(w.f);
        w.f = NULL;
        return st;
    }
    st = atomic_file_commit(w.f);
    w.f = NULL;
    return st;
}

/* ---- loading ----------------------------------------------------------------- */

/* One section's bytes being parsed. */
typedef struct {
    const char *path;
    int sec;
    const uint8_t *p;
    size_t left;
    uint32_t version; /* the file's format */
} Reader;

static NmtStatus sec_fail(const Reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static NmtStatus sec_fail(const Reader *r, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return nmt_fail(NMT_ERR_FORMAT, "%s: section %s: %s", r->path, ck_sections[r->sec].name, what);
}

/* Takes n bytes, or fails naming what was being read. */
static NmtStatus r_take(Reader *r, size_t n, const char *what, const uint8_t **out) {
    if (n > r->left)
        return sec_fail(r, "%s needs %zu bytes, only %zu left", what, n, r->left);
    *out = r->p;
    r->p += n;
    r->left -= n;
    return NMT_OK;
}

static NmtStatus r_u32(Reader *r, const char *what, uint32_t *v) {
    const uint8_t *p = NULL;
    NmtStatus st = r_take(r, 4, what, &p);
    if (!st) *v = get_u32(p);
    return st;
}

static NmtStatus r_end(const Reader *r) {
    if (r->left) return sec_fail(r, "%zu unexpected bytes at its end", r->left);
    return NMT_OK;
}

/* A copy of the section's bytes (NULL when empty). */
static NmtStatus load_blob(Reader *r, uint8_t **out, size_t *len) {
    *len = r->left;
    if (r->left == 0) return NMT_OK;
    *out = nmt_malloc(r->left);
    if (!*out) return nmt_fail_nomem("loading a checkpoint");
    memcpy(*out, r->p, r->left);
    r->p += r->left;
    r->left = 0;
    return NMT_OK;
}

static NmtStatus load_config(Reader *r, Checkpoint *ck) {
    const uint8_t *nul = memchr(r->p, 0, r->left);
    if (nul) return sec_fail(r, "NUL byte at byte %zu of the config text", (size_t)(nul - r->p));
    size_t bad = 0;
    if (!utf8_validate((const char *)r->p, r->left, &bad))
        return sec_fail(r, "invalid UTF-8 at byte %zu of the config text", bad);
    ck->config_json = nmt_strndup((const char *)r->p, r->left);
    if (!ck->config_json) return nmt_fail_nomem("loading a checkpoint");
    r->p += r->left;
    r->left = 0;
    return NMT_OK;
}

static NmtStatus load_tensors(Reader *r, Checkpoint *ck) {
    uint32_t n = 0;
    NmtStatus st = r_u32(r, "the tensor count", &n);
    if (st) return st;
    /* bound before allocating: every entry takes at least 17 bytes */
    if (n > INT_MAX || (uint64_t)n * (CK_TENSOR_FIXED + 1) > r->left)
        return sec_fail(r, "%u tensors cannot fit in its remaining %zu bytes", n, r->left);
    if (n > 0) {
        ck->tensors = nmt_calloc(n, sizeof *ck->tensors);
        if (!ck->tensors) return nmt_fail_nomem("loading a checkpoint");
    }
    ck->n_tensors = (int)n;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        CheckpointTensor *t = &ck->tensors[i];
        uint32_t name_len = 0;
        const uint8_t *name = NULL, *shape = NULL;
        if ((st = r_u32(r, "a tensor name length", &name_len))) return st;
        if (name_len < 1 || name_len > CK_NAME_MAX)
            return sec_fail(r, "tensor %u: name length %u (1 to %d)", i, name_len, CK_NAME_MAX);
        if ((st = r_take(r, name_len, "a tensor name", &name))) return st;
        if (!tensor_name_ok(name, name_len))
            return sec_fail(r, "tensor %u: the name is not printable ASCII without spaces", i);
        memcpy(t->name, name, name_len);
        t->name[name_len] = '\0';
        if ((st = r_take(r, 12, "a tensor shape", &shape))) return st;
        t->count = (int32_t)get_u32(shape);
        t->rows = (int32_t)get_u32(shape + 4);
        t->cols = (int32_t)get_u32(shape + 8);
        if (t->count < 1 || t->rows < 1 || t->cols < 1)
            return sec_fail(r, "tensor %s: shape (%d, %d, %d) has a size below 1", t->name,
                            t->count, t->rows, t->cols);
        if (!add_tensor_size(&total, t->count, t->rows, t->cols))
            return sec_fail(r, "tensor %s: the tensor sizes overflow", t->name);
    }
    if (total > SIZE_MAX / 8) return sec_fail(r, "the tensors hold too many floats");
    ck->n_floats = (size_t)total;
    return r_end(r);
}

static NmtStatus load_state(Reader *r, Checkpoint *ck) {
    if (r->left != CK_STATE_BYTES)
        return sec_fail(r, "%zu bytes, expected %d", r->left, CK_STATE_BYTES);
    uint64_t f[CK_STATE_FIELDS];
    for (int i = 0; i < CK_STATE_FIELDS; i++) f[i] = get_u64(r->p + 8 * i);
    TrainState *s = &ck->state;
    s->step = (int64_t)f[0];
    s->epoch = (int64_t)f[1];
    s->batch_index = (int64_t)f[2];
    s->rng_state = f[3];
    s->rng_inc = f[4];
    s->lr_scale = bits_f64(f[5]);
    s->bad_steps = (int64_t)f[6];
    s->evals_since_best = (int64_t)f[7];
    s->best_metric = bits_f64(f[8]);
    s->best_step = (int64_t)f[9];
    s->tokens_seen = bits_f64(f[10]);
    s->seconds = bits_f64(f[11]);
    if (s->step < 0 || s->epoch < 0 || s->batch_index < 0)
        return sec_fail(r, "negative step, epoch or batch (%lld, %lld, %lld)", (long long)s->step,
                        (long long)s->epoch, (long long)s->batch_index);
    r->p += CK_STATE_BYTES;
    r->left = 0;
    return NMT_OK;
}

static NmtStatus load_history(Reader *r, Checkpoint *ck) {
    uint32_t n = 0;
    NmtStatus st = r_u32(r, "the record count", &n);
    if (st) return st;
    if (n > CHECKPOINT_MAX_HISTORY)
        return sec_fail(r, "%u records (at most %d)", n, CHECKPOINT_MAX_HISTORY);
    size_t record = (size_t)record_bytes(r->version);
    if (r->left != (size_t)n * record)
        return sec_fail(r, "%zu bytes for %u records of %zu bytes (format %u), expected %zu", r->left, n,
                        record, r->version, (size_t)n * record);
    if (n > 0) {
        ck->history = nmt_calloc(n, sizeof *ck->history);
        if (!ck->history) return nmt_fail_nomem("loading a checkpoint");
    }
    ck->n_history = (int)n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = r->p + (size_t)i * record;
        ck->history[i].step = (int64_t)get_u64(p);
        ck->history[i].ppl = bits_f64(get_u64(p + 8));
        ck->history[i].bleu = bits_f64(get_u64(p + 16));
        ck->history[i].chrf = record == CK_RECORD_CHRF_BYTES ? bits_f64(get_u64(p + 24)) : NAN;
    }
    r->p += r->left;
    r->left = 0;
    return NMT_OK;
}

/* The file being loaded: read where it lies (a regular file: nothing is
 * held twice, and sections that are not wanted are never read), or from
 * memory (a pipe, read whole first). */
typedef struct {
    const char *path;
    FILE *f;            /* NULL: mem */
    const uint8_t *mem;
    uint64_t size;
    uint32_t version; /* the file's format, once check_envelope has read it */
} Source;

static NmtStatus src_read(const Source *s, uint64_t off, void *buf, size_t n) {
    NMT_ASSERT(off <= s->size && n <= s->size - off);
    if (!n) return NMT_OK;
    if (!s->f) {
        memcpy(buf, s->mem + off, n);
        return NMT_OK;
    }
    if (fseeko(s->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, s->f) != n)
        return nmt_fail(NMT_ERR_IO, "%s: read error at byte %llu", s->path, (unsigned long long)off);
    return NMT_OK;
}

/* CRC32 of bytes [0, n). */
static NmtStatus src_crc(const Source *s, uint64_t n, uint32_t *crc) {
    uLong c = crc32(0L, Z_NULL, 0);
    if (!s->f) {
        *crc = (uint32_t)file_crc32(c, s->mem, n);
        return NMT_OK;
    }
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = nmt_malloc(CHUNK);
    if (!buf) return nmt_fail_nomem("checking a checkpoint");
    NmtStatus st = NMT_OK;
    for (uint64_t at = 0; at < n && !st; at += CHUNK) {
        size_t len = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
        st = src_read(s, at, buf, len);
        if (!st) c = file_crc32(c, buf, len);
    }
    nmt_free(buf);
    *crc = (uint32_t)c;
    return st;
}

/* Checks the envelope (magic, version, flags, length, CRC) of the file. */
static NmtStatus check_envelope(const Source *s, uint64_t *content, uint32_t *version_out) {
    const char *path = s->path;
    size_t size = (size_t)s->size;
    uint8_t b[CK_HEADER_BYTES];
    size_t head = size < CK_HEADER_BYTES ? size : CK_HEADER_BYTES;
    NmtStatus st = src_read(s, 0, b, head);
    if (st) return st;
    if (size == 0) return nmt_fail(NMT_ERR_FORMAT, "%s: empty file, not an nmt checkpoint", path);
    size_t m = size < sizeof CK_MAGIC ? size : sizeof CK_MAGIC;
    if (memcmp(b, CK_MAGIC, m) != 0)
        return nmt_fail(NMT_ERR_FORMAT, "%s: not an nmt checkpoint (bad magic)", path);
    if (size < 12)
        return nmt_fail(NMT_ERR_FORMAT, "%s: truncated (%zu bytes; a checkpoint has at least %d)",
                        path, size, CK_HEADER_BYTES + CK_CRC_BYTES);
    uint32_t version = get_u32(b + 8);
    if (version > CHECKPOINT_VERSION)
        return nmt_fail(NMT_ERR_FORMAT,
                        "%s: written by a newer nmt (format %u); this nmt reads formats %d to %d", path,
                        version, CK_FIRST_VERSION, CHECKPOINT_VERSION);
    if (version < CK_FIRST_VERSION)
        return nmt_fail(NMT_ERR_FORMAT,
                        "%s: checkpoint format %u is no longer supported; this nmt reads formats %d to %d",
                        path, version, CK_FIRST_VERSION, CHECKPOINT_VERSION);
    *version_out = version;
    if (size < CK_HEADER_BYTES + CK_CRC_BYTES)
        return nmt_fail(NMT_ERR_FORMAT, "%s: truncated (%zu bytes; a checkpoint has at least %d)",
                        path, size, CK_HEADER_BYTES + CK_CRC_BYTES);
    uint32_t flags = get_u32(b + 12);
    if (flags != 0)
        return nmt_fail(NMT_ERR_FORMAT, "%s: unknown flags 0x%08x (format %u has none)", path, flags,
                        version);
    *content = get_u64(b + 16);
    size_t body = size - CK_HEADER_BYTES - CK_CRC_BYTES;
    if (*content > body)
        return nmt_fail(NMT_ERR_FORMAT, "%s: truncated (%zu bytes; the header announces %llu)", path,
                        size, (unsigned long long)*content + CK_HEADER_BYTES + CK_CRC_BYTES);
    if (*content < body)
        return nmt_fail(NMT_ERR_FORMAT, "%s: %llu trailing bytes after the checkpoint", path,
                        (unsigned long long)(body - *content));
    uint8_t tail[CK_CRC_BYTES];
    uint32_t computed = 0;
    st = src_read(s, size - CK_CRC_BYTES, tail, CK_CRC_BYTES);
    if (!st) st = src_crc(s, size - CK_CRC_BYTES, &computed);
    if (st) return st;
    uint32_t stored = get_u32(tail);
    if (stored != computed)
        return nmt_fail(NMT_ERR_FORMAT, "%s: corrupt (checksum mismatch: stored %08x, computed %08x)",
                        path, stored, computed);
    return NMT_OK;
}

/* n float32 values at byte `off` of the file into a new array. */
static NmtStatus src_floats(const Source *s, uint64_t off, size_t n, float **out) {
    if (n == 0) return NMT_OK;
    *out = nmt_malloc(n * sizeof(float));
    if (!*out) return nmt_fail_nomem("loading a checkpoint");
    NmtStatus st = src_read(s, off, *out, n * 4);
    if (!st && !host_is_little_endian()) {
        const uint8_t *bytes = (const uint8_t *)*out;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = get_u32(bytes + 4 * i); /* in place: each word read before written */
            memcpy(&(*out)[i], &u, 4);
        }
    }
    return st;
}

/* A section of n_floats weights (PARAMS; TRAIN_PARAMS, the training
 * weights when PARAMS is their moving average), read straight into *out,
 * or only checked when out is NULL (TRAIN_PARAMS is read only when
 * resuming, like the moments). */
static NmtStatus load_weights(const Source *s, int sec, uint64_t off, size_t len, const Checkpoint *ck,
                              float **out) {
    Reader r = {s->path, sec, NULL, len, s->version};
    if (len != ck->n_floats * 4)
        return sec_fail(&r, "%zu bytes, but the tensor shapes need %zu floats (%zu bytes)", len,
                        ck->n_floats, ck->n_floats * 4);
    return out ? src_floats(s, off, ck->n_floats, out) : NMT_OK;
}

/* OPTIMIZER: kind, moments flag, then the two moments, read straight into
 * their arrays, or not read at all when !keep_moments (the checksum has
 * covered them). */
static NmtStatus load_optimizer(const Source *s, int sec, uint64_t off, size_t len, bool keep_moments,
                                Checkpoint *ck) {
    uint8_t head[8];
    size_t head_len = len < sizeof head ? len : sizeof head;
    NmtStatus st = src_read(s, off, head, head_len);
    if (st) return st;
    Reader r = {s->path, sec, head, len, s->version}; /* left counts the whole section */
    uint32_t kind = 0, moments = 0;
    st = r_u32(&r, "the optimizer kind", &kind);
    if (!st) st = r_u32(&r, "the moments flag", &moments);
    if (st) return st;
    if ((int32_t)kind < 0 || (int32_t)kind >= CK_N_OPTIMIZERS)
        return sec_fail(&r, "unknown optimizer kind %d", (int32_t)kind);
    ck->optimizer = (int32_t)kind;
    if (moments > 1) return sec_fail(&r, "moments flag %u (0 or 1)", moments);
    ck->moments_stored = moments == 1;
    size_t want = moments ? ck->n_floats * 8 : 0;
    if (r.left != want)
        return sec_fail(&r, "%zu bytes of moments, expected %zu (%s)", r.left, want,
                        moments ? "two arrays of n_floats float32" : "none: the flag is 0");
    if (moments && keep_moments) {
        if ((st = src_floats(s, off + 8, ck->n_floats, &ck->adam_m))) return st;
        if ((st = src_floats(s, off + 8 + (uint64_t)ck->n_floats * 4, ck->n_floats, &ck->adam_v))) return st;
    }
    return NMT_OK;
}

/* A small section: its bytes into a buffer, parsed by `load`. */
static NmtStatus load_small(const Source *s, int sec, uint64_t off, size_t len, Checkpoint *ck,
                            NmtStatus (*load)(Reader *, Checkpoint *)) {
    uint8_t *bytes = nmt_malloc(len ? len : 1); /* never NULL: parsers memchr an empty section */
    if (!bytes) return nmt_fail_nomem("loading a checkpoint");
    NmtStatus st = src_read(s, off, bytes, len);
    Reader r = {s->path, sec, bytes, len, s->version};
    if (!st) st = load(&r, ck);
    if (!st) NMT_ASSERT(r.left == 0);
    nmt_free(bytes);
    return st;
}

static NmtStatus load_src_tokenizer(Reader *r, Checkpoint *ck) {
    return load_blob(r, &ck->src_tok, &ck->src_tok_len);
}
static NmtStatus load_tgt_tokenizer(Reader *r, Checkpoint *ck) {
    return load_blob(r, &ck->tgt_tok, &ck->tgt_tok_len);
}

static NmtStatus parse(const Source *file, bool keep_moments, Checkpoint *ck) {
    const char *path = file->path;
    uint64_t content = 0;
    uint32_t version = 0;
    NmtStatus st = check_envelope(file, &content, &version);
    if (st) return st;
    Source versioned = *file;
    versioned.version = version;
    const Source *s = &versioned;
    ck->format = version;

    /* Find every section first, so that they may come in any order. */
    size_t off[SEC_COUNT] = {0}, len[SEC_COUNT] = {0};
    int seen[SEC_COUNT] = {0};
    size_t pos = CK_HEADER_BYTES, end = CK_HEADER_BYTES + (size_t)content;
    while (pos < end) {
        if (end - pos < CK_SECTION_HEAD)
            return nmt_fail(NMT_ERR_FORMAT, "%s: byte %zu: truncated section header (%zu bytes left)",
                            path, pos, end - pos);
        uint8_t head[CK_SECTION_HEAD];
        if ((st = src_read(s, pos, head, sizeof head))) return st;
        uint32_t tag = get_u32(head);
        uint64_t slen = get_u64(head + 4);
        size_t data = pos + CK_SECTION_HEAD;
        int sec = -1;
        for (int i = 0; i < SEC_COUNT; i++)
            if (ck_sections[i].tag == tag) sec = i;
        if (sec < 0 || (sec == SEC_TRAIN_PARAMS && version < CK_TRAIN_PARAMS_VERSION))
            return nmt_fail(NMT_ERR_FORMAT,
                            "%s: byte %zu: unknown section tag 0x%08x in format %u (written by a newer nmt?)",
                            path, pos, tag, version);
        if (slen > end - data)
            return nmt_fail(NMT_ERR_FORMAT,
                            "%s: section %s at byte %zu: length %llu overruns the content (%zu "
                            "bytes left)",
                            path, ck_sections[sec].name, pos, (unsigned long long)slen, end - data);
        if (seen[sec])
            return nmt_fail(NMT_ERR_FORMAT, "%s: section %s appears twice (bytes %zu and %zu)", path,
                            ck_sections[sec].name, off[sec] - CK_SECTION_HEAD, pos);
        seen[sec] = 1;
        off[sec] = data;
        len[sec] = (size_t)slen;
        pos = data + (size_t)slen;
    }
    for (int i = 0; i < SEC_COUNT; i++)
        if (!seen[i] && i != SEC_TRAIN_PARAMS)
            return nmt_fail(NMT_ERR_FORMAT, "%s: missing section %s", path, ck_sections[i].name);
    if (version == CK_TRAIN_PARAMS_VERSION && !seen[SEC_TRAIN_PARAMS]) /* format 2 exists for it alone */
        return nmt_fail(NMT_ERR_FORMAT, "%s: format 2 without its section %s", path,
                        ck_sections[SEC_TRAIN_PARAMS].name);
    ck->train_params_stored = seen[SEC_TRAIN_PARAMS];

    /* Parse in dependency order: PARAMS and OPTIMIZER need TENSORS' n_floats. */
    for (int i = 0; i < SEC_COUNT && !st; i++) {
        switch (i) {
        case SEC_CONFIG: st = load_small(s, i, off[i], len[i], ck, load_config); break;
        case SEC_SRC_TOKENIZER: st = load_small(s, i, off[i], len[i], ck, load_src_tokenizer); break;
        case SEC_TGT_TOKENIZER: st = load_small(s, i, off[i], len[i], ck, load_tgt_tokenizer); break;
        case SEC_TENSORS: st = load_small(s, i, off[i], len[i], ck, load_tensors); break;
        case SEC_PARAMS: st = load_weights(s, i, off[i], len[i], ck, &ck->params); break;
        case SEC_OPTIMIZER: st = load_optimizer(s, i, off[i], len[i], keep_moments, ck); break;
        case SEC_STATE: st = load_small(s, i, off[i], len[i], ck, load_state); break;
        case SEC_HISTORY: st = load_small(s, i, off[i], len[i], ck, load_history); break;
        case SEC_TRAIN_PARAMS:
            if (seen[i]) st = load_weights(s, i, off[i], len[i], ck, keep_moments ? &ck->train_params : NULL);
            break;
        default: NMT_ASSERT(0);
        }
    }
    return st;
}

static NmtStatus load(const char *path, bool keep_moments, Checkpoint *ck) {
    NMT_ASSERT(ck != NULL && path != NULL);
    memset(ck, 0, sizeof *ck);
    FILE *f = fopen(path, "rb");
    if (!f) return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    Source s = {path, f, NULL, 0, 0};
    char *bytes = NULL;
    NmtStatus st = NMT_OK;
    if (fstat(fileno(f), &info) == 0 && S_ISREG(info.st_mode)) {
        s.size = (uint64_t)info.st_size;
    } else { /* a pipe: read whole from the open stream, then parse from memory */
        size_t size = 0;
        st = file_read_stream(f, path, &bytes, &size);
        s.f = NULL;
        s.mem = (const uint8_t *)bytes;
        s.size = size;
    }
    if (!st) st = parse(&s, keep_moments, ck);
    if (f) fclose(f);
    nmt_free(bytes);
    if (st) checkpoint_free(ck);
    return st;
}

NmtStatus checkpoint_load(const char *path, Checkpoint *ck) { return load(path, true, ck); }

NmtStatus checkpoint_load_weights(const char *path, Checkpoint *ck) { return load(path, false, ck); }

/* Non-finite values of a (n_floats) array in layout order; *first_at gets
 * the index of the first one (unchanged when none). */
static size_t count_nonfinite(const float *a, size_t n, size_t *first_at) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i])) {
            if (!bad) *first_at = i;
            bad++;
        }
    return bad;
}

NmtStatus checkpoint_check_finite(const Checkpoint *ck, const char *path) {
    const struct {
        const float *a;
        const char *what;
    } arrays[] = {{ck->params, "weights"},
                  {ck->train_params, "training weights (those the moving average follows)"},
                  {ck->adam_m, "Adam first moments"},
                  {ck->adam_v, "Adam second moments"}};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
        if (!arrays[k].a) continue;
        size_t first = 0, bad = count_nonfinite(arrays[k].a, ck->n_floats, &first);
        if (!bad) continue;
        /* the tensor that holds the first one, and the index within it */
        const char *name = "?";
        size_t start = 0;
        for (int t = 0; t < ck->n_tensors; t++) {
            size_t size = (size_t)ck->tensors[t].count * (size_t)ck->tensors[t].rows * (size_t)ck->tensors[t].cols;
            if (first < start + size) {
                name = ck->tensors[t].name;
                break;
            }
            start += size;
        }
        return nmt_fail(NMT_ERR_FORMAT, "%s: %zu of its %zu %s are not finite (NaN or Inf), the first in tensor %s "
                        "(element %zu, value %g): a diverged or damaged model; refused",
                        path, bad, ck->n_floats, arrays[k].what, name, first - start, (double)arrays[k].a[first]);
    }
    return NMT_OK;
}

NmtStatus checkpoint_load_model(const char *path, Checkpoint *ck) {
    NmtStatus st = checkpoint_load_weights(path, ck);
    if (!st) st = checkpoint_check_finite(ck, path);
    if (st) checkpoint_free(ck);
    return st;
}

void checkpoint_free(Checkpoint *ck) {
    if (!ck) return;
    nmt_free(ck->config_json);
    nmt_free(ck->src_tok);
    nmt_free(ck->tgt_tok);
    nmt_free(ck->tensors);
    nmt_free(ck->params);
    nmt_free(ck->train_params);
    nmt_free(ck->adam_m);
    nmt_free(ck->adam_v);
    nmt_free(ck->history);
    memset(ck, 0, sizeof *ck);
}
