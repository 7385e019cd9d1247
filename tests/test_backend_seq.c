/* test_backend_seq.c: the sequence-model slots of the CPU Backend
 * (backend.h): the LSTM cell, embeddings, attention (additive scores, the
 * masked and windowed softmax, local-p positions) and guided alignment,
 * called through the table (be->op(be, ...)) on backend memory (the other
 * slots: tests/test_backend.c):
 * - forward slots against naive reference loops written here (in double);
 * - every backward slot against central differences of a scalar loss
 *   L = sum(out * R) with random R (the loss accumulated in double);
 * - that the error measure would catch a wrong gradient.
 * Prints the worst relative error per op. The harness: backend_test_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_test_util.h"
#include "common.h"
#include "kernels/align_math.h"
#include "test_util.h"

/* ---- helpers only these tests use ---- */

static int any_nan(const float *a, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 1;
    return 0;
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* ======================= LSTM ======================= */

typedef struct {
    int B, H;
    float *z0, *z, *c_prev, *h_prev, *c, *h, *keep; /* backend */
    float *R1, *R2;                                 /* host (B, H) */
} LstmCtx;

static double lstm_loss(void *p) {
    LstmCtx *L = p;
    size_t n = (size_t)L->B * L->H;
    be->copy(be, L->z, L->z0, n * 4 * sizeof(float));
    be->lstm_forward(be, L->B, L->H, L->z, NULL, L->c_prev, L->h_prev, L->c, L->h, L->keep);
    return dot_out(L->h, L->R1, n) + dot_out(L->c, L->R2, n);
}

/* lstm_forward with its bias argument is add_bias and then lstm_forward
 * without: the same gates, c and h, bit for bit */
static void test_lstm_bias(int B, int H, const float *hkeep) {
    size_t n = (size_t)B * H, nz = 4 * n;
    float *hz = test_hrand(nz, -2, 2), *hb = test_hrand(4 * (size_t)H, -1, 1);
    float *za = dup_f(hz, nz), *zb = dup_f(hz, nz), *bias = dup_f(hb, 4 * (size_t)H);
    float *cp = drand(n, -1, 1), *hp = drand(n, -1, 1), *keep = dup_f(hkeep, (size_t)B);
    float *ca = drand(n, -5, 5), *ha = drand(n, -5, 5), *cb = drand(n, -5, 5), *hb2 = drand(n, -5, 5);
    be->add_bias(be, za, bias, B, 4 * H);
    be->lstm_forward(be, B, H, za, NULL, cp, hp, ca, ha, keep);
    be->lstm_forward(be, B, H, zb, bias, cp, hp, cb, hb2, keep);
    float *g1 = get_f(za, nz), *g2 = get_f(zb, nz), *c1 = get_f(ca, n), *c2 = get_f(cb, n);
    float *h1 = get_f(ha, n), *h2 = get_f(hb2, n);
    CHECK(!memcmp(g1, g2, nz * 4) && !memcmp(c1, c2, n * 4) && !memcmp(h1, h2, n * 4),
          "lstm_forward B=%d H=%d with bias = add_bias, then lstm_forward", B, H);
    free(hz); free(hb); free(g1); free(g2); free(c1); free(c2); free(h1); free(h2);
}

static void test_lstm(int B, int H, const float *hkeep, int perturb) {
    char name[96];
    size_t n = (size_t)B * H, nz = 4 * n;
    LstmCtx L = {B, H, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    float *hz = test_hrand(nz, -2, 2), *hc = test_hrand(n, -1, 1), *hh = test_hrand(n, -1, 1);
    L.z0 = dup_f(hz, nz);
    L.z = dalloc(nz * sizeof(float));
    L.c_prev = dup_f(hc, n);
    L.h_prev = dup_f(hh, n);
    L.c = drand(n, -5, 5); /* (=): garbage before */
    L.h = drand(n, -5, 5);
    L.keep = dup_f(hkeep, (size_t)B);
    L.R1 = test_hrand(n, -1, 1);
    L.R2 = test_hrand(n, -1, 1);

    /* forward against a double loop */
    lstm_loss(&L);
    float *oc = get_f(L.c, n), *oh = get_f(L.h, n), *og = get_f(L.z, nz);
    double *rc = malloc(n * sizeof *rc), *rh = malloc(n * sizeof *rh), *rg = malloc(nz * sizeof *rg);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) {
            const float *zr = hz + (size_t)b * 4 * H;
            double i = sigm(zr[j]), f = sigm(zr[H + j]), g = tanh(zr[2 * H + j]), o = sigm(zr[3 * H + j]);
            double *gr = rg + (size_t)b * 4 * H;
            gr[j] = i, gr[H + j] = f, gr[2 * H + j] = g, gr[3 * H + j] = o;
            size_t k = (size_t)b * H + j;
            double cn = f * hc[k] + i * g;
            rc[k] = hkeep[b] != 0 ? cn : hc[k];
            rh[k] = hkeep[b] != 0 ? o * tanh(cn) : hh[k];
        }
    snprintf(name, sizeof name, "lstm_forward B=%d H=%d", B, H);
    double ef = rel_err(oc, rc, n);
    double eh = rel_err(oh, rh, n), eg = rel_err(og, rg, nz);
    report(name, fmax(ef, fmax(eh, eg)), FWD_TOL);
    free(oc); free(oh); free(og); free(rc); free(rh); free(rg);

    /* backward: dh = R1, dc = R2 (the loss's gradient into c_t) */
    float *dh = dup_f(L.R1, n), *dc = dup_f(L.R2, n);
    float *fwd_gates = get_f(L.z, nz), *dz = dup_f(fwd_gates, nz); /* in: the gates; out: dz */
    float *dh_carry = drand(n, -9, 9); /* (=) */
    free(fwd_gates);
    be->lstm_backward(be, B, H, dz, L.c_prev, L.c, L.keep, dh, dc, dh_carry);
    double e1 = grad_err(lstm_loss, &L, L.z0, nz, dz, NULL);
    double e2 = grad_err(lstm_loss, &L, L.c_prev, n, dc, NULL);
    double e3 = grad_err(lstm_loss, &L, L.h_prev, n, dh_carry, NULL);
    snprintf(name, sizeof name, "lstm_backward B=%d H=%d: dz", B, H);
    report(name, e1, GRAD_TOL);
    snprintf(name, sizeof name, "lstm_backward B=%d H=%d: dc_prev", B, H);
    report(name, e2, GRAD_TOL);
    snprintf(name, sizeof name, "lstm_backward B=%d H=%d: dh_carry", B, H);
    report(name, e3, GRAD_TOL);

    if (perturb) {
        /* A wrong gradient must be caught: one dz entry off by 5% of the
         * largest, and dc_prev missing its factor f (dc_tot instead). */
        double *num = malloc(nz * sizeof *num);
        float *ana = get_f(dz, nz);
        num_grad(lstm_loss, &L, L.z0, nz, num);
        double big = 0.0;
        for (size_t i = 0; i < nz; i++) big = fmax(big, fabs(num[i]));
        ana[nz / 2] += (float)(0.05 * big);
        double ep = rel_err(ana, num, nz);
        printf("  %-44s perturbed dz: rel err %.3g\n", "lstm_backward", ep);
        CHECK(ep > GRAD_TOL, "a 5%% error in one dz entry is detected (%g)", ep);
        float *dcp = get_f(dc, n), *gates = get_f(L.z, nz);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++)
                if (hkeep[b] != 0) dcp[(size_t)b * H + j] /= gates[(size_t)b * 4 * H + H + j];
        double *numc = malloc(n * sizeof *numc);
        num_grad(lstm_loss, &L, L.c_prev, n, numc);
        double ec = rel_err(dcp, numc, n);
        printf("  %-44s dc_prev without f: rel err %.3g\n", "lstm_backward", ec);
        CHECK(ec > GRAD_TOL, "a dc_prev missing its factor f is detected (%g)", ec);
        free(num); free(ana); free(dcp); free(gates); free(numc);
    }
    free(hz); free(hc); free(hh); free(L.R1); free(L.R2);
}

