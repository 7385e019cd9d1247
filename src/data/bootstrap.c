/* bootstrap.c: paired bootstrap resampling and confidence intervals as
 * sacreBLEU 2.6.0 computes them (significance.py, Score.estimate_ci), with
 * NumPy's default_rng (SeedSequence + PCG64) re-implemented so that the
 * resamples, and therefore the numbers, are the same. */
#include "data/bootstrap.h"

#include <stdlib.h>
#include <string.h>

#include "data/bleu.h"
#include "data/chrf.h"
#include "data/ter.h"

/* ------------------------------------------------------------------ */
/* NumPy's random generator                                            */
/* ------------------------------------------------------------------ */

typedef unsigned __int128 U128;

/* numpy/random/bit_generator.pyx: SeedSequence constants (pool of 4). */
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_MULT_L 0xca01f9ddu
#define SS_MIX_MULT_R 0x4973f715u
#define SS_POOL 4

static uint32_t ss_hashmix(uint32_t value, uint32_t *hash_const) {
    value ^= *hash_const;
    *hash_const *= SS_MULT_A;
    value *= *hash_const;
    value ^= value >> 16;
    return value;
}

static uint32_t ss_mix(uint32_t x, uint32_t y) {
    uint32_t r = SS_MIX_MULT_L * x - SS_MIX_MULT_R * y;
    return r ^ (r >> 16);
}

/* SeedSequence(entropy).generate_state(n_out, np.uint32) */
static void seed_sequence(const uint32_t *entropy, int n_ent, uint32_t *out, int n_out) {
    uint32_t pool[SS_POOL], hc = SS_INIT_A;
    for (int i = 0; i < SS_POOL; i++) pool[i] = ss_hashmix(i < n_ent ? entropy[i] : 0, &hc);
    for (int src = 0; src < SS_POOL; src++)
        for (int dst = 0; dst < SS_POOL; dst++)
            if (src != dst) pool[dst] = ss_mix(pool[dst], ss_hashmix(pool[src], &hc));
    for (int src = SS_POOL; src < n_ent; src++)
        for (int dst = 0; dst < SS_POOL; dst++)
            pool[dst] = ss_mix(pool[dst], ss_hashmix(entropy[src], &hc));
    uint32_t hb = SS_INIT_B;
    for (int i = 0; i < n_out; i++) {
        uint32_t v = pool[i % SS_POOL];
        v ^= hb;
        hb *= SS_MULT_B;
        v *= hb;
        v ^= v >> 16;
        out[i] = v;
    }
}

static const U128 PCG_MULT = ((U128)0x2360ED051FC65DA4ull << 64) | 0x4385DF649FCCF645ull;

static U128 rng_state(const BootstrapRng *r) { return ((U128)r->state_hi << 64) | r->state_lo; }
static U128 rng_inc(const BootstrapRng *r) { return ((U128)r->inc_hi << 64) | r->inc_lo; }
static void rng_set_state(BootstrapRng *r, U128 s) {
    r->state_hi = (uint64_t)(s >> 64);
    r->state_lo = (uint64_t)s;
}

