/* optimizer.h: Adam and SGD over the flat parameter block, with linear
 * warmup, a decay factor (lr_scale, kept by the trainer), clipping by the
 * global gradient norm, and the NaN/Inf guard.
 *
 * Learning rate at update t (1-based), train.lr_schedule constant:
 *     lr * lr_scale * min(1, t / warmup)
 * and rsqrt (inverse square root after N = rsqrt_steps updates):
 *     lr * lr_scale * min(1, t / warmup) * sqrt(N / max(t, N))
 * (min(1, t / 0) is 1). The rate is a function of t and lr_scale alone, so
 * a resumed run follows the schedule of an uninterrupted one. */
#ifndef NMT_TRAIN_OPTIMIZER_H
#define NMT_TRAIN_OPTIMIZER_H

#include <stdbool.h>
#include "backend.h"
#include "config.h"

/* The rate's schedule (above), from the train.* keys. */
typedef struct {
    double lr;       /* base rate */
    int warmup;
    int schedule;    /* CfgLrSchedule */
    int rsqrt_steps; /* N of rsqrt, resolved (train.rsqrt_steps, else train.warmup_steps) */
} LrSchedule;

LrSchedule lr_schedule_of(const TrainConfig *tc);
/* The rate of update t (1-based) with the decay factor lr_scale (above). */
double lr_schedule_rate(const LrSchedule *s, int64_t t, double lr_scale);

typedef struct {
    Backend *be;
    int kind;        /* CfgOptimizer */
    size_t n;        /* parameters */
    float *m, *v;    /* Adam moments on the backend (NULL for SGD) */
    LrSchedule sched;
    float beta1, beta2, eps;
    double clip_norm; /* 0: none */
} Optimizer;

NmtStatus optimizer_create(Backend *be, const TrainConfig *tc, size_t n, Optimizer **out);
void optimizer_free(Optimizer *o); /* NULL is a no-op */

/* Bytes of optimizer state on the backend (Adam's two moments; 0 for SGD). */
size_t optimizer_state_bytes(const Optimizer *o);

/* lr_schedule_rate of the optimizer's schedule */
double optimizer_rate(const Optimizer *o, int64_t t, double lr_scale);

/* The decay of the weights' moving average at update t (1-based), for
 * train.ema_decay `decay`: min(decay, (1 + t) / (10 + t)), so that the
 * first updates are not averaged with the random start (TensorFlow's
 * ExponentialMovingAverage with num_updates). */
double optimizer_ema_decay(double decay, int64_t t);

/* The global L2 norm of grads (n floats). */
double optimizer_grad_norm(const Optimizer *o, const float *grads);

/* Clips grads to clip_norm (when set and exceeded, given their norm) and
 * applies update t (1-based) at `rate`. */
void optimizer_apply(Optimizer *o, float *params, float *grads, double norm, int64_t t, double rate);

#endif