/* ======================= embeddings ======================= */

typedef struct {
    int N, E;
    float *table, *out;
    const int32_t *ids;
    float *R;
} EmbCtx;

static double emb_loss(void *p) {
    EmbCtx *C = p;
    be->embedding_forward(be, C->out, C->table, C->ids, C->N, C->E);
    return dot_out(C->out, C->R, (size_t)C->N * C->E);
}

static void test_embedding(int V, int E) {
    char name[96];
    int32_t hids[7] = {2, V - 1, 2, 0, 2, V - 1, 1};
    int N = 7;
    size_t nt = (size_t)V * E, no = (size_t)N * E;
    float *ht = test_hrand(nt, -1, 1);
    EmbCtx C = {N, E, dup_f(ht, nt), drand(no, -5, 5), dup_i(hids, (size_t)N), test_hrand(no, -1, 1)};
    emb_loss(&C);
    float *o = get_f(C.out, no);
    double *ref = malloc(no * sizeof *ref);
    for (int i = 0; i < N; i++)
        for (int e = 0; e < E; e++) ref[(size_t)i * E + e] = ht[(size_t)hids[i] * E + e];
    snprintf(name, sizeof name, "embedding_forward V=%d E=%d", V, E);
    report(name, rel_err(o, ref, no), 0.0);

    float *before = test_hrand(nt, -1, 1);
    float *dtable = dup_f(before, nt), *dout = dup_f(C.R, no);
    be->embedding_backward(be, dtable, dout, C.ids, N, E);
    snprintf(name, sizeof name, "embedding_backward V=%d E=%d (repeated ids)", V, E);
    report(name, grad_err(emb_loss, &C, C.table, nt, dtable, before), GRAD_TOL);
    free(o); free(ref); free(ht); free(before); free(C.R);
}

