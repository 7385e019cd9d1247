/* cmd_average.c: `nmt average`: writes the checkpoint whose weights are the
 * mean of several checkpoints of one run (src/train/checkpoint_average.h),
 * typically the last few step-N.nmt files of train.keep_checkpoints. The
 * inputs are read one at a time (weights only), so memory holds the running
 * sum and one checkpoint, whatever their number. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "train/checkpoint_average.h"

static const char average_usage[] =
    "usage: nmt average --out FILE CHECKPOINT...\n\n"
    "Writes FILE, a checkpoint whose weights are the element-wise mean of the\n"
    "given checkpoints of one training run (for example the last few\n"
    "step-N.nmt files that train.keep_checkpoints keeps); translate with it as\n"
    "with any checkpoint. Config, tokenizers and training state come from the\n"
    "newest input (highest step); optimizer moments (and, with train.ema_decay,\n"
    "the training weights: the mean is of the moving averages) are left out,\n"
    "so one CHECKPOINT gives a copy for translating at about a third of its\n"
    "size (a quarter with a moving average).\n"
    "Checkpoints of different runs (a model, data or seed key differs) are\n"
    "refused, and so is FILE when it is one of the CHECKPOINTs, and a\n"
    "checkpoint given twice (the same step and weights: runs/x/*.nmt matches\n"
    "best.nmt and last.nmt besides the step-N.nmt files; runs/x/step-*.nmt\n"
    "does not).\n";

/* Refuses `ck` (read from `path`) when its config differs from the first
 * checkpoint's (`first`, read from first_path) in a key other than the
 * schedule keys (another model, corpus or seed: weights that do not
 * correspond). */
static NmtStatus check_same_run(const Config *first, const char *first_path, const Checkpoint *ck,
                                const char *path) {
    Config other;
    NmtStatus st = config_load_string(ck->config_json, path, "/", NULL, 0, &other);
    if (st) return st;
    const char *key = config_first_fixed_difference(first, &other);
    if (key)
        st = nmt_fail(NMT_ERR_CONFIG, "%s: %s differs from %s's: not a checkpoint of the same run", path, key,
                      first_path);
    config_free(&other);
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
    /* --out must not be one of the inputs (a resumable checkpoint would
     * become a smaller one without the optimizer moments): the same name,
     * or, when --out exists, the same file under another name or link */
    struct stat out_st;
    bool out_exists = stat(out_path, &out_st) == 0;
    for (int k = 0; k < n; k++) {
        struct stat in_st;
        if (strcmp(out_path, paths[k]) == 0 ||
            (out_exists && stat(paths[k], &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
             in_st.st_ino == out_st.st_ino)) {
            fprintf(stderr,
                    "nmt average: --out %s is the same file as the checkpoint %s: it would be overwritten; "
                    "write the average to another file\n",
                    out_path, paths[k]);
            nmt_free(paths);
            return NMT_EXIT_USAGE;
        }
    }
    /* one checkpoint at a time: the running sum and the one being read */
    CheckpointAverager acc;
    checkpoint_averager_init(&acc);
    Config first;
    bool have_first = false;
    NmtStatus st = NMT_OK;
    for (int k = 0; !st && k < n; k++) {
        Checkpoint ck;
        st = checkpoint_load_model(paths[k], &ck);
        if (st) break;
        if (k == 0) {
            st = config_load_string(ck.config_json, paths[0], "/", NULL, 0, &first);
            have_first = st == NMT_OK;
        } else {
            st = check_same_run(&first, paths[0], &ck, paths[k]);
        }
        if (!st) st = checkpoint_averager_add(&acc, &ck, paths[k]);
        checkpoint_free(&ck);
    }
    if (have_first) config_free(&first);
    Checkpoint avg;
    memset(&avg, 0, sizeof avg);
    if (!st) st = checkpoint_averager_finish(&acc, &avg);
    checkpoint_averager_free(&acc);
    if (!st) st = checkpoint_save(&avg, out_path);
    if (!st)
        nmt_log_info(n == 1 ? "average: %d checkpoint (step %lld) copied without its moments into %s"
                            : "average: %d checkpoints (newest at step %lld) averaged into %s",
                     n, (long long)avg.state.step, out_path);
    checkpoint_free(&avg);
    nmt_free(paths);
    return st ? cli_report("average", st) : NMT_EXIT_OK;
}
