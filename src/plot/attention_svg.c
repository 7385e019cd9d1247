/* attention_svg.c: attention heatmaps as SVG (attention_svg.h). */
#include "plot/attention_svg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "plot/svg_plot.h"

/* Appends printf output to a growing buffer; returns 0 on no memory. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return 0;
    if (*len + (size_t)n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (*len + (size_t)n + 1 > c) c *= 2;
        char *p = nmt_realloc(*buf, c);
        if (!p) return 0;
        *buf = p, *cap = c;
    }
    va_start(ap, fmt);
    vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    return 1;
}

/* XML-escaped copy of a token (nmt_free it). */
static char *escaped(const char *text) {
    size_t need = svg_escape(text, NULL, 0) + 1;
    char *out = nmt_malloc(need);
    if (out) svg_escape(text, out, need);
    return out;
}

NmtStatus attention_svg_write(const char *path, const char *title, const char *const *src, int n_src,
                              const char *const *tgt, int n_tgt, const float *weights) {
    const int cell = 28, left = 160, top = 150;
    int width = left + n_src * cell + 20, height = top + n_tgt * cell + 20;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int ok = append(&buf, &len, &cap,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                    "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
                    "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                    width, height, width, height);
    char *t = escaped(title ? title : "");
    ok = ok && t && append(&buf, &len, &cap, "<text x=\"10\" y=\"20\" font-size=\"14\">%s</text>\n", t);
    nmt_free(t);
    for (int s = 0; ok && s < n_src; s++) {
        char *e = escaped(src[s]);
        int x = left + s * cell + cell / 2 + 4, y = top - 6;
        ok = e && append(&buf, &len, &cap,
                         "<text x=\"%d\" y=\"%d\" transform=\"rotate(-60 %d %d)\">%s</text>\n", x, y, x, y, e);
        nmt_free(e);
    }
    for (int r = 0; ok && r < n_tgt; r++) {
        char *e = escaped(tgt[r]);
        ok = e && append(&buf, &len, &cap, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", left - 6,
                         top + r * cell + cell / 2 + 4, e);
        nmt_free(e);
        for (int s = 0; ok && s < n_src; s++) {
            float w = weights[(size_t)r * n_src + s];
            if (w < 0) w = 0;
            if (w > 1) w = 1;
            int shade = 255 - (int)(w * 215 + 0.5); /* white to dark blue */
            ok = append(&buf, &len, &cap,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,255)\" stroke=\"#dddddd\">"
                        "<title>%.3f</title></rect>\n",
                        left + s * cell, top + r * cell, cell, cell, shade, shade, w);
            if (ok && w >= 0.1f)
                ok = append(&buf, &len, &cap,
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\" fill=\"%s\">%.2f</text>\n",
                            left + s * cell + cell / 2, top + r * cell + cell / 2 + 3, w > 0.5f ? "#ffffff" : "#000000",
                            w);
        }
    }
    ok = ok && append(&buf, &len, &cap, "</svg>\n");
    if (!ok) {
        nmt_free(buf);
        return nmt_fail_nomem("drawing an attention heatmap");
    }
    NmtStatus st = file_write_atomic(path, buf, len);
    nmt_free(buf);
    return st;
}
