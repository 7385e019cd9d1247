/* test_kernel_math.c: the host versions of kernel_expf, kernel_tanhf and
 * kernel_sigmoidf (src/kernels/kernel_common.h), which replace libm's in
 * the CPU loops so that they vectorise: close to libm over the whole range
 * the models use, exact at the edges (0, saturation, infinities), NaN in
 * gives NaN out (the trainer's NaN guard depends on it). And the Philox
 * generator of dropout_math.h against the Random123 known-answer vectors
 * (tests/test_curand_twin.cu checks it against cuRAND itself). And
 * loss_math_row_stats (the max over its lanes, also the vectorised one of
 * gcc builds; the log-sum and the gap) against a plain loop in double. */
#include "kernels/dropout_math.h"
#include "kernels/kernel_common.h"
#include "kernels/loss_math.h"
#include "test_util.h"

static double rel_err(double got, double want) {
    if (want == got) return 0;
    return fabs(got - want) / fmax(fabs(want), 1e-30);
}

/* Random123's kat_vectors for philox4x32 with 10 rounds: counter, key
 * (low word first), the four output words */
static void test_philox(void) {
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t c[4] = {kat[v][0], kat[v][1], kat[v][2], kat[v][3]};
        dropout_math_philox(c, (uint64_t)kat[v][5] << 32 | kat[v][4]);
        CHECK(c[0] == kat[v][6] && c[1] == kat[v][7] && c[2] == kat[v][8] && c[3] == kat[v][9],
              "philox4x32-10 known answer %d: %08x %08x %08x %08x", v, c[0], c[1], c[2], c[3]);
    }
    /* block g is the counter (g low, g high, 0, 0) */
    uint32_t w[4], c[4] = {0x89abcdef, 0x01234567, 0, 0};
    dropout_math_block(77, 0x0123456789abcdefULL, w);
    dropout_math_philox(c, 77);
    CHECK(!memcmp(w, c, sizeof w), "dropout_math_block puts the 64-bit block index in the low words");
    /* curand_uniform's floats: (0, 1], 2^-33 for word 0, 1 for the top words */
    CHECK(dropout_math_uniform(0) == 0x1p-33f, "uniform(0) = %a", dropout_math_uniform(0));
    CHECK(dropout_math_uniform(0xffffffffu) == 1.0f, "uniform(max) = %a",
          dropout_math_uniform(0xffffffffu));
    CHECK(dropout_math_uniform(0x80000000u) == 0.5f + 0x1p-33f, "uniform(2^31)");
    CHECK(dropout_math_keep(0.29f, 0.3f) == 0.0f && dropout_math_keep(0.3f, 0.3f) == 1.0f / 0.7f &&
              dropout_math_keep(1e-9f, 0.0f) == 1.0f && dropout_math_keep(1.0f, 1.0f) == 0.0f,
          "keep: drop below p, scale above, p = 0 and p = 1 exact");
    /* a mask block writes its in-range elements only: offset 6, n 5 covers
     * words 6..10 = blocks 1 (words 6, 7) and 2 (words 8..10) */
    float m[7] = {9, 9, 9, 9, 9, 9, 9};
    dropout_math_mask_block(m + 1, NULL, 5, 0.5f, 3, 6, 1);
    dropout_math_mask_block(m + 1, NULL, 5, 0.5f, 3, 6, 2);
    int inside = 1;
    for (int i = 1; i <= 5; i++) inside &= m[i] == 0.0f || m[i] == 2.0f;
    CHECK(m[0] == 9 && m[6] == 9 && inside, "mask blocks fill [offset, offset + n) only");
    dropout_math_block(3, 2, w);
    CHECK(m[3] == dropout_math_keep(dropout_math_uniform(w[0]), 0.5f) &&
              m[5] == dropout_math_keep(dropout_math_uniform(w[2]), 0.5f),
          "element i uses word offset + i");
}

/* Rows of every length 1..40 (full lanes and tails), with the largest
 * value at each position in turn, and longer rows (around and beyond the
 * CPU's chunk of 256 exponentials, up to a vocabulary of 8000) with the
 * largest at a few positions; -inf entries, a bias or none: the max is
 * exactly the largest x + bias, ls and gap as summed in double. */
