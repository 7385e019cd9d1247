/* backend.h: the Backend interface, the only device API that model code
 * (src/model/) sees. A Backend is a table of function pointers plus a
 * context; the CPU backend (src/cpu/) is the reference, the CUDA backend
 * (src/gpu/) implements the same slots and is tested against it.
 *
 * Conventions
 * - All tensors are float32 in backend memory (from be->alloc) unless the
 *   type says otherwise; int32 ids and lengths are in backend memory too.
 * - Matrices are row-major. Shapes are given as (rows, cols) comments; the
 *   model's sequences are time-major (T, B, X): row t*B + b.
 * - Every backward slot ADDS (+=) into its gradient outputs, except where a
 *   parameter is marked "(=)", which is overwritten.
 * - Slots never allocate and never fail: sizes were checked at setup.
 *   Only alloc can fail (returns NULL).
 * - Work is queued in order; download() and sum_squares() return host
 *   values and so wait for the work before them; download_start() and
 *   download_finish() split a download so that the host may queue more
 *   work before it waits.
 * - No slot may be NULL. */
#ifndef NMT_BACKEND_H
#define NMT_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Backend Backend;

/* download_start calls that may be pending at once (backend.h, below) */
#define BACKEND_MAX_PENDING_DOWNLOADS 2

struct Backend {
    const char *name; /* "cpu" or "cuda" */
    void *ctx;
    bool host_memory; /* backend memory is host memory (CPU): the host may read
                         it directly, e.g. to write a checkpoint without a copy */
    int decode_quantum; /* decoding shrinks its batch of sentences (dropping the
                           finished ones) only to a multiple of this many: 1
                           at every finish (the CPU, where every row costs
                           time); more gives fewer compactions and fewer, recurring
                           batch shapes for some rows computed in vain (the GPU:
                           8). NMT_DECODE_QUANTUM=N sets it (backend_select.h) */
    bool overlap_downloads; /* download_start returns before its copy is done,
                               and the work queued after it runs while the
                               host waits in download_finish (CUDA): greedy
                               decoding then queues step t+1 before it reads
                               step t's tokens (docs/decoding.md). false on
                               the CPU, where download_start copies at once.
                               NMT_DECODE_PIPELINE=0|1 sets it (backend_select.h) */
    int decode_query_form; /* decoding several heads of general or dot
                              scores takes the query form (attention.h,
                              attention_query_form): 0 never, 1 greedy only
                              (the CPU: at beam 5 the queries' projection
                              costs more than reading the keys once saves,
                              2-3% slower; greedy 18-23% faster with 4 heads),
                              2 greedy and beam search (CUDA; on the emulator,
                              64 sentences with 4 heads: 743 -> 612 host calls
                              greedy, 1134 -> 988 at beam 5).
                              NMT_DECODE_QUERY_FORM=0|1|2 sets it
                              (backend_select.h) */
    int decode_fold_lines; /* nmt translate folds the target embeddings into
                              the first decoder layer's input weights
                              (seq2seq_fold_embeddings, docs/decoding.md) once
                              it has this many input lines to decode (0:
                              never): making the table is a GEMM of V_t x 4H
                              x E, about 30 ms on 2 CPU cores for
                              configs/de-en.json, which a few hundred lines
                              repay: 256 on the CPU, 1 on CUDA.
                              NMT_DECODE_FOLD=0 (never) or 1 (from the first
                              line) sets it (backend_select.h) */

    /* ---- memory ---- */
    void *(*alloc)(Backend *be, size_t bytes); /* zeroed; NULL on failure */
    void (*release)(Backend *be, void *ptr);   /* NULL is a no-op */
    void (*upload)(Backend *be, void *dst, const void *host_src, size_t bytes);
    void (*download)(Backend *be, void *host_dst, const void *src, size_t bytes);
    /* A download in two halves. download_start queues a copy of `bytes`
     * from src to host_dst and returns at once; the host may queue more
     * work. download_finish completes the oldest started download that is
     * not finished yet: its host_dst holds the data from then on, not
     * before (and the host must not touch it meanwhile). At most
     * BACKEND_MAX_PENDING_DOWNLOADS are pending; neither may run between
     * fork and join. Work queued after a start may overwrite src. */
    void (*download_start)(Backend *be, void *host_dst, const void *src, size_t bytes);
    void (*download_finish)(Backend *be);
    void (*copy)(Backend *be, void *dst, const void *src, size_t bytes);
    void (*zero)(Backend *be, void *dst, size_t bytes);
    /* dst(r, 0..cols) (=) src(r, 0..cols) for r < rows, with leading
     * dimensions ld_dst, ld_src (in floats): copies a block of columns. */
    void (*copy_cols)(Backend *be, float *dst, int ld_dst, const float *src, int ld_src,
                      int rows, int cols);
    /* dst(r, 0..cols) += src(r, 0..cols) */
    void (*add_cols)(Backend *be, float *dst, int ld_dst, const float *src, int ld_src,
                     int rows, int cols);

