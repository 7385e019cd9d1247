/* backend_steps.h: Backend slots built from other slots of the same
 * backend. The LSTM recurrence over a sequence as one GEMM and one cell op
 * per time step: the CPU backend's lstm_seq_recurrence and its backward,
 * and the CUDA backend's wherever its persistent kernel does not apply
 * (docs/gpu.md, "Persistent recurrence"). Contracts: backend.h. */
#ifndef NMT_BACKEND_STEPS_H
#define NMT_BACKEND_STEPS_H

#include "backend.h"

void backend_lstm_recurrence_steps(Backend *be, int T, int B, int H, const float *W_hh,
                                   float *gates, float *h, float *c, const float *keep,
                                   bool reverse);
void backend_lstm_recurrence_backward_steps(Backend *be, int T, int B, int H,
                                            const float *W_hh, float *gates, const float *c,
                                            const float *keep, bool reverse, float *dh,
                                            float *dc, float *dh_rec);

#endif
