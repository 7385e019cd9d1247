/* bleu.h: corpus BLEU exactly as sacreBLEU 2.6.0 computes it by default
 * (tokenizer 13a or none, optional lowercasing, exp smoothing, max order 4,
 * effective order off, several references), the sacreBLEU text formats, and
 * the small Unicode layer (Python's str.lower/str.split semantics) that
 * chrf.c shares.
 *
 * Everything works on in-memory NUL-terminated UTF-8 strings, so the trainer
 * can score translations without files:
 *
 *     BleuOptions opt; bleu_options_default(&opt);
 *     BleuStats st; bleu_stats_clear(&st);
 *     for each segment: bleu_add_sentence(&st, hyp, refs, n_refs, &opt);
 *     BleuResult r; bleu_score(&st, &r);          // r.score = 34.0...
 *
 * Invalid UTF-8 (which sacreBLEU refuses to read) is accepted: each invalid
 * byte acts as one character that is neither whitespace nor cased. */
#ifndef NMT_DATA_BLEU_H
#define NMT_DATA_BLEU_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The sacreBLEU release whose behaviour (and signature) this matches. */
#define NMT_SACREBLEU_VERSION "2.6.0"
#define BLEU_MAX_ORDER 4
/* Length of the flat statistics vector, in sacreBLEU's order:
 * [hyp_len, ref_len, correct_1..4, total_1..4]. */
#define BLEU_N_STATS (2 + 2 * BLEU_MAX_ORDER)

typedef enum { BLEU_TOKENIZE_13A = 0, BLEU_TOKENIZE_NONE = 1 } BleuTokenize;

typedef struct {
    int lowercase;          /* 1: lowercase hypothesis and references (case:lc) */
    BleuTokenize tokenize;  /* tok:13a (default) or tok:none */
} BleuOptions;

/* Sufficient statistics of one segment or of a whole corpus (summed). */
typedef struct {
    int64_t hyp_len, ref_len;            /* tokens; ref_len is the closest reference length */
    int64_t correct[BLEU_MAX_ORDER];     /* clipped n-gram matches, n = 1..4 */
    int64_t total[BLEU_MAX_ORDER];       /* hypothesis n-grams, n = 1..4 */
} BleuStats;

typedef struct {
    double score;                        /* 0..100 */
    double precisions[BLEU_MAX_ORDER];   /* 0..100, smoothed as sacreBLEU's exp method */
    double bp, ratio;                    /* brevity penalty; hyp_len / ref_len (0 when ref_len = 0) */
    int64_t hyp_len, ref_len;
    int64_t correct[BLEU_MAX_ORDER], total[BLEU_MAX_ORDER];
} BleuResult;

void bleu_options_default(BleuOptions *opt); /* case:mixed, tok:13a */
const char *bleu_tokenize_name(BleuTokenize tok); /* "13a" / "none" */
/* Parses "13a" or "none"; NMT_ERR_USAGE for anything else. */
NmtStatus bleu_tokenize_parse(const char *name, BleuTokenize *out);

void bleu_stats_clear(BleuStats *s);
void bleu_stats_add(BleuStats *acc, const BleuStats *s);
/* Flattens to sacreBLEU's order [hyp_len, ref_len, correct x4, total x4]. */
void bleu_stats_to_array(const BleuStats *s, int64_t out[BLEU_N_STATS]);

/* Statistics of one segment against n_refs >= 1 references (refs[i] may be
 * ""), written to *out. The hypothesis and each reference are lowercased if
 * asked, right-stripped and tokenized; reference n-gram counts are merged by
 * maximum and ref_len is the closest reference length (ties: the shorter). */
NmtStatus bleu_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                              const BleuOptions *opt, BleuStats *out);
/* Same, added into *acc. On failure *acc is unchanged. */
NmtStatus bleu_add_sentence(BleuStats *acc, const char *hyp, const char *const *refs,
                            int n_refs, const BleuOptions *opt);

/* Corpus (or sentence) BLEU from statistics, sacreBLEU's compute_bleu with
 * smooth_method='exp' and effective_order=False. */
