/* bar_svg.c: grouped bar charts as SVG text (bar_svg.h): the chart, panel
 * and series model, the layout (group widths, turned category labels) and
 * the renderer. The TSV reader is in bar_tsv.c; ticks, tick labels and
 * escaping come from svg_plot.h, the text buffer from svg_buf.h. */
#include "plot/bar_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "plot/svg_buf.h"
#include "plot/svg_plot.h"

typedef struct {
    char *name;
    char *color; /* NULL: palette */
    double *v;   /* (n_categories), NaN: missing */
} BarSeries;

typedef struct {
    char *title, *y_label;
    BarSeries *series;
    int n_series;
} BarPanel;

struct SvgBarChart {
    char *title, *x_label;
    char **categories; /* (n_categories) */
    int n_categories;
    int width, panel_height;
    BarPanel *panels;
    int n_panels;
};

SvgBarChart *svg_bars_create(const char *title, const char *x_label,
                             const char *const *categories, int n_categories) {
    NMT_ASSERT(n_categories >= 1);
    SvgBarChart *c = nmt_calloc(1, sizeof *c);
    if (!c) return NULL;
    int oom = 0;
    c->title = svg_strdup_or_flag(title, &oom);
    c->x_label = svg_strdup_or_flag(x_label, &oom);
    c->width = 960;
    c->panel_height = 200;
    c->categories = nmt_calloc((size_t)n_categories, sizeof *c->categories);
    if (c->categories) {
        c->n_categories = n_categories;
        for (int i = 0; i < n_categories; i++)
            c->categories[i] = svg_strdup_or_flag(categories[i] ? categories[i] : "", &oom);
    } else {
        oom = 1;
    }
    if (oom) {
        svg_bars_free(c);
        return NULL;
    }
    return c;
}

static void panel_clear(BarPanel *p) {
    nmt_free(p->title);
    nmt_free(p->y_label);
    for (int s = 0; s < p->n_series; s++) {
        nmt_free(p->series[s].name);
        nmt_free(p->series[s].color);
        nmt_free(p->series[s].v);
    }
    nmt_free(p->series);
}

void svg_bars_free(SvgBarChart *c) {
    if (!c) return;
    for (int i = 0; i < c->n_panels; i++) panel_clear(&c->panels[i]);
    nmt_free(c->panels);
    for (int i = 0; i < c->n_categories; i++) nmt_free(c->categories[i]);
    nmt_free(c->categories);
    nmt_free(c->title);
    nmt_free(c->x_label);
    nmt_free(c);
}

int svg_bars_n_categories(const SvgBarChart *c) { return c->n_categories; }

void svg_bars_set_size(SvgBarChart *c, int width, int panel_height) {
    if (width >= 200) c->width = width;
    if (panel_height >= 60) c->panel_height = panel_height;
}

NmtStatus svg_bars_add_panel(SvgBarChart *c, const char *title, const char *y_label, int *index) {
    BarPanel *grown = nmt_realloc(c->panels, (size_t)(c->n_panels + 1) * sizeof *grown);
    if (!grown) return nmt_fail_nomem("bar chart panel");
    c->panels = grown;
    BarPanel *p = &c->panels[c->n_panels];
    memset(p, 0, sizeof *p);
    int oom = 0;
    p->title = svg_strdup_or_flag(title ? title : "", &oom);
    p->y_label = svg_strdup_or_flag(y_label, &oom);
    if (oom) {
        panel_clear(p);
        return nmt_fail_nomem("bar chart panel");
    }
    if (index) *index = c->n_panels;
    c->n_panels++;
    return NMT_OK;
}

NmtStatus svg_bars_add_series(SvgBarChart *c, int panel, const char *name, const double *values,
                              const char *color) {
    NMT_ASSERT(panel >= 0 && panel < c->n_panels);
    BarPanel *p = &c->panels[panel];
    BarSeries s = {0};
    int oom = 0;
    s.name = svg_strdup_or_flag(name ? name : "", &oom);
    s.color = svg_strdup_or_flag(color, &oom);
    s.v = nmt_malloc((size_t)c->n_categories * sizeof *s.v);
    if (s.v) memcpy(s.v, values, (size_t)c->n_categories * sizeof *s.v);
    else oom = 1;
    BarSeries *grown = oom ? NULL : nmt_realloc(p->series, (size_t)(p->n_series + 1) * sizeof *grown);
    if (!grown) {
        nmt_free(s.name);
        nmt_free(s.color);
        nmt_free(s.v);
        return nmt_fail_nomem("bar chart series");
    }
    p->series = grown;
    p->series[p->n_series++] = s;
    return NMT_OK;
}

