/* init_from.c: fine-tuning from a trained model (init_from.h). Each step
 * loads the checkpoint on its own (weights-only load: no Adam moments):
 * they run in different commands and modules (the config in cmd_train and
 * cmd_prepare, the tokenizers in prepare, the weights in the trainer), and
 * a load is a fraction of a second beside a training run. */
#include "train/init_from.h"

#include <string.h>
#include <sys/stat.h>

#include "train/checkpoint.h"

/* Loads the checkpoint as a model (no moments, numbers checked). */
static NmtStatus load_checked(const char *path, Checkpoint *ck) {
    NmtStatus st = checkpoint_load_model(path, ck);
    if (st) nmt_error_prefix("train.init_from");
    return st;
}

NmtStatus init_from_apply_config(Config *cfg) {
    const char *path = cfg->train.init_from;
    if (!path || !path[0]) return NMT_OK;
    struct stat info;
    if (stat(path, &info) == 0 && !S_ISREG(info.st_mode)) /* it is read three times (above) */
        return nmt_fail(NMT_ERR_CONFIG, "train.init_from: %s: not a regular file (a checkpoint file is needed: "
                        "it is read more than once)", path);
    Checkpoint ck;
    NmtStatus st = load_checked(path, &ck);
    if (st) return st;
    Config model;
    st = config_load_string(ck.config_json, path, "/", NULL, 0, &model);
    if (!st) {
        const char *key = config_take_model_keys(cfg, &model);
        if (key)
            st = nmt_fail(NMT_ERR_CONFIG,
                          "%s: differs from the model of train.init_from (%s); fine-tuning keeps the "
                          "model as it is: give its value, or leave the key out of the config (then it "
                          "is the checkpoint's)",
                          key, path);
        const char *changed = st ? NULL : config_take_tokenizer_keys(cfg, &model);
        if (changed)
            nmt_log_info("train.init_from: the tokenizers are %s's, so are data.tokenizer and its "
                         "settings (the config's %s differed)", path, changed);
        config_free(&model);
    }
    checkpoint_free(&ck);
    return st;
}

NmtStatus init_from_tokenizers(const char *path, Tokenizer **src_tok, Tokenizer **tgt_tok) {
    *src_tok = *tgt_tok = NULL;
    Checkpoint ck;
    NmtStatus st = load_checked(path, &ck);
    if (st) return st;
    st = tokenizer_deserialize(ck.src_tok, ck.src_tok_len, src_tok);
    if (!st) st = tokenizer_deserialize(ck.tgt_tok, ck.tgt_tok_len, tgt_tok);
    if (st) {
        nmt_error_prefix("train.init_from: %s", path);
        tokenizer_free(*src_tok);
        tokenizer_free(*tgt_tok);
        *src_tok = *tgt_tok = NULL;
    }
    checkpoint_free(&ck);
    return st;
}

NmtStatus init_from_weights(const char *path, Backend *be, const ParamLayout *layout, float *params,
                            int64_t *step) {
    Checkpoint ck;
    NmtStatus st = load_checked(path, &ck);
    if (st) return st;
    if (ck.n_floats != layout->total || ck.n_tensors != layout->n)
        st = nmt_fail(NMT_ERR_CONFIG, "train.init_from: %s: %d tensors of %zu weights, the model has %d of %zu",
                      path, ck.n_tensors, ck.n_floats, layout->n, layout->total);
    for (int i = 0; !st && i < layout->n; i++) {
        const CheckpointTensor *t = &ck.tensors[i];
        const ParamInfo *p = &layout->info[i];
        if (strcmp(t->name, p->name) || t->count != p->count || t->rows != p->rows || t->cols != p->cols)
            st = nmt_fail(NMT_ERR_CONFIG,
                          "train.init_from: %s: tensor %d is %s (%d, %d, %d), the model's is %s (%d, %d, %d)",
                          path, i, t->name, t->count, t->rows, t->cols, p->name, p->count, p->rows, p->cols);
    }
    if (!st) {
        be->upload(be, params, ck.params, layout->total * sizeof(float));
        *step = ck.state.step;
    }
    checkpoint_free(&ck);
    return st;
}
