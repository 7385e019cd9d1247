/* chrf.h: chrF exactly as sacreBLEU 2.6.0 computes it by default (chrF2:
 * character n-grams of orders 1..6 over Unicode code points, whitespace
 * removed, no word n-grams, beta 2, effective-order averaging, i.e.
 * eps_smoothing off), or with word n-grams of orders 1..word_order as well
 * (chrF++ for word order 2, sacreBLEU --chrf-word-order; the words are those
 * of chrf_words.h), several references (per segment the reference with the
 * best sentence chrF is kept), on in-memory UTF-8 strings:
 *
 *     ChrfOptions opt = {0};          // case:mixed, chrF2; opt.word_order = 2: chrF2++
 *     ChrfStats st; chrf_stats_clear(&st);
 *     for each segment: chrf_add_sentence(&st, hyp, refs, n_refs, &opt);
 *     double score = chrf_score(&st);  // 0..100
 */
#ifndef NMT_DATA_CHRF_H
#define NMT_DATA_CHRF_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define CHRF_CHAR_ORDER 6
/* The largest word order taken (sacreBLEU has no limit; chrF++ is 2). */
#define CHRF_MAX_WORD_ORDER 4
/* Orders of the statistics: character orders 1..6, then word orders 1..4. */
#define CHRF_MAX_ORDER (CHRF_CHAR_ORDER + CHRF_MAX_WORD_ORDER)
#define CHRF_BETA 2
/* The flat statistics vector: [hyp, ref, match] for each order, character
 * orders first, as sacreBLEU's; word orders beyond opt.word_order stay 0,
 * which every score skips (no hypothesis n-grams: not an effective order),
 * so one width serves every word order. */
#define CHRF_N_STATS (3 * CHRF_MAX_ORDER)

typedef struct {
    int lowercase;  /* 1: Python str.lower() on hypothesis and references (case:lc) */
    int word_order; /* word n-gram orders 0..CHRF_MAX_WORD_ORDER (nw:; 2: chrF++) */
} ChrfOptions;

/* Index k < CHRF_CHAR_ORDER: character order k + 1; k >= CHRF_CHAR_ORDER:
 * word order k - CHRF_CHAR_ORDER + 1. */
typedef struct {
    int64_t hyp[CHRF_MAX_ORDER];   /* hypothesis n-grams (0 when the reference has none) */
    int64_t ref[CHRF_MAX_ORDER];   /* reference n-grams */
    int64_t match[CHRF_MAX_ORDER]; /* clipped matches */
} ChrfStats;

void chrf_stats_clear(ChrfStats *s);
void chrf_stats_add(ChrfStats *acc, const ChrfStats *s);
/* Flattens to sacreBLEU's order [hyp_1, ref_1, match_1, hyp_2, ...],
 * padded with zeros past the word order. */
void chrf_stats_to_array(const ChrfStats *s, int64_t out[CHRF_N_STATS]);

/* Statistics of one segment against n_refs >= 1 references, written to
 * *out: those of the reference with the highest sentence chrF (the first
 * one on ties). A word order outside 0..CHRF_MAX_WORD_ORDER is
 * NMT_ERR_USAGE. */
NmtStatus chrf_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                              const ChrfOptions *opt, ChrfStats *out);
/* Same, added into *acc. On failure *acc is unchanged. */
NmtStatus chrf_add_sentence(ChrfStats *acc, const char *hyp, const char *const *refs, int n_refs,
                            const ChrfOptions *opt);

/* chrF (0..100) of summed statistics: CHRF._compute_f_score. */
double chrf_score(const ChrfStats *s);
/* The same from a NumPy float32 statistics vector, as sacreBLEU's
 * bootstrap code computes it (NumPy 2: the result is a float32).
 * stats: (CHRF_N_STATS). */
float chrf_score_numpy_f32(const float *stats);

/* CHRFScore's name: "chrF2" and a '+' per word order ("chrF2++" for 2). */
const char *chrf_name(const ChrfOptions *opt);
/* "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0", with
 * "bs:N|" and "seed:S|" after nrefs when given (n_bootstrap > 0, seed). */
int chrf_signature(const ChrfOptions *opt, int n_refs, int n_bootstrap, const char *seed,
                   char *buf, size_t cap);
/* chrf_name(opt) + "|" + signature + " = 55.3" with `width` decimals. */
int chrf_format_line(const ChrfOptions *opt, double score, const char *signature, int width,
                     char *buf, size_t cap);

#endif
