/* optimizer.c: Adam/SGD updates, warmup and the rate schedule, clipping (optimizer.h). */
#include "train/optimizer.h"

#include <math.h>

LrSchedule lr_schedule_of(const TrainConfig *tc) {
    LrSchedule s = {tc->lr, tc->warmup_steps, tc->lr_schedule,
                    tc->rsqrt_steps > 0 ? tc->rsqrt_steps : tc->warmup_steps};
    /* config validation refuses rsqrt with both 0 */
    NMT_ASSERT(s.schedule != CFG_LR_RSQRT || s.rsqrt_steps > 0);
    return s;
}

double lr_schedule_rate(const LrSchedule *s, int64_t t, double lr_scale) {
    double warm = s->warmup > 0 && t < s->warmup ? (double)t / s->warmup : 1.0;
    double rate = s->lr * lr_scale * warm;
    if (s->schedule == CFG_LR_RSQRT && t > s->rsqrt_steps) rate *= sqrt((double)s->rsqrt_steps / (double)t);
    return rate;
}

NmtStatus optimizer_create(Backend *be, const TrainConfig *tc, size_t n, Optimizer **out) {
    *out = NULL;
    Optimizer *o = nmt_calloc(1, sizeof *o);
    if (!o) return nmt_fail_nomem("creating the optimizer");
    o->be = be;
    o->kind = tc->optimizer;
    o->n = n;
    o->sched = lr_schedule_of(tc);
    o->beta1 = (float)tc->adam_beta1;
    o->beta2 = (float)tc->adam_beta2;
    o->eps = (float)tc->adam_eps;
    o->clip_norm = tc->clip_norm;
    if (o->kind == CFG_OPT_ADAM) {
        o->m = be->alloc(be, n * sizeof(float)); /* zeroed */
        o->v = be->alloc(be, n * sizeof(float));
        if (!o->m || !o->v) {
            optimizer_free(o);
            return nmt_fail(NMT_ERR_NOMEM, "out of memory on %s for the Adam moments (%.1f MB)", be->name,
                            8.0 * n / 1e6);
        }
    }
    *out = o;
    return NMT_OK;
}

void optimizer_free(Optimizer *o) {
    if (!o) return;
    o->be->release(o->be, o->m);
    o->be->release(o->be, o->v);
    nmt_free(o);
}

double optimizer_rate(const Optimizer *o, int64_t t, double lr_scale) {
    return lr_schedule_rate(&o->sched, t, lr_scale);
}

double optimizer_ema_decay(double decay, int64_t t) {
    double ramp = (1.0 + (double)t) / (10.0 + (double)t);
    return decay < ramp ? decay : ramp;
}

double optimizer_grad_norm(const Optimizer *o, const float *grads) {
    return sqrt(o->be->sum_squares(o->be, grads, o->n));
}

void optimizer_apply(Optimizer *o, float *params, float *grads, double norm, int64_t t, double rate) {
    Backend *be = o->be;
    if (o->clip_norm > 0 && norm > o->clip_norm)
        be->scale(be, grads, o->n, (float)(o->clip_norm / norm));
    if (o->kind == CFG_OPT_ADAM)
        be->adam_update(be, params, grads, o->m, o->v, o->n, (float)rate, o->beta1, o->beta2, o->eps, (int)t);
    else
        be->sgd_update(be, params, grads, o->n, (float)rate);
}

size_t optimizer_state_bytes(const Optimizer *o) { return o->m ? 2 * o->n * sizeof(float) : 0; }
