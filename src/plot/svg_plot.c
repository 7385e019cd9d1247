/* svg_plot.c: line charts as SVG text (svg_plot.h): tick computation,
 * tick labels, XML escaping, the figure/panel/series model and the
 * renderer (text buffer: svg_buf.h). Pure C, writes SVG 1.1 text; no
 * dependencies. */
#include "plot/svg_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "plot/svg_buf.h"

/* ------------------------------------------------------------------ */
/* Ticks                                                               */
/* ------------------------------------------------------------------ */

#define TICK_EPS 1e-9

static int linear_count(double lo, double hi, double step) {
    double k0 = floor(lo / step + TICK_EPS), k1 = ceil(hi / step - TICK_EPS);
    return (int)(k1 - k0) + 1;
}

void svg_ticks_linear(double lo, double hi, int target, SvgTicks *t) {
    memset(t, 0, sizeof *t);
    if (target < 2) target = 2;
    if (target > SVG_MAX_TICKS - 2) target = SVG_MAX_TICKS - 2;
    if (!isfinite(lo) || !isfinite(hi)) {
        lo = 0;
        hi = 1;
    }
    if (hi < lo) {
        double tmp = lo;
        lo = hi;
        hi = tmp;
    }
    if (hi - lo <= fabs(hi) * 1e-12) { /* one value: widen */
        double d = lo != 0 ? fabs(lo) * 0.1 : 1.0;
        lo -= d;
        hi += d;
    }
    double raw = (hi - lo) / (target - 1);
    int e = (int)floor(log10(raw)) - 1;
    static const double mult[3] = {1, 2, 5};
    double step = 0;
    for (int k = 0; k < 30 && step == 0; k++) {
        double p = pow(10.0, e + k / 3);
        double c = mult[k % 3] * p;
        if (linear_count(lo, hi, c) <= target + 1) step = c;
    }
    if (step == 0) step = hi - lo; /* unreachable for finite input */
    double k0 = floor(lo / step + TICK_EPS);
    int n = linear_count(lo, hi, step);
    if (n > SVG_MAX_TICKS) n = SVG_MAX_TICKS;
    t->step = step;
    t->n = n;
    for (int i = 0; i < n; i++) {
        double v = (k0 + i) * step;
        if (fabs(v) < step * 1e-6) v = 0; /* no "-0" */
        t->v[i] = v;
    }
    t->lo = t->v[0];
    t->hi = t->v[n - 1];
}

/* The 1-2-5 sequence indexed by integers: 3e -> 10^e, 3e+1 -> 2*10^e,
 * 3e+2 -> 5*10^e. */
static double seq_value(int idx) {
    int e = idx >= 0 ? idx / 3 : -((-idx + 2) / 3);
    static const double mult[3] = {1, 2, 5};
    return mult[idx - 3 * e] * pow(10.0, e);
}

/* Largest index whose value is <= v (v > 0). */
static int seq_floor(double v) {
    int idx = 3 * (int)floor(log10(v)) + 2;
    while (seq_value(idx) > v * (1 + TICK_EPS)) idx--;
    while (seq_value(idx + 1) <= v * (1 + TICK_EPS)) idx++;
    return idx;
}

/* Smallest index whose value is >= v (v > 0). */
static int seq_ceil(double v) {
    int idx = seq_floor(v);
    if (seq_value(idx) < v * (1 - TICK_EPS)) idx++;
    return idx;
}

