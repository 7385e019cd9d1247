/* gpu_persist.cu: the LSTM recurrence over a sequence (backend.h,
 * lstm_seq_recurrence and its backward) as one persistent cooperative
 * kernel per layer and direction, with NMT_CUDA_PERSISTENT=1 (or
 * cuda_backend_set_persistent); otherwise, or where the shapes do not fit,
 * step by step with the other slots (backend_steps.c: a cuBLAS GEMM and a
 * cell kernel per time step). docs/gpu.md, "Persistent recurrence".
 *
 * Each block owns u hidden units j0 .. j0 + u - 1 (the last block may own
 * fewer) and keeps the part of W_hh they need in its shared memory for the
 * whole sequence: forward, the rows of their four gates, stored transposed
 * as W (H, 4u); backward, their columns, W (4H, u). Per time step a block
 * multiplies what it needs from all units (forward h_prev (B, H); backward
 * dz_t (B, 4H)) by its resident W (persist_block_gemm), then runs the cell
 * of its own units (the shared math of lstm_math.h), and the grid waits
 * (gpu_grid_sync) before the next step reads what every block wrote. One
 * wait per step suffices: a step writes only its own time's slots (and
 * state of its own units), which no other block reads in the same step.
 * The order of every sum is fixed by the plan: the same bits on every run.
 *
 * Plan (persist_plan): one block per multiprocessor, half of them between
 * fork and join (the two directions' kernels then fit on the device
 * together, so neither waits for the other's blocks), u = ceil(H / blocks).
 * It applies when the block's shared memory fits the device's opt-in limit,
 * the (B, u) output of a block has at most 256 tiles of 4 x 4, and the
 * occupancy allows the grid (twice between fork and join). */
#include "gpu/gpu_internal.cuh"

extern "C" {
#include "backend_steps.h"
}
#include "kernels/lstm_math.h"

#define PERSIST_THREADS 256
#define PERSIST_KC 32       /* reduction steps staged in shared memory at a time */
#define PERSIST_MAX_SPLIT 8 /* thread groups that share a tile's reduction */

/* A launch's shape. Bp: B rounded up to a multiple of 8; Rp: the resident
 * W's columns (forward 4u, backward u rounded up to a multiple of 4);
 * split: the groups of persist_block_gemm; smem: bytes per block. */
struct PersistPlan {
    int blocks, u, Bp, Rp, split;
    size_t smem;
};

/* v[0..4) = p[0..4); p is 16-byte aligned */
__device__ inline void persist_load4(const float *p, float v[4]) {
#ifdef NMT_CUDA_EMU
    for (int i = 0; i < 4; i++) v[i] = p[i];
#else
    float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
#endif
}

/* red (split, Bp, Rp) (=) the partial products A W of the block: A is
 * (B, K) in global memory (row stride K), W (K, Rp) the resident matrix in
 * shared memory; rows B .. Bp - 1 are 0. The reduction runs in chunks of
 * PERSIST_KC, staged transposed in As (PERSIST_KC, Bp + 4); group g of the
 * split sums positions [g, g + 1) * PERSIST_KC / split of every chunk, each
 * thread a 4 x 4 tile of (b, r). Every thread of the block calls it. */
__device__ void persist_block_gemm(const float *A, int B, int K, int Bp, int Rp, int split,
                                   const float *W, float *As, float *red) {
    int tid = threadIdx.x, nt = blockDim.x, lda_s = Bp + 4;
    int tiles_r = Rp / 4, tiles = (Bp / 4) * tiles_r;
    int group = tid / tiles, tile = tid % tiles, tb = tile / tiles_r, tr = tile % tiles_r;
    bool computes = tid < tiles * split;
    int per = PERSIST_KC / split, kk_lo = group * per;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += PERSIST_KC) {
        int kc = K - k0 < PERSIST_KC ? K - k0 : PERSIST_KC;
        __syncthreads(); /* the last chunk's readers are done with As */
        /* a warp stages 8 reduction steps of 4 rows: 32-byte pieces of
         * global rows, and 32 different banks (lda_s is 4 mod 8) */
        for (int i = tid; i < PERSIST_KC * Bp; i += nt) {
            int lane = i & 31, piece = i >> 5, pieces_k = PERSIST_KC / 8;
            int kk = (piece % pieces_k) * 8 + (lane >> 2), b = (piece / pieces_k) * 4 + (lane & 3);
            As[kk * lda_s + b] = b < B && kk < kc ? A[(size_t)b * K + k0 + kk] : 0.0f;
        }
        __syncthreads();
        if (!computes) continue;
        int kk_hi = kk_lo + per < kc ? kk_lo + per : kc;
        for (int kk = kk_lo; kk < kk_hi; kk++) {
            float a[4], w[4];
            persist_load4(As + kk * lda_s + 4 * tb, a);
            persist_load4(W + (size_t)(k0 + kk) * Rp + 4 * tr, w);
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * w[j];
        }
    }
    if (computes)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                red[((size_t)group * Bp + 4 * tb + i) * Rp + 4 * tr + j] = acc[i][j];
    __syncthreads();
}

