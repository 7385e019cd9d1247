/* emu.cpp (emulator): the CPU emulation of the CUDA runtime and cuBLAS
 * declared in cuda_runtime.h and cublas_v2.h beside this file (the model is
 * described there): fibers for CUDA threads, cooperative launches and the
 * emulated device's limits, stream queues and their scheduler, events,
 * capture into multi-lane graphs, copies, cuBLAS; plus
 * gpu_info for the emulated build. Built and linked
 * by `make gpu-emu-check` (mk/gpu.mk) with the .cu files of src/gpu/
 * compiled by g++. */
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <sys/mman.h>
#include <ucontext.h>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cublas_v2.h"

extern "C" {
#include "gpu/gpu_info.h"
}

dim3 threadIdx, blockIdx, blockDim, gridDim;

static long emu_launches, emu_threads;

/* EMU_FAIL_AFTER_LAUNCHES (cuda_runtime.h): the sticky error once launches
 * fail, else cudaSuccess */
static cudaError_t emu_sticky;

bool emu_launch_fails(void) {
    static long limit = -2, queued;
    if (limit == -2) {
        const char *n = getenv("EMU_FAIL_AFTER_LAUNCHES");
        limit = n && *n ? atol(n) : -1;
    }
    if (limit >= 0 && ++queued > limit) emu_sticky = cudaErrorLaunchFailure;
    return emu_sticky != cudaSuccess;
}

/* ---- fibers: one per CUDA thread of the running block (of the whole
 * grid in a cooperative launch) ---- */

/* a fiber runs, waits at a block barrier (__syncthreads), waits at a warp
 * barrier (a shuffle: only the 32 threads of its warp), waits at the grid
 * barrier (cooperative launches), or has returned */
enum { EMU_RUN, EMU_WAIT, EMU_WAIT_WARP, EMU_WAIT_GRID, EMU_DONE };

/* ---- switching between fibers ----
 * glibc's swapcontext saves and restores the signal mask (a system call)
 * and the whole floating-point environment at every switch: it took about
 * 80% of the emulator's time (perf, 2026-12-03). On x86-64, emu_switch
 * saves only what the ABI has a called function keep: rbx, rbp, r12-r15,
 * the stack pointer, MXCSR and the x87 control word, on the stack of the
 * fiber it leaves, whose context is then its stack pointer. Elsewhere, or
 * built with -DEMU_UCONTEXT, the ucontext calls. */
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
typedef void *EmuContext;

/* emu_ctx_switch(save, to): pushes the kept registers, stores the stack
 * pointer in *save, loads `to` as the stack pointer and pops its
 * registers; `ret` goes on where that fiber left off. A new fiber's stack
 * (emu_context_make) returns into emu_ctx_start, which calls the entry
 * function that emu_context_make put in r12's slot. */
extern "C" void emu_ctx_switch(EmuContext *save, EmuContext to);
extern "C" void emu_ctx_start(void);
asm(".text\n"
    ".globl emu_ctx_switch\n.hidden emu_ctx_switch\n.type emu_ctx_switch,@function\n"
    "emu_ctx_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_ctx_switch,.-emu_ctx_switch\n"
    ".globl emu_ctx_start\n.hidden emu_ctx_start\n.type emu_ctx_start,@function\n"
    "emu_ctx_start:\n"
    "  call *%r12\n  ud2\n"
    ".size emu_ctx_start,.-emu_ctx_start\n");

/* c: a fiber that starts entry() (which must not return) on the stack
 * [stack, stack + size), size a multiple of 16. The frame emu_ctx_switch
 * pops, from the stack pointer up: MXCSR and the x87 control word (the
 * caller's), r15, r14, r13, r12 (entry), rbx, rbp (0: the end of the frame
 * chain for a debugger), the return address (emu_ctx_start); 16 bytes
 * above it, so that emu_ctx_start's call meets the ABI's alignment. */
static void emu_context_make(EmuContext *c, char *stack, size_t size, void (*entry)(void)) {
    uint64_t *sp = (uint64_t *)(stack + size) - 2 - 8;
    uint32_t mxcsr;
    uint16_t fpucw;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpucw));
    sp[0] = mxcsr | (uint64_t)fpucw << 32;
    sp[1] = sp[2] = sp[3] = sp[5] = sp[6] = 0;
    sp[4] = (uint64_t)(uintptr_t)entry;
    sp[7] = (uint64_t)(uintptr_t)emu_ctx_start;
    *c = sp;
}

/* saves the running context in *from and runs *to */
static inline void emu_switch(EmuContext *from, EmuContext *to) { emu_ctx_switch(from, *to); }
#else
typedef ucontext_t EmuContext;

static void emu_context_make(EmuContext *c, char *stack, size_t size, void (*entry)(void)) {
    getcontext(c);
    c->uc_stack.ss_sp = stack;
    c->uc_stack.ss_size = size;
    c->uc_link = NULL;
    makecontext(c, entry, 0);
}

static inline void emu_switch(EmuContext *from, EmuContext *to) { swapcontext(from, to); }
#endif

typedef struct {
    EmuContext ctx;
    int state;
} EmuFiber;

/* Fiber i's stack is stack i % EMU_CHUNK of chunk i / EMU_CHUNK. A chunk
 * is mapped when a launch first needs it (MAP_NORESERVE: only the pages a
 * fiber touches take memory) and kept for later launches. A plain launch
 * uses the first block's worth; a cooperative one up to EMU_MAX_FIBERS. */
static const size_t EMU_STACK = 64 * 1024;
static const size_t EMU_CHUNK = 1024;
static const size_t EMU_MAX_FIBERS = 64 * EMU_CHUNK;
static std::vector<EmuFiber> emu_fibers;
static std::vector<char *> emu_stack_chunks;

static EmuContext emu_sched;
static std::function<void()> *emu_body;

