/* bench_train.c: training speed of nmt on a config's real batches (or on
 * synthetic batches of a fixed shape): source and target tokens per second
 * over N timed steps (after a warm-up), peak RSS (and GPU memory on the
 * GPU), the GEMM FLOPs of one step, and the achieved FLOP/s as a fraction of
 * what the backend's GEMM library reaches alone on exactly the same GEMM
 * shapes, measured in the same run: OpenBLAS's sgemm on the CPU (this
 * machine and thread count), cuBLAS through the backend's gemm slot on the
 * GPU.
 *
 *   build/bench/bench_train --config configs/de-en-2x512.json [--set K=V ...]
 *                           [--steps 20] [--warmup 3] [--device auto|cpu|cuda]
 *                           [--synthetic B,S,T --vocab SRC,TGT [--guided]]
 * --device overrides train.device (the backend is chosen as the trainer
 * chooses it, src/backend_select.c). --synthetic skips the data: every step
 * trains on one batch of B sentences, all S source and T target positions
 * real (T counts the EOS), random ids below the vocabulary sizes given by
 * --vocab (the model sizes still come from the config); --guided adds the
 * guided alignment loss (train.guided_alignment_cost and _weight, 0.1 when
 * the config's is 0) against a diagonal alignment, target position t to
 * source position t*S/T. With real batches that loss is on when the config
 * has data.train_align and a weight above 0. Every timed step
 * ends with a read-back from the device, so the clock covers the step's
 * work on the GPU, not just its launch. NMT_TF32=1 turns on TF32 in cuBLAS.
 * NMT_CUDA_PROFILE=1 adds the device profile of the timed steps ("cuda
 * profile: " lines, per step: docs/gpu.md, "Profile").
 * Prints "key: value" lines (scripts/bench.sh and scripts/gpu-check.sh read
 * them). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend.h"
#include "backend_select.h"
#include "cli.h"
#include "cpu/cpu_env.h"
#include "data/batch.h"
#include "data/prepare.h"
#include "gpu/gpu_backend.h"
#include "model/seq2seq.h"
#include "train/optimizer.h"

/* Device memory in use (total - free), in MiB; -1 without a GPU. */
static double gpu_used_mib(Backend *be, double *total_mib) {
    size_t free_b = 0, total_b = 0;
    *total_mib = -1;
    if (cuda_backend_memory(be, &free_b, &total_b) != 0) return -1;
    *total_mib = total_b / 1048576.0;
    return (total_b - free_b) / 1048576.0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- GEMM shape recording (a wrapper around the backend's slots) ---- */

typedef struct {
    bool ta, tb;
    int m, n, k;
    int batch;  /* gemms per call: 1 for gemm, count for gemm_batched */
    long calls; /* gemms of this shape in one step (batched ones counted singly) */
    double alone; /* seconds a step of this shape's gemms, timed alone (the ceiling) */
} Shape;

static Shape shapes[4096];
static int n_shapes;
static bool recording;
static void (*real_gemm)(Backend *, bool, bool, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
static void (*real_gemm_batched)(Backend *, bool, bool, int, int, int, float, const float *, int, long, const float *,
                                 int, long, float, float *, int, long, int);

static void record(bool ta, bool tb, int m, int n, int k, int batch, int count) {
    if (!recording) return;
    for (int i = 0; i < n_shapes; i++)
        if (shapes[i].ta == ta && shapes[i].tb == tb && shapes[i].m == m && shapes[i].n == n && shapes[i].k == k &&
            shapes[i].batch == batch) {
            shapes[i].calls += count;
            return;
        }
    if (n_shapes < (int)(sizeof shapes / sizeof shapes[0])) shapes[n_shapes++] = (Shape){ta, tb, m, n, k, batch, count, 0.0};
}

static void gemm_rec(Backend *be, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    record(ta, tb, m, n, k, 1, 1);
    real_gemm(be, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void gemm_batched_rec(Backend *be, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
                             long sa, const float *B, int ldb, long sb, float beta, float *C, int ldc, long sc,
                             int count) {
    record(ta, tb, m, n, k, count, count);
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

/* Waits for the backend's queued work (a 4-byte read-back). */
static void backend_sync(Backend *be, const void *dev_ptr) {
    float x;
    be->download(be, &x, dev_ptr, sizeof x);
}

/* Best time of one call of this shape through the backend's own slot
 * (device operands, never all zeros), synchronised around each round: one
 * gemm, or one gemm_batched of s->batch gemms (as the model calls it). */
static double time_shape_backend(Backend *be, const Shape *s) {
    size_t a1 = (size_t)s->m * s->k, b1 = (size_t)s->k * s->n, c1 = (size_t)s->m * s->n;
    size_t a = a1 * s->batch, b = b1 * s->batch, c = c1 * s->batch;
    size_t most = a > b ? a : b;
    float *host = malloc((most ? most : 1) * 4);
    float *A = be->alloc(be, (a ? a : 1) * 4), *B = be->alloc(be, (b ? b : 1) * 4), *C = be->alloc(be, (c ? c : 1) * 4);
    if (!host || !A || !B || !C) {
        free(host);
        be->release(be, A);
        be->release(be, B);
        be->release(be, C);
        return -1;
    }
    for (size_t i = 0; i < a; i++) host[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    be->upload(be, A, host, a * 4);
    for (size_t i = 0; i < b; i++) host[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    be->upload(be, B, host, b * 4);
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double flops = 2.0 * s->m * s->n * s->k * s->batch;
    int reps = (int)fmax(10, fmin(500, 2e10 / fmax(flops, 1)));
    double best = 1e30;
    for (int round = 0; round < 4; round++) { /* round 0 warms up */
        backend_sync(be, C);
        double t0 = now();
        for (int r = 0; r < reps; r++) {
            if (s->batch > 1)
                be->gemm_batched(be, s->ta, s->tb, s->m, s->n, s->k, 1.0f, A, lda, (long)a1, B, ldb, (long)b1, 0.0f, C,
                                 s->n, (long)c1, s->batch);
            else
                be->gemm(be, s->ta, s->tb, s->m, s->n, s->k, 1.0f, A, lda, B, ldb, 0.0f, C, s->n);
        }
        backend_sync(be, C);
        double dt = (now() - t0) / reps;
        if (round > 0 && dt < best) best = dt;
    }
    free(host);
    be->release(be, A);
    be->release(be, B);
    be->release(be, C);
    return best;
}

/* "B,S,T" or "SRC,TGT": n positive integers separated by commas. */
static int parse_ints(const char *v, int n, int *out) {
    for (int i = 0; i < n; i++) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || x < 1 || x > 1000000 || (i < n - 1 ? *end != ',' : *end != 0)) return 0;
        out[i] = (int)x;
        v = end + 1;
    }
    return 1;
}

/* The synthetic batch: B sentences, every source and target position real;
 * ids drawn from [4, vocab) (0-3 are PAD, UNK, BOS, EOS). */
typedef struct {
    Batch b;
    int32_t *ids;
    int *lens;
    int64_t *pairs;
    float *align; /* (T, B, S) with --guided, else NULL */
} Synthetic;

static int synthetic_make(Synthetic *sy, int B, int S, int T, int vs, int vt, bool guided) {
    memset(sy, 0, sizeof *sy);
    size_t ns = (size_t)S * B, nt = (size_t)T * B;
    sy->ids = malloc((ns + 2 * nt) * sizeof *sy->ids);
    sy->lens = malloc(2 * (size_t)B * sizeof *sy->lens);
    sy->pairs = malloc((size_t)B * sizeof *sy->pairs);
    if (!sy->ids || !sy->lens || !sy->pairs) return 0;
    if (guided) { /* target t (its EOS included) aligned to source t*S/T alone */
        sy->align = calloc(nt * (size_t)S, sizeof *sy->align);
        if (!sy->align) return 0;
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) sy->align[((size_t)t * B + b) * S + (size_t)t * S / T] = 1.0f;
    }
    uint64_t x = 88172645463325252ull;
    int32_t *src = sy->ids, *tin = src + ns, *tout = tin + nt;
    for (size_t i = 0; i < ns; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        src[i] = 4 + (int32_t)(x % (uint64_t)(vs > 4 ? vs - 4 : 1));
    }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int32_t id = 4 + (int32_t)(x % (uint64_t)(vt > 4 ? vt - 4 : 1));
            tout[(size_t)t * B + b] = t == T - 1 ? 3 : id;                  /* words, then EOS */
            if (t + 1 < T) tin[(size_t)(t + 1) * B + b] = tout[(size_t)t * B + b];
            if (t == 0) tin[b] = 2;                                           /* BOS */
        }
    for (int b = 0; b < B; b++) {
        sy->lens[b] = S;
        sy->lens[B + b] = T;
        sy->pairs[b] = b;
    }
    sy->b = (Batch){B, S, T, src, sy->lens, tin, tout, sy->lens + B, sy->pairs, (int64_t)B * S, (int64_t)B * T, sy->align};
    return 1;
}

static void synthetic_free(Synthetic *sy) {
    free(sy->ids);
    free(sy->lens);
    free(sy->pairs);
    free(sy->align);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a run killed at its limit keeps its lines */
    cpu_env_apply(argv);
    CliConfigArgs args = {0};
    int steps = 20, warmup = 3, device = -1, syn[3] = {0, 0, 0}, vocab[2] = {0, 0};
    bool guided_synthetic = false;
    const char *usage = "usage: bench_train --config FILE [--set K=V ...] [--steps N] [--warmup N]\n"
                        "                   [--device auto|cpu|cuda] [--synthetic B,S,T --vocab SRC,TGT [--guided]]\n";
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("bench", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            device = !strcmp(d, "auto") ? CFG_DEVICE_AUTO : !strcmp(d, "cpu") ? CFG_DEVICE_CPU
                   : !strcmp(d, "cuda") ? CFG_DEVICE_CUDA : -2;
            if (device == -2) {
                fprintf(stderr, "bench_train: --device must be auto, cpu or cuda, got '%s'\n%s", d, usage);
                return 2;
            }
        } else if (!strcmp(argv[i], "--synthetic") && i + 1 < argc) {
            if (!parse_ints(argv[++i], 3, syn)) {
                fprintf(stderr, "bench_train: --synthetic wants B,S,T (positive integers), got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--guided")) {
            guided_synthetic = true;
        } else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) {
            if (!parse_ints(argv[++i], 2, vocab) || vocab[0] < 5 || vocab[1] < 5) {
                fprintf(stderr, "bench_train: --vocab wants SRC,TGT (integers >= 5), got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "%s", usage);
            return !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ? 0 : 2;
        }
    }
    bool synthetic = syn[0] > 0;
    if (synthetic != (vocab[0] > 0)) {
        fprintf(stderr, "bench_train: --synthetic and --vocab go together\n%s", usage);
        return 2;
    }
    if (guided_synthetic && !synthetic) {
        fprintf(stderr, "bench_train: --guided goes with --synthetic (real batches take data.train_align)\n%s", usage);
        return 2;
    }
    if (steps < 1 || warmup < 0) {
        fprintf(stderr, "bench_train: --steps must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    Config cfg;
    NmtStatus st = cli_load_config(&args, &cfg);
    if (st) return cli_report("bench", st);
    if (device >= 0) cfg.train.device = device;
    nmt_log_quiet(1);
    PreparedData data;
    memset(&data, 0, sizeof data);
    Synthetic sy;
    memset(&sy, 0, sizeof sy);
    Batcher *batches = NULL;
    BatchLimits lim;
    int src_vocab, tgt_vocab;
    if (synthetic) {
        if (!synthetic_make(&sy, syn[0], syn[1], syn[2], vocab[0], vocab[1], guided_synthetic))
            return cli_report("bench", NMT_ERR_NOMEM);
        lim = (BatchLimits){syn[0], syn[1], syn[2], (int64_t)syn[0] * syn[1], (int64_t)syn[0] * syn[2]};
        src_vocab = vocab[0];
        tgt_vocab = vocab[1];
    } else {
        st = prepare_data(&cfg, 0, &data);
        if (st) return cli_report("bench", st);
        BatchSpec spec = {cfg.train.batch_sentences, cfg.train.batch_tokens, (uint64_t)cfg.train.seed, 1, 0};
        st = batcher_create(data.train, &spec, &batches);
        if (!st && data.train_align && cfg.train.guided_alignment_weight > 0)
            st = batcher_set_alignments(batches, data.train_align);
        if (st) return cli_report("bench", st);
        lim = batcher_limits(batches);
        src_vocab = tokenizer_vocab_size(data.src_tok);
        tgt_vocab = tokenizer_vocab_size(data.tgt_tok);
    }
    struct rusage ru_setup;
    getrusage(RUSAGE_SELF, &ru_setup); /* the data and tokenizers, before any model memory */
    Backend *be = NULL;
    st = backend_create_for(cfg.train.device, cfg.train.gpu, cfg.train.threads, "train.device",
                            "train.gpu", &be);
    if (st) return cli_report("bench", st);
    bool on_gpu = strcmp(be->name, "cpu") != 0;
    double gpu_total = -1, gpu_base = gpu_used_mib(be, &gpu_total);
    real_gemm = be->gemm;
    real_gemm_batched = be->gemm_batched;
    be->gemm = gemm_rec;
    be->gemm_batched = gemm_batched_rec;
    ModelDims dims;
    st = model_dims_from_config(&cfg, src_vocab, tgt_vocab, &dims);
    Seq2Seq *m = NULL;
    ModelLimits ml = {lim.max_B, lim.max_S, lim.max_T, 0, 0, 0, 0};
    if (!st) st = seq2seq_create(be, &dims, ml, &m);
    if (!st) st = seq2seq_init_params(m, (float)cfg.model.init_range, 1);
    /* the guided alignment loss: --guided, or real batches with data.train_align */
    bool guided = guided_synthetic || (!synthetic && data.train_align && cfg.train.guided_alignment_weight > 0);
    float guided_weight = cfg.train.guided_alignment_weight > 0 ? (float)cfg.train.guided_alignment_weight : 0.1f;
    if (!st && guided) st = seq2seq_set_guided_alignment(m, model_align_cost_from_config(&cfg), guided_weight);
    Optimizer *opt = NULL;
    if (!st) st = optimizer_create(be, &cfg.train, seq2seq_layout(m)->total, &opt);
    if (st) return cli_report("bench", st);
    double t_total = 0, src_tok = 0, tgt_tok = 0, flops_per_step = 0, sum_S = 0, sum_T = 0, sum_B = 0;
    double sum_loss = 0, sum_align = 0; /* the timed steps' losses per target token */
    int timed = 0;
    CudaCounters cc0 = {0}, cc1 = {0}; /* the timed steps' CUDA work (zeros on the CPU) */
    for (int i = 0; i < warmup + steps + 1; i++) {
        Batch b;
        if (synthetic) {
            b = sy.b;
        } else {
            int got = 0;
            batcher_next(batches, &b, &got);
            if (!got) batcher_next(batches, &b, &got);
        }
        bool measure_shapes = i == warmup + steps; /* one extra step records the GEMMs */
        recording = measure_shapes;
        if (i == warmup) {
            cuda_backend_counters(be, &cc0);
            cuda_backend_profile_restart(be); /* NMT_CUDA_PROFILE: the timed steps only */
        }
        if (measure_shapes) {
            cuda_backend_counters(be, &cc1);
            cuda_backend_profile_write(be, stdout, "cuda profile: ", timed, t_total);
        }
        double t0 = now();
        seq2seq_zero_grads(m);
        ModelLoss loss;
        seq2seq_forward(m, &b, true, (uint64_t)i, &loss);
        seq2seq_backward(m);
        double norm = optimizer_grad_norm(opt, seq2seq_grads(m));
        optimizer_apply(opt, seq2seq_params(m), seq2seq_grads(m), norm, i + 1, optimizer_rate(opt, i + 1, 1.0));
        backend_sync(be, seq2seq_params(m)); /* the step's GPU work is done */
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
            sum_loss += loss.loss;
            sum_align += loss.n_tokens ? loss.align_sum / (double)loss.n_tokens : 0;
            timed++;
        }
    }
    double gpu_used = gpu_used_mib(be, &gpu_total); /* all memory is taken at setup: this is the peak */
    const char *err = on_gpu ? cuda_backend_error(be) : NULL;
    if (err) {
        fprintf(stderr, "bench_train: the CUDA backend failed: %s\n", err);
        return 1;
    }
    /* the GEMM ceiling: the same shapes, each alone, at the library's best
     * (OpenBLAS on the CPU; cuBLAS through the backend's slot on the GPU) */
    be->gemm = real_gemm;
    be->gemm_batched = real_gemm_batched;
    double ceiling_time = 0, recorded_flops = 0;
    const char *trace = getenv("NMT_BENCH_TRACE"); /* each shape named before it is timed */
    for (int s = 0; s < n_shapes; s++) {
        if (trace && *trace && strcmp(trace, "0") != 0)
            fprintf(stderr, "bench_train: timing %c%c m %d n %d k %d batch %d\n", shapes[s].ta ? 'T' : 'N',
                    shapes[s].tb ? 'T' : 'N', shapes[s].m, shapes[s].n, shapes[s].k, shapes[s].batch);
        double t = on_gpu ? time_shape_backend(be, &shapes[s]) : time_shape(&shapes[s]);
        if (t < 0) {
            const char *why = on_gpu ? cuda_backend_error(be) : NULL;
            fprintf(stderr, "bench_train: no memory to time a gemm shape (%c%c m %d n %d k %d batch %d)%s%s\n",
                    shapes[s].ta ? 'T' : 'N', shapes[s].tb ? 'T' : 'N', shapes[s].m, shapes[s].n, shapes[s].k,
                    shapes[s].batch, why ? ": " : "", why ? why : "");
            return 1;
        }
        /* the CPU time is per gemm; the GPU's per call (a batched call does `batch` gemms) */
        shapes[s].alone = on_gpu ? t * (double)shapes[s].calls / shapes[s].batch : t * shapes[s].calls;
        ceiling_time += shapes[s].alone;
        recorded_flops += 2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double step_time = t_total / timed;
    const char *tf32 = getenv("NMT_TF32");
    printf("device: %s%s\n", be->name, on_gpu ? (tf32 && !strcmp(tf32, "1") ? " (TF32 on)" : " (TF32 off)") : "");
    if (!on_gpu) printf("blas: OpenBLAS core %s, %d threads\n", cpu_env_blas_core(), openblas_get_num_threads());
    printf("batches: %s\n", synthetic ? "synthetic" : "real");
    printf("model: emb %d hidden %d enc_layers %d dec_layers %d vocab %d/%d\n", cfg.model.emb_dim, cfg.model.hidden,
           cfg.model.enc_layers, cfg.model.dec_layers, src_vocab, tgt_vocab);
    printf("parameters: %zu\n", seq2seq_layout(m)->total);
    if (guided)
        printf("guided alignment: %s, weight %g\n", guided_cost_names[cfg.train.guided_alignment_cost],
               guided_weight);
    printf("steps: %d (after %d warm-up)\n", timed, warmup);
    printf("mean batch: B %.1f S %.1f T %.1f\n", sum_B / timed, sum_S / timed, sum_T / timed);
    printf("seconds per step: %.4f\n", step_time);
    printf("loss per token: %.4f (guided alignment %.4f)\n", sum_loss / timed, sum_align / timed);
    printf("src tokens/s: %.1f\n", src_tok / t_total);
    printf("tgt tokens/s: %.1f\n", tgt_tok / t_total);
    printf("peak RSS MB: %.1f\n", ru.ru_maxrss / 1024.0);
    {
        double params_mb = seq2seq_layout(m)->total * 4.0 / 1e6;
        printf("memory MB: %.1f before the model; parameters %.1f, gradients %.1f, Adam moments %.1f; "
               "activation arena %.1f (sized for batches up to %d x %d x %d)\n",
               ru_setup.ru_maxrss * 1024.0 / 1e6, params_mb, params_mb, optimizer_state_bytes(opt) / 1e6,
               seq2seq_arena_bytes(m) / 1e6, ml.max_B, ml.max_S, ml.max_T);
    }
    if (gpu_used >= 0)
        printf("gpu memory MiB: %.0f in use of %.0f (%.0f taken by the model, arena and optimizer)\n", gpu_used,
               gpu_total, gpu_used - gpu_base);
    if (on_gpu && timed)
        printf("cuda per step: %.0f kernel launches, %.0f GEMMs, %.0f host calls, %.1f graph launches, "
               "%.0f lane forks, %.0f persistent recurrences; %lld graphs captured in all, %lld captures "
               "failed (NMT_CUDA_GRAPHS %s)\n",
               (double)(cc1.launches - cc0.launches) / timed,
               (double)(cc1.cublas_calls - cc0.cublas_calls) / timed, (double)(cc1.host_calls - cc0.host_calls) / timed,
               (double)(cc1.graph_launches - cc0.graph_launches) / timed,
               (double)(cc1.lane_forks - cc0.lane_forks) / timed,
               (double)(cc1.persistent_runs - cc0.persistent_runs) / timed, cc1.graphs_captured,
               cc1.capture_failures,
               getenv("NMT_CUDA_GRAPHS") && strcmp(getenv("NMT_CUDA_GRAPHS"), "0") ? "on" : "off");
    if (on_gpu && timed)
        printf("cuda host time per step: %.3f ms in host calls, %.3f ms waiting for the device (of %.3f ms); "
               "%lld calls over NMT_CUDA_SLOW_CALL_MS in all%s%s\n",
               (cc1.host_call_seconds - cc0.host_call_seconds) * 1e3 / timed,
               (cc1.wait_seconds - cc0.wait_seconds) * 1e3 / timed, step_time * 1e3, cc1.slow_calls,
               cc1.slow_summary[0] ? ": " : "", cc1.slow_summary);
    printf("GEMM GFLOP per step: %.3f\n", flops_per_step / 1e9);
    printf("achieved GFLOP/s: %.2f\n", flops_per_step / step_time / 1e9);
    /* whose GEMMs: OpenBLAS's, cuBLAS's, or nmt's own kernel (NMT_CUDA_GEMM=own) */
    CudaCounters gemm_of;
    const char *lib = !on_gpu ? "sgemm" : cuda_backend_counters(be, &gemm_of) == 0 && gemm_of.own_gemm ? "own gemm" : "cublas";
    printf("%s ceiling GFLOP/s (same shapes): %.2f\n", lib, recorded_flops / ceiling_time / 1e9);
    printf("fraction of ceiling: %.3f\n", (flops_per_step / step_time) / (recorded_flops / ceiling_time));
    printf("gemm shapes: %d\n", n_shapes);
    if (getenv("NMT_BENCH_SHAPES"))
        for (int s = 0; s < n_shapes; s++)
            printf("  %c%c m %d n %d k %d batch %d gemms %ld GFLOP %.3f; alone %.3f ms a step (%.1f%% of the "
                   "ceiling's time), %.1f GFLOP/s\n", shapes[s].ta ? 'T' : 'N', shapes[s].tb ? 'T' : 'N', shapes[s].m,
                   shapes[s].n, shapes[s].k, shapes[s].batch, shapes[s].calls,
                   2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls / 1e9, shapes[s].alone * 1e3,
                   100.0 * shapes[s].alone / ceiling_time,
                   2.0 * shapes[s].m * shapes[s].n * shapes[s].k * shapes[s].calls / shapes[s].alone / 1e9);
    optimizer_free(opt);
    seq2seq_free(m);
    batcher_free(batches);
    be->destroy(be);
    if (synthetic) synthetic_free(&sy);
    else prepared_data_free(&data);
    config_free(&cfg);
    return 0;
}
