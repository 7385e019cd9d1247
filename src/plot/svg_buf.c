/* svg_buf.c: the growing text buffer of the SVG writers (svg_buf.h). */
#include "plot/svg_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "fileio.h"
#include "plot/svg_plot.h"

int svg_buf_reserve(SvgBuf *b, size_t extra) {
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *nb = nmt_realloc(b->buf, cap);
    if (!nb) {
        b->oom = 1;
        return 0;
    }
    b->buf = nb;
    b->cap = cap;
    return 1;
}

void svg_buf_printf(SvgBuf *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->oom = 1;
        return;
    }
    if (!svg_buf_reserve(b, (size_t)k)) return;
    if ((size_t)k < sizeof small) {
        memcpy(b->buf + b->len, small, (size_t)k + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(b->buf + b->len, (size_t)k + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)k;
}

void svg_buf_text(SvgBuf *b, const char *s) {
    if (!s) return;
    size_t need = svg_escape(s, NULL, 0);
    if (!svg_buf_reserve(b, need)) return;
    svg_escape(s, b->buf + b->len, need + 1);
    b->len += need;
}

size_t svg_text_chars(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) n += (*p & 0xC0) != 0x80;
    return n;
}

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

const char *svg_palette_color(int index) { return palette[index % (int)NMT_ARRAY_LEN(palette)]; }

char *svg_strdup_or_flag(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = nmt_strdup(s);
    if (!d) *oom = 1;
    return d;
}

NmtStatus svg_buf_finish(SvgBuf *b, char **svg, size_t *len) {
    if (b->oom) {
        nmt_free(b->buf);
        return nmt_fail_nomem("SVG text");
    }
    *svg = b->buf;
    if (len) *len = b->len;
    return NMT_OK;
}

NmtStatus svg_write_text(const char *path, char *svg, size_t n) {
    NmtStatus st = file_write_atomic(path, svg, n);
    nmt_free(svg);
    return st;
}
