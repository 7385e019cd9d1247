/* gpu_parity_graphs.h: the CUDA graph tests of tests/test_gpu_parity.c (its
 * only includer, at the point where they run: they use its helpers, the
 * named-model builders and the greedy and beam comparisons, and the
 * harness of gpu_parity_harness.h). NMT_CUDA_GRAPHS=1 (docs/gpu.md, "CUDA
 * graphs"): a large upload between recorded ops, a segment cut at its
 * GpuVar limit (also on lane 1), a capture and a graph launch that CUDA
 * refuses, a release dropping cached graphs, bench_train's GEMM ceiling
 * pattern (which crashed on the H200 on 2026-11-30), then five Adam steps
 * and greedy and beam decoding of a model with graphs.
 * NMT_PARITY_GRAPHS_ONLY=1 and NMT_PARITY_GRAPH_PARTS select parts. Static
 * functions in a header, as test_util.h. */
#ifndef NMT_GPU_PARITY_GRAPHS_H
#define NMT_GPU_PARITY_GRAPHS_H

/* The pattern of bench_train's GEMM ceiling (time_shape_backend) on a
 * backend with graphs: for each GEMM shape of the bench config's step
 * (emb 256, hidden 512, B 64, S 13, T 16: uploads below, at and above the
 * 1 MiB that the recorder stages), allocate A, B and C, upload A and B from
 * one reused host buffer, then four rounds of a wait and `reps` GEMMs into
 * C, so that the third round captures a graph and the fourth replays it;
 * release, next shape (cudaMalloc may hand out the same addresses again).
 * The first GPU run (2026-11-30) crashed in cudaGraphLaunch on this
 * pattern. Each shape's C must match the CPU's, with no CUDA error. With
 * NMT_PARITY_SWEEP_STRIDE (the emulator) every stride-th shape under 1
 * GFLOP, 3 GEMMs a round. */
