/* run_dir.c: finds and removes the files of an earlier training run in
 * train.save_dir (run_dir.h). */
#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"

/* Files that mark a folder as holding a run (and step-N.nmt, below), in the
 * order run_dir_find_earlier names them: last.nmt, best.nmt, a step-N.nmt,
 * train.csv. */
static const char *const marker_files[] = {"last.nmt", "best.nmt", "train.csv"};
/* Files the trainer or `nmt plot --run` write that describe the run only. */
static const char *const companion_files[] = {"config.json", "curves.svg"};

/* "step-N.nmt" with N one or more digits: a checkpoint of train.keep_checkpoints. */
static bool is_step_checkpoint(const char *name) {
    if (strncmp(name, "step-", 5) != 0) return false;
    const char *p = name + 5;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    return strcmp(p, ".nmt") == 0;
}

static bool in_list(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return true;
    return false;
}

/* Opens dir; *d NULL (and NMT_OK) when it does not exist. */
static NmtStatus open_dir(const char *dir, DIR **d) {
    *d = opendir(dir);
    if (!*d && errno != ENOENT)
        return nmt_fail(NMT_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    return NMT_OK;
}

static NmtStatus exists_in(const char *dir, const char *name, bool *exists) {
    char *path = nmt_asprintf("%s/%s", dir, name);
    if (!path) return nmt_fail_nomem("looking for an earlier run");
    *exists = access(path, F_OK) == 0;
    nmt_free(path);
    return NMT_OK;
}

static NmtStatus found_name(const char *name, char **found) {
    *found = nmt_asprintf("%s", name);
    return *found ? NMT_OK : nmt_fail_nomem("looking for an earlier run");
}

NmtStatus run_dir_find_earlier(const char *dir, char **found) {
    *found = NULL;
    bool exists = false;
    NmtStatus st;
    for (size_t i = 0; i < 2; i++) { /* last.nmt, then best.nmt */
        if ((st = exists_in(dir, marker_files[i], &exists))) return st;
        if (exists) return found_name(marker_files[i], found);
    }
    DIR *d;
    if ((st = open_dir(dir, &d)) || !d) return st; /* no folder: no run */
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !is_step_checkpoint(e->d_name)) continue;
    st = e ? found_name(e->d_name, found) : NMT_OK;
    closedir(d);
    if (!st && !*found && !(st = exists_in(dir, marker_files[2], &exists)) && exists) /* train.csv */
        st = found_name(marker_files[2], found);
    return st;
}

/* The names in dir of an earlier run's files: a NULL-terminated array of new
 * strings in *names (free with free_names); NULL when dir does not exist. */
static NmtStatus list_run_files(const char *dir, char ***names) {
    *names = NULL;
    DIR *d;
    NmtStatus st = open_dir(dir, &d);
    if (st || !d) return st;
    size_t n = 0, cap = 8;
    char **list = nmt_calloc(cap, sizeof *list);
    if (!list) st = nmt_fail_nomem("removing the earlier run");
    struct dirent *e;
    while (!st && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (!is_step_checkpoint(name) && !in_list(name, marker_files, NMT_ARRAY_LEN(marker_files)) &&
            !in_list(name, companion_files, NMT_ARRAY_LEN(companion_files)))
            continue;
        if (n + 1 == cap) {
            char **bigger = nmt_realloc(list, 2 * cap * sizeof *list);
            if (!bigger) {
                st = nmt_fail_nomem("removing the earlier run");
                break;
            }
            list = bigger;
            cap *= 2;
        }
        list[n] = nmt_asprintf("%s", name);
        list[++n] = NULL;
        if (!list[n - 1]) st = nmt_fail_nomem("removing the earlier run");
    }
    closedir(d);
    *names = list;
    return st;
}

static void free_names(char **names) {
    for (size_t i = 0; names && names[i]; i++) nmt_free(names[i]);
    nmt_free(names);
}

