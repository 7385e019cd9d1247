/* fileio.c: atomic writes (temporary file, fsync, rename, folder fsync;
 * temporary files of killed saves removed by the next save; symbolic links
 * followed, devices and FIFOs written straight into), whole-file reads,
 * mkdir -p, folder locks and the would-a-read-wait check (fileio.h). */
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* Links followed before giving up (Linux's own limit). */
#define MAX_LINK_HOPS 40

struct AtomicFile {
    char *path;     /* the name given, for messages */
    char *target;   /* the file replaced: path, or where its symbolic links lead */
    char *tmp_path; /* target.tmp.PID; NULL when writing straight into path */
    int fd;
    int direct;     /* 1: fd is PATH itself (a device, FIFO or socket) */
};

/* TEST HOOK, for tests/test_crash_safety.sh only: NMT_TEST_SLOW_SAVE=N
 * (microseconds) makes atomic writes go out in 4 KiB pieces with a sleep of
 * N us before each piece and before the rename, so that a SIGKILL sent at a
 * random moment lands inside a save. Unset or 0: no effect. */
static long test_slow_save_us(void) {
    const char *s = getenv("NMT_TEST_SLOW_SAVE");
    long us = s ? strtol(s, NULL, 10) : 0;
    return us > 0 ? us : 0;
}

static void test_slow_save_sleep(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Removes the PATH.tmp.PID files of earlier saves of PATH whose process no
 * longer runs (killed before its rename), so that kills do not pile them
 * up. A file whose PID is alive (another writer, or a reused PID) stays;
 * writers of one PATH in different PID namespaces are not supported.
 * PATH is the file replaced (for a symbolic link, where it leads); a direct
 * write (device, FIFO) has no temporary files and never calls this. */
static void remove_stale_temps(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    size_t len = strlen(base);
    if (len == 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, base, len) != 0 || strncmp(name + len, ".tmp.", 5) != 0) continue;
        const char *digits = name + len + 5;
        if (digits[0] < '1' || digits[0] > '9' || strspn(digits, "0123456789") != strlen(digits) ||
            strlen(digits) > 9)
            continue;
        long pid = strtol(digits, NULL, 10);
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        unlinkat(dirfd(d), name, 0); /* best effort */
    }
    closedir(d);
}

/* The target of the symbolic link `link`, a relative one read from the
 * link's folder. The join is textual ("dir/../x"): the kernel resolves ".."
 * after following dir, so it is right even when dir is itself a link. NULL
 * with errno set on failure. */
static char *link_target(const char *link) {
    char buf[4096];
    ssize_t n = readlink(link, buf, sizeof buf);
    if (n < 0) return NULL;
    if ((size_t)n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    buf[n] = '\0';
    const char *slash = strrchr(link, '/');
    char *joined = buf[0] == '/' || !slash ? nmt_strdup(buf)
                                           : nmt_asprintf("%.*s/%s", (int)(slash - link), link, buf);
    if (!joined) errno = ENOMEM;
    return joined;
}

/* Follows the chain of symbolic links that starts at `path` to its end, the
 * first name that is not a link (or does not exist), into *out (new,
 * nmt_free). Errors name `path`. */
static NmtStatus follow_links(const char *path, char **out) {
    *out = NULL;
    char *cur = nmt_strdup(path);
    for (int hop = 0; cur; hop++) {
        struct stat info;
        if (lstat(cur, &info) != 0 || !S_ISLNK(info.st_mode)) {
            *out = cur;
            return NMT_OK;
        }
        char *next = hop < MAX_LINK_HOPS ? link_target(cur) : NULL;
        int err = hop < MAX_LINK_HOPS ? errno : ELOOP;
        nmt_free(cur);
        if (!next)
            return nmt_fail(NMT_ERR_IO, "%s: cannot follow the symbolic link: %s", path, strerror(err));
        cur = next;
    }
    return nmt_fail_nomem("following a symbolic link");
}

/* The regular file that the link `path` leads to (`info`: its stat), by
 * the name its links give, into *target; refused when that name is not the
 * file (the link of /proc/self/fd/N to a deleted file). */
static NmtStatus linked_file(const char *path, const struct stat *info, char **target) {
    NmtStatus st = follow_links(path, target);
    if (st) return st;
    struct stat end;
    if (lstat(*target, &end) == 0 && end.st_dev == info->st_dev && end.st_ino == info->st_ino)
        return NMT_OK;
    st = nmt_fail(NMT_ERR_IO, "%s: leads to a file with no name to replace (%s)", path, *target);
    nmt_free(*target);
    *target = NULL;
    return st;
}

/* STDOUT_FILENO or STDERR_FILENO when that descriptor is the file `info`
 * (the same device and inode), else -1. */
static int std_stream_of(const struct stat *info) {
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++) {
        struct stat s;
        if (fstat(fd, &s) == 0 && s.st_dev == info->st_dev && s.st_ino == info->st_ino) return fd;
    }
    return -1;
}

