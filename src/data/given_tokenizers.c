/* given_tokenizers.c: SentencePiece models given as files instead of
 * trained (given_tokenizers.h). */
#include "data/given_tokenizers.h"

#include <string.h>

bool given_tokenizers(const Config *cfg) {
    return cfg->data.spm_src_model && cfg->data.spm_src_model[0];
}

/* Loads one side's model, the error prefixed with `key`. */
static NmtStatus load_side(const char *key, const char *path, Tokenizer **out) {
    NmtStatus st = tokenizer_load(path, out);
    if (!st && tokenizer_kind(*out) != TOKENIZER_SPM)
        st = nmt_fail(NMT_ERR_FORMAT, "%s: a word vocabulary (nmt's word tokenizer), not a SentencePiece model", path);
    const char *type = st ? NULL : tokenizer_spm_type(*out);
    if (!st && strcmp(type, "unigram") && strcmp(type, "bpe"))
        st = nmt_fail(NMT_ERR_FORMAT, "%s: a SentencePiece %s model; nmt takes unigram and bpe models", path, type);
    if (st) {
        nmt_error_prefix("%s", key);
        tokenizer_free(*out);
        *out = NULL;
    }
    return st;
}

NmtStatus given_tokenizers_load(const Config *cfg, Tokenizer **src, Tokenizer **tgt) {
    *src = *tgt = NULL;
    NmtStatus st = load_side("data.spm_src_model", cfg->data.spm_src_model, src);
    if (!st) st = load_side("data.spm_tgt_model", cfg->data.spm_tgt_model, tgt);
    if (st) {
        tokenizer_free(*src);
        *src = NULL;
    }
    return st;
}

NmtStatus given_tokenizers_apply_config(Config *cfg) {
    if (!given_tokenizers(cfg)) return NMT_OK;
    Tokenizer *src, *tgt;
    NmtStatus st = given_tokenizers_load(cfg, &src, &tgt);
    if (st) return st;
    DataConfig *d = &cfg->data;
    const char *src_type = tokenizer_spm_type(src), *tgt_type = tokenizer_spm_type(tgt);
    int n_src = tokenizer_vocab_size(src), n_tgt = tokenizer_vocab_size(tgt);
    int type = !strcmp(src_type, "bpe") || !strcmp(tgt_type, "bpe") ? CFG_SPM_BPE : CFG_SPM_UNIGRAM;
    bool joint = !strcmp(d->spm_src_model, d->spm_tgt_model);
    int same_size = n_src == n_tgt;
    char changed[128] = "";
    if (type != d->spm_model_type) strcat(changed, ", data.spm_model_type");
    if (joint != d->spm_joint) strcat(changed, ", data.spm_joint");
    if (same_size && n_src != d->spm_vocab_size) strcat(changed, ", data.spm_vocab_size");
    if (changed[0])
        nmt_log_info("data.spm_src_model: the given SentencePiece models (%s: %d pieces, %s; %s: %d pieces, %s) "
                     "set %s", d->spm_src_model, n_src, src_type, d->spm_tgt_model, n_tgt, tgt_type, changed + 2);
    d->spm_model_type = type;
    d->spm_joint = joint;
    if (same_size) d->spm_vocab_size = n_src;
    tokenizer_free(src);
    tokenizer_free(tgt);
    return NMT_OK;
}