static void test_row_stats(void) {
    enum { VMAX = 8000, NSHORT = 40 };
    static const int longer[] = {255, 256, 257, 263, 512, 777, 8000};
    static float x[VMAX], b[VMAX];
    int wrong = 0, checked = 0;
    double worst = 0;
    int n_lengths = NSHORT + (int)(sizeof longer / sizeof longer[0]);
    for (int li = 0; li < n_lengths; li++) {
        int V = li < NSHORT ? li + 1 : longer[li - NSHORT];
        int tops = V <= NSHORT ? V : 5; /* long rows: the largest at 0, 1, the middle, V-2, V-1 */
        for (int ti = 0; ti < tops; ti++) {
            int top = V <= NSHORT ? ti : (int[]){0, 1, V / 2, V - 2, V - 1}[ti];
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                for (int v = 0; v < V; v++) {
                    x[v] = (float)((v * 7 + V) % 11) - (V > NSHORT ? 8.0f : 20.0f) - (v == 3 && V > 5 ? INFINITY : 0.0f);
                    b[v] = (float)((v * 5) % 3) * 0.5f;
                }
                /* the largest, also after the bias; in long rows not so large that
                 * the others add nothing to the sum */
                x[top] = V > NSHORT ? 3.5f : 4.0f + 0.25f * (float)V;
                const float *bias = with_bias ? b : NULL;
                float m, ls, gap;
                loss_math_row_stats(x, bias, V, &m, &ls, &gap);
                float want_m = -INFINITY;
                for (int v = 0; v < V; v++) want_m = fmaxf(want_m, x[v] + (bias ? bias[v] : 0.0f));
                double sum = 0, sum_gap = 0;
                for (int v = 0; v < V; v++) {
                    double sv = (double)x[v] + (bias ? bias[v] : 0.0);
                    sum += exp(sv - want_m);
                    sum_gap += want_m - sv;
                }
                wrong += m != want_m;
                worst = fmax(worst, rel_err(ls, log(sum)));
                if (isfinite(sum_gap)) worst = fmax(worst, rel_err(gap, sum_gap / V));
                checked++;
            }
        }
    }
    CHECK(wrong == 0, "loss_math_row_stats: %d of %d row maxima wrong", wrong, checked);
    CHECK(worst < 1e-5, "loss_math_row_stats: log-sum or gap off by %.3g (relative)", worst);
}

int main(void) {
    test_philox();
    test_row_stats();
    double worst_exp = 0, worst_tanh = 0, worst_sig = 0, worst_tanh_abs = 0;
    float at_exp = 0, at_tanh = 0, at_sig = 0;
    for (int i = -2000000; i <= 2000000; i++) {
        float x = (float)i * 4.3e-5f; /* [-86, 86] */
        double e = rel_err(kernel_expf(x), exp((double)x));
        if (e > worst_exp) worst_exp = e, at_exp = x;
        float y = (float)i * 5e-6f; /* [-10, 10] */
        double t = rel_err(kernel_tanhf(y), tanh((double)y));
        if (t > worst_tanh) worst_tanh = t, at_tanh = y;
        worst_tanh_abs = fmax(worst_tanh_abs, fabs(kernel_tanhf(y) - tanh((double)y)));
        double s = rel_err(kernel_sigmoidf(y * 3), 1.0 / (1.0 + exp(-(double)y * 3)));
        if (s > worst_sig) worst_sig = s, at_sig = y * 3;
    }
    CHECK(worst_exp < 5e-7, "kernel_expf: relative error %.3g at %g", worst_exp, at_exp);
    CHECK(worst_tanh < 5e-7, "kernel_tanhf: relative error %.3g at %g", worst_tanh, at_tanh);
    CHECK(worst_tanh_abs < 2e-7, "kernel_tanhf: absolute error %.3g", worst_tanh_abs);
    CHECK(worst_sig < 2e-6, "kernel_sigmoidf: relative error %.3g at %g", worst_sig, at_sig);
    /* tiny arguments: tanh(x) ~ x to full relative precision */
    for (float x = 1e-30f; x < 0.5f; x *= 3.1f)
        CHECK(rel_err(kernel_tanhf(x), tanh((double)x)) < 3e-7 && kernel_tanhf(-x) == -kernel_tanhf(x),
              "kernel_tanhf(%g) = %.9g", x, kernel_tanhf(x));
    /* edges */
    CHECK(kernel_expf(0.0f) == 1.0f, "exp(0) = %.9g", kernel_expf(0.0f));
    CHECK(kernel_expf(-100.0f) == 0.0f && kernel_expf(-INFINITY) == 0.0f, "exp of very negative is 0");
    CHECK(isinf(kernel_expf(100.0f)) && isinf(kernel_expf(INFINITY)), "exp of very large is +inf");
    CHECK(rel_err(kernel_expf(88.0f), exp(88.0)) < 5e-7, "exp(88) = %.9g", kernel_expf(88.0f));
    /* the top of the float range: finite up to ln(FLT_MAX) = 88.7228 */
    for (float x = 88.0f; x <= 88.72f; x += 0.01f)
        CHECK(isfinite(kernel_expf(x)) && rel_err(kernel_expf(x), exp((double)x)) < 5e-7,
              "exp(%.5f) = %.9g, want %.9g", x, kernel_expf(x), exp((double)x));
    CHECK(rel_err(kernel_sigmoidf(-88.5f), 1.0 / (1.0 + exp(88.5))) < 1e-5,
          "sigmoid(-88.5) = %g", kernel_sigmoidf(-88.5f));
    CHECK(kernel_tanhf(0.0f) == 0.0f && kernel_tanhf(50.0f) == 1.0f && kernel_tanhf(-INFINITY) == -1.0f,
          "tanh edges");
    CHECK(kernel_sigmoidf(0.0f) == 0.5f && kernel_sigmoidf(200.0f) == 1.0f && kernel_sigmoidf(-200.0f) >= 0.0f &&
              kernel_sigmoidf(-200.0f) < 1e-30f,
          "sigmoid edges");
    float nan = NAN;
    CHECK(isnan(kernel_expf(nan)) && isnan(kernel_tanhf(nan)) && isnan(kernel_sigmoidf(nan)), "NaN stays NaN");
    return test_summary("test_kernel_math");
}