void svg_bars_value_label(double v, char *buf, size_t cap) {
    if (cap == 0) return;
    if (!isfinite(v)) {
        snprintf(buf, cap, "n/a");
        return;
    }
    double a = fabs(v);
    if (a >= 100 || a == 0) snprintf(buf, cap, "%.0f", v);
    else if (a >= 1) snprintf(buf, cap, "%.1f", v);
    else snprintf(buf, cap, "%.2g", v);
    if (!strcmp(buf, "-0")) snprintf(buf, cap, "0");
}

/* ------------------------------------------------------------------ */
/* Layout and rendering                                                */
/* ------------------------------------------------------------------ */

enum {
    MARGIN_LEFT = 88,
    MARGIN_RIGHT = 28,
    FIG_TITLE_H = 44,
    PANEL_HEADER_H = 32,
    PANEL_GAP = 16,
    X_LABEL_H = 30,
    MIN_BAR_W = 24, /* fits a value label such as "34.6" */
    FONT_TICK = 12,
    FONT_VALUE = 10,
    FONT_LEGEND = 13,
    FONT_LABEL = 14,
    FONT_PANEL_TITLE = 15,
    FONT_FIG_TITLE = 18
};

#define CHAR_W 0.6         /* average glyph width per font pixel */
#define GROUP_FILL 0.8     /* share of a group's width taken by its bars */
#define LABEL_ANGLE 35.0   /* degrees, for category labels that do not fit */
#define Y_TOP_PAD 0.08     /* room above the tallest bar for its label */
#define COLOR_GRID "#dcdcdc"
#define COLOR_AXIS "#444444"
#define COLOR_TEXT "#222222"
#define COLOR_MISSING "#888888"

typedef struct {
    double x0, x1;      /* plot area, pixels */
    double group_w;     /* width of one category's group */
    int max_series;     /* most series in a panel */
    int turn;           /* category labels turned by LABEL_ANGLE */
    double footer_h;    /* below a panel's plot: the category labels */
    double width;       /* whole figure */
} BarLayout;

static void layout(const SvgBarChart *c, BarLayout *l) {
    int n = c->n_categories;
    l->max_series = 1;
    for (int i = 0; i < c->n_panels; i++)
        if (c->panels[i].n_series > l->max_series) l->max_series = c->panels[i].n_series;
    double min_group = l->max_series * MIN_BAR_W / GROUP_FILL;
    double plot_w = c->width - MARGIN_LEFT - MARGIN_RIGHT;
    if (plot_w < n * min_group) plot_w = n * min_group;
    l->group_w = plot_w / n;
    size_t chars = 0;
    for (int i = 0; i < n; i++) {
        size_t k = svg_text_chars(c->categories[i]);
        if (k > chars) chars = k;
    }
    double label_w = (double)chars * FONT_TICK * CHAR_W;
    l->turn = label_w > l->group_w - 6;
    double left = MARGIN_LEFT;
    if (l->turn) {
        double rad = LABEL_ANGLE * M_PI / 180;
        /* the first label ends at its group's centre and reaches left */
        double reach = label_w * cos(rad) - l->group_w / 2 + 8;
        if (reach > left) left = reach;
        l->footer_h = 14 + label_w * sin(rad) + FONT_TICK * cos(rad) + 6;
    } else {
        l->footer_h = 8 + FONT_TICK + 10;
    }
    l->x0 = left;
    l->x1 = left + plot_w;
    l->width = l->x1 + MARGIN_RIGHT;
}

typedef struct {
    SvgTicks yt;
    int has_data;
    double y0, y1; /* plot area, pixels (y0 top) */
} BarAxis;

static double map_y(const BarAxis *a, double v) {
    return a->y1 - (v - a->yt.lo) / (a->yt.hi - a->yt.lo) * (a->y1 - a->y0);
}

static void panel_axis(const SvgBarChart *c, const BarPanel *p, double top, BarAxis *a) {
    double lo = 0, hi = 0;
    a->has_data = 0;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < c->n_categories; i++) {
            double v = p->series[s].v[i];
            if (!isfinite(v)) continue;
            a->has_data = 1;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    if (hi == lo) hi = lo + 1; /* no data, or every value 0 */
    double span = hi - lo;
    svg_ticks_linear(lo < 0 ? lo - span * Y_TOP_PAD : lo, hi > 0 ? hi + span * Y_TOP_PAD : hi, 5,
                     &a->yt);
    a->y0 = top + PANEL_HEADER_H;
    a->y1 = a->y0 + c->panel_height;
}

static const char *series_color(const BarSeries *s, int index) {
    return s->color ? s->color : svg_palette_color(index);
}

