/* cmd_train.c: `nmt train`: load the config, print it resolved, train
 * (src/train/trainer.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "train/trainer.h"

static const char train_usage[] =
    "usage: nmt train --config FILE [--set KEY=VALUE ...] [--resume | --overwrite] [--quiet]\n\n"
    "Trains a model as the config describes (`nmt config --doc` lists the keys).\n"
    "The corpora are tokenized and cached first when the cache is missing or stale.\n"
    "train.save_dir receives last.nmt, best.nmt, train.csv, config.json and, with\n"
    "train.keep_checkpoints, step-N.nmt; while the run trains it holds the folder's\n"
    "lock, and a second nmt train into it is refused (exit 2).\n"
    "--resume continues exactly where save_dir/last.nmt stopped; schedule keys\n"
    "(epochs, max_steps, valid_every, patience, log_every, ...) may change, model,\n"
    "data and tokenizer keys may not. SIGINT or SIGTERM saves last.nmt and stops.\n"
    "Without --resume, a save_dir that already holds a run (last.nmt, best.nmt,\n"
    "step-N.nmt or train.csv) is refused (exit 2) and left as it is.\n"
    "--overwrite starts afresh there instead: it first removes the earlier run's\n"
    "step-N.nmt, last.nmt, best.nmt, train.csv, config.json and curves.svg (no\n"
    "other file).\n"
    "--quiet prints only warnings and errors on stderr: not the resolved config,\n"
    "the data preparation and setup lines, the progress line, the attention\n"
    "statistics, the validation results nor the closing 'done' line. train.csv\n"
    "and the checkpoints are written as without it.\n";

int cmd_train(int argc, char **argv) {
    CliConfigArgs args = {0};
    TrainOptions opt = {0, 0, 0};
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("train", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(train_usage, stdout);
            return NMT_EXIT_OK;
        }
        if (!strcmp(argv[i], "--resume")) {
            opt.resume = 1;
            continue;
        }
        if (!strcmp(argv[i], "--overwrite")) {
            opt.overwrite = 1;
            continue;
        }
        if (!strcmp(argv[i], "--quiet")) {
            opt.quiet = 1;
            continue;
        }
        fprintf(stderr, "nmt train: unknown option '%s'\n%s", argv[i], train_usage);
        return NMT_EXIT_USAGE;
    }
    if (opt.resume && opt.overwrite) {
        fprintf(stderr, "nmt train: --resume and --overwrite exclude each other (continue the run in "
                        "train.save_dir, or start afresh there)\n");
        return NMT_EXIT_USAGE;
    }
    Config cfg;
    NmtStatus st = cli_load_training_config(&args, &cfg); /* train.init_from's model and tokenizer keys */
    if (st) return cli_report("train", st);
    if (!opt.quiet) {
        char *json = config_to_json(&cfg);
        if (json) fprintf(stderr, "resolved config:\n%s\n", json);
        nmt_free(json);
    }
    if (opt.quiet) nmt_log_quiet(1);
    st = train_run(&cfg, &opt);
    config_free(&cfg);
    return cli_report("train", st);
}