void bootstrap_rng_seed(BootstrapRng *rng, uint64_t seed) {
    uint32_t ent[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[8];
    seed_sequence(ent, ent[1] ? 2 : 1, w, 8);
    uint64_t v[4]; /* generate_state(4, np.uint64): little-endian word pairs */
    for (int i = 0; i < 4; i++) v[i] = (uint64_t)w[2 * i] | ((uint64_t)w[2 * i + 1] << 32);
    U128 initstate = ((U128)v[0] << 64) | v[1], initseq = ((U128)v[2] << 64) | v[3];
    U128 inc = (initseq << 1) | 1u, s = 0; /* pcg_setseq_128_srandom_r */
    s = s * PCG_MULT + inc;
    s += initstate;
    s = s * PCG_MULT + inc;
    rng_set_state(rng, s);
    rng->inc_hi = (uint64_t)(inc >> 64);
    rng->inc_lo = (uint64_t)inc;
    rng->has_uint32 = 0;
    rng->uinteger = 0;
}

uint64_t bootstrap_rng_next64(BootstrapRng *rng) {
    U128 s = rng_state(rng) * PCG_MULT + rng_inc(rng);
    rng_set_state(rng, s);
    uint64_t x = (uint64_t)(s >> 64) ^ (uint64_t)s; /* XSL RR */
    unsigned rot = (unsigned)(s >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t bootstrap_rng_next32(BootstrapRng *rng) {
    if (rng->has_uint32) {
        rng->has_uint32 = 0;
        return rng->uinteger;
    }
    uint64_t next = bootstrap_rng_next64(rng);
    rng->has_uint32 = 1;
    rng->uinteger = (uint32_t)(next >> 32);
    return (uint32_t)next;
}

uint32_t bootstrap_rng_below(BootstrapRng *rng, uint32_t n) {
    NMT_ASSERT(n >= 1 && n < UINT32_MAX);
    if (n == 1) return 0; /* rng == 0: no draw */
    const uint32_t rng_excl = n; /* buffered_bounded_lemire_uint32 with rng = n - 1 */
    uint64_t m = (uint64_t)bootstrap_rng_next32(rng) * rng_excl;
    uint32_t leftover = (uint32_t)m;
    if (leftover < rng_excl) {
        const uint32_t threshold = (UINT32_MAX - (n - 1)) % rng_excl;
        while (leftover < threshold) {
            m = (uint64_t)bootstrap_rng_next32(rng) * rng_excl;
            leftover = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* ------------------------------------------------------------------ */
/* Metrics                                                             */
/* ------------------------------------------------------------------ */

static double score_bleu(const float *stats, const void *ctx, int *python_float) {
    (void)ctx;
    *python_float = 1;
    return bleu_score_numpy_f32(stats);
}

static double score_chrf(const float *stats, const void *ctx, int *python_float) {
    return chrf_score_numpy_f32(stats, ctx, python_float);
}

static double score_ter(const float *stats, const void *ctx, int *python_float) {
    (void)ctx;
    return ter_score_numpy_f32(stats, python_float);
}

BootstrapMetric bootstrap_metric_bleu(void) {
    BootstrapMetric m = {BLEU_N_STATS, score_bleu, NULL, 0, -1, 1};
    return m;
}

BootstrapMetric bootstrap_metric_chrf(const ChrfOptions *opt) {
    BootstrapMetric m = {CHRF_N_STATS, score_chrf, opt, 1, -1, 1};
    return m;
}

BootstrapMetric bootstrap_metric_ter(int n_refs) {
    BootstrapMetric m = {TER_N_STATS, score_ter, NULL, 1, 1, n_refs};
    return m;
}

/* ------------------------------------------------------------------ */
/* NumPy reductions                                                    */
/* ------------------------------------------------------------------ */

/* numpy's pairwise_sum (blocks of 128, 8 accumulators), float64. */
static double pairwise_sum_f64(const double *a, size_t n) {
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum_f64(a, n2) + pairwise_sum_f64(a + n2, n - n2);
}

static float pairwise_sum_f32(const float *a, size_t n) {
    if (n < 8) {
        float res = 0.0f;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        float r[8];
        size_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum_f32(a, n2) + pairwise_sum_f32(a + n2, n - n2);
}

/* ndarray.mean(): the sum divided by an intp count (in float64, then cast
 * back to float32 for float32 arrays). */
static double np_mean(const double *a64, const float *a32, size_t n) {
    if (a32) return (float)((double)pairwise_sum_f32(a32, n) / (double)n);
    return pairwise_sum_f64(a64, n) / (double)n;
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static int cmp_float(const void *pa, const void *pb) {
    float a = *(const float *)pa, b = *(const float *)pb;
    return a < b ? -1 : a > b;
}

/* significance.estimate_ci: mean of the sorted scores, and half the
 * distance between the n//40-th smallest and largest. scores (n) are
 * reordered; f32 != NULL selects float32 arithmetic on f32 (n) instead. */
static void estimate_ci_numpy(double *scores, float *f32, size_t n, double *mean, double *ci) {
    size_t lo = n / 40, hi = n - lo - 1;
    if (f32) {
        qsort(f32, n, sizeof *f32, cmp_float);
        *mean = np_mean(NULL, f32, n);
        *ci = 0.5f * (f32[hi] - f32[lo]);
    } else {
        qsort(scores, n, sizeof *scores, cmp_double);
        *mean = np_mean(scores, NULL, n);
        *ci = 0.5 * (scores[hi] - scores[lo]);
    }
}

/* ------------------------------------------------------------------ */
/* Resampling                                                          */
/* ------------------------------------------------------------------ */

/* Scores of n_samples resamples for every system, all systems using the
 * same segment indices. scores: (n_sys, n_samples); python_float: (n_sys),
 * set when any score of that system would be a Python float. */
static NmtStatus resample(const BootstrapMetric *m, const int64_t *const *seg_stats, int n_sys,
                          int64_t n_seg, int n_samples, uint64_t seed, double *scores,
                          int *python_float) {
    if (n_seg < 1 || n_seg >= (int64_t)UINT32_MAX)
        return nmt_fail(NMT_ERR_USAGE, "bootstrap: %lld segments (need 1 .. 2^32-2)",
                        (long long)n_seg);
    if (n_samples < 1) return nmt_fail(NMT_ERR_USAGE, "bootstrap: %d resamples", n_samples);
    uint32_t *idx = nmt_malloc((size_t)n_seg * sizeof *idx);
    float *acc = nmt_malloc((size_t)n_sys * (size_t)m->n_stat * sizeof *acc);
    if (!idx || !acc) {
        nmt_free(idx);
        nmt_free(acc);
        return nmt_fail_nomem("bootstrap buffers");
    }
    BootstrapRng rng;
    bootstrap_rng_seed(&rng, seed);
    const int K = m->n_stat;
    for (int s = 0; s < n_sys; s++) python_float[s] = 0;
    for (int i = 0; i < n_samples; i++) {
        /* Row i of rng.choice(n_seg, size=(n_samples, n_seg)). */
        for (int64_t j = 0; j < n_seg; j++) idx[j] = bootstrap_rng_below(&rng, (uint32_t)n_seg);
        memset(acc, 0, (size_t)n_sys * (size_t)K * sizeof *acc);
        for (int s = 0; s < n_sys; s++) {
            float *a = acc + (size_t)s * K;
            for (int64_t j = 0; j < n_seg; j++) {
                const int64_t *row = seg_stats[s] + (size_t)idx[j] * K;
                for (int k = 0; k < K; k++) /* float32 .sum(0) */
                    a[k] += k == m->avg_stat ? (float)((double)row[k] / m->avg_over) : (float)row[k];
            }
            int pf = 0;
            scores[(size_t)s * n_samples + i] = m->score(a, m->ctx, &pf);
            python_float[s] |= pf;
        }
    }
    nmt_free(idx);
    nmt_free(acc);
    return NMT_OK;
}

NmtStatus bootstrap_paired(const BootstrapMetric *m, const int64_t *const *seg_stats,
                           const double *scores, int n_sys, int64_t n_seg, int n_samples,
                           uint64_t seed, BootstrapResult *out) {
    if (n_sys < 1) return nmt_fail(NMT_ERR_USAGE, "bootstrap: no systems");
    size_t N = (size_t)n_samples;
    double *bs = nmt_malloc((size_t)n_sys * N * sizeof *bs);
    double *tmp = nmt_malloc(N * sizeof *tmp);
    float *f_sys = nmt_malloc(N * sizeof *f_sys);
    int *pyf = nmt_calloc((size_t)n_sys, sizeof *pyf);
    NmtStatus st = NMT_OK;
    if (!bs || !tmp || !f_sys || !pyf) {
        st = nmt_fail_nomem("bootstrap scores");
        goto done;
    }
    if ((st = resample(m, seg_stats, n_sys, n_seg, n_samples, seed, bs, pyf)) != NMT_OK) goto done;
    const double *bl = bs;
    int bl_f32 = m->f32_scores && !pyf[0];
    for (int s = 0; s < n_sys; s++) {
        const double *sy = bs + (size_t)s * N;
        int f32 = m->f32_scores && !pyf[s];
        BootstrapResult *r = &out[s];
        r->score = scores[s];
        r->p_value = -1.0;
        /* estimate_ci on this system's resampled scores */
        memcpy(tmp, sy, N * sizeof *tmp);
        for (size_t i = 0; i < N; i++) f_sys[i] = (float)sy[i];
        estimate_ci_numpy(tmp, f32 ? f_sys : NULL, N, &r->mean, &r->ci);
        if (s == 0) continue;
        /* _paired_bs_test: centred |delta| of each resample against the
         * actual |delta|; float32 only when both score arrays are. */
        double real_diff = scores[0] > scores[s] ? scores[0] - scores[s] : scores[s] - scores[0];
        size_t c = 0;
        if (f32 && bl_f32) {
            for (size_t i = 0; i < N; i++) {
                float d = (float)sy[i] - (float)bl[i];
                f_sys[i] = d < 0 ? -d : d;
            }
            float mean = (float)np_mean(NULL, f_sys, N), thr = (float)real_diff;
            for (size_t i = 0; i < N; i++) c += (float)(f_sys[i] - mean) > thr;
        } else {
            for (size_t i = 0; i < N; i++) {
                double d = sy[i] - bl[i];
                tmp[i] = d < 0 ? -d : d;
            }
            double mean = np_mean(tmp, NULL, N);
            for (size_t i = 0; i < N; i++) c += tmp[i] - mean > real_diff;
        }
        r->p_value = (double)(c + 1) / (double)(N + 1);
    }
done:
    nmt_free(bs);
    nmt_free(tmp);
    nmt_free(f_sys);
    nmt_free(pyf);
    return st;
}

NmtStatus bootstrap_confidence(const BootstrapMetric *m, const int64_t *seg_stats, int64_t n_seg,
                               int n_samples, uint64_t seed, double *mean, double *ci) {
    size_t N = (size_t)n_samples;
    double *bs = nmt_malloc((N ? N : 1) * sizeof *bs);
    if (!bs) return nmt_fail_nomem("bootstrap scores");
    int pyf = 0;
    NmtStatus st = resample(m, &seg_stats, 1, n_seg, n_samples, seed, bs, &pyf);
    if (st == NMT_OK) {
        /* Score.estimate_ci: sorted list, statistics.mean (an exact mean,
         * here compensated summation), ci in the scores' own type. */
        qsort(bs, N, sizeof *bs, cmp_double);
        double sum = 0.0, comp = 0.0;
        for (size_t i = 0; i < N; i++) { /* Neumaier */
            double t = sum + bs[i];
            comp += (sum >= bs[i] || sum <= -bs[i]) ? (sum - t) + bs[i] : (bs[i] - t) + sum;
            sum = t;
        }
        size_t lo = N / 40, hi = N - lo - 1;
        int f32 = m->f32_scores && !pyf;
        *mean = (sum + comp) / (double)N;
        if (f32) {
            *mean = (float)*mean;
            *ci = 0.5f * ((float)bs[hi] - (float)bs[lo]);
        } else {
            *ci = 0.5 * (bs[hi] - bs[lo]);
        }
    }
    nmt_free(bs);
    return st;
}
