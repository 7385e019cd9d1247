/* main.c: the nmt command line: picks the subcommand, prints --help and
 * --version. Only this file exits; subcommands return exit codes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "cpu/cpu_env.h"
#include "version.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Subcommand;

/* The one list of subcommands: dispatch and --help both read it. */
static const Subcommand subcommands[] = {
    {"train", cmd_train, "train a model from a JSON config"},
    {"translate", cmd_translate, "translate stdin to stdout with a trained model"},
    {"score", cmd_score, "score given translations with a trained model (log-probabilities)"},
    {"eval", cmd_eval, "score translations (sacreBLEU-compatible BLEU, chrF, TER)"},
    {"prepare", cmd_prepare, "train tokenizers and encode the corpora into the cache"},
    {"average", cmd_average, "average the weights of several checkpoints of one run"},
    {"info", cmd_info, "describe a checkpoint: model, tokenizers, training state, validations"},
    {"shortlist", cmd_shortlist, "build the output-vocabulary shortlist of a training corpus"},
    {"gradcheck", cmd_gradcheck, "check hand-written gradients against finite differences"},
    {"plot", cmd_plot, "draw the training curves of a run as SVG"},
    {"config", cmd_config, "check a config and print it resolved, or the key reference"},
    {"demo-corpus", cmd_demo_corpus, "write the generated demo corpus"},
};

static void print_help(FILE *out) {
    fprintf(out,
            "usage: nmt COMMAND [options]\n"
            "       nmt --version | --help\n\n"
            "LSTM encoder-decoder neural machine translation with attention.\n\n"
            "commands:\n");
    for (size_t i = 0; i < NMT_ARRAY_LEN(subcommands); i++)
        fprintf(out, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'nmt COMMAND --help' describes a command's options.\n"
                 "exit codes: 0 success, 1 runtime failure, 2 usage or config error, 128 + N stopped by\n"
                 "signal N after saving its work, or before its first step (nmt train: 130 Ctrl-C, 143 SIGTERM;\n"
                 "--resume continues)\n");
}

/* A command that succeeded but whose output did not all reach standard
 * output (a full disk, /dev/full) fails: exit 1 with a message, instead of
 * 0 and a short or empty file. Commands that check their own writes
 * (translate) have failed already, and said so. */
static int finish_stdout(const char *who, int rc) {
    errno = 0;
    int flushed = fflush(stdout) == 0;
    if (rc != NMT_EXIT_OK || (flushed && !ferror(stdout))) return rc;
    fprintf(stderr, "nmt%s%s: standard output: write error%s%s\n", who ? " " : "", who ? who : "",
            !flushed && errno ? ": " : "", !flushed && errno ? strerror(errno) : "");
    return NMT_EXIT_FAILURE;
}

int main(int argc, char **argv) {
    cpu_env_apply(argv);
    if (argc < 2) {
        print_help(stderr);
        return NMT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        print_help(stdout);
        return finish_stdout(NULL, NMT_EXIT_OK);
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        nmt_print_version(stdout);
        return finish_stdout(NULL, NMT_EXIT_OK);
    }
    for (size_t i = 0; i < NMT_ARRAY_LEN(subcommands); i++)
        if (!strcmp(cmd, subcommands[i].name))
            return finish_stdout(subcommands[i].name, subcommands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "nmt: unknown command '%s' (try 'nmt --help')\n", cmd);
    return NMT_EXIT_USAGE;
}
