/* bench_train.c: training speed of nmt on a config's real batches: source
 * and target tokens per second over N timed steps (after a warm-up), peak
 * RSS, the GEMM FLOPs of one step, and the achieved FLOP/s as a fraction of
 * what OpenBLAS's sgemm reaches alone on exactly the same GEMM shapes, on
 * this machine and thread count, measured in the same run.
 *
 *   build/bench/bench_train --config configs/de-en.json [--set K=V ...]
 *                           [--steps 20] [--warmup 3]
 * Prints "key: value" lines (scripts/bench.sh reads them). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend.h"
#include "cli.h"
#include "cpu/cpu_env.h"
#include "data/batch.h"
#include "data/prepare.h"
#include "model/seq2seq.h"
#include "train/optimizer.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- GEMM shape recording (a wrapper around the backend's slots) ---- */

typedef struct {
    bool ta, tb;
    int m, n, k;
    long calls; /* gemms of this shape in one step (batched ones counted singly) */
} Shape;

static Shape shapes[4096];
static int n_shapes;
static bool recording;
static void (*real_gemm)(Backend *, bool, bool, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
static void (*real_gemm_batched)(Backend *, bool, bool, int, int, int, float, const float *, int, long, const float *,
                                 int, long, float, float *, int, long, int);

static void record(bool ta, bool tb, int m, int n, int k, int count) {
    if (!recording) return;
    for (int i = 0; i < n_shapes; i++)
        if (shapes[i].ta == ta && shapes[i].tb == tb && shapes[i].m == m && shapes[i].n == n && shapes[i].k == k) {
            shapes[i].calls += count;
            return;
        }
    if (n_shapes < (int)(sizeof shapes / sizeof shapes[0])) shapes[n_shapes++] = (Shape){ta, tb, m, n, k, count};
}

static void gemm_rec(Backend *be, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    record(ta, tb, m, n, k, 1);
    real_gemm(be, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void gemm_batched_rec(Backend *be, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
                             long sa, const float *B, int ldb, long sb, float beta, float *C, int ldc, long sc,
                             int count) {
    record(ta, tb, m, n, k, count);
    real_gemm_batched(be, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}

/* Best time of one cblas_sgemm of this shape (contiguous operands). */
static double time_shape(const Shape *s) {
    size_t a = (size_t)s->m * s->k, b = (size_t)s->k * s->n, c = (size_t)s->m * s->n;
    float *A = malloc(a * 4), *B = malloc(b * 4), *C = malloc(c * 4);
    for (size_t i = 0; i < a; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < b; i++) B[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    memset(C, 0, c * 4);
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double flops = 2.0 * s->m * s->n * s->k;
    int reps = (int)fmax(3, fmin(200, 2e8 / fmax(flops, 1)));
    double best = 1e30;
    for (int round = 0; round < 3; round++) {
        double t0 = now();
        for (int r = 0; r < reps; r++)
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->m, s->n,
                        s->k, 1.0f, A, lda, B, ldb, 0.0f, C, s->n);
        double dt = (now() - t0) / reps;
        if (dt < best) best = dt;
    }
    free(A);
    free(B);
    free(C);
    return best;
}

int main(int argc, char **argv) {
    cpu_env_apply(argv);
    CliConfigArgs args = {0};
    int steps = 20, warmup = 3;
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("bench", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_train --config FILE [--set K=V ...] [--steps N] [--warmup N]\n");
            return 2;
        }
    }
    Config cfg;
    NmtStatus st = cli_load_config(&args, &cfg);
    if (st) return cli_report("bench", st);
    nmt_log_quiet(1);
    PreparedData data;
    st = prepare_data(&cfg, 0, &data);
    if (st) return cli_report("bench", st);
    Backend *be = cpu_backend_create(cfg.train.threads);
    real_gemm = be->gemm;
    real_gemm_batched = be->gemm_batched;
    be->gemm = gemm_rec;
    be->gemm_batched = gemm_batched_rec;
    BatchSpec spec = {cfg.train.batch_sentences, cfg.train.batch_tokens, (uint64_t)cfg.train.seed, 1};
    Batcher *batches;
    st = batcher_create(data.train, &spec, &batches);
    if (st) return cli_report("bench", st);
    BatchLimits lim = batcher_limits(batches);
    ModelDims dims;
    st = model_dims_from_config(&cfg, tokenizer_vocab_size(data.src_tok), tokenizer_vocab_size(data.tgt_tok), &dims);
    Seq2Seq *m = NULL;
    ModelLimits ml = {lim.max_B, lim.max_S, lim.max_T, 0, 0};
    if (!st) st = seq2seq_create(be, &dims, ml, &m);
    if (!st) st = seq2seq_init_params(m, (float)cfg.model.init_range, 1);
    Optimizer *opt = NULL;
    if (!st) st = optimizer_create(be, &cfg.train, seq2seq_layout(m)->total, &opt);
    if (st) return cli_report("bench", st);
    double t_total = 0, src_tok = 0, tgt_tok = 0, flops_per_step = 0, sum_S = 0, sum_T = 0, sum_B = 0;
    int timed = 0;
    for (int i = 0; i < warmup + steps + 1; i++) {
        Batch b;
        int got = 0;
        batcher_next(batches, &b, &got);
        if (!got) batcher_next(batches, &b, &got);
        bool measure_shapes = i == warmup + steps; /* one extra step records the GEMMs */
        recording = measure_shapes;
        double t0 = now();
        seq2seq_zero_grads(m);
        ModelLoss loss;
        seq2seq_forward(m, &b, true, (uint64_t)i, &loss);
        seq2seq_backward(m);
        double norm = optimizer_grad_norm(opt, seq2seq_grads(m));
        optimizer_apply(opt, seq2seq_params(m), seq2seq_grads(m), norm, i + 1, optimizer_rate(opt, i + 1, 1.0));
        double dt = now() - t0;
        if (measure_shapes) {
            for (int s = 0; s < n_shapes; s++)
                flops_per_step += 2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls;
            /* scale to the mean batch of the timed steps */
            double tokens_here = (double)b.n_tgt_tokens;
            flops_per_step *= (tgt_tok / timed) / tokens_here;
        } else if (i >= warmup) {
            t_total += dt;
            src_tok += (double)b.n_src_tokens;
            tgt_tok += (double)b.n_tgt_tokens;
            sum_S += b.S;
            sum_T += b.T;
            sum_B += b.B;
            timed++;
        }
    }
    /* the GEMM ceiling: the same shapes, each alone, at OpenBLAS's best */
    double ceiling_time = 0, recorded_flops = 0;
    for (int s = 0; s < n_shapes; s++) {
        ceiling_time += time_shape(&shapes[s]) * shapes[s].calls;
        recorded_flops += 2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double step_time = t_total / timed;
    printf("blas: OpenBLAS core %s, %d threads\n", cpu_env_blas_core(), openblas_get_num_threads());
    printf("parameters: %zu\n", seq2seq_layout(m)->total);
    printf("steps: %d (after %d warm-up)\n", timed, warmup);
    printf("mean batch: B %.1f S %.1f T %.1f\n", sum_B / timed, sum_S / timed, sum_T / timed);
    printf("seconds per step: %.4f\n", step_time);
    printf("src tokens/s: %.1f\n", src_tok / t_total);
    printf("tgt tokens/s: %.1f\n", tgt_tok / t_total);
    printf("peak RSS MB: %.1f\n", ru.ru_maxrss / 1024.0);
    printf("GEMM GFLOP per step: %.3f\n", flops_per_step / 1e9);
    printf("achieved GFLOP/s: %.2f\n", flops_per_step / step_time / 1e9);
    printf("sgemm ceiling GFLOP/s (same shapes): %.2f\n", recorded_flops / ceiling_time / 1e9);
    printf("fraction of ceiling: %.3f\n", (flops_per_step / step_time) / (recorded_flops / ceiling_time));
    printf("gemm shapes: %d\n", n_shapes);
    if (getenv("NMT_BENCH_SHAPES"))
        for (int s = 0; s < n_shapes; s++)
            printf("  %c%c m %d n %d k %d calls %ld GFLOP %.3f\n", shapes[s].ta ? 'T' : 'N', shapes[s].tb ? 'T' : 'N',
                   shapes[s].m, shapes[s].n, shapes[s].k, shapes[s].calls,
                   2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls / 1e9);
    optimizer_free(opt);
    seq2seq_free(m);
    batcher_free(batches);
    be->destroy(be);
    prepared_data_free(&data);
    config_free(&cfg);
    return 0;
}
