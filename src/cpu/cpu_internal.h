/* cpu_internal.h: the functions behind the CPU Backend's slots, shared by
 * the files of src/cpu/ (cpu_backend.c fills the table; cpu_gemm.c and
 * cpu_ops.c implement them). Not for use outside src/cpu/: model code goes
 * through the Backend table (backend.h), where each slot's contract is
 * written. */
#ifndef NMT_CPU_INTERNAL_H
#define NMT_CPU_INTERNAL_H

#include "backend.h"

/* Below this many elements an elementwise loop stays on one thread. */
#define CPU_PAR_MIN 16384

/* cpu_gemm.c */
void cpu_gemm(Backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void cpu_gemm_batched(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, long stride_a, const float *B,
                      int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                      int count);

/* cpu_ops.c: elementwise */
void cpu_add_bias(Backend *be, float *y, const float *bias, int rows, int cols);
void cpu_bias_backward(Backend *be, float *dbias, const float *dy, int rows, int cols);
void cpu_tanh_forward(Backend *be, float *y, const float *x, size_t n);
void cpu_tanh_backward(Backend *be, float *dx, const float *dy, const float *y, size_t n);
void cpu_dropout(Backend *be, float *y, const float *x, size_t n, float p, uint64_t seed,
                 uint64_t offset);
void cpu_dropout_rows(Backend *be, float *y, const float *x, int rows, int cols, float p,
                      uint64_t seed, uint64_t offset);

/* cpu_ops.c: LSTM, embeddings */
void cpu_lstm_forward(Backend *be, int B, int H, float *z, const float *bias, const float *c_prev,
                      const float *h_prev, float *c, float *h, const float *keep);
void cpu_lstm_backward(Backend *be, int B, int H, float *gz, const float *c_prev,
                       const float *c, const float *keep, const float *dh, float *dc,
                       float *dh_carry);
void cpu_embedding_forward(Backend *be, float *out, const float *table, const int32_t *ids,
                           int N, int E);
void cpu_embedding_backward(Backend *be, float *dtable, const float *dout,
                            const int32_t *ids, int N, int E);

/* cpu_ops.c: layer normalisation */
void cpu_layer_norm_forward(Backend *be, int rows, int cols, const float *x, const float *gain,
                            bool accumulate, float *y, float *stats);
void cpu_layer_norm_backward(Backend *be, int rows, int cols, const float *x, const float *stats,
                             const float *gain, const float *dy, float *dx, float *dgain);

/* cpu_ops.c: attention */
void cpu_additive_score_forward(Backend *be, int B, int S, int A, const float *kproj,
                                const float *qproj, const float *v, float *scores);
void cpu_additive_score_backward(Backend *be, int B, int S, int A, const float *kproj,
                                 const float *qproj, const float *v, const float *dscores,
                                 float *dkproj, float *dqproj, float *dv);
void cpu_attn_softmax_forward(Backend *be, int B, int S, const float *scores,
                              const int32_t *src_len, const float *center, int window,
                              bool gaussian, float sigma, float *probs, float *weights);
void cpu_attn_softmax_backward(Backend *be, int B, int S, const float *probs,
                               const float *weights, const int32_t *src_len,
                               const float *center, int window, bool gaussian, float sigma,
                               const float *dweights, float *dscores, float *dcenter);
void cpu_local_p_forward(Backend *be, int B, const float *u, const int32_t *src_len,
                         float *p);
void cpu_local_p_backward(Backend *be, int B, const float *u, const int32_t *src_len,
                          const float *dp, float *du);

void cpu_guided_align(Backend *be, int T, int B, int S, int n, const float *att, size_t step_stride,
                      int cost, float weight, float scale, float *align, float *loss_rows);

/* cpu_ops.c: loss, optimizer, decoding */
void cpu_softmax_xent(Backend *be, int N, int V, const float *logits, const int32_t *targets,
                      int pad_id, float eps, float scale, float *loss_rows, float *nll_rows,
                      float *dlogits);
void cpu_log_softmax(Backend *be, int N, int V, const float *logits, float *out);
double cpu_sum_squares(Backend *be, const float *x, size_t n);
void cpu_scale(Backend *be, float *x, size_t n, float s);
void cpu_adam_update(Backend *be, float *w, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, int t);
void cpu_sgd_update(Backend *be, float *w, const float *g, size_t n, float lr);
void cpu_ema_update(Backend *be, float *avg, const float *w, size_t n, float decay);
void cpu_topk(Backend *be, const float *x, const float *bias, int rows, int cols, bool logprobs,
              int k, float *values, int32_t *indices);

#endif
