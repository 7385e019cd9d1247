/* test_tmpdir.c: test_util.h's test_tmpdir(), which every C test's
 * temporary files go into: the folder (under $TMPDIR) is removed with all
 * it holds when the program ends, by returning from main or by exit(), and
 * kept, its path printed, when KEEP_TMP is set to something (as
 * tests/lib.sh does for the shell tests). The program runs itself
 * (/proc/self/exe --child MODE) with TMPDIR set to a folder of its own and
 * looks at what each child left there.
 *
 *   test_tmpdir --child MODE   calls test_tmpdir() twice, writes a.txt and
 *                              sub/b.txt into the folder, prints its path;
 *                              MODE return: returns 0 from main; exit3:
 *                              exit(3); self: removes the folder itself
 *                              first (nothing may be said about it then) */
#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test_util.h"

static int child_main(const char *mode) {
    const char *dir = test_tmpdir();
    static char sub[600];
    if (test_tmpdir() != dir || strcmp(test_tmpdir(), dir) != 0) return 4; /* one folder per binary */
    snprintf(sub, sizeof sub, "%s/sub", dir);
    if (mkdir(sub, 0700) != 0) {
        perror(sub);
        return 5;
    }
    test_write_file(dir, "a.txt", "a", 1);
    test_write_file(sub, "b.txt", "bb", 2);
    printf("%s\n", dir);
    fflush(stdout);
    if (!strcmp(mode, "exit3")) exit(3);
    if (!strcmp(mode, "self")) {
        char b[700], a[600];
        snprintf(b, sizeof b, "%s/b.txt", sub);
        snprintf(a, sizeof a, "%s/a.txt", dir);
        if (remove(b) || remove(sub) || remove(a) || remove(dir)) return 6;
    }
    return 0;
}

typedef struct {
    int status;     /* the exit status, or -1 when it did not exit */
    char out[1024]; /* its stdout without the last newline: the folder */
    char err[2048]; /* its stderr */
} Child;

static void read_all(int fd, char *buf, size_t cap) {
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)got;
    buf[n] = '\0';
    close(fd);
}

/* runs this program with --child MODE, TMPDIR=base and KEEP_TMP=keep
 * (unset when NULL) */
static void run_child(const char *base, const char *mode, const char *keep, Child *c) {
    int out[2], err[2];
    memset(c, 0, sizeof *c);
    c->status = -1;
    if (pipe(out) != 0 || pipe(err) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        setenv("TMPDIR", base, 1);
        if (keep) setenv("KEEP_TMP", keep, 1);
        else unsetenv("KEEP_TMP");
        execl("/proc/self/exe", "test_tmpdir", "--child", mode, (char *)NULL);
        perror("/proc/self/exe");
        _exit(127);
    }
    close(out[1]), close(err[1]);
    read_all(out[0], c->out, sizeof c->out);
    read_all(err[0], c->err, sizeof c->err);
    int status;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) c->status = WEXITSTATUS(status);
    size_t n = strlen(c->out);
    if (n > 0 && c->out[n - 1] == '\n') c->out[n - 1] = '\0';
}

/* the number of entries in dir (without . and ..), -1 when it cannot be read */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static bool exists(const char *dir, const char *name) {
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s%s%s", dir, name[0] ? "/" : "", name);
    return lstat(path, &st) == 0;
}

/* the child's folder: named under base as test_tmpdir() names it */
static bool under(const char *path, const char *base) {
    size_t n = strlen(base);
    return strncmp(path, base, n) == 0 && strncmp(path + n, "/nmt-test-", 10) == 0 && !strchr(path + n + 1, '/');
}

/* a normal end (MODE return or exit3) with KEEP_TMP unset or empty: the
 * folder and all in it are gone, nothing said, base empty again */
static void check_removed(const char *base, const char *mode, const char *keep, int want_status) {
    Child c;
    run_child(base, mode, keep, &c);
    const char *how = keep ? "KEEP_TMP empty" : "KEEP_TMP unset";
    CHECK(c.status == want_status, "child %s (%s): exit %d, want %d; stderr: %s", mode, how, c.status, want_status,
          c.err);
    CHECK(under(c.out, base), "child %s (%s): folder '%s' is not a nmt-test-XXXXXX under TMPDIR %s", mode, how,
          c.out, base);
    CHECK(c.out[0] && !exists(c.out, ""), "child %s (%s): its folder %s is still there", mode, how, c.out);
    CHECK(c.err[0] == '\0', "child %s (%s) said: %s", mode, how, c.err);
    CHECK(entries(base) == 0, "child %s (%s) left %d entries in TMPDIR %s", mode, how, entries(base), base);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--child")) return child_main(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: test_tmpdir [--child return|exit3|self]\n");
        return 2;
    }
    /* the children's TMPDIR: a folder of our own, in the caller's TMPDIR */
    const char *tmp = getenv("TMPDIR");
    char base[512];
    snprintf(base, sizeof base, "%s/nmt-tmpdir-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror(base);
        return 2;
    }

    check_removed(base, "return", NULL, 0);
    check_removed(base, "exit3", NULL, 3);
    check_removed(base, "return", "", 0); /* empty: unset, as in tests/lib.sh */

    /* KEEP_TMP=1: kept whole, its path said; then removed here */
    Child c;
    run_child(base, "return", "1", &c);
    CHECK(c.status == 0, "child with KEEP_TMP=1: exit %d; stderr: %s", c.status, c.err);
    CHECK(under(c.out, base), "child with KEEP_TMP=1: folder '%s' not under %s", c.out, base);
    CHECK(c.out[0] && exists(c.out, "a.txt") && exists(c.out, "sub/b.txt"),
          "KEEP_TMP=1: the folder %s or its files are gone", c.out);
    CHECK(entries(base) == 1, "KEEP_TMP=1: %d entries in TMPDIR %s, want the one folder", entries(base), base);
    char said[1100];
    snprintf(said, sizeof said, "tmp: %s (kept)\n", c.out);
    CHECK(strcmp(c.err, said) == 0, "KEEP_TMP=1: stderr '%s', want '%s'", c.err, said);
    if (c.out[0] && under(c.out, base)) {
        char path[1200];
        const char *names[] = {"sub/b.txt", "sub", "a.txt", ""};
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s%s%s", c.out, names[i][0] ? "/" : "", names[i]);
            remove(path);
        }
    }

    /* a test that removed the folder itself: no error at exit */
    run_child(base, "self", NULL, &c);
    CHECK(c.status == 0, "child self: exit %d; stderr: %s", c.status, c.err);
    CHECK(c.err[0] == '\0', "child self (removed its folder itself) said: %s", c.err);
    CHECK(c.out[0] && !exists(c.out, ""), "child self: %s is there", c.out);

    CHECK(rmdir(base) == 0, "%s: %s (left: %d entries)", base, strerror(errno), entries(base));
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS); /* what a failure left */
    return test_summary("test_tmpdir");
}