static void test_graph_gemm_rounds(Backend *gg) {
    static const struct { char ta, tb; int m, n, k, batch; } shapes[] = {
        {'N', 'T', 832, 1024, 256, 1}, {'N', 'T', 64, 1024, 256, 1},  {'N', 'T', 832, 2048, 512, 1},
        {'N', 'T', 64, 2048, 512, 1},  {'N', 'T', 64, 1024, 512, 1},  {'N', 'T', 832, 512, 512, 1},
        {'N', 'T', 64, 2048, 768, 1},  {'N', 'T', 1, 13, 512, 64},    {'N', 'N', 1, 512, 13, 64},
        {'N', 'T', 64, 512, 1024, 1},  {'N', 'T', 524, 8000, 512, 1}, {'T', 'N', 8000, 512, 524, 1},
        {'N', 'N', 524, 512, 8000, 1}, {'N', 'N', 64, 1024, 512, 1},  {'T', 'N', 13, 512, 1, 64},
        {'N', 'N', 64, 512, 2048, 1},  {'T', 'N', 512, 1024, 1024, 1}, {'N', 'N', 1024, 256, 2048, 1},
        {'T', 'N', 2048, 768, 1024, 1}, {'T', 'N', 2048, 512, 1024, 1}, {'N', 'N', 832, 512, 512, 1},
        {'T', 'N', 512, 512, 832, 1},  {'T', 'N', 1024, 512, 64, 1},  {'N', 'N', 64, 512, 1024, 1},
        {'T', 'N', 2048, 512, 832, 1}, {'N', 'N', 832, 512, 2048, 1}, {'N', 'N', 64, 256, 1024, 1},
        {'T', 'N', 1024, 256, 832, 1}, {'N', 'N', 832, 256, 1024, 1},
    };
    const char *env = getenv("NMT_PARITY_SWEEP_STRIDE");
    int stride = env && atoi(env) > 0 ? atoi(env) : 1;
    int n_shapes = (int)(sizeof shapes / sizeof shapes[0]), tested = 0;
    double worst = 0;
    CudaCounters cnt0, cnt1;
    cuda_backend_counters(gg, &cnt0);
    char worst_name[96] = "none";
    for (int si = 0; si < n_shapes; si++) {
        int ta = shapes[si].ta == 'T', tb = shapes[si].tb == 'T';
        int m = shapes[si].m, n = shapes[si].n, k = shapes[si].k, batch = shapes[si].batch;
        double flops = 2.0 * m * n * k * batch;
        if (stride > 1 && (si % stride || flops > 1e9)) continue;
        int reps = stride > 1 ? 3 : (int)fmax(10, fmin(500, 2e10 / flops));
        printf("  graph gemm rounds: %c%c m %d n %d k %d batch %d, %d GEMMs a round\n", shapes[si].ta,
               shapes[si].tb, m, n, k, batch, reps); /* a crash names its shape */
        CudaCounters s0, s1;
        cuda_backend_counters(gg, &s0);
        size_t a1 = (size_t)m * k, b1 = (size_t)k * n, c1 = (size_t)m * n;
        size_t a = a1 * batch, b = b1 * batch, c = c1 * batch, most = a > b ? a : b;
        float *host = test_hrand(most, -0.5f, 0.5f), *hc = malloc(c * sizeof(float)),
              *hg = malloc(c * sizeof(float));
        float *Ac = cpu->alloc(cpu, a * 4), *Bc = cpu->alloc(cpu, b * 4), *Cc = cpu->alloc(cpu, c * 4);
        float *Ag = gg->alloc(gg, a * 4), *Bg = gg->alloc(gg, b * 4), *Cg = gg->alloc(gg, c * 4);
        CHECK(Ag && Bg && Cg, "graph gemm rounds: alloc: %s", cuda_backend_error(gg));
        if (!Ag || !Bg || !Cg) {
            free(host);
            free(hc);
            free(hg);
            return;
        }
        cpu->upload(cpu, Ac, host, a * 4);
        gg->upload(gg, Ag, host, a * 4);
        for (size_t i = 0; i < b; i++) host[i] = -host[i] * 0.75f; /* the buffer reused for B */
        cpu->upload(cpu, Bc, host, b * 4);
        gg->upload(gg, Bg, host, b * 4);
        int lda = ta ? m : k, ldb = tb ? k : n;
        if (batch > 1) {
            cpu->gemm_batched(cpu, ta, tb, m, n, k, 1.0f, Ac, lda, (long)a1, Bc, ldb, (long)b1, 0.0f, Cc, n,
                              (long)c1, batch);
        } else {
            cpu->gemm(cpu, ta, tb, m, n, k, 1.0f, Ac, lda, Bc, ldb, 0.0f, Cc, n);
        }
        for (int round = 0; round < 4; round++) {
            gg->download(gg, hg, Cg, sizeof(float)); /* the wait between rounds */
            for (int r = 0; r < reps; r++) {
                if (batch > 1)
                    gg->gemm_batched(gg, ta, tb, m, n, k, 1.0f, Ag, lda, (long)a1, Bg, ldb, (long)b1, 0.0f,
                                     Cg, n, (long)c1, batch);
                else
                    gg->gemm(gg, ta, tb, m, n, k, 1.0f, Ag, lda, Bg, ldb, 0.0f, Cg, n);
            }
        }
        cpu->download(cpu, hc, Cc, c * 4);
        gg->download(gg, hg, Cg, c * 4);
        cuda_backend_counters(gg, &s1);
        if (s1.capture_failures != s0.capture_failures)
            printf("    (%lld graph launches refused for this shape, %lld launched)\n",
                   s1.capture_failures - s0.capture_failures, s1.graph_launches - s0.graph_launches);
        double e = rel_err_f(hc, hg, c);
        const char *err = cuda_backend_error(gg);
        CHECK(err == NULL && e <= OP_TOL, "graph gemm rounds: %c%c m %d n %d k %d batch %d (%d GEMMs a round): "
              "rel err %g%s%s", shapes[si].ta, shapes[si].tb, m, n, k, batch, reps, e, err ? "; " : "",
              err ? err : "");
        if (e > worst) {
            worst = e;
            snprintf(worst_name, sizeof worst_name, "%c%c m %d n %d k %d batch %d", shapes[si].ta,
                     shapes[si].tb, m, n, k, batch);
        }
        cpu->release(cpu, Ac);
        cpu->release(cpu, Bc);
        cpu->release(cpu, Cc);
        gg->release(gg, Ag);
        gg->release(gg, Bg);
        gg->release(gg, Cg);
        free(host);
        free(hc);
        free(hg);
        tested++;
        if (err) return; /* the backend has failed: the rest would fail the same way */
    }
    cuda_backend_counters(gg, &cnt1);
    long long captured = cnt1.graphs_captured - cnt0.graphs_captured;
    long long launched = cnt1.graph_launches - cnt0.graph_launches;
    long long refused = cnt1.capture_failures - cnt0.capture_failures;
    long long alloc_nodes = cnt1.graph_alloc_nodes - cnt0.graph_alloc_nodes;
    /* each shape: captured in round 2, replayed in rounds 2 and 3; none refused */
    CHECK(refused == 0 && captured >= tested && launched >= 2 * tested,
          "graphs: the GEMM ceiling pattern ran as graphs: %lld captured, %lld launched, %lld refused for %d shapes",
          captured, launched, refused, tested);
    printf("  %-58s %d shapes, worst rel err %.3g (%s); %lld graphs captured (%lld memory-allocation nodes), "
           "%lld launched, %lld refused\n", "graphs: bench_train's GEMM ceiling pattern", tested, worst, worst_name,
           captured, alloc_nodes, launched, refused);
}