    /* ---- dense algebra ---- */
    /* C (m, n) = alpha * op(A) op(B) + beta * C; op(A) is (m, k), op(B) (k, n);
     * trans_a: A is stored (k, m) and transposed. With beta 0, C's old values
     * are not read (as BLAS): NaN or -inf left in a reused buffer never
     * reaches the result. */
    void (*gemm)(Backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C,
                 int ldc);
    /* `count` independent gemms; matrix i starts at A + i*stride_a etc. */
    void (*gemm_batched)(Backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                         float alpha, const float *A, int lda, long stride_a, const float *B,
                         int ldb, long stride_b, float beta, float *C, int ldc, long stride_c,
                         int count);
    /* y (rows, cols) += bias (cols) broadcast over rows */
    void (*add_bias)(Backend *be, float *y, const float *bias, int rows, int cols);
    /* dbias (cols) += sum over rows of dy (rows, cols) */
    void (*bias_backward)(Backend *be, float *dbias, const float *dy, int rows, int cols);
    /* y = tanh(x), n elements (y may equal x) */
    void (*tanh_forward)(Backend *be, float *y, const float *x, size_t n);
    /* dx += dy * (1 - y^2) */
    void (*tanh_backward)(Backend *be, float *dx, const float *dy, const float *y, size_t n);
    /* y (=) x * mask, mask[i] 0 with probability p, else 1/(1-p); mask[i]
     * depends only on (seed, offset + i), so CPU and GPU draw the same masks
     * and a second call with the same (seed, offset) is the backward:
     * dx (=) dy * mask. y may be x (in place); else they do not overlap. */
    void (*dropout)(Backend *be, float *y, const float *x, size_t n, float p, uint64_t seed,
                    uint64_t offset);
    /* Word dropout: y (rows, cols) (=) x with row r times mask[r], where
     * mask[r] is dropout's mask element for word offset + r of the same
     * seed (0 with probability p, else 1/(1-p)): each row, a position's
     * whole embedding, is kept and scaled or zeroed. y may be x; the
     * backward is the same call on the gradients. */
    void (*dropout_rows)(Backend *be, float *y, const float *x, int rows, int cols, float p,
                         uint64_t seed, uint64_t offset);

    /* ---- LSTM cell, one step for B rows of size H ---- */
    /* z (B, 4H): in, pre-activations (inputs and recurrence summed, and the
     * bias unless it is given here); out, the activated gates i, f, g, o.
     * bias (4H): added to every row of z first; NULL when z has it already.
     * c_prev, h_prev (B, H). keep (B): 1 where the row is inside its
     * sequence, 0 where the state is carried (c = c_prev, h = h_prev).
     * c, h (B, H) (=). */
    void (*lstm_forward)(Backend *be, int B, int H, float *z, const float *bias,
                         const float *c_prev, const float *h_prev, float *c, float *h,
                         const float *keep);
    /* c_prev, c (B, H), keep (B) as in forward.
     * dh (B, H): gradient into h_t (all paths summed). dc (B, H): in, the
     * gradient into c_t from later steps; out, the gradient into c_{t-1}.
     * gz (B, 4H): in, the activated gates of the forward; out (in place,
     * like lstm_forward's z), dz, the gradient of the pre-activations (0 on
     * carried rows). dh_carry (B, H) (=): the part of dh that flows to
     * h_{t-1} directly on carried rows ((1 - keep) * dh); the caller adds
     * dz W_hh to it. */
    void (*lstm_backward)(Backend *be, int B, int H, float *gz, const float *c_prev,
                          const float *c, const float *keep, const float *dh, float *dc,
                          float *dh_carry);

