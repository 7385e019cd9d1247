/* cli_model.c: the model a decoding command reads when no --model names
 * one: --config's best.nmt, else $NMT_MODEL (cli_model.h). */
#include "cli_model.h"

#include <stdlib.h>
#include <unistd.h>

NmtStatus cli_model_pick(const Config *cfg, const char **models, int *n_models, CliModel *m) {
    if (*n_models > 0) return NMT_OK;
    if (cfg) {
        m->best = nmt_asprintf("%s/best.nmt", cfg->train.save_dir);
        m->last = nmt_asprintf("%s/last.nmt", cfg->train.save_dir);
        if (!m->best || !m->last) {
            cli_model_free(m);
            return nmt_fail_nomem("model path");
        }
        models[(*n_models)++] = m->best;
        return NMT_OK;
    }
    const char *env = getenv("NMT_MODEL");
    if (env && env[0]) {
        models[(*n_models)++] = env;
        return NMT_OK;
    }
    return nmt_fail(NMT_ERR_USAGE, "no model: give --model FILE, or --config FILE (uses its "
                    "train.save_dir/best.nmt), or set NMT_MODEL");
}

void cli_model_explain(const CliModel *m, const char *verb) {
    /* a run stopped before its first validation has last.nmt but no best.nmt */
    if (m->best && access(m->best, F_OK) != 0 && access(m->last, F_OK) == 0)
        nmt_error_suffix(" (no validation has saved best.nmt yet; %s with the latest checkpoint: --model %s)", verb,
                         m->last);
}

void cli_model_free(CliModel *m) {
    nmt_free(m->best);
    nmt_free(m->last);
    m->best = m->last = NULL;
}