/* The sum over the split groups of red's (b, r), in group order */
__device__ inline float persist_red_sum(const float *red, int split, int Bp, int Rp, int b, int r) {
    float sum = 0.0f;
    for (int g = 0; g < split; g++) sum += red[((size_t)g * Bp + b) * Rp + r];
    return sum;
}

/* units of block blockIdx.x: j0 and how many (nu) */
__device__ inline int persist_units(int H, int u, int *j0) {
    *j0 = (int)blockIdx.x * u;
    return H - *j0 < u ? H - *j0 : u;
}

/* lstm_seq_recurrence (backend.h); grid: plan.blocks, cooperative */
__global__ void lstm_persist_forward_kernel(int T, int B, int H, int u, int Bp, int Rp,
                                            int split, const float *W_hh, float *gates,
                                            float *h, float *c, const float *keep,
                                            int reverse) {
    GPU_DYNAMIC_SHARED(float, sm);
    float *W = sm, *As = W + (size_t)H * Rp, *red = As + PERSIST_KC * (Bp + 4);
    int j0, nu = persist_units(H, u, &j0), G = 4 * H;
    size_t BH = (size_t)B * H;
    /* W (H, 4u): W[k][q u + r] = W_hh[q H + j0 + r][k] (gate q), 0 past nu */
    for (size_t i = threadIdx.x; i < (size_t)Rp * H; i += blockDim.x) {
        int row = (int)(i / H), k = (int)(i % H), q = row / u, r = row % u;
        W[(size_t)k * Rp + row] = r < nu ? W_hh[((size_t)q * H + j0 + r) * H + k] : 0.0f;
    }
    for (int s = 0; s < T; s++) {
        int t = reverse ? T - 1 - s : s, prev = reverse ? t + 1 : t, next = reverse ? t : t + 1;
        const float *h_prev = h + prev * BH;
        persist_block_gemm(h_prev, B, H, Bp, Rp, split, W, As, red);
        for (int i = threadIdx.x; i < B * nu; i += blockDim.x) {
            int b = i / nu, r = i % nu, j = j0 + r;
            float *zrow = gates + ((size_t)t * B + b) * G;
            float z[4]; /* i, f, g, o of unit j: lstm_math's row with H = 1 */
            for (int q = 0; q < 4; q++)
                z[q] = zrow[q * H + j] + persist_red_sum(red, split, Bp, Rp, b, q * u + r);
            size_t o = (size_t)b * H + j;
            float cn, hn;
            lstm_math_forward_elem(z, 1, 0, c[prev * BH + o], h_prev[o],
                                   lstm_math_active(keep[(size_t)t * B + b]), &cn, &hn);
            for (int q = 0; q < 4; q++) zrow[q * H + j] = z[q];
            c[next * BH + o] = cn;
            h[next * BH + o] = hn;
        }
        gpu_grid_sync(); /* slot `next` of every unit, before the next step reads it */
    }
}

/* lstm_seq_recurrence_backward (backend.h); grid: plan.blocks, cooperative.
 * Each thread handles the same (b, unit) in every phase, so a unit's dc
 * and dh_rec pass from step to step within the thread. */
__global__ void lstm_persist_backward_kernel(int T, int B, int H, int u, int Bp, int Rp,
                                             int split, const float *W_hh, float *gates,
                                             const float *c, const float *keep, int reverse,
                                             float *dh, float *dc, float *dh_rec) {
    GPU_DYNAMIC_SHARED(float, sm);
    int G = 4 * H;
    float *W = sm, *As = W + (size_t)G * Rp, *red = As + PERSIST_KC * (Bp + 4);
    int j0, nu = persist_units(H, u, &j0);
    size_t BH = (size_t)B * H;
    /* W (4H, Rp): W[k][r] = W_hh[k][j0 + r], 0 past nu */
    for (size_t i = threadIdx.x; i < (size_t)G * Rp; i += blockDim.x) {
        int k = (int)(i / Rp), r = (int)(i % Rp);
        W[i] = r < nu ? W_hh[(size_t)k * H + j0 + r] : 0.0f;
    }
    for (int i = threadIdx.x; i < B * nu; i += blockDim.x)
        dh_rec[(size_t)(i / nu) * H + j0 + i % nu] = 0.0f;
    for (int s = 0; s < T; s++) {
        int t = reverse ? s : T - 1 - s, prev = reverse ? t + 1 : t, next = reverse ? t : t + 1;
        float *dz = gates + (size_t)t * B * G;
        /* the cell's backward of this block's units: dz_t, dc, the carry */
        for (int i = threadIdx.x; i < B * nu; i += blockDim.x) {
            int b = i / nu, j = j0 + i % nu;
            size_t o = (size_t)b * H + j;
            float d = dh[t * BH + o] + dh_rec[o];
            dh[t * BH + o] = d;
            float gz[4];
            for (int q = 0; q < 4; q++) gz[q] = dz[(size_t)b * G + q * H + j];
            float dcv = dc[o], carry;
            lstm_math_backward_elem(gz, 1, 0, c[prev * BH + o], c[next * BH + o],
                                    lstm_math_active(keep[(size_t)t * B + b]), d, &dcv, &carry);
            for (int q = 0; q < 4; q++) dz[(size_t)b * G + q * H + j] = gz[q];
            dc[o] = dcv;
            dh_rec[o] = carry;
        }
        gpu_grid_sync(); /* dz_t of every unit, before the product reads it */
        /* dh_rec (B, this block's units) += dz_t (B, 4H) W_hh[:, units] */
        persist_block_gemm(dz, B, G, Bp, Rp, split, W, As, red);
        for (int i = threadIdx.x; i < B * nu; i += blockDim.x) {
            int b = i / nu, r = i % nu;
            dh_rec[(size_t)b * H + j0 + r] += persist_red_sum(red, split, Bp, Rp, b, r);
        }
    }
}

