/* gpu_parity_align.h: the guided_align slot tests of tests/test_gpu_parity.c
 * (its only includer, at the point where they run: they use its harness,
 * gpu_parity_harness.h): CPU against GPU for both costs and awkward shapes,
 * rows whose q is all 0, the same bits run to run, and a graph replayed
 * with a new gradient scale each run; graphs_backend_create, which the
 * graph tests of gpu_parity_graphs.h share. Static functions in a header,
 * as test_util.h. */
#ifndef NMT_GPU_PARITY_ALIGN_H
#define NMT_GPU_PARITY_ALIGN_H

/* guided_align (ALIGN_COST_CE or _MSE): T steps of n heads' (B, S)
 * attention, step_stride = n*B*S + gap apart (the gap holds values the slot
 * must not read); loss_rows and the gradient (written over q) against the
 * CPU, all-0 rows exactly 0 on the GPU, and the same bits from a second GPU
 * run (the row loss is a block sum in a fixed order). */
static void test_guided_align(int cost, int T, int B, int S, int n, int gap) {
    char name[128];
    const char *cname = cost == ALIGN_COST_CE ? "ce" : "mse";
    size_t rows = (size_t)T * B, nq = rows * S, stride = (size_t)n * B * S + (size_t)gap;
    float *hq = test_align_targets(T, B, S);
    Buf att = buf_rand((size_t)T * stride, 0.02f, 0.8f), al = buf_from(hq, nq);
    Buf loss = buf_rand(rows, -5, 5);
    BOTH(be->guided_align(be, T, B, S, n, P(att), stride, cost, 0.7f, 0.37f, P(al), P(loss)));
    snprintf(name, sizeof name, "guided_align %s T=%d B=%d S=%d n=%d: loss_rows", cname, T, B, S, n);
    cmp(name, loss, OP_TOL);
    snprintf(name, sizeof name, "guided_align %s T=%d B=%d S=%d n=%d: gradient", cname, T, B, S, n);
    cmp(name, al, OP_TOL);
    float *hg = malloc(nq * sizeof *hg), *hl = malloc(rows * sizeof *hl);
    gpu->download(gpu, hg, al.g, nq * sizeof(float));
    gpu->download(gpu, hl, loss.g, rows * sizeof(float));
    int zero = 1;
    for (size_t r = 1; r < rows; r += 3) {
        zero &= hl[r] == 0.0f;
        for (int s = 0; s < S; s++) zero &= hg[r * S + s] == 0.0f;
    }
    CHECK(zero, "guided_align %s: rows whose q is all 0 get 0 loss and gradient on the GPU", cname);
    Buf al2 = buf_from(hq, nq), loss2 = buf_rand(rows, -5, 5);
    gpu->guided_align(gpu, T, B, S, n, att.g, stride, cost, 0.7f, 0.37f, al2.g, loss2.g);
    snprintf(name, sizeof name, "guided_align %s T=%d B=%d S=%d n=%d: run to run", cname, T, B, S, n);
    gpu_twice_same(name, loss.g, loss2.g, rows * sizeof(float));
    free(hq);
    free(hg);
    free(hl);
}

/* A CUDA backend with graphs on (NMT_CUDA_GRAPHS=1) and NMT_SYNC_DEBUG off
 * for it (it turns graphs off), whatever the environment says; NULL with
 * CUDA's message in err. The environment is left as it was. */
static Backend *graphs_backend_create(char *err, size_t err_size) {
    const char *old = getenv("NMT_CUDA_GRAPHS"), *old_sync = getenv("NMT_SYNC_DEBUG");
    char *saved = old ? strdup(old) : NULL, *saved_sync = old_sync ? strdup(old_sync) : NULL;
    setenv("NMT_CUDA_GRAPHS", "1", 1);
    unsetenv("NMT_SYNC_DEBUG");
    Backend *gg = cuda_backend_create(0, err, err_size);
    if (saved) setenv("NMT_CUDA_GRAPHS", saved, 1);
    else unsetenv("NMT_CUDA_GRAPHS");
    if (saved_sync) setenv("NMT_SYNC_DEBUG", saved_sync, 1);
    free(saved);
    free(saved_sync);
    return gg;
}

