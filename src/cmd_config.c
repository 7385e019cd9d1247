/* cmd_config.c: `nmt config`: print the fully resolved config of a file
 * (defaults filled in, paths resolved, --set applied) or the reference of
 * every key (--doc, the source of docs/config.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const char config_usage[] =
    "usage: nmt config --config FILE [--set KEY=VALUE ...]\n"
    "       nmt config --doc\n\n"
    "Prints the fully resolved config (every key, defaults filled in, relative\n"
    "paths resolved against the config file's folder) as JSON, after checking it.\n"
    "--doc prints the reference of every key as a markdown table.\n";

int cmd_config(int argc, char **argv) {
    CliConfigArgs args = {0};
    int doc = 0;
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("config", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(config_usage, stdout);
            return NMT_EXIT_OK;
        }
        if (!strcmp(argv[i], "--doc")) {
            doc = 1;
            continue;
        }
        fprintf(stderr, "nmt config: unknown option '%s'\n%s", argv[i], config_usage);
        return NMT_EXIT_USAGE;
    }
    if (doc && (args.config_path || args.n_sets)) {
        fprintf(stderr, "nmt config: --doc prints the reference of every key and takes no %s\n%s",
                args.config_path ? "--config" : "--set", config_usage);
        return NMT_EXIT_USAGE;
    }
    if (doc) {
        config_write_reference(stdout);
        return NMT_EXIT_OK;
    }
    Config cfg;
    NmtStatus st = cli_load_training_config(&args, &cfg); /* as training will use it */
    if (st) return cli_report("config", st);
    char *json = config_to_json(&cfg);
    config_free(&cfg);
    if (!json) return cli_report("config", nmt_fail_nomem("printing the config"));
    printf("%s\n", json);
    nmt_free(json);
    return NMT_EXIT_OK;
}
