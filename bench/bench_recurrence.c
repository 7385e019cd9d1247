/* bench_recurrence.c: the encoder's LSTM recurrence alone (the Backend
 * slots lstm_seq_recurrence and lstm_seq_recurrence_backward, backend.h),
 * timed through the step path and, on a GPU, through the persistent
 * kernel (NMT_CUDA_PERSISTENT, docs/gpu.md "Persistent recurrence"), so
 * that a GPU run says which half of the recurrence the persistent kernel
 * loses time in (the first H200 run found it slower overall: 0.67x and
 * 0.42x of the step path's training tokens/s).
 *
 *   build/bench/bench_recurrence [--device cpu|cuda] [--T 13] [--B 64]
 *                                [--H 512] [--reps 20]
 *
 * One layer and direction of T steps, batch B, hidden H (W_hh 4H x H).
 * Each timed call starts from the same inputs (copied on the device
 * before the clock starts) and ends with a read-back, so the time covers
 * the work, not its launch; the best of `reps` calls after 3 warm-up
 * calls is printed, in milliseconds, as "key: value" lines:
 *   forward ms step: X        backward ms step: Y
 *   forward ms persistent: X  backward ms persistent: Y  (GPU only)
 *   persistent/step forward: R  persistent/step backward: R
 * "persistent: unavailable (...)" where the device or the build has no
 * persistent kernel (the CPU, a GPU without cooperative launch). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "backend_select.h"
#include "common.h"
#include "config.h"
#include "data/rng.h"
#include "gpu/gpu_backend.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* n floats uniform in [-a, a), stream `seed` of nmt's generator */
static float *host_rand(size_t n, float a, unsigned seed) {
    float *x = malloc(n * sizeof *x);
    if (!x) return NULL;
    Rng r;
    rng_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) x[i] = a * (2.0f * rng_uniform(&r) - 1.0f);
    return x;
}

typedef struct {
    int T, B, H;
    float *W, *gates0, *gates_act, *gates, *h, *c, *keep, *dh0, *dh, *dc, *dh_rec;
} Rec;

static void sync_on(Backend *be, const float *p) {
    float x;
    be->download(be, &x, p, sizeof x);
}