void svg_ticks_log(double lo, double hi, SvgTicks *t) {
    memset(t, 0, sizeof *t);
    if (!(lo > 0) || !(hi > 0) || !isfinite(lo) || !isfinite(hi)) {
        lo = 1;
        hi = 10;
    }
    if (hi < lo) {
        double tmp = lo;
        lo = hi;
        hi = tmp;
    }
    if (log10(hi / lo) <= 2.0) { /* 1, 2, 5, 10, 20, ... */
        int i0 = seq_floor(lo), i1 = seq_ceil(hi);
        if (i1 == i0) {
            i0--;
            i1++;
        }
        t->n = i1 - i0 + 1;
        for (int i = 0; i < t->n; i++) t->v[i] = seq_value(i0 + i);
    } else { /* powers of ten, every stride-th one */
        int e0 = (int)floor(log10(lo) + TICK_EPS), e1 = (int)ceil(log10(hi) - TICK_EPS);
        int nd = e1 - e0;
        int stride = (nd + 7) / 8;
        if (stride < 1) stride = 1;
        e0 = (int)(floor((double)e0 / stride) * stride);
        int n = (int)ceil((double)(e1 - e0) / stride) + 1;
        if (n > SVG_MAX_TICKS) n = SVG_MAX_TICKS;
        t->n = n;
        for (int i = 0; i < n; i++) t->v[i] = pow(10.0, e0 + i * stride);
    }
    t->step = 0;
    t->lo = t->v[0];
    t->hi = t->v[t->n - 1];
}

static int decimals_for(double step) {
    if (step >= 1 || step <= 0) return 0;
    int d = (int)ceil(-log10(step) - TICK_EPS);
    return d < 0 ? 0 : d > 12 ? 12 : d;
}

void svg_tick_label(const SvgTicks *t, int log_scale, double v, char *buf, size_t cap) {
    if (cap == 0) return;
    if (v == 0 || !isfinite(v)) {
        snprintf(buf, cap, "%s", v == 0 ? "0" : "?");
        return;
    }
    if (log_scale) {
        double a = fabs(v);
        if (a >= 1e-3 && a < 1e6) {
            snprintf(buf, cap, "%.6g", v);
        } else {
            int e = (int)floor(log10(a) + TICK_EPS);
            double m = v / pow(10.0, e);
            snprintf(buf, cap, "%.3ge%d", m, e);
        }
        return;
    }
    double step = t->step > 0 ? t->step : 1;
    double reach = fmax(fabs(t->lo), fabs(t->hi));
    if (reach >= 1e7 && step >= 1e6) {
        snprintf(buf, cap, "%.*fM", decimals_for(step / 1e6), v / 1e6);
    } else if (reach >= 1e4 && step >= 1e3) {
        snprintf(buf, cap, "%.*fk", decimals_for(step / 1e3), v / 1e3);
    } else {
        snprintf(buf, cap, "%.*f", decimals_for(step), v);
    }
}

/* ------------------------------------------------------------------ */
/* Text                                                                */
/* ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < k) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return k;
}

size_t svg_escape(const char *s, char *buf, size_t cap) {
    size_t need = 0, written = 0;
    int full = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
#define EMIT(str, len)                                              \
    do {                                                            \
        size_t l_ = (len);                                          \
        if (!full && written + l_ < cap) {                          \
            memcpy(buf + written, (str), l_);                       \
            written += l_;                                          \
        } else {                                                    \
            full = 1;                                               \
        }                                                           \
        need += l_;                                                 \
    } while (0)
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k = 1;
        if (c == '&') EMIT("&amp;", 5);
        else if (c == '<') EMIT("&lt;", 4);
        else if (c == '>') EMIT("&gt;", 4);
        else if (c == '"') EMIT("&quot;", 6);
        else if (c == '\'') EMIT("&apos;", 6);
        else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') EMIT("?", 1);
        else if ((k = utf8_len(p + i, n - i)) == 0) {
            EMIT("\xEF\xBF\xBD", 3); /* U+FFFD for a byte that is not UTF-8 */
            k = 1;
        } else EMIT((const char *)p + i, k);
        i += k;
    }
#undef EMIT
    if (cap) buf[written] = '\0';
    return need;
}


/* ------------------------------------------------------------------ */
/* Figure model                                                        */
/* ------------------------------------------------------------------ */

typedef struct {
    char *name;
    char *color; /* NULL: palette */
    unsigned flags;
    double *x, *y; /* (n) */
    size_t n;
} Series;

typedef struct {
    char *title, *y_label, *empty_text;
    SvgScale scale;
    Series *series;
    int n_series;
} Panel;