/* ======================= attention ======================= */

typedef struct {
    int B, S, A;
    float *kproj, *qproj, *v, *scores;
    float *R;
} AddCtx;

static double add_loss(void *p) {
    AddCtx *C = p;
    be->additive_score_forward(be, C->B, C->S, C->A, C->kproj, C->qproj, C->v, C->scores);
    return dot_out(C->scores, C->R, (size_t)C->B * C->S);
}

static void test_additive(int B, int S, int A) {
    char name[96];
    size_t nk = (size_t)S * B * A, nq = (size_t)B * A, ns = (size_t)B * S;
    float *hk = test_hrand(nk, -1, 1), *hq = test_hrand(nq, -1, 1), *hv = test_hrand((size_t)A, -1, 1);
    AddCtx C = {B, S, A, dup_f(hk, nk), dup_f(hq, nq), dup_f(hv, (size_t)A), drand(ns, -5, 5),
                test_hrand(ns, -1, 1)};
    C.R[1] = 0.0f; /* a masked position's zero gradient, mid-row */
    add_loss(&C);
    float *o = get_f(C.scores, ns);
    double *ref = malloc(ns * sizeof *ref);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            double acc = 0.0;
            for (int a = 0; a < A; a++)
                acc += hv[a] * tanh((double)hk[((size_t)s * B + b) * A + a] + hq[(size_t)b * A + a]);
            ref[(size_t)b * S + s] = acc;
        }
    snprintf(name, sizeof name, "additive_score_forward B=%d S=%d A=%d", B, S, A);
    report(name, rel_err(o, ref, ns), FWD_TOL);

    float *bk = test_hrand(nk, -1, 1), *bq = test_hrand(nq, -1, 1), *bv = test_hrand((size_t)A, -1, 1);
    float *dk = dup_f(bk, nk), *dq = dup_f(bq, nq), *dv = dup_f(bv, (size_t)A);
    float *ds = dup_f(C.R, ns);
    be->additive_score_backward(be, B, S, A, C.kproj, C.qproj, C.v, ds, dk, dq, dv);
    double e = fmax(grad_err(add_loss, &C, C.kproj, nk, dk, bk),
                    fmax(grad_err(add_loss, &C, C.qproj, nq, dq, bq),
                         grad_err(add_loss, &C, C.v, (size_t)A, dv, bv)));
    snprintf(name, sizeof name, "additive_score_backward B=%d S=%d A=%d", B, S, A);
    report(name, e, GRAD_TOL);
    free(o); free(ref); free(hk); free(hq); free(hv); free(bk); free(bq); free(bv); free(C.R);
}

