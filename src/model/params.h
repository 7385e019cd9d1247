/* params.h: the model's sizes (ModelDims, derived from the config and the
 * vocabularies) and its parameters: ONE function (param_layout_build) lists
 * every parameter tensor in the order of docs/model.md, with its name, shape
 * and initialiser. That list gives the flat layout shared by weights,
 * gradients and optimizer moments, the checkpoint names, the gradient-check
 * list and the fixture names. */
#ifndef NMT_MODEL_PARAMS_H
#define NMT_MODEL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include "common.h"
#include "config.h"

/* parameters: at most 5 per LSTM (weights, bias, two layer-norm gains),
 * 2 * MODEL_MAX_LAYERS + 1 LSTMs, and fewer than 32 others */
enum { MODEL_MAX_LAYERS = 64, MODEL_MAX_PARAMS = 5 * (2 * MODEL_MAX_LAYERS + 1) + 32 };

typedef struct {
    int V_s, V_t;   /* vocabulary sizes */
    int E, H, K;    /* embedding, decoder/query size, encoder output/key size */
    int D_e;        /* one direction of encoder layer 0: K/2 if bidirectional, else K */
    int L_e, L_d;   /* layers */
    int heads, A;   /* attention heads; additive size (= H) */
    int dh;         /* per-head projection size for dot scores with heads > 1 (H / heads) */
    int window;
    int style, score, mode; /* AttnStyle, AttnScore (resolved), AttnMode */
    bool bidirectional, input_feed, tie_embeddings, bridge_learned;
    bool share_embeddings; /* src_emb is tgt_emb (V_s == V_t, one tokenizer) */
    bool residual;  /* layers above the first add their input to their output */
    bool layer_norm; /* every LSTM normalises its input and recurrent products (lstm.h) */
    float dropout, attn_dropout;
    float word_dropout_src, word_dropout_tgt; /* a position's whole embedding, in training */
    float label_smoothing; /* train.label_smoothing */
    int dec_in;     /* input size of decoder layer 0 */
    int wc_in;      /* input size of out_Wc */
} ModelDims;

/* Fills dims from a loaded config and the vocabulary sizes. Errors
 * (NMT_ERR_CONFIG) name the key, e.g. heads that do not divide hidden. */
NmtStatus model_dims_from_config(const Config *cfg, int src_vocab, int tgt_vocab, ModelDims *d);
/* train.guided_alignment_cost as the loss's ALIGN_COST_CE or _MSE
 * (kernels/align_math.h), for seq2seq_set_guided_alignment. */
int model_align_cost_from_config(const Config *cfg);

typedef enum {
    INIT_UNIFORM,    /* uniform(-init_range, init_range) */
    INIT_ZERO,
    INIT_LSTM_BIAS,  /* 0, forget-gate quarter 1 */
    INIT_ORTHOGONAL, /* each (rows, cols) matrix orthogonal rows/cols */
    INIT_SMALL,      /* uniform(-0.01, 0.01) */
    INIT_ONE         /* 1 (layer-norm gains) */
} ParamInit;

typedef struct {
    char name[32];
    int count, rows, cols; /* shape (count, rows, cols); count 1 for a matrix, rows 1 for a vector */
    size_t offset;         /* in floats, into the flat block */
    size_t size;           /* count * rows * cols */
    ParamInit init;
} ParamInfo;

/* Indices into ParamLayout.info; -1 when the model has no such parameter. */
typedef struct {
    int W_ih, W_hh, b;
    int ln_ih, ln_hh; /* model.layer_norm: the gains of the input and recurrent products (4H) */
} LstmParamIndex;

typedef struct {
    int src_emb, tgt_emb;
    LstmParamIndex enc_fwd[MODEL_MAX_LAYERS], enc0_bwd;
    LstmParamIndex dec[MODEL_MAX_LAYERS];
    int bridge_h_W, bridge_h_b, bridge_c_W, bridge_c_b;
    int attn_Wq, attn_Wk, attn_Wa, attn_W1, attn_W2, attn_v, attn_Wo, attn_Wp, attn_vp;
    int out_Wc, out_W, out_b;
} ParamIndex;

typedef struct {
    int n;
    ParamInfo info[MODEL_MAX_PARAMS];
    size_t total; /* floats */
    ParamIndex idx;
} ParamLayout;

void param_layout_build(const ModelDims *d, ParamLayout *layout);
/* Index of the parameter called `name`, or -1. */
int param_layout_find(const ParamLayout *layout, const char *name);
/* Writes the initial weights (host memory, layout->total floats) from seed. */
void param_init_host(const ParamLayout *layout, float init_range, uint64_t seed, float *host);

#endif