struct SvgFigure {
    char *title, *x_label;
    int width, panel_height;
    Panel *panels;
    int n_panels;
};

SvgFigure *svg_figure_create(const char *title, const char *x_label) {
    SvgFigure *fig = nmt_calloc(1, sizeof *fig);
    if (!fig) return NULL;
    int oom = 0;
    fig->title = svg_strdup_or_flag(title, &oom);
    fig->x_label = svg_strdup_or_flag(x_label, &oom);
    fig->width = 960;
    fig->panel_height = 220;
    if (oom) {
        svg_figure_free(fig);
        return NULL;
    }
    return fig;
}

static void series_clear(Series *s) {
    nmt_free(s->name);
    nmt_free(s->color);
    nmt_free(s->x);
    nmt_free(s->y);
}

static void panel_clear(Panel *p) {
    nmt_free(p->title);
    nmt_free(p->y_label);
    nmt_free(p->empty_text);
    for (int i = 0; i < p->n_series; i++) series_clear(&p->series[i]);
    nmt_free(p->series);
}

void svg_figure_free(SvgFigure *fig) {
    if (!fig) return;
    for (int i = 0; i < fig->n_panels; i++) panel_clear(&fig->panels[i]);
    nmt_free(fig->panels);
    nmt_free(fig->title);
    nmt_free(fig->x_label);
    nmt_free(fig);
}

void svg_figure_set_size(SvgFigure *fig, int width, int panel_height) {
    if (width >= 200) fig->width = width;
    if (panel_height >= 60) fig->panel_height = panel_height;
}

NmtStatus svg_figure_add_panel(SvgFigure *fig, const char *title, const char *y_label,
                               SvgScale scale, const char *empty_text, int *index) {
    Panel *grown = nmt_realloc(fig->panels, (size_t)(fig->n_panels + 1) * sizeof *grown);
    if (!grown) return nmt_fail_nomem("plot panel");
    fig->panels = grown;
    Panel *p = &fig->panels[fig->n_panels];
    memset(p, 0, sizeof *p);
    int oom = 0;
    p->title = svg_strdup_or_flag(title, &oom);
    p->y_label = svg_strdup_or_flag(y_label, &oom);
    p->empty_text = svg_strdup_or_flag(empty_text ? empty_text : "no data", &oom);
    p->scale = scale;
    if (oom) {
        panel_clear(p);
        return nmt_fail_nomem("plot panel");
    }
    if (index) *index = fig->n_panels;
    fig->n_panels++;
    return NMT_OK;
}

