/* backend_select.h: picks the Backend for a device setting (train.device,
 * `nmt translate --device`): cpu, cuda, or auto (cuda when a GPU is visible
 * and the CUDA backend is built in, else cpu). */
#ifndef NMT_BACKEND_SELECT_H
#define NMT_BACKEND_SELECT_H

#include "backend.h"
#include "common.h"

/* device: CfgDevice. gpu: the CUDA device when one is used (0-based among
 * the visible ones); asking for one other than 0 makes a GPU that cannot
 * be used an error also with auto. threads: CPU threads (0: all). `what`
 * and `gpu_what` name the settings in messages (e.g. "train.device",
 * "train.gpu"). The environment variable NMT_DECODE_QUANTUM=N (1..4096)
 * sets the backend's decode_quantum, NMT_DECODE_PIPELINE=0|1 its
 * overlap_downloads, NMT_DECODE_FOLD=0|1 its decode_fold_lines (0:
 * never, 1: from the first line) and NMT_DECODE_QUERY_FORM=0|1|2 its
 * decode_query_form (backend.h; for benchmarks); any other value is an
 * error naming the variable. */
NmtStatus backend_create_for(int device, int gpu, int threads, const char *what,
                             const char *gpu_what, Backend **out);

/* The decoding settings of the environment above, applied to be (the
 * parity test applies them to its CUDA backend, to tell a failing decoding
 * line's cause apart); with be NULL only checked. NMT_ERR_CONFIG and a
 * message naming the variable for a bad value, be unchanged. */
NmtStatus backend_apply_decode_env(Backend *be);

/* For a CUDA backend, logs what it did ("<who>: cuda: N kernel launches and
 * M GEMMs in K host calls (G graph launches, ...)"): how much of the work
 * NMT_CUDA_GRAPHS replayed. Nothing for other backends. */
void backend_log_usage(Backend *be, const char *who);

/* "; cuda has F MB free of T MB" (cudaMemGetInfo) for a CUDA backend, ""
 * for the CPU backend, into buf (size bytes). */
void backend_memory_note(Backend *be, char *buf, size_t size);

/* After an allocation of be failed: appends what the device has to the
 * current error message, e.g. "; cuda has 312 MB free of 143771 MB" (the
 * memory other processes or earlier allocations hold), then `hint` (the
 * settings that size the request) as "; HINT". Nothing about the device for
 * the CPU backend, whose memory is the machine's. */
void backend_explain_nomem(Backend *be, const char *hint);

/* NULL while be works; else the first error of its device (CUDA: the call,
 * source line and CUDA's message). A CUDA backend turns every slot into a
 * no-op after its first error (downloads read zeros), so what was computed
 * since is void: callers check before they trust a result, and never write
 * a checkpoint or an output line after an error. The CPU backend has none. */
const char *backend_error(Backend *be);

#endif