/* best forward and backward times (seconds) of `reps` calls */
static void time_both(Backend *be, Rec *r, int reps, double *fwd, double *bwd) {
    size_t g = (size_t)r->T * r->B * 4 * r->H, st = (size_t)r->B * r->H, hs = (size_t)r->T * st;
    *fwd = *bwd = 1e30;
    for (int i = 0; i < reps + 3; i++) {
        be->copy(be, r->gates, r->gates0, g * sizeof(float));
        sync_on(be, r->gates);
        double t0 = now();
        be->lstm_seq_recurrence(be, r->T, r->B, r->H, r->W, r->gates, r->h, r->c, r->keep, false);
        sync_on(be, r->h + hs);
        double tf = now() - t0;
        if (i == 0) be->copy(be, r->gates_act, r->gates, g * sizeof(float)); /* the activated gates */
        be->copy(be, r->gates, r->gates_act, g * sizeof(float));
        be->copy(be, r->dh, r->dh0, hs * sizeof(float));
        be->zero(be, r->dc, st * sizeof(float));
        sync_on(be, r->dh);
        t0 = now();
        be->lstm_seq_recurrence_backward(be, r->T, r->B, r->H, r->W, r->gates, r->c, r->keep, false, r->dh,
                                         r->dc, r->dh_rec);
        sync_on(be, r->dh_rec);
        double tb = now() - t0;
        if (i >= 3) {
            *fwd = fmin(*fwd, tf);
            *bwd = fmin(*bwd, tb);
        }
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int T = 13, B = 64, H = 512, reps = 20, device = CFG_DEVICE_CPU;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *dst = !strcmp(a, "--T") ? &T : !strcmp(a, "--B") ? &B : !strcmp(a, "--H") ? &H
                 : !strcmp(a, "--reps") ? &reps : NULL;
        if (dst && v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 100000) {
                fprintf(stderr, "bench_recurrence: %s wants a whole number from 1 to 100000, not '%s'\n", a, v);
                return 2;
            }
            *dst = (int)n;
            i++;
        } else if (!strcmp(a, "--device") && v) {
            if (!strcmp(v, "cpu")) device = CFG_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) device = CFG_DEVICE_CUDA;
            else {
                fprintf(stderr, "bench_recurrence: --device wants cpu or cuda, not '%s'\n", v);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "usage: bench_recurrence [--device cpu|cuda] [--T N] [--B N] [--H N] [--reps N]\n");
            return 2;
        }
    }
    Backend *be = NULL;
    NmtStatus st = backend_create_for(device, 0, 0, "--device", "--gpu", &be);
    if (st) {
        fprintf(stderr, "bench_recurrence: %s\n", nmt_error_message());
        return 1;
    }
    bool on_gpu = strcmp(be->name, "cpu") != 0;
    Rec r = {.T = T, .B = B, .H = H};
    size_t w = (size_t)4 * H * H, g = (size_t)T * B * 4 * H, st_n = (size_t)B * H, hs = (size_t)T * st_n;
    float *hw = host_rand(w, 1.0f / sqrtf((float)H), 1), *hg = host_rand(g, 1.0f, 2), *hd = host_rand(hs, 0.1f, 3);
    float *hk = malloc((size_t)T * B * sizeof(float)), *hs0 = host_rand(2 * st_n, 0.5f, 4);
    if (!hw || !hg || !hd || !hk || !hs0) {
        fprintf(stderr, "bench_recurrence: out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)T * B; i++) hk[i] = 1.0f;
    r.W = be->alloc(be, w * 4);
    r.gates0 = be->alloc(be, g * 4);
    r.gates_act = be->alloc(be, g * 4);
    r.gates = be->alloc(be, g * 4);
    r.h = be->alloc(be, (hs + st_n) * 4);
    r.c = be->alloc(be, (hs + st_n) * 4);
    r.keep = be->alloc(be, (size_t)T * B * 4);
    r.dh0 = be->alloc(be, hs * 4);
    r.dh = be->alloc(be, hs * 4);
    r.dc = be->alloc(be, st_n * 4);
    r.dh_rec = be->alloc(be, st_n * 4);
    if (!r.W || !r.gates0 || !r.gates_act || !r.gates || !r.h || !r.c || !r.keep || !r.dh0 || !r.dh || !r.dc ||
        !r.dh_rec) {
        fprintf(stderr, "bench_recurrence: out of %s memory\n", on_gpu ? "device" : "host");
        return 1;
    }
    be->upload(be, r.W, hw, w * 4);
    be->upload(be, r.gates0, hg, g * 4);
    be->upload(be, r.h, hs0, st_n * 4); /* the start state, slot 0 */
    be->upload(be, r.c, hs0 + st_n, st_n * 4);
    be->upload(be, r.keep, hk, (size_t)T * B * 4);
    be->upload(be, r.dh0, hd, hs * 4);

    printf("device: %s\n", be->name);
    printf("shape: T %d B %d H %d (W_hh %d x %d)\n", T, B, H, 4 * H, H);
    double f_step, b_step, f_pers = -1, b_pers = -1;
    const char *why = "the CPU runs the step path only";
    if (on_gpu && cuda_backend_set_persistent(be, 0) != 0) why = "cannot switch it (no CUDA backend)";
    time_both(be, &r, reps, &f_step, &b_step);
    if (on_gpu && cuda_backend_set_persistent(be, 1) == 0) {
        CudaCounters c0, c1;
        cuda_backend_counters(be, &c0);
        time_both(be, &r, reps, &f_pers, &b_pers);
        cuda_backend_counters(be, &c1);
        if (c1.persistent_runs == c0.persistent_runs) {
            f_pers = b_pers = -1; /* the plan declined the shape: the step path ran */
            why = "the plan declined this shape (the step path ran)";
        }
        cuda_backend_set_persistent(be, 0);
    } else if (on_gpu) {
        why = "no cooperative launch on this device";
    }
    const char *err = backend_error(be);
    if (err) {
        fprintf(stderr, "bench_recurrence: the backend failed: %s\n", err);
        return 1;
    }
    printf("forward ms step: %.4f\n", f_step * 1e3);
    printf("backward ms step: %.4f\n", b_step * 1e3);
    if (f_pers >= 0) {
        printf("forward ms persistent: %.4f\n", f_pers * 1e3);
        printf("backward ms persistent: %.4f\n", b_pers * 1e3);
        printf("persistent/step forward: %.3f\n", f_pers / f_step);
        printf("persistent/step backward: %.3f\n", b_pers / b_step);
    } else {
        printf("persistent: unavailable (%s)\n", why);
    }
    float *bufs[] = {r.W, r.gates0, r.gates_act, r.gates, r.h, r.c, r.keep, r.dh0, r.dh, r.dc, r.dh_rec};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(be, bufs[i]);
    free(hw);
    free(hg);
    free(hd);
    free(hk);
    free(hs0);
    be->destroy(be);
    return 0;
}
