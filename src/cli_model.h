/* cli_model.h: which checkpoint a decoding command (`nmt translate`,
 * `nmt score`) reads when its --model options name none: best.nmt in
 * train.save_dir of its --config (with --set), else the file $NMT_MODEL
 * names. --model wins over --config, and --config over $NMT_MODEL (which
 * is read only when neither is given). The one place these rules and
 * their messages live.
 *
 *   CliModel pick = {0};
 *   st = cli_model_pick(have_config ? &cfg : NULL, o.models, &o.n_models, &pick);
 *   ... open o.models ...; on failure: cli_model_explain(&pick, "translate");
 *   cli_model_free(&pick);   // after the last use of o.models */
#ifndef NMT_CLI_MODEL_H
#define NMT_CLI_MODEL_H

#include "common.h"
#include "config.h"

typedef struct {
    char *best, *last; /* --config's train.save_dir/best.nmt and last.nmt when
                          --config named the model; NULL otherwise */
} CliModel;

/* When *n_models is 0 (no --model), appends the model to models: best.nmt
 * in cfg->train.save_dir when cfg (the loaded --config) is not NULL, else
 * $NMT_MODEL when it is set and not empty (the string stays $NMT_MODEL's).
 * With --model files it does nothing. Errors: NMT_ERR_USAGE "no model: give
 * --model FILE, or --config FILE (uses its train.save_dir/best.nmt), or set
 * NMT_MODEL" when none names one; NMT_ERR_NOMEM. */
NmtStatus cli_model_pick(const Config *cfg, const char **models, int *n_models, CliModel *m);
/* After the models failed to open: when the model was --config's best.nmt,
 * which does not exist while last.nmt does (a run stopped before its first
 * validation), appends to the error message " (no validation has saved
 * best.nmt yet; VERB with the latest checkpoint: --model SAVE_DIR/last.nmt)". */
void cli_model_explain(const CliModel *m, const char *verb);
void cli_model_free(CliModel *m);

#endif
