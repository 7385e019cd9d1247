/* checkpoint_average.c: see checkpoint_average.h. */
#include "train/checkpoint_average.h"

#include <string.h>

/* NULL when b has a's tensor table and tokenizers, else what differs. */
static const char *first_difference(const Checkpoint *a, const Checkpoint *b, int *tensor) {
    *tensor = -1;
    if (a->n_tensors != b->n_tensors || a->n_floats != b->n_floats) return "parameter layout";
    for (int i = 0; i < a->n_tensors; i++) {
        const CheckpointTensor *x = &a->tensors[i], *y = &b->tensors[i];
        if (strcmp(x->name, y->name) || x->count != y->count || x->rows != y->rows || x->cols != y->cols) {
            *tensor = i;
            return "tensor";
        }
    }
    if (a->src_tok_len != b->src_tok_len || (a->src_tok_len && memcmp(a->src_tok, b->src_tok, a->src_tok_len)))
        return "source tokenizer";
    if (a->tgt_tok_len != b->tgt_tok_len || (a->tgt_tok_len && memcmp(a->tgt_tok, b->tgt_tok, a->tgt_tok_len)))
        return "target tokenizer";
    return NULL;
}

static void *copy_bytes(const void *p, size_t n) {
    if (!n) return NULL;
    void *q = nmt_malloc(n);
    if (q) memcpy(q, p, n);
    return q;
}

/* A copy of ck without its weights and moments (the newest input's
 * config, tokenizers, tensor table, state and history). */
static NmtStatus copy_meta(const Checkpoint *ck, Checkpoint *out) {
    memset(out, 0, sizeof *out);
    out->tensors = copy_bytes(ck->tensors, (size_t)ck->n_tensors * sizeof *ck->tensors);
    out->config_json = copy_bytes(ck->config_json, strlen(ck->config_json) + 1);
    out->src_tok = copy_bytes(ck->src_tok, ck->src_tok_len);
    out->tgt_tok = copy_bytes(ck->tgt_tok, ck->tgt_tok_len);
    out->history = copy_bytes(ck->history, (size_t)ck->n_history * sizeof *ck->history);
    if ((ck->n_tensors && !out->tensors) || !out->config_json || (ck->src_tok_len && !out->src_tok) ||
        (ck->tgt_tok_len && !out->tgt_tok) || (ck->n_history && !out->history)) {
        checkpoint_free(out);
        return nmt_fail_nomem("averaging checkpoints");
    }
    out->src_tok_len = ck->src_tok_len;
    out->tgt_tok_len = ck->tgt_tok_len;
    out->n_tensors = ck->n_tensors;
    out->n_floats = ck->n_floats;
    out->optimizer = ck->optimizer;
    out->state = ck->state;
    out->n_history = ck->n_history;
    return NMT_OK;
}

void checkpoint_averager_init(CheckpointAverager *a) { memset(a, 0, sizeof *a); }

/* FNV-1a over the weights' bytes: inputs of one step with equal hashes are
 * the same checkpoint given twice (other weights of one step would need a
 * 64-bit collision) */
static uint64_t weights_hash(const Checkpoint *ck) {
    const unsigned char *p = (const unsigned char *)ck->params;
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < ck->n_floats * sizeof *ck->params; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Refuses ck (path) when an input of its step with its weights was added
 * already; else notes it. */
static NmtStatus note_input(CheckpointAverager *a, const Checkpoint *ck, const char *path) {
    uint64_t hash = weights_hash(ck);
    for (int k = 0; k < a->n; k++)
        if (a->inputs[k].step == ck->state.step && a->inputs[k].hash == hash)
            return nmt_fail(NMT_ERR_USAGE,
                            "%s: the same checkpoint as %s (step %lld, the same weights): it would count "
                            "twice; give each checkpoint once (runs/x/*.nmt also matches best.nmt and "
                            "last.nmt; runs/x/step-*.nmt does not)",
                            path, a->inputs[k].path, (long long)ck->state.step);
    CheckpointAveragerInput *grown = nmt_realloc(a->inputs, (size_t)(a->n + 1) * sizeof *grown);
    if (!grown) return nmt_fail_nomem("averaging checkpoints");
    a->inputs = grown;
    a->inputs[a->n] = (CheckpointAveragerInput){ck->state.step, hash, path};
    return NMT_OK;
}

NmtStatus checkpoint_averager_add(CheckpointAverager *a, const Checkpoint *ck, const char *path) {
    if (a->n > 0) {
        /* every input has the first one's tables; meta has them too */
        int tensor;
        const char *what = first_difference(&a->meta, ck, &tensor);
        if (what && tensor >= 0)
            return nmt_fail(NMT_ERR_FORMAT, "%s: tensor %d (%s) differs from %s's (%s): not the same model",
                            path, tensor, ck->tensors[tensor].name, a->first_path, a->meta.tensors[tensor].name);
        if (what)
            return nmt_fail(NMT_ERR_FORMAT, "%s: %s differs from %s's: not the same model", path, what,
                            a->first_path);
        NmtStatus st = note_input(a, ck, path);
        if (st) return st;
    } else {
        a->first_path = path;
        a->sum = nmt_calloc(ck->n_floats ? ck->n_floats : 1, sizeof *a->sum);
        if (!a->sum) return nmt_fail_nomem("averaging checkpoints");
        NmtStatus st = note_input(a, ck, path);
        if (st) return st;
    }
    if (a->n == 0 || ck->state.step > a->meta.state.step) { /* the newest so far (the first of equals) */
        Checkpoint meta;
        NmtStatus st = copy_meta(ck, &meta);
        if (st) return st;
        checkpoint_free(&a->meta);
        a->meta = meta;
    }
    for (size_t i = 0; i < ck->n_floats; i++) a->sum[i] += ck->params[i];
    a->n++;
    return NMT_OK;
}

NmtStatus checkpoint_averager_finish(CheckpointAverager *a, Checkpoint *out) {
    memset(out, 0, sizeof *out);
    if (a->n < 1) return nmt_fail(NMT_ERR_USAGE, "averaging needs at least one checkpoint");
    size_t nf = a->meta.n_floats;
    float *params = nmt_malloc((nf ? nf : 1) * sizeof *params);
    if (!params) return nmt_fail_nomem("averaging checkpoints");
    for (size_t i = 0; i < nf; i++) params[i] = (float)(a->sum[i] / a->n);
    *out = a->meta; /* the newest input's everything else; no moments */
    out->params = params;
    memset(&a->meta, 0, sizeof a->meta);
    return NMT_OK;
}

void checkpoint_averager_free(CheckpointAverager *a) {
    checkpoint_free(&a->meta);
    nmt_free(a->sum);
    nmt_free(a->inputs);
    memset(a, 0, sizeof *a);
}

NmtStatus checkpoint_average(const Checkpoint *in, const char *const *paths, int n, Checkpoint *out) {
    CheckpointAverager a;
    checkpoint_averager_init(&a);
    NmtStatus st = NMT_OK;
    for (int k = 0; !st && k < n; k++) st = checkpoint_averager_add(&a, &in[k], paths[k]);
    if (!st) st = checkpoint_averager_finish(&a, out);
    else memset(out, 0, sizeof *out);
    checkpoint_averager_free(&a);
    return st;
}
