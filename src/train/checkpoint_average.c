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

NmtStatus checkpoint_average(const Checkpoint *in, const char *const *paths, int n, Checkpoint *out) {
    memset(out, 0, sizeof *out);
    if (n < 1) return nmt_fail(NMT_ERR_USAGE, "averaging needs at least one checkpoint");
    int newest = 0;
    for (int k = 1; k < n; k++) {
        int tensor;
        const char *what = first_difference(&in[0], &in[k], &tensor);
        if (what && tensor >= 0)
            return nmt_fail(NMT_ERR_FORMAT, "%s: tensor %d (%s) differs from %s's (%s): not the same model",
                            paths[k], tensor, in[k].tensors[tensor].name, paths[0], in[0].tensors[tensor].name);
        if (what)
            return nmt_fail(NMT_ERR_FORMAT, "%s: %s differs from %s's: not the same model", paths[k], what,
                            paths[0]);
        if (in[k].state.step > in[newest].state.step) newest = k;
    }
    const Checkpoint *src = &in[newest];
    size_t nf = src->n_floats;
    double *sum = nmt_calloc(nf ? nf : 1, sizeof *sum);
    out->params = nmt_malloc((nf ? nf : 1) * sizeof(float));
    out->tensors = copy_bytes(src->tensors, (size_t)src->n_tensors * sizeof *src->tensors);
    out->config_json = copy_bytes(src->config_json, strlen(src->config_json) + 1);
    out->src_tok = copy_bytes(src->src_tok, src->src_tok_len);
    out->tgt_tok = copy_bytes(src->tgt_tok, src->tgt_tok_len);
    out->history = copy_bytes(src->history, (size_t)src->n_history * sizeof *src->history);
    if (!sum || !out->params || (src->n_tensors && !out->tensors) || !out->config_json ||
        (src->src_tok_len && !out->src_tok) || (src->tgt_tok_len && !out->tgt_tok) ||
        (src->n_history && !out->history)) {
        nmt_free(sum);
        checkpoint_free(out);
        return nmt_fail_nomem("averaging checkpoints");
    }
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < nf; i++) sum[i] += in[k].params[i];
    for (size_t i = 0; i < nf; i++) out->params[i] = (float)(sum[i] / n);
    nmt_free(sum);
    out->src_tok_len = src->src_tok_len;
    out->tgt_tok_len = src->tgt_tok_len;
    out->n_tensors = src->n_tensors;
    out->n_floats = nf;
    out->optimizer = src->optimizer;
    out->adam_m = out->adam_v = NULL;
    out->state = src->state;
    out->n_history = src->n_history;
    return NMT_OK;
}