    /* ---- LSTM recurrence over a whole sequence (the encoder's layers) ----
     * What one layer does after its input GEMM (model/lstm.h has the slot
     * layout): for each time t in order (reverse: T-1 down to 0),
     * z = gates[t] + h_prev W_hh^T, then lstm_forward(z, no bias, c_prev,
     * h_prev, c, h, keep[t]), the previous state being slot t (reverse:
     * t + 1) and the new one slot t + 1 (reverse: t).
     * W_hh (4H, H). gates (T, B, 4H): in, x W_ih^T + b; out, the activated
     * gates. h, c (T + 1, B, H): the start state in slot 0 (reverse: slot
     * T); the other slots (=). keep (T, B). The CPU runs it step by step
     * with the slots above; the CUDA backend may run it as one persistent
     * kernel (docs/gpu.md, "Persistent recurrence"). */
    void (*lstm_seq_recurrence)(Backend *be, int T, int B, int H, const float *W_hh,
                                float *gates, float *h, float *c, const float *keep,
                                bool reverse);
    /* Its backward, for each time in the opposite order:
     * dh[t] += dh_rec; lstm_backward(gates[t], c_prev, c, keep[t], dh[t],
     * dc, dh_rec); dh_rec += dz_t W_hh. gates: in, the activated gates; out,
     * dz. dh (T, B, H): in, the gradient into each output; changed (each
     * step's total). dc (B, H): in, the gradient into the cell of the last
     * state written (slot T, reverse: slot 0); out, into the start state's.
     * dh_rec (B, H) (=): the gradient into the start state's h. */
    void (*lstm_seq_recurrence_backward)(Backend *be, int T, int B, int H, const float *W_hh,
                                         float *gates, const float *c, const float *keep,
                                         bool reverse, float *dh, float *dc, float *dh_rec);

    /* ---- layer normalisation (model.layer_norm) ----
     * Each row r of x (rows, cols) normalised (kernels/layer_norm_math.h):
     * y[r, j] (=) gain[j] (x[r, j] - mean_r) rstd_r, or += when accumulate.
     * stats (rows, 2) (=) mean_r, rstd_r (NULL: not kept). y does not
     * overlap x. */
    void (*layer_norm_forward)(Backend *be, int rows, int cols, const float *x, const float *gain,
                               bool accumulate, float *y, float *stats);
    /* Its backward, with xhat = (x - mean) rstd from the forward's stats
     * and g = dy * gain: dgain (cols) += sum over rows of dy * xhat; dx
     * (rows, cols) (=) rstd (g - mean_j(g) - xhat mean_j(g xhat)). dx may
     * be x (in place: dgain reads x first); dy overlaps neither. */
    void (*layer_norm_backward)(Backend *be, int rows, int cols, const float *x, const float *stats,
                                const float *gain, const float *dy, float *dx, float *dgain);

    /* ---- embeddings ---- */
    /* out (N, E) (=) table[ids[i]] */
    void (*embedding_forward)(Backend *be, float *out, const float *table, const int32_t *ids,
                              int N, int E);
    /* dtable[ids[i]] += dout (N, E) row i */
    void (*embedding_backward)(Backend *be, float *dtable, const float *dout,
                               const int32_t *ids, int N, int E);

    /* ---- attention ---- */
    /* Additive score for one head: scores (B, S) (=) where
     * scores[b, s] = v . tanh(kproj[s, b] + qproj[b]); kproj (S, B, A)
     * (time-major), qproj (B, A), v (A). */
    void (*additive_score_forward)(Backend *be, int B, int S, int A, const float *kproj,
                                   const float *qproj, const float *v, float *scores);
    /* dscores (B, S) in; dkproj (S, B, A) +=, dqproj (B, A) +=, dv (A) += */
    void (*additive_score_backward)(Backend *be, int B, int S, int A, const float *kproj,
                                    const float *qproj, const float *v, const float *dscores,
                                    float *dkproj, float *dqproj, float *dv);
    /* Masked softmax over source positions, row b of scores (B, S) at the
     * allowed positions: s < src_len[b] and, when window > 0,
     * |s - center[b]| <= window (center may be fractional). probs (B, S) (=)
     * the softmax (0 outside); weights (B, S) (=) probs times
     * exp(-(s - center)^2 / (2 sigma^2)) when gaussian, else probs.
     * center is NULL when window == 0. */
    void (*attn_softmax_forward)(Backend *be, int B, int S, const float *scores,
                                 const int32_t *src_len, const float *center, int window,
                                 bool gaussian, float sigma, float *probs, float *weights);
    /* dweights (B, S) in; dscores (B, S) (=); dcenter (B) (=) the gradient
     * through the Gaussian (only when gaussian; may be NULL otherwise). */
    void (*attn_softmax_backward)(Backend *be, int B, int S, const float *probs,
                                  const float *weights, const int32_t *src_len,
                                  const float *center, int window, bool gaussian, float sigma,
                                  const float *dweights, float *dscores, float *dcenter);
    /* local-p centre: p[b] (=) src_len[b] * sigmoid(u[b]) */
    void (*local_p_forward)(Backend *be, int B, const float *u, const int32_t *src_len,
                            float *p);
    /* du[b] += dp[b] * src_len[b] * s (1 - s), s = sigmoid(u[b]) */
    void (*local_p_backward)(Backend *be, int B, const float *u, const int32_t *src_len,
                             const float *dp, float *du);