NmtStatus svg_figure_add_series(SvgFigure *fig, int panel, const char *name, const double *x,
                                const double *y, size_t n, const char *color, unsigned flags) {
    NMT_ASSERT(panel >= 0 && panel < fig->n_panels);
    Panel *p = &fig->panels[panel];
    Series s = {0};
    int oom = 0;
    s.name = svg_strdup_or_flag(name ? name : "", &oom);
    s.color = svg_strdup_or_flag(color, &oom);
    s.flags = flags;
    s.n = n;
    if (n) {
        s.x = nmt_malloc(n * sizeof *s.x);
        s.y = nmt_malloc(n * sizeof *s.y);
        if (!s.x || !s.y) oom = 1;
        else {
            memcpy(s.x, x, n * sizeof *s.x);
            memcpy(s.y, y, n * sizeof *s.y);
        }
    }
    Series *grown = oom ? NULL : nmt_realloc(p->series, (size_t)(p->n_series + 1) * sizeof *grown);
    if (!grown) {
        series_clear(&s);
        return nmt_fail_nomem("plot series");
    }
    p->series = grown;
    p->series[p->n_series++] = s;
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Rendering                                                           */
/* ------------------------------------------------------------------ */

enum {
    MARGIN_LEFT = 88,
    MARGIN_RIGHT = 28,
    FIG_TITLE_H = 44,
    PANEL_HEADER_H = 32,
    PANEL_FOOTER_H = 30,
    PANEL_GAP = 16,
    X_LABEL_H = 34,
    FONT_TICK = 12,
    FONT_LEGEND = 13,
    FONT_LABEL = 14,
    FONT_PANEL_TITLE = 15,
    FONT_FIG_TITLE = 18
};

#define COLOR_GRID "#dcdcdc"
#define COLOR_GRID_MINOR "#f0f0f0"
#define COLOR_AXIS "#444444"
#define COLOR_TEXT "#222222"

typedef struct {
    int log;        /* the y axis is logarithmic */
    int has_data;   /* at least one drawable point */
    SvgTicks yt;
} PanelAxis;

#define Y_PAD 0.03

static int point_ok(double x, double y, int log) {
    return isfinite(x) && isfinite(y) && (!log || y > 0);
}

/* Decides the y scale and ticks of a panel. */
static void panel_axis(const Panel *p, PanelAxis *a) {
    double lo = INFINITY, hi = -INFINITY, pos_lo = INFINITY, pos_hi = -INFINITY;
    int any_nonpos = 0, any = 0;
    for (int s = 0; s < p->n_series; s++) {
        const Series *se = &p->series[s];
        for (size_t i = 0; i < se->n; i++) {
            double x = se->x[i], y = se->y[i];
            if (!point_ok(x, y, 0)) continue;
            any = 1;
            lo = fmin(lo, y);
            hi = fmax(hi, y);
            if (y > 0) {
                pos_lo = fmin(pos_lo, y);
                pos_hi = fmax(pos_hi, y);
            } else {
                any_nonpos = 1;
            }
        }
    }
    a->log = p->scale == SVG_SCALE_LOG ||
             (p->scale == SVG_SCALE_AUTO && any && !any_nonpos && hi / lo > SVG_AUTO_LOG_RATIO);
    /* a margin of Y_PAD of the range on both sides keeps points off the
     * frame (a linear axis does not cross zero for it) */
    if (a->log) {
        a->has_data = pos_hi >= pos_lo;
        if (!a->has_data) {
            pos_lo = 1;
            pos_hi = 10;
        }
        double f = pow(pos_hi / pos_lo, Y_PAD);
        svg_ticks_log(pos_lo / f, pos_hi * f, &a->yt);
    } else {
        a->has_data = any;
        if (!any) {
            lo = 0;
            hi = 1;
        }
        double pad = any ? (hi - lo) * Y_PAD : 0, plo = lo - pad, phi = hi + pad;
        if (lo >= 0 && plo < 0) plo = 0;
        if (hi <= 0 && phi > 0) phi = 0;
        svg_ticks_linear(plo, phi, 5, &a->yt);
    }
}

typedef struct {
    double x0, x1, y0, y1; /* plot area in pixels (y0 top) */
    double xlo, xhi;       /* data range of the x axis */
    int log;
    double ylo, yhi;       /* transformed (log10 when log) */
} Mapping;

static double map_x(const Mapping *m, double x) {
    return m->x0 + (x - m->xlo) / (m->xhi - m->xlo) * (m->x1 - m->x0);
}

static double map_y(const Mapping *m, double y) {
    double t = m->log ? log10(y) : y;
    return m->y1 - (t - m->ylo) / (m->yhi - m->ylo) * (m->y1 - m->y0);
}

static const char *series_color(const Series *s, int index) {
    return s->color ? s->color : svg_palette_color(index);
}

/* Drawable points of a series on an axis. */
static size_t series_drawable(const Series *s, int log) {
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) n += point_ok(s->x[i], s->y[i], log);
    return n;
}