/* What writing to `path` means. *direct = 0: write *target (new) atomically,
 * where *target is path, or for a symbolic link the name its chain of links
 * leads to (for a dangling link, the missing file it names). *direct = 1:
 * path is (or leads to) a character device, FIFO or socket (/dev/null,
 * /dev/stdout, a named pipe), or this process's stdout or stderr (also a
 * regular file), written straight into; *info is its stat.
 * Folders and block devices are refused. */
static NmtStatus resolve_target(const char *path, char **target, int *direct, struct stat *info) {
    *target = NULL;
    *direct = 0;
    struct stat lst;
    if (lstat(path, &lst) != 0) { /* missing (the open reports any other error) */
        *target = nmt_strdup(path);
        return *target ? NMT_OK : nmt_fail_nomem("opening a file for writing");
    }
    *info = lst;
    if (S_ISLNK(lst.st_mode) && stat(path, info) != 0) {
        if (errno != ENOENT)
            return nmt_fail(NMT_ERR_IO, "%s: cannot follow the symbolic link: %s", path, strerror(errno));
        return follow_links(path, target);
    }
    if (S_ISDIR(info->st_mode)) return nmt_fail(NMT_ERR_IO, "%s: is a directory; give a file name", path);
    if (S_ISBLK(info->st_mode))
        return nmt_fail(NMT_ERR_IO, "%s: is a block device; refusing to write over it", path);
    /* this process's stdout or stderr (/dev/stdout to a file), written
     * through its descriptor: a new file renamed over it would lose what
     * the shell writes there before and after, and `>>` would not append */
    *direct = !S_ISREG(info->st_mode) || std_stream_of(info) >= 0;
    if (S_ISLNK(lst.st_mode) && !*direct) return linked_file(path, info, target);
    *target = nmt_strdup(path);
    return *target ? NMT_OK : nmt_fail_nomem("opening a file for writing");
}

/* Opens f->path itself for writing, no temporary file: a character device
 * or FIFO by its name (a FIFO waits for a reader); a socket cannot be
 * opened by name, so only stdout's or stderr's is written, through a copy
 * of that descriptor (/dev/stdout of a process whose output is a socket). */
static NmtStatus open_direct(AtomicFile *f, const struct stat *info) {
    int std = std_stream_of(info);
    if (std >= 0) /* a copy of the descriptor: its offset and O_APPEND stay the shell's */
        f->fd = fcntl(std, F_DUPFD_CLOEXEC, 3);
    else if (S_ISSOCK(info->st_mode))
        return nmt_fail(NMT_ERR_IO, "%s: is a socket (not stdout or stderr); cannot write to it", f->path);
    else
        f->fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (f->fd < 0) return nmt_fail(NMT_ERR_IO, "%s: cannot write: %s", f->path, strerror(errno));
    return NMT_OK;
}

/* Creates f->target's temporary file TARGET.tmp.PID, in the target's
 * folder so that the rename stays on one file system, after removing those
 * of dead earlier saves of TARGET. */
static NmtStatus open_temp(AtomicFile *f) {
    f->tmp_path = nmt_asprintf("%s.tmp.%ld", f->target, (long)getpid());
    if (!f->tmp_path) return nmt_fail_nomem("opening a file for writing");
    remove_stale_temps(f->target);
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd >= 0) return NMT_OK;
    if (strcmp(f->path, f->target) == 0)
        return nmt_fail(NMT_ERR_IO, "%s: cannot write: %s", f->path, strerror(errno));
    return nmt_fail(NMT_ERR_IO, "%s: cannot write %s (where the link leads): %s", f->path, f->target,
                    strerror(errno));
}

NmtStatus atomic_file_open(const char *path, AtomicFile **out) {
    *out = NULL;
    AtomicFile *f = nmt_calloc(1, sizeof *f);
    if (!f) return nmt_fail_nomem("opening a file for writing");
    f->fd = -1;
    f->path = nmt_strdup(path);
    if (!f->path) {
        atomic_file_abort(f);
        return nmt_fail_nomem("opening a file for writing");
    }
    struct stat info;
    NmtStatus st = resolve_target(path, &f->target, &f->direct, &info);
    if (!st) st = f->direct ? open_direct(f, &info) : open_temp(f);
    if (st) {
        atomic_file_abort(f);
        return st;
    }
    *out = f;
    return NMT_OK;
}

