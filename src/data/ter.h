/* ter.h: TER (translation edit rate, Snover et al. 2006) exactly as
 * sacreBLEU 2.6.0 computes it (metrics/ter.py, metrics/lib_ter.py,
 * tokenizers/tokenizer_ter.py): tercom's tokenizer and normalizer, the
 * beam-limited word edit distance, the greedy shift search with its limits
 * (blocks of at most 10 words, moved at most 50 positions, 1000 candidate
 * shifts per sentence pair), and with several references the fewest edits
 * over the references divided by the average reference length.
 *
 *     TerOptions opt = {0};             // sacreBLEU's defaults: case:lc, norm:no, punct:yes, asian:no
 *     TerStats st; ter_stats_clear(&st);
 *     for each segment: ter_add_sentence(&st, hyp, refs, n_refs, &opt);
 *     double ter = ter_score(&st);      // 100 * edits / reference words, 0.. (can exceed 100)
 *
 * Strings are NUL-terminated UTF-8; invalid bytes (which sacreBLEU cannot
 * read) act as characters that are neither whitespace, cased nor Asian. */
#ifndef NMT_DATA_TER_H
#define NMT_DATA_TER_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The flat statistics vector of one segment for the bootstrap:
 * [edits, words of all references together]. */
#define TER_N_STATS 2

typedef struct {
    int case_sensitive; /* 1: no lowercasing (case:mixed); sacreBLEU --ter-case-sensitive */
    int normalized;     /* 1: tercom's normalization (norm:yes); --ter-normalized */
    int no_punct;       /* 1: . , ? : ; ! " ( ) removed (punct:no); --ter-no-punct */
    int asian_support;  /* 1: CJK characters split (with normalized) and CJK punctuation
                         * removed (with no_punct) (asian:yes); --ter-asian-support */
} TerOptions;

typedef struct {
    int64_t edits;     /* fewest edits over the references (shifts + word insertions,
                        * deletions and substitutions), summed over segments */
    double ref_len;    /* average reference length in words, summed over segments in
                        * order (sacreBLEU's float sum) */
    int64_t ref_words; /* words of all references together, summed: per segment
                        * ref_len = ref_words / n_refs */
} TerStats;

void ter_stats_clear(TerStats *s);
void ter_stats_add(TerStats *acc, const TerStats *s);
/* [edits, ref_words]: one segment's statistics for bootstrap.c, which
 * divides ref_words by the number of references (bootstrap_metric_ter). */
void ter_stats_to_array(const TerStats *s, int64_t out[TER_N_STATS]);

/* Statistics of one segment against n_refs >= 1 references (refs[k] may be
 * "" or NULL: no words), written to *out. */
NmtStatus ter_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                             const TerOptions *opt, TerStats *out);
/* Same, added into *acc. On failure *acc is unchanged. */
NmtStatus ter_add_sentence(TerStats *acc, const char *hyp, const char *const *refs, int n_refs,
                           const TerOptions *opt);

/* TER of summed statistics (TER._compute_score_from_stats): 100 * edits /
 * ref_len; with no reference words 100 when there are edits, else 0. */
double ter_score(const TerStats *s);
/* The same from a NumPy float32 statistics vector [edits, ref_len] as
 * sacreBLEU's bootstrap code computes it: a float32 result, except for
 * ref_len == 0, where sacreBLEU returns the Python float 100.0 or 0.0
 * (*python_float set). stats: (TER_N_STATS). */
double ter_score_numpy_f32(const float *stats, int *python_float);

/* sacreBLEU's TercomTokenizer applied to line.rstrip(): lowercased unless
 * case_sensitive, normalized, punctuation removed, tokens joined by single
 * spaces. *out is allocated (nmt_free it). */
NmtStatus ter_tokenize(const char *line, const TerOptions *opt, char **out);

/* The edits of one tokenized hypothesis against one tokenized reference
 * (words separated by single spaces, as ter_tokenize writes them):
 * lib_ter.translation_edit_rate. *ref_words gets the reference's words. */
NmtStatus ter_edits(const char *hyp_tok, const char *ref_tok, int64_t *edits, int64_t *ref_words);

/* "nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0",
 * with "bs:N|" and "seed:S|" after nrefs when given (n_bootstrap > 0, seed). */
int ter_signature(const TerOptions *opt, int n_refs, int n_bootstrap, const char *seed, char *buf,
                  size_t cap);
/* "TER|" + signature + " = 33.3" with `width` decimals. */
int ter_format_line(double score, const char *signature, int width, char *buf, size_t cap);

#endif
