/* cmd_demo_corpus.c: `nmt demo-corpus`: writes the generated demo
 * translation corpus (src/data/demo_corpus.h, docs/demo-corpus.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "common.h"
#include "data/demo_corpus.h"

static void demo_usage(FILE *out) {
    fprintf(out,
            "usage: nmt demo-corpus --out DIR [--seed N] [--train N] [--valid N] [--test N]\n"
            "                       [--min-words N] [--max-words N] [--gzip]\n\n"
            "Writes the generated demo translation task (a toy language with word\n"
            "reordering, see docs/demo-corpus.md) as DIR/train.src train.tgt valid.src\n"
            "valid.tgt test.src test.tgt, one sentence per line. The same options give\n"
            "byte-identical files; the splits share no sentence.\n\n"
            "options:\n"
            "  --out DIR        output folder (created if missing)\n"
            "  --seed N         generator seed (default 1)\n"
            "  --train N        training pairs (default 20000)\n"
            "  --valid N        validation pairs (default 500)\n"
            "  --test N         test pairs (default 500)\n"
            "  --min-words N    shortest sentence, both sides (default 3)\n"
            "  --max-words N    longest sentence, both sides (default 25)\n"
            "  --gzip           write gzip files (NAME.gz)\n"
            "  -h, --help       this help\n");
}

/* Parses a non-negative integer option value into *out (max `max`). */
static NmtStatus parse_count(const char *opt, const char *v, unsigned long long max,
                             unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *v == '-' || *v == '+' || *end || errno == ERANGE || x > max)
        return nmt_fail(NMT_ERR_USAGE, "%s: expected an integer in 0..%llu, got '%s'", opt, max, v);
    *out = x;
    return NMT_OK;
}

int cmd_demo_corpus(int argc, char **argv) {
    DemoCorpusSpec spec;
    demo_corpus_spec_default(&spec);
    const char *out_dir = NULL;
    int gzip = 0;
    static const struct { const char *name; int split; } counts[] = {
        {"--train", DEMO_TRAIN}, {"--valid", DEMO_VALID}, {"--test", DEMO_TEST}};

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            demo_usage(stdout);
            return NMT_EXIT_OK;
        }
        if (!strcmp(arg, "--gzip")) {
            gzip = 1;
            continue;
        }
        int missing = 0, taken = 0;
        const char *v;
        unsigned long long x = 0;
        NmtStatus st = NMT_OK;
        if ((v = cli_option_value(argc, argv, &i, "--out", &missing))) {
            if (!*v) return cli_report("demo-corpus", nmt_fail(NMT_ERR_USAGE, "--out: empty folder name"));
            out_dir = v;
            taken = 1;
        } else if (!missing && (v = cli_option_value(argc, argv, &i, "--seed", &missing))) {
            st = parse_count("--seed", v, UINT64_MAX, &x);
            spec.seed = (uint64_t)x;
            taken = 1;
        } else if (!missing && (v = cli_option_value(argc, argv, &i, "--min-words", &missing))) {
            st = parse_count("--min-words", v, 200, &x);
            spec.min_words = (int)x;
            taken = 1;
        } else if (!missing && (v = cli_option_value(argc, argv, &i, "--max-words", &missing))) {
            st = parse_count("--max-words", v, 200, &x);
            spec.max_words = (int)x;
            taken = 1;
        }
        for (size_t k = 0; !taken && !missing && k < NMT_ARRAY_LEN(counts); k++)
            if ((v = cli_option_value(argc, argv, &i, counts[k].name, &missing))) {
                st = parse_count(counts[k].name, v, 100000000ULL, &x);
                spec.n_pairs[counts[k].split] = (int64_t)x;
                taken = 1;
            }
        if (missing)
            return cli_report("demo-corpus", nmt_fail(NMT_ERR_USAGE, "%s needs a value", arg));
        if (st) return cli_report("demo-corpus", st);
        if (!taken)
            return cli_report("demo-corpus",
                              nmt_fail(NMT_ERR_USAGE, "unknown option '%s' (try 'nmt demo-corpus --help')", arg));
    }
    if (!out_dir)
        return cli_report("demo-corpus", nmt_fail(NMT_ERR_USAGE, "no output folder given (use --out DIR)"));

    DemoCorpus *c = NULL;
    NmtStatus st = demo_corpus_generate(&spec, &c);
    if (st == NMT_ERR_CONFIG) st = NMT_ERR_USAGE; /* the spec came from the options */
    if (!st) st = demo_corpus_write(c, out_dir, gzip);
    if (!st)
        nmt_log_info("demo-corpus: wrote %lld/%lld/%lld train/valid/test pairs (seed %llu) to %s",
                     (long long)c->split[DEMO_TRAIN].n, (long long)c->split[DEMO_VALID].n,
                     (long long)c->split[DEMO_TEST].n, (unsigned long long)spec.seed, out_dir);
    demo_corpus_free(c);
    return cli_report("demo-corpus", st);
}
