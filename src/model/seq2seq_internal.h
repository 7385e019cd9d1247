/* seq2seq_internal.h: what the four files of the Seq2Seq model share and
 * nothing outside them sees: the activations (Layer, Acts), struct Seq2Seq,
 * the small helpers that locate weights and per-step buffers, the dropout
 * streams, and the functions one file calls in another.
 *   seq2seq.c          the arena layout (carve), creation, initialisation
 *   seq2seq_forward.c  the forward pass of a batch, loss, attention statistics
 *   seq2seq_backward.c its backward pass
 *   seq2seq_decode.c   step-by-step decoding (decode_step.h), the fold, the shortlist
 * Letters: B sentences, S source and T target positions, E embedding, H
 * decoder, K key (encoder output) size, D_e one direction of encoder layer
 * 0, V_t target vocabulary. */
#ifndef NMT_MODEL_SEQ2SEQ_INTERNAL_H
#define NMT_MODEL_SEQ2SEQ_INTERNAL_H

#include "data/rng.h"
#include "model/seq2seq.h"

typedef struct {
    LstmCache cache;
    float *x;    /* (len, B, in) the layer's input sequence (after dropout) */
    float *dx;   /* (len, B, in) gradient of x */
    float *dc, *dh_rec; /* (B, size) */
    /* model.residual, layers above the first: the layer's output, its
     * states h plus the output of the layer below (the recurrence reads h,
     * the layer above and attention read out). Encoder: (S, B, K), output
     * of time s at s. Decoder: laid out as cache.h (slots, ring and phase
     * with it): slot t + 1 is step t's output, slot 0 the start state h_0.
     * NULL without a residual connection: the output is h itself. */
    float *out;
    LstmWeights w;
} Layer;

/* Everything carved from the arena for one batch. */
typedef struct {
    /* inputs */
    int32_t *src, *tgt_in, *tgt_out, *src_len; /* (S*B), (T*B), (T*B), (B) */
    float *keep_src;                           /* (S, B) */
    float *centers;                            /* (T, B) local-m */
    /* encoder */
    Layer enc[MODEL_MAX_LAYERS], enc_bwd;
    float *e0;           /* (S, B, K) layer-0 output (directions concatenated) */
    float *keys;         /* (S, B, K) top output */
    /* bridge */
    float *hfin, *cfin;  /* (B, K) */
    float *h0all, *c0all; /* (B, L_d H) */
    /* decoder */
    float *w;            /* (T, B, E) target embeddings, after dropout */
    Layer dec[MODEL_MAX_LAYERS];
    AttnBatch ab;
    AttnStep steps_base; /* step t's buffers: base + t * stride (see step()) */
    float *cat_all;      /* (T, B, n K) every step's head contexts (n > 1: dWo reads
                            them at once); AttnStep.cat of step t is row block t */
    float *wcin;         /* (T, B, wc_in) */
    float *hh;           /* (T, B, H) attentional vectors */
    float *hd;           /* (T, B, H) after dropout */
    float *logits;       /* (C, V_t) one chunk of output rows (output_chunk_rows),
                            or (R, V_t) when decoding step by step */
    float *best;         /* (2 R k), k = max(G, lim.max_sample_k) decoding: the k best scores of each row (R, k),
                            then their token ids (int32, R, k): one download */
    int32_t *row_len;    /* (R) source length of each decoder row (== src_len when G == 1) */
    int32_t *row_sent;   /* (R) sentence of each decoder row (beam search) */
    int32_t *parent;     /* (R) beam search: the row each new row continues */
    float *gather_tmp;   /* (R, max(L_d H, H)) */
    int32_t *compact_idx; /* (heads S B) decoding: gather indices that drop finished sentences */
    float *compact_tmp;  /* (max(S B K, heads S B qdim)) their scratch */
    float *loss_rows, *nll_rows, *align_rows; /* (T*B) each, one block: the guided
                                                  alignment's rows follow the NLL rows */
    /* gradients and scratch (zeroed at the start of backward) */
    char *grad_begin, *grad_end;
    float *dE[MODEL_MAX_LAYERS]; /* (S, B, K) gradient of encoder layer outputs */
    float *dh_f, *dh_b;  /* (S, B, D_e) */
    float *dcf_f, *dcf_b; /* (B, D_e) */
    float *dkeys;        /* (S, B, K) */
    float *dhh;          /* (T, B, H) gradient of hd, from the training forward */
    float *dwcin;        /* (B, wc_in) the gradient of W_c's input, or (T, B, wc_in)
                            with several heads (dWo reads every step's context
                            gradient at once); dwcin_at */
    float *dpre;         /* (T, B, H) gradient of hh's pre-activation, every step
                            (one dW_c GEMM after the steps) */
    float *dh_top;       /* (B, H) */
    float *dh_tmp;       /* (B, H) */
    float *dres;         /* (B, H) model.residual: the gradient into a decoder layer's
                            output, which passes on to the layer below as it is */
    float *dq_carry;     /* (B, H) bahdanau: query gradient for the previous step */
    float *dw;           /* (T, B, E) */
    float *dh0all, *dc0all, *dpre_bridge; /* (B, L_d H) */
    float *dhfin, *dcfin; /* (B, K) */
    AttnScratch as;
} Acts;

