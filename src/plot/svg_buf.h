/* svg_buf.h: what the SVG writers of src/plot (svg_plot.c, bar_svg.c)
 * share: a growing text buffer with printf-style appends and XML-escaped
 * text, the series colour palette, and handing the finished text over or
 * writing it to a file.
 * An allocation failure sets `oom` and makes every later append a no-op, so
 * writers append freely and check once at the end. */
#ifndef NMT_PLOT_SVG_BUF_H
#define NMT_PLOT_SVG_BUF_H

#include <stddef.h>

#include "common.h"

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

/* The default colour of series number `index` (a cycle of 8). */
const char *svg_palette_color(int index);
/* nmt_strdup(s), setting *oom when it fails; NULL for NULL. */
char *svg_strdup_or_flag(const char *s, int *oom);
/* Hands the buffer over as *svg (and *len when not NULL), or frees it and
 * fails with NMT_ERR_NOMEM when an append ran out of memory. */
NmtStatus svg_buf_finish(SvgBuf *b, char **svg, size_t *len);
/* Writes rendered text (n bytes) atomically to path and frees it. */
NmtStatus svg_write_text(const char *path, char *svg, size_t n);

#endif