static void render_series(SvgBuf *b, const SvgFigure *fig, const Series *s, int index,
                          const Mapping *m) {
    const char *color = series_color(s, index);
    size_t drawable = series_drawable(s, m->log);
    svg_buf_printf(b, "<g class=\"series\" fill=\"none\" stroke=\"");
    svg_buf_text(b, color);
    svg_buf_printf(b, "\" stroke-width=\"1.8\" stroke-linejoin=\"round\" stroke-linecap=\"round\">"
                 "<title>");
    svg_buf_text(b, s->name);
    svg_buf_printf(b, "</title>\n");
    int open = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(s->x[i], s->y[i], m->log)) {
            if (open) svg_buf_printf(b, "\"/>\n");
            open = 0;
            continue;
        }
        if (!open) svg_buf_printf(b, "<polyline points=\"");
        svg_buf_printf(b, "%s%.2f,%.2f", open ? " " : "", map_x(m, s->x[i]), map_y(m, s->y[i]));
        open = 1;
    }
    if (open) svg_buf_printf(b, "\"/>\n");
    svg_buf_printf(b, "</g>\n");
    if (!(s->flags & SVG_SERIES_MARKERS) && drawable != 1) return;
    svg_buf_printf(b, "<g class=\"markers\" fill=\"");
    svg_buf_text(b, color);
    svg_buf_printf(b, "\" stroke=\"#ffffff\" stroke-width=\"0.8\">\n");
    for (size_t i = 0; i < s->n; i++) {
        if (!point_ok(s->x[i], s->y[i], m->log)) continue;
        svg_buf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.2\"><title>", map_x(m, s->x[i]),
                  map_y(m, s->y[i]));
        svg_buf_text(b, s->name);
        svg_buf_printf(b, ": ");
        if (fig->x_label) {
            svg_buf_text(b, fig->x_label);
            svg_buf_printf(b, " ");
        }
        svg_buf_printf(b, "%.10g, %.6g</title></circle>\n", s->x[i], s->y[i]);
    }
    svg_buf_printf(b, "</g>\n");
}

/* Legend in the panel header, right-aligned to the plot's right edge. */
#define LEGEND_EMPTY " (no data)"

/* Legend in the panel header, right-aligned to the plot's right edge; a
 * series with nothing to draw is listed as "NAME (no data)". */
static void render_legend(SvgBuf *b, const Panel *p, const Mapping *m, double baseline) {
    const double swatch = 24, gap = 6, spacing = 18, char_w = FONT_LEGEND * 0.6;
    double total = 0;
    for (int s = 0; s < p->n_series; s++) {
        int empty = series_drawable(&p->series[s], m->log) == 0;
        size_t chars = svg_text_chars(p->series[s].name) + (empty ? strlen(LEGEND_EMPTY) : 0);
        total += swatch + gap + char_w * (double)chars + (s ? spacing : 0);
    }
    double x = m->x1 - total;
    svg_buf_printf(b, "<g class=\"legend\" font-size=\"%d\">\n", FONT_LEGEND);
    for (int s = 0; s < p->n_series; s++) {
        const Series *se = &p->series[s];
        const char *color = series_color(se, s);
        int empty = series_drawable(se, m->log) == 0;
        if (s) x += spacing;
        double ym = baseline - FONT_LEGEND * 0.35;
        svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"2.5\" stroke=\"",
                  x, ym, x + swatch, ym);
        svg_buf_text(b, color);
        svg_buf_printf(b, "\"/>\n");
        if (se->flags & SVG_SERIES_MARKERS) {
            svg_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"", x + swatch / 2, ym);
            svg_buf_text(b, color);
            svg_buf_printf(b, "\"/>\n");
        }
        x += swatch + gap;
        svg_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">", x, baseline, COLOR_TEXT);
        svg_buf_text(b, se->name);
        if (empty) svg_buf_printf(b, "%s", LEGEND_EMPTY);
        svg_buf_printf(b, "</text>\n");
        x += char_w * (double)(svg_text_chars(se->name) + (empty ? strlen(LEGEND_EMPTY) : 0));
    }
    svg_buf_printf(b, "</g>\n");
}