/* The running block: its fibers, the running thread's index in it, its
 * live flags (a plain launch's are the array below; a cooperative launch
 * switches them per block), its dynamic shared memory (cooperative
 * launches only). The exchange slots are one array for all blocks, also
 * in a cooperative launch: a thread writes its slot and reads the others'
 * across a warp or block barrier, which the scheduler releases within the
 * block's turn, so no other block runs in between. */
static EmuFiber *emu_blk;
static int emu_cur;
static int emu_block_live[1024];
double emu_slot[1024];
int *emu_live = emu_block_live;
static char *emu_smem;

/* The cooperative launch that is running (NULL in a plain one): every
 * block's live flags (block b's at b * threads) and dynamic shared memory
 * (at b * smem_stride, 16-byte aligned). */
struct EmuCoop {
    std::vector<int> live;
    char *smem;
    size_t smem_bytes, smem_stride;
};
static EmuCoop *emu_coop;

int emu_flat_tid(void) { return emu_cur; }

static void emu_entry(void) {
    (*emu_body)();
    emu_blk[emu_cur].state = EMU_DONE;
    emu_live[emu_cur] = 0;
    emu_switch(&emu_blk[emu_cur].ctx, &emu_sched);
}

/* the running thread stops in `state` until the scheduler releases it */
static void emu_wait(int state) {
    emu_blk[emu_cur].state = state;
    emu_switch(&emu_blk[emu_cur].ctx, &emu_sched);
}

void emu_barrier(void) { emu_wait(EMU_WAIT); }

void emu_warp_barrier(void) { emu_wait(EMU_WAIT_WARP); }

void emu_grid_barrier(void) {
    if (!emu_coop) {
        fprintf(stderr, "cuda emulator: grid barrier in a kernel not launched cooperatively\n");
        abort();
    }
    emu_wait(EMU_WAIT_GRID);
}

void *emu_dynamic_shared(void) {
    if (!emu_coop || !emu_coop->smem_bytes) {
        fprintf(stderr, "cuda emulator: emu_dynamic_shared in %s\n",
                !emu_coop ? "a kernel not launched cooperatively (the emulator gives dynamic "
                            "shared memory to cooperative launches only)"
                          : "a cooperative launch with no dynamic shared memory");
        abort();
    }
    return emu_smem;
}

void emu_check_warp_mask(unsigned mask, const char *what) {
    int n = (int)(blockDim.x * blockDim.y * blockDim.z), w = emu_cur & ~31;
    for (int i = 0; i < 32; i++) {
        if (!(mask >> i & 1u)) continue;
        if (w + i >= n || !emu_live[w + i]) {
            fprintf(stderr, "cuda emulator: %s with lane %d in its mask, which %s\n", what, i,
                    w + i >= n ? "the block does not have" : "has returned");
            abort();
        }
    }
}

/* The order in which blocks run (in each round of a cooperative launch),
 * in which the warps of a block run up to the next block barrier, and in
 * which the threads of a warp run between two barriers (EMU_SCHEDULE):
 * "forward" (default: 0, 1, ...), "reverse", or "shuffle" (a new
 * permutation every time, seeded by EMU_SEED). CUDA promises no order
 * between blocks, nor between threads that do not synchronise: a kernel
 * whose results change with the order has a race that the default order
 * may hide. Atomic sums change in their last bits with the order, as on a
 * GPU. */
enum { EMU_FORWARD, EMU_REVERSE, EMU_SHUFFLE };
static int emu_schedule = -1;
static uint64_t emu_rng = 0x9e3779b97f4a7c15ULL;

static int emu_parse_schedule(const char *s) {
    if (!strcmp(s, "forward")) return EMU_FORWARD;
    if (!strcmp(s, "reverse")) return EMU_REVERSE;
    if (!strcmp(s, "shuffle")) return EMU_SHUFFLE;
    fprintf(stderr, "cuda emulator: EMU_SCHEDULE=%s: want forward, reverse or shuffle\n", s);
    abort();
}

static void emu_schedule_init(void) {
    const char *s = getenv("EMU_SCHEDULE"), *seed = getenv("EMU_SEED");
    emu_schedule = emu_parse_schedule(s && *s ? s : "forward");
    if (seed && *seed) emu_rng ^= strtoull(seed, NULL, 10) * 0xbf58476d1ce4e5b9ULL;
}

void emu_set_schedule(const char *schedule) {
    if (emu_schedule < 0) emu_schedule_init(); /* EMU_SEED */
    emu_schedule = emu_parse_schedule(schedule);
}

static uint64_t emu_next(void) {
    emu_rng ^= emu_rng << 13;
    emu_rng ^= emu_rng >> 7;
    emu_rng ^= emu_rng << 17;
    return emu_rng;
}

/* order[0..n) in the schedule's order */
static void emu_order(std::vector<unsigned> &order, unsigned n) {
    order.resize(n);
    for (unsigned i = 0; i < n; i++) order[i] = emu_schedule == EMU_REVERSE ? n - 1 - i : i;
    if (emu_schedule == EMU_SHUFFLE)
        for (unsigned i = n; i > 1; i--) std::swap(order[i - 1], order[emu_next() % i]);
}

/* Runs the threads of warp [w, end) of the running block that can run, in
 * the schedule's order, until each waits at a block or grid barrier or
 * has returned: a warp whose live threads all wait at a shuffle is
 * released and runs on (threads that returned count as arrived). One warp
 * thus runs ahead of the others up to the next block barrier, which is
 * allowed on a GPU and exposes a warp that reads shared memory another
 * warp may already have overwritten. */
