/* dataset.c: growable storage of a tokenized parallel corpus and its
 * checksummed binary file (dataset.h). */
#include "data/dataset.h"

#include <string.h>
#include <zlib.h>

#include "fileio.h"

NmtStatus dataset_create(Dataset **out) {
    *out = NULL;
    Dataset *d = nmt_calloc(1, sizeof *d);
    if (!d) return nmt_fail_nomem("creating a dataset");
    d->src_offset = nmt_calloc(1, sizeof *d->src_offset);
    d->tgt_offset = nmt_calloc(1, sizeof *d->tgt_offset);
    if (!d->src_offset || !d->tgt_offset) {
        dataset_free(d);
        return nmt_fail_nomem("creating a dataset");
    }
    *out = d;
    return NMT_OK;
}

void dataset_free(Dataset *d) {
    if (!d) return;
    nmt_free(d->src_offset);
    nmt_free(d->src_ids);
    nmt_free(d->tgt_offset);
    nmt_free(d->tgt_ids);
    nmt_free(d->line_no);
    nmt_free(d);
}

/* Grows *buf (elements of `size` bytes) to hold at least `need` elements. */
static int grow(void **buf, int64_t *capacity, int64_t need, size_t size) {
    if (need <= *capacity) return 1;
    int64_t cap = *capacity ? *capacity : 64;
    while (cap < need) cap *= 2;
    void *p = nmt_realloc(*buf, (size_t)cap * size);
    if (!p) return 0;
    *buf = p;
    *capacity = cap;
    return 1;
}

NmtStatus dataset_add(Dataset *d, const int32_t *src, int src_len,
                      const int32_t *tgt, int tgt_len, int64_t line_no) {
    NMT_ASSERT(src_len >= 0 && tgt_len >= 0);
    int64_t n = d->n_pairs;
    int64_t pair_cap = d->capacity_pairs;
    int64_t src_need = d->src_offset[n] + src_len, tgt_need = d->tgt_offset[n] + tgt_len;
    /* offsets hold n_pairs + 1 entries: grow them by the same pair capacity */
    if (n + 2 > pair_cap) {
        int64_t cap = pair_cap ? pair_cap * 2 : 64;
        int64_t *so = nmt_realloc(d->src_offset, (size_t)cap * sizeof *so);
        if (!so) return nmt_fail_nomem("growing a dataset");
        d->src_offset = so;
        int64_t *to = nmt_realloc(d->tgt_offset, (size_t)cap * sizeof *to);
        if (!to) return nmt_fail_nomem("growing a dataset");
        d->tgt_offset = to;
        int64_t *ln = nmt_realloc(d->line_no, (size_t)cap * sizeof *ln);
        if (!ln) return nmt_fail_nomem("growing a dataset");
        d->line_no = ln;
        d->capacity_pairs = cap;
    }
    if (!grow((void **)&d->src_ids, &d->capacity_src, src_need, sizeof(int32_t)) ||
        !grow((void **)&d->tgt_ids, &d->capacity_tgt, tgt_need, sizeof(int32_t)))
        return nmt_fail_nomem("growing a dataset");
    if (src_len) memcpy(d->src_ids + d->src_offset[n], src, (size_t)src_len * sizeof(int32_t));
    if (tgt_len) memcpy(d->tgt_ids + d->tgt_offset[n], tgt, (size_t)tgt_len * sizeof(int32_t));
    d->src_offset[n + 1] = src_need;
    d->tgt_offset[n + 1] = tgt_need;
    d->line_no[n] = line_no;
    d->n_pairs = n + 1;
    return NMT_OK;
}

/* ---- binary file ------------------------------------------------------- */

static const char dataset_magic[8] = {'N', 'M', 'T', 'D', 'A', 'T', 'A', 1};

typedef struct {
    AtomicFile *file;
    uLong crc;
    NmtStatus status;
} CrcWriter;

static void crc_write(CrcWriter *w, const void *bytes, size_t n) {
    if (w->status) return;
    w->crc = file_crc32((uint32_t)w->crc, bytes, n);
    w->status = atomic_file_write(w->file, bytes, n);
}

