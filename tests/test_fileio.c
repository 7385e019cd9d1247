/* test_fileio.c: what the atomic writer of src/fileio.c does with each kind
 * of PATH: a regular file (replaced, no temporary file left); a symbolic
 * link with a relative target in another folder, a chain of links and a
 * dangling link (the file they lead to is written or created, the links
 * stay links, the temporary file and the clean-up of dead saves' ones are
 * beside the target); a FIFO with a reader (the bytes arrive, it stays a
 * FIFO); a character device node made here (c 1 3, a null device: it stays
 * one; skipped with a SKIP line where mknod is not permitted); a pipe and
 * a regular file reached through /proc/self/fd/N (what /dev/stdout is);
 * a socket as stdout (written through the descriptor; another refused);
 * a folder, a link to one, a block device node and a loop of links
 * (refused, naming the path, nothing replaced); abort through a link.
 * Folder locks (file_lock_dir): taken, shared by a second lock of the same
 * folder in this process (also through a link), busy for another process
 * until every holder lets go, waited for, no lock file left; a missing
 * folder and a file that is not one.
 * file_read_ready: 0 on an empty pipe whose writer is open (also after
 * waiting a timeout, resumed across a signal), 1 for bytes waiting (part
 * of a line too), the end of a pipe, a regular file and a closed
 * descriptor; with no timeout it waits, through a signal, for a writer.
 * Every node is made in this test's own temporary folder, never in /dev. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "fileio.h"
#include "test_util.h"

/* dir/name under this test's folder (static storage: one of four, so a
 * few can be used in one expression). */
static const char *path_in(const char *name) {
    static char bufs[4][1024];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, sizeof bufs[0], "%s/%s", test_tmpdir(), name);
    return p;
}

/* The content of a small file ("" when unreadable; static storage). */
static const char *read_text(const char *path) {
    static char buf[4096];
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* 1 when `path` itself (not what it links to) is a symbolic link whose
 * target text is `target`. */
static int is_link_to(const char *path, const char *target) {
    char buf[1024];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0) return 0;
    buf[n] = '\0';
    return strcmp(buf, target) == 0;
}

/* The file type bits of `path` itself (0 when missing). */
static mode_t type_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

