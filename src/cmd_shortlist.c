/* cmd_shortlist.c: `nmt shortlist`: builds the output-vocabulary shortlist
 * file of a config's training corpus (src/data/shortlist.h), for
 * `nmt translate --shortlist FILE`. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "data/prepare.h"
#include "data/shortlist.h"
#include "data/train_mix.h"
#include "fileio.h"

static const char shortlist_usage[] =
    "usage: nmt shortlist --config FILE [--set KEY=VALUE ...] [--out FILE] [--per-source K]\n\n"
    "Counts, over the training pairs of the config as an epoch holds them (its\n"
    "prepared cache, built when missing: data.train_src's, data.train_upsample\n"
    "times, and those of data.extra_src's corpora, data.extra_weight times rounded\n"
    "up, so that every pair some epoch holds counts), how often each target token\n"
    "occurs and which target tokens co-occur with each source token (Dice\n"
    "coefficient over sentence pairs), and writes the shortlist file that `nmt translate\n"
    "--shortlist FILE` uses to score only the likely output tokens of each\n"
    "batch (docs/decoding.md).\n"
    "--out FILE: where to write it (default: shortlist.tsv in train.save_dir).\n"
    "--per-source K: partners kept per source token (default 50).\n";

int cmd_shortlist(int argc, char **argv) {
    CliConfigArgs args = {0};
    const char *out_path = NULL;
    int per_source = 50;
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("shortlist", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(shortlist_usage, stdout);
            return NMT_EXIT_OK;
        }
        took = cli_take_string(argc, argv, &i, "--out", &out_path);
        if (!took) took = cli_take_int(argc, argv, &i, "--per-source", 1, 100000, &per_source);
        if (took < 0) return cli_report("shortlist", NMT_ERR_USAGE);
        if (took) continue;
        fprintf(stderr, "nmt shortlist: unknown option '%s'\n%s", argv[i], shortlist_usage);
        return NMT_EXIT_USAGE;
    }
    Config cfg;
    NmtStatus st = cli_load_training_config(&args, &cfg); /* the cache of training's config */
    if (st) return cli_report("shortlist", st);
    PreparedData data;
    st = prepare_data(&cfg, 0, &data);
    Shortlist *sl = NULL;
    char *default_path = NULL;
    /* the pairs of an epoch: with more corpora or upsampling, the mix */
    TrainMix *mix = NULL;
    const Dataset *pairs = data.train;
    if (!st && (data.n_extra || cfg.data.train_upsample > 1)) {
        double weight[CFG_MAX_LIST]; /* whole: every pair that an epoch can hold */
        for (int k = 0; k < data.n_extra; k++) weight[k] = ceil(config_extra_weight(&cfg, k));
        TrainMixParts parts = {data.train, NULL, cfg.data.train_upsample, (const Dataset *const *)data.extra, weight,
                               data.n_extra, (uint64_t)cfg.train.seed};
        st = train_mix_create(0, &mix);
        if (!st) st = train_mix_build(mix, &parts, 0, &pairs, NULL);
    }
    if (!st) st = shortlist_build(pairs, tokenizer_vocab_size(data.src_tok), tokenizer_vocab_size(data.tgt_tok),
                                  per_source, &sl);
    train_mix_free(mix);
    if (!st && !out_path) {
        st = file_make_dirs(cfg.train.save_dir);
        default_path = nmt_asprintf("%s/shortlist.tsv", cfg.train.save_dir);
        if (!default_path && !st) st = nmt_fail_nomem("the shortlist path");
        out_path = default_path;
    }
    if (!st) st = shortlist_save(sl, data.src_tok, data.tgt_tok, out_path);
    if (!st)
        nmt_log_info("shortlist: %d target tokens by frequency, up to %d partners per source token: %s",
                     shortlist_n_frequent(sl), shortlist_max_per_source(sl), out_path);
    shortlist_free(sl);
    nmt_free(default_path);
    prepared_data_free(&data);
    config_free(&cfg);
    return cli_report("shortlist", st);
}