NmtStatus dataset_save(const Dataset *d, const char *path) {
    CrcWriter w = {NULL, crc32(0L, Z_NULL, 0), NMT_OK};
    NmtStatus st = atomic_file_open(path, &w.file);
    if (st) return st;
    int64_t n = d->n_pairs, header[3] = {n, d->src_offset[n], d->tgt_offset[n]};
    crc_write(&w, dataset_magic, sizeof dataset_magic);
    crc_write(&w, header, sizeof header);
    crc_write(&w, d->src_offset, (size_t)(n + 1) * sizeof(int64_t));
    crc_write(&w, d->src_ids, (size_t)header[1] * sizeof(int32_t));
    crc_write(&w, d->tgt_offset, (size_t)(n + 1) * sizeof(int64_t));
    crc_write(&w, d->tgt_ids, (size_t)header[2] * sizeof(int32_t));
    crc_write(&w, d->line_no, (size_t)n * sizeof(int64_t));
    uint32_t crc = (uint32_t)w.crc;
    if (!w.status) w.status = atomic_file_write(w.file, &crc, sizeof crc);
    if (w.status) {
        atomic_file_abort(w.file);
        return w.status;
    }
    return atomic_file_commit(w.file);
}

/* Checks that offsets start at 0, never decrease and end at `total`. */
static int offsets_valid(const int64_t *off, int64_t n, int64_t total) {
    if (off[0] != 0 || off[n] != total) return 0;
    for (int64_t i = 0; i < n; i++)
        if (off[i + 1] < off[i]) return 0;
    return 1;
}

NmtStatus dataset_load(const char *path, Dataset **out) {
    *out = NULL;
    char *bytes;
    size_t size;
    NmtStatus st = file_read_all(path, &bytes, &size);
    if (st) return st;
    const size_t head = sizeof dataset_magic + 3 * sizeof(int64_t);
    int64_t header[3];
    if (size < head + sizeof(uint32_t) || memcmp(bytes, dataset_magic, sizeof dataset_magic)) {
        nmt_free(bytes);
        return nmt_fail(NMT_ERR_FORMAT, "%s: not an nmt dataset file (bad magic or too short)", path);
    }
    memcpy(header, bytes + sizeof dataset_magic, sizeof header);
    int64_t n = header[0], n_src = header[1], n_tgt = header[2];
    uint64_t expected = head + (uint64_t)(n + 1) * 8 * 2 + (uint64_t)n_src * 4 +
                        (uint64_t)n_tgt * 4 + (uint64_t)n * 8 + 4;
    if (n < 0 || n_src < 0 || n_tgt < 0 || n > (int64_t)size || n_src > (int64_t)size ||
        n_tgt > (int64_t)size || expected != size) {
        nmt_free(bytes);
        return nmt_fail(NMT_ERR_FORMAT, "%s: truncated or corrupt dataset file (size %zu)", path, size);
    }
    uint32_t stored;
    memcpy(&stored, bytes + size - 4, 4);
    if (file_crc32(0, bytes, size - 4) != stored) {
        nmt_free(bytes);
        return nmt_fail(NMT_ERR_FORMAT, "%s: checksum mismatch (the file is corrupt)", path);
    }
    Dataset *d = nmt_calloc(1, sizeof *d);
    if (d) {
        d->n_pairs = n;
        d->capacity_pairs = n + 1;
        d->capacity_src = n_src;
        d->capacity_tgt = n_tgt;
        d->src_offset = nmt_malloc((size_t)(n + 1) * 8);
        d->src_ids = nmt_malloc((size_t)n_src * 4);
        d->tgt_offset = nmt_malloc((size_t)(n + 1) * 8);
        d->tgt_ids = nmt_malloc((size_t)n_tgt * 4);
        d->line_no = nmt_malloc((size_t)(n ? n : 1) * 8);
    }
    if (!d || !d->src_offset || !d->src_ids || !d->tgt_offset || !d->tgt_ids || !d->line_no) {
        dataset_free(d);
        nmt_free(bytes);
        return nmt_fail_nomem("loading a dataset");
    }
    const char *p = bytes + head;
    memcpy(d->src_offset, p, (size_t)(n + 1) * 8), p += (n + 1) * 8;
    memcpy(d->src_ids, p, (size_t)n_src * 4), p += n_src * 4;
    memcpy(d->tgt_offset, p, (size_t)(n + 1) * 8), p += (n + 1) * 8;
    memcpy(d->tgt_ids, p, (size_t)n_tgt * 4), p += n_tgt * 4;
    memcpy(d->line_no, p, (size_t)n * 8);
    nmt_free(bytes);
    if (!offsets_valid(d->src_offset, n, n_src) || !offsets_valid(d->tgt_offset, n, n_tgt)) {
        dataset_free(d);
        return nmt_fail(NMT_ERR_FORMAT, "%s: corrupt dataset file (bad offsets)", path);
    }
    *out = d;
    return NMT_OK;
}