/* Legend in the panel header, right-aligned to the plot's right edge. */
static void render_legend(SvgBuf *b, const BarPanel *p, const BarLayout *l, double baseline) {
    const double swatch = 12, gap = 6, spacing = 18, char_w = FONT_LEGEND * CHAR_W;
    double total = 0;
    for (int s = 0; s < p->n_series; s++)
        total += swatch + gap + char_w * (double)svg_text_chars(p->series[s].name) + (s ? spacing : 0);
    double x = l->x1 - total;
    svg_buf_printf(b, "<g class=\"legend\" font-size=\"%d\">\n", FONT_LEGEND);
    for (int s = 0; s < p->n_series; s++) {
        if (s) x += spacing;
        svg_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"", x,
                       baseline - swatch + 1, swatch, swatch);
        svg_buf_text(b, series_color(&p->series[s], s));
        svg_buf_printf(b, "\"/>\n");
        x += swatch + gap;
        svg_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">", x, baseline, COLOR_TEXT);
        svg_buf_text(b, p->series[s].name);
        svg_buf_printf(b, "</text>\n");
        x += char_w * (double)svg_text_chars(p->series[s].name);
    }
    svg_buf_printf(b, "</g>\n");
}

static void render_axes(SvgBuf *b, const BarPanel *p, const BarLayout *l, const BarAxis *a) {
    double h = a->y1 - a->y0;
    char label[64];
    svg_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\"/>\n",
                   l->x0, a->y0, l->x1 - l->x0, h);
    svg_buf_printf(b, "<g class=\"y-axis\" font-size=\"%d\" fill=\"%s\" text-anchor=\"end\">\n",
                   FONT_TICK, COLOR_TEXT);
    for (int i = 0; i < a->yt.n; i++) {
        double py = map_y(a, a->yt.v[i]);
        svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                       l->x0, py, l->x1, py, COLOR_GRID);
        if (!a->has_data) continue;
        svg_tick_label(&a->yt, 0, a->yt.v[i], label, sizeof label);
        svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                       l->x0 - 5, py, l->x0, py, COLOR_AXIS);
        svg_buf_printf(b, "<text x=\"%.1f\" y=\"%.2f\">", l->x0 - 8, py + FONT_TICK * 0.35);
        svg_buf_text(b, label);
        svg_buf_printf(b, "</text>\n");
    }
    svg_buf_printf(b, "</g>\n");
    svg_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                      "stroke=\"%s\"/>\n",
                   l->x0, a->y0, l->x1 - l->x0, h, COLOR_AXIS);
    /* a panel of one series names it on the y axis (when not its title) */
    const char *y_label = p->y_label;
    if (!y_label && p->n_series == 1 && strcmp(p->series[0].name, p->title)) y_label = p->series[0].name;
    if (y_label) {
        svg_buf_printf(b, "<text class=\"y-label\" transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                          "font-size=\"%d\" text-anchor=\"middle\" fill=\"%s\">",
                       l->x0 - 66, a->y0 + h / 2, FONT_LABEL, COLOR_TEXT);
        svg_buf_text(b, y_label);
        svg_buf_printf(b, "</text>\n");
    }
}

static void render_categories(SvgBuf *b, const SvgBarChart *c, const BarLayout *l, const BarAxis *a) {
    svg_buf_printf(b, "<g class=\"categories\" font-size=\"%d\" fill=\"%s\" text-anchor=\"%s\">\n",
                   FONT_TICK, COLOR_TEXT, l->turn ? "end" : "middle");
    for (int i = 0; i < c->n_categories; i++) {
        double cx = l->x0 + (i + 0.5) * l->group_w;
        svg_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                       cx, a->y1, cx, a->y1 + 5, COLOR_AXIS);
        if (l->turn)
            svg_buf_printf(b, "<text class=\"category\" transform=\"translate(%.2f,%.1f) rotate(%.0f)\">",
                           cx + 4, a->y1 + 14, -LABEL_ANGLE);
        else
            svg_buf_printf(b, "<text class=\"category\" x=\"%.2f\" y=\"%.1f\">", cx,
                           a->y1 + 8 + FONT_TICK);
        svg_buf_text(b, c->categories[i]);
        svg_buf_printf(b, "</text>\n");
    }
    svg_buf_printf(b, "</g>\n");
}

