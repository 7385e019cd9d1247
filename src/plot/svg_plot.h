/* svg_plot.h: line charts as SVG text, with no dependencies. A figure is a
 * column of panels that share one x axis; each panel holds series of (x, y)
 * points drawn as polylines (optionally with point markers), with nice
 * round ticks, gridlines, axis labels, a title and a legend when it holds
 * more than one series. The y axis of a panel is linear, logarithmic, or
 * chosen automatically (log when every value is positive and the values
 * span more than a factor of SVG_AUTO_LOG_RATIO; the axis label then says
 * "(log scale)").
 *
 * Rendering rules: the x axis spans the drawable points of all panels,
 * rounded out to nice ticks; a y axis spans its panel's points plus a 3%
 * margin (a linear one not crossing zero for it), rounded out likewise.
 * Points whose x or y is not finite (or y <= 0 on a log axis) are not drawn
 * and split the polyline there; a series with exactly one drawable point
 * always gets a marker. A panel with nothing to draw shows its empty_text
 * and no y tick labels; in a legend a series with nothing to draw reads
 * "NAME (no data)". Every text is XML-escaped (and invalid UTF-8 replaced),
 * so the output is well-formed XML whatever the titles hold.
 *
 * The SVG structure is stable for tests and tools: each series is a
 * <g class="series"> whose first child is <title>NAME</title>, followed by
 * its <polyline> elements; markers are <circle> elements in a following
 * <g class="markers">. Each panel is a <g class="panel">. */
#ifndef NMT_PLOT_SVG_PLOT_H
#define NMT_PLOT_SVG_PLOT_H

#include <stddef.h>
#include "common.h"

typedef enum {
    SVG_SCALE_LINEAR = 0,
    SVG_SCALE_LOG,
    SVG_SCALE_AUTO /* log when all y > 0 and max/min > SVG_AUTO_LOG_RATIO */
} SvgScale;

#define SVG_AUTO_LOG_RATIO 10.0

enum { SVG_MAX_TICKS = 64 };

/* Ticks of one axis. lo and hi are the axis ends; for a linear axis they are
 * the first and last tick (multiples of step); for a log axis they are
 * values of the 1-2-5 sequence (or powers of ten for wide ranges) and
 * step is 0. v[0..n) are the tick values in increasing order. */
typedef struct {
    double lo, hi;
    double step;
    int n;
    double v[SVG_MAX_TICKS];
} SvgTicks;

/* Nice linear ticks covering [lo, hi] with about `target` ticks (>= 2):
 * the step is the smallest of 1, 2 or 5 times a power of ten that gives at
 * most target + 1 ticks once the ends are rounded outwards to multiples of
 * it. lo == hi is widened (by 10% of |lo|, or by 1 when it is 0);
 * non-finite input gives [0, 1]. */
void svg_ticks_linear(double lo, double hi, int target, SvgTicks *t);
/* Log ticks covering [lo, hi] (0 < lo <= hi; otherwise [1, 10]): within four
 * decades the ends and ticks follow 1, 2, 5, 10, 20, ...; wider ranges use
 * powers of ten (every k-th one, so that at most ~10 are labelled). */
void svg_ticks_log(double lo, double hi, SvgTicks *t);
/* The label of tick value v: plain decimals with as many places as the
 * linear step needs ("0.25", "2000"), thousands as "k" and millions as "M"
 * when every tick is a multiple of them and the axis reaches 10000
 * ("12k"); log ticks as shortest decimals ("0.5", "20", "1e6" from 1e6 up
 * or below 1e-3). */
void svg_tick_label(const SvgTicks *t, int log_scale, double v, char *buf, size_t cap);

/* XML text escaping (& < > " ') of s appended into buf of size cap
 * (truncated, always terminated); returns the length it needed. */
size_t svg_escape(const char *s, char *buf, size_t cap);

typedef struct SvgFigure SvgFigure;

enum {
    SVG_SERIES_MARKERS = 1u << 0 /* a circle at each point (with a tooltip) */
};

/* A new empty figure; title and x_label are copied (NULL: none). Returns
 * NULL when out of memory. Free with svg_figure_free (NULL is a no-op). */
SvgFigure *svg_figure_create(const char *title, const char *x_label);
void svg_figure_free(SvgFigure *fig);
/* Width in pixels (default 960) and plot height of each panel (default 220). */
void svg_figure_set_size(SvgFigure *fig, int width, int panel_height);

/* Appends a panel below the previous ones; *index receives its number. The
 * strings are copied; y_label may be NULL. empty_text is shown in the middle
 * of the panel when it has no drawable point (NULL: "no data"). */
NmtStatus svg_figure_add_panel(SvgFigure *fig, const char *title, const char *y_label,
                               SvgScale scale, const char *empty_text, int *index);
/* Adds a series to panel `panel`: x, y are (n) and copied; name is the
 * legend entry; color is an SVG color ("#1f77b4") or NULL for the panel's
 * next palette color; flags is a mix of SVG_SERIES_*. */
NmtStatus svg_figure_add_series(SvgFigure *fig, int panel, const char *name, const double *x,
                                const double *y, size_t n, const char *color, unsigned flags);

/* The figure as SVG text in a new '\0'-terminated buffer (*svg, nmt_free it)
 * of *len bytes (len may be NULL). */
NmtStatus svg_figure_render(const SvgFigure *fig, char **svg, size_t *len);
/* Renders and writes the figure to `path` atomically; errors name the path. */
NmtStatus svg_figure_write(const SvgFigure *fig, const char *path);

#endif