void bleu_score(const BleuStats *s, BleuResult *r);
/* The score sacreBLEU gets for the same statistics in its bootstrap code,
 * where they are a NumPy float32 vector (NumPy 2 promotion: the precisions
 * are float32). stats: (BLEU_N_STATS) in the flat order. */
double bleu_score_numpy_f32(const float *stats);

/* ---- formatting (sacreBLEU text format) ---- */

/* "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"; with
 * n_bootstrap > 0 and/or seed != NULL, "bs:N|" and "seed:S|" follow nrefs,
 * as sacreBLEU prints them for bootstrap runs. Returns snprintf's count. */
int bleu_signature(const BleuOptions *opt, int n_refs, int n_bootstrap, const char *seed,
                   char *buf, size_t cap);
/* "66.0/40.8/27.0/18.3 (BP = 1.000 ratio = 1.014 hyp_len = 20462 ref_len = 20180)" */
int bleu_format_verbose(const BleuResult *r, char *buf, size_t cap);
/* sacreBLEU's Score.format: "NAME|SIG = SCORE[ (μ = MEAN ± CI)][ VERBOSE]" with
 * `width` decimals; the confidence part only when mean_ci != NULL and
 * mean_ci[0] > 0 (as sacreBLEU does). verbose may be NULL or "". */
int bleu_format_score(const char *name, const char *signature, double score, int width,
                      const double *mean_ci, const char *verbose, char *buf, size_t cap);
/* The whole BLEU line: "BLEU|" + signature + " = 34.0 66.0/... (BP = ...)". */
int bleu_format_line(const BleuResult *r, const char *signature, int width, char *buf,
                     size_t cap);

/* ---- text processing (exposed for tests and chrf.c) ---- */

/* sacreBLEU's tokenizer_13a (mteval-v13a): <skipped> removal, -\n joining,
 * &quot; &amp; &lt; &gt; unescaping and the four regular expressions, then
 * whitespace collapsed. *out is allocated (nmt_free it). */
NmtStatus bleu_tokenize_13a(const char *line, char **out);
/* Lowercase (if opt->lowercase), right-strip and tokenize one segment as
 * BLEU._preprocess_segment does; the result always has its tokens joined by
 * single spaces (tok:none included). *out is allocated. */
NmtStatus bleu_preprocess(const char *line, const BleuOptions *opt, char **out);

/* Python's str.lower() on UTF-8 (Unicode 14.0 tables from Python 3.11,
 * including U+0130 and the final-sigma rule). *out is allocated. */
NmtStatus bleu_lower(const char *s, size_t len, char **out);
/* Byte length of the Python whitespace character (str.isspace) at s, or 0.
 * n: bytes available from s. */
size_t bleu_space_len(const char *s, size_t n);
/* Byte length of the UTF-8 character at s (1 for an invalid byte). */
size_t bleu_char_len(const char *s, size_t n);
/* Python's s.rstrip(): every whitespace character (str.isspace) at the
 * end of the NUL-terminated s cut off, in place (how sacreBLEU reads a
 * line). */
void bleu_rstrip(char *s);
/* Python's ' '.join(s.split()): tokens separated by single spaces. Writes at
 * most len + 1 bytes to out (which may equal s) and returns the length. */
size_t bleu_collapse_spaces(const char *s, size_t len, char *out);

/* ---- n-gram multisets (shared with chrf.c) ----
 * An n-gram is a byte span of a buffer the caller keeps alive; two n-grams
 * are equal when their order and bytes are equal. */
typedef struct {
    const char *p;   /* first byte, in the caller's buffer */
    uint32_t len;    /* bytes */
    uint32_t n;      /* order */
    uint64_t hash;
    int64_t count;
} BleuNgram;

/* Sets hash from (n, bytes). */
void bleu_ngram_hash(BleuNgram *g);
/* Sorts v (each count set, usually 1) and merges equal n-grams, summing
 * their counts ("sum") or keeping the largest ("max"). Returns the new
 * number of entries. */
size_t bleu_ngrams_merge(BleuNgram *v, size_t n, int take_max);
/* The count of g in a merged array (0 when absent). */
int64_t bleu_ngrams_lookup(const BleuNgram *v, size_t n, const BleuNgram *g);

#endif
