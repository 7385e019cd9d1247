/* cmd_prepare.c: `nmt prepare`: train the tokenizers and encode the corpora
 * of a config into its cache folder (src/data/prepare.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "data/prepare.h"

static const char prepare_usage[] =
    "usage: nmt prepare --config FILE [--set KEY=VALUE ...] [--force]\n\n"
    "Trains the SentencePiece models (or builds the word vocabularies) on the\n"
    "training corpora (data.train_src, and data.extra_src's when given) and encodes\n"
    "them and the validation corpus into data.cache_dir. Nothing is redone when\n"
    "the cache is up to date (same corpus files, sizes and times, same tokenizer\n"
    "settings); --force rebuilds.\n"
    "`nmt train` runs this step itself when needed.\n";

int cmd_prepare(int argc, char **argv) {
    CliConfigArgs args = {0};
    int force = 0;
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("prepare", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(prepare_usage, stdout);
            return NMT_EXIT_OK;
        }
        if (!strcmp(argv[i], "--force")) {
            force = 1;
            continue;
        }
        fprintf(stderr, "nmt prepare: unknown option '%s'\n%s", argv[i], prepare_usage);
        return NMT_EXIT_USAGE;
    }
    Config cfg;
    NmtStatus st = cli_load_training_config(&args, &cfg); /* train.init_from's tokenizer keys */
    if (st) return cli_report("prepare", st);
    PreparedData data;
    st = prepare_data(&cfg, force, &data);
    prepared_data_free(&data);
    config_free(&cfg);
    return cli_report("prepare", st);
}
