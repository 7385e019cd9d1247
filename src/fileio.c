/* fileio.c: atomic writes (temporary file, fsync, rename, folder fsync),
 * whole-file reads and mkdir -p (fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct AtomicFile {
    char *path;
    char *tmp_path;
    int fd;
};

NmtStatus atomic_file_open(const char *path, AtomicFile **out) {
    *out = NULL;
    AtomicFile *f = nmt_calloc(1, sizeof *f);
    if (!f) return nmt_fail_nomem("opening a file for writing");
    f->fd = -1;
    f->path = nmt_strdup(path);
    f->tmp_path = nmt_asprintf("%s.tmp.%ld", path, (long)getpid());
    if (!f->path || !f->tmp_path) {
        atomic_file_abort(f);
        return nmt_fail_nomem("opening a file for writing");
    }
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        NmtStatus st = nmt_fail(NMT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        atomic_file_abort(f);
        return st;
    }
    *out = f;
    return NMT_OK;
}

NmtStatus atomic_file_write(AtomicFile *f, const void *bytes, size_t n) {
    const char *p = bytes;
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);
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

NmtStatus atomic_file_commit(AtomicFile *f) {
    NmtStatus st = NMT_OK;
    if (fsync(f->fd) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
    if (close(f->fd) != 0 && st == NMT_OK)
        st = nmt_fail(NMT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
    f->fd = -1;
    if (st == NMT_OK && rename(f->tmp_path, f->path) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: cannot rename the new file into place: %s", f->path,
                      strerror(errno));
    if (st == NMT_OK) {
        sync_parent_dir(f->path);
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
            if (ferror(in)) st = nmt_fail(NMT_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(in);
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