NmtStatus run_dir_remove_earlier(const char *dir, int *n_removed) {
    *n_removed = 0;
    char **names;
    NmtStatus st = list_run_files(dir, &names); /* listed first: no unlink while reading the folder */
    for (size_t i = 0; !st && names && names[i]; i++) {
        char *path = nmt_asprintf("%s/%s", dir, names[i]);
        if (!path) st = nmt_fail_nomem("removing the earlier run");
        else if (unlink(path) == 0) ++*n_removed;
        else if (errno != ENOENT) st = nmt_fail(NMT_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
        nmt_free(path);
    }
    free_names(names);
    return st;
}

/* A step checkpoint of the folder: its N and its name (borrowed). */
typedef struct {
    int64_t step;
    const char *name;
} StepFile;

/* Newest first. */
static int step_file_newest_first(const void *a, const void *b) {
    int64_t x = ((const StepFile *)a)->step, y = ((const StepFile *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The N of a step-N.nmt name; INT64_MAX when it does not fit (never the
 * trainer's: above every step, so left alone). */
static int64_t step_of(const char *name) {
    errno = 0;
    long long n = strtoll(name + 5, NULL, 10);
    return errno ? INT64_MAX : (int64_t)n;
}

/* The step checkpoints among names with N <= newest: *files (nmt_free it)
 * of *n, newest first; the names stay borrowed from `names`. */
static NmtStatus steps_up_to(char **names, int64_t newest, StepFile **files, size_t *n) {
    size_t count = 0;
    while (names && names[count]) count++;
    *n = 0;
    *files = nmt_calloc(count + 1, sizeof **files);
    if (!*files) return nmt_fail_nomem("removing old step checkpoints");
    for (size_t i = 0; i < count; i++) {
        if (!is_step_checkpoint(names[i])) continue;
        int64_t step = step_of(names[i]);
        if (step <= newest) (*files)[(*n)++] = (StepFile){step, names[i]};
    }
    qsort(*files, *n, sizeof **files, step_file_newest_first);
    return NMT_OK;
}

NmtStatus run_dir_prune_steps(const char *dir, int keep, int64_t newest, int *n_removed) {
    *n_removed = 0;
    char **names;
    StepFile *files = NULL;
    size_t n = 0;
    NmtStatus st = list_run_files(dir, &names); /* listed first: no unlink while reading the folder */
    if (!st) st = steps_up_to(names, newest, &files, &n);
    for (size_t i = (size_t)keep; !st && i < n; i++) {
        char *path = nmt_asprintf("%s/%s", dir, files[i].name);
        if (!path) st = nmt_fail_nomem("removing old step checkpoints");
        else if (unlink(path) == 0) ++*n_removed;
        else if (errno != ENOENT) st = nmt_fail(NMT_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
        nmt_free(path);
    }
    nmt_free(files);
    free_names(names);
    return st;
}

NmtStatus run_dir_lock(const char *dir, int *fd) {
    FileLockState state;
    int err;
    NmtStatus st = file_lock_dir(dir, fd, &state, &err);
    if (st || state == FILE_LOCK_HELD || state == FILE_LOCK_NO_DIR) return st;
    if (state == FILE_LOCK_UNSUPPORTED) { /* a file system without locks: train all the same, unguarded */
        nmt_log_warn("train.save_dir: %s: cannot lock (%s), so a second nmt train into it would not be "
                     "refused", dir, strerror(err));
        return NMT_OK; /* *fd stays open (unlocked), so that it is not tried again */
    }
    file_unlock_dir(*fd);
    *fd = -1;
    return nmt_fail(NMT_ERR_CONFIG,
                    "train.save_dir: %s is in use by another nmt train running now (or by an nmt "
                    "prepare, when it is also a data.cache_dir): it holds the folder's lock; wait for it "
                    "to end or stop it, or choose another train.save_dir",
                    dir);
}
