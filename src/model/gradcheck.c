/* gradcheck.c: whole-model gradient check by central differences
 * (gradcheck.h). */
#include "model/gradcheck.h"

#include <math.h>
#include <string.h>

#include "data/rng.h"
#include "model/seq2seq.h"

void gradcheck_spec_default(GradcheckSpec *spec) {
    spec->samples_per_param = 24;
    spec->h = 1e-2f;
    spec->atol = 2e-4;
    spec->rtol = 3e-2;
    spec->init_range = 1.0f;
    spec->seed = 7;
    spec->output_chunk = 0;
    spec->align_weight = 0.0f;
    spec->align_cost = 0;
}

enum { GC_MAX_B = 16, GC_MAX_S = 64, GC_MAX_T = 64 };
static int32_t gc_src[GC_MAX_S * GC_MAX_B], gc_tgt_in[GC_MAX_T * GC_MAX_B], gc_tgt_out[GC_MAX_T * GC_MAX_B];
static int gc_src_len[GC_MAX_B], gc_tgt_len[GC_MAX_B];
static int64_t gc_pair[GC_MAX_B];
static float gc_align[GC_MAX_T * GC_MAX_B * GC_MAX_S];

void gradcheck_make_batch(int B, int S, int T, int V_s, int V_t, uint64_t seed, Batch *batch) {
    NMT_ASSERT(B <= GC_MAX_B && S <= GC_MAX_S && T <= GC_MAX_T && T >= 2 && S >= 1);
    Rng rng;
    rng_seed(&rng, seed, 77);
    memset(gc_src, 0, sizeof gc_src);
    memset(gc_tgt_in, 0, sizeof gc_tgt_in);
    memset(gc_tgt_out, 0, sizeof gc_tgt_out);
    for (int b = 0; b < B; b++) {
        /* the first sentence is full length, the others shorter: padding on both sides */
        int ls = b == 0 ? S : 1 + (int)rng_below(&rng, (uint32_t)S);
        int lt = b == 0 ? T - 1 : 1 + (int)rng_below(&rng, (uint32_t)(T - 1));
        gc_src_len[b] = ls;
        gc_tgt_len[b] = lt + 1;
        gc_pair[b] = b;
        for (int s = 0; s < ls; s++) gc_src[s * B + b] = NMT_N_SPECIAL + (int)rng_below(&rng, (uint32_t)(V_s - NMT_N_SPECIAL));
        gc_tgt_in[b] = NMT_BOS_ID;
        for (int t = 0; t < lt; t++) {
            int id = NMT_N_SPECIAL + (int)rng_below(&rng, (uint32_t)(V_t - NMT_N_SPECIAL));
            gc_tgt_out[t * B + b] = id;
            gc_tgt_in[(t + 1) * B + b] = id;
        }
        gc_tgt_out[lt * B + b] = NMT_EOS_ID;
    }
    /* alignment rows (T, B, S): a target token has 0 (one in four), 1 or 2
     * aligned source tokens, an equal share each; EOS and padding none */
    memset(gc_align, 0, sizeof gc_align);
    for (int b = 0; b < B; b++)
        for (int t = 0; t + 1 < gc_tgt_len[b]; t++) {
            int links = (int)rng_below(&rng, 4);
            if (links == 0) continue;
            links = links == 3 ? 2 : 1;
            float *row = gc_align + ((size_t)t * B + b) * S;
            for (int k = 0; k < links; k++) row[rng_below(&rng, (uint32_t)gc_src_len[b])] = 1.0f;
            int count = 0;
            for (int s = 0; s < S; s++) count += row[s] != 0.0f;
            for (int s = 0; s < S; s++) row[s] /= (float)count;
        }
    batch->B = B;
    batch->S = S;
    batch->T = T;
    batch->src = gc_src;
    batch->src_len = gc_src_len;
    batch->tgt_in = gc_tgt_in;
    batch->tgt_out = gc_tgt_out;
    batch->tgt_len = gc_tgt_len;
    batch->pair_index = gc_pair;
    batch->align = gc_align;
    batch->n_src_tokens = batch->n_tgt_tokens = 0;
    for (int b = 0; b < B; b++) {
        batch->n_src_tokens += gc_src_len[b];
        batch->n_tgt_tokens += gc_tgt_len[b];
    }
}

