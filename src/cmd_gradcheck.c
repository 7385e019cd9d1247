/* cmd_gradcheck.c: `nmt gradcheck`: the whole-model gradient check of the
 * test suite, run on a user's config with its dimensions shrunk (same
 * attention style, score, mode, heads, layers up to 2, bidirectionality,
 * input feeding, bridge, tying, dropout and label smoothing). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "model/gradcheck.h"

static const char gradcheck_usage[] =
    "usage: nmt gradcheck --config FILE [--set KEY=VALUE ...] [--samples N] [--seed N]\n\n"
    "Checks the hand-written gradients of the model the config describes, with\n"
    "its sizes shrunk (embedding, hidden and vocabularies of a few units, at\n"
    "most 2 layers, window at most 3) and its weights drawn from [-1, 1]\n"
    "whatever model.init_range says (gradients far from zero), against central\n"
    "differences of the loss on a random padded batch. Prints the worst\n"
    "parameter and exits 1 on a mismatch.\n"
    "--samples: coordinates checked per parameter tensor (default 24).\n"
    "--seed: of the weights, the batch, the coordinates and the dropout masks\n"
    "(default 7; 0 to 18446744073709551615).\n";

/* The config's structure at gradient-check size. */
static void shrink(ModelDims *d) {
    int heads = d->heads;
    int H = 6;
    if ((d->score == ATTN_SCORE_DOT || d->score == ATTN_SCORE_SCALED_DOT) && heads > 1 && H % heads)
        H = 2 * heads;
    int K = d->K == d->H ? H : H - 2; /* keep "key size differs" when it did */
    if (d->bidirectional && K % 2) K++;
    d->H = d->A = H;
    d->K = K;
    d->D_e = d->bidirectional ? K / 2 : K;
    d->E = d->tie_embeddings ? H : 5;
    d->V_s = d->share_embeddings ? 11 : 13;
    d->V_t = 11;
    if (d->L_e > 2) d->L_e = 2;
    if (d->L_d > 2) d->L_d = 2;
    if (d->window > 3) d->window = 3;
    if (d->dh) d->dh = H / heads;
    d->dec_in = d->E + (d->input_feed ? d->H : 0) + (d->style == ATTN_STYLE_BAHDANAU ? d->K : 0);
    d->wc_in = d->style == ATTN_STYLE_BAHDANAU ? d->H + d->K + d->E : d->K + d->H;
}

int cmd_gradcheck(int argc, char **argv) {
    CliConfigArgs args = {0};
    GradcheckSpec spec;
    gradcheck_spec_default(&spec);
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("gradcheck", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(gradcheck_usage, stdout);
            return NMT_EXIT_OK;
        }
        took = cli_take_int(argc, argv, &i, "--samples", 1, INT_MAX, &spec.samples_per_param);
        if (!took) took = cli_take_u64(argc, argv, &i, "--seed", &spec.seed);
        if (took < 0) return cli_report("gradcheck", NMT_ERR_USAGE);
        if (took) continue;
        fprintf(stderr, "nmt gradcheck: unknown option '%s'\n%s", argv[i], gradcheck_usage);
        return NMT_EXIT_USAGE;
    }
    Config cfg;
    NmtStatus st = cli_load_config(&args, &cfg);
    if (st) return cli_report("gradcheck", st);
    ModelDims d;
    const char *cost_name = NULL; /* with the guided alignment loss: its cost */
    st = model_dims_from_config(&cfg, cfg.model.share_embeddings ? 11 : 13, 11, &d);
    if (cfg.data.train_align && cfg.data.train_align[0] && cfg.train.guided_alignment_weight > 0) {
        /* the guided alignment loss too, against the batch's random alignment */
        spec.align_weight = (float)cfg.train.guided_alignment_weight;
        spec.align_cost = model_align_cost_from_config(&cfg);
        cost_name = guided_cost_names[cfg.train.guided_alignment_cost];
    }
    config_free(&cfg);
    if (st) return cli_report("gradcheck", st);
    shrink(&d);
    Batch batch;
    gradcheck_make_batch(3, 5, 4, d.V_s, d.V_t, spec.seed, &batch);
    Backend *be = cpu_backend_create(0);
    if (!be) return cli_report("gradcheck", nmt_fail_nomem("creating the CPU backend"));
    GradcheckResult r;
    st = model_gradcheck(be, &d, &batch, &spec, &r);
    be->destroy(be);
    if (st) return cli_report("gradcheck", st);
    if (d.style == ATTN_STYLE_NONE)
        printf("model: no attention; E=%d H=%d K=%d, layers %d+%d%s%s\n", d.E, d.H, d.K, d.L_e, d.L_d,
               d.bidirectional ? ", bidirectional" : "", d.input_feed ? ", input feeding" : "");
    else
        printf("model: %s attention, score %s, mode %s, heads %d; E=%d H=%d K=%d, layers %d+%d%s%s\n",
               attn_style_names[d.style], attn_score_names[d.score], attn_mode_names[d.mode], d.heads, d.E,
               d.H, d.K, d.L_e, d.L_d, d.bidirectional ? ", bidirectional" : "",
               d.input_feed ? ", input feeding" : "");
    if (spec.align_weight > 0)
        printf("guided alignment: %s, weight %g, against a random alignment\n", cost_name, spec.align_weight);
    printf("loss %.6f; %d coordinates checked, %d skipped (loss not smooth there), %d wrong\n", r.loss,
           r.checked, r.skipped, r.failed);
    printf("worst: %s[%zu] analytic %.8g numeric %.8g (%.2f of the tolerance)\n", r.worst_name,
           r.worst_index, r.worst_analytic, r.worst_numeric, r.worst_excess);
    if (r.failed) {
        fprintf(stderr, "nmt gradcheck: %d gradient coordinates disagree with finite differences\n", r.failed);
        return NMT_EXIT_FAILURE;
    }
    if (r.checked == 0) {
        fprintf(stderr, "nmt gradcheck: no coordinate could be checked\n");
        return NMT_EXIT_FAILURE;
    }
    printf("gradients OK\n");
    return NMT_EXIT_OK;
}