/* A capture that CUDA refuses (cuda_backend_test_break_capture makes a call
 * that is illegal while capturing just before op 3 of the segment, the
 * scale on lane 1) loses no work and records no error: the segment runs
 * op by op, and its key is refused from then on (no capture, no graph in
 * the runs after). The ops: 0 upload x, 1 copy y = x, 2 fork, 3 x *= f on
 * lane 1, 4 lane 0, 5 y *= 3, 6 join, 7 x += y. The failed capture stops
 * on lane 1: the op-by-op run must start on lane 0 again, else the copy
 * runs on lane 1 and lane 0's y *= 3 reads y before it (with the default
 * EMU_STREAM_ORDER). f changes every run (a GpuVar). With `launch`, the
 * same segment five times, and the launch of its cached graph in run 3 is
 * refused (cuda_backend_test_break_launch): that run, too, must run op by
 * op with no error, the graph be dropped, and run 4 not launch it again.
 * (Its key is the refused-capture test's, the scale factors being GpuVars
 * and cudaMalloc handing out the same addresses again: the releases at the
 * end of that test make the backend forget it.) */
static void test_refused(Backend *gg, bool launch) {
    enum { N = 40 };
    const char *what = launch ? "a refused graph launch" : "a refused capture";
    int runs = launch ? 5 : 4;
    float hx[N], hc[N], hg[N];
    for (int i = 0; i < N; i++) hx[i] = (float)(i - 7);
    float *xc = cpu->alloc(cpu, sizeof hx), *xg = gg->alloc(gg, sizeof hx);
    float *yc = cpu->alloc(cpu, sizeof hx), *yg = gg->alloc(gg, sizeof hx);
    CudaCounters a0, a1;
    cuda_backend_counters(gg, &a0);
    for (int run = 0; run < runs; run++) {
        Backend *both[2] = {cpu, gg};
        float *x[2] = {xc, xg}, *y[2] = {yc, yg};
        if (!launch && run == 1) cuda_backend_test_break_capture(gg, 3); /* run 1 would be captured */
        if (launch && run == 3) cuda_backend_test_break_launch(gg); /* run 3 would replay run 1's graph */
        for (int k = 0; k < 2; k++) {
            Backend *b = both[k];
            b->upload(b, x[k], hx, sizeof hx);
            b->copy(b, y[k], x[k], sizeof hx);
            b->fork(b);
            b->scale(b, x[k], N, 0.5f * (float)(run + 2));
            b->lane(b, 0);
            b->scale(b, y[k], N, 3.0f);
            b->join(b);
            b->add_cols(b, x[k], N, y[k], N, 1, N);
        }
        cpu->download(cpu, hc, xc, sizeof hc);
        gg->download(gg, hg, xg, sizeof hg);
        const char *e = cuda_backend_error(gg);
        CHECK(!e && !memcmp(hc, hg, sizeof hc), "graphs: %s, run %d: x[1] %g vs %g; %s", what, run, hg[1],
              hc[1], e ? e : "no error");
    }
    cuda_backend_counters(gg, &a1);
    long long failed = a1.capture_failures - a0.capture_failures;
    long long captured = a1.graphs_captured - a0.graphs_captured;
    long long launched = a1.graph_launches - a0.graph_launches;
    /* a refused launch: captured in run 1, launched in runs 1 and 2, refused
     * in run 3 and not tried again in run 4 */
    long long want_captured = launch ? 1 : 0, want_launched = launch ? 2 : 0;
    CHECK(failed == 1 && captured == want_captured && launched == want_launched,
          "graphs: %s is not tried again: %lld failed, %lld captured, %lld graph launches "
          "(want 1, %lld, %lld)", what, failed, captured, launched, want_captured, want_launched);
    printf("  %-58s %lld failed, %lld captured, %lld graph launches in %d runs\n",
           launch ? "graphs: a graph launch CUDA refuses runs op by op" : "graphs: a capture CUDA refuses runs op by op",
           failed, captured, launched, runs);
    cpu->release(cpu, xc);
    gg->release(gg, xg);
    cpu->release(cpu, yc);
    gg->release(gg, yg);
}

