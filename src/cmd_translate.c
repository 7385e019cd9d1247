/* cmd_translate.c: `nmt translate`: a Unix filter from a checkpoint: plain
 * text in (one sentence per line), plain text out, exactly one output line
 * per input line, in order; with --stream (the default on a terminal) each
 * line's output as soon as the input pauses. This file parses the options
 * (--stream is translate's own: `nmt eval --model` scores a whole file and
 * has nothing to write early) and names the model; the translator itself (loading, batching, decoding, rendering,
 * progress line) is src/translator.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_model.h"
#include "commands.h"
#include "translator.h"

static const char translate_usage[] =
    "usage: nmt translate [--model FILE] [--config FILE [--set KEY=VALUE ...]]\n"
    "                     [--beam K] [--nbest N]\n"
    "                     [--length-penalty A] [--coverage-penalty B] [--batch N]\n"
    "                     [--maxi-batch N]\n"
    "                     [--replace-unk] [--unk-dict FILE] [--attention-out FILE]\n"
    "                     [--attention-svg DIR] [--alignment hard|soft|P [--alignment-units words|tokens]]\n"
    "                     [--device auto|cpu|cuda] [--threads N]\n"
    "                     [--max-len-a A] [--max-len-b B]\n"
    "                     [--max-src-len N] [--progress | --no-progress]\n"
    "                     [--stream | --no-stream]\n"
    "                     [--sample K [--temperature T] [--seed N]]\n"
    "                     < input.txt > output.txt\n\n"
    "Translates standard input line by line. The model is --model (several\n"
    "--model files make an ensemble: log-probabilities averaged at each step), else\n"
    "best.nmt in train.save_dir of --config, else the file named by $NMT_MODEL.\n"
    "Exactly one output line per input line, in order: an empty line gives an\n"
    "empty line; a line with invalid UTF-8 gives an empty line and a warning;\n"
    "a line longer than --max-src-len tokens is truncated with a warning.\n"
    "With --nbest N > 1, N lines per input line, i counting input lines from 0.\n"
    "When stderr is a terminal, it shows a progress line (lines, sentences/s,\n"
    "target tokens/s), unless translations are streamed to or from a terminal.\n"
    "See docs/decoding.md.\n\n"
    "options:\n"
    "  --config FILE         use train.save_dir/best.nmt of this config (when no --model),\n"
    "                        and the decode keys its file or --set states for the\n"
    "                        settings not given here (the others stay the model's)\n"
    "  --set KEY=VALUE       change a key of --config (e.g. decode.beam=1)\n"
    "  --stream              translate lines as they come: whenever no more input is\n"
    "                        waiting, decode the lines read so far (however few),\n"
    "                        write and flush their translations, then wait for more\n"
    "                        (a live pipe, a coprocess, a person typing); a line is\n"
    "                        translated once its newline (or the end) comes\n"
    "  --no-stream           decode whole blocks of --batch x --maxi-batch lines\n"
    "                        (output at each full block and at the end).\n"
    "                        Default: --stream when standard input is a terminal,\n"
    "                        else --no-stream: the output of a file or pipe then\n"
    "                        does not depend on when its lines arrive (batches of\n"
    "                        other sizes can change n-best scores in the 6th\n"
    "                        decimal, or swap two near-tied hypotheses)\n";

int cmd_translate(int argc, char **argv) {
    CliConfigArgs args = {0};
    TranslatorOptions opt;
    translator_options_init(&opt);
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (!took) took = translator_take_option(argc, argv, &i, &opt);
        if (!took && (!strcmp(argv[i], "--stream") || !strcmp(argv[i], "--no-stream"))) { /* the last wins */
            opt.stream = argv[i][2] == 's' ? TRANSLATOR_STREAM_ON : TRANSLATOR_STREAM_OFF;
            continue;
        }
        if (took < 0) return cli_report("translate", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s%s", translate_usage, translator_options_help);
            return NMT_EXIT_OK;
        }
        fprintf(stderr, "nmt translate: unknown option '%s' (try 'nmt translate --help')\n", argv[i]);
        return NMT_EXIT_USAGE;
    }
    if (args.n_sets && !args.config_path) {
        fprintf(stderr, "nmt translate: --set needs --config (it changes that config's keys; decoding "
                        "options are --beam, --length-penalty, ...)\n");
        return NMT_EXIT_USAGE;
    }
    CliModel pick = {0};
    if (args.config_path) {
        /* the config (with its --set) names the model when no --model does,
         * and its decode section gives the decoding settings not on the
         * command line */
        Config cfg;
        NmtStatus st = cli_load_config(&args, &cfg);
        if (st) return cli_report("translate", st);
        translator_options_from_config(&opt, &cfg);
        st = cli_model_pick(&cfg, opt.models, &opt.n_models, &pick);
        config_free(&cfg);
        if (st) return cli_report("translate", st);
    } else {
        NmtStatus st = cli_model_pick(NULL, opt.models, &opt.n_models, &pick); /* --model, else $NMT_MODEL */
        if (st) return cli_report("translate", st);
    }
    Translator *tr = NULL;
    NmtStatus st = translator_open(&opt, &tr);
    if (st) cli_model_explain(&pick, "translate");
    if (!st) st = translator_translate_file(tr, NULL, stdout, NULL);
    translator_free(tr);
    cli_model_free(&pick);
    return cli_report("translate", st);
}
