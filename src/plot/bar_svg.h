/* bar_svg.h: grouped bar charts as SVG text, with no dependencies (used by
 * `nmt plot --bars`, e.g. for scripts/ablate.sh). A chart has a fixed list
 * of categories (the groups along the x axis, e.g. attention variants) and
 * a column of panels; each panel holds one or more series, one bar per
 * category each, side by side within a group, with a legend when the panel
 * holds more than one series (the y-axis label of a panel of one series
 * is the series name, unless that is the panel title or the panel has a
 * y_label). Each panel has its own linear y axis, which
 * always includes zero (bars grow from it); a missing value (NaN or
 * infinite) draws no bar but a grey "n/a" at the baseline. The value of a
 * bar is printed above it when it fits in the bar's width, and is always in
 * the bar's tooltip. Category labels are written under every panel,
 * horizontally when they fit in a group's width, else turned 35 degrees
 * (the figure grows to keep them inside it).
 *
 * The SVG structure is stable for tests and tools: each panel is a
 * <g class="panel">; each series a <g class="series"> whose first child is
 * <title>NAME</title>, followed by one <rect class="bar"> per drawn value
 * (in category order, each with a <title>CATEGORY, NAME: VALUE</title>),
 * one <text class="missing"> per missing value and one <text class="value">
 * per printed value label; category labels are
 * <text class="category"> elements. Every text is XML-escaped. */
#ifndef NMT_PLOT_BAR_SVG_H
#define NMT_PLOT_BAR_SVG_H

#include <stddef.h>
#include "common.h"

typedef struct SvgBarChart SvgBarChart;

/* A new chart over categories[0..n_categories) (copied; n_categories >= 1)
 * with an optional title and x-axis label (NULL: none). Returns NULL when
 * out of memory. Free with svg_bars_free (NULL is a no-op). */
SvgBarChart *svg_bars_create(const char *title, const char *x_label,
                             const char *const *categories, int n_categories);
void svg_bars_free(SvgBarChart *c);
int svg_bars_n_categories(const SvgBarChart *c);
/* Width in pixels (default 960, more when the categories need it) and the
 * plot height of each panel (default 200). */
void svg_bars_set_size(SvgBarChart *c, int width, int panel_height);

/* Appends a panel below the previous ones; *index (may be NULL) receives
 * its number. Strings are copied; y_label may be NULL. */
NmtStatus svg_bars_add_panel(SvgBarChart *c, const char *title, const char *y_label, int *index);
/* Adds a series to panel `panel`: values (n_categories), copied, NaN for a
 * missing value; color is an SVG color or NULL for the next palette color. */
NmtStatus svg_bars_add_series(SvgBarChart *c, int panel, const char *name, const double *values,
                              const char *color);

/* The chart as SVG text in a new '\0'-terminated buffer (*svg, nmt_free it)
 * of *len bytes (len may be NULL). */
NmtStatus svg_bars_render(const SvgBarChart *c, char **svg, size_t *len);
/* Renders and writes the chart to `path` atomically; errors name the path. */
NmtStatus svg_bars_write(const SvgBarChart *c, const char *path);

/* The short label printed above a bar: whole numbers from 100 on
 * ("12345"), one decimal from 1 on ("4.6", "34.6"), 2 significant digits
 * below 1 ("0.12"), "n/a" for NaN or infinity. */
void svg_bars_value_label(double v, char *buf, size_t cap);

/* Reads a chart from a tab-separated table (bar_tsv.c):
 *
 *   variant<TAB>BLEU:all<TAB>BLEU:short<TAB>speed:tokens/s
 *   luong-dot<TAB>31.2<TAB>33.0<TAB>5120
 *   none<TAB>n/a<TAB>...
 *
 * The header's first cell names the category column (it becomes the x-axis
 * label); every other cell is "PANEL:SERIES" (split at the first ':',
 * spaces around each part trimmed) or just "NAME" (a panel NAME holding one
 * series NAME). Panels appear in the order of their first column. Each
 * later line is one category: its label, then one value per column, a
 * number or a missing value (empty, "-", "n/a", "na", "nan", "failed", in
 * any case). Blank lines and lines starting with '#' are skipped; "\r\n"
 * line ends and a UTF-8 BOM are accepted. Errors name FILE:LINE: a line
 * with another number of fields than the header, an empty header cell or
 * category label, a value that is not a number (naming the column), no
 * data line at all. title may be NULL. */
NmtStatus svg_bars_read_tsv(const char *path, const char *title, SvgBarChart **out);

#endif
