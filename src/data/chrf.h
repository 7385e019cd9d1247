/* chrf.h: chrF exactly as sacreBLEU 2.6.0's CHRF computes it, on in-memory
 * UTF-8 strings, with every setting of its CLI: character n-grams of
 * orders 1..char_order over Unicode code points (--chrf-char-order, -cc;
 * whitespace removed unless --chrf-whitespace), word n-grams of orders
 * 1..word_order as well (--chrf-word-order, -cw; 2 is chrF++; the words
 * are those of chrf_words.h), lowercasing (--chrf-lowercase), the weight
 * beta of recall (--chrf-beta) and the average over orders: effective
 * order (the default) or eps smoothing (--chrf-eps-smoothing). With
 * several references, per segment the reference with the best sentence
 * chrF is kept.
 *
 *     ChrfOptions opt = {0};          // sacreBLEU's defaults: chrF2, case:mixed
 *     opt.word_order = 2;             // chrF2++
 *     chrf_set_beta(&opt, 3);         // chrF3++
 *     ChrfStats st; chrf_stats_clear(&st);
 *     for each segment: chrf_add_sentence(&st, hyp, refs, n_refs, &opt);
 *     double score = chrf_score_opt(&st, &opt);  // 0..100
 */
#ifndef NMT_DATA_CHRF_H
#define NMT_DATA_CHRF_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* sacreBLEU's defaults (CHRF.CHAR_ORDER, CHRF.BETA; CHRF.WORD_ORDER is 0). */
#define CHRF_CHAR_ORDER 6
#define CHRF_BETA 2
/* nmt's limits (sacreBLEU has none): character orders 0..10, word orders
 * 0..4 (not both 0: sacreBLEU fails on no n-grams at all), beta 0..1000
 * (beta^2 exact in float32; 0 scores precision alone). */
#define CHRF_MAX_CHAR_ORDER 10
#define CHRF_MAX_WORD_ORDER 4
#define CHRF_MAX_BETA 1000
/* Orders of the statistics: at most 10 character and 4 word orders. */
#define CHRF_MAX_ORDER (CHRF_MAX_CHAR_ORDER + CHRF_MAX_WORD_ORDER)
/* The flat statistics vector: [hyp, ref, match] for each order, sacreBLEU's
 * own vector (character orders 1..char_order, then word orders
 * 1..word_order) padded with zeros, so that one width serves every setting. */
#define CHRF_N_STATS (3 * CHRF_MAX_ORDER)
/* "chrF", any int, "++++" and a NUL */
#define CHRF_NAME_CAP 24
/* char_order or beta of ChrfOptions for the number 0 (0 there is the default;
 * a number v < 0 is stored as v - 1). */
#define CHRF_ZERO (-1)

/* A zeroed ChrfOptions is sacreBLEU's default chrF2, so {0} and designated
 * initializers ({.word_order = 2}) leave what they do not name at its
 * default. char_order and beta hold 0 for their defaults (6 and 2) and
 * CHRF_ZERO for the number 0: set them with chrf_set_char_order /
 * chrf_set_beta, read them with chrf_char_order / chrf_beta. */
typedef struct {
    int lowercase;     /* 1: Python str.lower() on hypothesis and references (case:lc) */
    int word_order;    /* word n-gram orders 0..CHRF_MAX_WORD_ORDER (nw:; 2: chrF++) */
    int char_order;    /* character n-gram orders (nc:); see above */
    int beta;          /* recall weighs beta times precision (chrF{beta}); see above */
    int whitespace;    /* 1: whitespace is part of the character n-grams (space:yes) */
    int eps_smoothing; /* 1: eps smoothing of every order, 0: effective order (eff:no / eff:yes) */
} ChrfOptions;

int chrf_char_order(const ChrfOptions *opt);
int chrf_beta(const ChrfOptions *opt);
void chrf_set_char_order(ChrfOptions *opt, int char_order);
void chrf_set_beta(ChrfOptions *opt, int beta);
/* NMT_OK, or NMT_ERR_USAGE with a message naming the setting that is out
 * of the limits above. */
NmtStatus chrf_options_check(const ChrfOptions *opt);

/* Index k < chrf_char_order(opt): character order k + 1; after them word
 * order k - chrf_char_order(opt) + 1 (sacreBLEU's order); the rest 0. */
typedef struct {
    int64_t hyp[CHRF_MAX_ORDER];   /* hypothesis n-grams (0 when the reference has none) */
    int64_t ref[CHRF_MAX_ORDER];   /* reference n-grams */
    int64_t match[CHRF_MAX_ORDER]; /* clipped matches */
} ChrfStats;

void chrf_stats_clear(ChrfStats *s);
void chrf_stats_add(ChrfStats *acc, const ChrfStats *s);
/* Flattens to sacreBLEU's order [hyp_1, ref_1, match_1, hyp_2, ...],
 * padded with zeros past its char_order + word_order orders. */
void chrf_stats_to_array(const ChrfStats *s, int64_t out[CHRF_N_STATS]);

/* Statistics of one segment against n_refs >= 1 references, written to
 * *out: those of the reference with the highest sentence chrF (the first
 * one on ties). Options outside their limits are NMT_ERR_USAGE. */
NmtStatus chrf_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                              const ChrfOptions *opt, ChrfStats *out);
/* Same, added into *acc. On failure *acc is unchanged. */
NmtStatus chrf_add_sentence(ChrfStats *acc, const char *hyp, const char *const *refs, int n_refs,
                            const ChrfOptions *opt);

/* chrF (0..100) of summed statistics: CHRF._compute_f_score. */
double chrf_score_opt(const ChrfStats *s, const ChrfOptions *opt);
/* chrF2 with effective order (sacreBLEU's default scoring) of statistics of
 * any character and word orders: the same as chrf_score_opt for every
 * option set with beta 2 and eps smoothing off. */
double chrf_score(const ChrfStats *s);
/* The same from a NumPy float32 statistics vector (CHRF_N_STATS), as
 * sacreBLEU's bootstrap code computes it (NumPy 2's promotion rules: a
 * float32 as a rule, a Python float when no float32 took part). Sets
 * *python_float when sacreBLEU's result is a Python float. */
double chrf_score_numpy_f32(const float *stats, const ChrfOptions *opt, int *python_float);

/* CHRFScore's name: "chrF" + beta and a '+' per word order ("chrF2++" for
 * word order 2), written to buf and returned. */
const char *chrf_name(const ChrfOptions *opt, char buf[CHRF_NAME_CAP]);
/* "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0", with
 * "bs:N|" and "seed:S|" after nrefs when given (n_bootstrap > 0, seed). */
int chrf_signature(const ChrfOptions *opt, int n_refs, int n_bootstrap, const char *seed,
                   char *buf, size_t cap);
/* chrf_name(opt) + "|" + signature + " = 55.3" with `width` decimals. */
int chrf_format_line(const ChrfOptions *opt, double score, const char *signature, int width,
                     char *buf, size_t cap);

#endif
