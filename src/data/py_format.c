/* py_format.c: Python's repr(float), json.dumps strings and tabulate's
 * fancy_grid (py_format.h), byte for byte as sacreBLEU prints them. */
#include "data/py_format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "data/bleu.h"

#define LINE_CAP 1024 /* longest line of a table cell */

/* Python's repr(float): the shortest digits that read back to x. */
void py_repr(double x, char *buf, size_t cap) {
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x) break;
    }
    /* tmp = [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = tmp[0] == '-';
    char *p = tmp + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    digits[nd] = '\0';
    int e = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
    char out[64];
    int w = 0;
    if (neg) out[w++] = '-';
    if (e >= -4 && e < 16) { /* repr's fixed notation */
        if (e < 0) {
            w += snprintf(out + w, sizeof out - w, "0.");
            for (int i = 0; i < -e - 1; i++) out[w++] = '0';
            w += snprintf(out + w, sizeof out - w, "%s", digits);
        } else {
            for (int i = 0; i <= e; i++) out[w++] = i < nd ? digits[i] : '0';
            out[w++] = '.';
            if (nd > e + 1) w += snprintf(out + w, sizeof out - w, "%s", digits + e + 1);
            else out[w++] = '0';
        }
        out[w] = '\0';
    } else {
        out[w++] = digits[0];
        if (nd > 1) w += snprintf(out + w, sizeof out - w, ".%s", digits + 1);
        snprintf(out + w, sizeof out - w, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    snprintf(buf, cap, "%s", out);
}

/* A JSON string as Python's json.dumps writes it. */
void py_json_string(FILE *out, const char *s, int ensure_ascii) {
    fputc('"', out);
    for (size_t i = 0, n = strlen(s); i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            fprintf(out, "\\%c", c);
        } else if (c == '\n') {
            fputs("\\n", out);
        } else if (c == '\r') {
            fputs("\\r", out);
        } else if (c == '\t') {
            fputs("\\t", out);
        } else if (c == '\b') {
            fputs("\\b", out);
        } else if (c == '\f') {
            fputs("\\f", out);
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
        } else if (c >= 0x80 && ensure_ascii) {
            size_t k = bleu_char_len(s + i, n - i);
            uint32_t cp = 0xFFFD;
            if (k == 2) cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
            else if (k == 3) cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
            else if (k == 4)
                cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) |
                     (s[i + 3] & 0x3Fu);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                fprintf(out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                fprintf(out, "\\u%04x", cp);
            }
            i += k;
            continue;
        } else {
            fputc(c, out);
        }
        i++;
    }
    fputc('"', out);
}

/* Display width as tabulate measures it (code points; names are paths). */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (size_t i = 0, n = strlen(s); i < n; i += bleu_char_len(s + i, n - i)) w++;
    return w;
}

void py_put_repeat(FILE *out, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) fputs(s, out);
}

/* tabulate(..., tablefmt='fancy_grid', colalign=('right',), stralign='center')
 * as sacreBLEU prints its multi-system tables. cells: (n_rows, n_cols),
 * row-major; a cell may hold several lines separated by '\n'. */
void py_fancy_grid(FILE *out, int n_cols, int n_rows, const char *const *headers,
                             char *const *cells) {
    size_t width[8] = {0};
    NMT_ASSERT(n_cols <= 8);
    for (int c = 0; c < n_cols; c++) width[c] = text_width(headers[c]) + 2; /* MIN_PADDING */
    for (int r = 0; r < n_rows; r++)
        for (int c = 0; c < n_cols; c++) {
            char tmp[LINE_CAP];
            snprintf(tmp, sizeof tmp, "%s", cells[r * n_cols + c]);
            for (char *line = strtok(tmp, "\n"); line; line = strtok(NULL, "\n"))
                if (text_width(line) > width[c]) width[c] = text_width(line);
        }
    const char *rule[4][4] = {{"\xe2\x95\x92", "\xe2\x95\x90", "\xe2\x95\xa4", "\xe2\x95\x95"},
                              {"\xe2\x95\x9e", "\xe2\x95\x90", "\xe2\x95\xaa", "\xe2\x95\xa1"},
                              {"\xe2\x94\x9c", "\xe2\x94\x80", "\xe2\x94\xbc", "\xe2\x94\xa4"},
                              {"\xe2\x95\x98", "\xe2\x95\x90", "\xe2\x95\xa7", "\xe2\x95\x9b"}};
    const char *bar = "\xe2\x94\x82";
#define RULE(k)                                                 \
    do {                                                        \
        fputs(rule[k][0], out);                                 \
        for (int c_ = 0; c_ < n_cols; c_++) {                   \
            if (c_) fputs(rule[k][2], out);                     \
            py_put_repeat(out, rule[k][1], width[c_] + 2);         \
        }                                                       \
        fprintf(out, "%s\n", rule[k][3]);                       \
    } while (0)
    /* One printed line of a row: the k-th line of each cell, aligned. */
    RULE(0);
    for (int r = -1; r < n_rows; r++) {
        int height = 1;
        if (r >= 0)
            for (int c = 0; c < n_cols; c++) {
                int h = 1;
                for (const char *p = cells[r * n_cols + c]; *p; p++) h += *p == '\n';
                if (h > height) height = h;
            }
        for (int k = 0; k < height; k++) {
            fputs(bar, out);
            for (int c = 0; c < n_cols; c++) {
                const char *cell = r < 0 ? headers[c] : cells[r * n_cols + c];
                for (int skip = 0; skip < k && cell; skip++) {
                    cell = strchr(cell, '\n');
                    if (cell) cell++;
                }
                char line[LINE_CAP] = "";
                if (cell) {
                    size_t l = strcspn(cell, "\n");
                    snprintf(line, sizeof line, "%.*s", (int)l, cell);
                }
                size_t w = text_width(line), pad = width[c] > w ? width[c] - w : 0;
                size_t left = c == 0 ? pad : pad / 2; /* '{:^W}' puts the odd space right */
                fputc(' ', out);
                py_put_repeat(out, " ", left);
                fputs(line, out);
                py_put_repeat(out, " ", pad - left);
                fprintf(out, " %s", bar);
            }
            fputc('\n', out);
        }
        if (r < 0) RULE(1);
        else if (r < n_rows - 1) RULE(2);
    }
    RULE(3);
#undef RULE
}
