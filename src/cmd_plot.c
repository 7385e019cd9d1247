/* cmd_plot.c: `nmt plot --run DIR [--out FILE.svg]`: reads DIR/train.csv
 * (src/train/train_csv.h) and draws the run's curves against steps as an
 * SVG figure (src/plot/svg_plot.h) of three stacked panels sharing the x
 * axis: training loss; perplexity (validation, with the training
 * perplexity for comparison; log scale when it spans more than a factor of
 * ten); validation BLEU and chrF.
 * `nmt plot --bars TABLE.tsv [--out FILE.svg] [--title T]`: a grouped bar
 * chart of a small tab-separated table (src/plot/bar_svg.h), as written by
 * scripts/ablate.sh. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "common.h"
#include "plot/bar_svg.h"
#include "plot/svg_plot.h"
#include "train/train_csv.h"

#define COLOR_TRAIN "#1f77b4"
#define COLOR_VALID "#d62728"
#define COLOR_VALID_CHRF "#2ca02c"

static void plot_usage(FILE *out) {
    fprintf(out,
            "usage: nmt plot --run DIR [--out FILE.svg]\n"
            "       nmt plot --bars TABLE.tsv [--out FILE.svg] [--title TEXT]\n"
            "\n"
            "Draws the training curves of a run from DIR/train.csv (written by\n"
            "'nmt train') as an SVG image with three panels against the step:\n"
            "  training loss\n"
            "  perplexity: validation and training (log scale when the values span\n"
            "              more than a factor of 10)\n"
            "  validation BLEU and chrF (chrF from logs that have it)\n"
            "Rows of a resumed run replace the rows the earlier run logged from the\n"
            "step it resumed at onwards.\n"
            "\n"
            "With --bars, draws a grouped bar chart of a tab-separated table instead\n"
            "(scripts/ablate.sh writes one): the header is CATEGORY<TAB>COLUMN..., each\n"
            "COLUMN 'PANEL:SERIES' (columns sharing a PANEL are bars side by side in one\n"
            "panel) or 'NAME' (a panel of its own); each line below it is a category\n"
            "label and one number per column, or a missing value (empty, -, n/a, nan,\n"
            "failed), drawn as 'n/a'. Lines starting with '#' are skipped.\n"
            "\n"
            "options:\n"
            "  --run DIR        the run folder (train.save_dir of the config)\n"
            "  --bars FILE      the table of a bar chart\n"
            "  --out FILE.svg   where to write the image (default DIR/curves.svg; with\n"
            "                   --bars, FILE with .tsv replaced by .svg)\n"
            "  --title TEXT     the bar chart's title (default: none)\n"
            "  -h, --help       this help\n"
            "\n"
            "Exit codes: 0 ok, 1 unreadable or malformed train.csv or table, or an\n"
            "unwritable output, 2 bad usage.\n");
}

/* Adds the curve of (kind, col) to a panel; with `only_if_any`, nothing
 * when the column has no values (a log from before the column). */
static NmtStatus add_curve_if(SvgFigure *fig, int panel, const TrainCsvTable *t, TrainCsvKind kind,
                              TrainCsvColumn col, const char *name, const char *color, unsigned flags,
                              bool only_if_any) {
    TrainCsvSeries s;
    NmtStatus st = train_csv_series(t, kind, col, &s);
    if (st) return st;
    if (!only_if_any || s.n > 0) st = svg_figure_add_series(fig, panel, name, s.step, s.value, s.n, color, flags);
    train_csv_series_free(&s);
    return st;
}

static NmtStatus add_curve(SvgFigure *fig, int panel, const TrainCsvTable *t, TrainCsvKind kind,
                           TrainCsvColumn col, const char *name, const char *color, unsigned flags) {
    return add_curve_if(fig, panel, t, kind, col, name, color, flags, false);
}