static void emu_run_warp(int w, int end) {
    std::vector<unsigned> order;
    for (;;) {
        emu_order(order, (unsigned)(end - w));
        for (unsigned i : order) {
            int t = w + (int)i;
            if (emu_blk[t].state != EMU_RUN) continue;
            emu_cur = t;
            threadIdx = dim3(t % blockDim.x, (t / blockDim.x) % blockDim.y,
                             t / (blockDim.x * blockDim.y));
            emu_switch(&emu_sched, &emu_blk[t].ctx);
        }
        int waiting = 0, live = 0;
        for (int t = w; t < end; t++) {
            if (emu_blk[t].state == EMU_DONE) continue;
            live++;
            waiting += emu_blk[t].state == EMU_WAIT_WARP;
        }
        if (!live || waiting != live) return;
        for (int t = w; t < end; t++)
            if (emu_blk[t].state == EMU_WAIT_WARP) emu_blk[t].state = EMU_RUN;
    }
}

/* Runs the running block's n threads, each warp in turn up to the block
 * barrier, which is released when all its live threads wait at it, until
 * each thread has returned or waits at the grid barrier. Returns how many
 * returned. */
static int emu_run_block(int n) {
    static std::vector<unsigned> warps;
    for (;;) {
        emu_order(warps, (unsigned)(n + 31) / 32);
        for (unsigned w : warps) emu_run_warp(32 * (int)w, 32 * (int)w + 32 < n ? 32 * (int)w + 32 : n);
        int done = 0, at_block = 0, at_grid = 0;
        for (int t = 0; t < n; t++) {
            int s = emu_blk[t].state;
            if (s == EMU_WAIT_WARP) {
                fprintf(stderr, "cuda emulator: a shuffle in a warp whose other threads wait "
                                "at __syncthreads or the grid barrier (divergent warp)\n");
                abort();
            }
            done += s == EMU_DONE;
            at_block += s == EMU_WAIT;
            at_grid += s == EMU_WAIT_GRID;
        }
        if (at_block && at_grid) {
            fprintf(stderr, "cuda emulator: in block (%u %u %u), %d threads wait at __syncthreads "
                            "and %d at the grid barrier (divergent barrier)\n",
                    blockIdx.x, blockIdx.y, blockIdx.z, at_block, at_grid);
            abort();
        }
        if (!at_block) return done;
        for (int t = 0; t < n; t++)
            if (emu_blk[t].state == EMU_WAIT) emu_blk[t].state = EMU_RUN; /* released */
    }
}

void emu_check_launch(dim3 grid, dim3 block) {
    unsigned long n = (unsigned long)block.x * block.y * block.z;
    if (n < 1 || n > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1) {
        fprintf(stderr, "cuda emulator: bad launch (%u %u %u) x (%u %u %u)\n", grid.x, grid.y,
                grid.z, block.x, block.y, block.z);
        abort();
    }
}

/* fibers 0 .. n - 1 and their stacks exist */
static void emu_fibers_reserve(size_t n) {
    if (emu_fibers.size() < n) emu_fibers.resize(n);
    while (emu_stack_chunks.size() * EMU_CHUNK < n) {
        void *p = mmap(NULL, EMU_CHUNK * EMU_STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "cuda emulator: no memory for the stacks of %zu fibers\n", n);
            abort();
        }
        emu_stack_chunks.push_back((char *)p);
    }
}

/* fiber i at the start of the kernel's body, ready to run */
static void emu_fiber_start(size_t i) {
    EmuFiber *f = &emu_fibers[i];
    emu_context_make(&f->ctx, emu_stack_chunks[i / EMU_CHUNK] + i % EMU_CHUNK * EMU_STACK, EMU_STACK,
                     emu_entry);
    f->state = EMU_RUN;
}

/* what every launch does first; `fibers`: how many it runs at once */
static void emu_launch_begin(dim3 grid, dim3 block, std::function<void()> *body, size_t fibers) {
    emu_check_launch(grid, block);
    if (emu_schedule < 0) emu_schedule_init();
    emu_fibers_reserve(fibers);
    blockDim = block;
    gridDim = grid;
    emu_body = body;
    emu_launches++;
}

/* blockIdx of the flat block index b (x fastest) */
static dim3 emu_block_index(unsigned b) {
    return dim3(b % gridDim.x, (b / gridDim.x) % gridDim.y, b / (gridDim.x * gridDim.y));
}

/* Each block in the schedule's order: start every thread, run them to
 * their end (emu_run_block), on the first fibers and the plain live
 * flags. */
void emu_run(dim3 grid, dim3 block, std::function<void()> body) {
    size_t n = (size_t)block.x * block.y * block.z;
    emu_launch_begin(grid, block, &body, n);
    emu_blk = emu_fibers.data();
    emu_live = emu_block_live;
    std::vector<unsigned> blocks;
    emu_order(blocks, grid.x * grid.y * grid.z);
    for (unsigned b : blocks) {
        blockIdx = emu_block_index(b);
        for (size_t t = 0; t < n; t++) {
            emu_fiber_start(t);
            emu_live[t] = 1;
        }
        emu_threads += (long)n;
        emu_run_block((int)n);
    }
}

/* block b of the cooperative launch g (n threads a block) becomes the
 * running one */
static void emu_enter_block(EmuCoop *g, unsigned b, size_t n) {
    blockIdx = emu_block_index(b);
    emu_blk = &emu_fibers[b * n];
    emu_live = &g->live[b * n];
    emu_smem = g->smem ? g->smem + b * g->smem_stride : NULL;
}

/* Every thread of the grid starts; then rounds: each block in the
 * schedule's order runs up to the grid barrier or its end; when all
 * threads wait at the barrier, it is released for the next round. A round
 * that ends with some threads returned and others waiting aborts (the
 * barrier would never be released on a GPU). */
