/* gradcheck.h: compares the hand-written gradients of the whole model with
 * central differences of the loss, parameter by parameter. Used by the
 * test suite (every attention combination) and by `nmt gradcheck`.
 *
 * For each sampled coordinate w: n1 = (L(w+h) - L(w-h)) / 2h and
 * n2 = (L(w+h/2) - L(w-h/2)) / h; when the two disagree the loss is not
 * smooth there (a local-p window edge) or too noisy, and the coordinate is
 * skipped (and counted); else the Richardson estimate (4 n2 - n1) / 3 is
 * compared with the analytic value: |a - n| <= atol + rtol * max(|a|, |n|). */
#ifndef NMT_MODEL_GRADCHECK_H
#define NMT_MODEL_GRADCHECK_H

#include "backend.h"
#include "data/batch.h"
#include "model/params.h"

typedef struct {
    int samples_per_param; /* coordinates checked per parameter tensor (all if fewer) */
    float h;               /* step */
    double atol, rtol;
    float init_range;      /* weights (biases too) drawn uniform in +-init_range */
    uint64_t seed;         /* weights, sampled coordinates and dropout masks */
    size_t output_chunk;   /* ModelLimits.output_chunk (0: the default) */
    float align_weight;    /* guided alignment (seq2seq_set_guided_alignment) against the
                              batch's Batch.align; 0: none */
    int align_cost;        /* ALIGN_COST_CE or ALIGN_COST_MSE */
} GradcheckSpec;

typedef struct {
    int checked, skipped, failed;
    double worst_excess;   /* largest |a - n| / (atol + rtol max(|a|, |n|)) */
    char worst_name[32];
    size_t worst_index;
    double worst_analytic, worst_numeric;
    double loss;
} GradcheckResult;

void gradcheck_spec_default(GradcheckSpec *spec);
/* Runs the check for a model of `dims` on `batch`. */
NmtStatus model_gradcheck(Backend *be, const ModelDims *dims, const Batch *batch,
                          const GradcheckSpec *spec, GradcheckResult *result);

/* A small random batch with padding on both sides (B sentences, source
 * lengths up to S, target lengths up to T - 1 plus EOS), ids below the
 * vocabulary sizes, and a random alignment (Batch.align: most target
 * tokens aligned to one or two source tokens, some to none). Arrays are static storage of this module: one batch at
 * a time. */
void gradcheck_make_batch(int B, int S, int T, int V_s, int V_t, uint64_t seed, Batch *batch);

#endif