/* How many NAME.tmp.N files folder `dir` (under the test folder) holds. */
static int temps_in(const char *dir) {
    int n = 0;
    DIR *d = opendir(path_in(dir));
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* The PID of a process that has ended (forked, exited, reaped). */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

static NmtStatus save_text(const char *path, const char *text) {
    return file_write_atomic(path, text, strlen(text));
}

static void test_regular(void) {
    mkdir(path_in("r"), 0755);
    CHECK_EQ_INT(save_text(path_in("r/new.txt"), "one\n"), NMT_OK);
    CHECK_EQ_STR(read_text(path_in("r/new.txt")), "one\n");
    CHECK_EQ_INT(save_text(path_in("r/new.txt"), "two\n"), NMT_OK);
    CHECK_EQ_STR(read_text(path_in("r/new.txt")), "two\n");
    CHECK_EQ_INT(type_of(path_in("r/new.txt")), S_IFREG);
    CHECK_EQ_INT(temps_in("r"), 0);
}

/* a/link -> ../b/real.txt (relative, another folder); a/chain -> link */
static void test_symlinks(void) {
    mkdir(path_in("a"), 0755);
    mkdir(path_in("b"), 0755);
    write_text(path_in("b/real.txt"), "old\n");
    CHECK(symlink("../b/real.txt", path_in("a/link")) == 0, "symlink: %s", strerror(errno));
    CHECK(symlink("link", path_in("a/chain")) == 0, "symlink: %s", strerror(errno));
    /* a dead save's temporary files: the target's goes, the link's name is no target */
    char stale_b[64], stale_a[64];
    pid_t dead = dead_pid();
    snprintf(stale_b, sizeof stale_b, "b/real.txt.tmp.%ld", (long)dead);
    snprintf(stale_a, sizeof stale_a, "a/link.tmp.%ld", (long)dead);
    write_text(path_in(stale_b), "stale");
    write_text(path_in(stale_a), "not a temporary file of b/real.txt");

    NmtStatus st = save_text(path_in("a/link"), "through the link\n");
    CHECK(st == NMT_OK, "save through a link: %s", nmt_error_message());
    CHECK_EQ_STR(read_text(path_in("b/real.txt")), "through the link\n");
    CHECK(is_link_to(path_in("a/link"), "../b/real.txt"), "a/link is no longer the same link");
    CHECK_EQ_INT(type_of(path_in("b/real.txt")), S_IFREG);
    CHECK(access(path_in(stale_b), F_OK) != 0, "the dead save's %s was not removed", stale_b);
    CHECK(access(path_in(stale_a), F_OK) == 0, "%s was removed", stale_a);
    unlink(path_in(stale_a));
    CHECK_EQ_INT(temps_in("a"), 0);
    CHECK_EQ_INT(temps_in("b"), 0);

    st = save_text(path_in("a/chain"), "through two links\n");
    CHECK(st == NMT_OK, "save through a chain of links: %s", nmt_error_message());
    CHECK_EQ_STR(read_text(path_in("b/real.txt")), "through two links\n");
    CHECK(is_link_to(path_in("a/chain"), "link") && is_link_to(path_in("a/link"), "../b/real.txt"),
          "the chain of links changed");

    /* abort through a link: target, link and folders as they were */
    AtomicFile *f = NULL;
    st = atomic_file_open(path_in("a/link"), &f);
    CHECK(st == NMT_OK, "open through a link: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_INT(atomic_file_write(f, "dropped", 7), NMT_OK);
        CHECK_EQ_INT(temps_in("b"), 1); /* the temporary file is beside the target */
        atomic_file_abort(f);
    }
    CHECK_EQ_STR(read_text(path_in("b/real.txt")), "through two links\n");
    CHECK(is_link_to(path_in("a/link"), "../b/real.txt"), "abort changed a/link");
    CHECK_EQ_INT(temps_in("a"), 0);
    CHECK_EQ_INT(temps_in("b"), 0);

    /* dangling: the missing file it names is created */
    CHECK(symlink("../b/made.txt", path_in("a/dangling")) == 0, "symlink: %s", strerror(errno));
    st = save_text(path_in("a/dangling"), "created\n");
    CHECK(st == NMT_OK, "save through a dangling link: %s", nmt_error_message());
    CHECK_EQ_STR(read_text(path_in("b/made.txt")), "created\n");
    CHECK_EQ_INT(type_of(path_in("b/made.txt")), S_IFREG);
    CHECK(is_link_to(path_in("a/dangling"), "../b/made.txt"), "a/dangling is no longer the same link");
    CHECK_EQ_INT(temps_in("a"), 0);
    CHECK_EQ_INT(temps_in("b"), 0);

    /* a loop of links: refused naming the path, the links stay */
    symlink("loop2", path_in("a/loop1"));
    symlink("loop1", path_in("a/loop2"));
    st = save_text(path_in("a/loop1"), "x");
    CHECK(st == NMT_ERR_IO, "save to a loop of links: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), path_in("a/loop1"));
    CHECK(is_link_to(path_in("a/loop1"), "loop2"), "a/loop1 is no longer a link");
}

/* A FIFO with a reader (a child copying it to fifo.out): the bytes arrive,
 * the FIFO stays one, a NAME.tmp.N beside it is not touched. */
static void test_fifo(void) {
    mkdir(path_in("p"), 0755);
    const char *fifo = path_in("p/fifo");
    CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
    char other[64];
    snprintf(other, sizeof other, "p/fifo.tmp.%ld", (long)dead_pid());
    write_text(path_in(other), "keep");
    pid_t child = fork();
    if (child == 0) { /* the reader */
        int in = open(path_in("p/fifo"), O_RDONLY);
        int out = open(path_in("p/fifo.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[256];
        for (ssize_t n; in >= 0 && (n = read(in, buf, sizeof buf)) > 0;)
            if (write(out, buf, (size_t)n) != n) _exit(1);
        _exit(in >= 0 && close(out) == 0 ? 0 : 1);
    }
    NmtStatus st = save_text(path_in("p/fifo"), "through the fifo\n");
    CHECK(st == NMT_OK, "save into a FIFO: %s", nmt_error_message());
    /* a reader whose FIFO was replaced waits for ever: give it 10 s */
    int status = -1;
    for (int i = 0; i < 1000 && waitpid(child, &status, WNOHANG) == 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (status == -1) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    CHECK(status == 0, "the FIFO's reader did not finish cleanly (status %d)", status);
    CHECK_EQ_STR(read_text(path_in("p/fifo.out")), "through the fifo\n");
    CHECK_EQ_INT(type_of(path_in("p/fifo")), S_IFIFO);
    CHECK(access(path_in(other), F_OK) == 0, "%s was removed", other);
    CHECK_EQ_INT(temps_in("p"), 1); /* that one only */
}

/* A null device node made here (c 1 3): written into, stays a device. */
static void test_char_device(void) {
    mkdir(path_in("c"), 0755);
    const char *node = path_in("c/null");
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        printf("SKIP: mknod of a character device not permitted (%s): device case skipped\n", strerror(errno));
        return;
    }
    NmtStatus st = save_text(node, "discarded\n");
    CHECK(st == NMT_OK, "save into a null device: %s", nmt_error_message());
    struct stat sb;
    CHECK(lstat(node, &sb) == 0 && S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3),
          "c/null is no longer the null device");
    AtomicFile *f = NULL;
    st = atomic_file_open(node, &f);
    CHECK(st == NMT_OK, "open a null device: %s", nmt_error_message());
    if (!st) {
        CHECK_EQ_INT(atomic_file_write(f, "x", 1), NMT_OK);
        atomic_file_abort(f);
    }
    CHECK(lstat(node, &sb) == 0 && S_ISCHR(sb.st_mode), "abort replaced c/null");
    CHECK_EQ_INT(temps_in("c"), 0);
}

/* /proc/self/fd/N, as /dev/stdout is: a pipe is written into; a regular
 * file is replaced under its own name. */
static void test_proc_fd(void) {
    if (access("/proc/self/fd", F_OK) != 0) {
        printf("SKIP: no /proc/self/fd\n");
        return;
    }
    int p[2];
    CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", p[1]);
    NmtStatus st = save_text(name, "through the pipe\n");
    CHECK(st == NMT_OK, "save into %s (a pipe): %s", name, nmt_error_message());
    close(p[1]);
    char buf[64] = {0};
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    CHECK(n == 17 && strcmp(buf, "through the pipe\n") == 0, "the pipe gave %zd bytes '%s'", n, buf);

    mkdir(path_in("s"), 0755);
    int fd = open(path_in("s/out.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    st = save_text(name, "replaced by name\n");
    CHECK(st == NMT_OK, "save into %s (a regular file): %s", name, nmt_error_message());
    close(fd);
    CHECK_EQ_STR(read_text(path_in("s/out.txt")), "replaced by name\n");
    CHECK_EQ_INT(temps_in("s"), 0);
}

/* A regular file as stdout (a child's, opened for appending as `>>` does):
 * /proc/self/fd/1 (/dev/stdout), and the file's own name, are written
 * through that descriptor: appended after what it held, the same file
 * (not a new one renamed over it), and what the child writes to stdout
 * afterwards follows in the same file. */
static void test_stdout_file(void) {
    if (access("/proc/self/fd", F_OK) != 0) return; /* test_proc_fd said SKIP */
    mkdir(path_in("so"), 0755);
    const char *names[2] = {"/proc/self/fd/1", path_in("so/log.txt")};
    for (int k = 0; k < 2; k++) {
        FILE *prior = fopen(path_in("so/log.txt"), "w");
        fputs("prior\n", prior);
        fclose(prior);
        struct stat before, after;
        stat(path_in("so/log.txt"), &before);
        pid_t child = fork();
        if (child == 0) {
            int fd = open(path_in("so/log.txt"), O_WRONLY | O_APPEND);
            if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(3);
            if (save_text(names[k], "saved\n") != NMT_OK) _exit(1);
            _exit(write(STDOUT_FILENO, "after\n", 6) == 6 ? 0 : 2);
        }
        int status = -1;
        waitpid(child, &status, 0);
        CHECK(status == 0, "%s as the child's stdout: status %d", names[k], status);
        stat(path_in("so/log.txt"), &after);
        CHECK(before.st_ino == after.st_ino, "%s: the stdout file was replaced by a new one", names[k]);
        CHECK_EQ_STR(read_text(path_in("so/log.txt")), "prior\nsaved\nafter\n");
        CHECK_EQ_INT(temps_in("so"), 0);
    }
}

/* A socket as stdout (a child's, through /proc/self/fd/1): written through
 * that descriptor; one that is not stdout or stderr is refused. */
static void test_socket(void) {
    if (access("/proc/self/fd", F_OK) != 0) return; /* test_proc_fd said SKIP */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
    pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        if (dup2(sv[1], STDOUT_FILENO) < 0) _exit(3);
        _exit(save_text("/proc/self/fd/1", "through the socket\n") == NMT_OK ? 0 : 1);
    }
    close(sv[1]);
    char buf[64] = {0};
    size_t got = 0;
    for (ssize_t n; got < sizeof buf - 1 && (n = read(sv[0], buf + got, sizeof buf - 1 - got)) > 0;)
        got += (size_t)n;
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(status == 0, "the child's save to its socket stdout failed (status %d)", status);
    CHECK_EQ_STR(buf, "through the socket\n");

    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", sv[0]);
    NmtStatus st = save_text(name, "x");
    CHECK(st == NMT_ERR_IO, "save to a socket that is not stdout: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), "is a socket");
    close(sv[0]);
}

/* Folders (also through a link) and block devices: refused, naming them. */
static void test_refused(void) {
    mkdir(path_in("d"), 0755);
    mkdir(path_in("d/folder"), 0755);
    NmtStatus st = save_text(path_in("d/folder"), "x");
    CHECK(st == NMT_ERR_IO, "save over a folder: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), path_in("d/folder"));
    CHECK_CONTAINS(nmt_error_message(), "is a directory");
    CHECK_EQ_INT(type_of(path_in("d/folder")), S_IFDIR);
    symlink("folder", path_in("d/to-folder"));
    st = save_text(path_in("d/to-folder"), "x");
    CHECK(st == NMT_ERR_IO, "save through a link to a folder: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), "is a directory");
    CHECK(is_link_to(path_in("d/to-folder"), "folder"), "d/to-folder is no longer a link");
    CHECK_EQ_INT(temps_in("d"), 0);
    CHECK_EQ_INT(temps_in("d/folder"), 0);

    /* major 240: local/experimental, no driver behind it; never opened */
    const char *node = path_in("d/block");
    if (mknod(node, S_IFBLK | 0600, makedev(240, 0)) != 0) {
        printf("SKIP: mknod of a block device not permitted (%s): block device case skipped\n", strerror(errno));
        return;
    }
    st = save_text(node, "x");
    CHECK(st == NMT_ERR_IO, "save over a block device: %s", nmt_status_name(st));
    CHECK_CONTAINS(nmt_error_message(), node);
    CHECK_CONTAINS(nmt_error_message(), "is a block device");
    CHECK_EQ_INT(type_of(node), S_IFBLK);
    CHECK_EQ_INT(temps_in("d"), 0);
}

/* In a child process: drops the child's copies of the parent's lock
 * descriptors (fork shares their locks), then tries dir's lock. Exit
 * status: the FileLockState; with `wait`, 10 + the status of the wait
 * after a busy try (a byte written to `ready` first). */
static pid_t lock_in_child(const char *dir, const int *inherited, int n, int wait, int ready) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    for (int i = 0; i < n; i++) file_unlock_dir(inherited[i]);
    int fd;
    FileLockState state;
    int err;
    if (file_lock_dir(dir, &fd, &state, &err) != NMT_OK) _exit(99);
    if (!wait || state != FILE_LOCK_BUSY) _exit((int)state);
    if (write(ready, "w", 1) != 1) _exit(98);
    _exit(10 + (int)file_lock_dir_wait(dir, fd));
}

/* The exit status of child `pid`, -1 when it did not exit normally. */
static int child_status(pid_t pid) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static void test_dir_lock(void) {
    int fd, shared, err;
    FileLockState state;
    CHECK_EQ_INT(file_lock_dir(path_in("nolock"), &fd, &state, &err), NMT_OK);
    CHECK(state == FILE_LOCK_NO_DIR && fd == -1, "a missing folder: state %d, fd %d", (int)state, fd);
    write_text(path_in("lockfile"), "x\n");
    CHECK_EQ_INT(file_lock_dir(path_in("lockfile"), &fd, &state, &err), NMT_ERR_IO);
    CHECK_CONTAINS(nmt_error_message(), "lockfile: cannot open: Not a directory");

    mkdir(path_in("l"), 0755);
    CHECK_EQ_INT(symlink("l", path_in("l-link")), 0);
    CHECK_EQ_INT(file_lock_dir(path_in("l"), &fd, &state, &err), NMT_OK);
    CHECK(state == FILE_LOCK_HELD && fd >= 0, "lock: state %d, fd %d", (int)state, fd);
    /* the same folder again in this process, through a link: the same lock */
    CHECK_EQ_INT(file_lock_dir(path_in("l-link"), &shared, &state, &err), NMT_OK);
    CHECK(state == FILE_LOCK_HELD && shared >= 0 && shared != fd, "second lock: state %d, fd %d", (int)state,
          shared);
    int held[2] = {fd, shared};
    CHECK_EQ_INT(child_status(lock_in_child(path_in("l"), held, 2, 0, -1)), FILE_LOCK_BUSY);
    file_unlock_dir(fd); /* the other descriptor still holds it */
    CHECK_EQ_INT(child_status(lock_in_child(path_in("l"), held, 2, 0, -1)), FILE_LOCK_BUSY);
    file_unlock_dir(shared);
    CHECK_EQ_INT(child_status(lock_in_child(path_in("l"), held, 0, 0, -1)), FILE_LOCK_HELD);

    /* a child waits until this process lets go */
    CHECK_EQ_INT(file_lock_dir(path_in("l"), &fd, &state, &err), NMT_OK);
    CHECK(state == FILE_LOCK_HELD, "lock again: state %d", (int)state);
    int pipe_fds[2];
    CHECK_EQ_INT(pipe(pipe_fds), 0);
    pid_t pid = lock_in_child(path_in("l"), &fd, 1, 1, pipe_fds[1]);
    char byte = 0;
    CHECK(read(pipe_fds[0], &byte, 1) == 1 && byte == 'w', "the child did not find the lock busy");
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(waitpid(pid, NULL, WNOHANG) == 0, "the child did not wait for the lock");
    file_unlock_dir(fd);
    CHECK_EQ_INT(child_status(pid), 10 + NMT_OK);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    CHECK_EQ_INT(temps_in("l"), 0);
    DIR *d = opendir(path_in("l"));
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(entries == 0, "the locked folder holds %d files (a lock file?)", entries);
    file_unlock_dir(-1); /* a no-op */
}

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig) {
    (void)sig;
    usr1_seen++;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* A child that sends this process SIGUSR1 after signal_ms, then (when
 * bytes) writes them into fd after another write_ms, and exits. */
static pid_t poke_later(int fd, long signal_ms, const char *bytes, long write_ms) {
    pid_t parent = getpid(), child = fork();
    if (child == 0) {
        sleep_ms(signal_ms);
        kill(parent, SIGUSR1);
        if (bytes) {
            sleep_ms(write_ms);
            if (write(fd, bytes, strlen(bytes)) < 0) _exit(1);
        }
        _exit(0);
    }
    return child;
}

/* file_read_ready on pipes, a regular file and a closed descriptor; a
 * signal (a handler without SA_RESTART: poll fails with EINTR) neither ends
 * a timed wait early nor an untimed one. */
static void test_read_ready(void) {
    int p[2];
    CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    CHECK_EQ_INT(file_read_ready(p[0], 0), 0); /* nothing yet, the writer open */
    double t0 = now_ms();
    CHECK_EQ_INT(file_read_ready(p[0], 60), 0); /* waits its timeout, then 0 */
    CHECK(now_ms() - t0 >= 55, "a 60 ms wait returned after %.1f ms", now_ms() - t0);
    CHECK(write(p[1], "half a li", 9) == 9, "write");
    CHECK_EQ_INT(file_read_ready(p[0], 0), 1); /* bytes: a read returns them (no line yet) */
    char buf[64];
    CHECK(read(p[0], buf, sizeof buf) == 9, "read");
    CHECK_EQ_INT(file_read_ready(p[0], 0), 0);

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    /* a timed wait, interrupted at 40 ms, resumes for the time left */
    usr1_seen = 0;
    pid_t child = poke_later(p[1], 40, NULL, 0);
    t0 = now_ms();
    int r = file_read_ready(p[0], 300);
    double waited = now_ms() - t0;
    waitpid(child, NULL, 0);
    CHECK(r == 0 && usr1_seen == 1 && waited >= 290,
          "interrupted 300 ms wait: ready %d, %d signals, returned after %.1f ms", r, (int)usr1_seen, waited);
    /* an untimed wait, interrupted, goes on until the bytes come */
    usr1_seen = 0;
    child = poke_later(p[1], 40, "line\n", 60);
    r = file_read_ready(p[0], -1);
    waitpid(child, NULL, 0);
    CHECK(r == 1 && usr1_seen == 1, "interrupted untimed wait: ready %d, %d signals", r, (int)usr1_seen);
    CHECK(read(p[0], buf, sizeof buf) == 5, "read the line");
    sigaction(SIGUSR1, &old, NULL);

    close(p[1]); /* the end of the input: a read returns 0 at once */
    CHECK_EQ_INT(file_read_ready(p[0], 0), 1);
    CHECK_EQ_INT(file_read_ready(p[0], -1), 1);
    close(p[0]);
    CHECK_EQ_INT(file_read_ready(p[0], 0), 1); /* closed: the read reports EBADF */

    write_text(path_in("ready.txt"), "");
    int fd = open(path_in("ready.txt"), O_RDONLY);
    CHECK(fd >= 0, "open: %s", strerror(errno));
    CHECK_EQ_INT(file_read_ready(fd, 0), 1); /* a regular file never waits, even empty */
    close(fd);
}

/* Removes the test folder (nodes and links included). */
static void cleanup(void) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", test_tmpdir());
}

int main(void) {
    alarm(120); /* a FIFO nobody opens would block for ever: fail instead */
    test_regular();
    test_symlinks();
    test_fifo();
    test_char_device();
    test_proc_fd();
    test_stdout_file();
    test_socket();
    test_refused();
    test_dir_lock();
    test_read_ready();
    cleanup();
    return test_summary("test_fileio");
}