void emu_run_cooperative(dim3 grid, dim3 block, size_t dynamic_smem, std::function<void()> body) {
    size_t n = (size_t)block.x * block.y * block.z, blocks = (size_t)grid.x * grid.y * grid.z;
    size_t total = n * blocks;
    emu_launch_begin(grid, block, &body, total);
    EmuCoop g;
    g.live.assign(total, 1);
    g.smem_bytes = dynamic_smem;
    g.smem_stride = (dynamic_smem + 15) & ~(size_t)15;
    g.smem = NULL;
    if (dynamic_smem) {
        if (!(g.smem = (char *)aligned_alloc(16, g.smem_stride * blocks))) abort();
        memset(g.smem, 0xff, g.smem_stride * blocks); /* NaN floats until written */
    }
    for (size_t i = 0; i < total; i++) emu_fiber_start(i);
    emu_threads += (long)total;
    emu_coop = &g;
    std::vector<unsigned> order;
    for (;;) {
        size_t done = 0;
        emu_order(order, (unsigned)blocks);
        for (unsigned b : order) {
            emu_enter_block(&g, b, n);
            done += (size_t)emu_run_block((int)n);
        }
        if (done == total) break;
        if (done) {
            fprintf(stderr, "cuda emulator: %zu of the grid's %zu threads returned while the "
                            "others wait at a grid barrier (a GPU would hang)\n", done, total);
            abort();
        }
        for (size_t i = 0; i < total; i++) emu_fibers[i].state = EMU_RUN; /* released */
    }
    emu_coop = NULL;
    emu_smem = NULL;
    emu_live = emu_block_live;
    free(g.smem);
}

/* ---- the emulated device: attributes, occupancy, cooperative launches'
 * checks (cuda_runtime.h); the numbers are an sm_90 GPU's ---- */

static const int EMU_SMEM_DEFAULT = 48 * 1024;    /* a block's dynamic shared memory */
static const int EMU_SMEM_OPTIN = 227 * 1024;     /* the same after cudaFuncSetAttribute */
static const int EMU_SM_SMEM = 228 * 1024;        /* a multiprocessor's shared memory */
static const int EMU_SM_SMEM_PER_BLOCK = 1024;    /* of which each block reserves */
static const int EMU_SM_THREADS = 2048, EMU_SM_BLOCKS = 32;

/* EMU_SM_COUNT, read at each call (so that a test may change it) */
static int emu_sm_count(void) {
    const char *s = getenv("EMU_SM_COUNT");
    if (!s || !*s) return 8;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 1024) {
        fprintf(stderr, "cuda emulator: EMU_SM_COUNT=%s: want a whole number from 1 to 1024\n", s);
        abort();
    }
    return (int)v;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    if (device != 0) return cudaErrorInvalidDevice;
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = emu_sm_count(); return cudaSuccess;
    case cudaDevAttrCooperativeLaunch: *value = 1; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = EMU_SMEM_OPTIN; return cudaSuccess;
    }
    return cudaErrorInvalidValue;
}

/* cudaFuncSetAttribute's limits, by kernel address */
static std::unordered_map<const void *, int> emu_func_smem;

cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > EMU_SMEM_OPTIN)
        return cudaErrorInvalidValue;
    emu_func_smem[kernel] = value;
    return cudaSuccess;
}

cudaError_t emu_occupancy(int *num_blocks, int block_size, size_t dynamic_smem) {
    if (block_size <= 0 || block_size > 1024) return cudaErrorInvalidValue;
    size_t by_smem = EMU_SM_SMEM / (dynamic_smem + EMU_SM_SMEM_PER_BLOCK);
    int n = EMU_SM_THREADS / block_size;
    if (n > EMU_SM_BLOCKS) n = EMU_SM_BLOCKS;
    *num_blocks = by_smem < (size_t)n ? (int)by_smem : n;
    return cudaSuccess;
}

cudaError_t emu_check_cooperative(const void *kernel, dim3 grid, dim3 block, size_t dynamic_smem) {
    emu_check_launch(grid, block);
    auto limit = emu_func_smem.find(kernel);
    if (dynamic_smem > (size_t)(limit == emu_func_smem.end() ? EMU_SMEM_DEFAULT : limit->second))
        return cudaErrorInvalidValue;
    int threads = (int)(block.x * block.y * block.z), per_sm = 0;
    emu_occupancy(&per_sm, threads, dynamic_smem);
    unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    if (blocks > (unsigned long long)per_sm * emu_sm_count())
        return cudaErrorCooperativeLaunchTooLarge;
    if (blocks * threads > EMU_MAX_FIBERS) {
        fprintf(stderr, "cuda emulator: a cooperative grid of %llu threads; the emulator runs at "
                        "most %zu at once\n", blocks * threads, EMU_MAX_FIBERS);
        abort();
    }
    return emu_launch_fails() ? emu_sticky : cudaSuccess;
}

/* ---- streams and the scheduler ---- */

/* One entry of a stream's queue: work, or a wait marker (work empty) that
 * holds the stream until `on` has run `upto` items (cudaStreamWaitEvent). */
struct EmuItem {
    std::function<void()> work;
    const EmuStream *on;
    uint64_t upto;
};

struct EmuStream {
    int id;                     /* creation order: the scheduler's priority */
    char name[48];              /* for messages */
    std::deque<EmuItem> queue;  /* what has not run yet */
    uint64_t queued, done;      /* items ever queued, ever run */
    EmuGraph *capture;          /* the graph it is captured into, or NULL */
    int lane;                   /* its lane in that graph (0: the origin) */
};

/* Live streams in creation order. A destroyed stream leaves the list for
 * emu_retired but is never freed: events and other streams' wait markers
 * may still name it (its queue is empty then, so every wait on it holds);
 * a few hundred bytes per stream. The lists themselves are never
 * destroyed (allocated, not static objects), so that their streams are
 * still reachable when LeakSanitizer looks at exit. */
static std::vector<EmuStream *> &emu_streams = *new std::vector<EmuStream *>;
static std::vector<EmuStream *> &emu_retired = *new std::vector<EmuStream *>;
static int emu_stream_ids;
static EmuStream *emu_legacy; /* stream 0 and handles without a stream */

