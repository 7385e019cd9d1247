/* chrf_words.h: the words that chrF++ counts n-grams of (sacreBLEU 2.6.0's
 * CHRF with word_order > 0, CHRF._remove_punctuation): the segment split on
 * Python whitespace (str.split()), then from each word of two or more code
 * points one ASCII punctuation character (string.punctuation) split off its
 * end or, when the end is none, off its start:
 *
 *     "(hi)" -> "(hi" ")"     "«Haus»," -> "«Haus»" ","     "ä." -> "ä" "."
 *     "$5"   -> "$" "5"       "..."     -> ".." "."         "." -> "."
 *
 *     ChrfWords w;
 *     chrf_words_split(line, strlen(line), &w);
 *     // ' '.join(words[i:i + n]): w.text + w.start[i], chrf_words_span(&w, i, n) bytes
 *     chrf_words_free(&w);
 */
#ifndef NMT_DATA_CHRF_WORDS_H
#define NMT_DATA_CHRF_WORDS_H

#include <stddef.h>

#include "common.h"

typedef struct {
    char *text;     /* the words joined by single spaces, NUL-terminated */
    size_t *start;  /* (n_words + 1) byte offset of each word in text;
                     * start[n_words] = strlen(text) + 1, as if a space followed */
    size_t n_words;
} ChrfWords;

/* The words of s (len bytes, UTF-8; an invalid byte counts as one code
 * point). On failure *w is empty (chrf_words_free is still safe). */
NmtStatus chrf_words_split(const char *s, size_t len, ChrfWords *w);
void chrf_words_free(ChrfWords *w);

/* Bytes of words i..i+n-1 joined by single spaces; i + n <= n_words. */
static inline size_t chrf_words_span(const ChrfWords *w, size_t i, size_t n) {
    return w->start[i + n] - 1 - w->start[i];
}

#endif