typedef struct {
    int B, S, window, gaussian;
    float sigma;
    float *scores, *center, *probs, *weights;
    const int32_t *len;
    float *R;
} SmCtx;

static double sm_loss(void *p) {
    SmCtx *C = p;
    be->attn_softmax_forward(be, C->B, C->S, C->scores, C->len, C->center, C->window,
                             C->gaussian, C->sigma, C->probs, C->weights);
    return dot_out(C->weights, C->R, (size_t)C->B * C->S);
}

/* hcenter NULL: global attention */
static void test_attn_softmax(const char *what, int B, int S, const int32_t *hlen,
                              const float *hcenter, int window, int gaussian, int perturb) {
    char name[128];
    size_t n = (size_t)B * S;
    float sigma = window > 0 ? window / 2.0f : 1.0f;
    float *hs = test_hrand(n, -2, 2);
    SmCtx C = {B, S, window, gaussian, sigma, dup_f(hs, n),
               hcenter ? dup_f(hcenter, (size_t)B) : NULL, drand(n, -5, 5), drand(n, -5, 5),
               dup_i(hlen, (size_t)B), test_hrand(n, -1, 1)};
    sm_loss(&C);
    float *op = get_f(C.probs, n), *ow = get_f(C.weights, n);
    double *rp = malloc(n * sizeof *rp), *rw = malloc(n * sizeof *rw);
    for (int b = 0; b < B; b++) { /* reference in double */
        double m = -INFINITY, sum = 0.0;
        for (int pass = 0; pass < 3; pass++)
            for (int s = 0; s < S; s++) {
                int ok = s < hlen[b] && (!hcenter || fabs(s - (double)hcenter[b]) <= window);
                double x = hs[(size_t)b * S + s];
                if (pass == 0 && ok) m = fmax(m, x);
                if (pass == 1 && ok) sum += exp(x - m);
                if (pass == 2) {
                    double pr = ok ? exp(x - m) / sum : 0.0;
                    double d = s - (double)(hcenter ? hcenter[b] : 0);
                    rp[(size_t)b * S + s] = pr;
                    rw[(size_t)b * S + s] = gaussian ? pr * exp(-d * d / (2.0 * sigma * sigma)) : pr;
                }
            }
    }
    snprintf(name, sizeof name, "attn_softmax_forward %s", what);
    report(name, fmax(rel_err(op, rp, n), rel_err(ow, rw, n)), FWD_TOL);
    CHECK(!any_nan(op, n) && !any_nan(ow, n), "%s: no NaN", name);

    float *dw = dup_f(C.R, n), *ds = drand(n, -9, 9); /* (=) */
    float *dcenter = hcenter ? drand((size_t)B, -9, 9) : NULL;
    be->attn_softmax_backward(be, B, S, C.probs, C.weights, C.len, C.center, window, gaussian,
                              sigma, dw, ds, dcenter);
    snprintf(name, sizeof name, "attn_softmax_backward %s: dscores", what);
    report(name, grad_err(sm_loss, &C, C.scores, n, ds, NULL), GRAD_TOL);
    if (gaussian) {
        snprintf(name, sizeof name, "attn_softmax_backward %s: dcenter", what);
        double ec = grad_err(sm_loss, &C, C.center, (size_t)B, dcenter, NULL);
        report(name, ec, GRAD_TOL);
        if (perturb) { /* a dcenter 10% too large is caught */
            double num[16];
            float *ana = get_f(dcenter, (size_t)B);
            num_grad(sm_loss, &C, C.center, (size_t)B, num);
            for (int b = 0; b < B; b++) ana[b] *= 1.1f;
            double ep = rel_err(ana, num, (size_t)B);
            printf("  %-44s dcenter * 1.1: rel err %.3g\n", "attn_softmax_backward", ep);
            CHECK(ep > GRAD_TOL, "a 10%% error in dcenter is detected (%g)", ep);
            free(ana);
        }
    }
    free(op); free(ow); free(rp); free(rw); free(hs); free(C.R);
}

