/* cli.h: command-line helpers shared by the subcommands: the common
 * --config/--set options, loading the config they name, options with a
 * bounded integer or number (or one of a list of words) as value, and
 * reporting errors as "nmt CMD: message" with the right exit code. */
#ifndef NMT_CLI_H
#define NMT_CLI_H

#include <stdint.h>

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
/* The same for the commands that train or prepare data (train, prepare,
 * shortlist, config): with train.init_from, the checkpoint's model and
 * tokenizer keys are taken in (init_from_apply_config), so that they all
 * see the config that training uses. */
NmtStatus cli_load_training_config(const CliConfigArgs *args, Config *cfg);
/* Prints "nmt CMD: <message>" on stderr and returns the exit code of `st`. */
int cli_report(const char *cmd, NmtStatus st);
/* Value of option argv[*i] ("--name VALUE" or "--name=VALUE"), or NULL when
 * argv[*i] is not that option. A missing value sets *missing. */
const char *cli_option_value(int argc, char **argv, int *i, const char *name, int *missing);

/* Options with a value, for the option loops of the subcommands. Each returns
 * 1 when argv[*i] is option `name` ("--name VALUE" or "--name=VALUE") and its
 * value was taken into *out (advancing *i past it); 0 when argv[*i] is
 * something else (*out untouched); -1 when it is `name` but the value is
 * missing or bad: NMT_ERR_USAGE with a message naming the option, the value
 * and what was expected, e.g. "--beam must be an integer in [1, 1000], got
 * 'x'". */
int cli_take_string(int argc, char **argv, int *i, const char *name, const char **out);
/* A decimal integer in [lo, hi] (hi = INT_MAX: "an integer >= lo"). */
int cli_take_int(int argc, char **argv, int *i, const char *name, int lo, int hi, int *out);
/* A decimal integer in [0, 2^64 - 1] (a seed), as nmt_parse_u64 reads it. */
int cli_take_u64(int argc, char **argv, int *i, const char *name, uint64_t *out);
/* A finite number in [lo, hi] (hi = INFINITY: "a number >= lo"). */
int cli_take_double(int argc, char **argv, int *i, const char *name, double lo, double hi, double *out);
/* One of the words of the NULL-terminated list `choices`; *out is its index. */
int cli_take_choice(int argc, char **argv, int *i, const char *name, const char *const *choices, int *out);

#endif
