/* py_format.h: Python's formatting where sacreBLEU's output shows it, so
 * that `nmt eval` prints exactly what the sacreBLEU CLI prints: repr() of
 * a float, json.dumps() of a string, and tabulate's fancy_grid table. */
#ifndef NMT_PY_FORMAT_H
#define NMT_PY_FORMAT_H

#include <stddef.h>
#include <stdio.h>

/* Python's repr(float): the shortest digits that read back to x. */
void py_repr(double x, char *buf, size_t cap);
/* A JSON string as Python's json.dumps writes it (ensure_ascii: \uXXXX
 * escapes, surrogate pairs above U+FFFF). */
void py_json_string(FILE *out, const char *s, int ensure_ascii);
/* s written n times (Python's s * n) */
void py_put_repeat(FILE *out, const char *s, size_t n);
/* tabulate(..., tablefmt='fancy_grid', colalign=('right',),
 * stralign='center') as sacreBLEU prints its multi-system tables: at most 8
 * columns; cells (n_rows, n_cols), row-major; a cell may hold several lines
 * separated by '\n' (each under 1024 bytes). */
void py_fancy_grid(FILE *out, int n_cols, int n_rows, const char *const *headers, char *const *cells);

#endif
