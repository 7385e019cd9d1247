/* given_tokenizers.c: SentencePiece models given as files instead of
 * trained (given_tokenizers.h). */
#include "data/given_tokenizers.h"

#include <limits.h>
#include <stdio.h>
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

/* Both models (given_tokenizers_load without its log lines). */
static NmtStatus load_models(const Config *cfg, Tokenizer **src, Tokenizer **tgt) {
    *src = *tgt = NULL;
    NmtStatus st = load_side("data.spm_src_model", cfg->data.spm_src_model, src);
    if (!st) st = load_side("data.spm_tgt_model", cfg->data.spm_tgt_model, tgt);
    if (st) {
        tokenizer_free(*src);
        *src = NULL;
    }
    return st;
}

/* The log line of a model whose special pieces nmt moved to ids 0..3
 * (spm_load_proto): the ids it had, what was added, and how the other
 * pieces' ids changed. `cache_file` is its name in the cache. */
static void log_moved_specials(const char *key, const char *path, const Tokenizer *t, const char *cache_file) {
    int given[NMT_N_SPECIAL];
    if (!tokenizer_spm_moved_specials(t, given)) return;
    static const char *const names[NMT_N_SPECIAL] = {"pad", "unk", "bos", "eos"};
    char had[128] = "", added[64] = "";
    int present = 0;
    for (int k = 0; k < NMT_N_SPECIAL; k++) {
        char one[32];
        if (given[k] >= 0) snprintf(one, sizeof one, "%s%s %d", k ? ", " : "", names[k], given[k]);
        else snprintf(one, sizeof one, "%s%s none", k ? ", " : "", names[k]);
        strcat(had, one);
        if (given[k] < 0) {
            snprintf(one, sizeof one, "%s%s", added[0] ? ", " : "", tokenizer_piece(t, k));
            strcat(added, one);
        } else {
            present++;
        }
    }
    /* piece x of the given model (not a special) is now x + 4 - (the
     * given specials below x): say so when that is the same for all */
    int given_n = tokenizer_vocab_size(t) - (NMT_N_SPECIAL - present), lo = INT_MAX, hi = INT_MIN;
    for (int x = 0; x < given_n; x++) {
        int below = 0, special = 0;
        for (int k = 0; k < NMT_N_SPECIAL; k++) {
            below += given[k] >= 0 && given[k] < x;
            special |= given[k] == x;
        }
        if (special) continue;
        lo = NMT_N_SPECIAL - below < lo ? NMT_N_SPECIAL - below : lo;
        hi = NMT_N_SPECIAL - below > hi ? NMT_N_SPECIAL - below : hi;
    }
    char shift[96];
    if (lo == hi && lo == 0)
        snprintf(shift, sizeof shift, "the other pieces keep their ids");
    else if (lo == hi)
        snprintf(shift, sizeof shift, "every other piece's id is %d higher", lo);
    else
        snprintf(shift, sizeof shift, "the other pieces follow in their order");
    nmt_log_info("%s: %s has SentencePiece's special ids %s; nmt moves them to pad 0, unk 1, bos 2, eos 3%s%s%s, "
                 "and %s, in nmt and in the cache's %s; the pieces and the segmentation are the model's own",
                 key, path, had, added[0] ? " (adding " : "", added, added[0] ? ")" : "", shift, cache_file);
}

NmtStatus given_tokenizers_load(const Config *cfg, Tokenizer **src, Tokenizer **tgt) {
    NmtStatus st = load_models(cfg, src, tgt);
    if (st) return st;
    bool joint = !strcmp(cfg->data.spm_src_model, cfg->data.spm_tgt_model);
    log_moved_specials("data.spm_src_model", cfg->data.spm_src_model, *src, joint ? "src.tok and tgt.tok" : "src.tok");
    if (!joint)
        log_moved_specials("data.spm_tgt_model", cfg->data.spm_tgt_model, *tgt, "tgt.tok");
    return NMT_OK;
}

NmtStatus given_tokenizers_apply_config(Config *cfg) {
    if (!given_tokenizers(cfg)) return NMT_OK;
    Tokenizer *src, *tgt;
    NmtStatus st = load_models(cfg, &src, &tgt);
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