/* Freeing device memory drops every cached graph (gpu_graph.cu,
 * gpu_graphs_forget: on the H200, graphs kept past a free broke later
 * launches): a segment run as a graph runs op by op again after a release
 * of an unrelated buffer, is captured anew on its second sighting, and
 * gives the CPU's results throughout. */
static void test_release_drops_graphs(Backend *gg) {
    enum { N = 24 };
    float hx[N], hc[N], hg[N];
    for (int i = 0; i < N; i++) hx[i] = (float)(3 * i - 20);
    float *xc = cpu->alloc(cpu, sizeof hx), *xg = gg->alloc(gg, sizeof hx);
    long long launched[6];
    for (int run = 0; run < 6; run++) {
        if (run == 3) { /* after run 2's graph launch: a free elsewhere */
            float *other = gg->alloc(gg, 64);
            gg->release(gg, other);
        }
        CudaCounters a, b;
        cuda_backend_counters(gg, &a);
        cpu->upload(cpu, xc, hx, sizeof hx);
        gg->upload(gg, xg, hx, sizeof hx);
        cpu->scale(cpu, xc, N, 1.5f);
        gg->scale(gg, xg, N, 1.5f);
        cpu->add_cols(cpu, xc, N, xc, N, 1, N);
        gg->add_cols(gg, xg, N, xg, N, 1, N);
        cpu->download(cpu, hc, xc, sizeof hc);
        gg->download(gg, hg, xg, sizeof hg);
        cuda_backend_counters(gg, &b);
        launched[run] = b.graph_launches - a.graph_launches;
        CHECK(!memcmp(hc, hg, sizeof hc), "graphs: run %d around a release: x[1] %g vs %g", run, hg[1], hc[1]);
    }
    /* runs 0, 1: op by op, then captured and launched; 2: replayed; 3: the
     * release forgot it (op by op); 4: captured again; 5: replayed */
    CHECK(launched[1] == 1 && launched[2] == 1 && launched[3] == 0 && launched[4] == 1 && launched[5] == 1,
          "graphs: a release drops the cached graphs: graph launches per run %lld %lld %lld %lld %lld %lld "
          "(want 0 1 1 0 1 1)", launched[0], launched[1], launched[2], launched[3], launched[4], launched[5]);
    printf("  %-58s graph launches per run %lld %lld %lld %lld %lld %lld\n", "graphs: a release drops cached graphs",
           launched[0], launched[1], launched[2], launched[3], launched[4], launched[5]);
    cpu->release(cpu, xc);
    gg->release(gg, xg);
}

