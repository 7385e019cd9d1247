/* run_dir.h: the files of a training run in train.save_dir, for `nmt train`
 * to refuse starting a fresh run over an earlier one (which would replace
 * its checkpoints and log) and, with --overwrite, to remove the earlier
 * run's files first.
 *
 * A run's files: last.nmt, best.nmt, step-N.nmt, train.csv (these mark a
 * folder as holding a run), config.json (written by the trainer) and
 * curves.svg (the default output of `nmt plot --run`, a picture of
 * train.csv). Nothing else in the folder is touched: not shortlist.tsv
 * (`nmt shortlist`, which depends on the corpus only) nor files nmt does
 * not write. */
#ifndef NMT_TRAIN_RUN_DIR_H
#define NMT_TRAIN_RUN_DIR_H

#include "common.h"

/* The name of the first file in dir that marks an earlier run (last.nmt,
 * best.nmt, step-N.nmt, train.csv; in that order of preference), as a new
 * string in *found (nmt_free it), or NULL when there is none or dir does
 * not exist. */
NmtStatus run_dir_find_earlier(const char *dir, char **found);

/* Removes the files of an earlier run from dir (those listed above) and
 * counts them in *n_removed. A missing dir removes nothing. */
NmtStatus run_dir_remove_earlier(const char *dir, int *n_removed);

/* train.keep_checkpoints: of the step checkpoints in dir (step-N.nmt)
 * with N <= newest (the step just saved), keeps the `keep` highest N and
 * removes the others (counted in *n_removed). The folder is listed, so the
 * step checkpoints of the run before a --resume, or of a larger `keep`,
 * go too, with or without a validation set. One with N > newest (none of
 * this run's: the trainer writes last.nmt before each step-N.nmt) is left
 * alone. keep 0 removes them all. */
NmtStatus run_dir_prune_steps(const char *dir, int keep, int64_t newest, int *n_removed);

/* Holds dir's lock for as long as *fd stays open (file_unlock_dir it to
 * let go; the kernel lets go when the process ends, also when it is
 * killed), so that a second `nmt train` into the same folder, fresh or
 * --resume, is refused while one runs there instead of both writing its
 * checkpoints and log. *fd is -1 when dir does not exist yet (lock it
 * again once made). The lock is file_lock_dir's flock(2) on the folder
 * itself: no lock file is left behind. On a file system without locks a
 * warning says so and the run goes on. */
NmtStatus run_dir_lock(const char *dir, int *fd);

#endif
