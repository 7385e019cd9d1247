/* lstm_math.h: one element of the LSTM cell, forward and backward (shared by
 * the CPU and CUDA backends; see kernel_common.h). Gate order i, f, g, o as in
 * docs/model.md:
 *     i = sigmoid(z_i)  f = sigmoid(z_f)  g = tanh(z_g)  o = sigmoid(z_o)
 *     c = f * c_prev + i * g        h = o * tanh(c)
 * A carried row (keep == 0, past the end of its sentence) keeps its state:
 * c = c_prev, h = h_prev, and its gradients pass straight through. */
#ifndef NMT_LSTM_MATH_H
#define NMT_LSTM_MATH_H

#include "kernels/kernel_common.h"

/* A row is active (inside its sentence) when keep != 0. */
NMT_HD static inline int lstm_math_active(float keep) { return keep != 0.0f; }

/* Element j (0 <= j < H) of one row. z (4H): in, the pre-activations of the
 * row; out, the activated gates at j, H + j, 2H + j, 3H + j (also on carried
 * rows, where backward ignores them). c, h (=) the new state element. */
NMT_HD static inline void lstm_math_forward_elem(float *z, int H, int j, float c_prev,
                                                 float h_prev, int active, float *c,
                                                 float *h) {
    float i = kernel_sigmoidf(z[j]);
    float f = kernel_sigmoidf(z[H + j]);
    float g = kernel_tanhf(z[2 * H + j]);
    float o = kernel_sigmoidf(z[3 * H + j]);
    z[j] = i;
    z[H + j] = f;
    z[2 * H + j] = g;
    z[3 * H + j] = o;
    if (active) {
        float cn = f * c_prev + i * g;
        *c = cn;
        *h = o * kernel_tanhf(cn);
    } else {
        *c = c_prev;
        *h = h_prev;
    }
}

/* Backward of element j, in place. gz (4H row): in, the activated gates at
 * j, H + j, 2H + j, 3H + j; out, dz at the same places. c_prev and c the
 * cell values of this element, dh the gradient into h_t. dc: in, the
 * gradient into c_t from later steps; out, the gradient into c_{t-1}.
 * dh_carry (=) the part of dh that flows straight to h_{t-1}: dh on carried
 * rows, 0 on active rows.
 *     dc_tot = dc + dh * o * (1 - tanh(c)^2)
 *     dz_i = dc_tot g i(1-i)   dz_f = dc_tot c_prev f(1-f)
 *     dz_g = dc_tot i (1-g^2)  dz_o = dh tanh(c) o(1-o)
 *     dc_prev = dc_tot f */
NMT_HD static inline void lstm_math_backward_elem(float *gz, int H, int j, float c_prev,
                                                  float c, int active, float dh, float *dc,
                                                  float *dh_carry) {
    if (!active) {
        gz[j] = 0.0f;
        gz[H + j] = 0.0f;
        gz[2 * H + j] = 0.0f;
        gz[3 * H + j] = 0.0f;
        *dh_carry = dh; /* dc passes through unchanged */
        return;
    }
    float i = gz[j], f = gz[H + j], g = gz[2 * H + j], o = gz[3 * H + j]; /* read before written */
    float tc = kernel_tanhf(c);
    float dc_tot = *dc + dh * o * (1.0f - tc * tc);
    gz[j] = dc_tot * g * i * (1.0f - i);
    gz[H + j] = dc_tot * c_prev * f * (1.0f - f);
    gz[2 * H + j] = dc_tot * i * (1.0f - g * g);
    gz[3 * H + j] = dh * tc * o * (1.0f - o);
    *dc = dc_tot * f;
    *dh_carry = 0.0f;
}

#endif