/* EMU_STREAM_ORDER: which stream runs first when several can (header of
 * cuda_runtime.h): the earliest-created (main) or the latest-created */
enum { EMU_MAIN_FIRST, EMU_MAIN_LAST };
static int emu_stream_order = -1;

void emu_set_stream_order(const char *order) {
    if (!strcmp(order, "first")) emu_stream_order = EMU_MAIN_FIRST;
    else if (!strcmp(order, "last")) emu_stream_order = EMU_MAIN_LAST;
    else {
        fprintf(stderr, "cuda emulator: EMU_STREAM_ORDER=%s: want first or last\n", order);
        abort();
    }
}

static void emu_stream_order_init(void) {
    const char *s = getenv("EMU_STREAM_ORDER");
    emu_set_stream_order(s && *s ? s : "first");
}

/* kind: "stream", "legacy default stream", "graph lane stream" */
static EmuStream *emu_stream_new(const char *kind) {
    EmuStream *s = new EmuStream();
    s->id = emu_stream_ids++;
    snprintf(s->name, sizeof s->name, "%s #%d", kind, s->id);
    emu_streams.push_back(s);
    return s;
}

static EmuStream *emu_stream_of(cudaStream_t s) {
    if (s) return s;
    if (!emu_legacy) emu_legacy = emu_stream_new("legacy default stream");
    return emu_legacy;
}

static void emu_push(EmuStream *s, std::function<void()> work, const EmuStream *on,
                     uint64_t upto) {
    s->queue.push_back(EmuItem{std::move(work), on, upto});
    s->queued++;
}

static bool emu_head_runnable(const EmuStream *s) {
    if (s->queue.empty()) return false;
    const EmuItem &head = s->queue.front();
    return head.work || head.on->done >= head.upto;
}

/* the stream whose head runs next, or NULL when none can run */
static EmuStream *emu_pick(void) {
    if (emu_stream_order < 0) emu_stream_order_init();
    size_t n = emu_streams.size();
    for (size_t i = 0; i < n; i++) {
        EmuStream *s = emu_streams[emu_stream_order == EMU_MAIN_FIRST ? i : n - 1 - i];
        if (emu_head_runnable(s)) return s;
    }
    return NULL;
}

static void emu_run_head(EmuStream *s) {
    EmuItem head = std::move(s->queue.front());
    s->queue.pop_front();
    if (head.work) head.work();
    s->done++;
}

[[noreturn]] static void emu_deadlock(const char *target) {
    fflush(stdout);
    fprintf(stderr, "cuda emulator: deadlock: waiting for %s, but no stream can run:\n", target);
    for (EmuStream *s : emu_streams) {
        if (s->queue.empty()) continue;
        const EmuItem &head = s->queue.front();
        fprintf(stderr, "  %s: %zu items left, the next waits for %s to have run %llu items "
                        "(it ran %llu)\n", s->name, s->queue.size(), head.on->name,
                (unsigned long long)head.upto, (unsigned long long)head.on->done);
    }
    abort();
}

/* runs what can run, in the stream order, until reached() */
template <class Reached>
static void emu_drain(Reached reached, const char *target) {
    while (!reached()) {
        EmuStream *s = emu_pick();
        if (!s) emu_deadlock(target);
        emu_run_head(s);
    }
}

static void emu_sync_stream(EmuStream *s) {
    emu_drain([s]() { return s->queue.empty(); }, s->name);
}

static void emu_sync_device(void) {
    emu_drain([]() {
        for (EmuStream *s : emu_streams)
            if (!s->queue.empty()) return false;
        return true;
    }, "the whole device");
}

/* runs s's work, then takes it off the scheduler's list (see emu_streams) */
static void emu_stream_retire(EmuStream *s) {
    emu_sync_stream(s);
    for (size_t i = 0; i < emu_streams.size(); i++)
        if (emu_streams[i] == s) {
            emu_streams.erase(emu_streams.begin() + (long)i);
            emu_retired.push_back(s);
            break;
        }
    if (emu_legacy == s) emu_legacy = NULL;
}

/* ---- stream capture and graphs ---- */

/* a captured item: work, or a wait marker (work empty) that holds its lane
 * until lane `lane` has run `upto` of its items */
struct EmuGraphItem {
    std::function<void()> work;
    int lane;
    uint64_t upto;
};

struct EmuGraph {
    uint64_t id; /* events recorded in the capture name it */
    std::vector<std::vector<EmuGraphItem>> lanes; /* lane 0: the origin stream's */
    std::vector<EmuStream *> lane_stream;          /* during capture */
    bool broken;                                    /* an illegal call happened */
};

struct EmuGraphExec {
    std::vector<std::vector<EmuGraphItem>> lanes;
    std::vector<EmuStream *> side; /* side[L] runs lane L >= 1 (side[0] unused) */
};

struct EmuEvent {
    enum { UNRECORDED, ON_STREAM, CAPTURED } state;
    const EmuStream *stream; /* ON_STREAM: (stream, items queued on it then) */
    uint64_t pos;
    uint64_t capture_id;     /* CAPTURED: (graph, lane, items on the lane then) */
    int lane;
    uint64_t index;
};

static EmuGraph *emu_capturing; /* the graph being captured, or NULL */
static uint64_t emu_graph_ids;
static std::vector<std::pair<const char *, size_t>> emu_pinned; /* cudaMallocHost blocks */

void emu_enqueue(cudaStream_t stream, std::function<void()> work) {
    EmuStream *s = emu_stream_of(stream);
    if (s->capture) s->capture->lanes[s->lane].push_back(EmuGraphItem{std::move(work), 0, 0});
    else emu_push(s, std::move(work), NULL, 0);
}

/* an error that invalidates the capture: EndCapture then fails */
static cudaError_t emu_break_capture(const char *why, cudaError_t e) {
    fprintf(stderr, "cuda emulator: %s: the capture is invalidated\n", why);
    if (emu_capturing) emu_capturing->broken = true;
    return e;
}