static double loss_at(Seq2Seq *m, const Batch *batch, uint64_t seed) {
    ModelLoss l;
    seq2seq_forward(m, batch, true, seed, &l);
    return l.loss;
}

NmtStatus model_gradcheck(Backend *be, const ModelDims *dims, const Batch *batch,
                          const GradcheckSpec *spec, GradcheckResult *r) {
    memset(r, 0, sizeof *r);
    ModelLimits lim = {batch->B, batch->S, batch->T, 0, 0, spec->output_chunk, 0};
    Seq2Seq *m;
    NmtStatus st = seq2seq_create(be, dims, lim, &m);
    if (!st && spec->align_weight > 0) st = seq2seq_set_guided_alignment(m, spec->align_cost, spec->align_weight);
    if (st) {
        seq2seq_free(m);
        return st;
    }
    const ParamLayout *layout = seq2seq_layout(m);
    size_t n = layout->total;
    float *w = nmt_malloc(n * sizeof(float)), *g = nmt_malloc(n * sizeof(float));
    if (!w || !g) {
        nmt_free(w);
        nmt_free(g);
        seq2seq_free(m);
        return nmt_fail_nomem("checking gradients");
    }
    Rng rng;
    rng_seed(&rng, spec->seed, 11);
    for (size_t i = 0; i < n; i++) w[i] = (2 * rng_uniform(&rng) - 1) * spec->init_range;
    float *params = seq2seq_params(m);
    be->upload(be, params, w, n * sizeof(float));
    uint64_t drop_seed = spec->seed * 31 + 1;
    seq2seq_zero_grads(m);
    ModelLoss loss;
    seq2seq_forward(m, batch, true, drop_seed, &loss);
    seq2seq_backward(m);
    be->download(be, g, seq2seq_grads(m), n * sizeof(float));
    r->loss = loss.loss;
    float h = spec->h;
    for (int p = 0; p < layout->n; p++) {
        const ParamInfo *info = &layout->info[p];
        int samples = spec->samples_per_param < (int)info->size ? spec->samples_per_param : (int)info->size;
        for (int k = 0; k < samples; k++) {
            size_t i = samples == (int)info->size ? (size_t)k : rng_below64(&rng, info->size);
            size_t at = info->offset + i;
            float orig = w[at], v;
            double f[4];
            const float steps[4] = {h, -h, h / 2, -h / 2};
            for (int s = 0; s < 4; s++) {
                v = orig + steps[s];
                be->upload(be, params + at, &v, sizeof v);
                f[s] = loss_at(m, batch, drop_seed);
            }
            be->upload(be, params + at, &orig, sizeof orig);
            double n1 = (f[0] - f[1]) / (2.0 * h), n2 = (f[2] - f[3]) / (double)h;
            double scale_n = fmax(fabs(n1), fabs(n2));
            if (fabs(n1 - n2) > 0.05 * scale_n + spec->atol) {
                r->skipped++; /* not smooth here, or too noisy to judge */
                continue;
            }
            double num = (4 * n2 - n1) / 3, ana = g[at];
            double excess = fabs(ana - num) / (spec->atol + spec->rtol * fmax(fabs(ana), fabs(num)));
            r->checked++;
            if (excess > 1) r->failed++;
            if (excess > r->worst_excess) {
                r->worst_excess = excess;
                snprintf(r->worst_name, sizeof r->worst_name, "%s", info->name);
                r->worst_index = i;
                r->worst_analytic = ana;
                r->worst_numeric = num;
            }
        }
    }
    nmt_free(w);
    nmt_free(g);
    seq2seq_free(m);
    return NMT_OK;
}