/* The launch shape for B rows of H units (backward: the columns' kernel),
 * or false when the persistent kernel is off or does not apply. */
template <class Kernel>
static bool persist_plan(GpuContext *c, Kernel kernel, int B, int H, bool backward,
                         PersistPlan *p) {
    if (!c->persistent || B <= 0 || H <= 0) return false;
    bool both = c->in_fork && c->side; /* the other direction may run at the same time */
    int target = both ? c->sm_count / 2 : c->sm_count;
    if (target < 1) target = 1;
    p->u = (H + target - 1) / target;
    p->blocks = (H + p->u - 1) / p->u;
    p->Bp = (B + 7) & ~7;
    p->Rp = backward ? (p->u + 3) & ~3 : 4 * p->u;
    int tiles = (p->Bp / 4) * (p->Rp / 4);
    if (tiles > PERSIST_THREADS) return false;
    p->split = 1;
    while (p->split < PERSIST_MAX_SPLIT && tiles * p->split * 2 <= PERSIST_THREADS) p->split *= 2;
    size_t K = backward ? 4 * (size_t)H : (size_t)H;
    p->smem = (K * p->Rp + (size_t)PERSIST_KC * (p->Bp + 4) + (size_t)p->split * p->Bp * p->Rp) *
              sizeof(float);
    if (p->smem > (size_t)c->smem_optin) return false;
    int per_sm = 0;
    if (!GPU_CUDA(c, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, PERSIST_THREADS,
                                                                   p->smem)))
        return false;
    return (long)per_sm * c->sm_count >= (long)p->blocks * (both ? 2 : 1);
}

void gpu_lstm_seq_recurrence(Backend *be, int T, int B, int H, const float *W_hh, float *gates,
                             float *h, float *c, const float *keep, bool reverse) {
    GPU_ENTER(be);
    PersistPlan p;
    if (T <= 0 || !persist_plan(ctx, lstm_persist_forward_kernel, B, H, false, &p)) {
        if (!ctx->failed) backend_lstm_recurrence_steps(be, T, B, H, W_hh, gates, h, c, keep, reverse);
        return;
    }
    ctx->counters.persistent_runs++;
    GPU_LAUNCH_COOP(ctx, lstm_persist_forward_kernel, p.blocks, PERSIST_THREADS, p.smem, T, B, H,
                    p.u, p.Bp, p.Rp, p.split, W_hh, gates, h, c, keep, (int)reverse);
}

void gpu_lstm_seq_recurrence_backward(Backend *be, int T, int B, int H, const float *W_hh,
                                      float *gates, const float *c, const float *keep,
                                      bool reverse, float *dh, float *dc, float *dh_rec) {
    GPU_ENTER(be);
    PersistPlan p;
    if (T <= 0 || !persist_plan(ctx, lstm_persist_backward_kernel, B, H, true, &p)) {
        if (!ctx->failed)
            backend_lstm_recurrence_backward_steps(be, T, B, H, W_hh, gates, c, keep, reverse, dh,
                                                   dc, dh_rec);
        return;
    }
    ctx->counters.persistent_runs++;
    GPU_LAUNCH_COOP(ctx, lstm_persist_backward_kernel, p.blocks, PERSIST_THREADS, p.smem, T, B, H,
                    p.u, p.Bp, p.Rp, p.split, W_hh, gates, c, keep, (int)reverse, dh, dc, dh_rec);
}

bool gpu_persist_create(GpuContext *c) {
    int coop = 0;
    bool ok =
        GPU_CUDA(c, cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, c->device)) &&
        GPU_CUDA(c, cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, c->device)) &&
        GPU_CUDA(c, cudaDeviceGetAttribute(&c->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                           c->device));
    if (!ok) return false;
    c->persist_ready = coop && c->sm_count > 0;
    /* the kernels may take the opt-in shared memory (above 48 KB) */
    if (c->persist_ready)
        ok = GPU_CUDA(c, cudaFuncSetAttribute(lstm_persist_forward_kernel,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              c->smem_optin)) &&
             GPU_CUDA(c, cudaFuncSetAttribute(lstm_persist_backward_kernel,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              c->smem_optin));
    c->persistent = c->persist_ready && gpu_env_flag("NMT_CUDA_PERSISTENT", false);
    return ok;
}
