/* cli.c: shared option handling of the subcommands (cli.h). */
#include "cli.h"

#include "data/given_tokenizers.h"
#include "train/init_from.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

int cli_take_string(int argc, char **argv, int *i, const char *name, const char **out) {
    int missing = 0;
    const char *v = cli_option_value(argc, argv, i, name, &missing);
    if (missing) {
        nmt_fail(NMT_ERR_USAGE, "%s needs a value", name);
        return -1;
    }
    if (!v) return 0;
    *out = v;
    return 1;
}

int cli_take_int(int argc, char **argv, int *i, const char *name, int lo, int hi, int *out) {
    const char *v;
    int took = cli_take_string(argc, argv, i, name, &v);
    if (took <= 0) return took;
    if (!nmt_parse_int(v, lo, hi, out)) {
        if (hi == INT_MAX) nmt_fail(NMT_ERR_USAGE, "%s must be an integer >= %d, got '%s'", name, lo, v);
        else nmt_fail(NMT_ERR_USAGE, "%s must be an integer in [%d, %d], got '%s'", name, lo, hi, v);
        return -1;
    }
    return 1;
}

int cli_take_u64(int argc, char **argv, int *i, const char *name, uint64_t *out) {
    const char *v;
    int took = cli_take_string(argc, argv, i, name, &v);
    if (took <= 0) return took;
    if (!nmt_parse_u64(v, UINT64_MAX, out)) {
        nmt_fail(NMT_ERR_USAGE, "%s must be an integer in [0, 18446744073709551615], got '%s'", name, v);
        return -1;
    }
    return 1;
}

int cli_take_double(int argc, char **argv, int *i, const char *name, double lo, double hi, double *out) {
    const char *v;
    int took = cli_take_string(argc, argv, i, name, &v);
    if (took <= 0) return took;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x) || x < lo || x > hi) {
        if (isinf(hi)) nmt_fail(NMT_ERR_USAGE, "%s must be a number >= %g, got '%s'", name, lo, v);
        else nmt_fail(NMT_ERR_USAGE, "%s must be a number in [%g, %g], got '%s'", name, lo, hi, v);
        return -1;
    }
    *out = x;
    return 1;
}

int cli_take_choice(int argc, char **argv, int *i, const char *name, const char *const *choices, int *out) {
    const char *v;
    int took = cli_take_string(argc, argv, i, name, &v);
    if (took <= 0) return took;
    for (int k = 0; choices[k]; k++)
        if (!strcmp(choices[k], v)) {
            *out = k;
            return 1;
        }
    char list[256] = "";
    for (int k = 0; choices[k]; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? (choices[k + 1] ? ", " : " or ") : "",
                 choices[k]);
    nmt_fail(NMT_ERR_USAGE, "%s must be %s, got '%s'", name, list, v);
    return -1;
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

NmtStatus cli_load_training_config(const CliConfigArgs *args, Config *cfg) {
    NmtStatus st = cli_load_config(args, cfg);
    if (st) return st;
    st = init_from_apply_config(cfg);
    if (!st) st = given_tokenizers_apply_config(cfg);
    /* subword sampling's contradictions with the tokenizer keys, which
     * train.init_from or the given models may have set: said before
     * anything is encoded */
    if (!st) st = config_check_subword_sampling(cfg);
    if (st) config_free(cfg);
    return st;
}

int cli_report(const char *cmd, NmtStatus st) {
    if (st == NMT_OK) return NMT_EXIT_OK;
    fprintf(stderr, "nmt %s: %s\n", cmd, nmt_error_message());
    return nmt_exit_code(st);
}
