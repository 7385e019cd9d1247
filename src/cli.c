/* cli.c: shared option handling of the subcommands (cli.h). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

const char *cli_option_value(int argc, char **argv, int *i, const char *name, int *missing) {
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return NULL;
    if (arg[n] == '=') return arg + n + 1;
    if (arg[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int cli_take_config_arg(int argc, char **argv, int *i, CliConfigArgs *args) {
    int missing = 0;
    const char *v = cli_option_value(argc, argv, i, "--config", &missing);
    if (v) {
        args->config_path = v;
        return 1;
    }
    if (missing) {
        nmt_fail(NMT_ERR_USAGE, "--config needs a file name");
        return -1;
    }
    v = cli_option_value(argc, argv, i, "--set", &missing);
    if (v) {
        if (args->n_sets >= CLI_MAX_SETS) {
            nmt_fail(NMT_ERR_USAGE, "too many --set options (at most %d)", CLI_MAX_SETS);
            return -1;
        }
        args->sets[args->n_sets++] = v;
        return 1;
    }
    if (missing) {
        nmt_fail(NMT_ERR_USAGE, "--set needs KEY=VALUE, e.g. --set model.hidden=256");
        return -1;
    }
    return 0;
}

NmtStatus cli_load_config(const CliConfigArgs *args, Config *cfg) {
    if (!args->config_path)
        return nmt_fail(NMT_ERR_USAGE, "no config given (use --config FILE)");
    return config_load(args->config_path, args->sets, args->n_sets, cfg);
}

int cli_report(const char *cmd, NmtStatus st) {
    if (st == NMT_OK) return NMT_EXIT_OK;
    fprintf(stderr, "nmt %s: %s\n", cmd, nmt_error_message());
    return nmt_exit_code(st);
}