static void render_series(SvgBuf *b, const SvgBarChart *c, const BarPanel *p, int s,
                          const BarLayout *l, const BarAxis *a) {
    const BarSeries *se = &p->series[s];
    const char *color = series_color(se, s);
    double slot = l->group_w * GROUP_FILL / p->n_series, bw = slot * 0.88;
    double base = map_y(a, 0);
    char label[64];
    svg_buf_printf(b, "<g class=\"series\" fill=\"");
    svg_buf_text(b, color);
    svg_buf_printf(b, "\"><title>");
    svg_buf_text(b, se->name);
    svg_buf_printf(b, "</title>\n");
    for (int i = 0; i < c->n_categories; i++) {
        double v = se->v[i];
        double bx = l->x0 + i * l->group_w + l->group_w * (1 - GROUP_FILL) / 2 + s * slot +
                    (slot - bw) / 2;
        double cx = bx + bw / 2;
        if (!isfinite(v)) {
            svg_buf_printf(b, "<text class=\"missing\" x=\"%.2f\" y=\"%.2f\" font-size=\"%d\" "
                              "font-style=\"italic\" text-anchor=\"middle\" fill=\"%s\">n/a</text>\n",
                           cx, base - 4, FONT_VALUE, COLOR_MISSING);
            continue;
        }
        double pv = map_y(a, v);
        svg_buf_printf(b, "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\">"
                          "<title>",
                       bx, fmin(pv, base), bw, fabs(base - pv));
        svg_buf_text(b, c->categories[i]);
        svg_buf_printf(b, ", ");
        svg_buf_text(b, se->name);
        svg_buf_printf(b, ": %.6g</title></rect>\n", v);
        svg_bars_value_label(v, label, sizeof label);
        if ((double)strlen(label) * FONT_VALUE * CHAR_W > slot + 2) continue; /* does not fit */
        svg_buf_printf(b, "<text class=\"value\" x=\"%.2f\" y=\"%.2f\" font-size=\"%d\" "
                          "text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                       cx, v >= 0 ? pv - 3 : pv + FONT_VALUE + 2, FONT_VALUE, COLOR_TEXT, label);
    }
    svg_buf_printf(b, "</g>\n");
}

static void render_panel(SvgBuf *b, const SvgBarChart *c, const BarPanel *p, const BarLayout *l,
                         double top) {
    BarAxis a;
    panel_axis(c, p, top, &a);
    svg_buf_printf(b, "<g class=\"panel\">\n");
    svg_buf_printf(b, "<text class=\"panel-title\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                      "font-weight=\"bold\" fill=\"%s\">",
                   l->x0, top + 20, FONT_PANEL_TITLE, COLOR_TEXT);
    svg_buf_text(b, p->title);
    svg_buf_printf(b, "</text>\n");
    if (p->n_series > 1) render_legend(b, p, l, top + 20);
    render_axes(b, p, l, &a);
    render_categories(b, c, l, &a);
    svg_buf_printf(b, "<g class=\"data\">\n");
    for (int s = 0; s < p->n_series; s++) render_series(b, c, p, s, l, &a);
    svg_buf_printf(b, "</g>\n");
    /* the zero line over the bars */
    double base = map_y(&a, 0);
    svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                   l->x0, base, l->x1, base, COLOR_AXIS);
    svg_buf_printf(b, "</g>\n");
}

NmtStatus svg_bars_render(const SvgBarChart *c, char **svg, size_t *len) {
    *svg = NULL;
    if (len) *len = 0;
    BarLayout l;
    layout(c, &l);
    double top = c->title ? FIG_TITLE_H : 12;
    double panel_h = PANEL_HEADER_H + c->panel_height + l.footer_h;
    int n = c->n_panels;
    double height = top + n * panel_h + (n > 1 ? (n - 1) * PANEL_GAP : 0) +
                    (c->x_label ? X_LABEL_H : 0) + 10;
    SvgBuf b = {0};
    svg_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
                       "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                       "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
                   l.width, height, l.width, height);
    svg_buf_printf(&b, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    if (c->title) {
        svg_buf_printf(&b, "<text class=\"figure-title\" x=\"%.1f\" y=\"28\" font-size=\"%d\" "
                           "font-weight=\"bold\" text-anchor=\"middle\" fill=\"%s\">",
                       l.width / 2, FONT_FIG_TITLE, COLOR_TEXT);
        svg_buf_text(&b, c->title);
        svg_buf_printf(&b, "</text>\n");
    }
    for (int i = 0; i < n; i++) {
        render_panel(&b, c, &c->panels[i], &l, top);
        top += panel_h + PANEL_GAP;
    }
    if (c->x_label) {
        svg_buf_printf(&b, "<text class=\"x-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                           "text-anchor=\"middle\" fill=\"%s\">",
                       (l.x0 + l.x1) / 2, top - PANEL_GAP + 20, FONT_LABEL, COLOR_TEXT);
        svg_buf_text(&b, c->x_label);
        svg_buf_printf(&b, "</text>\n");
    }
    svg_buf_printf(&b, "</svg>\n");
    return svg_buf_finish(&b, svg, len);
}

NmtStatus svg_bars_write(const SvgBarChart *c, const char *path) {
    char *svg;
    size_t n;
    NmtStatus st = svg_bars_render(c, &svg, &n);
    return st ? st : svg_write_text(path, svg, n);
}