static NmtStatus build_figure(const TrainCsvTable *t, const char *run_dir, SvgFigure **out) {
    *out = NULL;
    char *title = nmt_asprintf("Training curves: %s", run_dir);
    if (!title) return nmt_fail_nomem("plot title");
    SvgFigure *fig = svg_figure_create(title, "step");
    nmt_free(title);
    if (!fig) return nmt_fail_nomem("plot figure");
    int p_loss, p_ppl, p_bleu;
    NmtStatus st = svg_figure_add_panel(fig, "Training loss", "loss", SVG_SCALE_LINEAR,
                                        "no training rows with a loss", &p_loss);
    if (!st) st = add_curve(fig, p_loss, t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_LOSS, "training loss",
                            COLOR_TRAIN, 0);
    if (!st) st = svg_figure_add_panel(fig, "Perplexity", "perplexity", SVG_SCALE_AUTO,
                                       "no perplexity values", &p_ppl);
    if (!st) st = add_curve(fig, p_ppl, t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_PPL, "training",
                            COLOR_TRAIN, 0);
    if (!st) st = add_curve(fig, p_ppl, t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_PPL, "validation",
                            COLOR_VALID, SVG_SERIES_MARKERS);
    if (!st) st = svg_figure_add_panel(fig, "Validation BLEU and chrF", "score", SVG_SCALE_LINEAR,
                                       "no validation BLEU (not computed)", &p_bleu);
    if (!st) st = add_curve(fig, p_bleu, t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_BLEU,
                            "validation BLEU", COLOR_VALID, SVG_SERIES_MARKERS);
    if (!st) st = add_curve_if(fig, p_bleu, t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_CHRF,
                               "validation chrF2", COLOR_VALID_CHRF, SVG_SERIES_MARKERS, true);
    if (st) {
        svg_figure_free(fig);
        return st;
    }
    *out = fig;
    return NMT_OK;
}

static NmtStatus plot_run(const char *run_dir, const char *out_path) {
    char *csv = nmt_asprintf("%s/train.csv", run_dir);
    char *def_out = out_path ? NULL : nmt_asprintf("%s/curves.svg", run_dir);
    if (!csv || (!out_path && !def_out)) {
        nmt_free(csv);
        nmt_free(def_out);
        return nmt_fail_nomem("file names");
    }
    if (!out_path) out_path = def_out;
    TrainCsvTable *t = NULL;
    SvgFigure *fig = NULL;
    NmtStatus st = train_csv_read(csv, &t);
    if (!st && t->n_rows == 0) st = nmt_fail(NMT_ERR_FORMAT, "%s: no rows to plot", csv);
    if (!st) st = build_figure(t, run_dir, &fig);
    if (!st) st = svg_figure_write(fig, out_path);
    if (!st)
        nmt_log_info("plot: wrote %s (%zu training rows, %zu validation rows)", out_path,
               train_csv_count(t, TRAIN_CSV_TRAIN), train_csv_count(t, TRAIN_CSV_VALID));
    svg_figure_free(fig);
    train_csv_free(t);
    nmt_free(csv);
    nmt_free(def_out);
    return st;
}

/* The default output of --bars: FILE.tsv -> FILE.svg, other names + ".svg". */
static char *bars_default_out(const char *table) {
    size_t n = strlen(table);
    if (n > 4 && !strcmp(table + n - 4, ".tsv")) return nmt_asprintf("%.*s.svg", (int)(n - 4), table);
    return nmt_asprintf("%s.svg", table);
}

static NmtStatus plot_bars(const char *table, const char *out_path, const char *title) {
    char *def_out = out_path ? NULL : bars_default_out(table);
    if (!out_path && !def_out) return nmt_fail_nomem("file names");
    if (!out_path) out_path = def_out;
    SvgBarChart *chart = NULL;
    NmtStatus st = svg_bars_read_tsv(table, title, &chart);
    if (!st) st = svg_bars_write(chart, out_path);
    if (!st) nmt_log_info("plot: wrote %s (%d categories)", out_path, svg_bars_n_categories(chart));
    svg_bars_free(chart);
    nmt_free(def_out);
    return st;
}

int cmd_plot(int argc, char **argv) {
    const char *run_dir = NULL, *out_path = NULL, *bars = NULL, *title = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing = 0;
        const char *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            plot_usage(stdout);
            return NMT_EXIT_OK;
        } else if ((v = cli_option_value(argc, argv, &i, "--run", &missing))) {
            run_dir = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--out", &missing))) {
            out_path = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--bars", &missing))) {
            bars = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--title", &missing))) {
            title = v;
        } else if (missing) {
            return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "%s needs a value", a));
        } else {
            plot_usage(stderr);
            return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "unknown argument '%s'", a));
        }
    }
    if (run_dir && bars)
        return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "--run and --bars exclude each other"));
    if (out_path && !*out_path)
        return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "--out needs a file name"));
    if (bars) {
        if (!*bars) return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "--bars needs a file name"));
        return cli_report("plot", plot_bars(bars, out_path, title));
    }
    if (title)
        return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "--title goes with --bars"));
    if (!run_dir || !*run_dir) {
        plot_usage(stderr);
        return cli_report("plot", nmt_fail(NMT_ERR_USAGE, "--run DIR is required"));
    }
    return cli_report("plot", plot_run(run_dir, out_path));
}
