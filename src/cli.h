/* cli.h: command-line helpers shared by the subcommands: the common
 * --config/--set options, loading the config they name and reporting
 * errors as "nmt CMD: message" with the right exit code. */
#ifndef NMT_CLI_H
#define NMT_CLI_H

#include "common.h"
#include "config.h"

enum { CLI_MAX_SETS = 256 };

typedef struct {
    const char *config_path;
    const char *sets[CLI_MAX_SETS];
    int n_sets;
} CliConfigArgs;

/* If argv[*i] is --config PATH, --config=PATH, --set K=V or --set=K=V, takes
 * it (advancing *i past its value) and returns 1; returns 0 when argv[*i] is
 * something else; returns -1 (message set, NMT_ERR_USAGE) on a missing value. */
int cli_take_config_arg(int argc, char **argv, int *i, CliConfigArgs *args);
/* Loads args->config_path with its overrides (an error when none was given). */
NmtStatus cli_load_config(const CliConfigArgs *args, Config *cfg);
/* Prints "nmt CMD: <message>" on stderr and returns the exit code of `st`. */
int cli_report(const char *cmd, NmtStatus st);
/* Value of option argv[*i] ("--name VALUE" or "--name=VALUE"), or NULL when
 * argv[*i] is not that option. A missing value sets *missing. */
const char *cli_option_value(int argc, char **argv, int *i, const char *name, int *missing);

#endif
