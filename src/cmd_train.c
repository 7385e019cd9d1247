/* cmd_train.c: `nmt train`: load and print the resolved config, bring the
 * data cache up to date, then train. The model and trainer land with their
 * own issues; until then this stops after the data step with a message. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "data/prepare.h"

static const char train_usage[] =
    "usage: nmt train --config FILE [--set KEY=VALUE ...] [--resume]\n\n"
    "Trains a model as the config describes (`nmt config --doc` lists the keys).\n"
    "The corpora are tokenized and cached first when the cache is missing or stale.\n";

int cmd_train(int argc, char **argv) {
    CliConfigArgs args = {0};
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("train", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(train_usage, stdout);
            return NMT_EXIT_OK;
        }
        fprintf(stderr, "nmt train: unknown option '%s'\n%s", argv[i], train_usage);
        return NMT_EXIT_USAGE;
    }
    Config cfg;
    NmtStatus st = cli_load_config(&args, &cfg);
    if (st) return cli_report("train", st);
    char *json = config_to_json(&cfg);
    if (json) fprintf(stderr, "resolved config:\n%s\n", json);
    nmt_free(json);
    PreparedData data;
    st = prepare_data(&cfg, 0, &data);
    prepared_data_free(&data);
    config_free(&cfg);
    if (st) return cli_report("train", st);
    return cli_report("train", nmt_fail(NMT_ERR_RUNTIME,
                                        "the data is ready, but the model is not built yet "
                                        "(the model and trainer issues add it)"));
}