    /* Guided alignment (kernels/align_math.h): for each of the T*B decoder
     * rows r = t*B + b, a_s = the mean over n heads of the attention of
     * step t, head j's row b at att + t*step_stride + (j*B + b)*S, against
     * the target distribution q = align row r (T*B, S; each row sums to 1
     * or is all 0). loss_rows[r] (=) weight * the cost's row loss (sums in
     * double); align row r (=) weight * scale * d(row loss)/d(att_j row):
     * the gradient for every head's attention, in place of q. A row whose
     * q is all 0 gets 0s. cost: ALIGN_COST_CE or ALIGN_COST_MSE. */
    void (*guided_align)(Backend *be, int T, int B, int S, int n, const float *att, size_t step_stride,
                         int cost, float weight, float scale, float *align, float *loss_rows);

    /* ---- output layer and loss ---- */
    /* logits (N, V) and targets (N): for rows with targets != pad_id,
     * p = softmax(logits), loss_rows[r] (=) (1-eps)(-log p[y]) + eps mean_v(-log p[v]),
     * nll_rows[r] (=) -log p[y], dlogits (=) scale * (p - q) with q the
     * smoothed target distribution; rows with the pad target give 0s.
     * dlogits may alias logits (in place), or be NULL (loss only). */
    void (*softmax_xent)(Backend *be, int N, int V, const float *logits, const int32_t *targets,
                         int pad_id, float eps, float scale, float *loss_rows, float *nll_rows,
                         float *dlogits);
    /* log-softmax of each row (decoding): out (N, V) (=), may alias logits */
    void (*log_softmax)(Backend *be, int N, int V, const float *logits, float *out);

    /* ---- optimizer ---- */
    /* sum of x[i]^2 in double precision, returned to the host */
    double (*sum_squares)(Backend *be, const float *x, size_t n);
    /* x *= s */
    void (*scale)(Backend *be, float *x, size_t n, float s);
    /* Adam (Kingma & Ba) with bias correction at step t (1-based):
     * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     * w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) */
    void (*adam_update)(Backend *be, float *w, const float *g, float *m, float *v, size_t n,
                        float lr, float beta1, float beta2, float eps, int t);
    /* w -= lr * g */
    void (*sgd_update)(Backend *be, float *w, const float *g, size_t n, float lr);
    /* The weights' exponential moving average (train.ema_decay):
     * avg = decay avg + (1 - decay) w, as avg += (1 - decay) (w - avg) */
    void (*ema_update)(Backend *be, float *avg, const float *w, size_t n, float decay);

    /* ---- decoding ---- */
    /* For each of `rows` rows of the scores s = x + bias (x (rows, cols),
     * bias (cols) or NULL: s = x), or of log_softmax(s) when `logprobs`:
     * the k largest values (rows, k) and their column indices (rows, k), in
     * decreasing order (ties: lower index first; NaN below every number;
     * past the row's end -inf and -1). x is not written. The values are
     * those of add_bias, then log_softmax, then the top-k of the result:
     * one pass instead of three over the decoder's (rows, vocabulary). */
    void (*topk)(Backend *be, const float *x, const float *bias, int rows, int cols,
                 bool logprobs, int k, float *values, int32_t *indices);

    /* ---- lanes: two runs of work that may overlap ----
     * fork: the work queued after it may run on two lanes, both starting
     * after everything queued before; lane 1 is selected. lane(be, k)
     * selects lane k (0 or 1) for the work that follows. join: lane 0
     * waits for all work queued on lane 1 and is selected. Between fork and
     * join neither lane may touch memory that the other writes, and no slot
     * that waits for the device (download, sum_squares, alloc, release) may
     * run. The CPU runs the work in call order (the three are no-ops); the
     * CUDA backend gives lane 1 a second stream (docs/gpu.md, "Lanes"). */
    void (*fork)(Backend *be);
    void (*lane)(Backend *be, int lane);
    void (*join)(Backend *be);

    void (*destroy)(Backend *be); /* frees the context and the Backend */
};

/* The CPU backend (OpenBLAS + OpenMP). threads <= 0: all cores. */
Backend *cpu_backend_create(int threads);

#endif
