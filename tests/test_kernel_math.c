/* test_kernel_math.c: the host versions of kernel_expf, kernel_tanhf and
 * kernel_sigmoidf (src/kernels/kernel_common.h), which replace libm's in
 * the CPU loops so that they vectorise: close to libm over the whole range
 * the models use, exact at the edges (0, saturation, infinities), NaN in
 * gives NaN out (the trainer's NaN guard depends on it). */
#include "kernels/kernel_common.h"
#include "test_util.h"

static double rel_err(double got, double want) {
    if (want == got) return 0;
    return fabs(got - want) / fmax(fabs(want), 1e-30);
}

int main(void) {
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
    CHECK(kernel_tanhf(0.0f) == 0.0f && kernel_tanhf(50.0f) == 1.0f && kernel_tanhf(-INFINITY) == -1.0f,
          "tanh edges");
    CHECK(kernel_sigmoidf(0.0f) == 0.5f && kernel_sigmoidf(200.0f) == 1.0f && kernel_sigmoidf(-200.0f) >= 0.0f &&
              kernel_sigmoidf(-200.0f) < 1e-30f,
          "sigmoid edges");
    float nan = NAN;
    CHECK(isnan(kernel_expf(nan)) && isnan(kernel_tanhf(nan)) && isnan(kernel_sigmoidf(nan)), "NaN stays NaN");
    return test_summary("test_kernel_math");
}