static void render_panel(SvgBuf *b, const SvgFigure *fig, const Panel *p, const PanelAxis *a,
                         const SvgTicks *xt, double top, int last) {
    Mapping m;
    m.x0 = MARGIN_LEFT;
    m.x1 = fig->width - MARGIN_RIGHT;
    m.y0 = top + PANEL_HEADER_H;
    m.y1 = m.y0 + fig->panel_height;
    m.xlo = xt->lo;
    m.xhi = xt->hi;
    m.log = a->log;
    m.ylo = a->log ? log10(a->yt.lo) : a->yt.lo;
    m.yhi = a->log ? log10(a->yt.hi) : a->yt.hi;
    if (m.xhi <= m.xlo) m.xhi = m.xlo + 1;
    if (m.yhi <= m.ylo) m.yhi = m.ylo + 1;
    double w = m.x1 - m.x0, h = m.y1 - m.y0;
    char label[64];

    svg_buf_printf(b, "<g class=\"panel\">\n");
    /* title and legend */
    svg_buf_printf(b, "<text class=\"panel-title\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                 "font-weight=\"bold\" fill=\"%s\">",
              m.x0, top + 20, FONT_PANEL_TITLE, COLOR_TEXT);
    svg_buf_text(b, p->title ? p->title : "");
    svg_buf_printf(b, "</text>\n");
    if (p->n_series > 1) render_legend(b, p, &m, top + 20);
    /* plot background */
    svg_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\"/>\n",
              m.x0, m.y0, w, h);
    /* y grid, ticks, labels */
    svg_buf_printf(b, "<g class=\"y-axis\" font-size=\"%d\" fill=\"%s\" text-anchor=\"end\">\n",
              FONT_TICK, COLOR_TEXT);
    if (a->log && a->yt.n >= 2 && a->yt.v[1] / a->yt.v[0] > 9.99 && a->yt.v[1] / a->yt.v[0] < 10.01) {
        /* minor gridlines at 2..9 x 10^e between decade ticks */
        for (int i = 0; i + 1 < a->yt.n; i++)
            for (int k = 2; k <= 9; k++) {
                double py = map_y(&m, a->yt.v[i] * k);
                svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                          m.x0, py, m.x1, py, COLOR_GRID_MINOR);
            }
    }
    for (int i = 0; i < a->yt.n; i++) {
        double py = map_y(&m, a->yt.v[i]);
        svg_tick_label(&a->yt, a->log, a->yt.v[i], label, sizeof label);
        svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n", m.x0,
                  py, m.x1, py, COLOR_GRID);
        if (!a->has_data) continue; /* no scale to show */
        svg_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                  m.x0 - 5, py, m.x0, py, COLOR_AXIS);
        svg_buf_printf(b, "<text x=\"%.1f\" y=\"%.2f\">", m.x0 - 8, py + FONT_TICK * 0.35);
        svg_buf_text(b, label);
        svg_buf_printf(b, "</text>\n");
    }
    svg_buf_printf(b, "</g>\n");
    /* x grid, ticks, labels */
    svg_buf_printf(b, "<g class=\"x-axis\" font-size=\"%d\" fill=\"%s\" text-anchor=\"middle\">\n",
              FONT_TICK, COLOR_TEXT);
    for (int i = 0; i < xt->n; i++) {
        double px = map_x(&m, xt->v[i]);
        svg_tick_label(xt, 0, xt->v[i], label, sizeof label);
        svg_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"%s\"/>\n", px,
                  m.y0, px, m.y1, COLOR_GRID);
        svg_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"%s\"/>\n", px,
                  m.y1, px, m.y1 + 5, COLOR_AXIS);
        svg_buf_printf(b, "<text x=\"%.2f\" y=\"%.1f\">", px, m.y1 + 8 + FONT_TICK);
        svg_buf_text(b, label);
        svg_buf_printf(b, "</text>\n");
    }
    svg_buf_printf(b, "</g>\n");
    /* frame */
    svg_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                 "stroke=\"%s\"/>\n",
              m.x0, m.y0, w, h, COLOR_AXIS);
    /* y label */
    if (p->y_label || a->log) {
        svg_buf_printf(b, "<text class=\"y-label\" transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                     "font-size=\"%d\" text-anchor=\"middle\" fill=\"%s\">",
                  22.0, m.y0 + h / 2, FONT_LABEL, COLOR_TEXT);
        svg_buf_text(b, p->y_label ? p->y_label : "");
        if (a->log) svg_buf_printf(b, "%s(log scale)", p->y_label ? " " : "");
        svg_buf_printf(b, "</text>\n");
    }
    /* data */
    if (a->has_data) {
        svg_buf_printf(b, "<g class=\"data\">\n");
        for (int s = 0; s < p->n_series; s++) render_series(b, fig, &p->series[s], s, &m);
        svg_buf_printf(b, "</g>\n");
    } else {
        svg_buf_printf(b, "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                     "font-style=\"italic\" text-anchor=\"middle\" fill=\"#888888\">",
                  m.x0 + w / 2, m.y0 + h / 2, FONT_LABEL);
        svg_buf_text(b, p->empty_text);
        svg_buf_printf(b, "</text>\n");
    }
    if (last && fig->x_label) {
        svg_buf_printf(b, "<text class=\"x-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" "
                     "text-anchor=\"middle\" fill=\"%s\">",
                  m.x0 + w / 2, m.y1 + PANEL_FOOTER_H + 18, FONT_LABEL, COLOR_TEXT);
        svg_buf_text(b, fig->x_label);
        svg_buf_printf(b, "</text>\n");
    }
    svg_buf_printf(b, "</g>\n");
}

