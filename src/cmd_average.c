/* cmd_average.c: `nmt average`: writes the checkpoint whose weights are the
 * mean of several checkpoints of one run (src/train/checkpoint_average.h),
 * typically the last few step-N.nmt files of train.keep_checkpoints. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "train/checkpoint_average.h"

static const char average_usage[] =
    "usage: nmt average --out FILE CHECKPOINT CHECKPOINT...\n\n"
    "Writes FILE, a checkpoint whose weights are the element-wise mean of the\n"
    "given checkpoints of one training run (for example the last few\n"
    "step-N.nmt files that train.keep_checkpoints keeps); translate with it as\n"
    "with any checkpoint. Config, tokenizers and training state come from the\n"
    "newest input (highest step); optimizer moments are left out. Checkpoints\n"
    "of different runs (a model, data or seed key differs) are refused.\n";

/* Refuses checkpoints whose configs differ in a key other than the schedule
 * keys (another model, corpus or seed: weights that do not correspond). */
static NmtStatus check_same_run(const Checkpoint *cks, char **paths, int n) {
    Config first;
    NmtStatus st = config_load_string(cks[0].config_json, paths[0], "/", NULL, 0, &first);
    if (st) return st;
    for (int k = 1; !st && k < n; k++) {
        Config other;
        st = config_load_string(cks[k].config_json, paths[k], "/", NULL, 0, &other);
        if (st) break;
        const char *key = config_first_fixed_difference(&first, &other);
        if (key)
            st = nmt_fail(NMT_ERR_CONFIG, "%s: %s differs from %s's: not a checkpoint of the same run", paths[k],
                          key, paths[0]);
        config_free(&other);
    }
    config_free(&first);
    return st;
}

int cmd_average(int argc, char **argv) {
    const char *out_path = NULL;
    char **paths = nmt_calloc((size_t)argc, sizeof *paths);
    if (!paths) return cli_report("average", nmt_fail_nomem("reading the arguments"));
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(average_usage, stdout);
            nmt_free(paths);
            return NMT_EXIT_OK;
        }
        int took = cli_take_string(argc, argv, &i, "--out", &out_path);
        if (took < 0) {
            nmt_free(paths);
            return cli_report("average", NMT_ERR_USAGE);
        }
        if (took) continue;
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "nmt average: unknown option '%s'\n%s", argv[i], average_usage);
            nmt_free(paths);
            return NMT_EXIT_USAGE;
        }
        paths[n++] = argv[i];
    }
    if (!out_path || n < 1) {
        fprintf(stderr, "nmt average: %s\n%s", !out_path ? "--out FILE is required" : "no checkpoint given",
                average_usage);
        nmt_free(paths);
        return NMT_EXIT_USAGE;
    }
    Checkpoint *cks = nmt_calloc((size_t)n, sizeof *cks);
    NmtStatus st = cks ? NMT_OK : nmt_fail_nomem("reading the checkpoints");
    for (int k = 0; !st && k < n; k++) st = checkpoint_load_weights(paths[k], &cks[k]);
    if (!st) st = check_same_run(cks, paths, n);
    Checkpoint avg;
    memset(&avg, 0, sizeof avg);
    if (!st) st = checkpoint_average(cks, (const char *const *)paths, n, &avg);
    if (!st) st = checkpoint_save(&avg, out_path);
    if (!st)
        nmt_log_info("average: %d checkpoints (newest at step %lld) averaged into %s", n,
                     (long long)avg.state.step, out_path);
    checkpoint_free(&avg);
    for (int k = 0; cks && k < n; k++) checkpoint_free(&cks[k]);
    nmt_free(cks);
    nmt_free(paths);
    return st ? cli_report("average", st) : NMT_EXIT_OK;
}
