/* backend_select.h: picks the Backend for a device setting (train.device,
 * `nmt translate --device`): cpu, cuda, or auto (cuda when a GPU is visible
 * and the CUDA backend is built in, else cpu). */
#ifndef NMT_BACKEND_SELECT_H
#define NMT_BACKEND_SELECT_H

#include "backend.h"
#include "common.h"

/* device: CfgDevice. threads: CPU threads (0: all). `what` names the setting
 * in messages (e.g. "train.device"). */
NmtStatus backend_create_for(int device, int threads, const char *what, Backend **out);

#endif