static void test_attention_edges(void) {
    /* one allowed position (src_len 1), and a window with none: finite,
     * 1 at the one position, all zeros (and zero gradients) for none */
    int B = 2, S = 5;
    int32_t hlen[2] = {1, 5};
    float hcenter[2] = {0.0f, 20.0f}, hs[10];
    test_fill(hs, 10, -3, 3);
    float *scores = dup_f(hs, 10), *center = dup_f(hcenter, 2);
    int32_t *len = dup_i(hlen, 2);
    float *probs = drand(10, -5, 5), *weights = drand(10, -5, 5);
    be->attn_softmax_forward(be, B, S, scores, len, center, 2, true, 1.0f, probs, weights);
    float *op = get_f(probs, 10), *ow = get_f(weights, 10);
    int ok = op[0] == 1.0f && fabsf(ow[0] - expf(0.0f)) < 1e-7f;
    for (int s = 1; s < 10; s++) ok &= op[s] == 0.0f && ow[s] == 0.0f;
    CHECK(ok, "one allowed position gets 1, no allowed position gets zeros");
    float *dw = drand(10, -1, 1), *ds = drand(10, -9, 9), *dc = drand(2, -9, 9);
    be->attn_softmax_backward(be, B, S, probs, weights, len, center, 2, true, 1.0f, dw, ds, dc);
    float *ods = get_f(ds, 10), *odc = get_f(dc, 2);
    int zero = 1;
    for (int s = 0; s < 10; s++) zero &= ods[s] == 0.0f;
    CHECK(zero && odc[0] == 0.0f && odc[1] == 0.0f, "their gradients are zero (%g %g)", odc[0],
          odc[1]);
    CHECK(!any_nan(ods, 10) && !any_nan(odc, 2), "edge rows: no NaN");
    free(op); free(ow); free(ods); free(odc);

    /* local-m with an integer centre: the window edges are inclusive */
    int32_t l5[1] = {5};
    float c2[1] = {2.0f}, h1[5] = {0, 0, 0, 0, 0};
    float *sc = dup_f(h1, 5), *cc = dup_f(c2, 1);
    be->attn_softmax_forward(be, 1, 5, sc, dup_i(l5, 1), cc, 1, false, 0.5f, probs, weights);
    float *o = get_f(probs, 5);
    CHECK(o[0] == 0.0f && fabsf(o[1] - 1.0f / 3) < 1e-7f && fabsf(o[3] - 1.0f / 3) < 1e-7f &&
              o[4] == 0.0f,
          "window [1, 3] around 2: %g %g %g %g %g", o[0], o[1], o[2], o[3], o[4]);
    free(o);
}

typedef struct {
    int B;
    float *u, *p;
    const int32_t *len;
    float *R;
} LpCtx;

static double lp_loss(void *ctx) {
    LpCtx *C = ctx;
    be->local_p_forward(be, C->B, C->u, C->len, C->p);
    return dot_out(C->p, C->R, (size_t)C->B);
}

static void test_local_p(void) {
    int B = 4;
    int32_t hlen[4] = {5, 9, 1, 12};
    float *hu = test_hrand(4, -3, 3);
    LpCtx C = {B, dup_f(hu, 4), drand(4, -5, 5), dup_i(hlen, 4), test_hrand(4, -1, 1)};
    lp_loss(&C);
    float *o = get_f(C.p, 4);
    double ref[4];
    for (int b = 0; b < B; b++) ref[b] = hlen[b] * sigm(hu[b]);
    report("local_p_forward", rel_err(o, ref, 4), FWD_TOL);
    float *before = test_hrand(4, -1, 1);
    float *du = dup_f(before, 4), *dp = dup_f(C.R, 4);
    be->local_p_backward(be, B, C.u, C.len, dp, du);
    report("local_p_backward", grad_err(lp_loss, &C, C.u, 4, du, before), GRAD_TOL);
    free(o); free(hu); free(before); free(C.R);
}

