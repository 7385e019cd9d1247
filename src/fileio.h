/* fileio.h: crash-safe file writing and small file helpers.
 *
 * An AtomicFile writes to "PATH.tmp.PID" in the same folder; commit fsyncs
 * it, renames it over PATH and fsyncs the folder, so PATH is always either
 * the old complete file or the new complete one. abort removes the
 * temporary file and leaves PATH untouched.
 *
 * What PATH is decides how (atomic_file_open):
 *   missing or a regular file   atomically, as above
 *   a symbolic link             atomically, to the file its chain of links
 *                               leads to (created when the link dangles);
 *                               the temporary file lies beside that file and
 *                               the link stays a link
 *   a character device, FIFO    straight into it (no temporary file, no
 *   or socket                   rename; commit closes it, checking the
 *                               error): /dev/null, /dev/stdout, a named pipe
 *                               (whose open waits for a reader); a socket
 *                               only when it is stdout or stderr
 *   this process's stdout or    through a copy of that descriptor, also a
 *   stderr                      regular file (so `>>` appends)
 *   a folder or block device    refused, NMT_ERR_IO naming PATH
 *
 * A folder lock (file_lock_dir) is flock(2) on the folder itself, held for
 * as long as its descriptor stays open: no lock file is left behind, and
 * the kernel lets go when the process ends, also when it is killed.
 *
 * file_read_ready tells whether reading a descriptor would wait (`nmt
 * translate --stream` decodes what it has read before it waits). */
#ifndef NMT_FILEIO_H
#define NMT_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "common.h"

typedef struct AtomicFile AtomicFile;

NmtStatus atomic_file_open(const char *path, AtomicFile **out);
/* Appends n bytes; errors (a full disk) name the file. */
NmtStatus atomic_file_write(AtomicFile *f, const void *bytes, size_t n);
/* Makes the new content visible under PATH and frees f (also on error). */
NmtStatus atomic_file_commit(AtomicFile *f);
/* Drops the new content and frees f; NULL is a no-op. */
void atomic_file_abort(AtomicFile *f);

/* The whole of `bytes` written atomically to `path`. */
NmtStatus file_write_atomic(const char *path, const void *bytes, size_t n);
/* Reads a whole file into a new '\0'-terminated buffer (nmt_free it). */
NmtStatus file_read_all(const char *path, char **bytes, size_t *n);
/* The same from a stream already open (`path` names it in messages); the
 * caller closes it. For a pipe, which cannot be opened twice. */
NmtStatus file_read_stream(FILE *in, const char *path, char **bytes, size_t *n);
/* mkdir -p; errors name the folder. */
NmtStatus file_make_dirs(const char *path);

/* What file_lock_dir found. */
typedef enum {
    FILE_LOCK_HELD,        /* *fd holds the lock */
    FILE_LOCK_BUSY,        /* another process holds it: *fd is open, unlocked;
                            * file_lock_dir_wait(*fd) or file_unlock_dir(*fd) */
    FILE_LOCK_UNSUPPORTED, /* the file system has no locks (errno in *err):
                            * *fd is open, unlocked, and guards nothing */
    FILE_LOCK_NO_DIR       /* dir does not exist: *fd is -1 */
} FileLockState;

/* Takes the exclusive lock of the folder dir without waiting. *fd: the
 * descriptor to give to file_unlock_dir (or -1). A folder this process
 * holds locked already (through another name, or a train.save_dir that is
 * also the data.cache_dir) is shared, FILE_LOCK_HELD, rather than waited
 * for by its own holder. Errors (dir not a folder, unreadable) name dir. */
NmtStatus file_lock_dir(const char *dir, int *fd, FileLockState *state, int *err);
/* Waits for the lock of fd (from a FILE_LOCK_BUSY file_lock_dir of dir)
 * until the other process lets go. A signal that interrupts the wait
 * (one with a handler: nmt train's SIGINT) ends it with an error naming
 * dir. fd stays open either way. */
NmtStatus file_lock_dir_wait(const char *dir, int fd);
/* Closes fd, which lets go of its lock; -1 is a no-op. */
void file_unlock_dir(int fd);

/* 1 when a read(2) of fd would return without waiting, 0 when it would
 * wait: poll(2) for input, waiting at most timeout_ms milliseconds for it
 * (0: not at all, the check alone; -1: as long as it takes). Returns at
 * once (1) for bytes waiting (even part of a line: fd knows no lines), the
 * end of the input (a pipe whose writers closed, ^D on a terminal), an
 * error waiting to be read, a regular file, and a descriptor poll cannot
 * watch (closed, POLLNVAL), so that the read reports what is wrong. A
 * signal that interrupts the wait (EINTR) resumes it for the time left.
 * Reads nothing; costs no CPU while it waits. */
int file_read_ready(int fd, int timeout_ms);

/* zlib's CRC32 of bytes[0..n) continuing from crc (0 to start), any n (zlib
 * takes uInt lengths: fed in pieces). The checksum of the binary files. */
uint32_t file_crc32(uint32_t crc, const void *bytes, size_t n);

#endif