/* The scale (1 / a batch's target tokens) changes from batch to batch and is
 * a GpuVar: on a backend with NMT_CUDA_GRAPHS=1, the same upload and
 * guided_align four times with four scales run as a graph from the second
 * time on (a new scale is no new key), and each run gives the CPU's result
 * for its own scale (a graph that kept the first scale would not). */
static void test_guided_align_graphs(void) {
    char err[256] = "";
    Backend *gg = graphs_backend_create(err, sizeof err);
    CHECK(gg != NULL, "cuda_backend_create with NMT_CUDA_GRAPHS=1: %s", err);
    if (!gg) return;
    enum { T = 3, B = 2, S = 37, N = 2 };
    size_t rows = (size_t)T * B, nq = rows * S, natt = (size_t)T * N * B * S;
    float *hatt = test_hrand(natt, 0.02f, 0.8f), *hq = test_align_targets(T, B, S);
    float *ac = cpu->alloc(cpu, natt * 4), *qc = cpu->alloc(cpu, nq * 4), *lc = cpu->alloc(cpu, rows * 4);
    float *ag = gg->alloc(gg, natt * 4), *qg = gg->alloc(gg, nq * 4), *lg = gg->alloc(gg, rows * 4);
    cpu->upload(cpu, ac, hatt, natt * 4);
    gg->upload(gg, ag, hatt, natt * 4);
    float *hc = malloc(nq * 4), *hgr = malloc(nq * 4), scales[4] = {0.37f, 0.11f, 0.05f, 0.9f};
    gg->download(gg, hgr, ag, 4); /* a host wait: the uploads of att end their own segment */
    double worst = 0.0;
    CudaCounters a0, a1;
    cuda_backend_counters(gg, &a0);
    for (int run = 0; run < 4; run++) {
        Backend *both[2] = {cpu, gg};
        float *q[2] = {qc, qg}, *l[2] = {lc, lg}, *a[2] = {ac, ag};
        for (int k = 0; k < 2; k++) {
            both[k]->upload(both[k], q[k], hq, nq * 4);
            both[k]->guided_align(both[k], T, B, S, N, a[k], (size_t)N * B * S, ALIGN_COST_CE, 0.7f,
                                  scales[run], q[k], l[k]);
        }
        cpu->download(cpu, hc, qc, nq * 4);
        gg->download(gg, hgr, qg, nq * 4); /* the host wait that ends the segment */
        double e = rel_err_f(hc, hgr, nq);
        if (!(e <= worst)) worst = e;
        CHECK(e <= OP_TOL, "graphs: guided_align run %d, scale %g: rel err %g", run, scales[run], e);
    }
    cuda_backend_counters(gg, &a1);
    long long launched = a1.graph_launches - a0.graph_launches;
    /* run 0 op by op, run 1 captured and launched, runs 2 and 3 replayed */
    CHECK(launched == 3, "graphs: guided_align with a new scale each run: %lld graph launches in 4 runs "
          "(want 3)", launched);
    printf("  %-58s rel err %.3g (tol %.0e), %lld graph launches in 4 runs\n",
           "graphs: guided_align, a new scale each run", worst, OP_TOL, launched);
    worst_detail_err = -1.0;
    const char *ge = cuda_backend_error(gg);
    CHECK(ge == NULL, "graphs: guided_align: CUDA error: %s", ge ? ge : "");
    cpu->release(cpu, ac);
    cpu->release(cpu, qc);
    cpu->release(cpu, lc);
    gg->release(gg, ag);
    gg->release(gg, qg);
    gg->release(gg, lg);
    gg->destroy(gg);
    free(hatt);
    free(hq);
    free(hc);
    free(hgr);
}

static void test_guided_aligns(void) {
    for (int cost = ALIGN_COST_CE; cost <= ALIGN_COST_MSE; cost++) {
        test_guided_align(cost, 4, 1, 7, 1, 5);
        test_guided_align(cost, 3, 5, 37, 3, 11);
        test_guided_align(cost, 2, 1, 300, 3, 3);   /* S above the block: several passes per thread */
        test_guided_align(cost, 5, 70, 33, 1, 1);   /* 350 rows */
        test_guided_align(cost, 2, 3, 300, 2, 0);   /* no gap */
    }
    if (!selftest) test_guided_align_graphs();
}

#endif