/* ======================= guided alignment ======================= */

typedef struct {
    int T, B, S, n, cost;
    size_t step_stride;
    float weight, scale;
    float *att;       /* (T, step_stride): step t's heads at t * step_stride, (n, B, S) each */
    float *align;     /* (T*B, S): q in, the gradient out */
    float *loss_rows; /* (T*B) */
    const float *q;   /* host (T*B, S): uploaded into align before each call */
} AlignCtx;

/* scale * sum_r loss_rows[r] (loss_rows[r] = weight * row loss), so that
 * its derivative by att_j[t, b, s] is what align row t*B + b holds */
static double align_loss(void *p) {
    AlignCtx *C = p;
    size_t rows = (size_t)C->T * C->B;
    be->upload(be, C->align, C->q, rows * C->S * sizeof(float));
    be->guided_align(be, C->T, C->B, C->S, C->n, C->att, C->step_stride, C->cost, C->weight, C->scale,
                     C->align, C->loss_rows);
    float *h = get_f(C->loss_rows, rows);
    double s = 0.0;
    for (size_t r = 0; r < rows; r++) s += (double)h[r] * C->scale;
    free(h);
    return s;
}

/* guided_align (cost ALIGN_COST_CE or _MSE) on T steps of n heads, B rows
 * of S, steps step_stride = n*B*S + gap apart (the gap holds values the slot
 * must not read). q rows by r % 3: several nonzero entries (some zero ones
 * between) summing to 1, all 0, one-hot. Checks loss_rows and the gradient
 * against a direct double computation, all-0 rows exactly 0, and the
 * gradient against central differences over every entry of att (each
 * head's, and the gaps', whose derivative is 0); and that this measure
 * would catch a gradient of the wrong sign or without the 1/n. */
static void test_guided_align(int cost, int T, int B, int S, int n, int gap) {
    char name[128];
    const char *cname = cost == ALIGN_COST_CE ? "ce" : "mse";
    size_t rows = (size_t)T * B, nq = rows * S, head = (size_t)B * S;
    size_t stride = (size_t)n * head + (size_t)gap, natt = (size_t)T * stride;
    float *hatt = test_hrand(natt, 0.05f, 0.6f), *hq = test_align_targets(T, B, S);
    AlignCtx C = {T, B, S, n, cost, stride, 0.7f, 0.37f, dup_f(hatt, natt), drand(nq, -5, 5),
                  drand(rows, -5, 5), hq};
    align_loss(&C);
    float *og = get_f(C.align, nq), *ol = get_f(C.loss_rows, rows);
    double *rg = calloc(nq, sizeof *rg), *rl = calloc(rows, sizeof *rl);
    int zero_rows = 1;
    for (size_t r = 0; r < rows; r++) { /* direct double computation */
        size_t t = r / B, b = r % B;
        const float *q = hq + r * S;
        int any = 0;
        for (int s = 0; s < S; s++) any |= q[s] != 0.0f;
        double loss = 0.0;
        for (int s = 0; s < S; s++) {
            double a = 0.0;
            for (int j = 0; j < n; j++) a += hatt[t * stride + ((size_t)j * B + b) * S + s];
            a /= n;
            double d;
            if (cost == ALIGN_COST_CE) {
                loss += q[s] > 0 ? -q[s] * log(a + 1e-6) : 0.0;
                d = -q[s] / (n * (a + 1e-6));
            } else {
                loss += 0.5 * (a - q[s]) * (a - q[s]);
                d = (a - q[s]) / n;
            }
            rg[r * S + s] = any ? 0.7 * 0.37 * d : 0.0;
        }
        rl[r] = any ? 0.7 * loss : 0.0;
        if (!any) {
            zero_rows &= ol[r] == 0.0f;
            for (int s = 0; s < S; s++) zero_rows &= og[r * S + s] == 0.0f;
        }
    }
    snprintf(name, sizeof name, "guided_align %s T%d B%d S%d n%d: loss_rows", cname, T, B, S, n);
    report(name, rel_err(ol, rl, rows), FWD_TOL);
    snprintf(name, sizeof name, "guided_align %s T%d B%d S%d n%d: grad vs direct", cname, T, B, S, n);
    report(name, rel_err(og, rg, nq), FWD_TOL);
    CHECK(zero_rows, "guided_align %s: rows whose q is all 0 get 0 loss and 0 gradient", cname);

    /* d(scale * sum_r loss_rows)/d att, every head's entry and the gaps' */
    float *ana = calloc(natt, sizeof *ana), *bad = malloc(natt * sizeof *bad);
    for (size_t r = 0; r < rows; r++)
        for (int j = 0; j < n; j++)
            for (int s = 0; s < S; s++)
                ana[(r / B) * stride + ((size_t)j * B + r % B) * S + s] = og[r * S + s];
    double *num = malloc(natt * sizeof *num);
    num_grad(align_loss, &C, C.att, natt, num);
    snprintf(name, sizeof name, "guided_align %s T%d B%d S%d n%d: gradient", cname, T, B, S, n);
    report(name, rel_err(ana, num, natt), GRAD_TOL);
    for (size_t i = 0; i < natt; i++) bad[i] = -ana[i];
    double e_sign = rel_err(bad, num, natt);
    CHECK(e_sign > GRAD_TOL, "guided_align %s: a gradient of the wrong sign passes (%g)", cname, e_sign);
    if (n > 1) {
        for (size_t i = 0; i < natt; i++) bad[i] = ana[i] * n;
        double e_n = rel_err(bad, num, natt);
        CHECK(e_n > GRAD_TOL, "guided_align %s: a gradient without the 1/n passes (%g)", cname, e_n);
    }
    free(hatt); free(hq); free(og); free(ol); free(rg); free(rl); free(ana); free(bad); free(num);
}