/* a call that is illegal during capture: it breaks the capture */
static cudaError_t emu_capture_unsupported(const char *what) {
    fprintf(stderr, "cuda emulator: %s during stream capture\n", what);
    emu_capturing->broken = true;
    return cudaErrorStreamCaptureUnsupported;
}

static bool emu_is_pinned(const void *p, size_t n) {
    const char *a = (const char *)p;
    for (auto &b : emu_pinned)
        if (a >= b.first && a + n <= b.first + b.second) return true;
    return false;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
    if (emu_capturing) return cudaErrorInvalidValue; /* one capture at a time */
    EmuStream *s = emu_stream_of(stream);
    EmuGraph *g = new EmuGraph();
    g->id = ++emu_graph_ids;
    g->lanes.emplace_back();
    g->lane_stream.push_back(s);
    s->capture = g;
    s->lane = 0;
    emu_capturing = g;
    return cudaSuccess;
}

/* whether s is part of a capture (the origin or a stream that joined it),
 * and whether that capture is still valid */
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status) {
    const EmuStream *s = emu_stream_of(stream);
    *status = !s->capture           ? cudaStreamCaptureStatusNone
              : s->capture->broken ? cudaStreamCaptureStatusInvalidated
                                   : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

/* The first lane > 0 whose last item lane 0's end does not wait for
 * (directly, or through a lane it waits for), or 0 when all are joined:
 * need[L] is how many items of lane L the end of lane 0 depends on. */
static int emu_unjoined_lane(const EmuGraph *g) {
    size_t n = g->lanes.size();
    std::vector<uint64_t> need(n, 0), scanned(n, 0);
    need[0] = g->lanes[0].size();
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t l = 0; l < n; l++)
            for (; scanned[l] < need[l]; scanned[l]++) {
                const EmuGraphItem &it = g->lanes[l][scanned[l]];
                if (!it.work && it.upto > need[it.lane]) {
                    need[it.lane] = it.upto;
                    grew = true;
                }
            }
    }
    for (size_t l = 1; l < n; l++)
        if (need[l] < g->lanes[l].size()) return (int)l;
    return 0;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
    EmuStream *s = emu_stream_of(stream);
    EmuGraph *g = emu_capturing;
    if (!g || s->capture != g) return cudaErrorInvalidValue;
    if (s->lane != 0) {
        *graph = NULL;
        return emu_break_capture("cudaStreamEndCapture on a stream that joined the capture, "
                                 "not the one that began it", cudaErrorStreamCaptureUnmatched);
    }
    for (EmuStream *l : g->lane_stream) l->capture = NULL;
    emu_capturing = NULL;
    *graph = NULL;
    if (g->broken) {
        delete g;
        return cudaErrorStreamCaptureInvalidated;
    }
    int lane = emu_unjoined_lane(g);
    if (lane) {
        fprintf(stderr, "cuda emulator: cudaStreamEndCapture: %s joined the capture but the "
                        "origin stream never waited on an event recorded on it after its last "
                        "work (a missing join)\n", g->lane_stream[lane]->name);
        delete g;
        return cudaErrorStreamCaptureUnjoined;
    }
    g->lane_stream.clear();
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
    if (!graph) return cudaErrorInvalidValue;
    EmuGraphExec *x = new EmuGraphExec();
    x->lanes = graph->lanes;
    x->side.push_back(NULL);
    for (size_t l = 1; l < x->lanes.size(); l++)
        x->side.push_back(emu_stream_new("graph lane stream"));
    *exec = x;
    return cudaSuccess;
}

/* lane 0 goes to s, the others to the exec's streams; a marker (lane,
 * upto) waits for that lane's stream to reach its position at the launch
 * plus upto */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    if (emu_capturing) return emu_capture_unsupported("cudaGraphLaunch");
    if (!exec) return cudaErrorInvalidValue;
    if (emu_sticky != cudaSuccess) return emu_sticky; /* EMU_FAIL_AFTER_LAUNCHES */
    size_t n = exec->lanes.size();
    std::vector<EmuStream *> to(n);
    std::vector<uint64_t> base(n);
    for (size_t l = 0; l < n; l++) {
        to[l] = l ? exec->side[l] : emu_stream_of(stream);
        base[l] = to[l]->queued;
    }
    for (size_t l = 0; l < n; l++)
        for (const EmuGraphItem &it : exec->lanes[l]) {
            if (it.work) emu_push(to[l], it.work, NULL, 0);
            else emu_push(to[l], nullptr, to[it.lane], base[it.lane] + it.upto);
        }
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num_nodes) {
    if (!graph || !num_nodes) return cudaErrorInvalidValue;
    size_t n = 0;
    for (const auto &lane : graph->lanes)
        for (const EmuGraphItem &it : lane) n += it.work ? 1 : 0;
    if (nodes) { /* CUDA: at most *num_nodes of them, and *num_nodes becomes how many */
        size_t k = n < *num_nodes ? n : *num_nodes;
        for (size_t i = 0; i < k; i++) nodes[i] = (cudaGraphNode_t)(uintptr_t)(i + 1);
        n = k;
    }
    *num_nodes = n;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType *type) {
    if (!node || !type) return cudaErrorInvalidValue;
    *type = cudaGraphNodeTypeKernel;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    delete graph;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (!exec) return cudaSuccess;
    for (size_t l = 1; l < exec->side.size(); l++) emu_stream_retire(exec->side[l]);
    delete exec;
    return cudaSuccess;
}