struct Seq2Seq {
    Backend *be;
    ModelDims d;
    ParamLayout layout;
    ModelLimits lim;
    float *params, *grads;
    char *arena;
    size_t arena_bytes;
    float *zeros;   /* (max_B * max(H, K, E)) zeros */
    float *ones;    /* (max_B) ones: decoder keep */
    float *neg_inf; /* (1) -infinity: dec_bias's PAD and BOS */
    float *dec_bias; /* (V_t) the output bias with -infinity at PAD and BOS: decoding
                        adds it, so those two are never output (seq2seq_decode_setup) */
    /* host staging */
    int32_t *h_ids;
    float *h_f;
    int32_t *h_idx;   /* (heads * max_S * max_B) gather indices */
    /* decoding */
    int *dec_len;     /* (max_B) source length of each sentence still decoded */
    int64_t decode_rows; /* decoder row-steps computed since seq2seq_decode_setup */
    int decode_steps;    /* decoder steps since seq2seq_decode_setup */
    float *h_best;       /* (2, h_best_slot) host copies of Acts.best, a slot per
                            pending seq2seq_decode_topk_start */
    size_t h_best_slot;  /* floats per slot: 2 max_B beam^2 */
    int best_k, best_rows; /* what the last topk queued leaves in Acts.best:
                              k best of best_rows rows (0: nothing) */
    int best_slot;       /* the h_best slot of the last topk queued */
    const float *step_bias; /* the last step's output bias not yet in Acts.logits
                               (NULL: the logits are the step's scores) */
    bool step_logprobs;  /* the last step's scores are log-probabilities */
    float *emb_proj;     /* (V_t, 4H) tgt_emb W_ih[:, :E]^T of decoder layer 0: every
                            target token's input product (seq2seq_fold_embeddings) */
    bool emb_proj_fresh; /* emb_proj is of the current weights (a training step clears it) */
    int ring_phase;      /* decoding: the per-step buffers' ring turned by reorders (ds) */
    struct {
        int slot, k, rows;
    } topk_queue[BACKEND_MAX_PENDING_DOWNLOADS]; /* topk queued, not finished */
    int topk_head, topk_n;
    int sl_n;         /* output shortlist size; 0: the whole vocabulary */
    int32_t *sl_ids, *sl_host; /* (V_t) shortlisted ids, on the backend and on the host */
    float *sl_W, *sl_b; /* (V_t, H), (V_t): their output-layer rows */
    /* current batch */
    int B, S, T;
    bool train;
    bool stepwise; /* decoding: one step's logits at a time */
    int G;         /* decoder rows per sentence: 1, or the beam size */
    uint64_t seed;
    int64_t n_tokens;
    int64_t grad_tokens; /* seq2seq_set_grad_tokens: gradient divisor, 0: n_tokens */
    /* guided alignment (seq2seq_set_guided_alignment) */
    float *align;        /* (max_T max_B max_S) the batch's alignment rows, then the
                            guided loss's gradient of each step's attention; NULL: off */
    int align_cost;
    float align_weight;  /* 0: off */
    bool align_active;   /* the last training forward added the guided loss */
    size_t step_stride; /* floats between step t and t+1 in the step arrays */
    Acts a;
};

/* Step-by-step decoding needs only step t - 1's outputs at step t. */
#define DECODE_RING 2

/* The output layer runs over the batch's T*B rows in chunks of at most
 * this many logits (unless ModelLimits.output_chunk says otherwise): a
 * whole batch's logits would be the largest activation by far (64
 * sentences x 80 positions x 32000 words = 655 MB), a chunk's stay at
 * 16 MB, and the training forward turns each chunk into its gradient
 * contributions at once (output_layer). */
#define OUTPUT_CHUNK_FLOATS ((size_t)4 << 20)

/* Rows of the output layer computed at once out of `rows`. */
static inline int output_chunk_rows(const Seq2Seq *m, int rows) {
    size_t floats = m->lim.output_chunk ? m->lim.output_chunk : OUTPUT_CHUNK_FLOATS;
    size_t fit = floats / (size_t)m->d.V_t;
    if (fit < 1) fit = 1;
    return (size_t)rows < fit ? rows : (int)fit;
}

/* Where step t's per-step buffers live: slot t, or (t + ring_phase) %
 * DECODE_RING while decoding step by step (the storage index; t itself
 * still gives the position, e.g. local-m's centre). */
static inline size_t ds(const Seq2Seq *m, int t) {
    return m->stepwise ? ((size_t)t + (size_t)m->ring_phase) % DECODE_RING : (size_t)t;
}

/* a parameter's block (P) or its gradient's (G) by ParamLayout index; NULL for -1 */
static inline float *P(const Seq2Seq *m, int idx) {
    return idx < 0 ? NULL : m->params + m->layout.info[idx].offset;
}
static inline float *G(const Seq2Seq *m, int idx) {
    return idx < 0 ? NULL : m->grads + m->layout.info[idx].offset;
}