static void test_guided_aligns(void) {
    for (int cost = ALIGN_COST_CE; cost <= ALIGN_COST_MSE; cost++) {
        test_guided_align(cost, 4, 1, 6, 1, 5);
        test_guided_align(cost, 3, 2, 5, 3, 7);
        test_guided_align(cost, 2, 1, 7, 3, 3);
        test_guided_align(cost, 3, 3, 4, 1, 1);
    }
}

int main(void) {
    be = cpu_backend_create(2);
    CHECK(be != NULL, "cpu_backend_create");
    if (!be) return test_summary("test_backend_seq");

    float keep3[3] = {1, 0, 1}, keep1[1] = {1}, keep4[4] = {0, 1, 1, 0};
    test_lstm(3, 5, keep3, 1);
    test_lstm(1, 7, keep1, 0);
    test_lstm(4, 3, keep4, 0);
    test_lstm_bias(3, 5, keep3);
    test_lstm_bias(4, 3, keep4);

    test_embedding(6, 5);
    test_embedding(9, 70);

    test_additive(2, 5, 7);
    test_additive(1, 3, 70);
    test_additive(3, 4, 9);

    int32_t len3[3] = {6, 4, 1}, len1[1] = {7};
    test_attn_softmax("global B=3 S=6", 3, 6, len3, NULL, 0, 0, 0);
    test_attn_softmax("global B=1 S=7", 1, 7, len1, NULL, 0, 0, 0);
    int32_t lenw[3] = {9, 5, 8};
    float cw[3] = {3.37f, 0.6f, 7.81f};
    test_attn_softmax("window 2, fractional centre", 3, 9, lenw, cw, 2, 0, 0);
    test_attn_softmax("window 2, gaussian", 3, 9, lenw, cw, 2, 1, 1);
    float cw1[1] = {2.45f};
    test_attn_softmax("window 3, gaussian, B=1", 1, 7, len1, cw1, 3, 1, 0);
    test_attention_edges();
    test_local_p();
    test_guided_aligns();

    for (int i = 0; i < n_allocs; i++) be->release(be, allocs[i]);
    be->destroy(be);
    return test_summary("test_backend_seq");
}