NmtStatus svg_figure_render(const SvgFigure *fig, char **svg, size_t *len) {
    *svg = NULL;
    if (len) *len = 0;
    PanelAxis *axes = nmt_calloc(fig->n_panels ? (size_t)fig->n_panels : 1, sizeof *axes);
    if (!axes) return nmt_fail_nomem("plot axes");
    /* y axes first (they decide which points are drawable), then the shared x */
    double xlo = INFINITY, xhi = -INFINITY;
    for (int i = 0; i < fig->n_panels; i++) {
        const Panel *p = &fig->panels[i];
        panel_axis(p, &axes[i]);
        for (int s = 0; s < p->n_series; s++)
            for (size_t k = 0; k < p->series[s].n; k++) {
                double x = p->series[s].x[k], y = p->series[s].y[k];
                if (!point_ok(x, y, axes[i].log)) continue;
                xlo = fmin(xlo, x);
                xhi = fmax(xhi, x);
            }
    }
    SvgTicks xt;
    int plot_w = fig->width - MARGIN_LEFT - MARGIN_RIGHT;
    int x_target = plot_w / 100 < 3 ? 3 : plot_w / 100;
    if (xhi >= xlo) svg_ticks_linear(xlo, xhi, x_target, &xt);
    else svg_ticks_linear(0, 1, x_target, &xt);

    double top = fig->title ? FIG_TITLE_H : 12;
    int n = fig->n_panels;
    double height = top + n * (PANEL_HEADER_H + fig->panel_height + PANEL_FOOTER_H) +
                    (n > 1 ? (n - 1) * PANEL_GAP : 0) + (fig->x_label ? X_LABEL_H : 0) + 10;
    SvgBuf b = {0};
    svg_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                  "height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
              fig->width, height, fig->width, height);
    svg_buf_printf(&b, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    if (fig->title) {
        svg_buf_printf(&b, "<text class=\"figure-title\" x=\"%.1f\" y=\"28\" font-size=\"%d\" "
                      "font-weight=\"bold\" text-anchor=\"middle\" fill=\"%s\">",
                  fig->width / 2.0, FONT_FIG_TITLE, COLOR_TEXT);
        svg_buf_text(&b, fig->title);
        svg_buf_printf(&b, "</text>\n");
    }
    for (int i = 0; i < n; i++) {
        render_panel(&b, fig, &fig->panels[i], &axes[i], &xt, top, i == n - 1);
        top += PANEL_HEADER_H + fig->panel_height + PANEL_FOOTER_H + PANEL_GAP;
    }
    svg_buf_printf(&b, "</svg>\n");
    nmt_free(axes);
    return svg_buf_finish(&b, svg, len);
}

NmtStatus svg_figure_write(const SvgFigure *fig, const char *path) {
    char *svg;
    size_t n;
    NmtStatus st = svg_figure_render(fig, &svg, &n);
    return st ? st : svg_write_text(path, svg, n);
}