NmtStatus atomic_file_write(AtomicFile *f, const void *bytes, size_t n) {
    const char *p = bytes;
    long slow = test_slow_save_us();
    while (n > 0) {
        if (slow) test_slow_save_sleep(slow);
        ssize_t w = write(f->fd, p, slow && n > 4096 ? 4096 : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return nmt_fail(NMT_ERR_IO, "%s: write failed: %s", f->path,
                            w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
    }
    return NMT_OK;
}

/* fsync of the folder holding `path`, so the rename itself is durable. */
static void sync_parent_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse folder fsync */
        close(fd);
    }
}

/* Commit of a direct write: the close, whose error (a full device, a
 * FIFO's reader gone) is the last word on the content. */
static NmtStatus commit_direct(AtomicFile *f) {
    NmtStatus st = NMT_OK;
    if (close(f->fd) != 0) st = nmt_fail(NMT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
    f->fd = -1;
    atomic_file_abort(f);
    return st;
}

NmtStatus atomic_file_commit(AtomicFile *f) {
    if (f->direct) return commit_direct(f);
    NmtStatus st = NMT_OK;
    if (fsync(f->fd) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
    if (close(f->fd) != 0 && st == NMT_OK)
        st = nmt_fail(NMT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
    f->fd = -1;
    long slow = test_slow_save_us();
    if (slow && st == NMT_OK) test_slow_save_sleep(slow);
    if (st == NMT_OK && rename(f->tmp_path, f->target) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: cannot rename the new file into place: %s", f->path,
                      strerror(errno));
    if (st == NMT_OK) {
        sync_parent_dir(f->target);
        nmt_free(f->tmp_path);
        f->tmp_path = NULL; /* nothing left to remove */
    }
    atomic_file_abort(f);
    return st;
}

void atomic_file_abort(AtomicFile *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (f->tmp_path) unlink(f->tmp_path);
    nmt_free(f->tmp_path);
    nmt_free(f->target);
    nmt_free(f->path);
    nmt_free(f);
}

NmtStatus file_write_atomic(const char *path, const void *bytes, size_t n) {
    AtomicFile *f;
    NmtStatus st = atomic_file_open(path, &f);
    if (st) return st;
    st = atomic_file_write(f, bytes, n);
    if (st) {
        atomic_file_abort(f);
        return st;
    }
    return atomic_file_commit(f);
}

NmtStatus file_read_all(const char *path, char **bytes, size_t *n) {
    *bytes = NULL;
    *n = 0;
    FILE *in = fopen(path, "rb");
    if (!in) return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    NmtStatus st = file_read_stream(in, path, bytes, n);
    fclose(in);
    return st;
}

NmtStatus file_read_stream(FILE *in, const char *path, char **bytes, size_t *n) {
    *bytes = NULL;
    *n = 0;
    /* size the buffer from the file when it has a size (not a pipe) */
    struct stat info;
    size_t len = 0, cap = 4096;
    if (fstat(fileno(in), &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0)
        cap = (size_t)info.st_size + 2;
    char *buf = nmt_malloc(cap);
    NmtStatus st = buf ? NMT_OK : nmt_fail_nomem("reading a file");
    while (st == NMT_OK) {
        if (len + 1 >= cap) {
            char *grown = nmt_realloc(buf, cap * 2);
            if (!grown) {
                st = nmt_fail_nomem("reading a file");
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - 1 - len, in);
        len += got;
        if (got == 0) {
            if (ferror(in)) st = nmt_fail(NMT_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    if (st) {
        nmt_free(buf);
        return st;
    }
    buf[len] = '\0';
    *bytes = buf;
    *n = len;
    return NMT_OK;
}

NmtStatus file_make_dirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return nmt_fail(NMT_ERR_IO, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return nmt_fail(NMT_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
            *p = saved;
            if (!saved) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return nmt_fail(NMT_ERR_IO, "%s: not a folder", path);
    return NMT_OK;
}

/* ---- folder locks ---------------------------------------------------- */

/* The folder locks this process holds (file_lock_dir): an flock(2) lock
 * belongs to one open of the folder, so a second open by the same process
 * would wait for the first, that is for itself, for ever. A second lock
 * of a held folder is a dup of its descriptor instead (the same lock).
 * nmt locks at most two folders at a time; a full table only loses the
 * sharing. Not thread-safe: nmt locks from its main thread. */
enum { MAX_HELD_LOCKS = 16 };
static struct {
    int fd;
    dev_t dev;
    ino_t ino;
} held_locks[MAX_HELD_LOCKS];
static int n_held_locks;

/* A descriptor of this process that holds the lock of the folder `info`,
 * or -1. */
static int held_lock_of(const struct stat *info) {
    for (int i = 0; i < n_held_locks; i++)
        if (held_locks[i].dev == info->st_dev && held_locks[i].ino == info->st_ino) return held_locks[i].fd;
    return -1;
}

/* Records fd, which holds its folder's lock (best effort: a full table or
 * a failed fstat only loses the sharing). */
static void held_lock_add(int fd) {
    struct stat info;
    if (n_held_locks == MAX_HELD_LOCKS || fstat(fd, &info) != 0) return;
    held_locks[n_held_locks].fd = fd;
    held_locks[n_held_locks].dev = info.st_dev;
    held_locks[n_held_locks].ino = info.st_ino;
    n_held_locks++;
}

/* Forgets fd, about to be closed. */
static void held_lock_remove(int fd) {
    for (int i = 0; i < n_held_locks; i++)
        if (held_locks[i].fd == fd) {
            held_locks[i] = held_locks[--n_held_locks];
            return;
        }
}

/* The lock of a folder this process holds already, shared through a new
 * descriptor *fd; *fd stays -1 when it holds none. -1 (errno set) when it
 * holds it but cannot copy the descriptor. */
static int share_held_lock(int open_fd, int *fd) {
    *fd = -1;
    struct stat info;
    int held = fstat(open_fd, &info) == 0 ? held_lock_of(&info) : -1;
    if (held < 0) return 0;
    *fd = fcntl(held, F_DUPFD_CLOEXEC, 3);
    if (*fd < 0) return -1; /* held here, and no copy: flock would wait for this process itself */
    held_lock_add(*fd);
    return 0;
}

NmtStatus file_lock_dir(const char *dir, int *fd, FileLockState *state, int *err) {
    *state = FILE_LOCK_NO_DIR;
    *err = 0;
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) {
        if (errno == ENOENT) return NMT_OK;
        return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    }
    int shared;
    if (share_held_lock(*fd, &shared) < 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return nmt_fail(NMT_ERR_IO, "%s: cannot share this process's lock of the folder: %s", dir, strerror(e));
    }
    *state = FILE_LOCK_HELD;
    if (shared >= 0) {
        close(*fd);
        *fd = shared;
        return NMT_OK;
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) {
        held_lock_add(*fd);
        return NMT_OK;
    }
    *err = errno;
    *state = errno == EWOULDBLOCK || errno == EINTR ? FILE_LOCK_BUSY : FILE_LOCK_UNSUPPORTED;
    return NMT_OK;
}

NmtStatus file_lock_dir_wait(const char *dir, int fd) {
    if (flock(fd, LOCK_EX) != 0)
        return nmt_fail(NMT_ERR_IO, "%s: waiting for the folder's lock: %s", dir,
                        errno == EINTR ? "interrupted by a signal" : strerror(errno));
    held_lock_add(fd);
    return NMT_OK;
}

void file_unlock_dir(int fd) {
    if (fd < 0) return;
    held_lock_remove(fd);
    close(fd);
}

/* ---- would a read wait ---------------------------------------------------- */

static int64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int file_read_ready(int fd, int timeout_ms) {
    int64_t deadline = timeout_ms > 0 ? monotonic_ms() + timeout_ms : 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, timeout_ms);
        if (n > 0) return 1; /* POLLIN, POLLHUP (the end), POLLERR, POLLNVAL: the read says which */
        if (n == 0) return 0;
        if (errno != EINTR) return 1; /* poll itself failed (ENOMEM): let the read wait or fail */
        if (timeout_ms > 0) { /* the time left */
            int64_t left = deadline - monotonic_ms();
            if (left <= 0) return 0;
            timeout_ms = (int)left;
        }
    }
}

uint32_t file_crc32(uint32_t crc, const void *bytes, size_t n) {
    uLong c = crc;
    for (size_t done = 0; done < n;) {
        size_t piece = n - done > (1u << 30) ? (1u << 30) : n - done;
        c = crc32(c, (const Bytef *)bytes + done, (uInt)piece);
        done += piece;
    }
    return (uint32_t)c;
}
