/* qs_lock.c — the sweep folder's lock (see qs_lock.h). */
#include "qs_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The holder writes its pid just after taking the lock; a reader that comes
 * in between sees an empty file, so it looks again for a moment. */
static long holder_pid(int fd)
{
    for (int tries = 0; tries < 20; tries++) {
        char buf[32] = "";
        const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        if (n > 0) {
            buf[n] = '\0';
            char *end;
            const long pid = strtol(buf, &end, 10);
            if (pid > 0 && (*end == '\n' || !*end)) return pid;
        }
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    return -1;
}

int qs_lock_take(const char *dir, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.qsweep.lock", dir);
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        if (e == EWOULDBLOCK) {
            const long pid = holder_pid(fd);
            if (pid > 0)
                snprintf(err, errlen, "%s is in use by another qsweep (pid %ld; lock %s)", dir, pid, path);
            else
                snprintf(err, errlen, "%s is in use by another qsweep (pid unknown; lock %s)", dir, path);
            close(fd);
            return -1;
        }
        snprintf(err, errlen, "%s: cannot lock: %s", path, strerror(e));
        close(fd);
        return -2;
    }
    char buf[32];
    const int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
        snprintf(err, errlen, "%s: cannot write the pid: %s", path, strerror(errno));
        close(fd);
        return -2;
    }
    return fd;
}