static inline bool dropping(const Seq2Seq *m) { return m->train && m->d.dropout > 0; }
static inline bool attn_dropping(const Seq2Seq *m) { return m->train && m->d.attn_dropout > 0; }

/* Dropout stream ids: every masked tensor draws from its own stream. */
enum { DROP_SRC_EMB = 1, DROP_TGT_EMB, DROP_HD, DROP_ENC_LAYER, DROP_DEC_LAYER = DROP_ENC_LAYER + MODEL_MAX_LAYERS,
       DROP_ATTN = DROP_DEC_LAYER + MODEL_MAX_LAYERS, DROP_SRC_WORDS, DROP_TGT_WORDS };

static inline uint64_t drop_seed(const Seq2Seq *m, int stream) {
    return rng_mix64(m->seed * 0x9E3779B97F4A7C15ull + (uint64_t)stream);
}

/* Where step t's attention weights start in the DROP_ATTN stream: one
 * (heads, rows, S) block per step. */
static inline uint64_t attn_drop_offset(const Seq2Seq *m, int t) {
    return (uint64_t)t * m->d.heads * m->B * m->G * m->S;
}

/* y = dropout(x) with the mask of `stream` from element `offset` on (a
 * copy when not dropping; y may be x). The backward is the same call on
 * the gradients: the same mask is drawn again. */
static inline void apply_dropout(Seq2Seq *m, float *y, const float *x, size_t n, int stream, uint64_t offset) {
    Backend *be = m->be;
    if (dropping(m)) be->dropout(be, y, x, n, m->d.dropout, drop_seed(m, stream), offset);
    else if (y != x) be->copy(be, y, x, n * sizeof(float));
}

/* Word dropout on x (rows, cols), rows = positions: each row kept and
 * scaled, or zeroed, with probability p (model.word_dropout_src/_tgt), in
 * training; the backward is the same call on the gradients. */
static inline void apply_word_dropout(Seq2Seq *m, float *x, int rows, int cols, float p, int stream) {
    if (m->train && p > 0) m->be->dropout_rows(m->be, x, x, rows, cols, p, drop_seed(m, stream), 0);
}

/* Layer l has a residual connection (model.residual: every layer above
 * the first, encoder and decoder; their input and output sizes agree). */
static inline bool residual_layer(const Seq2Seq *m, int l) { return m->d.residual && l > 0; }

/* An encoder layer's output (S, B, K) for a batch of B sentences, layer 0
 * of a bidirectional encoder excepted (a->e0): its residual output, or its
 * states h from slot 1 on. */
static inline float *enc_layer_output(const Layer *L, int B, int K) {
    return L->out ? L->out : L->cache.h + (size_t)B * K;
}

/* A decoder layer's outputs, laid out as its state slots cache.h: its
 * residual output, or the states h themselves. */
static inline float *dec_layer_outputs(const Layer *L) { return L->out ? L->out : L->cache.h; }

/* Decoder layer l's output at slot `s` (R, H) (slot t + 1: step t's): its
 * state h, or with a residual connection h plus the output below. */
static inline float *dec_output(const Seq2Seq *m, int l, int s) {
    const Layer *L = &m->a.dec[l];
    return dec_layer_outputs(L) + lstm_slot(&L->cache, (size_t)s) * m->B * m->G * m->d.H;
}

/* Top decoder output at slot `s` (slot t + 1 is the output of step t;
 * slot 0 the start state h_0^top). */
static inline float *dec_top(const Seq2Seq *m, int s) { return dec_output(m, m->d.L_d - 1, s); }

/* The attentional vector hh_t of step t (R, H): its own buffer, or the top
 * decoder state itself without attention. */
static inline float *hh_at(const Seq2Seq *m, int t) {
    if (m->d.style == ATTN_STYLE_NONE) return dec_top(m, t + 1);
    return m->a.hh + ds(m, t) * m->B * m->G * m->d.H;
}

static inline const float *out_W(const Seq2Seq *m) {
    return m->d.tie_embeddings ? P(m, m->layout.idx.tgt_emb) : P(m, m->layout.idx.out_W);
}
static inline float *out_dW(const Seq2Seq *m) {
    return m->d.tie_embeddings ? G(m, m->layout.idx.tgt_emb) : G(m, m->layout.idx.out_W);
}

/* seq2seq.c: lays out every buffer of a batch of (B, S, T) in the arena
 * (for m->train, m->stepwise and m->G as set) */
void seq2seq_carve_batch(Seq2Seq *m, int B, int S, int T);
/* seq2seq.c: step t's attention buffers */
AttnStep seq2seq_step_buffers(const Seq2Seq *m, int t);

/* seq2seq_forward.c: the parts of the forward pass that decoding runs too */
void seq2seq_upload_source(Seq2Seq *m, const Batch *batch);
void seq2seq_encoder_forward(Seq2Seq *m);
void seq2seq_bridge_forward(Seq2Seq *m);
void seq2seq_decoder_step(Seq2Seq *m, const AttnWeights *aw, int t, const int32_t *folded);

#endif