/* ---- events ---- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) {
    *e = new EmuEvent();
    (*e)->state = EmuEvent::UNRECORDED;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
    EmuStream *s = emu_stream_of(stream);
    if (s->capture) {
        e->state = EmuEvent::CAPTURED;
        e->capture_id = s->capture->id;
        e->lane = s->lane;
        e->index = s->capture->lanes[s->lane].size();
    } else {
        e->state = EmuEvent::ON_STREAM;
        e->stream = s;
        e->pos = s->queued;
    }
    return cudaSuccess;
}

/* s waits on e, recorded in the capture under way: s joins it if needed */
static cudaError_t emu_wait_captured(EmuStream *s, const EmuEvent *e) {
    EmuGraph *g = emu_capturing;
    if (!g || e->capture_id != g->id)
        return emu_break_capture("cudaStreamWaitEvent on an event recorded in a capture that "
                                 "has ended", cudaErrorCapturedEvent);
    if (!s->capture) { /* the fork: s becomes a new lane */
        s->capture = g;
        s->lane = (int)g->lanes.size();
        g->lanes.emplace_back();
        g->lane_stream.push_back(s);
    }
    g->lanes[s->lane].push_back(EmuGraphItem{nullptr, e->lane, e->index});
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned) {
    EmuStream *s = emu_stream_of(stream);
    switch (e->state) {
    case EmuEvent::UNRECORDED:
        return cudaSuccess; /* as on CUDA: nothing to wait for */
    case EmuEvent::CAPTURED:
        return emu_wait_captured(s, e);
    case EmuEvent::ON_STREAM:
        if (s->capture)
            return emu_break_capture("a capturing stream waits on an event recorded outside "
                                     "the capture", cudaErrorStreamCaptureIsolation);
        emu_push(s, nullptr, e->stream, e->pos);
        return cudaSuccess;
    }
    return cudaErrorInvalidValue;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (emu_capturing) return emu_capture_unsupported("cudaEventSynchronize");
    if (e->state == EmuEvent::CAPTURED) return cudaErrorCapturedEvent;
    if (e->state == EmuEvent::UNRECORDED) return cudaSuccess;
    const EmuStream *s = e->stream;
    uint64_t pos = e->pos;
    emu_drain([s, pos]() { return s->done >= pos; }, "an event");
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}

/* ---- runtime ---- */

cudaError_t cudaGetDeviceCount(int *n) {
    const char *no = getenv("EMU_NO_GPU");
    *n = no && *no && strcmp(no, "0") ? 0 : 1;
    return *n ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) {
    if (emu_capturing) return emu_capture_unsupported("cudaDeviceSynchronize");
    emu_sync_device();
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = emu_stream_new("stream");
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (emu_capturing) return emu_capture_unsupported("cudaStreamSynchronize");
    emu_sync_stream(emu_stream_of(s));
    return emu_sticky;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cudaErrorInvalidValue;
    emu_stream_retire(s);
    return cudaSuccess;
}

/* Device memory: EMU_DEVICE_MEMORY bytes at most live at once (default
 * 64 GiB), counted over cudaMalloc's blocks (pinned host memory is not) */
static std::unordered_map<void *, size_t> emu_device_blocks;
static size_t emu_device_used, emu_device_peak;

static size_t emu_device_limit(void) {
    static size_t limit;
    if (!limit) {
        const char *s = getenv("EMU_DEVICE_MEMORY");
        limit = s && *s ? (size_t)strtoull(s, NULL, 10) : (size_t)1 << 36;
    }
    return limit;
}

static cudaError_t emu_alloc_block(void **p, size_t n) {
    *p = malloc(n);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n); /* NaN floats, -1 ints: the backend must zero */
    return cudaSuccess;
}

cudaError_t emu_malloc(void **p, size_t n) {
    *p = NULL;
    if (n > emu_device_limit() - emu_device_used) return cudaErrorMemoryAllocation;
    cudaError_t e = emu_alloc_block(p, n);
    if (e == cudaSuccess) {
        emu_device_blocks[*p] = n;
        emu_device_used += n;
        if (emu_device_used > emu_device_peak) emu_device_peak = emu_device_used;
    }
    return e;
}
/* cudaFree and cudaFreeHost wait for the whole device first, as on CUDA
 * (queued work may still use the block) */
static void emu_free_sync(const char *what) {
    if (emu_capturing) emu_capture_unsupported(what);
    emu_sync_device();
}
cudaError_t cudaFree(void *p) {
    emu_free_sync("cudaFree");
    if (!p) return cudaSuccess;
    auto it = emu_device_blocks.find(p);
    if (it == emu_device_blocks.end()) {
        fprintf(stderr, "cuda emulator: cudaFree of %p, not a block of cudaMalloc\n", p);
        abort();
    }
    emu_device_used -= it->second;
    emu_device_blocks.erase(it);
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = emu_device_limit() - emu_device_used;
    *total_bytes = emu_device_limit();
    return cudaSuccess;
}
cudaError_t emu_malloc_host(void **p, size_t n) {
    cudaError_t e = emu_alloc_block(p, n);
    if (e == cudaSuccess) emu_pinned.push_back({(const char *)*p, n});
    return e;
}
cudaError_t cudaFreeHost(void *p) {
    emu_free_sync("cudaFreeHost");
    for (size_t i = 0; i < emu_pinned.size(); i++)
        if (emu_pinned[i].first == p) {
            emu_pinned.erase(emu_pinned.begin() + (long)i);
            break;
        }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    emu_enqueue(s, [=]() { emu_activity_run(EMU_ACTIVITY_MEMSET, NULL, 0, n, [&]() { memset(p, v, n); }); });
    return cudaSuccess;
}

static void emu_no_overlap(const char *what, const void *d, size_t dn, const void *s, size_t sn) {
    const char *a = (const char *)d, *b = (const char *)s;
    if (dn && sn && a < b + sn && b < a + dn) {
        fprintf(stderr, "cuda emulator: %s with overlapping ranges (undefined on a GPU)\n", what);
        abort();
    }
}

