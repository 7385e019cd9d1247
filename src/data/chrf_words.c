/* chrf_words.c: chrF++'s words, CHRF._remove_punctuation of sacreBLEU
 * 2.6.0 (see chrf_words.h). Whitespace and code points come from bleu.c. */
#include "data/chrf_words.h"

#include <string.h>

#include "data/bleu.h"

/* Python's string.punctuation (ASCII only: a UTF-8 byte below 0x80 is a
 * whole code point, so testing one byte tests the character). */
static int is_punct(char c) {
    return c && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != NULL;
}

/* Appends bytes [p, p + n) as the next word. */
static void put_word(ChrfWords *w, size_t *at, const char *p, size_t n) {
    if (w->n_words) w->text[(*at)++] = ' ';
    w->start[w->n_words++] = *at;
    memcpy(w->text + *at, p, n);
    *at += n;
}

NmtStatus chrf_words_split(const char *s, size_t len, ChrfWords *w) {
    memset(w, 0, sizeof *w);
    /* each byte starts at most one word, and a split adds one word and one
     * space: at most len + 1 words in 2 * len + 1 bytes */
    w->text = nmt_malloc(2 * len + 1);
    w->start = nmt_malloc((len + 2) * sizeof *w->start);
    if (!w->text || !w->start) {
        chrf_words_free(w);
        return nmt_fail_nomem("chrF++ words");
    }
    size_t at = 0;
    for (size_t i = 0; i < len;) {
        size_t k = bleu_space_len(s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        size_t b = i, chars = 0; /* the word is s[b, i) */
        while (i < len && !bleu_space_len(s + i, len - i)) {
            i += bleu_char_len(s + i, len - i);
            chars++;
        }
        const char *word = s + b;
        size_t n = i - b;
        if (chars == 1) {
            put_word(w, &at, word, n);
        } else if (is_punct(word[n - 1])) {
            put_word(w, &at, word, n - 1);
            put_word(w, &at, word + n - 1, 1);
        } else if (is_punct(word[0])) {
            put_word(w, &at, word, 1);
            put_word(w, &at, word + 1, n - 1);
        } else {
            put_word(w, &at, word, n);
        }
    }
    w->text[at] = '\0';
    w->start[w->n_words] = at + 1;
    return NMT_OK;
}

void chrf_words_free(ChrfWords *w) {
    nmt_free(w->text);
    nmt_free(w->start);
    memset(w, 0, sizeof *w);
}