/* NMT_PARITY_GRAPH_PARTS (with NMT_PARITY_GRAPHS_ONLY=1: test_graphs alone,
 * for finding which earlier work breaks a later graph): the parts of
 * test_graphs to run, named in a list (bigupload, varcut, refused, release,
 * rounds, models); unset: all */
static bool graph_part(const char *name) {
    const char *parts = getenv("NMT_PARITY_GRAPH_PARTS");
    if (!parts || !*parts) return true;
    size_t n = strlen(name);
    for (const char *p = strstr(parts, name); p; p = strstr(p + 1, name))
        if ((p == parts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

/* NMT_CUDA_GRAPHS=1 (docs/gpu.md, "CUDA graphs"): a backend that records
 * the work between host waits and replays a segment it saw before as a
 * CUDA graph. Five Adam steps on batches of one shape but different tokens,
 * lengths and token counts, with a new dropout seed, rate and clipping
 * factor each step: from the third step on the segments run as graphs, so
 * a graph that kept a stale upload, seed, loss scale, Adam step or
 * clipping factor gives a different loss or different weights than the
 * CPU. Then greedy and beam decoding (many steps of one shape) give the
 * CPU's tokens. */
static void test_graphs(void) {
    char err[256] = "", name[192], worst[40];
    Backend *gg = graphs_backend_create(err, sizeof err); /* gpu_parity_align.h */
    CHECK(gg != NULL, "cuda_backend_create with NMT_CUDA_GRAPHS=1: %s", err);
    if (!gg) return;
    Backend *plain = gpu;
    gpu = gg; /* the helpers (get_both, model_block_err) read "the GPU" */

    /* an upload above 1 MiB is not recorded: the work recorded before it
     * must still run first (zero, upload, scale by 2: the data times 2) */
    if (graph_part("bigupload")) {
    size_t big = (3 << 20) / sizeof(float);
    float *hbig = test_hrand(big, -1.0f, 1.0f), *back = malloc(big * sizeof(float));
    float *dbig = gg->alloc(gg, big * sizeof(float));
    gg->zero(gg, dbig, big * sizeof(float));
    gg->upload(gg, dbig, hbig, big * sizeof(float));
    gg->scale(gg, dbig, big, 2.0f);
    gg->download(gg, back, dbig, big * sizeof(float));
    int ordered = 1;
    for (size_t i = 0; i < big; i++) ordered &= back[i] == 2.0f * hbig[i];
    CHECK(ordered, "graphs: a large upload between recorded ops keeps their order");
    gg->release(gg, dbig);
    free(hbig);
    free(back);
    }

    /* a segment with more GpuVar values (here 5000 scale factors) than the
     * device array's 4096 is cut where it fills, at the same point every
     * time: the third run replays both parts as graphs, with its own
     * factors (x2 and x0.5 alternately, exact in float, then x(run + 1)) */
    /* Also on lane 1 of a fork (forked = 1): the cut joins the lanes and the
     * next segment forks again, so each captured graph ends with lane 1
     * joined (else the capture fails); lane 0's copy of x into y after
     * the calls, and the join, still see all of them. */
    for (int forked = 0; forked <= 1 && graph_part("varcut"); forked++) {
        enum { NV = 32, CALLS = 5000 };
        float hx[NV], hc[NV], hg[NV];
        for (int i = 0; i < NV; i++) hx[i] = (float)(i + 1);
        float *xc = cpu->alloc(cpu, sizeof hx), *xg = gg->alloc(gg, sizeof hx);
        float *yc = cpu->alloc(cpu, sizeof hx), *yg = gg->alloc(gg, sizeof hx);
        CudaCounters a0, a1;
        for (int run = 0; run < 3; run++) {
            cpu->upload(cpu, xc, hx, sizeof hx);
            gg->upload(gg, xg, hx, sizeof hx);
            cuda_backend_counters(gg, &a0);
            if (forked) {
                cpu->fork(cpu);
                gg->fork(gg);
            }
            for (int k = 0; k < CALLS; k++) {
                float f = k == CALLS - 1 ? (float)(run + 1) : (k % 2 ? 0.5f : 2.0f);
                cpu->scale(cpu, xc, NV, f);
                gg->scale(gg, xg, NV, f);
            }
            if (forked) {
                cpu->join(cpu);
                gg->join(gg);
            }
            cpu->copy(cpu, yc, xc, sizeof hx);
            gg->copy(gg, yg, xg, sizeof hx);
            cpu->download(cpu, hc, yc, sizeof hc);
            gg->download(gg, hg, yg, sizeof hg);
            cuda_backend_counters(gg, &a1);
            /* 2500 doublings, 2499 halvings, then run + 1 */
            CHECK(!memcmp(hc, hg, sizeof hc) && hg[NV - 1] == 2.0f * NV * (float)(run + 1),
                  "graphs: %d scale calls in one segment%s, run %d: %g vs %g", CALLS,
                  forked ? " on lane 1" : "", run, hg[NV - 1], hc[NV - 1]);
            if (run == 2)
                CHECK(a1.graph_launches - a0.graph_launches == 2,
                      "graphs: the segment cut at 4096 values%s replays as 2 graphs (%lld)",
                      forked ? " on lane 1" : "", a1.graph_launches - a0.graph_launches);
        }
        cpu->release(cpu, xc);
        gg->release(gg, xg);
        cpu->release(cpu, yc);
        gg->release(gg, yg);
    }
    /* NMT_PARITY_NO_REFUSAL=1 (gpu-check.sh's compute-sanitizer runs): the
     * refused capture's deliberate illegal call is an API error that the
     * tool counts, and the checks would fail for no bug */
    const char *no_refusal = getenv("NMT_PARITY_NO_REFUSAL");
    if (no_refusal && *no_refusal && strcmp(no_refusal, "0") != 0)
        printf("SKIP: NMT_PARITY_NO_REFUSAL: the refused-capture test\n");
    else if (graph_part("refused"))
        test_refused(gg, false);
    if (graph_part("refused")) test_refused(gg, true); /* no CUDA call is refused: nothing for a sanitizer */
    if (graph_part("release")) test_release_drops_graphs(gg);
    if (graph_part("rounds")) test_graph_gemm_rounds(gg);
    if (!graph_part("models")) {
        gpu = plain;
        gg->destroy(gg);
        return;
    }
    const char *sets[] = {"model.attention.style=luong", "model.attention.score=general",
                          "model.attention.heads=2", "model.input_feed=true",
                          "model.attention.dropout=0.1"};
    ModelDims d;
    if (!parity_dims("graphs", sets, 5, &d)) {
        gpu = plain;
        gg->destroy(gg);
        return;
    }
    Seq2Seq *mc, *mg;
    if (!model_pair(&d, gg, &mc, &mg)) {
        gpu = plain;
        gg->destroy(gg);
        return;
    }
    const ParamLayout *L = seq2seq_layout(mc);
    size_t n = L->total;
    float *host = malloc(n * sizeof(float));
    param_init_host(L, 0.3f, 13, host);
    cpu->upload(cpu, seq2seq_params(mc), host, n * sizeof(float));
    gg->upload(gg, seq2seq_params(mg), host, n * sizeof(float));
    float *cm = cpu->alloc(cpu, n * 4), *cv = cpu->alloc(cpu, n * 4);
    float *gm = gg->alloc(gg, n * 4), *gv = gg->alloc(gg, n * 4);
    CudaCounters a, b;
    int64_t tokens[5];
    for (int step = 1; step <= 5; step++) {
        Batch batch;
        gradcheck_make_batch(MB, MS, MT, V_S, V_T, 300 + step, &batch);
        cuda_backend_counters(gg, &a);
        ModelLoss lc, lg;
        seq2seq_zero_grads(mc);
        seq2seq_zero_grads(mg);
        seq2seq_forward(mc, &batch, true, 700 + step, &lc);
        seq2seq_forward(mg, &batch, true, 700 + step, &lg);
        tokens[step - 1] = lc.n_tokens;
        snprintf(name, sizeof name, "graphs step %d: loss %.6f (%lld tokens)", step, lc.loss,
                 (long long)lc.n_tokens);
        report(name, fabs(lg.loss - lc.loss) / fabs(lc.loss), LOSS_TOL);
        seq2seq_backward(mc);
        seq2seq_backward(mg);
        double nc = cpu->sum_squares(cpu, seq2seq_grads(mc), n);
        double ng = gg->sum_squares(gg, seq2seq_grads(mg), n);
        CHECK(fabs(ng - nc) <= 1e-4 * nc, "graphs step %d: gradient norm^2 %g vs %g", step, ng, nc);
        /* clip to a norm that changes every step, then Adam at a rate that does */
        float clip = (float)(0.5 * sqrt(nc) / step), lr = 0.01f * (float)step;
        cpu->scale(cpu, seq2seq_grads(mc), n, clip);
        gg->scale(gg, seq2seq_grads(mg), n, clip);
        cpu->adam_update(cpu, seq2seq_params(mc), seq2seq_grads(mc), cm, cv, n, lr, 0.9f, 0.999f,
                         1e-8f, step);
        gg->adam_update(gg, seq2seq_params(mg), seq2seq_grads(mg), gm, gv, n, lr, 0.9f, 0.999f,
                        1e-8f, step);
        cuda_backend_counters(gg, &b); /* before the comparison's downloads */
        double e = model_block_err(L, seq2seq_params(mc), seq2seq_params(mg), worst, sizeof worst);
        snprintf(name, sizeof name, "graphs step %d: weights after Adam (worst %s)", step, worst);
        report(name, e, STEP_TOL);
        printf("  %-58s %lld graph launches, %lld captured, %lld host calls for %lld launches "
               "+ %lld GEMMs\n", "", b.graph_launches - a.graph_launches,
               b.graphs_captured - a.graphs_captured, b.host_calls - a.host_calls,
               b.launches - a.launches, b.cublas_calls - a.cublas_calls);
        if (step >= 3)
            CHECK(b.graph_launches - a.graph_launches >= 2,
                  "graphs step %d: the step's segments ran as graphs (%lld graph launches)", step,
                  b.graph_launches - a.graph_launches);
        CHECK(b.host_waits - a.host_waits == 2, "graphs step %d: %lld host waits (want 2)", step,
              b.host_waits - a.host_waits);
    }
    CHECK(tokens[0] != tokens[1] || tokens[1] != tokens[2] || tokens[2] != tokens[3],
          "the graph steps' batches differ in their token counts (the loss scale changes)");

    Batch batch;
    gradcheck_make_batch(MB, MS, MT, V_S, V_T, 17, &batch);
    param_init_host(L, 0.8f, 5, host);
    cpu->upload(cpu, seq2seq_params(mc), host, n * sizeof(float));
    gg->upload(gg, seq2seq_params(mg), host, n * sizeof(float));
    for (int run = 0; run < 2; run++) {
        int out_tokens;
        cuda_backend_counters(gg, &a);
        bool same = greedy_same(mc, mg, &batch, MB, &out_tokens);
        cuda_backend_counters(gg, &b);
        CHECK(same, "graphs: greedy decoding (run %d) differs from the CPU", run);
        /* the second decode of the batch repeats the first one's steps */
        if (run == 1)
            CHECK(b.graph_launches > a.graph_launches, "graphs: greedy decoding ran no graph "
                  "the second time");
        printf("  %-58s %s, %lld graph launches in %d steps\n", "graphs: greedy decode",
               same ? "identical" : "DIFFERENT", b.graph_launches - a.graph_launches,
               seq2seq_decode_steps(mg));
    }
    double worst_score;
    bool same = beam_same(mc, mg, &batch, MB, &worst_score, NULL, NULL);
    CHECK(same, "graphs: beam search differs from the CPU");
    report("graphs: beam scores", worst_score, OP_TOL);
    const char *ge = cuda_backend_error(gg);
    CHECK(ge == NULL, "graphs: CUDA error: %s", ge ? ge : "");
    cpu->release(cpu, cm);
    cpu->release(cpu, cv);
    gg->release(gg, gm);
    gg->release(gg, gv);
    free(host);
    seq2seq_free(mc);
    seq2seq_free(mg);
    gpu = plain;
    gg->destroy(gg);
}

#endif
