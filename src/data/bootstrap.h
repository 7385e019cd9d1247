/* bootstrap.h: bootstrap resampling over segment statistics (Koehn 2004),
 * reproducing sacreBLEU 2.6.0: the paired bootstrap test of --paired-bs
 * (each system's bootstrap mean and 95% interval, and the p-value of its
 * difference to the first, baseline system) and the single-system
 * confidence interval of --confidence.
 *
 * The resamples are drawn exactly as NumPy's
 * np.random.default_rng(seed).choice(n_seg, size=(n_samples, n_seg)) draws
 * them (SeedSequence -> PCG64 -> Lemire bounded integers), so with the same
 * seed (sacreBLEU's default is 12345) the numbers are sacreBLEU's own.
 * Statistics are summed in float32 and scored the way sacreBLEU scores NumPy
 * float32 vectors (bleu_score_numpy_f32, chrf_score_numpy_f32,
 * ter_score_numpy_f32). */
#ifndef NMT_DATA_BOOTSTRAP_H
#define NMT_DATA_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "data/chrf.h"

#define BOOTSTRAP_DEFAULT_SEED 12345u
#define BOOTSTRAP_DEFAULT_SAMPLES 1000

/* NumPy's PCG64 bit generator seeded through SeedSequence. */
typedef struct {
    uint64_t state_hi, state_lo, inc_hi, inc_lo;
    int has_uint32;    /* next32 hands out the high half of the last 64-bit draw */
    uint32_t uinteger;
} BootstrapRng;

/* np.random.default_rng(seed) */
void bootstrap_rng_seed(BootstrapRng *rng, uint64_t seed);
uint64_t bootstrap_rng_next64(BootstrapRng *rng);
uint32_t bootstrap_rng_next32(BootstrapRng *rng);
/* One draw of rng.integers(0, n) for 1 <= n <= 2^32 - 1 (Lemire's method,
 * as NumPy's random_bounded_uint64_fill uses it for ranges below 2^32). */
uint32_t bootstrap_rng_below(BootstrapRng *rng, uint32_t n);

/* Scores one resample from its summed statistics (n_stat floats). Returns
 * the score; sets *python_float when sacreBLEU would return a Python float
 * rather than a NumPy float32 for it (see f32_scores). */
typedef double (*BootstrapScoreFn)(const float *stats, const void *ctx, int *python_float);

typedef struct {
    int n_stat;             /* statistics per segment */
    BootstrapScoreFn score;
    const void *ctx;        /* the metric's settings (not owned), or NULL */
    int f32_scores;         /* sacreBLEU's resampled scores are float32 (chrF, TER) */
    int avg_stat;           /* >= 0: statistic avg_stat is stored summed over avg_over
                             * references and sacreBLEU's float32 vector holds their
                             * average, (float)(v / avg_over) (TER's reference length);
                             * -1: none */
    int avg_over;
} BootstrapMetric;

BootstrapMetric bootstrap_metric_bleu(void); /* BLEU_N_STATS statistics */
/* CHRF_N_STATS statistics, scored with *opt (chrf.h), which must outlive
 * the metric */
BootstrapMetric bootstrap_metric_chrf(const ChrfOptions *opt);
/* TER_N_STATS statistics [edits, words of all n_refs references] */
BootstrapMetric bootstrap_metric_ter(int n_refs);

typedef struct {
    double score;    /* the system's actual score (copied from the input) */
    double mean;     /* mean of its bootstrap scores */
    double ci;       /* half-width of the 95% interval of its bootstrap scores */
    double p_value;  /* paired test against system 0; -1 for system 0 itself */
} BootstrapResult;

/* Paired bootstrap resampling of n_sys >= 1 systems on the same n_seg
 * segments: every resample picks the same segments for all systems.
 * seg_stats[s]: (n_seg, m->n_stat) statistics of system s; scores[s]: its
 * actual corpus score. out: (n_sys). p = (c + 1) / (n_samples + 1) where c
 * counts resamples whose centred |delta| exceeds the actual |delta|. */
NmtStatus bootstrap_paired(const BootstrapMetric *m, const int64_t *const *seg_stats,
                           const double *scores, int n_sys, int64_t n_seg, int n_samples,
                           uint64_t seed, BootstrapResult *out);

/* sacreBLEU's single-system --confidence: the mean (exact average, as
 * statistics.mean) and 95% half-interval of n_samples resampled scores. */
NmtStatus bootstrap_confidence(const BootstrapMetric *m, const int64_t *seg_stats, int64_t n_seg,
                               int n_samples, uint64_t seed, double *mean, double *ci);

#endif
