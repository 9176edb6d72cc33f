/* qp_space.c — see qp_space.h. */
#define _GNU_SOURCE /* fallocate, FALLOC_FL_KEEP_SIZE */
#include "qp_space.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int qp_space_reserve(int fd, int64_t end, char *why, size_t whylen)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)end > (uint64_t)rl.rlim_cur) {
        snprintf(why, whylen, "%s (would pass the %llu-byte file size limit, ulimit -f)", strerror(EFBIG),
                 (unsigned long long)rl.rlim_cur);
        return -1;
    }
#ifdef FALLOC_FL_KEEP_SIZE
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    if (end <= (int64_t)st.st_size) end = st.st_size; /* written parts stay as they are */
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)end) != 0 && errno != EOPNOTSUPP && errno != ENOSYS &&
        errno != EINVAL) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
#else
    (void)fd;
#endif
    return 0;
}

void qp_space_release(int fd)
{
    /* Setting the size it already has drops the blocks beyond it. */
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        const int rc = ftruncate(fd, st.st_size);
        (void)rc;
    }
}