/* The host side of a copy of `rows` rows of `width` bytes (the source
 * span is sn bytes): during capture a copy with pageable host memory
 * breaks it (CUDA cannot capture one); else true when the source is
 * pageable host memory, which CUDA stages before the call returns, so the
 * copy must read it now. */
static bool emu_copy_reads_now(EmuStream *s, cudaMemcpyKind kind, void *d, size_t dn,
                               const void *src, size_t sn, cudaError_t *err) {
    bool from_pageable = kind == cudaMemcpyHostToDevice && !emu_is_pinned(src, sn);
    bool to_pageable = kind == cudaMemcpyDeviceToHost && !emu_is_pinned(d, dn);
    *err = cudaSuccess;
    if (s->capture && (from_pageable || to_pageable))
        *err = emu_capture_unsupported("a copy with pageable host memory");
    return from_pageable;
}

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    if (emu_sticky) return emu_sticky;
    emu_no_overlap("cudaMemcpyAsync", d, n, s, n);
    cudaError_t err;
    if (emu_copy_reads_now(emu_stream_of(stream), kind, d, n, s, n, &err)) {
        if (err) return err;
        std::vector<char> staged((const char *)s, (const char *)s + n);
        emu_enqueue(stream, [d, n, staged, kind]() {
            emu_activity_run(EMU_ACTIVITY_COPY, NULL, kind, n, [&]() { memcpy(d, staged.data(), n); });
        });
        return cudaSuccess;
    }
    if (err) return err;
    emu_enqueue(stream, [=]() { emu_activity_run(EMU_ACTIVITY_COPY, NULL, kind, n, [&]() { memcpy(d, s, n); }); });
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
    if (dpitch < width || spitch < width) return cudaErrorInvalidPitchValue;
    if (!height) return cudaSuccess;
    size_t dn = (height - 1) * dpitch + width, sn = (height - 1) * spitch + width;
    emu_no_overlap("cudaMemcpy2DAsync", d, dn, s, sn);
    cudaError_t err;
    if (emu_copy_reads_now(emu_stream_of(stream), kind, d, dn, s, sn, &err)) {
        if (err) return err;
        std::vector<char> staged(width * height); /* the rows, packed */
        for (size_t r = 0; r < height; r++)
            memcpy(staged.data() + r * width, (const char *)s + r * spitch, width);
        emu_enqueue(stream, [=]() {
            emu_activity_run(EMU_ACTIVITY_COPY, NULL, kind, width * height, [&]() {
                for (size_t r = 0; r < height; r++)
                    memcpy((char *)d + r * dpitch, staged.data() + r * width, width);
            });
        });
        return cudaSuccess;
    }
    if (err) return err;
    emu_enqueue(stream, [=]() {
        emu_activity_run(EMU_ACTIVITY_COPY, NULL, kind, width * height, [&]() {
            for (size_t r = 0; r < height; r++)
                memcpy((char *)d + r * dpitch, (const char *)s + r * spitch, width);
        });
    });
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return emu_sticky; }
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) { /* CUDA's words */
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    default: return "emulated CUDA error";
    }
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
    default: return "cudaErrorEmulated";
    }
}

/* ---- cuBLAS ---- */

struct EmuBlas {
    cudaStream_t stream; /* NULL: the legacy default stream */
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = new EmuBlas();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    delete h; /* its queued work holds no reference to it */
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s) {
    return s ? "an invalid value was used as an argument (emulated)" : "success";
}

static int emu_max1(int a) { return a > 1 ? a : 1; }

/* cuBLAS's argument checks (column-major leading dimensions) */
static bool emu_gemm_args_ok(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             int lda, int ldb, int ldc) {
    return m >= 0 && n >= 0 && k >= 0 && lda >= emu_max1(ta == CUBLAS_OP_N ? m : k) &&
           ldb >= emu_max1(tb == CUBLAS_OP_N ? k : n) && ldc >= emu_max1(m);
}

static void emu_cblas(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float al,
                      const float *A, int lda, const float *B, int ldb, float be, float *C, int ldc) {
    cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, al, A, lda, B, ldb, be, C, ldc);
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    if (!emu_gemm_args_ok(ta, tb, m, n, k, lda, ldb, ldc)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    /* host scalars are read at the call, also when it is captured */
    float al = *alpha, be = *beta;
    emu_enqueue(h->stream, [=]() {
        emu_activity_run(EMU_ACTIVITY_KERNEL, "emu_sgemm", 0, 0,
                         [&]() { emu_cblas(ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); });
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* one queued item (one activity record) for the whole batch, as one kernel on a GPU */
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb,
                                         long long stride_b, const float *beta, float *C,
                                         int ldc, long long stride_c, int count) {
    if (count < 0 || !emu_gemm_args_ok(ta, tb, m, n, k, lda, ldb, ldc)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || count == 0) return CUBLAS_STATUS_SUCCESS;
    float al = *alpha, be = *beta;
    emu_enqueue(h->stream, [=]() {
        emu_activity_run(EMU_ACTIVITY_KERNEL, "emu_sgemm_strided_batched", 0, 0, [&]() {
            for (int i = 0; i < count; i++)
                emu_cblas(ta, tb, m, n, k, al, A + i * stride_a, lda, B + i * stride_b, ldb, be,
                          C + i * stride_c, ldc);
        });
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- gpu_info (gpu_info.cu is not built here) ---- */

extern "C" int gpu_info_device_count(void) { return 1; }
extern "C" void gpu_info_describe(char *buf, size_t size) {
    snprintf(buf, size, "CPU emulator (tests/gpu_emu), no GPU");
}

__attribute__((destructor)) static void emu_report(void) {
    fflush(stdout); /* keep the test's own lines whole */
    if (emu_launches)
        fprintf(stderr, "cuda emulator: %ld kernel launches, %ld threads, %zu bytes of device memory at most\n",
                emu_launches, emu_threads, emu_device_peak);
}
