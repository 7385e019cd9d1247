/* svg_buf.h: a growing text buffer for the SVG writers of src/plot
 * (svg_plot.c, bar_svg.c): printf-style appends and XML-escaped text.
 * An allocation failure sets `oom` and makes every later append a no-op, so
 * writers append freely and check once at the end. */
#ifndef NMT_PLOT_SVG_BUF_H
#define NMT_PLOT_SVG_BUF_H

#include <stddef.h>

typedef struct {
    char *buf; /* '\0'-terminated once anything was appended; nmt_free it */
    size_t len, cap;
    int oom;
} SvgBuf;

/* Room for `extra` more bytes (plus the terminator); 0 when out of memory. */
int svg_buf_reserve(SvgBuf *b, size_t extra);
void svg_buf_printf(SvgBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s XML-escaped (svg_escape of svg_plot.h); NULL appends nothing. */
void svg_buf_text(SvgBuf *b, const char *s);
/* Characters (not bytes) of UTF-8 text, for width estimates. */
size_t svg_text_chars(const char *s);

#endif
